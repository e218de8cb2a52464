import type { HoldRequest, SettleReport, SettleRequest } from '../store/contract';
import { settledReservation, settleReports, validateFailedExecution, validateHoldItems, validateSettleItems, type UnsettledKey } from '../store/rules';
import type { FailedExecution } from '../types';
import { monotonicAt, monotonicNow, recordDatabaseTime } from './databaseClock';
import type { KeyTable } from './keyTable';
import { storableErrorMessage, storableResponse, storableText } from '../store/storableValues';
import type { KeyStatement } from '../sql/statements';

/**
 * Settling owned keys: Complete, Release and Mark Failed (each guarded by the owner token), and
 * Release or Mark Failed of every live reservation of one failed execution. Settling is idempotent
 * for its owner, so a lost connection is retried within the lease and a lost answer re-sent.
 */

// Release, Mark Failed and Hold stop retrying this long before the lease ends: after it, another
// delivery may take the key over and run the step anyway, so a late one gains nothing.
const LEASE_SAFETY_MARGIN_MS = 2_000;

/**
 * Marks owned reservations completed, storing `response` (any JSON) for duplicates to replay.
 * A response Postgres would refuse is repaired or dropped (see storableValues), never fatal.
 */
export async function complete(table: KeyTable, items: Array<SettleRequest & { response?: unknown }>): Promise<SettleReport[]> {
	const responses = items.map((item) => storableResponse(item.response));
	return settle(table, 'complete', items, responses.map((response) => response.warnings), (sent) => [
		sent.map(({ index }) => responses[index].json),
	]);
}

/** Deletes owned reservations so the provider's next delivery is processed. */
export async function release(table: KeyTable, items: SettleRequest[]): Promise<SettleReport[]> {
	return settle(table, 'release', items, items.map(() => []), () => []);
}

/** Marks owned reservations failed (kept with the message); the next delivery reserves again. */
export async function fail(table: KeyTable, items: Array<SettleRequest & { error: string }>): Promise<SettleReport[]> {
	const messages = items.map((item) => storableErrorMessage(item.error));
	return settle(table, 'fail', items, messages.map((message) => message.warnings), (sent) => [
		sent.map(({ index }) => messages[index].text),
	]);
}

/** Extends owned processing reservations' leases to their hold from now (never shorter); returns the keys held. */
export async function hold(table: KeyTable, items: HoldRequest[]): Promise<string[]> {
	validateHoldItems(items);
	// A key with a NUL cannot be stored, so it was never reserved.
	const sent = items.filter((item) => !item.key.includes('\u0000'));
	if (sent.length === 0) return [];
	const retryUntil = settleDeadline(table, sent);
	await table.readyWithin('hold', retryUntil);
	// Holding is idempotent for its owner (greatest of the two ends), so a lost answer is re-sent.
	const { rows } = await table.send('hold', table.statement('hold'), [sent.map((item) => item.key), sent.map((item) => item.ownerToken), sent.map((item) => item.holdMs)], {
		retryUntil,
	});
	return rows.map((row) => row.key as string);
}

/** Releases every live reservation of one failed execution (of that workflow and n8n instance); returns the released keys. */
export async function releaseExecution(table: KeyTable, execution: FailedExecution): Promise<string[]> {
	validateFailedExecution(execution, 'Release');
	return settleExecution(table, 'release', 'releaseExecution', [execution.executionId, execution.workflowId, execution.instanceId]);
}

/** Marks failed every live reservation of one failed execution (of that workflow and n8n instance), kept with the message; returns their keys. */
export async function failExecution(table: KeyTable, execution: FailedExecution, error: string): Promise<{ keys: string[]; warnings: string[] }> {
	validateFailedExecution(execution, 'Mark Failed');
	const message = storableErrorMessage(error);
	const keys = await settleExecution(table, 'fail', 'failExecution', [
		execution.executionId,
		message.text,
		execution.workflowId,
		execution.instanceId,
	]);
	return { keys, warnings: message.warnings };
}

async function settleExecution(table: KeyTable, operation: 'release' | 'fail', statement: KeyStatement, values: unknown[]): Promise<string[]> {
	await table.ready();
	// Retried like Release; after a lost answer the re-send lists only the keys still left to settle.
	const { rows } = await table.send(operation, table.statement(statement), values, {
		retryUntil: monotonicNow() + table.settleRetryMs,
	});
	return rows.map((row) => row.key as string);
}

/**
 * One statement for all items, guarded by each owner token. Settling is idempotent for its
 * owner (Complete and Mark Failed apply again; a Release whose row is gone after a lost answer
 * was ours), so a lost connection is retried within the lease and a lost answer re-sent.
 */
async function settle<T extends SettleRequest>(
	table: KeyTable,
	operation: 'complete' | 'release' | 'fail',
	items: T[],
	warnings: string[][],
	extraParameters: (sent: Array<{ item: T; index: number }>) => unknown[],
): Promise<SettleReport[]> {
	validateSettleItems(items);
	if (items.length === 0) return [];
	// Complete retries for its whole budget, past the lease end too: the effect has happened, and a
	// key completed late, before any delivery took it over, is a duplicate to every later delivery,
	// where one left to lapse has the step run again. A late Complete after a take-over matches no
	// row (the owner token is the new run's) and reports Stale.
	const retryUntil = operation === 'complete' ? monotonicNow() + table.settleRetryMs : settleDeadline(table, items);
	await table.readyWithin(operation, retryUntil);
	// A key with a NUL cannot be stored, so it was never reserved; sending it would fail the batch.
	const sent = items.map((item, index) => ({ item, index })).filter(({ item }) => !item.key.includes('\u0000'));
	// pg sends a lone surrogate as U+FFFD, so rows come back under the repaired key.
	const rowKey = (key: string) => storableText(key).text;
	const { rows, uncertain } = await table.send(
		operation,
		table.statement(operation),
		[sent.map(({ item }) => item.key), sent.map(({ item }) => item.ownerToken), ...extraParameters(sent)],
		{ retryUntil },
	);
	// Complete's answer carries the database's time (completed_at): it keeps the clock sample fresh.
	recordDatabaseTime(table.pool, rows[0]?.completed_at);
	const applied = new Set(rows.map((row) => settledReservation(row.key as string, row.owner_token as string)));
	const appliedTo = (item: SettleRequest) => applied.has(settledReservation(rowKey(item.key), item.ownerToken));
	const missing = sent.filter(({ item }) => !appliedTo(item));
	const current = new Map<string, UnsettledKey>();
	if (missing.length > 0) {
		const found = await table.send(operation, table.statement('unsettledKeys'), [missing.map(({ item }) => item.key)], { retryUntil });
		for (const row of found.rows) current.set(row.key as string, { ownerToken: row.owner_token as string, effectCompleted: Boolean(row.effect_completed) });
	}
	return settleReports(
		operation,
		items,
		warnings,
		appliedTo,
		(key) => current.get(rowKey(key)),
		uncertain,
	);
}

/**
 * Retrying a settle ends at the retry budget, and before the earliest known lease end. Lease ends
 * are database times: they are placed on the host's monotonic clock through the database's time
 * last read on this pool, never compared with the host's wall clock. Before any round trip has
 * read it, only the budget applies (a settle after the lease end is fenced by the owner token).
 */
function settleDeadline(table: KeyTable, items: SettleRequest[]): number {
	let deadline = monotonicNow() + table.settleRetryMs;
	for (const item of items) {
		if (!item.leaseEndsAt || Number.isNaN(item.leaseEndsAt.getTime())) continue;
		const leaseEnd = monotonicAt(table.pool, item.leaseEndsAt);
		if (leaseEnd !== undefined) deadline = Math.min(deadline, leaseEnd - LEASE_SAFETY_MARGIN_MS);
	}
	return deadline;
}
