import type { Pool, QueryResultRow } from 'pg';

import { UnexpectedResultError } from '../../errors';
import { tableRef, type TableRef } from '../../identifiers';
import type {
	KeyDriver,
	KeyStatements,
	KeyText,
	OrderStatements,
	RetryRuleRequest,
	RowReader,
	SendRule,
	Statement,
	StatementResult,
	StoreDriver,
	StoreOperation,
} from '../driver';
import { storableText } from '../storableValues';
import { monotonicAt, monotonicNow, recordDatabaseTime } from './databaseClock';
import type { Operation } from './errors';
import { KEYS_MIGRATIONS, ORDER_MIGRATIONS, type MigrationSet } from './migrations';
import { PostgresRunner, type RetryEvent } from './runner';
import { SchemaGate } from './schemaGate';
import { renderStatement, type TableStatement } from './statements';

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

export type OrderStoreOptions = Pick<StoreOptions, 'schema' | 'table' | 'createTable'>;

export const SETTLE_RETRY_MS = 30_000;
export const RESERVE_RECOVERY_MS = 10_000;

// Release, Mark Failed and Hold stop retrying this long before the lease ends: after it, another
// delivery may take the key over and run the step anyway, so a late one gains nothing.
const LEASE_SAFETY_MARGIN_MS = 2_000;

/** pg has already parsed integers, timestamps and jsonb: values are read as they come. */
const READ: RowReader = {
	value: (row, column) => (row as QueryResultRow)[column],
	time: (row, column) => (row as QueryResultRow)[column] as Date | null,
	json: (row, column) => (row as QueryResultRow)[column] ?? null,
};

/** Each statement's bind parameters, in the order of its file's `$n`: batches as one array per column. */
type Encoders<S> = { [N in keyof S]: (parameters: S[N]) => unknown[] };

/** A column of the batch, or one null when no request fills it (not an array of nulls for pg to write and Postgres to parse). */
function sparseColumn<T>(values: Array<T | null | undefined>): Array<T | null> | null {
	const column = values.map((value) => value ?? null);
	return column.some((value) => value !== null) ? column : null;
}

const column = <T, I extends unknown[]>(items: I[], index: number) => items.map((item) => item[index] as T);

/**
 * A text[] parameter as Postgres's array literal, made in one join: pg would otherwise run its
 * escaping over each element in JavaScript, which a 10,000-key batch pays on n8n's event loop for
 * each of its columns. Only when no element needs escaping (a `"` or `\`): else the array, for pg.
 */
function textArray(values: string[]): string | string[] {
	for (const value of values) if (value.includes('"') || value.includes('\\')) return values;
	return values.length === 0 ? '{}' : `{"${values.join('","')}"}`;
}

const KEY_PARAMETERS: Encoders<KeyStatements> = {
	reserve: (p) => [
		textArray(p.requests.map((request) => request.key)),
		textArray(p.requests.map((request) => request.keySource)),
		sparseColumn(p.requests.map((request) => request.payloadHash)),
		textArray(p.tokens),
		p.mode,
		p.leaseSeconds,
		p.retentionSeconds,
		p.executionId,
		p.workflowId,
		// Replay evidence, stored with a new reservation only (see sql/postgres/queries/reserve.sql).
		sparseColumn(p.requests.map((request) => request.evidence?.payloadJson)),
		sparseColumn(p.requests.map((request) => request.evidence?.payloadBytes)),
		sparseColumn(p.requests.map((request) => request.evidence?.source)),
		sparseColumn(p.requests.map((request) => request.evidence?.correlationId)),
		p.instanceId,
		// Inbox events, stored with a new reservation only.
		sparseColumn(p.requests.map((request) => request.inbox?.owner)),
		sparseColumn(p.requests.map((request) => request.inbox?.item)),
		sparseColumn(p.requests.map((request) => request.inbox?.maxAttempts)),
		sparseColumn(p.requests.map((request) => request.inbox?.retryForMs)),
		sparseColumn(p.requests.map((request) => request.inbox?.firstRetryMs)),
	],
	claimForReplay: (p) => [
		column(p.claims, 0),
		column(p.claims, 1),
		p.leaseSeconds,
		p.retentionSeconds,
		p.executionId,
		p.workflowId,
		p.instanceId,
	],
	claimDueInbox: (p) => [p.owner, p.limit, p.leaseMs, p.retentionSeconds, p.tokens, p.instanceId],
	nextInboxDue: (p) => [p.owner],
	complete: (p) => [column(p.items, 0), column(p.items, 1), column(p.items, 2)],
	release: (p) => [column(p.items, 0), column(p.items, 1), column(p.items, 2), p.retryCapMs],
	fail: (p) => [column(p.items, 0), column(p.items, 1), column(p.items, 2), column(p.items, 3), p.retryCapMs],
	hold: (p) => [column(p.items, 0), column(p.items, 1), column(p.items, 2)],
	unsettledKeys: (p) => [p.keys],
	releaseExecution: (p) => [p.executionId, p.workflowId, p.instanceId, p.jitter, p.retryCapMs],
	failExecution: (p) => [p.executionId, p.error, p.workflowId, p.instanceId, p.jitter, p.retryCapMs],
	cleanup: (p) => [p.retentionSeconds, p.limit],
	getKeys: (p) => [p.keys, p.inboxItem],
	listKeys: (p) => [
		p.afterKey,
		p.status,
		p.stuckLeasesOnly,
		p.olderThanSeconds,
		p.keyPrefix,
		p.limit,
		p.replayableOnly,
		p.maxBytes,
		p.deadLetteredOnly,
	],
	stats: (p) => [p.windowSeconds],
	countAnswer: (p) => [p.answer],
	answerCounts: (p) => [p.windowSeconds],
	answerCountsByHour: (p) => [p.windowSeconds],
	recordExecution: (p) => [p.key, p.ownerToken, p.executionId],
};

const ORDER_PARAMETERS: Encoders<OrderStatements> = {
	orderAdvance: (p) => [column(p.items, 0), column(p.items, 1), column(p.items, 2), p.equalVersion, p.executionId, p.workflowId],
};

// A settle's answer carries the database's time (completed_at): it keeps the clock sample fresh.
const SETTLES: ReadonlySet<string> = new Set(['complete', 'release', 'fail']);

/**
 * One Postgres table through the one runner (runner.ts): its schema gate before first use, its
 * statements from `sql/postgres/queries/`, each sent with the runner's naming and retry rules.
 */
export class PostgresDriver<S> implements StoreDriver<S> {
	readonly backend = 'postgres' as const;
	readonly ref: TableRef;
	protected readonly gate: SchemaGate;

	constructor(
		/** The pool the table is on: its schema check, and the database clock samples of its round trips. */
		protected readonly pool: Pool,
		/** The pool's connections, or the connection of a caller's transaction. */
		protected readonly runner: PostgresRunner,
		protected readonly options: OrderStoreOptions & Pick<StoreOptions, 'onRetry'>,
		migrations: MigrationSet,
		private readonly parameters: Encoders<S>,
	) {
		this.ref = tableRef(options.schema, options.table);
		this.gate = new SchemaGate(pool, this.ref, migrations, options.createTable);
	}

	/**
	 * The schema check (shared by the pool's first callers of this table). Statements that join a
	 * caller's transaction skip it: the caller checked the table before taking its connection (a
	 * check needs a second one from the pool).
	 */
	async ready(operation: StoreOperation, rule: SendRule): Promise<void> {
		if (this.runner.joinsCaller) return;
		if (rule.kind === 'write' && rule.readyRetryUntil !== undefined) {
			await this.gate.readyWithin(operation as Operation, { retryUntil: rule.readyRetryUntil, onRetry: this.options.onRetry });
		} else {
			await this.gate.ready();
		}
	}

	/** Creates the table or runs its pending migrations, whatever the createTable option says; refuses a table newer than the package. */
	async createTable(): Promise<void> {
		await this.gate.create();
	}

	async send(
		operation: StoreOperation,
		statement: Statement<S>,
		rule: SendRule,
		then?: (result: StatementResult) => Statement<S> | undefined,
	): Promise<StatementResult[]> {
		const first = await this.sendOne(operation, statement, rule);
		const next = then?.(first);
		return next ? [first, await this.sendOne(operation, next, rule)] : [first];
	}

	/**
	 * An idempotent write goes named, retried by the runner's rules (connection-class failures with
	 * backoff before `retryUntil`, and after a lost answer for `recoverUntilMs` more; an outcome
	 * left unknown is reported as such); in a caller's transaction, once and unnamed. Anything else
	 * is sent once, unnamed: admin reads, cleanup and the trigger's bookkeeping (a count re-sent
	 * after a lost answer would count the delivery twice).
	 */
	private async sendOne(operation: StoreOperation, statement: Statement<S>, rule: SendRule): Promise<StatementResult> {
		const name = statement.name as string;
		const text = renderStatement(name as TableStatement, this.ref, statement.omit);
		const values = this.parameters[statement.name](statement.parameters);
		const table = this.ref.qualified;
		const result =
			rule.kind === 'write'
				? await this.runner.run(text, values, {
						context: { table, operation: operation as Operation },
						named: true,
						retry: {
							retryUntil: rule.retryUntil,
							...(rule.recoverUntilMs === undefined ? {} : { recoverUntilMs: rule.recoverUntilMs }),
							onRetry: this.options.onRetry,
						},
					})
				: await this.runner.run(text, values, { context: { table } });
		if (SETTLES.has(name)) recordDatabaseTime(this.pool, result.rows[0]?.completed_at);
		return { rows: result.rows, rowCount: result.rowCount, uncertain: result.uncertain, read: READ };
	}
}

/** Postgres text holds any string but NUL (a lone surrogate is sent as U+FFFD). */
const POSTGRES_KEYS: KeyText = {
	assertReservable: () => undefined,
	storable: (key) => !key.includes('\u0000'),
	recordable: () => true,
	storedAs: (key) => storableText(key).text,
};

export class PostgresKeyDriver extends PostgresDriver<KeyStatements> implements KeyDriver {
	readonly keys = POSTGRES_KEYS;
	readonly cleanupChunkRows = Infinity;

	constructor(
		pool: Pool,
		runner: PostgresRunner,
		private readonly storeOptions: StoreOptions,
	) {
		super(pool, runner, storeOptions, KEYS_MIGRATIONS, KEY_PARAMETERS);
	}

	retryRule({ purpose, leaseEnds = [] }: RetryRuleRequest): Extract<SendRule, { kind: 'write' }> {
		const settleRetryMs = this.storeOptions.settleRetryMs ?? SETTLE_RETRY_MS;
		switch (purpose) {
			case 'reserve':
				return { kind: 'write', retryUntil: null, recoverUntilMs: this.storeOptions.reserveRecoveryMs ?? RESERVE_RECOVERY_MS };
			// Complete retries for its whole budget, past the lease end too: the effect has happened, and a
			// key completed late, before any delivery took it over, is a duplicate to every later delivery,
			// where one left to lapse has the step run again. A late Complete after a take-over matches no
			// row (the owner token is the new run's) and reports Stale.
			case 'settleExecution':
			case 'complete':
				return { kind: 'write', retryUntil: monotonicNow() + settleRetryMs };
			case 'settle':
				return { kind: 'write', retryUntil: this.settleDeadline(settleRetryMs, leaseEnds) };
		}
	}

	noRowError(key: string): Error {
		return new UnexpectedResultError(
			`Postgres returned no row for reserved key ${JSON.stringify(key.slice(0, 80))} (a trigger or rule on ${this.ref.qualified}?). The other keys of the batch may have been reserved.`,
		);
	}

	/**
	 * Retrying a settle ends at the retry budget, and before the earliest known lease end. Lease ends
	 * are database times: they are placed on the host's monotonic clock through the database's time
	 * last read on this pool, never compared with the host's wall clock. Before any round trip has
	 * read it, only the budget applies (a settle after the lease end is fenced by the owner token).
	 */
	private settleDeadline(settleRetryMs: number, leaseEnds: Array<Date | null | undefined>): number {
		let deadline = monotonicNow() + settleRetryMs;
		for (const leaseEnd of leaseEnds) {
			if (!leaseEnd || Number.isNaN(leaseEnd.getTime())) continue;
			const at = monotonicAt(this.pool, leaseEnd);
			if (at !== undefined) deadline = Math.min(deadline, at - LEASE_SAFETY_MARGIN_MS);
		}
		return deadline;
	}
}

export class PostgresOrderDriver extends PostgresDriver<OrderStatements> {
	constructor(pool: Pool, options: OrderStoreOptions) {
		super(pool, PostgresRunner.onPool(pool), options, ORDER_MIGRATIONS, ORDER_PARAMETERS);
	}
}
