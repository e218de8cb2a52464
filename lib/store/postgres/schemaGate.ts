import type { Pool } from 'pg';

import type { TableRef } from '../../identifiers';
import { ensureSchema, type MigrationSet } from './migrations';
import type { Operation } from './errors';
import { retrying, type RetryPolicy } from './runner';

const checked = new WeakMap<Pool, Map<string, Promise<void>>>();

/**
 * The schema check before a table's first statement: once per pool and table the table's version
 * is read and, when allowed, the table created or migrated (migrations.ts). Concurrent
 * first callers share one check; a failed check is forgotten, so the next call tries again.
 */
export class SchemaGate {
	constructor(
		private readonly pool: Pool,
		private readonly table: TableRef,
		private readonly migrations: MigrationSet,
		/** Create the table or run its pending migrations; off, only check and name the files to run. */
		private readonly migrate: boolean,
	) {}

	async ready(): Promise<void> {
		let perPool = checked.get(this.pool);
		if (!perPool) {
			perPool = new Map();
			checked.set(this.pool, perPool);
		}
		const table = this.table.qualified;
		let check = perPool.get(table);
		if (!check) {
			check = ensureSchema(this.pool, this.table, this.migrations, this.migrate);
			perPool.set(table, check);
			check.catch(() => perPool.delete(table));
		}
		await check;
	}

	/**
	 * ready(), with a lost connection retried until `retry.retryUntil` and named as `operation`
	 * (the check only reads, or migrates in a transaction: it is never outcome-unknown).
	 */
	async readyWithin(operation: Operation, retry: RetryPolicy): Promise<void> {
		await retrying(
			async () => {
				try {
					return { ok: true, value: await this.ready() };
				} catch (error) {
					// ensureSchema's errors are already classified; the pg error is their cause.
					return { ok: false, error, sent: false, connectionError: (error as { cause?: unknown }).cause ?? error };
				}
			},
			retry,
			{ table: this.table.qualified, operation },
		);
	}

	/** Creates the table or runs its pending migrations, whatever `migrate` says; safe when up to date. */
	async create(): Promise<void> {
		await ensureSchema(this.pool, this.table, this.migrations, true);
	}
}
