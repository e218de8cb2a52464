import { type IConnections, type INode, type IRun } from 'n8n-workflow';

import { WebhookSignatureVerify } from '../../nodes/WebhookSignatureVerify/WebhookSignatureVerify.node';
import { describeWithN8n } from '../support/n8nBaseNodes';
import { PACKAGE } from '../support/n8nEngine';
import { link, toInput } from '../support/settleWorkflows';
import { baseNode as node, EVENTS, events, SPLIT_OUT_EVENTS, triggerRedTeam, type Step } from '../support/triggerRedTeam';

/*
 * Red team 49: shapes around the sub-execution trace of 12c31d6 / 081f205 not tried by passes 46-48: Execute Workflow
 * "each", a nested sub-workflow with If → Merge inside the inner one, Aggregate → Split Out inside, the sub's trigger
 * with defined inputs, a failure at Continue (error output) on a non-last node inside, Merge by fields / combine all /
 * by position (same order) after the sub, Remove Duplicates / Compare Datasets after the sub, the sub returning nothing
 * for one event. Sub-workflows as in pass 48: n8n 2.41.1's output, no record for an unsaved one.
 */

describeWithN8n('red team 49: more shapes through a sub-execution', () => {
	const { effectsAt, failNext, httpCall, keyStore, keyRows, nodePath, provide, refusedAtPublish, statuses, useTrigger } = triggerRedTeam({
		tag: 'rt49',
		route: (route, body) => (route === 'lookup' ? { ...body } : route === 'settings' ? { currency: 'eur' } : undefined),
		subWorkflows: { savingSettings: true },
		echoBody: true,
		nodeLeaseSeconds: 1,
		providerPauseMs: 1200,
		baseNodeFiles: {
			'n8n-nodes-base.webhook': 'Webhook/Webhook.node.js',
			'n8n-nodes-base.splitOut': 'Transform/SplitOut/SplitOut.node.js',
			'n8n-nodes-base.sort': 'Transform/Sort/Sort.node.js',
			'n8n-nodes-base.aggregate': 'Transform/Aggregate/Aggregate.node.js',
			'n8n-nodes-base.set': 'Set/Set.node.js',
			'n8n-nodes-base.filter': 'Filter/Filter.node.js',
			'n8n-nodes-base.removeDuplicates': 'Transform/RemoveDuplicates/RemoveDuplicates.node.js',
			'n8n-nodes-base.compareDatasets': 'CompareDatasets/CompareDatasets.node.js',
			'n8n-nodes-base.executeWorkflowTrigger': 'ExecuteWorkflow/ExecuteWorkflowTrigger/ExecuteWorkflowTrigger.node.js',
		},
		nodeTypes: { [`${PACKAGE}.webhookSignatureVerify`]: new WebhookSignatureVerify() },
	});
	const { completeNode, nodeKey, nodeTemplate, provideNodePath, reserveNode, useNodePath } = nodePath;
	const FIELD_RESERVE = () => reserveNode({ keySource: 'field', keyField: 'body.id', keyPrefix: 'evt:' });

	const dump = (label: string, runs: IRun[]) => {
		if (process.env.RT49_DUMP)
			for (const run of runs)
				process.stderr.write(
					`RT49 ${label} ${run.data.resultData.error?.message?.slice(0, 300)} ${JSON.stringify(
						Object.entries(run.data.resultData.runData).map(([name, tasks]) => [
							name,
							tasks.map((task) =>
								task.data?.main.map((items) => (items ?? []).map((item) => [JSON.stringify(item.json).slice(0, 90), item.pairedItem])),
							),
						]),
					)}\n`,
				);
	};

	const ifOn = (field: string, name = 'VIP?') =>
		node(name, 'if', 2.2, {
			conditions: {
				options: { caseSensitive: true, leftValue: '', typeValidation: 'loose', version: 2 },
				conditions: [
					{ id: 'v', leftValue: `={{ ${field} }}`, rightValue: '', operator: { type: 'boolean', operation: 'true', singleValue: true } },
				],
				combinator: 'and',
			},
			looseTypeValidation: true,
			options: {},
		});
	const LOOKUP_BODY = '={{ JSON.stringify({ id: $json.body.id, amount: $json.body.amount }) }}';
	const trigger = (version = 1.2) => node('Webhook', 'executeWorkflowTrigger', version, { inputSource: 'passthrough' });
	const sub = (nodes: INode[], connections: IConnections, saved = true) =>
		JSON.stringify({ nodes, connections, settings: saved ? {} : { saveDataSuccessExecution: 'none' } });
	const sort = () =>
		node('By Amount', 'sort', 1, { sortFieldsUi: { sortField: [{ fieldName: 'body.amount', order: 'ascending' }] }, options: {} });

	/** Trigger → Sort by amount → Lookup (error output unconnected). */
	const sortSub = (triggerNode: INode = trigger()) =>
		sub([triggerNode, sort(), httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY)], {
			Webhook: { main: [link('By Amount')] },
			'By Amount': { main: [link('Lookup')] },
			Lookup: { main: [[], []] },
		} as IConnections);
	/** Trigger → Lookup (no reordering). */
	const plainSub = () =>
		sub([trigger(), httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY)], {
			Webhook: { main: [link('Lookup')] },
			Lookup: { main: [[], []] },
		} as IConnections);
	/** Inner: Trigger → If (vip) → Lookup VIP / Lookup → Merge (append). */
	const ifMergeSub = () =>
		sub(
			[
				trigger(),
				ifOn('$json.body.vip'),
				httpCall('Lookup VIP', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY),
				httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY),
				node('Join', 'merge', 3.2, {}),
			],
			{
				Webhook: { main: [link('VIP?')] },
				'VIP?': { main: [link('Lookup VIP'), link('Lookup')] },
				'Lookup VIP': { main: [link('Join'), []] },
				Lookup: { main: [toInput('Join', 1), []] },
			} as IConnections,
		);
	const outerSub = (inner: string) =>
		sub(
			[
				trigger(),
				node(
					'Inner',
					'executeWorkflow',
					1.3,
					{ source: 'parameter', workflowJson: inner, mode: 'once', options: { waitForSubWorkflow: true } },
					{ onError: 'continueRegularOutput' },
				),
			],
			{ Webhook: { main: [link('Inner')] } } as IConnections,
		);
	/** Trigger → Aggregate (body → bodies) → Split Out bodies (as body) → Lookup. */
	const aggregateSplitSub = () =>
		sub(
			[
				trigger(),
				node('Gather', 'aggregate', 1, {
					aggregate: 'aggregateIndividualFields',
					fieldsToAggregate: { fieldToAggregate: [{ fieldToAggregate: 'body', renameField: true, outputFieldName: 'bodies' }] },
					options: {},
				}),
				node('Spread', 'splitOut', 1, { fieldToSplitOut: 'bodies', include: 'noOtherFields', options: { destinationFieldName: 'body' } }),
				httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY),
			],
			{
				Webhook: { main: [link('Gather')] },
				Gather: { main: [link('Spread')] },
				Spread: { main: [link('Lookup')] },
				Lookup: { main: [[], []] },
			} as IConnections,
		);
	/** Trigger with defined inputs (only `body`: the idempotency field dropped) → Sort → Lookup. */
	const inputsTrigger = () =>
		node('Webhook', 'executeWorkflowTrigger', 1.1, {
			inputSource: 'workflowInputs',
			workflowInputs: { values: [{ name: 'body', type: 'any' }] },
		});
	/** Trigger → Sort → Lookup (error output unconnected: a failing lookup drops the event) → Tag (Edit Fields, last). */
	const innerFailureSub = () =>
		sub(
			[
				trigger(),
				sort(),
				httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY),
				node(
					'Tag',
					'set',
					3.4,
					{
						mode: 'manual',
						assignments: { assignments: [{ id: 't', name: 'tagged', value: true, type: 'boolean' }] },
						includeOtherFields: true,
						options: {},
					},
					{ onError: 'continueRegularOutput' },
				),
			],
			{
				Webhook: { main: [link('By Amount')] },
				'By Amount': { main: [link('Lookup')] },
				Lookup: { main: [link('Tag'), []] },
			} as IConnections,
		);
	/** Trigger → Filter (skip not true) → Lookup: an event with skip returns no item. */
	const zeroSub = () =>
		sub(
			[
				trigger(),
				node('Keep', 'filter', 2.2, {
					conditions: {
						options: { caseSensitive: true, leftValue: '', typeValidation: 'loose', version: 2 },
						conditions: [
							{
								id: 'k',
								leftValue: '={{ $json.body.skip === true }}',
								rightValue: '',
								operator: { type: 'boolean', operation: 'false', singleValue: true },
							},
						],
						combinator: 'and',
					},
					looseTypeValidation: true,
					options: {},
				}),
				httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY),
			],
			{ Webhook: { main: [link('Keep')] }, Keep: { main: [link('Lookup')] }, Lookup: { main: [[], []] } } as IConnections,
		);

	const enrich = (workflowJson: string, mode: 'once' | 'each' = 'once') =>
		node(
			'Enrich',
			'executeWorkflow',
			1.3,
			{ source: 'parameter', workflowJson, mode, options: { waitForSubWorkflow: true } },
			{ onError: 'continueRegularOutput' },
		);
	const CHARGE_ID = '={{ JSON.stringify({ id: $json.id }) }}';
	const RESPONSE = { responseJson: '={{ JSON.stringify({ id: $json.id }) }}' };

	const nodeStep = (workflowJson: string, parameters: Record<string, unknown>, mode: 'once' | 'each' = 'once'): Step => ({
		nodes: [
			enrich(workflowJson, mode),
			httpCall('Charge', 'charge', { onError: 'continueRegularOutput' }, CHARGE_ID),
			completeNode({ position: [1100, 0] }, parameters),
		],
		connections: {
			Enrich: { main: [link('Charge')] },
			Charge: { main: [link('Mark Complete')] },
			'Mark Complete': { main: [link('Respond 200'), link('Respond 500 (provider retries)')] },
		} as IConnections,
		heads: ['Enrich'],
	});
	const triggerStep = (workflowJson: string, mode: 'once' | 'each' = 'once'): Step => ({
		nodes: [enrich(workflowJson, mode), httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_ID)],
		connections: { Enrich: { main: [link('Charge')] }, Charge: { main: [[], []] } } as IConnections,
		heads: ['Enrich'],
	});

	const nodeStatuses = async (ids: string[]) => await Promise.all(ids.map(async (id) => await nodeKey(`evt:${id}`)));
	const nodeStored = async (ids: string[]) => {
		const stored = await keyStore().getKeys(ids.map((id) => `evt:${id}`));
		return ids.map((id) => (stored.get(`evt:${id}`)?.response as { id?: string } | null | undefined)?.id ?? null);
	};
	const triggerStored = () =>
		keyRows().map((row) => (row.response ? ((JSON.parse(row.response) as { id?: string })?.id ?? 'other') : null));
	/** A (vip, 300), B (100), C (200): Sort gives B, C, A; If → Merge gives A then B, C. */
	const three = (p: string, extra: Array<Record<string, unknown>> = [{}, {}, {}]) => [
		{ id: `${p}_a`, amount: 300, vip: true, ...extra[0] },
		{ id: `${p}_b`, amount: 100, ...extra[1] },
		{ id: `${p}_c`, amount: 200, ...extra[2] },
	];
	const charges = (ids: string[]) => ids.map((id) => effectsAt('charge', id));
	const KEY_FROM = { item: { source: 'item' }, paired: { source: 'reserveNode' } } as const;

	const runTrigger = async (p: string, step: Step, fail: string | undefined, list = three(p)) => {
		const ids = list.map((event) => event.id as string);
		useTrigger(`wf-rt49-${p}`, EVENTS);
		const refusal = await refusedAtPublish(step);
		if (fail) failNext(fail);
		const { answers, runs } = await provide(events(list), step);
		dump(p, runs);
		return {
			refusal: typeof refusal === 'string' ? refusal.slice(0, 120) : false,
			answers,
			charges: charges(ids),
			keys: await statuses(ids),
			stored: triggerStored(),
		};
	};
	const runNode = async (p: string, step: Step, fail: string | undefined, list = three(p), attempts = 4) => {
		const ids = list.map((event) => event.id as string);
		useNodePath(`wf-rt49-${p}`);
		if (fail) failNext(fail);
		const { answers, runs } = await provideNodePath(
			events(list),
			() => nodeTemplate(step, { reserve: FIELD_RESERVE(), before: SPLIT_OUT_EVENTS }),
			attempts,
		);
		dump(p, runs);
		return {
			answers,
			errors: runs.map((run) => run.data.resultData.error?.message?.slice(0, 100) ?? null),
			charges: charges(ids),
			keys: await nodeStatuses(ids),
			stored: await nodeStored(ids),
		};
	};
	const results: Record<string, unknown> = {};
	afterAll(() => {
		process.stderr.write(`RT49 RESULTS ${JSON.stringify(results, null, 1)}\n`);
	});
	const record = (label: string, value: unknown) => {
		results[label] = value;
		return value;
	};

	/* 1. Execute Workflow "Run Once for Each Item" (Sort → Lookup inside), A's charge failing once. */
	it('each: trigger, A failing once', async () => {
		const p = 'te';
		const r = record('each trigger', await runTrigger(p, triggerStep(sortSub(), 'each'), `charge:${p}_a`));
		expect(r).toMatchObject({ refusal: false, answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] });
	});
	for (const [k, params] of Object.entries(KEY_FROM)) {
		it(`each: node ${k}, A failing once`, async () => {
			const p = `ne${k[0]}`;
			const r = record(`each node ${k}`, await runNode(p, nodeStep(sortSub(), { ...params, ...RESPONSE }, 'each'), `charge:${p}_a`));
			expect(r).toMatchObject({
				answers: [500, 200],
				charges: [1, 1, 1],
				keys: ['completed', 'completed', 'completed'],
				stored: [`${p}_a`, `${p}_b`, `${p}_c`],
			});
		});
	}

	/* 2. Nested, both saved: the inner run is followed through its own record (cameThroughNested), not n8n's re-pairing.
	 * Nested, both saved: outer → inner (If → Merge append: B vip moves B first). C's charge failing once. */
	const vipB = [{ vip: false }, { vip: true }, {}];
	it('nested If→Merge: trigger, A failing once', async () => {
		const p = 'tn';
		const r = record('nested trigger', await runTrigger(p, triggerStep(outerSub(ifMergeSub())), `charge:${p}_a`, three(p, vipB)));
		expect(r).toMatchObject({ refusal: false, answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] });
	});
	for (const [k, params] of Object.entries(KEY_FROM)) {
		it(`nested If→Merge: node ${k}, A failing once`, async () => {
			const p = `nn${k[0]}`;
			const r = record(
				`nested node ${k}`,
				await runNode(p, nodeStep(outerSub(ifMergeSub()), { ...params, ...RESPONSE }), `charge:${p}_a`, three(p, vipB)),
			);
			expect(r).toMatchObject({
				answers: [500, 200],
				charges: [1, 1, 1],
				keys: ['completed', 'completed', 'completed'],
				stored: [`${p}_a`, `${p}_b`, `${p}_c`],
			});
		});
	}

	/* 3. Trigger: documented refusal at publish. The node path: refused after the step (documented), A and C charged twice.
	 * Aggregate → Split Out inside. B's charge failing once. */
	it('aggregate→split: trigger, B failing once', async () => {
		const p = 'ta';
		const r = record('aggregate trigger', await runTrigger(p, triggerStep(aggregateSplitSub()), `charge:${p}_b`));
		// Documented (docs/templates.md, Aggregate at Individual Fields → Split Out → an effect): refused at publish.
		expect((r as { refusal: unknown }).refusal).toMatch(/splits out of "Gather"/);
	});
	for (const [k, params] of Object.entries(KEY_FROM)) {
		it(`aggregate→split: node ${k}, B failing once`, async () => {
			const p = `na${k[0]}`;
			const r = record(`aggregate node ${k}`, await runNode(p, nodeStep(aggregateSplitSub(), { ...params, ...RESPONSE }), `charge:${p}_b`));
			// Documented (docs/templates.md, "Aggregate → Split Out inside a sub-workflow, on the node path"): refused after the
			// step, not before; none lost, the other events charged again with the retry.
			expect(r).toMatchObject({ answers: [500, 200], charges: [2, 1, 2], keys: ['completed', 'completed', 'completed'] });
		});
	}

	/* 4. Sub trigger with defined inputs (idempotency dropped). B's charge failing once. */
	it('workflowInputs: trigger, B failing once', async () => {
		const p = 'tw';
		const r = record('inputs trigger', await runTrigger(p, triggerStep(sortSub(inputsTrigger())), `charge:${p}_b`));
		expect(r).toMatchObject({ refusal: false, answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] });
	});
	for (const [k, params] of Object.entries(KEY_FROM)) {
		it(`workflowInputs: node ${k}, B failing once`, async () => {
			const p = `nw${k[0]}`;
			const r = record(
				`inputs node ${k}`,
				await runNode(p, nodeStep(sortSub(inputsTrigger()), { ...params, ...RESPONSE }), `charge:${p}_b`),
			);
			expect(r).toMatchObject({
				answers: [500, 200],
				charges: [1, 1, 1],
				keys: ['completed', 'completed', 'completed'],
				stored: [`${p}_a`, `${p}_b`, `${p}_c`],
			});
		});
	}

	/* 5. The node path (Complete): B dropped inside never reaches Complete; 200 answered, B not retried (documented).
	 * Failure at Continue (error output, unconnected) on a non-last node inside: B's lookup failing once. */
	it('inner non-last failure: trigger, B lookup failing once', async () => {
		const p = 'tf';
		const r = record('inner failure trigger', await runTrigger(p, triggerStep(innerFailureSub()), `lookup:${p}_b`));
		expect(r).toMatchObject({ refusal: false, answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] });
	});
	for (const [k, params] of Object.entries(KEY_FROM)) {
		it(`inner non-last failure: node ${k}, B lookup failing once`, async () => {
			const p = `nf${k[0]}`;
			const r = record(
				`inner failure node ${k}`,
				await runNode(p, nodeStep(innerFailureSub(), { ...params, ...RESPONSE }), `lookup:${p}_b`),
			);
			// Documented (docs/templates.md, "an event a sub-workflow drops on a failure ... never reaches Mark Complete"): the
			// delivery is answered 200, B's key left to its lease and not retried by the provider.
			expect(r).toMatchObject({ answers: [200], charges: [1, 0, 1], keys: ['completed', 'processing', 'completed'] });
		});
	}

	/* 6-8. Merges after the sub, with Reserve's (or the trigger's) items. */
	const mergeStep = (
		sub: string,
		merge: INode,
		node: boolean,
		parameters: Record<string, unknown> = {},
		second: 'events' | 'settings' = 'events',
	): Step => {
		const nodes: INode[] = [
			enrich(sub),
			merge,
			httpCall('Charge', 'charge', { onError: node ? 'continueRegularOutput' : 'continueErrorOutput' }, CHARGE_ID),
		];
		if (second === 'settings')
			nodes.push(
				httpCall(
					'Settings',
					'settings',
					{ executeOnce: true, onError: 'continueRegularOutput', position: [300, -300] },
					'={{ JSON.stringify({}) }}',
				),
			);
		if (node) nodes.push(completeNode({ position: [1100, 0] }, parameters));
		const connections = {
			Enrich: { main: [link('Join')] },
			Join: { main: [link('Charge')] },
			...(second === 'settings' ? { Settings: { main: [toInput('Join', 1)] } } : {}),
			...(node
				? {
						Charge: { main: [link('Mark Complete')] },
						'Mark Complete': { main: [link('Respond 200'), link('Respond 500 (provider retries)')] },
					}
				: { Charge: { main: [[], []] } }),
		} as IConnections;
		const heads = second === 'settings' ? ['Enrich', 'Settings'] : ['Enrich', 'Join#1'];
		if (!node) connections.Webhook = { main: [[...link(heads[0]), ...(second === 'settings' ? link('Settings') : toInput('Join', 1))]] };
		return { nodes, connections, heads: node ? heads : [] };
	};
	const byFields = () =>
		node('Join', 'merge', 3.2, {
			mode: 'combine',
			advanced: true,
			mergeByFields: { values: [{ field1: 'id', field2: 'body.id' }] },
			joinMode: 'keepMatches',
			outputDataFrom: 'both',
			options: {},
		});
	const byPosition = () => node('Join', 'merge', 3.2, { mode: 'combine', combineBy: 'combineByPosition', options: {} });
	const combineAll = () => node('Join', 'merge', 3.2, { mode: 'combine', combineBy: 'combineAll', options: {} });

	it('merge by fields (sorted sub): trigger, B failing once', async () => {
		const p = 'tm';
		const r = record('merge fields trigger', await runTrigger(p, mergeStep(sortSub(), byFields(), false), `charge:${p}_b`));
		expect(r).toMatchObject({ refusal: false, answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] });
	});
	for (const [k, params] of Object.entries(KEY_FROM)) {
		it(`merge by fields (sorted sub): node ${k}, B failing once`, async () => {
			const p = `nm${k[0]}`;
			const r = record(
				`merge fields node ${k}`,
				await runNode(p, mergeStep(sortSub(), byFields(), true, { ...params, ...RESPONSE }), `charge:${p}_b`),
			);
			expect(r).toMatchObject({
				answers: [500, 200],
				charges: [1, 1, 1],
				keys: ['completed', 'completed', 'completed'],
				stored: [`${p}_a`, `${p}_b`, `${p}_c`],
			});
		});
	}
	it('merge combine all with one settings item: trigger, B failing once', async () => {
		const p = 'tc';
		const r = record(
			'combine all trigger',
			await runTrigger(p, mergeStep(sortSub(), combineAll(), false, {}, 'settings'), `charge:${p}_b`),
		);
		// Documented (docs/templates.md, a node at Execute Once after a node that may have an effect): refused at publish.
		expect((r as { refusal: unknown }).refusal).toMatch(/Execute Once and comes after "Enrich"/);
	});
	for (const [k, params] of Object.entries(KEY_FROM)) {
		it(`merge combine all with one settings item: node ${k}, B failing once`, async () => {
			const p = `nc${k[0]}`;
			const r = record(
				`combine all node ${k}`,
				await runNode(p, mergeStep(sortSub(), combineAll(), true, { ...params, ...RESPONSE }, 'settings'), `charge:${p}_b`),
			);
			expect(r).toMatchObject({
				answers: [500, 200],
				charges: [1, 1, 1],
				keys: ['completed', 'completed', 'completed'],
				stored: [`${p}_a`, `${p}_b`, `${p}_c`],
			});
		});
	}
	it('merge by position, same order (plain sub): trigger, B failing once', async () => {
		const p = 'tp';
		const r = record('position trigger', await runTrigger(p, mergeStep(plainSub(), byPosition(), false), `charge:${p}_b`));
		expect(r).toMatchObject({ refusal: false, answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] });
	});
	for (const [k, params] of Object.entries(KEY_FROM)) {
		it(`merge by position, same order (plain sub): node ${k}, B failing once`, async () => {
			const p = `np${k[0]}`;
			const r = record(
				`position node ${k}`,
				await runNode(p, mergeStep(plainSub(), byPosition(), true, { ...params, ...RESPONSE }), `charge:${p}_b`),
			);
			expect(r).toMatchObject({
				answers: [500, 200],
				charges: [1, 1, 1],
				keys: ['completed', 'completed', 'completed'],
				stored: [`${p}_a`, `${p}_b`, `${p}_c`],
			});
		});
	}

	/* 9. Remove Duplicates (by id) / Compare Datasets after the sub. */
	const dedupStep = (node: boolean, parameters: Record<string, unknown> = {}): Step => {
		const step = node ? nodeStep(sortSub(), parameters) : triggerStep(sortSub());
		step.nodes.push(
			node_(
				'Dedup',
				'removeDuplicates',
				2,
				{ compare: 'selectedFields', fieldsToCompare: 'id', options: {} },
				{ onError: 'continueRegularOutput' },
			),
		);
		step.connections = { ...step.connections, Enrich: { main: [link('Dedup')] }, Dedup: { main: [link('Charge')] } } as IConnections;
		return step;
	};
	const node_ = node;
	it('remove duplicates after the sub: trigger, B failing once', async () => {
		const p = 'td';
		const r = record('dedup trigger', await runTrigger(p, dedupStep(false), `charge:${p}_b`));
		expect(r).toMatchObject({ refusal: false, answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] });
	});
	for (const [k, params] of Object.entries(KEY_FROM)) {
		it(`remove duplicates after the sub: node ${k}, B failing once`, async () => {
			const p = `nd${k[0]}`;
			const r = record(`dedup node ${k}`, await runNode(p, dedupStep(true, { ...params, ...RESPONSE }), `charge:${p}_b`));
			expect(r).toMatchObject({
				answers: [500, 200],
				charges: [1, 1, 1],
				keys: ['completed', 'completed', 'completed'],
				stored: [`${p}_a`, `${p}_b`, `${p}_c`],
			});
		});
	}
	/** Enrich → Compare (A: answers; B: the events) by id = body.id; "different" output (index 2) → Charge by keys.id. */
	const compareStep = (node: boolean, parameters: Record<string, unknown> = {}): Step => {
		const nodes: INode[] = [
			enrich(sortSub()),
			node_(
				'Join',
				'compareDatasets',
				2.3,
				{ mergeByFields: { values: [{ field1: 'id', field2: 'body.id' }] }, options: {} },
				{ onError: 'continueRegularOutput' },
			),
			httpCall(
				'Charge',
				'charge',
				{ onError: node ? 'continueRegularOutput' : 'continueErrorOutput' },
				'={{ JSON.stringify({ id: $json.keys.id }) }}',
			),
		];
		if (node) nodes.push(completeNode({ position: [1100, 0] }, parameters));
		const connections = {
			Enrich: { main: [link('Join')] },
			Join: { main: [[], [], link('Charge'), []] },
			...(node
				? {
						Charge: { main: [link('Mark Complete')] },
						'Mark Complete': { main: [link('Respond 200'), link('Respond 500 (provider retries)')] },
					}
				: { Charge: { main: [[], []] }, Webhook: { main: [[...link('Enrich'), ...toInput('Join', 1)]] } }),
		} as IConnections;
		return { nodes, connections, heads: node ? ['Enrich', 'Join#1'] : [] };
	};
	it('compare datasets after the sub: trigger, B failing once', async () => {
		const p = 'tx';
		const r = record('compare trigger', await runTrigger(p, compareStep(false), `charge:${p}_b`));
		expect(r).toMatchObject({ refusal: false, answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] });
	});
	for (const [k, params] of Object.entries(KEY_FROM)) {
		it(`compare datasets after the sub: node ${k}, B failing once`, async () => {
			const p = `nx${k[0]}`;
			const r = record(
				`compare node ${k}`,
				await runNode(p, compareStep(true, { ...params, responseJson: '={{ JSON.stringify({ id: $json.id }) }}' }), `charge:${p}_b`),
			);
			expect(r).toMatchObject({ answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] });
		});
	}

	/* 10. The sub returning zero items for B (filtered inside). C's charge failing once. */
	const skipB = [{}, { skip: true }, {}];
	it('zero items for B: trigger, C failing once', async () => {
		const p = 'tz';
		const r = record('zero trigger', await runTrigger(p, triggerStep(zeroSub()), `charge:${p}_c`, three(p, skipB)));
		expect(r).toMatchObject({ refusal: false, answers: [500, 200], charges: [1, 0, 1], keys: ['completed', 'completed', 'completed'] });
	});
	for (const [k, params] of Object.entries(KEY_FROM)) {
		it(`zero items for B: node ${k}, C failing once`, async () => {
			const p = `nz${k[0]}`;
			const r = record(
				`zero node ${k}`,
				await runNode(p, nodeStep(zeroSub(), { ...params, ...RESPONSE }), `charge:${p}_c`, three(p, skipB)),
			);
			// B needs no effect (filtered inside); it never reaches Complete and is left to its lease.
			expect(r).toMatchObject({
				answers: [500, 200],
				charges: [1, 0, 1],
				keys: ['completed', 'processing', 'completed'],
				stored: [`${p}_a`, null, `${p}_c`],
			});
		});
	}
});
