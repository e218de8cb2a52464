import { ForbiddenKeySourceError, InvalidConfigurationError } from '../errors';
import { refusedHeaderNames } from '../providers';

// Signatures and timestamps change on every retry (Stripe signs each attempt with a new timestamp),
// so as keys they would make every retry look new and let duplicates through. Each provider's own
// such headers come from the registry; Date and Authorization differ per attempt for every sender.
const REFUSED_BY_PROVIDERS: ReadonlySet<string> = new Set(refusedHeaderNames());
const KNOWN_FORBIDDEN: ReadonlySet<string> = new Set([...REFUSED_BY_PROVIDERS, 'date', 'authorization']);
const FORBIDDEN_PATTERN = /signature|hmac|timestamp/i;
// Providers abbreviate (PayPal: paypal-transmission-sig, paypal-transmission-time); any name part
// that says signature, time or nonce marks a header that differs between attempts.
const FORBIDDEN_NAME_PARTS = new Set(['sig', 'signature', 'hmac', 'time', 'timestamp', 'date', 'nonce']);

// Headers that carry a signature or a credential: whatever reads a header value to store or show it
// (a key, a correlation id) must never read these, or the secret ends up in the table, in Get Key's
// output and in the execution's custom data. Over-refusing costs a user another header name;
// under-refusing leaks a secret.
// Query parameters and body members write `_` where headers write `-` (?api_key=, private_key).
const SECRET_PATTERN =
	/signature|hmac|auth|cookie|secret|passw|passphrase|pwd|credential|api[-_]?key|private[-_]?key|access[-_]?key|signing[-_]?key|access[-_]?token|jwt|session|csrf|xsrf/i;
// A token is a credential (X-Gitlab-Token, X-Api-Token, ?token=) unless it names the event: an
// idempotency token (Twilio's I-Twilio-Idempotency-Token) is the same on every retry, not a secret.
const TOKEN_PATTERN = /token/i;
const SECRET_NAME_PARTS = new Set(['sig', 'signature', 'hmac']);

function normalised(headerName: string): { name: string; parts: string[] } {
	const name = headerName.trim().toLowerCase();
	return { name, parts: name.split(/[-_.]/) };
}

/**
 * Whether a header (or a query parameter, by its name) may carry a signature or a credential: the
 * one rule for every header the package stores, shows or sends back.
 */
export function isSecretHeader(headerName: string): boolean {
	const { name, parts } = normalised(headerName);
	return (
		REFUSED_BY_PROVIDERS.has(name) ||
		SECRET_PATTERN.test(name) ||
		(TOKEN_PATTERN.test(name) && !parts.includes('idempotency')) ||
		parts.some((part) => SECRET_NAME_PARTS.has(part))
	);
}

/** Throws ForbiddenKeySourceError when a header can never identify an event across retries. */
export function assertUsableKeyHeader(headerName: string): void {
	const { name, parts } = normalised(headerName);
	if (
		isSecretHeader(name) ||
		KNOWN_FORBIDDEN.has(name) ||
		FORBIDDEN_PATTERN.test(name) ||
		parts.some((part) => FORBIDDEN_NAME_PARTS.has(part))
	) {
		throw new ForbiddenKeySourceError(
			`The header "${name}" cannot be an idempotency key: signature, authorization and timestamp headers change on every retry, so each retry would look like a new event and the duplicate would run again. Verify the signature with the Webhook Signature Verify node, and key on the provider's event id instead (for example the Stripe preset, or a delivery-id header such as x-github-delivery).`,
		);
	}
}

/** Throws when a header chosen to be stored as evidence (Reserve's Correlation Header) may carry a secret. */
export function assertStorableEvidenceHeader(headerName: string, option: string): void {
	if (isSecretHeader(headerName)) {
		throw new InvalidConfigurationError(
			`${option} "${headerName.trim().toLowerCase()}" may carry a signature or a credential, which would be stored with the key, returned by Get Key and List Keys and shown in the execution's custom data: choose a trace header such as traceparent or x-request-id.`,
		);
	}
}
