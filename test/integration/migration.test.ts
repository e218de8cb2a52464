import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Pool } from 'pg';

import { IdempotencyStore } from '../../lib/store';
import { adminPool, freshSchema } from '../support/database';

const sqlFile = (name: string) => readFileSync(path.join(__dirname, '..', '..', 'sql', name), 'utf8');

let pool: Pool;

beforeAll(() => {
	pool = adminPool();
});

afterAll(() => pool.end());

/** Runs a sql/ file as a DBA would with psql, in the given schema. */
async function runAsDba(schema: string, file: string): Promise<void> {
	const client = await pool.connect();
	try {
		await client.query(`set search_path to ${schema}`);
		await client.query(sqlFile(file));
	} finally {
		await client.query('reset search_path');
		client.release();
	}
}

describe('sql/002_migrate_from_seed.sql', () => {
	it('upgrades the seed recipe table in place, twice without harm; seed keys stay duplicates', async () => {
		const schema = await freshSchema(pool, 'seed');
		// The hand-built recipe's table and a few of its keys.
		await pool.query(`create table ${schema}.processed_events (key text primary key, first_seen timestamptz not null default now())`);
		await pool.query(`insert into ${schema}.processed_events (key) values ('evt:evt_old'), ('sha256:abc')`);

		const store = new IdempotencyStore(pool, { schema, table: 'processed_events', createTable: false });
		const options = { mode: 'permanent' as const, leaseSeconds: 60, retentionSeconds: 86_400 };
		await expect(store.reserve([{ key: 'evt:evt_new', keySource: 'event-id', payloadHash: null }], options)).rejects.toThrow(
			/sql\/002_migrate_from_seed\.sql/,
		);

		await runAsDba(schema, '002_migrate_from_seed.sql');
		await runAsDba(schema, '002_migrate_from_seed.sql');

		const results = await store.reserve(
			[
				{ key: 'evt:evt_old', keySource: 'event-id', payloadHash: null },
				{ key: 'evt:evt_new', keySource: 'event-id', payloadHash: null },
			],
			options,
		);
		expect(results.map((result) => result.outcome)).toEqual(['duplicate', 'new']);
		expect(results[0].record).toMatchObject({ status: 'completed', attempts: 1 });
		// The seed's own insert still works against the migrated table.
		await pool.query(`insert into ${schema}.processed_events (key) values ('evt:from_seed_flow') on conflict (key) do nothing returning key`);
	});

	it('is a no-op on a table created by 001_create_table.sql, and 001 is safe to run twice', async () => {
		const schema = await freshSchema(pool, 'fresh');
		await runAsDba(schema, '001_create_table.sql');
		await runAsDba(schema, '001_create_table.sql');
		await runAsDba(schema, '002_migrate_from_seed.sql');
		const { rows } = await pool.query(
			`select count(*)::int as n from information_schema.columns where table_schema = $1 and table_name = 'processed_events'`,
			[schema],
		);
		expect(rows[0].n).toBe(16);
	});

	it('the create-table option makes the table once even when many executions start together', async () => {
		const schema = await freshSchema(pool, 'auto');
		const stores = Array.from({ length: 6 }, () => new IdempotencyStore(pool, { schema, table: 'auto_keys', createTable: true }));
		const options = { mode: 'permanent' as const, leaseSeconds: 60, retentionSeconds: 86_400 };
		const results = await Promise.all(stores.map((store) => store.reserve([{ key: 'k', keySource: 'custom', payloadHash: null }], options)));
		expect(results.flat().filter((result) => result.outcome === 'new')).toHaveLength(1);
	});
});
