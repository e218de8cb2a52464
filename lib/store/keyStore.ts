import { randomUUID } from 'node:crypto';

import { assertStoredKeyText } from '../keys/exactText';
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
	StoredKey,
} from '../types';
import type { HoldRequest, KeyStore, SettleReport, SettleRequest } from './contract';
import type { KeyDriver, KeyStatements, SendRule, Statement, StatementResult } from './driver';
import { storedEvidence, toCompactRecord, toRecord, toStoredKey } from './rows';
import {
	INBOX_RETRY_CAP_MS,
	MAX_LIST_PAGE_BYTES,
	answerCountsOf,
	cleanupInBatches,
	distinctBatch,
	inboxJitter,
	replayBatch,
	replayClaims,
	reservationResult,
	settledReservation,
	settleReports,
	validateCleanupOptions,
	validateDeliveryAnswer,
	validateDurations,
	validateFailedExecution,
	validateHoldItems,
	validateInboxClaimOptions,
	validateInboxOwner,
	validateInboxRequest,
	validateListOptions,
	validateRecordExecution,
	validateReserveOptions,
	validateSettleItems,
	validateStatsWindow,
	type ClaimedKey,
	type UnsettledKey,
} from './rules';
import { storableErrorMessage, storableResponse } from './storableValues';

/** The keys a statement returned. */
function keysOf({ rows, read }: StatementResult): string[] {
	return rows.map((row) => read.value(row, 'key') as string);
}

const READ: SendRule = { kind: 'read' };
// A filtered List Keys page and Stats can read the whole table.
const SCAN: SendRule = { kind: 'read', scan: true };

/**
 * The idempotency key store, written once for every backend over its driver (driver.ts). Each
 * call validates, sends one statement for the whole batch (a settle adds one to say why keys were
 * not settled), and maps the rows to results. A proposed owner token per distinct key makes a lost
 * answer recoverable: the same statement with the same tokens is sent again, and a row carrying
 * our token is ours whichever attempt wrote it. Outcomes — new, duplicate, in progress, stale
 * owner — are returned as values; only broken configuration or store failures throw (as
 * IdempotencyError subclasses).
 */
export class DriverKeyStore implements KeyStore {
	constructor(protected readonly driver: KeyDriver) {}

	get backend() {
		return this.driver.backend;
	}

	/**
	 * Reserves each request's key. Results come back in request order; repeats in the batch are
	 * duplicates. `detail: 'compact'` returns only the CompactRecord part of each row (default: full).
	 */
	async reserve(
		requests: ReservationRequest[],
		options: ReserveOptions & { detail: 'compact' },
	): Promise<Array<ReservationResult<CompactRecord>>>;
	async reserve(requests: ReservationRequest[], options: ReserveOptions & { detail?: 'full' }): Promise<ReservationResult[]>;
	async reserve(requests: ReservationRequest[], options: ReserveOptionsWithDetail): Promise<Array<ReservationResult<CompactRecord>>>;
	async reserve(requests: ReservationRequest[], options: ReserveOptionsWithDetail): Promise<Array<ReservationResult<CompactRecord>>> {
		validateReserveOptions(options);
		for (const request of requests) if (request.inbox) validateInboxRequest(request.inbox, options.mode);
		if (requests.length === 0) return [];
		this.driver.keys.assertReservable(requests.map((request) => request.key));
		// One proposed owner token per distinct key: the key is ours when the row comes back with it.
		const { firsts, firstIndexes, distinctByKey, distinctOfRequest } = distinctBatch(requests);
		const tokens = firsts.map(() => randomUUID());
		const proposed = new Set<string>(tokens);
		const rule = {
			...this.driver.retryRule({ purpose: 'reserve' }),
			// A batch that reserved nothing (copies, in progress or done) only counted them: no fsync to wait for.
			durableIf: ([{ rows, read }]: StatementResult[]) => rows.some((row) => proposed.has(read.value(row, 'owner_token') as string)),
		};
		// The table check is not retried: nothing is reserved yet, and the provider retries.
		await this.driver.ready('reserve', { ...rule, readyRetryUntil: 0 });
		const compact = options.detail === 'compact';
		const [{ rows, read }] = await this.driver.send(
			'reserve',
			{
				name: 'reserve',
				parameters: {
					requests: firsts,
					tokens,
					mode: options.mode,
					leaseSeconds: options.leaseSeconds,
					retentionSeconds: options.retentionSeconds,
					executionId: options.executionId ?? null,
					workflowId: options.workflowId ?? null,
					instanceId: options.instanceId ?? null,
				},
				omit: compact ? 'full-record' : undefined,
			},
			rule,
		);
		// Rows come back in no promised order: each goes to its key's distinct number.
		const rowOfDistinct = new Array<unknown>(firsts.length);
		for (const row of rows) {
			const distinct = distinctByKey.get(read.value(row, 'key') as string);
			if (distinct !== undefined) rowOfDistinct[distinct] = row;
		}
		const records = rowOfDistinct.map((row) =>
			row === undefined
				? undefined
				: compact
					? toCompactRecord(row, read)
					: { ...toRecord(row, read), effectCompleted: Boolean(read.value(row, 'effect_completed')) },
		);
		return requests.map((request, index) => {
			const distinct = distinctOfRequest[index];
			const record = records[distinct];
			if (!record) throw this.driver.noRowError(request.key);
			return reservationResult(
				request,
				record,
				read.value(rowOfDistinct[distinct], 'owner_token') as string,
				tokens[distinct],
				firstIndexes[distinct] !== index,
				Boolean(read.value(rowOfDistinct[distinct], 'inbox')),
			);
		});
	}

	/**
	 * Takes over each stored key that is replayable (failed, or processing after its lease ran out)
	 * with a new owner token and lease, in one statement. Results come back in the request's order;
	 * a key completed or under a live lease (a redelivery or another replay is on it) is not claimed,
	 * so two replays, or a replay and a redelivery, never both own a key. Throws UnusableKeyError for
	 * a key that cannot be a stored key (empty, NUL, lone surrogate).
	 */
	async claimForReplay(keys: string[], options: ReplayClaimOptions): Promise<ReplayClaim[]> {
		validateDurations(options.leaseSeconds, options.retentionSeconds);
		for (const key of keys) assertStoredKeyText(key, 'key to replay');
		if (keys.length === 0) return [];
		const { firstIndexByKey, proposedTokens } = replayBatch(keys, randomUUID);
		// Like reserve: a lost answer is re-sent with the same tokens, and a row holding ours is ours.
		const rule = this.driver.retryRule({ purpose: 'reserve' });
		await this.driver.ready('claimForReplay', { ...rule, readyRetryUntil: 0 });
		const [{ rows, read }] = await this.driver.send(
			'claimForReplay',
			{
				name: 'claimForReplay',
				parameters: {
					claims: [...proposedTokens.entries()],
					leaseSeconds: options.leaseSeconds,
					retentionSeconds: options.retentionSeconds,
					executionId: options.executionId ?? null,
					workflowId: options.workflowId ?? null,
					instanceId: options.instanceId ?? null,
				},
			},
			rule,
		);
		const claimByKey = new Map(
			rows.map((row): [string, ClaimedKey] => {
				const key = read.value(row, 'key') as string;
				const record = toRecord(row, read);
				if (!read.value(row, 'claimed')) return [key, { claimed: false, record }];
				return [
					key,
					{
						claimed: true,
						key,
						ownerToken: read.value(row, 'owner_token') as string,
						record,
						...storedEvidence(row, read),
						inboxItem: (read.value(row, 'inbox_item') as string | null | undefined) ?? null,
					},
				];
			}),
		);
		return replayClaims(keys, firstIndexByKey, (key) => claimByKey.get(key));
	}

	/**
	 * Claims up to `limit` due inbox events of `owner` in one statement (see KeyStore). One proposed
	 * owner token per event it may take makes a lost answer recoverable as for a reservation: the
	 * statement sent again returns the events holding those tokens and claims no others.
	 */
	async claimDueInbox(options: InboxClaimOptions): Promise<InboxClaim[]> {
		validateInboxClaimOptions(options);
		const rule = this.driver.retryRule({ purpose: 'reserve' });
		await this.driver.ready('claimDueInbox', { ...rule, readyRetryUntil: 0 });
		const [{ rows, read }] = await this.driver.send(
			'claimDueInbox',
			{
				name: 'claimDueInbox',
				parameters: {
					owner: options.owner,
					limit: options.limit,
					leaseMs: options.leaseMs,
					retentionSeconds: options.retentionSeconds ?? null,
					tokens: Array.from({ length: options.limit }, () => randomUUID()),
					instanceId: options.instanceId ?? null,
				},
			},
			rule,
		);
		// A due event dead-lettered instead of claimed may come back too (`claimed` false).
		return rows
			.filter((row) => Boolean(read.value(row, 'claimed')))
			.map((row) => ({
				key: read.value(row, 'key') as string,
				ownerToken: read.value(row, 'owner_token') as string,
				leaseEndsAt: read.time(row, 'locked_until') as Date,
				item: read.value(row, 'inbox_item') as string,
				attempt: Number(read.value(row, 'attempts')),
			}));
	}

	/** When `owner`'s next event may become claimable, on the store's clock; null when none is left to run. */
	async nextInboxDue(owner: string): Promise<InboxDue | null> {
		validateInboxOwner(owner);
		await this.driver.ready('read', READ);
		const [{ rows, read }] = await this.driver.send('read', { name: 'nextInboxDue', parameters: { owner } }, READ);
		const dueAt = rows.length > 0 ? read.time(rows[0], 'due_at') : null;
		if (!dueAt) return null;
		const now = read.time(rows[0], 'now') as Date;
		return { dueAt, inMs: Math.max(0, dueAt.getTime() - now.getTime()) };
	}

	/**
	 * Marks owned reservations completed, storing `response` (any JSON) for duplicates to replay.
	 * A response the store would refuse is repaired or dropped (see storableValues), never fatal.
	 */
	async complete(items: Array<SettleRequest & { response?: unknown }>): Promise<SettleReport[]> {
		const responses = items.map((item) => storableResponse(item.response));
		return this.settle(
			'complete',
			items,
			responses.map((response) => response.warnings),
			(index) => [responses[index].json],
		);
	}

	/** Deletes owned reservations so the provider's next delivery is processed; an inbox event is failed and retried instead. */
	async release(items: SettleRequest[]): Promise<SettleReport[]> {
		return this.settle(
			'release',
			items,
			items.map(() => []),
			() => [inboxJitter()],
		);
	}

	/** Marks owned reservations failed (kept with the message); an inbox event gets its next retry, or is dead-lettered. */
	async fail(items: Array<SettleRequest & { error: string }>): Promise<SettleReport[]> {
		const messages = items.map((item) => storableErrorMessage(item.error));
		return this.settle(
			'fail',
			items,
			messages.map((message) => message.warnings),
			(index) => [messages[index].text, inboxJitter()],
		);
	}

	/** Extends owned processing reservations' leases to their hold from now (never shorter); returns the keys held. */
	async hold(items: HoldRequest[]): Promise<string[]> {
		validateHoldItems(items);
		// A key that cannot be stored was never reserved.
		const sent = items.filter((item) => this.driver.keys.storable(item.key));
		if (sent.length === 0) return [];
		// Holding is idempotent for its owner (greatest of the two ends), so a lost answer is re-sent.
		const rule = this.driver.retryRule({ purpose: 'settle', leaseEnds: sent.map((item) => item.leaseEndsAt) });
		await this.driver.ready('hold', { ...rule, readyRetryUntil: rule.retryUntil ?? 0 });
		const [held] = await this.driver.send(
			'hold',
			{ name: 'hold', parameters: { items: sent.map((item) => [item.key, item.ownerToken, item.holdMs]) } },
			rule,
		);
		return keysOf(held);
	}

	/** Releases every live reservation of one failed execution (of that workflow and n8n instance); returns the released keys. */
	async releaseExecution(execution: FailedExecution): Promise<string[]> {
		validateFailedExecution(execution, 'Release');
		const { executionId, workflowId, instanceId } = execution;
		return this.settleExecution('release', {
			name: 'releaseExecution',
			parameters: { executionId, workflowId, instanceId, jitter: inboxJitter(), retryCapMs: INBOX_RETRY_CAP_MS },
		});
	}

	/** Marks failed every live reservation of one failed execution (of that workflow and n8n instance), kept with the message; returns their keys. */
	async failExecution(execution: FailedExecution, error: string): Promise<{ keys: string[]; warnings: string[] }> {
		validateFailedExecution(execution, 'Mark Failed');
		const message = storableErrorMessage(error);
		const { executionId, workflowId, instanceId } = execution;
		const keys = await this.settleExecution('fail', {
			name: 'failExecution',
			parameters: { executionId, error: message.text, workflowId, instanceId, jitter: inboxJitter(), retryCapMs: INBOX_RETRY_CAP_MS },
		});
		return { keys, warnings: message.warnings };
	}

	/**
	 * Deletes keys whose retention ended, by the rule the reserve statement uses to treat them as
	 * absent, in batches of `batchSize` until done or out of time; live leases are never touched. A
	 * driver may delete a batch in smaller chunks (cleanupChunkRows), each its own statement, so
	 * that nothing waits long for it.
	 */
	async cleanup(options: CleanupOptions): Promise<CleanupResult> {
		validateCleanupOptions(options);
		await this.driver.ready('cleanup', READ);
		const rule: SendRule = { kind: 'losableWrite', awaitSync: true };
		return cleanupInBatches(options, async () => {
			let batchDeleted = 0;
			let chunkShort = false;
			while (batchDeleted < options.batchSize && !chunkShort) {
				const limit = Math.min(this.driver.cleanupChunkRows, options.batchSize - batchDeleted);
				const [{ rowCount }] = await this.driver.send(
					'cleanup',
					{ name: 'cleanup', parameters: { retentionSeconds: options.retentionSeconds, limit } },
					rule,
				);
				batchDeleted += rowCount;
				chunkShort = rowCount < limit;
			}
			return batchDeleted;
		});
	}

	/** The stored records of these keys (Get Key); keys not stored are absent from the answer. An inbox event's item only when asked. */
	async getKeys(keys: string[], options: GetKeysOptions = {}): Promise<Map<string, StoredKey>> {
		const found = new Map<string, StoredKey>();
		if (keys.length === 0) return found;
		await this.driver.ready('read', READ);
		// A key that cannot be stored was never reserved: it is simply not found.
		const storable = keys.filter((key) => this.driver.keys.storable(key));
		if (storable.length === 0) return found;
		const inboxItem = Boolean(options.inboxItem);
		const [{ rows, read }] = await this.driver.send('read', { name: 'getKeys', parameters: { keys: storable, inboxItem } }, READ);
		for (const row of rows) {
			const stored = toStoredKey(row, read);
			if (inboxItem) stored.inboxItem = (read.value(row, 'inbox_item') as string | null) ?? null;
			found.set(stored.key, stored);
		}
		return found;
	}

	/**
	 * One page of stored keys in key order (List Keys); bounded by MAX_LIST_PAGE_SIZE keys and by
	 * MAX_LIST_PAGE_BYTES of stored payloads and responses (the page then ends early, and
	 * nextAfterKey says where the next one starts).
	 */
	async listKeys(options: ListKeysOptions): Promise<KeysPage> {
		validateListOptions(options);
		await this.driver.ready('read', SCAN);
		const parameters = {
			afterKey: options.afterKey ?? '',
			status: options.status ?? null,
			stuckLeasesOnly: Boolean(options.stuckLeasesOnly),
			olderThanSeconds: options.olderThanSeconds ?? null,
			keyPrefix: options.keyPrefix || null,
			limit: options.limit,
			replayableOnly: Boolean(options.replayableOnly),
			maxBytes: MAX_LIST_PAGE_BYTES,
			deadLetteredOnly: Boolean(options.deadLetteredOnly),
		};
		const [{ rows, read }] = await this.driver.send('read', { name: 'listKeys', parameters }, SCAN);
		const keys = rows.map((row) => toStoredKey(row, read));
		// More may follow when the limit was reached or the byte bound left keys of this page out.
		const pageRows = Number((rows.length > 0 ? read.value(rows[0], 'page_rows') : undefined) ?? 0);
		const more = pageRows === options.limit || keys.length < pageRows;
		return { keys, nextAfterKey: more ? keys[keys.length - 1].key : null };
	}

	/** Counts by status and over a window (Stats); one aggregate statement over the table. */
	async stats(windowHours: number): Promise<KeyStats> {
		validateStatsWindow(windowHours);
		await this.driver.ready('read', SCAN);
		const [{ rows, read }] = await this.driver.send('read', { name: 'stats', parameters: { windowSeconds: windowHours * 3600 } }, SCAN);
		const [row] = rows;
		const count = (column: string) => Number((row === undefined ? undefined : read.value(row, column)) ?? 0);
		return {
			windowHours,
			total: count('total'),
			processing: count('processing'),
			stuckLeases: count('stuck_leases'),
			completed: count('completed'),
			failed: count('failed'),
			newInWindow: count('new_in_window'),
			duplicatesInWindow: count('duplicates_in_window'),
			reclaimsInWindow: count('reclaims_in_window'),
			failedInWindow: count('failed_in_window'),
			retryPending: count('retry_pending'),
			deadLettered: count('dead_lettered'),
		};
	}

	/**
	 * Counts one delivery the Idempotent Webhook trigger answered or started, in the current hour.
	 * Sent once: a count re-sent after a lost answer would count the delivery twice, and a lost
	 * count changes no outcome.
	 */
	async countAnswer(answer: DeliveryAnswer): Promise<void> {
		validateDeliveryAnswer(answer);
		const rule: SendRule = { kind: 'losableWrite', awaitSync: false };
		await this.driver.ready('countAnswer', rule);
		await this.driver.send('countAnswer', { name: 'countAnswer', parameters: { answer } }, rule);
	}

	/** The deliveries counted per answer in the hours that overlap the window. */
	async answerCounts(windowHours: number): Promise<AnswerCounts> {
		validateStatsWindow(windowHours);
		await this.driver.ready('read', READ);
		const [{ rows, read }] = await this.driver.send(
			'read',
			{ name: 'answerCounts', parameters: { windowSeconds: windowHours * 3600 } },
			READ,
		);
		return answerCountsOf(rows.map((row) => ({ answer: read.value(row, 'answer'), count: read.value(row, 'count') })));
	}

	/** The deliveries counted per hour and answer in the hours that overlap the window, oldest hour first. */
	async answerCountsByHour(windowHours: number): Promise<HourAnswerCounts[]> {
		validateStatsWindow(windowHours);
		await this.driver.ready('read', READ);
		const [{ rows, read }] = await this.driver.send(
			'read',
			{ name: 'answerCountsByHour', parameters: { windowSeconds: windowHours * 3600 } },
			READ,
		);
		const byHour = new Map<number, Array<{ answer: unknown; count: unknown }>>();
		for (const row of rows) {
			const hour = (read.time(row, 'hour') as Date).getTime();
			byHour.set(hour, [...(byHour.get(hour) ?? []), { answer: read.value(row, 'answer'), count: read.value(row, 'count') }]);
		}
		return [...byHour].map(([hour, counted]) => ({ hour: new Date(hour), counts: answerCountsOf(counted) }));
	}

	/**
	 * Records the execution that runs the key's event, when the key is still this owner's. A record
	 * lost in a power cut (its run dies with it) leaves the key as its reservation left it, as any run
	 * that died does: the embedded store commits it without an fsync on the event loop, and the next
	 * synced commit (the settlement's) syncs it.
	 */
	async recordExecution(key: OwnedKey, executionId: string): Promise<boolean> {
		validateRecordExecution(key, executionId);
		const rule: SendRule = { kind: 'losableWrite', awaitSync: false };
		await this.driver.ready('recordExecution', rule);
		// A key that cannot be stored was never reserved: not this owner's.
		if (!this.driver.keys.recordable(key.key)) return false;
		const [{ rowCount }] = await this.driver.send(
			'recordExecution',
			{ name: 'recordExecution', parameters: { key: key.key, ownerToken: key.ownerToken, executionId } },
			rule,
		);
		return rowCount > 0;
	}

	/** Creates the table (or brings it to the package's schema version), whatever the options say. */
	async createTable(): Promise<void> {
		await this.driver.createTable();
	}

	/** Checks (and, when allowed, creates or migrates) the table once before first use. */
	async ready(): Promise<void> {
		await this.driver.ready('reserve', { kind: 'write', retryUntil: null, readyRetryUntil: 0 });
	}

	private async settleExecution(operation: 'release' | 'fail', statement: Statement<KeyStatements>): Promise<string[]> {
		await this.driver.ready(operation, { kind: 'write', retryUntil: null });
		// Retried like Release; after a lost answer the re-send lists only the keys still left to settle.
		const [settled] = await this.driver.send(operation, statement, this.driver.retryRule({ purpose: 'settleExecution' }));
		return keysOf(settled);
	}

	/**
	 * One statement for all items, guarded by each owner token, then the state of the keys it did
	 * not change (in the same transaction where the backend has one), so each report says why.
	 * Settling is idempotent for its owner (Complete and Mark Failed apply again; a Release whose
	 * row is gone after a lost answer was ours), so a driver may retry it within the lease.
	 */
	private async settle<T extends SettleRequest>(
		operation: 'complete' | 'release' | 'fail',
		items: T[],
		warnings: string[][],
		extraValues: (index: number) => unknown[],
	): Promise<SettleReport[]> {
		// Release and Mark Failed schedule an inbox event's retry under the one delay cap.
		const statementValues = operation === 'complete' ? {} : { retryCapMs: INBOX_RETRY_CAP_MS };
		validateSettleItems(items);
		if (items.length === 0) return [];
		const { keys } = this.driver;
		const rule = this.driver.retryRule({
			purpose: operation === 'complete' ? 'complete' : 'settle',
			leaseEnds: items.map((item) => item.leaseEndsAt),
		});
		await this.driver.ready(operation, { ...rule, readyRetryUntil: rule.retryUntil ?? 0 });
		// A key that cannot be stored was never reserved; sending it would fail the batch.
		const sent = items.map((item, index) => ({ item, index })).filter(({ item }) => keys.storable(item.key));
		const appliedTo = (applied: Set<string>, item: SettleRequest) =>
			applied.has(settledReservation(keys.storedAs(item.key), item.ownerToken));
		let applied = new Set<string>();
		const current = new Map<string, UnsettledKey>();
		let uncertain = false;
		if (sent.length > 0) {
			// Each item's key and owner token, then what the operation stores (a response, an error).
			const statement = {
				name: operation,
				parameters: { items: sent.map(({ item, index }) => [item.key, item.ownerToken, ...extraValues(index)]), ...statementValues },
			} as Statement<KeyStatements>;
			const [settled, unsettled] = await this.driver.send(operation, statement, rule, ({ rows, read }) => {
				applied = new Set(
					rows.map((row) => settledReservation(read.value(row, 'key') as string, read.value(row, 'owner_token') as string)),
				);
				const missing = sent.filter(({ item }) => !appliedTo(applied, item));
				return missing.length > 0 ? { name: 'unsettledKeys', parameters: { keys: missing.map(({ item }) => item.key) } } : undefined;
			});
			uncertain = settled.uncertain;
			if (unsettled) {
				const { rows, read } = unsettled;
				for (const row of rows) {
					current.set(read.value(row, 'key') as string, {
						ownerToken: (read.value(row, 'owner_token') as string | null) ?? null,
						effectCompleted: Boolean(read.value(row, 'effect_completed')),
					});
				}
			}
		}
		return settleReports(
			operation,
			items,
			warnings,
			(item) => appliedTo(applied, item),
			(key) => current.get(keys.storedAs(key)),
			uncertain,
		);
	}
}
