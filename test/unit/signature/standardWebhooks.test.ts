import { BODY, IN_FUTURE, NOW, TAMPERED_BODY, TOO_OLD, verify } from './fixtures';

// The keys are the 32 bytes 00..1f and 20..3f; the secrets are "whsec_" + their base64:
// printf '%s' '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f' | xxd -r -p | openssl base64 -A
const SECRET = 'whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=';
// printf '%s' '202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f' | xxd -r -p | openssl base64 -A
const PREVIOUS_SECRET = 'whsec_ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=';

const KEY = '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f';
// printf '%s' 'msg_1.1700000000.{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -mac HMAC -macopt hexkey:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f -binary | openssl base64 -A
const SIG_NOW = 'swWzXvokW8YVExXQw2PnyAsWN+wxu2/MGbRbWUVovRI=';
// printf '%s' 'msg_1.1699999699.{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -mac HMAC -macopt hexkey:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f -binary | openssl base64 -A
const SIG_TOO_OLD = 'yPtVlWL/eCAJfls2XZp5dvbfiW12J8i4mO0eKR4GO3M=';
// printf '%s' 'msg_1.1700000301.{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -mac HMAC -macopt hexkey:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f -binary | openssl base64 -A
const SIG_IN_FUTURE = 'fsxVqn85An5xFHnqffyQEnxU5B/KNsZLisfXcTsZTv0=';
// printf '%s' 'msg_1.1700000000.{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -mac HMAC -macopt hexkey:202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f -binary | openssl base64 -A
const SIG_PREVIOUS = 'mK7oCK50jm7rYyVu957YDJMTN26mDV78AIulnFvoB9w=';

type Headers = Record<string, string>;

const headersFor = (signature: string, timestamp = String(NOW), prefix = 'webhook'): Headers => ({
	[`${prefix}-id`]: 'msg_1',
	[`${prefix}-timestamp`]: timestamp,
	[`${prefix}-signature`]: signature,
});

const standard = (headers: Headers, options: { secrets?: string[]; body?: string } = {}) =>
	verify({
		scheme: 'standardWebhooks',
		headers,
		secrets: options.secrets ?? [SECRET],
		rawBody: Buffer.from(options.body ?? BODY, 'utf8'),
	});

const without = (headers: Headers, name: string): Headers => {
	const copy = { ...headers };
	delete copy[name];
	return copy;
};

describe('verifySignature: standardWebhooks', () => {
	it('uses the base64-decoded key, not the secret text', () => {
		expect(Buffer.from(SECRET.slice('whsec_'.length), 'base64').toString('hex')).toBe(KEY);
	});

	it.each([
		['webhook-* headers', headersFor(`v1,${SIG_NOW}`), [SECRET]],
		['svix-* headers', headersFor(`v1,${SIG_NOW}`, String(NOW), 'svix'), [SECRET]],
		[
			'header names in any case',
			{ 'Webhook-Id': 'msg_1', 'Webhook-Timestamp': String(NOW), 'Webhook-Signature': `v1,${SIG_NOW}` },
			[SECRET],
		],
		['a secret without the whsec_ prefix', headersFor(`v1,${SIG_NOW}`), [SECRET.slice('whsec_'.length)]],
		['a secret without base64 padding', headersFor(`v1,${SIG_NOW}`), [SECRET.replace(/=+$/, '')]],
		['a list of which the last is valid', headersFor(`v1,${SIG_PREVIOUS} v1,${SIG_TOO_OLD} v1,${SIG_NOW}`), [SECRET]],
		['a v1a (asymmetric) entry next to v1', headersFor(`v1a,${SIG_PREVIOUS} v1,${SIG_NOW}`), [SECRET]],
		['a garbled entry next to a valid one', headersFor(`v1,!!! v1,${SIG_NOW}`), [SECRET]],
		['rotation: a delivery signed with the old secret', headersFor(`v1,${SIG_PREVIOUS}`), [SECRET, PREVIOUS_SECRET]],
		['rotation: both signatures sent during the switch', headersFor(`v1,${SIG_NOW} v1,${SIG_PREVIOUS}`), [PREVIOUS_SECRET]],
	])('accepts %s', (_case, headers, secrets) => {
		expect(standard(headers, { secrets })).toEqual({ valid: true, scheme: 'standardWebhooks', timestamp: NOW });
	});

	it.each([
		['a tampered body', headersFor(`v1,${SIG_NOW}`), { body: TAMPERED_BODY }, 'signature_mismatch'],
		['a wrong secret', headersFor(`v1,${SIG_NOW}`), { secrets: [PREVIOUS_SECRET] }, 'signature_mismatch'],
		['another message id', { ...headersFor(`v1,${SIG_NOW}`), 'webhook-id': 'msg_2' }, {}, 'signature_mismatch'],
		['a timestamp 301 s old', headersFor(`v1,${SIG_TOO_OLD}`, String(TOO_OLD)), {}, 'timestamp_too_old'],
		['a timestamp 301 s ahead', headersFor(`v1,${SIG_IN_FUTURE}`, String(IN_FUTURE)), {}, 'timestamp_in_future'],
		['no signature header', without(headersFor(`v1,${SIG_NOW}`), 'webhook-signature'), {}, 'missing_header'],
		['no id header', without(headersFor(`v1,${SIG_NOW}`), 'webhook-id'), {}, 'missing_header'],
		['no timestamp header', without(headersFor(`v1,${SIG_NOW}`), 'webhook-timestamp'), {}, 'missing_timestamp'],
		['a non-numeric timestamp', headersFor(`v1,${SIG_NOW}`, 'soon'), {}, 'malformed_timestamp'],
		['a signature without version', headersFor(SIG_NOW), {}, 'malformed_header'],
		['only v1a entries', headersFor(`v1a,${SIG_NOW}`), {}, 'malformed_header'],
		['v1 with an equals sign instead of a comma', headersFor(`v1=${SIG_NOW}`), {}, 'malformed_header'],
		['a hex signature', headersFor('v1,b305b35efa245bc6151315d0c363e7c80b1637ec31bb6fcc19b45b594568bd12'), {}, 'signature_mismatch'],
	])('rejects %s', (_case, headers, options, reason) => {
		expect(standard(headers, options)).toMatchObject({ valid: false, scheme: 'standardWebhooks', reason });
	});

	it.each([
		['not base64 after the prefix', 'whsec_not*base64'],
		['only padding after the prefix', 'whsec_===='],
		['a Stripe-style secret', 'whsec_stripe_current'],
	])('throws a configuration error for a secret that is %s, without echoing it', (_case, secret) => {
		expect(() => standard(headersFor(`v1,${SIG_NOW}`), { secrets: [SECRET, secret] })).toThrow(
			expect.objectContaining({ name: 'SignatureConfigError', message: expect.not.stringContaining(secret) }),
		);
	});

	it('reports an unusable secret even when the request has no headers', () => {
		expect(() => standard({}, { secrets: ['whsec_%%%'] })).toThrow('not a Standard Webhooks secret');
	});
});
