import { randomUUID } from 'node:crypto';
import type { QueryResultRow } from 'pg';

import { UnexpectedResultError } from '../../errors';
import { assertStoredKeyText } from '../../keys/exactText';
import { distinctBatch, replayBatch, replayClaims, reservationResult, validateDurations, validateReserveOptions, type ClaimedKey } from '../rules';
import type { CompactRecord, ReplayClaim, ReplayClaimOptions, ReservationRequest, ReservationResult, ReserveOptionsWithDetail } from '../../types';
import { storedPayload, toCompactRecord, toRecord } from './keyRows';
import type { KeyTable } from './keyTable';

/**
 * Taking keys: Reserve (`sql/queries/reserve.sql`) and Claim for Replay
 * (`sql/queries/claim_for_replay.sql`), each one statement for the whole batch. A proposed owner
 * token per distinct key makes a lost answer recoverable: the same statement with the same tokens
 * is sent again, and a row carrying our token is ours whichever attempt wrote it.
 */

/**
 * Reserves each request's key. Results come back in request order; repeats in the batch are
 * duplicates. `detail: 'compact'` returns only the CompactRecord part of each row (default: full).
 */
export async function reserve(table: KeyTable, requests: ReservationRequest[], options: ReserveOptionsWithDetail): Promise<Array<ReservationResult<CompactRecord>>> {
	validateReserveOptions(options);
	if (requests.length === 0) return [];

	// One proposed owner token per distinct key: the key is ours when the row comes back with it.
	const { firsts, firstIndexes, distinctByKey, distinctOfRequest } = distinctBatch(requests);
	const proposedTokens = firsts.map(() => randomUUID());
	// A lost answer is not "nothing reserved": the same statement with the same tokens is sent
	// again, and a row carrying our token is ours whichever attempt wrote it.
	// Not retried: nothing is reserved yet, and the provider retries. In a transaction the caller
	// checked the table before taking its connection (a check needs a second one from the pool).
	if (!table.joinsCaller) await table.readyWithin('reserve', 0);
	const compact = options.detail === 'compact';
	const statement = table.statement('reserve', compact ? 'full-record' : undefined);
	// A column no request fills goes as one null, not an array of nulls for pg to write and Postgres to parse.
	const column = <T>(value: (request: ReservationRequest) => T | null | undefined): Array<T | null> | null => {
		const values = firsts.map((request) => value(request) ?? null);
		return values.some((v) => v !== null) ? values : null;
	};
	const { rows } = await table.send('reserve', statement, [
		firsts.map((request) => request.key),
		firsts.map((request) => request.keySource),
		column((request) => request.payloadHash),
		proposedTokens,
		options.mode,
		options.leaseSeconds,
		options.retentionSeconds,
		options.executionId ?? null,
		options.workflowId ?? null,
		// Replay evidence, stored with a new reservation only (see sql/queries/reserve.sql).
		column((request) => request.evidence?.payloadJson),
		column((request) => request.evidence?.payloadBytes),
		column((request) => request.evidence?.source),
		column((request) => request.evidence?.correlationId),
		options.instanceId ?? null,
	], { retryUntil: null, recoverUntilMs: table.reserveRecoveryMs });
	const rowOfDistinct = new Array<QueryResultRow | undefined>(firsts.length);
	for (const row of rows) {
		const distinct = distinctByKey.get(row.key as string);
		if (distinct !== undefined) rowOfDistinct[distinct] = row;
	}

	return requests.map((request, index) => {
		const distinct = distinctOfRequest[index];
		const row = rowOfDistinct[distinct];
		if (!row) {
			throw new UnexpectedResultError(
				`Postgres returned no row for reserved key ${JSON.stringify(request.key.slice(0, 80))} (a trigger or rule on ${table.ref.qualified}?). The other keys of the batch may have been reserved.`,
			);
		}
		const record = compact ? toCompactRecord(row) : toRecord(row);
		return reservationResult(request, record, row.owner_token as string, proposedTokens[distinct], firstIndexes[distinct] !== index);
	});
}

/**
 * Claim for Replay: takes over each stored key that is replayable (failed, or processing after
 * its lease ran out) with a new owner token and lease, in one statement. Results come back in key
 * order of the request; a key completed or under a live lease (a redelivery or another replay is
 * on it) is not claimed, so two replays, or a replay and a redelivery, never both own a key.
 * Throws UnusableKeyError for a key that cannot be a stored key (empty, NUL, lone surrogate).
 */
export async function claimForReplay(table: KeyTable, keys: string[], options: ReplayClaimOptions): Promise<ReplayClaim[]> {
	validateDurations(options.leaseSeconds, options.retentionSeconds);
	for (const key of keys) assertStoredKeyText(key, 'key to replay');
	if (keys.length === 0) return [];
	const { firstIndexByKey, proposedTokens } = replayBatch(keys, randomUUID);
	await table.readyWithin('claimForReplay', 0);
	// Like reserve: a lost answer is re-sent with the same tokens, and a row holding ours is ours.
	const { rows } = await table.send('claimForReplay', table.statement('claimForReplay'), [
		[...proposedTokens.keys()],
		[...proposedTokens.values()],
		options.leaseSeconds,
		options.retentionSeconds,
		options.executionId ?? null,
		options.workflowId ?? null,
		options.instanceId ?? null,
	], { retryUntil: null, recoverUntilMs: table.reserveRecoveryMs });
	const claimByKey = new Map(
		rows.map((row): [string, ClaimedKey] => {
			const key = row.key as string;
			const record = toRecord(row);
			if (!row.claimed) return [key, { claimed: false, record }];
			return [
				key,
				{
					claimed: true,
					key,
					ownerToken: row.owner_token as string,
					record,
					payload: storedPayload(row),
					payloadStored: Boolean(row.payload_stored),
					source: row.source ?? null,
					correlationId: row.correlation_id ?? null,
				},
			];
		}),
	);
	return replayClaims(keys, firstIndexByKey, (key) => claimByKey.get(key));
}
