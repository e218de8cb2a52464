import type { KeyStore } from '../../lib/store/contract';
import type { ReserveOptions } from '../../lib/types';
import { describeEachBackend, freshStore, type StoreFixture } from '../support/stores';

// attempts and duplicate_count are Postgres integers (the embedded store keeps the same bound): a
// key at the maximum must still be answered.
const INT4_MAX = 2_147_483_647;

describeEachBackend('counters', (backend) => {
	let fixture: StoreFixture;
	let store: KeyStore;

	const lease: ReserveOptions = { mode: 'lease', leaseSeconds: 60, retentionSeconds: 86_400 };
	const reserve = async (key: string, options: ReserveOptions = lease) =>
		(await store.reserve([{ key, keySource: 'custom', payloadHash: null }], options))[0];

	beforeAll(async () => {
		fixture = await freshStore(backend, { prefix: 'count' });
		store = fixture.store;
	});

	afterAll(() => fixture?.close());

	describe('counters at the integer maximum', () => {
		it('a duplicate of a key counted 2147483647 times is still answered as a duplicate; the count stays there', async () => {
			const first = await reserve('dup-max');
			await store.complete([{ key: 'dup-max', ownerToken: first.ownerToken! }]);
			await fixture.update('dup-max', { duplicateCount: INT4_MAX });

			const again = await reserve('dup-max');
			expect(again).toMatchObject({ outcome: 'duplicate', ownerToken: null });
			expect(again.record.duplicateCount).toBe(INT4_MAX);
			expect(typeof again.record.duplicateCount).toBe('number');
		});

		it('an in-progress key counted 2147483647 times is still answered as in progress', async () => {
			await reserve('busy-max');
			await fixture.update('busy-max', { duplicateCount: INT4_MAX });
			const again = await reserve('busy-max');
			expect(again).toMatchObject({ outcome: 'in_progress' });
			expect(again.record.duplicateCount).toBe(INT4_MAX);
		});

		it('a failed key attempted 2147483647 times is still reserved again on the next delivery', async () => {
			const first = await reserve('fail-max');
			await store.fail([{ key: 'fail-max', ownerToken: first.ownerToken!, error: 'boom' }]);
			await fixture.update('fail-max', { attempts: INT4_MAX });

			const retry = await reserve('fail-max');
			expect(retry).toMatchObject({ outcome: 'new', reclaimed: true });
			expect(retry.record.attempts).toBe(INT4_MAX);
			expect(await store.complete([{ key: 'fail-max', ownerToken: retry.ownerToken! }])).toEqual([{ key: 'fail-max', applied: true }]);
		});

		it('a crashed run of a key attempted 2147483647 times is still reclaimed', async () => {
			await reserve('crash-max');
			await fixture.update('crash-max', { attempts: INT4_MAX, lockedUntil: -1 });
			const reclaim = await reserve('crash-max');
			expect(reclaim).toMatchObject({ outcome: 'new', reclaimed: true });
			expect(reclaim.record.attempts).toBe(INT4_MAX);
		});
	});
});
