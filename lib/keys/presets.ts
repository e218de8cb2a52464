import { PROVIDER_IDS, providerDefinition, type PresetSource, type ProviderId } from '../providers';

export type { PresetSource } from '../providers';

/**
 * Where each provider puts an id that stays the same across retries of one event, derived from
 * the provider registry (`lib/providers.ts`). A preset reads either a body field or a header.
 */
export type ProviderPreset = ProviderId;

export const PROVIDER_PRESETS: Readonly<Record<ProviderPreset, PresetSource>> = Object.fromEntries(
	PROVIDER_IDS.map((id) => [id, providerDefinition(id).eventId]),
) as Record<ProviderPreset, PresetSource>;

export function isProviderPreset(value: unknown): value is ProviderPreset {
	return typeof value === 'string' && Object.prototype.hasOwnProperty.call(PROVIDER_PRESETS, value);
}
