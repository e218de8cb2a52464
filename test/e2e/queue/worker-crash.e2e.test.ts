// Test 4 (queue mode): the business step takes a few seconds (a trigger on business_log sleeps for
// this event type); the worker executing it is killed with SIGKILL mid-step. The provider's
// deliveries get 409 while the lease runs; after the lease (or once the error workflow marked failed
// the key of the crashed execution, where n8n reports it) the event is processed exactly once.
//
// Postgres runs a statement to its end (and commits it) even when its client died, unless
// client_connection_check_interval is set: without it, the killed worker's INSERT still commits after
// its sleep and the retry inserts a second row (measured: 2 rows). docs/scaling-out.md recommends
// the setting for the business database; this test turns it on for the server (ALTER SYSTEM + reload
// reaches the pooled sessions too) and off again afterwards.
// e2e-tags: queue
import fs from 'node:fs';
import { harness, eventId } from '../../support/e2e/harness';
import { deliverAll, figures, recoveryMs, report } from '../../support/e2e/provider';
import { sleep, pidAlive } from '../../support/stack/childProcesses';
import { eventually } from '../../support/e2e/eventually';
import { errorRunsFor } from '../../support/e2e/outcome';
import { createTrigger, dropTrigger } from '../../support/e2e/appFaults';
import { startStoppedWorkers } from '../../support/e2e/control';

/** createTrigger's trigger: its name, table, timing, optional WHEN condition and body. */
type TriggerSpec = Parameters<typeof createTrigger>[1];
/** The n8n workers of the stack (GET /processes of its control server), as far as this file reads them. */
interface Processes {
	workers: Array<{ index: number; logFile: string }>;
}
/** What POST /kill-worker answers: the killed worker's pid and how it exited. */
interface KilledWorker {
	pid: number;
	exited: { signal: string | null };
}

const SLOW_TYPE = 'e2e.slow';
const SLOW_TRIGGER = {
	name: 'e2e_slow_business_step',
	table: 'business_log',
	timing: 'BEFORE INSERT',
	body: `				IF NEW.event_type = '${SLOW_TYPE}' THEN PERFORM pg_sleep(5); END IF;
				RETURN NEW;`,
} as TriggerSpec;

describe('queue mode: a worker killed in the middle of the business step', () => {
	const h = harness();

	beforeAll(async () => {
		await h.appQuery("ALTER SYSTEM SET client_connection_check_interval = '1s'");
		await h.appQuery('SELECT pg_reload_conf()');
		await createTrigger(h, SLOW_TRIGGER);
	});
	afterAll(async () => {
		await dropTrigger(h, SLOW_TRIGGER);
		await h.appQuery('ALTER SYSTEM RESET client_connection_check_interval');
		await h.appQuery('SELECT pg_reload_conf()');
		await startStoppedWorkers(h.control); // two workers for the next test file
	});

	test('kill -9 of the worker running the business step → 409 while the lease runs, then exactly 1 business row', async () => {
		const id = eventId('crash');
		const key = `evt:${id}`;
		const mark = await h.executionMark();
		const body = { id, type: SLOW_TYPE };
		// The provider: the event delivered 3 times, each delivery retried until a 2xx.
		const thePlan = { eventIds: [id], deliveries: [0, 1, 2].map(() => ({ eventId: id, forged: false, body })) };

		// Find the worker whose execution sleeps inside the business step, then kill it.
		const killer = (async () => {
			const deadline = Date.now() + 60000;
			let backends: number[];
			for (;;) {
				if (Date.now() > deadline) throw new Error('the slow business step never started');
				const sleeping = await h.appQuery("SELECT pid FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND query ILIKE '%business_log%'");
				backends = sleeping.rows.map((row: { pid: number }) => row.pid);
				if (backends.length > 0) break;
				await sleep(200);
			}
			// The execution in the business step is the one holding the key's lease (Reserve stores its
			// id); other deliveries of the event may be running too, on the other worker.
			const { rows } = await h.appQuery('SELECT execution_id FROM processed_events WHERE key = $1', [key]);
			const { workers } = (await h.control('GET /processes')) as Processes;
			const running: string[] = rows.map((row: { execution_id: string }) => String(row.execution_id));
			const victim = workers.find((w) =>
				running.some((executionId) => fs.readFileSync(w.logFile, 'utf8').includes(`Worker started execution ${executionId} `)),
			);
			if (!victim) throw new Error(`no worker log names executions ${running.join(', ')}`);
			const killedAt = Date.now();
			const killed = (await h.control('POST /kill-worker', { index: victim.index })) as KilledWorker;
			return { ...killed, index: victim.index, killedAt, executions: running, backends };
		})();

		const run = await deliverAll({ url: h.webhookUrl, plan: thePlan, concurrency: 3, retry: { firstDelayMs: 500, maxDelayMs: 3000 } });
		const kill = await killer;
		const stats = figures(run);
		// Count the rows once the killed worker's INSERT is over: its server session must end (the
		// connection check aborts it) before "exactly 1 row" means anything; a commit after it would be the double.
		const orphaned = await eventually(
			async () => (await h.appQuery('SELECT pid FROM pg_stat_activity WHERE pid = ANY($1)', [kill.backends])).rows,
			(rows: unknown[]) => rows.length === 0,
			{ timeoutMs: 30000 },
		);
		const { rows } = await h.appQuery('SELECT count(*)::int AS n FROM business_log WHERE event_key = $1', [key]);
		const stored = await h.appQuery('SELECT status, attempts FROM processed_events WHERE key = $1', [key]);
		// Let n8n finish with the crash before the next test file (reported, not asserted: it fails the
		// killed job only once it stalls, and its error run may come after the provider's last 2xx).
		for (const executionId of kill.executions) await errorRunsFor(h, executionId, mark, { timeoutMs: 60000 });
		const errorRuns = await h.n8nQuery(`SELECT id, status FROM execution_entity WHERE "workflowId" = $1 AND id > $2`, [h.IDS.error, mark]);
		const crashed = await h.n8nQuery(`SELECT id, status FROM execution_entity WHERE id = ANY($1::int[])`, [kill.executions.map(Number)]);
		const during = run.attempts.filter((a) => a.at >= kill.killedAt);
		report('test 4 worker crash', {
			...stats,
			rows: rows[0].n,
			killedWorkerPid: kill.pid,
			killedBy: kill.exited.signal,
			crashedExecutions: crashed.rows,
			errorWorkflowRuns: errorRuns.rows,
			answersAfterKill: during.map((a) => a.status || a.error).join(','),
			recoveryMsAfterKill: recoveryMs(run, kill.killedAt),
			key: stored.rows[0],
		});

		// The fault happened: the worker's process died of SIGKILL.
		expect(kill.exited.signal).toBe('SIGKILL');
		expect(pidAlive(kill.pid)).toBe(false);
		expect(orphaned).toEqual([]); // its database session ended too
		// Exactly once, nothing lost.
		expect(stats.gaveUp).toBe(0);
		expect(rows[0].n).toBe(1);
		expect(stored.rows[0].status).toBe('completed');
		// While the crashed run held the key, other deliveries were told 409 (in progress), not 200.
		expect(during.some((a) => a.status === 409)).toBe(true);
		expect(run.attempts.filter((a) => a.status === 200 && a.outcome === 'new')).toHaveLength(1);
	});
});
