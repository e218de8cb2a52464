import type { Pool, PoolClient } from 'pg';

import { DriverKeyStore } from '../keyStore';
import { DriverOrderStore } from '../orderStore';
import { PostgresKeyDriver, PostgresOrderDriver, type OrderStoreOptions, type StoreOptions } from './driver';
import { PostgresRunner } from './runner';

export type { RetryEvent } from './runner';
export type { SettleReport, SettleRequest } from '../contract';
export { RESERVE_RECOVERY_MS, SETTLE_RETRY_MS, type OrderStoreOptions, type StoreOptions } from './driver';
export { DEFAULT_SCHEMA, DEFAULT_TABLE, MAX_LIST_PAGE_BYTES, MAX_LIST_PAGE_SIZE, MAX_STATS_WINDOW_HOURS } from '../rules';

/**
 * The Postgres key store: the key store (keyStore.ts) over the Postgres driver. Every method is
 * one statement from `sql/postgres/queries/` (one round trip for a whole batch) sent through the one
 * Postgres runner (runner.ts).
 */
export class PostgresKeyStore extends DriverKeyStore {
	constructor(pool: Pool, options: StoreOptions, runner = PostgresRunner.onPool(pool)) {
		super(new PostgresKeyDriver(pool, runner, options));
	}

	/**
	 * A store whose statements join the transaction open on `client` (the one-transaction effect).
	 * They are never retried there: a failed statement has aborted the transaction, and the
	 * caller's rollback makes the outcome known (nothing stored). The caller checks the table.
	 */
	static inTransaction(pool: Pool, client: PoolClient, options: StoreOptions): PostgresKeyStore {
		return new PostgresKeyStore(pool, options, PostgresRunner.onClient(client));
	}
}

/** The Order Guard's store on Postgres (default table object_versions, `sql/postgres/migrations/order/`). */
export class PostgresOrderStore extends DriverOrderStore {
	constructor(pool: Pool, options: OrderStoreOptions) {
		super(new PostgresOrderDriver(pool, options));
	}
}
