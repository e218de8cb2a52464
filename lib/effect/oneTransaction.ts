import { DatabaseError } from 'pg';
import type { Pool, PoolClient, QueryResult } from 'pg';

import { DatabaseUnavailableError, IdempotencyError, InvalidConfigurationError, OutcomeUnknownError } from '../errors';
import { classifyPostgresError } from '../store/postgres/errors';
import { withClient } from '../store/postgres/runner';
import { PostgresKeyStore, type StoreOptions } from '../store/postgres/stores';
import type { ReservationRequest, ReservationResult } from '../types';
import { CommitRefusedError, QueryFailedError } from './errors';
import { KEY_PLACEHOLDER, scanSql } from './sqlText';

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

// Statements that would end or split the transaction the key and the effect share (COMMIT
// PREPARED, ROLLBACK PREPARED and PREPARE TRANSACTION start with one of these words too).
const TRANSACTION_CONTROL = new Set(['begin', 'start', 'commit', 'end', 'rollback', 'abort', 'savepoint', 'release', 'prepare']);
const MAX_QUERY_LENGTH = 100_000;

/** The user's SQL, checked once per node run, and where the key the node derived goes in it. */
export interface EffectQueryTemplate {
	text: string;
	/** Offsets of KEY_PLACEHOLDER in `text`, each replaced by the key's bind parameter. */
	keyPlaceholders: number[];
	/** The highest $n the text uses. */
	highestParameter: number;
}

/**
 * Checks the user's SQL once per node run. Throws InvalidConfigurationError. Every statement of the
 * text is read, with comments, strings and quoted identifiers as Postgres reads them, both as a
 * server with standard_conforming_strings on and off reads them (a backslash before a quote), so
 * no comment or string can hide transaction control.
 */
export function parseEffectQuery(text: string): EffectQueryTemplate {
	if (typeof text !== 'string' || text.trim() === '') throw new InvalidConfigurationError('The query is empty.');
	if (text.length > MAX_QUERY_LENGTH) throw new InvalidConfigurationError(`The query is longer than ${MAX_QUERY_LENGTH} characters.`);
	// The protocol ends the query text at a NUL: Postgres would run less than what was checked.
	if (text.includes('\0')) throw new InvalidConfigurationError('The query contains a NUL character.');
	const standard = scanSql(text, false);
	const backslashes = scanSql(text, true);
	for (const [first, second] of [...standard.statements, ...backslashes.statements]) {
		if (TRANSACTION_CONTROL.has(first)) {
			const words = second === 'prepared' || second === 'transaction' ? `${first} ${second}` : first;
			throw new InvalidConfigurationError(
				`The query contains ${words.toUpperCase()}: the node runs it inside its own transaction (with the key), so transaction control is not allowed.`,
			);
		}
	}
	if (standard.keyPlaceholders.join() !== backslashes.keyPlaceholders.join()) {
		throw new InvalidConfigurationError(
			`Where ${KEY_PLACEHOLDER} stands in the query depends on how the server reads a backslash before a quote (standard_conforming_strings): write such a string as E'…', or without the backslash.`,
		);
	}
	return {
		text,
		keyPlaceholders: standard.keyPlaceholders,
		highestParameter: Math.max(standard.highestParameter, backslashes.highestParameter),
	};
}

/** Checks the user's SQL (see parseEffectQuery). */
export function validateEffectQuery(text: string): void {
	parseEffectQuery(text);
}

/**
 * One item's query: the template with the item's Query Parameters, and the derived key bound as the
 * parameter after them wherever the text says KEY_PLACEHOLDER. A text without it is sent as written.
 */
export function bindEffectQuery(template: EffectQueryTemplate, values: unknown[], key: string): EffectQuery {
	if (template.keyPlaceholders.length === 0) return { text: template.text, values };
	// Otherwise a $n with no value of its own would silently be the key.
	if (template.highestParameter > values.length) {
		throw new InvalidConfigurationError(
			`The query uses $${template.highestParameter}, but Query Parameters gives ${values.length} value${values.length === 1 ? '' : 's'}: with ${KEY_PLACEHOLDER} in the query, every $n needs its value in Query Parameters.`,
		);
	}
	const keyParameter = `$${values.length + 1}`;
	let text = '';
	let from = 0;
	for (const offset of template.keyPlaceholders) {
		text += template.text.slice(from, offset) + keyParameter;
		from = offset + KEY_PLACEHOLDER.length;
	}
	return { text: text + template.text.slice(from), values: [...values, key] };
}

/**
 * Reserves an idempotency key (permanent, the same statement as Idempotency Reserve) and runs the
 * user's SQL in one transaction, so both commit or neither does:
 *
 * ```
 * begin ─ reserve ─┬─ new ──────── user's SQL ─┬─ ok ──── commit   → New (key and effect both stored)
 *                  │                           └─ error ─ close    → QueryFailedError (nothing stored)
 *                  └─ duplicate ─────────────────────────  commit   → Duplicate (the SQL does not run)
 * commit refused by Postgres (deferred constraint, 40001)   → CommitRefusedError (nothing stored)
 * any failure or crash before commit                       → Postgres rolls back: nothing stored
 * ```
 *
 * A connection the user's SQL ran on, or with any failure, is closed after its transaction: see run().
 *
 * A concurrent delivery of the same key waits on the key's row lock until this transaction ends,
 * then sees Duplicate (committed) or reserves it itself (rolled back): the effect runs once.
 * One transaction per item, so one item's failing query never undoes another item's effect.
 */
export class OneTransactionEffect {
	/** The keys store on the pool: checks (and creates or upgrades) the table once per pool. */
	private readonly poolStore: PostgresKeyStore;

	constructor(
		private readonly pool: Pool,
		private readonly options: StoreOptions,
	) {
		this.poolStore = new PostgresKeyStore(pool, options);
	}

	async run(request: ReservationRequest, query: EffectQuery, options: OneTransactionOptions): Promise<OneTransactionResult> {
		// Before taking the transaction's connection: the check may need one of its own.
		await this.poolStore.ready();
		return withClient(this.pool, async (session) => {
			const { client } = session;
			// The connection is closed after use, never returned to the pool, unless only the node's own
			// statements ran and each was answered. A transaction that did not commit ends with it:
			// Postgres rolls back, even behind a statement still running after the Query Timeout (a
			// ROLLBACK sent then would wait behind it, time out too, and a pooled connection would carry
			// the open transaction into the next Reserve, Complete or item). And nothing the user's SQL did
			// to the session (SET, SET ROLE, set_config, advisory locks, temporary tables, LISTEN,
			// DEALLOCATE, also from inside a function) reaches a later operation.
			session.reusable = false;
			try {
				await client.query('begin');
				const [reservation] = await PostgresKeyStore.inTransaction(this.pool, client, { ...this.options, createTable: false }).reserve(
					[request],
					{
						mode: 'permanent',
						leaseSeconds: 300,
						retentionSeconds: options.retentionSeconds,
						executionId: options.executionId,
						workflowId: options.workflowId,
						instanceId: options.instanceId,
					},
				);
				let result: OneTransactionResult;
				if (reservation.outcome === 'new') {
					const effect = await runUserQuery(client, query);
					result = { outcome: 'new', reservation, rows: effect.rows, rowCount: effect.rowCount ?? 0, command: effect.command };
				} else {
					// Committed too: the duplicate count and last-seen time are worth keeping.
					result = { outcome: 'duplicate', reservation };
				}
				await commit(client);
				// Only the node's own statements ran, and each was answered: the session is as the pool gave it.
				session.reusable = result.outcome === 'duplicate';
				return result;
			} catch (error) {
				throw error instanceof IdempotencyError ? error : classifyPostgresError(error);
			}
		});
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
	const code = (error as { code?: unknown }).code;
	// Postgres answers values that do not match the query's $n (Query Parameters) with 08P01, a
	// protocol violation: the query's fault, on a connection that still answers.
	const parameterMismatch = code === '08P01' && error instanceof DatabaseError;
	if (classified instanceof DatabaseUnavailableError && !parameterMismatch) return classified;
	return new QueryFailedError(
		`Your query failed${typeof code === 'string' ? ` (SQLSTATE ${code})` : ''}: ${(error as Error).message}. Nothing was reserved: the next delivery runs it again.`,
		{ cause: error },
	);
}

async function commit(client: PoolClient): Promise<void> {
	let command: string;
	try {
		command = (await client.query('commit')).command;
	} catch (error) {
		throw postgresRefusedCommit(error) ? commitRefused(error) : commitOutcomeUnknown(error);
	}
	// Postgres answers COMMIT of a transaction an error aborted with ROLLBACK, not with an error.
	if (command !== 'COMMIT') throw commitRefused(new Error(`Postgres answered the commit with ${command}`));
}

// SQLSTATE classes whose error may come after the commit was decided (the session ended, the
// server failed), and 40003 statement_completion_unknown. Postgres reports any other failure of a
// COMMIT (deferred constraints 23xxx, serialization 40001, deadlocks 40P01, deferred triggers)
// before it writes the commit record, and rolls the transaction back.
const COMMIT_OUTCOME_UNKNOWN_CLASSES = new Set(['08', '57', '58', 'XX']);

/** Postgres answered the COMMIT with an error that means it rolled back (not a socket error such as EPIPE). */
export function postgresRefusedCommit(error: unknown): boolean {
	if (!(error instanceof DatabaseError) || typeof error.code !== 'string') return false;
	return error.code !== '40003' && !COMMIT_OUTCOME_UNKNOWN_CLASSES.has(error.code.slice(0, 2));
}

function commitRefused(error: unknown): IdempotencyError {
	const code = (error as { code?: unknown }).code;
	return new CommitRefusedError(
		`Postgres refused the commit${typeof code === 'string' ? ` (SQLSTATE ${code})` : ''}: ${(error as Error).message}. It rolled back: neither the key nor your query's effect was stored, and the next delivery runs it again.`,
		{ cause: error },
	);
}

// The commit may or may not have reached the server; both-or-neither still holds, and the next
// delivery of this key tells which (Duplicate: it committed; New: it did not).
function commitOutcomeUnknown(error: unknown): IdempotencyError {
	return new OutcomeUnknownError(
		`The commit's outcome is unknown (${(error as Error).message}). The key and the effect were stored together or not at all; the next delivery tells which.`,
		{ cause: error },
	);
}
