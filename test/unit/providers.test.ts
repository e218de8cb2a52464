import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import type { INodeProperties, INodePropertyOptions } from 'n8n-workflow';

import { ForbiddenKeySourceError } from '../../lib/errors';
import { assertUsableKeyHeader } from '../../lib/keys/forbiddenHeaders';
import { PROVIDER_PRESETS } from '../../lib/keys/presets';
import {
	OTHER_REFUSED_HEADERS,
	PROVIDERS,
	PROVIDER_IDS,
	providerDefinition,
	type ProviderDefinition,
	type SigningProviderId,
} from '../../lib/providers';
import { SIGNATURE_SCHEMES } from '../../lib/signature';
import { SCHEMES } from '../../lib/signature/schemes';
import { presetOptions, schemeOptions, schemeSubtitle, TIMESTAMPED_SCHEMES } from '../../nodes/shared/providerOptions';
import { IdempotencyReserve } from '../../nodes/IdempotencyReserve/IdempotencyReserve.node';
import { WebhookSignatureVerify } from '../../nodes/WebhookSignatureVerify/WebhookSignatureVerify.node';
import { BODY, NOW } from './signature/fixtures';
import { SIGNERS } from './signature/signers';

const SIGNATURE_DOC = readFileSync(join(__dirname, '../../docs/signature-verification.md'), 'utf8');

function property(properties: INodeProperties[], name: string): INodeProperties {
	const found = properties.find((candidate) => candidate.name === name);
	if (found === undefined) throw new Error(`no parameter "${name}"`);
	return found;
}

const optionValues = (parameter: INodeProperties): string[] =>
	(parameter.options as INodePropertyOptions[]).map((option) => String(option.value));

const reserveProperties = new IdempotencyReserve().description.properties;
const verifyDescription = new WebhookSignatureVerify().description;

/** Whether the key check refuses a header name. */
function isRefused(headerName: string): boolean {
	try {
		assertUsableKeyHeader(headerName);
		return false;
	} catch (error) {
		if (error instanceof ForbiddenKeySourceError) return true;
		throw error;
	}
}

/** Everything that must be defined for a provider to be whole, as one list of problems. */
interface RegistryView {
	providers: Readonly<Record<string, ProviderDefinition>>;
	schemeParsers: Readonly<Record<string, unknown>>;
	presetOptionValues: readonly string[];
	schemeOptionValues: readonly string[];
	doc: string;
}

function registryProblems(view: RegistryView): string[] {
	const problems: string[] = [];
	for (const [id, provider] of Object.entries(view.providers)) {
		if (provider.displayName.trim() === '') problems.push(`${id}: no display name`);
		if (provider.eventIdLabel.trim() === '') problems.push(`${id}: no event id label`);
		if (!view.presetOptionValues.includes(id)) problems.push(`${id}: not in the Provider option list`);
		if (!view.doc.includes(`(\`${id}\``)) problems.push(`${id}: not in docs/signature-verification.md`);
		const idHeaders = provider.eventId.from === 'header' ? provider.eventId.names : [];
		if (provider.eventId.from === 'body' && provider.eventId.field.trim() === '') problems.push(`${id}: empty event id field`);
		if (provider.eventId.from === 'header' && idHeaders.length === 0) problems.push(`${id}: no event id header`);
		for (const name of idHeaders) {
			if (name !== name.toLowerCase()) problems.push(`${id}: event id header "${name}" not lower case`);
			if (isRefused(name)) problems.push(`${id}: event id header "${name}" is refused as a key`);
		}
		for (const name of provider.refusedHeaders) {
			if (name !== name.toLowerCase()) problems.push(`${id}: refused header "${name}" not lower case`);
			if (idHeaders.includes(name)) problems.push(`${id}: "${name}" is both the event id and refused`);
		}
		const signature = provider.signature;
		if (signature === undefined) {
			if (view.schemeOptionValues.includes(id)) problems.push(`${id}: a Scheme option without a signature`);
			continue;
		}
		if (signature.summary.trim() === '') problems.push(`${id}: no signature summary`);
		if (signature.displayName !== undefined && signature.displayName.trim() === '') problems.push(`${id}: empty scheme name`);
		if (!(id in view.schemeParsers)) problems.push(`${id}: a signature without a parser`);
		if (!view.schemeOptionValues.includes(id)) problems.push(`${id}: not in the Scheme option list`);
		// Only a scheme whose headers the user names may leave them to the general rule.
		if (signature.timestamp !== 'configurable' && provider.refusedHeaders.length === 0) {
			problems.push(`${id}: signs, but refuses no header as a key`);
		}
	}
	for (const scheme of Object.keys(view.schemeParsers)) {
		if (view.providers[scheme]?.signature === undefined) problems.push(`${scheme}: a parser without a signing provider`);
	}
	for (const value of [...view.presetOptionValues, ...view.schemeOptionValues]) {
		if (!(value in view.providers)) problems.push(`${value}: an option without a provider`);
	}
	return problems;
}

const realView: RegistryView = {
	providers: PROVIDERS,
	schemeParsers: SCHEMES,
	presetOptionValues: optionValues(property(reserveProperties, 'preset')),
	schemeOptionValues: optionValues(property(verifyDescription.properties, 'scheme')),
	doc: SIGNATURE_DOC,
};

describe('the provider registry', () => {
	it('defines every provider whole: names, event id, parser, option values, refused headers, docs', () => {
		expect(registryProblems(realView)).toEqual([]);
	});

	it('catches a half-defined provider (the check above is not vacuous)', () => {
		const acme: ProviderDefinition = {
			displayName: 'Acme',
			eventId: { from: 'header', names: ['X-Acme-Signature'] },
			eventIdLabel: '',
			signature: { summary: 'X-Acme-Sig: hex HMAC-SHA256 of the raw body', timestamp: 'never' },
			refusedHeaders: [],
			notes: '',
		};
		expect(registryProblems({ ...realView, providers: { ...PROVIDERS, acme } })).toEqual([
			'acme: no event id label',
			'acme: not in the Provider option list',
			'acme: not in docs/signature-verification.md',
			'acme: event id header "X-Acme-Signature" not lower case',
			'acme: event id header "X-Acme-Signature" is refused as a key',
			'acme: a signature without a parser',
			'acme: not in the Scheme option list',
			'acme: signs, but refuses no header as a key',
		]);
		expect(
			registryProblems({
				...realView,
				schemeParsers: { ...SCHEMES, paypal: SCHEMES.github },
				schemeOptionValues: [...realView.schemeOptionValues, 'paypal'],
			}),
		).toEqual(['paypal: a parser without a signing provider', 'paypal: an option without a provider']);
	});

	it.each(Object.keys(SIGNERS))('refuses as keys every header the %s signer sends, except the event id', (signer) => {
		const scheme = (signer.startsWith('generic') ? 'generic' : signer) as SigningProviderId;
		const provider = providerDefinition(scheme);
		const idHeaders = provider.eventId.from === 'header' ? provider.eventId.names : [];
		const sent = Object.keys(SIGNERS[signer as keyof typeof SIGNERS]('secret', Buffer.from(BODY), NOW)).map((name) => name.toLowerCase());
		const attemptHeaders = sent.filter((name) => !idHeaders.includes(name));
		expect(attemptHeaders.length).toBeGreaterThan(0);
		for (const name of attemptHeaders) expect(isRefused(name)).toBe(true);
		// A named provider lists them itself; the generic scheme's names are the user's choice.
		if (scheme !== 'generic') expect(provider.refusedHeaders).toEqual(expect.arrayContaining(attemptHeaders));
	});

	it.each(Object.keys(SIGNERS).filter((signer) => !signer.startsWith('generic')))(
		'says truly whether the %s scheme signs a timestamp',
		(scheme) => {
			const id = scheme as SigningProviderId;
			const headers = SIGNERS[id as keyof typeof SIGNERS]('c2VjcmV0', Buffer.from(BODY), NOW);
			const parsed = SCHEMES[id].parse(headers, Buffer.from(BODY));
			expect(parsed.ok).toBe(true);
			const signsTimestamp = parsed.ok && parsed.request.timestampSeconds !== undefined;
			expect(signsTimestamp).toBe(providerDefinition(id).signature?.timestamp === 'always');
		},
	);

	it('refuses the headers of senders that are not full providers (PayPal)', () => {
		expect(OTHER_REFUSED_HEADERS.paypal).toEqual(['paypal-transmission-sig', 'paypal-transmission-time']);
		for (const name of OTHER_REFUSED_HEADERS.paypal ?? []) expect(isRefused(name)).toBe(true);
		expect(isRefused('paypal-transmission-id')).toBe(false);
	});
});

/** The lists as they were written out by hand before the registry: deriving them changes nothing. */
describe('the derived lists equal the hand-written ones they replace', () => {
	it('key presets', () => {
		expect(PROVIDER_PRESETS).toEqual({
			stripe: { from: 'body', field: 'id' },
			github: { from: 'header', names: ['x-github-delivery'] },
			shopify: { from: 'header', names: ['x-shopify-webhook-id'] },
			slack: { from: 'body', field: 'event_id' },
			standardWebhooks: { from: 'header', names: ['webhook-id', 'svix-id'] },
			generic: { from: 'header', names: ['idempotency-key'] },
		});
	});

	it('signature schemes, and those that sign a timestamp', () => {
		expect(SIGNATURE_SCHEMES).toEqual(['stripe', 'github', 'shopify', 'slack', 'standardWebhooks', 'generic']);
		expect(TIMESTAMPED_SCHEMES).toEqual(['stripe', 'slack', 'standardWebhooks', 'generic']);
		expect(Object.keys(SCHEMES)).toEqual([...SIGNATURE_SCHEMES]);
		expect(PROVIDER_IDS).toEqual([...SIGNATURE_SCHEMES]);
	});

	it('headers refused as keys: every one refused before still is', () => {
		for (const name of [
			'stripe-signature',
			'x-hub-signature',
			'x-hub-signature-256',
			'x-shopify-hmac-sha256',
			'x-shopify-triggered-at',
			'x-slack-signature',
			'x-slack-request-timestamp',
			'webhook-signature',
			'webhook-timestamp',
			'svix-signature',
			'svix-timestamp',
			'date',
			'authorization',
		]) {
			expect(isRefused(name)).toBe(true);
		}
		// Credentials: a key that never changes across events would make every later event a duplicate (lost).
		for (const name of ['cookie', 'x-api-key', 'x-auth-token', 'proxy-authorization']) expect(isRefused(name)).toBe(true);
		for (const name of [
			'x-github-delivery',
			'x-shopify-webhook-id',
			'webhook-id',
			'svix-id',
			'idempotency-key',
			'x-shopify-event-id',
			'i-twilio-idempotency-token',
		]) {
			expect(isRefused(name)).toBe(false);
		}
	});

	it('Idempotency Reserve → Provider options', () => {
		const parameter = property(reserveProperties, 'preset');
		expect(parameter.options).toEqual([
			{ name: 'Generic (Idempotency-Key Header)', value: 'generic' },
			{ name: 'GitHub (X-GitHub-Delivery)', value: 'github' },
			{ name: 'Shopify (X-Shopify-Webhook-ID)', value: 'shopify' },
			{ name: 'Slack (Body Event ID)', value: 'slack' },
			{ name: 'Standard Webhooks / Svix (Webhook-ID)', value: 'standardWebhooks' },
			{ name: 'Stripe (Body ID)', value: 'stripe' },
		]);
		expect(presetOptions()).toEqual(parameter.options);
		expect(parameter.default).toBe('stripe');
	});

	it('Webhook Signature Verify → Scheme options, tolerance visibility and subtitle', () => {
		const parameter = property(verifyDescription.properties, 'scheme');
		expect(parameter.options).toEqual([
			{
				name: 'Generic HMAC',
				value: 'generic',
				description: 'An HMAC of the raw body (optionally prefixed by a timestamp) in a header you name',
			},
			{ name: 'GitHub', value: 'github', description: 'X-Hub-Signature-256: sha256=hex HMAC-SHA256 of the raw body' },
			{ name: 'Shopify', value: 'shopify', description: 'X-Shopify-Hmac-Sha256: base64 HMAC-SHA256 of the raw body' },
			{
				name: 'Slack',
				value: 'slack',
				description: 'X-Slack-Signature: v0=hex HMAC-SHA256 of "v0:timestamp:body", with X-Slack-Request-Timestamp',
			},
			{
				name: 'Standard Webhooks / Svix',
				value: 'standardWebhooks',
				description: 'Webhook-ID, webhook-timestamp and webhook-signature (or the svix- equivalents), whsec_ base64 secret',
			},
			{ name: 'Stripe', value: 'stripe', description: 'Stripe-Signature: t=timestamp,v1=hex HMAC-SHA256 of "timestamp.body"' },
		]);
		expect(schemeOptions()).toEqual(parameter.options);
		expect(parameter.default).toBe('stripe');
		expect(property(verifyDescription.properties, 'toleranceSeconds').displayOptions).toEqual({
			show: { scheme: ['stripe', 'slack', 'standardWebhooks', 'generic'] },
		});

		// The subtitle names the chosen scheme as its option does ("Standard Webhooks / Svix" was "Standard Webhooks").
		expect(verifyDescription.subtitle).toBe(schemeSubtitle());
		const subtitle = /^=\{\{ (\{.*\})\[\$parameter\["scheme"\]\] \}\}$/.exec(verifyDescription.subtitle ?? '');
		expect(subtitle).not.toBeNull();
		expect(JSON.parse(subtitle?.[1] ?? '{}')).toEqual({
			stripe: 'Stripe',
			github: 'GitHub',
			shopify: 'Shopify',
			slack: 'Slack',
			standardWebhooks: 'Standard Webhooks / Svix',
			generic: 'Generic HMAC',
		});
	});
});
