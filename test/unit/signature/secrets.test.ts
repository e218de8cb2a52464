import type { INode } from 'n8n-workflow';

import { toNodeError } from '../../../nodes/shared/nodeError';
import { LEGACY_LIST_MESSAGE, hasOuterWhitespace, resolveSecrets, verifySignature } from '../../../lib/signature';
import { IdempotencyError } from '../../../lib/errors';
import { SignatureConfigError, SignatureError } from '../../../lib/signature/errors';
import { NOW } from './fixtures';
import { SIGNERS, TEXT_KEY_SIGNERS, VERIFY_AS, properSubstrings, type SignerName } from './signers';

// GitHub's documented test vector:
// https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation
const GITHUB_DOCS_SECRET = "It's a Secret to Everybody";
const GITHUB_DOCS_PAYLOAD = 'Hello, World!';
const GITHUB_DOCS_SIGNATURE = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';

const PREVIOUS_SECRET = 'the old one, also with spaces';
const BODY = Buffer.from('{"id":"evt_1","name":"Zoë"}', 'utf8');

// The keys are the 32 bytes 00..1f and 20..3f (as in standardWebhooks.test.ts).
const SW_KEY = Buffer.from('000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f', 'hex');
const SW_SECRET = `whsec_${SW_KEY.toString('base64')}`;
const SW_PREVIOUS_KEY = Buffer.from('202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f', 'hex');
const SW_PREVIOUS_SECRET = `whsec_${SW_PREVIOUS_KEY.toString('base64')}`;

function check(signer: SignerName, secrets: string[], headers: ReturnType<(typeof SIGNERS)[SignerName]>) {
	return verifySignature({ ...VERIFY_AS[signer], headers, rawBody: BODY, secrets, nowSeconds: NOW });
}

describe('a secret is one exact string', () => {
	it("verifies GitHub's documented example, whose secret contains spaces", () => {
		expect(
			verifySignature({
				scheme: 'github',
				headers: { 'X-Hub-Signature-256': GITHUB_DOCS_SIGNATURE },
				rawBody: Buffer.from(GITHUB_DOCS_PAYLOAD, 'utf8'),
				secrets: resolveSecrets({ secret: GITHUB_DOCS_SECRET }),
				nowSeconds: NOW,
			}),
		).toEqual({ valid: true, scheme: 'github' });
	});

	const forgeryKeys = properSubstrings(GITHUB_DOCS_SECRET);

	it('has words, prefixes and other substrings to forge with', () => {
		expect(forgeryKeys).toEqual(expect.arrayContaining(['a', 'Secret', "It's", 'Everybody', "It's a", 'to Every', ' ']));
		expect(forgeryKeys).toHaveLength(340);
	});

	describe.each(TEXT_KEY_SIGNERS)('%s', (signer) => {
		const secrets = resolveSecrets({ secret: GITHUB_DOCS_SECRET });

		it('accepts a delivery signed with the whole secret', () => {
			expect(check(signer, secrets, SIGNERS[signer](GITHUB_DOCS_SECRET, BODY))).toMatchObject({ valid: true });
		});

		it('rejects a forgery signed with any word, prefix or other substring of the secret', () => {
			const accepted = forgeryKeys.filter((key) => check(signer, secrets, SIGNERS[signer](key, BODY)).valid);
			expect(accepted).toEqual([]);
		});

		it('rotation: accepts the previous secret, and no substring of either', () => {
			const rotating = resolveSecrets({ secret: GITHUB_DOCS_SECRET, previousSecret: PREVIOUS_SECRET });
			expect(check(signer, rotating, SIGNERS[signer](PREVIOUS_SECRET, BODY))).toMatchObject({ valid: true });
			expect(check(signer, rotating, SIGNERS[signer](GITHUB_DOCS_SECRET, BODY))).toMatchObject({ valid: true });
			const forgeries = [...forgeryKeys, ...properSubstrings(PREVIOUS_SECRET)];
			expect(forgeries.filter((key) => check(signer, rotating, SIGNERS[signer](key, BODY)).valid)).toEqual([]);
		});

		it('keeps outer whitespace: " secret " and "secret" are different secrets', () => {
			const padded = resolveSecrets({ secret: ` ${GITHUB_DOCS_SECRET} ` });
			expect(check(signer, padded, SIGNERS[signer](` ${GITHUB_DOCS_SECRET} `, BODY))).toMatchObject({ valid: true });
			expect(check(signer, padded, SIGNERS[signer](GITHUB_DOCS_SECRET, BODY))).toMatchObject({
				valid: false,
				reason: 'signature_mismatch',
			});
		});
	});

	describe('standardWebhooks (the key is the decoded bytes)', () => {
		const keySlices: Buffer[] = [];
		for (let start = 0; start < SW_KEY.length; start++) {
			for (let end = start + 1; end <= SW_KEY.length; end++) {
				if (end - start < SW_KEY.length) keySlices.push(SW_KEY.subarray(start, end));
			}
		}

		it('accepts the whole key and rejects a forgery signed with any part of it, or with the secret text', () => {
			expect(check('standardWebhooks', [SW_SECRET], SIGNERS.standardWebhooks(SW_KEY, BODY))).toMatchObject({ valid: true });
			// 32 × 33 / 2 − 1 proper slices of the key, every substring of the text, and the text itself.
			const forgeries = [...keySlices, ...properSubstrings(SW_SECRET), SW_SECRET];
			expect(forgeries).toHaveLength(527 + properSubstrings(SW_SECRET).length + 1);
			const accepted = forgeries.filter((key) => check('standardWebhooks', [SW_SECRET], SIGNERS.standardWebhooks(key, BODY)).valid);
			expect(accepted).toEqual([]);
		});

		it('rotation: accepts the previous secret', () => {
			const rotating = resolveSecrets({ secret: SW_SECRET, previousSecret: SW_PREVIOUS_SECRET });
			expect(check('standardWebhooks', rotating, SIGNERS.standardWebhooks(SW_PREVIOUS_KEY, BODY))).toMatchObject({ valid: true });
		});

		it('refuses two secrets typed into one field instead of splitting them', () => {
			const joined = resolveSecrets({ secret: `${SW_SECRET} ${SW_PREVIOUS_SECRET}` });
			expect(joined).toEqual([`${SW_SECRET} ${SW_PREVIOUS_SECRET}`]);
			expect(() => check('standardWebhooks', joined, SIGNERS.standardWebhooks(SW_KEY, BODY))).toThrow(SignatureConfigError);
		});
	});
});

describe('resolveSecrets', () => {
	it.each([
		['one secret', { secret: 's' }, ['s']],
		['a secret with spaces inside', { secret: GITHUB_DOCS_SECRET }, [GITHUB_DOCS_SECRET]],
		['a secret with outer whitespace, kept', { secret: ' s\t' }, [' s\t']],
		['a secret with a line break, kept', { secret: 'a\nb' }, ['a\nb']],
		['a rotation, newest first', { secret: 'new one', previousSecret: 'old one' }, ['new one', 'old one']],
		['an empty previous secret', { secret: 's', previousSecret: '' }, ['s']],
		['the new field over a version 0.1 field', { secret: 's', legacySecrets: 'a b' }, ['s']],
		['a version 0.1 field with one secret, trimmed as 0.1 did', { legacySecrets: ' whsec_a\n' }, ['whsec_a']],
		['a version 0.1 field with one secret and a previous secret', { legacySecrets: 'whsec_a', previousSecret: 'p' }, ['whsec_a', 'p']],
	])('keeps %s', (_case, configured, secrets) => {
		expect(resolveSecrets(configured)).toEqual(secrets);
	});

	it.each([
		['nothing', {}, 'No signing secret configured'],
		['empty fields', { secret: '', previousSecret: '', legacySecrets: '' }, 'No signing secret configured'],
		['only a previous secret', { secret: '', previousSecret: 'old' }, 'No signing secret configured'],
		['a secret that is only whitespace', { secret: ' \t ' }, '"Secret" is only whitespace'],
		['a previous secret that is only whitespace', { secret: 's', previousSecret: '  ' }, '"Previous Secret" is only whitespace'],
		['a version 0.1 field that is only whitespace', { legacySecrets: ' \n ' }, 'No signing secret configured'],
		['a version 0.1 list of two secrets', { legacySecrets: 'whsec_new whsec_old' }, LEGACY_LIST_MESSAGE],
		['a version 0.1 list on two lines', { legacySecrets: 'whsec_new\nwhsec_old' }, LEGACY_LIST_MESSAGE],
		['a version 0.1 secret with spaces', { legacySecrets: GITHUB_DOCS_SECRET }, LEGACY_LIST_MESSAGE],
	])('refuses %s with a configuration error that names no secret', (_case, configured, message) => {
		let thrown: unknown;
		try {
			resolveSecrets(configured);
		} catch (error) {
			thrown = error;
		}
		expect(thrown).toBeInstanceOf(SignatureConfigError);
		expect((thrown as Error).message).toContain(message);
		for (const value of Object.values(configured)) {
			const secretLike = [value.trim(), ...value.split(/\s+/).filter((part) => part.startsWith('whsec_'))];
			for (const part of secretLike.filter((text) => text.length > 1)) expect((thrown as Error).message).not.toContain(part);
		}
	});

	it.each([
		['s', false],
		[GITHUB_DOCS_SECRET, false],
		[' s', true],
		['s\n', true],
	])('tells whether %j has outer whitespace', (secret, expected) => {
		expect(hasOuterWhitespace(secret)).toBe(expected);
	});
});

describe('signature errors', () => {
	it('belong to the package-wide error family, with their own names', () => {
		const error = new SignatureConfigError('bad');
		expect(error).toBeInstanceOf(SignatureError);
		expect(error).toBeInstanceOf(IdempotencyError);
		expect(error.name).toBe('SignatureConfigError');
	});

	it.each([
		['SignatureConfigError', new SignatureConfigError('bad setting')],
		['SignatureError', new SignatureError('bad setting')],
	])('show as %s in the node error, like every core error', (name, error) => {
		const nodeError = toNodeError({ name: 'Webhook Signature Verify' } as INode, error, 3);
		expect(nodeError).toMatchObject({ message: 'bad setting', description: name });
		expect(nodeError.context.itemIndex).toBe(3);
	});
});
