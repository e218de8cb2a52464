import { randomUUID } from 'node:crypto';
import type { Pool, QueryResultRow } from 'pg';

import { InvalidConfigurationError } from './errors';
import { tableRef, type TableRef } from './identifiers';
import { classifyPostgresError } from './postgres/classifyError';
import { KEYS_MIGRATIONS, ensureSchema } from './sql/migrations';
import { renderStatement, type StatementName } from './sql/statements';
import type {
	CleanupOptions,
	CleanupResult,
	IdempotencyRecord,
	OwnedKey,
	RecordStatus,
	ReservationRequest,
	ReservationResult,
	ReserveOptions,
	SettleResult,
} from './types';

export interface StoreOptions {
	schema: string;
	table: string;
	/**
	 * Create the table or run its pending migrations on first use (needs CREATE on the schema, or
	 * ownership of the table). Off, the schema version is only checked and an error names the files.
	 */
	createTable: boolean;
}

export const DEFAULT_TABLE = 'processed_events';
export const DEFAULT_SCHEMA = 'public';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MAX_LEASE_SECONDS = 7 * 24 * 3600;
const MAX_RETENTION_SECONDS = 10 * 366 * 24 * 3600;

// The schema check (and migration) is shared by concurrent first callers of one pool and table.
const tablesReady = new WeakMap<Pool, Map<string, Promise<void>>>();

/**
 * The Postgres idempotency store. Every method is one statement from `sql/` (one round trip for a
 * whole batch). Outcomes — new, duplicate, in progress, stale owner — are returned as values;
 * only broken configuration or database failures throw (as IdempotencyError subclasses).
 */
export class IdempotencyStore {
	private readonly table: TableRef;

	constructor(
		private readonly pool: Pool,
		private readonly options: StoreOptions,
	) {
		this.table = tableRef(options.schema, options.table);
	}

	/** Reserves each request's key. Results come back in request order; repeats in the batch are duplicates. */
	async reserve(requests: ReservationRequest[], options: ReserveOptions): Promise<ReservationResult[]> {
		validateReserveOptions(options);
		if (requests.length === 0) return [];

		// One proposed owner token per distinct key: the key is ours when the row comes back with it.
		const firstIndexByKey = new Map<string, number>();
		const proposedTokens = new Map<string, string>();
		for (const [index, request] of requests.entries()) {
			if (!firstIndexByKey.has(request.key)) {
				firstIndexByKey.set(request.key, index);
				proposedTokens.set(request.key, randomUUID());
			}
		}
		const firsts = [...firstIndexByKey.values()].map((index) => requests[index]);
		const rows = await this.query('reserve', [
			firsts.map((request) => request.key),
			firsts.map((request) => request.keySource),
			firsts.map((request) => request.payloadHash),
			firsts.map((request) => proposedTokens.get(request.key)),
			options.mode,
			options.leaseSeconds,
			options.retentionSeconds,
			options.executionId ?? null,
			options.workflowId ?? null,
		]);
		const rowByKey = new Map(rows.map((row) => [row.key as string, row]));

		return requests.map((request, index) => {
			const row = rowByKey.get(request.key);
			if (!row) throw new InvalidConfigurationError(`Postgres returned no row for a reserved key.`);
			const record = toRecord(row);
			const repeatInBatch = firstIndexByKey.get(request.key) !== index;
			const ours = !repeatInBatch && row.owner_token === proposedTokens.get(request.key);
			const payloadMismatch =
				request.payloadHash === null || record.payloadHash === null ? null : request.payloadHash !== record.payloadHash;
			return {
				outcome: ours ? 'new' : record.status === 'processing' && record.leaseActive && !repeatInBatch ? 'in_progress' : 'duplicate',
				key: request.key,
				ownerToken: ours ? (row.owner_token as string) : null,
				reclaimed: ours && record.attempts > 1,
				repeatInBatch,
				payloadMismatch,
				record,
			};
		});
	}

	/** Marks owned reservations completed, storing `response` (any JSON) for duplicates to replay. */
	async complete(items: Array<OwnedKey & { response?: unknown }>): Promise<SettleResult[]> {
		return this.settle('complete', items, (valid) => [
			valid.map((item) => item.key),
			valid.map((item) => item.ownerToken),
			valid.map((item) => (item.response === undefined ? null : JSON.stringify(item.response))),
		]);
	}

	/** Deletes owned reservations so the provider's next delivery is processed. */
	async release(items: OwnedKey[]): Promise<SettleResult[]> {
		return this.settle('release', items, (valid) => [valid.map((item) => item.key), valid.map((item) => item.ownerToken)]);
	}

	/** Marks owned reservations failed (kept with the message); the next delivery reserves again. */
	async fail(items: Array<OwnedKey & { error: string }>): Promise<SettleResult[]> {
		return this.settle('fail', items, (valid) => [
			valid.map((item) => item.key),
			valid.map((item) => item.ownerToken),
			valid.map((item) => item.error.slice(0, 2000)),
		]);
	}

	/** Releases every live reservation of one n8n execution; returns the released keys. */
	async releaseExecution(executionId: string): Promise<string[]> {
		if (!executionId) throw new InvalidConfigurationError('Release by execution needs an execution id.');
		const rows = await this.query('releaseExecution', [executionId]);
		return rows.map((row) => row.key as string);
	}

	/**
	 * Deletes keys whose retention ended, by the same rule the reserve statement uses to treat them
	 * as absent (`sql/queries/cleanup.sql`), in batches until done or out of time; live leases are never touched.
	 */
	async cleanup(options: CleanupOptions): Promise<CleanupResult> {
		if (!(options.retentionSeconds > 0)) throw new InvalidConfigurationError('Cleanup retention must be more than 0.');
		if (!Number.isInteger(options.batchSize) || options.batchSize < 1) {
			throw new InvalidConfigurationError('Cleanup batch size must be a whole number of at least 1.');
		}
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

	/**
	 * Creates the table or runs its pending migrations (`sql/migrations/keys/`), whatever the
	 * createTable option says; refuses a table newer than the package. Safe when up to date.
	 */
	async createTable(): Promise<void> {
		await ensureSchema(this.pool, this.table, KEYS_MIGRATIONS, true);
	}

	/** Once per pool and table: the schema is checked (and migrated when allowed) before first use. */
	private async ensureReady(): Promise<void> {
		let perPool = tablesReady.get(this.pool);
		if (!perPool) {
			perPool = new Map();
			tablesReady.set(this.pool, perPool);
		}
		let ready = perPool.get(this.table.qualified);
		if (!ready) {
			ready = ensureSchema(this.pool, this.table, KEYS_MIGRATIONS, this.options.createTable);
			perPool.set(this.table.qualified, ready);
			ready.catch(() => perPool.delete(this.table.qualified));
		}
		await ready;
	}

	private async settle<T extends OwnedKey>(
		statement: StatementName,
		items: T[],
		parameters: (valid: T[]) => unknown[],
	): Promise<SettleResult[]> {
		for (const item of items) {
			if (!item.key) throw new InvalidConfigurationError('No idempotency key to settle: the item has no key.');
			if (!UUID.test(item.ownerToken ?? '')) {
				throw new InvalidConfigurationError(
					`The owner token for key ${JSON.stringify(item.key.slice(0, 80))} is missing or not a UUID: pass the ownerToken the Reserve node returned.`,
				);
			}
		}
		if (items.length === 0) return [];
		const rows = await this.query(statement, parameters(items));
		const applied = new Set(rows.map((row) => row.key as string));
		const missing = items.filter((item) => !applied.has(item.key));
		const current = missing.length
			? new Map(
					(
						await this.queryText(`select key, owner_token, status from ${this.table.qualified} where key = any($1::text[])`, [
							missing.map((item) => item.key),
						])
					).map((row) => [row.key as string, row]),
				)
			: new Map<string, QueryResultRow>();
		return items.map((item): SettleResult => {
			if (applied.has(item.key)) return { key: item.key, applied: true };
			const row = current.get(item.key);
			if (!row) return { key: item.key, applied: false, reason: 'not_found' };
			if (row.owner_token !== item.ownerToken) return { key: item.key, applied: false, reason: 'not_owner' };
			return { key: item.key, applied: false, reason: 'failed' };
		});
	}

	private async query(statement: StatementName, values: unknown[]): Promise<QueryResultRow[]> {
		await this.ensureReady();
		return this.queryText(renderStatement(statement, this.table), values);
	}

	private async execute(statement: StatementName, values: unknown[]): Promise<number> {
		try {
			const result = await this.pool.query(renderStatement(statement, this.table), values);
			return result.rowCount ?? 0;
		} catch (error) {
			throw classifyPostgresError(error, { table: this.table.qualified });
		}
	}

	private async queryText(text: string, values: unknown[]): Promise<QueryResultRow[]> {
		try {
			return (await this.pool.query(text, values)).rows;
		} catch (error) {
			throw classifyPostgresError(error, { table: this.table.qualified });
		}
	}
}

function validateReserveOptions(options: ReserveOptions): void {
	if (options.mode !== 'lease' && options.mode !== 'permanent') {
		throw new InvalidConfigurationError(`Unknown reservation mode ${JSON.stringify(options.mode)}: use lease or permanent.`);
	}
	if (!(options.leaseSeconds > 0 && options.leaseSeconds <= MAX_LEASE_SECONDS)) {
		throw new InvalidConfigurationError(`Lease seconds must be more than 0 and at most ${MAX_LEASE_SECONDS} (7 days).`);
	}
	if (!(options.retentionSeconds > 0 && options.retentionSeconds <= MAX_RETENTION_SECONDS)) {
		throw new InvalidConfigurationError('Retention must be more than 0 and at most 10 years.');
	}
}

// pg has already parsed integers and timestamps; batches of 10,000 rows pass through here, so
// nothing is converted twice (formatting belongs to whoever displays the record).
function toRecord(row: QueryResultRow): IdempotencyRecord {
	return {
		key: row.key,
		status: row.status as RecordStatus,
		attempts: row.attempts,
		duplicateCount: row.duplicate_count,
		firstSeen: row.first_seen,
		lastSeen: row.last_seen,
		lockedUntil: row.locked_until,
		expiresAt: row.expires_at,
		executionId: row.execution_id ?? null,
		workflowId: row.workflow_id ?? null,
		keySource: row.key_source ?? null,
		payloadHash: row.payload_hash ?? null,
		response: row.response ?? null,
		completedAt: row.completed_at,
		lastError: row.last_error ?? null,
		leaseActive: Boolean(row.lease_active),
	};
}
