import { IdempotencyError } from '../../errors';
import { MAX_SCHEMA_NAME_LENGTH } from '../../identifiers';
import type { ConnectionSettings } from '../postgres/connectionSettings';
import {
	n8nConnectionSettings,
	N8nDatabaseSettingsError,
	readN8nDatabaseSettings,
	type Environment,
	type N8nDatabaseSettings,
	type ReadTextFile,
} from '../postgres/n8nDatabase';

/*
 * Store: Automatic. Where n8n runs as one process, the embedded file on this host. In queue mode
 * (main, webhook processes and workers, possibly on several hosts) the keys must be where every
 * process reaches them at once: n8n's own Postgres, which all of them use already, in tables of the
 * package's own (processed_events by default, with n8n's table prefix, in n8n's schema), created on
 * first use. Where neither is safe the store is refused, with the fix: nothing is reserved.
 *
 *   n8n runs …                      | DB_TYPE     | Automatic keeps the keys in
 *   as one process                  | any         | the embedded file (n8n folder/storage/…)
 *   in queue mode                   | postgresdb  | n8n's Postgres, DB_POSTGRESDB_SCHEMA
 *   in queue mode                   | other       | refused (n8n's queue mode needs Postgres)
 *   in queue mode, settings unreadable (a _FILE) | refused
 */

export type AutomaticChoice =
	| { backend: 'embedded' }
	| {
			backend: 'postgres';
			/** The connection n8n itself opens. */
			connection: ConnectionSettings;
			/** n8n's schema (DB_POSTGRESDB_SCHEMA): the package's tables go there. */
			schema: string;
			/** n8n's table prefix (DB_TABLE_PREFIX): the package's tables carry it too, so two n8n instances sharing a schema keep their keys apart. */
			tablePrefix: string;
	  };

/** Store: Automatic found no safe store: nothing was reserved; the message names the fix. */
export class AutomaticStoreRefusedError extends IdempotencyError {}

export interface AutomaticStoreInput {
	/** Whether this n8n process runs in queue mode (as a main, webhook or worker process). */
	queueMode: boolean;
	env?: Environment;
	readFile?: ReadTextFile;
}

const NOTHING_RESERVED = 'Nothing was reserved.';
const OTHER_STORES = 'or set Store to Postgres with a credential.';
// What may go into a schema name the package quotes (lib/identifiers.ts), and into a table name once prefixed.
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
const PREFIX = /^([A-Za-z_][A-Za-z0-9_]*)?$/;
const MAX_PREFIX_LENGTH = 20;

/** The store Automatic picks in this process. Throws AutomaticStoreRefusedError where none is safe. */
export function automaticStore({ queueMode, env = process.env, readFile }: AutomaticStoreInput): AutomaticChoice {
	if (!queueMode) return { backend: 'embedded' };
	const settings = readableSettings(env, readFile);
	if (settings.type !== 'postgresdb') {
		refuse(
			`Store: Automatic keeps the keys in n8n's own Postgres when n8n runs in queue mode, but n8n's database here is ${settings.type} (DB_TYPE), not Postgres; a file on one host would not be shared by processes on others. ${NOTHING_RESERVED} Run n8n on Postgres (DB_TYPE=postgresdb, which n8n's queue mode needs), ${OTHER_STORES}`,
		);
	}
	const problem = unusableSetting(settings);
	if (problem) {
		refuse(
			`Store: Automatic cannot use n8n's Postgres settings: ${problem}. ${NOTHING_RESERVED} Correct the setting on every n8n process, ${OTHER_STORES}`,
		);
	}
	return {
		backend: 'postgres',
		connection: n8nConnectionSettings(settings),
		schema: settings.postgresdb.schema,
		tablePrefix: settings.tablePrefix,
	};
}

/** n8n's settings, or the refusal naming the one that cannot be read. */
function readableSettings(env: Environment, readFile: ReadTextFile | undefined): N8nDatabaseSettings {
	let unreadable: unknown;
	try {
		return readN8nDatabaseSettings(env, readFile);
	} catch (error) {
		unreadable = error;
	}
	// Only N8nDatabaseSettingsError is expected here; its message names the setting, never a value.
	const reason = unreadable instanceof N8nDatabaseSettingsError ? unreadable.message : 'an unexpected error';
	return refuse(
		`Store: Automatic cannot read n8n's database settings: ${reason}. ${NOTHING_RESERVED} Make the settings readable by every n8n process (as n8n read them when it started), ${OTHER_STORES}`,
		unreadable,
	);
}

function refuse(message: string, cause?: unknown): never {
	throw new AutomaticStoreRefusedError(message, { cause });
}

/** What in n8n's settings the package's store cannot work with; none when all is usable. */
function unusableSetting({ postgresdb, tablePrefix }: N8nDatabaseSettings): string | undefined {
	const { host, port, database, user, poolSize, connectionTimeoutMs, schema } = postgresdb;
	if (host === '') return 'DB_POSTGRESDB_HOST is empty';
	if (database === '') return 'DB_POSTGRESDB_DATABASE is empty';
	if (user === '') return 'DB_POSTGRESDB_USER is empty';
	if (!Number.isInteger(port) || port < 1 || port > 65535) return `DB_POSTGRESDB_PORT is ${port}, not a port from 1 to 65535`;
	if (!Number.isInteger(poolSize) || poolSize < 1 || poolSize > 1000)
		return `DB_POSTGRESDB_POOL_SIZE is ${poolSize}, not a whole number from 1 to 1000`;
	if (!(connectionTimeoutMs >= 0 && connectionTimeoutMs <= 3_600_000)) {
		return `DB_POSTGRESDB_CONNECTION_TIMEOUT is ${connectionTimeoutMs}, not 0 to 3,600,000 milliseconds`;
	}
	if (!IDENTIFIER.test(schema) || schema.length > MAX_SCHEMA_NAME_LENGTH) {
		return `the schema ${JSON.stringify(schema.slice(0, 80))} (DB_POSTGRESDB_SCHEMA) is not 1–${MAX_SCHEMA_NAME_LENGTH} letters, digits or underscores, as the package's table names must be`;
	}
	if (!PREFIX.test(tablePrefix) || tablePrefix.length > MAX_PREFIX_LENGTH) {
		return `the table prefix ${JSON.stringify(tablePrefix.slice(0, 80))} (DB_TABLE_PREFIX) is not at most ${MAX_PREFIX_LENGTH} letters, digits or underscores (not starting with a digit), as the package's table names must be`;
	}
	return undefined;
}
