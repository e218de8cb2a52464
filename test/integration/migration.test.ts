import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Pool } from 'pg';

import { InvalidConfigurationError, SchemaNewerThanPackageError, SchemaOutdatedError, TableMissingError } from '../../lib/errors';
import { tableRef } from '../../lib/identifiers';
import { PostgresKeyStore } from '../../lib/store/postgres/stores';
import { KEYS_MIGRATIONS, ensureSchema, readSchemaState, versionStamp } from '../../lib/store/postgres/migrations';
import { POSTGRES_SQL_DIR } from '../../lib/store/postgres/statements';
import type { ReserveOptions } from '../../lib/types';
import { adminPool, connectionSettings, databaseUrl, freshSchema, postgresPoolFixture } from '../support/database';
import { webhookItem } from '../support/fakeExecuteFunctions';
import { idempotencyOf, runReserve } from '../support/nodes';

const CURRENT = KEYS_MIGRATIONS.files.length;
const [CREATE_FILE, SEED_UPGRADE_FILE, EVIDENCE_FILE, SETTLE_SCOPE_FILE, ANSWER_COUNTS_FILE, INBOX_FILE] = KEYS_MIGRATIONS.files;
const sqlFile = (file: string) => readFileSync(path.join(POSTGRES_SQL_DIR, file), 'utf8');
/** A migration file as it shipped before schema versions existed: the same statements, no stamp. */
const unstampedFile = (file: string) =>
	sqlFile(file)
		.split('\n')
		.filter((line) => !line.startsWith('comment on table'))
		.join('\n');

const permanent: ReserveOptions = { mode: 'permanent', leaseSeconds: 60, retentionSeconds: 86_400 };
const request = (key: string) => ({ key, keySource: 'custom', payloadHash: null });

const db = postgresPoolFixture();

/** Runs SQL text as a DBA would with psql (one multi-statement string), in the given schema. */
async function runAsDba(schema: string, text: string): Promise<void> {
	const client = await db.pool.connect();
	try {
		await client.query(`set search_path to ${schema}`);
		await client.query(text);
	} finally {
		await client.query('reset search_path');
		client.release();
	}
}

const stampOf = async (schema: string, table = 'processed_events') =>
	(await db.pool.query(`select obj_description(to_regclass($1), 'pg_class') as stamp`, [`${schema}.${table}`])).rows[0].stamp;
const keysOf = async (schema: string, table = 'processed_events') =>
	(await db.pool.query(`select key from ${schema}.${table} order by key`)).rows.map((row) => row.key as string);
/** Columns (name and type) and index definitions, to compare an upgraded table with a fresh one. */
async function shapeOf(schema: string, table = 'processed_events') {
	const columns = await db.pool.query(
		`select column_name, data_type, is_nullable, column_default from information_schema.columns
		 where table_schema = $1 and table_name = $2 order by column_name`,
		[schema, table],
	);
	const indexes = await db.pool.query(
		`select replace(indexdef, $1, 'S') as def from pg_indexes where schemaname = $1 and tablename = $2 order by indexname`,
		[schema, table],
	);
	return { columns: columns.rows, indexes: indexes.rows.map((row) => row.def as string) };
}

describe('upgrading a table made by each earlier version', () => {
	const OLD_KEYS = ['evt:evt_old', 'sha256:abc'];
	const earlierVersions: Array<[string, (schema: string) => Promise<void>]> = [
		[
			"the hand-built recipe's two-column table",
			(schema) =>
				db.pool
					.query(`create table ${schema}.processed_events (key text primary key, first_seen timestamptz not null default now())`)
					.then(() => {}),
		],
		['the table 001_create_table.sql made before schema versions', (schema) => runAsDba(schema, unstampedFile(CREATE_FILE))],
		[
			'the recipe table after 002_migrate_from_seed.sql, before schema versions',
			async (schema) => {
				await db.pool.query(
					`create table ${schema}.processed_events (key text primary key, first_seen timestamptz not null default now())`,
				);
				await runAsDba(schema, unstampedFile(SEED_UPGRADE_FILE));
			},
		],
		['a table at schema version 1 (a DBA ran only 001_create_table.sql)', (schema) => runAsDba(schema, sqlFile(CREATE_FILE))],
		[
			'a table at schema version 2 (before replay evidence)',
			async (schema) => {
				await runAsDba(schema, sqlFile(CREATE_FILE));
				await runAsDba(schema, sqlFile(SEED_UPGRADE_FILE));
			},
		],
		[
			'a table at schema version 3 (before the settle scope)',
			async (schema) => {
				for (const file of [CREATE_FILE, SEED_UPGRADE_FILE, EVIDENCE_FILE]) await runAsDba(schema, sqlFile(file));
			},
		],
		[
			'a table at schema version 4 (before the answer counts)',
			async (schema) => {
				for (const file of [CREATE_FILE, SEED_UPGRADE_FILE, EVIDENCE_FILE, SETTLE_SCOPE_FILE]) await runAsDba(schema, sqlFile(file));
			},
		],
		[
			'a table at schema version 5 (before the inbox)',
			async (schema) => {
				for (const file of [CREATE_FILE, SEED_UPGRADE_FILE, EVIDENCE_FILE, SETTLE_SCOPE_FILE, ANSWER_COUNTS_FILE])
					await runAsDba(schema, sqlFile(file));
			},
		],
	];

	it.each(earlierVersions)('%s: first use brings it to the current version and keeps every key', async (_name, makeTable) => {
		const schema = await freshSchema(db.pool, 'up');
		await makeTable(schema);
		await db.pool.query(`insert into ${schema}.processed_events (key) select unnest($1::text[])`, [OLD_KEYS]);

		// The node's default: create or upgrade on first use.
		const store = new PostgresKeyStore(db.pool, { schema, table: 'processed_events', createTable: true });
		const results = await store.reserve([...OLD_KEYS, 'evt:evt_new'].map(request), permanent);

		expect(results.map((result) => result.outcome)).toEqual(['duplicate', 'duplicate', 'new']);
		expect(results[0].record).toMatchObject({ status: 'completed', attempts: 1 });
		expect(await keysOf(schema)).toEqual([...OLD_KEYS, 'evt:evt_new'].sort());
		expect(await stampOf(schema)).toBe(versionStamp('keys', CURRENT));

		// The upgraded table is the table a fresh database gets.
		const fresh = await freshSchema(db.pool, 'fresh');
		await new PostgresKeyStore(db.pool, { schema: fresh, table: 'processed_events', createTable: true }).createTable();
		const [upgraded, made] = [await shapeOf(schema), await shapeOf(fresh)];
		expect(upgraded.columns).toEqual(made.columns);
		expect(upgraded.indexes.map((def) => def.replace(schema, 'S'))).toEqual(made.indexes.map((def) => def.replace(fresh, 'S')));
		// The recipe's own insert still works against the upgraded table.
		await db.pool.query(`insert into ${schema}.processed_events (key) values ('evt:from_recipe') on conflict (key) do nothing`);
		// Its answer counts table is the one a fresh database gets, and counts.
		const counts = await shapeOf(schema, 'processed_events_answer_counts');
		expect(counts.columns.map((column) => column.column_name)).toEqual(['answer', 'count', 'hour']);
		expect(counts).toEqual(await shapeOf(fresh, 'processed_events_answer_counts'));
		await store.countAnswer('duplicate');
		expect((await store.answerCounts(1)).duplicate).toBe(1);
	});

	it('a table at schema version 5 with keys in every state: upgraded in place, each key keeps its answer, none is an inbox event, and it accepts inbox events', async () => {
		const schema = await freshSchema(db.pool, 'inbox');
		for (const file of [CREATE_FILE, SEED_UPGRADE_FILE, EVIDENCE_FILE, SETTLE_SCOPE_FILE, ANSWER_COUNTS_FILE])
			await runAsDba(schema, sqlFile(file));
		await db.pool.query(
			`insert into ${schema}.processed_events (key, status, locked_until, expires_at, owner_token, payload) values
			   ('done', 'completed', null, now() + interval '1 day', gen_random_uuid(), '{"id": 1}'),
			   ('running', 'processing', now() + interval '1 hour', now() + interval '1 day', gen_random_uuid(), null),
			   ('failed', 'failed', null, now() + interval '1 day', gen_random_uuid(), null)`,
		);
		const store = new PostgresKeyStore(db.pool, { schema, table: 'processed_events', createTable: true });
		const lease: ReserveOptions = { mode: 'lease', leaseSeconds: 60, retentionSeconds: 86_400 };
		const inbox = { owner: 'wf/node', item: '{"json":{}}', maxAttempts: 3, firstRetryMs: 1000, retryForMs: 60_000 };
		const results = await store.reserve([request('done'), request('running'), request('failed'), { ...request('accepted'), inbox }], lease);
		expect(results.map((result) => result.outcome)).toEqual(['duplicate', 'in_progress', 'new', 'new']);
		expect(await stampOf(schema)).toBe(versionStamp('keys', CURRENT));
		const rows = (await db.pool.query(`select key, inbox_owner, inbox_item, payload from ${schema}.processed_events order by key`)).rows;
		expect(rows).toEqual([
			{ key: 'accepted', inbox_owner: 'wf/node', inbox_item: '{"json":{}}', payload: null },
			{ key: 'done', inbox_owner: null, inbox_item: null, payload: { id: 1 } },
			{ key: 'failed', inbox_owner: null, inbox_item: null, payload: null },
			{ key: 'running', inbox_owner: null, inbox_item: null, payload: null },
		]);
	});

	it('a fresh database: first use creates the table at the current version', async () => {
		const schema = await freshSchema(db.pool, 'new');
		const store = new PostgresKeyStore(db.pool, { schema, table: 'processed_events', createTable: true });
		expect((await store.reserve([request('k')], permanent))[0].outcome).toBe('new');
		expect(await readSchemaState(db.pool, tableRef(schema, 'processed_events'), KEYS_MIGRATIONS)).toEqual({
			exists: true,
			version: CURRENT,
		});
	});

	it('every migration file runs as-is in psql, twice without harm, and stamps the current version', async () => {
		const schema = await freshSchema(db.pool, 'dba');
		for (let round = 0; round < 2; round++) for (const file of KEYS_MIGRATIONS.files) await runAsDba(schema, sqlFile(file));
		expect(await stampOf(schema)).toBe(versionStamp('keys', CURRENT));
		const store = new PostgresKeyStore(db.pool, { schema, table: 'processed_events', createTable: false });
		expect((await store.reserve([request('k')], permanent))[0].outcome).toBe('new');
	});

	it('several tables with custom names in one schema each carry their own version', async () => {
		const schema = await freshSchema(db.pool, 'many');
		await db.pool.query(`create table ${schema}.github_keys (key text primary key, first_seen timestamptz not null default now())`);
		const stripe = new PostgresKeyStore(db.pool, { schema, table: 'stripe_keys', createTable: true });
		await stripe.reserve([request('evt_1')], permanent);

		expect(await stampOf(schema, 'stripe_keys')).toBe(versionStamp('keys', CURRENT));
		expect(await stampOf(schema, 'github_keys')).toBeNull();
		const github = new PostgresKeyStore(db.pool, { schema, table: 'github_keys', createTable: true });
		expect((await github.reserve([request('delivery-1')], permanent))[0].outcome).toBe('new');
		expect(await stampOf(schema, 'github_keys')).toBe(versionStamp('keys', CURRENT));
	});

	it('many n8n instances starting together on an old table all succeed: one New, the table migrated', async () => {
		const schema = await freshSchema(db.pool, 'race');
		await db.pool.query(`create table ${schema}.auto_keys (key text primary key, first_seen timestamptz not null default now())`);
		// Separate pools: separate n8n instances, so only the advisory lock serialises them.
		const pools = Array.from({ length: 6 }, () => adminPool(2));
		try {
			const stores = pools.map((own) => new PostgresKeyStore(own, { schema, table: 'auto_keys', createTable: true }));
			const results = await Promise.all(stores.map((store) => store.reserve([request('k')], permanent)));
			expect(results.flat().filter((result) => result.outcome === 'new')).toHaveLength(1);
			expect(await stampOf(schema, 'auto_keys')).toBe(versionStamp('keys', CURRENT));
		} finally {
			await Promise.all(pools.map((own) => own.end()));
		}
	});
});

describe('a table the package cannot use as it is', () => {
	it('a table newer than the package is refused, with or without the create option, and left untouched', async () => {
		const schema = await freshSchema(db.pool, 'newer');
		await new PostgresKeyStore(db.pool, { schema, table: 'processed_events', createTable: true }).createTable();
		await db.pool.query(`insert into ${schema}.processed_events (key) values ('kept')`);
		const future = versionStamp('keys', CURRENT + 1);
		await db.pool.query(`comment on table ${schema}.processed_events is '${future}'`);

		for (const createTable of [true, false]) {
			const store = new PostgresKeyStore(db.pool, { schema, table: 'processed_events', createTable });
			const attempt = store.reserve([request('new-key')], permanent);
			await expect(attempt).rejects.toThrow(SchemaNewerThanPackageError);
			await expect(attempt).rejects.toThrow(`schema version ${CURRENT + 1}, newer than this n8n-nodes-idempotency knows (${CURRENT})`);
			await expect(store.createTable()).rejects.toThrow(SchemaNewerThanPackageError);
		}
		expect(await keysOf(schema)).toEqual(['kept']);
		expect(await stampOf(schema)).toBe(future);
	});

	it('a schema that does not exist is named as such, not as a missing table', async () => {
		const store = new PostgresKeyStore(db.pool, { schema: 'no_such_schema_x', table: 'processed_events', createTable: true });
		const attempt = store.reserve([request('k')], permanent);
		await expect(attempt).rejects.toThrow(InvalidConfigurationError);
		await expect(attempt).rejects.toThrow(
			'The schema "no_such_schema_x" does not exist, so the idempotency table cannot be created: create the schema (create schema no_such_schema_x) or choose another one in the node\'s options.',
		);
	});

	it('with the create option off, an old table is reported with exactly the files to run, and nothing changes', async () => {
		const schema = await freshSchema(db.pool, 'off');
		await db.pool.query(`create table ${schema}.processed_events (key text primary key, first_seen timestamptz not null default now())`);
		const store = new PostgresKeyStore(db.pool, { schema, table: 'processed_events', createTable: false });
		const attempt = store.reserve([request('k')], permanent);
		await expect(attempt).rejects.toThrow(SchemaOutdatedError);
		await expect(attempt).rejects.toThrow(
			`is at schema version 1, this package needs ${CURRENT}; the node option "Create or Upgrade Table" is off. Ask a database owner to run, in order, sql/postgres/${SEED_UPGRADE_FILE}, sql/postgres/${EVIDENCE_FILE}, sql/postgres/${SETTLE_SCOPE_FILE}, sql/postgres/${ANSWER_COUNTS_FILE}, sql/postgres/${INBOX_FILE} from`,
		);
		expect(await stampOf(schema)).toBeNull();

		const missing = new PostgresKeyStore(db.pool, { schema, table: 'other_keys', createTable: false });
		await expect(missing.reserve([request('k')], permanent)).rejects.toThrow(
			new TableMissingError(
				`The idempotency table "${schema}"."other_keys" does not exist; the node option "Create or Upgrade Table" is off. Ask a database owner to run, in order, sql/postgres/${CREATE_FILE}, sql/postgres/${SEED_UPGRADE_FILE}, sql/postgres/${EVIDENCE_FILE}, sql/postgres/${SETTLE_SCOPE_FILE}, sql/postgres/${ANSWER_COUNTS_FILE}, sql/postgres/${INBOX_FILE} from the n8n-nodes-idempotency package (they name public.processed_events: use "${schema}"."other_keys").`,
			),
		);
	});
});

describe('a database user without the right to create or change tables', () => {
	const role = `idem_dml_${randomBytes(4).toString('hex')}`;
	const password = randomBytes(12).toString('hex');
	let schema: string;
	let dmlPool: Pool;

	beforeAll(async () => {
		schema = await freshSchema(db.pool, 'dml');
		await db.pool.query(`create role ${role} login password '${password}'`);
		await db.pool.query(`grant usage on schema ${schema} to ${role}`);
		const url = new URL(databaseUrl());
		url.username = role;
		url.password = password;
		dmlPool = new Pool({ connectionString: url.toString(), max: 2 });
		dmlPool.on('error', () => {});
	});

	afterAll(async () => {
		await dmlPool?.end();
		await db.pool.query(`drop owned by ${role}`);
		await db.pool.query(`drop role ${role}`);
	});

	it('the role really lacks CREATE on the schema', async () => {
		await expect(dmlPool.query(`create table ${schema}.probe (id int)`)).rejects.toMatchObject({ code: '42501' });
	});

	it('a missing table: the error names every file, in order; nothing is created', async () => {
		const store = new PostgresKeyStore(dmlPool, { schema, table: 'processed_events', createTable: true });
		const attempt = store.reserve([request('k')], permanent);
		await expect(attempt).rejects.toThrow(TableMissingError);
		await expect(attempt).rejects.toThrow(
			`does not exist; the database user lacks the right to create or change it. Ask a database owner to run, in order, sql/postgres/${CREATE_FILE}, sql/postgres/${SEED_UPGRADE_FILE}, sql/postgres/${EVIDENCE_FILE}, sql/postgres/${SETTLE_SCOPE_FILE}, sql/postgres/${ANSWER_COUNTS_FILE}, sql/postgres/${INBOX_FILE} from`,
		);
		expect((await db.pool.query(`select to_regclass($1) as oid`, [`${schema}.processed_events`])).rows[0].oid).toBeNull();
	});

	it('an old table it may write to: the error names only the file still to run; after the DBA runs it, keys are kept and reserving works', async () => {
		await db.pool.query(`create table ${schema}.recipe_keys (key text primary key, first_seen timestamptz not null default now())`);
		await db.pool.query(`insert into ${schema}.recipe_keys (key) values ('evt:old')`);
		await db.pool.query(`grant select, insert, update, delete on ${schema}.recipe_keys to ${role}`);
		const store = new PostgresKeyStore(dmlPool, { schema, table: 'recipe_keys', createTable: true });
		const attempt = store.reserve([request('evt:new')], permanent);
		await expect(attempt).rejects.toThrow(SchemaOutdatedError);
		await expect(attempt).rejects.toThrow(
			`is at schema version 1, this package needs ${CURRENT}; the database user lacks the right to create or change it. Ask a database owner to run, in order, sql/postgres/${SEED_UPGRADE_FILE}, sql/postgres/${EVIDENCE_FILE}, sql/postgres/${SETTLE_SCOPE_FILE}, sql/postgres/${ANSWER_COUNTS_FILE}, sql/postgres/${INBOX_FILE} from the n8n-nodes-idempotency package (they name public.processed_events: use "${schema}"."recipe_keys")`,
		);

		for (const file of [SEED_UPGRADE_FILE, EVIDENCE_FILE, SETTLE_SCOPE_FILE, ANSWER_COUNTS_FILE, INBOX_FILE])
			await runAsDba(schema, sqlFile(file).replace(/processed_events/g, 'recipe_keys'));
		const results = await store.reserve([request('evt:old'), request('evt:new')], permanent);
		expect(results.map((result) => result.outcome)).toEqual(['duplicate', 'new']);
	});

	it('a current table: it reserves without attempting any change', async () => {
		await new PostgresKeyStore(db.pool, { schema, table: 'current_keys', createTable: true }).createTable();
		await db.pool.query(`grant select, insert, update, delete on ${schema}.current_keys to ${role}`);
		const store = new PostgresKeyStore(dmlPool, { schema, table: 'current_keys', createTable: true });
		expect((await store.reserve([request('k')], permanent))[0].outcome).toBe('new');
	});

	it('through the Reserve node: the item fails with the files to run', async () => {
		const run = runReserve(
			{ options: { schemaName: schema, tableName: 'node_keys' } },
			{ items: [webhookItem({ id: 'evt_1' })], credential: connectionSettings({ user: role, password }) },
		);
		await expect(run).rejects.toThrow(
			`Ask a database owner to run, in order, sql/postgres/${CREATE_FILE}, sql/postgres/${SEED_UPGRADE_FILE}, sql/postgres/${EVIDENCE_FILE}, sql/postgres/${SETTLE_SCOPE_FILE}, sql/postgres/${ANSWER_COUNTS_FILE}, sql/postgres/${INBOX_FILE}`,
		);
	});
});

describe('the Reserve node on first run', () => {
	it('with default options, creates the table and reserves (the option is on unless the user turns it off)', async () => {
		const schema = await freshSchema(db.pool, 'first');
		const [fresh] = await runReserve({ options: { schemaName: schema } }, { items: [webhookItem({ id: 'evt_first' })] });
		expect(idempotencyOf(fresh[0])).toMatchObject({ key: 'evt:evt_first', isNew: true });
		expect(await stampOf(schema)).toBe(versionStamp('keys', CURRENT));
	});
});

describe('a connection lost during a migration', () => {
	it('rejects with a clear error, and the lost connection never crashes the process with an unhandled client error', async () => {
		const schema = await freshSchema(db.pool, 'mig_cut');
		const table = tableRef(schema, 'processed_events');
		const migrating = new Pool({ connectionString: databaseUrl(), max: 2 });
		migrating.on('error', () => {});
		const uncaught: unknown[] = [];
		const onUncaught = (error: unknown) => uncaught.push(error);
		process.on('uncaughtException', onUncaught);
		// Another migrator holds the table's advisory lock, so ours waits inside its transaction.
		const other = await db.pool.connect();
		try {
			await other.query('begin');
			await other.query('select pg_advisory_xact_lock(hashtext($1))', [table.qualified]);
			const attempt = ensureSchema(migrating, table, KEYS_MIGRATIONS, true).catch((error: unknown) => error);
			let pid: number | undefined;
			for (let i = 0; i < 200 && pid === undefined; i++) {
				const { rows } = await db.pool.query(
					`select pid from pg_stat_activity where wait_event_type = 'Lock' and wait_event = 'advisory' and query like 'select pg_advisory_xact_lock%' and pid <> $1`,
					[(await other.query('select pg_backend_pid() as pid')).rows[0].pid],
				);
				pid = rows[0]?.pid;
				if (pid === undefined) await new Promise((resolve) => setTimeout(resolve, 25));
			}
			expect(pid).toBeDefined();
			// The fault: the migration's backend is terminated (as a server restart would).
			expect((await db.pool.query('select pg_terminate_backend($1) as done', [pid])).rows[0].done).toBe(true);
			const error = await attempt;
			expect(error).toBeInstanceOf(Error);
			expect((error as Error).message).toMatch(/connection|terminat/i);
			// Give the dead socket's 'end'/'error' events time to arrive.
			await new Promise((resolve) => setTimeout(resolve, 300));
			expect((await db.pool.query('select count(*)::int as n from pg_stat_activity where pid = $1', [pid])).rows[0].n).toBe(0);
			expect(uncaught).toEqual([]);
		} finally {
			process.removeListener('uncaughtException', onUncaught);
			await other.query('rollback');
			other.release();
			await migrating.end();
		}
		// Nothing half-made: the next attempt migrates the table.
		await ensureSchema(db.pool, table, KEYS_MIGRATIONS, true);
		expect((await readSchemaState(db.pool, table, KEYS_MIGRATIONS)).version).toBe(CURRENT);
	});
});
