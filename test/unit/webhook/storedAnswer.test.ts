import { ANSWER_NOT_KEPT, MAX_STORED_ANSWER_BYTES, storedAnswer, withoutRequestSecrets } from '../../../lib/webhook/storedAnswer';

// The answer the Idempotent Webhook trigger keeps with a completed key and replays to every copy:
// the last node's first item, which often is the trigger's own item passed on.

const OWNER_TOKEN = '5441e7d4-ee3c-46a8-9a36-543f2aaf7be7';
const BASIC = `Basic ${Buffer.from('provider:s3cret-password').toString('base64')}`;
const request = {
	headers: {
		'content-type': 'application/json',
		authorization: BASIC,
		'x-api-key': 'key_live_abcdef123456',
		'stripe-signature': 't=1700000000,v1=abc123def456',
		'idempotency-key': 'evt_1',
	},
	query: { source: 'test', token: 'query-token-123456' },
	ownerTokens: [OWNER_TOKEN],
};
/** The trigger's item as a node that passes it on gives it. */
const triggerItem = {
	headers: request.headers,
	query: request.query,
	body: { id: 'evt_1', amount: 5 },
	idempotency: { key: 'evt:evt_1', ownerToken: OWNER_TOKEN, outcome: 'new' },
};

describe('storedAnswer', () => {
	it('keeps neither the request headers nor the idempotency object of the trigger item passed on', () => {
		expect(storedAnswer(triggerItem, request)).toEqual({ query: { source: 'test' }, body: { id: 'evt_1', amount: 5 } });
	});

	it('drops copies of the headers, the reservation and credential members at any depth, whatever their case', () => {
		const answer = {
			ok: true,
			request: { Headers: request.headers, nested: [{ rawHeaders: ['authorization', BASIC] }, { idempotency: triggerItem.idempotency }] },
			Owner_Token: OWNER_TOKEN,
			'Set-Cookie': 'sid=1',
			Authorization: 'anything',
			cookie: 'anything',
		};

		expect(storedAnswer(answer, request)).toEqual({ ok: true, request: { nested: [{}, {}] } });
	});

	it('drops any text that carries a credential of the request or an owner token, under whatever name', () => {
		const answer = {
			auth: BASIC,
			bearer: 'key_live_abcdef123456',
			quoted: `the header was ${BASIC}`,
			credential: BASIC.slice('Basic '.length),
			decoded: 'provider:s3cret-password',
			password: 's3cret-password',
			signature: 't=1700000000,v1=abc123def456',
			fromQuery: 'query-token-123456',
			token: `owner ${OWNER_TOKEN}`,
			list: ['kept', BASIC],
		};

		expect(storedAnswer(answer, request)).toEqual({ list: ['kept', null] });
	});

	it("drops the trigger's own configured secrets (signing secret, Header Auth value, Basic Auth password): raw, JSON-escaped, percent-encoded", () => {
		const signing = 'whsec_"rt/41+key';
		const configured = { ...request, ownSecrets: [signing, 'hk_value_0123456789', 'basic-pass-98765'] };
		const answer = {
			id: 'we_1',
			secret: signing,
			echoed: JSON.stringify({ secret: signing }),
			url: `https://example.test/hook?secret=${encodeURIComponent(signing)}`,
			headerAuth: 'hk_value_0123456789',
			password: 'basic-pass-98765',
			status: 'enabled',
		};
		expect(JSON.stringify(answer)).toContain('whsec_\\"rt/41+key');
		expect(answer.url).toContain('whsec_%22rt%2F41%2Bkey');

		expect(storedAnswer(answer, configured)).toEqual({ id: 'we_1', status: 'enabled' });
		// The same rule for a failure message quoting them.
		const message = `failed: ${answer.echoed} at ${answer.url} with ${signing}, hk_value_0123456789, basic-pass-98765`;
		expect(withoutRequestSecrets(message, configured)).toBe(
			'failed: {"secret":"[redacted]"} at https://example.test/hook?secret=[redacted] with [redacted], [redacted], [redacted]',
		);
	});

	it('keeps what only looks like the request: its ordinary headers, the key header, short values elsewhere', () => {
		const answer = { received: true, eventKey: 'evt:evt_1', idempotencyKey: 'evt_1', type: 'application/json', note: 'Basic' };

		expect(storedAnswer(answer, request)).toEqual(answer);
	});

	it('keeps an answer up to the cap; over it, or without a JSON form, only {"status":"completed"}', () => {
		const filler = (bytes: number) => ({ text: 'x'.repeat(bytes - '{"text":""}'.length) });
		const circular: Record<string, unknown> = { a: 1 };
		circular.self = circular;
		let deep: unknown = {};
		for (let level = 0; level < 100_000; level++) deep = { deep };

		expect(storedAnswer(filler(MAX_STORED_ANSWER_BYTES))).toEqual(filler(MAX_STORED_ANSWER_BYTES));
		expect(storedAnswer(filler(MAX_STORED_ANSWER_BYTES + 1))).toEqual(ANSWER_NOT_KEPT);
		// Multi-byte text counts in UTF-8 bytes, and binary data in the item's JSON counts as its JSON form.
		expect(storedAnswer({ text: 'é'.repeat(MAX_STORED_ANSWER_BYTES / 2) })).toEqual(ANSWER_NOT_KEPT);
		expect(storedAnswer({ data: Buffer.alloc(MAX_STORED_ANSWER_BYTES / 2) })).toEqual(ANSWER_NOT_KEPT);
		expect(storedAnswer(circular)).toEqual(ANSWER_NOT_KEPT);
		expect(storedAnswer(deep)).toEqual(ANSWER_NOT_KEPT);
		expect(ANSWER_NOT_KEPT).toEqual({ status: 'completed' });
	});

	it('gives what JSON cannot hold its JSON form: BigInts as digits, dates as text, functions and undefined left out', () => {
		const answer = {
			big: 12345678901234567891n,
			at: new Date(Date.UTC(2024, 0, 2)),
			fn: () => 1,
			none: undefined,
			small: Buffer.from('hi'),
		};

		expect(storedAnswer(answer)).toEqual({
			big: '12345678901234567891',
			at: '2024-01-02T00:00:00.000Z',
			small: { type: 'Buffer', data: [104, 105] },
		});
	});

	it('repairs NUL characters and lone surrogates in text and names, as the store would', () => {
		expect(storedAnswer({ 'a\u0000': 'b\u0000c', d: 'e\uD800f', g: '\uD83D\uDE00' })).toEqual({
			'a\uFFFD': 'b\uFFFDc',
			d: 'e\uFFFDf',
			g: '\uD83D\uDE00',
		});
	});

	it('keeps a member named __proto__ as a member, setting no prototype', () => {
		const answer = JSON.parse('{"__proto__":{"polluted":true},"ok":1}') as Record<string, unknown>;

		const kept = storedAnswer(answer) as Record<string, unknown>;

		expect(Object.hasOwn(kept, '__proto__')).toBe(true);
		expect((kept as { polluted?: unknown }).polluted).toBeUndefined();
		expect(JSON.stringify(kept)).toBe('{"__proto__":{"polluted":true},"ok":1}');
	});

	it('passes on answers that are not objects (stored by Complete), and nothing for no answer', () => {
		expect(storedAnswer(['a', 1])).toEqual(['a', 1]);
		expect(storedAnswer('done')).toBe('done');
		expect(storedAnswer(undefined)).toBeUndefined();
	});
});

describe('withoutRequestSecrets', () => {
	const withHeaderAuth = {
		...request,
		headers: { ...request.headers, 'x-webhook-key': 'hk_live_0123456789' },
		credentialHeaders: ['X-Webhook-Key'],
	};

	it('takes every credential and header value of the request out of a failure that quotes the item, a Header Auth header whatever its name', () => {
		const message = `Unsupported event: ${JSON.stringify(triggerItem)} ${JSON.stringify({ headers: withHeaderAuth.headers })}`;

		const text = withoutRequestSecrets(message, withHeaderAuth);

		for (const secret of [
			'hk_live_0123456789',
			'key_live_abcdef123456',
			'query-token-123456',
			'abc123def456',
			's3cret-password',
			OWNER_TOKEN,
		])
			expect(text).not.toContain(secret);
		expect(text).toContain('[redacted]');
		// What is not a credential stays: the event, the content type, a signature's timestamp quoted alone.
		expect(text).toContain('evt_1');
		expect(text).toContain('application/json');
		expect(withoutRequestSecrets('created 1700000000', withHeaderAuth)).toBe('created 1700000000');
	});

	it('takes a credential of 4 to 7 characters out where it stands alone, not from inside a longer word; one of 3 stays', () => {
		const short = { headers: { 'x-webhook-key': 'Zq7#pX2' }, credentialHeaders: ['X-Webhook-Key'] };
		expect(withoutRequestSecrets('{"x-webhook-key":"Zq7#pX2"} partner Zq7#pX2.', short)).toBe(
			'{"x-webhook-key":"[redacted]"} partner [redacted].',
		);
		expect(withoutRequestSecrets('event Zq7#pX2abc', short)).toBe('event Zq7#pX2abc');
		const tiny = { headers: { 'x-webhook-key': 'k9z' }, credentialHeaders: ['X-Webhook-Key'] };
		expect(withoutRequestSecrets('{"x-webhook-key":"k9z"}', tiny)).toBe('{"x-webhook-key":"k9z"}');
		// A JSON-escaped short credential, and one of regular-expression characters.
		const escaped = { headers: { 'x-webhook-key': 'a"b\\c' }, credentialHeaders: ['X-Webhook-Key'] };
		expect(withoutRequestSecrets(JSON.stringify({ key: 'a"b\\c' }), escaped)).toBe('{"key":"[redacted]"}');
		const pattern = { headers: { 'x-webhook-key': '(.*)+' }, credentialHeaders: ['X-Webhook-Key'] };
		expect(withoutRequestSecrets('key (.*)+ then xyz', pattern)).toBe('key [redacted] then xyz');
	});

	it('keeps no text of an answer where a credential of 4 to 7 characters stands alone; inside a longer word it stays', () => {
		const short = { headers: { 'x-webhook-key': 'Zq7#pX2' }, credentialHeaders: ['X-Webhook-Key'] };
		expect(storedAnswer({ ok: true, log: '{"x-webhook-key":"Zq7#pX2"}', note: 'ref Zq7#pX2abc' }, short)).toEqual({
			ok: true,
			note: 'ref Zq7#pX2abc',
		});
	});

	it("with every header value (n8n's Webhook checking Header Auth under a name the package is not told): each value goes but those describing the message", () => {
		const request = { headers: { 'x-partner-key': 'hk_partner_0123', 'content-type': 'application/json' } };
		expect(withoutRequestSecrets('rejected hk_partner_0123', request)).toBe('rejected hk_partner_0123');
		expect(withoutRequestSecrets('rejected hk_partner_0123 as application/json', request, { everyHeaderValue: true })).toBe(
			'rejected [redacted] as application/json',
		);
	});

	it('takes out a signature quoted as text, whole or one part of it, and a value quoted with JSON escapes', () => {
		const signed = { headers: { 'stripe-signature': 't=1700000000,v1=5257a869e7ec,v0=6ffbb59b2300' } };
		expect(withoutRequestSecrets('Bad signature: t=1700000000,v1=5257a869e7ec,v0=6ffbb59b2300', signed)).toBe('Bad signature: [redacted]');
		expect(withoutRequestSecrets('expected v1=5257a869e7ec', signed)).toBe('expected [redacted]');
		const quoted = { headers: { 'x-api-key': 'key"with\\escapes' } };
		expect(withoutRequestSecrets(JSON.stringify({ key: 'key"with\\escapes' }), quoted)).toBe('{"key":"[redacted]"}');
	});

	it('leaves a message without credentials as it is, and short values where they would match ordinary text', () => {
		expect(withoutRequestSecrets('The charge failed: card declined', withHeaderAuth)).toBe('The charge failed: card declined');
		expect(withoutRequestSecrets('Bearer abc failed', { headers: { authorization: 'abc' } })).toBe('Bearer abc failed');
	});
});
