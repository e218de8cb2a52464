import nodeCrypto from 'node:crypto';

import { decodeBase64, decodeHex, signaturesEqual } from '../../../lib/signature/hmac';
import { checkTimestamp, parseUnixSeconds } from '../../../lib/signature/timestamp';
import { FAILURE_DESCRIPTIONS, SIGNATURE_SCHEMES, type SignatureScheme } from '../../../lib/signature';
import { BODY, NOW, verify } from './fixtures';
import { SIGNERS } from './signers';

afterEach(() => {
	jest.restoreAllMocks();
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

	// timingSafeEqual throws on unequal lengths; skipping it then would make a wrong-length
	// signature answer faster than a wrong-content one. Pinned: one constant-time comparison of
	// digest-length buffers per call, whatever was received.
	it.each([
		['equal bytes', Buffer.from('00112233', 'hex')],
		['one byte differs', Buffer.from('00112234', 'hex')],
		['shorter', Buffer.from('001122', 'hex')],
		['longer', Buffer.from('0011223344', 'hex')],
		['empty', Buffer.alloc(0)],
	])('runs exactly one timingSafeEqual over digest-length buffers for %s', (_case, received) => {
		const timingSafeEqual = jest.spyOn(nodeCrypto, 'timingSafeEqual');

		signaturesEqual(digest, received);

		expect(timingSafeEqual).toHaveBeenCalledTimes(1);
		const [left, right] = timingSafeEqual.mock.calls[0] as [Buffer, Buffer];
		expect([left.length, right.length]).toEqual([digest.length, digest.length]);
	});
});

describe('verifySignature compares in constant time', () => {
	// Stripe, two secrets, three v1 signatures: the genuine one, one of the wrong length, one wrong.
	// printf '%s' '1700000000.{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -hmac 'whsec_stripe_current'
	const genuine = '8a9d24dedd0d68aaff9e4bb65b447709950652ad85357c9c62291358406e7029';
	const header = (...signatures: string[]) => ({
		'stripe-signature': [`t=${NOW}`, ...signatures.map((signature) => `v1=${signature}`)].join(','),
	});

	it.each([
		[
			'the first secret matches the first signature',
			header(genuine, 'abcd', 'ff'.repeat(32)),
			['whsec_stripe_current', 'whsec_other'],
			true,
		],
		['the last secret matches the last signature', header('abcd', 'ff'.repeat(32), genuine), ['whsec_other', 'whsec_stripe_current'], true],
		['nothing matches', header('abcd', 'ff'.repeat(32), 'ee'.repeat(32)), ['whsec_stripe_current', 'whsec_other'], false],
	])('tries every secret against every signature through timingSafeEqual when %s', (_case, headers, secrets, valid) => {
		const timingSafeEqual = jest.spyOn(nodeCrypto, 'timingSafeEqual');

		expect(verify({ scheme: 'stripe', headers, secrets }).valid).toBe(valid);

		// No early exit and no other comparison: 2 secrets × 3 signatures.
		expect(timingSafeEqual).toHaveBeenCalledTimes(6);
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

describe('verifySignature configuration', () => {
	it.each([
		['no secrets', { secrets: [] }, 'No signing secret configured'],
		['an empty secret', { secrets: [''] }, 'empty or only whitespace'],
		['a secret that is only whitespace', { secrets: [' \t '] }, 'empty or only whitespace'],
		['a blank previous secret', { secrets: ['s', ' '] }, 'empty or only whitespace'],
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

	// n8n's Webhook node puts a multipart request's files in binary fields by their names: a captured delivery posted as
	// the file "data" would stand in for the raw body. Refused whatever the signature, genuine or not.
	it.each(['multipart/form-data; boundary=x', 'Multipart/Mixed', ['application/json', 'multipart/form-data']])(
		'refuses a multipart request before any signature is checked (Content-Type %j)',
		(contentType) => {
			const signed = SIGNERS.github('s', Buffer.from(BODY));
			expect(verify({ scheme: 'github', secrets: ['s'], headers: { ...signed, 'Content-Type': contentType } })).toEqual({
				valid: false,
				scheme: 'github',
				reason: 'multipart_body',
			});
			expect(verify({ scheme: 'github', secrets: ['s'], headers: { ...signed, 'content-type': 'application/json' } }).valid).toBe(true);
		},
	);

	it('describes every failure reason', () => {
		for (const description of Object.values(FAILURE_DESCRIPTIONS)) expect(description).toMatch(/\.$/);
	});
});
