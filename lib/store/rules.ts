import { InboxItemTooLargeError, InvalidConfigurationError } from '../errors';
import { inexactTextReason } from '../keys/exactText';
import { compareVersions } from '../order/version';
import type {
	AnswerCounts,
	CleanupOptions,
	CleanupResult,
	CompactRecord,
	DeliveryAnswer,
	FailedExecution,
	IdempotencyRecord,
	InboxClaimOptions,
	InboxRequest,
	ListKeysOptions,
	OwnedKey,
	RecordStatus,
	ReplayClaim,
	ReservationRequest,
	ReservationResult,
	ReserveOptions,
	SettleResult,
} from '../types';
import type { AdvanceOptions, EqualVersion, HoldRequest, OrderDecision, SettleReport, SettleRequest, VersionedItem } from './contract';

/**
 * The rules every key store applies the same way, whatever keeps the keys: the bounds of each
 * option, what an owner token looks like, and how a batch's repeated keys are answered.
 */

export const DEFAULT_TABLE = 'processed_events';
/** The Order Guard's table, by default. */
export const DEFAULT_ORDER_TABLE = 'object_versions';
export const DEFAULT_SCHEMA = 'public';

/** The most keys one List Keys page returns: a page is one statement's rows, held in memory. */
export const MAX_LIST_PAGE_SIZE = 1000;
/** Most bytes of stored payloads and responses (JSON text) on one List Keys page: what one n8n run holds comfortably. */
export const MAX_LIST_PAGE_BYTES = 16 * 1024 * 1024;
export const MAX_STATS_WINDOW_HOURS = 24 * 366;
const MAX_LEASE_SECONDS = 7 * 24 * 3600;
const MAX_RETENTION_SECONDS = 10 * 366 * 24 * 3600;
const STATUSES: readonly RecordStatus[] = ['processing', 'completed', 'failed'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function validateFailedExecution(execution: FailedExecution, operation: string): void {
	if (!execution.executionId) throw new InvalidConfigurationError(`${operation} by execution needs an execution id.`);
	// Without the workflow, the execution id of another n8n instance on this store could match.
	if (!execution.workflowId) throw new InvalidConfigurationError(`${operation} by execution needs the failed execution's workflow id.`);
}

export function validateReserveOptions(options: ReserveOptions): void {
	if (options.mode !== 'lease' && options.mode !== 'permanent') {
		throw new InvalidConfigurationError(`Unknown reservation mode ${JSON.stringify(options.mode)}: use lease or permanent.`);
	}
	validateDurations(options.leaseSeconds, options.retentionSeconds);
}

/*
 * The inbox (the Idempotent Webhook trigger's Respond: At Once): an accepted event is kept with
 * its item, and its owner runs it again after a failed run, with a growing delay, until it
 * succeeds or runs out of attempts or time (then it is dead-lettered).
 */

/** The longest wait between two runs of an inbox event: the doubling delays stop growing here. */
export const INBOX_RETRY_CAP_MS = 3600 * 1000;
/** The largest inbox item a store keeps, in UTF-8 bytes of its JSON text. */
export const MAX_INBOX_ITEM_BYTES = 1024 * 1024;
export const MAX_INBOX_OWNER_LENGTH = 1000;
export const MAX_INBOX_ATTEMPTS = 1000;
/** The longest retry window: as long as the longest retention. */
export const MAX_INBOX_RETRY_FOR_MS = MAX_RETENTION_SECONDS * 1000;
/** The most events one claimDueInbox call takes: each comes back with its item (up to MAX_INBOX_ITEM_BYTES). */
export const MAX_INBOX_CLAIMS = 100;
// Doublings past this add nothing (2^30 ms is 12 days, far past the cap) and keep the SQL's integer product small.
const MAX_DOUBLINGS = 30;

/**
 * The delay before an inbox event's next run, in milliseconds, after `attempts` runs (its attempts
 * counter when the run failed): `firstRetryMs` doubled for each run after the first, at most
 * INBOX_RETRY_CAP_MS, times `jitter`. The settle statements compute the same in SQL
 * (`-- <inbox-retry>` in fail.sql, fail_execution.sql, release.sql, release_execution.sql, on each
 * backend); the conformance suite checks them against this.
 */
export function inboxRetryDelayMs(attempts: number, firstRetryMs: number, jitter: number): number {
	const doublings = Math.min(Math.max(attempts - 1, 0), MAX_DOUBLINGS);
	return Math.min(INBOX_RETRY_CAP_MS, firstRetryMs * 2 ** doublings) * jitter;
}

/**
 * A jitter factor in [0.5, 1] ("equal jitter"), one per settled event. Full jitter ([0, 1]) spreads
 * retries most, but may start one almost at once, spending an attempt inside the outage that
 * failed the run: with half the delay kept, the attempts still span the window the backoff was
 * chosen for, and a hundred events failed by one outage still come back spread over the other half.
 */
export function inboxJitter(random: () => number = Math.random): number {
	return 0.5 + random() / 2;
}

const wholeWithin = (value: number, low: number, high: number) => Number.isInteger(value) && value >= low && value <= high;

export function validateInboxOwner(owner: unknown): void {
	if (typeof owner !== 'string' || owner === '' || owner.length > MAX_INBOX_OWNER_LENGTH || inexactTextReason(owner)) {
		throw new InvalidConfigurationError(
			`The inbox owner must be text of 1 to ${MAX_INBOX_OWNER_LENGTH} characters, without NUL or lone surrogates.`,
		);
	}
}

/** An inbox request's bounds; the item over MAX_INBOX_ITEM_BYTES is InboxItemTooLargeError, never cut short. */
export function validateInboxRequest(inbox: InboxRequest, mode: ReserveOptions['mode']): void {
	// A Permanent-mode reservation is completed at once: nothing would ever be retried.
	if (mode !== 'lease') throw new InvalidConfigurationError('An inbox event is reserved with a lease (mode lease), not permanently.');
	validateInboxOwner(inbox.owner);
	if (typeof inbox.item !== 'string' || inexactTextReason(inbox.item)) {
		throw new InvalidConfigurationError('The inbox item must be JSON text, without NUL or lone surrogates.');
	}
	const bytes = Buffer.byteLength(inbox.item, 'utf8');
	if (bytes > MAX_INBOX_ITEM_BYTES) {
		throw new InboxItemTooLargeError(
			`The inbox item is ${bytes} bytes, more than the ${MAX_INBOX_ITEM_BYTES} a store keeps; nothing was reserved.`,
		);
	}
	if (!wholeWithin(inbox.maxAttempts, 1, MAX_INBOX_ATTEMPTS)) {
		throw new InvalidConfigurationError(`The inbox's attempts must be a whole number from 1 to ${MAX_INBOX_ATTEMPTS}.`);
	}
	if (!wholeWithin(inbox.firstRetryMs, 1, INBOX_RETRY_CAP_MS)) {
		throw new InvalidConfigurationError(`The first retry's delay must be a whole number of milliseconds from 1 to ${INBOX_RETRY_CAP_MS}.`);
	}
	if (!wholeWithin(inbox.retryForMs, 1, MAX_INBOX_RETRY_FOR_MS)) {
		throw new InvalidConfigurationError(`The retry window must be a whole number of milliseconds from 1 to ${MAX_INBOX_RETRY_FOR_MS}.`);
	}
}

export function validateInboxClaimOptions(options: InboxClaimOptions): void {
	validateInboxOwner(options.owner);
	if (!wholeWithin(options.limit, 1, MAX_INBOX_CLAIMS)) {
		throw new InvalidConfigurationError(`The events to claim must be a whole number from 1 to ${MAX_INBOX_CLAIMS}.`);
	}
	if (!wholeWithin(options.leaseMs, 1, MAX_LEASE_SECONDS * 1000)) {
		throw new InvalidConfigurationError(`The lease must be a whole number of milliseconds from 1 to ${MAX_LEASE_SECONDS * 1000} (7 days).`);
	}
	if (options.retentionSeconds !== undefined) validateDurations(1, options.retentionSeconds);
}

/** The bounds of a reservation's (or a replay claim's) lease and retention. */
export function validateDurations(leaseSeconds: number, retentionSeconds: number): void {
	if (!(leaseSeconds > 0 && leaseSeconds <= MAX_LEASE_SECONDS)) {
		throw new InvalidConfigurationError(`Lease seconds must be more than 0 and at most ${MAX_LEASE_SECONDS} (7 days).`);
	}
	if (!(retentionSeconds > 0 && retentionSeconds <= MAX_RETENTION_SECONDS)) {
		throw new InvalidConfigurationError('Retention must be more than 0 and at most 10 years.');
	}
}

/** Every settle item names its key and the owner token its reservation returned. */
export function validateSettleItems(items: SettleRequest[]): void {
	for (const item of items) {
		const problem = settleItemProblem(item);
		if (problem) throw new InvalidConfigurationError(problem);
	}
}

/** Why one key cannot be settled as given (no key, an owner token that is no UUID); undefined when it can. */
export function settleItemProblem(item: Pick<SettleRequest, 'key' | 'ownerToken'>): string | undefined {
	if (!item.key) return 'No idempotency key to settle: the item has no key.';
	if (!UUID.test(item.ownerToken ?? ''))
		return `The owner token for key ${JSON.stringify(item.key.slice(0, 80))} is missing or not a UUID: pass the ownerToken the Reserve node returned.`;
	return undefined;
}

/** The longest hold: n8n's "wait forever" (a Wait until the year 3000) is held this long. */
export const MAX_HOLD_MS = 1000 * 365.25 * 24 * 3600 * 1000;

export function validateHoldItems(items: HoldRequest[]): void {
	validateSettleItems(items);
	for (const item of items) {
		if (!Number.isInteger(item.holdMs) || item.holdMs < 1 || item.holdMs > MAX_HOLD_MS) {
			throw new InvalidConfigurationError(
				`The hold for key ${JSON.stringify(item.key.slice(0, 80))} must be a whole number of milliseconds from 1 to ${MAX_HOLD_MS}.`,
			);
		}
	}
}

/** Every answer the trigger's deliveries are counted by, in the order Get Stats shows them. */
export const DELIVERY_ANSWERS: readonly DeliveryAnswer[] = [
	'new',
	'duplicate',
	'in_progress',
	'authorization_required',
	'forbidden',
	'invalid_signature',
	'not_verified',
	'key_refused',
	'key_store_unavailable',
	'internal_error',
];

export function validateDeliveryAnswer(answer: DeliveryAnswer): void {
	if (!DELIVERY_ANSWERS.includes(answer))
		throw new InvalidConfigurationError(`Unknown answer ${JSON.stringify(String(answer).slice(0, 40))} to count.`);
}

/** Counts per answer from the rows of the counting table; an answer with no row counts 0, one this package does not know is left out. */
export function answerCountsOf(rows: Iterable<{ answer: unknown; count: unknown }>): AnswerCounts {
	const counts = Object.fromEntries(DELIVERY_ANSWERS.map((answer) => [answer, 0])) as AnswerCounts;
	for (const row of rows) {
		if (DELIVERY_ANSWERS.includes(row.answer as DeliveryAnswer)) counts[row.answer as DeliveryAnswer] = Number(row.count);
	}
	return counts;
}

/** Record Execution names a key, its owner token and the execution. */
export function validateRecordExecution(key: OwnedKey, executionId: string): void {
	validateSettleItems([key]);
	if (typeof executionId !== 'string' || executionId === '') throw new InvalidConfigurationError('No execution id to record with the key.');
}

export function validateCleanupOptions(options: CleanupOptions): void {
	if (!(options.retentionSeconds > 0)) throw new InvalidConfigurationError('Cleanup retention must be more than 0.');
	if (!Number.isInteger(options.batchSize) || options.batchSize < 1) {
		throw new InvalidConfigurationError('Cleanup batch size must be a whole number of at least 1.');
	}
}

export function validateStatsWindow(windowHours: number): void {
	if (!(windowHours > 0 && windowHours <= MAX_STATS_WINDOW_HOURS)) {
		throw new InvalidConfigurationError(`The stats window must be more than 0 and at most ${MAX_STATS_WINDOW_HOURS} hours (1 year).`);
	}
}

export function validateListOptions(options: ListKeysOptions): void {
	if (!Number.isInteger(options.limit) || options.limit < 1 || options.limit > MAX_LIST_PAGE_SIZE) {
		throw new InvalidConfigurationError(`The page size must be a whole number from 1 to ${MAX_LIST_PAGE_SIZE}.`);
	}
	if (options.status !== undefined && !STATUSES.includes(options.status)) {
		throw new InvalidConfigurationError(`Unknown status ${JSON.stringify(options.status)}: use ${STATUSES.join(', ')}.`);
	}
	if (options.olderThanSeconds !== undefined && !(options.olderThanSeconds >= 0 && Number.isFinite(options.olderThanSeconds))) {
		throw new InvalidConfigurationError('"Older Than" must be 0 or more hours.');
	}
	for (const [name, text] of [
		['cursor', options.afterKey],
		['key prefix', options.keyPrefix],
	] as const) {
		// No stored key can hold NUL; say so instead of failing in the driver.
		if (text?.includes('\u0000'))
			throw new InvalidConfigurationError(`The ${name} contains a NUL character, which no stored key can contain.`);
	}
}

/**
 * A reservation batch by distinct key: each key once (its first request), numbered in order of
 * appearance. Batches of 10,000 pass through here, so each key is looked up in one map once.
 */
export interface DistinctBatch {
	/** The first request of each distinct key, in order of appearance. */
	firsts: ReservationRequest[];
	/** Index in the request list of each distinct key's first request. */
	firstIndexes: number[];
	/** For each request, the number of its distinct key. */
	distinctOfRequest: number[];
	distinctByKey: Map<string, number>;
}

export function distinctBatch(requests: ReservationRequest[]): DistinctBatch {
	const distinctByKey = new Map<string, number>();
	const distinctOfRequest = new Array<number>(requests.length);
	const firsts: ReservationRequest[] = [];
	const firstIndexes: number[] = [];
	for (let index = 0; index < requests.length; index++) {
		const { key } = requests[index];
		let distinct = distinctByKey.get(key);
		if (distinct === undefined) {
			distinct = firsts.length;
			distinctByKey.set(key, distinct);
			firsts.push(requests[index]);
			firstIndexes.push(index);
		}
		distinctOfRequest[index] = distinct;
	}
	return { firsts, firstIndexes, distinctByKey, distinctOfRequest };
}

/**
 * One request's answer from its key's stored record. The key is ours when the stored owner token
 * is the one proposed for it (whichever attempt wrote it); a repeat inside the batch is a duplicate,
 * and so is every other reservation of an inbox event (`inboxEvent`: the row has an inbox owner).
 */
export function reservationResult<R extends CompactRecord>(
	request: ReservationRequest,
	record: R,
	storedOwnerToken: string | null,
	proposedToken: string,
	repeatInBatch: boolean,
	inboxEvent: boolean,
): ReservationResult<R> {
	const ours = !repeatInBatch && storedOwnerToken === proposedToken;
	const payloadMismatch = request.payloadHash === null || record.payloadHash === null ? null : request.payloadHash !== record.payloadHash;
	// An inbox event was accepted once and for all: another delivery of it has nothing to wait for.
	const inProgress = record.status === 'processing' && record.leaseActive && !repeatInBatch && !inboxEvent;
	return {
		outcome: ours ? 'new' : inProgress ? 'in_progress' : 'duplicate',
		key: request.key,
		ownerToken: ours ? storedOwnerToken : null,
		reclaimed: ours && record.attempts > 1,
		repeatInBatch,
		payloadMismatch,
		record,
	};
}

export function validateAdvanceOptions(options: AdvanceOptions): void {
	if (options.equalVersion !== 'stale' && options.equalVersion !== 'newer') {
		throw new InvalidConfigurationError(`Unknown equal-version rule ${JSON.stringify(options.equalVersion)}: use stale or newer.`);
	}
}

/**
 * Each object's candidate in an Order Guard batch: its highest version (the first item holding
 * it). Only candidates go to the store; the other items are Stale as superseded.
 */
export function orderCandidates(items: VersionedItem[]): Map<string, VersionedItem> {
	const candidateByKey = new Map<string, VersionedItem>();
	for (const item of items) {
		const candidate = candidateByKey.get(item.objectKey);
		if (!candidate || compareVersions(item.version, candidate.version) > 0) candidateByKey.set(item.objectKey, item);
	}
	return candidateByKey;
}

/** One object's mark after the store's statement for the batch, and what that statement decided for its candidate. */
export interface OrderMark {
	lastDecision: 'newer' | 'stale';
	version: string;
	/** The event that set the mark (null when versions were given without an event key). */
	eventKey: string | null;
	staleCount: number;
	firstSeen: Date;
	updatedAt: Date;
}

/**
 * Every item's decision, in item order, from the candidates' marks: an item passes when it holds
 * its object's batch maximum, the store decided newer, and it is the first such item (or equal
 * versions pass); and the event that set the mark passes again at the mark's version, as it does
 * alone (its run may have failed after the guard), whichever item of its version the store was sent.
 */
export function orderDecisions(
	items: VersionedItem[],
	candidateByKey: Map<string, VersionedItem>,
	markByKey: Map<string, OrderMark>,
	equalVersion: EqualVersion,
): OrderDecision[] {
	const passedInBatch = new Set<string>();
	return items.map((item): OrderDecision => {
		const mark = markByKey.get(item.objectKey);
		if (!mark) throw new InvalidConfigurationError('The store returned no mark for a versioned object.');
		const candidate = candidateByKey.get(item.objectKey)!;
		const holdsBatchMax = compareVersions(item.version, candidate.version) === 0;
		// Ties inside the batch: only the first item passes, unless equal versions pass anyway.
		const firstOrEqualPasses = equalVersion === 'newer' || !passedInBatch.has(item.objectKey);
		const setTheMark = item.eventKey !== null && item.eventKey === mark.eventKey && compareVersions(item.version, mark.version) === 0;
		const newer = holdsBatchMax && firstOrEqualPasses && (mark.lastDecision === 'newer' || setTheMark);
		if (newer) passedInBatch.add(item.objectKey);
		return {
			outcome: newer ? 'newer' : 'stale',
			objectKey: item.objectKey,
			version: item.version,
			currentVersion: mark.version,
			supersededInBatch: !holdsBatchMax,
			staleCount: mark.staleCount,
			firstSeen: mark.firstSeen,
			updatedAt: mark.updatedAt,
		};
	});
}

/**
 * Deletes expired keys one batch at a time (`deleteBatch` deletes at most `batchSize` and says how
 * many) until a batch comes back short or the time budget is spent.
 */
export async function cleanupInBatches(options: CleanupOptions, deleteBatch: () => Promise<number>): Promise<CleanupResult> {
	const started = Date.now();
	const deadline = started + options.timeBudgetSeconds * 1000;
	let deleted = 0;
	let batches = 0;
	let finished = false;
	while (!finished && Date.now() < deadline) {
		const count = await deleteBatch();
		deleted += count;
		batches += 1;
		finished = count < options.batchSize;
	}
	return { deleted, batches, durationMs: Date.now() - started, finished };
}

/** An owner token as the stores compare it: a UUID, in whichever case it was given. */
export function ownerTokenText(ownerToken: string): string {
	return ownerToken.toLowerCase();
}

/**
 * One settled reservation: its key and its owner's token. A settle answers per item, so another
 * item of the same key with a stale token is not applied because the owner's item was.
 */
export function settledReservation(key: string, ownerToken: string): string {
	return `${key}\u0000${ownerTokenText(ownerToken)}`;
}

/** A key a settle did not change, as the store holds it now. */
export interface UnsettledKey {
	ownerToken: string | null;
	/** Its owner completed it (Complete ran): its business step ran. */
	effectCompleted: boolean;
}

/**
 * Each settle item's report, in item order: applied, or why not. `applied` says whether the
 * statement changed the item's reservation (its key under its token); `current` gives the stored state
 * of a key the statement did not change (undefined: no such key). `answerLost`: an attempt's answer
 * was lost, so a Release whose key is gone was applied by it.
 */
export function settleReports(
	operation: 'complete' | 'release' | 'fail',
	items: SettleRequest[],
	warnings: string[][],
	applied: (item: SettleRequest) => boolean,
	current: (key: string) => UnsettledKey | undefined,
	answerLost: boolean,
): SettleReport[] {
	return items.map((item, index): SettleReport => {
		const report = (result: SettleResult): SettleReport => (warnings[index].length > 0 ? { ...result, warnings: warnings[index] } : result);
		if (applied(item)) return report({ key: item.key, applied: true });
		const stored = current(item.key);
		// Our own release, applied by an attempt whose answer was lost: the row is gone as asked.
		if (!stored && operation === 'release' && answerLost) return report({ key: item.key, applied: true });
		if (!stored) return report({ key: item.key, applied: false, reason: 'not_found' });
		if (stored.ownerToken === null || ownerTokenText(stored.ownerToken) !== ownerTokenText(item.ownerToken))
			return report({ key: item.key, applied: false, reason: 'not_owner' });
		// Ours, and Release or Mark Failed found it completed by Complete: its business step ran.
		if (stored.effectCompleted) return report({ key: item.key, applied: false, reason: 'completed' });
		return report({ key: item.key, applied: false, reason: 'failed' });
	});
}

/** A replay batch by distinct key: each key's first index, and one proposed owner token per key. */
export function replayBatch(
	keys: string[],
	newToken: () => string,
): { firstIndexByKey: Map<string, number>; proposedTokens: Map<string, string> } {
	const firstIndexByKey = new Map<string, number>();
	const proposedTokens = new Map<string, string>();
	for (const [index, key] of keys.entries()) {
		if (!firstIndexByKey.has(key)) {
			firstIndexByKey.set(key, index);
			proposedTokens.set(key, newToken());
		}
	}
	return { firstIndexByKey, proposedTokens };
}

/** What the claim statement returned for one key: its record, and the claim when it took the key. */
export type ClaimedKey = { claimed: false; record: IdempotencyRecord } | (Extract<ReplayClaim, { claimed: true }> & { claimed: true });

/**
 * Each requested key's answer, in request order: a repeat in the batch is not claimed (its first
 * occurrence is), a key not stored is not found, and a key not taken is completed or in progress.
 */
export function replayClaims(
	keys: string[],
	firstIndexByKey: Map<string, number>,
	claimOf: (key: string) => ClaimedKey | undefined,
): ReplayClaim[] {
	return keys.map((key, index): ReplayClaim => {
		const found = claimOf(key);
		const record = found ? found.record : null;
		if (firstIndexByKey.get(key) !== index) return { claimed: false, key, reason: 'repeat_in_batch', record };
		if (!found || !record) return { claimed: false, key, reason: 'not_found', record: null };
		if (found.claimed) return found;
		return { claimed: false, key, reason: record.status === 'completed' ? 'completed' : 'in_progress', record };
	});
}
