import { createHmac } from 'node:crypto';

import type { GenericHmacOptions, HeaderBag, SignatureScheme } from '../../../lib/signature';
import { NOW } from './fixtures';

/**
 * Test senders: each signs a request the way its provider documents it, with `node:crypto`
 * directly rather than with the code under test, so that a forgery can be signed with any key.
 * `key` is the HMAC key: the secret's text for every scheme but Standard Webhooks, whose key is
 * the base64-decoded bytes after `whsec_`.
 */
export type Signer = (key: string | Buffer, body: Buffer, timestamp?: number) => HeaderBag;

const hmac = (algorithm: string, key: string | Buffer, ...parts: Array<string | Buffer>): Buffer => {
	const mac = createHmac(algorithm, key);
	for (const part of parts) mac.update(part);
	return mac.digest();
};

/** The generic settings the signers below sign for. */
export const GENERIC_BODY: GenericHmacOptions = {
	algorithm: 'sha256',
	encoding: 'hex',
	signatureHeader: 'X-Signature',
	signaturePrefix: 'sha256=',
	signedContent: 'body',
};
export const GENERIC_TIMESTAMPED: GenericHmacOptions = {
	algorithm: 'sha512',
	encoding: 'base64',
	signatureHeader: 'X-Signature',
	signedContent: 'timestampDotBody',
	timestampHeader: 'X-Timestamp',
};

export const SIGNERS: Readonly<Record<Exclude<SignatureScheme, 'generic'> | 'genericBody' | 'genericTimestamped', Signer>> = {
	stripe: (key, body, t = NOW) => ({
		'stripe-signature': `t=${t},v1=${hmac('sha256', key, `${t}.`, body).toString('hex')}`,
	}),
	github: (key, body) => ({ 'x-hub-signature-256': `sha256=${hmac('sha256', key, body).toString('hex')}` }),
	shopify: (key, body) => ({ 'x-shopify-hmac-sha256': hmac('sha256', key, body).toString('base64') }),
	slack: (key, body, t = NOW) => ({
		'x-slack-request-timestamp': String(t),
		'x-slack-signature': `v0=${hmac('sha256', key, `v0:${t}:`, body).toString('hex')}`,
	}),
	standardWebhooks: (key, body, t = NOW) => ({
		'webhook-id': 'msg_1',
		'webhook-timestamp': String(t),
		'webhook-signature': `v1,${hmac('sha256', key, `msg_1.${t}.`, body).toString('base64')}`,
	}),
	genericBody: (key, body) => ({ 'x-signature': `sha256=${hmac('sha256', key, body).toString('hex')}` }),
	genericTimestamped: (key, body, t = NOW) => ({
		'x-timestamp': String(t),
		'x-signature': hmac('sha512', key, `${t}.`, body).toString('base64'),
	}),
};

export type SignerName = keyof typeof SIGNERS;

/** The scheme and generic settings each signer's requests are verified with. */
export const VERIFY_AS: Readonly<Record<SignerName, { scheme: SignatureScheme; generic?: GenericHmacOptions }>> = {
	stripe: { scheme: 'stripe' },
	github: { scheme: 'github' },
	shopify: { scheme: 'shopify' },
	slack: { scheme: 'slack' },
	standardWebhooks: { scheme: 'standardWebhooks' },
	genericBody: { scheme: 'generic', generic: GENERIC_BODY },
	genericTimestamped: { scheme: 'generic', generic: GENERIC_TIMESTAMPED },
};

/** Every signer with the secret text as its key, i.e. every scheme but Standard Webhooks. */
export const TEXT_KEY_SIGNERS: readonly SignerName[] = ['stripe', 'github', 'shopify', 'slack', 'genericBody', 'genericTimestamped'];

/** Every distinct non-empty substring of `text` other than itself: its words and prefixes among them. */
export function properSubstrings(text: string): string[] {
	const found = new Set<string>();
	for (let start = 0; start < text.length; start++) {
		for (let end = start + 1; end <= text.length; end++) found.add(text.slice(start, end));
	}
	found.delete(text);
	return [...found];
}
