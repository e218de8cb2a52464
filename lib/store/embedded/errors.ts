import { DatabaseError, DatabaseUnavailableError, IdempotencyError, InvalidConfigurationError, LockTimeoutError } from '../../errors';
import type { StoreOperation } from '../driver';

/**
 * Node's built-in `node:sqlite` cannot be loaded: Node older than 22.13 (or 23.4 on the 23 line),
 * or Node started with `--no-experimental-sqlite`. The embedded store cannot run on this n8n.
 */
export class EmbeddedStoreUnavailableError extends IdempotencyError {}

/**
 * The store file's folder is on a network or user-space filesystem (NFS, SMB/CIFS, FUSE, …):
 * SQLite's file locks and WAL shared memory do not work there, so two processes could both reserve a key.
 */
export class UnsafeStorageError extends IdempotencyError {}

/**
 * Another process kept the store file's write lock for longer than the store waits (it waits
 * asynchronously, in short steps, up to its busy budget). Nothing was changed. A LockTimeoutError,
 * never "store unreachable": the process holding the lock may be reserving the same key right now,
 * so On Store Unavailable: Let Through must not let the item through.
 */
export class EmbeddedStoreBusyError extends LockTimeoutError {}

/**
 * The store file's path names another file than the one this process opened (replaced or deleted
 * under it): refused, nothing changed. Never "store unreachable": the new file may hold the key, so
 * On Store Unavailable: Let Through must not let the item through.
 */
export class EmbeddedStoreReplacedError extends DatabaseUnavailableError {}

/** SQLite result codes the store gives a meaning to (https://sqlite.org/rescode.html), primary codes. */
const SQLITE = { busy: 5, locked: 6, readonly: 8, ioerr: 10, corrupt: 11, full: 13, cantopen: 14, notadb: 26 } as const;

function primaryCode(error: unknown): number | undefined {
	const code = (error as { errcode?: unknown } | null)?.errcode;
	return typeof code === 'number' ? code & 0xff : undefined;
}

export function isBusy(error: unknown): boolean {
	const code = primaryCode(error);
	return code === SQLITE.busy || code === SQLITE.locked;
}

/** What each operation left unchanged when it failed (SQLite rolled the statement back). */
export const NOTHING_CHANGED: Readonly<Record<StoreOperation, string>> = {
	reserve: 'Nothing was reserved.',
	complete: 'The key was not completed: it stays reserved until its lease ends, and a delivery after that runs the business step again.',
	release: 'Nothing was released: a redelivery reads In Progress until the lease ends.',
	fail: 'Nothing was marked failed: a redelivery reads In Progress until the lease ends.',
	hold: 'The lease was not extended: a delivery after it ends, while the execution still waits, runs the business step again.',
	claimForReplay: 'Nothing was claimed: the keys are as they were.',
	claimDueInbox: 'No retry was claimed: the events are as they were.',
	cleanup: 'The keys deleted before it stay deleted; the rest are kept until the next run.',
	read: '',
	advance: 'No version mark was changed.',
	schema: 'The file was not changed.',
	countAnswer: 'The delivery was not counted.',
	recordExecution: 'The execution was not recorded with the key.',
};

/** A SQLite failure as one of the package's errors, naming the file and what did not change. */
export function classifySqliteError(error: unknown, file: string, operation: StoreOperation): IdempotencyError {
	if (error instanceof IdempotencyError) return error;
	const message = error instanceof Error ? error.message : String(error);
	const unchanged = NOTHING_CHANGED[operation] ? ` ${NOTHING_CHANGED[operation]}` : '';
	switch (primaryCode(error)) {
		case SQLITE.busy:
		case SQLITE.locked:
			return new EmbeddedStoreBusyError(`The embedded key store ${file} is locked by another process.${unchanged}`, { cause: error });
		case SQLITE.full:
			return new DatabaseError(`The disk holding the embedded key store ${file} is full (${message}).${unchanged}`, { cause: error });
		case SQLITE.readonly:
		case SQLITE.cantopen:
			return new InvalidConfigurationError(
				`The embedded key store ${file} cannot be opened for writing (${message}): n8n needs write access to the file and its folder.${unchanged}`,
				{ cause: error },
			);
		case SQLITE.notadb:
		case SQLITE.corrupt:
			return new DatabaseError(`The embedded key store ${file} is not a readable SQLite file (${message}).${unchanged}`, { cause: error });
	}
	return new DatabaseError(`Embedded key store error on ${file}: ${message}.${unchanged}`, { cause: error });
}
