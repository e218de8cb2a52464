import { BODY, IN_FUTURE, NOW, TAMPERED_BODY, TOO_OLD, verify } from './fixtures';

const SECRET = 'whsec_stripe_current';
const PREVIOUS_SECRET = 'whsec_stripe_previous';

// printf '%s' '1700000000.{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -hmac 'whsec_stripe_current'
const SIG_NOW = '8a9d24dedd0d68aaff9e4bb65b447709950652ad85357c9c62291358406e7029';
// printf '%s' '1699999700.{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -hmac 'whsec_stripe_current'
const SIG_EDGE_OLD = '9d31e2290f1e9f286527391f25960a81c8127c5ece112874465e148d20b8c75d';
// printf '%s' '1699999699.{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -hmac 'whsec_stripe_current'
const SIG_TOO_OLD = '2d17a1ce961c6ee21b2a5949e0218f434add683084c003a468d963f4d2d3d069';
// printf '%s' '1700000301.{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -hmac 'whsec_stripe_current'
const SIG_IN_FUTURE = '9c3beb2eee43fd4cb25da3eab5464d5f3c5e2369e3f1a4c9fe2fbf2ea0d48c32';
// printf '%s' '1700000000.{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -hmac 'whsec_stripe_previous'
const SIG_PREVIOUS = 'f71fa71c073b36c222b8af1e95b5c150ee383ec55d6d0d0d0fb80c7c0d1f43ef';

const stripe = (header: string | undefined, options: { secrets?: string[]; body?: string; toleranceSeconds?: number } = {}) =>
	verify({
		scheme: 'stripe',
		headers: header === undefined ? {} : { 'stripe-signature': header },
		secrets: options.secrets ?? [SECRET],
		rawBody: Buffer.from(options.body ?? BODY, 'utf8'),
		toleranceSeconds: options.toleranceSeconds,
	});

describe('verifySignature: stripe', () => {
	it.each([
		['a signature made now', `t=${NOW},v1=${SIG_NOW}`, NOW],
		['a signature exactly at the tolerance', `t=${NOW - 300},v1=${SIG_EDGE_OLD}`, NOW - 300],
		['spaces around the header and before a comma', ` t=${NOW} ,v1=${SIG_NOW} `, NOW],
		['a v0 (test mode) entry next to v1', `t=${NOW},v0=abcd,v1=${SIG_NOW}`, NOW],
		['several v1 of which the last is valid', `t=${NOW},v1=${SIG_PREVIOUS},v1=${'0'.repeat(64)},v1=${SIG_NOW}`, NOW],
		['a garbled v1 next to a valid one', `t=${NOW},v1=not-hex,v1=${SIG_NOW}`, NOW],
		['upper-case hex', `t=${NOW},v1=${SIG_NOW.toUpperCase()}`, NOW],
	])('accepts %s', (_case, header, timestamp) => {
		expect(stripe(header)).toEqual({ valid: true, scheme: 'stripe', timestamp });
	});

	it('accepts a delivery signed with the previous secret during rotation', () => {
		expect(stripe(`t=${NOW},v1=${SIG_PREVIOUS}`, { secrets: [SECRET, PREVIOUS_SECRET] })).toEqual({
			valid: true,
			scheme: 'stripe',
			timestamp: NOW,
		});
	});

	it.each([
		['a tampered body', `t=${NOW},v1=${SIG_NOW}`, { body: TAMPERED_BODY }, 'signature_mismatch'],
		['a wrong secret', `t=${NOW},v1=${SIG_NOW}`, { secrets: ['whsec_wrong'] }, 'signature_mismatch'],
		['a secret without its whsec_ prefix', `t=${NOW},v1=${SIG_NOW}`, { secrets: ['stripe_current'] }, 'signature_mismatch'],
		['a signature for another timestamp', `t=${NOW + 1},v1=${SIG_NOW}`, {}, 'signature_mismatch'],
		['a truncated signature', `t=${NOW},v1=${SIG_NOW.slice(0, 62)}`, {}, 'signature_mismatch'],
		['a timestamp 301 s old', `t=${TOO_OLD},v1=${SIG_TOO_OLD}`, {}, 'timestamp_too_old'],
		['a timestamp 301 s ahead', `t=${IN_FUTURE},v1=${SIG_IN_FUTURE}`, {}, 'timestamp_in_future'],
		['no header', undefined, {}, 'missing_header'],
		['an empty header', '', {}, 'missing_header'],
		['no v1 entry', `t=${NOW},v0=${SIG_NOW}`, {}, 'malformed_header'],
		['only garbled v1 entries', `t=${NOW},v1=xyz`, {}, 'malformed_header'],
		['two timestamps', `t=${NOW},t=${TOO_OLD},v1=${SIG_NOW}`, {}, 'malformed_header'],
		// ", " is how n8n joins a header sent twice; Stripe never sends it, and Stripe's SDK does
		// not read " v1=" as a signature either.
		['a comma followed by a space', `t=${NOW}, v1=${SIG_NOW}`, {}, 'malformed_header'],
		['a bare signature', SIG_NOW, {}, 'malformed_header'],
		["a header in another scheme's format", `sha256=${SIG_NOW}`, {}, 'malformed_header'],
		['no timestamp', `v1=${SIG_NOW}`, {}, 'missing_timestamp'],
		['a non-numeric timestamp', `t=now,v1=${SIG_NOW}`, {}, 'malformed_timestamp'],
		['a fractional timestamp', `t=${NOW}.5,v1=${SIG_NOW}`, {}, 'malformed_timestamp'],
	])('rejects %s', (_case, header, options, reason) => {
		expect(stripe(header, options)).toMatchObject({ valid: false, scheme: 'stripe', reason });
	});

	it('reports the genuine timestamp of a replay', () => {
		expect(stripe(`t=${TOO_OLD},v1=${SIG_TOO_OLD}`)).toEqual({
			valid: false,
			scheme: 'stripe',
			reason: 'timestamp_too_old',
			timestamp: TOO_OLD,
		});
	});

	it('accepts the old timestamp with a wider tolerance', () => {
		expect(stripe(`t=${TOO_OLD},v1=${SIG_TOO_OLD}`, { toleranceSeconds: 600 })).toMatchObject({ valid: true });
	});

	it('checks the signature before the timestamp, so a forgery with an old timestamp reads as a forgery', () => {
		expect(stripe(`t=${TOO_OLD},v1=${SIG_NOW}`)).toMatchObject({ valid: false, reason: 'signature_mismatch' });
	});

	it('finds the header whatever the case of its name', () => {
		expect(verify({ scheme: 'stripe', headers: { 'Stripe-Signature': `t=${NOW},v1=${SIG_NOW}` }, secrets: [SECRET] })).toMatchObject({
			valid: true,
		});
	});
});
