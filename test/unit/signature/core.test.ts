import { readHeader, readFirstHeader } from '../../../lib/signature/headers';
import { decodeBase64, decodeHex, signaturesEqual } from '../../../lib/signature/hmac';
import { parseSecrets } from '../../../lib/signature/secrets';
import { checkTimestamp, parseUnixSeconds } from '../../../lib/signature/timestamp';
import { FAILURE_DESCRIPTIONS, SIGNATURE_SCHEMES, type SignatureScheme } from '../../../lib/signature';
import { NOW, verify } from './fixtures';

describe('readHeader', () => {
	it.each([
		['lower-case name', { 'x-sig': 'a' }, 'X-Sig', { status: 'present', value: 'a' }],
		['mixed-case name', { 'X-SIG': ' a ' }, 'x-sig', { status: 'present', value: 'a' }],
		['absent', { other: 'a' }, 'x-sig', { status: 'missing' }],
		['empty', { 'x-sig': '  ' }, 'x-sig', { status: 'missing' }],
		['undefined', { 'x-sig': undefined }, 'x-sig', { status: 'missing' }],
		['an array with one value', { 'x-sig': ['a'] }, 'x-sig', { status: 'present', value: 'a' }],
		['the same value twice', { 'x-sig': 'a', 'X-Sig': 'a' }, 'x-sig', { status: 'present', value: 'a' }],
		['two values in an array', { 'x-sig': ['a', 'b'] }, 'x-sig', { status: 'ambiguous' }],
		['two spellings with different values', { 'x-sig': 'a', 'X-Sig': 'b' }, 'x-sig', { status: 'ambiguous' }],
	])('reads a header given as %s', (_case, headers, name, expected) => {
		expect(readHeader(headers, name)).toEqual(expected);
	});

	it('falls back to the next name only when the first is missing', () => {
		expect(readFirstHeader({ 'svix-id': 'b' }, ['webhook-id', 'svix-id'])).toEqual({ status: 'present', value: 'b' });
		expect(readFirstHeader({ 'webhook-id': 'a', 'svix-id': 'b' }, ['webhook-id', 'svix-id'])).toEqual({
			status: 'present',
			value: 'a',
		});
	});
});

describe('signaturesEqual', () => {
	const digest = Buffer.from('00112233', 'hex');

	it.each([
		['equal bytes', Buffer.from('00112233', 'hex'), true],
		['one byte differs', Buffer.from('00112234', 'hex'), false],
		['shorter', Buffer.from('001122', 'hex'), false],
		['longer', Buffer.from('0011223344', 'hex'), false],
		['empty', Buffer.alloc(0), false],
	])('compares %s', (_case, received, expected) => {
		expect(signaturesEqual(digest, received)).toBe(expected);
	});
});

describe('strict decoding', () => {
	it.each([
		['abcd', 'abcd'],
		['ABCD', 'abcd'],
		['abc', undefined],
		['abzz', undefined],
		['', undefined],
	])('decodes hex %j', (text, hex) => {
		expect(decodeHex(text)?.toString('hex')).toBe(hex);
	});

	it.each([
		['AAEC', '000102'],
		['AAE=', '0001'],
		['AA==', '00'],
		['AAE', undefined],
		['AA-_', undefined],
		['AA E', undefined],
		['', undefined],
	])('decodes base64 %j', (text, hex) => {
		expect(decodeBase64(text)?.toString('hex')).toBe(hex);
	});
});

describe('timestamps', () => {
	it.each([
		['1700000000', 1700000000],
		['0', 0],
		['-1', undefined],
		['1.5', undefined],
		['1e9', undefined],
		['1700000000000', undefined],
		[' 1', undefined],
	])('parses %j', (text, seconds) => {
		expect(parseUnixSeconds(text)).toBe(seconds);
	});

	it.each([
		[NOW, 300, undefined],
		[NOW - 300, 300, undefined],
		[NOW + 300, 300, undefined],
		[NOW - 301, 300, 'timestamp_too_old'],
		[NOW + 301, 300, 'timestamp_in_future'],
		[NOW - 1, 0, 'timestamp_too_old'],
		[NOW - 3600, 7200, undefined],
	])('judges %d with tolerance %d s', (timestamp, toleranceSeconds, reason) => {
		expect(checkTimestamp(timestamp, NOW, toleranceSeconds)).toBe(reason);
	});
});

describe('parseSecrets', () => {
	it.each([
		['one secret', 'a', ['a']],
		['one per line', 'a\nb\r\nc', ['a', 'b', 'c']],
		['space separated', 'a b', ['a', 'b']],
		['blank lines and padding', '\n  a  \n\n b \n', ['a', 'b']],
		['nothing', '  \n ', []],
	])('splits %s', (_case, text, secrets) => {
		expect(parseSecrets(text)).toEqual(secrets);
	});
});

describe('verifySignature configuration', () => {
	it.each([
		['no secrets', { secrets: [] }, 'No signing secret configured'],
		['an empty secret', { secrets: [''] }, 'No signing secret configured'],
		['a negative tolerance', { toleranceSeconds: -1 }, 'tolerance'],
		['a tolerance that is not a number', { toleranceSeconds: Number.NaN }, 'tolerance'],
		['an unknown scheme', { scheme: 'paypal' as SignatureScheme }, 'Unknown signature scheme'],
	])('throws SignatureConfigError for %s', (_case, overrides, message) => {
		expect(() => verify({ scheme: 'github', headers: {}, secrets: ['s'], ...overrides })).toThrow(
			expect.objectContaining({ name: 'SignatureConfigError', message: expect.stringContaining(message) }),
		);
	});

	it.each(SIGNATURE_SCHEMES.filter((scheme) => scheme !== 'generic'))(
		'reports a request without headers as missing_header for %s',
		(scheme) => {
			const secrets = scheme === 'standardWebhooks' ? ['whsec_AAECAw=='] : ['s'];
			expect(verify({ scheme, headers: {}, secrets })).toEqual({ valid: false, scheme, reason: 'missing_header' });
		},
	);

	it('describes every failure reason', () => {
		for (const description of Object.values(FAILURE_DESCRIPTIONS)) expect(description).toMatch(/\.$/);
	});
});
