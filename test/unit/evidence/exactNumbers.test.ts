import crypto from 'node:crypto';

import {
	exactPayloadSource,
	inexactNumbers,
	isExactInJavaScript,
	parseWithExactNumbers,
	plainDecimal,
} from '../../../lib/evidence/exactNumbers';
import { storablePayload } from '../../../lib/store/storableValues';

const BIG = '12345678901234567890';

describe('isExactInJavaScript: whether Number() keeps a JSON number token', () => {
	it.each([
		'0',
		'-0',
		'42',
		'-17',
		'0.1',
		'1e2',
		'1.5e21',
		'100000000000000000000',
		'9007199254740992',
		'12345678901234567000',
		'0.30000000000000004',
		'-0.000',
	])('%s: kept', (token) => expect(isExactInJavaScript(token)).toBe(true));
	it.each([
		BIG,
		'9007199254740993',
		'-9007199254740993',
		'0.1000000000000000055511151231257827',
		'1e400',
		'-1e400',
		'1e-400',
		'1.2345678901234567890e25',
	])('%s: changed (rounded, Infinity or zero)', (token) => expect(isExactInJavaScript(token)).toBe(false));
});

describe('inexactNumbers: a scan of the text, strings skipped', () => {
	it('finds the changed tokens with their positions, not digits inside strings or member names', () => {
		const text = `{"${BIG}":1,"note":"${BIG} \\" ${BIG}","a":[${BIG},2,-${BIG}]}`;
		const found = inexactNumbers(text);
		expect(found.map((number) => number.token)).toEqual([BIG, `-${BIG}`]);
		for (const number of found) expect(text.slice(number.start, number.end)).toBe(number.token);
	});

	it('reads 10 MB without recursion, however deep', () => {
		const deep = `${'['.repeat(5_000_000)}${BIG}${']'.repeat(5_000_000)}`;
		expect(inexactNumbers(deep)).toEqual([{ start: 5_000_000, end: 5_000_000 + BIG.length, token: BIG }]);
	});
});

describe('plainDecimal: the token as Postgres numeric prints it', () => {
	it.each([
		[BIG, BIG],
		['1e400', `1${'0'.repeat(400)}`],
		['1.50e1', '15.0'],
		['-1.2345678901234567890e25', '-12345678901234567890000000'],
		['1e-3', '0.001'],
		['12.5e-1', '1.25'],
		['-0.0e5', '0'],
	])('%s → %s', (token, plain) => expect(plainDecimal(token)).toBe(plain));

	it('none beyond numeric (131072 digits before the point, 16383 after), computed without building the digits', () => {
		expect(plainDecimal('1e131071')?.length).toBe(131_072);
		expect(plainDecimal('1e131072')).toBeUndefined();
		expect(plainDecimal('1e-16383')?.length).toBe(16_385);
		expect(plainDecimal('1e-16384')).toBeUndefined();
		expect(plainDecimal('1e99999999999999999999999')).toBeUndefined();
	});
});

describe('parseWithExactNumbers: the read rule for a stored payload', () => {
	it('gives changed numbers as exact digit strings and everything else as JSON.parse does', () => {
		expect(parseWithExactNumbers(`{"amount": ${BIG}, "small": 42, "text": "${BIG}", "list": [0.1, ${BIG}]}`)).toEqual({
			amount: BIG,
			small: 42,
			text: BIG,
			list: [0.1, BIG],
		});
		expect(parseWithExactNumbers(BIG)).toBe(BIG);
		expect(parseWithExactNumbers('null')).toBeNull();
	});
});

describe('exactPayloadSource and storablePayload with a raw body', () => {
	const rawOf = (text: string) => Buffer.from(text, 'utf8');

	it('a body without changed numbers is stored as it is (the item body, no extra work)', () => {
		const raw = '{"id":"evt_1","amount":1999}';
		expect(exactPayloadSource(JSON.parse(raw), rawOf(raw), 1024)).toEqual({ kind: 'body' });
		expect(storablePayload(JSON.parse(raw), 1024, rawOf(raw))).toEqual(storablePayload(JSON.parse(raw), 1024));
	});

	it('stores the raw digits, whitespace and all other text as JSON.stringify writes them', () => {
		const raw = `{ "id" : "evt_1",\n "amount" : ${BIG} , "é": "\\u00e9" }`;
		const stored = storablePayload(JSON.parse(raw), 1024, rawOf(raw));
		const json = `{"id":"evt_1","amount":${BIG},"é":"é"}`;
		expect(stored).toEqual({ json, bytes: Buffer.byteLength(json), warnings: [] });
	});

	it('a byte-order mark before the JSON is skipped', () => {
		const raw = `\uFEFF{"amount":${BIG}}`;
		expect(storablePayload({ amount: Number(BIG) }, 1024, rawOf(raw)).json).toBe(`{"amount":${BIG}}`);
	});

	it('a top-level number is stored exactly too', () => {
		expect(storablePayload(Number(BIG), 1024, rawOf(BIG)).json).toBe(BIG);
	});

	it('a body that holds the random placeholder text itself is not stored (never a wrong number)', () => {
		const raw = `{"trap":"exact-number:feedface:0","amount":${BIG}}`;
		expect(exactPayloadSource(JSON.parse(raw), rawOf(raw), 1024, 'feedface')).toEqual({ kind: 'placeholderClash' });
		// Escaped in the raw text, the same string is still found.
		const escaped = `{"trap":"exact-number:\\u0066eedface:0","amount":${BIG}}`;
		expect(exactPayloadSource(JSON.parse(escaped), rawOf(escaped), 1024, 'feedface')).toEqual({ kind: 'placeholderClash' });
		expect(exactPayloadSource(JSON.parse(raw), rawOf(raw), 1024, 'cafe').kind).toBe('exact');
	});

	it('storablePayload: such a body is not stored, with the reason, rather than risk a wrong number', () => {
		const random = jest.spyOn(crypto, 'randomBytes').mockImplementation(() => Buffer.from('feedface', 'hex'));
		try {
			const raw = `{"trap":"exact-number:feedface:0","amount":${BIG}}`;
			expect(storablePayload(JSON.parse(raw), 1024, rawOf(raw))).toEqual({
				json: null,
				bytes: null,
				notStoredReason: 'The payload was not stored: its exact numbers could not be put back into it. The key was reserved without it.',
				warnings: [],
			});
		} finally {
			random.mockRestore();
		}
	});

	it('the numbers alone over the cap: over the cap, with their size as a lower bound', () => {
		const raw = `[${Array.from({ length: 100 }, () => '1e500').join(',')}]`;
		const stored = storablePayload(JSON.parse(raw), 10_000, rawOf(raw));
		expect(stored).toMatchObject({
			json: null,
			notStoredReason: expect.stringMatching(/it is at least 1\d{4} bytes of JSON, over the 10000-byte limit/),
		});
	});

	it('without a raw body the parsed body is all there is: stored as it is', () => {
		expect(storablePayload({ amount: Number(BIG) }, 1024).json).toBe('{"amount":12345678901234567000}');
	});
});
