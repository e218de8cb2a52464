import { SignatureConfigError } from './errors';
import { decodeBase64 } from './hmac';

/**
 * The secrets of one sender as configured. A secret is one exact string: it is never split, and
 * its characters, spaces included, are the HMAC key (what every provider and its SDK uses).
 */
export interface ConfiguredSecrets {
	/** The current signing secret, exactly as entered. */
	secret?: string;
	/** During a rotation, the secret being replaced; empty when there is none. */
	previousSecret?: string;
	/**
	 * The single "Secrets" field of version 0.1.0, a space- or line-separated list. Read only when
	 * `secret` is empty, and only when it holds one whitespace-free secret: a list with whitespace
	 * inside cannot be told apart from one secret containing spaces, so it is refused.
	 */
	legacySecrets?: string;
}

/** What the user must do with a version 0.1.0 list; worded without any secret material. */
export const LEGACY_LIST_MESSAGE =
	'The credential still holds the "Secrets" field of version 0.1.0, with whitespace inside. Secrets are no longer split at spaces: open the credential and enter the current secret in "Secret" and, during a rotation, the old one in "Previous Secret"';

const isBlank = (text: string): boolean => text.trim() === '';

/**
 * The secrets to try, newest first, each exactly as configured.
 *
 * @throws SignatureConfigError when no secret is configured, a secret is only whitespace, or a
 *   version 0.1.0 list would have to be split.
 */
export function resolveSecrets(configured: ConfiguredSecrets): string[] {
	const secret = configured.secret ?? '';
	const previous = configured.previousSecret ?? '';
	const current = secret !== '' ? secret : fromLegacyField(configured.legacySecrets ?? '');
	if (current === undefined) {
		throw new SignatureConfigError('No signing secret configured: enter the signing secret in the credential\'s "Secret" field');
	}
	if (isBlank(current)) {
		throw new SignatureConfigError(
			'The credential\'s "Secret" is only whitespace: enter the signing secret exactly as the provider shows it',
		);
	}
	if (previous === '') return [current];
	if (isBlank(previous)) {
		throw new SignatureConfigError('The credential\'s "Previous Secret" is only whitespace: clear it, or enter the secret being replaced');
	}
	return [current, previous];
}

/**
 * The one secret a version 0.1.0 "Secrets" field holds, trimmed as 0.1.0 did; `undefined` when empty.
 *
 * @throws SignatureConfigError when the field holds whitespace between characters.
 */
function fromLegacyField(text: string): string | undefined {
	const trimmed = text.trim();
	if (trimmed === '') return undefined;
	if (/\s/.test(trimmed)) throw new SignatureConfigError(LEGACY_LIST_MESSAGE);
	return trimmed;
}

/** Whether a secret starts or ends with whitespace: allowed (it is part of the key), but usually a paste accident. */
export function hasOuterWhitespace(secret: string): boolean {
	return secret !== secret.trim();
}

const STANDARD_WEBHOOKS_PREFIX = 'whsec_';

/**
 * Turns a Standard Webhooks / Svix secret (`whsec_<base64>`, the prefix optional) into the HMAC key.
 *
 * @throws SignatureConfigError when the rest is not base64; the message says nothing about the secret.
 */
export function decodeStandardWebhooksSecret(secret: string): Buffer {
	const encoded = secret.startsWith(STANDARD_WEBHOOKS_PREFIX) ? secret.slice(STANDARD_WEBHOOKS_PREFIX.length) : secret;
	// Svix secrets are often written without base64 padding.
	const key = decodeBase64(encoded.padEnd(Math.ceil(encoded.length / 4) * 4, '='));
	if (key === undefined || key.length === 0) {
		throw new SignatureConfigError('A configured secret is not a Standard Webhooks secret: expected "whsec_" followed by base64');
	}
	return key;
}
