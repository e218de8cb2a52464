import { type IConnections, type INode, type IRun } from 'n8n-workflow';

import { WebhookSignatureVerify } from '../../nodes/WebhookSignatureVerify/WebhookSignatureVerify.node';
import { withCodeRunner } from '../support/codeTaskRunner';
import { describeWithN8n } from '../support/n8nBaseNodes';
import { PACKAGE } from '../support/n8nEngine';
import { link, toInput } from '../support/settleWorkflows';
import { baseNode as node, EVENTS, events, SPLIT_OUT_EVENTS, triggerRedTeam, type Step } from '../support/triggerRedTeam';
import type { SubWorkflowCode } from '../support/triggerProvider';

/*
 * Red team 50: shapes not tried by passes 46-49: a Wait (short interval, kept in process by n8n) inside a sub-workflow
 * run once for all items; a sub-workflow given from the database (Source: Database, a workflowId: the package cannot
 * see its nodes) whose last node ran several times (fed by both branches of an If; a Loop Over Items); Execute Workflow
 * "Run Once for Each Item" whose sub-workflow filters or fans out; two Execute Workflow nodes in a row, the second given
 * the first's re-ordered results, a Merge by field after them.
 *
 * Sub-workflows as in pass 48 (n8n 2.41.1's output, no record for an unsaved one), and Source: Database as n8n 2.41.1
 * runs it: ExecuteWorkflow 1.3's getWorkflowInfo gives `{ id }` (the resource locator's value) and no `code`; n8n's
 * executeWorkflow loads that workflow (its nodes, connections and settings) from the database, runs it and answers
 * `{ executionId, data }` the same way.
 */

describeWithN8n('red team 50: waits, the database, each item, two sub-workflows in a row', () => {
	/** The workflows "in n8n's database", by id (Source: Database). */
	const database = new Map<string, SubWorkflowCode>();
	const { effectsAt, failNext, httpCall, keyStore, keyRows, nodePath, provide, refusedAtPublish, statuses, useTrigger } = triggerRedTeam({
		tag: 'rt50',
		route: (route, body) => (route === 'lookup' ? { ...body } : undefined),
		engine: (engine) => withCodeRunner(engine as never) as typeof engine,
		subWorkflows: { savingSettings: true, database },
		echoBody: true,
		nodeLeaseSeconds: 1,
		providerPauseMs: 1200,
		baseNodeFiles: {
			'n8n-nodes-base.webhook': 'Webhook/Webhook.node.js',
			'n8n-nodes-base.splitOut': 'Transform/SplitOut/SplitOut.node.js',
			'n8n-nodes-base.sort': 'Transform/Sort/Sort.node.js',
			'n8n-nodes-base.set': 'Set/Set.node.js',
			'n8n-nodes-base.filter': 'Filter/Filter.node.js',
			'n8n-nodes-base.code': 'Code/Code.node.js',
			'n8n-nodes-base.executeWorkflowTrigger': 'ExecuteWorkflow/ExecuteWorkflowTrigger/ExecuteWorkflowTrigger.node.js',
		},
		nodeTypes: { [`${PACKAGE}.webhookSignatureVerify`]: new WebhookSignatureVerify() },
	});
	const { completeNode, nodeKey, nodeTemplate, provideNodePath, reserveNode, useNodePath } = nodePath;
	const FIELD_RESERVE = () => reserveNode({ keySource: 'field', keyField: 'body.id', keyPrefix: 'evt:' });

	const dump = (label: string, runs: IRun[]) => {
		if (process.env.RT50_DUMP)
			for (const run of runs)
				process.stderr.write(
					`RT50 ${label} ${run.data.resultData.error?.message?.slice(0, 300)} ${JSON.stringify(
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
	/** The second sub-workflow's Lookup: its items are the first one's answers ({ id, amount, ok }). */
	const LOOKUP_ANSWER = '={{ JSON.stringify({ id: $json.id, amount: $json.amount }) }}';
	const trigger = (version = 1.2) => node('Webhook', 'executeWorkflowTrigger', version, { inputSource: 'passthrough' });
	const inputsTrigger = () =>
		node('Webhook', 'executeWorkflowTrigger', 1.1, {
			inputSource: 'workflowInputs',
			workflowInputs: { values: [{ name: 'body', type: 'any' }] },
		});
	const subOf = (nodes: INode[], connections: IConnections, saved = true): SubWorkflowCode => ({
		nodes,
		connections,
		settings: saved ? {} : { saveDataSuccessExecution: 'none' },
	});
	const sortOn = (field: string, order: 'ascending' | 'descending' = 'ascending', name = 'By Amount') =>
		node(name, 'sort', 1, { sortFieldsUi: { sortField: [{ fieldName: field, order }] }, options: {} });
	const waitNode = (seconds = 1) => node('Pause', 'wait', 1.1, { resume: 'timeInterval', amount: seconds, unit: 'seconds' });

	/** Trigger → Sort by amount → Wait (1 s: n8n keeps it in process) → Lookup (error output unconnected). */
	const waitSub = (triggerNode: INode = trigger()) =>
		subOf([triggerNode, sortOn('body.amount'), waitNode(), httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY)], {
			Webhook: { main: [link('By Amount')] },
			'By Amount': { main: [link('Pause')] },
			Pause: { main: [link('Lookup')] },
			Lookup: { main: [[], []] },
		} as IConnections);
	/** Trigger → Wait → Sort → Lookup → Wait again (last node: the answers after a second wait). */
	const waitLastSub = () =>
		subOf(
			[
				trigger(),
				waitNode(),
				sortOn('body.amount'),
				httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY),
				{ ...waitNode(), name: 'Pause Again', id: 'Pause Again' },
			],
			{
				Webhook: { main: [link('Pause')] },
				Pause: { main: [link('By Amount')] },
				'By Amount': { main: [link('Lookup')] },
				Lookup: { main: [link('Pause Again'), []] },
			} as IConnections,
		);
	/** Trigger → VIP? → (true) Lookup, (false) the same Lookup: Lookup, the last node, runs twice. */
	const twiceSub = (saved = true, version = 1.2) =>
		subOf(
			[trigger(version), ifOn('$json.body.vip'), httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY)],
			{ Webhook: { main: [link('VIP?')] }, 'VIP?': { main: [link('Lookup'), link('Lookup')] }, Lookup: { main: [[], []] } } as IConnections,
			saved,
		);
	/** Trigger → VIP? → Lookup VIP / Lookup (error outputs unconnected) → Tag (Edit Fields, last, runs twice). */
	const ifTagSub = () =>
		subOf(
			[
				trigger(),
				ifOn('$json.body.vip'),
				httpCall('Lookup VIP', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY),
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
				Webhook: { main: [link('VIP?')] },
				'VIP?': { main: [link('Lookup VIP'), link('Lookup')] },
				'Lookup VIP': { main: [link('Tag'), []] },
				Lookup: { main: [link('Tag'), []] },
			} as IConnections,
		);
	/** Trigger → Loop Over Items (1) → Lookup → back; Done unconnected (the loop node runs last and returns Done). */
	const loopSub = () =>
		subOf([trigger(), node('Loop', 'splitInBatches', 3, { batchSize: 1, options: {} }), httpCall('Lookup', 'lookup', {}, LOOKUP_BODY)], {
			Webhook: { main: [link('Loop')] },
			Loop: { main: [[], link('Lookup')] },
			Lookup: { main: [link('Loop')] },
		} as IConnections);
	/** Trigger → Sort by amount → Lookup. */
	const sortSub = (order: 'ascending' | 'descending' = 'ascending', field = 'body.amount', body = LOOKUP_BODY, saved = true) =>
		subOf(
			[trigger(), sortOn(field, order), httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, body)],
			{ Webhook: { main: [link('By Amount')] }, 'By Amount': { main: [link('Lookup')] }, Lookup: { main: [[], []] } } as IConnections,
			saved,
		);
	/** Trigger → Lookup (no reordering). */
	const plainSub = (body = LOOKUP_BODY) =>
		subOf([trigger(), httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, body)], {
			Webhook: { main: [link('Lookup')] },
			Lookup: { main: [[], []] },
		} as IConnections);
	/** Trigger → Keep (skip not true) → Lookup: an event with skip returns nothing. */
	const filterSub = () =>
		subOf(
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
	/** Trigger → Split Out body.lines (as line) → Lookup per line ({ id: line id }): one item per line. */
	const linesSub = () =>
		subOf(
			[
				trigger(),
				node('Lines', 'splitOut', 1, {
					fieldToSplitOut: 'body.lines',
					include: 'noOtherFields',
					options: { destinationFieldName: 'line' },
				}),
				httpCall(
					'Lookup',
					'lookup',
					{ onError: 'continueErrorOutput' },
					'={{ JSON.stringify({ id: $json.line.id, amount: $json.line.amount }) }}',
				),
			],
			{ Webhook: { main: [link('Lines')] }, Lines: { main: [link('Lookup')] }, Lookup: { main: [[], []] } } as IConnections,
		);

	const inline = (workflow: SubWorkflowCode) => ({ source: 'parameter', workflowJson: JSON.stringify(workflow) });
	let stored = 0;
	/** Saves `workflow` "in the database": Source Database, the workflowId resource locator (By ID) naming it. */
	const fromDatabase = (workflow: SubWorkflowCode) => {
		const id = `rt50-db-${++stored}`;
		database.set(id, workflow);
		return { source: 'database', workflowId: { __rl: true, value: id, mode: 'id' } };
	};
	type SubSource = Record<string, unknown>;
	const enrich = (source: SubSource, mode: 'once' | 'each' = 'once', name = 'Enrich') =>
		node(name, 'executeWorkflow', 1.3, { ...source, mode, options: { waitForSubWorkflow: true } }, { onError: 'continueRegularOutput' });
	const CHARGE_ID = '={{ JSON.stringify({ id: $json.id }) }}';
	const RESPONSE = { responseJson: '={{ JSON.stringify({ id: $json.id }) }}' };

	/** Node path: Enrich → Charge (Continue) → Mark Complete → Respond 200 / 500. */
	const nodeStep = (source: SubSource, parameters: Record<string, unknown>, mode: 'once' | 'each' = 'once'): Step => ({
		nodes: [
			enrich(source, mode),
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
	/** Trigger path: Enrich → Charge (error output, unconnected). */
	const triggerStep = (source: SubSource, mode: 'once' | 'each' = 'once'): Step => ({
		nodes: [enrich(source, mode), httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_ID)],
		connections: { Enrich: { main: [link('Charge')] }, Charge: { main: [[], []] } } as IConnections,
		heads: ['Enrich'],
	});

	const nodeStatuses = async (ids: string[]) => await Promise.all(ids.map(async (id) => await nodeKey(`evt:${id}`)));
	const nodeStored = async (ids: string[]) => {
		const found = await keyStore().getKeys(ids.map((id) => `evt:${id}`));
		return ids.map((id) => (found.get(`evt:${id}`)?.response as { id?: string } | null | undefined)?.id ?? null);
	};
	const triggerStored = () =>
		keyRows().map((row) => (row.response ? ((JSON.parse(row.response) as { id?: string })?.id ?? 'other') : null));
	/** A (vip, 300), B (100), C (200): Sort gives B, C, A; the If's true branch runs A first. */
	const three = (p: string, extra: Array<Record<string, unknown>> = [{}, {}, {}]) => [
		{ id: `${p}_a`, amount: 300, vip: true, ...extra[0] },
		{ id: `${p}_b`, amount: 100, ...extra[1] },
		{ id: `${p}_c`, amount: 200, ...extra[2] },
	];
	const charges = (ids: string[]) => ids.map((id) => effectsAt('charge', id));
	const KEY_FROM = { item: { source: 'item' }, paired: { source: 'reserveNode' } } as const;

	const runTrigger = async (p: string, step: Step, fail: string | undefined, list = three(p), chargedIds?: string[]) => {
		const ids = list.map((event) => event.id as string);
		useTrigger(`wf-rt50-${p}`, EVENTS);
		const refusal = await refusedAtPublish(step);
		if (fail) failNext(fail);
		const { answers, runs } = await provide(events(list), step);
		dump(p, runs);
		return {
			refusal: typeof refusal === 'string' ? refusal.slice(0, 160) : false,
			answers,
			charges: charges(chargedIds ?? ids),
			keys: await statuses(ids),
			stored: triggerStored(),
		};
	};
	const runNode = async (p: string, step: Step, fail: string | undefined, list = three(p), chargedIds?: string[]) => {
		const ids = list.map((event) => event.id as string);
		useNodePath(`wf-rt50-${p}`);
		if (fail) failNext(fail);
		const { answers, runs } = await provideNodePath(events(list), () =>
			nodeTemplate(step, { reserve: FIELD_RESERVE(), before: SPLIT_OUT_EVENTS }),
		);
		dump(p, runs);
		return {
			answers,
			errors: runs.map((run) => run.data.resultData.error?.message?.slice(0, 100) ?? null),
			charges: charges(chargedIds ?? ids),
			keys: await nodeStatuses(ids),
			stored: await nodeStored(ids),
		};
	};
	const results: Record<string, unknown> = {};
	afterAll(() => {
		process.stderr.write(
			`RT50 RESULTS\n${Object.entries(results)
				.map(([label, value]) => `${label}: ${JSON.stringify(value)}`)
				.join('\n')}\n`,
		);
	});
	const record = <T>(label: string, value: T): T => {
		results[label] = value;
		return value;
	};
	const ALL_DONE = { answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] };
	const triggerDone = { refusal: false, ...ALL_DONE };
	const nodeDone = (p: string) => ({ ...ALL_DONE, stored: [`${p}_a`, `${p}_b`, `${p}_c`] });

	/* 1. A Wait (1 s, in process) inside a sub-workflow run once for all items. */
	describe('1. a wait inside the sub-workflow (once)', () => {
		it("Sort → Wait → Lookup: trigger, B's charge failing once", async () => {
			const p = 'tw1';
			expect(record('wait charge trigger', await runTrigger(p, triggerStep(inline(waitSub())), `charge:${p}_b`))).toMatchObject(
				triggerDone,
			);
		});
		it("Sort → Wait → Lookup: trigger, A's lookup (after the wait, inside) failing once", async () => {
			const p = 'tw2';
			expect(record('wait lookup trigger', await runTrigger(p, triggerStep(inline(waitSub())), `lookup:${p}_a`))).toMatchObject(
				triggerDone,
			);
		});
		it("sub trigger with defined inputs (key dropped) → Sort → Wait → Lookup: trigger, B's charge failing once", async () => {
			const p = 'tw3';
			expect(
				record('wait inputs trigger', await runTrigger(p, triggerStep(inline(waitSub(inputsTrigger()))), `charge:${p}_b`)),
			).toMatchObject(triggerDone);
		});
		it("Wait → Sort → Lookup → Wait (last): trigger, C's charge failing once", async () => {
			const p = 'tw4';
			expect(record('wait last trigger', await runTrigger(p, triggerStep(inline(waitLastSub())), `charge:${p}_c`))).toMatchObject(
				triggerDone,
			);
		});
		for (const [k, params] of Object.entries(KEY_FROM)) {
			it(`Sort → Wait → Lookup: node ${k}, B's charge failing once`, async () => {
				const p = `nw1${k[0]}`;
				expect(
					record(`wait charge node ${k}`, await runNode(p, nodeStep(inline(waitSub()), { ...params, ...RESPONSE }), `charge:${p}_b`)),
				).toMatchObject(nodeDone(p));
			});
			it(`sub trigger with defined inputs → Sort → Wait → Lookup: node ${k}, B's charge failing once`, async () => {
				const p = `nw3${k[0]}`;
				expect(
					record(
						`wait inputs node ${k}`,
						await runNode(p, nodeStep(inline(waitSub(inputsTrigger())), { ...params, ...RESPONSE }), `charge:${p}_b`),
					),
				).toMatchObject(nodeDone(p));
			});
			it(`Wait → Sort → Lookup → Wait (last): node ${k}, C's charge failing once`, async () => {
				const p = `nw4${k[0]}`;
				expect(
					record(`wait last node ${k}`, await runNode(p, nodeStep(inline(waitLastSub()), { ...params, ...RESPONSE }), `charge:${p}_c`)),
				).toMatchObject(nodeDone(p));
			});
		}
	});

	/* 2. A sub-workflow from the database (its nodes unknown to the package), whose last node ran several times. */
	describe('2. Source: Database', () => {
		it("If → Lookup (both branches, Lookup last, twice): trigger, B's charge failing once", async () => {
			const p = 'td1';
			expect(record('db twice charge trigger', await runTrigger(p, triggerStep(fromDatabase(twiceSub())), `charge:${p}_b`))).toMatchObject(
				triggerDone,
			);
		});
		it("If → Lookup (both branches, Lookup last, twice): trigger, B's lookup failing once (its error output, returned)", async () => {
			const p = 'td2';
			expect(record('db twice lookup trigger', await runTrigger(p, triggerStep(fromDatabase(twiceSub())), `lookup:${p}_b`))).toMatchObject(
				triggerDone,
			);
		});
		it("If → Lookup VIP / Lookup → Tag (last, twice): trigger, A's lookup failing once (dropped inside)", async () => {
			const p = 'td3';
			// Documented (docs/templates.md, "a sub-workflow whose branches end in different nodes"): Tag and Lookup VIP share a
			// position, so Lookup VIP (A's failure only) runs last and n8n returns that alone: B and C are lost.
			expect(record('db tag lookup trigger', await runTrigger(p, triggerStep(fromDatabase(ifTagSub())), `lookup:${p}_a`))).toMatchObject({
				...triggerDone,
				charges: [1, 0, 0],
			});
		});
		it("If → Lookup VIP / Lookup → Tag (last, twice): trigger, C's charge failing once", async () => {
			const p = 'td4';
			expect(record('db tag charge trigger', await runTrigger(p, triggerStep(fromDatabase(ifTagSub())), `charge:${p}_c`))).toMatchObject(
				triggerDone,
			);
		});
		it("Loop Over Items (1) → Lookup, Done returned: trigger, A's charge failing once", async () => {
			const p = 'td5';
			expect(record('db loop trigger', await runTrigger(p, triggerStep(fromDatabase(loopSub())), `charge:${p}_a`))).toMatchObject(
				triggerDone,
			);
		});
		for (const [k, params] of Object.entries(KEY_FROM)) {
			it(`If → Lookup (both branches): node ${k}, B's charge failing once`, async () => {
				const p = `nd1${k[0]}`;
				expect(
					record(`db twice node ${k}`, await runNode(p, nodeStep(fromDatabase(twiceSub()), { ...params, ...RESPONSE }), `charge:${p}_b`)),
				).toMatchObject(nodeDone(p));
			});
			it(`If → Lookup VIP / Lookup → Tag: node ${k}, C's charge failing once`, async () => {
				const p = `nd4${k[0]}`;
				expect(
					record(`db tag node ${k}`, await runNode(p, nodeStep(fromDatabase(ifTagSub()), { ...params, ...RESPONSE }), `charge:${p}_c`)),
				).toMatchObject(nodeDone(p));
			});
			it(`Loop Over Items → Lookup: node ${k}, A's charge failing once`, async () => {
				const p = `nd5${k[0]}`;
				expect(
					record(`db loop node ${k}`, await runNode(p, nodeStep(fromDatabase(loopSub()), { ...params, ...RESPONSE }), `charge:${p}_a`)),
				).toMatchObject(nodeDone(p));
			});
		}
	});

	/* 5. A branch that ends inside the sub-workflow runs last with nothing but failures: n8n returns what the node that
	 * ran last gave (buildSubWorkflowOutput: the last node executed), so the answers another branch's end node gave
	 * before it are not returned. Laid out as a user would: the VIP branch on top (n8n's v1 order runs it first). */
	const laidOut = (workflow: SubWorkflowCode, y: Record<string, number>): SubWorkflowCode => ({
		...workflow,
		nodes: workflow.nodes.map((inner) =>
			y[inner.name] === undefined ? inner : { ...inner, position: [inner.position[0], y[inner.name]] },
		),
	});
	const branchesSub = () => laidOut(ifTagSub(), { 'Lookup VIP': -200, Lookup: 200, Tag: 0 });
	/** Trigger → Loop Over Items (1) → Lookup (error output unconnected) → back; Done unconnected. */
	const loopFailSub = () =>
		subOf(
			[
				trigger(),
				node('Loop', 'splitInBatches', 3, { batchSize: 1, options: {} }),
				httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY),
			],
			{ Webhook: { main: [link('Loop')] }, Loop: { main: [[], link('Lookup')] }, Lookup: { main: [link('Loop'), []] } } as IConnections,
		);
	/** Trigger → VIP? → (true) Lookup VIP → Tag; (false) Keep (Filter: skip not true) → Lookup → Tag. The VIP branch on top. */
	const filterBranchSub = () => {
		const base = ifTagSub();
		const keep = node('Keep', 'filter', 2.2, {
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
		});
		return laidOut(
			{
				...base,
				nodes: [...base.nodes, keep],
				connections: {
					...base.connections,
					'VIP?': { main: [link('Lookup VIP'), link('Keep')] },
					Keep: { main: [link('Lookup')] },
				} as IConnections,
			},
			{ 'Lookup VIP': -200, Keep: 200, Lookup: 200, Tag: 0 },
		);
	};
	const two = (p: string) => [
		{ id: `${p}_a`, amount: 300, vip: true },
		{ id: `${p}_b`, amount: 100 },
	];
	const TWO_DONE = { answers: [500, 200], charges: [1, 1], keys: ['completed', 'completed'] };
	describe('5. a branch ending with failures only runs last inside', () => {
		for (const [where, source] of [
			['inline', () => inline(branchesSub())],
			['database', () => fromDatabase(branchesSub())],
		] as const) {
			it(`${where}: If → Lookup VIP (top) / Lookup (bottom) → Tag; A vip, B not; trigger, B's lookup failing once`, async () => {
				const p = `tb${where[0]}`;
				// Documented (docs/templates.md, "a sub-workflow whose branches end in different nodes"): n8n returns only what
				// Lookup, run last, gave (B's failure), not Tag's answer for A: A is completed uncharged (lost).
				expect(record(`branch ${where} trigger`, await runTrigger(p, triggerStep(source()), `lookup:${p}_b`, two(p)))).toMatchObject({
					refusal: false,
					...TWO_DONE,
					charges: [0, 1],
				});
			});
			for (const [k, params] of Object.entries(KEY_FROM)) {
				it(`${where}: If → Lookup VIP / Lookup → Tag; node ${k}, B's lookup failing once`, async () => {
					const p = `nb${where[0]}${k[0]}`;
					// Documented (the same row): nothing reaches Mark Complete; answered 200, both keys left to their lease (lost).
					expect(
						record(`branch ${where} node ${k}`, await runNode(p, nodeStep(source(), { ...params, ...RESPONSE }), `lookup:${p}_b`, two(p))),
					).toMatchObject({ answers: [200], charges: [0, 0], keys: ['processing', 'processing'] });
				});
			}
			/* An Execute Workflow Trigger 1.1 (a sub-workflow made before 1.2, its "returnOutput" left unset): n8n returns
			 * the last node's last run alone; the If's first branch's run of Lookup is not returned. No failure at all. */
			const twice11 = () => (where === 'database' ? fromDatabase(twiceSub(true, 1.1)) : inline(twiceSub(true, 1.1)));
			it(`${where}: sub trigger 1.1, If → Lookup (both branches, Lookup last, twice): trigger, nothing failing`, async () => {
				const p = `tv${where[0]}`;
				const r = record(`trigger 1.1 ${where} trigger`, await runTrigger(p, triggerStep(twice11()), undefined));
				// A retry is fine (an event whose answer was not returned runs again); the last answer 2xx, one charge each.
				expect({ ...r, answers: r.answers.at(-1) }).toMatchObject({
					refusal: false,
					answers: 200,
					charges: [1, 1, 1],
					keys: ['completed', 'completed', 'completed'],
				});
			});
			for (const [k, params] of Object.entries(KEY_FROM)) {
				it(`${where}: sub trigger 1.1, If → Lookup (both branches): node ${k}, nothing failing`, async () => {
					const p = `nv${where[0]}${k[0]}`;
					const r = record(`trigger 1.1 ${where} node ${k}`, await runNode(p, nodeStep(twice11(), { ...params, ...RESPONSE }), undefined));
					// Documented (docs/templates.md, "an Execute Workflow Trigger before 1.2"): on the node path the events whose
					// answers n8n did not return never reach Mark Complete: answered 200, their keys left to their lease (lost).
					expect({ ...r, answers: r.answers.at(-1) }).toMatchObject({
						answers: 200,
						charges: [1, 0, 0],
						keys: ['completed', 'processing', 'processing'],
						stored: [`${p}_a`, null, null],
					});
				});
			}
			/* The node path with Settle beside the step (Reserve's New → Settle, answering by its outputs), no Mark Complete. */
			const settleStep = (source: SubSource): Step => ({
				nodes: [enrich(source), httpCall('Charge', 'charge', { onError: 'continueRegularOutput' }, CHARGE_ID)],
				connections: { Enrich: { main: [link('Charge')] } } as IConnections,
				heads: ['Enrich'],
			});
			const runSettle = async (p: string, source: SubSource, fail: string | undefined, list: Array<Record<string, unknown>>) => {
				const ids = list.map((event) => event.id as string);
				useNodePath(`wf-rt50-${p}`);
				if (fail) failNext(fail);
				const { answers, runs } = await provideNodePath(events(list), () =>
					nodeTemplate(settleStep(source), { reserve: FIELD_RESERVE(), before: SPLIT_OUT_EVENTS, settle: true }),
				);
				dump(p, runs);
				return { answers: answers.at(-1), charges: charges(ids), keys: await nodeStatuses(ids) };
			};
			it(`${where}: If → Lookup VIP / Lookup → Tag; node path with Settle, B's lookup failing once`, async () => {
				const p = `sb${where[0]}`;
				const source = where === 'database' ? fromDatabase(branchesSub()) : inline(branchesSub());
				// Documented (docs/templates.md, "a sub-workflow whose branches end in different nodes"): A is lost.
				expect(record(`branch ${where} settle`, await runSettle(p, source, `lookup:${p}_b`, two(p)))).toMatchObject({
					answers: 200,
					charges: [0, 1],
					keys: ['completed', 'completed'],
				});
			});
			it(`${where}: sub trigger 1.1, If → Lookup (both branches); node path with Settle, nothing failing`, async () => {
				const p = `sv${where[0]}`;
				expect(record(`trigger 1.1 ${where} settle`, await runSettle(p, twice11(), undefined, three(p)))).toMatchObject({
					answers: 200,
					charges: [1, 1, 1],
					keys: ['completed', 'completed', 'completed'],
				});
			});
			/* No failure at all: B (not VIP) is skipped by a Filter on the bottom branch, which runs last with nothing. */
			const skipped = (p: string) => [
				{ id: `${p}_a`, amount: 300, vip: true },
				{ id: `${p}_b`, amount: 100, skip: true },
			];
			it(`${where}: If → Lookup VIP → Tag / Keep (Filter) → Lookup → Tag; B skipped; trigger, nothing failing`, async () => {
				const p = `tf${where[0]}`;
				const source = where === 'database' ? fromDatabase(filterBranchSub()) : inline(filterBranchSub());
				const r = record(`filter branch ${where} trigger`, await runTrigger(p, triggerStep(source), undefined, skipped(p)));
				// Documented (docs/templates.md, "a sub-workflow whose branches end in different nodes"): the Filter, run last with
				// nothing kept, is what n8n returns; A's answer from Tag is not, and A is completed uncharged (lost).
				expect({ ...r, answers: r.answers.at(-1) }).toMatchObject({
					refusal: false,
					answers: 200,
					charges: [0, 0],
					keys: ['completed', 'completed'],
				});
			});
			it(`${where}: If → Lookup VIP → Tag / Keep (Filter) → Lookup → Tag; B skipped; node path with Settle, nothing failing`, async () => {
				const p = `sf${where[0]}`;
				const source = where === 'database' ? fromDatabase(filterBranchSub()) : inline(filterBranchSub());
				// Documented (the same row): A is lost.
				expect(record(`filter branch ${where} settle`, await runSettle(p, source, undefined, skipped(p)))).toMatchObject({
					answers: 200,
					charges: [0, 0],
					keys: ['completed', 'completed'],
				});
			});
			it(`${where}: Loop Over Items (1) → Lookup (error output unconnected) → back; trigger, C's lookup (the last) failing once`, async () => {
				const p = `tl${where[0]}`;
				const loopSource = where === 'database' ? fromDatabase(loopFailSub()) : inline(loopFailSub());
				expect(record(`loop ${where} trigger`, await runTrigger(p, triggerStep(loopSource), `lookup:${p}_c`))).toMatchObject(triggerDone);
			});
		}
	});

	/* 6. A Code node (Run Once for All Items) re-ordering inside the sub-workflow, returning $input.all() sorted: the
	 * items it returns keep the pairing their input items had (to the node before it), which n8n-core does not rewrite. */
	const codeSub = (triggerNode: INode) =>
		subOf(
			[
				triggerNode,
				sortOn('body.amount'),
				node(
					'By Id',
					'code',
					2,
					{
						mode: 'runOnceForAllItems',
						jsCode: 'return $input.all().sort((a, b) => String(b.json.body.id).localeCompare(String(a.json.body.id)));',
					},
					{ onError: 'continueRegularOutput' },
				),
				httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY),
			],
			{
				Webhook: { main: [link('By Amount')] },
				'By Amount': { main: [link('By Id')] },
				'By Id': { main: [link('Lookup')] },
				Lookup: { main: [[], []] },
			} as IConnections,
		);
	describe('6. a Code node re-ordering inside', () => {
		for (const [label, triggerNode] of [
			['passthrough', () => trigger()],
			['defined inputs', () => inputsTrigger()],
		] as const) {
			it(`${label}: Sort → Code (sort by id desc) → Lookup: trigger, B's charge failing once`, async () => {
				const p = `tc${label[0]}`;
				expect(
					record(`code ${label} trigger`, await runTrigger(p, triggerStep(inline(codeSub(triggerNode()))), `charge:${p}_b`)),
				).toMatchObject(triggerDone);
			});
			it(`${label}: Sort → Code (sort by id desc) → Lookup: trigger, A's lookup failing once`, async () => {
				const p = `tk${label[0]}`;
				expect(
					record(`code ${label} lookup trigger`, await runTrigger(p, triggerStep(inline(codeSub(triggerNode()))), `lookup:${p}_a`)),
				).toMatchObject(triggerDone);
			});
			for (const [k, params] of Object.entries(KEY_FROM)) {
				it(`${label}: Sort → Code → Lookup: node ${k}, B's charge failing once`, async () => {
					const p = `nc${label[0]}${k[0]}`;
					expect(
						record(
							`code ${label} node ${k}`,
							await runNode(p, nodeStep(inline(codeSub(triggerNode())), { ...params, ...RESPONSE }), `charge:${p}_b`),
						),
					).toMatchObject(nodeDone(p));
				});
			}
		}
	});

	/* 3. Execute Workflow "Run Once for Each Item" whose sub-workflow filters or fans out. */
	describe('3. each item: filtering, fanning out', () => {
		const skipC = [{}, {}, { skip: true }];
		it("Filter drops C inside: trigger, B's charge failing once", async () => {
			const p = 'te1';
			const r = record(
				'each filter trigger',
				await runTrigger(p, triggerStep(inline(filterSub()), 'each'), `charge:${p}_b`, three(p, skipC)),
			);
			expect(r).toMatchObject({ refusal: false, answers: [500, 200], charges: [1, 1, 0], keys: ['completed', 'completed', 'completed'] });
		});
		const lines = (p: string) => [
			{
				id: `${p}_a`,
				amount: 300,
				lines: [
					{ id: `${p}_a1`, amount: 1 },
					{ id: `${p}_a2`, amount: 2 },
				],
			},
			{ id: `${p}_b`, amount: 100, lines: [{ id: `${p}_b1`, amount: 3 }] },
			{
				id: `${p}_c`,
				amount: 200,
				lines: [
					{ id: `${p}_c1`, amount: 4 },
					{ id: `${p}_c2`, amount: 5 },
				],
			},
		];
		const lineIds = (p: string) => [`${p}_a1`, `${p}_a2`, `${p}_b1`, `${p}_c1`, `${p}_c2`];
		it("Split Out lines inside (2, 1, 2 items): trigger, B's only line's charge failing once", async () => {
			const p = 'te2';
			const r = record(
				'each lines trigger',
				await runTrigger(p, triggerStep(inline(linesSub()), 'each'), `charge:${p}_b1`, lines(p), lineIds(p)),
			);
			expect(r).toMatchObject({
				refusal: false,
				answers: [500, 200],
				charges: [1, 1, 1, 1, 1],
				keys: ['completed', 'completed', 'completed'],
			});
		});
		it("Split Out lines inside, once for all items: trigger, B's only line's charge failing once", async () => {
			const p = 'te3';
			const r = record(
				'once lines trigger',
				await runTrigger(p, triggerStep(inline(linesSub()), 'once'), `charge:${p}_b1`, lines(p), lineIds(p)),
			);
			expect(r).toMatchObject({
				refusal: false,
				answers: [500, 200],
				charges: [1, 1, 1, 1, 1],
				keys: ['completed', 'completed', 'completed'],
			});
		});
		for (const [k, params] of Object.entries(KEY_FROM)) {
			it(`Filter drops C inside: node ${k}, B's charge failing once`, async () => {
				const p = `ne1${k[0]}`;
				const r = record(
					`each filter node ${k}`,
					await runNode(p, nodeStep(inline(filterSub()), { ...params, ...RESPONSE }, 'each'), `charge:${p}_b`, three(p, skipC)),
				);
				// C needs no effect (filtered inside): it never reaches Complete and is left to its lease (as pass 49's row 10).
				expect(r).toMatchObject({ answers: [500, 200], charges: [1, 1, 0], keys: ['completed', 'completed', 'processing'] });
			});
			it(`Split Out lines inside: node ${k}, B's only line's charge failing once`, async () => {
				const p = `ne2${k[0]}`;
				const r = record(
					`each lines node ${k}`,
					await runNode(p, nodeStep(inline(linesSub()), { ...params, ...RESPONSE }, 'each'), `charge:${p}_b1`, lines(p), lineIds(p)),
				);
				expect(r).toMatchObject({ answers: [500, 200], charges: [1, 1, 1, 1, 1], keys: ['completed', 'completed', 'completed'] });
			});
		}
	});

	/* 4. Two Execute Workflow nodes in a row: the second given the first's re-ordered answers; a Merge by field after. */
	describe('4. two sub-workflows in a row', () => {
		const second = (saved = true) => sortSub('descending', 'id', LOOKUP_ANSWER, saved);
		const twoStep = (first: SubWorkflowCode, then: SubWorkflowCode, complete?: Record<string, unknown>, merge = false): Step => {
			const nodes: INode[] = [
				enrich(inline(first)),
				enrich(inline(then), 'once', 'Enrich Again'),
				httpCall('Charge', 'charge', { onError: complete ? 'continueRegularOutput' : 'continueErrorOutput' }, CHARGE_ID),
			];
			if (merge)
				nodes.push(
					node('Join', 'merge', 3.2, {
						mode: 'combine',
						advanced: true,
						mergeByFields: { values: [{ field1: 'id', field2: 'body.id' }] },
						joinMode: 'keepMatches',
						outputDataFrom: 'both',
						options: {},
					}),
				);
			if (complete) nodes.push(completeNode({ position: [1100, 0] }, complete));
			const connections = {
				Enrich: { main: [link('Enrich Again')] },
				'Enrich Again': { main: [link(merge ? 'Join' : 'Charge')] },
				...(merge ? { Join: { main: [link('Charge')] } } : {}),
				...(complete
					? {
							Charge: { main: [link('Mark Complete')] },
							'Mark Complete': { main: [link('Respond 200'), link('Respond 500 (provider retries)')] },
						}
					: { Charge: { main: [[], []] } }),
			} as IConnections;
			const heads = merge ? ['Enrich', 'Join#1'] : ['Enrich'];
			if (!complete && merge) connections.Webhook = { main: [[...link('Enrich'), ...toInput('Join', 1)]] };
			return { nodes, connections, heads: complete || !merge ? heads : [] };
		};
		it("Sort by amount, then Sort by id descending: trigger, B's charge failing once", async () => {
			const p = 'tt1';
			expect(record('two trigger', await runTrigger(p, twoStep(sortSub(), second()), `charge:${p}_b`))).toMatchObject(triggerDone);
		});
		it("plain, then Sort by id descending, Merge by field with the events: trigger, A's charge failing once", async () => {
			const p = 'tt2';
			expect(
				record('two merge trigger', await runTrigger(p, twoStep(plainSub(), second(), undefined, true), `charge:${p}_a`)),
			).toMatchObject(triggerDone);
		});
		it("Sort by amount, then Sort by id descending: trigger, A's lookup (in the first sub-workflow) failing once", async () => {
			const p = 'tt3';
			expect(record('two lookup trigger', await runTrigger(p, twoStep(sortSub(), second()), `lookup:${p}_a`))).toMatchObject(triggerDone);
		});
		for (const [k, params] of Object.entries(KEY_FROM)) {
			it(`Sort by amount, then Sort by id descending: node ${k}, B's charge failing once`, async () => {
				const p = `nt1${k[0]}`;
				expect(
					record(`two node ${k}`, await runNode(p, twoStep(sortSub(), second(), { ...params, ...RESPONSE }), `charge:${p}_b`)),
				).toMatchObject(nodeDone(p));
			});
			it(`plain, then Sort by id descending, Merge by field: node ${k}, A's charge failing once`, async () => {
				const p = `nt2${k[0]}`;
				expect(
					record(`two merge node ${k}`, await runNode(p, twoStep(plainSub(), second(), { ...params, ...RESPONSE }, true), `charge:${p}_a`)),
				).toMatchObject(nodeDone(p));
			});
		}
	});
});
