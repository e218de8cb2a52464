import { BODY, TAMPERED_BODY, verify } from './fixtures';

const SECRET = 'shopify-current';
const PREVIOUS_SECRET = 'shopify-previous';

// printf '%s' '{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -hmac 'shopify-current' -binary | openssl base64 -A
const SIG = '3e6pIFymO4ZjXq029o+I6sz/NcJmjk2hym/tcWLYSMw=';
// printf '%s' '{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -hmac 'shopify-previous' -binary | openssl base64 -A
const SIG_PREVIOUS = 'P5RFvhkVhOX6UkdvLfpOB1z++lx6VYBWMam98OOV9Gw=';

const shopify = (header: string | undefined, options: { secrets?: string[]; body?: string } = {}) =>
	verify({
		scheme: 'shopify',
		headers: header === undefined ? {} : { 'X-Shopify-Hmac-Sha256': header },
		secrets: options.secrets ?? [SECRET],
		rawBody: Buffer.from(options.body ?? BODY, 'utf8'),
	});

describe('verifySignature: shopify', () => {
	it.each([
		['a valid signature', SIG, [SECRET]],
		['a delivery signed with the old secret during rotation', SIG_PREVIOUS, [SECRET, PREVIOUS_SECRET]],
	])('accepts %s', (_case, header, secrets) => {
		expect(shopify(header, { secrets })).toEqual({ valid: true, scheme: 'shopify' });
	});

	it.each([
		['a tampered body', SIG, { body: TAMPERED_BODY }, 'signature_mismatch'],
		['a wrong secret', SIG, { secrets: ['shopify-wrong'] }, 'signature_mismatch'],
		['a signature of the old secret when only the new one is configured', SIG_PREVIOUS, {}, 'signature_mismatch'],
		['no header', undefined, {}, 'missing_header'],
		['a hex signature', 'dde9a9205ca63b86635eaf36f68f88eaccff35c2668e4da1ca6fed7162d848cc', {}, 'signature_mismatch'],
		['base64 without padding', SIG.slice(0, -1), {}, 'malformed_header'],
		['base64url characters', SIG.replace('+', '-').replace('/', '_'), {}, 'malformed_header'],
		['a sha256= prefix', `sha256=${SIG}`, {}, 'malformed_header'],
	])('rejects %s', (_case, header, options, reason) => {
		expect(shopify(header, options)).toEqual({ valid: false, scheme: 'shopify', reason });
	});
});
