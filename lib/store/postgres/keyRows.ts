import type { QueryResultRow } from 'pg';

import { parseWithExactNumbers } from '../../evidence/exactNumbers';
import type { CompactRecord, IdempotencyRecord, RecordStatus, StoredKey } from '../../types';

/**
 * Rows of the key table as records. pg has already parsed integers and timestamps; batches of
 * 10,000 rows pass through here, so nothing is converted twice (formatting belongs to whoever
 * displays the record).
 */
export function toCompactRecord(row: QueryResultRow): CompactRecord {
	return {
		key: row.key,
		status: row.status as RecordStatus,
		attempts: row.attempts,
		lockedUntil: row.locked_until,
		payloadHash: row.payload_hash ?? null,
		response: row.response ?? null,
		leaseActive: Boolean(row.lease_active),
	};
}

/** The full row: the compact part plus the columns only Output: Full (and Get Key, List Keys) show. */
export function toRecord(row: QueryResultRow): IdempotencyRecord {
	return {
		...toCompactRecord(row),
		duplicateCount: row.duplicate_count,
		firstSeen: row.first_seen,
		lastSeen: row.last_seen,
		expiresAt: row.expires_at,
		executionId: row.execution_id ?? null,
		workflowId: row.workflow_id ?? null,
		keySource: row.key_source ?? null,
		completedAt: row.completed_at,
		lastError: row.last_error ?? null,
	};
}

/**
 * The stored payload (read as text by the statements), its numbers JavaScript would round given as
 * strings of their exact digits; null when none is stored.
 */
export function storedPayload(row: QueryResultRow): unknown {
	return typeof row.payload === 'string' ? parseWithExactNumbers(row.payload) : null;
}

export function toStoredKey(row: QueryResultRow): StoredKey {
	return {
		...toRecord(row),
		retentionEnded: Boolean(row.retention_ended),
		payload: storedPayload(row),
		payloadStored: Boolean(row.payload_stored),
		payloadBytes: row.payload_bytes ?? null,
		source: row.source ?? null,
		correlationId: row.correlation_id ?? null,
	};
}
