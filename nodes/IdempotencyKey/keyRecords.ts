import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';

import { keySourceInWords } from '../../lib/keys/deriveKey';
import type { KeyStore } from '../../lib/store/contract';
import type { ListKeysOptions, RecordStatus, StoredKey } from '../../lib/types';

/*
 * Get Key and List Keys: read-only views of the table, for looking one event up and
 * for a dead-letter view (failed keys, stuck leases). The owner token is never shown: reading a
 * key must not let anyone settle it; a replay reserves the key again and gets its own token.
 */

/** One stored key, in the words of Idempotency Reserve's output. */
export function keyRecordJson(stored: StoredKey): IDataObject {
	return {
		found: true,
		key: stored.key,
		status: stored.status,
		// processing whose lease ran out: the run died or hung; the next delivery reclaims it.
		stuckLease: stored.status === 'processing' && !stored.leaseActive && stored.lockedUntil !== null,
		retentionEnded: stored.retentionEnded,
		attempts: stored.attempts,
		duplicateCount: stored.duplicateCount,
		firstSeen: isoTime(stored.firstSeen),
		lastSeen: isoTime(stored.lastSeen),
		lockedUntil: isoTime(stored.lockedUntil),
		expiresAt: isoTime(stored.expiresAt),
		completedAt: isoTime(stored.completedAt),
		lastError: stored.lastError,
		reservedByExecutionId: stored.executionId,
		reservedByWorkflowId: stored.workflowId,
		keySource: keySourceInWords(stored.keySource),
		response: (stored.response ?? null) as IDataObject | null,
		// Replay evidence (Reserve's "Store Payload", "Source", "Correlation ID"): null when not stored.
		payload: (stored.payload ?? null) as IDataObject | null,
		payloadStored: stored.payloadStored,
		payloadBytes: stored.payloadBytes,
		source: stored.source,
		correlationId: stored.correlationId,
	};
}

export function isoTime(time: Date | null): string | null {
	return time ? time.toISOString() : null;
}

/** Get Key: one output item per input item, `found: false` when the key is not stored. */
export async function getKeys(context: IExecuteFunctions, store: KeyStore): Promise<INodeExecutionData[][]> {
	const items = context.getInputData();
	const keys = items.map((_item, itemIndex) => String(context.getNodeParameter('lookupKey', itemIndex) ?? ''));
	const found = await store.getKeys(keys.filter((key) => key !== ''));
	return [
		keys.map((key, itemIndex) => {
			const stored = found.get(key);
			return { json: stored ? keyRecordJson(stored) : { found: false, key }, pairedItem: { item: itemIndex } };
		}),
	];
}

interface ListFilters {
	status?: RecordStatus | 'any' | 'replayable';
	stuckLeasesOnly?: boolean;
	olderThanHours?: number;
	keyPrefix?: string;
}

/** List Keys: one page of keys (one item each), read with the first item's parameters. */
export async function listKeys(context: IExecuteFunctions, store: KeyStore): Promise<INodeExecutionData[][]> {
	const filters = context.getNodeParameter('listFilters', 0, {}) as ListFilters;
	const options: ListKeysOptions = {
		limit: context.getNodeParameter('limit', 0, 100) as number,
		afterKey: String(context.getNodeParameter('afterKey', 0, '') ?? ''),
		status: filters.status && filters.status !== 'any' && filters.status !== 'replayable' ? filters.status : undefined,
		replayableOnly: filters.status === 'replayable',
		stuckLeasesOnly: filters.stuckLeasesOnly,
		olderThanSeconds: filters.olderThanHours === undefined ? undefined : filters.olderThanHours * 3600,
		keyPrefix: filters.keyPrefix || undefined,
	};
	const { keys, nextAfterKey } = await store.listKeys(options);
	const pairedItem = context.getInputData().map((_item, itemIndex) => ({ item: itemIndex }));
	// Every item says where the next page starts, so "After Key" can be {{ $json.nextPageAfterKey }} of the last item.
	return [keys.map((stored) => ({ json: { ...keyRecordJson(stored), nextPageAfterKey: nextAfterKey }, pairedItem }))];
}

/** Get Stats: one item with the counts (read with the first item's window). */
export async function keyStats(context: IExecuteFunctions, store: KeyStore): Promise<INodeExecutionData[][]> {
	const stats = await store.stats(context.getNodeParameter('windowHours', 0, 24) as number);
	const pairedItem = context.getInputData().map((_item, itemIndex) => ({ item: itemIndex }));
	return [[{ json: { ...stats }, pairedItem }]];
}
