import { postgresPoolFixture } from '../support/database';
import { freshStore, type StoreFixture } from '../support/stores';

// Postgres only: a row lock held by another session is a Postgres notion (the embedded file is
// locked as a whole). Cleanup's other behaviour is in test/conformance/cleanup.test.ts.

let fixture: StoreFixture;
const db = postgresPoolFixture({ max: 2 });

beforeAll(async () => {
	fixture = await freshStore('postgres', { prefix: 'clean' });
});

afterAll(async () => {
	await fixture?.close();
});

const keys = () => fixture.keys();

it('skips a row another session holds locked instead of waiting for it; a later run deletes it', async () => {
	const { store, target } = fixture;
	if (target.backend !== 'postgres') throw new Error('a Postgres fixture');
	await fixture.seed(['gone-1', 'held', 'gone-2'].map((key) => ({ key, firstSeen: -60 * 86_400 })));
	const holder = await db.pool.connect();
	try {
		await holder.query('begin');
		expect((await holder.query(`select 1 from ${target.schema}.processed_events where key = 'held' for update`)).rowCount).toBe(1);
		const waited = new Promise((resolve) => setTimeout(() => resolve('waited on the lock'), 5_000));
		const result = await Promise.race([store.cleanup({ retentionSeconds: 30 * 86_400, batchSize: 10, timeBudgetSeconds: 60 }), waited]);
		expect(result).toMatchObject({ deleted: 2, finished: true });
		expect(await keys()).toEqual(['held']);
	} finally {
		await holder.query('rollback');
		holder.release();
	}
	expect(await store.cleanup({ retentionSeconds: 30 * 86_400, batchSize: 10, timeBudgetSeconds: 60 })).toMatchObject({ deleted: 1 });
	expect(await keys()).toEqual([]);
});
