import type { INode, INodeParameters } from 'n8n-workflow';

import { connectionSettings, postgresSchemaFixture } from '../support/database';
import {
	baseNodesInstalled,
	describeWithN8n,
	effects,
	effectsFor,
	loadBaseNodes,
	n8nInstallDirectory,
	TestEffect,
} from '../support/n8nBaseNodes';
import {
	addNodeTypes,
	CREDENTIAL_UP,
	engineWithUpAndDownCredentials,
	inProcessWorkflow,
	PACKAGE,
	packageNode,
	type EngineBase,
} from '../support/n8nEngine';
import {
	baseNode,
	effect,
	inProcessDeliveries,
	keyStatesIn,
	link,
	settleWorkflow,
	skipIf,
	toInput,
	type Shape,
} from '../support/settleWorkflows';

/*
 * The constructs n8n users reach for first, around "Settle After Business Step", run by n8n-core's
 * own engine with n8n-nodes-base's own If, Merge, Wait, Loop Over Items, No Op and Execute Workflow
 * nodes and a real Postgres. Each row delivers events the way a provider does (and retries them
 * after a failure) and asserts the effects per event, each key's final state and what n8n answers.
 * The rule: the effect ran and the execution succeeded → completed, 2xx; the step failed → failed,
 * 5xx, and the retry runs it once more; a waiting execution holds its key until it resumes.
 */

if (!baseNodesInstalled()) {
	console.warn(`settleConstructs: n8n-nodes-base is not installed at ${n8nInstallDirectory()}: run scripts/ensure-n8n.sh first. Skipped.`);
}

const db = postgresSchemaFixture('constructs', { keyTables: ['processed_events'] });

let base: EngineBase;

const workflow = (id: string, shape: Shape) => settleWorkflow(db.schema, id, shape);
const { deliver, resume, runSubWorkflowsInProcess } = inProcessDeliveries('constructs', () => base);
const { keyState } = keyStatesIn(db);

beforeAll(() => {
	if (!baseNodesInstalled()) return;
	addNodeTypes({ ...loadBaseNodes(), [`${PACKAGE}.testEffect`]: new TestEffect() });
	base = engineWithUpAndDownCredentials(connectionSettings());
	runSubWorkflowsInProcess();
});

beforeEach(() => {
	effects.length = 0;
});

describeWithN8n('If / Switch', () => {
	const shape: Shape = {
		nodes: [skipIf('Skip?', 0), effect('Charge', {}, 100, { onError: 'continueErrorOutput' })],
		connections: { 'Skip?': { main: [[], link('Charge')] } },
		heads: ['Skip?'],
	};

	it('a branch that ends without the effect: completed, nothing done, 200; the other branch: one effect, completed, 200', async () => {
		const data = workflow('wf-if', shape);
		const skipped = await deliver(data, [{ id: 'if_skip', skip: true }]);
		const charged = await deliver(data, [{ id: 'if_charge' }]);
		expect([skipped.answer, charged.answer]).toEqual([200, 200]);
		expect([effectsFor('if_skip'), effectsFor('if_charge')]).toEqual([0, 1]);
		expect((await keyState('if_skip'))?.status).toBe('completed');
		expect((await keyState('if_charge'))?.status).toBe('completed');
	});
});

describeWithN8n('Merge after If (only one branch has data: n8n runs the Merge after Settle)', () => {
	const shape: Shape = {
		nodes: [
			skipIf('Route', 0),
			baseNode('A', 'noOp', 1, {}, 0),
			baseNode('B', 'noOp', 1, {}, 100),
			baseNode('Merge', 'merge', 3, {}, 0),
			effect('Write', { failTimes: 1 }, 0, { onError: 'continueErrorOutput' }),
		],
		connections: {
			Route: { main: [link('A'), link('B')] },
			A: { main: [toInput('Merge', 0)] },
			B: { main: [toInput('Merge', 1)] },
			Merge: { main: [link('Write')] },
		},
		heads: ['Route'],
	};

	// The loss this row guards against, where Settle judged by position: Settle ran before the Merge and answered Completed/200; the write then failed.
	it('the write after the Merge fails: failed, 500; the retry writes once and completes', async () => {
		const data = workflow('wf-merge', shape);
		const failed = await deliver(data, [{ id: 'merge_1' }]);
		expect(effectsFor('merge_1')).toBe(0);
		expect(failed.answer).toBe(500);
		expect(await keyState('merge_1')).toMatchObject({ status: 'failed', last_error: expect.stringMatching(/Write: .*effect refused/) });

		const retried = await deliver(data, [{ id: 'merge_1' }]);
		expect(retried.answer).toBe(200);
		expect(effectsFor('merge_1')).toBe(1);
		expect((await keyState('merge_1'))?.status).toBe('completed');
	});
});

describeWithN8n('several events in one delivery, one finished when Settle runs, one still on its way to a Merge', () => {
	// Route: "skip" events end at once; the others reach a Merge whose other input (from B) has no data, so n8n runs it after Settle.
	const shape: Shape = {
		nodes: [
			skipIf('Route', 0),
			skipIf('Flagged?', 0, 'flag'),
			baseNode('B', 'noOp', 1, {}, 100),
			baseNode('Merge', 'merge', 3, {}, 0),
			effect('Write', { failTimes: 1 }, 0, { onError: 'continueErrorOutput' }),
		],
		connections: {
			Route: { main: [[], link('Flagged?')] },
			'Flagged?': { main: [link('B'), toInput('Merge', 0)] },
			B: { main: [toInput('Merge', 1)] },
			Merge: { main: [link('Write')] },
		},
		heads: ['Route'],
	};

	// The loss this row guards against: Settle completed the finished key and its Completed output answered 200; the write then failed, and the provider never retried the delivery.
	it('the write after the Merge fails: the delivery is answered 500, the finished key completed, the other failed; the retry writes it once', async () => {
		const data = workflow('wf-mixed', shape);
		const bodies = [{ id: 'mixed_done', skip: true }, { id: 'mixed_merge' }];
		const failed = await deliver(data, bodies);
		expect(failed.answer).toBe(500);
		expect(await keyState('mixed_done')).toMatchObject({ status: 'completed' });
		expect(await keyState('mixed_merge')).toMatchObject({ status: 'failed', last_error: expect.stringMatching(/Write: .*effect refused/) });

		// The retry carries a copy of the finished event beside the one still running: 409 (retry later) until both are settled.
		const retried = await deliver(data, bodies);
		expect(retried.answer).toBe(409);
		expect([effectsFor('mixed_done'), effectsFor('mixed_merge')]).toEqual([0, 1]);
		expect((await keyState('mixed_merge'))?.status).toBe('completed');
		expect((await deliver(data, bodies)).answer).toBe(200);
	});
});

describeWithN8n('Wait (the execution is resumed as a new run from its saved data)', () => {
	const wait = (name: string, y: number, extra: Partial<INode> = {}) =>
		baseNode(name, 'wait', 1.1, { resume: 'timeInterval', amount: 1, unit: 'hours' }, y, extra);

	// The loss this row guards against: in queue mode n8n answered 200 when the execution started waiting, so a failure after the resume was never retried.
	it('in queue mode, the execution starting to wait answers 409 (In Progress), a copy meanwhile too; the resumed run fails, the retry runs it once', async () => {
		const data = workflow('wf-wait-queue', {
			nodes: [wait('Wait', 0), effect('Charge', { failTimes: 1 }, 100, { onError: 'continueErrorOutput' })],
			connections: { Wait: { main: [link('Charge')] } },
			heads: ['Wait'],
		});
		const mode = process.env.EXECUTIONS_MODE;
		process.env.EXECUTIONS_MODE = 'queue';
		try {
			const waiting = await deliver(data, [{ id: 'wait_queue' }]);
			expect(waiting.answer).toBe(409);
			expect((await keyState('wait_queue'))?.status).toBe('processing');
			expect((await deliver(data, [{ id: 'wait_queue' }])).answer).toBe(409);
			// The resumed run has no delivery left to answer: its failure shows in the key, and the retry.
			await resume(data, waiting);
			expect((await keyState('wait_queue'))?.status).toBe('failed');
			const retried = await deliver(data, [{ id: 'wait_queue' }]);
			expect(retried.answer).toBe(409);
			await resume(data, retried);
			expect(effectsFor('wait_queue')).toBe(1);
			expect((await keyState('wait_queue'))?.status).toBe('completed');
			expect((await deliver(data, [{ id: 'wait_queue' }])).answer).toBe(200);
		} finally {
			if (mode === undefined) delete process.env.EXECUTIONS_MODE;
			else process.env.EXECUTIONS_MODE = mode;
		}
	});

	// What this row guards against, where Settle judged by position: after the resume Settle threw (its window of execution indexes restarts at 0), after the charge.
	it('a Wait before the effect: held while waiting; after the resume one effect, completed, 200', async () => {
		const data = workflow('wf-wait-first', {
			nodes: [wait('Wait', 0), effect('Charge', {}, 100, { onError: 'continueErrorOutput' })],
			connections: { Wait: { main: [link('Charge')] } },
			heads: ['Wait'],
		});
		const waiting = await deliver(data, [{ id: 'wait_first' }]);
		expect(waiting.answer).toBeUndefined();
		expect((await keyState('wait_first'))?.status).toBe('processing');
		const resumed = await resume(data, waiting);
		expect(resumed.run.data.resultData.error).toBeUndefined();
		expect(resumed.answer).toBe(200);
		expect(effectsFor('wait_first')).toBe(1);
		expect((await keyState('wait_first'))?.status).toBe('completed');
	});

	it('a Wait longer than the lease: the key is held until the wait ends and a lease more; a copy meanwhile is In Progress and runs nothing', async () => {
		const data = workflow('wf-wait-long', {
			nodes: [effect('Charge', {}, 0, { onError: 'continueErrorOutput' }), wait('Wait', 0)],
			connections: { Charge: { main: [link('Wait')] } },
			heads: ['Charge'],
		});
		const waiting = await deliver(data, [{ id: 'wait_long' }]);
		expect(effectsFor('wait_long')).toBe(1);
		// The Wait is 1 hour and Reserve's lease 300 seconds: held for both, from now.
		const { rows } = await db.pool.query(
			`select extract(epoch from locked_until - now()) as left_seconds from ${db.schema}.processed_events where key = 'evt:wait_long'`,
		);
		expect(Number(rows[0].left_seconds)).toBeGreaterThan(3600 + 300 - 60);
		const copy = await deliver(data, [{ id: 'wait_long' }]);
		expect(copy.answer).toBe(409);
		expect(effectsFor('wait_long')).toBe(1);
		const resumed = await resume(data, waiting);
		expect(resumed.answer).toBe(200);
		expect((await keyState('wait_long'))?.status).toBe('completed');
		expect(effectsFor('wait_long')).toBe(1);
	});

	// The loss this row guards against, where Settle judged by position: Settle did not see the failure after the Wait and answered Completed.
	it('the step fails after the Wait: failed, 500 once resumed', async () => {
		const data = workflow('wf-wait-middle', {
			nodes: [
				effect('Charge', {}, 0, { onError: 'continueErrorOutput' }),
				wait('Wait', 0),
				effect('Write', { failFor: 'wait_middle' }, 0, { onError: 'continueErrorOutput' }),
			],
			connections: { Charge: { main: [link('Wait')] }, Wait: { main: [link('Write')] } },
			heads: ['Charge'],
		});
		const waiting = await deliver(data, [{ id: 'wait_middle' }]);
		const resumed = await resume(data, waiting);
		expect(resumed.answer).toBe(500);
		expect(await keyState('wait_middle')).toMatchObject({ status: 'failed', last_error: expect.stringMatching(/Write: effect refused/) });
	});

	it('a Wait, then a Merge that n8n runs after Settle, then a write that fails: Settle leaves the key to the end of the resumed run, which fails it and answers 500', async () => {
		const data = workflow('wf-wait-merge', {
			nodes: [
				wait('Wait', 0),
				skipIf('Route', 0),
				baseNode('A', 'noOp', 1, {}, 0),
				baseNode('B', 'noOp', 1, {}, 100),
				baseNode('Merge', 'merge', 3, {}, 0),
				effect('Write', { failTimes: 1 }, 0, { onError: 'continueErrorOutput' }),
			],
			connections: {
				Wait: { main: [link('Route')] },
				Route: { main: [link('A'), link('B')] },
				A: { main: [toInput('Merge', 0)] },
				B: { main: [toInput('Merge', 1)] },
				Merge: { main: [link('Write')] },
			},
			heads: ['Wait'],
		});
		const resumed = await resume(data, await deliver(data, [{ id: 'wait_merge' }]));
		expect(resumed.answer).toBe(500);
		expect(await keyState('wait_merge')).toMatchObject({ status: 'failed', last_error: expect.stringMatching(/Write: .*effect refused/) });
		const retried = await resume(data, await deliver(data, [{ id: 'wait_merge' }]));
		expect(retried.answer).toBe(200);
		expect(effectsFor('wait_merge')).toBe(1);
		expect((await keyState('wait_merge'))?.status).toBe('completed');
	});

	it('a Wait with Settle chained after the step: refused before anything is reserved (a failed item would never reach Settle in the resumed run)', async () => {
		const data = workflow('wf-wait-chained', {
			nodes: [wait('Wait', 0), effect('Charge', {}, 0, { onError: 'continueErrorOutput' })],
			connections: { Wait: { main: [link('Charge')] } },
			heads: ['Wait'],
			settleAfter: 'Charge',
		});
		const refused = await deliver(data, [{ id: 'wait_chained' }]);
		expect(refused.answer).toBe(503);
		expect(effects).toEqual([]);
		expect(await keyState('wait_chained')).toBeUndefined();
	});

	// The loss this row guards against, where Settle judged by position: n8n resumes such a Wait without its items (its error-output split empties
	// the input array it saves), nothing was written, and the key was completed.
	it('a Wait set to Continue (using error output): refused before anything is reserved or done', async () => {
		const data = workflow('wf-wait-error-output', {
			nodes: [wait('Wait', 0, { onError: 'continueErrorOutput' }), effect('Write', {}, 0, { onError: 'continueErrorOutput' })],
			connections: { Wait: { main: [link('Write')] } },
			heads: ['Wait'],
		});
		const refused = await deliver(data, [{ id: 'wait_error_output' }]);
		expect(refused.answer).toBe(503);
		expect(refused.run.status).not.toBe('waiting');
		expect(await keyState('wait_error_output')).toBeUndefined();
	});

	it('a node after the Wait that stops the workflow on error: refused before anything is reserved or done (the resumed run could not settle)', async () => {
		const data = workflow('wf-wait-stop', {
			nodes: [effect('Charge', {}, 0, { onError: 'continueErrorOutput' }), wait('Wait', 0), effect('Write', {}, 0)],
			connections: { Charge: { main: [link('Wait')] }, Wait: { main: [link('Write')] } },
			heads: ['Charge'],
		});
		const refused = await deliver(data, [{ id: 'wait_stop' }]);
		expect(refused.answer).toBe(503);
		expect(effects).toEqual([]);
		expect(await keyState('wait_stop')).toBeUndefined();
	});
});

describeWithN8n('Loop Over Items (batch size 1) over three keys', () => {
	// The duplicates this row guards against, where Settle judged by position: the loop's paired items were not traced, all three keys failed, the retry repeated two effects.
	it('the write fails for one: only its key failed; the retry of all three writes it once, the others are duplicates', async () => {
		const data = workflow('wf-loop', {
			nodes: [
				baseNode('Loop', 'splitInBatches', 3, { batchSize: 1, options: {} }, 0),
				effect('Write', { failTimes: 0, failFor: 'loop_b' }, 0, { onError: 'continueErrorOutput' }),
			],
			connections: { Loop: { main: [[], link('Write')] }, Write: { main: [link('Loop'), link('Loop')] } },
			heads: ['Loop'],
		});
		const ids = ['loop_a', 'loop_b', 'loop_c'];
		const delivered = await deliver(
			data,
			ids.map((id) => ({ id })),
		);
		expect(delivered.answer).toBe(500);
		expect(ids.map(effectsFor)).toEqual([1, 0, 1]);
		expect(await Promise.all(ids.map(async (id) => (await keyState(id))?.status))).toEqual(['completed', 'failed', 'completed']);

		const fixed = workflow('wf-loop', {
			nodes: [
				baseNode('Loop', 'splitInBatches', 3, { batchSize: 1, options: {} }, 0),
				effect('Write', {}, 0, { onError: 'continueErrorOutput' }),
			],
			connections: { Loop: { main: [[], link('Write')] }, Write: { main: [link('Loop'), link('Loop')] } },
			heads: ['Loop'],
		});
		await deliver(
			fixed,
			ids.map((id) => ({ id })),
		);
		expect(ids.map(effectsFor)).toEqual([1, 1, 1]);
		expect((await keyState('loop_b'))?.status).toBe('completed');
	});
});

describeWithN8n('Loop Over Items (batch size 1), the write at the default On Error', () => {
	it('the write fails for the second of three keys and stops the execution: the first completed, the second failed, the third (still in the loop) failed, never completed; the retry writes each once', async () => {
		const loop = (failFor: string) =>
			workflow('wf-loop-stop', {
				nodes: [baseNode('Loop', 'splitInBatches', 3, { batchSize: 1, options: {} }, 0), effect('Write', { failFor }, 0)],
				connections: { Loop: { main: [[], link('Write')] }, Write: { main: [link('Loop')] } },
				heads: ['Loop'],
			});
		const ids = ['stop_loop_a', 'stop_loop_b', 'stop_loop_c'];
		const failed = await deliver(
			loop('stop_loop_b'),
			ids.map((id) => ({ id })),
		);
		expect(failed.answer).toBe(500);
		expect(ids.map(effectsFor)).toEqual([1, 0, 0]);
		expect(await Promise.all(ids.map(async (id) => (await keyState(id))?.status))).toEqual(['completed', 'failed', 'failed']);
		expect((await keyState('stop_loop_c'))?.last_error).toMatch(/before this key's step finished/);

		await deliver(
			loop(''),
			ids.map((id) => ({ id })),
		);
		expect(ids.map(effectsFor)).toEqual([1, 1, 1]);
	});
});

describeWithN8n('Execute Workflow', () => {
	const subWorkflow = JSON.stringify({
		nodes: [packageNode('Webhook', 'testWebhook'), effect('Sub Charge', { failTimes: 1 }, 0)],
		connections: { Webhook: { main: [link('Sub Charge')] } },
	});
	const execute = (wait: boolean) =>
		baseNode(
			'Run Sub-workflow',
			'executeWorkflow',
			1.3,
			{ source: 'parameter', workflowJson: subWorkflow, mode: 'each', options: { waitForSubWorkflow: wait } },
			0,
			{ onError: 'continueRegularOutput' },
		);

	it('waiting for the sub-workflow: its failure fails the key (500); the retry runs it once and completes', async () => {
		const data = workflow('wf-sub-wait', { nodes: [execute(true)], connections: {}, heads: ['Run Sub-workflow'] });
		const failed = await deliver(data, [{ id: 'sub_wait' }]);
		expect(failed.answer).toBe(500);
		expect((await keyState('sub_wait'))?.status).toBe('failed');
		const retried = await deliver(data, [{ id: 'sub_wait' }]);
		expect(retried.answer).toBe(200);
		expect(effectsFor('sub_wait')).toBe(1);
		expect((await keyState('sub_wait'))?.status).toBe('completed');
	});

	// The loss this row guards against, where Settle judged by position: the sub-workflow's failure never reached the parent, and Settle completed the key.
	it('not waiting for it: refused before anything is reserved (its failure could never reach the key)', async () => {
		const data = workflow('wf-sub-nowait', { nodes: [execute(false)], connections: {}, heads: ['Run Sub-workflow'] });
		const refused = await deliver(data, [{ id: 'sub_nowait' }]);
		expect(refused.answer).toBe(503);
		expect(effectsFor('sub_nowait')).toBe(0);
		expect(await keyState('sub_nowait')).toBeUndefined();
	});
});

describeWithN8n('node settings n8n users keep or change', () => {
	// A step that stops the workflow on error must work, not be refused (every delivery 503).
	it('Retry On Fail (fails twice, then succeeds), at the default On Error: one effect, completed, 200', async () => {
		const data = workflow('wf-retry', {
			nodes: [effect('Charge', { failTimes: 2 }, 0, { retryOnFail: true, maxTries: 3, waitBetweenTries: 10 })],
			connections: {},
			heads: ['Charge'],
		});
		const delivered = await deliver(data, [{ id: 'retry_ok' }]);
		expect(delivered.answer).toBe(200);
		expect(effectsFor('retry_ok')).toBe(1);
		expect((await keyState('retry_ok'))?.status).toBe('completed');
	});

	// A step at n8n's defaults must work, not be refused (every delivery 503 until the user finds the setting).
	it('a step at the default On Error (Stop Workflow) that fails: failed, n8n answers 500; the retry runs it once and completes', async () => {
		const data = workflow('wf-stop', { nodes: [effect('HTTP Request', { failTimes: 1 }, 0)], connections: {}, heads: ['HTTP Request'] });
		const failed = await deliver(data, [{ id: 'stop_1' }]);
		expect(failed.answer).toBe(500);
		expect(await keyState('stop_1')).toMatchObject({ status: 'failed', last_error: expect.stringMatching(/effect refused/) });
		const retried = await deliver(data, [{ id: 'stop_1' }]);
		expect(retried.answer).toBe(200);
		expect(effectsFor('stop_1')).toBe(1);
		expect((await keyState('stop_1'))?.status).toBe('completed');
	});

	// The loss this row guards against: the Completed output's 200 answered the delivery first, and the provider never retried the failed event.
	it('a node failing for one of several items (Continue (using error output)): only that key failed, the delivery answered 500', async () => {
		const data = workflow('wf-items', {
			nodes: [effect('Code', { failFor: 'items_b' }, 0, { onError: 'continueErrorOutput' })],
			connections: {},
			heads: ['Code'],
		});
		const delivered = await deliver(data, [{ id: 'items_a' }, { id: 'items_b' }, { id: 'items_c' }]);
		expect(delivered.answer).toBe(500);
		expect(['items_a', 'items_b', 'items_c'].map(effectsFor)).toEqual([1, 0, 1]);
		expect((await keyState('items_a'))?.status).toBe('completed');
		expect((await keyState('items_b'))?.status).toBe('failed');
		expect((await keyState('items_c'))?.status).toBe('completed');
	});

	it.each<[string, INodeParameters, Partial<INode>]>([
		[
			'Always Output Data on a step that returns nothing',
			{ outputNothing: true },
			{ alwaysOutputData: true, onError: 'continueErrorOutput' },
		],
		['a step that returns zero items', { outputNothing: true }, { onError: 'continueErrorOutput' }],
	])('%s: completed, 200', async (label, parameters, extra) => {
		const id = `empty_${label.length}`;
		const data = workflow(`wf-${id}`, { nodes: [effect('Charge', parameters, 0, extra)], connections: {}, heads: ['Charge'] });
		const delivered = await deliver(data, [{ id }]);
		expect(delivered.answer).toBe(200);
		expect(effectsFor(id)).toBe(1);
		expect((await keyState(id))?.status).toBe('completed');
	});

	it('a disabled node in the step: passed through, one effect, completed, 200', async () => {
		const data = workflow('wf-disabled', {
			nodes: [baseNode('Off', 'noOp', 1, {}, 0, { disabled: true }), effect('Charge', {}, 0, { onError: 'continueErrorOutput' })],
			connections: { Off: { main: [link('Charge')] } },
			heads: ['Off'],
		});
		const delivered = await deliver(data, [{ id: 'disabled_1' }]);
		expect(delivered.answer).toBe(200);
		expect(effectsFor('disabled_1')).toBe(1);
		expect((await keyState('disabled_1'))?.status).toBe('completed');
	});
});

describeWithN8n('Settle chained after the step (the wiring people draw first)', () => {
	// What this row guards against, where Settle judged by position: Reserve accepted it and Settle refused it after the effect; the key stayed reserved.
	it('the step succeeds: one effect, completed, 200', async () => {
		const data = workflow('wf-chained', { nodes: [effect('Charge', {}, 0)], connections: {}, heads: ['Charge'], settleAfter: 'Charge' });
		const delivered = await deliver(data, [{ id: 'chained_ok' }]);
		expect(delivered.answer).toBe(200);
		expect(effectsFor('chained_ok')).toBe(1);
		expect((await keyState('chained_ok'))?.status).toBe('completed');
	});

	it('the step fails (Stop Workflow): failed, 500; the retry runs it once and completes', async () => {
		const data = workflow('wf-chained-fail', {
			nodes: [effect('Charge', { failTimes: 1 }, 0)],
			connections: {},
			heads: ['Charge'],
			settleAfter: 'Charge',
		});
		const failed = await deliver(data, [{ id: 'chained_fail' }]);
		expect(failed.answer).toBe(500);
		expect((await keyState('chained_fail'))?.status).toBe('failed');
		await deliver(data, [{ id: 'chained_fail' }]);
		expect(effectsFor('chained_fail')).toBe(1);
		expect((await keyState('chained_fail'))?.status).toBe('completed');
	});
});

describeWithN8n('a replay (Claim for Replay feeds the step)', () => {
	it('the replayed step stops the workflow on error: the claimed key is marked failed when the execution ends, 500; a later replay completes it', async () => {
		const live = workflow('wf-replay-live', { nodes: [effect('Charge', { failTimes: 2 }, 0)], connections: {}, heads: ['Charge'] });
		expect((await deliver(live, [{ id: 'replay_1' }])).answer).toBe(500);
		expect((await keyState('replay_1'))?.status).toBe('failed');

		const table = { schemaName: db.schema, tableName: 'processed_events' };
		const credentials = { idempotencyPostgresApi: { id: CREDENTIAL_UP, name: 'Idempotency Postgres' } };
		const replay = inProcessWorkflow(
			'wf-replay',
			[
				packageNode('Webhook', 'testWebhook'),
				packageNode(
					'Claim',
					'idempotencyKey',
					{ operation: 'claimForReplay', replayKey: '={{ $json.body.key }}', leaseSeconds: 300, retentionDays: 30, options: table },
					{ credentials },
				),
				effect('Charge', { failTimes: 2 }, 0),
				packageNode('Settle', 'idempotencyKey', { operation: 'settle', options: table }, { credentials, position: [400, 900] }),
			],
			{ Webhook: { main: [link('Claim')] }, Claim: { main: [link('Charge', 'Settle')] } },
		);
		// The claimed item's body is the payload Reserve stored ("Store Payload").
		const failedAgain = await deliver(replay, [{ key: 'evt:replay_1' }]);
		expect(failedAgain.answer).toBe(500);
		expect(await keyState('replay_1')).toMatchObject({ status: 'failed', last_error: expect.stringMatching(/effect refused/) });
		const replayed = await deliver(replay, [{ key: 'evt:replay_1' }]);
		expect(replayed.answer).toBe(200);
		expect(effectsFor('replay_1')).toBe(1);
		expect((await keyState('replay_1'))?.status).toBe('completed');
	});
});

describeWithN8n('several keys from one delivery', () => {
	// What this row guards against, where Settle judged by position: a node failing on the Duplicate branch left the New keys reserved (or, with the error workflow, failed them all).
	it('a node on the Duplicate branch fails: each New key by its own items; every retry ends with one effect per event', async () => {
		const data = workflow('wf-several', {
			nodes: [effect('Charge', {}, 0, { onError: 'continueErrorOutput' }), effect('Log Duplicate', { failFor: 'several_a' }, 0)],
			connections: {},
			heads: ['Charge'],
			duplicateHeads: ['Log Duplicate'],
		});
		await deliver(data, [{ id: 'several_a' }]);
		await deliver(data, [{ id: 'several_a' }, { id: 'several_b' }, { id: 'several_c' }]);
		for (const id of ['several_b', 'several_c']) {
			const state = (await keyState(id))?.status;
			// Completed exactly when its effect happened; failed (to be retried) when it did not.
			expect(state).toBe(effectsFor(id) === 1 ? 'completed' : 'failed');
		}
		await deliver(data, [{ id: 'several_b' }, { id: 'several_c' }]);
		expect(['several_a', 'several_b', 'several_c'].map(effectsFor)).toEqual([1, 1, 1]);
	});
});
