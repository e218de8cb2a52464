// A business step that fails for one event: its error output marks the key failed (kept with the
// error text and the stored payload: the dead-letter view and the replay template see it) and answers
// 500; the provider's redelivery (after the cause is fixed) is processed, and exactly one business row
// results. A crash without an error output: the error-workflow template marks the execution's keys
// failed, with the execution's error. Redelivery is the same as after a release: the key is New again.
// e2e-tags: single queue compatibility
import { harness, outputTaken, outputItem, eventId, NODE } from '../support/e2e/harness';
import { eventually } from '../support/e2e/eventually';
import { errorRunsFor } from '../support/e2e/outcome';
import { RETRY_WARNING } from '../../nodes/shared/executionCustomData';

const CONSTRAINT = 'business_log_e2e_rejects_poison';
const MARK_EXECUTION_FAILED = 'Mark Keys of Failed Execution as Failed';

describe('mark failed on error (the shipped webhook and error-workflow templates)', () => {
	const h = harness();

	afterAll(async () => {
		await h.appQuery(`ALTER TABLE business_log DROP CONSTRAINT IF EXISTS ${CONSTRAINT}`);
	});

	const stored = async (key: string) =>
		(
			await h.appQuery('SELECT status, attempts, last_error, payload, locked_until, execution_id FROM processed_events WHERE key = $1', [
				key,
			])
		).rows[0];

	test('failing business step → Mark Failed (error text, payload kept) → 500; redelivery after the fix is processed → exactly 1 business row', async () => {
		const event = { id: eventId('poison'), type: 'e2e.poison' };
		const key = `evt:${event.id}`;
		await h.appQuery(`ALTER TABLE business_log ADD CONSTRAINT ${CONSTRAINT} CHECK (event_type IS DISTINCT FROM 'e2e.poison')`);

		let mark = await h.executionMark();
		const failed = await h.deliver(h.webhookUrl, event);
		expect([failed.status, failed.outcome]).toEqual([500, 'failed']);
		expect(failed.json).toEqual({ received: false, retry: true, eventKey: key });
		const [failedRun] = await h.waitForExecutions(h.IDS.webhook, mark, 1);
		expect(failedRun.nodesRun).toEqual(expect.arrayContaining([NODE.business, NODE.settle]));
		expect(outputTaken(failedRun, NODE.business)).toBe(1); // the error output
		expect(outputTaken(failedRun, NODE.settle)).toBe(1); // Failed: the key marked failed
		// Kept, not deleted: the Postgres node's error text (its `message`) and the stored body.
		const kept = await stored(key);
		expect(kept).toMatchObject({ status: 'failed', attempts: 1, locked_until: null, payload: event, execution_id: String(failedRun.id) });
		expect(kept.last_error).toMatch(new RegExp(CONSTRAINT));

		// Still broken: the provider's retry takes the failed key over, fails the same way and marks it failed again (not "in progress").
		const stillBroken = await h.deliver(h.webhookUrl, event);
		expect([stillBroken.status, stillBroken.outcome]).toEqual([500, 'failed']);
		expect(await stored(key)).toMatchObject({ status: 'failed', attempts: 2, payload: event });

		await h.appQuery(`ALTER TABLE business_log DROP CONSTRAINT ${CONSTRAINT}`);
		mark = await h.executionMark();
		const retried = await h.deliver(h.webhookUrl, event);
		expect([retried.status, retried.outcome]).toEqual([200, 'new']);
		const again = await h.deliver(h.webhookUrl, event);
		expect([again.status, again.outcome]).toEqual([200, 'duplicate']);
		const runs = await h.waitForExecutions(h.IDS.webhook, mark, 2);
		expect(runs.map((e) => outputTaken(e, NODE.reserve))).toEqual([0, 1]);
		// n8n stored each run's outcome as custom data, in the table its executions list filters on.
		// In queue mode the worker saves an execution's status before its custom data: wait for the rows.
		const customData = await eventually(
			() =>
				h.n8nQuery(
					`SELECT "executionId", key, value FROM execution_metadata WHERE "executionId" = ANY($1::int[]) AND key LIKE 'idempotency_%' ORDER BY "executionId", key`,
					[runs.map((e) => e.id)],
				),
			(result) => (result.rowCount ?? 0) >= 9,
		);
		// Attempt 3: the key was kept through both failures (a released key would start over at 1).
		expect(
			customData.rows.map((r: { executionId: number; key: string; value: string }) => [Number(r.executionId), r.key, r.value]),
		).toEqual([
			[runs[0].id, 'idempotency_attempt', '3'],
			[runs[0].id, 'idempotency_counts', 'new=1'],
			[runs[0].id, 'idempotency_key', key],
			[runs[0].id, 'idempotency_outcome', 'new'],
			// The run that reserved the key says not to use n8n's Retry on it; the duplicate's reserved nothing.
			[runs[0].id, 'idempotency_retry', RETRY_WARNING],
			[runs[1].id, 'idempotency_attempt', '3'],
			[runs[1].id, 'idempotency_counts', 'duplicate=1'],
			[runs[1].id, 'idempotency_key', key],
			[runs[1].id, 'idempotency_outcome', 'duplicate'],
		]);

		const { rows } = await h.appQuery('SELECT count(*)::int AS n FROM business_log WHERE event_key = $1', [key]);
		expect(rows[0].n).toBe(1);
		expect(await stored(key)).toMatchObject({ status: 'completed', attempts: 3, payload: event });
	});

	test("a crash after a lease-mode reservation: templates/error-workflow.json marks the failed execution's key failed, with its error", async () => {
		const event = { id: eventId('crash'), type: 'e2e.crash' };
		const key = `evt:${event.id}`;
		const mark = await h.executionMark();
		const answer = await h.deliver(h.crashUrl, event);
		expect(answer.status).toBeGreaterThanOrEqual(500);

		const [crashed] = await h.waitForExecutions(h.IDS.crash, mark, 1);
		expect(crashed.status).toBe('error');
		expect(crashed.nodesRun).toEqual(expect.arrayContaining([NODE.reserve, 'Crash']));
		expect(outputTaken(crashed, NODE.reserve)).toBe(0); // it reserved the key, then crashed
		const errorRuns = await errorRunsFor(h, crashed.id, mark);
		expect(errorRuns).toHaveLength(1);
		expect(errorRuns[0].status).toBe('success');
		expect(errorRuns[0].nodesRun).toContain(MARK_EXECUTION_FAILED);
		// Only this workflow's reservations on this n8n instance: the template's Workflow ID default reads the Error Trigger's.
		expect(outputItem(errorRuns[0], MARK_EXECUTION_FAILED).idempotency).toEqual({
			operation: 'fail',
			executionId: String(crashed.id),
			workflowId: h.IDS.crash,
			failedKeys: [key],
		});

		// Kept failed with the execution's error and the payload (the crash workflow's Reserve is the template's: Store Payload on).
		expect(await stored(key)).toEqual({
			status: 'failed',
			attempts: 1,
			last_error: `execution ${crashed.id} failed in Crash: simulated crash after the reservation`,
			payload: event,
			locked_until: null,
			execution_id: String(crashed.id),
		});
		// So the redelivery is new again instead of "in progress" for 300 s.
		const mark2 = await h.executionMark();
		await h.deliver(h.crashUrl, event);
		const [redelivered] = await h.waitForExecutions(h.IDS.crash, mark2, 1);
		expect(outputTaken(redelivered, NODE.reserve)).toBe(0);
		expect(await errorRunsFor(h, redelivered.id, mark2)).toHaveLength(1); // and marked it failed again
		expect(await stored(key)).toMatchObject({ status: 'failed', attempts: 2, execution_id: String(redelivered.id) });
	});
});
