import type { KeyStore } from '../../lib/store/contract';
import { InvalidConfigurationError, UnusableKeyError } from '../../lib/errors';
import type { ReplayClaim } from '../../lib/types';
import { describeEachBackend, freshStore, type StoreFixture } from '../support/stores';
import { raceStore } from '../support/workers';

/*
 * Claim for Replay: which stored states are claimed (failed, lease ran out) and which are not
 * (completed, live lease, gone), what a claim changes, bad keys per item, and claimers in
 * parallel OS processes (one winner per key), also racing redeliveries.
 */

const TABLE = 'replay_keys';
const CLAIM = { leaseSeconds: 120, retentionSeconds: 86_400, executionId: 'exec-replay', workflowId: 'wf-replay' };
const NO_PAYLOAD = Symbol('no payload stored');

describeEachBackend('Claim for Replay', (backend) => {
	let fixture: StoreFixture;
	let store: KeyStore;

	beforeAll(async () => {
		fixture = await freshStore(backend, { table: TABLE, prefix: 'replay' });
		store = fixture.store;
	});

	afterAll(() => fixture?.close());

	/** Stores one key in a given state, with the evidence Reserve stores. */
	async function seed(
		key: string,
		state: 'failed' | 'stuck' | 'live' | 'completed' | 'leaseless',
		payload: unknown = { id: key, type: 'test.event' },
	) {
		const columns = {
			failed: { status: 'failed' as const, lockedUntil: null, lastError: 'boom' },
			stuck: { status: 'processing' as const, lockedUntil: -1, lastError: null },
			live: { status: 'processing' as const, lockedUntil: 300, lastError: null },
			completed: { status: 'completed' as const, lockedUntil: null, lastError: null },
			leaseless: { status: 'processing' as const, lockedUntil: null, lastError: null },
		}[state];
		await fixture.seed([
			{
				key,
				...columns,
				attempts: 2,
				ownerToken: 'random',
				executionId: 'exec-first',
				payload: payload === NO_PAYLOAD ? undefined : payload,
				source: 'stripe',
				correlationId: 'corr-1',
				expiresAt: 3600,
			},
		]);
	}

	/** The columns a claim changes or keeps; the lease and retention as set or not (from the store's clock). */
	async function row(key: string) {
		const stored = await fixture.row(key);
		if (!stored) return undefined;
		const now = (await fixture.now()).getTime();
		return {
			status: stored.status,
			attempts: stored.attempts,
			owner_token: stored.owner_token,
			execution_id: stored.execution_id,
			workflow_id: stored.workflow_id,
			lease_set: stored.locked_until === null ? null : stored.locked_until.getTime() > now + 100_000,
			retention_set: stored.expires_at === null ? null : stored.expires_at.getTime() > now + 23 * 3600_000,
			payload: stored.payload,
			source: stored.source,
			correlation_id: stored.correlation_id,
			last_error: stored.last_error,
		};
	}

	describe('PostgresKeyStore.claimForReplay', () => {
		it.each([
			['failed', 'failed' as const],
			['processing whose lease ran out (the run died)', 'stuck' as const],
		])('claims a key that is %s: new owner token and lease, attempts + 1, this execution, the payload kept', async (_what, state) => {
			const key = `claim:${state}`;
			await seed(key, state, { id: 'evt_1', type: 'invoice.paid', amount: 42 });
			const before = await row(key);

			const [result] = await store.claimForReplay([key], CLAIM);

			expect(result).toMatchObject({
				claimed: true,
				key,
				payload: { id: 'evt_1', type: 'invoice.paid', amount: 42 },
				payloadStored: true,
				source: 'stripe',
				correlationId: 'corr-1',
			});
			const claimed = result as Extract<ReplayClaim, { claimed: true }>;
			const after = await row(key);
			expect(after).toMatchObject({
				status: 'processing',
				attempts: 3,
				execution_id: 'exec-replay',
				workflow_id: 'wf-replay',
				lease_set: true,
				retention_set: true,
			});
			expect(after!.owner_token).toBe(claimed.ownerToken);
			expect(after!.owner_token).not.toBe(before!.owner_token);
			expect(after).toMatchObject({ payload: before!.payload, source: 'stripe', correlation_id: 'corr-1', last_error: before!.last_error });
			expect(claimed.record).toMatchObject({ status: 'processing', attempts: 3, leaseActive: true, executionId: 'exec-replay' });

			// The claim is a reservation: Complete with its token applies, a second claim does not take it.
			expect(await store.complete([{ key, ownerToken: claimed.ownerToken }])).toEqual([{ key, applied: true }]);
			expect(await store.claimForReplay([key], CLAIM)).toMatchObject([{ claimed: false, reason: 'completed' }]);
		});

		it.each([
			['completed', 'completed' as const, 'completed'],
			['under a live lease (a redelivery or another replay runs it)', 'live' as const, 'in_progress'],
			['processing without a lease (a hand-made row)', 'leaseless' as const, 'in_progress'],
		])('does not claim a key that is %s, and changes nothing', async (_what, state, reason) => {
			const key = `noclaim:${state}`;
			await seed(key, state);
			const before = await fixture.row(key);

			const [result] = await store.claimForReplay([key], CLAIM);

			expect(result).toMatchObject({ claimed: false, key, reason });
			expect(result).not.toHaveProperty('ownerToken');
			expect(await fixture.row(key)).toEqual(before);
		});

		it('a key that is not stored is not found; a repeat in the batch is not claimed twice', async () => {
			await seed('batch:failed', 'failed');
			const results = await store.claimForReplay(['batch:gone', 'batch:failed', 'batch:failed'], CLAIM);
			expect(results.map((result) => [result.key, result.claimed, result.claimed ? null : result.reason])).toEqual([
				['batch:gone', false, 'not_found'],
				['batch:failed', true, null],
				['batch:failed', false, 'repeat_in_batch'],
			]);
			expect((await row('batch:failed'))!.attempts).toBe(3);
		});

		it('claims a whole batch in one statement, each key by its own state, results in request order', async () => {
			await seed('mix:c', 'failed');
			await seed('mix:a', 'completed');
			await seed('mix:b', 'stuck');
			await seed('mix:d', 'live');
			const results = await store.claimForReplay(['mix:d', 'mix:c', 'mix:b', 'mix:a'], CLAIM);
			expect(results.map((result) => (result.claimed ? 'claimed' : result.reason))).toEqual([
				'in_progress',
				'claimed',
				'claimed',
				'completed',
			]);
		});

		it('a key without a stored payload is claimed with payload null (payloadStored false); JSON null is a stored payload', async () => {
			await seed('nopayload', 'failed', NO_PAYLOAD);
			await seed('jsonnull', 'failed', null);
			const [none, jsonNull] = await store.claimForReplay(['nopayload', 'jsonnull'], CLAIM);
			expect(none).toMatchObject({ claimed: true, payload: null, payloadStored: false });
			expect(jsonNull).toMatchObject({ claimed: true, payload: null, payloadStored: true });
		});

		it.each([
			['an empty key', '', /empty/],
			['a NUL', 'evt\u0000x', /NUL/],
			['a lone surrogate', 'evt\uD800x', /surrogate/],
		])('refuses %s before anything is sent (UnusableKeyError)', async (_what, key, message) => {
			await seed(`bad-neighbour:${message.source}`, 'failed');
			const claim = store.claimForReplay([`bad-neighbour:${message.source}`, key], CLAIM);
			await expect(claim).rejects.toThrow(UnusableKeyError);
			await expect(claim).rejects.toThrow(message);
			expect((await row(`bad-neighbour:${message.source}`))!.status).toBe('failed');
		});

		it.each([
			['lease 0', { ...CLAIM, leaseSeconds: 0 }, /Lease seconds/],
			['lease NaN', { ...CLAIM, leaseSeconds: Number.NaN }, /Lease seconds/],
			['retention -1', { ...CLAIM, retentionSeconds: -1 }, /Retention/],
		])('refuses a bad lease or retention (%s)', async (_what, options, message) => {
			await expect(store.claimForReplay(['x'], options)).rejects.toThrow(InvalidConfigurationError);
			await expect(store.claimForReplay(['x'], options)).rejects.toThrow(message);
		});

		it('accepts stored keys verbatim, hashed ones included (sha256:…)', async () => {
			const key = `sha256:${'ab'.repeat(32)}`;
			await seed(key, 'failed');
			expect(await store.claimForReplay([key], CLAIM)).toMatchObject([{ claimed: true, key }]);
		});
	});

	describe('claimers in parallel OS processes', () => {
		const keysOf = (prefix: string) => Array.from({ length: 50 }, (_, index) => `${prefix}${index}`);

		it('8 processes claiming the same 50 failed keys at once: exactly one claim per key, the others see it in progress', async () => {
			const keys = keysOf('proc-claim:');
			for (const key of keys) await seed(key, 'failed');
			const reports = await raceStore(
				fixture.target,
				Array.from({ length: 8 }, (_, process) => ({ kind: 'claim' as const, batches: [rotated(keys, process * 7)] })),
			);
			expect(new Set(reports.map((report) => report.pid)).size).toBe(8);
			const results = reports.flatMap((report) => report.results);
			for (const key of keys) {
				const ofKey = results.filter((result) => result.key === key);
				expect(ofKey.map((result) => result.outcome).sort()).toEqual(['claimed', ...Array.from({ length: 7 }, () => 'in_progress')]);
				expect(await row(key)).toMatchObject({ status: 'processing', attempts: 3 });
			}
		});

		it('claims racing redeliveries (4 processes each) over 50 failed keys: exactly one of them owns each key', async () => {
			const keys = keysOf('proc-mixed:');
			for (const key of keys) await seed(key, 'failed');
			const jobs = Array.from({ length: 8 }, (_, process) =>
				process % 2 === 0
					? { kind: 'claim' as const, batches: [rotated(keys, process * 5)] }
					: { kind: 'reserve' as const, batches: [rotated(keys, process * 5)], mode: 'lease' as const },
			);
			const results = (await raceStore(fixture.target, jobs)).flatMap((report) => report.results);
			for (const key of keys) {
				const owners = results.filter((result) => result.key === key && (result.outcome === 'claimed' || result.outcome === 'new'));
				expect(owners).toHaveLength(1);
				expect((await row(key))!.attempts).toBe(3);
			}
		});
	});
});

/** The keys starting at another place: each process takes the rows in its own order. */
function rotated<T>(keys: T[], by: number): T[] {
	const start = by % keys.length;
	return [...keys.slice(start), ...keys.slice(0, start)];
}
