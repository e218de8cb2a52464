import { verifySignature } from '../../../lib/signature';
import type { HeaderBag, VerifySignatureInput, VerifySignatureResult } from '../../../lib/signature';

/**
 * Shared test data. Every signature in the scheme tests was computed with openssl, not with the
 * code under test; the exact command is next to each vector. BODY contains a non-ASCII character
 * on purpose: signatures are over bytes, and `printf '%s'` hands openssl the same UTF-8 bytes as
 * `Buffer.from(BODY, 'utf8')`.
 */
export const BODY = '{"id":"evt_1","name":"Zoë"}';

/** The same body with one character changed (ë → e). */
export const TAMPERED_BODY = '{"id":"evt_1","name":"Zoe"}';

/** The fixed "now" of every test, in Unix seconds (2023-11-14T22:13:20Z). */
export const NOW = 1700000000;

/** Timestamps one second outside the default 300 s tolerance, in both directions. */
export const TOO_OLD = NOW - 301;
export const IN_FUTURE = NOW + 301;

/** Runs the verifier with the fixed clock and BODY, unless overridden. */
export function verify(
	input: Pick<VerifySignatureInput, 'scheme' | 'secrets'> & { headers: HeaderBag } & Partial<VerifySignatureInput>,
): VerifySignatureResult {
	return verifySignature({ rawBody: Buffer.from(BODY, 'utf8'), nowSeconds: NOW, ...input });
}
