import { createHash } from 'node:crypto';

import { ForbiddenKeySourceError, InvalidConfigurationError, MissingKeyError } from '../../../lib/errors';
import { canonicalJson } from '../../../lib/keys/canonicalJson';
import { MAX_KEY_BYTES, deriveKey, validateKeyConfig, type KeyConfig } from '../../../lib/keys/deriveKey';

// Expected digests come from coreutils, not from the code under test:
//   printf '%s' '{"type":"checkout.completed","amount":42}' | sha256sum
const RAW_BODY = '{"type":"checkout.completed","amount":42}';
const RAW_BODY_SHA256 = '6a424a400e33db2be3ecb900facff5189f52a1ff4c823b04364794dcfcf86562';
//   printf '%s' '{"amount":42,"type":"checkout.completed"}' | sha256sum   (the same body, keys sorted)
const CANONICAL_SHA256 = 'c550f387ab63bba33aae2202ebf39957085a097656caffd2dc197196a89e65fc';
//   printf '%s' 'not json at all' | sha256sum
const TEXT_SHA256 = '92628a747890d02d1459c6eb45fd13cfa63bbb6d346412cff190297cf9c33d39';

const auto: KeyConfig = { strategy: 'auto', onMissingKey: 'bodyHash' };
const field = (fieldPath: string): KeyConfig => ({ strategy: 'field', fieldPath, onMissingKey: 'bodyHash' });
const sha256Of = (text: string) => createHash('sha256').update(text).digest('hex');

describe('deriveKey', () => {
	describe('auto (the seed recipe rule)', () => {
		it('uses evt: + body.id', () => {
			expect(deriveKey({ body: { id: 'evt_1A', type: 'x' } }, auto)).toEqual({ key: 'evt:evt_1A', keySource: 'event-id', hashed: false });
		});

		it('accepts numeric ids', () => {
			expect(deriveKey({ body: { id: 12345 } }, auto).key).toBe('evt:12345');
		});

		it('ignores the signature header: a retry with a new stripe-signature gets the same key', () => {
			const first = deriveKey({ body: { id: 'evt_A' }, headers: { 'stripe-signature': 't=1,v1=aa' } }, auto);
			const retry = deriveKey({ body: { id: 'evt_A' }, headers: { 'stripe-signature': 't=2,v1=bb' } }, auto);
			expect(retry.key).toBe(first.key);
		});

		// The Content-Type is not signed: a genuine delivery re-sent as text or as a form must keep its key.
		it.each([
			['text/plain', '{"id":"evt_ct"}', 'evt:evt_ct'],
			['application/x-www-form-urlencoded', '{"id":"evt_ct"}', 'evt:evt_ct'],
			['none at all', ' [1] ', `sha256:${sha256Of(' [1] ')}`],
		])('reads the id from the raw bytes as JSON whatever the Content-Type says (%s)', (contentType, raw, key) => {
			const headers = contentType === 'none at all' ? {} : { 'content-type': contentType };
			const parsedBy = contentType === 'text/plain' ? raw : Object.fromEntries(new URLSearchParams(raw));
			expect(deriveKey({ body: parsedBy, headers, rawBody: Buffer.from(raw) }, auto).key).toBe(key);
			expect(
				deriveKey({ body: parsedBy, item: { body: parsedBy, headers }, headers, rawBody: Buffer.from(raw) }, field('body.id')).key,
			).toBe(key.startsWith('evt:') ? key.slice(4) : key);
		});

		it('reads the bytes as JSON where a JSON Content-Type came with no object body: a byte order mark, a +json type n8n leaves unparsed', () => {
			const bom = '\uFEFF{"id":"evt_bom"}';
			expect(deriveKey({ body: bom, headers: { 'content-type': 'application/json' }, rawBody: Buffer.from(bom) }, auto).key).toBe(
				'evt:evt_bom',
			);
			const vnd = { 'content-type': 'application/vnd.api+json' };
			expect(deriveKey({ body: undefined, headers: vnd, rawBody: Buffer.from('{"id":"evt_vnd"}') }, auto).key).toBe('evt:evt_vnd');
		});

		it("leaves a multipart request's binary alone: it is one of its files, not the request", () => {
			const multipart = { 'content-type': 'multipart/form-data; boundary=x' };
			expect(deriveKey({ body: { id: 'sub_1' }, headers: multipart, rawBody: Buffer.from('{"id":"file"}') }, auto).key).toBe('evt:sub_1');
		});

		it('keeps the body as parsed for application/json in UTF-8, a form body that is not JSON, and items that are not requests; else reads the signed bytes', () => {
			const json = { 'content-type': 'application/json; charset=utf-8' };
			expect(deriveKey({ body: { id: 'as_parsed' }, headers: json, rawBody: Buffer.from('{"id":"raw"}') }, auto).key).toBe('evt:as_parsed');
			// n8n decodes by the charset said, which is not signed: the key is read from the bytes as UTF-8.
			const latin1 = { 'content-type': 'application/json; charset=latin1' };
			const bytes = Buffer.from('{"id":"évt_ü"}');
			expect(deriveKey({ body: JSON.parse(bytes.toString('latin1')), headers: latin1, rawBody: bytes }, auto).key).toBe('evt:évt_ü');
			// n8n leaves a `…+json` body unparsed (`{}`): a copy as application/json keeps the key.
			const vendor = { 'content-type': 'application/vnd.api+json' };
			expect(deriveKey({ body: {}, headers: vendor, rawBody: Buffer.from('{"id":"evt_v"}') }, auto).key).toBe('evt:evt_v');
			// A field a node before added (the bytes lack it) is read from the item, for a JSON request only.
			const latin1Added = { body: { id: 'added' }, headers: latin1, rawBody: Buffer.from('{"other":1}') };
			expect(deriveKey(latin1Added, auto).key).toBe('evt:added');
			const text = { 'content-type': 'text/plain' };
			expect(deriveKey({ body: { id: 'added' }, headers: text, rawBody: Buffer.from('{"other":1}') }, auto).key).toMatch(/^sha256:/);
			const form = { 'content-type': 'application/x-www-form-urlencoded' };
			expect(deriveKey({ body: { id: 'form_1' }, headers: form, rawBody: Buffer.from('id=form_1') }, auto).key).toBe('evt:form_1');
			expect(deriveKey({ body: { id: 'row_1' }, rawBody: Buffer.from('{"id":"file"}') }, auto).key).toBe('evt:row_1');
		});

		it('refuses a body hash for a request without a body (every one would hash alike); an item that is no request is still hashed', () => {
			const headers = { 'content-type': 'application/json' };
			expect(() => deriveKey({ body: {}, headers, rawBody: Buffer.alloc(0) }, auto)).toThrow(MissingKeyError);
			expect(() => deriveKey({ body: {}, headers }, { strategy: 'bodyHash', onMissingKey: 'bodyHash' })).toThrow(/the request has no body/);
			expect(deriveKey({ body: {} }, auto).key).toBe(`sha256:${sha256Of('{}')}`);
			// A file read from disk (no request headers), empty: hashed as it is.
			expect(deriveKey({ body: { fileName: 'a.txt' }, rawBody: Buffer.alloc(0) }, auto).key).toBe(`sha256:${sha256Of('')}`);
		});

		it('checks the bytes the sender sent, not one event written out again; refuses U+FFFD from a multipart field', () => {
			const headers = { 'content-type': 'application/json' };
			const sent = Buffer.concat([Buffer.from('{"events":[{"id":"x'), Buffer.from([0xff]), Buffer.from('"}]}')]);
			// Events Path: the event's text is the delivery read as UTF-8, written out again (valid UTF-8, U+FFFD inside).
			const event = { id: 'x\uFFFD' };
			const rawBody = Buffer.from(JSON.stringify(event));
			expect(() => deriveKey({ body: event, headers, rawBody, sentBytes: sent }, auto)).toThrow(/not UTF-8/);
			expect(deriveKey({ body: event, headers, rawBody, sentBytes: rawBody }, auto).key).toBe('evt:x\uFFFD');
			const multipart = { 'content-type': 'multipart/form-data; boundary=x' };
			expect(() => deriveKey({ body: event, headers: multipart, rawBody: Buffer.from('{"file":1}') }, auto)).toThrow(/not UTF-8/);
			// A form's percent escape of invalid bytes (n8n's querystring reads %FF as U+FFFD); JSON's escape of the character is the character.
			const form = { 'content-type': 'application/x-www-form-urlencoded' };
			expect(() => deriveKey({ body: { id: '\uFFFD' }, headers: form, rawBody: Buffer.from('id=%FF') }, auto)).toThrow(/not UTF-8/);
			expect(deriveKey({ body: event, headers, rawBody: Buffer.from('{"id":"x\\ufffd"}') }, auto).key).toBe('evt:x\uFFFD');
		});

		it("reads the Content-Type as n8n's parser does: the last charset, names and values trimmed, quoted or URL-encoded; UTF-16 with its byte order mark", () => {
			const bytes = Buffer.from('{"id":"évt_ü"}');
			const latin1Parse = JSON.parse(bytes.toString('latin1')) as unknown;
			for (const contentType of [
				'application/json; charset=utf-8; charset=latin1',
				'application/json; charset = latin1',
				'application/json; charset="latin1"',
			])
				expect(deriveKey({ body: latin1Parse, headers: { 'content-type': contentType }, rawBody: bytes }, auto).key).toBe('evt:évt_ü');
			// UTF-8 said any way n8n reads it: the parsed body is the signed JSON (what a node before made of it is kept).
			for (const contentType of ['application/json; charset="UTF-8"', 'application/json;charset=utf8', 'application/json; charset=utf%2D8'])
				expect(deriveKey({ body: { id: 'as_parsed' }, headers: { 'content-type': contentType }, rawBody: bytes }, auto).key).toBe(
					'evt:as_parsed',
				);
			const utf16 = (order: 'le' | 'be') => {
				const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('{"id":"evt_u16"}', 'utf16le')]);
				return order === 'le' ? le : Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(le.subarray(2)).swap16()]);
			};
			for (const order of ['le', 'be'] as const)
				expect(deriveKey({ body: 'garbled', headers: { 'content-type': 'text/plain' }, rawBody: utf16(order) }, auto).key).toBe(
					'evt:evt_u16',
				);
		});

		it('refuses a key read from bytes that are not UTF-8 (each invalid sequence reads as U+FFFD: two ids would merge)', () => {
			const headers = { 'content-type': 'application/json' };
			const withByte = (byte: number) => Buffer.concat([Buffer.from('{"id":"evt_x'), Buffer.from([byte]), Buffer.from('"}')]);
			for (const byte of [0xff, 0xfe]) {
				// n8n's parse of the bytes, as the item has it.
				const body = JSON.parse(withByte(byte).toString('utf8')) as unknown;
				expect(() => deriveKey({ body, headers, rawBody: withByte(byte) }, auto)).toThrow(/not UTF-8/);
				expect(() =>
					deriveKey(
						{ body, headers, item: { body, headers }, rawBody: withByte(byte) },
						{ strategy: 'field', fieldPath: 'body.id', onMissingKey: 'error' },
					),
				).toThrow(/not UTF-8/);
			}
			// A genuine U+FFFD sent as UTF-8 is text like any other; invalid bytes elsewhere in the body do not matter.
			const asItem = (bytes: Buffer) => ({ body: JSON.parse(bytes.toString('utf8')) as unknown, headers, rawBody: bytes });
			expect(deriveKey(asItem(Buffer.from('{"id":"evt_\uFFFD"}')), auto).key).toBe('evt:evt_\uFFFD');
			const elsewhere = Buffer.concat([Buffer.from('{"id":"evt_ok","name":"'), Buffer.from([0xff]), Buffer.from('"}')]);
			expect(deriveKey(asItem(elsewhere), auto).key).toBe('evt:evt_ok');
		});

		it('hashes a multipart request by its fields, not by an attached file: two submissions with one file keep two keys', () => {
			const headers = { 'content-type': 'multipart/form-data; boundary=x' };
			const file = Buffer.from('{"template":7}');
			const first = deriveKey({ body: { name: 'ann' }, headers, rawBody: file }, auto).key;
			const second = deriveKey({ body: { name: 'bob' }, headers, rawBody: file }, auto).key;
			expect(first).not.toBe(second);
			expect(first).toBe(`sha256:${sha256Of('{"name":"ann"}')}`);
		});

		it('hashes the raw body bytes when there is no id', () => {
			const body = JSON.parse(RAW_BODY);
			expect(deriveKey({ body, rawBody: Buffer.from(RAW_BODY) }, auto)).toEqual({
				key: `sha256:${RAW_BODY_SHA256}`,
				keySource: 'raw-body-hash',
				hashed: false,
			});
		});

		it('hashes canonical JSON (sorted keys) without a raw body, and says so', () => {
			const derived = deriveKey({ body: { type: 'checkout.completed', amount: 42 } }, auto);
			expect(derived).toEqual({ key: `sha256:${CANONICAL_SHA256}`, keySource: 'canonical-json-hash', hashed: false });
			expect(deriveKey({ body: { amount: 42, type: 'checkout.completed' } }, auto).key).toBe(derived.key);
		});

		it('hashes a non-JSON raw body', () => {
			expect(deriveKey({ body: 'not json at all', rawBody: Buffer.from('not json at all') }, auto).key).toBe(`sha256:${TEXT_SHA256}`);
		});

		it.each([[''], ['   '], [null], [{ nested: 1 }], [true]])('treats id %p as missing', (id) => {
			expect(deriveKey({ body: { id }, rawBody: Buffer.from('abc') }, auto).keySource).toBe('raw-body-hash');
		});

		it('fails clearly when the id is missing and fallback is off', () => {
			expect(() => deriveKey({ body: { type: 'x' } }, { ...auto, onMissingKey: 'error' })).toThrow(MissingKeyError);
			expect(() => deriveKey({ body: { type: 'x' } }, { ...auto, onMissingKey: 'error' })).toThrow(/body field "id"/);
		});
	});

	describe('presets', () => {
		it.each([
			['stripe', { body: { id: 'evt_9' } }, 'evt:evt_9'],
			['slack', { body: { event_id: 'Ev123' } }, 'evt:Ev123'],
			['github', { body: {}, headers: { 'X-GitHub-Delivery': 'd-1' } }, 'x-github-delivery:d-1'],
			['shopify', { body: {}, headers: { 'x-shopify-webhook-id': 'w-1', 'x-shopify-event-id': 'e-1' } }, 'x-shopify-webhook-id:w-1'],
			['standardWebhooks', { body: {}, headers: { 'webhook-id': 'msg_1' } }, 'webhook-id:msg_1'],
			['standardWebhooks', { body: {}, headers: { 'svix-id': 'msg_2' } }, 'webhook-id:msg_2'],
			['generic', { body: {}, headers: { 'Idempotency-Key': 'k-1' } }, 'idempotency-key:k-1'],
		] as const)('%s reads its retry-stable id', (preset, input, expected) => {
			expect(deriveKey(input, { strategy: 'preset', preset, onMissingKey: 'error' }).key).toBe(expected);
		});

		it('names what is missing', () => {
			expect(() => deriveKey({ body: {}, headers: {} }, { strategy: 'preset', preset: 'github', onMissingKey: 'error' })).toThrow(
				/x-github-delivery/,
			);
		});
	});

	describe('header and custom keys', () => {
		it('reads a header case-insensitively', () => {
			expect(
				deriveKey(
					{ body: {}, headers: { 'X-Request-Key': 'abc' } },
					{ strategy: 'header', headerName: 'x-request-key', onMissingKey: 'error' },
				).key,
			).toBe('x-request-key:abc');
		});

		it('uses a business key from an expression as it is', () => {
			expect(deriveKey({ body: {}, customValue: 'sub_1:2026-11' }, { strategy: 'custom', onMissingKey: 'error' })).toEqual({
				key: 'sub_1:2026-11',
				keySource: 'custom',
				hashed: false,
			});
		});

		it('prefixes a scope', () => {
			expect(deriveKey({ body: { id: 'evt_1' } }, { ...auto, scope: 'stripe' }).key).toBe('stripe:evt:evt_1');
			expect(deriveKey({ body: { id: 'evt_1' } }, { ...auto, scope: 'tenant-7:' }).key).toBe('tenant-7:evt:evt_1');
		});

		it('body hash ignores any id', () => {
			expect(deriveKey({ body: { id: 'x' }, rawBody: Buffer.from('abc') }, { strategy: 'bodyHash', onMissingKey: 'error' }).key).toBe(
				// printf '%s' abc | sha256sum
				'sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
			);
		});
	});

	describe('oversized keys', () => {
		it('hashes a 5 KB key instead of cutting it, and keeps two long keys with one prefix apart', () => {
			const long = 'k'.repeat(5 * 1024);
			const a = deriveKey({ body: {}, customValue: `${long}a` }, { strategy: 'custom', onMissingKey: 'error', scope: 'shop' });
			const b = deriveKey({ body: {}, customValue: `${long}b` }, { strategy: 'custom', onMissingKey: 'error', scope: 'shop' });
			expect(a.hashed).toBe(true);
			expect(a.key).toMatch(/^shop:long-key-sha256:[0-9a-f]{64}$/);
			expect(a.key).not.toBe(b.key);
		});

		it('keeps a key of exactly the limit as it is', () => {
			const key = 'x'.repeat(MAX_KEY_BYTES);
			expect(deriveKey({ body: {}, customValue: key }, { strategy: 'custom', onMissingKey: 'error' })).toEqual({
				key,
				keySource: 'custom',
				hashed: false,
			});
		});
	});
});

describe('validateKeyConfig', () => {
	it.each([
		'stripe-signature',
		'X-Hub-Signature-256',
		'x-shopify-hmac-sha256',
		'x-slack-signature',
		'webhook-signature',
		'svix-timestamp',
		'x-slack-request-timestamp',
		'my-custom-signature',
	])('refuses %s as a key header, explaining why', (headerName) => {
		expect(() => validateKeyConfig({ strategy: 'header', headerName, onMissingKey: 'error' })).toThrow(ForbiddenKeySourceError);
		expect(() => validateKeyConfig({ strategy: 'header', headerName, onMissingKey: 'error' })).toThrow(/change on every retry/);
	});

	it.each([
		[{ strategy: 'preset', preset: 'paypal', onMissingKey: 'error' }],
		[{ strategy: 'header', headerName: ' ', onMissingKey: 'error' }],
		[{ strategy: 'bogus', onMissingKey: 'error' }],
		[{ strategy: 'auto', onMissingKey: 'maybe' }],
		[{ strategy: 'auto', onMissingKey: 'error', scope: 's'.repeat(101) }],
	])('rejects %p', (config) => {
		expect(() => validateKeyConfig(config as unknown as KeyConfig)).toThrow(InvalidConfigurationError);
	});
});

describe('canonicalJson', () => {
	it('sorts keys at every depth and keeps array order', () => {
		// printf '{"a":[1,{"b":2,"c":null}],"z":"x"}' is what this must produce
		expect(canonicalJson({ z: 'x', a: [1, { c: null, b: 2 }] })).toBe('{"a":[1,{"b":2,"c":null}],"z":"x"}');
	});

	it('drops undefined members and never throws on undefined', () => {
		expect(canonicalJson({ a: undefined, b: 1 })).toBe('{"b":1}');
		expect(canonicalJson(undefined)).toBe('null');
	});
});
