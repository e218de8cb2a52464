// An n8n process killed with kill -9 while the trigger's business steps run, with a provider that
// retries every delivery until it gets a 2xx. The business step is the user's API (the test's sink),
// made slow so the kill lands inside it; the API commits a call's effect, and answers it, only if
// its caller is still connected at the end, as a database transaction is rolled back when its client
// is gone.
//
// Per event:
// - an effect is a call the API committed (`api.calls(key)`);
// - lost: the provider stopped delivering the event (it got a 2xx, or gave up) and the API has no
//   effect for it;
// - doubled: the API has more than one effect for it.
// A call that arrived but was not committed (its caller died: `api.abandoned(key)`) is a business
// step started again after the crash; it is counted and reported, and would be a second effect at
// an API that commits on arrival unless it refuses the repeat by the Idempotency-Key header the
// template sends (every call of an event carries the same one: checked by expectExactlyOnce).
import fs from 'node:fs';
import { eventId, type Harness } from './harness';
import { deliverAll, figures, recoveryMs, report, type ProviderRun } from './provider';
import { eventually } from './eventually';
import type { Sink } from './sink';
import { sleep } from '../stack/childProcesses';

/** How a killed process exited (what the stack's control answers). */
export interface Exit {
	signal: string | null;
}
/** What POST /restart-main and POST /restart-webhook-process answer. */
export interface RestartedProcess {
	oldPid: number;
	oldExit: Exit;
	newPid: number;
}
/** What POST /kill-worker answers, with the index of the worker killed. */
export interface KilledWorker {
	pid: number;
	exited: Exit;
	index: number;
}
/** The n8n processes of the stack (GET /processes). */
export interface Processes {
	main: { pid: number; alive: boolean };
	webhook: { pid: number; alive: boolean; url: string };
	workers: Array<{ index: number; alive: boolean; logFile: string }>;
}

/** A key's state as a test reads it from its store; null when absent. */
export type KeyState = { status: string; attempts: number } | null;

/** One event's figures at the API. */
export interface EventFigures {
	effects: number;
	stepsStarted: number;
	abandoned: number;
}

export interface CrashRun<Fault> {
	keys: string[];
	run: ProviderRun;
	stats: ReturnType<typeof figures>;
	fault: Fault & { killedAt: number };
	lost: string[];
	doubled: string[];
	perEvent: Record<string, EventFigures>;
}

export interface CrashRunOptions<Fault> {
	h: Harness;
	api: Sink;
	/** The trigger's URL. */
	url: string;
	label: string;
	/** The key the trigger gives an event id (evt:…, or wf:<workflow>:evt:… where keys are scoped per workflow). */
	keyOf: (id: string) => string;
	/** Runs once every event's step has started; its answer proves the fault happened. */
	kill: () => Promise<Fault>;
	events?: number;
	copies?: number;
	stepMs?: number;
}

/** `events` slow events, each delivered `copies` times at once, retried until a 2xx; `kill` runs once every event's step has started. */
export async function crashRun<Fault extends object>({
	h,
	api,
	url,
	label,
	keyOf,
	kill,
	events = 3,
	copies = 2,
	stepMs = 6000,
}: CrashRunOptions<Fault>): Promise<CrashRun<Fault>> {
	const ids = Array.from({ length: events }, (_, i) => eventId(`${label}_${i}`));
	const keys = ids.map(keyOf);
	for (const key of keys) api.slow(key, stepMs);
	const deliveries = ids.flatMap((id) =>
		Array.from({ length: copies }, () => ({ eventId: id, forged: false, body: { id, type: 'order.created' } })),
	);
	const killer = (async () => {
		const deadline = Date.now() + 60000;
		while (!keys.every((key) => api.arrivals(key) >= 1)) {
			if (Date.now() > deadline)
				throw new Error(`the business steps never started: ${JSON.stringify(keys.map((key) => api.arrivals(key)))}`);
			await sleep(100);
		}
		const killedAt = Date.now();
		return { killedAt, ...(await kill()) };
	})();
	const run = await deliverAll({
		url,
		plan: { eventIds: ids, deliveries },
		concurrency: deliveries.length,
		retry: { firstDelayMs: 500, maxDelayMs: 3000, budgetMs: 240000 },
	});
	const fault = await killer;
	// A slow call still working when the provider got its last 2xx would commit later: wait for every call to end.
	await eventually(
		() => keys.map((key) => api.arrivals(key) - api.calls(key) - api.abandoned(key)),
		(open: number[]) => open.every((n) => n === 0),
		{ timeoutMs: stepMs * 3 },
	);
	const perEvent = Object.fromEntries(
		keys.map((key) => [key, { effects: api.calls(key), stepsStarted: api.arrivals(key), abandoned: api.abandoned(key) }]),
	);
	const lost = keys.filter((key) => api.calls(key) === 0);
	const doubled = keys.filter((key) => api.calls(key) > 1);
	const stats = figures(run);
	report(`trigger ${label} (${h.topology})`, {
		...stats,
		perEvent,
		lost: lost.length,
		doubled: doubled.length,
		recoveryMsAfterKill: recoveryMs(run, fault.killedAt),
	});
	return { keys, run, stats, fault, lost, doubled, perEvent };
}

/**
 * 0 lost, 0 doubled, every delivery answered 2xx in the end, every key completed (read by
 * `readStates`), every call with the event's Idempotency-Key. Returns the keys' states.
 */
export async function expectExactlyOnce(
	{ keys, stats, lost, doubled }: Pick<CrashRun<object>, 'keys' | 'stats' | 'lost' | 'doubled'>,
	api: Sink,
	readStates: (keys: string[]) => Promise<Record<string, KeyState>>,
): Promise<Record<string, KeyState>> {
	expect(stats.gaveUp).toBe(0);
	expect({ lost, doubled }).toEqual({ lost: [], doubled: [] });
	const states = await readStates(keys);
	for (const key of keys) {
		expect(states[key]).toMatchObject({ status: 'completed' });
		expect(api.arrivalKeys(key).every((header) => header === key)).toBe(true);
	}
	return states;
}

/** Kills with SIGKILL the worker whose log names a running execution of `workflowId` after `mark`. */
export async function killWorkerRunning(h: Harness, workflowId: string, mark: number): Promise<KilledWorker> {
	const { rows } = await h.n8nQuery(`SELECT id FROM execution_entity WHERE "workflowId" = $1 AND id > $2 AND status = 'running'`, [
		workflowId,
		mark,
	]);
	const { workers } = (await h.control('GET /processes')) as Processes;
	const running: string[] = rows.map((row: { id: number }) => String(row.id));
	const victim = workers.find((w) => running.some((id) => fs.readFileSync(w.logFile, 'utf8').includes(`Worker started execution ${id} `)));
	if (!victim) throw new Error(`no worker log names the running executions ${running.join(', ')}`);
	const killed = (await h.control('POST /kill-worker', { index: victim.index })) as Omit<KilledWorker, 'index'>;
	return { ...killed, index: victim.index };
}
