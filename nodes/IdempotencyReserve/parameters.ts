import type { IExecuteFunctions } from 'n8n-workflow';

import type { KeyConfig, KeyStrategy, OnMissingKey } from '../../lib/keys/deriveKey';
import type { ProviderPreset } from '../../lib/keys/presets';
import type { ReservationMode } from '../../lib/types';
import type { TableChoice } from '../shared/store';

export type PayloadFingerprintChoice = 'off' | 'flag' | 'error';

export interface ReserveParameters {
	key: KeyConfig;
	mode: ReservationMode;
	leaseSeconds: number;
	retentionSeconds: number;
	rawBodyProperty: string;
	payloadFingerprint: PayloadFingerprintChoice;
	table: TableChoice;
}

interface ReserveOptionValues extends TableChoice {
	scope?: string;
	onMissingKey?: OnMissingKey;
	rawBodyProperty?: string;
	retentionDays?: number;
	payloadFingerprint?: PayloadFingerprintChoice;
}

/** Every node-level parameter, read once and typed in one place. */
export function readReserveParameters(context: IExecuteFunctions): ReserveParameters {
	const strategy = context.getNodeParameter('keySource', 0) as KeyStrategy;
	const mode = context.getNodeParameter('mode', 0) as ReservationMode;
	const options = context.getNodeParameter('options', 0, {}) as ReserveOptionValues;
	return {
		key: {
			strategy,
			preset: strategy === 'preset' ? (context.getNodeParameter('preset', 0) as ProviderPreset) : undefined,
			headerName: strategy === 'header' ? (context.getNodeParameter('headerName', 0) as string) : undefined,
			scope: options.scope,
			onMissingKey: options.onMissingKey ?? 'bodyHash',
		},
		mode,
		leaseSeconds: mode === 'lease' ? (context.getNodeParameter('leaseSeconds', 0, 300) as number) : 300,
		retentionSeconds: Math.round((options.retentionDays ?? 30) * 86_400),
		rawBodyProperty: options.rawBodyProperty || 'data',
		payloadFingerprint: options.payloadFingerprint ?? 'off',
		table: { tableName: options.tableName, schemaName: options.schemaName, createTable: options.createTable },
	};
}
