import { EmbeddedStoreUnavailableError } from './errors';

/**
 * The part of `node:sqlite` the embedded store uses. Declared here because the package's Node
 * types (Node 20) do not have the module, and loaded only when a store is opened, so the package
 * still loads on a Node without it.
 */
export interface SqliteStatement {
	all(...parameters: unknown[]): Array<Record<string, unknown>>;
	get(...parameters: unknown[]): Record<string, unknown> | undefined;
	run(...parameters: unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint };
	/** Rows as arrays instead of objects (Node 22.16+ and 24): faster for large batches. */
	setReturnArrays?(enabled: boolean): void;
	/** The result columns (Node 22.16+ and 24). */
	columns?(): Array<{ name: string }>;
}

export interface SqliteDatabase {
	exec(sql: string): void;
	prepare(sql: string): SqliteStatement;
	close(): void;
	function(name: string, options: { deterministic?: boolean; varargs?: boolean }, fn: (...args: never[]) => unknown): void;
	readonly isOpen: boolean;
	readonly isTransaction: boolean;
}

interface SqliteModule {
	DatabaseSync: new (location: string, options?: { open?: boolean; timeout?: number }) => SqliteDatabase;
}

/** The Node versions whose `node:sqlite` works without a flag. */
export const NODE_SQLITE_VERSIONS = 'Node 22.13 or later on the 22 line, or 23.4 or later (n8n 2.x ships with Node 24)';

let loaded: SqliteModule | undefined;

/** `node:sqlite`, loaded on first use; throws EmbeddedStoreUnavailableError when this Node has none. */
export function loadSqlite(): SqliteModule {
	if (loaded) return loaded;
	try {
		// Required here, not imported at the top: the package must load on Nodes without the module.
		// eslint-disable-next-line @typescript-eslint/no-require-imports
		loaded = require('node:sqlite') as SqliteModule;
		return loaded;
	} catch (error) {
		throw unavailable(error);
	}
}

function unavailable(cause: unknown): EmbeddedStoreUnavailableError {
	return new EmbeddedStoreUnavailableError(
		`The embedded key store needs Node's built-in SQLite (node:sqlite), which this n8n's Node ${process.version} does not provide${process.execArgv.includes('--no-experimental-sqlite') ? ' (it was started with --no-experimental-sqlite)' : ''}: it needs ${NODE_SQLITE_VERSIONS}, started without --no-experimental-sqlite. Upgrade n8n (or its Node), or choose the Postgres store instead (Store: Postgres, with an Idempotency Postgres credential).`,
		{ cause },
	);
}
