import { ForbiddenKeySourceError } from '../errors';
import { refusedHeaderNames } from '../providers';

// Signatures and timestamps change on every retry (Stripe signs each attempt with a new timestamp),
// so as keys they would make every retry look new and let duplicates through. Each provider's own
// such headers come from the registry; Date and Authorization differ per attempt for every sender.
const KNOWN_FORBIDDEN: ReadonlySet<string> = new Set([...refusedHeaderNames(), 'date', 'authorization']);
const FORBIDDEN_PATTERN = /signature|hmac|timestamp/i;
// Providers abbreviate (PayPal: paypal-transmission-sig, paypal-transmission-time); any name part
// that says signature, time or nonce marks a header that differs between attempts.
const FORBIDDEN_NAME_PARTS = new Set(['sig', 'signature', 'hmac', 'time', 'timestamp', 'date', 'nonce']);

/** Throws ForbiddenKeySourceError when a header can never identify an event across retries. */
export function assertUsableKeyHeader(headerName: string): void {
	const name = headerName.trim().toLowerCase();
	const parts = name.split(/[-_.]/);
	if (KNOWN_FORBIDDEN.has(name) || FORBIDDEN_PATTERN.test(name) || parts.some((part) => FORBIDDEN_NAME_PARTS.has(part))) {
		throw new ForbiddenKeySourceError(
			`The header "${name}" cannot be an idempotency key: signature, authorization and timestamp headers change on every retry, so each retry would look like a new event and the duplicate would run again. Verify the signature with the Webhook Signature Verify node, and key on the provider's event id instead (for example the Stripe preset, or a delivery-id header such as x-github-delivery).`,
		);
	}
}
