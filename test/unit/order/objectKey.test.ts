import { InvalidObjectKeyError } from '../../../lib/order/errors';
import { eventKeyOf, objectKeyOf } from '../../../lib/order/objectKey';

describe('objectKeyOf', () => {
	it('takes text and numbers as Reserve takes a custom key (trimmed)', () => {
		expect(objectKeyOf(' stripe:customer:cus_123 ')).toBe('stripe:customer:cus_123');
		expect(objectKeyOf(42)).toBe('42');
	});

	it('hashes a key longer than a btree entry should be, never cuts it', () => {
		const long = `shop:order:${'x'.repeat(600)}`;
		expect(objectKeyOf(long)).toMatch(/^long-key-sha256:[0-9a-f]{64}$/);
		expect(objectKeyOf(`${long}y`)).not.toBe(objectKeyOf(long));
	});

	it.each([
		['missing', undefined, /missing or empty/],
		['empty', '   ', /missing or empty/],
		['an object', { id: 1 }, /missing or empty/],
		['NUL inside', 'cus_1\u0000', /NUL/],
		['a lone high surrogate', 'cus_\uD83D', /surrogate/],
		['a lone low surrogate', '\uDE00cus', /surrogate/],
	])('refuses %s per item', (_case, value, message) => {
		expect(() => objectKeyOf(value)).toThrow(InvalidObjectKeyError);
		expect(() => objectKeyOf(value)).toThrow(message);
	});

	it('keeps a well-formed surrogate pair (an emoji) exactly', () => {
		expect(objectKeyOf('shop:😀')).toBe('shop:😀');
	});
});

describe('eventKeyOf', () => {
	it('is null when the item has no event key', () => {
		expect(eventKeyOf(undefined)).toBeNull();
		expect(eventKeyOf('')).toBeNull();
		expect(eventKeyOf('evt:evt_1')).toBe('evt:evt_1');
	});
});
