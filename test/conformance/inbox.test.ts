import { InboxItemTooLargeError, InvalidConfigurationError } from '../../lib/errors';
import type { KeyStore } from '../../lib/store/contract';
import { INBOX_RETRY_CAP_MS, MAX_INBOX_ITEM_BYTES, inboxRetryDelayMs } from '../../lib/store/rules';
import type { InboxRequest, ReservationRequest, ReserveOptions } from '../../lib/types';
import { describeEachBackend, freshStore, type RowValues, type StoreFixture } from '../support/stores';
import { raceStore } from '../support/workers';

/*
 * The inbox (the Idempotent Webhook trigger's Respond: At Once) on both backends: an accepted event
 * is kept with its item, only its inbox runs it again (every other delivery is a duplicate), a
 * failed run schedules the next retry with backoff and jitter or dead-letters the event, Release
 * never loses it, exactly one claimer takes each due retry, and dead letters are visible, replayable
 * and cleaned up only when their retention ends.
 */

const TABLE = 'inbox_keys';
// Exact bytes matter: multi-byte text and a number beyond 2^53 come back as they went in.
const ITEM =
	'{"json":{"body":{"id":"evt_1","name":"Zoë 🚀","amount":123456789012345678901234567890}},"rawBody":"e30=","mimeType":"application/json"}';
const LEASE: ReserveOptions = {
	mode: 'lease',
	leaseSeconds: 60,
	retentionSeconds: 86_400,
	executionId: 'exec-1',
	workflowId: 'wf-inbox',
	instanceId: 'instance-a',
};
const CLAIM = { limit: 50, leaseMs: 120_000 };

describeEachBackend('the inbox', (backend) => {
	let fixture: StoreFixture;
	let store: KeyStore;
	let owners = 0;

	beforeAll(async () => {
		fixture = await freshStore(backend, { table: TABLE, prefix: 'inbox' });
		store = fixture.store;
	});

	afterAll(() => fixture?.close());

	/** An owner of its own per test: a claim takes every due event of its owner. */
	const newOwner = () => `wf-inbox/trigger-${++owners}`;
	const inbox = (owner: string, settings: Partial<InboxRequest> = {}): InboxRequest => ({
		owner,
		item: ITEM,
		maxAttempts: 3,
		firstRetryMs: 1000,
		retryForMs: 3_600_000,
		...settings,
	});
	const request = (key: string, inboxRequest?: InboxRequest): ReservationRequest => ({
		key,
		keySource: 'custom',
		payloadHash: null,
		...(inboxRequest ? { inbox: inboxRequest } : {}),
	});

	/** Accepts one event into `owner`'s inbox; its owner token. */
	async function accept(key: string, owner: string, settings: Partial<InboxRequest> = {}, options: ReserveOptions = LEASE) {
		const [result] = await store.reserve([request(key, inbox(owner, settings))], options);
		expect(result.outcome).toBe('new');
		return result.ownerToken!;
	}

	/** The store's clock around a call: what the call's own now lies between. */
	async function around<T>(call: () => Promise<T>): Promise<{ result: T; before: number; after: number }> {
		const before = (await fixture.now()).getTime();
		const result = await call();
		const after = (await fixture.now()).getTime();
		return { result, before, after };
	}

	/** The row's next retry is due between `low` and `high` ms after the settle (the store's clock, 2 ms for rounding). */
	async function expectRetryDue(key: string, timing: { before: number; after: number }, low: number, high: number) {
		const row = (await fixture.row(key))!;
		expect(row).toMatchObject({ status: 'failed', dead_lettered_at: null, locked_until: null });
		const due = row.next_attempt_at!.getTime();
		expect(due).toBeGreaterThanOrEqual(timing.before + low - 2);
		expect(due).toBeLessThanOrEqual(timing.after + high + 2);
	}

	async function expectDeadLettered(key: string, timing: { before: number; after: number }, error: string | RegExp) {
		const row = (await fixture.row(key))!;
		expect(row).toMatchObject({ status: 'failed', next_attempt_at: null, locked_until: null, inbox_item: ITEM });
		expect(row.last_error).toMatch(error);
		expect(row.dead_lettered_at!.getTime()).toBeGreaterThanOrEqual(timing.before - 2);
		expect(row.dead_lettered_at!.getTime()).toBeLessThanOrEqual(timing.after + 2);
	}

	describe('reserve', () => {
		it('a new reservation stores the inbox: its owner, its item byte for byte, its attempts, first retry delay and retry window on the store clock', async () => {
			const owner = newOwner();
			const { before, after } = await around(() => accept('stored', owner, { maxAttempts: 7, firstRetryMs: 2500, retryForMs: 7_200_000 }));
			const row = (await fixture.row('stored'))!;
			expect(row).toMatchObject({
				status: 'processing',
				attempts: 1,
				inbox_owner: owner,
				inbox_item: ITEM,
				max_attempts: 7,
				first_retry_ms: 2500,
				next_attempt_at: null,
				dead_lettered_at: null,
			});
			expect(row.retry_until!.getTime()).toBeGreaterThanOrEqual(before + 7_200_000 - 2);
			expect(row.retry_until!.getTime()).toBeLessThanOrEqual(after + 7_200_000 + 2);
		});

		it('a key reserved without an inbox has none: every inbox column is null', async () => {
			await store.reserve([request('plain')], LEASE);
			expect(await fixture.row('plain')).toMatchObject({
				inbox_owner: null,
				inbox_item: null,
				max_attempts: null,
				first_retry_ms: null,
				retry_until: null,
				next_attempt_at: null,
				dead_lettered_at: null,
			});
		});

		const states: Array<[string, RowValues | 'completed']> = [
			['processing under its lease', {}],
			['processing past its lease (its run died)', { lockedUntil: -5 }],
			['failed with a retry pending', { status: 'failed', lockedUntil: null, nextAttemptAt: 30 }],
			['failed with its retry due', { status: 'failed', lockedUntil: null, nextAttemptAt: -5 }],
			['completed', 'completed'],
			['dead-lettered', { status: 'failed', lockedUntil: null, deadLetteredAt: -1 }],
		];
		it.each(states)(
			'every later reservation of an inbox event %s is a duplicate (with or without an inbox of its own): never in progress, never taken over',
			async (state, change) => {
				const owner = newOwner();
				const key = `dup:${state}`;
				const token = await accept(key, owner);
				if (change === 'completed') await store.complete([{ key, ownerToken: token }]);
				else if (Object.keys(change).length > 0) await fixture.update(key, change);
				const before = (await fixture.row(key))!;
				const [plain] = await store.reserve([request(key)], LEASE);
				const [again] = await store.reserve([request(key, inbox(newOwner()))], LEASE);
				for (const result of [plain, again]) {
					expect(result).toMatchObject({ outcome: 'duplicate', ownerToken: null, record: { status: before.status, attempts: 1 } });
				}
				const after = (await fixture.row(key))!;
				expect(after).toMatchObject({
					status: before.status,
					owner_token: before.owner_token,
					attempts: 1,
					duplicate_count: 2,
					inbox_owner: owner,
				});
			},
		);

		it('a key that is not an inbox event keeps its answers: in progress under a lease, taken over once failed', async () => {
			const [first] = await store.reserve([request('plain-answers')], LEASE);
			expect((await store.reserve([request('plain-answers')], LEASE))[0].outcome).toBe('in_progress');
			await store.fail([{ key: 'plain-answers', ownerToken: first.ownerToken!, error: 'boom' }]);
			expect((await store.reserve([request('plain-answers')], LEASE))[0]).toMatchObject({ outcome: 'new', reclaimed: true });
		});

		it('a failed key that was not an inbox event, taken over by an inbox reservation, becomes one', async () => {
			const owner = newOwner();
			const [first] = await store.reserve([request('becomes-inbox')], LEASE);
			await store.fail([{ key: 'becomes-inbox', ownerToken: first.ownerToken!, error: 'boom' }]);
			expect((await store.reserve([request('becomes-inbox', inbox(owner))], LEASE))[0]).toMatchObject({ outcome: 'new', reclaimed: true });
			expect(await fixture.row('becomes-inbox')).toMatchObject({ inbox_owner: owner, inbox_item: ITEM, attempts: 2 });
		});

		it('an item of exactly MAX_INBOX_ITEM_BYTES is kept whole; one byte more refuses the batch (InboxItemTooLargeError) and stores nothing', async () => {
			const owner = newOwner();
			const fits = `"${'é'.repeat((MAX_INBOX_ITEM_BYTES - 2) / 2)}"`;
			expect(Buffer.byteLength(fits)).toBe(MAX_INBOX_ITEM_BYTES);
			await accept('item-fits', owner, { item: fits });
			expect((await fixture.row('item-fits'))!.inbox_item).toBe(fits);
			const over = `"${'x'.repeat(MAX_INBOX_ITEM_BYTES - 1)}"`;
			const batch = [request('item-neighbour', inbox(owner)), request('item-over', inbox(owner, { item: over }))];
			await expect(store.reserve(batch, LEASE)).rejects.toThrow(InboxItemTooLargeError);
			expect(await fixture.row('item-neighbour')).toBeUndefined();
			expect(await fixture.row('item-over')).toBeUndefined();
		});

		it.each([
			['a Permanent-mode reservation', {}, { ...LEASE, mode: 'permanent' as const }, /mode lease/],
			['an empty owner', { owner: '' }, LEASE, /owner/],
			['0 attempts', { maxAttempts: 0 }, LEASE, /attempts/],
			['1.5 attempts', { maxAttempts: 1.5 }, LEASE, /attempts/],
			['a first retry of 0 ms', { firstRetryMs: 0 }, LEASE, /first retry/],
			['a first retry over the cap', { firstRetryMs: INBOX_RETRY_CAP_MS + 1 }, LEASE, /first retry/],
			['a retry window of 0 ms', { retryForMs: 0 }, LEASE, /retry window/],
			['an item with a NUL', { item: '"\u0000"' }, LEASE, /item/],
		])('refuses %s (InvalidConfigurationError), storing nothing', async (_what, settings, options, message) => {
			const reserve = store.reserve([request('refused', inbox(newOwner(), settings))], options);
			await expect(reserve).rejects.toThrow(InvalidConfigurationError);
			await expect(reserve).rejects.toThrow(message);
			expect(await fixture.row('refused')).toBeUndefined();
		});
	});

	describe('a failed run', () => {
		it.each([
			[1, 1000],
			[2, 1000],
			[3, 1000],
			[5, 1000],
			// 2^12 s is past the cap: an hour at most.
			[13, 1000],
			[2, 2_000_000],
		])(
			'after attempt %i (first retry %i ms) schedules the next retry inboxRetryDelayMs from now, jitter between half and all of it',
			async (attempts, firstRetryMs) => {
				const key = `backoff:${attempts}:${firstRetryMs}`;
				const token = await accept(key, newOwner(), { maxAttempts: 20, firstRetryMs });
				await fixture.update(key, { attempts });
				const timing = await around(() => store.fail([{ key, ownerToken: token, error: 'step failed' }]));
				expect(timing.result).toEqual([{ key, applied: true }]);
				await expectRetryDue(key, timing, inboxRetryDelayMs(attempts, firstRetryMs, 0.5), inboxRetryDelayMs(attempts, firstRetryMs, 1));
				expect(await fixture.row(key)).toMatchObject({ last_error: 'step failed', inbox_item: ITEM, attempts });
			},
		);

		it('spreads the retries of events failed together (a jitter factor of its own per event)', async () => {
			const owner = newOwner();
			const keys = Array.from({ length: 40 }, (_, index) => `spread:${index}`);
			const accepted = await store.reserve(
				keys.map((key) => request(key, inbox(owner, { firstRetryMs: 60_000 }))),
				LEASE,
			);
			const timing = await around(() =>
				store.fail(accepted.map((result) => ({ key: result.key, ownerToken: result.ownerToken!, error: 'outage' }))),
			);
			const dues = await Promise.all(keys.map(async (key) => (await fixture.row(key))!.next_attempt_at!.getTime()));
			for (const due of dues) {
				expect(due).toBeGreaterThanOrEqual(timing.before + 30_000 - 2);
				expect(due).toBeLessThanOrEqual(timing.after + 60_000 + 2);
			}
			// 40 draws from [30 s, 60 s]: never all within a few seconds of each other.
			expect(Math.max(...dues) - Math.min(...dues)).toBeGreaterThan(5_000);
		});

		it('of its last attempt dead-letters the event: kept failed with its item and the error, no retry due', async () => {
			const key = 'last-attempt';
			const token = await accept(key, newOwner(), { maxAttempts: 3 });
			await fixture.update(key, { attempts: 3 });
			const timing = await around(() => store.fail([{ key, ownerToken: token, error: 'still failing' }]));
			await expectDeadLettered(key, timing, 'still failing');
		});

		it('whose next retry would fall due after the retry window dead-letters the event at once', async () => {
			const key = 'window-ends';
			const token = await accept(key, newOwner(), { firstRetryMs: 1000, retryForMs: 400 });
			const timing = await around(() => store.fail([{ key, ownerToken: token, error: 'late' }]));
			await expectDeadLettered(key, timing, 'late');
		});

		it('of a key that is not an inbox event leaves it failed for the next delivery: no retry due, never dead-lettered', async () => {
			const [plain] = await store.reserve([request('plain-fail')], LEASE);
			await store.fail([{ key: 'plain-fail', ownerToken: plain.ownerToken!, error: 'boom' }]);
			expect(await fixture.row('plain-fail')).toMatchObject({ status: 'failed', next_attempt_at: null, dead_lettered_at: null });
		});

		it('Mark Failed by execution schedules each inbox event of the execution, or dead-letters the one at its last attempt', async () => {
			const owner = newOwner();
			const execution = { ...LEASE, executionId: 'exec-fail-inbox' };
			await accept('exec-fail:retry', owner, {}, execution);
			await accept('exec-fail:last', owner, { maxAttempts: 1 }, execution);
			const timing = await around(() =>
				store.failExecution({ executionId: 'exec-fail-inbox', workflowId: 'wf-inbox', instanceId: 'instance-a' }, 'execution failed'),
			);
			expect(timing.result.keys.sort()).toEqual(['exec-fail:last', 'exec-fail:retry']);
			await expectRetryDue('exec-fail:retry', timing, 500, 1000);
			await expectDeadLettered('exec-fail:last', timing, 'execution failed');
		});
	});

	describe('Release', () => {
		it.each([
			['a few keys', 2],
			// 100 keys or more: the embedded store runs the settle on its background thread.
			['a batch of 120 keys', 60],
		])(
			'of %s never deletes an inbox event: it is failed with a retry scheduled and its item kept; the other keys are deleted',
			async (_what, perKind) => {
				const owner = newOwner();
				const inboxKeys = Array.from({ length: perKind }, (_, index) => `release:${perKind}:inbox:${index}`);
				const plainKeys = Array.from({ length: perKind }, (_, index) => `release:${perKind}:plain:${index}`);
				const reserved = [
					...(await store.reserve(
						inboxKeys.map((key) => request(key, inbox(owner))),
						LEASE,
					)),
					...(await store.reserve(
						plainKeys.map((key) => request(key)),
						LEASE,
					)),
				];
				const timing = await around(() => store.release(reserved.map((result) => ({ key: result.key, ownerToken: result.ownerToken! }))));
				expect(timing.result.every((report) => report.applied)).toBe(true);
				for (const key of inboxKeys) {
					await expectRetryDue(key, timing, 500, 1000);
					expect(await fixture.row(key)).toMatchObject({ inbox_item: ITEM, last_error: expect.stringMatching(/released/i) });
				}
				for (const key of plainKeys) expect(await fixture.row(key)).toBeUndefined();
			},
		);

		it('of an event at its last attempt dead-letters it (as a failed run would)', async () => {
			const token = await accept('release-last', newOwner(), { maxAttempts: 1 });
			const timing = await around(() => store.release([{ key: 'release-last', ownerToken: token }]));
			await expectDeadLettered('release-last', timing, /released/i);
		});

		it('by execution fails and schedules its inbox events, and deletes its other keys', async () => {
			const owner = newOwner();
			const execution = { ...LEASE, executionId: 'exec-release-inbox' };
			await accept('exec-release:inbox', owner, {}, execution);
			await store.reserve([request('exec-release:plain')], execution);
			const timing = await around(() =>
				store.releaseExecution({ executionId: 'exec-release-inbox', workflowId: 'wf-inbox', instanceId: 'instance-a' }),
			);
			expect(timing.result.sort()).toEqual(['exec-release:inbox', 'exec-release:plain']);
			await expectRetryDue('exec-release:inbox', timing, 500, 1000);
			expect(await fixture.row('exec-release:plain')).toBeUndefined();
		});
	});

	describe('Complete', () => {
		it('clears the kept item (nothing of the event is kept after success), and later deliveries stay duplicates', async () => {
			const owner = newOwner();
			const token = await accept('complete', owner);
			await fixture.update('complete', { nextAttemptAt: 30, deadLetteredAt: -1 });
			expect(await store.complete([{ key: 'complete', ownerToken: token, response: { ok: true } }])).toEqual([
				{ key: 'complete', applied: true },
			]);
			expect(await fixture.row('complete')).toMatchObject({
				status: 'completed',
				inbox_owner: owner,
				inbox_item: null,
				next_attempt_at: null,
				dead_lettered_at: null,
			});
			expect((await store.reserve([request('complete')], LEASE))[0].outcome).toBe('duplicate');
		});
	});

	describe('Hold', () => {
		it('extends an inbox event’s lease as any key’s: the inbox does not claim it meanwhile, and a copy is still a duplicate', async () => {
			const owner = newOwner();
			const token = await accept('held', owner);
			await fixture.update('held', { lockedUntil: -1 });
			expect(await store.hold([{ key: 'held', ownerToken: token, holdMs: 600_000 }])).toEqual(['held']);
			expect(await store.claimDueInbox({ owner, ...CLAIM })).toEqual([]);
			expect((await store.reserve([request('held')], LEASE))[0].outcome).toBe('duplicate');
			expect((await fixture.row('held'))!.owner_token!.toLowerCase()).toBe(token.toLowerCase());
		});
	});

	describe('claimDueInbox', () => {
		it('claims a failed event whose retry is due and a processing one whose lease ended: a new owner token, processing, the lease from now, attempts + 1, no retry due, its item', async () => {
			const owner = newOwner();
			const failedToken = await accept('claim:failed', owner);
			await store.fail([{ key: 'claim:failed', ownerToken: failedToken, error: 'boom' }]);
			await fixture.update('claim:failed', { nextAttemptAt: -1 });
			const diedToken = await accept('claim:died', owner);
			await fixture.update('claim:died', { lockedUntil: -1 });
			const timing = await around(() => store.claimDueInbox({ owner, ...CLAIM }));
			const claims = [...timing.result].sort((a, b) => a.key.localeCompare(b.key));
			expect(claims.map(({ key, item, attempt }) => ({ key, item, attempt }))).toEqual([
				{ key: 'claim:died', item: ITEM, attempt: 2 },
				{ key: 'claim:failed', item: ITEM, attempt: 2 },
			]);
			for (const claim of claims) {
				expect(claim.ownerToken).not.toBe(claim.key === 'claim:died' ? diedToken : failedToken);
				expect(claim.leaseEndsAt.getTime()).toBeGreaterThanOrEqual(timing.before + CLAIM.leaseMs - 2);
				expect(claim.leaseEndsAt.getTime()).toBeLessThanOrEqual(timing.after + CLAIM.leaseMs + 2);
				const row = (await fixture.row(claim.key))!;
				expect(row).toMatchObject({ status: 'processing', attempts: 2, next_attempt_at: null, execution_id: null });
				expect(row.owner_token!.toLowerCase()).toBe(claim.ownerToken.toLowerCase());
				expect(row.locked_until!.getTime()).toBe(claim.leaseEndsAt.getTime());
			}
			// Taken: a second look finds nothing.
			expect(await store.claimDueInbox({ owner, ...CLAIM })).toEqual([]);
		});

		it('leaves alone a retry not yet due, a live lease, a completed event, a dead-lettered one, another owner’s events and keys that are not inbox events', async () => {
			const owner = newOwner();
			const notDue = await accept('alone:not-due', owner);
			await store.fail([{ key: 'alone:not-due', ownerToken: notDue, error: 'boom' }]);
			await accept('alone:live', owner);
			const done = await accept('alone:completed', owner);
			await store.complete([{ key: 'alone:completed', ownerToken: done }]);
			await accept('alone:dead', owner);
			// Even with a retry time left in the past: a dead letter is only ever run again by hand.
			await fixture.update('alone:dead', { status: 'failed', lockedUntil: null, deadLetteredAt: -1, nextAttemptAt: -5 });
			await accept('alone:other-owner', newOwner());
			await fixture.update('alone:other-owner', { lockedUntil: -1 });
			await store.reserve([request('alone:plain')], LEASE);
			await fixture.update('alone:plain', { lockedUntil: -1 });
			expect(await store.claimDueInbox({ owner, ...CLAIM })).toEqual([]);
			expect((await fixture.row('alone:not-due'))!.status).toBe('failed');
			expect((await fixture.row('alone:other-owner'))!.attempts).toBe(1);
			expect((await fixture.row('alone:plain'))!.attempts).toBe(1);
		});

		it('dead-letters, instead of claiming, a due event that had its last attempt or whose due time is past its retry window', async () => {
			const owner = newOwner();
			await accept('exhausted:attempts', owner, { maxAttempts: 2 });
			await fixture.update('exhausted:attempts', { attempts: 2, lockedUntil: -1 });
			await accept('exhausted:window', owner);
			await fixture.update('exhausted:window', { status: 'failed', lockedUntil: null, nextAttemptAt: -10, retryUntil: -20 });
			await accept('claimable', owner);
			await fixture.update('claimable', { lockedUntil: -1 });
			const timing = await around(() => store.claimDueInbox({ owner, ...CLAIM }));
			expect(timing.result.map((claim) => claim.key)).toEqual(['claimable']);
			for (const key of ['exhausted:attempts', 'exhausted:window']) {
				const row = (await fixture.row(key))!;
				expect(row).toMatchObject({ status: 'failed', next_attempt_at: null, locked_until: null, inbox_item: ITEM });
				expect(row.dead_lettered_at!.getTime()).toBeGreaterThanOrEqual(timing.before - 2);
				expect(row.dead_lettered_at!.getTime()).toBeLessThanOrEqual(timing.after + 2);
			}
			expect((await fixture.row('exhausted:attempts'))!.attempts).toBe(2);
		});

		it('a retry that fell due within the window is claimed even when the claim comes after the window (n8n was down)', async () => {
			const owner = newOwner();
			await accept('was-down', owner);
			await fixture.update('was-down', { status: 'failed', lockedUntil: null, nextAttemptAt: -30, retryUntil: -10 });
			expect((await store.claimDueInbox({ owner, ...CLAIM })).map((claim) => claim.key)).toEqual(['was-down']);
		});

		it('claims at most `limit`, the longest due first', async () => {
			const owner = newOwner();
			for (const [key, dueSecondsAgo] of [
				['limit:b', 10],
				['limit:a', 30],
				['limit:c', 20],
			] as const) {
				await accept(key, owner);
				await fixture.update(key, { status: 'failed', lockedUntil: null, nextAttemptAt: -dueSecondsAgo });
			}
			expect((await store.claimDueInbox({ owner, ...CLAIM, limit: 2 })).map((claim) => claim.key).sort()).toEqual(['limit:a', 'limit:c']);
			expect((await store.claimDueInbox({ owner, ...CLAIM, limit: 2 })).map((claim) => claim.key)).toEqual(['limit:b']);
		});

		it('a claimed run settles with its token: a failure schedules the next retry from the new attempts count, the last one dead-letters, Complete ends it', async () => {
			const owner = newOwner();
			const first = await accept('flow', owner, { maxAttempts: 3, firstRetryMs: 1000 });
			await store.fail([{ key: 'flow', ownerToken: first, error: 'attempt 1' }]);
			await fixture.update('flow', { nextAttemptAt: -1 });
			const [second] = await store.claimDueInbox({ owner, ...CLAIM });
			expect(second).toMatchObject({ key: 'flow', attempt: 2 });
			// The first run's token does not settle the key: the claim's does.
			expect(await store.complete([{ key: 'flow', ownerToken: first }])).toEqual([{ key: 'flow', applied: false, reason: 'not_owner' }]);
			const timing = await around(() => store.fail([{ key: 'flow', ownerToken: second.ownerToken, error: 'attempt 2' }]));
			await expectRetryDue('flow', timing, 1000, 2000);
			await fixture.update('flow', { nextAttemptAt: -1 });
			const [third] = await store.claimDueInbox({ owner, ...CLAIM });
			expect(third).toMatchObject({ key: 'flow', attempt: 3 });
			const last = await around(() => store.fail([{ key: 'flow', ownerToken: third.ownerToken, error: 'attempt 3' }]));
			await expectDeadLettered('flow', last, 'attempt 3');

			const ok = await accept('flow-ok', owner);
			await store.fail([{ key: 'flow-ok', ownerToken: ok, error: 'attempt 1' }]);
			await fixture.update('flow-ok', { nextAttemptAt: -1 });
			const [retry] = await store.claimDueInbox({ owner, ...CLAIM });
			expect(await store.complete([{ key: 'flow-ok', ownerToken: retry.ownerToken }])).toEqual([{ key: 'flow-ok', applied: true }]);
			expect(await fixture.row('flow-ok')).toMatchObject({ status: 'completed', attempts: 2, inbox_item: null });
		});

		it('keeps each claimed key at least the retention asked for (never shortening it), and records the instance the retries run on', async () => {
			const owner = newOwner();
			await accept('retain:short', owner);
			await fixture.update('retain:short', { lockedUntil: -1, expiresAt: 60 });
			await accept('retain:long', owner);
			await fixture.update('retain:long', { lockedUntil: -1, expiresAt: 30 * 86_400 });
			const now = (await fixture.now()).getTime();
			await store.claimDueInbox({ owner, ...CLAIM, retentionSeconds: 86_400, instanceId: 'instance-b' });
			const short = (await fixture.row('retain:short'))!;
			expect(short.expires_at!.getTime()).toBeGreaterThanOrEqual(now + 86_400_000 - 1000);
			expect(short.n8n_instance).toBe('instance-b');
			expect((await fixture.row('retain:long'))!.expires_at!.getTime()).toBeGreaterThan(now + 29 * 86_400_000);
		});

		it.each([
			['an empty owner', { owner: '', limit: 1, leaseMs: 1000 }, /owner/],
			['a limit of 0', { owner: 'o', limit: 0, leaseMs: 1000 }, /claim/],
			['a lease of 0 ms', { owner: 'o', limit: 1, leaseMs: 0 }, /lease/],
			['a lease of 1.5 ms', { owner: 'o', limit: 1, leaseMs: 1.5 }, /lease/],
		])('refuses %s (InvalidConfigurationError)', async (_what, options, message) => {
			const claim = store.claimDueInbox(options);
			await expect(claim).rejects.toThrow(InvalidConfigurationError);
			await expect(claim).rejects.toThrow(message);
		});

		it('claimers at once in this process (4 stores, limit 7 each, twice): each of 40 due events goes to exactly one', async () => {
			const owner = newOwner();
			const keys = Array.from({ length: 40 }, (_, index) => `race-here:${index}`);
			await store.reserve(
				keys.map((key) => request(key, inbox(owner))),
				LEASE,
			);
			await fixture.update(keys, { lockedUntil: -1 });
			const stores = Array.from({ length: 4 }, () => fixture.openStore(2));
			const claimed = (
				await Promise.all(stores.flatMap((each) => [1, 2].map(() => each.claimDueInbox({ owner, limit: 7, leaseMs: 60_000 }))))
			).flat();
			expect(claimed.map((claim) => claim.key).sort()).toEqual([...keys].sort());
			expect(new Set(claimed.map((claim) => claim.ownerToken)).size).toBe(40);
			for (const claim of claimed) expect(claim.attempt).toBe(2);
		});

		it('claimers in 6 OS processes at once (3 calls each, limit 10): each of 40 due events claimed exactly once, attempts 2', async () => {
			const owner = newOwner();
			const keys = Array.from({ length: 40 }, (_, index) => `race-os:${index}`);
			await store.reserve(
				keys.map((key) => request(key, inbox(owner))),
				LEASE,
			);
			await fixture.update(keys, { status: 'failed', lockedUntil: null, nextAttemptAt: -1 });
			const reports = await raceStore(
				fixture.target,
				Array.from({ length: 6 }, () => ({ kind: 'claimInbox' as const, owner, calls: 3, limit: 10 })),
			);
			expect(new Set(reports.map((report) => report.pid)).size).toBe(6);
			const claimed = reports.flatMap((report) => report.results.map((result) => result.key));
			expect(claimed.sort()).toEqual([...keys].sort());
			for (const key of keys) expect(await fixture.row(key)).toMatchObject({ status: 'processing', attempts: 2 });
		});
	});

	describe('nextInboxDue', () => {
		it('is the earliest retry due or lease end among the owner’s events still to run, on the store clock; null when none is left', async () => {
			const owner = newOwner();
			expect(await store.nextInboxDue(owner)).toBeNull();
			await accept('next:lease', owner);
			await fixture.update('next:lease', { lockedUntil: 10 });
			await accept('next:retry', owner);
			await fixture.update('next:retry', { status: 'failed', lockedUntil: null, nextAttemptAt: 30 });
			await accept('next:dead', owner);
			await fixture.update('next:dead', { status: 'failed', lockedUntil: null, deadLetteredAt: -1, nextAttemptAt: null });
			await accept('next:other', newOwner());
			await fixture.update('next:other', { lockedUntil: 1 });
			const now = (await fixture.now()).getTime();
			const next = (await store.nextInboxDue(owner))!;
			expect(next.dueAt.getTime()).toBe((await fixture.row('next:lease'))!.locked_until!.getTime());
			expect(next.inMs).toBeGreaterThan(10_000 - 2_000);
			expect(next.inMs).toBeLessThanOrEqual(next.dueAt.getTime() - now + 2);
			await fixture.update('next:retry', { nextAttemptAt: -5 });
			expect(await store.nextInboxDue(owner)).toMatchObject({ inMs: 0 });
		});
	});

	describe('dead letters', () => {
		it('Claim for Replay takes a dead-lettered event: clears the mark, returns its item; a replay that fails again dead-letters it again', async () => {
			const owner = newOwner();
			const token = await accept('replay-dead', owner, { maxAttempts: 1 });
			await store.fail([{ key: 'replay-dead', ownerToken: token, error: 'broken API' }]);
			expect((await fixture.row('replay-dead'))!.dead_lettered_at).not.toBeNull();
			const [claim] = await store.claimForReplay(['replay-dead'], { leaseSeconds: 120, retentionSeconds: 86_400 });
			expect(claim).toMatchObject({ claimed: true, inboxItem: ITEM });
			expect(await fixture.row('replay-dead')).toMatchObject({
				status: 'processing',
				attempts: 2,
				dead_lettered_at: null,
				next_attempt_at: null,
			});
			// Not the inbox's to run while the replay holds it.
			expect(await store.claimDueInbox({ owner, ...CLAIM })).toEqual([]);
			const timing = await around(() =>
				store.fail([{ key: 'replay-dead', ownerToken: (claim as { ownerToken: string }).ownerToken, error: 'still broken' }]),
			);
			await expectDeadLettered('replay-dead', timing, 'still broken');
		});

		it('Get Key and List Keys show the attempts, the next retry, the dead-letter time, the owner and whether an item is kept; the item only when asked', async () => {
			const owner = newOwner();
			const pending = await accept('show:pending', owner);
			await store.fail([{ key: 'show:pending', ownerToken: pending, error: 'boom' }]);
			const dead = await accept('show:dead', owner, { maxAttempts: 1 });
			await store.fail([{ key: 'show:dead', ownerToken: dead, error: 'gave up' }]);
			await store.reserve([request('show:plain')], LEASE);
			const rows = { pending: (await fixture.row('show:pending'))!, dead: (await fixture.row('show:dead'))! };

			const found = await store.getKeys(['show:pending', 'show:dead', 'show:plain']);
			expect(found.get('show:pending')).toMatchObject({
				status: 'failed',
				attempts: 1,
				inboxOwner: owner,
				hasInboxItem: true,
				maxAttempts: 3,
				nextAttemptAt: rows.pending.next_attempt_at,
				deadLetteredAt: null,
				retryUntil: rows.pending.retry_until,
			});
			expect(found.get('show:dead')).toMatchObject({
				inboxOwner: owner,
				hasInboxItem: true,
				nextAttemptAt: null,
				deadLetteredAt: rows.dead.dead_lettered_at,
			});
			expect(found.get('show:plain')).toMatchObject({
				inboxOwner: null,
				hasInboxItem: false,
				maxAttempts: null,
				nextAttemptAt: null,
				deadLetteredAt: null,
			});
			for (const stored of found.values()) expect(stored).not.toHaveProperty('inboxItem');
			const withItems = await store.getKeys(['show:pending', 'show:plain'], { inboxItem: true });
			expect(withItems.get('show:pending')!.inboxItem).toBe(ITEM);
			expect(withItems.get('show:plain')!.inboxItem).toBeNull();

			const page = await store.listKeys({ keyPrefix: 'show:', limit: 10 });
			expect(page.keys.map((stored) => [stored.key, stored.hasInboxItem, stored.deadLetteredAt !== null])).toEqual([
				['show:dead', true, true],
				['show:pending', true, false],
				['show:plain', false, false],
			]);
			for (const stored of page.keys) expect(stored).not.toHaveProperty('inboxItem');
			expect((await store.listKeys({ keyPrefix: 'show:', limit: 10, deadLetteredOnly: true })).keys.map((stored) => stored.key)).toEqual([
				'show:dead',
			]);
		});

		it('Get Stats counts the events with a retry pending and the dead-lettered ones (both also failed)', async () => {
			const stats = await fixture.otherTable('inbox_stats');
			const owner = newOwner();
			const accepted = await stats.store.reserve(
				['a', 'b', 'c'].map((key) => request(key, inbox(owner, { maxAttempts: key === 'c' ? 1 : 3 }))),
				LEASE,
			);
			await stats.store.fail(accepted.map((result) => ({ key: result.key, ownerToken: result.ownerToken!, error: 'boom' })));
			expect(await stats.store.stats(24)).toMatchObject({ total: 3, failed: 3, retryPending: 2, deadLettered: 1 });
		});
	});

	describe('retention', () => {
		it('cleanup never deletes an inbox event still to run, even past its retention; a dead-lettered or completed one goes when its retention ends', async () => {
			const clean = await fixture.otherTable('inbox_cleanup');
			const owner = newOwner();
			const accepted = await clean.store.reserve(
				['running', 'died', 'pending', 'dead', 'done'].map((key) => request(key, inbox(owner))),
				LEASE,
			);
			const token = (key: string) => accepted.find((result) => result.key === key)!.ownerToken!;
			await clean.store.complete([{ key: 'done', ownerToken: token('done') }]);
			await clean.update('died', { lockedUntil: -60 });
			await clean.update('pending', { status: 'failed', lockedUntil: null, nextAttemptAt: 60 });
			await clean.update('dead', { status: 'failed', lockedUntil: null, deadLetteredAt: -60 });
			await clean.update('running', { lockedUntil: 600 });
			await clean.update(['running', 'died', 'pending', 'dead', 'done'], { expiresAt: -10, firstSeen: -40 * 86_400 });
			const result = await clean.store.cleanup({ retentionSeconds: 86_400, batchSize: 100, timeBudgetSeconds: 60 });
			expect(result.deleted).toBe(2);
			expect(await clean.keys()).toEqual(['died', 'pending', 'running']);
			// Reserve judges retention by the same rule: an event still to run is no absent key.
			for (const key of ['died', 'pending']) expect((await clean.store.reserve([request(key)], LEASE))[0].outcome).toBe('duplicate');
		});
	});

	if (backend === 'embedded') {
		it('the store file that keeps the items is readable by its owner only (0600)', async () => {
			const { statSync } = await import('node:fs');
			await accept('file-mode', newOwner());
			expect(statSync((fixture.target as { file: string }).file).mode & 0o777).toBe(0o600);
		});
	}
});
