/** How a reservation becomes final. */
export type ReservationMode =
	/** The seed recipe's behaviour: final at once; a failed run must release the key. */
	| 'permanent'
	/** Final only when completed; a run that crashes loses the key when its lease ends. */
	| 'lease';

export type RecordStatus = 'processing' | 'completed' | 'failed';

/** A row of the idempotency table. Times come from the database clock. */
export interface IdempotencyRecord {
	key: string;
	status: RecordStatus;
	attempts: number;
	duplicateCount: number;
	firstSeen: Date;
	lastSeen: Date;
	lockedUntil: Date | null;
	expiresAt: Date | null;
	executionId: string | null;
	workflowId: string | null;
	keySource: string | null;
	payloadHash: string | null;
	response: unknown;
	completedAt: Date | null;
	lastError: string | null;
	/** Whether a lease was still running when the record was read. */
	leaseActive: boolean;
	/**
	 * Whether its owner completed it (Complete ran). Only the reserve statement's full record says:
	 * a Permanent key is `completed` from its reservation on, so its status cannot tell.
	 */
	effectCompleted?: boolean;
}

export type ReservationOutcome = 'new' | 'duplicate' | 'in_progress';

export interface ReservationRequest {
	key: string;
	keySource: string;
	/** Payload fingerprint; null when fingerprinting is off. */
	payloadHash: string | null;
	/** Replay and tracing evidence to store with a new reservation; absent: none. */
	evidence?: ReplayEvidence;
}

/**
 * What Reserve stores per key for replay and tracing (schema version 3), already storable: see
 * storablePayload and storableText. A duplicate never changes it (sql/postgres/queries/reserve.sql).
 */
export interface ReplayEvidence {
	/** The payload as JSON text for the jsonb column; null when not stored (off, over the cap, no JSON form). */
	payloadJson: string | null;
	/** The payload's JSON size in UTF-8 bytes, also when it was over the cap; null when there was none. */
	payloadBytes: number | null;
	/** Who sent the event (a provider or scope such as stripe). */
	source: string | null;
	/** A trace id from a request header, or the n8n execution id. */
	correlationId: string | null;
}

/**
 * How much of each reserved row the reserve statement returns: `full`, every column; `compact`,
 * only what deciding the outcome, routing and settling need (see CompactRecord), which Postgres
 * sends and pg parses faster (no first/last seen, expiry or completion times per row).
 */
export type ReservationDetail = 'compact' | 'full';

/** The part of the row the compact reserve statement returns (its RETURNING list minus `sql/postgres/queries/reserve.sql`'s full-record section). */
export type CompactRecord = Pick<
	IdempotencyRecord,
	'key' | 'status' | 'attempts' | 'lockedUntil' | 'payloadHash' | 'response' | 'leaseActive'
>;

export interface ReservationResult<R extends CompactRecord = IdempotencyRecord> {
	outcome: ReservationOutcome;
	key: string;
	/** Only for `new`: the fencing token Complete, Release and Mark Failed must present. */
	ownerToken: string | null;
	/** True when the key was reclaimed (failed earlier, or a crashed run's lease ended): attempts > 1. */
	reclaimed: boolean;
	/** True for a repeat of a key that appeared earlier in the same batch. */
	repeatInBatch: boolean;
	/** Same key, different payload fingerprint (null when either side has none). */
	payloadMismatch: boolean | null;
	record: R;
}

export interface ReserveOptions {
	mode: ReservationMode;
	/** Lease length in lease mode. */
	leaseSeconds: number;
	/** How long the key protects against duplicates; after that it counts as absent. */
	retentionSeconds: number;
	executionId?: string;
	workflowId?: string;
	/** The n8n instance the run belongs to (n8n's instance id): Failed Execution settles match it. */
	instanceId?: string;
}

/** Reserve's options with the choice of how much of each row comes back (default `full`). */
export type ReserveOptionsWithDetail = ReserveOptions & { detail?: ReservationDetail };

/** One settle request (Complete, Release, Mark Failed). */
export interface OwnedKey {
	key: string;
	ownerToken: string;
}

/** Why a settle request changed nothing. */
export type StaleReason =
	/** The key is gone: released, cleaned up, or never reserved. */
	| 'not_found'
	/** Another run holds the key now: this run's lease ended and it was reclaimed. */
	| 'not_owner'
	/** Complete on a key that was marked failed. */
	| 'failed'
	/** Release or Mark Failed on a key its owner completed: its business step ran, so it stays completed. */
	| 'completed';

/**
 * The failed run whose live reservations Release or Mark Failed settle (Key From = Failed
 * Execution). Execution ids are numbered per n8n instance, so the workflow and the instance say
 * which run of which installation it was.
 */
export interface FailedExecution {
	executionId: string;
	workflowId: string;
	/** The n8n instance id; null matches only keys reserved without one (before schema version 4). */
	instanceId: string | null;
}

export type SettleResult = { key: string; applied: true } | { key: string; applied: false; reason: StaleReason };

export interface CleanupOptions {
	/**
	 * Rows are deleted when their retention ends (`expires_at`, set by every reservation), never
	 * under a running lease; rows without `expires_at` end this long after `first_seen`.
	 */
	retentionSeconds: number;
	/** Rows per DELETE; small batches keep locks short. */
	batchSize: number;
	/** Stop starting new batches after this long. */
	timeBudgetSeconds: number;
}

export interface CleanupResult {
	deleted: number;
	batches: number;
	durationMs: number;
	/** False when the time budget ended before the last batch came back short. */
	finished: boolean;
}

/** A stored key as Get Key and List Keys read it. */
export interface StoredKey extends IdempotencyRecord {
	/** Its retention ended: the next delivery of the key is processed as new, and cleanup deletes it. */
	retentionEnded: boolean;
	/** The stored payload (JSON), null when none was stored; see ReplayEvidence. */
	payload: unknown;
	/** A payload is stored (it may be JSON null: a body that was null). */
	payloadStored: boolean;
	payloadBytes: number | null;
	source: string | null;
	correlationId: string | null;
}

/** One page of List Keys. */
export interface KeysPage {
	keys: StoredKey[];
	/** The After Key of the next page; null when this page is the last. */
	nextAfterKey: string | null;
}

/** List Keys: filters and one page after a cursor. */
export interface ListKeysOptions {
	/** Only keys after this one (the last key of the previous page); '' or absent for the first page. */
	afterKey?: string;
	status?: RecordStatus;
	/** Only reservations whose lease ran out while processing (the run died or hung). */
	stuckLeasesOnly?: boolean;
	/** Only keys first seen at least this many seconds ago. */
	olderThanSeconds?: number;
	keyPrefix?: string;
	/** Only keys a replay may take over: failed, or processing with a lease that ran out. */
	replayableOnly?: boolean;
	/** Page size, 1 to MAX_LIST_PAGE_SIZE. */
	limit: number;
}

/** Stats: counts by status now, and for keys seen within the window (see sql/postgres/queries/stats.sql). */
export interface KeyStats {
	windowHours: number;
	total: number;
	processing: number;
	stuckLeases: number;
	completed: number;
	failed: number;
	newInWindow: number;
	duplicatesInWindow: number;
	reclaimsInWindow: number;
	failedInWindow: number;
}

/**
 * What the Idempotent Webhook trigger did with one delivery, as its store counts it (Get Stats):
 * `new` started an execution, every other one was answered without one. The names are the
 * `x-idempotency-outcome` header's, with `not_reserved` split into its two causes.
 */
export type DeliveryAnswer =
	| 'new'
	| 'duplicate'
	| 'in_progress'
	| 'authorization_required'
	| 'forbidden'
	| 'invalid_signature'
	| 'not_verified'
	| 'key_refused'
	| 'key_store_unavailable'
	| 'internal_error';

/** Deliveries counted per answer within a window (whole hours: see sql/postgres/queries/answer_counts.sql). */
export type AnswerCounts = Record<DeliveryAnswer, number>;

/** Claim for Replay: the lease and retention a claimed key gets, and the run that claims it. */
export interface ReplayClaimOptions {
	/** The replay's lease: how long it owns the key before another run may take it over. */
	leaseSeconds: number;
	/** How long the key protects against duplicates after the claim, as for a reservation. */
	retentionSeconds: number;
	executionId?: string;
	workflowId?: string;
	/** The n8n instance the replay run belongs to, as for a reservation. */
	instanceId?: string;
}

/** Why a key was not claimed for replay. */
export type NotClaimableReason =
	/** Completed (a redelivery or another replay finished it): replaying would double the effect. */
	| 'completed'
	/** A run holds a live lease on it: a redelivery or another replay is processing it now. */
	| 'in_progress'
	/** The key is not stored (released, cleaned up, never reserved). */
	| 'not_found'
	/** The same key came earlier in this batch (which claimed it, or not). */
	| 'repeat_in_batch';

export type ReplayClaim =
	| {
			claimed: true;
			key: string;
			/** The fencing token Complete, Release and Mark Failed must present. */
			ownerToken: string;
			record: IdempotencyRecord;
			/** The stored evidence (null when none was stored): what the replay runs again. */
			payload: unknown;
			/** A payload is stored (it may be JSON null: a body that was null). */
			payloadStored: boolean;
			source: string | null;
			correlationId: string | null;
	  }
	| {
			claimed: false;
			key: string;
			reason: NotClaimableReason;
			/** The stored record as it is now; null when not found. */
			record: IdempotencyRecord | null;
	  };

/**
 * An object an n8n item's JSON can hold, written without n8n's types (n8n's IDataObject accepts
 * it): what the core hands the nodes as an item's `idempotency` object.
 */
export interface ItemJson {
	[key: string]: string | number | boolean | null | undefined | object;
}
