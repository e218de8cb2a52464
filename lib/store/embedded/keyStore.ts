import { randomUUID } from 'node:crypto';

import { UnexpectedResultError } from '../../errors';
import { parseWithExactNumbers } from '../../evidence/exactNumbers';
import { assertExactText, assertStoredKeyText, inexactTextReason } from '../../keys/exactText';
import { storableErrorMessage, storableResponse } from '../storableValues';
import type { HoldRequest, KeyStore, SettleReport, SettleRequest } from '../contract';
import {
	DEFAULT_TABLE,
	MAX_LIST_PAGE_BYTES,
	answerCountsOf,
	cleanupInBatches,
	distinctBatch,
	replayBatch,
	replayClaims,
	reservationResult,
	ownerTokenText,
	settledReservation,
	settleReports,
	type ClaimedKey,
	validateCleanupOptions,
	validateDeliveryAnswer,
	validateDurations,
	validateFailedExecution,
	validateHoldItems,
	validateListOptions,
	validateRecordExecution,
	validateReserveOptions,
	validateSettleItems,
	validateStatsWindow,
} from '../rules';
import type {
	AnswerCounts,
	CleanupOptions,
	CleanupResult,
	CompactRecord,
	DeliveryAnswer,
	FailedExecution,
	IdempotencyRecord,
	KeysPage,
	KeyStats,
	ListKeysOptions,
	OwnedKey,
	RecordStatus,
	ReplayClaim,
	ReplayClaimOptions,
	ReservationRequest,
	ReservationResult,
	ReserveOptions,
	ReserveOptionsWithDetail,
	StoredKey,
} from '../../types';
import { readAllOffThread, readOneOffThread } from './backgroundThread';
import { allAsArrays, assertSameFile, read, statement, withLosableWrite, withUnsyncedWrite, withWriteLock } from './connection';
import { renderEmbeddedStatement } from './statements';
import { EmbeddedTableStore, type EmbeddedStoreOptions } from './tableStore';

export type { EmbeddedStoreOptions } from './tableStore';

/**
 * Rows deleted per cleanup statement at most: one chunk keeps the event loop busy a few
 * milliseconds (n8n's other executions run between chunks), whatever batch size the node asks for.
 */
export const CLEANUP_CHUNK_ROWS = 1_000;

type Row = Record<string, unknown>;

/**
 * The embedded idempotency store: the same behaviour as the Postgres store (IdempotencyStore), kept
 * in one SQLite file on the n8n host through Node's built-in `node:sqlite`. Every write runs in a
 * `BEGIN IMMEDIATE` transaction on the process's one connection to the file; a reservation batch
 * is one statement. Times are the host's wall clock, read inside each statement (see docs/embedded-store.md).
 */
export class EmbeddedKeyStore extends EmbeddedTableStore implements KeyStore {
	constructor(options: EmbeddedStoreOptions) {
		super(options, 'keys', DEFAULT_TABLE);
	}

	async reserve(requests: ReservationRequest[], options: ReserveOptions & { detail: 'compact' }): Promise<Array<ReservationResult<CompactRecord>>>;
	async reserve(requests: ReservationRequest[], options: ReserveOptions & { detail?: 'full' }): Promise<ReservationResult[]>;
	async reserve(requests: ReservationRequest[], options: ReserveOptionsWithDetail): Promise<Array<ReservationResult<CompactRecord>>>;
	async reserve(requests: ReservationRequest[], options: ReserveOptionsWithDetail): Promise<Array<ReservationResult<CompactRecord>>> {
		validateReserveOptions(options);
		if (requests.length === 0) return [];
		// A key that is not exact text could never be found again as itself: the batch is refused
		// before anything is stored (Postgres refuses the whole statement too).
		for (const request of requests) assertExactText(request.key, 'idempotency key');
		const { firsts, firstIndexes, distinctByKey, distinctOfRequest } = distinctBatch(requests);
		const proposedTokens = firsts.map(() => randomUUID());
		// A request without evidence sends no evidence fields (JSON ->> of a missing element is null):
		// 10,000 keys are then a much shorter text for SQLite to parse.
		const batch = JSON.stringify(
			firsts.map((request, distinct) => {
				const { evidence } = request;
				const entry: unknown[] = [request.key, request.keySource, request.payloadHash, proposedTokens[distinct]];
				if (evidence) entry.push(evidence.payloadJson, evidence.payloadBytes, evidence.source, evidence.correlationId);
				return entry;
			}),
		);
		const connection = await this.readyConnection();
		const parameters = {
			batch,
			mode: options.mode,
			lease_ms: milliseconds(options.leaseSeconds),
			retention_ms: milliseconds(options.retentionSeconds),
			execution_id: options.executionId ?? null,
			workflow_id: options.workflowId ?? null,
			instance_id: options.instanceId ?? null,
		};
		const compact = options.detail === 'compact';
		const prepared = statement(connection, renderEmbeddedStatement('reserve', 'keys', this.table, compact ? 'full-record' : undefined));
		const { rows, column } = await withWriteLock(connection, this.wait('reserve'), () => allAsArrays(prepared, parameters));
		// Rows come back in no promised order: each goes to its key's distinct number.
		const rowOfDistinct = new Array<unknown[] | undefined>(firsts.length);
		for (const row of rows) {
			const distinct = distinctByKey.get(row[column.key] as string);
			if (distinct !== undefined) rowOfDistinct[distinct] = row;
		}
		const readRecord = compact ? compactReader(column) : fullReader(column);
		const records = rowOfDistinct.map((row) => (row ? readRecord(row) : undefined));
		return requests.map((request, index) => {
			const distinct = distinctOfRequest[index];
			const row = rowOfDistinct[distinct];
			const record = records[distinct];
			if (!row || !record) {
				throw new UnexpectedResultError(
					`The embedded store returned no row for reserved key ${JSON.stringify(request.key.slice(0, 80))} (a trigger on "${this.table}"?). The other keys of the batch may have been reserved.`,
				);
			}
			return reservationResult(request, record, row[column.owner_token] as string, proposedTokens[distinct], firstIndexes[distinct] !== index);
		});
	}

	async claimForReplay(keys: string[], options: ReplayClaimOptions): Promise<ReplayClaim[]> {
		validateDurations(options.leaseSeconds, options.retentionSeconds);
		for (const key of keys) assertStoredKeyText(key, 'key to replay');
		if (keys.length === 0) return [];
		const { firstIndexByKey, proposedTokens } = replayBatch(keys, randomUUID);
		const connection = await this.readyConnection();
		const { current, claimed } = await withWriteLock(connection, this.wait('claim'), () => {
			const current = this.statement(connection, 'claim_for_replay_current').all({ keys: JSON.stringify([...proposedTokens.keys()]) });
			const claimable = current.filter((row) => isReplayable(row)).map((row) => [row.key as string, proposedTokens.get(row.key as string)]);
			const claimed =
				claimable.length === 0
					? []
					: this.statement(connection, 'claim_for_replay').all({
							claims: JSON.stringify(claimable),
							lease_ms: milliseconds(options.leaseSeconds),
							retention_ms: milliseconds(options.retentionSeconds),
							execution_id: options.executionId ?? null,
							workflow_id: options.workflowId ?? null,
							instance_id: options.instanceId ?? null,
						});
			return { current, claimed };
		});
		const claimedByKey = new Map(claimed.map((row) => [row.key as string, row]));
		const currentByKey = new Map(current.map((row) => [row.key as string, row]));

		return replayClaims(keys, firstIndexByKey, (key): ClaimedKey | undefined => {
			const claimedRow = claimedByKey.get(key);
			if (claimedRow) {
				return {
					claimed: true,
					key,
					ownerToken: claimedRow.owner_token as string,
					record: toRecord(claimedRow),
					payload: storedPayload(claimedRow),
					payloadStored: Boolean(claimedRow.payload_stored),
					source: (claimedRow.source as string | null) ?? null,
					correlationId: (claimedRow.correlation_id as string | null) ?? null,
				};
			}
			const row = currentByKey.get(key);
			return row ? { claimed: false, record: toRecord(row) } : undefined;
		});
	}

	async complete(items: Array<SettleRequest & { response?: unknown }>): Promise<SettleReport[]> {
		const responses = items.map((item) => storableResponse(item.response));
		return this.settle('complete', items, responses.map((response) => response.warnings), (index) => [responses[index].json]);
	}

	async release(items: SettleRequest[]): Promise<SettleReport[]> {
		return this.settle('release', items, items.map(() => []), () => []);
	}

	async fail(items: Array<SettleRequest & { error: string }>): Promise<SettleReport[]> {
		const messages = items.map((item) => storableErrorMessage(item.error));
		return this.settle('fail', items, messages.map((message) => message.warnings), (index) => [messages[index].text]);
	}

	async hold(items: HoldRequest[]): Promise<string[]> {
		validateHoldItems(items);
		// A key that is not exact text was never stored (reserve refuses it).
		const sent = items.filter((item) => inexactTextReason(item.key) === undefined);
		if (sent.length === 0) return [];
		const connection = await this.readyConnection();
		const values = JSON.stringify(sent.map((item) => [item.key, ownerTokenText(item.ownerToken), item.holdMs]));
		const rows = await withWriteLock(connection, this.wait('hold'), () => this.statement(connection, 'hold').all({ items: values }));
		return rows.map((row) => row.key as string);
	}

	async releaseExecution(execution: FailedExecution): Promise<string[]> {
		validateFailedExecution(execution, 'Release');
		const connection = await this.readyConnection();
		const rows = await withWriteLock(connection, this.wait('release'), () =>
			this.statement(connection, 'release_execution').all({
				execution_id: execution.executionId,
				workflow_id: execution.workflowId,
				instance_id: execution.instanceId,
			}),
		);
		return rows.map((row) => row.key as string);
	}

	async failExecution(execution: FailedExecution, error: string): Promise<{ keys: string[]; warnings: string[] }> {
		validateFailedExecution(execution, 'Mark Failed');
		const message = storableErrorMessage(error);
		const connection = await this.readyConnection();
		const rows = await withWriteLock(connection, this.wait('fail'), () =>
			this.statement(connection, 'fail_execution').all({
				execution_id: execution.executionId,
				error: message.text,
				workflow_id: execution.workflowId,
				instance_id: execution.instanceId,
			}),
		);
		return { keys: rows.map((row) => row.key as string), warnings: message.warnings };
	}

	/**
	 * Deletes keys whose retention ended, by the rule reserve.sql uses to treat them as absent, in
	 * batches of `batchSize` until done or out of time. Each batch is deleted in chunks of at most
	 * CLEANUP_CHUNK_ROWS rows, each its own short transaction, so neither n8n nor the other
	 * processes on the file wait long for it. A chunk's commit leaves its fsync and the copy of its
	 * pages into the file to a checkpoint on the background thread, which n8n's event loop runs
	 * beside (withUnsyncedWrite).
	 */
	async cleanup(options: CleanupOptions): Promise<CleanupResult> {
		validateCleanupOptions(options);
		const connection = await this.readyConnection();
		const retention_ms = milliseconds(options.retentionSeconds);
		return cleanupInBatches(options, async () => {
			let batchDeleted = 0;
			let chunkShort = false;
			while (batchDeleted < options.batchSize && !chunkShort) {
				const limit = Math.min(CLEANUP_CHUNK_ROWS, options.batchSize - batchDeleted);
				const count = await withUnsyncedWrite(connection, this.wait('cleanup'), () =>
					Number(this.statement(connection, 'cleanup').run({ retention_ms, limit }).changes),
				);
				batchDeleted += count;
				chunkShort = count < limit;
			}
			return batchDeleted;
		});
	}

	async getKeys(keys: string[]): Promise<Map<string, StoredKey>> {
		const found = new Map<string, StoredKey>();
		if (keys.length === 0) return found;
		const connection = await this.readyConnection();
		// A key that is not exact text was never stored (reserve refuses it): it is simply not found.
		const storable = keys.filter((key) => inexactTextReason(key) === undefined);
		if (storable.length === 0) return found;
		const rows = await read(connection, this.wait('read'), () => this.statement(connection, 'get_keys').all({ keys: JSON.stringify(storable) }));
		for (const row of rows) found.set(row.key as string, toStoredKey(row));
		return found;
	}

	async listKeys(options: ListKeysOptions): Promise<KeysPage> {
		validateListOptions(options);
		const connection = await this.readyConnection();
		const parameters = {
			after_key: options.afterKey ?? '',
			status: options.status ?? null,
			stuck_only: options.stuckLeasesOnly ? 1 : 0,
			older_than_ms: options.olderThanSeconds === undefined ? null : milliseconds(options.olderThanSeconds),
			prefix: options.keyPrefix || null,
			limit: options.limit,
			replayable_only: options.replayableOnly ? 1 : 0,
			max_bytes: MAX_LIST_PAGE_BYTES,
		};
		// A filtered page can scan the whole table: off the event loop's thread.
		const rows = await readAllOffThread(connection.file, this.statementText('list_keys'), parameters, this.wait('read'));
		assertSameFile(connection);
		const keys = rows.map(toStoredKey);
		const pageRows = Number(rows[0]?.page_rows ?? 0);
		const more = pageRows === options.limit || keys.length < pageRows;
		return { keys, nextAfterKey: more ? keys[keys.length - 1].key : null };
	}

	async stats(windowHours: number): Promise<KeyStats> {
		validateStatsWindow(windowHours);
		const connection = await this.readyConnection();
		// One pass over the whole table: off the event loop's thread.
		const row = await readOneOffThread(connection.file, this.statementText('stats'), { window_ms: milliseconds(windowHours * 3600) }, this.wait('read'));
		assertSameFile(connection);
		const count = (name: string) => Number(row?.[name] ?? 0);
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
		};
	}

	async countAnswer(answer: DeliveryAnswer): Promise<void> {
		validateDeliveryAnswer(answer);
		const connection = await this.readyConnection();
		await withLosableWrite(connection, this.wait('count'), () => this.statement(connection, 'count_answer').run({ answer }));
	}

	async answerCounts(windowHours: number): Promise<AnswerCounts> {
		validateStatsWindow(windowHours);
		const connection = await this.readyConnection();
		const rows = await read(connection, this.wait('read'), () => this.statement(connection, 'answer_counts').all({ window_ms: milliseconds(windowHours * 3600) }));
		return answerCountsOf(rows as Array<{ answer: unknown; count: unknown }>);
	}

	async recordExecution(key: OwnedKey, executionId: string): Promise<boolean> {
		validateRecordExecution(key, executionId);
		const connection = await this.readyConnection();
		// A key that is not exact text was never stored (reserve refuses it): not this owner's.
		if (inexactTextReason(key.key) !== undefined) return false;
		const rows = await withWriteLock(connection, this.wait('record'), () =>
			this.statement(connection, 'record_execution').all({ key: key.key, owner_token: key.ownerToken, execution_id: executionId }),
		);
		return rows.length > 0;
	}

	async ready(): Promise<void> {
		await this.readyConnection();
	}

	/**
	 * One statement for all items, guarded by each owner token, and in the same transaction the
	 * state of the keys it did not change, so each report says why (not_found, not_owner,
	 * completed, failed) about the row as the statement saw it.
	 */
	private async settle<T extends SettleRequest>(
		operation: 'complete' | 'release' | 'fail',
		items: T[],
		warnings: string[][],
		extraValues: (index: number) => unknown[],
	): Promise<SettleReport[]> {
		validateSettleItems(items);
		if (items.length === 0) return [];
		const connection = await this.readyConnection();
		// A key that is not exact text was never stored (reserve refuses it): it is not found.
		const sent = items.map((item, index) => ({ item, index })).filter(({ item }) => inexactTextReason(item.key) === undefined);
		const { applied, current } = await withWriteLock(connection, this.wait(operation), () => {
			const applied = new Set<string>();
			if (sent.length > 0) {
				// Tokens are stored as text in lower case: a UUID given in upper case is the same token.
				const values = JSON.stringify(sent.map(({ item, index }) => [item.key, ownerTokenText(item.ownerToken), ...extraValues(index)]));
				for (const row of this.statement(connection, operation).all({ items: values })) applied.add(settledReservation(row.key as string, row.owner_token as string));
			}
			const missing = sent.filter(({ item }) => !applied.has(settledReservation(item.key, item.ownerToken))).map(({ item }) => item.key);
			const current = new Map<string, Row>();
			if (missing.length > 0) {
				for (const row of this.statement(connection, 'unsettled_keys').all({ keys: JSON.stringify(missing) })) current.set(row.key as string, row);
			}
			return { applied, current };
		});
		return settleReports(
			operation,
			items,
			warnings,
			(item) => applied.has(settledReservation(item.key, item.ownerToken)),
			(key) => {
				const row = current.get(key);
				return row && { ownerToken: (row.owner_token as string | null) ?? null, effectCompleted: Boolean(row.effect_completed) };
			},
			// One local transaction: its answer is never lost.
			false,
		);
	}
}

/** Seconds as whole milliseconds, the unit the file's times are kept in. */
function milliseconds(seconds: number): number {
	return Math.round(seconds * 1000);
}

function isReplayable(row: Row): boolean {
	return row.status === 'failed' || (row.status === 'processing' && !row.lease_active && row.locked_until !== null);
}

function date(value: unknown): Date | null {
	return value === null || value === undefined ? null : new Date(value as number);
}

function json(value: unknown): unknown {
	return typeof value === 'string' ? JSON.parse(value) : null;
}

/** Reads the compact record from a reserve row given as an array (see allAsArrays). */
function compactReader(column: Record<string, number>): (row: unknown[]) => CompactRecord {
	const { key, status, attempts, locked_until, payload_hash, response, lease_active } = column;
	return (row) => ({
		key: row[key] as string,
		status: row[status] as RecordStatus,
		attempts: row[attempts] as number,
		lockedUntil: date(row[locked_until]),
		payloadHash: (row[payload_hash] as string | null) ?? null,
		response: json(row[response]),
		leaseActive: Boolean(row[lease_active]),
	});
}

/** Reads the full record from a reserve row given as an array. */
function fullReader(column: Record<string, number>): (row: unknown[]) => IdempotencyRecord {
	const compact = compactReader(column);
	const { duplicate_count, first_seen, last_seen, expires_at, execution_id, workflow_id, key_source, completed_at, last_error } = column;
	return (row) => ({
		...compact(row),
		duplicateCount: row[duplicate_count] as number,
		firstSeen: date(row[first_seen]) as Date,
		lastSeen: date(row[last_seen]) as Date,
		expiresAt: date(row[expires_at]),
		executionId: (row[execution_id] as string | null) ?? null,
		workflowId: (row[workflow_id] as string | null) ?? null,
		keySource: (row[key_source] as string | null) ?? null,
		completedAt: date(row[completed_at]),
		lastError: (row[last_error] as string | null) ?? null,
	});
}

function toCompactRecord(row: Row): CompactRecord {
	return {
		key: row.key as string,
		status: row.status as RecordStatus,
		attempts: row.attempts as number,
		lockedUntil: date(row.locked_until),
		payloadHash: (row.payload_hash as string | null) ?? null,
		response: json(row.response),
		leaseActive: Boolean(row.lease_active),
	};
}

function toRecord(row: Row): IdempotencyRecord {
	return {
		...toCompactRecord(row),
		duplicateCount: row.duplicate_count as number,
		firstSeen: date(row.first_seen) as Date,
		lastSeen: date(row.last_seen) as Date,
		expiresAt: date(row.expires_at),
		executionId: (row.execution_id as string | null) ?? null,
		workflowId: (row.workflow_id as string | null) ?? null,
		keySource: (row.key_source as string | null) ?? null,
		completedAt: date(row.completed_at),
		lastError: (row.last_error as string | null) ?? null,
	};
}

/** The stored payload, its numbers JavaScript would round given as strings of their exact digits; null when none. */
function storedPayload(row: Row): unknown {
	return typeof row.payload === 'string' ? parseWithExactNumbers(row.payload) : null;
}

function toStoredKey(row: Row): StoredKey {
	return {
		...toRecord(row),
		retentionEnded: Boolean(row.retention_ended),
		payload: storedPayload(row),
		payloadStored: Boolean(row.payload_stored),
		payloadBytes: (row.payload_bytes as number | null) ?? null,
		source: (row.source as string | null) ?? null,
		correlationId: (row.correlation_id as string | null) ?? null,
	};
}
