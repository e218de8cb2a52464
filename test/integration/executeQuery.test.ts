import { createHash, randomBytes } from 'node:crypto';
import type { INodeExecutionData } from 'n8n-workflow';

import { poolFor } from '../../lib/store/postgres/pool';
import { PostgresKeyStore } from '../../lib/store/postgres/stores';
import { connectionSettings as credentialSettings } from '../../nodes/shared/credential';
import { connectionSettings, databaseUrl, postgresSchemaFixture } from '../support/database';
import { webhookItem } from '../support/fakeExecuteFunctions';
import { idempotencyOf, runExecuteQuery } from '../support/nodes';
import { raceWorkers, startWorker } from '../support/workers';

const db = postgresSchemaFixture('onetx', { keyTables: ['processed_events'] });

const options = () => ({ schemaName: db.schema, tableName: 'processed_events', createTable: true });
const count = async (sql: string, values: unknown[] = []) => Number((await db.pool.query(sql, values)).rows[0].count);
const keyRows = (key: string) => count(`select count(*) from ${db.schema}.processed_events where key = $1`, [key]);
const effectRows = (key: string) => count(`select count(*) from ${db.schema}.effects where event_key = $1`, [key]);

// The business write: one row per payment, no unique constraint, so a second run would show.
const insertPayment = () => ({
	query: `insert into ${db.schema}.effects (event_key, amount) values ($1, $2) returning id, event_key, amount`,
	queryParameters: (index: number, items: INodeExecutionData[]) => {
		const body = items[index].json.body as { id: string; amount: number };
		return [`evt:${body.id}`, body.amount];
	},
});
function run(items: INodeExecutionData[], extra: Record<string, unknown> = {}, continueOnFail = false) {
	const payment = insertPayment();
	return runExecuteQuery(
		{ query: payment.query, queryParameters: (index: number) => payment.queryParameters(index, items), options: options(), ...extra },
		{ items, continueOnFail },
	);
}

beforeAll(async () => {
	await db.pool.query(
		`create table ${db.schema}.effects (id serial primary key, event_key text not null, amount integer check (amount > 0), pid integer)`,
	);
});

describe('Idempotency Execute Query: new and duplicate', () => {
	it('New runs the query and returns its rows; the same event again is Duplicate and the query does not run', async () => {
		const delivery = webhookItem({ id: 'evt_pay_1', amount: 500 }, { 'stripe-signature': 't=1,v1=a' });
		const [fresh, duplicate] = await run([delivery]);
		expect(duplicate).toHaveLength(0);
		expect(fresh).toHaveLength(1);
		expect(fresh[0].pairedItem).toEqual({ item: 0 });
		expect(fresh[0].json.body).toEqual({ id: 'evt_pay_1', amount: 500 });
		expect(fresh[0].json.sqlResult).toMatchObject({ command: 'INSERT', rowCount: 1, rows: [{ event_key: 'evt:evt_pay_1', amount: 500 }] });
		expect(idempotencyOf(fresh[0])).toMatchObject({ key: 'evt:evt_pay_1', outcome: 'new', isNew: true });

		// Output: Full, which Execute Query shares with Reserve, adds the row's counters.
		const [again, dupAgain] = await run([webhookItem({ id: 'evt_pay_1', amount: 500 }, { 'stripe-signature': 't=2,v1=b' })], {
			options: { ...options(), output: 'full' },
		});
		expect(again).toHaveLength(0);
		expect(dupAgain).toHaveLength(1);
		expect(dupAgain[0].json.sqlResult).toBeUndefined();
		expect(idempotencyOf(dupAgain[0])).toMatchObject({ outcome: 'duplicate', duplicateCount: 1, ownerToken: null });
		expect(await effectRows('evt:evt_pay_1')).toBe(1);
	});

	it('the same key twice in one batch runs the query once', async () => {
		const items = [webhookItem({ id: 'evt_pay_twice', amount: 1 }), webhookItem({ id: 'evt_pay_twice', amount: 1 })];
		const [fresh, duplicate] = await run(items);
		expect(fresh.map((item) => item.pairedItem)).toEqual([{ item: 0 }]);
		expect(duplicate.map((item) => item.pairedItem)).toEqual([{ item: 1 }]);
		expect(await effectRows('evt:evt_pay_twice')).toBe(1);
	});
});

describe('Idempotency Execute Query: a failing query reserves nothing', () => {
	it('the query fails → no key is stored; the retry runs it', async () => {
		// amount 0 breaks the table's check constraint: the insert fails inside the transaction.
		const attempt = run([webhookItem({ id: 'evt_pay_fail', amount: 0 })]);
		await expect(attempt).rejects.toMatchObject({
			message: expect.stringMatching(/Your query failed \(SQLSTATE 23514\).*Nothing was reserved/),
			context: { itemIndex: 0 },
		});
		expect(await keyRows('evt:evt_pay_fail')).toBe(0);
		expect(await effectRows('evt:evt_pay_fail')).toBe(0);

		// The provider retries the same event; this time the write succeeds (the data was fixed upstream).
		const [fresh] = await run([webhookItem({ id: 'evt_pay_fail', amount: 5 })]);
		expect(idempotencyOf(fresh[0]).outcome).toBe('new');
		expect(await keyRows('evt:evt_pay_fail')).toBe(1);
		expect(await effectRows('evt:evt_pay_fail')).toBe(1);
	});

	it('one transaction per item: with continue on fail the failing item is an error and the others commit', async () => {
		const items = [
			webhookItem({ id: 'evt_mix_1', amount: 1 }),
			webhookItem({ id: 'evt_mix_2', amount: -1 }),
			webhookItem({ id: 'evt_mix_3', amount: 3 }),
		];
		const [fresh, duplicate, notRun] = await run(items, {}, true);
		expect(duplicate).toHaveLength(0);
		expect(fresh.map((item) => item.pairedItem)).toEqual([{ item: 0 }, { item: 2 }]);
		// The failed item never leaves through New: it goes out of Not Run.
		expect(notRun.map((item) => item.pairedItem)).toEqual([{ item: 1 }]);
		expect(notRun[0].json.error).toMatch(/Your query failed/);
		expect([await keyRows('evt:evt_mix_1'), await keyRows('evt:evt_mix_2'), await keyRows('evt:evt_mix_3')]).toEqual([1, 0, 1]);
		expect([await effectRows('evt:evt_mix_1'), await effectRows('evt:evt_mix_2'), await effectRows('evt:evt_mix_3')]).toEqual([1, 0, 1]);
	});

	it('without continue on fail the run stops at the failing item: the items before are committed, the ones after untouched', async () => {
		const items = [
			webhookItem({ id: 'evt_stop_1', amount: 1 }),
			webhookItem({ id: 'evt_stop_2', amount: 0 }),
			webhookItem({ id: 'evt_stop_3', amount: 3 }),
		];
		await expect(run(items)).rejects.toMatchObject({ context: { itemIndex: 1 } });
		expect([await keyRows('evt:evt_stop_1'), await keyRows('evt:evt_stop_2'), await keyRows('evt:evt_stop_3')]).toEqual([1, 0, 0]);
		// The provider redelivers the whole batch after the fix: 1 is Duplicate, 2 and 3 run once.
		const fixed = [
			webhookItem({ id: 'evt_stop_1', amount: 1 }),
			webhookItem({ id: 'evt_stop_2', amount: 2 }),
			webhookItem({ id: 'evt_stop_3', amount: 3 }),
		];
		const [fresh, duplicate] = await run(fixed);
		expect(fresh.map((item) => item.pairedItem)).toEqual([{ item: 1 }, { item: 2 }]);
		expect(duplicate.map((item) => item.pairedItem)).toEqual([{ item: 0 }]);
		expect([await effectRows('evt:evt_stop_1'), await effectRows('evt:evt_stop_2'), await effectRows('evt:evt_stop_3')]).toEqual([1, 1, 1]);
	});
});

describe("Idempotency Execute Query: the query is one statement inside the node's transaction", () => {
	it('refuses transaction control before anything runs', async () => {
		await expect(run([webhookItem({ id: 'evt_ctl', amount: 1 })], { query: '/* done */ COMMIT' })).rejects.toThrow(
			/transaction control is not allowed/,
		);
		expect(await keyRows('evt:evt_ctl')).toBe(0);
		await expect(run([webhookItem({ id: 'evt_ctl', amount: 1 })], { query: '/* /* */ SELECT */ COMMIT' })).rejects.toThrow(
			/transaction control is not allowed/,
		);
		// Inside a DO block (a string to the check), Postgres itself refuses it in the node's transaction.
		const doBlock = {
			keySource: 'custom',
			customKey: 'evt:evt_ctl',
			query: 'do $$ begin commit; end $$',
			queryParameters: '',
			options: options(),
		};
		await expect(runExecuteQuery(doBlock, { items: [{ json: {} }] })).rejects.toThrow(
			/Your query failed \(SQLSTATE 2D000\): invalid transaction termination/,
		);
		expect(await keyRows('evt:evt_ctl')).toBe(0);
	});

	it('a multi-statement string fails its item and reserves nothing', async () => {
		const query = `insert into ${db.schema}.effects (event_key, amount) values ($1, $2); delete from ${db.schema}.effects`;
		await expect(run([webhookItem({ id: 'evt_multi', amount: 1 })], { query })).rejects.toThrow(/cannot insert multiple commands/);
		expect(await keyRows('evt:evt_multi')).toBe(0);
		expect(await count(`select count(*) from ${db.schema}.effects`)).toBeGreaterThan(0);
	});

	it('Query Parameters that do not match the query\'s $n: the query failed (not "Postgres could not be reached")', async () => {
		const attempt = runExecuteQuery(
			{
				keySource: 'custom',
				customKey: 'bind:count',
				query: 'select $1::int as n',
				queryParameters: JSON.stringify([1, 2]),
				options: options(),
			},
			{ items: [{ json: {} }] },
		);
		await expect(attempt).rejects.toThrow(/Your query failed \(SQLSTATE 08P01\): bind message supplies 2 parameters.*Nothing was reserved/);
		expect(await keyRows('bind:count')).toBe(0);
	});

	it('values travel as bind parameters, never as SQL', async () => {
		const hostile = "x'); drop table effects; --";
		const [fresh] = await runExecuteQuery(
			{
				keySource: 'custom',
				customKey: 'bind:1',
				query: 'select $1::text as echoed, $2::int as n',
				queryParameters: JSON.stringify([hostile, 7]),
				options: options(),
			},
			{ items: [{ json: {} }] },
		);
		expect((fresh[0].json.sqlResult as { rows: unknown[] }).rows).toEqual([{ echoed: hostile, n: 7 }]);
		expect(await count(`select count(*) from ${db.schema}.effects`)).toBeGreaterThan(0);
	});
});

describe('Idempotency Execute Query: a crash between the statements', () => {
	it.each(['effect', 'commit'] as const)(
		'kill -9 of the process before the %s (after the reservation) leaves nothing; the retry is New and runs once',
		async (pauseBefore) => {
			const key = `crash:${pauseBefore}`;
			const worker = startWorker('effectWorker.ts', { url: databaseUrl(), schema: db.schema, key, mode: 'pause', pauseBefore });
			const paused = await worker.waitForLine((line) => line.startsWith('paused ') || line === 'not paused');
			expect(paused).toMatch(/^paused \d+$/);
			const backendPid = Number(paused.split(' ')[1]);
			// The worker's transaction is open on the server, holding the key's row lock.
			const { rows: backend } = await db.pool.query('select state from pg_stat_activity where pid = $1', [backendPid]);
			expect(backend).toEqual([{ state: 'idle in transaction' }]);
			// Before the commit, the insert has run in that transaction (it holds the write lock on effects).
			const writeLocks = await count(
				`select count(*) from pg_locks l join pg_class c on c.oid = l.relation join pg_namespace n on n.oid = c.relnamespace
				 where l.pid = $1 and n.nspname = $2 and c.relname = 'effects' and l.mode = 'RowExclusiveLock'`,
				[backendPid, db.schema],
			);
			expect(writeLocks).toBe(pauseBefore === 'commit' ? 1 : 0);

			process.kill(worker.pid, 'SIGKILL');
			const end = await worker.exited;
			expect(end.signal).toBe('SIGKILL');
			expect(() => process.kill(worker.pid, 0)).toThrow(expect.objectContaining({ code: 'ESRCH' }));
			// Postgres sees the connection drop and rolls the transaction back.
			for (
				let attempt = 0;
				attempt < 100 && (await count('select count(*) from pg_stat_activity where pid = $1', [backendPid])) > 0;
				attempt++
			) {
				await new Promise((resolve) => setTimeout(resolve, 50));
			}
			expect(await count('select count(*) from pg_stat_activity where pid = $1', [backendPid])).toBe(0);
			expect(await keyRows(key)).toBe(0);
			expect(await effectRows(key)).toBe(0);

			const [fresh] = await runExecuteQuery(
				{
					keySource: 'custom',
					customKey: key,
					query: `insert into ${db.schema}.effects (event_key) values ($1)`,
					queryParameters: key,
					options: options(),
				},
				{ items: [{ json: {} }] },
			);
			expect(idempotencyOf(fresh[0]).outcome).toBe('new');
			expect(await keyRows(key)).toBe(1);
			expect(await effectRows(key)).toBe(1);
		},
	);
});

describe('Idempotency Execute Query: many deliveries at once', () => {
	it('200 concurrent deliveries of one event over 20 connections from 4 OS processes: the effect happens exactly once', async () => {
		const key = 'race:effect';
		const reports = await raceWorkers<{ pid: number; outcomes: string[] }>(
			'effectWorker.ts',
			() => ({ url: databaseUrl(), schema: db.schema, key, mode: 'race', calls: 50, connections: 5 }),
			4,
		);
		const outcomes = reports.flatMap((report) => report.outcomes);
		expect(outcomes).toHaveLength(200);
		expect(new Set(reports.map((report) => report.pid)).size).toBe(4);
		expect(outcomes.filter((outcome) => outcome === 'new')).toHaveLength(1);
		expect(outcomes.filter((outcome) => outcome === 'duplicate')).toHaveLength(199);
		expect(await effectRows(key)).toBe(1);
		const { rows } = await db.pool.query(`select duplicate_count from ${db.schema}.processed_events where key = $1`, [key]);
		expect(rows).toEqual([{ duplicate_count: 199 }]);
	});
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Polls until `check` is true (at most `ms`). */
async function until(check: () => Promise<boolean>, ms = 10000): Promise<void> {
	for (const deadline = Date.now() + ms; !(await check()) && Date.now() < deadline; ) await sleep(50);
}

describe('Idempotency Execute Query: a connection never goes back to the pool', () => {
	// Its own credential (so its own pool) of one connection: an operation after the first one gets
	// the same connection if the pool kept it. No server-side timeouts (as behind PgBouncer): only the
	// client's Query Timeout ends a wait.
	const oneConnection = connectionSettings({
		maxConnections: 1,
		statementTimeoutSeconds: 0,
		lockTimeoutSeconds: 0,
		queryTimeoutSeconds: 1,
	});
	// The pool the node takes for that credential (the same settings as the node reads them).
	const nodePool = () => poolFor(credentialSettings({ ...oneConnection }));
	const runOn = (credential: ReturnType<typeof connectionSettings>, key: string, query: string, queryParameters: unknown = key) =>
		runExecuteQuery(
			{ keySource: 'custom', customKey: key, query, queryParameters, options: options() },
			{ items: [{ json: {} }], credential },
		);
	const reserveOn = (credential: ReturnType<typeof connectionSettings>, key: string) =>
		new PostgresKeyStore(nodePool(), { schema: db.schema, table: 'processed_events', createTable: false }).reserve(
			[{ key, keySource: 'custom', payloadHash: null }],
			{
				mode: 'permanent',
				leaseSeconds: 300,
				retentionSeconds: 3600,
			},
		);

	it('a statement and its rollback past the Query Timeout (a lock held): no later Reserve or item ever runs in that transaction', async () => {
		const credential = oneConnection;
		const marker = `leak_${randomBytes(4).toString('hex')}`;
		const timedOut = `${marker}:timed-out`;
		const locker = await db.pool.connect();
		try {
			await locker.query('begin');
			await locker.query(`lock table ${db.schema}.effects in share mode`);
			// The insert waits for the lock; the client stops waiting after 1 s (the rollback after it would too).
			await expect(runOn(credential, timedOut, `insert into ${db.schema}.effects (event_key) values ($1) /* ${marker} */`)).rejects.toThrow(
				/Query Timeout/,
			);
			// The server still runs that transaction's insert, behind the lock.
			expect(
				await count(`select count(*) from pg_stat_activity where query like $1 and wait_event_type = 'Lock'`, [`%/* ${marker} */%`]),
			).toBe(1);
		} finally {
			await locker.query('commit');
			locker.release();
		}
		// The insert now ends on the server, inside the transaction the node gave up on.
		await until(
			async () =>
				(await count(`select count(*) from pg_stat_activity where query like $1 and state = 'active'`, [`%/* ${marker} */%`])) === 0,
		);

		// A Reserve on the same credential's pool: committed, visible to everyone.
		await reserveOn(credential, `${marker}:reserve`);
		expect(await keyRows(`${marker}:reserve`)).toBe(1);
		// The next item on that pool commits its own key and effect only.
		const [fresh] = await runOn(credential, `${marker}:next`, `insert into ${db.schema}.effects (event_key) values ($1)`);
		expect(idempotencyOf(fresh[0]).outcome).toBe('new');
		expect([await keyRows(`${marker}:next`), await effectRows(`${marker}:next`)]).toEqual([1, 1]);
		// The timed-out item was never committed by anyone: its retry is New and runs once.
		expect([await keyRows(timedOut), await effectRows(timedOut)]).toEqual([0, 0]);
		const [retried] = await runOn(credential, timedOut, `insert into ${db.schema}.effects (event_key) values ($1)`);
		expect(idempotencyOf(retried[0]).outcome).toBe('new');
		expect([await keyRows(timedOut), await effectRows(timedOut)]).toEqual([1, 1]);
		// No session of this test is left inside a transaction.
		expect(
			await count(`select count(*) from pg_stat_activity where query like $1 and state like 'idle in transaction%'`, [`%${marker}%`]),
		).toBe(0);
	});

	it("a Duplicate (the user's SQL did not run on it) gives its connection back to the pool; a New closes it", async () => {
		const credential = oneConnection;
		const key = `reuse:${randomBytes(4).toString('hex')}`;
		await runOn(credential, key, 'select 1', '');
		expect(nodePool().idleCount).toBe(0);
		const [, duplicate] = await runOn(credential, key, 'select 1', '');
		expect(duplicate).toHaveLength(1);
		expect(nodePool().idleCount).toBe(1);
	});

	it.each([
		['an advisory lock taken through a function', 'select pg_advisory_lock(hashtext($1))'],
		['SET ROLE through set_config(…, false)', "select set_config('role', $1, false)"],
		['a temporary table', 'create temp table leaked_state (k text)'],
	])('session state the query leaves (%s) reaches no later operation', async (_case, query) => {
		const credential = oneConnection;
		const role = `onetx_${randomBytes(4).toString('hex')}`;
		await db.pool.query(`create role ${role} nologin`);
		try {
			const key = `${role}:tainting`;
			const parameters = query.includes('$1') ? (query.includes('role') ? role : key) : '';
			await runOn(credential, key, query, parameters);
			// The advisory lock is free for another session (once the closed session has ended on the server).
			const lockFree = async () =>
				(await db.pool.query('select pg_try_advisory_lock(hashtext($1)) and pg_advisory_unlock(hashtext($1)) as free', [key])).rows[0]
					.free === true;
			await until(lockFree, 5000);
			expect(await lockFree()).toBe(true);
			// The next item runs as the credential's user, in a session without the temporary table.
			const [next] = await runOn(
				credential,
				`${role}:next`,
				"select current_user::text as who, to_regclass('pg_temp.leaked_state') is null as clean",
				'',
			);
			expect((next[0].json.sqlResult as { rows: unknown[] }).rows).toEqual([{ who: credential.user, clean: true }]);
			await reserveOn(credential, `${role}:reserve`);
			expect(await keyRows(`${role}:reserve`)).toBe(1);
		} finally {
			await db.pool.query(`drop role ${role}`);
		}
	});
});

describe('Idempotency Execute Query: a commit Postgres refuses', () => {
	beforeAll(async () => {
		await db.pool.query(
			`create table ${db.schema}.deferred_effects (event_key text, constraint deferred_once unique (event_key) deferrable initially deferred)`,
		);
		await db.pool.query(`insert into ${db.schema}.deferred_effects values ('taken')`);
	});

	it('a deferred constraint failing at COMMIT is reported as not committed (nothing stored), and the retry runs', async () => {
		const query = `insert into ${db.schema}.deferred_effects (event_key) values ($1)`;
		const attempt = runExecuteQuery(
			{ keySource: 'custom', customKey: 'deferred:1', query, queryParameters: 'taken', options: options() },
			{ items: [{ json: {} }] },
		);
		await expect(attempt).rejects.toThrow(
			/Postgres refused the commit \(SQLSTATE 23505\).*neither the key nor your query's effect was stored/,
		);
		expect(await keyRows('deferred:1')).toBe(0);

		const [fresh] = await runExecuteQuery(
			{ keySource: 'custom', customKey: 'deferred:1', query, queryParameters: 'free', options: options() },
			{ items: [{ json: {} }] },
		);
		expect(idempotencyOf(fresh[0]).outcome).toBe('new');
		expect(await keyRows('deferred:1')).toBe(1);
	});
});

describe('Idempotency Execute Query: the SQL uses the key the node derived', () => {
	const insertWithKey = () => `insert into ${db.schema}.effects (event_key, amount) values ($idempotency_key, $1) returning event_key`;
	const runWithKey = (items: INodeExecutionData[], parameters: Record<string, unknown> = {}) =>
		runExecuteQuery(
			{
				query: insertWithKey(),
				queryParameters: (index: number) => [(items[index].json.body as { amount?: number }).amount ?? 1],
				options: options(),
				...parameters,
			},
			{ items },
		);

	it('an event without an id: its key (sha256: of the raw body) is written, and the repeat is Duplicate', async () => {
		const raw = `{ "type": "ping",  "nonce": "${randomBytes(6).toString('hex')}" }`;
		const key = `sha256:${createHash('sha256').update(raw).digest('hex')}`;
		const delivery = () => webhookItem(JSON.parse(raw), {}, raw);
		const [fresh] = await runWithKey([delivery()]);
		expect(idempotencyOf(fresh[0])).toMatchObject({ key, outcome: 'new' });
		expect((fresh[0].json.sqlResult as { rows: unknown[] }).rows).toEqual([{ event_key: key }]);
		const [again, duplicate] = await runWithKey([delivery()]);
		expect([again.length, duplicate.length]).toEqual([0, 1]);
		expect(await effectRows(key)).toBe(1);
	});

	it('the key with its scope, from any key source, bound as a value', async () => {
		const [fresh] = await runWithKey([webhookItem({ amount: 3 }, { 'idempotency-key': "k'); drop table effects; --" })], {
			keySource: 'header',
			headerName: 'idempotency-key',
			options: { ...options(), scope: 'tenant-a' },
		});
		const key = "tenant-a:idempotency-key:k'); drop table effects; --";
		expect(idempotencyOf(fresh[0]).key).toBe(key);
		expect(await effectRows(key)).toBe(1);
	});
});
