import { IdempotencyError, LockTimeoutError } from '../errors';

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
