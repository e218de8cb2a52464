import { readFileSync } from 'node:fs';

import { IdempotencyError } from '../../errors';
import type { ConnectionSettings } from './connectionSettings';

/*
 * n8n's own database settings, read from the environment exactly as n8n reads them (@n8n/config:
 * its DatabaseConfig and the Env decorator, the same in n8n 1.123 and 2.41):
 *
 * - `<VAR>` when it is set, even empty; else the file `<VAR>_FILE` names, its text trimmed;
 * - a text setting loses surrounding spaces and one pair of matching quotes;
 * - a number is `Number(value)`: empty or not a number keeps the default;
 * - a boolean is true/1 or false/0 (any case): anything else keeps the default;
 * - DB_TYPE outside n8n's list keeps the default, sqlite.
 *
 * n8n reads the environment after loading its `.env` file into it, so the nodes, which run in
 * n8n's process, see the same variables. n8n 1.x alone reads an empty number as 0 (it then cannot
 * connect to that port or pool); this reader keeps the default, as n8n 2.x does.
 */

/** The environment the settings come from (process.env in n8n). */
export type Environment = Readonly<Record<string, string | undefined>>;
/** Reads a file named by a `_FILE` variable as text; throws when it cannot. */
export type ReadTextFile = (file: string) => string;

export interface N8nSslSettings {
	/** DB_POSTGRESDB_SSL_ENABLED, default false. */
	enabled: boolean;
	/** DB_POSTGRESDB_SSL_CA: the certificate authority's PEM text, default none. */
	ca: string;
	/** DB_POSTGRESDB_SSL_CERT: a client certificate's PEM text, default none. */
	cert: string;
	/** DB_POSTGRESDB_SSL_KEY: the client certificate's key, PEM text, default none. */
	key: string;
	/** DB_POSTGRESDB_SSL_REJECT_UNAUTHORIZED, default true. */
	rejectUnauthorized: boolean;
}

export interface N8nPostgresSettings {
	host: string;
	port: number;
	database: string;
	user: string;
	password: string;
	schema: string;
	/** DB_POSTGRESDB_POOL_SIZE: connections per n8n process, default 2. */
	poolSize: number;
	/** DB_POSTGRESDB_CONNECTION_TIMEOUT in milliseconds, default 20,000; 0: n8n waits without limit. */
	connectionTimeoutMs: number;
	ssl: N8nSslSettings;
}

export interface N8nDatabaseSettings {
	/** DB_TYPE: sqlite (default) or postgresdb; mysqldb and mariadb on n8n 1.x. */
	type: string;
	/** DB_TABLE_PREFIX: put before the name of every n8n table, default none. */
	tablePrefix: string;
	postgresdb: N8nPostgresSettings;
}

/** n8n's defaults (@n8n/config's DatabaseConfig, PostgresConfig and PostgresSSLConfig). */
export const N8N_DATABASE_DEFAULTS: N8nDatabaseSettings = Object.freeze({
	type: 'sqlite',
	tablePrefix: '',
	postgresdb: Object.freeze({
		host: 'localhost',
		port: 5432,
		database: 'n8n',
		user: 'postgres',
		password: '',
		schema: 'public',
		poolSize: 2,
		connectionTimeoutMs: 20_000,
		ssl: Object.freeze({ enabled: false, ca: '', cert: '', key: '', rejectUnauthorized: true }),
	}),
});

/** The database types n8n 2.x accepts, and the two n8n 1.x adds. */
const DATABASE_TYPES = ['sqlite', 'postgresdb', 'mysqldb', 'mariadb'];

/** A setting n8n read at its start cannot be read now: a `_FILE` whose file is gone or unreadable, or settings kept elsewhere. */
export class N8nDatabaseSettingsError extends IdempotencyError {}

const readTextFile: ReadTextFile = (file) => readFileSync(file, 'utf8');

/** n8n's database settings from `env`. Throws N8nDatabaseSettingsError when a `_FILE` cannot be read. */
export function readN8nDatabaseSettings(env: Environment = process.env, readFile: ReadTextFile = readTextFile): N8nDatabaseSettings {
	refuseConfigFileSettings(env, readFile);
	const read = (name: string) => readVariable(env, readFile, name);
	const text = (name: string, fallback: string) => asText(read(name), fallback);
	const number = (name: string, fallback: number) => asNumber(read(name), fallback);
	const boolean = (name: string, fallback: boolean) => asBoolean(read(name), fallback);
	const defaults = N8N_DATABASE_DEFAULTS.postgresdb;
	const type = read('DB_TYPE');
	return {
		type: type !== undefined && DATABASE_TYPES.includes(normalized(type)) ? normalized(type) : N8N_DATABASE_DEFAULTS.type,
		tablePrefix: text('DB_TABLE_PREFIX', N8N_DATABASE_DEFAULTS.tablePrefix),
		postgresdb: {
			host: text('DB_POSTGRESDB_HOST', defaults.host),
			port: number('DB_POSTGRESDB_PORT', defaults.port),
			database: text('DB_POSTGRESDB_DATABASE', defaults.database),
			user: text('DB_POSTGRESDB_USER', defaults.user),
			password: text('DB_POSTGRESDB_PASSWORD', defaults.password),
			schema: text('DB_POSTGRESDB_SCHEMA', defaults.schema),
			poolSize: number('DB_POSTGRESDB_POOL_SIZE', defaults.poolSize),
			connectionTimeoutMs: number('DB_POSTGRESDB_CONNECTION_TIMEOUT', defaults.connectionTimeoutMs),
			ssl: {
				enabled: boolean('DB_POSTGRESDB_SSL_ENABLED', defaults.ssl.enabled),
				ca: text('DB_POSTGRESDB_SSL_CA', defaults.ssl.ca),
				cert: text('DB_POSTGRESDB_SSL_CERT', defaults.ssl.cert),
				key: text('DB_POSTGRESDB_SSL_KEY', defaults.ssl.key),
				rejectUnauthorized: boolean('DB_POSTGRESDB_SSL_REJECT_UNAUTHORIZED', defaults.ssl.rejectUnauthorized),
			},
		},
	};
}

/**
 * The connection n8n opens to its Postgres, as the package's Postgres store settings. SSL as n8n
 * sets it (@n8n/db's connection options): a CA, client certificate or key, or not rejecting an
 * unverified server, turns SSL on with those; else DB_POSTGRESDB_SSL_ENABLED alone, verified
 * against the system's authorities. The pool has n8n's size; a connection timeout of 0 (none)
 * leaves the package's own limit, as the package never waits without one.
 */
export function n8nConnectionSettings(settings: N8nDatabaseSettings): ConnectionSettings {
	const { host, port, database, user, password, poolSize, connectionTimeoutMs, ssl } = settings.postgresdb;
	const detailedSsl = ssl.ca !== '' || ssl.cert !== '' || ssl.key !== '' || !ssl.rejectUnauthorized;
	return {
		host,
		port,
		database,
		user,
		password,
		ssl: detailedSsl || ssl.enabled ? 'verify' : 'disable',
		...(ssl.ca ? { ca: ssl.ca } : {}),
		...(ssl.cert ? { cert: ssl.cert } : {}),
		...(ssl.key ? { key: ssl.key } : {}),
		allowUnauthorizedCerts: !ssl.rejectUnauthorized,
		maxConnections: poolSize,
		...(connectionTimeoutMs > 0 ? { connectTimeoutMs: connectionTimeoutMs } : {}),
	};
}

function readVariable(env: Environment, readFile: ReadTextFile, name: string): string | undefined {
	const value = env[name];
	if (value !== undefined) return value;
	const file = env[`${name}_FILE`];
	if (!file) return undefined;
	try {
		return readFile(file).trim();
	} catch (error) {
		throw unreadableFile(name, file, error);
	}
}

/** The path and the reason only: never the content, which may be a secret. */
function unreadableFile(name: string, file: string, error: unknown): N8nDatabaseSettingsError {
	const reason = (error as { code?: unknown }).code ?? (error as Error).message;
	return new N8nDatabaseSettingsError(`${name}_FILE names ${file}, which cannot be read (${String(reason)})`, { cause: error });
}

function normalized(value: string): string {
	return value.trim().replace(/^(['"])(.*)\1$/, '$2');
}

function asText(value: string | undefined, fallback: string): string {
	return value === undefined ? fallback : normalized(value);
}

function asNumber(value: string | undefined, fallback: number): number {
	if (value === undefined || normalized(value) === '') return fallback;
	const parsed = Number(value);
	return Number.isNaN(parsed) ? fallback : parsed;
}

function asBoolean(value: string | undefined, fallback: boolean): boolean {
	if (value === undefined) return fallback;
	const lower = value.toLowerCase();
	if (lower === 'true' || lower === '1') return true;
	if (lower === 'false' || lower === '0') return false;
	return fallback;
}

/**
 * n8n 1.x also takes settings from the JSON files N8N_CONFIG_FILES names, over the environment
 * (n8n 2 ignores them). A file there that sets the database is refused rather than half-read: the
 * package would connect where n8n does not. A file n8n cannot read or parse sets nothing (n8n skips it).
 */
function refuseConfigFileSettings(env: Environment, readFile: ReadTextFile): void {
	for (const file of (env.N8N_CONFIG_FILES ?? '').split(',').filter(Boolean)) {
		let database: unknown;
		try {
			database = (JSON.parse(readFile(file)) as { database?: unknown }).database;
		} catch {
			continue;
		}
		if (database !== undefined) {
			throw new N8nDatabaseSettingsError(
				`n8n's database is configured in ${file} (N8N_CONFIG_FILES), which the package does not read: set those settings as DB_* environment variables instead (n8n 2 reads only those)`,
			);
		}
	}
}
