import type { Pool } from 'pg';

import { IdempotencyStore } from '../../lib/store';
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

	it('deletes keys older than the retention and keys whose own retention ended; keeps recent ones and running leases', async () => {
		await seed([
			{ key: 'old-seed-row', firstSeenDaysAgo: 31, expiresInDays: null },
			{ key: 'old-expired', firstSeenDaysAgo: 31, expiresInDays: -1 },
			{ key: 'recent-but-expired', firstSeenDaysAgo: 2, expiresInDays: -1 },
			{ key: 'recent', firstSeenDaysAgo: 2, expiresInDays: 28 },
			{ key: 'old-under-lease', firstSeenDaysAgo: 45, expiresInDays: -5, leaseMinutes: 5 },
			{ key: 'old-lease-ended', firstSeenDaysAgo: 45, expiresInDays: -5, leaseMinutes: -5 },
		]);
		const result = await store.cleanup({ retentionSeconds: 30 * 86_400, batchSize: 10_000, timeBudgetSeconds: 60 });
		expect(result).toMatchObject({ deleted: 4, batches: 1, finished: true });
		expect(await keys()).toEqual(['old-under-lease', 'recent']);
	});

	it('works in batches until done, and reports them', async () => {
		await pool.query(
			`insert into ${schema}.processed_events (key, first_seen) select 'k' || i, now() - interval '60 days' from generate_series(1, 25) i`,
		);
		const result = await store.cleanup({ retentionSeconds: 30 * 86_400, batchSize: 10, timeBudgetSeconds: 60 });
		expect(result).toMatchObject({ deleted: 25, batches: 3, finished: true });
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
