import { readFileSync } from 'node:fs';
import path from 'node:path';

import { UnusableKeyError } from '../../../lib/errors';
import { deriveKey, type KeyConfig } from '../../../lib/keys/deriveKey';
import { sha256Hex } from '../../../lib/keys/sha256';

/*
 * Key Source Header and the header presets read the key by the package's one header rule
 * (lib/headers.ts): a header sent more than once with different values, or not text, never gives
 * a key (one value picked would give two deliveries of one event different keys, or two events the
 * same one); it is refused per item, whatever "on missing key" says, since it is not missing.
 */
const header = (onMissingKey: KeyConfig['onMissingKey'] = 'bodyHash'): KeyConfig => ({
	strategy: 'header',
	headerName: 'X-Delivery-Id',
	onMissingKey,
});
const keyOf = (headers: Record<string, unknown>, config = header()) => deriveKey({ body: { a: 1 }, headers }, config).key;

describe('a key header read by the one header rule', () => {
	it.each<[string, Record<string, unknown>]>([
		['two values in an array (a Code node)', { 'x-delivery-id': ['d-1', 'd-2'] }],
		['two spellings with different values', { 'X-Delivery-Id': 'd-1', 'x-delivery-id': 'd-2' }],
		['two values joined with ", " (n8n\'s Webhook node, header sent twice)', { 'x-delivery-id': 'd-1, d-2' }],
		['an empty value and a value', { 'x-delivery-id': ['', 'd-1'] }],
	])('%s: refused, never one picked', (_case, headers) => {
		for (const onMissingKey of ['bodyHash', 'error'] as const) {
			expect(() => keyOf(headers, header(onMissingKey))).toThrow(UnusableKeyError);
			expect(() => keyOf(headers, header(onMissingKey))).toThrow(
				/^The header "x-delivery-id" was sent more than once with different values, .*Key Source → Custom Value\. The item was not reserved\.$/,
			);
		}
	});

	it('the same value in an array or under two spellings is one value: the key earlier versions gave', () => {
		expect(keyOf({ 'x-delivery-id': ['d-1', 'd-1'] })).toBe('x-delivery-id:d-1');
		expect(keyOf({ 'X-Delivery-Id': 'd-1', 'x-delivery-id': ' d-1 ' })).toBe('x-delivery-id:d-1');
	});

	it('the same value joined with ", " is refused: earlier versions keyed on the joined text, and a key never changes silently', () => {
		expect(() => keyOf({ 'x-delivery-id': 'd-1, d-1' })).toThrow(
			/^The header "x-delivery-id" arrived as several values joined with ", " \(how n8n hands over a header sent more than once\), so it is not one id\./,
		);
	});

	it.each<[string, unknown, RegExp]>([
		['a boolean', true, /is not text \(a boolean\)/],
		['an object', { id: 'd-1' }, /is not text \(an object\)/],
		['a number beyond 2^53', 2 ** 53 + 2, /is not text \(a number that is not a whole number within ±2\^53\)/],
	])('%s is refused, never the body hash', (_case, value, message) => {
		expect(() => keyOf({ 'x-delivery-id': value })).toThrow(UnusableKeyError);
		expect(() => keyOf({ 'x-delivery-id': value })).toThrow(message);
	});

	it('a whole number is its digits', () => {
		expect(keyOf({ 'x-delivery-id': 42 })).toBe('x-delivery-id:42');
	});

	it('absent, null or empty is missing: the body hash, or the missing-key error', () => {
		for (const value of [undefined, null, '', '  ', []]) {
			expect(keyOf({ 'x-delivery-id': value })).toMatch(/^sha256:[0-9a-f]{64}$/);
			expect(() => keyOf({ 'x-delivery-id': value }, header('error'))).toThrow(/No idempotency key: the header "X-Delivery-Id" is missing/);
		}
	});

	it('NUL and lone surrogates are refused; an absurdly long value becomes its hash', () => {
		expect(() => keyOf({ 'x-delivery-id': 'd\u00001' })).toThrow(/NUL/);
		expect(() => keyOf({ 'x-delivery-id': 'd\ud8001' })).toThrow(/lone UTF-16 surrogate/);
		const long = 'd'.repeat(1024 * 1024);
		expect(keyOf({ 'x-delivery-id': long })).toBe(`long-key-sha256:${sha256Hex(`x-delivery-id:${long}`)}`);
	});

	it('the Standard Webhooks preset: a repeated webhook-id is refused, never svix-id or one of the two', () => {
		const preset: KeyConfig = { strategy: 'preset', preset: 'standardWebhooks', onMissingKey: 'bodyHash' };
		expect(() => deriveKey({ body: {}, headers: { 'webhook-id': 'msg_1, msg_2', 'svix-id': 'msg_1' } }, preset)).toThrow(
			/The header "webhook-id" was sent more than once with different values/,
		);
		expect(deriveKey({ body: {}, headers: { 'webhook-id': '', 'svix-id': 'msg_1' } }, preset).key).toBe('webhook-id:msg_1');
	});

	it('the two keys docs/upgrading.md says changed since 0.1.0, both only in bags a Code node built', () => {
		// 0.1.0 read the first spelling (null or [] there: missing, the body hash); the rule skips it.
		expect(keyOf({ 'X-Delivery-Id': null, 'x-delivery-id': 'd-1' })).toBe('x-delivery-id:d-1');
		expect(keyOf({ 'X-Delivery-Id': [], 'x-delivery-id': 'd-1' })).toBe('x-delivery-id:d-1');
		// 0.1.0 lower-cased with Unicode rules, so the Kelvin sign matched a k; HTTP names are ASCII.
		const kelvin: KeyConfig = { strategy: 'header', headerName: 'X-Key', onMissingKey: 'bodyHash' };
		expect(deriveKey({ body: { a: 1 }, headers: { 'x-\u212Aey': 'k-1' } }, kelvin).key).toMatch(/^sha256:/);
	});

	it('the GitHub preset: a delivery id sent twice with different values is refused', () => {
		const preset: KeyConfig = { strategy: 'preset', preset: 'github', onMissingKey: 'bodyHash' };
		expect(() => deriveKey({ body: {}, headers: { 'x-github-delivery': ['d-1', 'd-2'] } }, preset)).toThrow(UnusableKeyError);
	});

	it("Key Source Field on a webhook item's headers.<name>: a joined value is refused as well; one value, an array or a number is keyed", () => {
		const field: KeyConfig = { strategy: 'field', fieldPath: 'headers.x-delivery-id', onMissingKey: 'bodyHash' };
		const fieldKey = (value: unknown) => {
			const item = { headers: { 'x-delivery-id': value }, body: { a: 1 } };
			return deriveKey({ body: item.body, headers: item.headers, item }, field).key;
		};
		expect(() => fieldKey('d-1, d-2')).toThrow(/The header "x-delivery-id" was sent more than once with different values/);
		expect(() => fieldKey('d-1, d-1')).toThrow(/arrived as several values joined/);
		expect(fieldKey(' d-1 ')).toBe('d-1');
		expect(fieldKey(42)).toBe('42');
		expect(fieldKey(['d-1', 'd-2'])).toMatch(/^sha256:/);
		// Not a webhook item (its own body): a member named "headers" is plain data.
		expect(deriveKey({ body: { headers: { 'x-delivery-id': 'd-1, d-2' } }, item: undefined }, field).key).toBe('d-1, d-2');
	});
});

/*
 * docs/upgrading.md tells whoever relied on 0.1.0's joined keys to set Key Source → Custom Value
 * with an expression. Red team: that expression also runs for deliveries WITHOUT the header, and
 * must then be empty (missing: the body hash, as 0.1.0 gave), never `x-delivery-id:` for every one
 * of them, which would make every later header-less event a Duplicate of the first (lost).
 */
describe("the upgrading note's Custom Value recipe", () => {
	const upgrading = readFileSync(path.join(__dirname, '..', '..', '..', 'docs', 'upgrading.md'), 'utf8');
	const recipe = /\*Custom Value\* with\s+`([^`]+)`/.exec(upgrading)?.[1] as string;
	// n8n resolves each {{ }} as JavaScript over the item; undefined and null print as nothing.
	const resolve = (json: object) =>
		recipe.replace(/\{\{([\s\S]*?)\}\}/g, (_match, code: string) => String(new Function('$json', `return (${code});`)(json) ?? ''));
	const custom: KeyConfig = { strategy: 'custom', onMissingKey: 'bodyHash' };
	const keyOfDelivery = (headers: Record<string, string>, body: object) =>
		deriveKey({ body, headers, customValue: resolve({ headers, body }) }, custom).key;

	it('gives the keys 0.1.0 stored for the header, joined values included', () => {
		expect(recipe).toContain('x-delivery-id');
		expect(keyOfDelivery({ 'x-delivery-id': 'd-1, d-2' }, { a: 1 })).toBe('x-delivery-id:d-1, d-2');
		expect(keyOfDelivery({ 'x-delivery-id': 'd-1' }, { a: 1 })).toBe(keyOf({ 'x-delivery-id': 'd-1' }));
	});

	it('gives two different events without the header two different keys (the body hash, as 0.1.0)', () => {
		const first = keyOfDelivery({}, { id: 'evt_1' });
		const second = keyOfDelivery({}, { id: 'evt_2' });
		expect(first).not.toBe(second);
		expect(first).toBe(deriveKey({ body: { id: 'evt_1' }, headers: {} }, header()).key);
	});
});
