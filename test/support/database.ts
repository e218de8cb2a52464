import { randomBytes } from 'node:crypto';
import { Pool } from 'pg';

import type { ConnectionSettings } from '../../lib/store/postgres/connectionSettings';
import { closeAllPools } from '../../lib/store/postgres/pool';
import { PostgresKeyStore } from '../../lib/store/postgres/stores';

export function databaseUrl(): string {
	const url = process.env.IDEMPOTENCY_TEST_DATABASE_URL ?? process.env.DATABASE_URL;
	if (!url) throw new Error('No test database: run through jest (globalSetup starts one) or set DATABASE_URL.');
	return url;
}

/** The test server as the package credential's fields. */
export function connectionSettings(overrides: Partial<ConnectionSettings> = {}): ConnectionSettings {
	const url = new URL(databaseUrl());
	return {
		host: url.hostname,
		port: Number(url.port || 5432),
		database: decodeURIComponent(url.pathname.slice(1)) || 'postgres',
		user: decodeURIComponent(url.username),
		password: decodeURIComponent(url.password),
		ssl: 'disable',
		maxConnections: 10,
		...overrides,
	};
}

/** A schema of its own for one test file, so files run in parallel without seeing each other's rows. */
export async function freshSchema(pool: Pool, prefix = 't'): Promise<string> {
	const schema = `${prefix}_${randomBytes(5).toString('hex')}`;
	await pool.query(`create schema ${schema}`);
	return schema;
}

export function adminPool(max = 5): Pool {
	const pool = new Pool({ connectionString: databaseUrl(), max, allowExitOnIdle: true });
	pool.on('error', () => {});
	return pool;
}

export interface PostgresPoolFixture {
	/** An admin pool on the test server, open from beforeAll to afterAll. */
	readonly pool: Pool;
}

export interface PostgresSchemaFixture extends PostgresPoolFixture {
	/** This file's own schema. */
	readonly schema: string;
	/** One stored key's row, every column (undefined when the key is not stored). */
	row(key: string, table?: string): Promise<Record<string, any> | undefined>; // eslint-disable-line @typescript-eslint/no-explicit-any -- rows are read column by column in the tests;
}

/**
 * Registers beforeAll/afterAll for a test file that talks to the test server: an admin pool of
 * `max` connections, closed after the file together with the pools the nodes opened (poolFor).
 */
export function postgresPoolFixture({ max = 5 }: { max?: number } = {}): PostgresPoolFixture {
	let pool: Pool | undefined;
	beforeAll(() => {
		pool = adminPool(max);
	});
	afterAll(async () => {
		await closeAllPools();
		await pool?.end();
	});
	return {
		get pool() {
			if (!pool) throw new Error('The pool opens in beforeAll: use it inside a test or a hook.');
			return pool;
		},
	};
}

/**
 * postgresPoolFixture plus a fresh schema for the file (named `${prefix}_…`) and, in it, the key
 * tables named in `keyTables` created as the package creates them.
 */
export function postgresSchemaFixture(
	prefix: string,
	{ keyTables = [], max }: { keyTables?: string[]; max?: number } = {},
): PostgresSchemaFixture {
	const database = postgresPoolFixture({ max });
	let schema: string | undefined;
	beforeAll(async () => {
		schema = await freshSchema(database.pool, prefix);
		for (const table of keyTables) await new PostgresKeyStore(database.pool, { schema, table, createTable: true }).createTable();
	});
	return {
		get pool() {
			return database.pool;
		},
		get schema() {
			if (!schema) throw new Error('The schema is made in beforeAll: use it inside a test or a hook.');
			return schema;
		},
		async row(key, table = 'processed_events') {
			return (await database.pool.query(`select * from ${this.schema}.${table} where key = $1`, [key])).rows[0];
		},
	};
}
