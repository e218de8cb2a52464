import { SignatureConfigError } from './errors';
import { decodeBase64 } from './hmac';

/**
 * Splits a credential's secrets field into secrets. Secrets are separated by line breaks or spaces:
 * n8n shows password fields as one-line inputs, where a pasted line break is dropped, so a space
 * is the separator a user can type. Provider secrets never contain whitespace.
 */
export function parseSecrets(text: string): string[] {
	return text.split(/\s+/).filter((secret) => secret !== '');
}

const STANDARD_WEBHOOKS_PREFIX = 'whsec_';

/**
 * Turns a Standard Webhooks / Svix secret (`whsec_<base64>`, the prefix optional) into the HMAC key.
 *
 * @throws SignatureConfigError when the rest is not base64; the message says nothing about the secret.
 */
export function decodeStandardWebhooksSecret(secret: string): Buffer {
	const encoded = secret.startsWith(STANDARD_WEBHOOKS_PREFIX)
		? secret.slice(STANDARD_WEBHOOKS_PREFIX.length)
		: secret;
	// Svix secrets are often written without base64 padding.
	const key = decodeBase64(encoded.padEnd(Math.ceil(encoded.length / 4) * 4, '='));
	if (key === undefined || key.length === 0) {
		throw new SignatureConfigError(
			'A configured secret is not a Standard Webhooks secret: expected "whsec_" followed by base64',
		);
	}
	return key;
}
