import type { SettleRequest } from '../../../lib/store/contract';
import {
	INBOX_RETRY_CAP_MS,
	cleanupInBatches,
	inboxJitter,
	inboxRetryDelayMs,
	orderCandidates,
	orderDecisions,
	replayBatch,
	replayClaims,
	reservationResult,
	settledReservation,
	settleReports,
	type ClaimedKey,
	type OrderMark,
} from '../../../lib/store/rules';
import type { CompactRecord, IdempotencyRecord } from '../../../lib/types';

/** The rules every backend applies the same way, on plain values (each backend's tests run them on a real store). */

const OWNER = '6f1c0d3e-8a4b-4c1e-9f2a-1b2c3d4e5f60';
const OTHER = '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
const item = (key: string): SettleRequest => ({ key, ownerToken: OWNER });

describe('settleReports', () => {
	const reports = (operation: 'complete' | 'release' | 'fail', answerLost = false) =>
		settleReports(
			operation,
			['applied', 'gone', 'taken', 'completed', 'failed'].map(item),
			[[], [], [], [], ['repaired']],
			(settled) => settled.key === 'applied',
			(key) =>
				({
					taken: { ownerToken: OTHER, effectCompleted: false },
					completed: { ownerToken: OWNER, effectCompleted: true },
					failed: { ownerToken: OWNER, effectCompleted: false },
				})[key],
			answerLost,
		);

	it('says why each key was not settled', () => {
		expect(reports('fail')).toEqual([
			{ key: 'applied', applied: true },
			{ key: 'gone', applied: false, reason: 'not_found' },
			{ key: 'taken', applied: false, reason: 'not_owner' },
			{ key: 'completed', applied: false, reason: 'completed' },
			{ key: 'failed', applied: false, reason: 'failed', warnings: ['repaired'] },
		]);
	});

	it('judges the owner token in any case: an upper-case UUID is the same token', () => {
		const upper = { key: 'failed', ownerToken: OWNER.toUpperCase() };
		const [report] = settleReports(
			'complete',
			[upper],
			[[]],
			() => false,
			() => ({ ownerToken: OWNER, effectCompleted: false }),
			false,
		);
		expect(report).toEqual({ key: 'failed', applied: false, reason: 'failed' });
		expect(settledReservation('k', OWNER.toUpperCase())).toBe(settledReservation('k', OWNER));
		expect(settledReservation('k', OWNER)).not.toBe(settledReservation('k', OTHER));
	});

	it('counts a Release whose key is gone after a lost answer as applied (that attempt deleted it), and only a Release', () => {
		expect(reports('release', true)[1]).toEqual({ key: 'gone', applied: true });
		expect(reports('complete', true)[1]).toEqual({ key: 'gone', applied: false, reason: 'not_found' });
		expect(reports('release', false)[1]).toEqual({ key: 'gone', applied: false, reason: 'not_found' });
	});
});

describe('replayBatch and replayClaims', () => {
	const record = (status: IdempotencyRecord['status']) => ({ status }) as IdempotencyRecord;

	it('proposes one token per distinct key and answers every requested key in order', () => {
		let tokens = 0;
		const keys = ['a', 'b', 'a', 'c', 'd'];
		const { firstIndexByKey, proposedTokens } = replayBatch(keys, () => `token-${++tokens}`);
		expect([...proposedTokens]).toEqual([
			['a', 'token-1'],
			['b', 'token-2'],
			['c', 'token-3'],
			['d', 'token-4'],
		]);
		const claimed: ClaimedKey = {
			claimed: true,
			key: 'a',
			ownerToken: 'token-1',
			record: record('processing'),
			payload: null,
			payloadStored: false,
			source: null,
			correlationId: null,
			inboxItem: null,
		};
		const found: Record<string, ClaimedKey> = {
			a: claimed,
			b: { claimed: false, record: record('completed') },
			c: { claimed: false, record: record('processing') },
		};
		expect(replayClaims(keys, firstIndexByKey, (key) => found[key]).map((answer) => (answer.claimed ? 'claimed' : answer.reason))).toEqual([
			'claimed',
			'completed',
			'repeat_in_batch',
			'in_progress',
			'not_found',
		]);
	});
});

describe('cleanupInBatches', () => {
	it('deletes batch after batch until one comes back short', async () => {
		const counts = [100, 100, 40];
		const result = await cleanupInBatches({ retentionSeconds: 60, batchSize: 100, timeBudgetSeconds: 60 }, async () => counts.shift()!);
		expect(result).toMatchObject({ deleted: 240, batches: 3, finished: true });
	});

	it('stops when the time budget is spent, unfinished', async () => {
		const result = await cleanupInBatches({ retentionSeconds: 60, batchSize: 1, timeBudgetSeconds: 0.05 }, async () => {
			await new Promise((resolve) => setTimeout(resolve, 20));
			return 1;
		});
		expect(result.finished).toBe(false);
		expect(result.batches).toBeGreaterThanOrEqual(1);
		expect(result.batches).toBeLessThan(10);
	});
});

describe('orderCandidates and orderDecisions', () => {
	const mark = (version: string, lastDecision: OrderMark['lastDecision'], eventKey: string | null = null): OrderMark => ({
		lastDecision,
		version,
		eventKey,
		staleCount: 0,
		firstSeen: new Date(0),
		updatedAt: new Date(0),
	});
	const items = [
		{ objectKey: 'x', version: '2', eventKey: null },
		{ objectKey: 'x', version: '3', eventKey: null },
		{ objectKey: 'x', version: '3', eventKey: null },
		{ objectKey: 'y', version: '1', eventKey: null },
	];

	it("sends each object's highest version, and only its first holder passes when equal versions are stale", () => {
		const candidates = orderCandidates(items);
		expect([...candidates.values()]).toEqual([items[1], items[3]]);
		const marks = new Map([
			['x', mark('3', 'newer')],
			['y', mark('5', 'stale')],
		]);
		expect(orderDecisions(items, candidates, marks, 'stale').map((decision) => [decision.outcome, decision.supersededInBatch])).toEqual([
			['stale', true],
			['newer', false],
			['stale', false],
			['stale', false],
		]);
		expect(orderDecisions(items, candidates, marks, 'newer').map((decision) => decision.outcome)).toEqual([
			'stale',
			'newer',
			'newer',
			'stale',
		]);
	});

	it('lets the event that set the mark pass again at its version, behind another event of that version sent first', () => {
		const batch = [
			{ objectKey: 'o', version: '5', eventKey: 'evt:A' },
			{ objectKey: 'o', version: '5', eventKey: 'evt:B' },
		];
		const candidates = orderCandidates(batch);
		expect(candidates.get('o')).toBe(batch[0]);
		// The store compared evt:A with the mark evt:B (set at 5 by B, whose run then failed): stale, the mark kept.
		const marks = new Map([['o', mark('5', 'stale', 'evt:B')]]);
		expect(orderDecisions(batch, candidates, marks, 'stale').map((decision) => decision.outcome)).toEqual(['stale', 'newer']);
		// A newer mark set by B's own later version does not let B's older version through.
		const later = new Map([['o', mark('6', 'stale', 'evt:B')]]);
		expect(orderDecisions(batch, candidates, later, 'stale').map((decision) => decision.outcome)).toEqual(['stale', 'stale']);
	});
});

describe('the inbox retry rule', () => {
	it('waits the first retry delay after the first run, doubling it for each run after, at most an hour, scaled by the jitter', () => {
		expect([1, 2, 3, 4, 5].map((attempts) => inboxRetryDelayMs(attempts, 30_000, 1))).toEqual([30_000, 60_000, 120_000, 240_000, 480_000]);
		expect(inboxRetryDelayMs(8, 30_000, 1)).toBe(3_600_000);
		expect(inboxRetryDelayMs(100, 30_000, 1)).toBe(INBOX_RETRY_CAP_MS);
		expect(INBOX_RETRY_CAP_MS).toBe(3_600_000);
		expect(inboxRetryDelayMs(3, 1000, 0.5)).toBe(2000);
		expect(inboxRetryDelayMs(8, 30_000, 0.5)).toBe(1_800_000);
	});

	it('counts a run before the first (attempts 0, never stored) as the first', () => {
		expect(inboxRetryDelayMs(0, 1000, 1)).toBe(1000);
	});

	it('draws the jitter between half and all of the delay ("equal jitter")', () => {
		expect(inboxJitter(() => 0)).toBe(0.5);
		expect(inboxJitter(() => 0.5)).toBe(0.75);
		expect(inboxJitter(() => 0.999_999)).toBeLessThanOrEqual(1);
		for (let draw = 0; draw < 1000; draw++) {
			const jitter = inboxJitter();
			expect(jitter).toBeGreaterThanOrEqual(0.5);
			expect(jitter).toBeLessThanOrEqual(1);
		}
	});
});

describe('reservationResult', () => {
	const record = (status: CompactRecord['status'], leaseActive: boolean): CompactRecord => ({
		key: 'k',
		status,
		attempts: 1,
		lockedUntil: null,
		payloadHash: null,
		response: null,
		leaseActive,
	});
	const request = { key: 'k', keySource: 'custom', payloadHash: null };

	it('answers another delivery of an inbox event duplicate even while a run holds it; any other key in progress', () => {
		expect(reservationResult(request, record('processing', true), OTHER, OWNER, false, true).outcome).toBe('duplicate');
		expect(reservationResult(request, record('processing', true), OTHER, OWNER, false, false).outcome).toBe('in_progress');
	});

	it('answers the reservation that wrote its own token new, an inbox event too', () => {
		expect(reservationResult(request, record('processing', true), OWNER, OWNER, false, true)).toMatchObject({
			outcome: 'new',
			ownerToken: OWNER,
		});
	});
});
