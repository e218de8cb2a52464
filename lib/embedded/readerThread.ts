import { Worker } from 'node:worker_threads';

import type { IdempotencyError } from '../errors';
import { classifySqliteError, type LockWait } from './connection';

/**
 * The reads that scan the key table (Get Stats, List Keys) run on a thread of their own with a
 * read-only connection to the file, so a scan of a million keys never holds n8n's event loop.
 * WAL lets that connection read while this process (or another) writes; it sees every
 * transaction committed before the read was sent, and this process's writes commit within their
 * call. One thread per file per process, started on first use, not keeping the process alive
 * while idle.
 *
 * The thread's code is plain JavaScript given as text, so the built package and the TypeScript
 * sources under test run the same code. Its busy wait blocks only that thread, so it may be the
 * whole lock wait.
 */
const READER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { DatabaseSync } = require('node:sqlite');
const db = new DatabaseSync(workerData.file, { readOnly: true });
const prepared = new Map();
let busyWaitMs;
parentPort.on('message', ({ id, sql, parameters, rows, lockWaitMs }) => {
	try {
		if (lockWaitMs !== busyWaitMs) {
			db.exec('pragma busy_timeout = ' + Math.max(0, Math.floor(Number(lockWaitMs) || 0)));
			busyWaitMs = lockWaitMs;
		}
		let statement = prepared.get(sql);
		if (!statement) {
			statement = db.prepare(sql);
			prepared.set(sql, statement);
		}
		parentPort.postMessage({ id, result: rows === 'one' ? statement.get(parameters) : statement.all(parameters) });
	} catch (error) {
		parentPort.postMessage({ id, error: { message: String(error?.message ?? error), code: error?.code, errcode: error?.errcode, errstr: error?.errstr } });
	}
});
`;

type Row = Record<string, unknown>;

interface Pending {
	resolve(result: unknown): void;
	reject(error: IdempotencyError): void;
	wait: LockWait;
}

interface Reader {
	worker: Worker;
	pending: Map<number, Pending>;
}

const readers = new Map<string, Reader>();
let nextRequestId = 1;

/** All rows of a read-only statement, read on the file's reader thread. */
export function readAllOffThread(file: string, sql: string, parameters: Record<string, unknown>, wait: LockWait): Promise<Row[]> {
	return request(file, sql, parameters, 'all', wait) as Promise<Row[]>;
}

/** The first row of a read-only statement (undefined when none), read on the file's reader thread. */
export function readOneOffThread(file: string, sql: string, parameters: Record<string, unknown>, wait: LockWait): Promise<Row | undefined> {
	return request(file, sql, parameters, 'one', wait) as Promise<Row | undefined>;
}

function request(file: string, sql: string, parameters: Record<string, unknown>, rows: 'all' | 'one', wait: LockWait): Promise<unknown> {
	const reader = readerFor(file);
	const id = nextRequestId++;
	return new Promise((resolve, reject) => {
		reader.pending.set(id, { resolve, reject, wait });
		// A read in flight keeps the process alive until its answer; an idle thread does not.
		if (reader.pending.size === 1) reader.worker.ref();
		reader.worker.postMessage({ id, sql, parameters, rows, lockWaitMs: wait.lockWaitMs });
	});
}

function readerFor(file: string): Reader {
	const known = readers.get(file);
	if (known) return known;
	const worker = new Worker(READER_SOURCE, { eval: true, workerData: { file } });
	worker.unref();
	const reader: Reader = { worker, pending: new Map() };
	readers.set(file, reader);
	worker.on('message', ({ id, result, error }: { id: number; result?: unknown; error?: Row }) => {
		const pending = reader.pending.get(id);
		if (!pending) return;
		reader.pending.delete(id);
		if (reader.pending.size === 0) worker.unref();
		if (error) pending.reject(classifySqliteError(Object.assign(new Error(String(error.message)), error), file, pending.wait.operation));
		else pending.resolve(result);
	});
	// A thread that fails to start (the file cannot be opened) or dies fails its reads; the next read starts a new one.
	const failAll = (cause: unknown) => {
		if (readers.get(file) === reader) readers.delete(file);
		for (const pending of reader.pending.values()) pending.reject(classifySqliteError(cause, file, pending.wait.operation));
		reader.pending.clear();
	};
	worker.on('error', failAll);
	worker.on('exit', (code) => failAll(new Error(`the embedded store's reader thread stopped (exit code ${code})`)));
	return reader;
}

/** Stops every reader thread of this process (tests, shutdown); the next read starts a new one. */
export function stopReaderThreads(): void {
	for (const [file, reader] of readers) {
		readers.delete(file);
		void reader.worker.terminate();
	}
}
