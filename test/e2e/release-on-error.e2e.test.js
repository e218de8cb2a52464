// A business step that fails for one event: its error output releases the key and answers 500, the
// provider's redelivery (after the cause is fixed) is processed, and exactly one business row results.
// A crash without an error output: the error-workflow template releases the execution's keys.
const { harness, outputTaken, eventId, NODE } = require('./support/harness');
const { eventually } = require('./support/eventually');
const { errorRunsFor } = require('./support/outcome');

const CONSTRAINT = 'business_log_e2e_rejects_poison';

describe('release on error', () => {
	const h = harness();

	afterAll(async () => {
		await h.appQuery(`ALTER TABLE business_log DROP CONSTRAINT IF EXISTS ${CONSTRAINT}`);
	});

	test('failing business step → Release Key → 500; redelivery after the fix is processed → exactly 1 business row', async () => {
		const event = { id: eventId('poison'), type: 'e2e.poison' };
		const key = `evt:${event.id}`;
		await h.appQuery(`ALTER TABLE business_log ADD CONSTRAINT ${CONSTRAINT} CHECK (event_type IS DISTINCT FROM 'e2e.poison')`);

		let mark = await h.executionMark();
		const failed = await h.deliver(h.webhookUrl, event);
		expect([failed.status, failed.outcome]).toEqual([500, 'released']);
		const [failedRun] = await h.waitForExecutions(h.IDS.webhook, mark, 1);
		expect(failedRun.nodesRun).toEqual(expect.arrayContaining([NODE.business, NODE.release]));
		expect(failedRun.nodesRun).not.toContain(NODE.complete);
		expect(outputTaken(failedRun, NODE.business)).toBe(1); // the error output
		expect(outputTaken(failedRun, NODE.release)).toBe(0); // Done, not Stale
		expect((await h.appQuery('SELECT 1 FROM processed_events WHERE key = $1', [key])).rowCount).toBe(0);

		// Still broken: the provider's retry fails the same way and is released again (not "in progress").
		const stillBroken = await h.deliver(h.webhookUrl, event);
		expect([stillBroken.status, stillBroken.outcome]).toEqual([500, 'released']);

		await h.appQuery(`ALTER TABLE business_log DROP CONSTRAINT ${CONSTRAINT}`);
		mark = await h.executionMark();
		const retried = await h.deliver(h.webhookUrl, event);
		expect([retried.status, retried.outcome]).toEqual([200, 'new']);
		const again = await h.deliver(h.webhookUrl, event);
		expect([again.status, again.outcome]).toEqual([200, 'duplicate']);
		const runs = await h.waitForExecutions(h.IDS.webhook, mark, 2);
		expect(runs.map((e) => outputTaken(e, NODE.reserve))).toEqual([0, 1]);
		// Issue 10 §4: n8n stored each run's outcome as custom data, in the table its executions list filters on.
		// In queue mode the worker saves an execution's status before its custom data: wait for the rows.
		const customData = await eventually(
			() =>
				h.n8nQuery(
					`SELECT "executionId", key, value FROM execution_metadata WHERE "executionId" = ANY($1::int[]) AND key LIKE 'idempotency_%' ORDER BY "executionId", key`,
					[runs.map((e) => e.id)],
				),
			(result) => result.rowCount >= 8,
		);
		expect(customData.rows.map((r) => [Number(r.executionId), r.key, r.value])).toEqual([
			[runs[0].id, 'idempotency_attempt', '1'],
			[runs[0].id, 'idempotency_counts', 'new=1'],
			[runs[0].id, 'idempotency_key', key],
			[runs[0].id, 'idempotency_outcome', 'new'],
			[runs[1].id, 'idempotency_attempt', '1'],
			[runs[1].id, 'idempotency_counts', 'duplicate=1'],
			[runs[1].id, 'idempotency_key', key],
			[runs[1].id, 'idempotency_outcome', 'duplicate'],
		]);

		const { rows } = await h.appQuery('SELECT count(*)::int AS n FROM business_log WHERE event_key = $1', [key]);
		expect(rows[0].n).toBe(1);
		const stored = await h.appQuery('SELECT status FROM processed_events WHERE key = $1', [key]);
		expect(stored.rows).toEqual([{ status: 'completed' }]);
	});

	test('a crash after a lease-mode reservation: templates/error-workflow.json releases the failed execution\'s key', async () => {
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
		expect(errorRuns[0].nodesRun).toContain('Release Keys of Failed Execution');

		// Released: the row is gone, so the redelivery is new again instead of "in progress" for 300 s.
		expect((await h.appQuery('SELECT 1 FROM processed_events WHERE key = $1', [key])).rowCount).toBe(0);
		const mark2 = await h.executionMark();
		await h.deliver(h.crashUrl, event);
		const [redelivered] = await h.waitForExecutions(h.IDS.crash, mark2, 1);
		expect(outputTaken(redelivered, NODE.reserve)).toBe(0);
		expect(await errorRunsFor(h, redelivered.id, mark2)).toHaveLength(1); // and released it again
	});
});
