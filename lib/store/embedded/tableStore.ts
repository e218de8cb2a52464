import {
	DEFAULT_LOCK_WAIT_MS,
	connectionFor,
	ensureTable,
	namedStatement,
	type EmbeddedConnection,
	type LockWait,
} from './connection';
import type { EmbeddedOperation } from './errors';
import { embeddedTableName, renderEmbeddedStatement, type EmbeddedStatement } from './statements';

export interface EmbeddedStoreOptions {
	/** The store file (created with its folder when missing). */
	file: string;
	/** The table's name in the file (default processed_events; object_versions for the Order Guard). */
	table?: string;
	/** Create the table (or bring it to the package's schema version) on first use; default true. */
	createTable?: boolean;
	/** How long a call waits, asynchronously, for another process's write lock (ms; default 10 s). */
	lockWaitMs?: number;
}

/**
 * What the key store and the Order Guard's store share: one table of one family in the file, the
 * process's connection to it (opened on first use, reopened after a close), the table's schema
 * check before first use, and its statements.
 */
export abstract class EmbeddedTableStore {
	readonly backend = 'embedded' as const;
	readonly file: string;
	protected readonly table: string;
	private readonly createTableOption: boolean;
	private readonly lockWaitMs: number;

	protected constructor(
		options: EmbeddedStoreOptions,
		private readonly family: 'keys' | 'order',
		defaultTable: string,
	) {
		this.file = options.file;
		this.table = embeddedTableName(options.table ?? defaultTable).name;
		this.createTableOption = options.createTable ?? true;
		this.lockWaitMs = options.lockWaitMs ?? DEFAULT_LOCK_WAIT_MS;
	}

	async createTable(): Promise<void> {
		await ensureTable(this.open(), this.family, this.table, true, this.lockWaitMs);
	}

	/** The process's connection to the file, its table checked (or created) once. */
	protected async readyConnection(): Promise<EmbeddedConnection> {
		const connection = this.open();
		await ensureTable(connection, this.family, this.table, this.createTableOption, this.lockWaitMs);
		return connection;
	}

	/** The file's current connection: after one was closed or retired (its file replaced), a new one. */
	protected open(): EmbeddedConnection {
		return connectionFor(this.file);
	}

	protected statement(connection: EmbeddedConnection, name: EmbeddedStatement) {
		return namedStatement(connection, name, this.family, this.table);
	}

	protected statementText(name: EmbeddedStatement): string {
		return renderEmbeddedStatement(name, this.family, this.table);
	}

	protected wait(operation: EmbeddedOperation): LockWait {
		return { lockWaitMs: this.lockWaitMs, operation };
	}
}
