import type { IExecuteFunctions } from 'n8n-workflow';

import { InvalidConfigurationError } from '../../lib/errors';
import {
	DEFAULT_CORRELATION_HEADER,
	DEFAULT_MAX_PAYLOAD_KB,
	type CorrelationSource,
	type EvidenceConfig,
} from '../../lib/evidence/replayEvidence';
import type { KeyConfig, KeyStrategy, OnMissingKey } from '../../lib/keys/deriveKey';
import type { ProviderPreset } from '../../lib/keys/presets';
import type { ReservationDetail, ReservationMode } from '../../lib/types';
import type { TableChoice } from './store';

export type PayloadFingerprintChoice = 'off' | 'flag' | 'error';
export type OnStoreUnavailable = 'fail' | 'letThrough';
export type ManualRuns = 'testScope' | 'real';

/** What one reserve statement takes once for all its items: these must be the same for every item. */
export interface StatementSettings {
	mode: ReservationMode;
	leaseSeconds: number;
	retentionSeconds: number;
	table: TableChoice;
	onStoreUnavailable: OnStoreUnavailable;
	/** Output: Compact or Full; it also picks the statement's RETURNING list. */
	output: ReservationDetail;
}

/** What may differ per item (an expression such as a per-tenant scope is evaluated for each item). */
export interface ItemSettings {
	key: KeyConfig;
	rawBodyProperty: string;
	payloadFingerprint: PayloadFingerprintChoice;
	/** Replay evidence stored with the key (validated per item by validateEvidenceConfig). */
	evidence: EvidenceConfig;
}

export type ReserveParameters = StatementSettings & ItemSettings;

interface ReserveOptionValues extends TableChoice {
	scope?: string;
	onMissingKey?: OnMissingKey;
	rawBodyProperty?: string;
	retentionDays?: number;
	payloadFingerprint?: PayloadFingerprintChoice;
	onStoreUnavailable?: OnStoreUnavailable;
	manualRuns?: ManualRuns;
	storePayload?: boolean;
	maxPayloadKb?: number;
	source?: string;
	correlationId?: CorrelationSource;
	correlationHeader?: string;
	output?: ReservationDetail;
}

/** Every parameter as it applies to one item, typed in one place. */
export function readReserveParameters(context: IExecuteFunctions, itemIndex: number): ReserveParameters {
	const strategy = context.getNodeParameter('keySource', itemIndex) as KeyStrategy;
	const mode = context.getNodeParameter('mode', itemIndex) as ReservationMode;
	const options = context.getNodeParameter('options', itemIndex, {}) as ReserveOptionValues;
	return {
		key: {
			strategy,
			preset: strategy === 'preset' ? (context.getNodeParameter('preset', itemIndex) as ProviderPreset) : undefined,
			headerName: strategy === 'header' ? (context.getNodeParameter('headerName', itemIndex) as string) : undefined,
			fieldPath: strategy === 'field' ? (context.getNodeParameter('keyField', itemIndex) as string) : undefined,
			fieldPrefix: strategy === 'field' ? (context.getNodeParameter('keyPrefix', itemIndex, '') as string) : undefined,
			scope: options.scope,
			onMissingKey: options.onMissingKey ?? 'bodyHash',
			manualTest: isManualRun(context) && options.manualRuns !== 'real',
		},
		mode,
		leaseSeconds: mode === 'lease' ? (context.getNodeParameter('leaseSeconds', itemIndex, 300) as number) : 300,
		retentionSeconds: Math.round((options.retentionDays ?? 30) * 86_400),
		rawBodyProperty: options.rawBodyProperty || 'data',
		payloadFingerprint: options.payloadFingerprint ?? 'off',
		evidence: {
			storePayload: options.storePayload === true,
			maxPayloadKb: options.maxPayloadKb ?? DEFAULT_MAX_PAYLOAD_KB,
			source: options.source === undefined ? undefined : String(options.source),
			correlation: options.correlationId ?? 'off',
			correlationHeader: String(options.correlationHeader ?? DEFAULT_CORRELATION_HEADER),
		},
		table: { tableName: options.tableName, schemaName: options.schemaName, createTable: options.createTable },
		onStoreUnavailable: options.onStoreUnavailable ?? 'fail',
		output: options.output === 'full' ? 'full' : 'compact',
	};
}

export interface BatchParameters {
	statement: StatementSettings;
	/** One entry per input item: its settings, or the error reading them (e.g. a failing expression). */
	items: Array<ReserveParameters | { error: unknown }>;
}

/**
 * Reads the parameters for every item: once when no parameter is an expression, else per item.
 * Throws InvalidConfigurationError when a setting the one statement takes differs between items,
 * or when no item's parameters can be read.
 */
export function readBatchParameters(context: IExecuteFunctions, itemCount: number): BatchParameters {
	// The custom key is always read per item (keyInput.ts); only the other parameters matter here.
	const perItem = Object.entries(context.getNode().parameters).some(([name, value]) => name !== 'customKey' && hasExpression(value));
	const shared = perItem ? undefined : readSafely(context, 0);
	const items = Array.from({ length: itemCount }, (_, itemIndex) => shared ?? readSafely(context, itemIndex));
	const firstIndex = items.findIndex((item) => !('error' in item));
	if (firstIndex === -1) throw (items[0] as { error: unknown }).error;
	const statement = statementSettings(items[firstIndex] as ReserveParameters);
	// Parameters read once are one object for every item: nothing can differ.
	if (shared) return { statement, items };
	for (const [itemIndex, item] of items.entries()) {
		if ('error' in item) continue;
		const difference = firstDifference(statement, statementSettings(item));
		if (difference) {
			throw new InvalidConfigurationError(
				`${difference.name} must be the same for every item of one run (all items are reserved in one statement): item ${firstIndex} has ${difference.first}, item ${itemIndex} has ${difference.other}. Split the items (for example with a Switch node) or make the setting fixed.`,
			);
		}
	}
	return { statement, items };
}

function readSafely(context: IExecuteFunctions, itemIndex: number): ReserveParameters | { error: unknown } {
	try {
		return readReserveParameters(context, itemIndex);
	} catch (error) {
		return { error };
	}
}

function statementSettings(parameters: ReserveParameters): StatementSettings {
	const { mode, leaseSeconds, retentionSeconds, table, onStoreUnavailable, output } = parameters;
	return { mode, leaseSeconds, retentionSeconds, table, onStoreUnavailable, output };
}

function firstDifference(first: StatementSettings, other: StatementSettings): { name: string; first: string; other: string } | undefined {
	const compared: Array<[string, unknown, unknown]> = [
		['Mode', first.mode, other.mode],
		['Lease (Seconds)', first.leaseSeconds, other.leaseSeconds],
		['Retention (Days)', first.retentionSeconds / 86_400, other.retentionSeconds / 86_400],
		['Table Name', first.table.tableName ?? '', other.table.tableName ?? ''],
		['Schema', first.table.schemaName ?? '', other.table.schemaName ?? ''],
		['Create or Upgrade Table', first.table.createTable !== false, other.table.createTable !== false],
		['On Store Unavailable', first.onStoreUnavailable, other.onStoreUnavailable],
		['Output', first.output, other.output],
	];
	const found = compared.find(([, a, b]) => a !== b);
	return found && { name: found[0], first: JSON.stringify(found[1]), other: JSON.stringify(found[2]) };
}

/** Whether any parameter value (at any depth) is an n8n expression, i.e. may differ per item. */
function hasExpression(value: unknown): boolean {
	if (typeof value === 'string') return value.startsWith('=');
	if (Array.isArray(value)) return value.some(hasExpression);
	if (value !== null && typeof value === 'object') return Object.values(value).some(hasExpression);
	return false;
}

/** n8n says "manual" for a run started in the editor (pinned or test data). */
function isManualRun(context: IExecuteFunctions): boolean {
	// A context without getMode (a hand-made test context) is not an editor run.
	return typeof context.getMode === 'function' && context.getMode() === 'manual';
}
