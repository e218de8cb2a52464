import { Worker } from 'node:worker_threads';

import type { IdempotencyError } from '../../errors';
import type { LockWait } from './connection';
import { classifySqliteError } from './errors';

/**
 * The store's work that need not hold n8n's event loop runs on a thread of its own, one per file
 * per process, started on first use and not keeping the process alive while idle:
 *
 * - Reads that scan the key table (Get Stats, List Keys), on a read-only connection. WAL lets it
 *   read while this process (or another) writes; it sees every transaction committed before the
 *   read was sent, and this process's writes commit within their call.
 * - WAL checkpoints (copying committed pages from the WAL back into the file, then its fsync),
 *   asked for after writes. SQLite would otherwise run one inside the commit that passes 1,000
 *   WAL pages, on the event loop's thread. A checkpoint never changes what is committed.
 *
 * The thread's code is plain JavaScript given as text, so the built package and the TypeScript
 * sources under test run the same code. Its busy wait blocks only that thread, so it may be the
 * whole lock wait.
 */
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { DatabaseSync } = require('node:sqlite');
const reader = new DatabaseSync(workerData.file, { readOnly: true });
let checkpointer;
const prepared = new Map();
let busyWaitMs;
function read({ sql, parameters, rows, lockWaitMs }) {
	if (lockWaitMs !== busyWaitMs) {
		reader.exec('pragma busy_timeout = ' + Math.max(0, Math.floor(Number(lockWaitMs) || 0)));
		busyWaitMs = lockWaitMs;
	}
	let statement = prepared.get(sql);
	if (!statement) {
		statement = reader.prepare(sql);
		prepared.set(sql, statement);
	}
	return rows === 'one' ? statement.get(parameters) : statement.all(parameters);
}
function checkpoint() {
	if (!checkpointer) {
		checkpointer = new DatabaseSync(workerData.file);
		// The copy into the file is synced before the WAL is reused, as the store's own connection would.
		checkpointer.exec('pragma synchronous = full');
	}
	// PASSIVE: copies what no reader still needs, waits for nobody; what is left goes next time.
	return checkpointer.prepare('pragma wal_checkpoint(passive)').get();
}
parentPort.on('message', (message) => {
	try {
		parentPort.postMessage({ id: message.id, result: message.checkpoint ? checkpoint() : read(message) });
	} catch (error) {
		parentPort.postMessage({ id: message.id, error: { message: String(error?.message ?? error), code: error?.code, errcode: error?.errcode, errstr: error?.errstr } });
	}
});
`;

/** At most one checkpoint per file and process in this many milliseconds. */
export const CHECKPOINT_INTERVAL_MS = 100;

type Row = Record<string, unknown>;

interface Pending {
	resolve(result: unknown): void;
	reject(error: IdempotencyError): void;
	operation: LockWait['operation'];
}

interface StoreThread {
	worker: Worker;
	pending: Map<number, Pending>;
	checkpoint: { running: boolean; again: boolean; lastStarted: number; timer?: NodeJS.Timeout };
}

const threads = new Map<string, StoreThread>();
let nextRequestId = 1;

/** All rows of a read-only statement, read on the file's thread. */
export function readAllOffThread(file: string, sql: string, parameters: Record<string, unknown>, wait: LockWait): Promise<Row[]> {
	return send(file, { sql, parameters, rows: 'all', lockWaitMs: wait.lockWaitMs }, wait.operation) as Promise<Row[]>;
}

/** The first row of a read-only statement (undefined when none), read on the file's thread. */
export function readOneOffThread(file: string, sql: string, parameters: Record<string, unknown>, wait: LockWait): Promise<Row | undefined> {
	return send(file, { sql, parameters, rows: 'one', lockWaitMs: wait.lockWaitMs }, wait.operation) as Promise<Row | undefined>;
}

/**
 * A checkpoint of `file` on its thread now, resolved when it has ended: the WAL's committed pages
 * copied into the file and synced (the WAL itself synced first). Fails like a read of the file.
 */
export async function checkpointNow(file: string, operation: LockWait['operation']): Promise<void> {
	const state = threadFor(file).checkpoint;
	state.lastStarted = Date.now();
	await send(file, { checkpoint: true }, operation);
}

/**
 * After a write to `file`: a checkpoint on its thread, at most one running and one every
 * CHECKPOINT_INTERVAL_MS. A failed checkpoint is left to the next one (or to SQLite's own, which the
 * store's connection keeps as a backstop at a higher threshold).
 */
export function checkpointSoon(file: string): void {
	const state = threadFor(file).checkpoint;
	// Writes during a running checkpoint are copied by one more after it.
	if (state.running) state.again = true;
	if (state.running || state.timer) return;
	const start = () => {
		state.timer = undefined;
		const thread = threads.get(file);
		if (!thread || thread.checkpoint !== state) return;
		state.running = true;
		state.again = false;
		state.lastStarted = Date.now();
		send(file, { checkpoint: true }, 'schema')
			.catch(() => undefined)
			.finally(() => {
				state.running = false;
				// Not after the thread was stopped: closing the store ends its checkpoints too.
				if (state.again && threads.get(file)?.checkpoint === state) checkpointSoon(file);
			});
	};
	const wait = state.lastStarted + CHECKPOINT_INTERVAL_MS - Date.now();
	if (wait <= 0) start();
	else {
		state.timer = setTimeout(start, wait);
		state.timer.unref();
	}
}

function send(file: string, message: Row, operation: LockWait['operation']): Promise<unknown> {
	const thread = threadFor(file);
	const id = nextRequestId++;
	return new Promise((resolve, reject) => {
		thread.pending.set(id, { resolve, reject, operation });
		// Work in flight keeps the process alive until its answer; an idle thread does not.
		if (thread.pending.size === 1) thread.worker.ref();
		thread.worker.postMessage({ ...message, id });
	});
}

function threadFor(file: string): StoreThread {
	const known = threads.get(file);
	if (known) return known;
	const worker = new Worker(THREAD_SOURCE, { eval: true, workerData: { file } });
	worker.unref();
	const thread: StoreThread = { worker, pending: new Map(), checkpoint: { running: false, again: false, lastStarted: 0 } };
	threads.set(file, thread);
	worker.on('message', ({ id, result, error }: { id: number; result?: unknown; error?: Row }) => {
		const pending = thread.pending.get(id);
		if (!pending) return;
		thread.pending.delete(id);
		if (thread.pending.size === 0) worker.unref();
		if (error) pending.reject(classifySqliteError(Object.assign(new Error(String(error.message)), error), file, pending.operation));
		else pending.resolve(result);
	});
	// A thread that fails to start (the file cannot be opened) or dies fails its work; the next call starts a new one.
	const failAll = (cause: unknown) => {
		if (threads.get(file) === thread) threads.delete(file);
		clearTimeout(thread.checkpoint.timer);
		for (const pending of thread.pending.values()) pending.reject(classifySqliteError(cause, file, pending.operation));
		thread.pending.clear();
	};
	worker.on('error', failAll);
	worker.on('exit', (code) => failAll(new Error(`the embedded store's background thread stopped (exit code ${code})`)));
	return thread;
}

/**
 * Threads whose file was replaced at its path: given no more work, and left running rather than
 * stopped, since stopping closes their connections to the old file, and SQLite's last close deletes
 * the WAL by its name, which now belongs to the new file.
 */
const retiredThreads: StoreThread[] = [];

/** After `file` was replaced at its path: the next read or checkpoint starts a thread on the new file. */
export function retireStoreThread(file: string): void {
	const thread = threads.get(file);
	if (!thread) return;
	threads.delete(file);
	clearTimeout(thread.checkpoint.timer);
	thread.checkpoint.timer = undefined;
	retiredThreads.push(thread);
}

/** Stops every store thread of this process (tests, shutdown); the next call starts a new one. */
export function stopStoreThreads(): void {
	for (const [file, thread] of threads) {
		threads.delete(file);
		clearTimeout(thread.checkpoint.timer);
		void thread.worker.terminate();
	}
}
