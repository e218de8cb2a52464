import type { Pool } from 'pg';

import { InvalidConfigurationError } from '../../errors';
import { parseWithExactNumbers } from '../../evidence/exactNumbers';
import type { TableRef } from '../../identifiers';
import { PostgresRunner } from './runner';
import { storableResponse, storableText } from '../storableValues';
import { KEYS_MIGRATIONS, ensureSchema } from './migrations';
import { renderStatement } from './statements';
import type { RecordStatus } from '../../types';

/**
 * One stored key with everything a store keeps for it: what carries a key from one store to
 * another (Moving up: the embedded file into Postgres). JSON columns are JSON text, as stored, so
 * numbers beyond JavaScript's precision keep their digits.
 */
export interface KeyRow {
	key: string;
	status: RecordStatus;
	attempts: number;
	duplicateCount: number;
	firstSeen: Date;
	lastSeen: Date;
	lockedUntil: Date | null;
	expiresAt: Date | null;
	/** The fencing token of the run that holds (or held) the key: a processing key's Complete needs it. */
	ownerToken: string | null;
	executionId: string | null;
	workflowId: string | null;
	n8nInstance: string | null;
	keySource: string | null;
	payloadHash: string | null;
	/** The stored response as JSON text; null when none. */
	responseJson: string | null;
	completedAt: Date | null;
	effectCompletedAt: Date | null;
	lastError: string | null;
	/** The stored payload as JSON text; null when none. */
	payloadJson: string | null;
	payloadBytes: number | null;
	source: string | null;
	correlationId: string | null;
	/** An inbox event's owner, kept item (JSON text) and retry settings and state; all null for another key. */
	inboxOwner: string | null;
	inboxItem: string | null;
	firstRetryMs: number | null;
	maxAttempts: number | null;
	retryUntil: Date | null;
	nextAttemptAt: Date | null;
	deadLetteredAt: Date | null;
}

/** What copying one key did. */
export type CopyOutcome =
	/** The key was not in Postgres: copied as it was. */
	| 'inserted'
	/** The same reservation was there, less far along (fewer attempts, seen less recently): brought up to date. */
	| 'updated'
	/** The same reservation was there as it is: nothing to do (a second run of the move). */
	| 'unchanged'
	/** Another reservation of the key, less far along, was in Postgres: replaced by the copied one. */
	| 'replaced'
	/** Another reservation of the key, further along, is in Postgres: kept, the copied one dropped. */
	| 'kept';

/** A key both stores held as different reservations (different owner tokens): which one Postgres keeps. */
export interface CopyConflict {
	key: string;
	kept: 'copied' | 'postgres';
	copied: { status: RecordStatus; attempts: number; lastSeen: Date };
	postgres: { status: RecordStatus; attempts: number; lastSeen: Date } | null;
}

export interface CopyBatchResult {
	counts: Record<CopyOutcome, number>;
	conflicts: CopyConflict[];
	/** Values Postgres cannot hold (NUL, broken Unicode in JSON) that were repaired or dropped, per key. */
	warnings: string[];
}

export function emptyCounts(): Record<CopyOutcome, number> {
	return { inserted: 0, updated: 0, unchanged: 0, replaced: 0, kept: 0 };
}

const STATUSES: readonly RecordStatus[] = ['processing', 'completed', 'failed'];

/* The copy statement is sql/postgres/queries/copy_keys.sql: per key, the copy further along wins. */

// Postgres refuses NUL in text and jsonb, and lone surrogates in jsonb (as \u escapes in JSON text).
const JSON_POSTGRES_REFUSES = /\\u0000|\\ud[89ab][0-9a-f]{2}(?!\\ud[c-f])|(?<!\\ud[89ab][0-9a-f]{2})\\ud[c-f][0-9a-f]{2}/i;

/** JSON text as Postgres jsonb takes it: as it is when it can (exact numbers kept), repaired otherwise. */
function storableJsonText(json: string | null, what: string, key: string, warnings: string[]): string | null {
	if (json === null || !JSON_POSTGRES_REFUSES.test(json)) return json;
	const repaired = storableResponse(parseWithExactNumbers(json));
	warnings.push(
		`Key ${JSON.stringify(key.slice(0, 80))}: its ${what} had NUL characters or broken Unicode; they were replaced with U+FFFD.`,
	);
	return repaired.json;
}

function storableColumnText(text: string | null, what: string, key: string, warnings: string[]): string | null {
	if (text === null) return null;
	const repaired = storableText(text);
	if (repaired.changed)
		warnings.push(
			`Key ${JSON.stringify(key.slice(0, 80))}: its ${what} had NUL characters or broken Unicode; they were replaced with U+FFFD.`,
		);
	return repaired.text;
}

/**
 * Copies rows into the Postgres keys table (created or migrated first when `createTable`), one
 * statement for the batch, keeping per key the copy further along (see above). Throws
 * InvalidConfigurationError for a row no store could have written (a key with NUL, an unknown
 * status): a key is never changed in flight, so such a row stops the move instead.
 */
export async function copyKeysToPostgres(pool: Pool, table: TableRef, rows: KeyRow[]): Promise<CopyBatchResult> {
	const counts = emptyCounts();
	const conflicts: CopyConflict[] = [];
	const warnings: string[] = [];
	if (rows.length === 0) return { counts, conflicts, warnings };
	for (const row of rows) {
		if (!row.key || row.key.includes('\u0000') || storableText(row.key).changed) {
			throw new InvalidConfigurationError(
				`A stored key cannot go to Postgres as it is (empty, NUL or broken Unicode): ${JSON.stringify(row.key.slice(0, 80))}.`,
			);
		}
		if (!STATUSES.includes(row.status))
			throw new InvalidConfigurationError(
				`Key ${JSON.stringify(row.key.slice(0, 80))} has the unknown status ${JSON.stringify(row.status)}.`,
			);
	}
	const text = (value: (row: KeyRow) => string | null, what: string) =>
		rows.map((row) => storableColumnText(value(row), what, row.key, warnings));
	const values = [
		rows.map((row) => row.key),
		rows.map((row) => row.status),
		rows.map((row) => row.attempts),
		rows.map((row) => row.duplicateCount),
		rows.map((row) => row.firstSeen),
		rows.map((row) => row.lastSeen),
		rows.map((row) => row.lockedUntil),
		rows.map((row) => row.expiresAt),
		rows.map((row) => row.ownerToken),
		text((row) => row.executionId, 'execution id'),
		text((row) => row.workflowId, 'workflow id'),
		text((row) => row.n8nInstance, 'n8n instance id'),
		text((row) => row.keySource, 'key source'),
		text((row) => row.payloadHash, 'payload fingerprint'),
		rows.map((row) => storableJsonText(row.responseJson, 'stored response', row.key, warnings)),
		rows.map((row) => row.completedAt),
		rows.map((row) => row.effectCompletedAt),
		text((row) => row.lastError, 'error message'),
		rows.map((row) => storableJsonText(row.payloadJson, 'stored payload', row.key, warnings)),
		rows.map((row) => row.payloadBytes),
		text((row) => row.source, 'source'),
		text((row) => row.correlationId, 'correlation id'),
		text((row) => row.inboxOwner, 'inbox owner'),
		text((row) => row.inboxItem, 'inbox item'),
		rows.map((row) => row.firstRetryMs),
		rows.map((row) => row.maxAttempts),
		rows.map((row) => row.retryUntil),
		rows.map((row) => row.nextAttemptAt),
		rows.map((row) => row.deadLetteredAt),
	];
	const result = await PostgresRunner.onPool(pool).run(renderStatement('copyKeys', table), values, { context: { table: table.qualified } });
	const rowByKey = new Map(rows.map((row) => [row.key, row]));
	for (const answer of result.rows as Array<{
		key: string;
		before_status: RecordStatus | null;
		before_attempts: number | null;
		before_last_seen: Date | null;
		before_owner_token: string | null;
		written: boolean;
	}>) {
		const copied = rowByKey.get(answer.key)!;
		const existed = answer.before_status !== null;
		const sameReservation = existed && answer.before_owner_token === (copied.ownerToken?.toLowerCase() ?? null);
		let outcome: CopyOutcome;
		if (!existed)
			outcome = answer.written ? 'inserted' : 'kept'; // kept: written to Postgres by someone else during the move
		else if (sameReservation) outcome = answer.written ? 'updated' : 'unchanged';
		else outcome = answer.written ? 'replaced' : 'kept';
		counts[outcome] += 1;
		if (outcome === 'replaced' || outcome === 'kept') {
			conflicts.push({
				key: answer.key,
				kept: answer.written ? 'copied' : 'postgres',
				copied: { status: copied.status, attempts: copied.attempts, lastSeen: copied.lastSeen },
				postgres: existed ? { status: answer.before_status!, attempts: answer.before_attempts!, lastSeen: answer.before_last_seen! } : null,
			});
		}
	}
	return { counts, conflicts, warnings };
}

/** Creates the Postgres keys table, or brings it to the package's schema version, before a copy. */
export async function preparePostgresTable(pool: Pool, table: TableRef, createTable: boolean): Promise<void> {
	await ensureSchema(pool, table, KEYS_MIGRATIONS, createTable);
}
