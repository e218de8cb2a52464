import type { INodeProperties, INodePropertyOptions } from 'n8n-workflow';

import { PROVIDER_IDS, providerDefinition, schemeDisplayName, signingProviderIds, timestampedSchemeIds } from '../../lib/providers';
import { DEFAULT_TOLERANCE_SECONDS } from '../../lib/signature';

/** n8n lists options alphabetically by name. */
const byName = (a: INodePropertyOptions, b: INodePropertyOptions): number => a.name.localeCompare(b.name, 'en');

/** Idempotency Reserve → Provider: every provider, named with where its event id lives. */
export function presetOptions(): INodePropertyOptions[] {
	return PROVIDER_IDS.map((id) => {
		const provider = providerDefinition(id);
		return { name: `${provider.displayName} (${provider.eventIdLabel})`, value: id };
	}).sort(byName);
}

/** Webhook Signature Verify → Scheme: every provider that signs, with what it signs. */
export function schemeOptions(): INodePropertyOptions[] {
	return signingProviderIds()
		.map((id) => ({
			name: schemeDisplayName(id),
			value: id,
			description: providerDefinition(id).signature?.summary,
		}))
		.sort(byName);
}

/** Schemes that sign a timestamp, for which the Tolerance parameter is shown and read. */
export const TIMESTAMPED_SCHEMES: readonly string[] = timestampedSchemeIds();

/** The Verify node's subtitle: the chosen scheme's name. */
export function schemeSubtitle(): string {
	const names = Object.fromEntries(signingProviderIds().map((id) => [id, schemeDisplayName(id)]));
	return `={{ ${JSON.stringify(names)}[$parameter["scheme"]] }}`;
}

/**
 * The tolerance a scheme is checked with: the node's Tolerance where the scheme shows it, else the default. Read
 * nowhere else: n8n drops a parameter its display options hide, and reading one without a fallback throws.
 */
export function toleranceSecondsOf(scheme: string, read: (name: string, fallback: number) => unknown): number {
	return TIMESTAMPED_SCHEMES.includes(scheme)
		? (read(toleranceProperty.name, DEFAULT_TOLERANCE_SECONDS) as number)
		: DEFAULT_TOLERANCE_SECONDS;
}

/** Tolerance of the schemes that sign a timestamp; Webhook Signature Verify and the Idempotent Webhook trigger show it. */
export const toleranceProperty: INodeProperties = {
	displayName: 'Tolerance (Seconds)',
	name: 'toleranceSeconds',
	type: 'number',
	displayOptions: { show: { scheme: [...TIMESTAMPED_SCHEMES] } },
	default: DEFAULT_TOLERANCE_SECONDS,
	typeOptions: { minValue: 0 },
	description:
		'How far the signed timestamp may be from now, in either direction, before the request counts as a replay (too old) or as dated in the future. Only for schemes that sign a timestamp.',
};
