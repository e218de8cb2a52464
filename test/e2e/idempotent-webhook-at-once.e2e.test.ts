// The Idempotent Webhook trigger with Respond: At Once, in a real n8n: the trigger template as a user
// sets it for a sender that waits only seconds (Sentry: 1 s, Slack: 3 s). The business step calls the
// test's API, which can be made slow or fail on demand; every accepted event must end with exactly
// one effect, whatever the sender saw, and the package — not the sender — runs failed events again.
// e2e-tags: single queue
import { harness, eventId, outputItem, type DeliveryAnswer } from '../support/e2e/harness';
import { storedKeys, useWorkerFolders } from '../support/e2e/embedded';
import { publishTrigger, triggerBase, triggerKey, TRIGGER } from '../support/e2e/trigger';
import { startSink, type Sink } from '../support/e2e/sink';
import { eventually } from '../support/e2e/eventually';
import type { NodeChange } from '../support/e2e/workflows';
import { TOPOLOGY } from '../support/e2e/topology';
import { deliverAll, figures, plan, report } from '../support/e2e/provider';
import { pidAlive, sleep } from '../support/stack/childProcesses';
import { startStoppedWorkers } from '../support/e2e/control';
import fs from 'node:fs';

const LEASE_SECONDS = 20;

/** The trigger at version 2 answering At Once, at most `maxAttempts` runs, retrying from `firstRetrySeconds` on (a user's 30 s would outlast a test). */
function atOnce(maxAttempts: number, firstRetrySeconds = 1, leaseSeconds = LEASE_SECONDS): NodeChange {
	return (node) =>
		node.type === TRIGGER.type
			? {
					...node,
					typeVersion: 2,
					parameters: {
						...node.parameters,
						mode: undefined,
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

describe('the Idempotent Webhook trigger, Respond: At Once', () => {
	const h = harness();
	let api: Sink;
	let retried: Awaited<ReturnType<typeof publishTrigger>>;
	let deadLettered: Awaited<ReturnType<typeof publishTrigger>>;
	/** Its retries wait 4 to 8 s: long enough for a kill between a failed run and its retry. */
	let slowRetry: Awaited<ReturnType<typeof publishTrigger>>;
	/** A lease of 4 s, shorter than its step. */
	let shortLease: Awaited<ReturnType<typeof publishTrigger>>;
	/** Version 2 keys each workflow apart. */
	const keyOf = triggerKey;

	beforeAll(async () => {
		await useWorkerFolders(h, 'shared');
		const { baseUrl } = await triggerBase(h);
		api = await startSink();
		retried = await publishTrigger(h, 'at-once', { apiUrl: api.url, baseUrl, change: atOnce(4) });
		deadLettered = await publishTrigger(h, 'at-once-dead', { apiUrl: api.url, baseUrl, change: atOnce(2) });
		slowRetry = await publishTrigger(h, 'at-once-slow-retry', { apiUrl: api.url, baseUrl, change: atOnce(3, 8) });
		shortLease = await publishTrigger(h, 'at-once-short-lease', { apiUrl: api.url, baseUrl, change: atOnce(3, 1, 4) });
		// The first delivery opens the store (and creates its table): a provider's first call pays it once.
		for (const { url } of [retried, deadLettered, slowRetry, shortLease])
			await h.deliver(url, { id: eventId('once_warm'), type: 'e2e.warmup' });
	});
	afterAll(async () => {
		await api?.close();
		if (h.topology === 'queue') await startStoppedWorkers(h.control); // two workers for the next test file
	});

	test('a step that takes 10 s: 8 events at once from a sender that waits 1 s, each answered 200 in time, once; one effect each', async () => {
		const events = Array.from({ length: 8 }, (_, index) => ({ id: eventId(`once_slow_${index}`), type: 'issue.created' }));
		const keys = events.map((event) => keyOf(retried.workflowId, event.id));
		for (const key of keys) api.slow(key, 10_000);
		const answers: DeliveryAnswer[] = await Promise.all(
			events.map(async (event) => await h.deliver(retried.url, event, {}, { timeoutMs: 1000 })),
		);
		expect(answers.map((answer) => [answer.status, answer.outcome])).toEqual(events.map(() => [200, 'new']));
		expect(answers[0].json).toEqual({ accepted: true });
		// A copy of an accepted event, while its run goes on: 200 duplicate, never the run's data.
		const copy = await h.deliver(retried.url, events[0], {}, { timeoutMs: 1000 });
		expect([copy.status, copy.outcome, copy.json]).toEqual([200, 'duplicate', { status: 'duplicate' }]);
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
		expect((await h.deliver(shortLease.url, event, {}, { timeoutMs: 1000 })).status).toBe(200);
		const record = await eventually(
			async () => (await storedKeys(h, [key]))[key],
			(stored) => stored?.status === 'completed',
			{ timeoutMs: 40_000 },
		);
		expect(record).toMatchObject({ status: 'completed', attempts: 1 });
		expect([api.arrivals(key), api.calls(key)]).toEqual([1, 1]);
		expect(await h.executions(shortLease.workflowId, mark)).toHaveLength(1);
	});

	test('a soak: 100 events × 3 copies, shuffled, 8 at a time, a fifth of the steps failing once or twice: every event one effect', async () => {
		const soak = plan({ label: 'once_soak', events: 100, minCopies: 3, maxCopies: 3 });
		const keys = soak.eventIds.map((id) => keyOf(retried.workflowId, id));
		// The user's API has bad moments: a fifth of the events fail their first run, some their second too.
		keys.forEach((key, index) => {
			if (index % 5 === 0) api.failNext(key, 500, 1 + (index % 2));
		});
		const run = await deliverAll({
			url: retried.url,
			plan: soak,
			concurrency: 8,
			retry: { firstDelayMs: 500, maxDelayMs: 3000, budgetMs: 60_000, timeoutMs: 3000 },
		});
		const stats = figures(run);
		report(`At Once soak (${h.topology})`, stats);
		// Every delivery ended 200 (a copy of an accepted event too). Saturated by 8 senders that never
		// pause, n8n answers some after the sender's 3 s: the sender's retry is then a duplicate.
		expect(stats.gaveUp).toBe(0);
		expect(run.deliveries.filter((delivery) => delivery.final.status !== 200)).toEqual([]);
		const effects = await eventually(
			() => keys.map((key) => api.calls(key)),
			(calls) => calls.every((count) => count === 1),
			{ timeoutMs: 120_000, everyMs: 500 },
		);
		expect(keys.filter((key, index) => effects[index] !== 1)).toEqual([]);
		const records = await eventually(
			async () => await storedKeys(h, keys),
			(stored) => keys.every((key) => stored[key]?.status === 'completed'),
		);
		expect(keys.filter((key) => records[key]?.status !== 'completed')).toEqual([]);
		await sleep(2000);
		expect(keys.filter((key) => api.calls(key) !== 1)).toEqual([]);
	});

	test('a step that fails twice, then succeeds: the sender saw one 200; three executions; one effect; the key shows three attempts', async () => {
		const mark = await h.executionMark();
		const event = { id: eventId('once_fails_twice'), type: 'order.created' };
		const key = keyOf(retried.workflowId, event.id);
		api.failNext(key, 500, 2);
		const answer = await h.deliver(retried.url, event, {}, { timeoutMs: 1000 });
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
		const answer = await h.deliver(deadLettered.url, event, {}, { timeoutMs: 1000 });
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
		const copy = await h.deliver(deadLettered.url, event, {}, { timeoutMs: 1000 });
		expect([copy.status, copy.outcome]).toEqual([200, 'duplicate']);
		expect(api.calls(key)).toBe(0);
	});

	if (TOPOLOGY !== 'queue') {
		test('kill -9 of n8n with one step in flight and one retry pending: after the restart both events end with one effect', async () => {
			const cut = { id: eventId('once_kill_cut'), type: 'order.created' };
			const pending = { id: eventId('once_kill_pending'), type: 'order.created' };
			const cutKey = keyOf(retried.workflowId, cut.id);
			const pendingKey = keyOf(slowRetry.workflowId, pending.id);
			api.slow(cutKey, 6000);
			api.failNext(pendingKey, 500, 1);
			const answers = [
				await h.deliver(retried.url, cut, {}, { timeoutMs: 1000 }),
				await h.deliver(slowRetry.url, pending, {}, { timeoutMs: 1000 }),
			];
			expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
			// The fault lands when the slow step is working and the other event's first run has failed (its retry due in 4 to 8 s).
			const started = await eventually(
				async () => [api.arrivals(cutKey), (await storedKeys(h, [pendingKey]))[pendingKey]?.status],
				([arrivals, status]) => arrivals === 1 && status === 'failed',
				{ timeoutMs: 30_000 },
			);
			expect(started).toEqual([1, 'failed']);
			const fault = (await h.control('POST /restart-main')) as { oldPid: number; oldExit: { signal: string | null }; newPid: number };
			expect(fault.oldExit.signal).toBe('SIGKILL');
			expect(pidAlive(fault.oldPid)).toBe(false);
			// The cut step's lease (20 s) ends, then the package runs the event again; the pending retry runs once n8n is back.
			const effects = await eventually(
				() => [api.calls(cutKey), api.calls(pendingKey)],
				(calls) => calls.every((count) => count === 1),
				{ timeoutMs: 90_000, everyMs: 500 },
			);
			expect(effects).toEqual([1, 1]);
			expect(api.abandoned(cutKey)).toBe(1);
			await sleep(2000);
			expect([api.calls(cutKey), api.calls(pendingKey)]).toEqual([1, 1]);
			const records = await storedKeys(h, [cutKey, pendingKey]);
			expect([records[cutKey]?.status, records[pendingKey]?.status]).toEqual(['completed', 'completed']);
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
