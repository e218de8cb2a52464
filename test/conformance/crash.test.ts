import { describeEachBackend, freshStore, type StoreFixture } from '../support/stores';
import { requireSqlite } from '../support/storeTargets';
import { startWorker } from '../support/workers';

/*
 * A process killed with SIGKILL in the middle of its reservations: a worker reserves batches of
 * 10,000 keys in a loop (one statement each) and is killed at a random moment. Every batch is
 * stored whole or not at all, the ones it finished are all there, and the store goes on working.
 * On the embedded store the file also passes SQLite's integrity check.
 */

const BATCH = 10_000;

describeEachBackend('a process killed mid-batch', (backend) => {
	let fixture: StoreFixture;
	const rounds: Array<{ lastStarted: number; killedBatchKeys: number; signal: string | null }> = [];

	beforeAll(async () => {
		fixture = await freshStore(backend, { prefix: 'crash' });
	});

	afterAll(() => fixture?.close());

	it.each([1, 2, 3])('round %i: killed at a random moment during a 10,000-key reserve, each batch is all or nothing', async (round) => {
		const prefix = `crash${round}-`;
		const worker = startWorker('storeWorker.ts', { target: fixture.target, job: { kind: 'reserveLoop', prefix, size: BATCH } });
		await worker.waitForLine((line) => line === 'ready');
		worker.child.stdin!.end('go\n');
		// Batch 1 starting means batch 0 is done; the time to batch 2 is how long one batch takes here.
		await worker.waitForLine((line) => line === 'batch 1');
		const started = Date.now();
		await worker.waitForLine((line) => line === 'batch 2');
		const batchMs = Date.now() - started;
		await new Promise((resolve) => setTimeout(resolve, Math.random() * batchMs));
		worker.child.kill('SIGKILL');
		const { signal, stdout } = await worker.exited;
		expect(signal).toBe('SIGKILL');

		const lastStarted = Math.max(
			...stdout
				.split('\n')
				.filter((line) => line.startsWith('batch '))
				.map((line) => Number(line.slice(6))),
		);
		expect(lastStarted).toBeGreaterThanOrEqual(2);
		for (let batch = 0; batch < lastStarted; batch++) expect(await fixture.count(`${prefix}${batch}-`)).toBe(BATCH);
		const killedBatchKeys = await fixture.count(`${prefix}${lastStarted}-`);
		expect([0, BATCH]).toContain(killedBatchKeys);
		expect(await fixture.count(`${prefix}${lastStarted + 1}-`)).toBe(0);
		rounds.push({ lastStarted, killedBatchKeys, signal });
	});

	if (backend === 'embedded') {
		it('the file passes SQLite integrity check after the kills', () => {
			requireSqlite();
			// eslint-disable-next-line @typescript-eslint/no-require-imports
			const { DatabaseSync } = require('node:sqlite') as {
				DatabaseSync: new (file: string) => { prepare(sql: string): { all(): unknown[] }; close(): void };
			};
			if (fixture.target.backend !== 'embedded') throw new Error('an embedded fixture');
			const db = new DatabaseSync(fixture.target.file);
			try {
				expect(db.prepare('pragma integrity_check').all()).toEqual([{ integrity_check: 'ok' }]);
			} finally {
				db.close();
			}
		});
	}

	it('the store reopens and works: a stored key is a duplicate, a new one is new', async () => {
		expect(rounds).toHaveLength(3);
		// A new connection, as after an n8n restart (the embedded store reopens the file on next use).
		const store = fixture.openStore();
		const options = { mode: 'permanent' as const, leaseSeconds: 60, retentionSeconds: 3600 };
		const results = await store.reserve(
			[
				{ key: 'crash1-0-0', keySource: 'custom', payloadHash: null },
				{ key: 'after-the-crash', keySource: 'custom', payloadHash: null },
			],
			options,
		);
		expect(results.map((result) => result.outcome)).toEqual(['duplicate', 'new']);
		expect(await fixture.row('after-the-crash')).toMatchObject({ status: 'completed', attempts: 1 });
	});
});
