import { saysMultipart } from '../headers';
import { SignatureConfigError } from './errors';
import { computeHmac, signaturesEqual } from './hmac';
import { SCHEMES } from './schemes';
import { checkTimestamp } from './timestamp';
import { DEFAULT_TOLERANCE_SECONDS, SIGNATURE_SCHEMES, type VerifySignatureInput, type VerifySignatureResult } from './types';

/**
 * Verifies a webhook request's HMAC signature against one or more secrets. Each secret is used
 * exactly as given, as one string: never split, never trimmed.
 *
 * Order of checks: headers are parsed (a missing or unparsable header fails before any secret is
 * used), then every configured secret is tried against every signature in the request in constant
 * time, and only then is the signed timestamp compared with `nowSeconds`: a timestamp is
 * trustworthy only once the signature over it is genuine, so a forgery always reads
 * `signature_mismatch`.
 *
 * @returns `{ valid: true, scheme, timestamp? }` or `{ valid: false, scheme, reason }`; a bad
 *   request never throws.
 * @throws SignatureConfigError when the configuration is broken: no secrets, a blank secret, an unknown scheme, a
 *   negative tolerance, missing or invalid `generic` settings, a secret the scheme cannot use.
 */
export function verifySignature(input: VerifySignatureInput): VerifySignatureResult {
	const { scheme, headers, rawBody, secrets, nowSeconds, generic } = input;
	const toleranceSeconds = input.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
	if (!SIGNATURE_SCHEMES.includes(scheme)) {
		throw new SignatureConfigError(`Unknown signature scheme "${String(scheme)}"`);
	}
	if (secrets.length === 0) {
		throw new SignatureConfigError('No signing secret configured: add at least one secret to the credential');
	}
	// A blank secret is never what a provider signs with, and would make a trivially forgeable key.
	if (secrets.some((secret) => secret.trim() === '')) {
		throw new SignatureConfigError('A signing secret is empty or only whitespace: enter the secret exactly as the provider shows it');
	}
	if (!Number.isFinite(toleranceSeconds) || toleranceSeconds < 0) {
		throw new SignatureConfigError('The timestamp tolerance must be a number of seconds, zero or more');
	}

	// Keys first, so that an unusable secret is reported whatever the request looks like.
	const definition = SCHEMES[scheme];
	const keys = secrets.map((secret) => definition.deriveKey(secret));

	// n8n parses a multipart request itself: the bytes at hand could be any file in it (a captured delivery), not the request.
	if (saysMultipart(headers)) return { valid: false, scheme, reason: 'multipart_body' };
	const parsed = definition.parse(headers, rawBody, generic);
	if (!parsed.ok) return { valid: false, scheme, reason: parsed.reason };
	const { algorithm, candidates, content, timestampSeconds } = parsed.request;

	// No early exit: every secret is tried against every candidate, so the time taken does not
	// tell which secret or which signature matched.
	let matched = false;
	for (const key of keys) {
		const expected = computeHmac(algorithm, key, content);
		for (const candidate of candidates) {
			matched = signaturesEqual(expected, candidate) || matched;
		}
	}
	if (!matched) return { valid: false, scheme, reason: 'signature_mismatch' };

	if (timestampSeconds === undefined) return { valid: true, scheme };
	const late = checkTimestamp(timestampSeconds, nowSeconds, toleranceSeconds);
	return late === undefined
		? { valid: true, scheme, timestamp: timestampSeconds }
		: { valid: false, scheme, reason: late, timestamp: timestampSeconds };
}
