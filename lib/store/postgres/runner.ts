import { setTimeout as sleep } from 'node:timers/promises';
import { Client, type Pool, type PoolClient, type QueryResultRow } from 'pg';

import { IdempotencyError } from '../../errors';
import { classifyPostgresError, connectionFailureReason, type ErrorContext, type Operation } from './errors';
import { toPoolConfig, type ConnectionSettings } from './connectionSettings';
import { monotonicNow } from './databaseClock';
import { namesStatements, preparedStatementFailure, sendUnnamed, statementName } from './preparedStatements';

/**
 * The one way the package talks to Postgres. Every path — the key store, the Order Guard, the
 * one-transaction effect, migrations and the credential test — checks connections out, guards
 * them and gives them back here:
 *
 * - an `'error'` listener on every checked-out connection: a dying connection emits `'error'` on
 *   its client as well as rejecting the query, and without a listener Node would crash n8n;
 * - a connection that failed (or that a caller's statements may have changed) is closed, never
 *   returned to the pool;
 * - named prepared statements where the caller asks for them (see preparedStatements.ts), sent
 *   again unnamed on a new connection when the server refuses the name;
 * - retries with backoff for connection-class failures, and the outcome-unknown rule: once a sent
 *   statement's answer was lost, no later failure may report that nothing changed.
 *
 * Errors leave the runner classified (IdempotencyError subclasses, the pg error as their `cause`).
 */

/** Called before each retry (for logs and tests): what failed, and whether its outcome is unknown. */
export interface RetryEvent {
	operation: Operation;
	/** The failed attempt's statement had been sent: it may have been applied. */
	outcomeUnknown: boolean;
	reason: string;
}

export interface RetryPolicy {
	/** Retry connection-class failures until this time (ms on the monotonic clock, see databaseClock.ts); null: only to recover a lost answer. */
	retryUntil: number | null;
	/** After a lost answer, keep re-sending for this long. */
	recoverUntilMs?: number;
	onRetry?: (event: RetryEvent) => void;
}

export interface RunOptions {
	/** Names the table and the operation in error messages; `operation` also names retries. */
	context?: ErrorContext;
	/**
	 * Send as a named prepared statement (on the pool's own connections, when the pool names
	 * statements). For the statements sent on every delivery; a statement sent once per process
	 * (the schema check) or by hand (admin reads) would only hold server memory on each connection.
	 */
	named?: boolean;
	/** Retry connection-class failures (idempotent statements only); without it, one attempt. */
	retry?: RetryPolicy;
}

export interface StatementResult {
	rows: QueryResultRow[];
	rowCount: number;
	/** An attempt's answer was lost after the statement was sent: it may have been applied then. */
	uncertain: boolean;
}

/** One attempt's outcome; a failure says whether the statement had been sent (its outcome is then unknown). */
export type Attempt<T> = { ok: true; value: T } | { ok: false; error: unknown; sent: boolean; connectionError?: unknown };

// The words of transaction control, sent as they are (no statement file: there is nothing to render).
const BEGIN = 'begin';
const COMMIT = 'commit';
const ROLLBACK = 'rollback';

const FIRST_RETRY_DELAY_MS = 200;
const MAX_RETRY_DELAY_MS = 2_000;

/** The pg error behind a classified one (the runner's errors carry it as `cause`). */
export function postgresCause(error: unknown): unknown {
	return error instanceof IdempotencyError && error.cause !== undefined ? error.cause : error;
}

/** The connection broke (or never opened): it must not go back to the pool. */
export function isConnectionFailure(error: unknown): boolean {
	return connectionFailureReason(postgresCause(error)) !== undefined;
}

/**
 * Calls `attempt` until it succeeds. A connection-class failure is retried with backoff (200 ms,
 * doubling to 2 s) before `retryUntil`, and, once a sent statement's answer was lost, for
 * `recoverUntilMs` more; any other failure is thrown at once. When the last failure leaves a sent
 * statement's outcome unknown, the error says so (OutcomeUnknownError) instead of "nothing changed".
 * `connectionError` is the pg error behind an attempt's already-classified `error`.
 */
export async function retrying<T>(
	attempt: () => Promise<Attempt<T>>,
	policy: RetryPolicy,
	context: ErrorContext & { operation: Operation },
): Promise<{ value: T; uncertain: boolean }> {
	let uncertain = false;
	let recoverUntil: number | null = null;
	let delay = FIRST_RETRY_DELAY_MS;
	for (;;) {
		const result = await attempt();
		if (result.ok) return { value: result.value, uncertain };
		const underlying = result.connectionError ?? result.error;
		const reason = connectionFailureReason(underlying);
		if (reason === undefined) throw classifyPostgresError(result.error, { ...context, outcomeUnknown: uncertain });
		if (result.sent && !uncertain) {
			uncertain = true;
			if (policy.recoverUntilMs) recoverUntil = monotonicNow() + policy.recoverUntilMs;
		}
		const deadline = Math.max(policy.retryUntil ?? 0, recoverUntil ?? 0);
		if (monotonicNow() + delay >= deadline) throw classifyPostgresError(underlying, { ...context, outcomeUnknown: uncertain });
		policy.onRetry?.({ operation: context.operation, outcomeUnknown: result.sent, reason });
		await sleep(delay);
		delay = Math.min(delay * 2, MAX_RETRY_DELAY_MS);
	}
}

/**
 * Where statements go: the pool's own connections (one per statement, retried and named on
 * request), or the connection of a transaction a caller opened (never retried there: a failed
 * statement has aborted the transaction, and the caller's rollback makes the outcome known; never
 * named: a refused name would abort it too).
 */
export class PostgresRunner {
	private constructor(
		private readonly pool: Pool | undefined,
		private readonly client: PoolClient | Client | undefined,
	) {}

	static onPool(pool: Pool): PostgresRunner {
		return new PostgresRunner(pool, undefined);
	}

	/** Statements on `client`, inside whatever transaction its owner opened. */
	static onClient(client: PoolClient | Client): PostgresRunner {
		return new PostgresRunner(undefined, client);
	}

	/** True when statements join a caller's connection (and its transaction). */
	get joinsCaller(): boolean {
		return this.client !== undefined;
	}

	async run(text: string, values: unknown[], options: RunOptions = {}): Promise<StatementResult> {
		const context = options.context ?? {};
		const once = () => this.attempt(text, values, options.named === true);
		if (!options.retry || this.client) {
			const result = await once();
			if (result.ok) return { ...result.value, uncertain: false };
			throw classifyPostgresError(result.error, context);
		}
		const operation = context.operation;
		// A programming error: a retried statement's errors and retry events name what it was doing.
		if (!operation) throw new Error('A retried statement needs its operation in the error context.');
		const { value, uncertain } = await retrying(once, options.retry, { ...context, operation });
		return { ...value, uncertain };
	}

	private async attempt(text: string, values: unknown[], named: boolean): Promise<Attempt<{ rows: QueryResultRow[]; rowCount: number }>> {
		if (this.client) {
			try {
				const result = await this.client.query(text, values);
				return { ok: true, value: { rows: result.rows, rowCount: result.rowCount ?? 0 } };
			} catch (error) {
				return { ok: false, error, sent: true };
			}
		}
		return sendOnPool(this.pool!, text, values, named && namesStatements(this.pool!));
	}
}

/**
 * One try on one pooled connection; a connection that failed mid-statement is closed. A named
 * statement the server refuses (nothing of it ran) is sent again at once, unnamed, on a new
 * connection; after a pooler's refusal the pool stops naming statements for good.
 */
async function sendOnPool(
	pool: Pool,
	text: string,
	values: unknown[],
	named: boolean,
): Promise<Attempt<{ rows: QueryResultRow[]; rowCount: number }>> {
	let client: PoolClient;
	try {
		client = await pool.connect();
	} catch (error) {
		return { ok: false, error, sent: false };
	}
	client.on('error', ignoreError);
	try {
		const result = await client.query(named ? { name: statementName(text), text, values } : { text, values });
		client.removeListener('error', ignoreError);
		client.release();
		return { ok: true, value: { rows: result.rows, rowCount: result.rowCount ?? 0 } };
	} catch (error) {
		const refusedName = named ? preparedStatementFailure(error) : undefined;
		if (refusedName) {
			// This connection's record of what it prepared is wrong: the connection goes.
			client.release(error as Error);
			if (refusedName === 'pooler') sendUnnamed(pool);
			return sendOnPool(pool, text, values, false);
		}
		const broken = connectionFailureReason(error) !== undefined;
		// A broken connection is closed, not pooled; its listener stays for its late events.
		if (!broken) client.removeListener('error', ignoreError);
		client.release(broken ? (error as Error) : undefined);
		return { ok: false, error, sent: true };
	}
}

/** A checked-out connection. `reusable` false closes it after use instead of pooling it. */
export interface Session {
	client: PoolClient;
	/** The package's statements on this connection (unnamed, never retried). */
	runner: PostgresRunner;
	reusable: boolean;
}

/**
 * Checks a connection out for several statements and gives it back: closed when the work failed
 * with a broken connection or the caller marked it not reusable, pooled otherwise. A failure to
 * connect is classified with `context`.
 */
export async function withClient<T>(pool: Pool, use: (session: Session) => Promise<T>, context: ErrorContext = {}): Promise<T> {
	const client = await pool.connect().catch((error: unknown) => {
		throw classifyPostgresError(error, context);
	});
	client.on('error', ignoreError);
	const session: Session = { client, runner: PostgresRunner.onClient(client), reusable: true };
	let broken: Error | undefined;
	try {
		return await use(session);
	} catch (error) {
		if (isConnectionFailure(error)) broken = postgresCause(error) as Error;
		throw classifyPostgresError(error, context);
	} finally {
		const pooled = !broken && session.reusable;
		if (pooled) client.removeListener('error', ignoreError);
		client.release(broken ?? !pooled);
	}
}

/**
 * Runs `use` in a transaction on one checked-out connection: committed when it returns, rolled
 * back when it throws (a connection that broke is closed instead, which rolls back too).
 */
export async function inTransaction<T>(pool: Pool, use: (runner: PostgresRunner) => Promise<T>, context: ErrorContext = {}): Promise<T> {
	return withClient(
		pool,
		async (session) => {
			await session.runner.run(BEGIN, [], { context });
			try {
				const value = await use(session.runner);
				await session.runner.run(COMMIT, [], { context });
				return value;
			} catch (error) {
				if (!isConnectionFailure(error)) {
					// Unsure the rollback was applied: the connection is closed, which rolls back.
					await session.client.query(ROLLBACK).catch(() => {
						session.reusable = false;
					});
				}
				throw classifyPostgresError(error, context);
			}
		},
		context,
	);
}

/**
 * Opens one connection of its own with the credential's settings (the credential test: no pool),
 * guarded like the pool's, and closes it after `use`. Connection errors are thrown as pg gives them.
 */
export async function withOwnConnection<T>(settings: ConnectionSettings, use: (runner: PostgresRunner) => Promise<T>): Promise<T> {
	let client: Client | undefined;
	try {
		const config = toPoolConfig(settings);
		client = new Client({
			host: config.host,
			port: config.port,
			database: config.database,
			user: config.user,
			password: config.password,
			ssl: config.ssl,
			connectionTimeoutMillis: config.connectionTimeoutMillis,
			statement_timeout: config.statement_timeout,
			query_timeout: config.query_timeout,
			application_name: config.application_name,
		});
		client.on('error', ignoreError);
		await client.connect();
		return await use(PostgresRunner.onClient(client));
	} finally {
		await client?.end().catch(() => {});
	}
}

function ignoreError(): void {}
