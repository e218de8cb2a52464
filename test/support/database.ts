import { randomBytes } from 'node:crypto';
import { Pool } from 'pg';

import type { ConnectionSettings } from '../../lib/postgres/connectionSettings';

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
