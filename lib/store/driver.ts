import type { StoreBackend } from './contract';
import type { SqlSection } from './sqlText';
import type { ReservationMode, ReservationRequest } from '../types';

/**
 * What a backend gives the key store and the order store, which are written once over it
 * (keyStore.ts, orderStore.ts): a named statement sent with its parameters under a rule, rows read
 * back, and the table opened and migrated. A backend is a folder, `lib/store/<backend>/`, whose
 * `driver.ts` implements this and whose `statements.ts` maps each statement below to its SQL file.
 *
 * The stores decide what to send and what the rows mean; a driver decides how: parameter
 * encoding (column arrays for Postgres, one JSON text for SQLite), units, transactions, lock waits
 * and retries.
 */

/**
 * What a store call is doing, named after the store's own methods (`read` for every read-only
 * call, `schema` for the table's check): drivers name their retries, waits and errors by it.
 */
export type StoreOperation =
	| 'reserve'
	| 'claimForReplay'
	| 'claimDueInbox'
	| 'complete'
	| 'release'
	| 'fail'
	| 'hold'
	| 'cleanup'
	| 'read'
	| 'countAnswer'
	| 'recordExecution'
	| 'advance'
	| 'schema';

/** The operations whose statement is an idempotent write a driver may send again. */
export type RetriedOperation = Extract<
	StoreOperation,
	'reserve' | 'claimForReplay' | 'claimDueInbox' | 'complete' | 'release' | 'fail' | 'hold'
>;

/** A settle's rows, one tuple per item: the key and its owner token first. */
type Owned<Extra extends unknown[] = []> = Array<[key: string, ownerToken: string, ...extra: Extra]>;

/** Every statement on the key table, by name, with its parameters; durations in seconds. */
export interface KeyStatements {
	/** The distinct requests of a batch, each with its proposed owner token. */
	reserve: {
		requests: ReservationRequest[];
		tokens: string[];
		mode: ReservationMode;
		leaseSeconds: number;
		retentionSeconds: number;
		executionId: string | null;
		workflowId: string | null;
		instanceId: string | null;
	};
	/** Answers a row per stored key, with `claimed` true where it took the key over. */
	claimForReplay: {
		claims: Array<[key: string, token: string]>;
		leaseSeconds: number;
		retentionSeconds: number;
		executionId: string | null;
		workflowId: string | null;
		instanceId: string | null;
	};
	/**
	 * Up to `limit` due inbox events of `owner`, each taking one of `tokens` (as many as `limit`);
	 * `leaseMs` in milliseconds, `retentionSeconds` null: each key's retention kept as it is.
	 */
	claimDueInbox: {
		owner: string;
		limit: number;
		leaseMs: number;
		retentionSeconds: number | null;
		tokens: string[];
		instanceId: string | null;
	};
	nextInboxDue: { owner: string };
	/** The response as JSON text (null keeps the stored one). */
	complete: { items: Owned<[response: string | null]> };
	/**
	 * Release and Mark Failed (by key or by execution) schedule an inbox event's next retry: each item
	 * (or the execution's events) with a jitter factor (inboxJitter), under the delay cap in milliseconds.
	 */
	release: { items: Owned<[jitter: number]>; retryCapMs: number };
	fail: { items: Owned<[error: string, jitter: number]>; retryCapMs: number };
	hold: { items: Owned<[holdMs: number]> };
	unsettledKeys: { keys: string[] };
	releaseExecution: { executionId: string; workflowId: string; instanceId: string | null; jitter: number; retryCapMs: number };
	failExecution: { executionId: string; error: string; workflowId: string; instanceId: string | null; jitter: number; retryCapMs: number };
	cleanup: { retentionSeconds: number; limit: number };
	/** `inboxItem`: read each inbox event's kept item too. */
	getKeys: { keys: string[]; inboxItem: boolean };
	listKeys: {
		afterKey: string;
		status: string | null;
		stuckLeasesOnly: boolean;
		olderThanSeconds: number | null;
		keyPrefix: string | null;
		limit: number;
		replayableOnly: boolean;
		maxBytes: number;
		deadLetteredOnly: boolean;
	};
	stats: { windowSeconds: number };
	countAnswer: { answer: string };
	answerCounts: { windowSeconds: number };
	answerCountsByHour: { windowSeconds: number };
	recordExecution: { key: string; ownerToken: string; executionId: string };
}

/** The Order Guard's one statement: the batch's candidates, one per object. */
export interface OrderStatements {
	orderAdvance: {
		items: Array<[objectKey: string, version: string, eventKey: string | null]>;
		equalVersion: string;
		executionId: string | null;
		workflowId: string | null;
	};
}

/** A statement to send: its name, its parameters and, optionally, a marked section of its file left out. */
export interface Statement<S, N extends keyof S = keyof S> {
	name: N;
	parameters: S[N];
	omit?: SqlSection;
}

/**
 * How a statement is sent.
 * - `write`: an idempotent write. Postgres sends it named and retries a lost connection until
 *   `retryUntil` (ms on the monotonic clock; null: only to recover a lost answer, for
 *   `recoverUntilMs`), checking the table first with retries until `readyRetryUntil` (absent: one
 *   check); the embedded store runs it in a synced write transaction, or, with `durableIf`, commits
 *   it without waiting for its fsync and syncs it before answering only when `durableIf(results)`
 *   (what else it changed is bookkeeping whose loss in a power cut changes no outcome).
 * - `writeOnce`: a write sent once; the embedded store runs it in a synced write transaction.
 * - `read`: sent once; `scan` marks one that may read the whole table (the embedded store runs it
 *   off the event loop's thread).
 * - `losableWrite`: a write whose loss in a power cut changes no outcome; the embedded store
 *   commits it without waiting for its fsync, and with `awaitSync` waits for the checkpoint after.
 * The drivers make a `write` rule (retryRule) from what they know of leases and clocks.
 */
export type SendRule =
	| {
			kind: 'write';
			retryUntil: number | null;
			recoverUntilMs?: number;
			readyRetryUntil?: number;
			durableIf?: (results: StatementResult[]) => boolean;
	  }
	| { kind: 'writeOnce' }
	| { kind: 'read'; scan?: boolean }
	| { kind: 'losableWrite'; awaitSync: boolean };

/** A statement's rows, as the driver holds them, and how many rows it changed. */
export interface StatementResult {
	rows: unknown[];
	rowCount: number;
	/** An attempt's answer was lost after the statement was sent: it may have been applied then. */
	uncertain: boolean;
	/** Reading these rows. */
	read: RowReader;
}

/** How a driver's rows are read: a column's value as it is, as a time, and as stored JSON. */
export interface RowReader {
	value(row: unknown, column: string): unknown;
	/** A time column: a Date, or null (Postgres gives Dates; the embedded store keeps milliseconds). */
	time(row: unknown, column: string): Date | null;
	/** A JSON column other than the payload (Postgres parses jsonb; the embedded store keeps JSON text). */
	json(row: unknown, column: string): unknown;
}

/** Which keys a backend can hold: the rest were never stored, whatever a caller says. */
export interface KeyText {
	/** Refuses a reservation batch with a key the backend could not find again as itself. */
	assertReservable(keys: string[]): void;
	/** Whether `key` can be stored at all; a key that cannot was never reserved. */
	storable(key: string): boolean;
	/** Whether Record Execution looks the key up (otherwise it answers "not this owner's"). */
	recordable(key: string): boolean;
	/** The key as the backend hands it back (Postgres sends a lone surrogate as U+FFFD). */
	storedAs(key: string): string;
}

export interface RetryRuleRequest {
	/** `settle`: Release, Mark Failed and Hold, which stop before the earliest lease end; `complete` does not. */
	purpose: 'reserve' | 'settle' | 'complete' | 'settleExecution';
	/** The lease ends the settled keys are known to have (database times). */
	leaseEnds?: Array<Date | null | undefined>;
}

/** One table of one family, reached through one backend. */
export interface StoreDriver<S> {
	readonly backend: StoreBackend;
	/** The table checked (and, when allowed, created or migrated) before `operation`'s statements. */
	ready(operation: StoreOperation, rule: SendRule): Promise<void>;
	/** Creates the table or brings it to the package's schema version, whatever the options say. */
	createTable(): Promise<void>;
	/**
	 * Sends `statement` under `rule`. `then`, given its result, may name a second statement: the
	 * embedded store runs both in one transaction; Postgres sends it next, under the same rule.
	 */
	send(
		operation: StoreOperation,
		statement: Statement<S>,
		rule: SendRule,
		then?: (result: StatementResult) => Statement<S> | undefined,
	): Promise<StatementResult[]>;
}

/** A key table's driver: the statements, and what the backend's keys, retries and cleanup chunks are. */
export interface KeyDriver extends StoreDriver<KeyStatements> {
	readonly keys: KeyText;
	/** The write rule for a reservation, a settle of these keys, or a settle by execution. */
	retryRule(request: RetryRuleRequest): Extract<SendRule, { kind: 'write' }>;
	/** Rows one cleanup statement deletes at most (the store repeats it); Infinity: the whole batch at once. */
	readonly cleanupChunkRows: number;
	/** The error for a reserved key no row came back for. */
	noRowError(key: string): Error;
}

export type OrderDriver = StoreDriver<OrderStatements>;
