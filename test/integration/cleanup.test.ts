import type { Pool } from 'pg';

import { IdempotencyStore } from '../../lib/postgres/store';
import type { ReserveOptions } from '../../lib/types';
import { adminPool, freshSchema } from '../support/database';

let pool: Pool;
let schema: string;
let store: IdempotencyStore;

beforeAll(async () => {
	pool = adminPool();
	schema = await freshSchema(pool, 'clean');
	store = new IdempotencyStore(pool, { schema, table: 'processed_events', createTable: true });
	await store.createTable();
});

afterAll(() => pool.end());

async function seed(rows: Array<{ key: string; firstSeenDaysAgo: number; expiresInDays?: number | null; leaseMinutes?: number }>) {
	for (const row of rows) {
		await pool.query(
			`insert into ${schema}.processed_events (key, first_seen, status, locked_until, expires_at)
			 values ($1, now() - make_interval(days => $2), $3, now() + make_interval(mins => $4), now() + make_interval(days => $5))`,
			[row.key, row.firstSeenDaysAgo, row.leaseMinutes === undefined ? 'completed' : 'processing', row.leaseMinutes ?? null, row.expiresInDays ?? null],
		);
	}
}

const keys = async () => (await pool.query(`select key from ${schema}.processed_events order by key`)).rows.map((row) => row.key);

describe('cleanup', () => {
	beforeEach(() => pool.query(`truncate ${schema}.processed_events`));

	it('deletes keys whose retention ended (rows without one: first seen longer ago than the retention); keeps the rest and running leases', async () => {
		await seed([
			{ key: 'old-seed-row', firstSeenDaysAgo: 31, expiresInDays: null },
			{ key: 'recent-seed-row', firstSeenDaysAgo: 29, expiresInDays: null },
			{ key: 'old-expired', firstSeenDaysAgo: 31, expiresInDays: -1 },
			{ key: 'recent-but-expired', firstSeenDaysAgo: 2, expiresInDays: -1 },
			{ key: 'recent', firstSeenDaysAgo: 2, expiresInDays: 28 },
			// First seen long ago, but a retry or reclaim moved its retention end into the future.
			{ key: 'old-but-extended', firstSeenDaysAgo: 45, expiresInDays: 10 },
			{ key: 'old-under-lease', firstSeenDaysAgo: 45, expiresInDays: -5, leaseMinutes: 5 },
			{ key: 'old-lease-ended', firstSeenDaysAgo: 45, expiresInDays: -5, leaseMinutes: -5 },
		]);
		const result = await store.cleanup({ retentionSeconds: 30 * 86_400, batchSize: 10_000, timeBudgetSeconds: 60 });
		expect(result).toMatchObject({ deleted: 4, batches: 1, finished: true });
		expect(await keys()).toEqual(['old-but-extended', 'old-under-lease', 'recent', 'recent-seed-row']);
	});

	it('works in batches until done, and reports them', async () => {
		await pool.query(
			`insert into ${schema}.processed_events (key, first_seen) select 'k' || i, now() - interval '60 days' from generate_series(1, 25) i`,
		);
		const result = await store.cleanup({ retentionSeconds: 30 * 86_400, batchSize: 10, timeBudgetSeconds: 60 });
		expect(result).toMatchObject({ deleted: 25, batches: 3, finished: true });
	});

	it('skips a row another session holds locked instead of waiting for it; a later run deletes it', async () => {
		await seed([
			{ key: 'gone-1', firstSeenDaysAgo: 60 },
			{ key: 'held', firstSeenDaysAgo: 60 },
			{ key: 'gone-2', firstSeenDaysAgo: 60 },
		]);
		const holder = await pool.connect();
		try {
			await holder.query('begin');
			expect((await holder.query(`select 1 from ${schema}.processed_events where key = 'held' for update`)).rowCount).toBe(1);
			const waited = new Promise((resolve) => setTimeout(() => resolve('waited on the lock'), 5_000));
			const result = await Promise.race([store.cleanup({ retentionSeconds: 30 * 86_400, batchSize: 10, timeBudgetSeconds: 60 }), waited]);
			expect(result).toMatchObject({ deleted: 2, finished: true });
			expect(await keys()).toEqual(['held']);
		} finally {
			await holder.query('rollback');
			holder.release();
		}
		expect(await store.cleanup({ retentionSeconds: 30 * 86_400, batchSize: 10, timeBudgetSeconds: 60 })).toMatchObject({ deleted: 1 });
		expect(await keys()).toEqual([]);
	});

	it('stops at its time budget and says it is not finished', async () => {
		await pool.query(
			`insert into ${schema}.processed_events (key, first_seen) select 'k' || i, now() - interval '60 days' from generate_series(1, 50) i`,
		);
		const result = await store.cleanup({ retentionSeconds: 30 * 86_400, batchSize: 1, timeBudgetSeconds: 0.001 });
		expect(result.finished).toBe(false);
		expect(result.deleted).toBeLessThan(50);
	});

	it.each([
		[{ retentionSeconds: 0, batchSize: 10, timeBudgetSeconds: 1 }, /retention/],
		[{ retentionSeconds: 10, batchSize: 0, timeBudgetSeconds: 1 }, /batch size/],
		[{ retentionSeconds: 10, batchSize: 1.5, timeBudgetSeconds: 1 }, /batch size/],
	])('rejects %p', async (options, message) => {
		await expect(store.cleanup(options)).rejects.toThrow(message);
	});
});

describe('one retention rule for reserve and cleanup', () => {
	const lease: ReserveOptions = { mode: 'lease', leaseSeconds: 300, retentionSeconds: 30 * 86_400, executionId: 'exec-1' };
	const reserve = async (key: string, options: ReserveOptions = lease) =>
		(await store.reserve([{ key, keySource: 'custom', payloadHash: null }], options))[0];
	const cleanup = () => store.cleanup({ retentionSeconds: 30 * 86_400, batchSize: 10_000, timeBudgetSeconds: 60 });

	beforeEach(() => pool.query(`truncate ${schema}.processed_events`));

	it('a key reclaimed after a crash is kept for a full retention from the reclaim, however old its first_seen', async () => {
		// First seen 45 days ago, reserved again 25 days ago (so its retention runs 5 more days), and
		// that run crashed: its lease ran out an hour ago.
		await seed([{ key: 'reclaimed', firstSeenDaysAgo: 45, expiresInDays: 5, leaseMinutes: -60 }]);
		const reclaim = await reserve('reclaimed');
		expect(reclaim).toMatchObject({ outcome: 'new', reclaimed: true });
		await store.complete([{ key: 'reclaimed', ownerToken: reclaim.ownerToken! }]);

		expect(await cleanup()).toMatchObject({ deleted: 0 });
		expect(await keys()).toEqual(['reclaimed']);
		// The provider's next delivery is still a duplicate.
		expect(await reserve('reclaimed')).toMatchObject({ outcome: 'duplicate' });
	});

	it('a failed key retried later is kept for a full retention from the retry', async () => {
		await seed([{ key: 'retried', firstSeenDaysAgo: 40, expiresInDays: 1 }]);
		await pool.query(`update ${schema}.processed_events set status = 'failed' where key = 'retried'`);
		const retry = await reserve('retried', { ...lease, mode: 'permanent' });
		expect(retry).toMatchObject({ outcome: 'new', reclaimed: true });
		expect(await cleanup()).toMatchObject({ deleted: 0 });
		expect(await reserve('retried')).toMatchObject({ outcome: 'duplicate' });
	});

	it('a running lease outlives its retention end: reserve answers in progress and cleanup keeps it', async () => {
		// Retention shorter than the lease: the retention end passes while the business step runs.
		const first = await reserve('slow', { ...lease, retentionSeconds: 1, leaseSeconds: 300 });
		expect(first).toMatchObject({ outcome: 'new' });
		await pool.query(`update ${schema}.processed_events set expires_at = now() - interval '1 second' where key = 'slow'`);

		expect(await reserve('slow')).toMatchObject({ outcome: 'in_progress', ownerToken: null });
		expect(await cleanup()).toMatchObject({ deleted: 0 });
		expect(await store.complete([{ key: 'slow', ownerToken: first.ownerToken! }])).toEqual([{ key: 'slow', applied: true }]);
	});

	it('a row without a retention end (the hand-built recipe) ends a retention after first seen, for reserve as for cleanup', async () => {
		await seed([
			{ key: 'recipe-old', firstSeenDaysAgo: 31, expiresInDays: null },
			{ key: 'recipe-recent', firstSeenDaysAgo: 29, expiresInDays: null },
		]);
		expect(await reserve('recipe-recent')).toMatchObject({ outcome: 'duplicate' });
		const old = await reserve('recipe-old');
		expect(old).toMatchObject({ outcome: 'new', reclaimed: false });
		expect(old.record.attempts).toBe(1);
	});
});
