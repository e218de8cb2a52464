import type { INodeExecutionData } from 'n8n-workflow';

import { postgresSchemaFixture } from '../support/database';
import { webhookItem } from '../support/fakeExecuteFunctions';
import { idempotencyOf, runKeyNode, runReserve } from '../support/nodes';

/*
 * Store Payload with numbers JavaScript rounds, on real Postgres: a webhook body whose amount is
 * 12345678901234567890 (JSON.parse gives 12345678901234567000) is stored with the sender's digits
 * when the raw body is there, and Get Key, List Keys and Claim for Replay hand it back as the exact
 * digit string, so a replayed business step writes what the provider sent. Rows stored before
 * (already rounded) come back as they always did. Adversarial bodies each have a defined outcome.
 */

const db = postgresSchemaFixture('exact');

const TABLE = 'exact_payload_events';
const BIG = '12345678901234567890';

const tableOptions = () => ({ schemaName: db.schema, tableName: TABLE, createTable: true });

/** A Webhook node's item for this raw text: `body` as n8n parses it (JSON.parse), the bytes in binary `data`. */
function rawWebhookItem(raw: string | Buffer, body: unknown = JSON.parse(raw.toString())): INodeExecutionData {
	return webhookItem(body, {}, raw);
}

async function reserve(items: INodeExecutionData[], options: Record<string, unknown> = {}) {
	return await runReserve(
		{ mode: 'lease', leaseSeconds: 60, options: { ...tableOptions(), storePayload: true, ...options } },
		{ items, executionId: 'exec-exact' },
	);
}

/** The stored payload as Postgres prints it, and its size column. */
async function storedText(key: string) {
	const { rows } = await db.pool.query(`select payload::text as payload, payload_bytes from ${db.schema}.${TABLE} where key = $1`, [key]);
	return rows[0] as { payload: string | null; payload_bytes: number | null } | undefined;
}

async function markFailed(items: INodeExecutionData[]) {
	const [done] = await runKeyNode(
		{ operation: 'fail', source: 'item', errorMessage: 'business step failed', options: tableOptions() },
		{ items },
	);
	expect(done.map((item) => idempotencyOf(item).applied)).toEqual(items.map(() => true));
}

async function claim(keys: string[]) {
	return await runKeyNode(
		{
			operation: 'claimForReplay',
			replayKey: (index: number) => keys[index],
			leaseSeconds: 300,
			retentionDays: 30,
			options: tableOptions(),
		},
		{ items: keys.map((key) => ({ json: { key } })) },
	);
}

describe('an integer beyond 2^53 in a stored payload', () => {
	const raw = `{"id":"evt_big_amount","type":"charge.succeeded","data":{"object":{"amount":${BIG},"currency":"eur","small":42,"ratio":0.1}}}`;

	it('JSON.parse, which gives the item its body, rounds it (why the raw body is needed)', () => {
		expect(String((JSON.parse(raw) as { data: { object: { amount: number } } }).data.object.amount)).toBe('12345678901234567000');
	});

	it('is stored with the digits the sender wrote, and the size is of the text stored', async () => {
		const [fresh] = await reserve([rawWebhookItem(raw)]);
		expect(idempotencyOf(fresh[0])).toMatchObject({
			key: 'evt:evt_big_amount',
			isNew: true,
			payloadStored: true,
			payloadBytes: Buffer.byteLength(raw),
		});
		expect(idempotencyOf(fresh[0])).not.toHaveProperty('warnings');
		const { rows } = await db.pool.query(
			`select payload #>> '{data,object,amount}' as amount, payload #> '{data,object,small}' as small from ${db.schema}.${TABLE} where key = $1`,
			['evt:evt_big_amount'],
		);
		expect(rows[0]).toEqual({ amount: BIG, small: 42 });
	});

	it('Get Key and List Keys give it as a string of its exact digits; numbers JavaScript holds stay numbers', async () => {
		const [found] = await runKeyNode(
			{ operation: 'getKey', lookupKey: 'evt:evt_big_amount', options: tableOptions() },
			{ items: [{ json: {} }] },
		);
		expect(found[0].json.payload).toEqual({
			id: 'evt_big_amount',
			type: 'charge.succeeded',
			data: { object: { amount: BIG, currency: 'eur', small: 42, ratio: 0.1 } },
		});
		const [listed] = await runKeyNode(
			{ operation: 'listKeys', limit: 10, afterKey: '', listFilters: { keyPrefix: 'evt:evt_big_amount' }, options: tableOptions() },
			{ items: [{ json: {} }] },
		);
		expect(listed.map((item) => (item.json.payload as { data: { object: { amount: unknown } } }).data.object.amount)).toEqual([BIG]);
	});

	it('Claim for Replay puts it in body as the exact digit string: the replayed business step gets what the provider sent', async () => {
		const replayRaw = raw.replace('evt_big_amount', 'evt_big_replay');
		const [first] = await reserve([rawWebhookItem(replayRaw)]);
		await markFailed(first); // the business step failed: the webhook template's Mark Failed

		const [claimed, notClaimable] = await claim(['evt:evt_big_replay']);

		expect(notClaimable).toEqual([]);
		expect(claimed[0].json.body).toEqual({
			id: 'evt_big_replay',
			type: 'charge.succeeded',
			data: { object: { amount: BIG, currency: 'eur', small: 42, ratio: 0.1 } },
		});
		expect(claimed[0].json.payload).toEqual(claimed[0].json.body);
	});
});

describe('rows stored before (numbers already rounded by JavaScript)', () => {
	it('come back exactly as they always did: the rounded value, as a number', async () => {
		// What Store Payload wrote before it read the raw body: JSON.stringify of the parsed body.
		await db.pool.query(
			`insert into ${db.schema}.${TABLE} (key, status, attempts, owner_token, payload, payload_bytes, expires_at)
			 values ('evt:evt_stored_before', 'failed', 1, gen_random_uuid(), $1::jsonb, 10, now() + interval '1 hour')`,
			[JSON.stringify({ id: 'evt_stored_before', amount: JSON.parse(BIG) as number })],
		);
		expect((await storedText('evt:evt_stored_before'))?.payload).toBe('{"id": "evt_stored_before", "amount": 12345678901234567000}');

		const [claimed] = await claim(['evt:evt_stored_before']);

		expect(claimed[0].json.body).toEqual({ id: 'evt_stored_before', amount: 12345678901234567000 });
		expect(typeof (claimed[0].json.body as { amount: unknown }).amount).toBe('number');
	});
});

describe('adversarial bodies: each has a defined outcome', () => {
	it('NUL (\\u0000, refused by jsonb) beside a big integer: the NUL is replaced with U+FFFD (warning), the integer kept exactly', async () => {
		const raw = `{"id":"evt_exact_nul","note":"a\\u0000b","amount":${BIG}}`;
		const [fresh] = await reserve([rawWebhookItem(raw)]);
		expect(idempotencyOf(fresh[0])).toMatchObject({ isNew: true, payloadStored: true });
		expect(idempotencyOf(fresh[0]).warnings).toEqual([expect.stringMatching(/NUL characters or broken Unicode/)]);
		expect((await storedText('evt:evt_exact_nul'))?.payload).toBe(`{"id": "evt_exact_nul", "note": "a\uFFFDb", "amount": ${BIG}}`);
	});

	it('a lone surrogate (refused by jsonb), in a value and in a member name: replaced with U+FFFD (warning), the integer kept exactly', async () => {
		const raw = `{"id":"evt_exact_lone","note":"\\ud800","\\udc00":1,"amount":${BIG}}`;
		const [fresh] = await reserve([rawWebhookItem(raw)]);
		expect(idempotencyOf(fresh[0])).toMatchObject({ isNew: true, payloadStored: true });
		expect(idempotencyOf(fresh[0]).warnings).toEqual([expect.stringMatching(/lone surrogates/)]);
		expect(JSON.parse((await storedText('evt:evt_exact_lone'))!.payload!)).toEqual({
			id: 'evt_exact_lone',
			note: '\uFFFD',
			'\uFFFD': 1,
			amount: 12345678901234567000,
		});
		expect((await storedText('evt:evt_exact_lone'))?.payload).toContain(`"amount": ${BIG}`);
	});

	it('a 10 MB body full of big integers: not stored (over Max Payload Size, found from its numbers before the rest is built), the key reserved', async () => {
		const numbers = Array.from({ length: 500_000 }, () => BIG).join(',');
		const raw = `{"id":"evt_exact_10mb","values":[${numbers}]}`;
		expect(raw.length).toBeGreaterThan(10 * 1024 * 1024);
		const started = Date.now();
		const [fresh, , notReserved] = await reserve([rawWebhookItem(raw)], { maxPayloadKb: 1024 });
		expect(Date.now() - started).toBeLessThan(20_000);
		expect(notReserved).toEqual([]);
		expect(idempotencyOf(fresh[0])).toMatchObject({ isNew: true, payloadStored: false });
		expect(idempotencyOf(fresh[0]).payloadNotStoredReason).toMatch(/over the 1048576-byte limit \(Max Payload Size\)/);
		expect(await storedText('evt:evt_exact_10mb')).toMatchObject({ payload: null });
	});

	it('a number beyond what Postgres numeric holds (1e200000; JSON.parse gives Infinity): not stored, with the reason, the key reserved', async () => {
		const raw = '{"id":"evt_exact_huge","amount":1e200000}';
		const [fresh] = await reserve([rawWebhookItem(raw)]);
		expect(idempotencyOf(fresh[0])).toMatchObject({ isNew: true, payloadStored: false, payloadBytes: null });
		expect(idempotencyOf(fresh[0]).payloadNotStoredReason).toMatch(/"1e200000" has more digits than Postgres numeric holds/);
		expect(await storedText('evt:evt_exact_huge')).toEqual({ payload: null, payload_bytes: null });
	});

	it('numbers in exponent form or with more decimals than a double: stored with their exact value, read back as plain digit strings', async () => {
		const raw =
			'{"id":"evt_exact_forms","large":1e400,"precise":0.1000000000000000055511151231257827,"scaled":1.2345678901234567890e25,"plain":1e2}';
		const [fresh] = await reserve([rawWebhookItem(raw)]);
		expect(idempotencyOf(fresh[0])).toMatchObject({ isNew: true, payloadStored: true });
		const [found] = await runKeyNode(
			{ operation: 'getKey', lookupKey: 'evt:evt_exact_forms', options: tableOptions() },
			{ items: [{ json: {} }] },
		);
		expect(found[0].json.payload).toEqual({
			id: 'evt_exact_forms',
			large: `1${'0'.repeat(400)}`,
			precise: '0.1000000000000000055511151231257827',
			scaled: '12345678901234567890000000',
			plain: 100,
		});
	});

	it('a body that is not JSON (a form post): the parsed body is stored as it is, no warning', async () => {
		const raw = `amount=${BIG}&id=evt_exact_form`;
		const [fresh] = await reserve([rawWebhookItem(raw, { amount: BIG, id: 'evt_exact_form' })]);
		expect(idempotencyOf(fresh[0])).toMatchObject({ key: 'evt:evt_exact_form', isNew: true, payloadStored: true });
		expect(idempotencyOf(fresh[0])).not.toHaveProperty('warnings');
		expect((await storedText('evt:evt_exact_form'))?.payload).toBe(`{"id": "evt_exact_form", "amount": "${BIG}"}`);
	});

	it('raw bytes that are not UTF-8: the parsed body is stored as it is', async () => {
		const raw = Buffer.concat([Buffer.from(`{"id":"evt_exact_latin1","amount":${BIG},"name":"`), Buffer.from([0xe9]), Buffer.from('"}')]);
		const body = { id: 'evt_exact_latin1', amount: JSON.parse(BIG) as number, name: '\uFFFD' };
		const [fresh] = await reserve([rawWebhookItem(raw, body)]);
		expect(idempotencyOf(fresh[0])).toMatchObject({ isNew: true, payloadStored: true });
		expect(JSON.parse((await storedText('evt:evt_exact_latin1'))!.payload!)).toEqual(body);
	});

	// Every bodiless request hashes alike: one key for all would answer each later event as a copy of the first.
	it('an empty body: refused (no body to key on), nothing reserved or stored', async () => {
		await expect(reserve([rawWebhookItem('', {})])).rejects.toThrow(/the request has no body/);
		expect(await storedText('sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855')).toBeUndefined();
	});

	it('a body a node before Reserve changed: stored as the item has it (the numbers rounded), with a warning saying so', async () => {
		const raw = `{"id":"evt_exact_changed","amount":${BIG}}`;
		const body = { ...(JSON.parse(raw) as object), enriched: true };
		const [fresh] = await reserve([rawWebhookItem(raw, body)]);
		expect(idempotencyOf(fresh[0])).toMatchObject({ isNew: true, payloadStored: true });
		expect(idempotencyOf(fresh[0]).warnings).toEqual([expect.stringMatching(/no longer the raw request body's JSON/)]);
		expect((await storedText('evt:evt_exact_changed'))?.payload).toBe(
			'{"id": "evt_exact_changed", "amount": 12345678901234567000, "enriched": true}',
		);
	});

	it('an item that is not a webhook request, with a binary "data" of its own: the item is stored, its file is not read as its body', async () => {
		const item: INodeExecutionData = {
			json: { id: 'evt_exact_file', amount: 5 },
			binary: { data: { data: Buffer.from(`{"amount":${BIG}}`).toString('base64'), mimeType: 'application/json' } },
		};
		const [fresh] = await reserve([item]);
		expect(idempotencyOf(fresh[0])).toMatchObject({ key: 'evt:evt_exact_file', isNew: true, payloadStored: true });
		expect(idempotencyOf(fresh[0])).not.toHaveProperty('warnings');
		expect((await storedText('evt:evt_exact_file'))?.payload).toBe('{"id": "evt_exact_file", "amount": 5}');
	});
});
