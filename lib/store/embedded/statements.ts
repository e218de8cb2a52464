import path from 'node:path';

import { InvalidConfigurationError } from '../../errors';
import { quoteIdentifier } from '../../identifiers';
import { backendSqlDir, readStatementText, renderForTable, statementFile, type SqlSection } from '../sqlText';

/**
 * The embedded store's SQL is the SQL in the package's `sql/embedded/` folder (one statement per
 * file, the file's name is the statement's name), read once.
 */
export const EMBEDDED_SQL_DIR = backendSqlDir('embedded');

/** Every statement of `sql/embedded/queries/`, named as the Postgres statements are (statementFile). */
export const EMBEDDED_STATEMENT_NAMES = [
	'reserve',
	'complete',
	'releaseInbox',
	'release',
	'fail',
	'hold',
	'unsettledKeys',
	'releaseExecutionInbox',
	'releaseExecution',
	'failExecution',
	'cleanup',
	'getKeys',
	'listKeys',
	'stats',
	'countAnswer',
	'answerCounts',
	'answerCountsByHour',
	'recordExecution',
	'claimForReplayCurrent',
	'claimForReplay',
	'claimDueInbox',
	'nextInboxDue',
	'orderAdvance',
	'readMeta',
	'writeMeta',
	'syncPoint',
	'readSchemaVersion',
	'writeSchemaVersion',
	'tableExists',
	'tableColumns',
	'countKeys',
	'readKeysPage',
] as const;

/** Each statement's file in `sql/embedded/queries/`, without its extension. */
export const EMBEDDED_STATEMENTS = EMBEDDED_STATEMENT_NAMES.map((name) => path.basename(statementFile(name), '.sql'));

export type EmbeddedStatement = (typeof EMBEDDED_STATEMENT_NAMES)[number];

/** The families of tables a store file holds, and the file's own tables (meta and schema versions). */
export type EmbeddedFamily = 'file' | 'keys' | 'order';

/** Migrations per family, in order; a family's schema version is the number of its files applied. */
export const EMBEDDED_MIGRATIONS: Record<EmbeddedFamily, readonly string[]> = {
	file: ['migrations/file/001_store.sql'],
	keys: ['migrations/keys/001_create_table.sql', 'migrations/keys/002_answer_counts.sql', 'migrations/keys/003_inbox.sql'],
	order: ['migrations/order/001_create_table.sql'],
};

const DEFAULT_TABLE_OF: Record<EmbeddedFamily, string | null> = { file: null, keys: 'processed_events', order: 'object_versions' };

// The package's own tables in every store file; a key or order table may not take their names.
const RESERVED_PREFIXES = ['n8n_idempotency_', 'sqlite_'];

/** A validated table name, quoted; the package's own names are refused. */
export function embeddedTableName(name: string): { name: string; quoted: string } {
	const quoted = quoteIdentifier(name, 'table');
	if (RESERVED_PREFIXES.some((prefix) => name.toLowerCase().startsWith(prefix))) {
		throw new InvalidConfigurationError(
			`Invalid table name ${JSON.stringify(name)}: names starting with ${RESERVED_PREFIXES.join(' or ')} belong to the store file itself.`,
		);
	}
	return { name, quoted };
}

/**
 * A file of `sql/embedded/`, its default table name (processed_events, object_versions) replaced
 * by the validated, quoted one; index and companion table names derive from the table name
 * (<table>_<x>_idx, <table>_answer_counts).
 */
export function renderEmbeddedSql(file: string, family: EmbeddedFamily, table?: string, omit?: SqlSection): string {
	const defaultTable = DEFAULT_TABLE_OF[family];
	if (!defaultTable || !table) return readStatementText(EMBEDDED_SQL_DIR, file, omit);
	return renderForTable(
		EMBEDDED_SQL_DIR,
		file,
		defaultTable,
		table,
		(indexSuffix) => (indexSuffix ? `"${table}_${indexSuffix}"` : `"${table}"`),
		omit,
	);
}

/** A statement of `sql/embedded/queries/`, for the given table. */
export function renderEmbeddedStatement(name: EmbeddedStatement, family: EmbeddedFamily, table?: string, omit?: SqlSection): string {
	return renderEmbeddedSql(statementFile(name), family, table, omit);
}
