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
	const request = (key: string, extra: Partial<ReservationRequest> = {}): ReservationRequest => ({
		key,
		keySource: 'test',
		payloadHash: null,
		...extra,
	});

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

	// The Postgres store sends a batch's keys as one array literal when none needs escaping, and as
	// an array for pg to escape otherwise: both must keep every key exactly as given.
	it.each([
		['none needs escaping', ['a,b', '{c}', 'NULL', 'null', ' spaced ', 'x}y{z', "it's", 'ünïcødé 🎉', '', 'tab\there']],
		['some need escaping', ['say "hi"', 'back\\slash', '"', '\\', '{"a":1}', 'end\\', 'NULL']],
	])('keys written like array syntax are reserved and found exactly as given (%s)', async (_case, bodies) => {
		const keys = bodies.map((body) => `literal-${_case.length}-${body}`);
		const first = await store.reserve(
			keys.map((key) => request(key)),
			{ ...permanent, detail: 'compact' },
		);
		expect(first.map((result) => [result.key, result.outcome])).toEqual(keys.map((key) => [key, 'new']));
		const stored = await store.getKeys(keys);
		expect(keys.map((key) => stored.get(key)?.key)).toEqual(keys);
		const again = await store.reserve(
			[...keys].reverse().map((key) => request(key)),
			{ ...permanent, detail: 'compact' },
		);
		expect(again.map((result) => [result.key, result.outcome])).toEqual([...keys].reverse().map((key) => [key, 'duplicate']));
	});

	it('settles of 300 items at once: each item applied or refused with its reason, in one call', async () => {
		const lease = { ...permanent, mode: 'lease' as const };
		const reserved = await store.reserve(
			Array.from({ length: 300 }, (_, i) => request(`settle-${i}`)),
			lease,
		);
		expect(reserved.every((result) => result.outcome === 'new')).toBe(true);
		const owned = reserved.map((result) => ({ key: result.key, ownerToken: result.ownerToken! }));
		const stranger = '00000000-0000-4000-8000-000000000000';
		// 0–99 completed; 100–149 offered with another token; 150–199 never reserved (another prefix).
		const completing = [
			...owned.slice(0, 100).map((item) => ({ ...item, response: { ok: item.key } })),
			...owned.slice(100, 150).map((item) => ({ ...item, ownerToken: stranger })),
			...Array.from({ length: 50 }, (_, i) => ({ key: `settle-none-${i}`, ownerToken: stranger })),
		];
		const completed = await store.complete(completing);
		expect(completed).toHaveLength(200);
		expect(completed.slice(0, 100).every((report) => report.applied)).toBe(true);
		expect(completed.slice(100, 150).every((report) => !report.applied && report.reason === 'not_owner')).toBe(true);
		expect(completed.slice(150).every((report) => !report.applied && report.reason === 'not_found')).toBe(true);
		// 100–199 held, then 100–199 released and 200–299 failed; the completed ones refuse both.
		expect(await store.hold(owned.slice(100, 200).map((item) => ({ ...item, holdMs: 120_000 })))).toHaveLength(100);
		const released = await store.release([...owned.slice(0, 50), ...owned.slice(100, 200)]);
		expect(released.slice(0, 50).every((report) => !report.applied && report.reason === 'completed')).toBe(true);
		expect(released.slice(50).every((report) => report.applied)).toBe(true);
		const failed = await store.fail(owned.slice(200).map((item) => ({ ...item, error: 'the business step failed' })));
		expect(failed.every((report) => report.applied)).toBe(true);
		expect(await fixture.count('settle-')).toBe(200);
		expect((await fixture.row('settle-0'))?.status).toBe('completed');
		expect((await fixture.row('settle-250'))?.status).toBe('failed');
		expect(await fixture.row('settle-150')).toBeUndefined();
	});

	it('evidence some requests fill: each row gets its own value, null for the others', async () => {
		await store.reserve(
			[
				request('mixed-a', {
					payloadHash: 'hash-a',
					evidence: { payloadJson: '{"id":"a"}', payloadBytes: 10, source: 'stripe', correlationId: 'corr-a' },
				}),
				request('mixed-b'),
			],
			permanent,
		);
		const rows = await Promise.all(['mixed-a', 'mixed-b'].map((key) => fixture.row(key)));
		expect(
			rows.map((row) => ({
				key: row!.key,
				payload_hash: row!.payload_hash,
				payload: row!.payload,
				payload_bytes: row!.payload_bytes,
				source: row!.source,
				correlation_id: row!.correlation_id,
			})),
		).toEqual([
			{ key: 'mixed-a', payload_hash: 'hash-a', payload: { id: 'a' }, payload_bytes: 10, source: 'stripe', correlation_id: 'corr-a' },
			{ key: 'mixed-b', payload_hash: null, payload: null, payload_bytes: null, source: null, correlation_id: null },
		]);
	});

	it("stored evidence comes back from Get Key; a duplicate keeps the first delivery's, a take-over of a failed key stores its own", async () => {
		const evidence = (id: string, correlationId: string) => ({
			payloadJson: JSON.stringify({ id, version: correlationId }),
			payloadBytes: 30,
			source: 'stripe',
			correlationId,
		});
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
		expect((await store.getKeys(['ev-1'])).get('ev-1')).toMatchObject({
			payload: { id: 'ev-1', version: 'third' },
			correlationId: 'third',
		});
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
		const [reserved] = await store.reserve(
			[request('ev-big', { evidence: { payloadJson, payloadBytes: payloadJson.length, source: null, correlationId: null } })],
			{
				...permanent,
				mode: 'lease',
			},
		);
		const expected = { id: 'evt_big', data: { amount: BIG, small: 42, ratio: 0.1 } };
		expect((await store.getKeys(['ev-big'])).get('ev-big')!.payload).toEqual(expected);
		expect((await store.listKeys({ limit: 10, keyPrefix: 'ev-big' })).keys.map((key) => key.payload)).toEqual([expected]);
		await store.fail([{ key: 'ev-big', ownerToken: reserved.ownerToken!, error: 'business step failed' }]);
		const [claim] = await store.claimForReplay(['ev-big'], { leaseSeconds: 60, retentionSeconds: 3600 });
		expect(claim).toMatchObject({ claimed: true, payload: expected, payloadStored: true });
	});
});
