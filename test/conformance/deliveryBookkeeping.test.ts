import type { KeyStore } from '../../lib/store/contract';
import { DELIVERY_ANSWERS } from '../../lib/store/rules';
import type { AnswerCounts, DeliveryAnswer, ReserveOptions } from '../../lib/types';
import { describeEachBackend, freshStore, type StoreFixture } from '../support/stores';
import { raceStore } from '../support/workers';

// What the Idempotent Webhook trigger keeps about the deliveries it answers without an execution:
// the answers counted per hour (Get Stats), each key's copies (duplicate count, last seen), and the
// execution that runs a new event, recorded on its key by its owner.

const zero = (): AnswerCounts => Object.fromEntries(DELIVERY_ANSWERS.map((answer) => [answer, 0])) as AnswerCounts;

describeEachBackend("the trigger's delivery bookkeeping", (backend) => {
	let fixture: StoreFixture;
	let store: KeyStore;

	const lease: ReserveOptions = { mode: 'lease', leaseSeconds: 60, retentionSeconds: 86_400, workflowId: 'wf-1' };
	const reserveOne = async (key: string) => (await store.reserve([{ key, keySource: 'custom', payloadHash: null }], lease))[0];

	beforeAll(async () => {
		fixture = await freshStore(backend, { prefix: 'books' });
		store = fixture.store;
	});

	afterAll(() => fixture?.close());

	describe('answers counted per hour', () => {
		it('each answer counts in the current hour; every answer the package knows is in the counts, 0 when none', async () => {
			const counted = await fixture.otherTable('counted');
			for (const answer of [
				'duplicate',
				'duplicate',
				'in_progress',
				'invalid_signature',
				'key_refused',
				'key_store_unavailable',
				'new',
			] as DeliveryAnswer[]) {
				await counted.store.countAnswer(answer);
			}
			expect(await counted.store.answerCounts(1)).toEqual({
				...zero(),
				new: 1,
				duplicate: 2,
				in_progress: 1,
				invalid_signature: 1,
				key_refused: 1,
				key_store_unavailable: 1,
			});
		});

		it('the window takes whole hours: an hour that overlaps it counts whole, an older one not at all', async () => {
			const windowed = await fixture.otherTable('windowed');
			await windowed.seedAnswerCount('duplicate', 5, 0);
			await windowed.seedAnswerCount('duplicate', 7, 1);
			await windowed.seedAnswerCount('duplicate', 11, 3);
			await windowed.seedAnswerCount('forbidden', 2, 30);
			expect((await windowed.store.answerCounts(1)).duplicate).toBe(12);
			expect((await windowed.store.answerCounts(4)).duplicate).toBe(23);
			expect(await windowed.store.answerCounts(24)).toEqual({ ...zero(), duplicate: 23 });
			expect(await windowed.store.answerCounts(48)).toEqual({ ...zero(), duplicate: 23, forbidden: 2 });
		});

		it('per hour: each hour that overlaps the window with its counts, oldest first; an hour without deliveries has no entry', async () => {
			const hourly = await fixture.otherTable('hourly');
			await hourly.seedAnswerCount('duplicate', 5, 0);
			await hourly.seedAnswerCount('new', 2, 0);
			await hourly.seedAnswerCount('duplicate', 7, 1);
			await hourly.seedAnswerCount('invalid_signature', 11, 3);
			await hourly.seedAnswerCount('forbidden', 2, 30);
			const hours = await hourly.store.answerCountsByHour(4);
			expect(hours.map(({ counts }) => counts)).toEqual([
				{ ...zero(), invalid_signature: 11 },
				{ ...zero(), duplicate: 7 },
				{ ...zero(), duplicate: 5, new: 2 },
			]);
			const now = (await fixture.now()).getTime();
			const hourStarts = hours.map(({ hour }) => hour.getTime());
			expect(hourStarts.every((start) => start % 3_600_000 === 0)).toBe(true);
			expect(now - hourStarts[2]).toBeGreaterThanOrEqual(0);
			expect(now - hourStarts[2]).toBeLessThan(3_600_000);
			expect(hourStarts[2] - hourStarts[1]).toBe(3_600_000);
			expect(hourStarts[2] - hourStarts[0]).toBe(3 * 3_600_000);
			// The same counts as answerCounts over the same window.
			expect((await hourly.store.answerCounts(4)).duplicate).toBe(12);
			expect(await hourly.store.answerCountsByHour(48)).toHaveLength(4);
			await expect(hourly.store.answerCountsByHour(0)).rejects.toThrow(/stats window must be more than 0/);
		});

		it('each key table has its own counts', async () => {
			const mine = await fixture.otherTable('counts_mine');
			const theirs = await fixture.otherTable('counts_theirs');
			await mine.store.countAnswer('forbidden');
			expect((await mine.store.answerCounts(24)).forbidden).toBe(1);
			expect(await theirs.store.answerCounts(24)).toEqual(zero());
		});

		it('an answer written by a newer package is left out; an unknown answer is refused, nothing counted', async () => {
			const newer = await fixture.otherTable('counts_newer');
			await newer.seedAnswerCount('answer_of_a_newer_package', 3, 0);
			expect(await newer.store.answerCounts(24)).toEqual(zero());
			await expect(newer.store.countAnswer('maybe' as DeliveryAnswer)).rejects.toThrow(/Unknown answer "maybe" to count/);
			await expect(newer.store.answerCounts(0)).rejects.toThrow(/stats window must be more than 0/);
		});

		it('two processes counting at once lose no count', async () => {
			const shared = await fixture.otherTable('counts_shared');
			const answers: DeliveryAnswer[] = [
				...Array<DeliveryAnswer>(20).fill('duplicate'),
				...Array<DeliveryAnswer>(5).fill('invalid_signature'),
			];
			const reports = await raceStore(
				shared.target,
				[0, 1].map(() => ({ kind: 'count' as const, answers })),
			);
			expect(new Set(reports.map((report) => report.pid)).size).toBe(2);
			expect(await shared.store.answerCounts(1)).toEqual({ ...zero(), duplicate: 40, invalid_signature: 10 });
		});
	});

	describe("a key's copies", () => {
		it("each copy answered (in progress, then duplicate) adds to the key's duplicate count and moves its last seen; Get Key and List Keys show both", async () => {
			const first = await reserveOne('copies');
			const reserved = (await store.getKeys(['copies'])).get('copies')!;
			expect(reserved).toMatchObject({ duplicateCount: 0 });
			await fixture.update('copies', { lastSeen: -60 });

			expect((await reserveOne('copies')).outcome).toBe('in_progress');
			await store.complete([{ key: 'copies', ownerToken: first.ownerToken! }]);
			expect((await reserveOne('copies')).outcome).toBe('duplicate');

			const stored = (await store.getKeys(['copies'])).get('copies')!;
			expect(stored.duplicateCount).toBe(2);
			const now = await fixture.now();
			expect(Math.abs(stored.lastSeen.getTime() - now.getTime())).toBeLessThan(10_000);
			expect(stored.lastSeen.getTime()).toBeGreaterThan(stored.firstSeen.getTime());
			const listed = (await store.listKeys({ limit: 10, keyPrefix: 'copies' })).keys[0];
			expect(listed).toMatchObject({ key: 'copies', duplicateCount: 2, lastSeen: stored.lastSeen });
		});
	});

	describe("recording the execution that runs a key's event", () => {
		it("its owner records the execution: Get Key and a duplicate's full record name it", async () => {
			const first = await reserveOne('run-recorded');
			expect((await store.getKeys(['run-recorded'])).get('run-recorded')!.executionId).toBeNull();
			expect(await store.recordExecution({ key: 'run-recorded', ownerToken: first.ownerToken! }, '4711')).toBe(true);
			expect((await store.getKeys(['run-recorded'])).get('run-recorded')!.executionId).toBe('4711');

			await store.complete([{ key: 'run-recorded', ownerToken: first.ownerToken! }]);
			const copy = await reserveOne('run-recorded');
			expect(copy).toMatchObject({ outcome: 'duplicate' });
			expect(copy.record.executionId).toBe('4711');
		});

		it('anyone else changes nothing: another owner token, a key taken over, a key not stored', async () => {
			const first = await reserveOne('run-owned');
			expect(await store.recordExecution({ key: 'run-owned', ownerToken: '00000000-0000-4000-8000-000000000000' }, 'intruder')).toBe(false);
			expect((await fixture.row('run-owned'))!.execution_id).toBeNull();

			await store.fail([{ key: 'run-owned', ownerToken: first.ownerToken!, error: 'boom' }]);
			const retry = await reserveOne('run-owned');
			expect(retry).toMatchObject({ outcome: 'new', reclaimed: true });
			expect(await store.recordExecution({ key: 'run-owned', ownerToken: first.ownerToken! }, 'stale-run')).toBe(false);
			expect(await store.recordExecution({ key: 'run-owned', ownerToken: retry.ownerToken! }, 'retry-run')).toBe(true);
			expect((await fixture.row('run-owned'))!.execution_id).toBe('retry-run');

			expect(await store.recordExecution({ key: 'never-stored', ownerToken: retry.ownerToken! }, 'x')).toBe(false);
			expect(await fixture.count('never-stored')).toBe(0);
		});

		it('an owner whose lease has ended records nothing: its execution started too late to be trusted with the key', async () => {
			const first = await reserveOne('run-late');
			await fixture.update('run-late', { lockedUntil: -1000 });
			expect(await store.recordExecution({ key: 'run-late', ownerToken: first.ownerToken! }, 'late-run')).toBe(false);
			expect((await fixture.row('run-late'))!.execution_id).toBeNull();
		});

		it('refuses a missing owner token or execution id before anything is sent', async () => {
			await expect(store.recordExecution({ key: 'k', ownerToken: 'not-a-uuid' }, 'e')).rejects.toThrow(/not a UUID/);
			await expect(store.recordExecution({ key: 'k', ownerToken: '00000000-0000-4000-8000-000000000000' }, '')).rejects.toThrow(
				/No execution id/,
			);
		});
	});
});
