import { Pool } from 'pg';

import { toPoolConfig } from '../../lib/store/postgres/connectionSettings';
import { PostgresKeyStore, type RetryEvent } from '../../lib/store/postgres/stores';
import type { ReserveOptions } from '../../lib/types';
import { connectionSettings, postgresSchemaFixture } from '../support/database';
import { TcpProxy } from '../support/tcpProxy';

/*
 * Release and Mark Failed retry a lost connection until shortly before the item's lease ends
 * (Complete retries for its whole budget, past the lease end). The lease end is the database's
 * time; the n8n host's clock may be off by minutes. These tests skew the host's wall clock
 * (Date.now) and check that the retries follow the database's.
 */

const TEN_MINUTES = 10 * 60_000;
const lease: ReserveOptions = {
	mode: 'lease',
	leaseSeconds: 60,
	retentionSeconds: 86_400,
	executionId: 'exec-clock',
	workflowId: 'wf-clock',
};

const db = postgresSchemaFixture('clock', { keyTables: ['processed_events'] });
const pools: Pool[] = [];
const proxies: TcpProxy[] = [];

afterEach(() => jest.restoreAllMocks());

afterAll(async () => {
	for (const proxy of proxies) await proxy.close();
	await Promise.all(pools.map((pool) => pool.end().catch(() => {})));
});

/** A store whose connections pass through a proxy that can drop them, with a retry log. */
async function storeBehindProxy(settleRetryMs: number) {
	const settings = connectionSettings();
	const proxy = await TcpProxy.start(settings.host, settings.port);
	proxies.push(proxy);
	const pool = new Pool(toPoolConfig({ ...settings, port: proxy.port }));
	pool.on('error', () => {});
	pools.push(pool);
	const retries: RetryEvent[] = [];
	const store = new PostgresKeyStore(pool, {
		schema: db.schema,
		table: 'processed_events',
		createTable: false,
		settleRetryMs,
		onRetry: (event) => retries.push(event),
	});
	return { proxy, store, retries };
}

/** Moves the host's wall clock by `offsetMs` (timers and the database are unaffected). */
function skewHostClock(offsetMs: number): void {
	const realNow = Date.now.bind(Date);
	jest.spyOn(Date, 'now').mockImplementation(() => realNow() + offsetMs);
}

const reserve = async (key: string) =>
	(
		await new PostgresKeyStore(db.pool, { schema: db.schema, table: 'processed_events', createTable: false }).reserve(
			[{ key, keySource: 'custom', payloadHash: null }],
			lease,
		)
	)[0];
const statusOf = async (key: string) => (await db.row(key))?.status;

describe('settle retries follow the database clock, not the host clock', () => {
	it('host clock 10 minutes ahead: a Complete during a one-second outage is retried and completes the key', async () => {
		const reserved = await reserve('clock-ahead');
		const { proxy, store, retries } = await storeBehindProxy(10_000);
		proxy.dropConnections(true);
		setTimeout(() => proxy.dropConnections(false), 1_000);
		skewHostClock(TEN_MINUTES);

		// The lease (database time) ends in 60 s; by the host's clock it ended 9 minutes ago.
		const result = await store.complete([
			{ key: 'clock-ahead', ownerToken: reserved.ownerToken!, leaseEndsAt: reserved.record.lockedUntil },
		]);

		expect(retries.length).toBeGreaterThan(0); // the outage happened and was retried
		expect(result).toEqual([{ key: 'clock-ahead', applied: true }]);
		expect(await statusOf('clock-ahead')).toBe('completed');
	});

	it('host clock 10 minutes behind: retrying stops before the lease ends in database time, not after the whole budget', async () => {
		const reserved = await reserve('clock-behind');
		const { proxy, store, retries } = await storeBehindProxy(8_000);
		await store.ready(); // this pool has read the database's time once
		const { rows } = await db.pool.query(`select now() + interval '3 seconds' as lease_end`);
		proxy.dropConnections(true);
		await new Promise((resolve) => setTimeout(resolve, 200)); // the pool drops its cut idle connection
		skewHostClock(-TEN_MINUTES);

		const started = performance.now();
		const error = await store
			.fail([
				{
					key: 'clock-behind',
					ownerToken: reserved.ownerToken!,
					leaseEndsAt: rows[0].lease_end as Date,
					error: 'the business step failed',
				},
			])
			.catch((caught: unknown) => caught);
		const elapsed = performance.now() - started;

		expect((error as Error).message).toMatch(/Nothing was marked failed: a redelivery reads In Progress until the lease ends/);
		expect(retries.length).toBeGreaterThan(0);
		// 2 s before the lease end (3 s away), not the 8 s budget the host clock would allow.
		expect(elapsed).toBeLessThan(2_500);
		expect(await statusOf('clock-behind')).toBe('processing');
	});

	it('no database time read yet on the pool: only the retry budget bounds the retries (a late settle is fenced by its token)', async () => {
		const reserved = await reserve('clock-unknown');
		const { proxy, store, retries } = await storeBehindProxy(1_500);
		proxy.dropConnections(true);
		skewHostClock(TEN_MINUTES);

		const started = performance.now();
		const error = await store
			.release([{ key: 'clock-unknown', ownerToken: reserved.ownerToken!, leaseEndsAt: reserved.record.lockedUntil }])
			.catch((caught: unknown) => caught);
		const elapsed = performance.now() - started;

		expect((error as Error).message).toMatch(/could not be reached/);
		// The first two backoffs (200 and 400 ms) fit in the 1.5 s budget however slow each attempt is
		// on a loaded machine; a deadline taken from the lease end on the host's clock (9 minutes
		// past) would allow none. Whether a third fits depends on how long the attempts took.
		expect(retries.length).toBeGreaterThanOrEqual(2);
		expect(elapsed).toBeGreaterThanOrEqual(600);
		expect(await statusOf('clock-unknown')).toBe('processing');
	});
});
