// Store: Automatic in a real n8n: the trigger template as shipped (the Idempotent Webhook at
// version 3, no store parameter: what a new node gets) with only its signing secret — no Postgres credential.
// In queue mode (main, an `n8n webhook` process receiving the deliveries, two workers each in an n8n
// folder of its own, as on separate hosts) the keys go to n8n's own Postgres, in the package's table;
// on one process they stay in the embedded file in n8n's folder. A burst of 100 copies of one event
// and 200 events × 3 copies (40 on one process): nothing lost, nothing run twice. Queue mode also: kill -9 of main, and
// of the worker running a step, while the steps run (test/support/e2e/crash.ts): 0 lost, 0 doubled.
// e2e-tags: single queue
import { harness, eventId } from '../support/e2e/harness';
import { keyStates, useWorkerFolders } from '../support/e2e/embedded';
import { deliverAll, figures, report, type Attempt } from '../support/e2e/provider';
import {
	BURST_TEST_TIMEOUT_MS,
	burstAttempts,
	deliverBurst,
	publishTrigger,
	triggerBase,
	triggerKey,
	withLeaseSeconds,
} from '../support/e2e/trigger';
import { startSink, type Sink } from '../support/e2e/sink';
import { startStoppedWorkers } from '../support/e2e/control';
import { crashRun, expectExactlyOnce, killWorkerRunning, type Processes, type RestartedProcess } from '../support/e2e/crash';
import { pidAlive } from '../support/stack/childProcesses';
import { TOPOLOGY } from '../support/e2e/topology';

// A crashed step's key is taken over once its lease ends: 20 s here (300 s in the template).
const CRASH_LEASE_SECONDS = 20;

describe('Store: Automatic: the trigger template with only a signing secret', () => {
	const h = harness();
	let api: Sink;
	let webhook: Awaited<ReturnType<typeof publishTrigger>>;
	let baseUrl: string;

	beforeAll(async () => {
		// Queue mode: workers in folders of their own, where an embedded file could not be shared.
		await useWorkerFolders(h, 'own');
		({ baseUrl } = await triggerBase(h));
		api = await startSink();
		webhook = await publishTrigger(h, 'automatic', { apiUrl: api.url, baseUrl });
	});
	afterAll(async () => {
		await api?.close();
		if (h.topology === 'queue') await startStoppedWorkers(h.control); // two workers for the next test file
	});

	/**
	 * The trigger's own refusals: its store could not be opened or used (503 not_reserved) or failed
	 * unexpectedly. A 503 without the package's outcome header is n8n's own (a loaded machine's
	 * database ping), retried like any 503; none may be the trigger's.
	 */
	const storeRefusals = (attempts: Attempt[]) =>
		attempts.filter((attempt) => attempt.outcome === 'not_reserved' || attempt.outcome === 'internal_error');

	/** The keys' rows in the package's table in n8n's own database (none when the table is not there). */
	async function inN8nDatabase(keys: string[]): Promise<Record<string, { status: string; attempts: number }>> {
		const { rows: table } = await h.n8nQuery("SELECT to_regclass('public.processed_events') IS NOT NULL AS present");
		if (!table[0].present) return {};
		const { rows } = await h.n8nQuery('SELECT key, status, attempts FROM processed_events WHERE key = ANY($1)', [keys]);
		return Object.fromEntries(rows.map((row) => [row.key, { status: row.status, attempts: row.attempts }]));
	}

	/**
	 * The keys completed where Automatic puts them, each after one of `attempts`: n8n's database in
	 * queue mode, the embedded file on one process; never both.
	 */
	async function expectKeysWhereAutomaticPutsThem(keys: string[], attempts = [1]) {
		const completed = Object.fromEntries(keys.map((key) => [key, expect.objectContaining({ status: 'completed' })]));
		const absent = Object.fromEntries(keys.map((key) => [key, null]));
		let states: Record<string, { attempts: number } | null>;
		if (h.topology === 'queue') {
			states = await inN8nDatabase(keys);
			const { rows } = await h.n8nQuery("SELECT obj_description('public.processed_events'::regclass) AS stamp");
			expect(rows[0].stamp).toMatch(/^n8n-nodes-idempotency keys schema version \d+$/);
			expect(await keyStates(h, keys)).toEqual(absent);
		} else {
			states = await keyStates(h, keys);
			expect(await inN8nDatabase(keys)).toEqual({});
		}
		expect(states).toEqual(completed);
		for (const key of keys) expect(attempts).toContain(states[key]?.attempts);
	}

	test(
		'100 copies of one event at once, retried until a 2xx: none lost, one call, one execution',
		async () => {
			const mark = await h.executionMark();
			const event = { id: eventId('auto_burst'), type: 'order.created' };
			const key = triggerKey(webhook.workflowId, event.id);
			const run = await deliverBurst(webhook.url, event);
			const stats = figures(run);
			report(`Store: Automatic, burst of 100 (${h.topology})`, stats);
			expect(stats.gaveUp).toBe(0);
			expect(run.deliveries.map((delivery) => delivery.final.status)).toEqual(Array(100).fill(200));
			// The first answer (new) can reach the sender after its 30 s on a loaded machine: its retry is then a duplicate.
			expect(run.attempts.filter((attempt) => attempt.outcome === 'new').length).toBeLessThanOrEqual(1);
			expect(storeRefusals(run.attempts)).toEqual([]);
			expect(api.calls(key)).toBe(1);
			await h.waitForExecutions(webhook.workflowId, mark, 1);
			expect(await h.executions(webhook.workflowId, mark)).toHaveLength(1);
			await expectKeysWhereAutomaticPutsThem([key], burstAttempts(run));
		},
		BURST_TEST_TIMEOUT_MS,
	);

	// Queue mode's size is the one its keys in n8n's database are promised for; on one process the
	// embedded file's synced commits make each delivery wait, and half the events prove the same there.
	const SOAK_EVENTS = TOPOLOGY === 'queue' ? 200 : 40;
	// Ten minutes: 161–192 s on a machine at half speed, three times that for a slower one.
	test(`${SOAK_EVENTS} events × 3 copies, shuffled, 16 at a time: each event runs once`, async () => {
		const mark = await h.executionMark();
		const ids = Array.from({ length: SOAK_EVENTS }, (_, index) => eventId(`auto_soak_${index}`));
		const deliveries = ids.flatMap((id) => [0, 1, 2].map(() => ({ eventId: id, forged: false, body: { id, type: 'e2e.soak' } })));
		// A fixed shuffle: copies of one event arrive apart and together.
		deliveries.sort((a, b) => ((ids.indexOf(a.eventId) * 7919) % 601) - ((ids.indexOf(b.eventId) * 7919) % 601));
		const run = await deliverAll({ url: webhook.url, plan: { eventIds: ids, deliveries }, concurrency: 16 });
		const stats = figures(run);
		report(`Store: Automatic, ${SOAK_EVENTS} events × 3 (${h.topology})`, stats);
		expect(stats.gaveUp).toBe(0);
		const keys = ids.map((id) => triggerKey(webhook.workflowId, id));
		expect(keys.filter((key) => api.calls(key) !== 1)).toEqual([]);
		expect(storeRefusals(run.attempts)).toEqual([]);
		await h.waitForExecutions(webhook.workflowId, mark, ids.length);
		expect(await h.executions(webhook.workflowId, mark)).toHaveLength(ids.length);
		await expectKeysWhereAutomaticPutsThem(keys);
	}, 600_000);

	if (TOPOLOGY === 'queue') {
		describe("kill -9 while the steps run (queue mode: the keys in n8n's database)", () => {
			let crashing: Awaited<ReturnType<typeof publishTrigger>>;
			beforeAll(async () => {
				crashing = await publishTrigger(h, 'automatic-crash', { apiUrl: api.url, baseUrl, change: withLeaseSeconds(CRASH_LEASE_SECONDS) });
			});
			const crash = <Fault extends object>(label: string, kill: () => Promise<Fault>) =>
				crashRun({ h, api, url: crashing.url, label, keyOf: (id) => triggerKey(crashing.workflowId, id), kill });
			const inN8nDatabaseOrNull = async (keys: string[]) => {
				const found = await inN8nDatabase(keys);
				return Object.fromEntries(keys.map((key) => [key, found[key] ?? null]));
			};

			test('kill -9 of main, started again: the workers finish the steps; 0 lost, 0 doubled, each step run once', async () => {
				const before = (await h.control('GET /processes')) as Processes;
				const result = await crash('auto_main_kill', async () => (await h.control('POST /restart-main')) as RestartedProcess);
				const { fault } = result;
				// The fault happened: the old main died of SIGKILL and is gone, a new one serves; the webhook process and workers kept running.
				expect(fault.oldPid).toBe(before.main.pid);
				expect(fault.oldExit.signal).toBe('SIGKILL');
				expect(pidAlive(fault.oldPid)).toBe(false);
				const after = (await h.control('GET /processes')) as Processes;
				expect(after.main).toMatchObject({ pid: fault.newPid, alive: true });
				expect(after.webhook).toMatchObject({ pid: before.webhook.pid, alive: true });
				expect(after.workers.every((worker) => worker.alive)).toBe(true);
				const states = await expectExactlyOnce(result, api, inN8nDatabaseOrNull);
				for (const key of result.keys) {
					expect(result.perEvent[key]).toEqual({ effects: 1, stepsStarted: 1, abandoned: 0 });
					expect(states[key]).toMatchObject({ attempts: 1 });
				}
				await expectKeysWhereAutomaticPutsThem(result.keys);
			});

			test('kill -9 of the worker running a step: 0 lost, 0 doubled; the cut step runs again on the other worker after the lease', async () => {
				const mark = await h.executionMark();
				const result = await crash('auto_worker_kill', () => killWorkerRunning(h, crashing.workflowId, mark));
				const { fault } = result;
				expect(fault.exited.signal).toBe('SIGKILL');
				expect(pidAlive(fault.pid)).toBe(false);
				const states = await expectExactlyOnce(result, api, inN8nDatabaseOrNull);
				// Steps cut by the kill ran again (stepsStarted 2, the key's second attempt); the others ran once.
				const cut = result.keys.filter((key) => result.perEvent[key].abandoned > 0);
				expect(cut.length).toBeGreaterThan(0);
				for (const key of result.keys) {
					const again = cut.includes(key);
					expect(result.perEvent[key]).toEqual({ effects: 1, stepsStarted: again ? 2 : 1, abandoned: again ? 1 : 0 });
					expect(states[key]).toMatchObject({ status: 'completed', attempts: again ? 2 : 1 });
				}
				// Nothing in an embedded file: no Postgres credential, and the keys in n8n's database.
				expect(await keyStates(h, result.keys)).toEqual(Object.fromEntries(result.keys.map((key) => [key, null])));
			});
		});
	}
});
