import type { IDataObject } from 'n8n-workflow';

import { storedKeyPreview } from '../../lib/evidence/payloadPreview';
import { redactedErrorText } from '../../lib/evidence/redactedText';
import { keySourceInWords } from '../../lib/keys/deriveKey';
import type { StoredKey } from '../../lib/types';
import { isoTime } from '../../lib/pipeline/idempotencyOutput';

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
		// The Idempotent Webhook's inbox (Respond: At Once): null for every other key.
		inbox:
			stored.inboxOwner === null
				? null
				: {
						owner: stored.inboxOwner,
						eventKept: stored.hasInboxItem,
						maxAttempts: stored.maxAttempts,
						retryUntil: isoTime(stored.retryUntil),
						nextAttemptAt: isoTime(stored.nextAttemptAt),
						deadLettered: stored.deadLetteredAt !== null,
						deadLetteredAt: isoTime(stored.deadLetteredAt),
					},
	};
}

/**
 * A stored key for a page people read (Redacted Payload Preview): the record without its payload
 * and stored answer, with a redacted preview of its event (read Get Key's `inboxItem` for the
 * trigger's kept item).
 */
export function keyPreviewJson(stored: StoredKey): IDataObject {
	const record = keyRecordJson(stored);
	delete record.payload;
	delete record.response;
	return { ...record, lastError: redactedErrorText(stored.lastError), payloadPreview: storedKeyPreview(stored) };
}
