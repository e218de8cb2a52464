import { Client } from 'pg';

import { PostgresKeyStore } from '../../lib/store/postgres/stores';
import { postgresSchemaFixture } from '../support/database';
import { idempotencyOf, runReserve } from '../support/nodes';

const db = postgresSchemaFixture('batch', { keyTables: ['processed_events'] });

describe('a batch of 10,000 items', () => {
	it('with 1,000 repeats gives exactly the distinct count New, in one round trip', async () => {
		// 9,000 distinct ids; ids 0–999 appear twice, the repeats spread through the batch.
		const ids = Array.from({ length: 9_000 }, (_, i) => i);
		const repeats = Array.from({ length: 1_000 }, (_, i) => i);
		const order = [...ids, ...repeats].sort((a, b) => ((a * 7919) % 10_007) - ((b * 7919) % 10_007));
		const items = order.map((id) => ({ json: { id: `order-${id}` } }));
		expect(items).toHaveLength(10_000);

		// The node's pool checks the table's schema version once, on its first use; not part of the batch.
		await runReserve({ options: { schemaName: db.schema } }, { items: [{ json: { id: 'warm-up' } }] });
		await db.pool.query(`truncate ${db.schema}.processed_events`);
		// Counts the statements any pg client sends (the real client's query, observed, not replaced).
		const querySpy = jest.spyOn(Client.prototype, 'query');
		const [fresh, duplicate] = await runReserve({ options: { schemaName: db.schema } }, { items });
		expect(querySpy).toHaveBeenCalledTimes(1);
		querySpy.mockRestore();

		expect(fresh).toHaveLength(9_000);
		expect(duplicate).toHaveLength(1_000);
		expect(new Set(fresh.map((item) => idempotencyOf(item).key)).size).toBe(9_000);
		// The table was empty: every Duplicate repeats a key of this batch, and carries the compact object.
		const freshKeys = new Set(fresh.map((item) => idempotencyOf(item).key));
		expect(duplicate.every((item) => freshKeys.has(idempotencyOf(item).key))).toBe(true);
		expect(idempotencyOf(duplicate[0])).toEqual({
			key: expect.stringMatching(/^evt:order-\d+$/),
			isNew: false,
			outcome: 'duplicate',
			ownerToken: null,
			attempts: 1,
			response: null,
		});
		expect(Object.keys(idempotencyOf(fresh[0]))).toEqual(['key', 'isNew', 'outcome', 'ownerToken', 'attempts']);
		// Every item comes out once, paired with its input.
		const paired = [...fresh, ...duplicate].map((item) => (item.pairedItem as { item: number }).item).sort((a, b) => a - b);
		expect(paired).toEqual(Array.from({ length: 10_000 }, (_, i) => i));
		const { rows } = await db.pool.query(`select count(*)::int as n from ${db.schema}.processed_events`);
		expect(rows[0].n).toBe(9_000);
	});

	it('sent again, is all Duplicate', async () => {
		const items = Array.from({ length: 10_000 }, (_, i) => ({ json: { id: `order-${i % 9_000}` } }));
		const [fresh, duplicate] = await runReserve({ options: { schemaName: db.schema } }, { items });
		expect(fresh).toHaveLength(0);
		expect(duplicate).toHaveLength(10_000);
	});
});

describe('what a batch sends', () => {
	const permanent = { mode: 'permanent' as const, leaseSeconds: 60, retentionSeconds: 86_400 };
	const store = () => new PostgresKeyStore(db.pool, { schema: db.schema, table: 'processed_events', createTable: false });

	/** The parameters of the reserve statement the store sends (the real client's query, observed). */
	async function sentValues(run: () => Promise<unknown>): Promise<unknown[]> {
		const querySpy = jest.spyOn(Client.prototype, 'query');
		try {
			await run();
			// Sent as (text, values), or as one { name, text, values } when the statement is named.
			const sent = querySpy.mock.calls.map(([first, second]) =>
				typeof first === 'string' ? { text: first, values: second } : (first as { text?: string; values?: unknown }),
			);
			const call = sent.find(({ text }) => typeof text === 'string' && text.includes('on conflict (key) do update'));
			return (call?.values ?? []) as unknown[];
		} finally {
			querySpy.mockRestore();
		}
	}

	it('a column no item fills (fingerprint, replay evidence) goes as one null, not an array of nulls', async () => {
		const values = await sentValues(() =>
			store().reserve(
				['send-a', 'send-b', 'send-a'].map((key) => ({ key, keySource: 'test', payloadHash: null })),
				permanent,
			),
		);
		// Keys, key sources and tokens that need no escaping go as one array literal each (made in one join).
		expect(values[0]).toEqual('{"send-a","send-b"}');
		expect(values[1]).toEqual('{"test","test"}');
		expect(values[3]).toMatch(/^\{"[0-9a-f-]{36}","[0-9a-f-]{36}"\}$/);
		expect([values[2], ...values.slice(9, 13)]).toEqual([null, null, null, null, null]);
	});

	it('keys that need escaping go as an array, for pg to escape', async () => {
		const values = await sentValues(() =>
			store().reserve(
				['send "quoted"', 'send-plain'].map((key) => ({ key, keySource: 'test', payloadHash: null })),
				permanent,
			),
		);
		expect(values[0]).toEqual(['send "quoted"', 'send-plain']);
		expect(values[1]).toEqual('{"test","test"}');
	});

	it('a column some items fill goes as an array, null for the others, and each row gets its own value', async () => {
		const requests = [
			{
				key: 'mixed-a',
				keySource: 'test',
				payloadHash: 'hash-a',
				evidence: { payloadJson: '{"id":"a"}', payloadBytes: 10, source: 'stripe', correlationId: 'corr-a' },
			},
			{ key: 'mixed-b', keySource: 'test', payloadHash: null },
		];
		const values = await sentValues(() => store().reserve(requests, permanent));
		expect([values[2], ...values.slice(9, 13)]).toEqual([
			['hash-a', null],
			['{"id":"a"}', null],
			[10, null],
			['stripe', null],
			['corr-a', null],
		]);
		const { rows } = await db.pool.query(
			`select key, payload_hash, payload, payload_bytes, source, correlation_id from ${db.schema}.processed_events where key like 'mixed-%' order by key`,
		);
		expect(rows).toEqual([
			{ key: 'mixed-a', payload_hash: 'hash-a', payload: { id: 'a' }, payload_bytes: 10, source: 'stripe', correlation_id: 'corr-a' },
			{ key: 'mixed-b', payload_hash: null, payload: null, payload_bytes: null, source: null, correlation_id: null },
		]);
	});
});
