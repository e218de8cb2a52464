import { BODY, TAMPERED_BODY, verify } from './fixtures';

const SECRET = 'github-current';
const PREVIOUS_SECRET = 'github-previous';

// printf '%s' '{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -hmac 'github-current'
const SIG = 'cbeea665a1fec2a49a1257744172284a030a6b3ae8546bb3d68f9905c65e0845';
// printf '%s' '{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -hmac 'github-previous'
const SIG_PREVIOUS = 'abf002441e6df03303a813f2c692984ec7c3c3bef1cb09090379b81ccf3b54d5';

const github = (header: string | undefined, options: { secrets?: string[]; body?: string } = {}) =>
	verify({
		scheme: 'github',
		headers: header === undefined ? {} : { 'x-hub-signature-256': header },
		secrets: options.secrets ?? [SECRET],
		rawBody: Buffer.from(options.body ?? BODY, 'utf8'),
	});

describe('verifySignature: github', () => {
	it('accepts a valid signature, without a timestamp', () => {
		expect(github(`sha256=${SIG}`)).toEqual({ valid: true, scheme: 'github' });
	});

	it.each([
		['the new secret listed first', [SECRET, PREVIOUS_SECRET], SIG],
		['the old secret listed first', [PREVIOUS_SECRET, SECRET], SIG],
		['a delivery signed with the old secret', [SECRET, PREVIOUS_SECRET], SIG_PREVIOUS],
	])('accepts rotation: %s', (_case, secrets, signature) => {
		expect(github(`sha256=${signature}`, { secrets })).toEqual({ valid: true, scheme: 'github' });
	});

	it('ignores the legacy SHA-1 header', () => {
		expect(verify({ scheme: 'github', headers: { 'X-Hub-Signature': `sha1=${SIG.slice(0, 40)}` }, secrets: [SECRET] })).toEqual({
			valid: false,
			scheme: 'github',
			reason: 'missing_header',
		});
	});

	it.each([
		['a tampered body', `sha256=${SIG}`, { body: TAMPERED_BODY }, 'signature_mismatch'],
		['a wrong secret', `sha256=${SIG}`, { secrets: ['github-wrong'] }, 'signature_mismatch'],
		['a signature of the wrong length', `sha256=${SIG}00`, {}, 'signature_mismatch'],
		['no header', undefined, {}, 'missing_header'],
		['a header without the sha256= prefix', SIG, {}, 'malformed_header'],
		['a sha1= prefix', `sha1=${SIG}`, {}, 'malformed_header'],
		['a signature that is not hex', `sha256=${'z'.repeat(64)}`, {}, 'malformed_header'],
		['an odd number of hex digits', `sha256=${SIG.slice(1)}`, {}, 'malformed_header'],
		['an empty signature', 'sha256=', {}, 'malformed_header'],
	])('rejects %s', (_case, header, options, reason) => {
		expect(github(header, options)).toEqual({ valid: false, scheme: 'github', reason });
	});
});
