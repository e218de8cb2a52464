import type { Pool, PoolClient } from 'pg';

import type { HoldRequest, KeyStore, SettleReport, SettleRequest } from '../contract';
import type {
	AnswerCounts,
	CleanupOptions,
	CleanupResult,
	CompactRecord,
	DeliveryAnswer,
	FailedExecution,
	KeysPage,
	KeyStats,
	ListKeysOptions,
	OwnedKey,
	ReplayClaim,
	ReplayClaimOptions,
	ReservationRequest,
	ReservationResult,
	ReserveOptions,
	ReserveOptionsWithDetail,
	StoredKey,
} from '../../types';
import * as admin from './admin';
import { KeyTable, type StoreOptions } from './keyTable';
import * as reservation from './reservation';
import { PostgresRunner } from './runner';
import * as settling from './settling';

export type { RetryEvent } from './runner';
export type { SettleReport, SettleRequest } from '../contract';
export { RESERVE_RECOVERY_MS, SETTLE_RETRY_MS, type StoreOptions } from './keyTable';
export { DEFAULT_SCHEMA, DEFAULT_TABLE, MAX_LIST_PAGE_BYTES, MAX_LIST_PAGE_SIZE, MAX_STATS_WINDOW_HOURS } from '../rules';

/**
 * The Postgres key store. Every method is one statement from `sql/` (one round trip for a whole
 * batch), in four parts: taking keys (reservation.ts), settling them (settling.ts), reading and
 * tidying the table (admin.ts), and the schema check before first use (schemaGate.ts); all of
 * them send through the one Postgres runner (runner.ts). Outcomes — new, duplicate, in progress,
 * stale owner — are returned as values; only broken configuration or database failures throw (as
 * IdempotencyError subclasses).
 */
export class IdempotencyStore implements KeyStore {
	readonly backend = 'postgres' as const;
	private readonly keys: KeyTable;

	constructor(pool: Pool, options: StoreOptions, runner = PostgresRunner.onPool(pool)) {
		this.keys = new KeyTable(pool, runner, options);
	}

	/**
	 * A store whose statements join the transaction open on `client` (the one-transaction effect).
	 * They are never retried there: a failed statement has aborted the transaction, and the
	 * caller's rollback makes the outcome known (nothing stored). The schema check uses the pool.
	 */
	static inTransaction(pool: Pool, client: PoolClient, options: StoreOptions): IdempotencyStore {
		return new IdempotencyStore(pool, options, PostgresRunner.onClient(client));
	}

	/**
	 * Reserves each request's key. Results come back in request order; repeats in the batch are
	 * duplicates. `detail: 'compact'` returns only the CompactRecord part of each row (default: full).
	 */
	async reserve(requests: ReservationRequest[], options: ReserveOptions & { detail: 'compact' }): Promise<Array<ReservationResult<CompactRecord>>>;
	async reserve(requests: ReservationRequest[], options: ReserveOptions & { detail?: 'full' }): Promise<ReservationResult[]>;
	async reserve(requests: ReservationRequest[], options: ReserveOptionsWithDetail): Promise<Array<ReservationResult<CompactRecord>>>;
	async reserve(requests: ReservationRequest[], options: ReserveOptionsWithDetail): Promise<Array<ReservationResult<CompactRecord>>> {
		return reservation.reserve(this.keys, requests, options);
	}

	/** Takes over each replayable stored key (failed, or processing past its lease) with a new owner token. */
	async claimForReplay(keys: string[], options: ReplayClaimOptions): Promise<ReplayClaim[]> {
		return reservation.claimForReplay(this.keys, keys, options);
	}

	/**
	 * Marks owned reservations completed, storing `response` (any JSON) for duplicates to replay.
	 * A response Postgres would refuse is repaired or dropped (see storableValues), never fatal.
	 */
	async complete(items: Array<SettleRequest & { response?: unknown }>): Promise<SettleReport[]> {
		return settling.complete(this.keys, items);
	}

	/** Deletes owned reservations so the provider's next delivery is processed. */
	async release(items: SettleRequest[]): Promise<SettleReport[]> {
		return settling.release(this.keys, items);
	}

	/** Marks owned reservations failed (kept with the message); the next delivery reserves again. */
	async fail(items: Array<SettleRequest & { error: string }>): Promise<SettleReport[]> {
		return settling.fail(this.keys, items);
	}

	/** Extends owned reservations' leases to their hold from now, never shorter, while their execution waits; returns the keys held. */
	async hold(items: HoldRequest[]): Promise<string[]> {
		return settling.hold(this.keys, items);
	}

	/** Releases every live reservation of one failed execution (of that workflow and n8n instance); returns the released keys. */
	async releaseExecution(execution: FailedExecution): Promise<string[]> {
		return settling.releaseExecution(this.keys, execution);
	}

	/** Marks failed every live reservation of one failed execution (of that workflow and n8n instance), kept with the message; returns their keys. */
	async failExecution(execution: FailedExecution, error: string): Promise<{ keys: string[]; warnings: string[] }> {
		return settling.failExecution(this.keys, execution, error);
	}

	/** Deletes keys whose retention ended, in batches until done or out of time; live leases are never touched. */
	async cleanup(options: CleanupOptions): Promise<CleanupResult> {
		return admin.cleanup(this.keys, options);
	}

	/** The stored records of these keys (Get Key); keys not stored are absent from the answer. */
	async getKeys(keys: string[]): Promise<Map<string, StoredKey>> {
		return admin.getKeys(this.keys, keys);
	}

	/** One page of stored keys in key order (List Keys). */
	async listKeys(options: ListKeysOptions): Promise<KeysPage> {
		return admin.listKeys(this.keys, options);
	}

	/** Counts by status and over a window (Stats); one aggregate statement over the table. */
	async stats(windowHours: number): Promise<KeyStats> {
		return admin.stats(this.keys, windowHours);
	}

	/** Counts one delivery the Idempotent Webhook trigger answered or started, in the current hour. */
	async countAnswer(answer: DeliveryAnswer): Promise<void> {
		return admin.countAnswer(this.keys, answer);
	}

	/** The deliveries counted per answer in the hours that overlap the window. */
	async answerCounts(windowHours: number): Promise<AnswerCounts> {
		return admin.answerCounts(this.keys, windowHours);
	}

	/** Records the n8n execution that runs the key's event, when the key is still this owner's. */
	async recordExecution(key: OwnedKey, executionId: string): Promise<boolean> {
		return admin.recordExecution(this.keys, key, executionId);
	}

	/**
	 * Creates the table or runs its pending migrations (`sql/migrations/keys/`), whatever the
	 * createTable option says; refuses a table newer than the package. Safe when up to date.
	 */
	async createTable(): Promise<void> {
		await this.keys.gate.create();
	}

	/** Checks the table's schema version once per pool and table (and migrates it when createTable is on). */
	async ready(): Promise<void> {
		await this.keys.readyWithin('reserve', 0);
	}
}
