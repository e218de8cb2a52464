import type { KeyStore } from '../../lib/store/contract';
import { describeEachBackend, freshStore, type StoreFixture } from '../support/stores';
import { reserveOrClaimRace, shuffled } from '../support/workers';

/*
 * Many rows in one statement, from several callers at once in different orders: reservations,
 * replay claims and settles of the same keys never deadlock or fail, and each key gets one owner.
 * Each caller has a connection of its own. That Postgres takes the row locks in byte order whatever
 * the database's collation is tested in test/integration/lockOrder.test.ts.
 */

// Case and punctuation: a collation compares letters first, bytes put every capital before every small letter.
const PREFIXES = ['a', 'A', 'b', 'B', '_a', '-b', 'Z', 'z', 'é', 'E'];
const keysOf = (round: number) =>
	Array.from({ length: 120 }, (_, i) => `${PREFIXES[i % PREFIXES.length]}${i % 7 === 0 ? '-' : ''}k${round}.${i}`);
const LEASE = { mode: 'lease' as const, leaseSeconds: 120, retentionSeconds: 86_400 };
const requests = (keys: string[]) => keys.map((key) => ({ key, keySource: 'test', payloadHash: null }));

describeEachBackend('many keys from several callers in different orders', (backend) => {
	let fixture: StoreFixture;
	let callers: KeyStore[];

	beforeAll(async () => {
		fixture = await freshStore(backend, { prefix: 'lockorder' });
		callers = Array.from({ length: 6 }, () => fixture.openStore());
	});

	afterAll(() => fixture?.close());

	it('reservations and replay claims of the same failed keys, 6 callers at once, never fail; each key gets one owner', async () => {
		for (let round = 1; round <= 6; round++) {
			const keys = keysOf(round);
			await fixture.seed(
				keys.map((key) => ({ key, status: 'failed' as const, attempts: 1, ownerToken: 'random', lastError: 'boom', expiresAt: 3600 })),
			);
			const { owned, failures } = await reserveOrClaimRace(callers, keys, round);
			expect(failures).toEqual([]);
			expect(owned.slice().sort()).toEqual(keys.slice().sort());
		}
	});

	it('duplicate batches of the same completed keys, 6 callers at once, never fail; every count is kept', async () => {
		const keys = keysOf(100);
		const permanent = { ...LEASE, mode: 'permanent' as const };
		await callers[0].reserve(requests(keys), permanent);
		for (let round = 1; round <= 4; round++) {
			const settled = await Promise.allSettled(
				callers.map((store, index) => store.reserve(requests(shuffled(keys, round * 10 + index)), permanent)),
			);
			expect(settled.flatMap((result) => (result.status === 'rejected' ? [String(result.reason)] : []))).toEqual([]);
		}
		const counts = (await Promise.all(keys.map((key) => fixture.row(key)))).map((row) => row!.duplicate_count);
		expect({ low: Math.min(...counts), high: Math.max(...counts) }).toEqual({ low: 24, high: 24 });
	});

	it.each(['complete', 'fail', 'release'] as const)(
		'%s of a 300-key batch while two redeliveries of the same keys reserve them, in other orders, never fails',
		async (settle) => {
			const failures: string[] = [];
			for (let round = 1; round <= 8; round++) {
				const keys = Array.from({ length: 300 }, (_, i) => `${PREFIXES[i % PREFIXES.length]}${settle}${round}.${(i * 7919) % 1000}`);
				const owned = await callers[0].reserve(requests(keys), LEASE);
				const items = shuffled(owned, round).map((result) => ({ key: result.key, ownerToken: result.ownerToken as string }));
				const settling = {
					complete: () => callers[0].complete(items.map((item) => ({ ...item, response: { ok: true } }))),
					fail: () => callers[0].fail(items.map((item) => ({ ...item, error: 'boom' }))),
					release: () => callers[0].release(items),
				}[settle];
				const settled = await Promise.allSettled([
					settling(),
					...[1, 2].map((caller) => callers[caller].reserve(requests(shuffled(keys, round * 10 + caller)), LEASE)),
				]);
				failures.push(...settled.flatMap((result) => (result.status === 'rejected' ? [String(result.reason)] : [])));
				// Every key the first run owned was settled by it (a redelivery saw it in progress until then).
				if (settled[0].status === 'rejected') throw settled[0].reason;
				expect(settled[0].value.filter((report) => report.applied)).toHaveLength(300);
			}
			expect(failures).toEqual([]);
		},
	);
});
