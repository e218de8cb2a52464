import { Worker } from 'node:worker_threads';

import type { IdempotencyError } from '../../errors';
import type { LockWait } from './connection';
import { classifySqliteError } from './errors';

/**
 * The store's work that need not hold n8n's event loop runs on threads of its own, two per file
 * per process (one for reads and checkpoints, one for writes, so that a write never waits behind a
 * scan or a checkpoint), each started on first use and not keeping the process alive while idle:
 *
 * - Reads that scan the key table (Get Stats, List Keys), on a read-only connection. WAL lets it
 *   read while this process (or another) writes; it sees every transaction committed before the
 *   read was sent, and this process's writes have committed when their call answers.
 * - WAL checkpoints (copying committed pages from the WAL back into the file, then its fsync),
 *   asked for after writes, on the reads thread's read-write connection. SQLite would otherwise run
 *   one inside the commit that passes 1,000 WAL pages, on the event loop's thread. A checkpoint
 *   never changes what is committed.
 * - Writes too large to run on the event loop (a reservation of many keys, a settle of many items,
 *   Delete Expired Keys' chunks), each one whole transaction on the writes thread's read-write
 *   connection: `BEGIN IMMEDIATE`, the statement (and the one after it, for a settle), the check
 *   that the path still names the store's file, the commit (its fsync included). To every other
 *   connection, in this process or another, it is a transaction like any other: all or nothing,
 *   serialised by the file's write lock.
 *
 * Both threads run the same code, plain JavaScript given as text, so the built package and the
 * TypeScript sources under test run the same code. Its busy wait blocks only its thread, so it may
 * be the whole lock wait.
 */
const THREAD_SOURCE = `
const { statSync } = require('node:fs');
const { parentPort, workerData } = require('node:worker_threads');
const { DatabaseSync } = require('node:sqlite');
let reader;
let writer;
let writerIdentity;
const prepared = new Map();
const preparedForWrites = new Map();
let busyWaitMs;
let writerBusyWaitMs;
function busyWait(db, ms) {
	db.exec('pragma busy_timeout = ' + Math.max(0, Math.floor(Number(ms) || 0)));
}
function read({ sql, parameters, rows, lockWaitMs }) {
	reader ??= new DatabaseSync(workerData.file, { readOnly: true });
	if (lockWaitMs !== busyWaitMs) {
		busyWait(reader, lockWaitMs);
		busyWaitMs = lockWaitMs;
	}
	let statement = prepared.get(sql);
	if (!statement) {
		statement = reader.prepare(sql);
		prepared.set(sql, statement);
	}
	return rows === 'one' ? statement.get(parameters) : statement.all(parameters);
}
/** The device and inode the store file's path names now ('' when nothing is there). */
function identityNow() {
	const stats = statSync(workerData.file, { bigint: true, throwIfNoEntry: false });
	return stats ? stats.dev + ':' + stats.ino : '';
}
/** The read-write connection, set up as the store's own (connection.ts): synced commits, the same WAL bounds. */
function writerConnection() {
	if (!writer) {
		writer = new DatabaseSync(workerData.file);
		// What this connection opened: its writes are refused unless it is the store connection's file.
		writerIdentity = identityNow();
		writer.exec('pragma synchronous = full');
		writer.exec('pragma journal_size_limit = ' + workerData.journalSizeLimitBytes);
		writer.exec('pragma wal_autocheckpoint = ' + workerData.backstopCheckpointPages);
	}
	return writer;
}
function checkpoint() {
	// PASSIVE: copies what no reader still needs, waits for nobody; what is left goes next time.
	// The copy into the file is synced before the WAL is reused (synchronous FULL or NORMAL alike).
	return writerConnection().prepare('pragma wal_checkpoint(passive)').get();
}
function run(db, { sql, parameters, rows }) {
	let statement = preparedForWrites.get(sql);
	if (!statement) {
		statement = db.prepare(sql);
		if (rows === 'arrays' && typeof statement.setReturnArrays === 'function') statement.setReturnArrays(true);
		preparedForWrites.set(sql, statement);
	}
	if (rows === 'changes') return { changes: Number(statement.run(parameters).changes) };
	return { rows: statement.all(parameters), columns: typeof statement.setReturnArrays === 'function' ? statement.columns().map((column) => column.name) : null };
}
// The write transaction left open between two messages ({ transaction, synced }), or null.
let open = null;
function endTransaction(db, commit) {
	const { synced } = open;
	open = null;
	try {
		if (commit) db.exec('commit');
	} finally {
		if (db.isTransaction) db.exec('rollback');
		if (!synced) db.exec('pragma synchronous = full');
	}
}
/**
 * A write transaction: BEGIN IMMEDIATE (waiting for the write lock up to lockWaitMs), the
 * statement, then (under the write lock) the check that the path still names the file the store
 * opened (identity), then the commit; anything else rolls it back. synced false commits without
 * the WAL's fsync (the checkpoint after it syncs it). Rows come back as arrays with their column
 * names where this Node can.
 * A transaction may span two messages: the first (begin: true, finish absent) leaves it open after
 * its statement; the second (the same transaction, finish 'commit' or 'rollback', a statement or
 * none) ends it. Meanwhile nothing else runs on this connection (see the queue below).
 */
function write(message) {
	const db = writerConnection();
	const { transaction, begin, finish, synced, identity, lockWaitMs } = message;
	// A message without a statement (the end of a transaction) answers {}, or { replaced: true }.
	let result = {};
	if (begin) {
		if (lockWaitMs !== writerBusyWaitMs) {
			busyWait(db, lockWaitMs);
			writerBusyWaitMs = lockWaitMs;
		}
		if (!synced) db.exec('pragma synchronous = normal');
		try {
			db.exec('begin immediate');
		} catch (error) {
			if (!synced) db.exec('pragma synchronous = full');
			throw error;
		}
		open = { transaction, synced };
	} else if (!open || open.transaction !== transaction) {
		throw new Error('no open write transaction ' + transaction + ' on the store thread');
	}
	try {
		if (message.sql !== undefined) result = run(db, message);
		if (!finish) return result;
		if (finish === 'commit' && (writerIdentity !== identity || identityNow() !== identity)) {
			endTransaction(db, false);
			return { replaced: true };
		}
		endTransaction(db, finish === 'commit');
	} catch (error) {
		if (open) endTransaction(db, false);
		throw error;
	}
	return result;
}
function answer(message) {
	try {
		parentPort.postMessage({ id: message.id, result: message.write ? write(message) : message.checkpoint ? checkpoint() : read(message) });
	} catch (error) {
		parentPort.postMessage({ id: message.id, error: { message: String(error?.message ?? error), code: error?.code, errcode: error?.errcode, errstr: error?.errstr } });
	}
}
// While a write transaction is open, the other work of the read-write connection (other writes,
// checkpoints) waits here; reads go on, on their own connection. (The store sends writes to one
// thread, and reads and checkpoints to another.)
const waiting = [];
parentPort.on('message', (message) => {
	const needsWriter = message.write || message.checkpoint;
	if (needsWriter && open && message.transaction !== open.transaction) {
		waiting.push(message);
		return;
	}
	answer(message);
	while (!open && waiting.length > 0) answer(waiting.shift());
});
`;

/**
 * The thread's read-write connection is set up as the store's own (connection.ts): WAL files
 * truncated back to this size after a checkpoint, and SQLite's own checkpoint inside a commit kept
 * only as a backstop at this many WAL pages (the thread checkpoints after writes).
 */
export const JOURNAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;
export const BACKSTOP_CHECKPOINT_PAGES = 10_000;

/** At most one checkpoint per file and process in this many milliseconds. */
export const CHECKPOINT_INTERVAL_MS = 100;

type Row = Record<string, unknown>;

interface Pending {
	resolve(result: unknown): void;
	reject(error: IdempotencyError): void;
	operation: LockWait['operation'];
}

interface StoreThread {
	file: string;
	worker: Worker;
	pending: Map<number, Pending>;
	checkpoint: { running: boolean; again: boolean; lastStarted: number; timer?: NodeJS.Timeout };
	/** Writes sent to the thread and not answered yet, each settled (never rejected) when answered. */
	writes: Set<Promise<void>>;
	/** Why the thread stopped (it answers nothing more), once it has. */
	stopped?: unknown;
}

// One thread per file for reads and checkpoints, and one for writes: a write never waits behind a
// checkpoint or a scan (SQLite's calls block their thread), nor they behind it.
const threads = new Map<string, StoreThread>();
const writerThreads = new Map<string, StoreThread>();
let nextRequestId = 1;

/** All rows of a read-only statement, read on the file's thread. */
export function readAllOffThread(file: string, sql: string, parameters: Record<string, unknown>, wait: LockWait): Promise<Row[]> {
	return send(file, { sql, parameters, rows: 'all', lockWaitMs: wait.lockWaitMs }, wait.operation) as Promise<Row[]>;
}

/** The first row of a read-only statement (undefined when none), read on the file's thread. */
export function readOneOffThread(file: string, sql: string, parameters: Record<string, unknown>, wait: LockWait): Promise<Row | undefined> {
	return send(file, { sql, parameters, rows: 'one', lockWaitMs: wait.lockWaitMs }, wait.operation) as Promise<Row | undefined>;
}

/** A statement for the thread's read-write connection. */
export interface ThreadStatement {
	sql: string;
	parameters: Record<string, unknown>;
	/** `arrays`: the statement's rows (as arrays with `columns`, where this Node can); `changes`: the rows it changed. */
	rows: 'arrays' | 'changes';
}

/** How a write transaction on the thread runs (see `write` in the thread's code). */
export interface ThreadTransaction {
	/** false: committed without waiting for the WAL's fsync. */
	synced: boolean;
	/** `dev:ino` of the file the store's connection opened: the write is rolled back when the path names another. */
	identity: string;
	lockWaitMs: number;
}

export interface ThreadWriteResult {
	rows?: unknown[];
	/** The column names of `rows` when they are arrays; null: they are objects. */
	columns?: string[] | null;
	changes?: number;
	/** The path named another file than `identity`: nothing was written. */
	replaced?: boolean;
}

let nextTransactionId = 1;

/**
 * Runs `statements`, in order, in one write transaction on `file`'s writer thread, off the event
 * loop; fails like a write of the file. `next`, given their results, may name one more statement for
 * the same transaction (the transaction then stays open on the thread while `next` runs here, and
 * nothing else is written on that connection meanwhile). Answers each statement's result;
 * `replaced` on the last when nothing was written because the path named another file.
 */
export function writeOffThread(
	file: string,
	statements: ThreadStatement[],
	transaction: ThreadTransaction,
	operation: LockWait['operation'],
	next?: (results: ThreadWriteResult[]) => ThreadStatement | undefined,
): Promise<ThreadWriteResult[]> {
	const thread = threadFor(file, writerThreads);
	const id = nextTransactionId++;
	const message = (fields: Row) => ({ ...fields, write: true, transaction: id, identity: transaction.identity });
	const opening = { begin: true, synced: transaction.synced, lockWaitMs: transaction.lockWaitMs };
	// Every message of the transaction goes to this thread, the one holding it open.
	const done = (async () => {
		const results: ThreadWriteResult[] = [];
		for (const [index, statement] of statements.entries()) {
			const last = index === statements.length - 1 && !next;
			const result = (await sendTo(
				thread,
				message({ ...statement, ...(index === 0 ? opening : {}), ...(last ? { finish: 'commit' } : {}) }),
				operation,
			)) as ThreadWriteResult;
			if (last && result.replaced) return [result];
			results.push(result);
		}
		if (!next) return results;
		let after: ThreadStatement | undefined;
		try {
			after = next(results);
		} catch (error) {
			await sendTo(thread, message({ finish: 'rollback' }), operation).catch(() => undefined);
			// As a failure inside a transaction on the store's own connection is reported (connection.ts).
			throw classifySqliteError(error, file, operation);
		}
		const last = (await sendTo(thread, message({ ...after, finish: 'commit' }), operation)) as ThreadWriteResult;
		if (last.replaced) return [last];
		return after ? [...results, last] : results;
	})();
	const settled = done.then(
		() => undefined,
		() => undefined,
	);
	thread.writes.add(settled);
	void settled.then(() => thread.writes.delete(settled));
	return done;
}

/**
 * Settles when the writes this process sent to `file`'s thread so far are answered; undefined when
 * there are none. A write on the store's own connection waits for them instead of polling for the
 * lock they hold.
 */
export function threadWritesAnswered(file: string): Promise<void> | undefined {
	const writes = writerThreads.get(file)?.writes;
	if (!writes || writes.size === 0) return undefined;
	return Promise.all(writes).then(() => undefined);
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
	return sendTo(threadFor(file), message, operation);
}

function sendTo(thread: StoreThread, message: Row, operation: LockWait['operation']): Promise<unknown> {
	const id = nextRequestId++;
	return new Promise((resolve, reject) => {
		// A transaction's second message to a thread that stopped after its first.
		if (thread.stopped !== undefined) return reject(classifySqliteError(thread.stopped, thread.file, operation));
		thread.pending.set(id, { resolve, reject, operation });
		// Work in flight keeps the process alive until its answer; an idle thread does not.
		if (thread.pending.size === 1) thread.worker.ref();
		thread.worker.postMessage({ ...message, id });
	});
}

function threadFor(file: string, pool = threads): StoreThread {
	const known = pool.get(file);
	if (known) return known;
	const worker = new Worker(THREAD_SOURCE, {
		eval: true,
		workerData: { file, journalSizeLimitBytes: JOURNAL_SIZE_LIMIT_BYTES, backstopCheckpointPages: BACKSTOP_CHECKPOINT_PAGES },
	});
	worker.unref();
	const thread: StoreThread = {
		file,
		worker,
		pending: new Map(),
		checkpoint: { running: false, again: false, lastStarted: 0 },
		writes: new Set(),
	};
	pool.set(file, thread);
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
		thread.stopped = cause;
		if (pool.get(file) === thread) pool.delete(file);
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

/** After `file` was replaced at its path: the next read, checkpoint or write starts a thread on the new file. */
export function retireStoreThread(file: string): void {
	for (const pool of [threads, writerThreads]) {
		const thread = pool.get(file);
		if (!thread) continue;
		pool.delete(file);
		clearTimeout(thread.checkpoint.timer);
		thread.checkpoint.timer = undefined;
		retiredThreads.push(thread);
	}
}

/** Stops every store thread of this process (tests, shutdown); the next call starts a new one. */
export function stopStoreThreads(): void {
	for (const pool of [threads, writerThreads]) {
		for (const [file, thread] of pool) {
			pool.delete(file);
			clearTimeout(thread.checkpoint.timer);
			void thread.worker.terminate();
		}
	}
}
