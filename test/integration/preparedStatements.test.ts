import type { Pool, PoolClient } from 'pg';

import { tableRef } from '../../lib/identifiers';
import { poolFor } from '../../lib/store/postgres/pool';
import { namesStatements, statementName } from '../../lib/store/postgres/preparedStatements';
import { PostgresKeyStore } from '../../lib/store/postgres/stores';
import { renderStatement } from '../../lib/store/postgres/statements';
import type { ReserveOptions } from '../../lib/types';
import { adminPool, connectionSettings, postgresSchemaFixture } from '../support/database';

/**
 * Named prepared statements on real Postgres, each pool with ONE connection so that what the
 * store prepared is visible to the test in pg_prepared_statements (a per-session view), and the
 * faults a pooler or a migration causes can be made on that very session.
 */

const TABLE = 'processed_events';
const permanent: ReserveOptions = { mode: 'permanent', leaseSeconds: 60, retentionSeconds: 86_400 };
const lease: ReserveOptions = { ...permanent, mode: 'lease' };
const request = (key: string) => ({ key, keySource: 'custom' as const, payloadHash: null });

const db = postgresSchemaFixture('prep', { keyTables: [TABLE] });
const pools: Pool[] = [];

function onePool(): Pool {
	const pool = adminPool(1);
	pools.push(pool);
	return pool;
}

const storeOn = (pool: Pool) => new PostgresKeyStore(pool, { schema: db.schema, table: TABLE, createTable: false });

interface Prepared {
	name: string;
	statement: string;
	executions: number;
	prepare_time: Date;
}

/** The session's prepared statements (the pool has one connection, so it is the store's session). */
async function prepared(pool: Pool | PoolClient): Promise<Prepared[]> {
	const { rows } = await pool.query(
		`select name, statement, generic_plans + custom_plans as executions, prepare_time from pg_prepared_statements where name like 'idem\\_%' order by prepare_time`,
	);
	return rows.map((row) => ({ ...row, executions: Number(row.executions) }));
}

const backendPid = async (pool: Pool): Promise<number> => (await pool.query('select pg_backend_pid() as pid')).rows[0].pid;
const storedCount = async (key: string): Promise<number> =>
	Number((await db.pool.query(`select count(*) from ${db.schema}.${TABLE} where key = $1`, [key])).rows[0].count);

afterAll(async () => {
	await Promise.all(pools.map((pool) => pool.end()));
});

describe('named prepared statements', () => {
	it('Reserve and Complete are prepared once on a connection and reused by every later call', async () => {
		const pool = onePool();
		const store = storeOn(pool);
		const owned = [];
		for (let i = 0; i < 4; i++) {
			const [result] = await store.reserve([request(`reuse-${i}`)], { ...lease, detail: 'compact' });
			expect(result.outcome).toBe('new');
			owned.push({ key: result.key, ownerToken: result.ownerToken! });
		}
		for (const item of owned) expect((await store.complete([item]))[0].applied).toBe(true);

		const statements = await prepared(pool);
		const reserve = statements.filter((s) => s.statement.includes(`insert into ${tableRef(db.schema, TABLE).qualified}`));
		const complete = statements.filter((s) => s.statement.includes("status = 'completed'"));
		// One preparation each, executed on every call: parsed once, not four times.
		expect(reserve).toHaveLength(1);
		expect(reserve[0]).toMatchObject({ executions: 4, name: statementName(reserve[0].statement) });
		expect(complete).toHaveLength(1);
		expect(complete[0].executions).toBe(4);
		expect(namesStatements(pool)).toBe(true);
	});

	it('each table and each Output variant gets a statement of its own (two tables on one pool)', async () => {
		const pool = onePool();
		const other = 'other_events';
		await new PostgresKeyStore(db.pool, { schema: db.schema, table: other, createTable: true }).createTable();
		await storeOn(pool).reserve([request('two-tables')], { ...permanent, detail: 'compact' });
		await storeOn(pool).reserve([request('two-tables-full')], permanent);
		const otherStore = new PostgresKeyStore(pool, { schema: db.schema, table: other, createTable: false });
		const [onOther] = await otherStore.reserve([request('two-tables')], { ...permanent, detail: 'compact' });

		// The same key is new in the other table: the statement ran against its own table.
		expect(onOther.outcome).toBe('new');
		const reserves = (await prepared(pool)).filter((s) => s.statement.includes('insert into '));
		expect(reserves).toHaveLength(3);
		expect(new Set(reserves.map((s) => s.name)).size).toBe(3);
	});

	it("in a caller's transaction (the one-transaction effect) statements stay unnamed", async () => {
		const pool = onePool();
		const client = await pool.connect();
		try {
			await client.query('begin');
			const store = PostgresKeyStore.inTransaction(pool, client, { schema: db.schema, table: TABLE, createTable: false });
			const [result] = await store.reserve([request('in-transaction')], permanent);
			expect(result.outcome).toBe('new');
			expect(await prepared(client)).toEqual([]);
			await client.query('commit');
		} finally {
			client.release();
		}
		expect(await storedCount('in-transaction')).toBe(1);
	});

	it("the credential's Prepared Statements off sends every statement unnamed", async () => {
		const pool = poolFor(connectionSettings({ maxConnections: 1, preparedStatements: false }));
		expect(pool).not.toBe(poolFor(connectionSettings({ maxConnections: 1 })));
		const [result] = await storeOn(pool).reserve([request('off')], permanent);
		expect(result.outcome).toBe('new');
		expect(namesStatements(pool)).toBe(false);
		expect(await prepared(pool)).toEqual([]);
	});
});

describe('when a named statement is refused', () => {
	it('a session that lost the statement (a pooler handing over another server session; here DEALLOCATE ALL) still reserves the key, once, and the pool goes unnamed', async () => {
		const pool = onePool();
		const store = storeOn(pool);
		await store.reserve([request('lost-1')], permanent);
		expect(await prepared(pool)).toHaveLength(1);
		const pidBefore = await backendPid(pool);
		// The fault: pg still believes the statement is prepared on this connection; the server does not have it.
		await pool.query('deallocate all');
		expect(await prepared(pool)).toEqual([]);

		const [result] = await store.reserve([request('lost-2')], permanent);

		expect(result.outcome).toBe('new');
		expect(await storedCount('lost-2')).toBe(1);
		// The refused connection was replaced, and this pool now sends every statement unnamed.
		expect(await backendPid(pool)).not.toBe(pidBefore);
		expect(namesStatements(pool)).toBe(false);
		const [again] = await store.reserve([request('lost-2')], permanent);
		expect(again.outcome).toBe('duplicate');
		expect(await prepared(pool)).toEqual([]);
	});

	it('a session that already holds a statement of that name (42P05) still reserves the key, once', async () => {
		const pool = onePool();
		const text = renderStatement('reserve', tableRef(db.schema, TABLE), 'full-record');
		// The fault: another client of a transaction pooler prepared this name on the same server session.
		await pool.query(`prepare ${statementName(text)} as select 1`);
		expect((await prepared(pool)).map((s) => s.statement)).toEqual([`prepare ${statementName(text)} as select 1`]);
		const pidBefore = await backendPid(pool);

		const [result] = await storeOn(pool).reserve([request('taken-name')], { ...permanent, detail: 'compact' });

		expect(result.outcome).toBe('new');
		expect(await storedCount('taken-name')).toBe(1);
		expect(await backendPid(pool)).not.toBe(pidBefore);
		expect(namesStatements(pool)).toBe(false);
	});

	it('a migration that changes a returned column under a prepared plan (0A000) is answered, and the pool keeps naming statements', async () => {
		const migrated = 'migrated_events';
		await new PostgresKeyStore(db.pool, { schema: db.schema, table: migrated, createTable: true }).createTable();
		const pool = onePool();
		const store = new PostgresKeyStore(pool, { schema: db.schema, table: migrated, createTable: false });
		await store.reserve([request('migrate-1')], { ...permanent, detail: 'compact' });
		const pidBefore = await backendPid(pool);
		// The fault: a returned column changes type while this session holds the plan.
		await db.pool.query(`alter table ${db.schema}.${migrated} alter column payload_hash type varchar(200)`);

		const [result] = await store.reserve([request('migrate-2')], { ...permanent, detail: 'compact' });

		expect(result.outcome).toBe('new');
		expect(Number((await db.pool.query(`select count(*) from ${db.schema}.${migrated} where key = 'migrate-2'`)).rows[0].count)).toBe(1);
		// Postgres refused the old plan (0A000, cached plan must not change result type): only a refusal
		// replaces the connection.
		expect(await backendPid(pool)).not.toBe(pidBefore);
		// Not a pooler: the next call prepares the statement again on the new session.
		expect(namesStatements(pool)).toBe(true);
		await store.reserve([request('migrate-3')], { ...permanent, detail: 'compact' });
		expect(await prepared(pool)).toHaveLength(1);
	});
});
