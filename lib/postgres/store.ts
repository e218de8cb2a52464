import { randomUUID } from 'node:crypto';
import type { Pool, PoolClient, QueryResultRow } from 'pg';

import { UnexpectedResultError } from '../errors';
import { tableRef, type TableRef } from '../identifiers';
import type { Operation } from './classifyError';
import { monotonicAt, monotonicNow, recordDatabaseTime } from './databaseClock';
import { PostgresRunner, type RetryEvent, type RetryPolicy, type StatementResult } from './runner';
import { SchemaGate } from './schemaGate';
import { parseWithExactNumbers } from '../evidence/exactNumbers';
import { assertStoredKeyText } from '../keys/exactText';
import { storableErrorMessage, storableResponse, storableText } from './storableValues';
import { KEYS_MIGRATIONS } from '../sql/migrations';
import { renderStatement, type StatementName } from '../sql/statements';
import type { KeyStore, SettleReport, SettleRequest } from '../store/contract';
import {
	MAX_LIST_PAGE_BYTES,
	distinctBatch,
	reservationResult,
	validateCleanupOptions,
	validateDurations,
	validateFailedExecution,
	validateListOptions,
	validateReserveOptions,
	validateSettleItems,
	validateStatsWindow,
} from '../store/rules';
import type {
	CleanupOptions,
	CleanupResult,
	CompactRecord,
	FailedExecution,
	IdempotencyRecord,
	KeysPage,
	KeyStats,
	ListKeysOptions,
	RecordStatus,
	ReplayClaim,
	ReplayClaimOptions,
	ReservationRequest,
	ReservationResult,
	ReserveOptions,
	ReserveOptionsWithDetail,
	SettleResult,
	StoredKey,
} from '../types';

export interface StoreOptions {
	schema: string;
	table: string;
	/**
	 * Create the table or run its pending migrations on first use (needs CREATE on the schema, or
	 * ownership of the table). Off, the schema version is only checked and an error names the files.
	 */
	createTable: boolean;
	/** How long Complete, Release and Mark Failed keep retrying a lost connection (default 30 s; never past the lease). */
	settleRetryMs?: number;
	/** How long a reserve whose answer was lost keeps re-sending the same statement (default 10 s). */
	reserveRecoveryMs?: number;
	/** Called before each retry (for logs and tests): what failed, and whether its outcome is unknown. */
	onRetry?: (event: RetryEvent) => void;
}

export type { RetryEvent } from './runner';
export type { SettleReport, SettleRequest } from '../store/contract';
export { DEFAULT_SCHEMA, DEFAULT_TABLE, MAX_LIST_PAGE_BYTES, MAX_LIST_PAGE_SIZE, MAX_STATS_WINDOW_HOURS } from '../store/rules';

export const SETTLE_RETRY_MS = 30_000;
export const RESERVE_RECOVERY_MS = 10_000;
// Retrying stops this long before the lease ends: a settle racing a reclaim gains nothing.
const LEASE_SAFETY_MARGIN_MS = 2_000;

/**
 * The Postgres idempotency store. Every method is one statement from `sql/` (one round trip for a
 * whole batch). Outcomes — new, duplicate, in progress, stale owner — are returned as values;
 * only broken configuration or database failures throw (as IdempotencyError subclasses).
 */
export class IdempotencyStore implements KeyStore {
	readonly backend = 'postgres' as const;
	private readonly table: TableRef;
	private readonly gate: SchemaGate;
	/** The pool's connections, or (inTransaction) the connection of its caller's transaction. */
	private runner: PostgresRunner;

	constructor(
		private readonly pool: Pool,
		private readonly options: StoreOptions,
	) {
		this.table = tableRef(options.schema, options.table);
		this.gate = new SchemaGate(pool, this.table, KEYS_MIGRATIONS, options.createTable);
		this.runner = PostgresRunner.onPool(pool);
	}

	/**
	 * A store whose statements join the transaction open on `client` (the one-transaction effect).
	 * They are never retried there: a failed statement has aborted the transaction, and the
	 * caller's rollback makes the outcome known (nothing stored). The schema check uses the pool.
	 */
	static inTransaction(pool: Pool, client: PoolClient, options: StoreOptions): IdempotencyStore {
		const store = new IdempotencyStore(pool, options);
		store.runner = PostgresRunner.onClient(client);
		return store;
	}

	/**
	 * Reserves each request's key. Results come back in request order; repeats in the batch are
	 * duplicates. `detail: 'compact'` returns only the CompactRecord part of each row (default: full).
	 */
	async reserve(requests: ReservationRequest[], options: ReserveOptions & { detail: 'compact' }): Promise<Array<ReservationResult<CompactRecord>>>;
	async reserve(requests: ReservationRequest[], options: ReserveOptions & { detail?: 'full' }): Promise<ReservationResult[]>;
	async reserve(requests: ReservationRequest[], options: ReserveOptionsWithDetail): Promise<Array<ReservationResult<CompactRecord>>>;
	async reserve(requests: ReservationRequest[], options: ReserveOptionsWithDetail): Promise<Array<ReservationResult<CompactRecord>>> {
		validateReserveOptions(options);
		if (requests.length === 0) return [];

		// One proposed owner token per distinct key: the key is ours when the row comes back with it.
		const { firsts, firstIndexes, distinctByKey, distinctOfRequest } = distinctBatch(requests);
		const proposedTokens = firsts.map(() => randomUUID());
		// A lost answer is not "nothing reserved": the same statement with the same tokens is sent
		// again, and a row carrying our token is ours whichever attempt wrote it.
		// Not retried: nothing is reserved yet, and the provider retries. In a transaction the caller
		// checked the table before taking its connection (a check needs a second one from the pool).
		if (!this.runner.joinsCaller) await this.readyWithin('reserve', 0);
		const compact = options.detail === 'compact';
		const statement = renderStatement('reserve', this.table, compact ? 'full-record' : undefined);
		// A column no request fills goes as one null, not an array of nulls for pg to write and Postgres to parse.
		const column = <T>(value: (request: ReservationRequest) => T | null | undefined): Array<T | null> | null => {
			const values = firsts.map((request) => value(request) ?? null);
			return values.some((v) => v !== null) ? values : null;
		};
		const { rows } = await this.runText('reserve', statement, [
			firsts.map((request) => request.key),
			firsts.map((request) => request.keySource),
			column((request) => request.payloadHash),
			proposedTokens,
			options.mode,
			options.leaseSeconds,
			options.retentionSeconds,
			options.executionId ?? null,
			options.workflowId ?? null,
			// Replay evidence, stored with a new reservation only (see sql/queries/reserve.sql).
			column((request) => request.evidence?.payloadJson),
			column((request) => request.evidence?.payloadBytes),
			column((request) => request.evidence?.source),
			column((request) => request.evidence?.correlationId),
			options.instanceId ?? null,
		], { retryUntil: null, recoverUntilMs: this.options.reserveRecoveryMs ?? RESERVE_RECOVERY_MS });
		const rowOfDistinct = new Array<QueryResultRow | undefined>(firsts.length);
		for (const row of rows) {
			const distinct = distinctByKey.get(row.key as string);
			if (distinct !== undefined) rowOfDistinct[distinct] = row;
		}

		return requests.map((request, index) => {
			const distinct = distinctOfRequest[index];
			const row = rowOfDistinct[distinct];
			if (!row) {
				throw new UnexpectedResultError(
					`Postgres returned no row for reserved key ${JSON.stringify(request.key.slice(0, 80))} (a trigger or rule on ${this.table.qualified}?). The other keys of the batch may have been reserved.`,
				);
			}
			const record = compact ? toCompactRecord(row) : toRecord(row);
			return reservationResult(request, record, row.owner_token as string, proposedTokens[distinct], firstIndexes[distinct] !== index);
		});
	}

	/**
	 * Claim for Replay: takes over each stored key that is replayable (failed, or processing after
	 * its lease ran out) with a new owner token and lease, in one statement
	 * (`sql/queries/claim_for_replay.sql`). Results come back in key order of the request; a key
	 * completed or under a live lease (a redelivery or another replay is on it) is not claimed,
	 * so two replays, or a replay and a redelivery, never both own a key.
	 * Throws UnusableKeyError for a key that cannot be a stored key (empty, NUL, lone surrogate).
	 */
	async claimForReplay(keys: string[], options: ReplayClaimOptions): Promise<ReplayClaim[]> {
		validateDurations(options.leaseSeconds, options.retentionSeconds);
		for (const key of keys) assertStoredKeyText(key, 'key to replay');
		if (keys.length === 0) return [];
		const firstIndexByKey = new Map<string, number>();
		const proposedTokens = new Map<string, string>();
		for (const [index, key] of keys.entries()) {
			if (!firstIndexByKey.has(key)) {
				firstIndexByKey.set(key, index);
				proposedTokens.set(key, randomUUID());
			}
		}
		await this.readyWithin('claim', 0);
		// Like reserve: a lost answer is re-sent with the same tokens, and a row holding ours is ours.
		const { rows } = await this.run('claim', [
			[...proposedTokens.keys()],
			[...proposedTokens.values()],
			options.leaseSeconds,
			options.retentionSeconds,
			options.executionId ?? null,
			options.workflowId ?? null,
			options.instanceId ?? null,
		], { retryUntil: null, recoverUntilMs: this.options.reserveRecoveryMs ?? RESERVE_RECOVERY_MS });
		const rowByKey = new Map(rows.map((row) => [row.key as string, row]));

		return keys.map((key, index): ReplayClaim => {
			const row = rowByKey.get(key);
			const record = row ? toRecord(row) : null;
			if (firstIndexByKey.get(key) !== index) return { claimed: false, key, reason: 'repeat_in_batch', record };
			if (!row || !record) return { claimed: false, key, reason: 'not_found', record: null };
			if (row.claimed) {
				return {
					claimed: true,
					key,
					ownerToken: row.owner_token as string,
					record,
					payload: storedPayload(row),
					payloadStored: Boolean(row.payload_stored),
					source: row.source ?? null,
					correlationId: row.correlation_id ?? null,
				};
			}
			return { claimed: false, key, reason: record.status === 'completed' ? 'completed' : 'in_progress', record };
		});
	}

	/**
	 * Marks owned reservations completed, storing `response` (any JSON) for duplicates to replay.
	 * A response Postgres would refuse is repaired or dropped (see storableValues), never fatal.
	 */
	async complete(items: Array<SettleRequest & { response?: unknown }>): Promise<SettleReport[]> {
		const responses = items.map((item) => storableResponse(item.response));
		return this.settle('complete', items, responses.map((response) => response.warnings), (sent) => [
			sent.map(({ index }) => responses[index].json),
		]);
	}

	/** Deletes owned reservations so the provider's next delivery is processed. */
	async release(items: SettleRequest[]): Promise<SettleReport[]> {
		return this.settle('release', items, items.map(() => []), () => []);
	}

	/** Marks owned reservations failed (kept with the message); the next delivery reserves again. */
	async fail(items: Array<SettleRequest & { error: string }>): Promise<SettleReport[]> {
		const messages = items.map((item) => storableErrorMessage(item.error));
		return this.settle('fail', items, messages.map((message) => message.warnings), (sent) => [
			sent.map(({ index }) => messages[index].text),
		]);
	}

	/** Releases every live reservation of one failed execution (of that workflow and n8n instance); returns the released keys. */
	async releaseExecution(execution: FailedExecution): Promise<string[]> {
		validateFailedExecution(execution, 'Release');
		return this.settleExecution('release', 'releaseExecution', [execution.executionId, execution.workflowId, execution.instanceId]);
	}

	/** Marks failed every live reservation of one failed execution (of that workflow and n8n instance), kept with the message; returns their keys. */
	async failExecution(execution: FailedExecution, error: string): Promise<{ keys: string[]; warnings: string[] }> {
		validateFailedExecution(execution, 'Mark Failed');
		const message = storableErrorMessage(error);
		const keys = await this.settleExecution('fail', 'failExecution', [
			execution.executionId,
			message.text,
			execution.workflowId,
			execution.instanceId,
		]);
		return { keys, warnings: message.warnings };
	}

	private async settleExecution(operation: 'release' | 'fail', statement: StatementName, values: unknown[]): Promise<string[]> {
		await this.ensureReady();
		// Retried like Release; after a lost answer the re-send lists only the keys still left to settle.
		const { rows } = await this.runText(operation, renderStatement(statement, this.table), values, {
			retryUntil: monotonicNow() + (this.options.settleRetryMs ?? SETTLE_RETRY_MS),
		});
		return rows.map((row) => row.key as string);
	}

	/**
	 * Deletes keys whose retention ended, by the same rule the reserve statement uses to treat them
	 * as absent (`sql/queries/cleanup.sql`), in batches until done or out of time; live leases are never touched.
	 */
	async cleanup(options: CleanupOptions): Promise<CleanupResult> {
		validateCleanupOptions(options);
		await this.ensureReady();
		const started = Date.now();
		const deadline = started + options.timeBudgetSeconds * 1000;
		let deleted = 0;
		let batches = 0;
		let finished = false;
		while (!finished && Date.now() < deadline) {
			const count = await this.execute('cleanup', [options.retentionSeconds, options.batchSize]);
			deleted += count;
			batches += 1;
			finished = count < options.batchSize;
		}
		return { deleted, batches, durationMs: Date.now() - started, finished };
	}

	/** The stored records of these keys (Get Key); keys not stored are absent from the answer. */
	async getKeys(keys: string[]): Promise<Map<string, StoredKey>> {
		const found = new Map<string, StoredKey>();
		if (keys.length === 0) return found;
		await this.ensureReady();
		// A key with NUL cannot be stored (Postgres text refuses it): it is simply not found.
		const storable = keys.filter((key) => !key.includes('\u0000'));
		if (storable.length === 0) return found;
		for (const row of await this.select('lookupRecords', [storable])) found.set(row.key, toStoredKey(row));
		return found;
	}

	/**
	 * One page of stored keys in key order (List Keys); bounded by MAX_LIST_PAGE_SIZE keys and by
	 * MAX_LIST_PAGE_BYTES of stored payloads and responses (the page then ends early, and
	 * nextAfterKey says where the next one starts).
	 */
	async listKeys(options: ListKeysOptions): Promise<KeysPage> {
		validateListOptions(options);
		await this.ensureReady();
		const rows = await this.select('listRecords', [
			options.afterKey ?? '',
			options.status ?? null,
			Boolean(options.stuckLeasesOnly),
			options.olderThanSeconds ?? null,
			options.keyPrefix || null,
			options.limit,
			Boolean(options.replayableOnly),
			MAX_LIST_PAGE_BYTES,
		]);
		const keys = rows.map(toStoredKey);
		// More may follow when the limit was reached or the byte bound left keys of this page out.
		const pageRows = Number(rows[0]?.page_rows ?? 0);
		const more = pageRows === options.limit || keys.length < pageRows;
		return { keys, nextAfterKey: more ? keys[keys.length - 1].key : null };
	}

	/** Counts by status and over a window (Stats); one aggregate statement over the table. */
	async stats(windowHours: number): Promise<KeyStats> {
		validateStatsWindow(windowHours);
		await this.ensureReady();
		const [row] = await this.select('stats', [windowHours * 3600]);
		return {
			windowHours,
			total: Number(row.total),
			processing: Number(row.processing),
			stuckLeases: Number(row.stuck_leases),
			completed: Number(row.completed),
			failed: Number(row.failed),
			newInWindow: Number(row.new_in_window),
			duplicatesInWindow: Number(row.duplicates_in_window),
			reclaimsInWindow: Number(row.reclaims_in_window),
			failedInWindow: Number(row.failed_in_window),
		};
	}

	/**
	 * Creates the table or runs its pending migrations (`sql/migrations/keys/`), whatever the
	 * createTable option says; refuses a table newer than the package. Safe when up to date.
	 */
	async createTable(): Promise<void> {
		await this.gate.create();
	}

	/** Checks the table's schema version once per pool and table (and migrates it when createTable is on). */
	async ready(): Promise<void> {
		await this.readyWithin('reserve', 0);
	}

	private async ensureReady(): Promise<void> {
		await this.gate.ready();
	}

	/**
	 * One statement for all items, guarded by each owner token. Settling is idempotent for its
	 * owner (Complete and Mark Failed apply again; a Release whose row is gone after a lost answer
	 * was ours), so a lost connection is retried within the lease and a lost answer re-sent.
	 */
	private async settle<T extends SettleRequest>(
		operation: Exclude<Operation, 'reserve'>,
		items: T[],
		warnings: string[][],
		extraParameters: (sent: Array<{ item: T; index: number }>) => unknown[],
	): Promise<SettleReport[]> {
		validateSettleItems(items);
		if (items.length === 0) return [];
		const retryUntil = this.settleDeadline(items);
		await this.readyWithin(operation, retryUntil);
		// A key with a NUL cannot be stored, so it was never reserved; sending it would fail the batch.
		const sent = items.map((item, index) => ({ item, index })).filter(({ item }) => !item.key.includes('\u0000'));
		// pg sends a lone surrogate as U+FFFD, so rows come back under the repaired key.
		const rowKey = (key: string) => storableText(key).text;
		const { rows, uncertain } = await this.run(
			operation,
			[sent.map(({ item }) => item.key), sent.map(({ item }) => item.ownerToken), ...extraParameters(sent)],
			{ retryUntil },
		);
		// Complete's answer carries the database's time (completed_at): it keeps the clock sample fresh.
		recordDatabaseTime(this.pool, rows[0]?.completed_at);
		const applied = new Set(rows.map((row) => row.key as string));
		const missing = sent.filter(({ item }) => !applied.has(rowKey(item.key)));
		const current = new Map<string, QueryResultRow>();
		if (missing.length > 0) {
			const found = await this.runText(
				operation,
				`select key, owner_token, status, effect_completed_at is not null as effect_completed from ${this.table.qualified} where key = any($1::text[])`,
				[missing.map(({ item }) => item.key)],
				{ retryUntil },
			);
			for (const row of found.rows) current.set(row.key as string, row);
		}
		return items.map((item, index): SettleReport => {
			const report = (result: SettleResult): SettleReport => (warnings[index].length > 0 ? { ...result, warnings: warnings[index] } : result);
			if (applied.has(rowKey(item.key))) return report({ key: item.key, applied: true });
			const row = current.get(rowKey(item.key));
			// Our own release, applied by an attempt whose answer was lost: the row is gone as asked.
			if (!row && operation === 'release' && uncertain) return report({ key: item.key, applied: true });
			if (!row) return report({ key: item.key, applied: false, reason: 'not_found' });
			if (row.owner_token !== item.ownerToken) return report({ key: item.key, applied: false, reason: 'not_owner' });
			// Ours, and Release or Mark Failed found it completed by Complete: its business step ran.
			if (row.effect_completed) return report({ key: item.key, applied: false, reason: 'completed' });
			return report({ key: item.key, applied: false, reason: 'failed' });
		});
	}

	/** The table check before a statement; a lost connection is retried until `retryUntil` and named per operation. */
	private async readyWithin(operation: Operation, retryUntil: number): Promise<void> {
		await this.gate.readyWithin(operation, { retryUntil, onRetry: this.options.onRetry });
	}

	/**
	 * Retrying a settle ends at the retry budget, and before the earliest known lease end. Lease ends
	 * are database times: they are placed on the host's monotonic clock through the database's time
	 * last read on this pool, never compared with the host's wall clock. Before any round trip has
	 * read it, only the budget applies (a settle after the lease end is fenced by the owner token).
	 */
	private settleDeadline(items: SettleRequest[]): number {
		let deadline = monotonicNow() + (this.options.settleRetryMs ?? SETTLE_RETRY_MS);
		for (const item of items) {
			if (!item.leaseEndsAt || Number.isNaN(item.leaseEndsAt.getTime())) continue;
			const leaseEnd = monotonicAt(this.pool, item.leaseEndsAt);
			if (leaseEnd !== undefined) deadline = Math.min(deadline, leaseEnd - LEASE_SAFETY_MARGIN_MS);
		}
		return deadline;
	}

	/** Runs a statement from `sql/`; see runText. */
	private run(operation: Operation, values: unknown[], retry: Omit<RetryPolicy, 'onRetry'>): Promise<StatementResult> {
		return this.runText(operation, renderStatement(operation, this.table), values, retry);
	}

	/**
	 * Runs an idempotent statement, named, retried by the runner's rules (connection-class failures
	 * with backoff before `retryUntil`, and after a lost answer for `recoverUntilMs` more; an outcome
	 * left unknown is reported as such). In a caller's transaction: once, unnamed.
	 */
	private runText(operation: Operation, text: string, values: unknown[], retry: Omit<RetryPolicy, 'onRetry'>): Promise<StatementResult> {
		return this.runner.run(text, values, {
			context: { table: this.table.qualified, operation },
			named: true,
			retry: { ...retry, onRetry: this.options.onRetry },
		});
	}

	private async execute(statement: StatementName, values: unknown[]): Promise<number> {
		return (await this.runner.run(renderStatement(statement, this.table), values, { context: { table: this.table.qualified } })).rowCount;
	}

	/** A read-only statement; its rows. */
	private async select(statement: StatementName, values: unknown[]): Promise<QueryResultRow[]> {
		return (await this.runner.run(renderStatement(statement, this.table), values, { context: { table: this.table.qualified } })).rows;
	}
}

// pg has already parsed integers and timestamps; batches of 10,000 rows pass through here, so
// nothing is converted twice (formatting belongs to whoever displays the record).
function toCompactRecord(row: QueryResultRow): CompactRecord {
	return {
		key: row.key,
		status: row.status as RecordStatus,
		attempts: row.attempts,
		lockedUntil: row.locked_until,
		payloadHash: row.payload_hash ?? null,
		response: row.response ?? null,
		leaseActive: Boolean(row.lease_active),
	};
}

/** The full row: the compact part plus the columns only Output: Full (and Get Key, List Keys) show. */
function toRecord(row: QueryResultRow): IdempotencyRecord {
	return {
		...toCompactRecord(row),
		duplicateCount: row.duplicate_count,
		firstSeen: row.first_seen,
		lastSeen: row.last_seen,
		expiresAt: row.expires_at,
		executionId: row.execution_id ?? null,
		workflowId: row.workflow_id ?? null,
		keySource: row.key_source ?? null,
		completedAt: row.completed_at,
		lastError: row.last_error ?? null,
	};
}

/**
 * The stored payload (read as text by the statements), its numbers JavaScript would round given as
 * strings of their exact digits; null when none is stored.
 */
function storedPayload(row: QueryResultRow): unknown {
	return typeof row.payload === 'string' ? parseWithExactNumbers(row.payload) : null;
}

function toStoredKey(row: QueryResultRow): StoredKey {
	return {
		...toRecord(row),
		retentionEnded: Boolean(row.retention_ended),
		payload: storedPayload(row),
		payloadStored: Boolean(row.payload_stored),
		payloadBytes: row.payload_bytes ?? null,
		source: row.source ?? null,
		correlationId: row.correlation_id ?? null,
	};
}
