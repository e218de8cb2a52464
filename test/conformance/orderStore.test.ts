import type { VersionedItem } from '../../lib/store/contract';
import { parseVersion } from '../../lib/order/version';
import { describeEachBackend, freshOrderStore, type OrderFixture } from '../support/stores';
import { raceWorkers } from '../support/workers';

/*
 * The Order Guard's store: per object, the highest version applied. Batches, equal versions, exact
 * versions and a race of OS processes, on both backends. The node (routing, bad input, the
 * ordered template's business step) is tested in test/integration/orderGuard.test.ts.
 */

describeEachBackend('the Order Guard store', (backend) => {
	let fixture: OrderFixture;

	beforeAll(async () => {
		fixture = await freshOrderStore(backend);
	});

	afterAll(() => fixture?.close());

	const items = (entries: Array<[string, number | string, string?]>): VersionedItem[] =>
		entries.map(([objectKey, version, eventKey]) => ({ objectKey, version: parseVersion(version), eventKey: eventKey ?? null }));
	const advance = (entries: Array<[string, number | string, string?]>, equalVersion: 'stale' | 'newer' = 'stale') =>
		fixture.store.advance(items(entries), { equalVersion, executionId: 'exec-order' });

	it('several versions of one object in one batch: only the highest passes, once; other objects are independent', async () => {
		const decisions = await advance([
			['obj:a', 1],
			['obj:a', 3],
			['obj:b', 7],
			['obj:a', 2],
			['obj:a', 3],
		]);
		expect(decisions.map((decision) => decision.outcome)).toEqual(['stale', 'newer', 'newer', 'stale', 'stale']);
		expect(decisions.map((decision) => decision.supersededInBatch)).toEqual([true, false, false, true, false]);
		expect(decisions.filter((decision) => decision.outcome === 'newer').map((decision) => decision.currentVersion)).toEqual(['3', '7']);
		expect(await fixture.mark('obj:a')).toEqual({ version: '3', stale_count: 0 });

		const next = await advance([
			['obj:a', 2],
			['obj:a', 4],
			['obj:b', 7],
		]);
		expect(next.map((decision) => decision.outcome)).toEqual(['stale', 'newer', 'stale']);
		expect(await fixture.mark('obj:a')).toEqual({ version: '4', stale_count: 0 });
		expect(await fixture.mark('obj:b')).toEqual({ version: '7', stale_count: 1 });
	});

	it('equal is Stale by default; the event that set the version passes again when retried; "newer" lets equal pass', async () => {
		const outcome = async (version: number, eventKey: string, equal: 'stale' | 'newer' = 'stale') =>
			(await advance([['tie:1', version, eventKey || undefined]], equal))[0].outcome;
		expect(await outcome(10, 'evt:first')).toBe('newer');
		expect(await outcome(10, 'evt:other')).toBe('stale');
		expect(await outcome(10, '')).toBe('stale');
		// The run that set version 10 failed after the guard; the provider retries the same event.
		expect(await outcome(10, 'evt:first')).toBe('newer');
		expect(await outcome(10, 'evt:other', 'newer')).toBe('newer');
		expect(await outcome(9, 'evt:first', 'newer')).toBe('stale');
		expect(await fixture.mark('tie:1')).toEqual({ version: '10', stale_count: 3 });
	});

	it('integers beyond 2^53 given as text are never rounded', async () => {
		expect((await advance([['big:1', '9007199254740993']]))[0].outcome).toBe('newer');
		// As a double, 9007199254740992 and ...993 are the same number; as exact decimals they are not.
		expect((await advance([['big:1', '9007199254740992']]))[0].outcome).toBe('stale');
		expect((await advance([['big:1', '9007199254740994']]))[0].outcome).toBe('newer');
		expect(await fixture.mark('big:1')).toEqual({ version: '9007199254740994', stale_count: 1 });
	});

	it('ISO date-times compare with Unix seconds on one scale', async () => {
		expect((await advance([['time:1', 1_796_033_700]]))[0].outcome).toBe('newer');
		expect((await advance([['time:1', '2026-11-30T10:14:59.999Z']]))[0].outcome).toBe('stale');
		expect((await advance([['time:1', '2026-11-30T11:15:00.000001+01:00']]))[0].outcome).toBe('newer');
		expect(await fixture.mark('time:1')).toEqual({ version: '1796033700.000001', stale_count: 1 });
	});

	it('200 concurrent versions of one object from 4 OS processes: the highest wins, at most one Newer per version, the mark is the max', async () => {
		// Versions 1..100, each sent twice, dealt round-robin from a shuffled deck to 4 processes.
		const deck = Array.from({ length: 200 }, (_unused, index) => String((index % 100) + 1)).sort(() => Math.random() - 0.5);
		const reports = await raceWorkers<{ pid: number; decisions: Array<{ version: string; outcome: string }> }>(
			'orderWorker.ts',
			(worker) => ({
				target: fixture.target,
				objectKey: 'race:customer',
				versions: deck.filter((_version, index) => index % 4 === worker),
				connections: 5,
			}),
			4,
		);
		const decisions = reports.flatMap((report) => report.decisions);
		expect(decisions).toHaveLength(200);
		expect(new Set(reports.map((report) => report.pid)).size).toBe(4);
		const newerByVersion = new Map<string, number>();
		for (const decision of decisions) {
			if (decision.outcome === 'newer') newerByVersion.set(decision.version, (newerByVersion.get(decision.version) ?? 0) + 1);
		}
		expect(Math.max(...newerByVersion.values())).toBe(1);
		expect(newerByVersion.get('100')).toBe(1);
		expect(await fixture.mark('race:customer')).toEqual({ version: '100', stale_count: 200 - newerByVersion.size });
	});
});
