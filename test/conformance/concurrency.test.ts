import { describeEachBackend, freshStore, type StoreFixture } from '../support/stores';
import { raceOneKey, raceStore, shuffled } from '../support/workers';

describeEachBackend('one key reserved from many processes at once', (backend) => {
	let fixture: StoreFixture;

	beforeAll(async () => {
		fixture = await freshStore(backend, { prefix: 'race' });
	});

	afterAll(() => fixture?.close());

	async function storedRow(key: string) {
		const row = await fixture.row(key);
		return row ? [{ attempts: row.attempts, duplicate_count: row.duplicate_count }] : [];
	}

	it.each(['permanent', 'lease'] as const)(
		'200 reservations over 20 connections from 4 OS processes give exactly one New (%s mode)',
		async (mode) => {
			const key = `race-200-${mode}`;
			const results = await raceOneKey(fixture.target, { key, processes: 4, connectionsPerProcess: 5, callsPerProcess: 50, mode });
			expect(results).toHaveLength(200);
			expect(new Set(results.map((result) => result.pid)).size).toBe(4);
			expect(results.filter((result) => result.outcome === 'new')).toHaveLength(1);
			const others = mode === 'lease' ? 'in_progress' : 'duplicate';
			expect(results.filter((result) => result.outcome === others)).toHaveLength(199);
			expect(await storedRow(key)).toEqual([{ attempts: 1, duplicate_count: 199 }]);
		},
	);

	it("8 simultaneous reservations (the seed's experiment) give exactly one New", async () => {
		const results = await raceOneKey(fixture.target, {
			key: 'race-8',
			processes: 8,
			connectionsPerProcess: 1,
			callsPerProcess: 1,
			mode: 'permanent',
		});
		expect(results.map((result) => result.outcome).sort()).toEqual([
			'duplicate',
			'duplicate',
			'duplicate',
			'duplicate',
			'duplicate',
			'duplicate',
			'duplicate',
			'new',
		]);
	});

	it('8 processes reserving the same 500 keys at once, each as one batch in its own order: exactly one New per key, no error', async () => {
		const keys = Array.from({ length: 500 }, (_, index) => `many-${index}`);
		const reports = await raceStore(
			fixture.target,
			Array.from({ length: 8 }, (_, process) => ({
				kind: 'reserve' as const,
				batches: [shuffled(keys, process + 1)],
				mode: 'permanent' as const,
			})),
		);
		expect(new Set(reports.map((report) => report.pid)).size).toBe(8);
		const results = reports.flatMap((report) => report.results);
		expect(results).toHaveLength(8 * 500);
		const newByKey = new Map<string, number>();
		for (const result of results) if (result.outcome === 'new') newByKey.set(result.key, (newByKey.get(result.key) ?? 0) + 1);
		expect(newByKey.size).toBe(500);
		expect([...newByKey.values()].every((count) => count === 1)).toBe(true);
		expect(results.filter((result) => result.outcome === 'duplicate')).toHaveLength(7 * 500);
		expect(await fixture.count('many-')).toBe(500);
		const rows = await Promise.all(keys.map((key) => fixture.row(key)));
		expect(rows.every((row) => row?.attempts === 1 && row.duplicate_count === 7)).toBe(true);
	});

	it('8 processes reclaiming the same 200 expired leases at once (one batch each): exactly one New per key, attempts 2', async () => {
		await fixture.seedMany('reclaim-', 200, { status: 'processing', lockedUntil: -1, expiresAt: 3600, ownerToken: 'random', attempts: 1 });
		const keys = Array.from({ length: 200 }, (_, index) => `reclaim-${index + 1}`);
		const reports = await raceStore(
			fixture.target,
			Array.from({ length: 8 }, (_, process) => ({
				kind: 'reserve' as const,
				batches: [shuffled(keys, process + 11)],
				mode: 'lease' as const,
			})),
		);
		const results = reports.flatMap((report) => report.results);
		const newByKey = new Map<string, number>();
		for (const result of results) if (result.outcome === 'new') newByKey.set(result.key, (newByKey.get(result.key) ?? 0) + 1);
		expect(newByKey.size).toBe(200);
		expect([...newByKey.values()].every((count) => count === 1)).toBe(true);
		expect(results.filter((result) => result.outcome === 'in_progress')).toHaveLength(7 * 200);
		const rows = await Promise.all(keys.map((key) => fixture.row(key)));
		expect(rows.every((row) => row?.attempts === 2 && row.status === 'processing')).toBe(true);
	});
});
