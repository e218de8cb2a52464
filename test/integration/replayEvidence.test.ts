import type { INodeExecutionData } from 'n8n-workflow';
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { PostgresKeyStore } from '../../lib/store/postgres/stores';
import { MAX_BATCH_PAYLOAD_BYTES } from '../../lib/evidence/replayEvidence';
import { KEYS_MIGRATIONS, versionStamp } from '../../lib/store/postgres/migrations';
import { POSTGRES_SQL_DIR } from '../../lib/store/postgres/statements';
import type { ReplayEvidence, ReservationRequest, ReserveOptions } from '../../lib/types';
import { freshSchema, postgresSchemaFixture } from '../support/database';
import { webhookItem } from '../support/fakeExecuteFunctions';
import { idempotencyOf, runKeyNode, runReserve } from '../support/nodes';

/*
 * Replay evidence (schema version 3): Reserve's Store Payload, Source and Correlation
 * ID options on real Postgres, what Get Key returns, what a duplicate and a take-over keep, and the
 * upgrade of a version 2 table that already holds keys.
 */

const db = postgresSchemaFixture('evidence');

const TABLE = 'evidence_events';

const tableOptions = () => ({ schemaName: db.schema, tableName: TABLE, createTable: true });

/** The evidence columns of one stored key, as Postgres holds them. */
async function storedEvidence(key: string, table = TABLE) {
	const { rows } = await db.pool.query(`select payload, payload_bytes, source, correlation_id from ${db.schema}.${table} where key = $1`, [
		key,
	]);
	return rows[0] as { payload: unknown; payload_bytes: number | null; source: string | null; correlation_id: string | null } | undefined;
}

/** Reserve (permanent) with the given options, one webhook item; its New, Duplicate and Not Reserved outputs. */
async function reserve(
	items: INodeExecutionData[],
	options: Record<string, unknown>,
	extra: Record<string, unknown> = {},
	executionId = 'exec-evidence',
) {
	return await runReserve({ ...extra, options: { ...tableOptions(), ...options } }, { items, executionId });
}

describe('Store Payload', () => {
	it('is off by default: nothing is stored and the item says nothing about a payload', async () => {
		const [fresh] = await reserve([webhookItem({ id: 'evt_off', email: 'someone@example.com' })], {});
		expect(idempotencyOf(fresh[0])).toMatchObject({ key: 'evt:evt_off', isNew: true });
		expect(idempotencyOf(fresh[0])).not.toHaveProperty('payloadStored');
		expect(await storedEvidence('evt:evt_off')).toEqual({ payload: null, payload_bytes: null, source: null, correlation_id: null });
	});

	it('on: the webhook body is stored as jsonb, and Get Key returns it with its size', async () => {
		const body = { id: 'evt_on', type: 'invoice.paid', data: { object: { amount: 1999, currency: 'eur', tags: ['a', 'é'] } } };
		const [fresh] = await reserve([webhookItem(body)], { storePayload: true });
		const bytes = Buffer.byteLength(JSON.stringify(body), 'utf8');
		expect(idempotencyOf(fresh[0])).toMatchObject({ isNew: true, payloadStored: true, payloadBytes: bytes });
		expect(idempotencyOf(fresh[0])).not.toHaveProperty('payloadNotStoredReason');
		expect(await storedEvidence('evt:evt_on')).toMatchObject({ payload: body, payload_bytes: bytes });

		const [found] = await runKeyNode({ operation: 'getKey', lookupKey: 'evt:evt_on', options: tableOptions() }, { items: [{ json: {} }] });
		expect(found[0].json).toMatchObject({ found: true, payload: body, payloadStored: true, payloadBytes: bytes });
	});

	it('over Max Payload Size: the key is still reserved, the payload is not stored, and the item says why', async () => {
		const body = { id: 'evt_big', blob: 'x'.repeat(2000) };
		const [fresh, duplicate, notReserved] = await reserve([webhookItem(body)], { storePayload: true, maxPayloadKb: 1 });
		expect(notReserved).toEqual([]);
		expect(duplicate).toEqual([]);
		const bytes = Buffer.byteLength(JSON.stringify(body), 'utf8');
		expect(idempotencyOf(fresh[0])).toMatchObject({ isNew: true, payloadStored: false, payloadBytes: bytes });
		expect(idempotencyOf(fresh[0]).payloadNotStoredReason).toMatch(
			/over the 1024-byte limit \(Max Payload Size\)\. The key was reserved without it\./,
		);
		expect(await storedEvidence('evt:evt_big')).toMatchObject({ payload: null, payload_bytes: bytes });

		const [found] = await runKeyNode({ operation: 'getKey', lookupKey: 'evt:evt_big', options: tableOptions() }, { items: [{ json: {} }] });
		expect(found[0].json).toMatchObject({ found: true, status: 'completed', payload: null, payloadStored: false, payloadBytes: bytes });
	});

	it('a payload of exactly the cap is stored (the limit is inclusive)', async () => {
		const skeleton = JSON.stringify({ id: 'evt_edge', pad: '' });
		const body = { id: 'evt_edge', pad: 'y'.repeat(1024 - skeleton.length) };
		expect(Buffer.byteLength(JSON.stringify(body))).toBe(1024);
		const [fresh] = await reserve([webhookItem(body)], { storePayload: true, maxPayloadKb: 1 });
		expect(idempotencyOf(fresh[0])).toMatchObject({ payloadStored: true, payloadBytes: 1024 });
	});

	it('NUL characters and lone surrogates (which jsonb refuses) are repaired, stored, and the item says so', async () => {
		const body = { id: 'evt_nul', note: 'a\u0000b', broken: 'x\ud800y', ['key\u0000']: 'low\udc00' };
		const [fresh, , notReserved] = await reserve([webhookItem(body)], { storePayload: true });
		expect(notReserved).toEqual([]);
		expect(idempotencyOf(fresh[0])).toMatchObject({ isNew: true, payloadStored: true });
		expect(idempotencyOf(fresh[0]).warnings).toEqual([
			'The stored payload had NUL characters or broken Unicode (lone surrogates) in its text; they were replaced with U+FFFD (�).',
		]);
		expect((await storedEvidence('evt:evt_nul'))?.payload).toEqual({
			id: 'evt_nul',
			note: 'a\uFFFDb',
			broken: 'x\uFFFDy',
			'key\uFFFD': 'low\uFFFD',
		});
	});

	it('a body nested 100,000 levels deep: the key is reserved, the payload is not stored, and the reason says why', async () => {
		let deep: unknown = 'leaf';
		for (let level = 0; level < 100_000; level++) deep = [deep];
		const [fresh, , notReserved] = await reserve([webhookItem({ id: 'evt_deep', deep }, {}, '{"id":"evt_deep"}')], { storePayload: true });
		expect(notReserved).toEqual([]);
		expect(idempotencyOf(fresh[0])).toMatchObject({ key: 'evt:evt_deep', isNew: true, payloadStored: false, payloadBytes: null });
		expect(idempotencyOf(fresh[0]).payloadNotStoredReason).toMatch(/nested too deeply/);
		expect(await storedEvidence('evt:evt_deep')).toMatchObject({ payload: null, payload_bytes: null });
	});

	it('a batch whose payloads pass MAX_BATCH_PAYLOAD_BYTES: every key is reserved, the payloads past it are not stored, and those items say why', async () => {
		// 40 items of 1 MB (Max Payload Size 1024 KB each) would be one 40 MB statement; 1000 would not be sent at all.
		const blob = 'b'.repeat(1_000_000);
		const items = Array.from({ length: 40 }, (_, index) => ({ json: { id: `evt_batch_${String(index).padStart(2, '0')}`, blob } }));
		const [fresh, duplicate, notReserved] = await reserve(items, { storePayload: true, maxPayloadKb: 1024 });
		expect([duplicate, notReserved]).toEqual([[], []]);
		expect(fresh).toHaveLength(40);
		const stored = fresh.filter((item) => idempotencyOf(item).payloadStored === true);
		const left = fresh.filter((item) => idempotencyOf(item).payloadStored === false);
		const bytesEach = Number(idempotencyOf(fresh[0]).payloadBytes);
		expect(stored).toHaveLength(Math.floor(MAX_BATCH_PAYLOAD_BYTES / bytesEach));
		expect(left.length).toBeGreaterThan(0);
		expect(idempotencyOf(left[0]).payloadNotStoredReason).toMatch(/the payloads of this run's items passed 32 MB/);
		const { rows } = await db.pool.query(
			`select count(*)::int as keys, count(payload)::int as payloads, sum(payload_bytes)::bigint as bytes from ${db.schema}.${TABLE} where key like 'evt:evt_batch_%'`,
		);
		expect(rows[0]).toEqual({ keys: 40, payloads: stored.length, bytes: String(40 * bytesEach) });
	});

	it('an item with no webhook body (not from a Webhook node): the whole item is stored, as the key is derived from it', async () => {
		const item = { json: { id: 'evt_plain', amount: 5, customer: { id: 'cus_1' } } };
		const [fresh] = await reserve([item], { storePayload: true });
		expect(idempotencyOf(fresh[0])).toMatchObject({ key: 'evt:evt_plain', payloadStored: true });
		expect((await storedEvidence('evt:evt_plain'))?.payload).toEqual(item.json);
	});
});

describe('Source', () => {
	it.each([
		['the Source option, as given', { source: 'stripe-live' }, {}, 'src_given', 'stripe-live'],
		['empty: the Provider of a Provider Preset key', {}, { keySource: 'preset', preset: 'stripe' }, 'src_preset', 'stripe'],
		['empty: the Scope', { scope: 'billing' }, {}, 'src_scope', 'billing'],
		['empty, with neither: nothing', {}, {}, 'src_none', null],
		['the Source option wins over the Scope', { scope: 'billing', source: 'shopify' }, {}, 'src_both', 'shopify'],
	])('%s', async (_what, options, extra, id, expected) => {
		const [fresh] = await reserve([webhookItem({ id, object: 'event' })], options, extra);
		const key = String(idempotencyOf(fresh[0]).key);
		expect((await storedEvidence(key))?.source).toBe(expected);
		const [found] = await runKeyNode({ operation: 'getKey', lookupKey: key, options: tableOptions() }, { items: [{ json: {} }] });
		expect(found[0].json.source).toBe(expected);
	});

	it('a NUL in the source is repaired and a source over 255 characters is cut, with warnings; the key is reserved', async () => {
		const [fresh] = await reserve([webhookItem({ id: 'src_bad' })], { source: `a\u0000${'s'.repeat(400)}` });
		expect(idempotencyOf(fresh[0]).isNew).toBe(true);
		const stored = (await storedEvidence('evt:src_bad'))?.source;
		expect(stored).toBe(`a\uFFFD${'s'.repeat(253)}`);
		expect(idempotencyOf(fresh[0]).warnings).toEqual([
			'The source had NUL characters or broken Unicode (lone surrogates); they were replaced with U+FFFD (�).',
			'The source was 402 characters long; only its first 255 were stored.',
		]);
	});
});

describe('Correlation ID', () => {
	const fromHeader = (header = 'x-request-id') => ({ correlationId: 'header', correlationHeader: header });

	it('from a request header (any case), stored, on the item, and returned by Get Key', async () => {
		const [fresh] = await reserve([webhookItem({ id: 'cor_header' }, { 'X-Request-Id': 'req-123' })], fromHeader());
		expect(idempotencyOf(fresh[0]).correlationId).toBe('req-123');
		expect((await storedEvidence('evt:cor_header'))?.correlation_id).toBe('req-123');
		const [found] = await runKeyNode(
			{ operation: 'getKey', lookupKey: 'evt:cor_header', options: tableOptions() },
			{ items: [{ json: {} }] },
		);
		expect(found[0].json.correlationId).toBe('req-123');
	});

	it('the default header is traceparent', async () => {
		const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
		const [fresh] = await reserve([webhookItem({ id: 'cor_trace' }, { traceparent })], { correlationId: 'header' });
		expect((await storedEvidence('evt:cor_trace'))?.correlation_id).toBe(traceparent);
		expect(idempotencyOf(fresh[0]).warnings).toBeUndefined();
	});

	it('the header absent: the n8n execution id', async () => {
		await reserve([webhookItem({ id: 'cor_absent' })], fromHeader(), {}, 'exec-absent');
		expect((await storedEvidence('evt:cor_absent'))?.correlation_id).toBe('exec-absent');
	});

	it('from the execution id', async () => {
		const [fresh] = await reserve(
			[webhookItem({ id: 'cor_exec' }, { 'x-request-id': 'ignored' })],
			{ correlationId: 'executionId' },
			{},
			'exec-77',
		);
		expect(idempotencyOf(fresh[0]).correlationId).toBe('exec-77');
		expect((await storedEvidence('evt:cor_exec'))?.correlation_id).toBe('exec-77');
	});

	it.each([
		['as an array of two values', ['req-a', 'req-b']],
		["joined with ', ' (how Node's HTTP parser delivers a repeated header)", 'req-a, req-b'],
	])(
		'a header sent twice with different values %s: not guessed at; the execution id, with a warning; the key is reserved',
		async (_how, value) => {
			const item = webhookItem({ id: `cor_twice_${Array.isArray(value) ? 'array' : 'joined'}` });
			(item.json.headers as Record<string, unknown>)['x-request-id'] = value;
			const [fresh] = await reserve([item], fromHeader(), {}, 'exec-twice');
			expect(idempotencyOf(fresh[0])).toMatchObject({ isNew: true, correlationId: 'exec-twice' });
			expect(idempotencyOf(fresh[0]).warnings).toEqual([
				'The header "x-request-id" was sent more than once with different values; the correlation id is the n8n execution id instead.',
			]);
			expect((await storedEvidence(String(idempotencyOf(fresh[0]).key)))?.correlation_id).toBe('exec-twice');
		},
	);

	it('the same value sent twice counts once', async () => {
		const item = webhookItem({ id: 'cor_same' });
		(item.json.headers as Record<string, unknown>)['x-request-id'] = ['req-same', 'req-same'];
		await reserve([item], fromHeader());
		expect((await storedEvidence('evt:cor_same'))?.correlation_id).toBe('req-same');
	});

	it('control characters (a newline, an escape) in the header are replaced, with a warning: the correlation id stays one line', async () => {
		// An item not from a Webhook node: no HTTP parser refused the newline.
		const item = { json: { headers: { 'x-request-id': 'req-1\r\nX-Forged: yes\u001b[31m\u0085' }, body: { id: 'cor_ctl' } } };
		const [fresh] = await reserve([item], fromHeader());
		expect(idempotencyOf(fresh[0]).isNew).toBe(true);
		const expected = 'req-1\uFFFD\uFFFDX-Forged: yes\uFFFD[31m\uFFFD';
		expect((await storedEvidence('evt:cor_ctl'))?.correlation_id).toBe(expected);
		expect(idempotencyOf(fresh[0]).correlationId).toBe(expected);
		expect(idempotencyOf(fresh[0]).warnings).toEqual([
			'The correlation id had control characters (a newline, a tab, an escape); they were replaced with U+FFFD (�).',
		]);
	});

	it('a huge header value (100,000 characters) is cut to 255, with a warning; the key is reserved', async () => {
		const [fresh] = await reserve([webhookItem({ id: 'cor_huge' }, { 'x-request-id': 'r'.repeat(100_000) })], fromHeader());
		expect(idempotencyOf(fresh[0]).isNew).toBe(true);
		expect((await storedEvidence('evt:cor_huge'))?.correlation_id).toBe('r'.repeat(255));
		expect(idempotencyOf(fresh[0]).correlationId).toBe('r'.repeat(255));
		expect(idempotencyOf(fresh[0]).warnings).toEqual(['The correlation id was 100000 characters long; only its first 255 were stored.']);
	});
});

describe('a redelivery', () => {
	const options = { storePayload: true, correlationId: 'header', correlationHeader: 'x-request-id', source: 'stripe' };

	it("a duplicate keeps the first delivery's evidence; its item says it stored nothing and carries its own correlation id", async () => {
		const first = { id: 'evt_dup', version: 'first' };
		await reserve([webhookItem(first, { 'x-request-id': 'req-first' })], options);
		const [fresh, duplicate] = await reserve([webhookItem({ id: 'evt_dup', version: 'second' }, { 'x-request-id': 'req-second' })], {
			...options,
			source: 'other',
		});
		expect(fresh).toEqual([]);
		expect(idempotencyOf(duplicate[0])).toMatchObject({
			outcome: 'duplicate',
			payloadStored: false,
			payloadNotStoredReason: "The key was already reserved (a duplicate or in progress): the first delivery's evidence is kept.",
			correlationId: 'req-second',
		});
		expect(await storedEvidence('evt:evt_dup')).toEqual({
			payload: first,
			payload_bytes: Buffer.byteLength(JSON.stringify(first)),
			source: 'stripe',
			correlation_id: 'req-first',
		});
	});

	it('a repeat within one batch stores the first item’s evidence', async () => {
		await reserve(
			[
				webhookItem({ id: 'evt_batch', n: 1 }, { 'x-request-id': 'req-1' }),
				webhookItem({ id: 'evt_batch', n: 2 }, { 'x-request-id': 'req-2' }),
			],
			options,
		);
		expect(await storedEvidence('evt:evt_batch')).toMatchObject({ payload: { id: 'evt_batch', n: 1 }, correlation_id: 'req-1' });
	});
});

describe('a take-over and a retention end (store)', () => {
	const lease: ReserveOptions = { mode: 'lease', leaseSeconds: 60, retentionSeconds: 86_400, executionId: 'e' };
	let store: PostgresKeyStore;

	beforeAll(async () => {
		store = new PostgresKeyStore(db.pool, { schema: db.schema, table: 'takeover_events', createTable: true });
		await store.createTable();
	});

	const evidence = (payload: unknown, source: string | null, correlationId: string | null): ReplayEvidence => ({
		payloadJson: payload === undefined ? null : JSON.stringify(payload),
		payloadBytes: payload === undefined ? null : Buffer.byteLength(JSON.stringify(payload)),
		source,
		correlationId,
	});
	const request = (key: string, given: ReplayEvidence): ReservationRequest => ({
		key,
		keySource: 'custom',
		payloadHash: null,
		evidence: given,
	});
	const failed = async (key: string, given: ReplayEvidence) => {
		const [result] = await store.reserve([request(key, given)], lease);
		await store.fail([{ key, ownerToken: String(result.ownerToken), error: 'boom' }]);
	};

	it('after Mark Failed, a retry without evidence keeps the old payload, source and correlation id', async () => {
		await failed('to:keep', evidence({ v: 1 }, 'stripe', 'req-1'));
		const [retry] = await store.reserve([request('to:keep', evidence(undefined, null, null))], lease);
		expect(retry).toMatchObject({ outcome: 'new', reclaimed: true });
		expect(await storedEvidence('to:keep', 'takeover_events')).toEqual({
			payload: { v: 1 },
			payload_bytes: 7,
			source: 'stripe',
			correlation_id: 'req-1',
		});
	});

	it('after Mark Failed, a retry with evidence replaces it (the run that owns the key now)', async () => {
		await failed('to:replace', evidence({ v: 1 }, 'stripe', 'req-1'));
		await store.reserve([request('to:replace', evidence({ v: 22 }, 'stripe2', 'req-2'))], lease);
		expect(await storedEvidence('to:replace', 'takeover_events')).toEqual({
			payload: { v: 22 },
			payload_bytes: 8,
			source: 'stripe2',
			correlation_id: 'req-2',
		});
	});

	it('a retry whose payload was over the cap keeps the old payload and its size', async () => {
		await failed('to:over', evidence({ v: 1 }, null, null));
		await store.reserve([request('to:over', { payloadJson: null, payloadBytes: 999_999, source: null, correlationId: null })], lease);
		expect(await storedEvidence('to:over', 'takeover_events')).toMatchObject({ payload: { v: 1 }, payload_bytes: 7 });
	});

	it('a lease that ran out is taken over the same way', async () => {
		await store.reserve([request('to:expired', evidence({ v: 1 }, 'stripe', 'req-1'))], lease);
		await db.pool.query(`update ${db.schema}.takeover_events set locked_until = now() - interval '1 second' where key = 'to:expired'`);
		const [retry] = await store.reserve([request('to:expired', evidence(undefined, null, 'req-2'))], lease);
		expect(retry).toMatchObject({ outcome: 'new', reclaimed: true });
		expect(await storedEvidence('to:expired', 'takeover_events')).toEqual({
			payload: { v: 1 },
			payload_bytes: 7,
			source: 'stripe',
			correlation_id: 'req-2',
		});
	});

	it('a key whose retention ended counts as absent: its old evidence is not carried over', async () => {
		await store.reserve([request('to:ended', evidence({ v: 1 }, 'stripe', 'req-1'))], { ...lease, mode: 'permanent' });
		await db.pool.query(`update ${db.schema}.takeover_events set expires_at = now() - interval '1 second' where key = 'to:ended'`);
		const [again] = await store.reserve([request('to:ended', evidence(undefined, null, null))], { ...lease, mode: 'permanent' });
		expect(again).toMatchObject({ outcome: 'new', reclaimed: false });
		expect(await storedEvidence('to:ended', 'takeover_events')).toEqual({
			payload: null,
			payload_bytes: null,
			source: null,
			correlation_id: null,
		});
	});
});

describe('bad evidence options', () => {
	it.each([
		[
			'Max Payload Size 0',
			{ storePayload: true, maxPayloadKb: 0 },
			/Max Payload Size \(KB\) must be a whole number from 1 to 1024; it is 0\./,
		],
		['Max Payload Size 1.5', { storePayload: true, maxPayloadKb: 1.5 }, /must be a whole number from 1 to 1024; it is 1\.5\./],
		['Max Payload Size over the bound', { storePayload: true, maxPayloadKb: 5000 }, /must be a whole number from 1 to 1024; it is 5000\./],
		[
			'Max Payload Size not a number',
			{ storePayload: true, maxPayloadKb: 'lots' },
			/must be a whole number from 1 to 1024; it is "lots"\./,
		],
		[
			'a Correlation Header that is no header name',
			{ correlationId: 'header', correlationHeader: 'x request id' },
			/Correlation Header must be a header name/,
		],
		['an empty Correlation Header', { correlationId: 'header', correlationHeader: '' }, /Correlation Header must be a header name/],
		['an unknown Correlation ID choice', { correlationId: 'sometimes' }, /Unknown Correlation ID choice "sometimes"/],
		[
			'Authorization as the Correlation Header (a credential)',
			{ correlationId: 'header', correlationHeader: 'Authorization' },
			/Correlation Header "authorization" may carry a signature or a credential/,
		],
		[
			'a signature header as the Correlation Header',
			{ correlationId: 'header', correlationHeader: 'Stripe-Signature' },
			/Correlation Header "stripe-signature" may carry a signature/,
		],
	])('%s: a NodeOperationError for the item, and nothing reserved', async (_what, options, message) => {
		const id = `bad_${Math.random().toString(36).slice(2)}`;
		const attempt = reserve([webhookItem({ id })], options);
		await expect(attempt).rejects.toMatchObject({
			name: 'NodeOperationError',
			message: expect.stringMatching(message),
			context: { itemIndex: 0 },
		});
		expect(await storedEvidence(`evt:${id}`)).toBeUndefined();
	});

	it('under Continue, the item leaves through Not Reserved with the message', async () => {
		const [fresh, duplicate, notReserved] = await runReserve(
			{ options: { ...tableOptions(), storePayload: true, maxPayloadKb: -3 } },
			{ items: [webhookItem({ id: 'bad_continue' })], continueOnFail: true },
		);
		expect([fresh, duplicate]).toEqual([[], []]);
		expect(notReserved).toEqual([
			{ json: { error: expect.stringMatching(/Max Payload Size \(KB\) must be a whole number/) }, pairedItem: { item: 0 } },
		]);
	});
});

describe('upgrading a version 2 table that holds keys', () => {
	const sqlFile = (file: string) => readFileSync(path.join(POSTGRES_SQL_DIR, file), 'utf8');

	it('every key and every value is kept, the evidence columns are empty, and the next reservation stores evidence', async () => {
		const upgradeSchema = await freshSchema(db.pool, 'v2to3');
		const client = await db.pool.connect();
		try {
			await client.query(`set search_path to ${upgradeSchema}`);
			for (const file of KEYS_MIGRATIONS.files.slice(0, 2)) await client.query(sqlFile(file));
			await client.query(`reset search_path`);
		} finally {
			client.release();
		}
		const table = `${upgradeSchema}.processed_events`;
		expect((await db.pool.query(`select obj_description(to_regclass($1), 'pg_class') as stamp`, [table])).rows[0].stamp).toBe(
			versionStamp('keys', 2),
		);
		await db.pool.query(
			`insert into ${table} (key, status, attempts, duplicate_count, locked_until, expires_at, owner_token, execution_id, key_source, response, last_error) values
			 ('v2:done', 'completed', 1, 4, null, now() + interval '1 day', null, 'e1', 'custom', '{"ok": true}', null),
			 ('v2:live', 'processing', 1, 0, now() + interval '1 hour', now() + interval '1 day', gen_random_uuid(), 'e2', 'custom', null, null),
			 ('v2:failed', 'failed', 2, 0, null, now() + interval '1 day', null, 'e3', 'custom', null, 'card declined')`,
		);
		const before = (await db.pool.query(`select to_jsonb(t) as row from ${table} t order by key`)).rows.map((row) => row.row);

		const store = new PostgresKeyStore(db.pool, { schema: upgradeSchema, table: 'processed_events', createTable: true });
		const results = await store.reserve(
			['v2:done', 'v2:live', 'v2:failed'].map((key) => ({
				key,
				keySource: 'custom',
				payloadHash: null,
				evidence: { payloadJson: '{"replayed": true}', payloadBytes: 18, source: 'stripe', correlationId: 'req-v3' },
			})),
			{ mode: 'lease', leaseSeconds: 60, retentionSeconds: 86_400 },
		);
		expect((await db.pool.query(`select obj_description(to_regclass($1), 'pg_class') as stamp`, [table])).rows[0].stamp).toBe(
			versionStamp('keys', KEYS_MIGRATIONS.files.length),
		);
		expect(results.map((result) => result.outcome)).toEqual(['duplicate', 'in_progress', 'new']);

		const after = (await db.pool.query(`select key, to_jsonb(t) as row, payload, source, correlation_id from ${table} t order by key`))
			.rows;
		// The untouched keys: every old value as it was; no evidence (a duplicate stores none).
		for (const key of ['v2:done', 'v2:live']) {
			const row = after.find((candidate) => candidate.key === key);
			const old = before.find((candidate) => candidate.key === key);
			// n8n_instance and effect_completed_at are version 4's columns, the inbox version 6's: empty on keys from before them.
			const {
				payload,
				payload_bytes,
				source,
				correlation_id,
				last_seen,
				duplicate_count,
				n8n_instance,
				effect_completed_at,
				inbox_owner,
				inbox_item,
				first_retry_ms,
				max_attempts,
				retry_until,
				next_attempt_at,
				dead_lettered_at,
				...kept
			} = row.row;
			const { last_seen: _oldLastSeen, duplicate_count: oldDuplicates, ...oldKept } = old;
			expect(kept).toEqual(oldKept);
			expect(duplicate_count).toBe(oldDuplicates + 1);
			expect([payload, payload_bytes, source, correlation_id]).toEqual([null, null, null, null]);
			expect([n8n_instance, effect_completed_at]).toEqual([null, null]);
			expect([inbox_owner, inbox_item, first_retry_ms, max_attempts, retry_until, next_attempt_at, dead_lettered_at]).toEqual(
				Array(7).fill(null),
			);
		}
		// The failed key was taken over by this reservation, which stored its evidence.
		expect(after.find((row) => row.key === 'v2:failed')).toMatchObject({
			payload: { replayed: true },
			source: 'stripe',
			correlation_id: 'req-v3',
		});
	});
});
