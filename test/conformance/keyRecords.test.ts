import { InvalidConfigurationError } from '../../lib/errors';
import type { KeyStore } from '../../lib/store/contract';
import { MAX_LIST_PAGE_SIZE } from '../../lib/store/rules';
import type { StoredKey } from '../../lib/types';
import { describeEachBackend, freshStore, type StoreFixture } from '../support/stores';

/*
 * Get Key, List Keys and Get Stats on the store: filters, cursor pagination and its bounds, stuck
 * leases, NUL in inputs. Through the Idempotency Key node: test/integration/keyRecords.test.ts.
 */

const HOUR = 3600;
const TABLE = 'records';

describeEachBackend('stored key records', (backend) => {
	let fixture: StoreFixture;
	let store: KeyStore;

	beforeAll(async () => {
		fixture = await freshStore(backend, { table: TABLE, prefix: 'keyrecords' });
		store = fixture.store;
		// A known table: live lease, stuck lease, failed, completed (old and new), another prefix.
		await fixture.seed([
			{ key: 'stripe:live', status: 'processing', lockedUntil: 5 * 60, firstSeen: 0, ownerToken: 'random', executionId: 'e-live' },
			{
				key: 'stripe:stuck',
				status: 'processing',
				lockedUntil: -5 * 60,
				firstSeen: -2 * HOUR,
				ownerToken: 'random',
				executionId: 'e-stuck',
			},
			{
				key: 'stripe:failed',
				status: 'failed',
				lockedUntil: null,
				firstSeen: -3 * HOUR,
				lastError: 'card declined',
				executionId: 'e-failed',
			},
			{ key: 'stripe:old', status: 'completed', lockedUntil: null, firstSeen: -48 * HOUR, executionId: 'e-old' },
			{ key: 'shopify:new', status: 'completed', lockedUntil: null, firstSeen: 0, executionId: 'e-new' },
		]);
	});

	afterAll(() => fixture?.close());

	const keysOf = (page: StoredKey[]) => page.map((stored) => stored.key);

	describe('Get Key (store)', () => {
		it('returns the whole record of stored keys and leaves unknown ones out; a NUL key is simply not found', async () => {
			const found = await store.getKeys(['stripe:failed', 'stripe:nope', 'nul\u0000key']);
			expect([...found.keys()]).toEqual(['stripe:failed']);
			expect(found.get('stripe:failed')).toMatchObject({
				status: 'failed',
				lastError: 'card declined',
				executionId: 'e-failed',
				retentionEnded: false,
			});
		});
	});

	describe('List Keys (store)', () => {
		it.each([
			['status failed', { status: 'failed' as const }, ['stripe:failed']],
			['stuck leases: processing with an expired lease, not the live one', { stuckLeasesOnly: true }, ['stripe:stuck']],
			[
				'replayable: failed, or processing with an expired lease (not live, not completed)',
				{ replayableOnly: true },
				['stripe:failed', 'stripe:stuck'],
			],
			['first seen more than 1 hour ago', { olderThanSeconds: 3600 }, ['stripe:failed', 'stripe:old', 'stripe:stuck']],
			['key prefix', { keyPrefix: 'shop' }, ['shopify:new']],
			['prefix and status together', { keyPrefix: 'stripe:', status: 'completed' as const }, ['stripe:old']],
			['no filter: all, in key order', {}, ['shopify:new', 'stripe:failed', 'stripe:live', 'stripe:old', 'stripe:stuck']],
		])('%s', async (_what, filter, expected) => {
			expect(keysOf((await store.listKeys({ limit: 100, ...filter })).keys)).toEqual(expected);
		});

		it('a prefix with LIKE wildcards matches them literally', async () => {
			expect((await store.listKeys({ limit: 100, keyPrefix: 'stripe%' })).keys).toEqual([]);
			expect((await store.listKeys({ limit: 100, keyPrefix: 'stri_e:' })).keys).toEqual([]);
		});

		it('pages through 25 keys in pages of 10 after a cursor: every key once, in order', async () => {
			const keys = Array.from({ length: 25 }, (_, index) => `page:${String(index).padStart(2, '0')}`);
			await fixture.seed(keys.map((key) => ({ key })));
			const seen: string[] = [];
			const sizes: number[] = [];
			let afterKey = '';
			for (let pageNumber = 0; pageNumber < 10; pageNumber++) {
				const { keys: page } = await store.listKeys({ limit: 10, afterKey, keyPrefix: 'page:' });
				sizes.push(page.length);
				seen.push(...keysOf(page));
				if (page.length < 10) break;
				afterKey = page[page.length - 1].key;
			}
			expect(sizes).toEqual([10, 10, 5]);
			expect(seen).toEqual(keys);
		});

		it.each([0, -1, 1.5, MAX_LIST_PAGE_SIZE + 1, Number.NaN])('refuses the page size %p with a clear error', async (limit) => {
			await expect(store.listKeys({ limit })).rejects.toThrow(InvalidConfigurationError);
			await expect(store.listKeys({ limit })).rejects.toThrow(/page size must be a whole number from 1 to 1000/);
		});

		it('refuses a NUL in the prefix or cursor with a clear error, an unknown status, and a negative age', async () => {
			await expect(store.listKeys({ limit: 1, keyPrefix: 'a\u0000' })).rejects.toThrow(/key prefix contains a NUL/);
			await expect(store.listKeys({ limit: 1, afterKey: 'a\u0000' })).rejects.toThrow(/cursor contains a NUL/);
			await expect(store.listKeys({ limit: 1, status: 'done' as never })).rejects.toThrow(/Unknown status "done"/);
			await expect(store.listKeys({ limit: 1, olderThanSeconds: -5 })).rejects.toThrow(/Older Than/);
		});
	});

	describe('Get Stats (store)', () => {
		it('counts by status now, and new keys, duplicates, reclaims and failures of keys seen within the window', async () => {
			const stats = await fixture.otherTable('stats_table');
			await stats.seed([
				{ key: 'live', status: 'processing', lockedUntil: 5 * 60, firstSeen: 0, lastSeen: 0, duplicateCount: 0, attempts: 1 },
				{ key: 'stuck', status: 'processing', lockedUntil: -5 * 60, firstSeen: -HOUR, lastSeen: -HOUR, duplicateCount: 1, attempts: 1 },
				{ key: 'done', status: 'completed', lockedUntil: null, firstSeen: -30 * HOUR, lastSeen: -2 * HOUR, duplicateCount: 3, attempts: 2 },
				{ key: 'failed', status: 'failed', lockedUntil: null, firstSeen: -3 * HOUR, lastSeen: -3 * HOUR, duplicateCount: 0, attempts: 1 },
				{ key: 'old', status: 'completed', lockedUntil: null, firstSeen: -48 * HOUR, lastSeen: -47 * HOUR, duplicateCount: 5, attempts: 4 },
				{
					key: 'old-failed',
					status: 'failed',
					lockedUntil: null,
					firstSeen: -48 * HOUR,
					lastSeen: -48 * HOUR,
					duplicateCount: 0,
					attempts: 2,
				},
			]);
			expect(await stats.store.stats(24)).toEqual({
				windowHours: 24,
				total: 6,
				processing: 1,
				stuckLeases: 1,
				completed: 2,
				failed: 2,
				newInWindow: 3,
				duplicatesInWindow: 4,
				reclaimsInWindow: 1,
				failedInWindow: 1,
				retryPending: 0,
				deadLettered: 0,
			});
			expect(await stats.store.stats(72)).toMatchObject({
				windowHours: 72,
				total: 6,
				newInWindow: 6,
				duplicatesInWindow: 9,
				reclaimsInWindow: 5,
				failedInWindow: 2,
			});
		});

		it.each([0, -1, 9000, Number.NaN])('refuses the window %p hours with a clear error', async (hours) => {
			await expect(store.stats(hours)).rejects.toThrow(/stats window must be more than 0 and at most 8784 hours/);
		});
	});
});
