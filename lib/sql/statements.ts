import { readFileSync } from 'node:fs';
import path from 'node:path';

import type { TableRef } from '../identifiers';

/**
 * The SQL the package runs is the SQL in the package's `sql/` folder: one source, read once.
 * From `lib/sql/` (tests) and from `dist/lib/sql/` (the built package, where gulp copies `sql/`
 * to `dist/sql/`), the folder is two levels up.
 */
export const SQL_DIR = path.join(__dirname, '..', '..', 'sql');

/** The statements the store sends on every call (schema changes live in `sql/migrations/`). */
export const QUERY_FILES = {
	reserve: 'queries/reserve.sql',
	complete: 'queries/complete.sql',
	release: 'queries/release.sql',
	releaseExecution: 'queries/release_execution.sql',
	fail: 'queries/fail.sql',
	failExecution: 'queries/fail_execution.sql',
	cleanup: 'queries/cleanup.sql',
	advanceOrder: 'queries/order_advance.sql',
	lookupRecords: 'queries/get_keys.sql',
	listRecords: 'queries/list_keys.sql',
	stats: 'queries/stats.sql',
	claim: 'queries/claim_for_replay.sql',
} as const;

export type StatementName = keyof typeof QUERY_FILES;

/** A file under `sql/`, relative to it, e.g. `queries/reserve.sql`. */
export type SqlFile = string;

/**
 * The table a file is written for, so a DBA can run it with psql as it is: the Order Guard's files
 * (`migrations/order/`, `queries/order_*`) name object_versions, the others processed_events.
 */
export function defaultTableOf(file: SqlFile): string {
	return file.startsWith('migrations/order/') || file.startsWith('queries/order_') ? 'object_versions' : 'processed_events';
}

// The files name their default table; index names are derived from it (<table>_<x>_idx).
const TABLE_TOKENS: Record<string, RegExp> = {
	processed_events: /\bprocessed_events(?:_([a-z_]+_idx))?\b/g,
	object_versions: /\bobject_versions(?:_([a-z_]+_idx))?\b/g,
};

/**
 * A part of a file between `-- <name>` and `-- </name>` comment lines that one variant of the
 * statement leaves out (e.g. the reserve statement's `full-record` columns for the Compact output).
 * The markers are comments, so the file run as it is stays the complete statement.
 */
export type SqlSection = 'full-record';

const fileCache = new Map<string, string>();

function readSqlFile(file: SqlFile, omit?: SqlSection): string {
	const cacheKey = omit ? `${file}#${omit}` : file;
	let text = fileCache.get(cacheKey);
	if (text === undefined) {
		let lines = readFileSync(path.join(SQL_DIR, file), 'utf8').split('\n');
		if (omit) lines = withoutSection(lines, omit, file);
		// Comments are for the DBA; dropping them keeps the statement text small on the wire.
		text = lines
			.filter((line) => !line.trimStart().startsWith('--'))
			.join('\n')
			.trim();
		fileCache.set(cacheKey, text);
	}
	return text;
}

function withoutSection(lines: string[], section: SqlSection, file: SqlFile): string[] {
	const marker = (closing: boolean) => (line: string) => line.trim() === `-- <${closing ? '/' : ''}${section}>`;
	const start = lines.findIndex(marker(false));
	const end = lines.findIndex(marker(true));
	// A programming error (a marker renamed or lost), never user input: fail loudly, not with the wrong columns.
	if (start < 0 || end < start || lines.filter(marker(false)).length !== 1) {
		throw new Error(`sql/${file} has no single "-- <${section}>" … "-- </${section}>" section to leave out.`);
	}
	return [...lines.slice(0, start), ...lines.slice(end + 1)];
}

/** A file from `sql/`, with the default table name replaced by the validated, quoted one. */
export function renderSqlFile(file: SqlFile, table: TableRef, omit?: SqlSection): string {
	return readSqlFile(file, omit).replace(TABLE_TOKENS[defaultTableOf(file)], (_match, indexSuffix: string | undefined) =>
		indexSuffix ? table.indexName(indexSuffix) : table.qualified,
	);
}

/** The statement from `sql/queries/`, for the configured table; `omit` leaves one marked section out. */
export function renderStatement(name: StatementName, table: TableRef, omit?: SqlSection): string {
	return renderSqlFile(QUERY_FILES[name], table, omit);
}
