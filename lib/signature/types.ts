import type { HeaderBag } from '../headers';
import { DEFAULT_TOLERANCE_SECONDS, signingProviderIds, type SigningProviderId } from '../providers';

/** Signature schemes the verifier understands, from the provider registry; the values are stable (stored in workflows). */
export const SIGNATURE_SCHEMES: readonly SignatureScheme[] = signingProviderIds();

export type SignatureScheme = SigningProviderId;

/** HMAC digests the generic scheme can be configured with. */
export type HmacAlgorithm = 'sha1' | 'sha256' | 'sha512';

/** How a signature is written into its header. */
export type SignatureEncoding = 'hex' | 'base64';

/**
 * Why a request was rejected. Machine-readable and stable: workflows may branch on it.
 *
 * - `missing_header`: the signature header (or another required header, e.g. `webhook-id`) is absent or empty.
 * - `malformed_header`: the signature header cannot be parsed (wrong prefix, no supported version, bad hex/base64),
 *   or it (or the Standard Webhooks id) was sent more than once with different values, or is not text.
 * - `missing_timestamp`: the scheme signs a timestamp and the request carries none.
 * - `malformed_timestamp`: the timestamp is not a whole number of seconds since the Unix epoch, was sent more
 *   than once with different values, or is not text.
 * - `signature_mismatch`: no signature in the request matches any configured secret.
 * - `timestamp_too_old`: the signature is genuine but older than the tolerance (a replay, or a very late retry).
 * - `timestamp_in_future`: the signature is genuine but dated further ahead than the tolerance (clock skew or forgery).
 */
export type SignatureFailureReason =
	| 'missing_header'
	| 'malformed_header'
	| 'missing_timestamp'
	| 'malformed_timestamp'
	| 'signature_mismatch'
	| 'timestamp_too_old'
	| 'timestamp_in_future'
	| 'multipart_body';

/** Request headers; read by the package's one header rule (`lib/headers.ts`). */
export type { HeaderBag };

/** Settings of the `generic` scheme: an HMAC of the raw body, optionally prefixed by a timestamp. */
export interface GenericHmacOptions {
	/** Digest of the HMAC. */
	algorithm: HmacAlgorithm;
	/** How the signature header encodes the digest. */
	encoding: SignatureEncoding;
	/** Name of the header that carries the signature (any case). */
	signatureHeader: string;
	/** Literal text before the encoded digest, e.g. `sha256=`; empty when there is none. */
	signaturePrefix?: string;
	/**
	 * What the sender signs: `body` = the raw body; `timestampDotBody` = `"{timestamp}.{rawBody}"`,
	 * with the timestamp (Unix seconds) read from `timestampHeader`.
	 */
	signedContent: 'body' | 'timestampDotBody';
	/** Header with the Unix timestamp in seconds; required when `signedContent` is `timestampDotBody`. */
	timestampHeader?: string;
}

/** Input of {@link verifySignature}. */
export interface VerifySignatureInput {
	scheme: SignatureScheme;
	/** Request headers; looked up case-insensitively. */
	headers: HeaderBag;
	/** The request body exactly as received: any re-serialisation breaks the signature. */
	rawBody: Buffer;
	/**
	 * Current secrets, newest first, each one exact string (spaces are part of it); several are
	 * accepted so a secret can be rotated without downtime. See `resolveSecrets`.
	 */
	secrets: readonly string[];
	/**
	 * How far a signed timestamp may lie from `nowSeconds`, in seconds, in either direction.
	 * Applies only to schemes that sign a timestamp. Default {@link DEFAULT_TOLERANCE_SECONDS}.
	 */
	toleranceSeconds?: number;
	/** The current time in Unix seconds; injected so that callers and tests control the clock. */
	nowSeconds: number;
	/** Required when `scheme` is `generic`, ignored otherwise. */
	generic?: GenericHmacOptions;
}

/** Outcome of {@link verifySignature}: a value, never an exception, for any request a sender could craft. */
export type VerifySignatureResult =
	| {
			valid: true;
			scheme: SignatureScheme;
			/** The signed timestamp in Unix seconds, for schemes that sign one. */
			timestamp?: number;
	  }
	| {
			valid: false;
			scheme: SignatureScheme;
			reason: SignatureFailureReason;
			/** The signed timestamp in Unix seconds; set only for the timestamp reasons, where the signature itself was genuine. */
			timestamp?: number;
	  };

/** Replay window when none is configured: the Stripe, Slack and Standard Webhooks SDK default. */
export { DEFAULT_TOLERANCE_SECONDS };
