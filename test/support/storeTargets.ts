// Where a test's keys live, as plain data a worker process receives on its command line, and how
// any process opens a store on it. Used by the jest fixture (stores.ts) and the race workers.
import { Pool } from 'pg';

import { PostgresOrderStore, PostgresKeyStore } from '../../lib/store/postgres/stores';
import type { KeyStore, OrderStore, StoreBackend } from '../../lib/store/contract';

export type Backend = StoreBackend;
export const BACKENDS: readonly Backend[] = ['postgres', 'embedded'];

export type StoreTarget =
	| { backend: 'postgres'; url: string; schema: string; table: string }
	| { backend: 'embedded'; file: string; table: string };

/** A store opened on a target, with what closes its connections. */
export interface OpenedStore<S> {
	store: S;
	/** Opens every connection now (Postgres), so a race is between statements, not connects. */
	warmUp(): Promise<void>;
	close(): Promise<void>;
}

/** The embedded store's API (lib/store/embedded/index.ts). */
interface EmbeddedModule {
	openEmbeddedKeyStore(options: { file: string; table?: string; createTable?: boolean }): KeyStore;
	openEmbeddedOrderStore(options: { file: string; table?: string; createTable?: boolean }): OrderStore;
	closeEmbeddedStores(): void;
}

const SQLITE_NEEDED =
	'The embedded store needs node:sqlite, which this Node (%s) does not have: run the tests with Node >= 22.13 ' +
	'(`npm run test:all` picks one; or `$(node -r ./test/support/register-ts.js test/support/stack/sqliteNode) node_modules/.bin/jest`).';

/** Throws the error that says which Node to use when node:sqlite is missing. */
export function requireSqlite(): void {
	try {
		// eslint-disable-next-line @typescript-eslint/no-require-imports
		if (typeof require('node:sqlite').DatabaseSync === 'function') return;
	} catch {
		// reported below
	}
	throw new Error(SQLITE_NEEDED.replace('%s', process.version));
}

/** The embedded store's module, loaded only when a test uses it (Node 20 cannot load it). */
export function embeddedModule(): EmbeddedModule {
	requireSqlite();
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	return require('../../lib/store/embedded') as EmbeddedModule;
}

function postgresPool(url: string, connections: number): { pool: Pool; warmUp: () => Promise<void> } {
	const pool = new Pool({ connectionString: url, max: connections, allowExitOnIdle: true });
	pool.on('error', () => {});
	const warmUp = async () => {
		const clients = await Promise.all(Array.from({ length: connections }, () => pool.connect()));
		clients.forEach((client) => client.release());
	};
	return { pool, warmUp };
}

/** A key store on the target. `connections` is the Postgres pool size (one file handle for embedded). */
export function openKeyStore(target: StoreTarget, connections = 1): OpenedStore<KeyStore> {
	if (target.backend === 'postgres') {
		const { pool, warmUp } = postgresPool(target.url, connections);
		return {
			store: new PostgresKeyStore(pool, { schema: target.schema, table: target.table, createTable: false }),
			warmUp,
			close: () => pool.end(),
		};
	}
	const store = embeddedModule().openEmbeddedKeyStore({ file: target.file, table: target.table, createTable: false });
	return { store, warmUp: async () => {}, close: async () => {} };
}

export function openOrderStore(target: StoreTarget, connections = 1): OpenedStore<OrderStore> {
	if (target.backend === 'postgres') {
		const { pool, warmUp } = postgresPool(target.url, connections);
		return {
			store: new PostgresOrderStore(pool, { schema: target.schema, table: target.table, createTable: false }),
			warmUp,
			close: () => pool.end(),
		};
	}
	const store = embeddedModule().openEmbeddedOrderStore({ file: target.file, table: target.table, createTable: false });
	return { store, warmUp: async () => {}, close: async () => {} };
}
