import { DriverKeyStore } from '../keyStore';
import { DriverOrderStore } from '../orderStore';
import { DEFAULT_ORDER_TABLE, DEFAULT_TABLE } from '../rules';
import { EmbeddedKeyDriver, EmbeddedOrderDriver, type EmbeddedStoreOptions } from './driver';

export { CLEANUP_CHUNK_ROWS, type EmbeddedStoreOptions } from './driver';

/**
 * The embedded key store: the key store (keyStore.ts) over the embedded driver, keeping the keys in
 * one SQLite file on the n8n host through Node's built-in `node:sqlite`. Every write runs in a
 * `BEGIN IMMEDIATE` transaction on the process's one connection to the file; a reservation batch
 * is one statement. Times are the host's wall clock, read inside each statement (see
 * docs/embedded-store.md).
 */
export class EmbeddedKeyStore extends DriverKeyStore {
	readonly file: string;

	constructor(options: EmbeddedStoreOptions) {
		super(new EmbeddedKeyDriver(options, DEFAULT_TABLE));
		this.file = options.file;
	}
}

/** The Order Guard's store in the embedded file (default table object_versions). */
export class EmbeddedOrderStore extends DriverOrderStore {
	readonly file: string;

	constructor(options: EmbeddedStoreOptions) {
		super(new EmbeddedOrderDriver(options, DEFAULT_ORDER_TABLE));
		this.file = options.file;
	}
}
