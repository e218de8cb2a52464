import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

import { DatabaseError, InvalidConfigurationError, SchemaNewerThanPackageError } from '../../errors';
import { compareVersions } from '../../order/version';
import type { StoreOperation } from '../driver';
import type { SqlSection } from '../sqlText';
import {
	BACKSTOP_CHECKPOINT_PAGES,
	JOURNAL_SIZE_LIMIT_BYTES,
	checkpointNow,
	checkpointSoon,
	retireStoreThread,
	threadWritesAnswered,
	writeOffThread,
	type ThreadStatement,
	type ThreadWriteResult,
} from './backgroundThread';
import { classifySqliteError, EmbeddedStoreBusyError, EmbeddedStoreReplacedError, isBusy, NOTHING_CHANGED } from './errors';
import { preparePrivateFile } from './privateFiles';
import { loadSqlite, type SqliteDatabase, type SqliteStatement } from './sqlite';
import { EMBEDDED_MIGRATIONS, renderEmbeddedSql, renderEmbeddedStatement, type EmbeddedFamily, type EmbeddedStatement } from './statements';
import { assertLocalStorage, realPathOfNearest } from './storageCheck';

/**
 * One SQLite connection per store file per process, shared by every store on that file. Its calls
 * are synchronous: each transaction starts and ends within one call, so no other store call of
 * this process can run inside it, and the shared connection needs no lock of its own. Writes too
 * large to hold the event loop run on the store's background thread, on a connection of its own
 * (writeOnThread).
 */
export interface EmbeddedConnection {
	/** The file's real path (symlinks resolved). */
	readonly file: string;
	readonly db: SqliteDatabase;
	/** The random id written into the file when it was created. */
	readonly storeId: string;
	readonly statements: Map<string, SqliteStatement>;
	/** The schema check of each table, shared by concurrent first callers. */
	readonly tablesReady: Map<string, Promise<void>>;
	/** The device and inode of the file this connection opened: the path must still name it. */
	readonly identity: FileIdentity;
}

export interface FileIdentity {
	dev: bigint;
	ino: bigint;
}

/**
 * SQLite's own busy wait per attempt, in milliseconds. It sleeps on the event loop's thread, so it
 * is kept to a few milliseconds; longer waits are asynchronous retries (withWriteLock).
 */
export const BUSY_STEP_MS = 5;
/** How long a store call waits, asynchronously, for another process's write lock before giving up. */
export const DEFAULT_LOCK_WAIT_MS = 10_000;
// Opening a file creates its meta tables once, synchronously (embeddedStoreId is synchronous): a
// longer busy wait is allowed there, once per file and process.
const SETUP_BUSY_MS = 1_000;
const MAX_RETRY_DELAY_MS = 50;
// WAL files are truncated back to JOURNAL_SIZE_LIMIT_BYTES after a checkpoint (a burst must not
// leave a huge one). The store's background thread checkpoints after writes (backgroundThread.ts);
// SQLite's own checkpoint inside a commit, on the event loop's thread, is kept only as a backstop
// should that thread fall behind: at BACKSTOP_CHECKPOINT_PAGES WAL pages (10,000, about 40 MB)
// instead of SQLite's 1,000.

const connections = new Map<string, EmbeddedConnection>();
/**
 * Connections whose file was replaced, never used again and never closed: closing the last
 * connection to a file checkpoints the WAL and deletes it by name, and that name now belongs to the
 * new file's WAL. Kept referenced so that no garbage collection closes them either.
 */
const retiredConnections: EmbeddedConnection[] = [];

/** A prepared statement, cached on the connection by its text. */
export function statement(connection: EmbeddedConnection, text: string): SqliteStatement {
	let prepared = connection.statements.get(text);
	if (!prepared) {
		prepared = connection.db.prepare(text);
		connection.statements.set(text, prepared);
	}
	return prepared;
}

export function namedStatement(
	connection: EmbeddedConnection,
	name: EmbeddedStatement,
	family: EmbeddedFamily,
	table?: string,
	omit?: SqlSection,
): SqliteStatement {
	return statement(connection, renderEmbeddedStatement(name, family, table, omit));
}

/** A statement's rows as arrays, and each column's position: large answers skip building an object per row. */
export interface ArrayRows {
	rows: unknown[][];
	column: Record<string, number>;
}

const arrayStatements = new WeakMap<SqliteStatement, Record<string, number> | null>();

/**
 * Runs a statement and returns its rows as arrays. Where node:sqlite cannot return arrays (before
 * Node 22.16), the row objects' values are taken in column order.
 */
export function allAsArrays(prepared: SqliteStatement, parameters: Record<string, unknown>): ArrayRows {
	let column = arrayStatements.get(prepared);
	if (column === undefined) {
		column = null;
		if (typeof prepared.setReturnArrays === 'function' && typeof prepared.columns === 'function') {
			prepared.setReturnArrays(true);
			column = Object.fromEntries(prepared.columns().map((info, index) => [info.name, index]));
		}
		arrayStatements.set(prepared, column);
	}
	if (column) return { rows: prepared.all(parameters) as unknown as unknown[][], column };
	const objects = prepared.all(parameters);
	const names = objects.length > 0 ? Object.keys(objects[0]) : [];
	return { rows: objects.map((row) => Object.values(row)), column: Object.fromEntries(names.map((name, index) => [name, index])) };
}

/**
 * Runs `work` in one `BEGIN IMMEDIATE` transaction: the write lock is taken before anything is read.
 * `syncedCommit` false commits without waiting for the WAL's fsync (SQLite's `synchronous =
 * NORMAL` for this one transaction): still atomic, and the file stays consistent after a power cut,
 * but the transaction itself may be lost by one. The next synced commit or checkpoint syncs it.
 */
function inTransaction<T>(connection: EmbeddedConnection, work: () => T, syncedCommit = true): T {
	const { db } = connection;
	if (!syncedCommit) db.exec('pragma synchronous = normal');
	try {
		db.exec('begin immediate');
		let committed = false;
		try {
			const result = work();
			// Checked last, under the write lock: a result read from a file other than the one at the path is rolled back, never answered.
			assertSameFile(connection);
			db.exec('commit');
			committed = true;
			return result;
		} finally {
			// A failed step (or commit) leaves nothing behind: the whole transaction is rolled back.
			if (!committed && db.isTransaction) db.exec('rollback');
		}
	} finally {
		if (!syncedCommit) db.exec('pragma synchronous = full');
	}
}

export interface LockWait {
	/** How long to keep retrying while another process holds the write lock (ms). */
	lockWaitMs: number;
	operation: StoreOperation;
}

/**
 * Runs `work` in a write transaction. While another process holds the file's write lock, SQLite
 * waits BUSY_STEP_MS on this thread and then reports SQLITE_BUSY; the retry waits asynchronously
 * (n8n's event loop keeps running), with a growing, jittered delay, until `lockWaitMs` has passed:
 * then EmbeddedStoreBusyError, with nothing changed.
 */
export async function withWriteLock<T>(connection: EmbeddedConnection, wait: LockWait, work: () => T): Promise<T> {
	const result = await retryWhileBusy(connection, wait, () => inTransaction(connection, work), true);
	checkpointSoon(connection.file);
	return result;
}

/**
 * A write whose loss in a power cut changes no outcome (deleting keys whose retention ended: a key
 * found again is still treated as absent). Its commit does not wait for an fsync on the event
 * loop's thread; the checkpoint that follows, on the store's background thread and awaited, syncs
 * it and copies its pages into the file, so the WAL never grows into a checkpoint on this thread.
 */
export async function withUnsyncedWrite<T>(connection: EmbeddedConnection, wait: LockWait, work: () => T): Promise<T> {
	const result = await retryWhileBusy(connection, wait, () => inTransaction(connection, work, false), true);
	// A failed checkpoint changes nothing committed: the next one (or SQLite's backstop) copies these pages.
	await checkpointNow(connection.file, wait.operation).catch(() => undefined);
	return result;
}

/**
 * A small write whose loss in a power cut changes no outcome (an answer counted): committed without
 * waiting for an fsync on the event loop's thread; the checkpoint that follows on the background
 * thread syncs it, and nothing waits for that.
 */
export async function withLosableWrite<T>(connection: EmbeddedConnection, wait: LockWait, work: () => T): Promise<T> {
	const result = await retryWhileBusy(connection, wait, () => inTransaction(connection, work, false), true);
	checkpointSoon(connection.file);
	return result;
}

/**
 * A write that may turn out to be bookkeeping only (a reservation batch of copies changes nothing
 * but their counters): committed without waiting for its fsync; then, when `durable(result)` says
 * it changed what must survive a power cut (it reserved a key), made durable before it answers by
 * a synced commit of the file's sync point, whose fsync of the WAL takes every commit before it
 * along. A failed sync fails the call, as a failed synced commit would.
 */
export async function withWriteSyncedWhen<T>(
	connection: EmbeddedConnection,
	wait: LockWait,
	work: () => T,
	durable: (result: T) => boolean,
): Promise<T> {
	const result = await retryWhileBusy(connection, wait, () => inTransaction(connection, work, false), true);
	if (durable(result)) {
		await retryWhileBusy(connection, wait, () =>
			inTransaction(connection, () => namedStatement(connection, 'syncPoint', 'file').run({ value: randomUUID() })),
		);
	}
	checkpointSoon(connection.file);
	return result;
}

/**
 * How a write sent to the store's background thread commits: `synced` as withWriteLock (the commit
 * waits for its fsync, on that thread), `unsynced` as withUnsyncedWrite (no fsync at commit, then a
 * checkpoint, awaited), `losable` as withLosableWrite (no fsync, a checkpoint soon).
 */
export type ThreadCommit = 'synced' | 'unsynced' | 'losable';

/**
 * Runs write statements, in order, in their own transaction on the store's background thread
 * (backgroundThread.ts), on that thread's connection to the file: the statements, their commit and
 * fsync never hold the event loop. `next`, given their results, may name one more statement for
 * the same transaction (as withWriteLock's work may run more). Atomic and isolated like any transaction
 * on the file; another process's write lock is waited for on that thread, up to `lockWaitMs` (then
 * EmbeddedStoreBusyError, nothing changed). Refused (EmbeddedStoreReplacedError, nothing changed)
 * when the path names another file than the one this connection opened.
 */
export async function writeOnThread(
	connection: EmbeddedConnection,
	wait: LockWait,
	statements: ThreadStatement[],
	commit: ThreadCommit,
	next?: (results: ThreadWriteResult[]) => ThreadStatement | undefined,
): Promise<ThreadWriteResult[]> {
	const transaction = {
		synced: commit === 'synced',
		identity: `${connection.identity.dev}:${connection.identity.ino}`,
		lockWaitMs: wait.lockWaitMs,
	};
	let results: ThreadWriteResult[];
	try {
		results = await writeOffThread(connection.file, statements, transaction, wait.operation, next);
	} catch (error) {
		if (error instanceof EmbeddedStoreBusyError) throw lockWaitEnded(connection, wait, true, error);
		throw classifySqliteError(error, connection.file, wait.operation);
	}
	if (results[results.length - 1].replaced) {
		assertSameFile(connection);
		// The path names this connection's file again (moved back meanwhile): the thread's own connection opened another.
		retire(connection);
		throw replacedError(connection, true);
	}
	// As withUnsyncedWrite: a failed checkpoint changes nothing committed (the next one copies these pages).
	if (commit === 'unsynced') await checkpointNow(connection.file, wait.operation).catch(() => undefined);
	else checkpointSoon(connection.file);
	return results;
}

/** A read: never blocked by writers under WAL; retried like a write in the rare busy case (WAL recovery). */
export async function read<T>(connection: EmbeddedConnection, wait: LockWait, work: () => T): Promise<T> {
	return retryWhileBusy(connection, wait, () => {
		const result = work();
		assertSameFile(connection);
		return result;
	});
}

/**
 * `work` until it is not refused for another connection's write lock, or until `lockWaitMs` has
 * passed. A write (`afterThreadWrites`) first waits, within that bound, for this process's writes on
 * the store's background thread, rather than poll for the lock they hold.
 */
async function retryWhileBusy<T>(connection: EmbeddedConnection, wait: LockWait, work: () => T, afterThreadWrites = false): Promise<T> {
	const deadline = performance.now() + wait.lockWaitMs;
	let delay = 1;
	let waited = false;
	const threadWrites = afterThreadWrites ? threadWritesAnswered(connection.file) : undefined;
	if (threadWrites) {
		let timer: NodeJS.Timeout | undefined;
		await Promise.race([threadWrites, new Promise<void>((resolve) => (timer = setTimeout(resolve, wait.lockWaitMs)))]);
		clearTimeout(timer);
		waited = true;
	}
	for (;;) {
		try {
			return work();
		} catch (error) {
			if (!isBusy(error)) throw classifySqliteError(error, connection.file, wait.operation);
			if (performance.now() + delay > deadline) throw lockWaitEnded(connection, wait, waited, error);
			waited = true;
			await sleep(delay * (0.5 + Math.random()));
			delay = Math.min(delay * 2, MAX_RETRY_DELAY_MS);
		}
	}
}

function lockWaitEnded(connection: EmbeddedConnection, wait: LockWait, waited: boolean, cause: unknown): EmbeddedStoreBusyError {
	return new EmbeddedStoreBusyError(
		`Another process held the embedded key store ${connection.file} locked for ${waited ? 'more than ' : ''}${Math.round(wait.lockWaitMs / 100) / 10} s (its write lock). ${NOTHING_CHANGED[wait.operation]} If this repeats, look for a process or tool keeping a transaction open on the file.`,
		{ cause },
	);
}

function notPrepared(file: string, cause: unknown): InvalidConfigurationError {
	return new InvalidConfigurationError(
		`The embedded key store ${file} or its folder cannot be created or made private (0600, folder 0700): ${(cause as Error).message}`,
		{ cause },
	);
}

/** The device and inode `file` names now; undefined when nothing is at the path. */
function identityOf(file: string): FileIdentity | undefined {
	const stats = statSync(file, { bigint: true, throwIfNoEntry: false });
	return stats && { dev: stats.dev, ino: stats.ino };
}

/**
 * Refuses (EmbeddedStoreReplacedError) when the store file's path names another file than the one
 * this connection opened: a backup restored or a file moved over it, or the file deleted. The connection
 * would answer from the old file while every process opening the path uses the new one, and both
 * could take the same key. The connection is retired; the next call opens the file now at the path,
 * as a process started now would. One stat per call, after its work and before its commit (or its
 * answer, for a read), so that nothing read from the old file is answered.
 */
export function assertSameFile(connection: EmbeddedConnection): void {
	const current = identityOf(connection.file);
	if (current && current.dev === connection.identity.dev && current.ino === connection.identity.ino) return;
	retire(connection);
	throw replacedError(connection, Boolean(current));
}

function replacedError(connection: EmbeddedConnection, replaced: boolean): EmbeddedStoreReplacedError {
	return new EmbeddedStoreReplacedError(
		`The embedded key store ${connection.file} was ${replaced ? 'replaced by another file' : 'deleted or moved away'} while this n8n had it open (a backup restored over it, or a file moved onto its path?). Nothing was changed in either file. The next call uses the file now at that path; keys only the old file held are not known there.`,
	);
}

function retire(connection: EmbeddedConnection): void {
	if (connections.get(connection.file) === connection) connections.delete(connection.file);
	if (!retiredConnections.includes(connection)) retiredConnections.push(connection);
	retireStoreThread(connection.file);
}

/**
 * The connection to `file`, opened on first use: refused on a network filesystem, WAL journal,
 * `synchronous = FULL`, the file's meta tables and store id created once. Throws
 * EmbeddedStoreUnavailableError without node:sqlite, UnsafeStorageError on a network filesystem,
 * SchemaNewerThanPackageError for a file a newer package made.
 */
/** The real path each path given resolved to, when its connection was opened. */
const realPathByFile = new Map<string, string>();

export function connectionFor(file: string): EmbeddedConnection {
	if (typeof file !== 'string' || file.trim() === '') throw new InvalidConfigurationError('The embedded key store needs a file path.');
	const sqlite = loadSqlite();
	// Resolving the path is a few system calls: once per path given, not on every store call.
	const known = connections.get(realPathByFile.get(file) ?? '');
	if (known?.db.isOpen) return known;
	const real = realPathOfNearest(file);
	realPathByFile.set(file, real);
	const cached = connections.get(real);
	if (cached?.db.isOpen) return cached;

	assertLocalStorage(real);
	try {
		preparePrivateFile(real);
	} catch (error) {
		throw notPrepared(real, error);
	}
	let db: SqliteDatabase;
	try {
		db = new sqlite.DatabaseSync(real, { timeout: SETUP_BUSY_MS });
	} catch (error) {
		throw classifySqliteError(error, real, 'schema');
	}
	// SQLite opened the file in the constructor: what the path names now is what it holds.
	const identity = identityOf(real);
	if (!identity) {
		db.close();
		throw new DatabaseError(`The embedded key store ${real} was removed as it was being opened.`);
	}
	try {
		db.exec(`pragma busy_timeout = ${SETUP_BUSY_MS}`);
		// WAL: readers never wait for the writer. The mode is stored in the file; set once.
		if (db.prepare('pragma journal_mode').get()?.journal_mode !== 'wal') {
			const mode = db.prepare('pragma journal_mode = wal').get()?.journal_mode;
			if (mode !== 'wal')
				throw new DatabaseError(`The embedded key store ${real} could not switch to WAL journaling (it stayed ${String(mode)}).`);
		}
		// FULL: every commit is on the disk before the call returns (a completed key survives a power cut).
		db.exec('pragma synchronous = full');
		db.exec(`pragma journal_size_limit = ${JOURNAL_SIZE_LIMIT_BYTES}`);
		db.exec(`pragma wal_autocheckpoint = ${BACKSTOP_CHECKPOINT_PAGES}`);
		const connection: EmbeddedConnection = { file: real, db, storeId: '', statements: new Map(), tablesReady: new Map(), identity };
		migrateFile(connection);
		const storeId = namedStatement(connection, 'readMeta', 'file').get({ name: 'store_id' })?.value;
		if (typeof storeId !== 'string') throw new DatabaseError(`The embedded key store ${real} has no store id.`);
		// Orders compare exact decimal versions with the package's own rule, never as floating point.
		db.function('idempotency_compare_versions', { deterministic: true }, (a: string, b: string) => compareVersions(String(a), String(b)));
		db.exec(`pragma busy_timeout = ${BUSY_STEP_MS}`);
		const ready: EmbeddedConnection = { ...connection, storeId };
		connections.set(real, ready);
		return ready;
	} catch (error) {
		db.close();
		throw classifySqliteError(error, real, 'schema');
	}
}

/** The file's own schema: created with its store id when the file is new; a newer file is refused. */
function migrateFile(connection: EmbeddedConnection): void {
	const files = EMBEDDED_MIGRATIONS.file;
	const version = () => {
		const exists = Number(namedStatement(connection, 'tableExists', 'file').get({ name: 'n8n_idempotency_schema' })?.found ?? 0) > 0;
		return exists ? Number(namedStatement(connection, 'readSchemaVersion', 'file').get({ object: '' })?.version ?? 0) : 0;
	};
	const refuseNewer = (found: number) => {
		if (found > files.length) {
			throw new SchemaNewerThanPackageError(
				`The embedded key store ${connection.file} is at file schema version ${found}, newer than this n8n-nodes-idempotency knows (${files.length}): a newer version of the package made it. Update the package; nothing was changed.`,
			);
		}
	};
	const before = version();
	refuseNewer(before);
	if (before === files.length && namedStatement(connection, 'readMeta', 'file').get({ name: 'store_id' })) return;
	inTransaction(connection, () => {
		const current = version();
		refuseNewer(current);
		for (const file of files.slice(current)) connection.db.exec(renderEmbeddedSql(file, 'file'));
		namedStatement(connection, 'writeSchemaVersion', 'file').run({ object: '', family: 'file', version: files.length });
		// Written once: a second process creating the file at the same moment keeps the first id.
		namedStatement(connection, 'writeMeta', 'file').run({ name: 'store_id', value: randomUUID() });
	});
}

/** Closes every embedded store connection of this process (tests, shutdown). */
export function closeConnections(): void {
	for (const connection of connections.values()) {
		if (connection.db.isOpen) connection.db.close();
	}
	connections.clear();
	realPathByFile.clear();
}
