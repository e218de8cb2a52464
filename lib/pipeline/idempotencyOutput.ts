import { UnexpectedResultError } from '../errors';
import type { EvidenceReport } from '../evidence/replayEvidence';
import { keySourceInWords, type DerivedKey } from '../keys/deriveKey';
import type { CompactRecord, IdempotencyRecord, ItemJson, ReservationDetail, ReservationMode, ReservationResult } from '../types';

/** What shapes an item's `idempotency` object besides its reservation. */
export interface OutputSettings {
	mode: ReservationMode;
	/** The node's Output option: Compact (default) or Full. */
	detail: ReservationDetail;
	/** Payload Fingerprint is on for this item: payloadMismatch is meaningful. */
	fingerprinting: boolean;
}

/**
 * The `idempotency` object every output item gains, so later nodes (Complete, Release, Respond to
 * Webhook) can use the key without reaching into other nodes. The owner token is only given to
 * the run that owns the key: a duplicate must never be able to release the owner's reservation.
 */
export function idempotencyOutput(
	result: ReservationResult<CompactRecord> | ReservationResult,
	derived: DerivedKey,
	settings: OutputSettings,
): ItemJson {
	if (settings.detail === 'full') {
		// Unreachable by design (the node asks the store for the full row when Output is Full).
		if (!hasFullRecord(result))
			throw new UnexpectedResultError('Output: Full needs the full reserved row, but the reserve statement returned the compact one.');
		return fullOutput(result, derived, settings.mode);
	}
	return compactOutput(result, derived, settings);
}

/**
 * The default: what routing and settling read, and nothing that is null on every item. Each field
 * has a reader: key and ownerToken settle (Idempotency Key, Key From: Item), outcome and attempts
 * label the execution (executionCustomData.ts), lockedUntil bounds the Key node's retries in Lease
 * mode, response replays the first answer on a duplicate (the templates' Respond to Webhook).
 */
function compactOutput(result: ReservationResult<CompactRecord>, derived: DerivedKey, settings: OutputSettings): ItemJson {
	const isNew = result.outcome === 'new';
	const output: ItemJson = {
		key: result.key,
		isNew,
		outcome: result.outcome,
		ownerToken: result.ownerToken,
		attempts: result.record.attempts,
	};
	if (settings.mode === 'lease') output.lockedUntil = isoTime(result.record.lockedUntil);
	if (!isNew) output.response = (result.record.response ?? null) as ItemJson | null;
	if (settings.fingerprinting) output.payloadMismatch = result.payloadMismatch;
	if (derived.manualTest) output.manualTest = true;
	return output;
}

/** Output: Full — every column of the row, as the node gave it before Compact became the default. */
function fullOutput(result: ReservationResult, derived: DerivedKey, mode: ReservationMode): ItemJson {
	const { record } = result;
	return {
		key: result.key,
		keySource: keySourceInWords(derived.keySource),
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
		response: (record.response ?? null) as ItemJson | null,
		payloadMismatch: result.payloadMismatch,
	};
}

function hasFullRecord(result: ReservationResult<CompactRecord>): result is ReservationResult<IdempotencyRecord> {
	return 'firstSeen' in result.record;
}

/** A stored time as the items show it. */
export function isoTime(time: Date | null): string | null {
	return time ? time.toISOString() : null;
}

/**
 * The `idempotency` object of an item let through while Postgres could not be reached (option
 * "On Store Unavailable: Let Through"): nothing was reserved, so there is no owner token, and a
 * duplicate of this event is not caught. Compact and Full differ as for reserved items.
 */
export function unverifiedOutput(derived: DerivedKey, detail: ReservationDetail, mode: ReservationMode, reason: string): ItemJson {
	const compact: ItemJson = {
		key: derived.key,
		isNew: false,
		outcome: 'unverified',
		ownerToken: null,
		unverified: true,
		unverifiedReason: reason,
	};
	if (detail === 'compact') return derived.manualTest ? { ...compact, manualTest: true } : compact;
	return {
		key: derived.key,
		keySource: keySourceInWords(derived.keySource),
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

/**
 * What the item is told about its replay evidence. The payload fields describe this delivery's
 * payload on the item that reserved the key; a duplicate stored nothing (the first delivery's
 * evidence is kept: Get Key shows it).
 */
export function evidenceOutput(report: EvidenceReport, result: ReservationResult<CompactRecord>): ItemJson {
	const output: ItemJson = {};
	if (report.payloadStored !== undefined) {
		const reserved = result.outcome === 'new';
		output.payloadStored = reserved && report.payloadStored;
		output.payloadBytes = report.payloadBytes ?? null;
		if (!reserved)
			output.payloadNotStoredReason = "The key was already reserved (a duplicate or in progress): the first delivery's evidence is kept.";
		else if (report.payloadNotStoredReason) output.payloadNotStoredReason = report.payloadNotStoredReason;
	}
	if (report.correlationId !== undefined) output.correlationId = report.correlationId;
	return output;
}
