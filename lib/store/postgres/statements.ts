import type { TableRef } from '../../identifiers';
import { backendSqlDir, isCompanionTable, readStatementText, renderForTable, statementFile, type SqlSection } from '../sqlText';

export type { SqlSection } from '../sqlText';

/** The SQL the package runs on Postgres is the SQL in the package's `sql/postgres/` folder: one source, read once. */
export const POSTGRES_SQL_DIR = backendSqlDir('postgres');

/** The tables the package keeps: the idempotency keys, and the Order Guard's version marks. */
export type TableFamily = 'keys' | 'order';

/**
 * The table each family's files are written for, so a DBA can run them with psql as they are;
 * the code replaces it with the configured, quoted table.
 */
export const DEFAULT_TABLES: Readonly<Record<TableFamily, string>> = { keys: 'processed_events', order: 'object_versions' };

/**
 * Each statement is known by its file's name: `claimForReplay` is `queries/claim_for_replay.sql`
 * (in `sql/postgres/`).
 * The lists below are split by the table a statement is written for.
 */
export function queryFile(name: string): SqlFile {
	return statementFile(name);
}

/** Statements on the key table (written for processed_events). */
const KEY_STATEMENT_NAMES = [
	'reserve',
	'claimForReplay',
	'claimDueInbox',
	'nextInboxDue',
	'complete',
	'release',
	'fail',
	'hold',
	'releaseExecution',
	'failExecution',
	'unsettledKeys',
	'cleanup',
	'getKeys',
	'listKeys',
	'stats',
	'copyKeys',
	'countAnswer',
	'answerCounts',
	'answerCountsByHour',
	'recordExecution',
] as const;

/** Statements on the Order Guard's table (written for object_versions). */
const ORDER_STATEMENT_NAMES = ['orderAdvance'] as const;

/**
 * Statements that name no table: the schema check and the migration lock take the table's name as
 * a bind parameter, the credential test concerns no table.
 */
const CATALOG_STATEMENT_NAMES = ['schemaState', 'migrationLock', 'checkConnection'] as const;

export type KeyStatement = (typeof KEY_STATEMENT_NAMES)[number];
export type OrderStatement = (typeof ORDER_STATEMENT_NAMES)[number];
export type CatalogStatement = (typeof CATALOG_STATEMENT_NAMES)[number];
/** A statement written for one of the package's tables. */
export type TableStatement = KeyStatement | OrderStatement;
export type StatementName = TableStatement | CatalogStatement;

const filesOf = <N extends string>(names: readonly N[]) =>
	Object.fromEntries(names.map((name) => [name, queryFile(name)])) as Record<N, SqlFile>;
export const KEY_STATEMENTS = filesOf(KEY_STATEMENT_NAMES);
export const ORDER_STATEMENTS = filesOf(ORDER_STATEMENT_NAMES);
export const CATALOG_STATEMENTS = filesOf(CATALOG_STATEMENT_NAMES);

/**
 * Every statement (schema changes live in `sql/postgres/migrations/`), with the table family it is written
 * for (null: it names no table).
 */
export const STATEMENTS: ReadonlyArray<{ name: StatementName; file: SqlFile; family: TableFamily | null }> = [
	...KEY_STATEMENT_NAMES.map((name) => ({ name, file: queryFile(name), family: 'keys' as const })),
	...ORDER_STATEMENT_NAMES.map((name) => ({ name, file: queryFile(name), family: 'order' as const })),
	...CATALOG_STATEMENT_NAMES.map((name) => ({ name, file: queryFile(name), family: null })),
];

/** Every statement's file by name. */
export const QUERY_FILES: Readonly<Record<StatementName, SqlFile>> = { ...KEY_STATEMENTS, ...ORDER_STATEMENTS, ...CATALOG_STATEMENTS };

const FAMILY_OF = new Map<StatementName, TableFamily | null>(STATEMENTS.map((statement) => [statement.name, statement.family]));

/** A file under `sql/postgres/`, relative to it, e.g. `queries/reserve.sql`. */
export type SqlFile = string;

// The files name their default table; index and companion table names are derived from it (<table>_<x>_idx, <table>_answer_counts).
/** A file from `sql/postgres/` written for `family`'s table, with its name replaced by the validated, quoted one. */
export function renderSqlFile(file: SqlFile, family: TableFamily, table: TableRef, omit?: SqlSection): string {
	const rename = (suffix?: string) =>
		!suffix ? table.qualified : isCompanionTable(suffix) ? table.companion(suffix) : table.indexName(suffix);
	return renderForTable(POSTGRES_SQL_DIR, file, DEFAULT_TABLES[family], table.qualified, rename, omit);
}

/** The statement from `sql/postgres/queries/`, for the configured table; `omit` leaves one marked section out. */
export function renderStatement(name: TableStatement, table: TableRef, omit?: SqlSection): string {
	const family = FAMILY_OF.get(name);
	// A programming error (a name not in the maps above, e.g. from plain JavaScript): fail loudly.
	if (!family) throw new Error(`No statement on a table is named ${JSON.stringify(name)} in lib/store/postgres/statements.ts.`);
	return renderSqlFile(QUERY_FILES[name], family, table, omit);
}

/** A statement that names no table, as its file holds it (without comments). */
export function catalogStatement(name: CatalogStatement): string {
	if (FAMILY_OF.get(name) !== null)
		throw new Error(`No statement without a table is named ${JSON.stringify(name)} in lib/store/postgres/statements.ts.`);
	return readStatementText(POSTGRES_SQL_DIR, QUERY_FILES[name]);
}
