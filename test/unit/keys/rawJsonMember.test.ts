import { topLevelMember } from '../../../lib/keys/rawJsonMember';

describe('topLevelMember: the exact text of a top-level member in the raw body', () => {
	it('reads an integer beyond 2^53 digit for digit', () => {
		expect(topLevelMember(Buffer.from('{"id": 12345678901234567890}'), 'id')).toEqual({ kind: 'number', text: '12345678901234567890' });
	});

	it.each([
		['negative', '{"id":-98765432109876543210}', '-98765432109876543210'],
		['fraction', '{"id":1.50}', '1.50'],
		['exponent', '{"id":1.2345678901234567890E+19}', '1.2345678901234567890E+19'],
		['zero', '{"id":0}', '0'],
	])('keeps the %s form as written', (_name, raw, text) => {
		expect(topLevelMember(raw, 'id')).toEqual({ kind: 'number', text });
	});

	it('skips whitespace of every JSON kind around names, colons and values', () => {
		expect(topLevelMember(' \r\n\t{ \n"id"\t:\r\n 42 \n}\n ', 'id')).toEqual({ kind: 'number', text: '42' });
	});

	it('is not fooled by escaped quotes and braces in strings before the member', () => {
		const raw = '{"note":"a \\"quoted\\" } { \\\\","x":"\\"id\\": 1","id":777777777777777777777}';
		expect(JSON.parse(raw).note).toBe('a "quoted" } { \\');
		expect(topLevelMember(raw, 'id')?.text).toBe('777777777777777777777');
	});

	it('ignores nested objects and arrays with their own "id"', () => {
		const raw = '{"data":{"object":{"id":111111111111111111111}},"list":[{"id":2},[{"id":3}]],"id":999999999999999999999}';
		expect(topLevelMember(raw, 'id')?.text).toBe('999999999999999999999');
		expect(topLevelMember('{"data":{"id":111111111111111111111}}', 'id')).toBeUndefined();
	});

	it('takes the last of duplicate members, as JSON.parse does', () => {
		const raw = '{"id":11111111111111111111,"id":22222222222222222222}';
		// eslint-disable-next-line no-loss-of-precision -- the same rounding JSON.parse does is the point
		expect(JSON.parse(raw).id).toBe(22222222222222222222);
		expect(topLevelMember(raw, 'id')?.text).toBe('22222222222222222222');
	});

	it('decodes escapes in member names ("\\u0069d" is "id")', () => {
		expect(topLevelMember('{"\\u0069d":33333333333333333333}', 'id')?.text).toBe('33333333333333333333');
		expect(topLevelMember('{"ID":33333333333333333333}', 'id')).toBeUndefined();
	});

	it('reports strings, literals and containers with their kind', () => {
		expect(topLevelMember('{"id":"evt_1"}', 'id')).toEqual({ kind: 'string', text: '"evt_1"' });
		expect(topLevelMember('{"id":null}', 'id')).toEqual({ kind: 'literal', text: 'null' });
		expect(topLevelMember('{"id":{"a":[1,{}]}}', 'id')).toEqual({ kind: 'object', text: '{"a":[1,{}]}' });
		expect(topLevelMember('{"id":[]}', 'id')).toEqual({ kind: 'array', text: '[]' });
	});

	it('accepts a UTF-8 byte order mark', () => {
		expect(topLevelMember(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"id":44444444444444444444}')]), 'id')?.text).toBe(
			'44444444444444444444',
		);
	});

	it.each([
		['not JSON', 'id=1'],
		['an array', '[{"id":55555555555555555555}]'],
		['truncated', '{"id":55555555555555555555'],
		['trailing text', '{"id":55555555555555555555} x'],
		['trailing comma', '{"id":55555555555555555555,}'],
		['leading zero', '{"id":0123}'],
		['a bad escape', '{"a":"\\x","id":1}'],
		['a raw control character in a string', '{"a":"\u0001","id":1}'],
		['an unclosed nested object', '{"a":{"b":1,"id":1}'],
		['empty', ''],
	])('returns nothing for %s', (_name, raw) => {
		expect(topLevelMember(raw, 'id')).toBeUndefined();
	});

	it('reads past 100,000 levels of nesting without exhausting the stack', () => {
		const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
		expect(topLevelMember(`{"deep":${deep},"id":66666666666666666666}`, 'id')?.text).toBe('66666666666666666666');
	});

	it('agrees with JSON.parse on which member it read, for random bodies', () => {
		for (let round = 0; round < 200; round++) {
			const members: string[] = [];
			let lastId: number | undefined;
			for (let member = 0; member < 5; member++) {
				if (Math.random() < 0.4) {
					lastId = member + 1;
					members.push(`"id":${lastId}${'0'.repeat(20)}`);
				} else {
					members.push(`"m${member}":${JSON.stringify({ id: member, s: '"}{[', n: [member] })}`);
				}
			}
			const raw = `{${members.join(' , ')}}`;
			const parsed = JSON.parse(raw) as { id?: number };
			const token = topLevelMember(raw, 'id');
			expect(token?.text).toBe(lastId === undefined ? undefined : `${lastId}${'0'.repeat(20)}`);
			if (token) expect(Number(token.text)).toBe(parsed.id);
		}
	});
});
