/**
 * Every webhook provider the package knows, defined once. The key presets, the signature schemes,
 * the schemes that sign a timestamp and the headers refused as keys are all derived from here, and
 * the nodes derive their option lists from it. Adding a provider means adding one entry here and,
 * when it signs, its parser in `lib/signature/schemes.ts`; `test/unit/providers.test.ts` fails when
 * a provider is half defined. The ids are stored in saved workflows: never change one.
 */

/** Where a provider puts an id that stays the same across retries of one event: a body field or a header. */
export type PresetSource = { from: 'body'; field: string } | { from: 'header'; names: readonly string[] };

/** Whether a scheme signs a timestamp, so that the replay window applies. */
export type SignedTimestamp = 'always' | 'never' | 'configurable';

export interface ProviderSignature {
	/** The scheme's name where it differs from the provider's, e.g. "Generic HMAC". */
	displayName?: string;
	/** One line for the scheme's option: the header and what is signed. */
	summary: string;
	timestamp: SignedTimestamp;
}

export interface ProviderDefinition {
	/** The name users know, e.g. "GitHub". */
	displayName: string;
	/** Where the retry-stable event id lives. */
	eventId: PresetSource;
	/** The event id as the Provider option shows it, e.g. "X-GitHub-Delivery" or "Body ID". */
	eventIdLabel: string;
	/** How requests are signed; `undefined` for a provider the verifier does not know. */
	signature?: ProviderSignature;
	/**
	 * Headers (lower case) that differ between attempts of one event, so can never be keys: the
	 * signature and timestamp headers. Empty only for a provider whose headers are configurable.
	 */
	refusedHeaders: readonly string[];
	/** Why the event id is the right one; for the next engineer. */
	notes: string;
}

/** Replay window when none is configured: the Stripe, Slack and Standard Webhooks SDK default. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** The providers, in the order of the Scheme values the node has always listed. */
export const PROVIDERS = {
	stripe: {
		displayName: 'Stripe',
		eventId: { from: 'body', field: 'id' },
		eventIdLabel: 'Body ID',
		signature: {
			summary: 'Stripe-Signature: t=timestamp,v1=hex HMAC-SHA256 of "timestamp.body"',
			timestamp: 'always',
		},
		refusedHeaders: ['stripe-signature'],
		notes: 'evt_… in the body; the Stripe-Signature header changes on every retry (new timestamp).',
	},
	github: {
		displayName: 'GitHub',
		eventId: { from: 'header', names: ['x-github-delivery'] },
		eventIdLabel: 'X-GitHub-Delivery',
		signature: { summary: 'X-Hub-Signature-256: sha256=hex HMAC-SHA256 of the raw body', timestamp: 'never' },
		// X-Hub-Signature is the legacy SHA-1 signature GitHub still sends beside the SHA-256 one.
		refusedHeaders: ['x-hub-signature', 'x-hub-signature-256'],
		notes: 'X-GitHub-Delivery is kept on redelivery.',
	},
	shopify: {
		displayName: 'Shopify',
		eventId: { from: 'header', names: ['x-shopify-webhook-id'] },
		eventIdLabel: 'X-Shopify-Webhook-ID',
		signature: { summary: 'X-Shopify-Hmac-Sha256: base64 HMAC-SHA256 of the raw body', timestamp: 'never' },
		// X-Shopify-Triggered-At is not signed, but it is a time: it would make a retry look new.
		refusedHeaders: ['x-shopify-hmac-sha256', 'x-shopify-triggered-at'],
		notes:
			'X-Shopify-Webhook-Id is the same on every retry of one delivery; X-Shopify-Event-Id is shared by all deliveries of one merchant action, which makes it a business key, not a retry key.',
	},
	slack: {
		displayName: 'Slack',
		eventId: { from: 'body', field: 'event_id' },
		eventIdLabel: 'Body Event ID',
		signature: {
			summary: 'X-Slack-Signature: v0=hex HMAC-SHA256 of "v0:timestamp:body", with X-Slack-Request-Timestamp',
			timestamp: 'always',
		},
		refusedHeaders: ['x-slack-signature', 'x-slack-request-timestamp'],
		notes: 'event_id in the body; retries add X-Slack-Retry-Num.',
	},
	standardWebhooks: {
		displayName: 'Standard Webhooks / Svix',
		eventId: { from: 'header', names: ['webhook-id', 'svix-id'] },
		eventIdLabel: 'Webhook-ID',
		signature: {
			summary: 'Webhook-ID, webhook-timestamp and webhook-signature (or the svix- equivalents), whsec_ base64 secret',
			timestamp: 'always',
		},
		refusedHeaders: ['webhook-signature', 'webhook-timestamp', 'svix-signature', 'svix-timestamp'],
		notes: 'The unbranded webhook-id wins over svix-id; both are kept on retry.',
	},
	generic: {
		displayName: 'Generic',
		eventId: { from: 'header', names: ['idempotency-key'] },
		eventIdLabel: 'Idempotency-Key Header',
		signature: {
			displayName: 'Generic HMAC',
			summary: 'An HMAC of the raw body (optionally prefixed by a timestamp) in a header you name',
			timestamp: 'configurable',
		},
		// The signature and timestamp headers are the user's choice; the general rule still refuses them by name.
		refusedHeaders: [],
		notes: 'The IETF draft "Idempotency-Key" header.',
	},
} as const satisfies Record<string, ProviderDefinition>;

export type ProviderId = keyof typeof PROVIDERS;

/** The ids of the providers that define a signature: the verifier's schemes. */
export type SigningProviderId = {
	[Id in ProviderId]: (typeof PROVIDERS)[Id] extends { signature: ProviderSignature } ? Id : never;
}[ProviderId];

/** Senders that are not full providers, whose attempt-specific headers are still refused as keys by name. */
export const OTHER_REFUSED_HEADERS: Readonly<Record<string, readonly string[]>> = {
	// Key PayPal on paypal-transmission-id; the signature and its time change per transmission.
	paypal: ['paypal-transmission-sig', 'paypal-transmission-time'],
};

/** Every provider id, in registry order. */
export const PROVIDER_IDS = Object.keys(PROVIDERS) as ProviderId[];

/** A provider's definition, widened to the common shape. */
export function providerDefinition(id: ProviderId): ProviderDefinition {
	return PROVIDERS[id];
}

/** The providers whose requests the verifier can check, in registry order. */
export function signingProviderIds(): SigningProviderId[] {
	return PROVIDER_IDS.filter((id): id is SigningProviderId => providerDefinition(id).signature !== undefined);
}

/** A scheme's name as the Scheme option and the subtitle show it. */
export function schemeDisplayName(id: ProviderId): string {
	const definition = providerDefinition(id);
	return definition.signature?.displayName ?? definition.displayName;
}

/** Ids of schemes that sign a timestamp (always, or when configured to), for which the tolerance applies. */
export function timestampedSchemeIds(): ProviderId[] {
	return PROVIDER_IDS.filter((id) => {
		const timestamp = providerDefinition(id).signature?.timestamp;
		return timestamp !== undefined && timestamp !== 'never';
	});
}

/** Every header named by a provider (or another known sender) as refused, lower case. */
export function refusedHeaderNames(): string[] {
	const names = [...PROVIDER_IDS.flatMap((id) => providerDefinition(id).refusedHeaders), ...Object.values(OTHER_REFUSED_HEADERS).flat()];
	return [...new Set(names)];
}
