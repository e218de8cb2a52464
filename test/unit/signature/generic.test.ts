import type { GenericHmacOptions } from '../../../lib/signature';
import { BODY, IN_FUTURE, NOW, TAMPERED_BODY, TOO_OLD, verify } from './fixtures';

const SECRET = 'generic-current';
const PREVIOUS_SECRET = 'generic-previous';

// printf '%s' '{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -hmac 'generic-current'
const SHA256_HEX = '8c263d644af6f83e7ff419f4edc48bcf265203c3f864fdb21a3f16c2eae54678';
// printf '%s' '{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -hmac 'generic-current' -binary | openssl base64 -A
const SHA256_BASE64 = 'jCY9ZEr2+D5/9Bn07cSLzyZSA8P4ZP2yGj8WwurlRng=';
// printf '%s' '{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha1 -hmac 'generic-current'
const SHA1_HEX = '47976af1113cd6330663359966899c7d471377d0';
// printf '%s' '{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha512 -hmac 'generic-current'
const SHA512_HEX =
	'9d961ad9ae2046af55fa6c627557a05ed80f00ca14c714a1dfda7cf985b4bcf285aa09d84588e93e16921a4ea32c4b3beab0b4bff218163ee779cbd38e6ea180';
// printf '%s' '{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha512 -hmac 'generic-current' -binary | openssl base64 -A
const SHA512_BASE64 = 'nZYa2a4gRq9V+mxidVegXtgPAMoUxxSh39p8+YW0vPKFqgnYRYjpPhaSGk6jLEs76rC0v/IYFj7necvTjm6hgA==';
// printf '%s' '{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -hmac 'generic-previous'
const SHA256_HEX_PREVIOUS = 'e97548caf72fc9b01c29699e76bd81dfa6a294a0c0caf21d78b1656743a04c20';
// printf '%s' '1700000000.{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -hmac 'generic-current'
const TS_NOW = '85322cd41cd7763d13d1773a0ba5cc14c8c9414e6b5579df86a76c10ebf2aec0';
// printf '%s' '1699999699.{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -hmac 'generic-current'
const TS_TOO_OLD = '789ab68ab2f1b9b39db8e98fcf7f664b9e451eb6ba3e79169fc6da0e9fc6e81b';
// printf '%s' '1700000301.{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -hmac 'generic-current'
const TS_IN_FUTURE = 'c10df068643f3da6a7f6d1a674ade7831a320bc68a7138483edad89d8414f57d';

const BODY_SHA256_HEX: GenericHmacOptions = {
	algorithm: 'sha256',
	encoding: 'hex',
	signatureHeader: 'X-Signature',
	signedContent: 'body',
};

const TIMESTAMPED: GenericHmacOptions = {
	...BODY_SHA256_HEX,
	signatureHeader: 'X-Webhook-Signature',
	signaturePrefix: 'sha256=',
	signedContent: 'timestampDotBody',
	timestampHeader: 'X-Webhook-Timestamp',
};

const generic = (
	generic: GenericHmacOptions,
	headers: Record<string, string>,
	options: { secrets?: readonly string[]; body?: string } = {},
) =>
	verify({
		scheme: 'generic',
		generic,
		headers,
		secrets: options.secrets ?? [SECRET],
		rawBody: Buffer.from(options.body ?? BODY, 'utf8'),
	});

describe('verifySignature: generic, raw body', () => {
	it.each([
		['sha256 hex', { algorithm: 'sha256', encoding: 'hex' }, SHA256_HEX],
		['sha256 base64', { algorithm: 'sha256', encoding: 'base64' }, SHA256_BASE64],
		['sha1 hex with a sha1= prefix', { algorithm: 'sha1', encoding: 'hex', signaturePrefix: 'sha1=' }, `sha1=${SHA1_HEX}`],
		['sha512 hex', { algorithm: 'sha512', encoding: 'hex' }, SHA512_HEX],
		['sha512 base64', { algorithm: 'sha512', encoding: 'base64' }, SHA512_BASE64],
	] as const)('accepts %s', (_case, settings, header) => {
		expect(generic({ ...BODY_SHA256_HEX, ...settings }, { 'x-signature': header })).toEqual({
			valid: true,
			scheme: 'generic',
		});
	});

	it('accepts a delivery signed with the old secret during rotation', () => {
		expect(generic(BODY_SHA256_HEX, { 'x-signature': SHA256_HEX_PREVIOUS }, { secrets: [SECRET, PREVIOUS_SECRET] })).toEqual({
			valid: true,
			scheme: 'generic',
		});
	});

	it.each([
		['a tampered body', BODY_SHA256_HEX, { 'x-signature': SHA256_HEX }, { body: TAMPERED_BODY }, 'signature_mismatch'],
		['a wrong secret', BODY_SHA256_HEX, { 'x-signature': SHA256_HEX }, { secrets: ['generic-wrong'] }, 'signature_mismatch'],
		['the wrong algorithm', { ...BODY_SHA256_HEX, algorithm: 'sha512' }, { 'x-signature': SHA256_HEX }, {}, 'signature_mismatch'],
		['no header', BODY_SHA256_HEX, { 'x-other': SHA256_HEX }, {}, 'missing_header'],
		['base64 where hex is configured', BODY_SHA256_HEX, { 'x-signature': SHA256_BASE64 }, {}, 'malformed_header'],
		['a missing prefix', { ...BODY_SHA256_HEX, signaturePrefix: 'sha256=' }, { 'x-signature': SHA256_HEX }, {}, 'malformed_header'],
		['an unexpected prefix', BODY_SHA256_HEX, { 'x-signature': `sha256=${SHA256_HEX}` }, {}, 'malformed_header'],
	] as const)('rejects %s', (_case, settings, headers, options, reason) => {
		expect(generic(settings, headers, options)).toEqual({ valid: false, scheme: 'generic', reason });
	});
});

describe('verifySignature: generic, timestamp and body', () => {
	const headers = (signature: string, timestamp?: string) => ({
		'X-Webhook-Signature': `sha256=${signature}`,
		...(timestamp === undefined ? {} : { 'X-Webhook-Timestamp': timestamp }),
	});

	it('accepts a valid signature and returns the timestamp', () => {
		expect(generic(TIMESTAMPED, headers(TS_NOW, String(NOW)))).toEqual({ valid: true, scheme: 'generic', timestamp: NOW });
	});

	it.each([
		['a tampered body', headers(TS_NOW, String(NOW)), { body: TAMPERED_BODY }, 'signature_mismatch'],
		['a wrong secret', headers(TS_NOW, String(NOW)), { secrets: ['generic-wrong'] }, 'signature_mismatch'],
		['a body-only signature', headers(SHA256_HEX, String(NOW)), {}, 'signature_mismatch'],
		['a timestamp 301 s old', headers(TS_TOO_OLD, String(TOO_OLD)), {}, 'timestamp_too_old'],
		['a timestamp 301 s ahead', headers(TS_IN_FUTURE, String(IN_FUTURE)), {}, 'timestamp_in_future'],
		['no timestamp header', headers(TS_NOW), {}, 'missing_timestamp'],
		['a negative timestamp', headers(TS_NOW, '-1700000000'), {}, 'malformed_timestamp'],
		['no signature header', { 'X-Webhook-Timestamp': String(NOW) }, {}, 'missing_header'],
	] as const)('rejects %s', (_case, requestHeaders, options, reason) => {
		expect(generic(TIMESTAMPED, requestHeaders, options)).toMatchObject({ valid: false, scheme: 'generic', reason });
	});
});

describe('verifySignature: generic settings', () => {
	it.each([
		['no settings at all', undefined, 'needs its HMAC settings'],
		['an unknown algorithm', { ...BODY_SHA256_HEX, algorithm: 'md5' }, 'Unsupported HMAC algorithm'],
		['an unknown encoding', { ...BODY_SHA256_HEX, encoding: 'base32' }, 'Unsupported signature encoding'],
		['an empty header name', { ...BODY_SHA256_HEX, signatureHeader: '' }, 'not a valid signature header name'],
		['a header name with a space', { ...BODY_SHA256_HEX, signatureHeader: 'X Signature' }, 'not a valid signature header name'],
		['no timestamp header when signing one', { ...TIMESTAMPED, timestampHeader: undefined }, 'not a valid timestamp header name'],
		['unknown signed content', { ...BODY_SHA256_HEX, signedContent: 'headers' }, 'Unsupported signed content'],
	])('throws a configuration error for %s', (_case, settings, message) => {
		expect(() =>
			verify({
				scheme: 'generic',
				generic: settings as GenericHmacOptions | undefined,
				headers: { 'x-signature': SHA256_HEX },
				secrets: [SECRET],
			}),
		).toThrow(expect.objectContaining({ name: 'SignatureConfigError', message: expect.stringContaining(message) }));
	});
});
