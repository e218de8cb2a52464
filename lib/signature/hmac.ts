import { createHmac, timingSafeEqual } from 'node:crypto';

import type { HmacAlgorithm } from './types';

/** HMAC of `content` under `key`; a string key is used as its UTF-8 bytes, as every provider does. */
export function computeHmac(algorithm: HmacAlgorithm, key: string | Buffer, content: Buffer): Buffer {
	return createHmac(algorithm, key).update(content).digest();
}

/**
 * Compares a computed digest with a received signature in time independent of where they differ.
 * `timingSafeEqual` throws on unequal lengths, so a wrong length is compared against itself and
 * reported as a mismatch: the time spent depends only on the digest length, which is public.
 */
export function signaturesEqual(expected: Buffer, received: Buffer): boolean {
	if (expected.length !== received.length) {
		timingSafeEqual(expected, expected);
		return false;
	}
	return timingSafeEqual(expected, received);
}

const HEX = /^(?:[0-9a-fA-F]{2})+$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** No signature is longer; a longer text is malformed before any pattern reads it (a pattern's stack has a limit). */
const MAX_ENCODED_LENGTH = 65_536;

/** Strict hex decoding: `Buffer.from(text, 'hex')` silently stops at the first bad character. */
export function decodeHex(text: string): Buffer | undefined {
	return text.length <= MAX_ENCODED_LENGTH && HEX.test(text) ? Buffer.from(text, 'hex') : undefined;
}

/** Strict, padded, standard-alphabet base64 decoding: `Buffer.from(text, 'base64')` skips bad characters. */
export function decodeBase64(text: string): Buffer | undefined {
	return text !== '' && text.length <= MAX_ENCODED_LENGTH && BASE64.test(text) ? Buffer.from(text, 'base64') : undefined;
}
