import { randomUUID } from 'node:crypto';

import type { KeyStore } from '../../lib/store/contract';
import { MAX_HOLD_MS } from '../../lib/store/rules';
import type { ReserveOptions } from '../../lib/types';
import { describeEachBackend, freshStore, type StoreFixture } from '../support/stores';

/*
 * Hold: an execution that waits (a Wait node) keeps its keys past their lease, so a copy delivered
 * during the wait is In Progress instead of taking the key over and running the step again.
 */
describeEachBackend('holding a key while its execution waits', (backend) => {
	let fixture: StoreFixture;
	let store: KeyStore;

	const lease: ReserveOptions = {
		mode: 'lease',
		leaseSeconds: 60,
		retentionSeconds: 86_400,
		executionId: 'exec-1',
		workflowId: 'wf-1',
		instanceId: 'instance-a',
	};
	const reserveOne = async (key: string) => (await store.reserve([{ key, keySource: 'custom', payloadHash: null }], lease))[0];
	const leaseLeftMs = async (key: string) => (await fixture.row(key))!.locked_until!.getTime() - (await fixture.now()).getTime();
	const HOUR = 3_600_000;

	beforeAll(async () => {
		fixture = await freshStore(backend, { prefix: 'hold' });
		store = fixture.store;
	});

	afterAll(() => fixture?.close());

	it('extends the owner’s lease: a copy after the original lease is In Progress, not a takeover', async () => {
		const first = await reserveOne('h-wait');
		expect(await store.hold([{ key: 'h-wait', ownerToken: first.ownerToken!, holdMs: HOUR }])).toEqual(['h-wait']);
		// Well past the 60-second lease the key was reserved with.
		expect(await leaseLeftMs('h-wait')).toBeGreaterThan(HOUR - 60_000);
		const copy = await reserveOne('h-wait');
		expect(copy).toMatchObject({ outcome: 'in_progress', ownerToken: null });
		// The resumed execution settles the key with the same owner token.
		expect(await store.complete([{ key: 'h-wait', ownerToken: first.ownerToken! }])).toEqual([{ key: 'h-wait', applied: true }]);
	});

	it('takes the owner token in upper case, as the settles do', async () => {
		const first = await reserveOne('h-upper');
		expect(await store.hold([{ key: 'h-upper', ownerToken: first.ownerToken!.toUpperCase(), holdMs: HOUR }])).toEqual(['h-upper']);
	});

	it('never shortens a lease', async () => {
		const first = await reserveOne('h-short');
		await store.hold([{ key: 'h-short', ownerToken: first.ownerToken!, holdMs: HOUR }]);
		expect(await store.hold([{ key: 'h-short', ownerToken: first.ownerToken!, holdMs: 1_000 }])).toEqual(['h-short']);
		expect(await leaseLeftMs('h-short')).toBeGreaterThan(HOUR - 60_000);
	});

	it('holds a key whose lease ran out while no one took it over (the owner still has it)', async () => {
		const first = await reserveOne('h-late');
		await fixture.update('h-late', { lockedUntil: -1 });
		expect(await store.hold([{ key: 'h-late', ownerToken: first.ownerToken!, holdMs: HOUR }])).toEqual(['h-late']);
		expect(await reserveOne('h-late')).toMatchObject({ outcome: 'in_progress' });
	});

	it('leaves alone a key another owner took over, a completed key, a failed key and a key never stored', async () => {
		const taken = await reserveOne('h-taken');
		await fixture.update('h-taken', { lockedUntil: -1 });
		const retry = await reserveOne('h-taken');
		expect(retry).toMatchObject({ outcome: 'new', reclaimed: true });
		const before = (await fixture.row('h-taken'))!.locked_until!.getTime();

		const done = await reserveOne('h-done');
		await store.complete([{ key: 'h-done', ownerToken: done.ownerToken! }]);
		const failed = await reserveOne('h-failed');
		await store.fail([{ key: 'h-failed', ownerToken: failed.ownerToken!, error: 'step failed' }]);

		expect(
			await store.hold([
				{ key: 'h-taken', ownerToken: taken.ownerToken!, holdMs: HOUR },
				{ key: 'h-done', ownerToken: done.ownerToken!, holdMs: HOUR },
				{ key: 'h-failed', ownerToken: failed.ownerToken!, holdMs: HOUR },
				{ key: 'h-absent', ownerToken: randomUUID(), holdMs: HOUR },
				{ key: 'h-nul\u0000', ownerToken: randomUUID(), holdMs: HOUR },
			]),
		).toEqual([]);
		expect((await fixture.row('h-taken'))!.locked_until!.getTime()).toBe(before);
		expect(await fixture.row('h-done')).toMatchObject({ status: 'completed', locked_until: null });
		expect(await fixture.row('h-failed')).toMatchObject({ status: 'failed', locked_until: null });
		expect(await fixture.row('h-absent')).toBeUndefined();
	});

	it('holds n8n’s "wait forever" (the year 3000) as the longest hold', async () => {
		const first = await reserveOne('h-forever');
		expect(await store.hold([{ key: 'h-forever', ownerToken: first.ownerToken!, holdMs: MAX_HOLD_MS }])).toEqual(['h-forever']);
		expect(await leaseLeftMs('h-forever')).toBeGreaterThan(MAX_HOLD_MS - HOUR);
	});

	it('refuses a hold that is not a whole number of milliseconds from 1 to the longest hold, and an owner token that is not a UUID', async () => {
		for (const holdMs of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, MAX_HOLD_MS + 1]) {
			await expect(store.hold([{ key: 'h-bad', ownerToken: randomUUID(), holdMs }])).rejects.toThrow(/whole number of milliseconds/);
		}
		await expect(store.hold([{ key: 'h-bad', ownerToken: 'not-a-uuid', holdMs: 1_000 }])).rejects.toThrow(/not a UUID/);
	});
});
