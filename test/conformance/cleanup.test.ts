import type { KeyStore } from '../../lib/store/contract';
import type { ReserveOptions } from '../../lib/types';
import { describeEachBackend, freshStore, type StoreFixture } from '../support/stores';

const DAY = 86_400;

describeEachBackend('cleanup and retention', (backend) => {
	let fixture: StoreFixture;
	let store: KeyStore;

	beforeAll(async () => {
		fixture = await freshStore(backend, { prefix: 'clean' });
		store = fixture.store;
	});

	afterAll(() => fixture?.close());

	/** Rows as a hand-made table or an earlier run left them: retention and lease relative to now. */
	async function seed(rows: Array<{ key: string; firstSeenDaysAgo: number; expiresInDays?: number | null; leaseMinutes?: number }>) {
		await fixture.seed(
			rows.map((row) => ({
				key: row.key,
				firstSeen: -row.firstSeenDaysAgo * DAY,
				status: row.leaseMinutes === undefined ? ('completed' as const) : ('processing' as const),
				lockedUntil: row.leaseMinutes === undefined ? null : row.leaseMinutes * 60,
				expiresAt: row.expiresInDays === undefined || row.expiresInDays === null ? null : row.expiresInDays * DAY,
			})),
		);
	}

	const keys = () => fixture.keys();

	describe('cleanup', () => {
		beforeEach(() => fixture.clear());

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
			await fixture.seedMany('k', 25, { firstSeen: -60 * DAY });
			const result = await store.cleanup({ retentionSeconds: 30 * 86_400, batchSize: 10, timeBudgetSeconds: 60 });
			expect(result).toMatchObject({ deleted: 25, batches: 3, finished: true });
		});

		it('stops at its time budget and says it is not finished', async () => {
			await fixture.seedMany('k', 50, { firstSeen: -60 * DAY });
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

		beforeEach(() => fixture.clear());

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
			await fixture.update('retried', { status: 'failed' });
			const retry = await reserve('retried', { ...lease, mode: 'permanent' });
			expect(retry).toMatchObject({ outcome: 'new', reclaimed: true });
			expect(await cleanup()).toMatchObject({ deleted: 0 });
			expect(await reserve('retried')).toMatchObject({ outcome: 'duplicate' });
		});

		it('a running lease outlives its retention end: reserve answers in progress and cleanup keeps it', async () => {
			// Retention shorter than the lease: the retention end passes while the business step runs.
			const first = await reserve('slow', { ...lease, retentionSeconds: 1, leaseSeconds: 300 });
			expect(first).toMatchObject({ outcome: 'new' });
			await fixture.update('slow', { expiresAt: -1 });

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
});
