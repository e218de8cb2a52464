import type { IDataObject } from 'n8n-workflow';

import type { DerivedKey } from '../../lib/keys/deriveKey';
import type { ReservationMode, ReservationResult } from '../../lib/types';

/**
 * The `idempotency` object every output item gains, so later nodes (Complete, Release, Respond to
 * Webhook) can use the key without reaching into other nodes. The owner token is only given to
 * the run that owns the key: a duplicate must never be able to release the owner's reservation.
 */
export function idempotencyOutput(result: ReservationResult, derived: DerivedKey, mode: ReservationMode): IDataObject {
	const { record } = result;
	return {
		key: result.key,
		keySource: derived.keySource,
		keyHashed: derived.hashed,
		isNew: result.outcome === 'new',
		outcome: result.outcome,
		mode,
		status: record.status,
		ownerToken: result.ownerToken,
		firstSeen: isoTime(record.firstSeen),
		lastSeen: isoTime(record.lastSeen),
		attempts: record.attempts,
		duplicateCount: record.duplicateCount,
		reclaimed: result.reclaimed,
		repeatInBatch: result.repeatInBatch,
		lockedUntil: isoTime(record.lockedUntil),
		expiresAt: isoTime(record.expiresAt),
		// The execution that reserved the row: on a Duplicate, the first run, not this one.
		reservedByExecutionId: record.executionId,
		reservedByWorkflowId: record.workflowId,
		executionId: record.executionId,
		workflowId: record.workflowId,
		manualTest: Boolean(derived.manualTest),
		completedAt: isoTime(record.completedAt),
		lastError: record.lastError,
		response: (record.response ?? null) as IDataObject | null,
		payloadMismatch: result.payloadMismatch,
	};
}

function isoTime(time: Date | null): string | null {
	return time ? time.toISOString() : null;
}

/**
 * The `idempotency` object of an item let through while Postgres could not be reached (option
 * "On Store Unavailable: Let Through"): nothing was reserved, so there is no owner token, and a
 * duplicate of this event is not caught.
 */
export function unverifiedOutput(derived: DerivedKey, mode: ReservationMode, reason: string): IDataObject {
	return {
		key: derived.key,
		keySource: derived.keySource,
		keyHashed: derived.hashed,
		isNew: false,
		outcome: 'unverified',
		unverified: true,
		unverifiedReason: reason,
		mode,
		status: null,
		ownerToken: null,
		manualTest: Boolean(derived.manualTest),
	};
}
