import type { INode, INodeParameters } from 'n8n-workflow';

import { baseNodesInstalled, effectsFor, loadBaseNodeFiles } from '../support/n8nBaseNodes';
import { addNodeTypes, packageNode } from '../support/n8nEngine';
import { postgresCharges } from '../support/postgresCharges';
import { describeWithN8n, shapeHarness } from '../support/settleShapes';
import { inProcessTriggerProvider } from '../support/triggerProvider';
import {
	baseNode,
	eventBodies,
	executeInline,
	inlineSubWorkflow,
	keepOnlyBody,
	link,
	mergeSqlShape,
	once,
	type Shape,
	toInput,
} from '../support/settleWorkflows';
import { n8nFolderForTheFile } from '../support/triggerWebhookCall';

/*
 * Third red-team pass on the settlement rules (nodes/shared/settlement/), in n8n-core's own engine
 * with n8n-nodes-base's nodes, on shapes the other settleShapes* files do not cover. The harness is
 * test/support/settleShapes.ts; the provider redelivers the whole delivery until it gets a 2xx.
 * Each row: one effect per event after the retries, none lost. The comment above a row that once
 * needs a rule of its own says how n8n behaves there and which rule of the package reads it.
 */

// Before anything else: n8n-core keeps the n8n folder it first reads for the rest of the file (see the helper).
const n8nFolder = n8nFolderForTheFile('rt3-n8n-');

const { db, workflow, deliveries, statuses, provider } = shapeHarness('shapesrt3', {
	baseNodes: [
		'n8n-nodes-base.switch',
		'n8n-nodes-base.aggregate',
		'n8n-nodes-base.splitOut',
		'n8n-nodes-base.removeDuplicates',
		'n8n-nodes-base.set',
		'n8n-nodes-base.postgres',
	],
	subWorkflows: true,
	n8nPostgres: true,
});
const { deliver } = deliveries;

beforeAll(() => {
	if (!baseNodesInstalled()) return;
	addNodeTypes(
		loadBaseNodeFiles({
			'n8n-nodes-base.sort': 'Transform/Sort/Sort.node.js',
			'n8n-nodes-base.limit': 'Transform/Limit/Limit.node.js',
			'n8n-nodes-base.compareDatasets': 'CompareDatasets/CompareDatasets.node.js',
			'n8n-nodes-base.renameKeys': 'RenameKeys/RenameKeys.node.js',
		}),
	);
});

/* Postgres node, Query Batching "Transaction", continuing on error ----------------------------------- */

describeWithN8n('a Postgres node in one transaction that continues on error', () => {
	const { charges, failOnce } = postgresCharges(db);
	const credentials = { postgres: { id: 'pg', name: 'Postgres' } };
	const insert = (parameters: INodeParameters, onError: INode['onError']) =>
		baseNode('Insert Charge', 'postgres', 2.5, parameters, 0, { onError, credentials });
	const insertQuery = (queryBatching: string, onError: INode['onError']) =>
		insert(
			{
				operation: 'executeQuery',
				query: `=insert into ${db.schema}.charges (event) values ('{{ $json.body.id }}')`,
				options: { queryBatching },
			},
			onError,
		);

	// n8n-nodes-base's Postgres v2 (helpers/utils.js configureQueryRunner, "transaction") at Continue catches the
	// failing query, returns the results of the queries before it plus an error item for the failing one, and its
	// `db.tx` callback resolves: pg-promise sends COMMIT, which Postgres turns into ROLLBACK (the transaction is
	// aborted). The rows n8n records as done were rolled back: one failure in the run fails every key it was given
	// (settlement/trace.ts judgeExecution, nodeKinds.ts writesAllOrNone).
	it.each([
		['error output', 'continueErrorOutput', 'pgte'],
		['regular output', 'continueRegularOutput', 'pgtr'],
	] as const)(
		'Postgres 2.5 insert, Query Batching "transaction", Continue (%s), fails once for the 2nd of two: one row per event',
		async (_label, onError, tag) => {
			const ids = [`${tag}_a`, `${tag}_b`];
			await failOnce(ids[1]);
			const data = workflow(`wfr3-pg-tx-${tag}`, {
				nodes: [insertQuery('transaction', onError)],
				connections: {},
				heads: ['Insert Charge'],
			});
			const first = await deliver(data, eventBodies(ids));
			const firstDelivery = { answer: first.answer, states: await statuses(ids), rows: await charges(ids) };
			const { answers, lost } = await provider(data, eventBodies(ids));
			expect({ firstDelivery, lost, rows: await charges(ids), answers }).toEqual({
				firstDelivery: { answer: 500, states: ['failed', 'failed'], rows: [0, 0] },
				lost: [],
				rows: [1, 1],
				answers: [200],
			});
		},
	);

	it('the same at Stop Workflow (the node throws, all rolled back): every key failed, 500; one row per event after the retry', async () => {
		const ids = ['pgts_a', 'pgts_b'];
		await failOnce(ids[1]);
		const data = workflow('wfr3-pg-tx-stop', {
			nodes: [insertQuery('transaction', undefined)],
			connections: {},
			heads: ['Insert Charge'],
		});
		const { answers, lost } = await provider(data, eventBodies(ids));
		expect({ lost, rows: await charges(ids), answers }).toEqual({ lost: [], rows: [1, 1], answers: [500, 200] });
	});

	it('Query Batching "single" at Continue (error output), fails once for the 2nd of two: its one error item fails both keys; one row per event', async () => {
		const ids = ['pgs_a', 'pgs_b'];
		await failOnce(ids[1]);
		const data = workflow('wfr3-pg-single-continue', {
			nodes: [insertQuery('single', 'continueErrorOutput')],
			connections: {},
			heads: ['Insert Charge'],
		});
		const { answers, lost } = await provider(data, eventBodies(ids));
		expect({ lost, rows: await charges(ids), answers }).toEqual({ lost: [], rows: [1, 1], answers: [500, 200] });
	});
});

/* A sub-workflow that handles a failure before its last node ------------------------------------- */

describeWithN8n('a sub-workflow whose charge fails at Continue (using error output) before its last node', () => {
	// n8n hands a sub-workflow's result back as its *last executed node's* output. A charge at Continue (using error
	// output), that output not connected, then a node that records the charge: for two events the recording node runs
	// with the one that was charged and is the last node; the failed event's error item stays inside the
	// sub-execution, and the parent's record shows no failure for it. The sub-execution's own record does
	// (settlement/trace.ts failuresInside): its key fails as it would with the same nodes directly in the step.
	it('parent Execute Workflow at Continue (regular output), sub: charge (error output unconnected) → Record; charge fails once for the 2nd of two: one effect each', async () => {
		const tag = 'regular_once';
		const ids = [`sl_${tag}_a`, `sl_${tag}_b`];
		const sub = inlineSubWorkflow(
			[once(`Sub Charge ${tag}`, ids[1], 0, { onError: 'continueErrorOutput' }), baseNode('Record', 'noOp', 1, {}, 0)],
			{
				Webhook: { main: [link(`Sub Charge ${tag}`)] },
				[`Sub Charge ${tag}`]: { main: [link('Record')] },
			},
		);
		const data = workflow(`wfr3-sub-last-${tag}`, {
			nodes: [executeInline(sub, 'continueRegularOutput')],
			connections: {},
			heads: ['Run Sub-workflow'],
		});
		const { answers, lost } = await provider(data, eventBodies(ids));
		expect({ lost, effects: ids.map(effectsFor), answers }).toEqual({ lost: [], effects: [1, 1], answers: [500, 200] });
	});

	// The same root cause with one event: a node beside the charge in the sub-workflow (an audit log), lower on the
	// canvas, runs after it and is the last node: its item is the sub-workflow's result, the charge's failure unseen.
	it.each([
		['Stop Workflow', undefined],
		['Continue (regular output)', 'continueRegularOutput'],
	] as const)(
		'one event, parent at %s, sub: [charge (error output unconnected)] + [Audit Log beside it, below]; the charge fails once: one effect',
		async (_label, onError) => {
			const id = `sa_${onError ?? 'stop'}`;
			const sub = inlineSubWorkflow(
				[once(`Sub Charge ${id}`, id, 0, { onError: 'continueErrorOutput' }), baseNode('Audit Log', 'noOp', 1, {}, 200)],
				{ Webhook: { main: [link(`Sub Charge ${id}`, 'Audit Log')] } },
			);
			const data = workflow(`wfr3-sub-audit-${id}`, { nodes: [executeInline(sub, onError)], connections: {}, heads: ['Run Sub-workflow'] });
			const { answers, lost } = await provider(data, [{ id }]);
			expect({ lost, effects: effectsFor(id), answers }).toEqual({ lost: [], effects: 1, answers: [500, 200] });
		},
	);

	// From the database the package cannot see the sub-workflow's nodes: an item with an error on the last of a node's
	// several outputs is read as a failure.
	it('the same sub-workflow from the database (its nodes unseen), charge failing once for the 2nd of two: one effect each', async () => {
		const ids = ['sdb_a', 'sdb_b'];
		deliveries.saveSubWorkflow(
			'sub-rt3-db',
			[
				packageNode('Webhook', 'testWebhook'),
				once('Sub Charge sdb', ids[1], 0, { onError: 'continueErrorOutput' }),
				baseNode('Record', 'noOp', 1, {}, 0),
			],
			{ Webhook: { main: [link('Sub Charge sdb')] }, 'Sub Charge sdb': { main: [link('Record')] } },
		);
		const fromDatabase = baseNode(
			'Run Sub-workflow',
			'executeWorkflow',
			1.3,
			{
				source: 'database',
				workflowId: { __rl: true, mode: 'id', value: 'sub-rt3-db' },
				mode: 'once',
				options: { waitForSubWorkflow: true },
			},
			0,
			{ onError: 'continueRegularOutput' },
		);
		const data = workflow('wfr3-sub-db', { nodes: [fromDatabase], connections: {}, heads: ['Run Sub-workflow'] });
		const { answers, lost } = await provider(data, eventBodies(ids));
		expect({ lost, effects: ids.map(effectsFor), answers }).toEqual({ lost: [], effects: [1, 1], answers: [500, 200] });
	});

	it('the same sub-workflow, Execute Workflow "run once for each item": each sub-execution has one event, its error item returned; one effect each', async () => {
		const ids = ['se_a', 'se_b'];
		const sub = inlineSubWorkflow(
			[once('Sub Charge se', 'se_b', 0, { onError: 'continueErrorOutput' }), baseNode('Record', 'noOp', 1, {}, 0)],
			{
				Webhook: { main: [link('Sub Charge se')] },
				'Sub Charge se': { main: [link('Record')] },
			},
		);
		const data = workflow('wfr3-sub-each', {
			nodes: [executeInline(sub, 'continueRegularOutput', 'each')],
			connections: {},
			heads: ['Run Sub-workflow'],
		});
		const { answers, lost } = await provider(data, eventBodies(ids));
		expect({ lost, effects: ids.map(effectsFor), answers }).toEqual({ lost: [], effects: [1, 1], answers: [500, 200] });
	});

	it('control: the same charge and Record directly in the step: the failed key failed, 500; one effect each', async () => {
		const ids = ['sd_a', 'sd_b'];
		const data = workflow('wfr3-sub-direct', {
			nodes: [once('Charge', 'sd_b', 0, { onError: 'continueErrorOutput' }), baseNode('Record', 'noOp', 1, {}, 0)],
			connections: { Charge: { main: [link('Record')] } },
			heads: ['Charge'],
		});
		const { answers, lost } = await provider(data, eventBodies(ids));
		expect({ lost, effects: ids.map(effectsFor), answers }).toEqual({ lost: [], effects: [1, 1], answers: [500, 200] });
	});
});

/* n8n's reordering, dropping and comparing nodes before the charge ----------------------------------- */

const sortByAmount = (name: string) =>
	baseNode(
		name,
		'sort',
		1,
		{ type: 'simple', sortFieldsUi: { sortField: [{ fieldName: 'body.amount', order: 'descending' }] }, options: {} },
		0,
		{ onError: undefined },
	);

describeWithN8n('reordering, limiting and comparing nodes before a charge at Continue (using error output)', () => {
	it('Sort (stock node, by amount descending) → charge failing once for one of three: each key by its own event, one effect each', async () => {
		const ids = ['so_a', 'so_b', 'so_c'];
		const data = workflow('wfr3-sort', {
			nodes: [sortByAmount('Sort'), once('Charge', 'so_a', 0, { onError: 'continueErrorOutput' })],
			connections: { Sort: { main: [link('Charge')] } },
			heads: ['Sort'],
		});
		const events = [
			{ id: 'so_a', amount: 1 },
			{ id: 'so_b', amount: 3 },
			{ id: 'so_c', amount: 2 },
		];
		const first = await deliver(data, events);
		expect({ answer: first.answer, states: await statuses(ids) }).toEqual({ answer: 500, states: ['failed', 'completed', 'completed'] });
		const { answers, lost } = await provider(data, events);
		expect({ lost, effects: ids.map(effectsFor), answers }).toEqual({ lost: [], effects: [1, 1, 1], answers: [200] });
	});

	it('Edit Fields at its defaults (the key field dropped) → Sort → charge failing once for one of three: one effect each', async () => {
		const ids = ['sk_a', 'sk_b', 'sk_c'];
		const data = workflow('wfr3-keep-sort', {
			nodes: [keepOnlyBody('Only Body', 0), sortByAmount('Sort'), once('Charge', 'sk_c', 0, { onError: 'continueErrorOutput' })],
			connections: { 'Only Body': { main: [link('Sort')] }, Sort: { main: [link('Charge')] } },
			heads: ['Only Body'],
		});
		const events = [
			{ id: 'sk_a', amount: 1 },
			{ id: 'sk_b', amount: 3 },
			{ id: 'sk_c', amount: 2 },
		];
		const { answers, lost } = await provider(data, events);
		expect({ lost, effects: ids.map(effectsFor), answers, states: await statuses(ids) }).toEqual({
			lost: [],
			effects: [1, 1, 1],
			answers: [500, 200],
			states: ['completed', 'completed', 'completed'],
		});
	});

	it('Rename Keys (idempotency → meta) → charge failing once for one of two: one effect each', async () => {
		const ids = ['rk_a', 'rk_b'];
		const data = workflow('wfr3-rename', {
			nodes: [
				baseNode('Rename', 'renameKeys', 1, { keys: { key: [{ currentKey: 'idempotency', newKey: 'meta' }] }, additionalOptions: {} }, 0, {
					onError: undefined,
				}),
				once('Charge', 'rk_b', 0, { onError: 'continueErrorOutput' }),
			],
			connections: { Rename: { main: [link('Charge')] } },
			heads: ['Rename'],
		});
		const { answers, lost } = await provider(data, eventBodies(ids));
		expect({ lost, effects: ids.map(effectsFor), answers }).toEqual({ lost: [], effects: [1, 1], answers: [500, 200] });
	});

	it("Limit (2 of 3) → charge failing once for the 1st: the limited-out key completed without effect (the workflow's rule), one effect for the others", async () => {
		const ids = ['li_a', 'li_b', 'li_c'];
		const data = workflow('wfr3-limit', {
			nodes: [
				baseNode('Limit', 'limit', 1, { maxItems: 2, keep: 'firstItems' }, 0, { onError: undefined }),
				once('Charge', 'li_a', 0, { onError: 'continueErrorOutput' }),
			],
			connections: { Limit: { main: [link('Charge')] } },
			heads: ['Limit'],
		});
		const { answers, lost } = await provider(data, eventBodies(ids));
		expect({ lost, effects: ids.map(effectsFor), answers, states: await statuses(ids) }).toEqual({
			lost: [],
			effects: [1, 1, 0],
			answers: [500, 200],
			states: ['completed', 'completed', 'completed'],
		});
	});

	const compareShape = (tag: string, failOnce: string, compareOnError: INode['onError']): Shape => ({
		nodes: [
			baseNode(
				'Stored',
				'set',
				3.4,
				{
					mode: 'manual',
					assignments: { assignments: [{ id: 'b', name: 'body', value: '={{ { id: $json.body.id, amount: 0 } }}', type: 'object' }] },
					options: {},
				},
				100,
				{ onError: undefined },
			),
			baseNode(
				'Compare',
				'compareDatasets',
				2.3,
				{ mergeByFields: { values: [{ field1: 'body.id', field2: 'body.id' }] }, resolve: 'preferInput1', options: {} },
				0,
				{ onError: compareOnError },
			),
			once(`Charge ${tag}`, failOnce, 0, { onError: 'continueErrorOutput' }),
		],
		connections: { Stored: { main: [toInput('Compare', 1)] }, Compare: { main: [[], [], link(`Charge ${tag}`), []] } },
		heads: ['Compare', 'Stored'],
	});

	// Compare Datasets routes items and acts on nothing: at Stop Workflow with two events, before any node that may act,
	// its failure would leave nothing half done. Accepted; each event charged once.
	it('Compare Datasets at the default On Error gets two events before the charge: accepted, each charged once', async () => {
		const ids = ['cds_a', 'cds_b'];
		const run = await deliver(
			workflow('wfr3-compare-stop', compareShape('cds', '', undefined)),
			ids.map((id) => ({ id, amount: 5 })),
		);
		expect({ answer: run.answer, effects: ids.map(effectsFor), states: await statuses(ids) }).toEqual({
			answer: 200,
			effects: [1, 1],
			states: ['completed', 'completed'],
		});
	});

	it('Compare Datasets at Continue (events vs stored records, by body.id), "different" → charge failing once for one of two: one effect each', async () => {
		const ids = ['cd_a', 'cd_b'];
		const data = workflow('wfr3-compare', compareShape('cd', 'cd_b', 'continueRegularOutput'));
		const events = ids.map((id) => ({ id, amount: 5 }));
		const first = await deliver(data, events);
		expect({ answer: first.answer, effects: ids.map(effectsFor), states: await statuses(ids) }).toEqual({
			answer: 500,
			effects: [1, 0],
			states: ['completed', 'failed'],
		});
		const { answers, lost } = await provider(data, events);
		expect({ lost, effects: ids.map(effectsFor), answers }).toEqual({ lost: [], effects: [1, 1], answers: [200] });
	});
});

/* Batches, duplicates within the delivery, several effects behind a Switch, the error output merged back ------- */

describeWithN8n('batches, duplicates within one delivery, a Switch to two effects, an error output merged back', () => {
	it('Loop Over Items (batch size 2) over three events, charge at Continue (error output) failing once for the 2nd: one effect each', async () => {
		const ids = ['lb_a', 'lb_b', 'lb_c'];
		const data = workflow('wfr3-loop-2', {
			nodes: [
				baseNode('Loop', 'splitInBatches', 3, { batchSize: 2, options: {} }, 0),
				once('Charge', 'lb_b', 100, { onError: 'continueErrorOutput' }),
			],
			connections: { Loop: { main: [[], link('Charge')] }, Charge: { main: [link('Loop'), link('Loop')] } },
			heads: ['Loop'],
		});
		const first = await deliver(data, eventBodies(ids));
		expect({ answer: first.answer, states: await statuses(ids) }).toEqual({ answer: 500, states: ['completed', 'failed', 'completed'] });
		const { answers, lost } = await provider(data, eventBodies(ids));
		expect({ lost, effects: ids.map(effectsFor), answers }).toEqual({ lost: [], effects: [1, 1, 1], answers: [200] });
	});

	it('Loop Over Items (batch size 2), charge at the default On Error: refused before anything is reserved (two events per run)', async () => {
		const ids = ['ls_a', 'ls_b', 'ls_c'];
		const data = workflow('wfr3-loop-2-stop', {
			nodes: [baseNode('Loop', 'splitInBatches', 3, { batchSize: 2, options: {} }, 0), once('Charge', '', 100)],
			connections: { Loop: { main: [[], link('Charge')] }, Charge: { main: [link('Loop')] } },
			heads: ['Loop'],
		});
		const refused = await deliver(data, eventBodies(ids));
		expect({ answer: refused.answer, effects: ids.map(effectsFor), states: await statuses(ids) }).toEqual({
			answer: 503,
			effects: [0, 0, 0],
			states: [undefined, undefined, undefined],
		});
	});

	it("Remove Duplicates (within current input, by customer) → charge failing once for the kept one: the removed event's key completed without effect (the workflow's rule)", async () => {
		const ids = ['rd_a', 'rd_b', 'rd_c'];
		const data = workflow('wfr3-dedupe-input', {
			nodes: [
				baseNode(
					'One Per Customer',
					'removeDuplicates',
					2,
					{ operation: 'removeDuplicateInputItems', compare: 'selectedFields', fieldsToCompare: 'body.customer', options: {} },
					0,
					{ onError: undefined },
				),
				once('Charge', 'rd_a', 0, { onError: 'continueErrorOutput' }),
			],
			connections: { 'One Per Customer': { main: [link('Charge')] } },
			heads: ['One Per Customer'],
		});
		const events = [
			{ id: 'rd_a', customer: 'c1' },
			{ id: 'rd_b', customer: 'c1' },
			{ id: 'rd_c', customer: 'c2' },
		];
		const { answers, lost } = await provider(data, events);
		expect({ lost, effects: ids.map(effectsFor), answers, states: await statuses(ids) }).toEqual({
			lost: [],
			effects: [1, 0, 1],
			answers: [500, 200],
			states: ['completed', 'completed', 'completed'],
		});
	});

	it('Switch (3 outputs) → Charge / Refund / Ship, each at Continue (error output), Refund and Ship failing once: one effect each', async () => {
		const ids = ['sw_pay', 'sw_ref', 'sw_ship'];
		const data = workflow('wfr3-switch-three', {
			nodes: [
				baseNode('Route', 'switch', 3.2, { mode: 'expression', numberOutputs: 3, output: '={{ $json.body.route ?? 0 }}' }, 0, {
					onError: undefined,
				}),
				once('Charge', '', 0, { onError: 'continueErrorOutput' }),
				once('Refund', 'sw_ref', 100, { onError: 'continueErrorOutput' }),
				once('Ship', 'sw_ship', 200, { onError: 'continueErrorOutput' }),
			],
			connections: { Route: { main: [link('Charge'), link('Refund'), link('Ship')] } },
			heads: ['Route'],
		});
		const events = ids.map((id, route) => ({ id, route }));
		const first = await deliver(data, events);
		expect({ answer: first.answer, states: await statuses(ids) }).toEqual({ answer: 500, states: ['completed', 'failed', 'failed'] });
		const { answers, lost } = await provider(data, events);
		expect({ lost, effects: ids.map(effectsFor), answers }).toEqual({ lost: [], effects: [1, 1, 1], answers: [200] });
	});

	it('charge at Continue (error output), both outputs into a Merge (append), Settle chained after the Merge, failing once for one of two: one effect each', async () => {
		const ids = ['em_a', 'em_b'];
		const data = workflow('wfr3-error-merge', {
			nodes: [
				once('Charge', 'em_b', 0, { onError: 'continueErrorOutput' }),
				baseNode('Both', 'merge', 3, { mode: 'append' }, 0, { onError: undefined }),
			],
			connections: { Charge: { main: [toInput('Both', 0), toInput('Both', 1)] } },
			heads: ['Charge'],
			settleAfter: 'Both',
		});
		const first = await deliver(data, eventBodies(ids));
		expect({ answer: first.answer, states: await statuses(ids) }).toEqual({ answer: 500, states: ['completed', 'failed'] });
		const { answers, lost } = await provider(data, eventBodies(ids));
		expect({ lost, effects: ids.map(effectsFor), answers }).toEqual({ lost: [], effects: [1, 1], answers: [200] });
	});
});

/* Merge in SQL Query mode ------------------------------------------------------------------------------ */

describeWithN8n('Merge "SQL Query" joining the events with a lookup, the key field not selected', () => {
	const sqlShape = (
		tag: string,
		version: number,
		failOnce: string,
		query = 'SELECT input1.eid, input1.body, input2.tier FROM input1 LEFT JOIN input2 ON input1.eid = input2.eid',
	) => mergeSqlShape(tag, version, failOnce, query);

	it('Merge 3.2 (each row paired to the input rows it was selected from): charge failing once for one of two: one effect each', async () => {
		const ids = ['sq32_a', 'sq32_b'];
		const data = workflow('wfr3-sql-32', sqlShape('sq32', 3.2, 'sq32_b'));
		const first = await deliver(data, eventBodies(ids));
		expect({ answer: first.answer, effects: ids.map(effectsFor), states: await statuses(ids) }).toEqual({
			answer: 500,
			effects: [1, 0],
			states: ['completed', 'failed'],
		});
		const { answers, lost } = await provider(data, eventBodies(ids));
		expect({ lost, effects: ids.map(effectsFor), answers }).toEqual({ lost: [], effects: [1, 1], answers: [200] });
	});

	// Merge version 3 (and 3.1 or later for a query not starting with SELECT) pairs every row it outputs to every
	// item of both inputs (Merge/v3/actions/mode/combineBySql.js): a query that does not select the `idempotency`
	// field leaves each row standing for every event with no key to tell which, so one row's failure would fail every
	// key and the retry would charge the others again. Refused before anything is reserved (wiring.ts
	// checkSplitFromKeylessJoin, nodeKinds.ts joinsAndSplitsWithoutKeys).
	it('Merge 3 (each row paired to every input row), the key not selected: refused before anything is reserved, the fix named', async () => {
		const ids = ['sq30_a', 'sq30_b'];
		const refused = await deliver(workflow('wfr3-sql-30', sqlShape('sq30', 3, 'sq30_b')), eventBodies(ids));
		expect({ answer: refused.answer, effects: ids.map(effectsFor), states: await statuses(ids) }).toEqual({
			answer: 503,
			effects: [0, 0],
			states: [undefined, undefined],
		});
		// The refusal leaves Reserve through its Not Reserved output, the fix in its error.
		expect(JSON.stringify(refused.run.data.resultData.runData)).toContain("Select the events' key in the query (input1.idempotency)");
	});

	it('Merge 3 with the key selected (input1.idempotency): each row narrowed to the key it carries; one effect each', async () => {
		const ids = ['sq3k_a', 'sq3k_b'];
		const data = workflow(
			'wfr3-sql-3k',
			sqlShape(
				'sq3k',
				3,
				'sq3k_b',
				'SELECT input1.eid, input1.body, input1.idempotency, input2.tier FROM input1 LEFT JOIN input2 ON input1.eid = input2.eid',
			),
		);
		const first = await deliver(data, eventBodies(ids));
		expect({ answer: first.answer, effects: ids.map(effectsFor), states: await statuses(ids) }).toEqual({
			answer: 500,
			effects: [1, 0],
			states: ['completed', 'failed'],
		});
		const { answers, lost } = await provider(data, eventBodies(ids));
		expect({ lost, effects: ids.map(effectsFor), answers }).toEqual({ lost: [], effects: [1, 1], answers: [200] });
	});
});

/* The Idempotent Webhook trigger → a sub-workflow that handles its charge failure before its last node ----- */

describeWithN8n('the Idempotent Webhook trigger → Execute Workflow (Define Below) whose charge fails before its last node', () => {
	const { provide, triggerStatus } = inProcessTriggerProvider('rt3', n8nFolder);

	// The trigger settles by the same rule: the sub-execution's failure fails its key, 500, and the retry charges once.
	it('trigger → Execute Workflow (Stop Workflow), sub: [charge (Continue, error output unconnected)] + [Audit Log beside it, below], the charge failing once: one charge', async () => {
		const id = 'evt_rt3_sub_audit';
		const sub = inlineSubWorkflow(
			[once('Sub Charge trigger', id, 0, { onError: 'continueErrorOutput' }), baseNode('Audit Log', 'noOp', 1, {}, 200)],
			{ Webhook: { main: [link('Sub Charge trigger', 'Audit Log')] } },
		);
		const answers = await provide({ id }, executeInline(sub, undefined));
		expect({ answers: answers.map(({ status }) => status), key: await triggerStatus(id), charges: effectsFor(id) }).toEqual({
			answers: [500, 200],
			key: 'completed',
			charges: 1,
		});
	});

	it('control: the same sub-workflow without the Audit Log (the charge is its last node): 500, the retry charges once', async () => {
		const id = 'evt_rt3_sub_alone';
		const sub = inlineSubWorkflow([once('Sub Charge alone', id, 0, { onError: 'continueErrorOutput' })], {
			Webhook: { main: [link('Sub Charge alone')] },
		});
		const answers = await provide({ id }, executeInline(sub, undefined));
		expect({ answers: answers.map(({ status }) => status), key: await triggerStatus(id), charges: effectsFor(id) }).toEqual({
			answers: [500, 200],
			key: 'completed',
			charges: 1,
		});
	});
});
