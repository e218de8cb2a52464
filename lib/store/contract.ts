import type {
	AnswerCounts,
	HourAnswerCounts,
	CleanupOptions,
	CleanupResult,
	CompactRecord,
	DeliveryAnswer,
	FailedExecution,
	GetKeysOptions,
	InboxClaim,
	InboxClaimOptions,
	InboxDue,
	KeysPage,
	KeyStats,
	ListKeysOptions,
	OwnedKey,
	ReplayClaim,
	ReplayClaimOptions,
	ReservationRequest,
	ReservationResult,
	ReserveOptions,
	ReserveOptionsWithDetail,
	SettleResult,
	StoredKey,
} from '../types';

/** Where a store keeps its keys: a file on this n8n host, or a Postgres database. */
export type StoreBackend = 'embedded' | 'postgres';

/** A settle request; the lease end, when known, bounds how long a lost connection is retried. */
/** An owned key to hold for `holdMs` milliseconds from now. */
export interface HoldRequest extends SettleRequest {
	holdMs: number;
}

export interface SettleRequest extends OwnedKey {
	leaseEndsAt?: Date | null;
}

/** A settle result, with what had to be repaired or dropped to store the item's values. */
export type SettleReport = SettleResult & { warnings?: string[] };

/**
 * The idempotency key store: what every node depends on, whichever backend keeps the keys. Each
 * behaviour is the same on both backends (the conformance suite runs one set of tests against
 * each). Outcomes — new, duplicate, in progress, stale owner — are returned as values; only broken
 * configuration or a store failure throws (as IdempotencyError subclasses).
 */
export interface KeyStore {
	readonly backend: StoreBackend;

	/**
	 * Reserves each request's key. Results come back in request order; repeats in the batch are
	 * duplicates. `detail: 'compact'` returns only the CompactRecord part of each row (default: full).
	 *
	 * A request with `inbox` makes a new reservation an inbox event: its item and retry settings are
	 * stored with it. A key whose row is an inbox event is only ever run by its inbox: every later
	 * reservation of it, whatever its state (processing, even past its lease; failed with a retry
	 * pending; completed; dead-lettered), is answered `duplicate` — never `in_progress`, never
	 * taken over — with the row's status in its record: the sender's job ended when the event was
	 * accepted. Only its retention's end frees it, and an inbox event still to run (retry pending or
	 * processing) never reaches that end.
	 */
	reserve(
		requests: ReservationRequest[],
		options: ReserveOptions & { detail: 'compact' },
	): Promise<Array<ReservationResult<CompactRecord>>>;
	reserve(requests: ReservationRequest[], options: ReserveOptions & { detail?: 'full' }): Promise<ReservationResult[]>;
	reserve(requests: ReservationRequest[], options: ReserveOptionsWithDetail): Promise<Array<ReservationResult<CompactRecord>>>;

	/**
	 * Takes over each replayable stored key (failed, or processing past its lease) with a new owner
	 * token. A dead-lettered inbox event is failed, so it is replayable: the claim clears its
	 * dead-letter mark (and any retry due) and returns its kept item. Its attempts counter goes on
	 * from where it was, so a replay that fails again is dead-lettered again at once when the event
	 * had run out of attempts or time.
	 */
	claimForReplay(keys: string[], options: ReplayClaimOptions): Promise<ReplayClaim[]>;

	/**
	 * Claims up to `limit` of `owner`'s inbox events that are due, oldest due first, in one atomic
	 * step: a failed event whose retry is due (`next_attempt_at` <= now), or a processing one whose
	 * lease ended (its process died, or its execution never started). Each gets a new owner token,
	 * status processing, a lease of `leaseMs` from now, attempts + 1 and no retry due; its recorded
	 * execution is cleared (the claimer records the new one). A due event that already had its
	 * last run (attempts >= its maximum) or whose due time is past its retry window is dead-lettered
	 * instead, in the same step, and not returned. Among concurrent claimers, in one process or
	 * many, each event goes to one claimer only; rows another claimer holds are skipped, not waited
	 * for. Times are the store's clock. Nothing due: an empty array.
	 */
	claimDueInbox(options: InboxClaimOptions): Promise<InboxClaim[]>;
	/**
	 * When `owner`'s next event may become claimable (a retry due, or a running lease's end), or
	 * null when it has none still to run. A read: cheaper than claimDueInbox, which takes the
	 * embedded store's write lock; a poller may sleep until then (a new event accepted meanwhile is
	 * its own run, not a retry).
	 */
	nextInboxDue(owner: string): Promise<InboxDue | null>;

	/**
	 * Marks owned reservations completed, storing `response` for duplicates to replay. An inbox
	 * event's kept item, retry due and dead-letter mark are cleared: nothing of it is run again.
	 */
	complete(items: Array<SettleRequest & { response?: unknown }>): Promise<SettleReport[]>;
	/**
	 * Deletes owned reservations so the provider's next delivery is processed. An inbox event is
	 * never deleted (its kept item is the only copy of the event): it is failed as by `fail`, with
	 * a message saying its run released it, and its retry scheduled.
	 */
	release(items: SettleRequest[]): Promise<SettleReport[]>;
	/**
	 * Marks owned reservations failed (kept with the message); the next delivery reserves again.
	 * An inbox event instead gets its next retry: due after inboxRetryDelayMs (from its attempts so
	 * far, its first retry delay and a jitter factor) on the store's clock; or, when that was its
	 * last attempt or the retry would fall due after its retry window, it is dead-lettered (kept,
	 * failed, with its item and this message; no retry due).
	 */
	fail(items: Array<SettleRequest & { error: string }>): Promise<SettleReport[]>;
	/**
	 * Extends owned reservations' leases to `holdMs` from now, never shortening them, while their
	 * execution waits; returns the keys held (a key settled or taken over is left as it is).
	 */
	hold(items: HoldRequest[]): Promise<string[]>;
	/** Releases every live reservation of one failed execution (an inbox event: as `release`); returns the released keys. */
	releaseExecution(execution: FailedExecution): Promise<string[]>;
	/** Marks failed every live reservation of one failed execution (an inbox event: as `fail`); returns their keys. */
	failExecution(execution: FailedExecution, error: string): Promise<{ keys: string[]; warnings: string[] }>;

	/**
	 * Deletes keys whose retention ended, in batches until done or out of time; live leases are
	 * never touched, nor an inbox event still to run (retry pending or processing). A dead-lettered
	 * event is deleted when its retention ends, as a failed key is.
	 */
	cleanup(options: CleanupOptions): Promise<CleanupResult>;
	/** The stored records of these keys; keys not stored are absent from the answer. An inbox event's item only when asked. */
	getKeys(keys: string[], options?: GetKeysOptions): Promise<Map<string, StoredKey>>;
	/** One page of stored keys in key order. */
	listKeys(options: ListKeysOptions): Promise<KeysPage>;
	/** Counts by status and over a window, and the inbox events with a retry pending or dead-lettered. */
	stats(windowHours: number): Promise<KeyStats>;

	/** Counts one delivery the Idempotent Webhook trigger answered or started, in the current hour. */
	countAnswer(answer: DeliveryAnswer): Promise<void>;
	/** The deliveries counted per answer in the hours that overlap the window. */
	answerCounts(windowHours: number): Promise<AnswerCounts>;
	/** The same deliveries per hour, oldest first: only the hours that counted one. */
	answerCountsByHour(windowHours: number): Promise<HourAnswerCounts[]>;
	/**
	 * Records the n8n execution that runs the key's event, when the key is still this owner's and its lease has not ended
	 * (the trigger reserves before the execution, and its id, exist). False when it is not.
	 */
	recordExecution(key: OwnedKey, executionId: string): Promise<boolean>;

	/** Creates the store's table (or brings it to the package's schema version), whatever the options say. */
	createTable(): Promise<void>;
	/** Checks (and, when allowed, creates or migrates) the store once before first use. */
	ready(): Promise<void>;
}

/**
 * The Order Guard's store: per business object, the highest version applied. Same behaviour on
 * both backends.
 */
export interface OrderStore {
	readonly backend: StoreBackend;
	/** One decision per item, in item order; one statement for the whole batch. */
	advance(items: VersionedItem[], options: AdvanceOptions): Promise<OrderDecision[]>;
	/** Creates the table or brings it to the package's schema version. */
	createTable(): Promise<void>;
}

/** Whether a delivery whose version equals the mark passes. */
export type EqualVersion = 'stale' | 'newer';

export interface VersionedItem {
	/** From objectKeyOf. */
	objectKey: string;
	/** From parseVersion: an exact decimal string. */
	version: string;
	/** The event's own key (from eventKeyOf), so the same event retried after a failed run passes again. */
	eventKey: string | null;
}

export interface AdvanceOptions {
	equalVersion: EqualVersion;
	executionId?: string;
	workflowId?: string;
}

export interface OrderDecision {
	outcome: 'newer' | 'stale';
	objectKey: string;
	version: string;
	/** The object's mark after this batch (the highest version applied). */
	currentVersion: string;
	/** True when a higher version of the same object came in the same batch (this item is Stale). */
	supersededInBatch: boolean;
	/** Stale deliveries this object has had so far. */
	staleCount: number;
	firstSeen: Date;
	/** When the mark was last raised (or passed again). */
	updatedAt: Date;
}
