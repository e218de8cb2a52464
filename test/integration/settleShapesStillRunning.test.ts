import {
	NodeConnectionTypes,
	NodeOperationError,
	type IExecuteFunctions,
	type INode,
	type INodeExecutionData,
	type INodeParameters,
	type INodeType,
} from 'n8n-workflow';

import { effects, effectsFor } from '../support/n8nBaseNodes';
import { packageNode } from '../support/n8nEngine';
import { describeWithN8n, shapeHarness } from '../support/settleShapes';
import { baseNode, effect, is2xx, link, skipIf, toInput, withQueueMode, type Delivery, type Shape } from '../support/settleWorkflows';

/*
 * Shapes found by trying to break the settle rules: several events in one delivery with some still
 * running when Settle runs, a Wait in queue mode (answered 409 when it starts waiting), Waits that
 * could run twice, and nodes that drop n8n's paired items. Same harness as
 * settleConstructs.test.ts: n8n-core's WorkflowExecute, n8n-nodes-base's own If/Merge/Wait/Loop
 * nodes, a real Postgres. Each row plays the provider: it redelivers the whole delivery while the
 * answer is not 2xx, and checks what must hold: one effect per event, no 2xx answered for a
 * delivery one of whose keys is not completed (a lost event), no double effect.
 */

const wait = (name: string, y: number, hours = 1, extra: Partial<INode> = {}) =>
	baseNode(name, 'wait', 1.1, { resume: 'timeInterval', amount: hours, unit: 'hours' }, y, extra);

/* Test-only node types ----------------------------------------------------------------------- */

const eventIdOf = (item: INodeExecutionData) => String((item.json as { body?: { id?: unknown } }).body?.id ?? '');

/**
 * A Code node in "Run Once for All Items" that returns items without pairedItem, as users write
 * them: "aggregate" (one item listing every event: n8n-core then pairs it to input item 0 only) or
 * "filter" (drops the skip events: n8n-core cannot pair the rest).
 */
class TestCodeNoPairing implements INodeType {
	description: INodeType['description'] = {
		displayName: 'Test Code Without Pairing',
		name: 'testCodeNoPairing',
		group: ['transform'],
		version: 1,
		description: 'Code node that forgets pairedItem',
		defaults: { name: 'Code' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		properties: [
			{
				displayName: 'Mode',
				name: 'mode',
				type: 'options',
				options: [
					{ name: 'Aggregate', value: 'aggregate' },
					{ name: 'Filter', value: 'filter' },
				],
				default: 'aggregate',
			},
		],
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const mode = this.getNodeParameter('mode', 0) as string;
		const items = this.getInputData();
		if (mode === 'aggregate') return [[{ json: { ids: items.map(eventIdOf) } }]];
		return [items.filter((item) => (item.json as { body?: { skip?: boolean } }).body?.skip !== true).map((item) => ({ json: item.json }))];
	}
}

/**
 * A Code node that groups the events two by two into one item without pairedItem: the item copies
 * the first event's json (its key included) and lists the group's ids. Three events give two items,
 * which n8n-core cannot pair: the second event of a group comes out under the first one's key.
 */
class TestGroupNoPairing implements INodeType {
	description: INodeType['description'] = {
		displayName: 'Test Group Without Pairing',
		name: 'testGroupNoPairing',
		group: ['transform'],
		version: 1,
		description: 'Code node that groups items two by two and forgets pairedItem',
		defaults: { name: 'Group' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		properties: [],
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const items = this.getInputData();
		const groups: INodeExecutionData[] = [];
		for (let index = 0; index < items.length; index += 2) {
			const group = items.slice(index, index + 2);
			groups.push({ json: { ...group[0].json, ids: group.map(eventIdOf) } });
		}
		return [groups];
	}
}

let batchAttempts = 0;

/** A batch write (one INSERT for every event of the aggregated item): fails its first "Fail Times" attempts. */
class TestBatchEffect implements INodeType {
	description: INodeType['description'] = {
		displayName: 'Test Batch Effect',
		name: 'testBatchEffect',
		group: ['transform'],
		version: 1,
		description: 'One effect per listed id',
		defaults: { name: 'Batch' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		properties: [{ displayName: 'Fail Times', name: 'failTimes', type: 'number', default: 0 }],
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const failTimes = this.getNodeParameter('failTimes', 0, 0) as number;
		return [
			this.getInputData().map((item, index) => {
				batchAttempts += 1;
				if (batchAttempts <= failTimes) {
					const error = new NodeOperationError(this.getNode(), 'batch insert refused', { itemIndex: index });
					if (!this.continueOnFail()) throw error;
					return { json: { error: error.message }, pairedItem: { item: index } };
				}
				for (const id of (item.json.ids as string[]) ?? []) effects.push(id);
				return { json: { ...item.json, written: true }, pairedItem: { item: index } };
			}),
		];
	}
}

/* Harness ------------------------------------------------------------------------------------ */

const { workflow, deliveries, keyState, statuses, provider } = shapeHarness('shapes', {
	testNodes: {
		testCodeNoPairing: new TestCodeNoPairing(),
		testBatchEffect: new TestBatchEffect(),
		testGroupNoPairing: new TestGroupNoPairing(),
	},
});
const { deliver, runToEnd } = deliveries;

/** Why Reserve refused the delivery: the error on its first Not Reserved item (its last output). */
function refusal(delivery: Delivery): string | undefined {
	const outputs = delivery.run.data.resultData.runData.Reserve?.[0]?.data?.main ?? [];
	return (outputs[outputs.length - 1]?.[0]?.json as { error?: string } | undefined)?.error;
}

beforeEach(() => {
	batchAttempts = 0;
});

/* Change 1: Settle leaves every key to the end while one is pending ---------------------------- */

describeWithN8n('several events in one delivery, one still running when Settle runs', () => {
	// Route: skip events end at once; the others pass a Gate (failing at once for the events named) and reach a Merge
	// whose other input (B) has no data (n8n runs it after Settle). The Ifs come before any node that may have an
	// effect: after one, with several events, they are refused (settleShapesRedTeam5.test.ts).
	const mergeShape = (write: INodeParameters, gateFailOnce = ''): Shape => ({
		nodes: [
			skipIf('Route', 0),
			skipIf('Flagged?', 0, 'flag'),
			packageNode(
				'Gate',
				'testEffectOnce',
				{ failOnce: gateFailOnce, noEffect: true },
				{ position: [400, 0], onError: 'continueErrorOutput' },
			),
			baseNode('B', 'noOp', 1, {}, 100),
			baseNode('Merge', 'merge', 3, {}, 0),
			effect('Write', write, 0, { onError: 'continueErrorOutput' }),
		],
		connections: {
			Route: { main: [[], link('Flagged?')] },
			'Flagged?': { main: [link('B'), link('Gate')] },
			Gate: { main: [toInput('Merge', 0)] },
			B: { main: [toInput('Merge', 1)] },
			Merge: { main: [link('Write')] },
		},
		heads: ['Route'],
	});

	// The loss this row guards against: the retry carries r1_done, now a duplicate; r1_merge and r1_fail are pending at
	// the Merge, Settle defers them, and Reserve's Duplicate branch answered 200 before r1_fail's write failed.
	it('three events, one finished, one pending at a Merge whose write fails, one failing at once: non-2xx until all are done, one effect each', async () => {
		const ids = ['r1_done', 'r1_merge', 'r1_fail'];
		const data = workflow('wf-r1', mergeShape({ failTimes: 1 }, 'r1_fail'));
		const bodies = [{ id: 'r1_done', skip: true }, { id: 'r1_merge' }, { id: 'r1_fail' }];
		const { answers, lost } = await provider(data, bodies);
		expect(lost).toEqual([]);
		expect(answers[0]).toBe(500);
		expect(is2xx(answers[answers.length - 1])).toBe(true);
		expect(ids.map(effectsFor)).toEqual([0, 1, 1]);
		expect(await statuses(ids)).toEqual(['completed', 'completed', 'completed']);
	});

	it('every key pending when Settle runs (all at the Merge), the write fails for one: 500, the retry writes it once', async () => {
		const ids = ['r2_a', 'r2_b'];
		const data = workflow('wf-r2', mergeShape({}, ''));
		// Fail once for r2_b only: a Gate after the Merge.
		data.nodes.push(
			packageNode('Gate2', 'testEffectOnce', { failOnce: 'r2_b', noEffect: true }, { position: [400, 50], onError: 'continueErrorOutput' }),
		);
		data.connections.Merge = { main: [link('Gate2')] };
		data.connections.Gate2 = { main: [link('Write')] };
		const { answers, lost } = await provider(
			data,
			ids.map((id) => ({ id })),
		);
		expect(lost).toEqual([]);
		expect(answers[0]).toBe(500);
		expect(ids.map(effectsFor)).toEqual([1, 1]);
		expect(await statuses(ids)).toEqual(['completed', 'completed']);
	});

	it('every key pending and all succeed: the end answers nothing and n8n answers 200; all completed', async () => {
		const ids = ['r2ok_a', 'r2ok_b'];
		const data = workflow('wf-r2ok', mergeShape({}, ''));
		const { answers, lost } = await provider(
			data,
			ids.map((id) => ({ id })),
		);
		expect(lost).toEqual([]);
		expect(answers).toEqual([200]);
		expect(ids.map(effectsFor)).toEqual([1, 1]);
	});

	it("Loop Over Items (batch 1) over three keys and a skip event done at once; the loop's Done output to a Merge, then a check that fails once for one key, then the write", async () => {
		const ids = ['r3_skip', 'r3_a', 'r3_b', 'r3_c'];
		const data = workflow('wf-r3', {
			nodes: [
				skipIf('Route', 0),
				baseNode('Loop', 'splitInBatches', 3, { batchSize: 1, options: {} }, 0),
				baseNode('Enrich', 'noOp', 1, {}, 0),
				baseNode('B', 'noOp', 1, {}, 100),
				baseNode('Merge', 'merge', 3, {}, 0),
				packageNode(
					'Check',
					'testEffectOnce',
					{ failOnce: 'r3_b', noEffect: true },
					{ position: [400, 0], onError: 'continueErrorOutput' },
				),
				effect('Write', {}, 0, { onError: 'continueErrorOutput' }),
			],
			connections: {
				Route: { main: [[], link('Loop')] },
				Loop: { main: [toInput('Merge', 0), link('Enrich')] },
				Enrich: { main: [link('Loop')] },
				B: { main: [toInput('Merge', 1)] },
				Merge: { main: [link('Check')] },
				Check: { main: [link('Write')] },
			},
			heads: ['Route'],
		});
		const bodies = [{ id: 'r3_skip', skip: true }, { id: 'r3_a' }, { id: 'r3_b' }, { id: 'r3_c' }];
		const { answers, lost } = await provider(data, bodies);
		expect(lost).toEqual([]);
		expect(answers[0]).toBe(500);
		expect(ids.map(effectsFor)).toEqual([0, 1, 1, 1]);
		expect(await statuses(ids)).toEqual(['completed', 'completed', 'completed', 'completed']);
	});

	it("template placement: a duplicate and a new event whose write fails at once (nothing pending): Settle answers 500 before the duplicate's 200", async () => {
		const data = workflow('wf-dup-now', {
			nodes: [effect('Write', { failTimes: 1 }, 0, { onError: 'continueErrorOutput' })],
			connections: {},
			heads: ['Write'],
		});
		await provider(data, [{ id: 'dn_old' }]);
		effects.length = 0;
		const { answers, lost } = await provider(data, [{ id: 'dn_old' }, { id: 'dn_new' }]);
		expect(lost).toEqual([]);
		expect(answers[0]).toBe(500);
		expect(['dn_old', 'dn_new'].map(effectsFor)).toEqual([0, 1]);
	});

	// The loss this row guards against: Settle deferred every key (one pending at the Merge) and answered nothing; n8n
	// then ran Reserve's Duplicate branch, whose 200 answered the delivery before the write failed.
	it("a duplicate and a new event pending at a Merge whose write fails: Settle answers 409 before the duplicate's branch, the failed event is retried", async () => {
		const data = workflow('wf-dup-merge', mergeShape({ failTimes: 1 }));
		await provider(data, [{ id: 'dm_old' }]);
		effects.length = 0;
		const first = await deliver(data, [{ id: 'dm_old' }, { id: 'dm_new' }]);
		expect({ answer: first.answer, states: await statuses(['dm_old', 'dm_new']) }).toEqual({
			answer: 409,
			states: ['completed', 'failed'],
		});
	});

	// The loss this row guards against: Settle chained after the step runs once per arriving batch; the skip event's
	// run completed it and answered 200 while the other key was still waiting at the Merge.
	it('Settle chained after the step, one event finished, the other pending at a Merge whose write fails: 500, the retry writes it once', async () => {
		const ids = ['r4_done', 'r4_merge'];
		const data = workflow('wf-r4', {
			nodes: [
				skipIf('Route', 0),
				baseNode('Done', 'noOp', 1, {}, 0),
				baseNode('B', 'noOp', 1, {}, 100),
				baseNode('Merge', 'merge', 3, {}, 0),
				effect('Write', { failTimes: 1 }, 0, { onError: 'continueErrorOutput' }),
				baseNode('Join', 'noOp', 1, {}, 0),
			],
			connections: {
				Route: { main: [link('Done'), toInput('Merge', 0)] },
				B: { main: [toInput('Merge', 1)] },
				Merge: { main: [link('Write')] },
				Done: { main: [link('Join')] },
				Write: { main: [link('Join')] },
			},
			heads: ['Route'],
			settleAfter: 'Join',
		});
		const bodies = [{ id: 'r4_done', skip: true }, { id: 'r4_merge' }];
		const { answers, lost } = await provider(data, bodies);
		expect({ answers, lost }).toEqual({ answers: [500, 200], lost: [] });
		expect(ids.map(effectsFor)).toEqual([0, 1]);
	});

	// The loss this row guards against: Settle inside the loop completed the first key and answered 200 while the
	// loop still held the others; the second key's write then failed.
	it("Loop Over Items (batch 1) with Settle chained after the write inside the loop, the 2nd key's write fails: 500, no 2xx before it", async () => {
		const ids = ['r5_a', 'r5_b', 'r5_c'];
		const data = workflow('wf-r5', {
			nodes: [
				baseNode('Loop', 'splitInBatches', 3, { batchSize: 1, options: {} }, 0),
				effect('Write', { failTimes: 0, failFor: 'r5_b' }, 0, { onError: 'continueErrorOutput' }),
			],
			connections: { Loop: { main: [[], link('Write')] }, Write: { main: [link('Loop'), link('Loop')] } },
			heads: ['Loop'],
			settleAfter: 'Write',
		});
		const first = await deliver(
			data,
			ids.map((id) => ({ id })),
		);
		// What must hold: no 2xx while r5_b failed.
		expect({ answer: first.answer, states: await statuses(ids) }).toEqual({ answer: 500, states: ['completed', 'failed', 'completed'] });
	});
});

/* Change 2: queue mode, the execution starting to wait answers 409 ----------------------------- */

describeWithN8n('a Wait in queue mode', () => {
	it('several keys, one failed (Gate) before the Wait: 409 while it waits, the retries run it once; one effect each', async () => {
		await withQueueMode(async () => {
			const ids = ['q1_a', 'q1_b'];
			const data = workflow('wf-q1', {
				nodes: [
					packageNode(
						'Gate',
						'testEffectOnce',
						{ failOnce: 'q1_a', noEffect: true },
						{ position: [400, -50], onError: 'continueErrorOutput' },
					),
					wait('Wait', 0),
					effect('Charge', {}, 100, { onError: 'continueErrorOutput' }),
				],
				connections: { Gate: { main: [link('Wait')] }, Wait: { main: [link('Charge')] } },
				heads: ['Gate'],
			});
			const { answers, lost } = await provider(
				data,
				ids.map((id) => ({ id })),
			);
			expect(lost).toEqual([]);
			expect(answers[0]).toBe(409);
			expect(ids.map(effectsFor)).toEqual([1, 1]);
			expect(await statuses(ids)).toEqual(['completed', 'completed']);
		});
	});

	it('a copy arriving during the wait together with a new event: not 2xx; after the resume the retry is 2xx, one effect each', async () => {
		await withQueueMode(async () => {
			const data = workflow('wf-q2', {
				nodes: [wait('Wait', 0), effect('Charge', {}, 100, { onError: 'continueErrorOutput' })],
				connections: { Wait: { main: [link('Charge')] } },
				heads: ['Wait'],
			});
			const waiting = await deliver(data, [{ id: 'q2_w' }]);
			expect(waiting.answer).toBe(409);
			// The copy of q2_w comes with a new event q2_n (a batch provider): the copy is In Progress, q2_n waits too.
			const mixed = await deliver(data, [{ id: 'q2_w' }, { id: 'q2_n' }]);
			expect(is2xx(mixed.answer)).toBe(false);
			await runToEnd(data, waiting);
			await runToEnd(data, mixed);
			const { lost } = await provider(data, [{ id: 'q2_w' }, { id: 'q2_n' }]);
			expect(lost).toEqual([]);
			expect(['q2_w', 'q2_n'].map(effectsFor)).toEqual([1, 1]);
		});
	});

	// A resumed run that waits again would have no node of the package in it (Settle, beside the step, is still behind
	// the second Wait on n8n's stack): the key would be held only through the first wait, and a retry after it would
	// charge a second time. Reserve refuses such a step before it reserves anything.
	it('two Waits in a row (Wait 1h, then Wait 3h): refused before anything is reserved; no effect, no key', async () => {
		await withQueueMode(async () => {
			const data = workflow('wf-q3', {
				nodes: [wait('Wait 1', 0, 1), wait('Wait 2', 0, 3), effect('Charge', {}, 100, { onError: 'continueErrorOutput' })],
				connections: { 'Wait 1': { main: [link('Wait 2')] }, 'Wait 2': { main: [link('Charge')] } },
				heads: ['Wait 1'],
			});
			const refused = await deliver(data, [{ id: 'q3' }]);
			expect({ answer: refused.answer, status: refused.run.status, reason: refusal(refused) }).toEqual({
				answer: 503,
				status: 'success',
				reason: expect.stringMatching(/"Wait 1" and "Wait 2" both make the execution wait/),
			});
			expect(effects).toEqual([]);
			expect(await keyState('q3')).toBeUndefined();
		});
	});

	it('a Wait inside Loop Over Items: refused before anything is reserved; no effect, no key', async () => {
		await withQueueMode(async () => {
			const data = workflow('wf-q3-loop', {
				nodes: [
					baseNode('Loop', 'splitInBatches', 3, { batchSize: 1, options: {} }, 0),
					wait('Wait', 0),
					effect('Charge', {}, 100, { onError: 'continueErrorOutput' }),
				],
				connections: {
					Loop: { main: [[], link('Wait')] },
					Wait: { main: [link('Charge')] },
					Charge: { main: [link('Loop'), link('Loop')] },
				},
				heads: ['Loop'],
			});
			const refused = await deliver(data, [{ id: 'q3_loop_a' }, { id: 'q3_loop_b' }]);
			expect({ answer: refused.answer, reason: refusal(refused) }).toEqual({
				answer: 503,
				reason: expect.stringMatching(/"Wait" is inside a loop/),
			});
			expect(effects).toEqual([]);
			expect(await statuses(['q3_loop_a', 'q3_loop_b'])).toEqual([undefined, undefined]);
		});
	});

	// Settle placed above the step on the canvas: n8n's v1 order runs the highest node first, so Settle would run before
	// the Wait, leave the key to the end and be gone from the resumed run, which then has no node of the package in it:
	// nothing would settle the key after the charge. Reserve refuses it before it reserves anything.
	it('Settle placed above a step that waits: refused before anything is reserved; no effect, no key', async () => {
		await withQueueMode(async () => {
			const data = workflow('wf-q4', {
				nodes: [wait('Wait', 0), effect('Charge', {}, 100, { onError: 'continueErrorOutput' })],
				connections: { Wait: { main: [link('Charge')] } },
				heads: ['Wait'],
				settleY: -300,
			});
			const refused = await deliver(data, [{ id: 'q4' }]);
			expect({ answer: refused.answer, status: refused.run.status, reason: refusal(refused) }).toEqual({
				answer: 503,
				status: 'success',
				reason: expect.stringMatching(/"Settle" sits above "Wait" on the canvas/),
			});
			expect(refused.run.data.resultData.runData.Settle).toBeUndefined();
			expect(effects).toEqual([]);
			expect(await keyState('q4')).toBeUndefined();
		});
	});

	// Same shape outside queue mode (regular mode keeps the delivery open): refused too, so a charge failing after the
	// resume can never be answered 200 with the key left reserved.
	it('(regular mode) Settle above a step that waits and whose charge would fail: refused before anything is reserved; no effect, no key', async () => {
		const data = workflow('wf-q5', {
			nodes: [wait('Wait', 0), effect('Charge', { failTimes: 1 }, 100, { onError: 'continueErrorOutput' })],
			connections: { Wait: { main: [link('Charge')] } },
			heads: ['Wait'],
			settleY: -300,
		});
		const refused = await runToEnd(data, await deliver(data, [{ id: 'q5' }]));
		expect({ answer: refused.answer, status: refused.run.status, reason: refusal(refused) }).toEqual({
			answer: 503,
			status: 'success',
			reason: expect.stringMatching(/sits above "Wait"/),
		});
		expect(effects).toEqual([]);
		expect(await keyState('q5')).toBeUndefined();
	});
});

/* Pairing lost (a Code node that does not return pairedItem) ----------------------------------- */

describeWithN8n('items whose pairing is lost', () => {
	// The Code nodes continue on error: several events reach them together (Reserve refuses a node that would
	// stop the workflow for all of them, settleShapesBranchesAndLoops.test.ts).
	// A Code node ("Run Once for All Items") aggregating the events into one item without pairedItem: n8n-core's
	// assignPairedItems pairs that item to input item 0 only. The trace reads it as coming from every input item,
	// so the batch write's failure fails every key, not the first alone (the others would be completed unwritten).
	it('Code aggregates three events (no pairedItem), the batch write fails once: every key fails, the retry writes each once', async () => {
		const ids = ['p1_a', 'p1_b', 'p1_c'];
		const data = workflow('wf-p1', {
			nodes: [
				packageNode('Aggregate', 'testCodeNoPairing', { mode: 'aggregate' }, { position: [400, 0], onError: 'continueRegularOutput' }),
				packageNode('Batch', 'testBatchEffect', { failTimes: 1 }, { position: [400, 0], onError: 'continueErrorOutput' }),
			],
			connections: { Aggregate: { main: [link('Batch')] } },
			heads: ['Aggregate'],
		});
		const { lost } = await provider(
			data,
			ids.map((id) => ({ id })),
		);
		expect({ lost, effects: ids.map(effectsFor) }).toEqual({ lost: [], effects: [1, 1, 1] });
	});

	// n8n-core cannot pair a filtered list (assignPairedItems gives up), so the Check's error item for p2_b has no
	// link past the Code node. The Code output item still carries json.idempotency (key, owner token): the trace
	// falls back on it, so p2_a is completed (failing it would make the retry write p2_a again). The skip event's
	// item ended at the Code node and a failure followed: it fails too, and its retry is filtered out again.
	it('Code filters out skip events (no pairedItem), the write fails for one key: the other key is completed, one effect each', async () => {
		const ids = ['p2_a', 'p2_skip', 'p2_b'];
		const data = workflow('wf-p2', {
			nodes: [
				packageNode('Filter', 'testCodeNoPairing', { mode: 'filter' }, { position: [400, 0], onError: 'continueRegularOutput' }),
				packageNode(
					'Check',
					'testEffectOnce',
					{ failOnce: 'p2_b', noEffect: true },
					{ position: [400, 0], onError: 'continueErrorOutput' },
				),
				effect('Write', {}, 0, { onError: 'continueErrorOutput' }),
			],
			connections: { Filter: { main: [link('Check')] }, Check: { main: [link('Write')] } },
			heads: ['Filter'],
		});
		const bodies = [{ id: 'p2_a' }, { id: 'p2_skip', skip: true }, { id: 'p2_b' }];
		const first = await runToEnd(data, await deliver(data, bodies));
		const firstStates = await statuses(ids);
		const { lost } = await provider(data, bodies);
		expect({ answer: first.answer, firstStates, lost, effects: ids.map(effectsFor) }).toEqual({
			answer: 500,
			firstStates: ['completed', 'failed', 'failed'],
			lost: [],
			effects: [1, 0, 1],
		});
	});

	it('Code filters out a skip event (no pairedItem) and nothing fails: every key is completed, one effect each', async () => {
		const ids = ['p3_a', 'p3_skip', 'p3_b'];
		const data = workflow('wf-p3', {
			nodes: [
				packageNode('Filter', 'testCodeNoPairing', { mode: 'filter' }, { position: [400, 0], onError: 'continueRegularOutput' }),
				effect('Write', {}, 0, { onError: 'continueErrorOutput' }),
			],
			connections: { Filter: { main: [link('Write')] } },
			heads: ['Filter'],
		});
		const first = await runToEnd(data, await deliver(data, [{ id: 'p3_a' }, { id: 'p3_skip', skip: true }, { id: 'p3_b' }]));
		expect({ answer: first.answer, states: await statuses(ids), effects: ids.map(effectsFor) }).toEqual({
			answer: 200,
			states: ['completed', 'completed', 'completed'],
			effects: [1, 0, 1],
		});
	});

	// Three events grouped two by two (no pairedItem): the first group's item carries g1_a's key only, so g1_b's
	// items end at the Code node. The first group's write fails: g1_b's write failed with it, so g1_b fails too
	// (completing it would lose the event); the retry writes the group g1_a + g1_b once more.
	it("Code groups events into one item carrying the first key (no pairedItem), the group's write fails once: both keys fail, the retry writes each once", async () => {
		const ids = ['g1_a', 'g1_b', 'g1_c'];
		const data = workflow('wf-g1', {
			nodes: [
				packageNode('Group', 'testGroupNoPairing', {}, { position: [400, 0], onError: 'continueRegularOutput' }),
				packageNode('Batch', 'testBatchEffect', { failTimes: 1 }, { position: [400, 0], onError: 'continueErrorOutput' }),
			],
			connections: { Group: { main: [link('Batch')] } },
			heads: ['Group'],
		});
		const bodies = ids.map((id) => ({ id }));
		const first = await runToEnd(data, await deliver(data, bodies));
		const firstStates = await statuses(ids);
		const firstError = (await keyState('g1_b'))?.last_error;
		const { lost } = await provider(data, bodies);
		expect({ answer: first.answer, firstStates, lost, effects: ids.map(effectsFor), states: await statuses(ids) }).toEqual({
			answer: 500,
			firstStates: ['failed', 'failed', 'completed'],
			lost: [],
			effects: [1, 1, 1],
			states: ['completed', 'completed', 'completed'],
		});
		expect(firstError).toMatch(/merged or dropped by Group without pairing/);
	});

	it('Code groups events into one item carrying the first key (no pairedItem), the writes succeed: every key is completed, one effect each', async () => {
		const ids = ['g2_a', 'g2_b', 'g2_c'];
		const data = workflow('wf-g2', {
			nodes: [
				packageNode('Group', 'testGroupNoPairing', {}, { position: [400, 0], onError: 'continueRegularOutput' }),
				packageNode('Batch', 'testBatchEffect', { failTimes: 0 }, { position: [400, 0], onError: 'continueErrorOutput' }),
			],
			connections: { Group: { main: [link('Batch')] } },
			heads: ['Group'],
		});
		const first = await runToEnd(
			data,
			await deliver(
				data,
				ids.map((id) => ({ id })),
			),
		);
		expect({ answer: first.answer, states: await statuses(ids), effects: ids.map(effectsFor) }).toEqual({
			answer: 200,
			states: ['completed', 'completed', 'completed'],
			effects: [1, 1, 1],
		});
	});
});
