// A webhook provider that delivers like Stripe: many deliveries at once, out of order, the same event
// several times, each attempt signed afresh, and every non-2xx answer (or connection error, or
// timeout) retried with bounded exponential backoff until a 2xx or the retry budget is spent.
// Forged deliveries (a wrong secret) are sent once and not retried: a forger has no retry queue.
// Every attempt is recorded (status, outcome header, latency, time) for the test's figures.
import { stripeSignature } from '../stack/n8nStack';
import { headerValue, requestOnOwnConnection } from '../stack/ownConnection';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** How a delivery is retried: backoff from firstDelayMs doubling up to maxDelayMs, at most maxAttempts or budgetMs; each attempt gives up after timeoutMs. */
export interface RetryOptions {
	firstDelayMs: number;
	maxDelayMs: number;
	maxAttempts: number;
	budgetMs: number;
	timeoutMs: number;
}

export const DEFAULT_RETRY: RetryOptions = { firstDelayMs: 250, maxDelayMs: 4000, maxAttempts: 60, budgetMs: 240000, timeoutMs: 30000 };

/** One delivery of a plan: the event (its body, else a plain one made from the id), forged or genuine. */
export interface Delivery {
	eventId: string;
	forged?: boolean;
	body?: unknown;
}

/** A delivery plan: the deliveries in the order they are sent (the events and seed when made by plan()). */
export interface DeliveryPlan {
	seed?: number;
	eventIds?: string[];
	deliveries: Delivery[];
}

/** What one HTTP attempt got: the status (0: no answer, `error` says why), the outcome header, how long it took and when it started. */
export interface AttemptResult {
	status: number;
	outcome?: string | null;
	error?: string;
	ms: number;
	at: number;
}

/** An attempt as deliverAll records it. */
export interface Attempt extends AttemptResult {
	eventId: string;
	forged: boolean;
	attempt: number;
}

/** A delivery after its last attempt (every delivery is sent at least once: `final` is that attempt's result). */
export interface DeliveryRecord extends Delivery {
	attempts: number;
	final: AttemptResult;
	gaveUp: boolean;
}

/** What deliverAll did: every attempt, every delivery's end, and the time it took. */
export interface ProviderRun {
	attempts: Attempt[];
	deliveries: DeliveryRecord[];
	ms: number;
}

/** Numbers in [0, 1) from a seed, the same for the same seed, so a failing run can be replayed (E2E_SEED). */
export function seededRandom(seed: number): () => number {
	let state = seed >>> 0 || 1;
	return () => {
		state = (state * 1664525 + 1013904223) >>> 0;
		return state / 2 ** 32;
	};
}

/** Fisher–Yates with a seeded generator, so a failing order can be replayed (E2E_SEED). */
function shuffle<T>(items: T[], seed: number): { items: T[]; random: () => number } {
	const random = seededRandom(seed);
	const out = [...items];
	for (let i = out.length - 1; i > 0; i--) {
		const j = Math.floor(random() * (i + 1));
		[out[i], out[j]] = [out[j], out[i]];
	}
	return { items: out, random };
}

/**
 * A delivery plan: `events` distinct events, each delivered between minCopies and maxCopies times
 * (adjusted so the total is `deliveries` when given), shuffled; plus `forged` deliveries of real
 * event ids signed with a wrong secret.
 */
export function plan({
	label,
	events,
	deliveries,
	minCopies = 3,
	maxCopies = 7,
	forged = 0,
	seed = Date.now(),
}: {
	label: string;
	events: number;
	deliveries?: number;
	minCopies?: number;
	maxCopies?: number;
	forged?: number;
	seed?: number;
}): Required<DeliveryPlan> {
	const { random } = shuffle([], seed);
	const ids = Array.from({ length: events }, (_, i) => `evt_${label}_${seed.toString(36)}_${i}`);
	const copies = ids.map(() => minCopies + Math.floor(random() * (maxCopies - minCopies + 1)));
	if (deliveries) {
		// Nudge copies towards the requested total, staying within [minCopies, maxCopies].
		let total = copies.reduce((a, b) => a + b, 0);
		for (let i = 0; total !== deliveries && i < ids.length * (maxCopies - minCopies + 1); i++) {
			const k = i % ids.length;
			if (total < deliveries && copies[k] < maxCopies) {
				copies[k]++;
				total++;
			} else if (total > deliveries && copies[k] > minCopies) {
				copies[k]--;
				total--;
			}
		}
	}
	const list: Delivery[] = [];
	ids.forEach((id, i) => {
		for (let c = 0; c < copies[i]; c++) list.push({ eventId: id, forged: false });
	});
	for (let f = 0; f < forged; f++) list.push({ eventId: ids[Math.floor(random() * ids.length)], forged: true });
	return { seed, eventIds: ids, deliveries: shuffle(list, seed + 1).items };
}

/** One HTTP attempt; never throws: a connection error or timeout is recorded as status 0 with its reason. */
async function attempt(
	url: string,
	eventId: string,
	{ body, forged, timeoutMs }: { body?: unknown; forged?: boolean; timeoutMs: number },
): Promise<AttemptResult> {
	const raw = JSON.stringify(body ?? { id: eventId, type: 'e2e.soak', object: 'event' });
	const signature = stripeSignature(raw, forged ? { secret: 'whsec_forged_by_someone_else' } : {});
	const started = Date.now();
	try {
		const res = await requestOnOwnConnection(url, {
			headers: { 'content-type': 'application/json', 'stripe-signature': signature },
			body: raw,
			timeoutMs,
		});
		return { status: res.status, outcome: headerValue(res.headers, 'x-idempotency-outcome'), ms: Date.now() - started, at: started };
	} catch (error) {
		const failure = error as { name?: string; code?: string };
		const reason = failure.name === 'TimeoutError' ? 'timeout' : (failure.code ?? failure.name);
		return { status: 0, error: reason, ms: Date.now() - started, at: started };
	}
}

/**
 * Sends every delivery of the plan with `concurrency` in flight; each delivery retries until a 2xx
 * (or, for a forged one, sends once). Returns { attempts, deliveries: [{ eventId, forged, attempts,
 * final, gaveUp }], ms }. `url` may be a function (a restarted n8n keeps its port, but a test may move it).
 */
export async function deliverAll({
	url,
	plan: thePlan,
	concurrency = 16,
	retry = {},
	onAttempt = () => {},
}: {
	url: string | (() => string);
	plan: DeliveryPlan;
	concurrency?: number;
	retry?: Partial<RetryOptions>;
	/** Sees every answer; the delivery's next attempt waits for what it returns (a fix made between attempts). */
	onAttempt?: (attempt: Attempt) => void | Promise<void>;
}): Promise<ProviderRun> {
	const options = { ...DEFAULT_RETRY, ...retry };
	const attempts: Attempt[] = [];
	const results: DeliveryRecord[] = [];
	let next = 0;
	const started = Date.now();
	const runOne = async (delivery: Delivery) => {
		// `final` is set by the first attempt, before the record is kept.
		const record: Omit<DeliveryRecord, 'final'> & { final: AttemptResult | null } = {
			...delivery,
			attempts: 0,
			final: null,
			gaveUp: false,
		};
		const deadline = Date.now() + options.budgetMs;
		for (let n = 0; ; n++) {
			const target = typeof url === 'function' ? url() : url;
			const result = await attempt(target, delivery.eventId, {
				body: delivery.body,
				forged: delivery.forged,
				timeoutMs: options.timeoutMs,
			});
			const entry: Attempt = { ...result, eventId: delivery.eventId, forged: Boolean(delivery.forged), attempt: n + 1 };
			attempts.push(entry);
			await onAttempt(entry);
			record.attempts = n + 1;
			record.final = result;
			if (delivery.forged || (result.status >= 200 && result.status < 300)) break;
			if (n + 1 >= options.maxAttempts || Date.now() >= deadline) {
				record.gaveUp = true;
				break;
			}
			const backoff = Math.min(options.maxDelayMs, options.firstDelayMs * 2 ** n);
			await sleep(backoff / 2 + Math.random() * (backoff / 2)); // jitter, as real providers do
		}
		results.push(record as DeliveryRecord);
	};
	const lanes = Array.from({ length: Math.min(concurrency, thePlan.deliveries.length) }, async () => {
		while (next < thePlan.deliveries.length) await runOne(thePlan.deliveries[next++]);
	});
	await Promise.all(lanes);
	return { attempts, deliveries: results, ms: Date.now() - started };
}

export function median(values: number[]): number {
	if (!values.length) return 0;
	const sorted = [...values].sort((a, b) => a - b);
	return sorted[Math.floor(sorted.length / 2)];
}

/** The figures a test prints: deliveries, attempts, retries, answers by status, latency, throughput. */
export function figures(run: {
	ms: number;
	attempts: Array<Pick<AttemptResult, 'status' | 'error' | 'ms'>>;
	deliveries: Array<Pick<DeliveryRecord, 'gaveUp'>>;
}): {
	deliveries: number;
	attempts: number;
	retries: number;
	gaveUp: number;
	byStatus: Record<string, number>;
	maxMs: number;
	medianMs: number;
	seconds: number;
	perSecond: number;
} {
	const byStatus: Record<string, number> = {};
	for (const a of run.attempts) {
		const key = a.status === 0 ? `error:${a.error}` : String(a.status);
		byStatus[key] = (byStatus[key] ?? 0) + 1;
	}
	const latencies = run.attempts.map((a) => a.ms);
	return {
		deliveries: run.deliveries.length,
		attempts: run.attempts.length,
		retries: run.attempts.length - run.deliveries.length,
		gaveUp: run.deliveries.filter((d) => d.gaveUp).length,
		byStatus,
		maxMs: latencies.length ? Math.max(...latencies) : 0,
		medianMs: median(latencies),
		seconds: +(run.ms / 1000).toFixed(1),
		perSecond: +(run.attempts.length / (run.ms / 1000)).toFixed(1),
	};
}

/** ms from `since` until the first 2xx answer to a genuine delivery at or after it (recovery after a fault). */
export function recoveryMs(run: ProviderRun, since: number): number | null {
	const firstOk = run.attempts
		.filter((a) => !a.forged && a.at >= since && a.status >= 200 && a.status < 300)
		.reduce((min, a) => Math.min(min, a.at + a.ms), Infinity);
	return firstOk === Infinity ? null : firstOk - since;
}

export function report(label: string, values: unknown): void {
	process.stderr.write(`[e2e figures] ${label}: ${JSON.stringify(values)}\n`);
}
