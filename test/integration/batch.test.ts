import { Client, Pool } from 'pg';

import { closeAllPools } from '../../lib/postgres/pool';
import { IdempotencyStore } from '../../lib/postgres/store';
import { adminPool, freshSchema } from '../support/database';
import { idempotencyOf, runReserve } from '../support/nodes';

let pool: Pool;
let schema: string;

beforeAll(async () => {
	pool = adminPool();
	schema = await freshSchema(pool, 'batch');
	await new IdempotencyStore(pool, { schema, table: 'processed_events', createTable: false }).createTable();
});

afterAll(async () => {
	await closeAllPools();
	await pool.end();
});

describe('a batch of 10,000 items', () => {
	it('with 1,000 repeats gives exactly the distinct count New, in one round trip', async () => {
		// 9,000 distinct ids; ids 0–999 appear twice, the repeats spread through the batch.
		const ids = Array.from({ length: 9_000 }, (_, i) => i);
		const repeats = Array.from({ length: 1_000 }, (_, i) => i);
		const order = [...ids, ...repeats].sort((a, b) => ((a * 7919) % 10_007) - ((b * 7919) % 10_007));
		const items = order.map((id) => ({ json: { id: `order-${id}` } }));
		expect(items).toHaveLength(10_000);

		// The node's pool checks the table's schema version once, on its first use; not part of the batch.
		await runReserve({ options: { schemaName: schema } }, { items: [{ json: { id: 'warm-up' } }] });
		await pool.query(`truncate ${schema}.processed_events`);
				// Counts the statements any pg client sends (the real client's query, observed, not replaced).
		const querySpy = jest.spyOn(Client.prototype, 'query');
		const [fresh, duplicate] = await runReserve({ options: { schemaName: schema } }, { items });
		expect(querySpy).toHaveBeenCalledTimes(1);
		querySpy.mockRestore();

		expect(fresh).toHaveLength(9_000);
		expect(duplicate).toHaveLength(1_000);
		expect(new Set(fresh.map((item) => idempotencyOf(item).key)).size).toBe(9_000);
		// The table was empty: every Duplicate repeats a key of this batch, and carries the compact object.
		const freshKeys = new Set(fresh.map((item) => idempotencyOf(item).key));
		expect(duplicate.every((item) => freshKeys.has(idempotencyOf(item).key))).toBe(true);
		expect(idempotencyOf(duplicate[0])).toEqual({ key: expect.stringMatching(/^evt:order-\d+$/), isNew: false, outcome: 'duplicate', ownerToken: null, attempts: 1, response: null });
		expect(Object.keys(idempotencyOf(fresh[0]))).toEqual(['key', 'isNew', 'outcome', 'ownerToken', 'attempts']);
		// Every item comes out once, paired with its input.
		const paired = [...fresh, ...duplicate].map((item) => (item.pairedItem as { item: number }).item).sort((a, b) => a - b);
		expect(paired).toEqual(Array.from({ length: 10_000 }, (_, i) => i));
		const { rows } = await pool.query(`select count(*)::int as n from ${schema}.processed_events`);
		expect(rows[0].n).toBe(9_000);
	});

	it('sent again, is all Duplicate', async () => {
		const items = Array.from({ length: 10_000 }, (_, i) => ({ json: { id: `order-${i % 9_000}` } }));
		const [fresh, duplicate] = await runReserve({ options: { schemaName: schema } }, { items });
		expect(fresh).toHaveLength(0);
		expect(duplicate).toHaveLength(10_000);
	});
});
