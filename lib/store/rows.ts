import { parseWithExactNumbers } from '../evidence/exactNumbers';
import type { CompactRecord, IdempotencyRecord, RecordStatus, StoredKey } from '../types';
import type { RowReader } from './driver';

/**
 * Rows of the key table as records, for every backend: the driver's reader turns its values into
 * the record's types (times, JSON). Batches of 10,000 rows pass through here, so nothing is
 * converted twice (formatting belongs to whoever displays the record).
 */
export function toCompactRecord(row: unknown, read: RowReader): CompactRecord {
	return {
		key: read.value(row, 'key') as string,
		status: read.value(row, 'status') as RecordStatus,
		attempts: read.value(row, 'attempts') as number,
		lockedUntil: read.time(row, 'locked_until'),
		payloadHash: (read.value(row, 'payload_hash') as string | null) ?? null,
		response: read.json(row, 'response'),
		leaseActive: Boolean(read.value(row, 'lease_active')),
	};
}

/** The full row: the compact part plus the columns only Output: Full (and Get Key, List Keys) show. */
export function toRecord(row: unknown, read: RowReader): IdempotencyRecord {
	const text = (column: string) => (read.value(row, column) as string | null) ?? null;
	return {
		...toCompactRecord(row, read),
		duplicateCount: read.value(row, 'duplicate_count') as number,
		firstSeen: read.time(row, 'first_seen') as Date,
		lastSeen: read.time(row, 'last_seen') as Date,
		expiresAt: read.time(row, 'expires_at'),
		executionId: text('execution_id'),
		workflowId: text('workflow_id'),
		keySource: text('key_source'),
		completedAt: read.time(row, 'completed_at'),
		lastError: text('last_error'),
	};
}

/**
 * The stored payload (read as text by the statements), its numbers JavaScript would round given as
 * strings of their exact digits; null when none is stored.
 */
export function storedPayload(row: unknown, read: RowReader): unknown {
	const payload = read.value(row, 'payload');
	return typeof payload === 'string' ? parseWithExactNumbers(payload) : null;
}

/** What a claim or a Get Key returns beside the record: the evidence stored with the key. */
export function storedEvidence(
	row: unknown,
	read: RowReader,
): { payload: unknown; payloadStored: boolean; source: string | null; correlationId: string | null } {
	return {
		payload: storedPayload(row, read),
		payloadStored: Boolean(read.value(row, 'payload_stored')),
		source: (read.value(row, 'source') as string | null) ?? null,
		correlationId: (read.value(row, 'correlation_id') as string | null) ?? null,
	};
}

export function toStoredKey(row: unknown, read: RowReader): StoredKey {
	const { payload, payloadStored, source, correlationId } = storedEvidence(row, read);
	return {
		...toRecord(row, read),
		retentionEnded: Boolean(read.value(row, 'retention_ended')),
		payload,
		payloadStored,
		payloadBytes: (read.value(row, 'payload_bytes') as number | null) ?? null,
		source,
		correlationId,
		inboxOwner: (read.value(row, 'inbox_owner') as string | null) ?? null,
		hasInboxItem: Boolean(read.value(row, 'has_inbox_item')),
		maxAttempts: (read.value(row, 'max_attempts') as number | null) ?? null,
		retryUntil: read.time(row, 'retry_until'),
		nextAttemptAt: read.time(row, 'next_attempt_at'),
		deadLetteredAt: read.time(row, 'dead_lettered_at'),
	};
}
