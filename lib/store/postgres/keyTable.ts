import type { Pool, QueryResultRow } from 'pg';

import { tableRef, type TableRef } from '../../identifiers';
import { KEYS_MIGRATIONS } from './migrations';
import { renderStatement, type KeyStatement, type SqlSection } from './statements';
import type { Operation } from './errors';
import { PostgresRunner, type RetryEvent, type RetryPolicy, type StatementResult } from './runner';
import { SchemaGate } from './schemaGate';

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

export const SETTLE_RETRY_MS = 30_000;
export const RESERVE_RECOVERY_MS = 10_000;

/**
 * One key table as the store's parts reach it: its statements (through the runner), its schema
 * gate and the store's retry settings.
 */
export class KeyTable {
	readonly ref: TableRef;
	readonly gate: SchemaGate;

	constructor(
		/** The pool the table is on: its schema check, and the database clock samples of its round trips. */
		readonly pool: Pool,
		/** The pool's connections, or the connection of a caller's transaction. */
		private readonly runner: PostgresRunner,
		readonly options: StoreOptions,
	) {
		this.ref = tableRef(options.schema, options.table);
		this.gate = new SchemaGate(pool, this.ref, KEYS_MIGRATIONS, options.createTable);
	}

	/** Statements join a caller's transaction: its caller checked the table before taking its connection. */
	get joinsCaller(): boolean {
		return this.runner.joinsCaller;
	}

	get settleRetryMs(): number {
		return this.options.settleRetryMs ?? SETTLE_RETRY_MS;
	}

	get reserveRecoveryMs(): number {
		return this.options.reserveRecoveryMs ?? RESERVE_RECOVERY_MS;
	}

	/** The schema check (shared by the pool's first callers of this table); not retried. */
	async ready(): Promise<void> {
		await this.gate.ready();
	}

	/** The schema check before `operation`'s statement; a lost connection is retried until `retryUntil`. */
	async readyWithin(operation: Operation, retryUntil: number): Promise<void> {
		await this.gate.readyWithin(operation, { retryUntil, onRetry: this.options.onRetry });
	}

	/** The statement from `sql/queries/` for this table; `omit` leaves one marked section out. */
	statement(name: KeyStatement, omit?: SqlSection): string {
		return renderStatement(name, this.ref, omit);
	}

	/**
	 * Sends an idempotent statement, named, retried by the runner's rules (connection-class
	 * failures with backoff before `retryUntil`, and after a lost answer for `recoverUntilMs` more;
	 * an outcome left unknown is reported as such). In a caller's transaction: once, unnamed.
	 */
	send(operation: Operation, text: string, values: unknown[], retry: Omit<RetryPolicy, 'onRetry'>): Promise<StatementResult> {
		return this.runner.run(text, values, {
			context: { table: this.ref.qualified, operation },
			named: true,
			retry: { ...retry, onRetry: this.options.onRetry },
		});
	}

	/** A statement sent once, unnamed (admin reads and cleanup). */
	async once(name: KeyStatement, values: unknown[]): Promise<{ rows: QueryResultRow[]; rowCount: number }> {
		return this.runner.run(this.statement(name), values, { context: { table: this.ref.qualified } });
	}
}
