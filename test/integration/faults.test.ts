import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Pool, type PoolClient } from 'pg';

import { LockTimeoutError, OutcomeUnknownError, StatementTimeoutError } from '../../lib/errors';
import { toPoolConfig, type ConnectionSettings } from '../../lib/store/postgres/connectionSettings';
import { PostgresKeyStore, type RetryEvent, type StoreOptions } from '../../lib/store/postgres/stores';
import type { ReservationRequest, ReserveOptions } from '../../lib/types';
import { startOwnPostgres, type OwnPostgres } from '../support/postgresProcess';
import { TcpProxy } from '../support/tcpProxy';

/**
 * Faults on a Postgres server of this file's own (so restarting it disturbs no other test file):
 * a reply lost after the commit, a row lock held forever, a statement that runs too long, a silent
 * network path, and server restarts in the middle of a batch reserve and of a Complete. Every test
 * checks that its fault really happened (the proxy cut the reply, the server's start time changed,
 * the store saw the failure) so none can pass vacuously.
 */

const TABLE = 'processed_events';
const lease: ReserveOptions = { mode: 'lease', leaseSeconds: 120, retentionSeconds: 86_400, executionId: 'exec-faults' };
const permanent: ReserveOptions = { ...lease, mode: 'permanent' };
const request = (key: string): ReservationRequest => ({ key, keySource: 'custom', payloadHash: null });

let baseDir: string;
let server: OwnPostgres;
let admin: Pool;
const pools: Pool[] = [];
const proxies: TcpProxy[] = [];

function settings(overrides: Partial<ConnectionSettings> = {}): ConnectionSettings {
	const url = new URL(server.url);
	return {
		host: url.hostname,
		port: Number(url.port),
		database: 'postgres',
		user: decodeURIComponent(url.username),
		password: decodeURIComponent(url.password),
		ssl: 'disable',
		maxConnections: 4,
		...overrides,
	};
}

/** A store with the package's own pool configuration (timeouts, keepalive) and a retry log. */
function storeWith(
	connection: Partial<ConnectionSettings> = {},
	options: Partial<StoreOptions> = {},
): { store: PostgresKeyStore; retries: RetryEvent[] } {
	const pool = new Pool(toPoolConfig(settings(connection)));
	pool.on('error', () => {});
	pools.push(pool);
	const retries: RetryEvent[] = [];
	const store = new PostgresKeyStore(pool, {
		schema: 'public',
		table: TABLE,
		createTable: false, // created once in beforeAll: its index builds would wait on the held locks
		onRetry: (event) => retries.push(event),
		...options,
	});
	return { store, retries };
}

async function proxied(options: Partial<StoreOptions> = {}, connection: Partial<ConnectionSettings> = {}) {
	const proxy = await TcpProxy.start('127.0.0.1', server.port);
	proxies.push(proxy);
	return { proxy, ...storeWith({ port: proxy.port, ...connection }, options) };
}

const row = async (key: string) => (await admin.query(`select * from ${TABLE} where key = $1`, [key])).rows[0];
const rowCount = async (prefix: string) =>
	Number((await admin.query(`select count(*) from ${TABLE} where key like $1`, [`${prefix}%`])).rows[0].count);
const serverStartTime = async (): Promise<string> => (await admin.query('select pg_postmaster_start_time()::text as t')).rows[0].t;

async function restartServer(downMs: number): Promise<void> {
	await server.stop();
	await new Promise((resolve) => setTimeout(resolve, downMs));
	server = await startOwnPostgres(baseDir, server.port);
}

/** Holds a row lock from another session: an uncommitted insert of `key`, or a locked existing row. */
async function holdLock(key: string, existing = false): Promise<PoolClient> {
	const client = await admin.connect();
	client.on('error', () => {});
	await client.query('begin');
	if (existing) await client.query(`select 1 from ${TABLE} where key = $1 for update`, [key]);
	else await client.query(`insert into ${TABLE} (key) values ($1)`, [key]);
	return client;
}

/** Waits until a session of the package is blocked on a lock: proves the statement is in flight. */
async function waitForLockWait(): Promise<void> {
	for (let i = 0; i < 100; i++) {
		const { rows } = await admin.query(
			"select count(*)::int as n from pg_stat_activity where application_name = 'n8n-nodes-idempotency' and wait_event_type = 'Lock'",
		);
		if (rows[0].n > 0) return;
		await new Promise((resolve) => setTimeout(resolve, 50));
	}
	throw new Error('no statement of the package ever waited on the lock');
}

function newAdmin(): Pool {
	const pool = new Pool({ connectionString: server.url, max: 4, allowExitOnIdle: true });
	pool.on('error', () => {});
	return pool;
}

async function reopenAdmin(): Promise<void> {
	await admin.end().catch(() => {});
	admin = newAdmin();
}

beforeAll(async () => {
	baseDir = fs.mkdtempSync(path.join(os.tmpdir(), 'idempotency-faults-'));
	server = await startOwnPostgres(baseDir);
	admin = newAdmin();
	await storeWith().store.createTable();
}, 120_000);

afterAll(async () => {
	for (const proxy of proxies) await proxy.close();
	await Promise.all(pools.map((pool) => pool.end().catch(() => {})));
	await admin?.end().catch(() => {});
	await server?.stop();
	fs.rmSync(baseDir, { recursive: true, force: true });
}, 60_000);

describe('a reply lost after the commit', () => {
	it('reserve: the same statement with the same tokens is sent again, and the keys are reported ours (lease mode)', async () => {
		const { proxy, store, retries } = await proxied();
		proxy.cutReplyAfter('with batch as');
		const results = await store.reserve(['lost-1', 'lost-2', 'lost-3'].map(request), lease);

		expect(proxy.cuts).toHaveLength(1);
		expect(proxy.cuts[0].withheldMessageTypes).toMatch(/C.*Z$/); // CommandComplete … ReadyForQuery: it committed
		expect(retries[0]).toMatchObject({ operation: 'reserve', outcomeUnknown: true });
		expect(results.map((result) => result.outcome)).toEqual(['new', 'new', 'new']);
		// The re-send is not counted as a duplicate of itself.
		for (const result of results) expect(await row(result.key)).toMatchObject({ owner_token: result.ownerToken, duplicate_count: 0 });
		// The provider's redelivery is not a second New, and it is counted.
		expect((await store.reserve([request('lost-1')], lease))[0].outcome).toBe('in_progress');
		expect((await row('lost-1')).duplicate_count).toBe(1);
	});

	it('claimDueInbox: the re-send with the same tokens returns the events the lost answer claimed, and claims no others', async () => {
		const inbox = { owner: 'wf-faults/trigger', item: '{"json":{}}', maxAttempts: 5, firstRetryMs: 1000, retryForMs: 3_600_000 };
		const keys = ['lost-inbox-1', 'lost-inbox-2', 'lost-inbox-3'];
		await storeWith().store.reserve(
			keys.map((key) => ({ ...request(key), inbox })),
			lease,
		);
		await admin.query(`update ${TABLE} set locked_until = now() - interval '1 second' where key = any($1::text[])`, [keys]);
		const { proxy, store, retries } = await proxied();
		proxy.cutReplyAfter('with already as');
		const claims = await store.claimDueInbox({ owner: inbox.owner, limit: 2, leaseMs: 60_000 });

		expect(proxy.cuts).toHaveLength(1);
		expect(retries[0]).toMatchObject({ operation: 'claimDueInbox', outcomeUnknown: true });
		expect(claims.map((claim) => claim.key).sort()).toEqual(['lost-inbox-1', 'lost-inbox-2']);
		for (const claim of claims)
			expect(await row(claim.key)).toMatchObject({ owner_token: claim.ownerToken, attempts: 2, status: 'processing' });
		// The re-send took nothing more: the third event waits for the next look.
		expect(await row('lost-inbox-3')).toMatchObject({ attempts: 1 });
	});

	it('reserve in permanent mode: the event is New, not lost as a Duplicate of itself', async () => {
		const { proxy, store } = await proxied();
		proxy.cutReplyAfter('with batch as');
		const [result] = await store.reserve([request('lost-permanent')], permanent);
		expect(proxy.cuts).toHaveLength(1);
		expect(result).toMatchObject({ outcome: 'new' });
		expect(await row('lost-permanent')).toMatchObject({
			status: 'completed',
			owner_token: result.ownerToken,
			attempts: 1,
			duplicate_count: 0,
		});
	});

	it('reserve with the compact statement: the re-send recognises the keys by the returned owner token', async () => {
		const { proxy, store, retries } = await proxied();
		proxy.cutReplyAfter('with batch as');
		const results = await store.reserve(['lost-compact-1', 'lost-compact-2'].map(request), { ...lease, detail: 'compact' });

		expect(proxy.cuts).toHaveLength(1);
		expect(proxy.cuts[0].withheldMessageTypes).toMatch(/C.*Z$/); // it committed before the reply was cut
		expect(retries[0]).toMatchObject({ operation: 'reserve', outcomeUnknown: true });
		expect(results.map((result) => result.outcome)).toEqual(['new', 'new']);
		expect(Object.keys(results[0].record)).not.toContain('duplicateCount'); // the compact statement was the one re-sent
		for (const result of results)
			expect(await row(result.key)).toMatchObject({ owner_token: result.ownerToken, duplicate_count: 0, attempts: 1 });
		expect((await store.reserve([request('lost-compact-1')], { ...lease, detail: 'compact' }))[0].outcome).toBe('in_progress');
	});

	it('reserve: when the re-send cannot reach Postgres either, the error says the keys may have been reserved', async () => {
		const { proxy, store } = await proxied({ reserveRecoveryMs: 1_000 });
		await store.reserve([request('lost-unknown-warm')], lease); // one live connection through the proxy
		proxy.cutReplyAfter('with batch as');
		proxy.refuseNewConnections();
		const error = await store.reserve([request('lost-unknown')], lease).catch((caught: unknown) => caught);
		expect(proxy.cuts).toHaveLength(1);
		expect(error).toBeInstanceOf(OutcomeUnknownError);
		expect((error as Error).message).toMatch(/may have been reserved/);
		expect((error as Error).message).not.toMatch(/Nothing was reserved/);
		expect(await row('lost-unknown')).toMatchObject({ status: 'processing' }); // it was: the message told the truth
	});

	it('complete and release: a lost answer is re-sent and reported applied', async () => {
		const { store: direct } = storeWith();
		const [toComplete, toRelease] = await direct.reserve([request('lost-complete'), request('lost-release')], lease);
		const { proxy, store } = await proxied();

		proxy.cutReplyAfter("status = 'completed'");
		expect(await store.complete([{ key: 'lost-complete', ownerToken: toComplete.ownerToken!, response: { ok: 1 } }])).toEqual([
			{ key: 'lost-complete', applied: true },
		]);
		proxy.cutReplyAfter('delete from');
		expect(await store.release([{ key: 'lost-release', ownerToken: toRelease.ownerToken! }])).toEqual([
			{ key: 'lost-release', applied: true },
		]);

		expect(proxy.cuts.map((cut) => cut.withheldMessageTypes)).toEqual([expect.stringMatching(/C.*Z$/), expect.stringMatching(/C.*Z$/)]);
		expect(await row('lost-complete')).toMatchObject({ status: 'completed', response: { ok: 1 } });
		expect(await row('lost-release')).toBeUndefined();
	});
});

describe('nothing sent, nothing reserved', () => {
	it('a refused connection before the statement is sent: "Nothing was reserved", and not retried', async () => {
		const { proxy, store, retries } = await proxied();
		proxy.refuseNewConnections();
		const error = await store.reserve([request('never-sent')], lease).catch((caught: unknown) => caught);
		expect(error).not.toBeInstanceOf(OutcomeUnknownError);
		expect((error as Error).message).toBe('Postgres could not be reached (connection refused). Nothing was reserved.');
		expect(retries).toEqual([]);
		expect(await row('never-sent')).toBeUndefined();
	});
});

describe('nothing hangs', () => {
	it('a row lock held forever by another session: a lock-timeout error within the timeout, nothing changed', async () => {
		const { store } = storeWith({ lockTimeoutSeconds: 1 });
		await store.reserve([request('locked')], lease);
		const before = await row('locked');
		const holder = await holdLock('locked', true);
		try {
			const started = Date.now();
			const error = await store.reserve([request('locked')], lease).catch((caught: unknown) => caught);
			const elapsed = Date.now() - started;
			expect(error).toBeInstanceOf(LockTimeoutError);
			expect((error as Error).message).toMatch(/gave up waiting for a row lock.*Nothing was reserved/);
			expect(elapsed).toBeGreaterThanOrEqual(900);
			expect(elapsed).toBeLessThan(5_000);
		} finally {
			await holder.query('rollback');
			holder.release();
		}
		expect((await row('locked')).duplicate_count).toBe(before.duplicate_count);
	}, 30_000);

	it('a statement running past the statement timeout: cancelled by Postgres, said so, nothing changed', async () => {
		const { store } = storeWith({ statementTimeoutSeconds: 1, lockTimeoutSeconds: 60 });
		const holder = await holdLock('slow');
		try {
			const started = Date.now();
			const error = await store.reserve([request('slow')], lease).catch((caught: unknown) => caught);
			expect(error).toBeInstanceOf(StatementTimeoutError);
			expect((error as Error).message).toMatch(/cancelled the statement.*Statement Timeout.*Nothing was reserved/);
			expect(Date.now() - started).toBeLessThan(5_000);
		} finally {
			await holder.query('rollback');
			holder.release();
		}
		expect(await row('slow')).toBeUndefined();
	}, 30_000);

	it('a silent network path: a clear error within the query timeout (plus one connect timeout for the re-send), never a hang', async () => {
		const { proxy, store } = await proxied({ reserveRecoveryMs: 500 }, { queryTimeoutSeconds: 1 });
		await store.reserve([request('silent-warm')], lease); // the pool holds a live connection through the proxy
		proxy.goSilent();
		const started = Date.now();
		const error = await store.reserve([request('silent')], lease).catch((caught: unknown) => caught);
		const elapsed = Date.now() - started;
		expect(error).toBeInstanceOf(OutcomeUnknownError);
		expect((error as Error).message).toMatch(/Query Timeout|timed out/);
		expect((error as Error).message).toMatch(/may have been reserved/);
		expect(elapsed).toBeGreaterThanOrEqual(900);
		expect(elapsed).toBeLessThan(14_000);
		expect(await row('silent')).toBeUndefined(); // the server never saw it
	}, 40_000);
});

describe('settle retries are bounded', () => {
	it('Postgres unreachable during a Mark Failed: retried until shortly before the lease ends, then an error that says nothing was marked failed', async () => {
		const { store: direct } = storeWith();
		const [reserved] = await direct.reserve([request('fail-unreachable')], lease);
		const { proxy, store, retries } = await proxied({ settleRetryMs: 30_000 });
		await store.ready(); // the pool has read the database's time, against which lease ends are placed
		proxy.refuseNewConnections();
		proxy.dropConnections(true);
		await new Promise((resolve) => setTimeout(resolve, 200)); // the pool drops its cut idle connection
		const started = Date.now();
		// As the item's lockedUntil would say: a database time, 4 s from now.
		const leaseEndsAt = (await admin.query(`select now() + interval '4 seconds' as t`)).rows[0].t as Date;
		const error = await store
			.fail([{ key: 'fail-unreachable', ownerToken: reserved.ownerToken!, leaseEndsAt, error: 'the business step failed' }])
			.catch((caught: unknown) => caught);
		const elapsed = Date.now() - started;
		expect(retries.length).toBeGreaterThanOrEqual(3);
		expect(retries.every((event) => event.operation === 'fail' && !event.outcomeUnknown && /refused/.test(event.reason))).toBe(true);
		expect((error as Error).message).toMatch(/could not be reached \(connection refused\)\. Nothing was marked failed/);
		expect(elapsed).toBeGreaterThanOrEqual(1_000); // it did retry (backoff 0.2, 0.4, 0.8 s)…
		expect(elapsed).toBeLessThan(3_000); // …but stopped 2 s before the lease end, not after 30 s
		expect(await row('fail-unreachable')).toMatchObject({ status: 'processing' });
	}, 30_000);

	it('Postgres unreachable past the lease end during a Complete: retried for the whole budget, and the key is completed when Postgres is back', async () => {
		const { store: direct } = storeWith();
		const [reserved] = await direct.reserve([request('complete-past-lease')], lease);
		const { proxy, store, retries } = await proxied({ settleRetryMs: 8_000 });
		await store.ready(); // the pool has read the database's time, against which lease ends are placed
		proxy.dropConnections(true);
		await new Promise((resolve) => setTimeout(resolve, 200)); // the pool drops its cut idle connection
		// The lease (database time) ends in 2 s; Postgres is back after 3.5 s, nobody has taken the key over.
		const leaseEndsAt = (await admin.query(`select now() + interval '2 seconds' as t`)).rows[0].t as Date;
		setTimeout(() => proxy.dropConnections(false), 3_500);
		const started = Date.now();
		const reports = await store.complete([{ key: 'complete-past-lease', ownerToken: reserved.ownerToken!, leaseEndsAt }]);
		const elapsed = Date.now() - started;
		expect(retries.length).toBeGreaterThanOrEqual(3);
		expect(elapsed).toBeGreaterThanOrEqual(3_000); // past the lease end…
		expect(elapsed).toBeLessThan(8_000); // …within the budget
		expect(reports).toEqual([{ key: 'complete-past-lease', applied: true }]);
		expect(await row('complete-past-lease')).toMatchObject({ status: 'completed' });
	}, 30_000);

	it('Postgres unreachable for longer than the budget during a Complete: an error that says the key was not completed', async () => {
		const { store: direct } = storeWith();
		const [reserved] = await direct.reserve([request('complete-unreachable')], lease);
		const { proxy, store } = await proxied({ settleRetryMs: 2_000 });
		await store.ready();
		proxy.refuseNewConnections();
		proxy.dropConnections(true);
		await new Promise((resolve) => setTimeout(resolve, 200)); // the pool drops its cut idle connection
		const started = Date.now();
		const error = await store
			.complete([{ key: 'complete-unreachable', ownerToken: reserved.ownerToken! }])
			.catch((caught: unknown) => caught);
		const elapsed = Date.now() - started;
		expect((error as Error).message).toMatch(/could not be reached \(connection refused\)\. The key was not completed/);
		expect(elapsed).toBeGreaterThanOrEqual(1_000);
		expect(elapsed).toBeLessThan(5_000);
		expect(await row('complete-unreachable')).toMatchObject({ status: 'processing' });
	}, 30_000);
});

describe('Postgres restarts', () => {
	it('mid-batch, back within the recovery window: the batch is re-sent and every key is reported reserved, once', async () => {
		const keys = Array.from({ length: 1000 }, (_, i) => `batch-a-${String(i).padStart(4, '0')}`);
		const { store, retries } = storeWith({ lockTimeoutSeconds: 60, statementTimeoutSeconds: 60 }, { reserveRecoveryMs: 30_000 });
		const startedBefore = await serverStartTime();
		// One key of the batch is locked by another session, so the statement is surely in flight.
		const holder = await holdLock(keys[500]);
		const reserving = store.reserve(keys.map(request), lease);
		await waitForLockWait();
		await restartServer(500);
		holder.release(true); // its session died with the server
		await reopenAdmin();

		const results = await reserving;
		expect(await serverStartTime()).not.toBe(startedBefore);
		expect(retries.some((event) => event.operation === 'reserve' && event.outcomeUnknown)).toBe(true);
		expect(results.every((result) => result.outcome === 'new' && result.record.attempts === 1)).toBe(true);
		expect(await rowCount('batch-a-')).toBe(1000);
		const again = await store.reserve(keys.map(request), lease);
		expect(again.every((result) => result.outcome === 'in_progress')).toBe(true);
	}, 120_000);

	it('mid-batch, down longer than the recovery window: the error says what may have been reserved; the retry reserves each key exactly once', async () => {
		const keys = Array.from({ length: 500 }, (_, i) => `batch-b-${String(i).padStart(4, '0')}`);
		const { store } = storeWith({ lockTimeoutSeconds: 60, statementTimeoutSeconds: 60 }, { reserveRecoveryMs: 1_000 });
		const startedBefore = await serverStartTime();
		const holder = await holdLock(keys[250]);
		const reserving = store.reserve(keys.map(request), lease).catch((caught: unknown) => caught);
		await waitForLockWait();
		await server.stop();
		holder.release(true);
		const error = await reserving;
		server = await startOwnPostgres(baseDir, server.port);
		await reopenAdmin();
		expect(await serverStartTime()).not.toBe(startedBefore);

		expect(error).toBeInstanceOf(OutcomeUnknownError);
		expect((error as Error).message).toMatch(/may have been reserved/);
		// The provider's retry: every key is New exactly once (the interrupted statement rolled back).
		const retry = await store.reserve(keys.map(request), lease);
		expect(retry.filter((result) => result.outcome === 'new')).toHaveLength(500);
		expect(await rowCount('batch-b-')).toBe(500);
		const third = await store.reserve(keys.map(request), lease);
		expect(third.filter((result) => result.outcome === 'new')).toHaveLength(0);
	}, 120_000);

	it('during a Complete: the Complete retries within the lease and the key ends completed', async () => {
		const { store, retries } = storeWith({ lockTimeoutSeconds: 60, statementTimeoutSeconds: 60 }, { settleRetryMs: 30_000 });
		const [reserved] = await store.reserve([request('complete-restart')], lease);
		const startedBefore = await serverStartTime();
		const holder = await holdLock('complete-restart', true);
		const completing = store.complete([
			{ key: 'complete-restart', ownerToken: reserved.ownerToken!, response: { paid: true }, leaseEndsAt: reserved.record.lockedUntil },
		]);
		await waitForLockWait();
		await restartServer(1_000);
		holder.release(true);
		await reopenAdmin();

		expect(await completing).toEqual([{ key: 'complete-restart', applied: true }]);
		expect(await serverStartTime()).not.toBe(startedBefore);
		expect(retries.filter((event) => event.operation === 'complete').length).toBeGreaterThanOrEqual(2); // lost mid-statement, then refused while down
		expect(await row('complete-restart')).toMatchObject({ status: 'completed', response: { paid: true } });
	}, 120_000);
});
