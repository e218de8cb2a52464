import type { Pool } from 'pg';

import { InvalidConfigurationError, SchemaNewerThanPackageError, SchemaOutdatedError, TableMissingError } from '../../errors';
import type { TableRef } from '../../identifiers';
import { classifyPostgresError } from './errors';
import { recordDatabaseTime } from './databaseClock';
import { PostgresRunner, inTransaction, postgresCause } from './runner';
import { DEFAULT_TABLES, catalogStatement, renderSqlFile, type SqlFile, type TableFamily } from './statements';

/**
 * The ordered schema changes of one table family. File n (1-based) brings a table to version n and
 * ends by stamping it: `comment on table … is '<package> <family> schema version n'`.
 *
 * The version lives in the table's own comment, not in a metadata table: it travels with the table
 * (renames, pg_dump, several tables with custom names in one database need nothing shared), any
 * user who can see the table can read it (no extra grant for a DML-only user), and whoever can
 * migrate the table (its owner) can write it. A table with no stamp was made before versions
 * existed, by the first file or by hand (the seed recipe's table): it counts as version 1, which
 * the second file is written to upgrade from either. Every migration is idempotent
 * (`if not exists`), so a stamp that is too low only costs a replay; a stamp higher than the
 * package knows is refused.
 */
export interface MigrationSet {
	/** The table family, named in stamps and messages; its files are written for its default table. */
	family: TableFamily;
	files: readonly SqlFile[];
}

/** The Idempotency Order Guard's table (default object_versions): per object, the highest version applied. */
export const ORDER_MIGRATIONS: MigrationSet = {
	family: 'order',
	files: ['migrations/order/001_create_table.sql'],
};

export const KEYS_MIGRATIONS: MigrationSet = {
	family: 'keys',
	files: [
		'migrations/keys/001_create_table.sql',
		'migrations/keys/002_migrate_from_seed.sql',
		'migrations/keys/003_replay_evidence.sql',
		'migrations/keys/004_settle_scope.sql',
		'migrations/keys/005_answer_counts.sql',
		'migrations/keys/006_inbox.sql',
	],
};

/** Every table family the package manages; a new family (its own table) adds its set here. */
export const MIGRATION_SETS: readonly MigrationSet[] = [KEYS_MIGRATIONS, ORDER_MIGRATIONS];

const STAMP_PREFIX = 'n8n-nodes-idempotency';
const STAMP = /^n8n-nodes-idempotency (\w+) schema version (\d+)$/;

/** The comment text migration `version` of `family` stamps on its table. */
export function versionStamp(family: string, version: number): string {
	return `${STAMP_PREFIX} ${family} schema version ${version}`;
}

export interface SchemaState {
	exists: boolean;
	/** 0 when the table is missing; 1 when it carries no stamp (made before versions existed). */
	version: number;
}

const UNSTAMPED_VERSION = 1;

/** The table's schema state, read on `pool` (its answer also samples the database's clock for the pool). */
export async function readSchemaState(pool: Pool, table: TableRef, set: MigrationSet): Promise<SchemaState> {
	return readSchemaStateOn(PostgresRunner.onPool(pool), table, set, pool);
}

async function readSchemaStateOn(runner: PostgresRunner, table: TableRef, set: MigrationSet, clockOf?: Pool): Promise<SchemaState> {
	// The database's time comes along: settle retries compare lease ends with it (databaseClock.ts).
	const { rows } = await runner.run(catalogStatement('schemaState'), [table.qualified], { context: { table: table.qualified } });
	if (clockOf) recordDatabaseTime(clockOf, rows[0]?.database_now);
	const match = STAMP.exec(rows[0]?.stamp ?? '');
	if (match && match[1] !== set.family) {
		throw new InvalidConfigurationError(
			`The table ${table.qualified} belongs to another part of n8n-nodes-idempotency (${match[1]}), not the ${set.family} table: choose another table name.`,
		);
	}
	const exists = Boolean(rows[0]?.exists);
	return { exists, version: match ? Number(match[2]) : exists ? UNSTAMPED_VERSION : 0 };
}

/** The files still to run, in order, for a table at `version`. */
export function pendingMigrations(set: MigrationSet, version: number): SqlFile[] {
	return set.files.slice(version);
}

function refuseNewer(state: SchemaState, table: TableRef, set: MigrationSet): void {
	if (state.version > set.files.length) {
		throw new SchemaNewerThanPackageError(
			`The idempotency table ${table.qualified} is at schema version ${state.version}, newer than this n8n-nodes-idempotency knows (${set.files.length}): a newer version of the package changed it. Update the package on every n8n instance that uses this table; nothing was changed.`,
		);
	}
}

/** What to tell a user who must have a database owner run the files. */
function filesToRun(table: TableRef, set: MigrationSet, files: SqlFile[]): string {
	const defaultTable = DEFAULT_TABLES[set.family];
	const custom = table.qualified === `"public"."${defaultTable}"` ? '' : ` (they name public.${defaultTable}: use ${table.qualified})`;
	return `Ask a database owner to run, in order, ${files.map((file) => `sql/postgres/${file}`).join(', ')} from the n8n-nodes-idempotency package${custom}.`;
}

function notReady(state: SchemaState, table: TableRef, set: MigrationSet, reason: string, cause?: unknown) {
	const files = pendingMigrations(set, state.version);
	return state.exists
		? new SchemaOutdatedError(
				`The idempotency table ${table.qualified} is at schema version ${state.version}, this package needs ${set.files.length}; ${reason}. ${filesToRun(table, set, files)} Existing keys are kept.`,
				{ cause },
			)
		: new TableMissingError(`The idempotency table ${table.qualified} does not exist; ${reason}. ${filesToRun(table, set, files)}`, {
				cause,
			});
}

function schemaMissing(table: TableRef, cause: unknown) {
	return new InvalidConfigurationError(
		`The schema "${table.schema}" does not exist, so the idempotency table cannot be created: create the schema (create schema ${table.schema}) or choose another one in the node's options.`,
		{ cause },
	);
}

const INSUFFICIENT_PRIVILEGE = '42501';
const INVALID_SCHEMA_NAME = '3F000';

/**
 * Brings the table to the package's schema version. `migrate` false only checks (and says which
 * files to run). Concurrent callers, in this process or others, serialise on an advisory lock
 * keyed by the table name, and each re-reads the version under it, so every migration runs once.
 */
export async function ensureSchema(pool: Pool, table: TableRef, set: MigrationSet, migrate: boolean): Promise<void> {
	const before = await readSchemaState(pool, table, set);
	refuseNewer(before, table, set);
	if (before.version === set.files.length) return;
	if (!migrate) throw notReady(before, table, set, 'the node option "Create or Upgrade Table" is off');

	let state = before;
	const context = { table: table.qualified };
	try {
		await inTransaction(
			pool,
			async (runner) => {
				// Concurrent CREATE ... IF NOT EXISTS can still collide in the catalog; serialise them.
				await runner.run(catalogStatement('migrationLock'), [table.qualified], { context });
				state = await readSchemaStateOn(runner, table, set);
				refuseNewer(state, table, set);
				for (const file of pendingMigrations(set, state.version)) await runner.run(renderSqlFile(file, set.family, table), [], { context });
			},
			context,
		);
	} catch (error) {
		const code = (postgresCause(error) as { code?: unknown } | null)?.code;
		if (code === INSUFFICIENT_PRIVILEGE) {
			throw notReady(state, table, set, 'the database user lacks the right to create or change it', postgresCause(error));
		}
		if (code === INVALID_SCHEMA_NAME) throw schemaMissing(table, postgresCause(error));
		throw classifyPostgresError(error, { table: table.qualified });
	}
}
