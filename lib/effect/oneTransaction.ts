import type { Pool, PoolClient, QueryResult } from 'pg';

import { DatabaseUnavailableError, IdempotencyError, InvalidConfigurationError, OutcomeUnknownError } from '../errors';
import { classifyPostgresError } from '../postgres/classifyError';
import { IdempotencyStore, type StoreOptions } from '../postgres/store';
import type { ReservationRequest, ReservationResult } from '../types';
import { QueryFailedError } from './errors';

/** The user's SQL for one item: one statement, values as bind parameters ($1, $2, …). */
export interface EffectQuery {
	text: string;
	values: unknown[];
}

export interface OneTransactionOptions {
	/** How long the key blocks duplicates. */
	retentionSeconds: number;
	executionId?: string;
	workflowId?: string;
	instanceId?: string;
}

export type OneTransactionResult =
	| { outcome: 'new'; reservation: ReservationResult; rows: Array<Record<string, unknown>>; rowCount: number; command: string }
	| { outcome: 'duplicate'; reservation: ReservationResult };

// Leading whitespace, comments and empty statements, then the first word.
const FIRST_WORD = /^(?:\s+|--[^\n]*(?:\n|$)|\/\*[\s\S]*?\*\/|;)*([A-Za-z]+)/;
// Statements that would end or split the transaction the key and the effect share.
const TRANSACTION_CONTROL = new Set(['begin', 'start', 'commit', 'end', 'rollback', 'abort', 'savepoint', 'release', 'prepare']);
const MAX_QUERY_LENGTH = 100_000;

/** Checks the user's SQL once per node run. Throws InvalidConfigurationError. */
export function validateEffectQuery(text: string): void {
	if (typeof text !== 'string' || text.trim() === '') throw new InvalidConfigurationError('The query is empty.');
	if (text.length > MAX_QUERY_LENGTH) throw new InvalidConfigurationError(`The query is longer than ${MAX_QUERY_LENGTH} characters.`);
	const firstWord = FIRST_WORD.exec(text)?.[1]?.toLowerCase();
	if (firstWord && TRANSACTION_CONTROL.has(firstWord)) {
		throw new InvalidConfigurationError(
			`The query starts with ${firstWord.toUpperCase()}: the node runs it inside its own transaction (with the key), so transaction control is not allowed.`,
		);
	}
}

/**
 * Reserves an idempotency key (permanent, the same statement as Idempotency Reserve) and runs the
 * user's SQL in one transaction, so both commit or neither does:
 *
 * ```
 * begin ─ reserve ─┬─ new ──────── user's SQL ─┬─ ok ──── commit   → New (key and effect both stored)
 *                  │                           └─ error ─ rollback → QueryFailedError (nothing stored)
 *                  └─ duplicate ─────────────────────────  commit   → Duplicate (the SQL does not run)
 * a crash anywhere before commit                         → rollback by Postgres: nothing stored
 * ```
 *
 * A concurrent delivery of the same key waits on the key's row lock until this transaction ends,
 * then sees Duplicate (committed) or reserves it itself (rolled back): the effect runs once.
 * One transaction per item, so one item's failing query never undoes another item's effect.
 */
export class OneTransactionEffect {
	/** The keys store on the pool: checks (and creates or upgrades) the table once per pool. */
	private readonly poolStore: IdempotencyStore;

	constructor(
		private readonly pool: Pool,
		private readonly options: StoreOptions,
	) {
		this.poolStore = new IdempotencyStore(pool, options);
	}

	async run(request: ReservationRequest, query: EffectQuery, options: OneTransactionOptions): Promise<OneTransactionResult> {
		// Before taking the transaction's connection: the check may need one of its own.
		await this.poolStore.ready();
		const client = await this.pool.connect().catch((error: unknown) => {
			throw classifyPostgresError(error);
		});
		let inTransaction = false;
		try {
			await client.query('begin');
			inTransaction = true;
			const [reservation] = await IdempotencyStore.inTransaction(this.pool, client, { ...this.options, createTable: false }).reserve([request], {
				mode: 'permanent',
				leaseSeconds: 300,
				retentionSeconds: options.retentionSeconds,
				executionId: options.executionId,
				workflowId: options.workflowId,
				instanceId: options.instanceId,
			});
			let result: OneTransactionResult;
			if (reservation.outcome === 'new') {
				const effect = await runUserQuery(client, query);
				result = { outcome: 'new', reservation, rows: effect.rows, rowCount: effect.rowCount ?? 0, command: effect.command };
			} else {
				// Committed too: the duplicate count and last-seen time are worth keeping.
				result = { outcome: 'duplicate', reservation };
			}
			inTransaction = false;
			await commit(client);
			return result;
		} catch (error) {
			if (inTransaction) await client.query('rollback').catch(() => {});
			throw error instanceof IdempotencyError ? error : classifyPostgresError(error);
		} finally {
			client.release();
		}
	}
}

async function runUserQuery(client: PoolClient, query: EffectQuery): Promise<QueryResult> {
	try {
		// Always the extended protocol: one statement only, every value a bind parameter.
		return await client.query({ text: query.text, values: query.values, queryMode: 'extended' } as never);
	} catch (error) {
		throw userQueryError(error);
	}
}

function userQueryError(error: unknown): IdempotencyError {
	const classified = classifyPostgresError(error);
	if (classified instanceof DatabaseUnavailableError) return classified;
	const code = (error as { code?: unknown }).code;
	return new QueryFailedError(
		`Your query failed${typeof code === 'string' ? ` (SQLSTATE ${code})` : ''}: ${(error as Error).message}. Nothing was reserved: the next delivery runs it again.`,
		{ cause: error },
	);
}

async function commit(client: PoolClient): Promise<void> {
	try {
		await client.query('commit');
	} catch (error) {
		throw commitOutcomeUnknown(error);
	}
}

// The commit may or may not have reached the server; both-or-neither still holds, and the next
// delivery of this key tells which (Duplicate: it committed; New: it did not).
function commitOutcomeUnknown(error: unknown): IdempotencyError {
	return new OutcomeUnknownError(
		`The commit's outcome is unknown (${(error as Error).message}). The key and the effect were stored together or not at all; the next delivery tells which.`,
		{ cause: error },
	);
}
