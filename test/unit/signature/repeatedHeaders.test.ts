import { verifySignature, type HeaderBag } from '../../../lib/signature';
import { NOW } from './fixtures';
import { SIGNERS, VERIFY_AS, type SignerName } from './signers';

/**
 * A header sent twice reaches the node as an array (from some callers) or, from n8n's Webhook
 * node, joined into one value with ", ". Either way the request is judged as if the header were
 * sent once with one value, or it is rejected: a forged value next to a genuine one never turns
 * the request Valid, and the sender never picks which of two values is checked.
 */
const BODY = Buffer.from('{"id":"evt_1","name":"Zoë"}', 'utf8');
const SECRET = 'the endpoint secret';
const SW_KEY = Buffer.from('000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f', 'hex');
const SW_SECRET = `whsec_${SW_KEY.toString('base64')}`;

const signers = Object.keys(SIGNERS) as SignerName[];

function check(signer: SignerName, headers: HeaderBag) {
	const secrets = [signer === 'standardWebhooks' ? SW_SECRET : SECRET];
	return verifySignature({ ...VERIFY_AS[signer], headers, rawBody: BODY, secrets, nowSeconds: NOW });
}

function genuine(signer: SignerName): Record<string, string> {
	return SIGNERS[signer](signer === 'standardWebhooks' ? SW_KEY : SECRET, BODY, NOW) as Record<string, string>;
}

/** Signed with a wrong key and another timestamp, so that every header differs from the genuine one. */
function forged(signer: SignerName): Record<string, string> {
	return SIGNERS[signer](signer === 'standardWebhooks' ? Buffer.alloc(32, 7) : 'endpoint', BODY, NOW - 10) as Record<string, string>;
}

const repeats = (first: string, second: string): Array<[string, string | string[]]> => [
	['an array', [first, second]],
	['joined with ", "', `${first}, ${second}`],
	['joined with ",  "', `${first},  ${second}`],
];

describe.each(signers)('a repeated header: %s', (signer) => {
	const good = genuine(signer);
	const bad = forged(signer);

	it('the genuine request alone is Valid', () => {
		expect(check(signer, good)).toMatchObject({ valid: true });
	});

	const cases: Array<[string, string, string | string[]]> = [];
	for (const name of Object.keys(good)) {
		if (good[name] === bad[name]) continue;
		for (const [shape, value] of [
			...repeats(bad[name] as string, good[name] as string),
			...repeats(good[name] as string, bad[name] as string),
		]) {
			cases.push([name, shape, value]);
		}
	}

	it.each(cases)('%s given twice (%s; forged and genuine, either order) is never Valid', (name, _shape, value) => {
		expect(check(signer, { ...good, [name]: value })).toMatchObject({ valid: false });
	});

	it.each(Object.keys(good))('%s repeated with the same value counts once', (name) => {
		const value = good[name] as string;
		expect(check(signer, { ...good, [name]: [value, value] })).toMatchObject({ valid: true });
		expect(check(signer, { ...good, [name]: `${value}, ${value}` })).toMatchObject({ valid: true });
	});
});

describe('a repeated Standard Webhooks message id', () => {
	it('is rejected as malformed, whichever id was signed', () => {
		const headers = { ...genuine('standardWebhooks'), 'webhook-id': 'msg_2, msg_1' };
		expect(check('standardWebhooks', headers)).toEqual({ valid: false, scheme: 'standardWebhooks', reason: 'malformed_header' });
	});
});
