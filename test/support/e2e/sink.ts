// "Your API" for the embedded webhook template's business step: an HTTP server on 127.0.0.1 that
// counts every call it answered, per event key. The effect of a run is a call the API answered 2xx:
// exactly once per event means exactly one such call per key. A call can be held unanswered (the
// API is still working on it) and then dropped without an answer — what a crash of the caller leaves.
// A key can be made slow: each of its calls works for a while and then commits its effect, and
// answers, only if the caller is still connected (as a database transaction is rolled back when its
// client is gone); `arrivals(key)` counts every call received, committed or not (the business step
// started), `abandoned(key)` those whose caller left before the commit.
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Json } from './workflows';

/** An answered call: its event key, the Idempotency-Key header the template sent, the body. */
export interface SinkCall {
	key: string;
	idempotencyKey: string | null;
	body: Json;
}

/** A held call once it arrived: its key and the Idempotency-Key header it carries. */
export interface HeldCall {
	key: string;
	headerKey: string | undefined;
}

/** The API startSink started. */
export interface Sink {
	url: string;
	/** Calls answered 2xx for one key (the effects). */
	calls: (key: string) => number;
	/** Calls received for one key, whatever became of them (the business step started). */
	arrivals: (key: string) => number;
	/** The Idempotency-Key header of every call received for one key, in order. */
	arrivalKeys: (key: string) => Array<string | null>;
	/** Slow calls for one key whose caller left before the commit: no effect. */
	abandoned: (key: string) => number;
	/** Every later call of `key` works `ms` before committing, and commits only if its caller is still there. */
	slow: (key: string, ms: number) => void;
	/** Every key with its number of effects. */
	keys: () => Record<string, number>;
	total: () => number;
	/** Every answered call in order: { key, idempotencyKey, body }. */
	log: () => SinkCall[];
	/** The next call for `key` is held unanswered; resolves once it arrived. */
	holdNext: (key: string) => Promise<HeldCall>;
	/** Answers the held call as any other (an effect); later calls of the key are answered at once. */
	answerHeld: (key: string) => boolean;
	/** The next `times` calls for `key` fail with `status` (no effect): the user's service having a bad moment. */
	failNext: (key: string, status?: number, times?: number) => void;
	/**
	 * From now on each call of one of `keys` fails with 500 (no effect) when `random()` is below
	 * `fraction`: a service failing a share of its calls, whichever they are. `failedAtRandom(key)`
	 * counts the calls of a key it failed.
	 */
	failAtRandom: (keys: Iterable<string>, fraction: number, random: () => number) => void;
	failedAtRandom: (key: string) => number;
	/** Drops the held call without an answer (no effect); later calls of the key are answered. */
	dropHeld: (key: string) => boolean;
	close: () => Promise<void>;
}

interface Hold {
	waiting: Promise<HeldCall>;
	resolve: (call: HeldCall) => void;
	res: http.ServerResponse | null;
}

/** Starts the API; returns { url, calls(key), arrivals(key), arrivalKeys(key), abandoned(key), slow(key, ms), keys(), total(), log(), holdNext(key), answerHeld(key), dropHeld(key), failNext(key, status, times), failAtRandom(keys, fraction, random), failedAtRandom(key), close() }. */
export async function startSink(): Promise<Sink> {
	const answered = new Map<string, number>(); // key → number of calls answered 2xx
	const arrived = new Map<string, number>(); // key → number of calls received
	const arrivalHeaders = new Map<string, Array<string | null>>(); // key → the Idempotency-Key header of each call received
	const abandonedCalls = new Map<string, number>(); // key → slow calls whose caller left before the commit (no effect)
	const slowKeys = new Map<string, number>(); // key → how long each of its calls works before committing
	const holds = new Map<string, Hold>(); // key → { waiting: Promise, resolve, res } for the next call of that key
	const failures = new Map<string, { status: number; times: number }>(); // key → { status, times }: the next calls of that key are answered with status (no effect)
	let randomFailure: { keys: Set<string>; fraction: number; random: () => number } | null = null;
	const failedRandomly = new Map<string, number>(); // key → calls failed by failAtRandom
	const log: SinkCall[] = []; // every answered call: { key, idempotencyKey (the header the template sends), body }
	const count = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
	let total = 0;
	const idempotencyKeyOf = (req: http.IncomingMessage) => req.headers['idempotency-key'] as string | undefined;
	const commit = (key: string, req: http.IncomingMessage, res: http.ServerResponse, parsed: Json) => {
		total += 1;
		answered.set(key, (answered.get(key) ?? 0) + 1);
		log.push({ key, idempotencyKey: idempotencyKeyOf(req) ?? null, body: parsed });
		res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, eventKey: key, call: answered.get(key) }));
	};
	const server = http.createServer((req, res) => {
		let callerGone = false;
		req.socket.on('close', () => (callerGone = true));
		let body = '';
		req.setEncoding('utf8');
		req.on('data', (chunk) => (body += chunk));
		req.on('end', () => {
			let parsed: Json = {};
			try {
				parsed = JSON.parse(body);
			} catch {
				res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"not json"}');
				return;
			}
			const key = String(parsed.eventKey ?? idempotencyKeyOf(req) ?? '');
			count(arrived, key);
			arrivalHeaders.set(key, [...(arrivalHeaders.get(key) ?? []), idempotencyKeyOf(req) ?? null]);
			const failure = failures.get(key);
			if (failure) {
				failure.times -= 1;
				if (failure.times <= 0) failures.delete(key);
				res.writeHead(failure.status, { 'content-type': 'application/json' }).end('{"error":"the API failed this call"}');
				return;
			}
			if (randomFailure?.keys.has(key) && randomFailure.random() < randomFailure.fraction) {
				count(failedRandomly, key);
				res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"the API failed this call"}');
				return;
			}
			const hold = holds.get(key);
			if (hold && !hold.res) {
				hold.res = res;
				hold.resolve({ key, headerKey: idempotencyKeyOf(req) });
				return; // answered (or dropped) by the test
			}
			const workMs = slowKeys.get(key);
			if (workMs === undefined) {
				commit(key, req, res, parsed);
				return;
			}
			setTimeout(() => {
				if (callerGone || req.socket.destroyed) count(abandonedCalls, key);
				else commit(key, req, res, parsed);
			}, workMs);
		});
	});
	// A connection the test holds must not keep close() waiting.
	const sockets = new Set<Socket>();
	server.on('connection', (socket) => {
		sockets.add(socket);
		socket.on('close', () => sockets.delete(socket));
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	return {
		url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`,
		calls: (key) => answered.get(key) ?? 0,
		arrivals: (key) => arrived.get(key) ?? 0,
		arrivalKeys: (key) => [...(arrivalHeaders.get(key) ?? [])],
		abandoned: (key) => abandonedCalls.get(key) ?? 0,
		slow: (key, ms) => slowKeys.set(key, ms),
		keys: () => Object.fromEntries(answered),
		total: () => total,
		log: () => [...log],
		holdNext: (key) => {
			let resolve!: (call: HeldCall) => void;
			const waiting = new Promise<HeldCall>((r) => (resolve = r));
			holds.set(key, { waiting, resolve, res: null });
			return waiting;
		},
		answerHeld: (key) => {
			const hold = holds.get(key);
			holds.delete(key);
			if (!hold?.res) return false;
			total += 1;
			answered.set(key, (answered.get(key) ?? 0) + 1);
			hold.res
				.writeHead(200, { 'content-type': 'application/json' })
				.end(JSON.stringify({ ok: true, eventKey: key, call: answered.get(key) }));
			return true;
		},
		failNext: (key, status = 500, times = 1) => failures.set(key, { status, times }),
		failAtRandom: (keys, fraction, random) => {
			randomFailure = { keys: new Set(keys), fraction, random };
		},
		failedAtRandom: (key) => failedRandomly.get(key) ?? 0,
		dropHeld: (key) => {
			const hold = holds.get(key);
			holds.delete(key);
			hold?.res?.socket?.destroy();
			return Boolean(hold?.res);
		},
		close: () =>
			new Promise<void>((resolve) => {
				for (const hold of holds.values()) hold.res?.socket?.destroy();
				for (const socket of sockets) socket.destroy();
				server.close(() => resolve());
			}),
	};
}
