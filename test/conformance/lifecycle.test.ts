import { UnexpectedResultError } from '../../lib/errors';
import { MAX_ERROR_MESSAGE_LENGTH } from '../../lib/store/storableValues';
import type { KeyStore } from '../../lib/store/contract';
import type { ReservationRequest, ReserveOptions } from '../../lib/types';
import { describeEachBackend, freshStore, type RowValues, type StoreFixture } from '../support/stores';
import { raceOneKey } from '../support/workers';

const DAY = 86_400;

describeEachBackend('key lifecycle', (backend) => {
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
	const permanent: ReserveOptions = { ...lease, mode: 'permanent' };
	const request = (key: string, payloadHash: string | null = null): ReservationRequest => ({ key, keySource: 'custom', payloadHash });
	const reserveOne = async (key: string, options = lease, payloadHash: string | null = null) =>
		(await store.reserve([request(key, payloadHash)], options))[0];
	const row = (key: string) => fixture.row(key);
	/** Moves a row's clock fields into the past, as time passing would (tests never fake the clock). */
	const backdate = (key: string, values: RowValues) => fixture.update(key, values);

	beforeAll(async () => {
		fixture = await freshStore(backend, { prefix: 'life' });
		store = fixture.store;
	});

	afterAll(() => fixture?.close());

	describe('lease mode transitions', () => {
		it('absent → processing (new), with a lease from the database clock', async () => {
			const result = await reserveOne('l-new');
			expect(result).toMatchObject({ outcome: 'new', reclaimed: false });
			expect(result.ownerToken).toMatch(/^[0-9a-f-]{36}$/);
			expect(result.record).toMatchObject({ status: 'processing', attempts: 1, leaseActive: true });
			const stored = (await row('l-new'))!;
			expect(stored.locked_until!.getTime() - (await fixture.now()).getTime()).toBeGreaterThan(55_000);
		});

		it('processing with a valid lease → in progress, counted, owner token withheld', async () => {
			await reserveOne('l-busy');
			const again = await reserveOne('l-busy');
			expect(again).toMatchObject({ outcome: 'in_progress', ownerToken: null });
			expect(again.record.duplicateCount).toBe(1);
		});

		it('processing → completed; a later delivery is a duplicate carrying the stored response', async () => {
			const first = await reserveOne('l-done');
			expect(
				await store.complete([{ key: 'l-done', ownerToken: first.ownerToken!, response: { status: 200, body: { ok: true } } }]),
			).toEqual([{ key: 'l-done', applied: true }]);
			const replay = await reserveOne('l-done');
			expect(replay).toMatchObject({ outcome: 'duplicate', ownerToken: null });
			expect(replay.record).toMatchObject({ status: 'completed', response: { status: 200, body: { ok: true } }, executionId: 'exec-1' });
			expect(replay.record.completedAt).toBeInstanceOf(Date);
		});

		it('an expired lease (crashed run) is reclaimed: attempts + 1, new owner, the old owner is fenced off', async () => {
			const crashed = await reserveOne('l-crash');
			await backdate('l-crash', { lockedUntil: -1 });
			const retry = await reserveOne('l-crash', { ...lease, executionId: 'exec-2' });
			expect(retry).toMatchObject({ outcome: 'new', reclaimed: true });
			expect(retry.record).toMatchObject({ attempts: 2, executionId: 'exec-2', leaseActive: true });
			expect(retry.ownerToken).not.toBe(crashed.ownerToken);

			const stale = { key: 'l-crash', ownerToken: crashed.ownerToken! };
			expect(await store.complete([stale])).toEqual([{ key: 'l-crash', applied: false, reason: 'not_owner' }]);
			expect(await store.release([stale])).toEqual([{ key: 'l-crash', applied: false, reason: 'not_owner' }]);
			expect(await store.fail([{ ...stale, error: 'late' }])).toEqual([{ key: 'l-crash', applied: false, reason: 'not_owner' }]);
			expect(await row('l-crash')).toMatchObject({ status: 'processing', owner_token: retry.ownerToken });
		});

		it('processing → released (absent): the next delivery is new again', async () => {
			const first = await reserveOne('l-release');
			expect(await store.release([{ key: 'l-release', ownerToken: first.ownerToken! }])).toEqual([{ key: 'l-release', applied: true }]);
			expect(await row('l-release')).toBeUndefined();
			expect(await reserveOne('l-release')).toMatchObject({ outcome: 'new', record: { attempts: 1 } });
			expect(await store.complete([{ key: 'l-release', ownerToken: first.ownerToken! }])).toEqual([
				{ key: 'l-release', applied: false, reason: 'not_owner' },
			]);
		});

		it('processing → failed (kept with the error); the next delivery reserves again with attempts + 1', async () => {
			const first = await reserveOne('l-fail');
			expect(await store.fail([{ key: 'l-fail', ownerToken: first.ownerToken!, error: 'CRM returned 500' }])).toEqual([
				{ key: 'l-fail', applied: true },
			]);
			expect(await row('l-fail')).toMatchObject({ status: 'failed', last_error: 'CRM returned 500', locked_until: null });
			expect(await store.complete([{ key: 'l-fail', ownerToken: first.ownerToken! }])).toEqual([
				{ key: 'l-fail', applied: false, reason: 'failed' },
			]);
			const retry = await reserveOne('l-fail');
			expect(retry).toMatchObject({
				outcome: 'new',
				reclaimed: true,
				record: { attempts: 2, status: 'processing', lastError: 'CRM returned 500' },
			});
		});

		it('a key past its retention counts as absent before cleanup runs: reset to attempts 1', async () => {
			const first = await reserveOne('l-expired');
			await store.complete([{ key: 'l-expired', ownerToken: first.ownerToken!, response: { old: true } }]);
			await backdate('l-expired', { expiresAt: -1, firstSeen: -40 * DAY });
			const again = await reserveOne('l-expired');
			expect(again).toMatchObject({ outcome: 'new', reclaimed: false, record: { attempts: 1, duplicateCount: 0, response: null } });
			expect(Date.now() - again.record.firstSeen.getTime()).toBeLessThan(60_000);
		});

		it('settling a key that does not exist says not_found; a bad token is an error, not a silent success', async () => {
			expect(await store.release([{ key: 'never-reserved', ownerToken: '00000000-0000-4000-8000-000000000000' }])).toEqual([
				{ key: 'never-reserved', applied: false, reason: 'not_found' },
			]);
			await expect(store.complete([{ key: 'x', ownerToken: 'not-a-uuid' }])).rejects.toThrow(/not a UUID/);
		});
	});

	describe('settling never fails on content', () => {
		// Each of these made Postgres reject the whole statement (22P05, 22P02, 22021) or the client
		// throw before it: the key stayed processing and the business step ran again after the lease.
		const completeWith = async (key: string, response: unknown) => {
			const reserved = await reserveOne(key);
			const [result] = await store.complete([{ key, ownerToken: reserved.ownerToken!, response }]);
			return { result, stored: await row(key) };
		};

		it('a NUL in a string of the response: completed, stored with U+FFFD, and a warning', async () => {
			const { result, stored } = await completeWith('c-nul', { note: 'a\u0000b', ok: true });
			expect(result).toMatchObject({ applied: true, warnings: [expect.stringMatching(/NUL characters.*replaced/)] });
			expect(stored).toMatchObject({ status: 'completed', response: { note: 'a\uFFFDb', ok: true } });
		});

		it('a NUL in a key of the response: completed, the key repaired, and a warning', async () => {
			const { result, stored } = await completeWith('c-nul-key', { 'bad\u0000key': 1, nested: [{ 'x\u0000': 'y' }] });
			expect(result).toMatchObject({ applied: true, warnings: [expect.stringMatching(/NUL characters/)] });
			expect(stored!.response).toEqual({ 'bad\uFFFDkey': 1, nested: [{ 'x\uFFFD': 'y' }] });
		});

		it('a lone surrogate in the response: completed, repaired, and a warning; a valid pair is kept', async () => {
			const { result, stored } = await completeWith('c-surrogate', { lone: 'x\uD800y', tail: '\uDC00', emoji: '\uD83D\uDE00' });
			expect(result).toMatchObject({ applied: true, warnings: [expect.stringMatching(/lone surrogates/)] });
			expect(stored!.response).toEqual({ lone: 'x\uFFFDy', tail: '\uFFFD', emoji: '\uD83D\uDE00' });
		});

		it('BigInt numbers: completed, stored as exact digits, and a warning', async () => {
			const { result, stored } = await completeWith('c-bigint', { amount: 12345678901234567890n });
			expect(result).toMatchObject({ applied: true, warnings: [expect.stringMatching(/BigInt/)] });
			expect(stored!.response).toEqual({ amount: '12345678901234567890' });
		});

		it('a circular response: completed without the response, and a warning', async () => {
			const circular: Record<string, unknown> = { a: 1 };
			circular.self = circular;
			const { result, stored } = await completeWith('c-circular', circular);
			expect(result).toMatchObject({ applied: true, warnings: [expect.stringMatching(/not stored: it refers to itself/)] });
			expect(stored).toMatchObject({ status: 'completed', response: null });
		});

		it('a 10 MB response: completed without it (the limit is 1 MB), and a warning', async () => {
			const { result, stored } = await completeWith('c-huge', { blob: 'x'.repeat(10 * 1024 * 1024) });
			expect(result).toMatchObject({ applied: true, warnings: [expect.stringMatching(/10\.0 MB of JSON, over the 1 MB limit/)] });
			expect(stored).toMatchObject({ status: 'completed', response: null });
			// Just under the limit is stored as given.
			const { result: fits, stored: kept } = await completeWith('c-fits', { blob: 'x'.repeat(1024 * 1024 - 20) });
			expect(fits).toEqual({ key: 'c-fits', applied: true });
			expect((kept!.response as { blob: string }).blob).toHaveLength(1024 * 1024 - 20);
		});

		it('Mark Failed with NULs and lone surrogates in the message: marked failed, repaired, and a warning', async () => {
			const reserved = await reserveOne('f-nul');
			const [result] = await store.fail([{ key: 'f-nul', ownerToken: reserved.ownerToken!, error: 'boom\u0000 at \uD800 and \uDFFF' }]);
			expect(result).toMatchObject({ applied: true, warnings: [expect.stringMatching(/NUL characters or broken Unicode/)] });
			expect(await row('f-nul')).toMatchObject({ status: 'failed', last_error: 'boom\uFFFD at \uFFFD and \uFFFD' });
		});

		it('a long message is cut at 2,000 characters without splitting an emoji into a lone surrogate', async () => {
			const reserved = await reserveOne('f-long');
			const error = `${'a'.repeat(MAX_ERROR_MESSAGE_LENGTH - 1)}\uD83D\uDE00 and more`;
			expect(await store.fail([{ key: 'f-long', ownerToken: reserved.ownerToken!, error }])).toEqual([{ key: 'f-long', applied: true }]);
			expect((await row('f-long'))!.last_error).toBe('a'.repeat(MAX_ERROR_MESSAGE_LENGTH - 1));
		});

		it('one bad item does not stop the others of the batch', async () => {
			const [a, b] = await store.reserve([request('c-batch-a'), request('c-batch-b')], lease);
			const results = await store.complete([
				{ key: 'c-batch-a', ownerToken: a.ownerToken!, response: { bad: '\u0000' } },
				{ key: 'c-batch-b', ownerToken: b.ownerToken!, response: { good: true } },
			]);
			expect(results.map((result) => result.applied)).toEqual([true, true]);
			expect(await row('c-batch-b')).toMatchObject({ status: 'completed', response: { good: true } });
		});

		it('a key with a NUL (never storable, so never reserved) is not_found without failing the batch', async () => {
			const reserved = await reserveOne('c-with-nul-neighbour');
			const results = await store.release([
				{ key: 'nul\u0000key', ownerToken: reserved.ownerToken! },
				{ key: 'c-with-nul-neighbour', ownerToken: reserved.ownerToken! },
			]);
			expect(results).toEqual([
				{ key: 'nul\u0000key', applied: false, reason: 'not_found' },
				{ key: 'c-with-nul-neighbour', applied: true },
			]);
		});
	});

	describe('a settle answers per item, by its own owner token', () => {
		it("the owner's item and a stale owner's item of one key in one batch: only the owner's applies", async () => {
			const stale = await reserveOne('b-stale');
			await backdate('b-stale', { lockedUntil: -1 });
			const owner = await reserveOne('b-stale');
			expect(owner).toMatchObject({ outcome: 'new', reclaimed: true });
			const items = [
				{ key: 'b-stale', ownerToken: stale.ownerToken!, response: { from: 'stale' } },
				{ key: 'b-stale', ownerToken: owner.ownerToken!, response: { from: 'owner' } },
			];
			expect(await store.complete(items)).toEqual([
				{ key: 'b-stale', applied: false, reason: 'not_owner' },
				{ key: 'b-stale', applied: true },
			]);
			expect(await row('b-stale')).toMatchObject({ status: 'completed', response: { from: 'owner' }, owner_token: owner.ownerToken });

			const released = await reserveOne('b-release');
			const made = '00000000-0000-4000-8000-000000000000';
			expect(
				await store.release([
					{ key: 'b-release', ownerToken: released.ownerToken! },
					{ key: 'b-release', ownerToken: made },
				]),
			).toEqual([
				{ key: 'b-release', applied: true },
				{ key: 'b-release', applied: false, reason: 'not_found' },
			]);
		});

		it('the owner token in upper case is the same token', async () => {
			const reserved = await reserveOne('b-upper');
			const upper = reserved.ownerToken!.toUpperCase();
			expect(await store.fail([{ key: 'b-upper', ownerToken: upper, error: 'step failed' }])).toEqual([{ key: 'b-upper', applied: true }]);
			expect(await store.complete([{ key: 'b-upper', ownerToken: upper }])).toEqual([{ key: 'b-upper', applied: false, reason: 'failed' }]);
			expect(await store.release([{ key: 'b-upper', ownerToken: upper }])).toEqual([{ key: 'b-upper', applied: true }]);
		});
	});

	describe('settling is idempotent for its owner (a re-send after a lost answer)', () => {
		it('Complete sent again by the same owner reports applied and keeps the stored response', async () => {
			const reserved = await reserveOne('i-complete');
			const owned = { key: 'i-complete', ownerToken: reserved.ownerToken!, response: { n: 1 } };
			expect(await store.complete([owned])).toEqual([{ key: 'i-complete', applied: true }]);
			expect(await store.complete([owned])).toEqual([{ key: 'i-complete', applied: true }]);
			expect(await store.complete([{ key: 'i-complete', ownerToken: reserved.ownerToken! }])).toEqual([
				{ key: 'i-complete', applied: true },
			]);
			expect(await row('i-complete')).toMatchObject({ status: 'completed', response: { n: 1 } });
		});

		it('Mark Failed sent again by the same owner reports applied', async () => {
			const reserved = await reserveOne('i-fail');
			const owned = { key: 'i-fail', ownerToken: reserved.ownerToken!, error: 'x' };
			expect(await store.fail([owned])).toEqual([{ key: 'i-fail', applied: true }]);
			expect(await store.fail([owned])).toEqual([{ key: 'i-fail', applied: true }]);
		});
	});

	describe('an answer the statement cannot give', () => {
		it('no row back for a reserved key is an unexpected result, not a configuration error', async () => {
			const undo = await fixture.skipInsertOf('no-row');
			try {
				const error = await reserveOne('no-row').catch((caught: unknown) => caught);
				expect(error).toBeInstanceOf(UnexpectedResultError);
				expect((error as Error).message).toMatch(/returned no row for reserved key "no-row"/);
			} finally {
				await undo();
			}
		});
	});

	describe('permanent mode', () => {
		it('is final at once, needs no Complete, and can still be released by its owner', async () => {
			const first = await reserveOne('p-1', permanent);
			expect(first.record).toMatchObject({ status: 'completed', leaseActive: false });
			expect(await reserveOne('p-1', permanent)).toMatchObject({ outcome: 'duplicate' });
			await backdate('p-1', { lastSeen: -3600 });
			expect(await reserveOne('p-1', permanent)).toMatchObject({ outcome: 'duplicate' });
			await store.release([{ key: 'p-1', ownerToken: first.ownerToken! }]);
			expect(await reserveOne('p-1', permanent)).toMatchObject({ outcome: 'new' });
		});
	});

	describe('a key its owner completed stays completed', () => {
		it('Mark Failed and Release with the owner token change nothing and report Stale: completed; the redelivery is a Duplicate', async () => {
			const first = await reserveOne('done-1');
			const second = await reserveOne('done-2');
			const owned = [
				{ key: 'done-1', ownerToken: first.ownerToken! },
				{ key: 'done-2', ownerToken: second.ownerToken! },
			];
			expect(await store.complete(owned.map((item) => ({ ...item, response: { ok: true } })))).toEqual([
				{ key: 'done-1', applied: true },
				{ key: 'done-2', applied: true },
			]);
			// e.g. a node after Mark Complete fails and its error output goes to Mark Failed (Paired Item).
			expect(await store.fail([{ ...owned[0], error: 'a later node failed' }])).toEqual([
				{ key: 'done-1', applied: false, reason: 'completed' },
			]);
			expect(await store.release([owned[1]])).toEqual([{ key: 'done-2', applied: false, reason: 'completed' }]);
			for (const key of ['done-1', 'done-2']) {
				expect(await row(key)).toMatchObject({ status: 'completed', last_error: null, response: { ok: true } });
				expect(await reserveOne(key)).toMatchObject({ outcome: 'duplicate', ownerToken: null });
			}
			// Complete stays idempotent for its owner (a re-send after a lost answer).
			expect(await store.complete([owned[0]])).toEqual([{ key: 'done-1', applied: true }]);
		});

		it('a Permanent reservation (completed when reserved, not by Complete) can still be marked failed by its owner', async () => {
			const first = await reserveOne('p-fail', permanent);
			expect(await store.fail([{ key: 'p-fail', ownerToken: first.ownerToken!, error: 'business step failed' }])).toEqual([
				{ key: 'p-fail', applied: true },
			]);
			expect(await reserveOne('p-fail', permanent)).toMatchObject({ outcome: 'new', reclaimed: true });
		});

		it('a Permanent reservation its owner completed (to store a response) is not released', async () => {
			const first = await reserveOne('p-done', permanent);
			await store.complete([{ key: 'p-done', ownerToken: first.ownerToken!, response: { ok: 1 } }]);
			expect(await store.release([{ key: 'p-done', ownerToken: first.ownerToken! }])).toEqual([
				{ key: 'p-done', applied: false, reason: 'completed' },
			]);
			expect(await reserveOne('p-done', permanent)).toMatchObject({ outcome: 'duplicate' });
		});

		it('a completed key whose retention ended starts over: its new owner may release it', async () => {
			const first = await reserveOne('done-ended');
			await store.complete([{ key: 'done-ended', ownerToken: first.ownerToken! }]);
			await backdate('done-ended', { expiresAt: -1 });
			const again = await reserveOne('done-ended');
			expect(again).toMatchObject({ outcome: 'new', record: { attempts: 1 } });
			expect(await row('done-ended')).toMatchObject({ effect_completed_at: null });
			expect(await store.release([{ key: 'done-ended', ownerToken: again.ownerToken! }])).toEqual([{ key: 'done-ended', applied: true }]);
		});
	});

	describe('release by failed execution (Error Trigger)', () => {
		const failedRun = { executionId: 'exec-err', workflowId: 'wf-1', instanceId: 'instance-a' };

		it('releases only the live reservations of that execution', async () => {
			const options = { ...lease, executionId: 'exec-err' };
			await store.reserve([request('e-1'), request('e-2')], options);
			const done = await reserveOne('e-3', options);
			await store.complete([{ key: 'e-3', ownerToken: done.ownerToken! }]);
			await reserveOne('e-other', { ...lease, executionId: 'exec-fine' });
			expect((await store.releaseExecution(failedRun)).sort()).toEqual(['e-1', 'e-2']);
			expect(await row('e-3')).toBeDefined();
			expect(await row('e-other')).toBeDefined();
		});

		it("never touches another n8n instance's or workflow's reservations under the same execution id", async () => {
			// Two n8n instances (staging, production) on one table both have an execution 1234.
			const production = { ...lease, executionId: '1234', workflowId: 'wf-prod', instanceId: 'instance-prod' };
			const staging = { ...lease, executionId: '1234', workflowId: 'wf-stage', instanceId: 'instance-stage' };
			const sameInstanceOtherWorkflow = { ...staging, workflowId: 'wf-prod' };
			const live = await store.reserve([request('x-prod-1'), request('x-prod-2')], production);
			await reserveOne('x-stage', staging);
			await reserveOne('x-stage-wf', sameInstanceOtherWorkflow);

			const stagingRun = { executionId: '1234', workflowId: 'wf-stage', instanceId: 'instance-stage' };
			expect(await store.failExecution(stagingRun, 'staging run crashed')).toEqual({ keys: ['x-stage'], warnings: [] });
			expect(await store.releaseExecution({ ...stagingRun, workflowId: 'wf-stage' })).toEqual([]);
			// Production's live reservations are untouched: its redeliveries still read In Progress.
			for (const key of ['x-prod-1', 'x-prod-2']) {
				expect(await row(key)).toMatchObject({
					status: 'processing',
					last_error: null,
					n8n_instance: 'instance-prod',
					workflow_id: 'wf-prod',
				});
				expect(await reserveOne(key, production)).toMatchObject({ outcome: 'in_progress' });
			}
			expect(await row('x-stage-wf')).toMatchObject({ status: 'processing' });
			expect(await row('x-stage')).toMatchObject({ status: 'failed', last_error: 'staging run crashed' });

			const productionRun = { executionId: '1234', workflowId: 'wf-prod', instanceId: 'instance-prod' };
			expect((await store.releaseExecution(productionRun)).sort()).toEqual(['x-prod-1', 'x-prod-2']);
			expect(live.every((result) => result.outcome === 'new')).toBe(true);
			expect(await row('x-stage-wf')).toMatchObject({ status: 'processing' });
		});

		it('a reservation made before schema version 4 (no instance recorded) matches by execution and workflow id', async () => {
			await store.reserve([request('pre4-1'), request('pre4-2')], { ...lease, executionId: '77', workflowId: 'wf-old' });
			await fixture.update(['pre4-1', 'pre4-2'], { n8nInstance: null });
			await fixture.update('pre4-2', { workflowId: 'wf-elsewhere' });
			const run = { executionId: '77', workflowId: 'wf-old', instanceId: 'instance-a' };
			expect(await store.failExecution(run, 'crashed')).toEqual({ keys: ['pre4-1'], warnings: [] });
			expect(await row('pre4-2')).toMatchObject({ status: 'processing' });
		});

		it('refuses to settle by execution without the workflow id', async () => {
			await expect(store.releaseExecution({ executionId: '1', workflowId: '', instanceId: 'instance-a' })).rejects.toThrow(
				/needs the failed execution's workflow id/,
			);
			await expect(store.failExecution({ executionId: '', workflowId: 'wf', instanceId: 'instance-a' }, 'x')).rejects.toThrow(
				/needs an execution id/,
			);
		});
	});

	describe('payload fingerprint', () => {
		it('flags the same key with a different payload, not the same payload', async () => {
			await reserveOne('f-1', permanent, 'hash-a');
			expect((await reserveOne('f-1', permanent, 'hash-a')).payloadMismatch).toBe(false);
			expect((await reserveOne('f-1', permanent, 'hash-b')).payloadMismatch).toBe(true);
			expect((await reserveOne('f-1', permanent, null)).payloadMismatch).toBeNull();
		});
	});

	describe('the compact statement (Output: Compact) decides every outcome as the full one does', () => {
		const compactLease = { ...lease, detail: 'compact' as const };
		const compactPermanent = { ...permanent, detail: 'compact' as const };
		const reserveCompact = async (key: string, options = compactLease, payloadHash: string | null = null) =>
			(await store.reserve([request(key, payloadHash)], options))[0];
		const COMPACT_FIELDS = ['attempts', 'key', 'leaseActive', 'lockedUntil', 'payloadHash', 'response', 'status'];

		it('new, in progress, completed with its response: only the compact columns come back', async () => {
			const first = await reserveCompact('c-life');
			expect(Object.keys(first.record).sort()).toEqual(COMPACT_FIELDS);
			expect(first).toMatchObject({ outcome: 'new', reclaimed: false, record: { status: 'processing', attempts: 1, leaseActive: true } });
			expect(first.record.lockedUntil).toBeInstanceOf(Date);
			expect(await row('c-life')).toMatchObject({ owner_token: first.ownerToken, execution_id: 'exec-1', key_source: 'custom' });

			expect(await reserveCompact('c-life')).toMatchObject({ outcome: 'in_progress', ownerToken: null });
			// A permanent-mode workflow on the same table sees the live lease as in progress too (it routes it to Duplicate).
			expect(await reserveCompact('c-life', compactPermanent)).toMatchObject({ outcome: 'in_progress', ownerToken: null });
			await store.complete([{ key: 'c-life', ownerToken: first.ownerToken!, response: { ok: 7 } }]);
			const replay = await reserveCompact('c-life');
			expect(replay).toMatchObject({ outcome: 'duplicate', ownerToken: null, record: { status: 'completed', response: { ok: 7 } } });
			expect(await row('c-life')).toMatchObject({ duplicate_count: 3 });
		});

		it('take-over of an expired lease: attempts + 1, our token, the crashed owner fenced off', async () => {
			const crashed = await reserveCompact('c-crash');
			await backdate('c-crash', { lockedUntil: -1 });
			const retry = await reserveCompact('c-crash', { ...compactLease, executionId: 'exec-2' });
			expect(retry).toMatchObject({ outcome: 'new', reclaimed: true, record: { attempts: 2, status: 'processing', leaseActive: true } });
			expect(Object.keys(retry.record).sort()).toEqual(COMPACT_FIELDS); // the lean statement made the take-over
			expect(retry.ownerToken).not.toBe(crashed.ownerToken);
			expect(await row('c-crash')).toMatchObject({ owner_token: retry.ownerToken, execution_id: 'exec-2' });
			expect(await store.complete([{ key: 'c-crash', ownerToken: crashed.ownerToken! }])).toEqual([
				{ key: 'c-crash', applied: false, reason: 'not_owner' },
			]);
		});

		it('take-over of a failed key, and a key past its retention reset to attempts 1', async () => {
			const first = await reserveCompact('c-fail');
			await store.fail([{ key: 'c-fail', ownerToken: first.ownerToken!, error: 'CRM returned 500' }]);
			const retried = await reserveCompact('c-fail');
			expect(retried).toMatchObject({ outcome: 'new', reclaimed: true, record: { attempts: 2, status: 'processing' } });
			expect(Object.keys(retried.record).sort()).toEqual(COMPACT_FIELDS);

			const old = await reserveCompact('c-expired', compactPermanent);
			await backdate('c-expired', { expiresAt: -1, firstSeen: -40 * DAY });
			const again = await reserveCompact('c-expired', compactPermanent);
			expect(again).toMatchObject({ outcome: 'new', reclaimed: false, record: { attempts: 1, status: 'completed', lockedUntil: null } });
			expect(again.ownerToken).not.toBe(old.ownerToken);
			expect(Object.keys(again.record).sort()).toEqual(COMPACT_FIELDS);
		});

		it('payload fingerprint and repeats in one batch', async () => {
			await reserveCompact('c-hash', compactPermanent, 'hash-a');
			expect((await reserveCompact('c-hash', compactPermanent, 'hash-b')).payloadMismatch).toBe(true);
			const same = await reserveCompact('c-hash', compactPermanent, 'hash-a');
			expect(same.payloadMismatch).toBe(false);
			expect(Object.keys(same.record).sort()).toEqual(COMPACT_FIELDS);
			const batch = await store.reserve([request('c-rep'), request('c-rep')], compactLease);
			expect(batch.map((result) => [result.outcome, result.repeatInBatch, result.ownerToken === null])).toEqual([
				['new', false, false],
				['duplicate', true, true],
			]);
		});
	});

	describe('races', () => {
		it('two deliveries reclaiming one expired lease at the same time: exactly one wins', async () => {
			for (let round = 0; round < 3; round++) {
				const key = `race-reclaim-${round}`;
				await reserveOne(key);
				await backdate(key, { lockedUntil: -1 });
				const results = await raceOneKey(fixture.target, {
					key,
					processes: 2,
					connectionsPerProcess: 1,
					callsPerProcess: 1,
					mode: 'lease',
				});
				expect(results.map((result) => result.outcome).sort()).toEqual(['in_progress', 'new']);
				expect(await row(key)).toMatchObject({ attempts: 2 });
			}
			// Three races of two OS processes each: over 60 s on a loaded machine.
		}, 180_000);

		it('cleanup running while 8 clients reserve continuously: no reservation error, no live row deleted', async () => {
			// Rows cleanup must delete, and old rows under a running lease it must keep.
			await fixture.seedMany('old-', 3000, { firstSeen: -40 * DAY, status: 'completed', expiresAt: -10 * DAY });
			await fixture.seedMany('old-live-', 50, {
				firstSeen: -40 * DAY,
				status: 'processing',
				lockedUntil: 600,
				expiresAt: -DAY,
				ownerToken: 'random',
			});
			const reservedLive: string[] = [];
			const errors: unknown[] = [];
			// At least 3 s, and on until 100 live keys are reserved beside the cleanup: a loaded machine
			// reserves fewer in 3 s (50 seen while two other suites ran).
			const minimumEnd = Date.now() + 3_000;
			const hardEnd = Date.now() + 60_000;
			const going = () => Date.now() < hardEnd && (Date.now() < minimumEnd || reservedLive.length <= 100);
			const client = async (clientIndex: number) => {
				for (let i = 0; going(); i++) {
					try {
						const keys = [`live-${clientIndex}-${i}`, `old-${(clientIndex * 997 + i) % 3000}`];
						const results = await store.reserve(
							keys.map((key) => request(key)),
							lease,
						);
						for (const result of results) if (result.outcome === 'new') reservedLive.push(result.key);
					} catch (error) {
						errors.push(error);
					}
				}
			};
			const cleanups: Array<{ deleted: number }> = [];
			const cleaner = async () => {
				while (going()) {
					cleanups.push(await store.cleanup({ retentionSeconds: 30 * 86_400, batchSize: 100, timeBudgetSeconds: 1 }));
				}
			};
			await Promise.all([...Array.from({ length: 8 }, (_, i) => client(i)), cleaner()]);

			expect(errors).toEqual([]);
			expect(reservedLive.length).toBeGreaterThan(100);
			const stored = new Set(await fixture.keys());
			expect([...new Set(reservedLive)].filter((key) => stored.has(key))).toHaveLength(new Set(reservedLive).size);
			expect(await fixture.count('old-live-')).toBe(50);
			expect(cleanups.reduce((sum, run) => sum + run.deleted, 0)).toBeGreaterThan(0);
		}, 120_000);
	});
});
