import { isHeaderBag, readFirstHeader, readHeader, type HeaderValue } from '../../lib/headers';

const present = (value: string, joined = false): HeaderValue => ({ status: 'present', value, joined });
const MISSING: HeaderValue = { status: 'missing' };
const AMBIGUOUS: HeaderValue = { status: 'ambiguous' };

describe('readHeader: the one rule for reading a request header', () => {
	it.each<[string, unknown, string, HeaderValue]>([
		// Names
		['a lower-case name, asked in mixed case', { 'x-sig': 'a' }, 'X-Sig', present('a')],
		['a mixed-case name, value trimmed', { 'X-SIG': ' a ' }, 'x-sig', present('a')],
		['the name asked with surrounding spaces', { 'x-sig': 'a' }, ' x-sig ', present('a')],
		['a name that only Unicode case folding matches (Kelvin sign K)', { 'x-\u212Aey': 'a' }, 'x-key', MISSING],
		['a name with a space inside the item', { ' x-sig': 'a' }, 'x-sig', MISSING],
		// Absent and empty
		['absent', { other: 'a' }, 'x-sig', MISSING],
		['empty', { 'x-sig': '' }, 'x-sig', MISSING],
		['only spaces', { 'x-sig': '  ' }, 'x-sig', MISSING],
		['undefined', { 'x-sig': undefined }, 'x-sig', MISSING],
		['null', { 'x-sig': null }, 'x-sig', MISSING],
		['an empty array', { 'x-sig': [] }, 'x-sig', MISSING],
		['an array of empty values', { 'x-sig': ['', ' '] }, 'x-sig', MISSING],
		// Numbers, booleans, objects
		['a whole number (a Code node)', { 'x-sig': 42 }, 'x-sig', present('42')],
		['a negative whole number', { 'x-sig': -7 }, 'x-sig', present('-7')],
		['a whole number and its digits', { 'x-sig': [42, '42'] }, 'x-sig', present('42')],
		[
			'a number beyond 2^53 (may have been rounded)',
			{ 'x-sig': 2 ** 53 + 2 },
			'x-sig',
			{ status: 'notText', type: 'a number that is not a whole number within ±2^53' },
		],
		['a fraction', { 'x-sig': 1.5 }, 'x-sig', { status: 'notText', type: 'a number that is not a whole number within ±2^53' }],
		['NaN', { 'x-sig': Number.NaN }, 'x-sig', { status: 'notText', type: 'a number that is not a whole number within ±2^53' }],
		['a bigint', { 'x-sig': 2n ** 64n }, 'x-sig', present('18446744073709551616')],
		['a boolean', { 'x-sig': true }, 'x-sig', { status: 'notText', type: 'a boolean' }],
		['false', { 'x-sig': false }, 'x-sig', { status: 'notText', type: 'a boolean' }],
		['an object', { 'x-sig': { a: 1 } }, 'x-sig', { status: 'notText', type: 'an object' }],
		['a list inside a list', { 'x-sig': [['a']] }, 'x-sig', { status: 'notText', type: 'a list inside a list' }],
		['a boolean next to a genuine value', { 'x-sig': ['a', true] }, 'x-sig', { status: 'notText', type: 'a boolean' }],
		// Repeated: the same value counts once
		['an array with one value', { 'x-sig': ['a'] }, 'x-sig', present('a')],
		['the same value twice in an array', { 'x-sig': ['a', ' a'] }, 'x-sig', present('a')],
		['the same value under two spellings', { 'x-sig': 'a', 'X-Sig': 'a' }, 'x-sig', present('a')],
		[
			'the same value twice, joined with ", " (a header sent twice, as n8n hands it over)',
			{ 'x-sig': 'a, a' },
			'x-sig',
			present('a', true),
		],
		['the same value three times, joined with ",\\t" and ",  "', { 'x-sig': 'a,\ta,  a' }, 'x-sig', present('a', true)],
		// Repeated: different values are ambiguous
		['two values in an array', { 'x-sig': ['a', 'b'] }, 'x-sig', AMBIGUOUS],
		['two spellings with different values', { 'x-sig': 'a', 'X-Sig': 'b' }, 'x-sig', AMBIGUOUS],
		['two values joined with ", "', { 'x-sig': 'a, b' }, 'x-sig', AMBIGUOUS],
		['two values joined with ",\\t"', { 'x-sig': 'a,\tb' }, 'x-sig', AMBIGUOUS],
		['a value joined with an empty one ("a, ")', { 'x-sig': 'a, ' }, 'x-sig', AMBIGUOUS],
		['an empty value first, then a value', { 'x-sig': ['', 'a'] }, 'x-sig', AMBIGUOUS],
		['a number next to a different text', { 'x-sig': [7, 'a'] }, 'x-sig', AMBIGUOUS],
		['an array entry that is itself joined', { 'x-sig': ['a', 'a, b'] }, 'x-sig', AMBIGUOUS],
		['the same value joined, next to a different spelling', { 'x-sig': 'a, a', 'X-SIG': 'b' }, 'x-sig', AMBIGUOUS],
		// Formats that contain commas or spaces, but no comma followed by whitespace, are one value
		["commas without whitespace (Stripe's own format)", { 'x-sig': 't=1,v1=a' }, 'x-sig', present('t=1,v1=a')],
		['spaces without commas (a Standard Webhooks list)', { 'x-sig': 'v1,a v1,b' }, 'x-sig', present('v1,a v1,b')],
		// Text Postgres cannot hold passes through: each reader decides (refuse a key, repair a trace id)
		['a NUL', { 'x-sig': 'a\u0000b' }, 'x-sig', present('a\u0000b')],
		['a lone surrogate', { 'x-sig': 'a\ud800' }, 'x-sig', present('a\ud800')],
	])('%s', (_case, headers, name, expected) => {
		expect(readHeader(headers, name)).toEqual(expected);
	});

	it.each<[string, unknown]>([
		['undefined', undefined],
		['null', null],
		['text', 'x-sig: a'],
		['an array of pairs', [['x-sig', 'a']]],
	])('finds no header in %s, which is not a header bag', (_case, headers) => {
		expect(isHeaderBag(headers)).toBe(false);
		expect(readHeader(headers, 'x-sig')).toEqual(MISSING);
	});

	it('reads an absurdly long value whole, and a long list of repeats by the same rule', () => {
		const long = 'v'.repeat(8 * 1024 * 1024);
		expect(readHeader({ 'x-sig': long }, 'x-sig')).toEqual(present(long));
		const different = Array.from({ length: 100_000 }, (_, index) => `v${index}`).join(', ');
		expect(readHeader({ 'x-sig': different }, 'x-sig')).toEqual(AMBIGUOUS);
		const same = Array.from({ length: 100_000 }, () => 'v').join(', ');
		expect(readHeader({ 'x-sig': same }, 'x-sig')).toEqual(present('v', true));
	});

	it('reads own members only: a header bag parsed from JSON with a "__proto__" member', () => {
		const headers: unknown = JSON.parse('{"__proto__": "a", "x-sig": "b"}');
		expect(readHeader(headers, '__proto__')).toEqual(present('a'));
		expect(readHeader({}, 'constructor')).toEqual(MISSING);
		expect(readHeader({}, 'toString')).toEqual(MISSING);
	});
});

describe('readFirstHeader', () => {
	it('falls back to the next name only when the first is missing', () => {
		expect(readFirstHeader({ 'svix-id': 'b' }, ['webhook-id', 'svix-id'])).toEqual(present('b'));
		expect(readFirstHeader({ 'webhook-id': '', 'svix-id': 'b' }, ['webhook-id', 'svix-id'])).toEqual(present('b'));
		expect(readFirstHeader({ 'webhook-id': 'a', 'svix-id': 'b' }, ['webhook-id', 'svix-id'])).toEqual(present('a'));
		expect(readFirstHeader({ 'webhook-id': 'a, c', 'svix-id': 'b' }, ['webhook-id', 'svix-id'])).toEqual(AMBIGUOUS);
		expect(readFirstHeader({ 'webhook-id': true, 'svix-id': 'b' }, ['webhook-id', 'svix-id'])).toMatchObject({ status: 'notText' });
		expect(readFirstHeader({}, ['webhook-id', 'svix-id'])).toEqual(MISSING);
	});
});
