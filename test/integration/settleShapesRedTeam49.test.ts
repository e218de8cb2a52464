import { type IConnections, type INode } from 'n8n-workflow';

import { describeWithN8n } from '../support/n8nBaseNodes';
import { link, toInput } from '../support/settleWorkflows';
import {
	baseNode as node,
	CHARGE_ID,
	definedInputsTrigger,
	ifTrue,
	keepUnlessSkipped,
	KEY_FROM,
	LOOKUP_BODY,
	mergeByEventId,
	RESPOND_WITH_ID,
	sortOn,
	subWorkflowRedTeam,
	subWorkflowTrigger,
	tagNode,
	threeEvents,
	type Step,
} from '../support/triggerRedTeam';

/*
 * Red team 49: shapes around the sub-execution trace of 12c31d6 / 081f205 not tried by passes 46-48: Execute Workflow
 * "each", a nested sub-workflow with If → Merge inside the inner one, Aggregate → Split Out inside, the sub's trigger
 * with defined inputs, a failure at Continue (error output) on a non-last node inside, Merge by fields / combine all /
 * by position (same order) after the sub, Remove Duplicates / Compare Datasets after the sub, the sub returning nothing
 * for one event. Sub-workflows as in pass 48: n8n 2.41.1's output, no record for an unsaved one.
 */

describeWithN8n('red team 49: more shapes through a sub-execution', () => {
	const { enrich, httpCall, nodePath, nodeStep, record, runNode, runTrigger, triggerStep } = subWorkflowRedTeam({
		tag: 'rt49',
		route: (route, body) => (route === 'lookup' ? { ...body } : route === 'settings' ? { currency: 'eur' } : undefined),
		subWorkflows: { savingSettings: true },
		baseNodeFiles: {
			'n8n-nodes-base.aggregate': 'Transform/Aggregate/Aggregate.node.js',
			'n8n-nodes-base.set': 'Set/Set.node.js',
			'n8n-nodes-base.filter': 'Filter/Filter.node.js',
			'n8n-nodes-base.removeDuplicates': 'Transform/RemoveDuplicates/RemoveDuplicates.node.js',
			'n8n-nodes-base.compareDatasets': 'CompareDatasets/CompareDatasets.node.js',
		},
	});
	const { completeNode } = nodePath;

	const sub = (nodes: INode[], connections: IConnections, saved = true) =>
		JSON.stringify({ nodes, connections, settings: saved ? {} : { saveDataSuccessExecution: 'none' } });

	/** Trigger → Sort by amount → Lookup (error output unconnected). */
	const sortSub = (triggerNode: INode = subWorkflowTrigger()) =>
		sub([triggerNode, sortOn('body.amount'), httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY)], {
			Webhook: { main: [link('By Amount')] },
			'By Amount': { main: [link('Lookup')] },
			Lookup: { main: [[], []] },
		} as IConnections);
	/** Trigger → Lookup (no reordering). */
	const plainSub = () =>
		sub([subWorkflowTrigger(), httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY)], {
			Webhook: { main: [link('Lookup')] },
			Lookup: { main: [[], []] },
		} as IConnections);
	/** Inner: Trigger → If (vip) → Lookup VIP / Lookup → Merge (append). */
	const ifMergeSub = () =>
		sub(
			[
				subWorkflowTrigger(),
				ifTrue('$json.body.vip'),
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
		sub([subWorkflowTrigger(), enrich(inner, 'once', 'Inner')], { Webhook: { main: [link('Inner')] } } as IConnections);
	/** Trigger → Aggregate (body → bodies) → Split Out bodies (as body) → Lookup. */
	const aggregateSplitSub = () =>
		sub(
			[
				subWorkflowTrigger(),
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
	/** Trigger → Sort → Lookup (error output unconnected: a failing lookup drops the event) → Tag (Edit Fields, last). */
	const innerFailureSub = () =>
		sub(
			[
				subWorkflowTrigger(),
				sortOn('body.amount'),
				httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY),
				tagNode(),
			],
			{
				Webhook: { main: [link('By Amount')] },
				'By Amount': { main: [link('Lookup')] },
				Lookup: { main: [link('Tag'), []] },
			} as IConnections,
		);
	/** Trigger → Filter (skip not true) → Lookup: an event with skip returns no item. */
	const zeroSub = () =>
		sub([subWorkflowTrigger(), keepUnlessSkipped(), httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY)], {
			Webhook: { main: [link('Keep')] },
			Keep: { main: [link('Lookup')] },
			Lookup: { main: [[], []] },
		} as IConnections);

	/* 1. Execute Workflow "Run Once for Each Item" (Sort → Lookup inside), A's charge failing once. */
	it('each: trigger, A failing once', async () => {
		const p = 'te';
		const r = record('each trigger', await runTrigger(p, triggerStep(sortSub(), 'each'), `charge:${p}_a`));
		expect(r).toMatchObject({ refusal: false, answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] });
	});
	for (const [k, params] of Object.entries(KEY_FROM)) {
		it(`each: node ${k}, A failing once`, async () => {
			const p = `ne${k[0]}`;
			const r = record(`each node ${k}`, await runNode(p, nodeStep(sortSub(), { ...params, ...RESPOND_WITH_ID }, 'each'), `charge:${p}_a`));
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
		const r = record('nested trigger', await runTrigger(p, triggerStep(outerSub(ifMergeSub())), `charge:${p}_a`, threeEvents(p, vipB)));
		expect(r).toMatchObject({ refusal: false, answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] });
	});
	for (const [k, params] of Object.entries(KEY_FROM)) {
		it(`nested If→Merge: node ${k}, A failing once`, async () => {
			const p = `nn${k[0]}`;
			const r = record(
				`nested node ${k}`,
				await runNode(p, nodeStep(outerSub(ifMergeSub()), { ...params, ...RESPOND_WITH_ID }), `charge:${p}_a`, threeEvents(p, vipB)),
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
			const r = record(
				`aggregate node ${k}`,
				await runNode(p, nodeStep(aggregateSplitSub(), { ...params, ...RESPOND_WITH_ID }), `charge:${p}_b`),
			);
			// Documented (docs/templates.md, "Aggregate → Split Out inside a sub-workflow, on the node path"): refused after the
			// step, not before; none lost, the other events charged again with the retry.
			expect(r).toMatchObject({ answers: [500, 200], charges: [2, 1, 2], keys: ['completed', 'completed', 'completed'] });
		});
	}

	/* 4. Sub trigger with defined inputs (idempotency dropped). B's charge failing once. */
	it('workflowInputs: trigger, B failing once', async () => {
		const p = 'tw';
		const r = record('inputs trigger', await runTrigger(p, triggerStep(sortSub(definedInputsTrigger())), `charge:${p}_b`));
		expect(r).toMatchObject({ refusal: false, answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] });
	});
	for (const [k, params] of Object.entries(KEY_FROM)) {
		it(`workflowInputs: node ${k}, B failing once`, async () => {
			const p = `nw${k[0]}`;
			const r = record(
				`inputs node ${k}`,
				await runNode(p, nodeStep(sortSub(definedInputsTrigger()), { ...params, ...RESPOND_WITH_ID }), `charge:${p}_b`),
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
				await runNode(p, nodeStep(innerFailureSub(), { ...params, ...RESPOND_WITH_ID }), `lookup:${p}_b`),
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
	const byPosition = () => node('Join', 'merge', 3.2, { mode: 'combine', combineBy: 'combineByPosition', options: {} });
	const combineAll = () => node('Join', 'merge', 3.2, { mode: 'combine', combineBy: 'combineAll', options: {} });

	it('merge by fields (sorted sub): trigger, B failing once', async () => {
		const p = 'tm';
		const r = record('merge fields trigger', await runTrigger(p, mergeStep(sortSub(), mergeByEventId(), false), `charge:${p}_b`));
		expect(r).toMatchObject({ refusal: false, answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] });
	});
	for (const [k, params] of Object.entries(KEY_FROM)) {
		it(`merge by fields (sorted sub): node ${k}, B failing once`, async () => {
			const p = `nm${k[0]}`;
			const r = record(
				`merge fields node ${k}`,
				await runNode(p, mergeStep(sortSub(), mergeByEventId(), true, { ...params, ...RESPOND_WITH_ID }), `charge:${p}_b`),
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
				await runNode(p, mergeStep(sortSub(), combineAll(), true, { ...params, ...RESPOND_WITH_ID }, 'settings'), `charge:${p}_b`),
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
				await runNode(p, mergeStep(plainSub(), byPosition(), true, { ...params, ...RESPOND_WITH_ID }), `charge:${p}_b`),
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
			const r = record(`dedup node ${k}`, await runNode(p, dedupStep(true, { ...params, ...RESPOND_WITH_ID }), `charge:${p}_b`));
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
			const r = record(`compare node ${k}`, await runNode(p, compareStep(true, { ...params, ...RESPOND_WITH_ID }), `charge:${p}_b`));
			expect(r).toMatchObject({ answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] });
		});
	}

	/* 10. The sub returning zero items for B (filtered inside). C's charge failing once. */
	const skipB = [{}, { skip: true }, {}];
	it('zero items for B: trigger, C failing once', async () => {
		const p = 'tz';
		const r = record('zero trigger', await runTrigger(p, triggerStep(zeroSub()), `charge:${p}_c`, threeEvents(p, skipB)));
		expect(r).toMatchObject({ refusal: false, answers: [500, 200], charges: [1, 0, 1], keys: ['completed', 'completed', 'completed'] });
	});
	for (const [k, params] of Object.entries(KEY_FROM)) {
		it(`zero items for B: node ${k}, C failing once`, async () => {
			const p = `nz${k[0]}`;
			const r = record(
				`zero node ${k}`,
				await runNode(p, nodeStep(zeroSub(), { ...params, ...RESPOND_WITH_ID }), `charge:${p}_c`, threeEvents(p, skipB)),
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
