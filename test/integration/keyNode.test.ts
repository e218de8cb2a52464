import type { INodeExecutionData, IRunExecutionData } from 'n8n-workflow';

import { connectionSettings, postgresSchemaFixture } from '../support/database';
import { webhookItem } from '../support/fakeExecuteFunctions';
import { idempotencyOf, runKeyNode, runReserve } from '../support/nodes';
import { TcpProxy } from '../support/tcpProxy';

const db = postgresSchemaFixture('keynode');

const tableOptions = () => ({ schemaName: db.schema, tableName: 'processed_events' });
const leaseReserve = (items: INodeExecutionData[], executionId = 'exec-1') =>
	runReserve({ mode: 'lease', leaseSeconds: 60, options: { ...tableOptions(), createTable: true } }, { items, executionId });

describe('Idempotency Key: Complete', () => {
	it('completes from the item and stores a response that a later duplicate replays', async () => {
		const [fresh] = await leaseReserve([webhookItem({ id: 'evt_complete' })]);
		const [done, stale] = await runKeyNode(
			{ operation: 'complete', source: 'item', responseJson: '{"received": true, "order": 17}', options: tableOptions() },
			{ items: fresh },
		);
		expect(stale).toHaveLength(0);
		expect(idempotencyOf(done[0])).toMatchObject({ key: 'evt:evt_complete', operation: 'complete', applied: true, staleReason: null });
		expect(done[0].pairedItem).toEqual({ item: 0 });

		const [newAgain, duplicate, inProgress] = await leaseReserve([webhookItem({ id: 'evt_complete' })]);
		expect([newAgain.length, inProgress.length]).toEqual([0, 0]);
		expect(idempotencyOf(duplicate[0])).toMatchObject({ outcome: 'duplicate', response: { received: true, order: 17 } });
	});

	it('completes with Key From: Custom, as after a business step that replaced the item', async () => {
		const [fresh] = await leaseReserve([webhookItem({ id: 'evt_custom' })]);
		const reserved = idempotencyOf(fresh[0]);
		const [done] = await runKeyNode(
			{
				operation: 'complete',
				source: 'custom',
				key: reserved.key,
				ownerToken: reserved.ownerToken,
				responseJson: '',
				options: tableOptions(),
			},
			{ items: [{ json: { id: 1, event_key: 'evt:evt_custom' } }] },
		);
		expect(idempotencyOf(done[0]).applied).toBe(true);
		expect(await db.row('evt:evt_custom')).toMatchObject({ status: 'completed', response: null });
	});

	it('rejects invalid response JSON with the item index', async () => {
		const [fresh] = await leaseReserve([webhookItem({ id: 'evt_badjson' })]);
		await expect(
			runKeyNode({ operation: 'complete', source: 'item', responseJson: '{not json', options: tableOptions() }, { items: fresh }),
		).rejects.toThrow(/not valid JSON/);
		expect(await db.row('evt:evt_badjson')).toMatchObject({ status: 'processing' });
	});
});

describe('Idempotency Key: Release on error', () => {
	it("releases from a business step's error output item, so the redelivery is processed", async () => {
		const [fresh] = await leaseReserve([webhookItem({ id: 'evt_fails' })]);
		// What n8n puts on an error output: the input item's json merged with the error.
		const errorItem = { json: { ...fresh[0].json, error: 'insert failed' }, pairedItem: { item: 0 } };
		const [done] = await runKeyNode({ operation: 'release', source: 'item', options: tableOptions() }, { items: [errorItem] });
		expect(idempotencyOf(done[0])).toMatchObject({ operation: 'release', applied: true });
		expect(await db.row('evt:evt_fails')).toBeUndefined();
		const [redelivered] = await leaseReserve([webhookItem({ id: 'evt_fails' })]);
		expect(redelivered).toHaveLength(1);
	});

	it('routes a stale owner (lease taken over) to Stale, leaving the new owner alone', async () => {
		const [first] = await leaseReserve([webhookItem({ id: 'evt_stale' })]);
		await db.pool.query(`update ${db.schema}.processed_events set locked_until = now() - interval '1 second' where key = $1`, [
			'evt:evt_stale',
		]);
		const [second] = await leaseReserve([webhookItem({ id: 'evt_stale' })], 'exec-2');
		expect(idempotencyOf(second[0])).toMatchObject({ isNew: true, attempts: 2 });

		const [done, stale] = await runKeyNode({ operation: 'release', source: 'item', options: tableOptions() }, { items: first });
		expect(done).toHaveLength(0);
		expect(idempotencyOf(stale[0])).toMatchObject({ applied: false, staleReason: 'not_owner' });
		expect(await db.row('evt:evt_stale')).toMatchObject({ status: 'processing', execution_id: 'exec-2' });
	});

	it('refuses to settle from a duplicate item (no owner token), with a clear message', async () => {
		await leaseReserve([webhookItem({ id: 'evt_dup_settle' })]);
		const [, , inProgress] = await leaseReserve([webhookItem({ id: 'evt_dup_settle' })]);
		await expect(runKeyNode({ operation: 'release', source: 'item', options: tableOptions() }, { items: inProgress })).rejects.toThrow(
			/only the run that reserved a key can settle it/,
		);
	});

	it('says what to do when the item has no idempotency object', async () => {
		await expect(
			runKeyNode({ operation: 'release', source: 'item', options: tableOptions() }, { items: [{ json: { id: 5 } }] }),
		).rejects.toThrow(/no idempotency object/);
	});

	it('releases every live reservation of a failed execution (Error Trigger data)', async () => {
		await leaseReserve([webhookItem({ id: 'evt_exec_a' }), webhookItem({ id: 'evt_exec_b' })], 'exec-crashed');
		const errorTriggerItem = { json: { execution: { id: 'exec-crashed', error: { message: 'boom' } }, workflow: { id: 'wf-1' } } };
		const [done] = await runKeyNode(
			{ operation: 'release', source: 'execution', executionId: 'exec-crashed', workflowId: 'wf-1', options: tableOptions() },
			{ items: [errorTriggerItem] },
		);
		expect((idempotencyOf(done[0]).releasedKeys as string[]).sort()).toEqual(['evt:evt_exec_a', 'evt:evt_exec_b']);
		expect(await db.row('evt:evt_exec_a')).toBeUndefined();
	});
});

describe('Idempotency Key: Mark Failed', () => {
	it('a key this run completed goes to Stale (staleReason "completed") and stays completed: the redelivery is a Duplicate', async () => {
		const [fresh] = await leaseReserve([webhookItem({ id: 'evt_done_then_failed' }), webhookItem({ id: 'evt_done_then_released' })]);
		const [completed] = await runKeyNode(
			{ operation: 'complete', source: 'item', responseJson: '{"ok":true}', options: tableOptions() },
			{ items: fresh },
		);
		expect(completed.map((item) => idempotencyOf(item).applied)).toEqual([true, true]);

		// e.g. a node after Mark Complete fails, and its error output leads to Mark Failed.
		const [failedDone, failedStale] = await runKeyNode(
			{ operation: 'fail', source: 'item', errorMessage: 'a later node failed', options: tableOptions() },
			{ items: [completed[0]] },
		);
		const [releasedDone, releasedStale] = await runKeyNode(
			{ operation: 'release', source: 'item', options: tableOptions() },
			{ items: [completed[1]] },
		);
		expect([...failedDone, ...releasedDone]).toHaveLength(0);
		expect(idempotencyOf(failedStale[0])).toMatchObject({
			key: 'evt:evt_done_then_failed',
			operation: 'fail',
			applied: false,
			staleReason: 'completed',
		});
		expect(idempotencyOf(releasedStale[0])).toMatchObject({
			key: 'evt:evt_done_then_released',
			operation: 'release',
			applied: false,
			staleReason: 'completed',
		});
		expect(await db.row('evt:evt_done_then_failed')).toMatchObject({ status: 'completed', last_error: null });
		expect(await db.row('evt:evt_done_then_released')).toMatchObject({ status: 'completed' });
		const [, duplicates] = await leaseReserve([webhookItem({ id: 'evt_done_then_failed' }), webhookItem({ id: 'evt_done_then_released' })]);
		expect(duplicates.map((item) => idempotencyOf(item).outcome)).toEqual(['duplicate', 'duplicate']);
	});

	it('keeps the row with the error, and the next delivery reserves again', async () => {
		const [fresh] = await leaseReserve([webhookItem({ id: 'evt_markfail' })]);
		const [done] = await runKeyNode(
			{ operation: 'fail', source: 'item', errorMessage: 'CRM timeout', options: tableOptions() },
			{ items: fresh },
		);
		expect(idempotencyOf(done[0]).applied).toBe(true);
		expect(await db.row('evt:evt_markfail')).toMatchObject({ status: 'failed', last_error: 'CRM timeout' });
		const [again] = await leaseReserve([webhookItem({ id: 'evt_markfail' })]);
		expect(idempotencyOf(again[0])).toMatchObject({ isNew: true, attempts: 2 });
	});

	it('marks failed every live reservation of a failed execution (Error Trigger data), keeping rows and payloads; completed keys and other executions stay', async () => {
		const evidence = { ...tableOptions(), createTable: true, storePayload: true };
		const reserveIn = (executionId: string, ids: string[]) =>
			runReserve(
				{ mode: 'lease', leaseSeconds: 60, options: evidence },
				{ items: ids.map((id) => webhookItem({ id, amount: 7 })), executionId },
			);
		const [fresh] = await reserveIn('exec-failed', ['evt_fexec_a', 'evt_fexec_b', 'evt_fexec_done']);
		await reserveIn('exec-other', ['evt_fexec_other']);
		await runKeyNode({ operation: 'complete', source: 'item', options: tableOptions() }, { items: [fresh[2]] });
		const errorTriggerItem = {
			json: { execution: { id: 'exec-failed', error: { message: 'boom\u0000' }, lastNodeExecuted: 'Crash' }, workflow: { id: 'wf-1' } },
		};
		// n8n keeps the failed execution (its default): Mark Failed reads the request it started with there.
		const keptExecution = {
			resultData: { runData: { Webhook: [{ source: [], data: { main: [[webhookItem({ id: 'evt_fexec_a' })]] } }] } },
		} as unknown as IRunExecutionData;

		const [done, stale] = await runKeyNode(
			{
				operation: 'fail',
				source: 'execution',
				executionId: 'exec-failed',
				workflowId: 'wf-1',
				errorMessage: 'Crash: boom\u0000',
				options: tableOptions(),
			},
			{ items: [errorTriggerItem], executionRecords: { 'exec-failed': keptExecution } },
		);

		expect(stale).toHaveLength(0);
		expect(done[0].pairedItem).toEqual({ item: 0 });
		expect(done[0].json.execution).toEqual(errorTriggerItem.json.execution);
		const settled = idempotencyOf(done[0]);
		expect({ ...settled, failedKeys: (settled.failedKeys as string[]).sort() }).toEqual({
			operation: 'fail',
			executionId: 'exec-failed',
			workflowId: 'wf-1',
			failedKeys: ['evt:evt_fexec_a', 'evt:evt_fexec_b'],
			warnings: [expect.stringMatching(/error message had NUL/)],
		});
		for (const id of ['evt_fexec_a', 'evt_fexec_b']) {
			expect(await db.row(`evt:${id}`)).toMatchObject({
				status: 'failed',
				locked_until: null,
				last_error: 'Crash: boom\uFFFD',
				payload: { id, amount: 7 },
			});
		}
		expect(await db.row('evt:evt_fexec_done')).toMatchObject({ status: 'completed' });
		expect(await db.row('evt:evt_fexec_other')).toMatchObject({ status: 'processing' });
		// The next delivery takes the failed key over as New, as after a release.
		const [again] = await reserveIn('exec-retry', ['evt_fexec_a']);
		expect(idempotencyOf(again[0])).toMatchObject({ isNew: true, attempts: 2 });
	});

	it('Failed Execution without an execution id: a clear error, nothing changed', async () => {
		await expect(
			runKeyNode(
				{ operation: 'fail', source: 'execution', executionId: '', workflowId: 'wf-1', errorMessage: 'x', options: tableOptions() },
				{ items: [{ json: {} }] },
			),
		).rejects.toThrow(/needs the failed execution's Execution ID, and it is empty/);
	});

	it('Failed Execution without a workflow id (an input without workflow.id): refused, nothing changed; with Continue the item leaves through the last output', async () => {
		await leaseReserve([webhookItem({ id: 'evt_nowf' })], 'exec-nowf');
		const parameters = {
			operation: 'fail',
			source: 'execution',
			executionId: 'exec-nowf',
			workflowId: '',
			errorMessage: 'x',
			options: tableOptions(),
		};
		await expect(runKeyNode(parameters, { items: [{ json: {} }] })).rejects.toThrow(
			/needs the failed execution's Workflow ID, and it is empty/,
		);
		const [done, notSettled] = await runKeyNode(parameters, { items: [{ json: {} }], continueOnFail: true });
		expect(done).toHaveLength(0);
		expect(notSettled).toEqual([{ json: { error: expect.stringMatching(/Workflow ID, and it is empty/) }, pairedItem: { item: 0 } }]);
		expect(await db.row('evt:evt_nowf')).toMatchObject({ status: 'processing' });

		// A NUL or a lone surrogate could never match a stored id: refused per item, the other items settled.
		await leaseReserve([webhookItem({ id: 'evt_wf_ok' })], 'exec-wf-ok');
		const perItem = {
			...parameters,
			executionId: (index: number) => ['exec-wf-ok', 'exec-nowf', 'exec-nowf'][index],
			workflowId: (index: number) => ['wf-1', 'wf\u0000', 'wf\uD800'][index],
		};
		const [settled, refused] = await runKeyNode(perItem, { items: [{ json: {} }, { json: {} }, { json: {} }], continueOnFail: true });
		expect(settled.map((item) => idempotencyOf(item).failedKeys)).toEqual([['evt:evt_wf_ok']]);
		expect(refused.map((item) => [item.pairedItem, item.json.error])).toEqual([
			[{ item: 1 }, expect.stringMatching(/Workflow ID contains a NUL character/)],
			[{ item: 2 }, expect.stringMatching(/Workflow ID contains a lone UTF-16 surrogate/)],
		]);
		expect(await db.row('evt:evt_nowf')).toMatchObject({ status: 'processing' });
	});

	it("Failed Execution settles only this n8n instance's reservations: another instance's execution with the same id keeps its live keys", async () => {
		// Two n8n instances (staging and production) on one table; both run execution 1234 of a workflow.
		const reserveOn = (instanceId: string, workflowId: string, id: string) =>
			runReserve(
				{ mode: 'lease', leaseSeconds: 60, options: { ...tableOptions(), createTable: true } },
				{ items: [webhookItem({ id })], executionId: '1234', workflowId, instanceId },
			);
		await reserveOn('instance-production', 'wf-prod', 'evt_inst_prod');
		await reserveOn('instance-staging', 'wf-stage', 'evt_inst_stage');
		await reserveOn('instance-production', 'wf-stage', 'evt_inst_prod_same_wf_id');

		// Staging's error workflow handles its failed execution 1234.
		const errorTriggerItem = { json: { execution: { id: '1234', error: { message: 'boom' } }, workflow: { id: 'wf-stage' } } };
		const [done] = await runKeyNode(
			{
				operation: 'fail',
				source: 'execution',
				executionId: '1234',
				workflowId: 'wf-stage',
				errorMessage: 'staging crashed',
				options: tableOptions(),
			},
			{ items: [errorTriggerItem], instanceId: 'instance-staging' },
		);
		expect(idempotencyOf(done[0]).failedKeys).toEqual(['evt:evt_inst_stage']);
		expect(await db.row('evt:evt_inst_stage')).toMatchObject({ status: 'failed' });
		// Production's live reservations are untouched: its redelivery still reads In Progress.
		for (const key of ['evt:evt_inst_prod', 'evt:evt_inst_prod_same_wf_id'])
			expect(await db.row(key)).toMatchObject({ status: 'processing', last_error: null });
		expect(await db.row('evt:evt_inst_prod')).toMatchObject({
			execution_id: '1234',
			workflow_id: 'wf-prod',
			n8n_instance: 'instance-production',
		});
		const [, , inProgress] = await runReserve(
			{ mode: 'lease', leaseSeconds: 60, options: tableOptions() },
			{ items: [webhookItem({ id: 'evt_inst_prod' })], executionId: '1235', workflowId: 'wf-prod', instanceId: 'instance-production' },
		);
		expect(inProgress).toHaveLength(1);

		const [released] = await runKeyNode(
			{ operation: 'release', source: 'execution', executionId: '1234', workflowId: 'wf-stage', options: tableOptions() },
			{ items: [errorTriggerItem], instanceId: 'instance-staging' },
		);
		expect(idempotencyOf(released[0]).releasedKeys).toEqual([]);
		expect(await db.row('evt:evt_inst_prod_same_wf_id')).toMatchObject({ status: 'processing' });
	});
});

describe('Idempotency Key: content never stops a settle', () => {
	it('Complete with a NUL and a lone surrogate in the response: Done, with the warning on the item', async () => {
		const [fresh] = await leaseReserve([webhookItem({ id: 'evt_nul_response' })]);
		const [done, stale] = await runKeyNode(
			// What an expression can hand over: text from the provider with a NUL and half an emoji.
			{ operation: 'complete', source: 'item', responseJson: { text: 'a\u0000b\uD83D' }, options: tableOptions() },
			{ items: fresh },
		);
		expect(stale).toHaveLength(0);
		expect(idempotencyOf(done[0])).toMatchObject({
			applied: true,
			warnings: [expect.stringMatching(/NUL characters or broken Unicode .* replaced with U\+FFFD/)],
		});
		expect(await db.row('evt:evt_nul_response')).toMatchObject({ status: 'completed', response: { text: 'a\uFFFDb\uFFFD' } });
	});

	it('Mark Failed with a NUL in the message: Done, with the warning on the item', async () => {
		const [fresh] = await leaseReserve([webhookItem({ id: 'evt_nul_message' })]);
		const [done] = await runKeyNode(
			{ operation: 'fail', source: 'item', errorMessage: 'bad\u0000byte', options: tableOptions() },
			{ items: fresh },
		);
		expect(idempotencyOf(done[0])).toMatchObject({ applied: true, warnings: [expect.stringMatching(/error message had NUL/)] });
		expect(await db.row('evt:evt_nul_message')).toMatchObject({ status: 'failed', last_error: 'bad\uFFFDbyte' });
	});

	it('items without anything to repair carry no warnings field', async () => {
		const [fresh] = await leaseReserve([webhookItem({ id: 'evt_clean' })]);
		const [done] = await runKeyNode(
			{ operation: 'complete', source: 'item', responseJson: '{"ok":true}', options: tableOptions() },
			{ items: fresh },
		);
		expect(idempotencyOf(done[0])).not.toHaveProperty('warnings');
	});
});

describe('Idempotency Key: a database blip after the business step', () => {
	it("Complete retries a lost connection past the item's lease end, and completes the key once the database is back", async () => {
		const [fresh] = await leaseReserve([webhookItem({ id: 'evt_blip' }), webhookItem({ id: 'evt_before_blip' })]);
		const settings = connectionSettings();
		const proxy = await TcpProxy.start(settings.host, settings.port);
		const credential = connectionSettings({ port: proxy.port });
		try {
			// A Complete that gets through first: the credential's pool has read the database's time.
			await runKeyNode(
				{ operation: 'complete', source: 'item', responseJson: '', options: tableOptions() },
				{ items: [fresh[1]], credential },
			);
			proxy.dropConnections(true);
			await new Promise((resolve) => setTimeout(resolve, 200)); // the pool drops its cut idle connection
			// The lease as Reserve reported it (database time), 1.5 s from now; the database is back after 3 s.
			const { rows } = await db.pool.query(`select now() + interval '1.5 seconds' as lease_end`);
			const idempotency = { ...idempotencyOf(fresh[0]), lockedUntil: (rows[0].lease_end as Date).toISOString() };
			setTimeout(() => proxy.dropConnections(false), 3_000);
			const started = Date.now();
			const [done] = await runKeyNode(
				{ operation: 'complete', source: 'item', responseJson: '', options: tableOptions() },
				{ items: [{ ...fresh[0], json: { ...fresh[0].json, idempotency } }], credential },
			);
			const elapsed = Date.now() - started;
			expect(elapsed).toBeGreaterThanOrEqual(2_500); // retried past the lease end…
			expect(elapsed).toBeLessThan(15_000); // …and stopped once it got through
			expect(idempotencyOf(done[0])).toMatchObject({ applied: true });
			expect(await db.row('evt:evt_blip')).toMatchObject({ status: 'completed' });
		} finally {
			await proxy.close();
		}
	}, 30_000);
});

describe('Idempotency Key: Delete Expired Keys', () => {
	it('returns one summary item', async () => {
		await db.pool.query(
			`insert into ${db.schema}.processed_events (key, first_seen) select 'gone-' || i, now() - interval '31 days' from generate_series(1, 7) i`,
		);
		const [[summary]] = await runKeyNode(
			{ operation: 'cleanup', retentionDays: 30, batchSize: 5, timeBudgetSeconds: 10, options: tableOptions() },
			{ items: [{ json: {} }] },
		);
		expect(summary.json).toMatchObject({ deleted: 7, batches: 2, finished: true });
		expect(summary.pairedItem).toEqual([{ item: 0 }]);
	});
});

describe('seed 002 test list, at the node level (lease mode)', () => {
	it('the same event twice in quick succession: one New, one In Progress', async () => {
		const [a, b] = await Promise.all([leaseReserve([webhookItem({ id: 'evt_quick' })]), leaseReserve([webhookItem({ id: 'evt_quick' })])]);
		const news = a[0].length + b[0].length;
		const inProgress = a[2].length + b[2].length;
		expect([news, inProgress]).toEqual([1, 1]);
	});

	it('the same event after a crash between reservation and side effect is processed exactly once more', async () => {
		await leaseReserve([webhookItem({ id: 'evt_crash' })]);
		// The worker crashed: no Complete, no Release. Its lease runs out.
		await db.pool.query(`update ${db.schema}.processed_events set locked_until = now() - interval '1 second' where key = $1`, [
			'evt:evt_crash',
		]);
		const [retry] = await leaseReserve([webhookItem({ id: 'evt_crash' })], 'exec-retry');
		expect(idempotencyOf(retry[0])).toMatchObject({ isNew: true, attempts: 2 });
		await runKeyNode({ operation: 'complete', source: 'item', responseJson: '', options: tableOptions() }, { items: retry });
		const [again, duplicate] = await leaseReserve([webhookItem({ id: 'evt_crash' })]);
		expect(again).toHaveLength(0);
		expect(duplicate).toHaveLength(1);
	});

	it('two events that map to the same business key: the second is a duplicate', async () => {
		const business = (id: string) => webhookItem({ id, subscription_id: 'sub_9', billing_period: '2026-12' });
		const reserveBusiness = (items: INodeExecutionData[]) =>
			runReserve(
				{
					keySource: 'custom',
					customKey: (i: number) => {
						const body = items[i].json.body as Record<string, string>;
						return `invoice:${body.subscription_id}:${body.billing_period}`;
					},
					options: { ...tableOptions(), createTable: true },
				},
				{ items },
			);
		const [first] = await reserveBusiness([business('evt_1')]);
		const [second, duplicate] = await reserveBusiness([business('evt_2')]);
		expect(first).toHaveLength(1);
		expect(second).toHaveLength(0);
		expect(idempotencyOf(duplicate[0]).key).toBe('invoice:sub_9:2026-12');
	});

	it('a valid replay after the original was handled: Duplicate with the stored response', async () => {
		const [fresh] = await leaseReserve([webhookItem({ id: 'evt_replay' })]);
		await runKeyNode({ operation: 'complete', source: 'item', responseJson: '{"ok":true}', options: tableOptions() }, { items: fresh });
		const [, duplicate] = await leaseReserve([webhookItem({ id: 'evt_replay' })]);
		expect(idempotencyOf(duplicate[0])).toMatchObject({ outcome: 'duplicate', response: { ok: true } });
		// Output: Full also names the run that handled it.
		const [, again] = await runReserve(
			{ mode: 'lease', leaseSeconds: 60, options: { ...tableOptions(), output: 'full' } },
			{ items: [webhookItem({ id: 'evt_replay' })], executionId: 'exec-3' },
		);
		expect(idempotencyOf(again[0])).toMatchObject({ outcome: 'duplicate', response: { ok: true }, reservedByExecutionId: 'exec-1' });
	});

	it('the same key with a different payload is flagged, or fails by option', async () => {
		const reserveFingerprinted = (body: object, payloadFingerprint: string) =>
			runReserve({ options: { ...tableOptions(), createTable: true, payloadFingerprint } }, { items: [webhookItem(body)] });
		await reserveFingerprinted({ id: 'evt_fp', amount: 10 }, 'flag');
		const [, same] = await reserveFingerprinted({ id: 'evt_fp', amount: 10 }, 'flag');
		expect(idempotencyOf(same[0]).payloadMismatch).toBe(false);
		const [, changed] = await reserveFingerprinted({ id: 'evt_fp', amount: 99 }, 'flag');
		expect(idempotencyOf(changed[0]).payloadMismatch).toBe(true);
		await expect(reserveFingerprinted({ id: 'evt_fp', amount: 99 }, 'error')).rejects.toThrow(/different payload/);
	});
});
