import type {
	AnswerCounts,
	CleanupOptions,
	CleanupResult,
	CompactRecord,
	DeliveryAnswer,
	FailedExecution,
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
	 */
	reserve(
		requests: ReservationRequest[],
		options: ReserveOptions & { detail: 'compact' },
	): Promise<Array<ReservationResult<CompactRecord>>>;
	reserve(requests: ReservationRequest[], options: ReserveOptions & { detail?: 'full' }): Promise<ReservationResult[]>;
	reserve(requests: ReservationRequest[], options: ReserveOptionsWithDetail): Promise<Array<ReservationResult<CompactRecord>>>;

	/** Takes over each replayable stored key (failed, or processing past its lease) with a new owner token. */
	claimForReplay(keys: string[], options: ReplayClaimOptions): Promise<ReplayClaim[]>;

	/** Marks owned reservations completed, storing `response` for duplicates to replay. */
	complete(items: Array<SettleRequest & { response?: unknown }>): Promise<SettleReport[]>;
	/** Deletes owned reservations so the provider's next delivery is processed. */
	release(items: SettleRequest[]): Promise<SettleReport[]>;
	/** Marks owned reservations failed (kept with the message); the next delivery reserves again. */
	fail(items: Array<SettleRequest & { error: string }>): Promise<SettleReport[]>;
	/**
	 * Extends owned reservations' leases to `holdMs` from now, never shortening them, while their
	 * execution waits; returns the keys held (a key settled or taken over is left as it is).
	 */
	hold(items: HoldRequest[]): Promise<string[]>;
	/** Releases every live reservation of one failed execution; returns the released keys. */
	releaseExecution(execution: FailedExecution): Promise<string[]>;
	/** Marks failed every live reservation of one failed execution; returns their keys. */
	failExecution(execution: FailedExecution, error: string): Promise<{ keys: string[]; warnings: string[] }>;

	/** Deletes keys whose retention ended, in batches until done or out of time; live leases are never touched. */
	cleanup(options: CleanupOptions): Promise<CleanupResult>;
	/** The stored records of these keys; keys not stored are absent from the answer. */
	getKeys(keys: string[]): Promise<Map<string, StoredKey>>;
	/** One page of stored keys in key order. */
	listKeys(options: ListKeysOptions): Promise<KeysPage>;
	/** Counts by status and over a window. */
	stats(windowHours: number): Promise<KeyStats>;

	/** Counts one delivery the Idempotent Webhook trigger answered or started, in the current hour. */
	countAnswer(answer: DeliveryAnswer): Promise<void>;
	/** The deliveries counted per answer in the hours that overlap the window. */
	answerCounts(windowHours: number): Promise<AnswerCounts>;
	/**
	 * Records the n8n execution that runs the key's event, when the key is still this owner's
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
