import { InvalidConfigurationError, MissingKeyError, UnusableKeyError } from '../../../lib/errors';
import { deriveKey, validateKeyConfig, type KeyConfig, type KeyInput } from '../../../lib/keys/deriveKey';
import { parseFieldPath, valueAtPath } from '../../../lib/keys/fieldPath';
import { memberAtPath } from '../../../lib/keys/rawJsonMember';

/** Key Source "Field": the value at a path of the item, read without an n8n expression. */
const field = (fieldPath: string, extra: Partial<KeyConfig> = {}): KeyConfig => ({
	strategy: 'field',
	fieldPath,
	onMissingKey: 'error',
	...extra,
});

/** What keyInput.ts gives for a webhook item: `body` is its body member, `item` the whole item. */
function webhookInput(rawBody: string, headers: Record<string, unknown> = {}): KeyInput {
	const body = JSON.parse(rawBody) as unknown;
	return { body, headers, rawBody: Buffer.from(rawBody), item: { headers, body } };
}

/** Any other item (a Split Out event, a row) is its own body. */
function plainInput(item: Record<string, unknown>): KeyInput {
	return { body: item, item };
}

describe('Key Source "Field"', () => {
	describe('reading the path', () => {
		it('reads a nested member of a webhook body, after the prefix', () => {
			const input = webhookInput('{"type":"payment_intent.succeeded","data":{"object":{"id":"pi_3Nx"}}}');
			expect(deriveKey(input, field('body.data.object.id', { fieldPrefix: 'stripe:' }))).toEqual({
				key: 'stripe:pi_3Nx',
				keySource: 'field',
				hashed: false,
			});
		});

		it('reads a member of an item that is its own body (a batch item)', () => {
			expect(deriveKey(plainInput({ id: 'evt_9', amount: 3 }), field('id')).key).toBe('evt_9');
		});

		it('reads array positions', () => {
			const input = webhookInput('{"items":[{"sku":"a"},{"sku":"b","order":{"id":"ord_2"}}]}');
			expect(deriveKey(input, field('body.items[1].order.id')).key).toBe('ord_2');
			expect(() => deriveKey(input, field('body.items[2].order.id'))).toThrow(MissingKeyError);
		});

		it('reads a header of a webhook item', () => {
			expect(deriveKey(webhookInput('{}', { 'x-delivery': 'd-1' }), field('headers.x-delivery')).key).toBe('d-1');
		});

		it('trims the value, as every key source does', () => {
			expect(deriveKey(plainInput({ id: '  evt_trim  ' }), field('id')).key).toBe('evt_trim');
		});
	});

	describe('a missing value: "On Missing Key" decides', () => {
		it.each([
			['absent', { other: 1 }],
			['null', { id: null }],
			['empty text', { id: '  ' }],
			['an object', { id: { nested: true } }],
			['a boolean', { id: true }],
			['a parent that is not an object', { id: 'x' }],
		])('%s: refused with MissingKeyError when falling back is off', (_case, item) => {
			const path = _case === 'a parent that is not an object' ? 'id.inner' : 'id';
			expect(() => deriveKey(plainInput(item), field(path))).toThrow(MissingKeyError);
		});

		it('falls back to the body hash when "On Missing Key" says so', () => {
			const derived = deriveKey(webhookInput('{"type":"x"}'), field('body.data.object.id', { onMissingKey: 'bodyHash' }));
			expect(derived.keySource).toBe('raw-body-hash');
			expect(derived.key).toMatch(/^sha256:[0-9a-f]{64}$/);
		});
	});

	describe('numbers are never rounded', () => {
		// JSON.parse reads both as 12345678901234567000: two events, one number.
		const first = '{"data":{"object":{"id":12345678901234567890}}}';
		const second = '{"data":{"object":{"id":12345678901234567891}}}';

		it('uses the exact digits of a nested number from the raw body', () => {
			expect(deriveKey(webhookInput(first), field('body.data.object.id')).key).toBe('12345678901234567890');
			expect(deriveKey(webhookInput(second), field('body.data.object.id')).key).toBe('12345678901234567891');
		});

		it('uses the exact digits inside arrays too', () => {
			expect(deriveKey(webhookInput('{"list":[1,{"id":9007199254740993}]}'), field('body.list[1].id')).key).toBe('9007199254740993');
		});

		it('refuses an unsafe number without a raw body, or outside the body, rather than rounding', () => {
			expect(() => deriveKey(plainInput({ id: 12345678901234567000 }), field('id'))).toThrow(UnusableKeyError);
			const outsideBody: KeyInput = { ...webhookInput('{"id":1}'), item: { body: { id: 1 }, query: { n: 12345678901234567000 } } };
			expect(() => deriveKey(outsideBody, field('query.n'))).toThrow(UnusableKeyError);
		});

		it('keeps safe whole numbers as their digits', () => {
			expect(deriveKey(plainInput({ id: 42 }), field('id', { fieldPrefix: 'n:' })).key).toBe('n:42');
		});
	});

	describe('exact text only', () => {
		it.each([
			['a NUL', 'evt\u0000x'],
			['a lone surrogate', 'evt\uD800x'],
		])('refuses a value with %s', (_case, id) => {
			expect(() => deriveKey(plainInput({ id }), field('id'))).toThrow(UnusableKeyError);
		});

		it('refuses a prefix with a NUL or a lone surrogate, as the scope is', () => {
			expect(() => validateKeyConfig(field('id', { fieldPrefix: 'a\u0000' }))).toThrow(UnusableKeyError);
			expect(() => validateKeyConfig(field('id', { fieldPrefix: '\uDC00' }))).toThrow(UnusableKeyError);
		});

		it('refuses a value that would take the form of a derived key', () => {
			expect(() => deriveKey(plainInput({ id: `sha256:${'a'.repeat(64)}` }), field('id'))).toThrow(UnusableKeyError);
		});
	});

	describe('paths that reach no data', () => {
		it.each(['__proto__.polluted', 'body.constructor.name', 'prototype', 'a.__proto__'])('refuses %s as configuration', (path) => {
			expect(() => validateKeyConfig(field(path))).toThrow(InvalidConfigurationError);
		});

		it('reads only own members: an inherited name is missing', () => {
			expect(() => deriveKey(plainInput({ id: 'x' }), field('toString'))).toThrow(MissingKeyError);
			expect(valueAtPath({}, ['hasOwnProperty'])).toBeUndefined();
		});

		it('does not follow a JSON "__proto__" member, even when the body has one', () => {
			const item = JSON.parse('{"__proto__":{"id":"injected"}}') as Record<string, unknown>;
			expect(() => validateKeyConfig(field('__proto__.id'))).toThrow(InvalidConfigurationError);
			expect(() => deriveKey(plainInput(item), field('id'))).toThrow(MissingKeyError);
		});

		it.each(['', '  ', 'a..b', '.a', 'a.', 'a[x]', 'a[0', 'a]', '[0]'])('refuses the malformed path %j', (path) => {
			expect(() => validateKeyConfig(field(path))).toThrow(InvalidConfigurationError);
		});
	});

	it('parses names and positions', () => {
		expect(parseFieldPath(' body.items[0][2].id ')).toEqual(['body', 'items', 0, 2, 'id']);
		expect(parseFieldPath('headers.x-request-id')).toEqual(['headers', 'x-request-id']);
	});
});

describe('memberAtPath (raw body)', () => {
	it('reads nested members and array elements exactly as written', () => {
		const raw = '{"a":{"b":[10, {"c": 1.50}]}, "a2": 0}';
		expect(memberAtPath(raw, ['a', 'b', 1, 'c'])).toEqual({ kind: 'number', text: '1.50' });
		expect(memberAtPath(raw, ['a', 'b', 0])).toEqual({ kind: 'number', text: '10' });
	});

	it('takes the last of duplicate members at every level, like JSON.parse', () => {
		expect(memberAtPath('{"a":{"id":1},"a":{"id":2,"id":3}}', ['a', 'id'])?.text).toBe('3');
	});

	it('gives undefined for a wrong kind, a missing step or malformed JSON', () => {
		expect(memberAtPath('{"a":[1]}', ['a', 'x'])).toBeUndefined();
		expect(memberAtPath('{"a":{"x":1}}', ['a', 0])).toBeUndefined();
		expect(memberAtPath('{"a":[1]}', ['a', 1])).toBeUndefined();
		expect(memberAtPath('{"a":{"x":1}', ['a', 'x'])).toBeUndefined();
	});
});
