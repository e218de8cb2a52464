import { BODY, IN_FUTURE, NOW, TAMPERED_BODY, TOO_OLD, verify } from './fixtures';

const SECRET = 'slack-current';
const PREVIOUS_SECRET = 'slack-previous';

// printf '%s' 'v0:1700000000:{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -hmac 'slack-current'
const SIG_NOW = 'f64f310b12509decd5588949b9bf1fb19fdd38f4521a07d4377666a5f2ca74b8';
// printf '%s' 'v0:1699999699:{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -hmac 'slack-current'
const SIG_TOO_OLD = 'ef42beec7dfd6883f19d1031ff7403eb257f9df19c291e0b112de111ce0963e7';
// printf '%s' 'v0:1700000301:{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -hmac 'slack-current'
const SIG_IN_FUTURE = 'e0b6753ddb218861e01f793770029fdc6fce68c2b0af405196c04c3b29c7f45f';
// printf '%s' 'v0:1700000000:{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -hmac 'slack-previous'
const SIG_PREVIOUS = '6a2cda1c84f4c60a8c08e922d2e6147eec1b06bd9ea0e61e469a54d77fe62f9d';

const slack = (signature: string | undefined, timestamp: string | undefined, options: { secrets?: string[]; body?: string } = {}) => {
	const headers: Record<string, string> = {};
	if (signature !== undefined) headers['X-Slack-Signature'] = signature;
	if (timestamp !== undefined) headers['X-Slack-Request-Timestamp'] = timestamp;
	return verify({
		scheme: 'slack',
		headers,
		secrets: options.secrets ?? [SECRET],
		rawBody: Buffer.from(options.body ?? BODY, 'utf8'),
	});
};

describe('verifySignature: slack', () => {
	it.each([
		['a valid signature', `v0=${SIG_NOW}`, [SECRET]],
		['a delivery signed with the old secret during rotation', `v0=${SIG_PREVIOUS}`, [SECRET, PREVIOUS_SECRET]],
	])('accepts %s', (_case, signature, secrets) => {
		expect(slack(signature, String(NOW), { secrets })).toEqual({ valid: true, scheme: 'slack', timestamp: NOW });
	});

	it.each([
		['a tampered body', `v0=${SIG_NOW}`, String(NOW), { body: TAMPERED_BODY }, 'signature_mismatch'],
		['a wrong secret', `v0=${SIG_NOW}`, String(NOW), { secrets: ['slack-wrong'] }, 'signature_mismatch'],
		['a timestamp header changed after signing', `v0=${SIG_NOW}`, String(NOW + 1), {}, 'signature_mismatch'],
		['a timestamp 301 s old', `v0=${SIG_TOO_OLD}`, String(TOO_OLD), {}, 'timestamp_too_old'],
		['a timestamp 301 s ahead', `v0=${SIG_IN_FUTURE}`, String(IN_FUTURE), {}, 'timestamp_in_future'],
		['no signature header', undefined, String(NOW), {}, 'missing_header'],
		['no timestamp header', `v0=${SIG_NOW}`, undefined, {}, 'missing_timestamp'],
		['a timestamp written as a date', `v0=${SIG_NOW}`, '2023-11-14T22:13:20Z', {}, 'malformed_timestamp'],
		['a timestamp in milliseconds', `v0=${SIG_NOW}`, `${NOW}000`, {}, 'malformed_timestamp'],
		['a signature without v0=', SIG_NOW, String(NOW), {}, 'malformed_header'],
		['a v1= signature', `v1=${SIG_NOW}`, String(NOW), {}, 'malformed_header'],
		['a signature that is not hex', `v0=${SIG_NOW.replace('f', 'g')}`, String(NOW), {}, 'malformed_header'],
	])('rejects %s', (_case, signature, timestamp, options, reason) => {
		expect(slack(signature, timestamp, options)).toMatchObject({ valid: false, scheme: 'slack', reason });
	});
});
