import {
	MAX_LIST_PAGE_BYTES,
	answerCountsOf,
	cleanupInBatches,
	validateCleanupOptions,
	validateDeliveryAnswer,
	validateListOptions,
	validateRecordExecution,
	validateStatsWindow,
} from '../rules';
import type { AnswerCounts, CleanupOptions, CleanupResult, DeliveryAnswer, KeysPage, KeyStats, ListKeysOptions, OwnedKey, StoredKey } from '../../types';
import { toStoredKey } from './keyRows';
import type { KeyTable } from './keyTable';

/**
 * Reading and tidying the key table: Get Key, List Keys, Get Stats and Delete Expired Keys; and the
 * Idempotent Webhook trigger's bookkeeping (its answers counted, the execution recorded on a key).
 * Each statement is sent once, unnamed, and never retried: the trigger's bookkeeping is best effort,
 * and a count re-sent after a lost answer would count the delivery twice.
 */

/**
 * Deletes keys whose retention ended, by the same rule the reserve statement uses to treat them
 * as absent (`sql/queries/cleanup.sql`), in batches until done or out of time; live leases are never touched.
 */
export async function cleanup(table: KeyTable, options: CleanupOptions): Promise<CleanupResult> {
	validateCleanupOptions(options);
	await table.ready();
	return cleanupInBatches(options, async () => (await table.once('cleanup', [options.retentionSeconds, options.batchSize])).rowCount);
}

/** The stored records of these keys (Get Key); keys not stored are absent from the answer. */
export async function getKeys(table: KeyTable, keys: string[]): Promise<Map<string, StoredKey>> {
	const found = new Map<string, StoredKey>();
	if (keys.length === 0) return found;
	await table.ready();
	// A key with NUL cannot be stored (Postgres text refuses it): it is simply not found.
	const storable = keys.filter((key) => !key.includes('\u0000'));
	if (storable.length === 0) return found;
	for (const row of (await table.once('getKeys', [storable])).rows) found.set(row.key, toStoredKey(row));
	return found;
}

/**
 * One page of stored keys in key order (List Keys); bounded by MAX_LIST_PAGE_SIZE keys and by
 * MAX_LIST_PAGE_BYTES of stored payloads and responses (the page then ends early, and
 * nextAfterKey says where the next one starts).
 */
export async function listKeys(table: KeyTable, options: ListKeysOptions): Promise<KeysPage> {
	validateListOptions(options);
	await table.ready();
	const { rows } = await table.once('listKeys', [
		options.afterKey ?? '',
		options.status ?? null,
		Boolean(options.stuckLeasesOnly),
		options.olderThanSeconds ?? null,
		options.keyPrefix || null,
		options.limit,
		Boolean(options.replayableOnly),
		MAX_LIST_PAGE_BYTES,
	]);
	const keys = rows.map(toStoredKey);
	// More may follow when the limit was reached or the byte bound left keys of this page out.
	const pageRows = Number(rows[0]?.page_rows ?? 0);
	const more = pageRows === options.limit || keys.length < pageRows;
	return { keys, nextAfterKey: more ? keys[keys.length - 1].key : null };
}

/** Counts by status and over a window (Stats); one aggregate statement over the table. */
export async function stats(table: KeyTable, windowHours: number): Promise<KeyStats> {
	validateStatsWindow(windowHours);
	await table.ready();
	const [row] = (await table.once('stats', [windowHours * 3600])).rows;
	return {
		windowHours,
		total: Number(row.total),
		processing: Number(row.processing),
		stuckLeases: Number(row.stuck_leases),
		completed: Number(row.completed),
		failed: Number(row.failed),
		newInWindow: Number(row.new_in_window),
		duplicatesInWindow: Number(row.duplicates_in_window),
		reclaimsInWindow: Number(row.reclaims_in_window),
		failedInWindow: Number(row.failed_in_window),
	};
}

/** Counts one delivery the trigger answered or started, in the current hour's row (`sql/queries/count_answer.sql`). */
export async function countAnswer(table: KeyTable, answer: DeliveryAnswer): Promise<void> {
	validateDeliveryAnswer(answer);
	await table.ready();
	await table.once('countAnswer', [answer]);
}

/** The deliveries counted per answer in the hours that overlap the window. */
export async function answerCounts(table: KeyTable, windowHours: number): Promise<AnswerCounts> {
	validateStatsWindow(windowHours);
	await table.ready();
	return answerCountsOf((await table.once('answerCounts', [windowHours * 3600])).rows as Array<{ answer: unknown; count: unknown }>);
}

/** Records the execution that runs the key's event, when the key is still this owner's. */
export async function recordExecution(table: KeyTable, key: OwnedKey, executionId: string): Promise<boolean> {
	validateRecordExecution(key, executionId);
	await table.ready();
	return (await table.once('recordExecution', [key.key, key.ownerToken, executionId])).rowCount > 0;
}
