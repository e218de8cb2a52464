import type { Pool } from 'pg';

import { IdempotencyStore } from '../../lib/postgres/store';
import type { ReserveOptions } from '../../lib/types';
import { adminPool, freshSchema } from '../support/database';

// attempts and duplicate_count are Postgres integers; one more than this would fail every delivery of the key.
const INT4_MAX = 2_147_483_647;

let pool: Pool;
let schema: string;
let store: IdempotencyStore;

const lease: ReserveOptions = { mode: 'lease', leaseSeconds: 60, retentionSeconds: 86_400 };
const reserve = async (key: string, options: ReserveOptions = lease) =>
	(await store.reserve([{ key, keySource: 'custom', payloadHash: null }], options))[0];
const setCounters = (key: string, set: string) => pool.query(`update ${schema}.processed_events set ${set} where key = $1`, [key]);

beforeAll(async () => {
	pool = adminPool();
	schema = await freshSchema(pool, 'count');
	store = new IdempotencyStore(pool, { schema, table: 'processed_events', createTable: true });
});

afterAll(() => pool.end());

describe('counters at the integer maximum', () => {
	it('a duplicate of a key counted 2147483647 times is still answered as a duplicate; the count stays there', async () => {
		const first = await reserve('dup-max');
		await store.complete([{ key: 'dup-max', ownerToken: first.ownerToken! }]);
		await setCounters('dup-max', `duplicate_count = ${INT4_MAX}`);

		const again = await reserve('dup-max');
		expect(again).toMatchObject({ outcome: 'duplicate', ownerToken: null });
		expect(again.record.duplicateCount).toBe(INT4_MAX);
		expect(typeof again.record.duplicateCount).toBe('number');
	});

	it('an in-progress key counted 2147483647 times is still answered as in progress', async () => {
		await reserve('busy-max');
		await setCounters('busy-max', `duplicate_count = ${INT4_MAX}`);
		const again = await reserve('busy-max');
		expect(again).toMatchObject({ outcome: 'in_progress' });
		expect(again.record.duplicateCount).toBe(INT4_MAX);
	});

	it('a failed key attempted 2147483647 times is still reserved again on the next delivery', async () => {
		const first = await reserve('fail-max');
		await store.fail([{ key: 'fail-max', ownerToken: first.ownerToken!, error: 'boom' }]);
		await setCounters('fail-max', `attempts = ${INT4_MAX}`);

		const retry = await reserve('fail-max');
		expect(retry).toMatchObject({ outcome: 'new', reclaimed: true });
		expect(retry.record.attempts).toBe(INT4_MAX);
		expect(await store.complete([{ key: 'fail-max', ownerToken: retry.ownerToken! }])).toEqual([{ key: 'fail-max', applied: true }]);
	});

	it('a crashed run of a key attempted 2147483647 times is still reclaimed', async () => {
		await reserve('crash-max');
		await setCounters('crash-max', `attempts = ${INT4_MAX}, locked_until = now() - interval '1 second'`);
		const reclaim = await reserve('crash-max');
		expect(reclaim).toMatchObject({ outcome: 'new', reclaimed: true });
		expect(reclaim.record.attempts).toBe(INT4_MAX);
	});
});
