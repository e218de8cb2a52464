/**
 * Where each provider puts an id that stays the same across retries of one event
 * (see the package README, "Providers"). A preset reads either a body field or a header.
 */
export type ProviderPreset = 'stripe' | 'github' | 'shopify' | 'slack' | 'standardWebhooks' | 'generic';

export type PresetSource = { from: 'body'; field: string } | { from: 'header'; names: string[] };

export const PROVIDER_PRESETS: Record<ProviderPreset, PresetSource> = {
	// evt_… in the body; the Stripe-Signature header changes on every retry.
	stripe: { from: 'body', field: 'id' },
	// X-GitHub-Delivery is kept on redelivery.
	github: { from: 'header', names: ['x-github-delivery'] },
	// X-Shopify-Webhook-Id is the same on every retry of one delivery; X-Shopify-Event-Id is shared
	// by all deliveries of one merchant action, which makes it a business key, not a retry key.
	shopify: { from: 'header', names: ['x-shopify-webhook-id'] },
	// event_id in the body; retries add X-Slack-Retry-Num.
	slack: { from: 'body', field: 'event_id' },
	standardWebhooks: { from: 'header', names: ['webhook-id', 'svix-id'] },
	// IETF draft "Idempotency-Key" header.
	generic: { from: 'header', names: ['idempotency-key'] },
};

export function isProviderPreset(value: unknown): value is ProviderPreset {
	return typeof value === 'string' && Object.prototype.hasOwnProperty.call(PROVIDER_PRESETS, value);
}
