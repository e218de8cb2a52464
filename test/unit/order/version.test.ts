import { InvalidVersionError } from '../../../lib/order/errors';
import { compareVersions, parseVersion } from '../../../lib/order/version';

describe('parseVersion', () => {
	it.each([
		['a safe integer', 1732950000, '1732950000'],
		['zero', 0, '0'],
		['minus zero', -0, '0'],
		['a negative integer', -42, '-42'],
		['a decimal number', 2.5, '2.5'],
		['a tiny decimal in exponent form', 1.5e-7, '0.00000015'],
		['the largest safe integer', Number.MAX_SAFE_INTEGER, '9007199254740991'],
		['a bigint beyond 2^53', 2n ** 64n + 1n, '18446744073709551617'],
		['a digit string beyond 2^53, kept exact', '9007199254740993', '9007199254740993'],
		['a digit string with leading zeros and plus', '+000120', '120'],
		['a decimal string with trailing zeros', '  3.1400 ', '3.14'],
		["Stripe's created", 1796033700, '1796033700'],
		['an ISO date-time in UTC', '2026-11-30T10:15:00Z', '1796033700'],
		['the same instant with an offset', '2026-11-30T11:15:00+01:00', '1796033700'],
		['an offset without colon', '2026-11-30T05:15:00-0500', '1796033700'],
		['fractional seconds to the nanosecond', '2026-11-30T10:15:00.123456789Z', '1796033700.123456789'],
		['a space instead of T and lowercase z', '2026-11-30 10:15:00.5z', '1796033700.5'],
		['a time without seconds', '2026-11-30T10:15Z', '1796033700'],
		['a time before 1970', '1969-12-31T23:59:59.5Z', '-0.5'],
		['a JS Date', new Date('2026-11-30T10:15:00.250Z'), '1796033700.25'],
		['a Luxon DateTime', { isLuxonDateTime: true, toISO: () => '2026-11-30T12:15:00.000+02:00' }, '1796033700'],
	])('%s', (_case, input, expected) => {
		expect(parseVersion(input)).toBe(expected);
	});

	it.each([
		['NaN', Number.NaN, /NaN/],
		['Infinity', Number.POSITIVE_INFINITY, /infinite/],
		['a number beyond 2^53 (maybe rounded already)', 2 ** 53 + 2, /beyond 2\^53.*as text/],
		['undefined', undefined, /missing/],
		['null', null, /missing/],
		['an empty string', '  ', /empty/],
		['a word', 'latest', /neither a number nor an ISO 8601/],
		['"NaN" as text', 'NaN', /neither/],
		['a number with exponent as text', '1e400', /neither/],
		['a boolean', true, /not boolean/],
		['an object', { version: 1 }, /not object/],
		['an array', [1], /not an array/],
		['a date without a time zone', '2026-11-30T10:15:00', /time zone/],
		['a date without a time', '2026-11-30', /time zone/],
		['February 30th', '2026-02-30T10:00:00Z', /not a real date/],
		['hour 24', '2026-11-30T24:00:00Z', /not a real date/],
		['year 0', '0000-01-01T00:00:00Z', /not a real date/],
		['an invalid JS Date', new Date('nope'), /invalid date/],
	])('refuses %s with a clear error', (_case, input, message) => {
		expect(() => parseVersion(input)).toThrow(InvalidVersionError);
		expect(() => parseVersion(input)).toThrow(message);
	});
});

describe('compareVersions', () => {
	it.each([
		['1', '2', -1],
		['10', '9', 1],
		['9007199254740993', '9007199254740992', 1],
		['1.5', '1.25', 1],
		['1.5', '1.5', 0],
		['-1', '1', -1],
		['-2', '-1', -1],
		['-1.5', '-1.25', -1],
		['0', '0.000001', -1],
		['1796033700.123456789', '1796033700.12345679', -1],
	])('%s vs %s', (a, b, sign) => {
		expect(Math.sign(compareVersions(a, b))).toBe(sign);
		expect(Math.sign(compareVersions(b, a))).toBe(sign === 0 ? 0 : -sign);
	});
});
