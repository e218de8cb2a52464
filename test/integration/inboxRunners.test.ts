import type { InboxRequest, ReservationRequest, ReserveOptions } from '../../lib/types';
import { describeEachBackend, freshStore, type StoreFixture } from '../support/stores';
import { startWorker, type WorkerProcess } from '../support/workers';
import type { InboxRunnerWorkerArgs, InboxRunnerWorkerReport } from '../support/inboxRunnerWorker';
import { eventually } from '../support/e2e/eventually';

/*
 * Several mains, each running the Idempotent Webhook trigger's retry runner on one store. n8n runs
 * a trigger's trigger() on the leader main only, but multi-main hands the lead over (and n8n's
 * multi-main needs an enterprise licence, so it is not tried end to end): for a while two mains may
 * both run the runner. What keeps a retry from starting twice is the store's claim: each due event
 * goes to one claimer, with a new owner token. Here three real OS processes run the runner itself
 * (nodes/IdempotentWebhook/inboxRunner.ts) on one store, every 50 ms, over due events of which half
 * fail their first retry (so they fall due again, for any of them to claim): every attempt of every
 * event must start exactly once, in one process.
 */

const EVENTS = 60;
const RUNNERS = 3;
const LEASE: ReserveOptions = {
	mode: 'lease',
	leaseSeconds: 60,
	retentionSeconds: 86_400,
	executionId: 'exec-accept',
	workflowId: 'wf-mains',
};
const ITEM = '{"json":{"body":{"id":"evt"}},"rawBody":"e30=","mimeType":"application/json"}';

describeEachBackend('the retry runner in several processes on one store', (backend) => {
	let fixture: StoreFixture;

	beforeAll(async () => {
		fixture = await freshStore(backend, { table: 'inbox_runners', prefix: 'runners' });
	});
	afterAll(() => fixture?.close());

	it(`${RUNNERS} processes running the runner at once over ${EVENTS} due events, half failing their first retry: each attempt started once, every event completed`, async () => {
		const owner = 'workflow:wf-mains';
		const inbox: InboxRequest = { owner, item: ITEM, maxAttempts: 5, firstRetryMs: 200, retryForMs: 3_600_000 };
		const keys = Array.from({ length: EVENTS }, (_, index) => `mains:${index}`);
		await fixture.store.reserve(
			keys.map((key): ReservationRequest => ({ key, keySource: 'custom', payloadHash: null, inbox })),
			LEASE,
		);
		// Each first run failed: its retry (attempt 2) is due now.
		await fixture.update(keys, { status: 'failed', lockedUntil: null, nextAttemptAt: -1 });
		const failing = keys.filter((_, index) => index % 2 === 0);
		const args: InboxRunnerWorkerArgs = {
			target: fixture.target,
			owner,
			leaseMs: 60_000,
			pollMs: 50,
			failOnAttempt: Object.fromEntries(failing.map((key) => [key, [2]])),
		};
		const workers: WorkerProcess[] = Array.from({ length: RUNNERS }, () => startWorker('inboxRunnerWorker.ts', args));
		try {
			await Promise.all(workers.map((worker) => worker.waitForLine((line) => line === 'ready')));
			for (const worker of workers) worker.child.stdin!.write('go\n');
			const statuses = await eventually(
				async () => (await Promise.all(keys.map((key) => fixture.row(key)))).map((row) => row?.status),
				(all) => all.every((status) => status === 'completed'),
				{ timeoutMs: 30_000, everyMs: 200 },
			);
			expect(keys.filter((_, index) => statuses[index] !== 'completed')).toEqual([]);
			for (const worker of workers) worker.child.stdin!.end('stop\n');
			const reports = await Promise.all(
				workers.map(async (worker) => {
					const { code, stdout, stderr } = await worker.exited;
					if (code !== 0) throw new Error(`a runner process failed (${code}): ${stderr}`);
					return JSON.parse(stdout.split('\n')[1]) as InboxRunnerWorkerReport;
				}),
			);
			const runs = reports.flatMap((report) => report.runs.map((run) => ({ ...run, pid: report.pid })));
			// Every attempt started once, by one process: the failing events twice (attempts 2 and 3), the others once.
			const started = runs.map((run) => `${run.key}#${run.attempt}`).sort();
			const expected = keys.flatMap((key) => (failing.includes(key) ? [`${key}#2`, `${key}#3`] : [`${key}#2`])).sort();
			expect(started).toEqual(expected);
			expect(new Set(runs.map((run) => run.ownerToken)).size).toBe(runs.length);
			// Each run's settle was taken: no run was fenced out by another process's claim of the same attempt.
			expect(runs.filter((run) => !run.taken)).toEqual([]);
			// The race was real: more than one process started runs.
			expect(new Set(runs.map((run) => run.pid)).size).toBeGreaterThan(1);
			const rows = await Promise.all(keys.map((key) => fixture.row(key)));
			expect(rows.map((row) => row?.attempts)).toEqual(keys.map((key) => (failing.includes(key) ? 3 : 2)));
		} finally {
			for (const worker of workers) if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill();
		}
	});
});
