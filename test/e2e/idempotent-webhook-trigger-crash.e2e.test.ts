// The Idempotent Webhook trigger (templates/idempotent-webhook-trigger.json) when an n8n process dies
// with kill -9 in the middle of the business step, with a provider that retries every delivery
// until it gets a 2xx. The business step is the user's API (the test's sink), made slow (6 s per
// call) so the kill lands inside it. What lost, doubled, an effect and an abandoned call mean:
// test/support/e2e/crash.ts.
//
// One process: main is killed while it runs the step (its call to the API dies with it); the key
// stays reserved until its lease (20 s here) ends, the restarted main then runs the event again.
// Queue mode: the `n8n webhook` process that received the deliveries is killed (the workers finish
// the step; the retry after its restart is a duplicate), and a worker is killed inside the step (the
// lease ends, the other worker runs the event again). The trigger's lease is 20 s here (300 s in
// the template). One process also: n8n failing to start the execution of a reserved key (its
// database refuses the execution row) fails the key at once, so the retry runs without waiting for
// the lease.
// e2e-tags: single queue
import { harness, eventId } from '../support/e2e/harness';
import { useWorkerFolders } from '../support/e2e/embedded';
import { publishTrigger, triggerBase, triggerKey, triggerKeyStates, withLeaseSeconds } from '../support/e2e/trigger';
import { startSink } from '../support/e2e/sink';
import { eventually } from '../support/e2e/eventually';
import { startStoppedWorkers } from '../support/e2e/control';
import { crashRun, expectExactlyOnce, killWorkerRunning, type KeyState, type Processes, type RestartedProcess } from '../support/e2e/crash';
import { pidAlive } from '../support/stack/childProcesses';
import { TOPOLOGY } from '../support/e2e/topology';

const LEASE_SECONDS = 20;

type Sink = Awaited<ReturnType<typeof startSink>>;
type Trigger = Awaited<ReturnType<typeof publishTrigger>>;
// publishTrigger's options (apiUrl, …), typed from its parameter (which names only the options with a default).
type TriggerOptions = Parameters<typeof publishTrigger>[2];

describe('the Idempotent Webhook trigger: an n8n process killed in the middle of the business step', () => {
	const h = harness();
	let api: Sink;
	let webhook: Trigger;

	beforeAll(async () => {
		// Queue mode: Store Automatic needs no shared folder (the keys are in n8n's database).
		await useWorkerFolders(h, 'own');
		const base = await triggerBase(h);
		api = await startSink();
		webhook = await publishTrigger(h, 'trigger-crash', {
			apiUrl: api.url,
			baseUrl: base.baseUrl,
			change: withLeaseSeconds(LEASE_SECONDS),
		} as TriggerOptions);
	});
	afterAll(async () => {
		await api?.close();
		if (h.topology === 'queue') await startStoppedWorkers(h.control); // two workers for the next test file
	});

	/** The template's events (keys of this file's workflow) through crashRun, on this file's trigger. */
	const crash = <Fault extends object>(label: string, kill: () => Promise<Fault>) =>
		crashRun({ h, api, url: webhook.url, label, keyOf: (id) => triggerKey(webhook.workflowId, id), kill });
	const exactlyOnce = (result: Parameters<typeof expectExactlyOnce>[0]) =>
		expectExactlyOnce(result, api, (keys) => triggerKeyStates(h, keys));

	if (TOPOLOGY !== 'queue') {
		test('kill -9 of main inside the step, main started again: 0 lost, 0 doubled; the cut steps run again after the lease', async () => {
			const result = await crash('main_kill', async () => (await h.control('POST /restart-main')) as RestartedProcess);
			const { fault } = result;
			// The fault happened: the old main died of SIGKILL and is gone, a new one serves.
			expect(fault.oldExit.signal).toBe('SIGKILL');
			expect(pidAlive(fault.oldPid)).toBe(false);
			const { main } = (await h.control('GET /processes')) as Processes;
			expect(main).toMatchObject({ pid: fault.newPid, alive: true });
			const states = await exactlyOnce(result);
			// Every step was cut by the kill (its call abandoned, no effect) and ran once more after the lease:
			// the key's second attempt.
			for (const key of result.keys) {
				expect(result.perEvent[key]).toEqual({ effects: 1, stepsStarted: 2, abandoned: 1 });
				expect(states[key]).toMatchObject({ attempts: 2 });
			}
			// While the crashed run's lease held the key, the provider was told 409, never 200.
			const inProgress = result.run.attempts.filter((a) => a.at >= fault.killedAt && a.status === 409);
			expect(inProgress.every((a) => a.outcome === 'in_progress')).toBe(true);
		});
	}

	if (TOPOLOGY !== 'queue') {
		test('n8n cannot start the execution (its database refuses the execution row): 500, the key failed at once, the retry runs the event once', async () => {
			// The template's lease (300 s): a key left to its lease would answer the retry 409.
			const refused = await publishTrigger(h, 'trigger-nostart', { apiUrl: api.url } as TriggerOptions);
			const name = 'e2e_refuse_execution_row';
			await h.n8nQuery(`CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN RAISE EXCEPTION 'e2e: n8n''s database refuses this execution'; END $$`);
			await h.n8nQuery(
				`CREATE TRIGGER ${name} BEFORE INSERT ON execution_entity FOR EACH ROW WHEN (NEW."workflowId" = '${refused.workflowId}') EXECUTE FUNCTION ${name}()`,
			);
			const event = { id: eventId('nostart'), type: 'order.created' };
			const key = triggerKey(refused.workflowId, event.id);
			const mark = await h.executionMark();
			let first;
			let afterRefusal;
			try {
				first = await h.deliver(refused.url, event);
				afterRefusal = await eventually(
					() => triggerKeyStates(h, [key]),
					(states: Record<string, KeyState>) => states[key]?.status === 'failed',
					{ timeoutMs: 10000 },
				);
			} finally {
				await h.n8nQuery(`DROP TRIGGER IF EXISTS ${name} ON execution_entity`);
				await h.n8nQuery(`DROP FUNCTION IF EXISTS ${name}()`);
			}
			// The fault happened: n8n answered 500 and recorded no execution; the step never ran.
			expect(first.status).toBe(500);
			expect(await h.executions(refused.workflowId, mark)).toEqual([]);
			expect(api.arrivals(key)).toBe(0);
			expect(afterRefusal[key]).toEqual({ status: 'failed', attempts: 1, duplicates: 0 });

			const retry = await h.deliver(refused.url, event);
			expect([retry.status, retry.outcome]).toEqual([200, 'new']);
			expect(api.calls(key)).toBe(1);
			expect(await triggerKeyStates(h, [key])).toEqual({ [key]: { status: 'completed', attempts: 2, duplicates: 0 } });
		});
	}

	if (TOPOLOGY === 'queue') {
		test('kill -9 of the n8n webhook process that received the deliveries, started again: the workers finish the steps; 0 lost, 0 doubled, nothing run twice', async () => {
			const before = (await h.control('GET /processes')) as Processes;
			expect(webhook.url.startsWith(`${before.webhook.url}/`)).toBe(true);
			const result = await crash('webhook_kill', async () => (await h.control('POST /restart-webhook-process')) as RestartedProcess);
			const { fault } = result;
			expect(fault.oldPid).toBe(before.webhook.pid);
			expect(fault.oldExit.signal).toBe('SIGKILL');
			expect(pidAlive(fault.oldPid)).toBe(false);
			const after = (await h.control('GET /processes')) as Processes;
			expect(after.webhook).toMatchObject({ pid: fault.newPid, alive: true, url: before.webhook.url });
			expect(after.workers.every((worker) => worker.alive)).toBe(true);
			const states = await exactlyOnce(result);
			// The executions ran on the workers, which the kill did not touch: each step ran once, to its end.
			for (const key of result.keys) {
				expect(result.perEvent[key]).toEqual({ effects: 1, stepsStarted: 1, abandoned: 0 });
				expect(states[key]).toMatchObject({ attempts: 1 });
			}
		});

		test('kill -9 of the worker running a step: 0 lost, 0 doubled; the cut step runs again on the other worker after the lease', async () => {
			const mark = await h.executionMark();
			const result = await crash('worker_kill', () => killWorkerRunning(h, webhook.workflowId, mark));
			const { fault } = result;
			expect(fault.exited.signal).toBe('SIGKILL');
			expect(pidAlive(fault.pid)).toBe(false);
			const states = await exactlyOnce(result);
			// Steps cut by the kill ran again (stepsStarted 2, the second attempt of the key); the others ran once.
			const cut = result.keys.filter((key) => result.perEvent[key].abandoned > 0);
			expect(cut.length).toBeGreaterThan(0);
			for (const key of result.keys) {
				const again = cut.includes(key);
				expect(result.perEvent[key]).toEqual({ effects: 1, stepsStarted: again ? 2 : 1, abandoned: again ? 1 : 0 });
				expect(states[key]).toMatchObject({ attempts: again ? 2 : 1 });
			}
		});
	}
});
