import type { KeyStore, OrderStore } from '../contract';
import { closeConnections, connectionFor } from './connection';
import { EmbeddedKeyStore, EmbeddedOrderStore, type EmbeddedStoreOptions } from './stores';
import { stopStoreThreads } from './backgroundThread';

export { EmbeddedStoreBusyError, EmbeddedStoreReplacedError, EmbeddedStoreUnavailableError, UnsafeStorageError } from './errors';
export { EmbeddedKeyStore, EmbeddedOrderStore, type EmbeddedStoreOptions } from './stores';

/**
 * The idempotency key store kept in `file` on this n8n host (node:sqlite). Nothing is opened until
 * the first call; then EmbeddedStoreUnavailableError (no node:sqlite), UnsafeStorageError (network
 * filesystem) or the schema errors may be thrown by it.
 */
export function openEmbeddedKeyStore(options: EmbeddedStoreOptions): KeyStore {
	return new EmbeddedKeyStore(options);
}

/** The Order Guard's store kept in `file` on this n8n host (default table object_versions). */
export function openEmbeddedOrderStore(options: EmbeddedStoreOptions): OrderStore {
	return new EmbeddedOrderStore(options);
}

/**
 * The random id written into the store file when it was created (creating the file when it does
 * not exist): the same id from two processes proves they use the same file.
 */
export function embeddedStoreId(file: string): string {
	return connectionFor(file).storeId;
}

/** Closes this process's connections to every store file (tests; the stores reopen on next use). */
export function closeEmbeddedStores(): void {
	stopStoreThreads();
	closeConnections();
}
