import { readFileSync } from 'node:fs';
import path from 'node:path';

import type { TableRef } from '../identifiers';

/**
 * The SQL the package runs is the SQL in the package's `sql/` folder: one source, read once.
 * From `lib/sql/` (tests) and from `dist/lib/sql/` (the built package, where gulp copies `sql/`
 * to `dist/sql/`), the folder is two levels up.
 */
const SQL_DIR = path.join(__dirname, '..', '..', 'sql');

export const STATEMENT_FILES = {
	createTable: '001_create_table.sql',
	migrateFromSeed: '002_migrate_from_seed.sql',
	reserve: '003_reserve.sql',
	complete: '004_complete.sql',
	release: '005_release.sql',
	releaseExecution: '006_release_execution.sql',
	fail: '007_fail.sql',
	cleanup: '008_cleanup.sql',
	createOrderTable: 'order_guard_table.sql',
	advanceOrder: 'order_guard_advance.sql',
} as const;

export type StatementName = keyof typeof STATEMENT_FILES;

/**
 * The table each file is written for, so a DBA can run it with psql as it is. The keys table's
 * statements name processed_events; the Order Guard's name object_versions.
 */
export function defaultTableOf(name: StatementName): string {
	return name === 'createOrderTable' || name === 'advanceOrder' ? 'object_versions' : 'processed_events';
}

// The files name the default table; index names are derived from it (<table>_<x>_idx).
const tableTokens = new Map<string, RegExp>();
function defaultTableToken(name: StatementName): RegExp {
	const table = defaultTableOf(name);
	let token = tableTokens.get(table);
	if (!token) {
		token = new RegExp(`\\b${table}(?:_([a-z_]+_idx))?\\b`, 'g');
		tableTokens.set(table, token);
	}
	return token;
}

const fileCache = new Map<StatementName, string>();

function readStatement(name: StatementName): string {
	let text = fileCache.get(name);
	if (text === undefined) {
		const raw = readFileSync(path.join(SQL_DIR, STATEMENT_FILES[name]), 'utf8');
		// Comments are for the DBA; dropping them keeps the statement text small on the wire.
		text = raw
			.split('\n')
			.filter((line) => !line.trimStart().startsWith('--'))
			.join('\n')
			.trim();
		fileCache.set(name, text);
	}
	return text;
}

/** The statement from `sql/`, with the default table name replaced by the validated, quoted one. */
export function renderStatement(name: StatementName, table: TableRef): string {
	return readStatement(name).replace(defaultTableToken(name), (_match, indexSuffix: string | undefined) =>
		indexSuffix ? table.indexName(indexSuffix) : table.qualified,
	);
}
