import { existsSync } from 'node:fs';
import type { Pool } from 'pg';

import { InvalidConfigurationError } from '../../errors';
import { quoteIdentifier, tableRef } from '../../identifiers';
import { DEFAULT_SCHEMA, DEFAULT_TABLE } from '../rules';
import {
	copyKeysToPostgres,
	emptyCounts,
	preparePostgresTable,
	type CopyConflict,
	type CopyOutcome,
	type KeyRow,
} from '../postgres/copyKeys';
import type { RecordStatus } from '../../types';
import { loadSqlite, type SqliteDatabase } from './sqlite';
import { renderEmbeddedStatement } from './statements';

/**
 * Moving up: every key of an embedded store file carried into a Postgres keys table, so that
 * deliveries (and retries) after the switch are answered from Postgres as they were from the file:
 * a completed key stays a duplicate with its stored response, a processing key keeps its owner
 * token and lease (its run's Complete works against Postgres), a failed key stays reclaimable.
 * Read in key order, in batches; each batch is one statement (see copyKeys). Running it again
 * changes nothing; a key both stores hold is kept where it is further along (completed beats
 * processing) and reported.
 */

export interface MoveOptions {
	/** The embedded store file (read, never changed). */
	file: string;
	/** The keys table in the file (the nodes' Table Name option; default processed_events). */
	embeddedTable?: string;
	pool: Pool;
	schema?: string;
	/** The Postgres keys table (default processed_events). */
	table?: string;
	/** Create the table or bring it to the package's schema version first (default true). */
	createTable?: boolean;
	/** Keys per statement (default 1,000). */
	batchSize?: number;
	/** Called after each batch. */
	onBatch?: (progress: { read: number; counts: Record<CopyOutcome, number> }) => void;
}

export interface MoveReport {
	/** Keys read from the file. */
	read: number;
	batches: number;
	counts: Record<CopyOutcome, number>;
	/** Keys both stores held as different reservations, and which one Postgres keeps. */
	conflicts: CopyConflict[];
	warnings: string[];
	/** The file had a different number of keys after the move than it was read with: workflows still running on it. */
	fileChanged: boolean;
}

export const DEFAULT_MOVE_BATCH_SIZE = 1000;
const MAX_MOVE_BATCH_SIZE = 10000;

/**
 * The columns every keys table of the package has (the inbox columns of keys version 3 are read
 * when there): a table without them is not a keys table of the package.
 */
const COLUMNS =
	'key, status, attempts, duplicate_count, first_seen, last_seen, locked_until, expires_at, owner_token, execution_id, workflow_id, n8n_instance, key_source, payload_hash, response, completed_at, effect_completed_at, last_error, payload, payload_bytes, source, correlation_id';

type FileRow = Record<string, unknown>;

const time = (value: unknown): Date | null => (value === null || value === undefined ? null : new Date(Number(value)));
const text = (value: unknown): string | null => (value === null || value === undefined ? null : String(value));
const whole = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));

function keyRow(row: FileRow): KeyRow {
	return {
		key: String(row.key),
		status: row.status as RecordStatus,
		attempts: Number(row.attempts),
		duplicateCount: Number(row.duplicate_count),
		firstSeen: time(row.first_seen)!,
		lastSeen: time(row.last_seen)!,
		lockedUntil: time(row.locked_until),
		expiresAt: time(row.expires_at),
		ownerToken: text(row.owner_token),
		executionId: text(row.execution_id),
		workflowId: text(row.workflow_id),
		n8nInstance: text(row.n8n_instance),
		keySource: text(row.key_source),
		payloadHash: text(row.payload_hash),
		responseJson: text(row.response),
		completedAt: time(row.completed_at),
		effectCompletedAt: time(row.effect_completed_at),
		lastError: text(row.last_error),
		payloadJson: text(row.payload),
		payloadBytes: whole(row.payload_bytes),
		source: text(row.source),
		correlationId: text(row.correlation_id),
		inboxOwner: text(row.inbox_owner),
		inboxItem: text(row.inbox_item),
		firstRetryMs: whole(row.first_retry_ms),
		maxAttempts: whole(row.max_attempts),
		retryUntil: time(row.retry_until),
		nextAttemptAt: time(row.next_attempt_at),
		deadLetteredAt: time(row.dead_lettered_at),
	};
}

function openFile(file: string, table: string): SqliteDatabase {
	if (!existsSync(file)) throw new InvalidConfigurationError(`No embedded store file at ${file}.`);
	const { DatabaseSync } = loadSqlite();
	// Opened for reading and writing (a WAL file's readers share its index file), but only read.
	const db = new DatabaseSync(file, { timeout: 5000 });
	const columns = new Set(
		db
			.prepare(renderEmbeddedStatement('tableColumns', 'file'))
			.all({ name: table })
			.map((column) => String(column.name)),
	);
	if (columns.size === 0) {
		db.close();
		throw new InvalidConfigurationError(
			`The file ${file} has no table ${table}: is it the embedded store's file, and is the table name the nodes' Table Name?`,
		);
	}
	const missing = COLUMNS.split(', ').filter((name) => !columns.has(name));
	if (missing.length > 0) {
		db.close();
		throw new InvalidConfigurationError(
			`The table ${table} in ${file} lacks the columns ${missing.join(', ')}: it is not a keys table of this package's embedded store.`,
		);
	}
	return db;
}

/** Copies every key of the embedded file into Postgres; see the module comment. */
export async function moveKeysToPostgres(options: MoveOptions): Promise<MoveReport> {
	const embeddedTable = options.embeddedTable ?? DEFAULT_TABLE;
	// Validated like every table name the package splices into SQL.
	quoteIdentifier(embeddedTable, 'table');
	const batchSize = options.batchSize ?? DEFAULT_MOVE_BATCH_SIZE;
	if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > MAX_MOVE_BATCH_SIZE) {
		throw new InvalidConfigurationError(`The batch size must be a whole number from 1 to ${MAX_MOVE_BATCH_SIZE}.`);
	}
	const table = tableRef(options.schema ?? DEFAULT_SCHEMA, options.table ?? DEFAULT_TABLE);
	const db = openFile(options.file, embeddedTable);
	try {
		await preparePostgresTable(options.pool, table, options.createTable ?? true);
		const count = () => Number(db.prepare(renderEmbeddedStatement('countKeys', 'keys', embeddedTable)).get()!.n);
		const keysAtStart = count();
		const page = db.prepare(renderEmbeddedStatement('readKeysPage', 'keys', embeddedTable));
		const report: MoveReport = { read: 0, batches: 0, counts: emptyCounts(), conflicts: [], warnings: [], fileChanged: false };
		let after = '';
		for (;;) {
			const rows = page.all({ after, limit: batchSize }).map(keyRow);
			if (rows.length === 0) break;
			const result = await copyKeysToPostgres(options.pool, table, rows);
			report.read += rows.length;
			report.batches += 1;
			for (const [outcome, n] of Object.entries(result.counts)) report.counts[outcome as CopyOutcome] += n;
			report.conflicts.push(...result.conflicts);
			report.warnings.push(...result.warnings);
			options.onBatch?.({ read: report.read, counts: { ...report.counts } });
			after = rows[rows.length - 1].key;
			if (rows.length < batchSize) break;
		}
		report.fileChanged = count() !== keysAtStart || report.read !== keysAtStart;
		return report;
	} finally {
		db.close();
	}
}
