import { tableRef } from '../../lib/identifiers';
import { renderStatement } from '../../lib/store/postgres/statements';
import { PostgresKeyStore, MAX_LIST_PAGE_BYTES, MAX_LIST_PAGE_SIZE } from '../../lib/store/postgres/stores';
import { postgresSchemaFixture } from '../support/database';
import { webhookItem } from '../support/fakeExecuteFunctions';
import { idempotencyOf, runKeyNode, runReserve } from '../support/nodes';

/*
 * Get Key, List Keys and Get Stats through the Idempotency Key node, and the List Keys query plan
 * on real Postgres. The store's own behaviour, on both backends: test/conformance/keyRecords.test.ts.
 */

const TABLE = 'records';
const db = postgresSchemaFixture('keyrecords', { keyTables: [TABLE] });

beforeAll(async () => {
	// A known table: live lease, stuck lease, failed, completed (old and new), another prefix.
	await db.pool.query(
		`insert into ${db.schema}.${TABLE} (key, status, locked_until, first_seen, last_error, owner_token, execution_id) values
		 ('stripe:live', 'processing', now() + interval '5 minutes', now(), null, gen_random_uuid(), 'e-live'),
		 ('stripe:stuck', 'processing', now() - interval '5 minutes', now() - interval '2 hours', null, gen_random_uuid(), 'e-stuck'),
		 ('stripe:failed', 'failed', null, now() - interval '3 hours', 'card declined', null, 'e-failed'),
		 ('stripe:old', 'completed', null, now() - interval '48 hours', null, null, 'e-old'),
		 ('shopify:new', 'completed', null, now(), null, null, 'e-new')`,
	);
});

const options = () => ({ schemaName: db.schema, tableName: TABLE });

describe('List Keys: the query plan (Postgres)', () => {
	it('reads a page through the primary key index, stopped by the limit, never a sequential scan of a big table', async () => {
		const big = 'records_big';
		const bigStore = new PostgresKeyStore(db.pool, { schema: db.schema, table: big, createTable: true });
		await bigStore.createTable();
		await db.pool.query(
			`insert into ${db.schema}.${big} (key, status) select 'k:' || lpad(i::text, 6, '0'), case when i % 100 = 0 then 'failed' else 'completed' end from generate_series(1, 50000) i`,
		);
		await db.pool.query(`analyze ${db.schema}.${big}`);
		const text = renderStatement('listKeys', tableRef(db.schema, big));
		const client = await db.pool.connect();
		try {
			// The node's statements are unnamed, so planned with their parameter values: the same here.
			const plan = (
				await client.query(
					`explain ${text.replace(/;\s*$/, '')}`.replace(
						/\$(\d)/g,
						(_m, n: string) => ['', "''", "'failed'", 'false', 'null', 'null', '100', 'false', '16777216', 'false'][Number(n)],
					),
				)
			).rows
				.map((row) => row['QUERY PLAN'] as string)
				.join('\n');
			// The byte bound is applied above the limit (a window over at most one page of keys).
			expect(plan).toMatch(/-> {2}Limit/);
			expect(plan).toMatch(/Index Scan using records_big_pkey/);
			expect(plan).not.toMatch(/Seq Scan/);
		} finally {
			client.release();
		}
		const { keys: page } = await bigStore.listKeys({ limit: 100, status: 'failed' });
		expect(page).toHaveLength(100);
		expect(page[0].key).toBe('k:000100');
	});
});

describe('Idempotency Key node: Get Key and List Keys', () => {
	it('Get Key: the record in Reserve’s words for a reserved key, found: false for an unknown one; never the owner token', async () => {
		const [fresh] = await runReserve(
			{ mode: 'lease', leaseSeconds: 60, options: { ...options(), createTable: true } },
			{ items: [webhookItem({ id: 'evt_get' })] },
		);
		const reserved = idempotencyOf(fresh[0]);
		const [out] = await runKeyNode(
			{ operation: 'getKey', lookupKey: (itemIndex: number) => (itemIndex === 0 ? reserved.key : 'evt:unknown'), options: options() },
			{ items: [{ json: {} }, { json: {} }] },
		);
		expect(out).toHaveLength(2);
		// keySource in the Key Source options' words, as Reserve's Output: Full gives it; the column keeps its identifier.
		expect(out[0].json).toMatchObject({
			found: true,
			key: 'evt:evt_get',
			status: 'processing',
			stuckLease: false,
			attempts: 1,
			keySource: 'Event ID',
		});
		expect(JSON.stringify(out[0].json)).not.toContain(String(reserved.ownerToken));
		expect(out[1].json).toEqual({ found: false, key: 'evt:unknown' });
		expect(out.map((item) => item.pairedItem)).toEqual([{ item: 0 }, { item: 1 }]);
	});

	it('List Keys: failed keys older than 1 hour, one page with where the next starts', async () => {
		const [out] = await runKeyNode(
			{ operation: 'listKeys', limit: 1, afterKey: '', listFilters: { status: 'failed', olderThanHours: 1 }, options: options() },
			{ items: [{ json: {} }] },
		);
		expect(out).toHaveLength(1);
		expect(out[0].json).toMatchObject({
			found: true,
			key: 'stripe:failed',
			status: 'failed',
			lastError: 'card declined',
			nextPageAfterKey: 'stripe:failed',
		});
		expect(out[0].pairedItem).toEqual([{ item: 0 }]);

		const [next] = await runKeyNode(
			{
				operation: 'listKeys',
				limit: 1,
				afterKey: 'stripe:failed',
				listFilters: { status: 'failed', olderThanHours: 1 },
				options: options(),
			},
			{ items: [{ json: {} }] },
		);
		expect(next).toEqual([]);
	});

	it('List Keys: stuck leases are marked as such', async () => {
		const [out] = await runKeyNode(
			{ operation: 'listKeys', limit: 50, afterKey: '', listFilters: { stuckLeasesOnly: true }, options: options() },
			{ items: [{ json: {} }] },
		);
		expect(out.map((item) => [item.json.key, item.json.stuckLease, item.json.nextPageAfterKey])).toEqual([['stripe:stuck', true, null]]);
	});

	it('List Keys: status "Replayable" lists failed keys and expired leases, with their evidence fields', async () => {
		const [out] = await runKeyNode(
			{ operation: 'listKeys', limit: 50, afterKey: '', listFilters: { status: 'replayable', keyPrefix: 'stripe:' }, options: options() },
			{ items: [{ json: {} }] },
		);
		expect(out.map((item) => [item.json.key, item.json.status])).toEqual([
			['stripe:failed', 'failed'],
			['stripe:stuck', 'processing'],
		]);
		// Rows stored without evidence say so, with the field names a replay reads.
		expect(out[0].json).toMatchObject({ payload: null, payloadStored: false, payloadBytes: null, source: null, correlationId: null });
	});

	it('List Keys: a page size above the cap fails with a clear error', async () => {
		await expect(
			runKeyNode({ operation: 'listKeys', limit: 5000, afterKey: '', listFilters: {}, options: options() }, { items: [{ json: {} }] }),
		).rejects.toThrow(/page size must be a whole number from 1 to 1000/);
	});
});

describe('Get Stats', () => {
	// The store's counts (by status now, and within the window) are proven on both backends in test/conformance/keyRecords.test.ts.
	it('through the node: new keys, duplicates, reclaims and failures of keys seen within the window, as one item paired with every input item', async () => {
		await new PostgresKeyStore(db.pool, { schema: db.schema, table: 'stats_table', createTable: true }).createTable();
		await db.pool.query(
			`insert into ${db.schema}.stats_table (key, status, locked_until, first_seen, last_seen, duplicate_count, attempts) values
			 ('live', 'processing', now() + interval '5 minutes', now(), now(), 0, 1),
			 ('stuck', 'processing', now() - interval '5 minutes', now() - interval '1 hour', now() - interval '1 hour', 1, 1),
			 ('done', 'completed', null, now() - interval '30 hours', now() - interval '2 hours', 3, 2),
			 ('failed', 'failed', null, now() - interval '3 hours', now() - interval '3 hours', 0, 1),
			 ('old', 'completed', null, now() - interval '48 hours', now() - interval '47 hours', 5, 4),
			 ('old-failed', 'failed', null, now() - interval '48 hours', now() - interval '48 hours', 0, 2)`,
		);
		const [out] = await runKeyNode(
			{ operation: 'stats', windowHours: 72, options: { schemaName: db.schema, tableName: 'stats_table' } },
			{ items: [{ json: {} }, { json: {} }] },
		);
		expect(out).toHaveLength(1);
		expect(out[0].json).toMatchObject({
			windowHours: 72,
			total: 6,
			newInWindow: 6,
			duplicatesInWindow: 9,
			reclaimsInWindow: 5,
			failedInWindow: 2,
		});
		expect(out[0].pairedItem).toEqual([{ item: 0 }, { item: 1 }]);
	});

	it('through the node: the Idempotent Webhook deliveries of the table, per answer, as answersInWindow', async () => {
		const store = new PostgresKeyStore(db.pool, { schema: db.schema, table: 'answers_table', createTable: true });
		for (const answer of ['duplicate', 'duplicate', 'invalid_signature', 'key_store_unavailable'] as const) await store.countAnswer(answer);
		const [out] = await runKeyNode(
			{ operation: 'stats', windowHours: 24, options: { schemaName: db.schema, tableName: 'answers_table' } },
			{ items: [{ json: {} }] },
		);
		expect(out[0].json).toMatchObject({
			windowHours: 24,
			total: 0,
			answersInWindow: { new: 0, duplicate: 2, in_progress: 0, invalid_signature: 1, key_refused: 0, key_store_unavailable: 1 },
		});
	});
});

describe('List Keys: a page is bounded in bytes, not only in keys', () => {
	it('1000 keys of large payloads and responses: each page stays under MAX_LIST_PAGE_BYTES, the cursor goes on, and every key comes once', async () => {
		const big = 'records_heavy';
		await new PostgresKeyStore(db.pool, { schema: db.schema, table: big, createTable: true }).createTable();
		// 40 failed keys: 30 with a 1 MB payload, every third of them with a 1 MB response too, 10 light ones.
		await db.pool.query(
			`insert into ${db.schema}.${big} (key, status, payload, response)
			 select 'heavy:' || lpad(i::text, 2, '0'), 'failed',
			        case when i <= 30 then jsonb_build_object('blob', repeat('p', 1000000)) end,
			        case when i % 3 = 0 then jsonb_build_object('blob', repeat('r', 1000000)) end
			 from generate_series(1, 40) i`,
		);
		await db.pool.query(`update ${db.schema}.${big} set payload_bytes = octet_length(payload::text) where payload is not null`);
		const heavyOptions = { schemaName: db.schema, tableName: big };

		const seen: string[] = [];
		const pageSizes: number[] = [];
		let afterKey = '';
		for (let pageNumber = 0; pageNumber < 20 && afterKey !== null; pageNumber++) {
			const [out] = await runKeyNode(
				{ operation: 'listKeys', limit: MAX_LIST_PAGE_SIZE, afterKey, listFilters: { status: 'replayable' }, options: heavyOptions },
				{ items: [{ json: {} }] },
			);
			const bytes = out.reduce(
				(sum, item) => sum + JSON.stringify(item.json.payload).length + JSON.stringify(item.json.response).length,
				0,
			);
			expect(bytes).toBeLessThanOrEqual(MAX_LIST_PAGE_BYTES);
			pageSizes.push(out.length);
			seen.push(...out.map((item) => String(item.json.key)));
			afterKey = out.length === 0 ? (null as never) : (out[out.length - 1].json.nextPageAfterKey as string);
		}
		expect(seen).toEqual(Array.from({ length: 40 }, (_, index) => `heavy:${String(index + 1).padStart(2, '0')}`));
		// 30 MB of payloads and 13 MB of responses cannot fit one 16 MB page.
		expect(pageSizes.length).toBeGreaterThanOrEqual(3);
		expect(pageSizes.every((size) => size > 0)).toBe(true);
	});
});
