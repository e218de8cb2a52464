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
	/**
	 * Makes a new reservation an inbox event (the Idempotent Webhook trigger's Respond: At Once):
	 * kept with the item its retries run from, and run again by its owner after a failed run. Only
	 * with mode `lease`. Ignored when the key is not reserved by this request (a duplicate).
	 */
	inbox?: InboxRequest;
}

/**
 * An inbox event's retry settings and item, stored with its reservation (schema version 6 on
 * Postgres, keys version 3 on the embedded store). A key whose row has an owner is only ever run by
 * its inbox: every later reservation of it is a duplicate, whatever its state.
 */
export interface InboxRequest {
	/** Who runs the event's retries: opaque text (the trigger gives its workflow and node), 1 to MAX_INBOX_OWNER_LENGTH characters. */
	owner: string;
	/**
	 * The item a retry runs from: opaque JSON text, handed back byte for byte. At most
	 * MAX_INBOX_ITEM_BYTES in UTF-8; over it the batch is refused (InboxItemTooLargeError), nothing stored.
	 */
	item: string;
	/** Runs in all, the first included: a whole number from 1 to MAX_INBOX_ATTEMPTS. Then the event is dead-lettered. */
	maxAttempts: number;
	/**
	 * The first retry's delay in milliseconds, a whole number from 1 to INBOX_RETRY_CAP_MS; each next
	 * one doubles up to that cap, scaled by a jitter factor (inboxRetryDelayMs).
	 */
	firstRetryMs: number;
	/**
	 * How long after the reservation a retry may still fall due, in milliseconds (whole, more than 0,
	 * at most MAX_INBOX_RETRY_FOR_MS), counted on the store's clock: `retry_until` = its now + this.
	 */
	retryForMs: number;
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
	/** Who runs the key's retries (an inbox event); null for every other key. */
	inboxOwner: string | null;
	/** The item a retry runs from is kept (an inbox event no run has completed yet). */
	hasInboxItem: boolean;
	/** The kept item itself (JSON text, null when none): only from Get Key asked for it (`inboxItem: true`). */
	inboxItem?: string | null;
	/** An inbox event's runs in all before it is dead-lettered; null for other keys. */
	maxAttempts: number | null;
	/** The last time an inbox event's retry may fall due (the store's clock); null for other keys. */
	retryUntil: Date | null;
	/** When the next retry of a failed inbox event is due; null when none is. */
	nextAttemptAt: Date | null;
	/** When the inbox event ran out of attempts or time; null while it may still run. */
	deadLetteredAt: Date | null;
}

/** What Get Key reads beside each key's record. */
export interface GetKeysOptions {
	/** Also read each inbox event's kept item (StoredKey.inboxItem); default false. */
	inboxItem?: boolean;
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
	/** Only inbox events that ran out of attempts or time (dead-lettered). */
	deadLetteredOnly?: boolean;
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
	/** Inbox events failed with a retry scheduled (counted in `failed` too). */
	retryPending: number;
	/** Inbox events that ran out of attempts or time, kept for a replay by hand (counted in `failed` too). */
	deadLettered: number;
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

/** The deliveries counted in one hour (its start, the store's clock), per answer. */
export interface HourAnswerCounts {
	hour: Date;
	counts: AnswerCounts;
}

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
			/** An inbox event's kept item (the JSON text its retries run from); null for other keys. */
			inboxItem: string | null;
	  }
	| {
			claimed: false;
			key: string;
			reason: NotClaimableReason;
			/** The stored record as it is now; null when not found. */
			record: IdempotencyRecord | null;
	  };

/** Claim Due Inbox: whose events, how many, and the lease each claimed run gets. */
export interface InboxClaimOptions {
	/** The inbox owner whose events are claimed (InboxRequest.owner). */
	owner: string;
	/** Events claimed at most, a whole number from 1 to MAX_INBOX_CLAIMS. */
	limit: number;
	/** Each claimed run's lease in milliseconds, a whole number from 1 to the longest lease (7 days). */
	leaseMs: number;
	/** When given, each claimed key is kept at least this many seconds from now (its retention is never shortened). */
	retentionSeconds?: number;
	/** The n8n instance the retries run on (Failed Execution settles match it); absent: the key's is kept. */
	instanceId?: string;
}

/** One inbox event claimed for its next run. */
export interface InboxClaim {
	key: string;
	/** The fencing token Complete, Release and Mark Failed must present. */
	ownerToken: string;
	/** The claimed run's lease end (the store's clock). */
	leaseEndsAt: Date;
	/** The kept item, as the reservation gave it. */
	item: string;
	/** This run's number: 2 for the first retry (the key's attempts counter). */
	attempt: number;
}

/** When an inbox owner's next event may become claimable. */
export interface InboxDue {
	/** The earliest retry due or lease end among the owner's events still to run (the store's clock). */
	dueAt: Date;
	/** Milliseconds from the store's now until then; 0 when something is claimable now. */
	inMs: number;
}

/**
 * An object an n8n item's JSON can hold, written without n8n's types (n8n's IDataObject accepts
 * it): what the core hands the nodes as an item's `idempotency` object.
 */
export interface ItemJson {
	[key: string]: string | number | boolean | null | undefined | object;
}
