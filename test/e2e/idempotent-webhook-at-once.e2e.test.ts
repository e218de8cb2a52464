// The Idempotent Webhook trigger with Respond: At Once, in a real n8n: the trigger template as a user
// sets it for a sender that waits only seconds (Sentry: 1 s, Slack: 3 s). The business step calls the
// test's API, which can be made slow or fail on demand; every accepted event must end with exactly
// one effect, whatever the sender saw, and the package — not the sender — runs failed events again.
//
// The kills (kill -9 of a process, then started again): one process, main; queue mode, main (the
// leader, which runs the retries), the `n8n webhook` process that answered the deliveries, and a
// worker. Each lands on events in the states an accepted event can be in: answered but its
// execution not started (held at a gate in n8n's database, so the test can prove it had not: no
// execution, no call), its retry pending, its retry claimed but not started, its step in flight. Per
// event the test counts the effects (calls the API committed), the steps started (calls received)
// and the calls cut by the kill (received, never committed: the API's transaction rolled back with
// its caller). An effect beyond one could only come from a cut call at an API that commits on
// arrival; every call carries the event's key as Idempotency-Key, by which such an API refuses the
// repeat. Queue mode's new kills run on the Postgres store (the store of separate hosts), the
// others on the embedded store in main's folder (one host).
// e2e-tags: single queue
import { harness, eventId, outputItem, type DeliveryAnswer, type Execution } from '../support/e2e/harness';
import { storedKeys, useWorkerFolders } from '../support/e2e/embedded';
import { postgresKeys, publishTrigger, triggerBase, triggerKey, TRIGGER } from '../support/e2e/trigger';
import { startSink, type Sink } from '../support/e2e/sink';
import { eventually } from '../support/e2e/eventually';
import { executionGate, type ExecutionGate } from '../support/e2e/executionGate';
import type { NodeChange } from '../support/e2e/workflows';
import { TOPOLOGY } from '../support/e2e/topology';
import { deliverAll, figures, plan, report, seededRandom } from '../support/e2e/provider';
import { pidAlive, sleep } from '../support/stack/childProcesses';
import { startStoppedWorkers } from '../support/e2e/control';
import fs from 'node:fs';

/**
 * How long the senders here wait for an answer: Slack's 3 s, far less than the 10 s step an answer
 * at the end of the run would wait for. Sentry's 1 s is the benchmark's (bench/n8n/atOnce.ts, p99
 * on a quiet machine); CI runs two n8n side by side on 2 cores, where a single answer has taken
 * over 1 s.
 */
const SENDER_WAITS_MS = 3000;

const LEASE_SECONDS = 20;
const POSTGRES_TEMPLATE = 'idempotent-webhook-trigger-postgres.json';
/**
 * The soak: events, each delivered 3 times; the share of the API's calls that fail, at random. One
 * process runs every delivery, run and retry on one thread (four minutes for 600 deliveries beside
 * CI's other stack): half the events there; queue mode spreads them over its processes.
 */
const SOAK = { events: TOPOLOGY === 'queue' ? 200 : 40, copies: 3, failingShare: 0.2 };

/** What the stack's control answers to a restart (test/support/stack/n8nProcesses.ts). */
interface Restarted {
	oldPid: number;
	oldExit: { signal: string | null };
	newPid: number;
}
interface Processes {
	main: { pid: number };
	webhook: { pid: number } | null;
}

/** The trigger at version 2 answering At Once, at most `maxAttempts` runs, retrying from `firstRetrySeconds` on (a user's 30 s would outlast a test). */
function atOnce(maxAttempts: number, firstRetrySeconds = 1, leaseSeconds = LEASE_SECONDS): NodeChange {
	return (node) =>
		node.type === TRIGGER.type
			? {
					...node,
					typeVersion: 2,
					parameters: {
						...node.parameters,
						respond: 'atOnce',
						maxAttempts,
						firstRetrySeconds,
						leaseSeconds,
						acceptedBody: '{"accepted": true}',
					},
				}
			: node.name === TRIGGER.business
				? // The user's step takes 10 s: its call may take longer than the template's 10 s timeout.
					{ ...node, parameters: { ...node.parameters, options: { ...(node.parameters.options as object), timeout: 30_000 } } }
				: node;
}

type Published = Awaited<ReturnType<typeof publishTrigger>>;

describe('the Idempotent Webhook trigger, Respond: At Once', () => {
	const h = harness();
	let api: Sink;
	/** Ten runs at most: a soak's event failing at random is not dead-lettered (0.2^10 per event). */
	let retried: Published;
	let deadLettered: Published;
	/** Its retries wait 4 to 8 s: long enough for a kill between a failed run and its retry. */
	let slowRetry: Published;
	/** A lease of 4 s, shorter than its step. */
	let shortLease: Published;
	/** Its executions can be held at the gate before they start (one process). */
	let gated: Published;
	/** Queue mode, Store: Postgres: events pending or in flight at a kill, and events held at the gate. */
	let pgPending: Published;
	let pgGated: Published;
	let pgUnstarted: Published;
	let gate: ExecutionGate;
	/** Version 2 keys each workflow apart. */
	const keyOf = triggerKey;

	beforeAll(async () => {
		await useWorkerFolders(h, 'shared');
		const { baseUrl } = await triggerBase(h);
		api = await startSink();
		gate = await executionGate(h, { name: 'e2e_at_once_gate', lock: 735_101 });
		retried = await publishTrigger(h, 'at-once', { apiUrl: api.url, baseUrl, change: atOnce(10) });
		deadLettered = await publishTrigger(h, 'at-once-dead', { apiUrl: api.url, baseUrl, change: atOnce(2) });
		slowRetry = await publishTrigger(h, 'at-once-slow-retry', { apiUrl: api.url, baseUrl, change: atOnce(3, 8) });
		shortLease = await publishTrigger(h, 'at-once-short-lease', { apiUrl: api.url, baseUrl, change: atOnce(3, 1, 4) });
		const published = [retried, deadLettered, slowRetry, shortLease];
		if (h.topology === 'queue') {
			const onPostgres = { apiUrl: api.url, baseUrl, template: POSTGRES_TEMPLATE };
			pgPending = await publishTrigger(h, 'at-once-pg-pending', { ...onPostgres, change: atOnce(3, 8) });
			pgGated = await publishTrigger(h, 'at-once-pg-gated', { ...onPostgres, change: atOnce(3, 8) });
			pgUnstarted = await publishTrigger(h, 'at-once-pg-unstarted', { ...onPostgres, change: atOnce(3) });
			published.push(pgPending, pgGated, pgUnstarted);
		} else {
			gated = await publishTrigger(h, 'at-once-gated', { apiUrl: api.url, baseUrl, change: atOnce(3) });
			published.push(gated);
		}
		// The first delivery opens the store (and creates its table): a provider's first call pays it once.
		for (const { url } of published) await h.deliver(url, { id: eventId('once_warm'), type: 'e2e.warmup' });
	});
	// A test that failed with the gate closed must not hold the next one's executions.
	afterEach(async () => await gate?.open());
	afterAll(async () => {
		await gate?.drop();
		await api?.close();
		if (h.topology === 'queue') await startStoppedWorkers(h.control); // two workers for the next test file
	});

	/**
	 * kill -9 of the process `route` restarts (main, or the webhook process), opening the gate as soon
	 * as it is gone: the inserts it left held then fail, so an execution it had not started never
	 * appears. Returns what the control answered, and when the new process was ready.
	 */
	async function killAndRestart(
		route: string,
		oldPid: number,
		params: Record<string, number> = {},
	): Promise<Restarted & { readyAt: number }> {
		const restarting = h.control(route, params);
		restarting.catch(() => undefined); // awaited below; its failure is reported there
		await eventually(
			() => pidAlive(oldPid),
			(alive) => !alive,
			{ timeoutMs: 30_000, everyMs: 100 },
		);
		await gate.open();
		const fault = (await restarting) as unknown as Restarted;
		expect(fault.oldPid).toBe(oldPid);
		expect(fault.oldExit.signal).toBe('SIGKILL');
		expect(pidAlive(oldPid)).toBe(false);
		return { ...fault, readyAt: Date.now() };
	}

	/** Per event: the effects (calls committed), the steps started (calls received) and the calls the kill cut. */
	const perEvent = (keys: string[]) =>
		Object.fromEntries(
			keys.map((key) => [key, { effects: api.calls(key), stepsStarted: api.arrivals(key), abandoned: api.abandoned(key) }]),
		);

	/** The finished executions of `workflowId` since `mark` that ran `key` (the trigger's item names it): [mode, status] each. */
	const runsOf = async (workflowId: string, mark: number, key: string) =>
		(await h.executions(workflowId, mark))
			.filter((run: Execution) => outputItem(run, TRIGGER.node)?.idempotency?.key === key)
			.map((run) => [run.mode, run.status]);

	test('a step that takes 10 s: 8 events at once from a sender that waits 3 s (Slack), each answered 200 in time, once; one effect each', async () => {
		/** Eight new events at once, each step 10 s; an answer the sender stopped waiting for is null. */
		const burst = async (label: string) => {
			const events = Array.from({ length: 8 }, (_, index) => ({ id: eventId(`${label}_${index}`), type: 'issue.created' }));
			for (const event of events) api.slow(keyOf(retried.workflowId, event.id), 10_000);
			const answers: Array<DeliveryAnswer | null> = await Promise.all(
				events.map(async (event) =>
					h.deliver(retried.url, event, {}, { timeoutMs: SENDER_WAITS_MS }).catch((error: Error) => {
						if (error.name !== 'TimeoutError') throw error;
						return null;
					}),
				),
			);
			return { events, answers };
		};
		// An answer at the end of the run would take the step's 10 s. On a machine starved by the other
		// steps of a CI run, n8n can take more than 3 s to answer anything: a burst with an answer past the
		// wait is sent once more, with new events; Slack's retry of each event it gave up on is then
		// answered 200 (accepted), and every event of both bursts still has one effect.
		const bursts = [await burst('once_slow')];
		const late = bursts[0].events.filter((_, index) => bursts[0].answers[index] === null);
		if (late.length > 0) {
			report('At Once, a burst of 8 with answers past 3 s (sent again with new events)', { late: late.length });
			for (const event of late) expect((await h.deliver(retried.url, event, {}, { timeoutMs: 30_000 })).status).toBe(200);
			bursts.push(await burst('once_slow_again'));
		}
		const { events, answers } = bursts.at(-1)!;
		expect(answers.map((answer) => [answer?.status, answer?.outcome])).toEqual(events.map(() => [200, 'new']));
		expect(answers[0]?.json).toEqual({ accepted: true });
		// A copy of an accepted event, while its run goes on: 200 duplicate, never the run's data.
		const copy = await h.deliver(retried.url, events[0], {}, { timeoutMs: SENDER_WAITS_MS });
		expect([copy.status, copy.outcome, copy.json]).toEqual([200, 'duplicate', { status: 'duplicate' }]);
		const keys = bursts.flatMap((sent) => sent.events.map((event) => keyOf(retried.workflowId, event.id)));
		const effects = await eventually(
			() => keys.map((key) => api.calls(key)),
			(calls) => calls.every((count) => count === 1),
			{ timeoutMs: 60_000 },
		);
		expect(effects).toEqual(keys.map(() => 1));
		const records = await eventually(
			async () => await storedKeys(h, keys),
			(stored) => keys.every((key) => stored[key]?.status === 'completed'),
		);
		expect(keys.map((key) => records[key]?.status)).toEqual(keys.map(() => 'completed'));
	});

	test('a step longer than the lease (12 s, lease 4 s): the run keeps its key while it goes; not run again beside itself', async () => {
		const mark = await h.executionMark();
		const event = { id: eventId('once_long_step'), type: 'order.created' };
		const key = keyOf(shortLease.workflowId, event.id);
		api.slow(key, 12_000);
		expect((await h.deliver(shortLease.url, event, {}, { timeoutMs: SENDER_WAITS_MS })).status).toBe(200);
		const record = await eventually(
			async () => (await storedKeys(h, [key]))[key],
			(stored) => stored?.status === 'completed',
			{ timeoutMs: 40_000 },
		);
		expect(record).toMatchObject({ status: 'completed', attempts: 1 });
		expect([api.arrivals(key), api.calls(key)]).toEqual([1, 1]);
		expect(await h.executions(shortLease.workflowId, mark)).toHaveLength(1);
	});

	test(`a soak: ${SOAK.events} events × ${SOAK.copies} copies, shuffled, 8 at a time, a fifth of the API's calls failing at random: every event one effect, none left undelivered`, async () => {
		const seed = Number(process.env.E2E_SEED ?? Date.now());
		const soak = plan({ label: 'once_soak', events: SOAK.events, minCopies: SOAK.copies, maxCopies: SOAK.copies, seed });
		const keys = soak.eventIds.map((id) => keyOf(retried.workflowId, id));
		// The user's API fails a fifth of its calls, whichever they are: a retry can fail again.
		api.failAtRandom(keys, SOAK.failingShare, seededRandom(seed + 2));
		// The soak proves effects, not answer times (the first test times them): its senders wait 10 s
		// (GitHub's). At Slack's 3 s, an n8n saturated by 8 senders and the runs they start answers past
		// the wait, and each retry adds load: on a slow machine the senders spiral into retrying.
		const run = await deliverAll({
			url: retried.url,
			plan: soak,
			concurrency: 8,
			retry: { firstDelayMs: 500, maxDelayMs: 3000, budgetMs: 90_000, timeoutMs: 10_000 },
		});
		const stats = figures(run);
		report(`At Once soak (${h.topology}), the deliveries`, { ...stats, seed });
		// Every delivery ended 200 (a copy of an accepted event too); a sender's retry after a wait that
		// ran out is answered as a duplicate.
		expect(stats.gaveUp).toBe(0);
		expect(run.deliveries.filter((delivery) => delivery.final.status !== 200)).toEqual([]);
		const retryWindowStarted = Date.now();
		const effects = await eventually(
			() => keys.map((key) => api.calls(key)),
			(calls) => calls.every((count) => count === 1),
			{ timeoutMs: 120_000, everyMs: 500 },
		);
		const retryWindowMs = Date.now() - retryWindowStarted;
		expect(keys.filter((key, index) => effects[index] !== 1)).toEqual([]);
		const records = await eventually(
			async () => await storedKeys(h, keys),
			(stored) => keys.every((key) => stored[key]?.status === 'completed'),
		);
		expect(keys.filter((key) => records[key]?.status !== 'completed')).toEqual([]);
		const failedCalls = keys.map((key) => api.failedAtRandom(key));
		report(`At Once soak (${h.topology}), the runs`, {
			apiCalls: keys.reduce((sum, key) => sum + api.arrivals(key), 0),
			failedAtRandom: failedCalls.reduce((sum, n) => sum + n, 0),
			eventsFailedAtLeastOnce: failedCalls.filter((n) => n > 0).length,
			mostFailuresOfOneEvent: Math.max(...failedCalls),
			attempts: keys.reduce((sum, key) => sum + (records[key]?.attempts ?? 0), 0),
			retryWindowMs,
		});
		// The failures happened (about a fifth of the calls, some 1.25 per event), and each was run again by the package, once:
		// every event's step started once per failed call, plus the one that succeeded.
		expect(failedCalls.reduce((sum, n) => sum + n, 0)).toBeGreaterThan(SOAK.events / 10);
		expect(keys.filter((key) => api.arrivals(key) !== api.failedAtRandom(key) + 1)).toEqual([]);
		await sleep(2000);
		expect(keys.filter((key) => api.calls(key) !== 1)).toEqual([]);
	}, 900_000);

	test('a step that fails twice, then succeeds: the sender saw one 200; three executions; one effect; the key shows three attempts', async () => {
		const mark = await h.executionMark();
		const event = { id: eventId('once_fails_twice'), type: 'order.created' };
		const key = keyOf(retried.workflowId, event.id);
		api.failNext(key, 500, 2);
		const answer = await h.deliver(retried.url, event, {}, { timeoutMs: SENDER_WAITS_MS });
		expect([answer.status, answer.outcome]).toEqual([200, 'new']);
		const executions = await h.waitForExecutions(retried.workflowId, mark, 3, { timeoutMs: 60_000 });
		expect(executions.map((execution) => execution.status)).toEqual(['error', 'error', 'success']);
		// Each run started from the kept event, with the same key and its attempt number.
		expect(executions.map((execution) => outputItem(execution, TRIGGER.node).idempotency.key)).toEqual([key, key, key]);
		expect(executions.map((execution) => outputItem(execution, TRIGGER.node).body)).toEqual([event, event, event]);
		expect(api.calls(key)).toBe(1);
		const record = (await storedKeys(h, [key]))[key];
		expect(record).toMatchObject({ status: 'completed', attempts: 3 });
	});

	test('a step that always fails: dead-lettered after the last attempt, kept with its error; copies still answered 200', async () => {
		const mark = await h.executionMark();
		const event = { id: eventId('once_always_fails'), type: 'order.created' };
		const key = keyOf(deadLettered.workflowId, event.id);
		api.failNext(key, 500, 1000);
		const answer = await h.deliver(deadLettered.url, event, {}, { timeoutMs: SENDER_WAITS_MS });
		expect([answer.status, answer.outcome]).toEqual([200, 'new']);
		const executions = await h.waitForExecutions(deadLettered.workflowId, mark, 2, { timeoutMs: 60_000 });
		expect(executions.map((execution) => execution.status)).toEqual(['error', 'error']);
		const record = await eventually(
			async () => (await storedKeys(h, [key]))[key],
			(stored) => Boolean(stored?.deadLetteredAt),
		);
		expect(record).toMatchObject({ status: 'failed', attempts: 2 });
		expect(record?.deadLetteredAt).toBeTruthy();
		expect(record?.lastError).toMatch(/^Business Step \(call your API\): /);
		// No third run: the retries ended with the last attempt.
		await new Promise((resolve) => setTimeout(resolve, 4000));
		expect(await h.executions(deadLettered.workflowId, mark)).toHaveLength(2);
		// What it is answered, not how fast (the first test times the answers).
		const copy = await h.deliver(deadLettered.url, event, {}, { timeoutMs: 10_000 });
		expect([copy.status, copy.outcome]).toEqual([200, 'duplicate']);
		expect(api.calls(key)).toBe(0);
	});

	if (TOPOLOGY !== 'queue') {
		test('kill -9 of n8n with an event answered but not started, a step in flight and a retry pending: after the restart each event ends with one effect; only the cut call ran twice', async () => {
			const mark = await h.executionMark();
			const unstarted = { id: eventId('once_kill_unstarted'), type: 'order.created' };
			const cut = { id: eventId('once_kill_cut'), type: 'order.created' };
			const pending = { id: eventId('once_kill_pending'), type: 'order.created' };
			const unstartedKey = keyOf(gated.workflowId, unstarted.id);
			const cutKey = keyOf(retried.workflowId, cut.id);
			const pendingKey = keyOf(slowRetry.workflowId, pending.id);
			// Answered 200, then its execution is held before it starts (n8n's insert of its row waits at the gate).
			await gate.close(gated.workflowId);
			expect((await h.deliver(gated.url, unstarted, {}, { timeoutMs: 10_000 })).status).toBe(200);
			expect(
				await eventually(
					() => gate.held(),
					(held) => held === 1,
				),
			).toBe(1);
			api.slow(cutKey, 6000);
			api.failNext(pendingKey, 500, 1);
			const answers = [
				await h.deliver(retried.url, cut, {}, { timeoutMs: 10_000 }),
				await h.deliver(slowRetry.url, pending, {}, { timeoutMs: 10_000 }),
			];
			expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
			// The fault lands when the slow step is working and the other event's first run has failed (its retry due in 4 to 8 s).
			const started = await eventually(
				async () => [api.arrivals(cutKey), (await storedKeys(h, [pendingKey]))[pendingKey]?.status],
				([arrivals, status]) => arrivals === 1 && status === 'failed',
				{ timeoutMs: 30_000 },
			);
			expect(started).toEqual([1, 'failed']);
			// The accepted event had not started: no execution, no call; its key reserved, first attempt.
			expect(await h.executions(gated.workflowId, mark)).toEqual([]);
			expect(api.arrivals(unstartedKey)).toBe(0);
			expect((await storedKeys(h, [unstartedKey]))[unstartedKey]).toMatchObject({ status: 'processing', attempts: 1 });
			const { main } = (await h.control('GET /processes')) as unknown as Processes;
			await killAndRestart('POST /restart-main', main.pid);
			// The unstarted event's and the cut step's leases (20 s) end, then the package runs them; the pending retry runs once n8n is back.
			const keys = [unstartedKey, cutKey, pendingKey];
			const effects = await eventually(
				() => keys.map((key) => api.calls(key)),
				(calls) => calls.every((count) => count === 1),
				{ timeoutMs: 90_000, everyMs: 500 },
			);
			expect(effects).toEqual([1, 1, 1]);
			await sleep(2000);
			const counted = perEvent(keys);
			report('At Once, kill -9 of n8n (one process)', counted);
			// The cut call (received, never committed) is the only step that ran twice; the pending retry's first call failed.
			expect(counted).toEqual({
				[unstartedKey]: { effects: 1, stepsStarted: 1, abandoned: 0 },
				[cutKey]: { effects: 1, stepsStarted: 2, abandoned: 1 },
				[pendingKey]: { effects: 1, stepsStarted: 2, abandoned: 0 },
			});
			expect(api.arrivalKeys(cutKey)).toEqual([cutKey, cutKey]);
			// The unstarted event ran once, started by the package (a trigger run), not by a delivery.
			expect(await runsOf(gated.workflowId, mark, unstartedKey)).toEqual([['trigger', 'success']]);
			const records = await storedKeys(h, keys);
			expect(keys.map((key) => [records[key]?.status, records[key]?.attempts])).toEqual([
				['completed', 2],
				['completed', 2],
				['completed', 2],
			]);
		});
	}

	if (TOPOLOGY === 'queue') {
		test('kill -9 of main, the leader running the retries, down 8 s: retries due while it was down run once after its restart; a retry it had claimed but not started runs after its lease; a step in flight on a worker ends once', async () => {
			const mark = await h.executionMark();
			const claimed = { id: eventId('once_main_claimed'), type: 'order.created' };
			const claimedKey = keyOf(pgGated.workflowId, claimed.id);
			api.failNext(claimedKey, 500, 1);
			expect((await h.deliver(pgGated.url, claimed, {}, { timeoutMs: 10_000 })).status).toBe(200);
			// Its first run fails on a worker; its retry (due 4 to 8 s later) is claimed by main and held at the gate.
			const failed = await eventually(
				async () => (await postgresKeys(h, [claimedKey]))[claimedKey]?.status,
				(status) => status === 'failed',
				{ timeoutMs: 30_000 },
			);
			expect(failed).toBe('failed');
			await gate.close(pgGated.workflowId);
			expect(
				await eventually(
					() => gate.held(),
					(held) => held === 1,
					{ timeoutMs: 30_000 },
				),
			).toBe(1);
			expect((await postgresKeys(h, [claimedKey]))[claimedKey]).toMatchObject({ status: 'processing', attempts: 2 });
			expect((await h.executions(pgGated.workflowId, mark)).map((run) => run.mode)).toEqual(['webhook']);

			const pending = Array.from({ length: 3 }, (_, index) => ({ id: eventId(`once_main_pending_${index}`), type: 'order.created' }));
			const inFlight = { id: eventId('once_main_in_flight'), type: 'order.created' };
			const pendingKeys = pending.map((event) => keyOf(pgPending.workflowId, event.id));
			const inFlightKey = keyOf(pgPending.workflowId, inFlight.id);
			for (const key of pendingKeys) api.failNext(key, 500, 1);
			api.slow(inFlightKey, 8000);
			const answers = await Promise.all(
				[...pending, inFlight].map(async (event) => await h.deliver(pgPending.url, event, {}, { timeoutMs: 10_000 })),
			);
			expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200]);
			const atKill = await eventually(
				async () => await postgresKeys(h, pendingKeys),
				(stored) => pendingKeys.every((key) => stored[key]?.status === 'failed') && api.arrivals(inFlightKey) === 1,
				{ timeoutMs: 30_000 },
			);
			expect(pendingKeys.map((key) => atKill[key]?.status)).toEqual(['failed', 'failed', 'failed']);
			expect(api.arrivals(inFlightKey)).toBe(1);

			const { main } = (await h.control('GET /processes')) as unknown as Processes;
			const killedAt = Date.now();
			const { readyAt } = await killAndRestart('POST /restart-main', main.pid, { downMs: 8000 });
			// Each pending retry was still to come at the kill and fell due while main was down.
			for (const key of pendingKeys) {
				const due = new Date(String(atKill[key]?.nextAttemptAt)).getTime();
				expect([due > killedAt - 2000, due < readyAt]).toEqual([true, true]);
			}
			const keys = [claimedKey, ...pendingKeys, inFlightKey];
			const effects = await eventually(
				() => keys.map((key) => api.calls(key)),
				(calls) => calls.every((count) => count === 1),
				{ timeoutMs: 90_000, everyMs: 500 },
			);
			expect(effects).toEqual(keys.map(() => 1));
			await sleep(2000);
			const counted = perEvent(keys);
			report('At Once, kill -9 of main (queue mode)', counted);
			// Nothing was cut: the workers ran every step to its end; the failed first calls are the only extra steps.
			expect(counted).toEqual({
				[claimedKey]: { effects: 1, stepsStarted: 2, abandoned: 0 },
				...Object.fromEntries(pendingKeys.map((key) => [key, { effects: 1, stepsStarted: 2, abandoned: 0 }])),
				[inFlightKey]: { effects: 1, stepsStarted: 1, abandoned: 0 },
			});
			// Each retry started once: per failed event its first run (a delivery's) and one retry (the package's); one run for the step in flight.
			for (const key of pendingKeys)
				expect(await runsOf(pgPending.workflowId, mark, key)).toEqual([
					['webhook', 'error'],
					['trigger', 'success'],
				]);
			expect(await runsOf(pgPending.workflowId, mark, inFlightKey)).toEqual([['webhook', 'success']]);
			expect(await runsOf(pgGated.workflowId, mark, claimedKey)).toEqual([
				['webhook', 'error'],
				['trigger', 'success'],
			]);
			// The held claim counts as an attempt: first run, the claim main died with, the run after its lease.
			const records = await postgresKeys(h, keys);
			expect(keys.map((key) => [records[key]?.status, records[key]?.attempts])).toEqual([
				['completed', 3],
				...pendingKeys.map(() => ['completed', 2]),
				['completed', 1],
			]);
		});

		test('kill -9 of the n8n webhook process: an event it had answered 200 but not started runs once, started by the package after its lease; a step in flight on a worker ends once', async () => {
			const mark = await h.executionMark();
			const inFlight = { id: eventId('once_webhook_in_flight'), type: 'order.created' };
			const unstarted = { id: eventId('once_webhook_unstarted'), type: 'order.created' };
			const inFlightKey = keyOf(pgPending.workflowId, inFlight.id);
			const unstartedKey = keyOf(pgUnstarted.workflowId, unstarted.id);
			api.slow(inFlightKey, 8000);
			expect((await h.deliver(pgPending.url, inFlight, {}, { timeoutMs: 10_000 })).status).toBe(200);
			await eventually(
				() => api.arrivals(inFlightKey),
				(arrivals) => arrivals === 1,
				{ timeoutMs: 30_000 },
			);
			await gate.close(pgUnstarted.workflowId);
			expect((await h.deliver(pgUnstarted.url, unstarted, {}, { timeoutMs: 10_000 })).status).toBe(200);
			expect(
				await eventually(
					() => gate.held(),
					(held) => held === 1,
				),
			).toBe(1);
			// The accepted event had not started: no execution, no call; its key reserved, first attempt.
			expect(await h.executions(pgUnstarted.workflowId, mark)).toEqual([]);
			expect(api.arrivals(unstartedKey)).toBe(0);
			expect((await postgresKeys(h, [unstartedKey]))[unstartedKey]).toMatchObject({ status: 'processing', attempts: 1 });

			const { webhook } = (await h.control('GET /processes')) as unknown as Processes;
			if (!webhook) throw new Error('queue mode runs no webhook process');
			await killAndRestart('POST /restart-webhook-process', webhook.pid);
			// The sender's copy, to the restarted process: the event was accepted, its copy is a duplicate.
			const copy = await h.deliver(pgUnstarted.url, unstarted, {}, { timeoutMs: 10_000 });
			expect([copy.status, copy.outcome]).toEqual([200, 'duplicate']);
			const keys = [unstartedKey, inFlightKey];
			const effects = await eventually(
				() => keys.map((key) => api.calls(key)),
				(calls) => calls.every((count) => count === 1),
				{ timeoutMs: 90_000, everyMs: 500 },
			);
			expect(effects).toEqual([1, 1]);
			await sleep(2000);
			const counted = perEvent(keys);
			report('At Once, kill -9 of the n8n webhook process (queue mode)', counted);
			expect(counted).toEqual({
				[unstartedKey]: { effects: 1, stepsStarted: 1, abandoned: 0 },
				[inFlightKey]: { effects: 1, stepsStarted: 1, abandoned: 0 },
			});
			expect(await runsOf(pgUnstarted.workflowId, mark, unstartedKey)).toEqual([['trigger', 'success']]);
			const records = await postgresKeys(h, keys);
			expect(keys.map((key) => [records[key]?.status, records[key]?.attempts])).toEqual([
				['completed', 2],
				['completed', 1],
			]);
		});
	}

	if (TOPOLOGY === 'queue') {
		test('kill -9 of the worker running a step: after its lease the package runs the event again on the other worker; one effect', async () => {
			const mark = await h.executionMark();
			const event = { id: eventId('once_worker_kill'), type: 'order.created' };
			const key = keyOf(retried.workflowId, event.id);
			api.slow(key, 8000);
			expect((await h.deliver(retried.url, event, {}, { timeoutMs: 3000 })).status).toBe(200);
			await eventually(
				() => api.arrivals(key),
				(arrivals) => arrivals === 1,
				{ timeoutMs: 30_000 },
			);
			const { rows } = await h.n8nQuery(`SELECT id FROM execution_entity WHERE "workflowId" = $1 AND id > $2 AND status = 'running'`, [
				retried.workflowId,
				mark,
			]);
			const { workers } = (await h.control('GET /processes')) as { workers: Array<{ index: number; logFile: string }> };
			const victim = workers.find((worker) =>
				rows.some((row: { id: number }) => fs.readFileSync(worker.logFile, 'utf8').includes(`Worker started execution ${row.id} `)),
			);
			if (!victim) throw new Error('no worker log names the running execution');
			const killed = (await h.control('POST /kill-worker', { index: victim.index })) as { pid: number; exited: { signal: string | null } };
			expect(killed.exited.signal).toBe('SIGKILL');
			expect(pidAlive(killed.pid)).toBe(false);
			const effects = await eventually(
				() => api.calls(key),
				(calls) => calls === 1,
				{ timeoutMs: 90_000, everyMs: 500 },
			);
			expect(effects).toBe(1);
			expect(api.abandoned(key)).toBe(1);
			const record = await eventually(
				async () => (await storedKeys(h, [key]))[key],
				(stored) => stored?.status === 'completed',
			);
			expect(record).toMatchObject({ status: 'completed', attempts: 2 });
		});
	}
});
