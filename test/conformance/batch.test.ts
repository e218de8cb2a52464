import type { KeyStore } from '../../lib/store/contract';
import type { ReservationRequest } from '../../lib/types';
import { describeEachBackend, freshStore, type StoreFixture } from '../support/stores';

/*
 * Batches on the store: 10,000 requests with repeats, and evidence columns some requests fill.
 * What the Postgres statement is sent (its round trips and parameters) is tested in
 * test/integration/batch.test.ts.
 */

const BIG = '12345678901234567890';

describeEachBackend('a reservation batch', (backend) => {
	let fixture: StoreFixture;
	let store: KeyStore;
	const permanent = { mode: 'permanent' as const, leaseSeconds: 60, retentionSeconds: 86_400 };
	const request = (key: string, extra: Partial<ReservationRequest> = {}): ReservationRequest => ({ key, keySource: 'test', payloadHash: null, ...extra });

	beforeAll(async () => {
		fixture = await freshStore(backend, { prefix: 'batch' });
		store = fixture.store;
	});

	afterAll(() => fixture?.close());

	it('10,000 requests with 1,000 repeats give exactly the distinct count New; the repeats are duplicates of this batch', async () => {
		// 9,000 distinct ids; ids 0–999 appear twice, the repeats spread through the batch.
		const ids = Array.from({ length: 9_000 }, (_, i) => i);
		const repeats = Array.from({ length: 1_000 }, (_, i) => i);
		const order = [...ids, ...repeats].sort((a, b) => ((a * 7919) % 10_007) - ((b * 7919) % 10_007));
		const results = await store.reserve(
			order.map((id) => request(`order-${id}`)),
			{ ...permanent, detail: 'compact' },
		);
		expect(results).toHaveLength(10_000);
		const fresh = results.filter((result) => result.outcome === 'new');
		const duplicate = results.filter((result) => result.outcome === 'duplicate');
		expect(fresh).toHaveLength(9_000);
		expect(duplicate).toHaveLength(1_000);
		expect(new Set(fresh.map((result) => result.key)).size).toBe(9_000);
		expect(duplicate.every((result) => result.repeatInBatch && result.ownerToken === null)).toBe(true);
		// Results come back in request order.
		expect(results.map((result) => result.key)).toEqual(order.map((id) => `order-${id}`));
		expect(await fixture.count('order-')).toBe(9_000);

		const again = await store.reserve(
			Array.from({ length: 10_000 }, (_, i) => request(`order-${i % 9_000}`)),
			{ ...permanent, detail: 'compact' },
		);
		expect(again.every((result) => result.outcome === 'duplicate')).toBe(true);
	});

	it('evidence some requests fill: each row gets its own value, null for the others', async () => {
		await store.reserve(
			[
				request('mixed-a', { payloadHash: 'hash-a', evidence: { payloadJson: '{"id":"a"}', payloadBytes: 10, source: 'stripe', correlationId: 'corr-a' } }),
				request('mixed-b'),
			],
			permanent,
		);
		const rows = await Promise.all(['mixed-a', 'mixed-b'].map((key) => fixture.row(key)));
		expect(rows.map((row) => ({ key: row!.key, payload_hash: row!.payload_hash, payload: row!.payload, payload_bytes: row!.payload_bytes, source: row!.source, correlation_id: row!.correlation_id }))).toEqual([
			{ key: 'mixed-a', payload_hash: 'hash-a', payload: { id: 'a' }, payload_bytes: 10, source: 'stripe', correlation_id: 'corr-a' },
			{ key: 'mixed-b', payload_hash: null, payload: null, payload_bytes: null, source: null, correlation_id: null },
		]);
	});

	it('stored evidence comes back from Get Key; a duplicate keeps the first delivery\'s, a take-over of a failed key stores its own', async () => {
		const evidence = (id: string, correlationId: string) => ({ payloadJson: JSON.stringify({ id, version: correlationId }), payloadBytes: 30, source: 'stripe', correlationId });
		const [first] = await store.reserve([request('ev-1', { evidence: evidence('ev-1', 'first') })], { ...permanent, mode: 'lease' });
		expect(first.outcome).toBe('new');
		const [duplicate] = await store.reserve([request('ev-1', { evidence: evidence('ev-1', 'second') })], { ...permanent, mode: 'lease' });
		expect(duplicate.outcome).toBe('in_progress');
		expect((await store.getKeys(['ev-1'])).get('ev-1')).toMatchObject({
			payload: { id: 'ev-1', version: 'first' },
			payloadStored: true,
			payloadBytes: 30,
			source: 'stripe',
			correlationId: 'first',
		});
		await store.fail([{ key: 'ev-1', ownerToken: first.ownerToken!, error: 'boom' }]);
		const [takeOver] = await store.reserve([request('ev-1', { evidence: evidence('ev-1', 'third') })], { ...permanent, mode: 'lease' });
		expect(takeOver).toMatchObject({ outcome: 'new', reclaimed: true });
		expect((await store.getKeys(['ev-1'])).get('ev-1')).toMatchObject({ payload: { id: 'ev-1', version: 'third' }, correlationId: 'third' });
	});

	it('a payload of JSON null is a stored payload; none stored is payloadStored false', async () => {
		await store.reserve(
			[
				request('ev-null', { evidence: { payloadJson: 'null', payloadBytes: 4, source: null, correlationId: null } }),
				request('ev-none', { evidence: { payloadJson: null, payloadBytes: 5000, source: null, correlationId: null } }),
			],
			permanent,
		);
		const found = await store.getKeys(['ev-null', 'ev-none']);
		expect(found.get('ev-null')).toMatchObject({ payload: null, payloadStored: true, payloadBytes: 4 });
		expect(found.get('ev-none')).toMatchObject({ payload: null, payloadStored: false, payloadBytes: 5000 });
	});

	it('an integer beyond 2^53 in a stored payload comes back from Get Key, List Keys and a replay claim as its exact digits', async () => {
		const payloadJson = `{"id":"evt_big","data":{"amount":${BIG},"small":42,"ratio":0.1}}`;
		const [reserved] = await store.reserve([request('ev-big', { evidence: { payloadJson, payloadBytes: payloadJson.length, source: null, correlationId: null } })], {
			...permanent,
			mode: 'lease',
		});
		const expected = { id: 'evt_big', data: { amount: BIG, small: 42, ratio: 0.1 } };
		expect((await store.getKeys(['ev-big'])).get('ev-big')!.payload).toEqual(expected);
		expect((await store.listKeys({ limit: 10, keyPrefix: 'ev-big' })).keys.map((key) => key.payload)).toEqual([expected]);
		await store.fail([{ key: 'ev-big', ownerToken: reserved.ownerToken!, error: 'business step failed' }]);
		const [claim] = await store.claimForReplay(['ev-big'], { leaseSeconds: 60, retentionSeconds: 3600 });
		expect(claim).toMatchObject({ claimed: true, payload: expected, payloadStored: true });
	});
});
