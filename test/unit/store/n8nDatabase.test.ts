import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import {
	N8N_DATABASE_DEFAULTS,
	n8nConnectionSettings,
	N8nDatabaseSettingsError,
	readN8nDatabaseSettings,
	type Environment,
	type N8nDatabaseSettings,
} from '../../../lib/store/postgres/n8nDatabase';
import { CONNECT_TIMEOUT_MS, toPoolConfig } from '../../../lib/store/postgres/connectionSettings';
import { CACHE_DIR } from '../../support/stack/cache';
import { n8nRequired, PROVEN_N8N_VERSIONS } from '../../support/stack/n8nVersion';
import type { OracleAnswer } from '../../support/n8nDatabaseOracle';

// n8n's own database settings, read as n8n reads them: every variable, its _FILE form, n8n's
// defaults, and (where n8n is installed) the very answers n8n's own code gives for the same environment.

let folder: string;
beforeAll(() => {
	folder = mkdtempSync(path.join(tmpdir(), 'n8n-database-settings-'));
});
afterAll(() => rmSync(folder, { recursive: true, force: true }));

let fileCount = 0;
/** A file holding `content`, as a Docker or Kubernetes secret would be mounted. */
function secretFile(content: string): string {
	const file = path.join(folder, `secret-${++fileCount}`);
	writeFileSync(file, content);
	return file;
}

const PEM_CA = '-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----';
const PEM_CERT = '-----BEGIN CERTIFICATE-----\nCLIENT\n-----END CERTIFICATE-----';
const PEM_KEY = '-----BEGIN PRIVATE KEY-----\nKEY\n-----END PRIVATE KEY-----';

/** Every variable the reader reads, a value for it, and where the value lands. */
const EVERY_SETTING: Array<[string, string, (settings: N8nDatabaseSettings) => unknown, unknown]> = [
	['DB_TYPE', 'postgresdb', (s) => s.type, 'postgresdb'],
	['DB_TABLE_PREFIX', 'n8n_', (s) => s.tablePrefix, 'n8n_'],
	['DB_POSTGRESDB_HOST', 'db.internal', (s) => s.postgresdb.host, 'db.internal'],
	['DB_POSTGRESDB_PORT', '6543', (s) => s.postgresdb.port, 6543],
	['DB_POSTGRESDB_DATABASE', 'automation', (s) => s.postgresdb.database, 'automation'],
	['DB_POSTGRESDB_USER', 'n8n_app', (s) => s.postgresdb.user, 'n8n_app'],
	['DB_POSTGRESDB_PASSWORD', 'pa ss#word', (s) => s.postgresdb.password, 'pa ss#word'],
	['DB_POSTGRESDB_SCHEMA', 'automation', (s) => s.postgresdb.schema, 'automation'],
	['DB_POSTGRESDB_POOL_SIZE', '7', (s) => s.postgresdb.poolSize, 7],
	['DB_POSTGRESDB_CONNECTION_TIMEOUT', '1500', (s) => s.postgresdb.connectionTimeoutMs, 1500],
	['DB_POSTGRESDB_SSL_ENABLED', 'true', (s) => s.postgresdb.ssl.enabled, true],
	['DB_POSTGRESDB_SSL_CA', PEM_CA, (s) => s.postgresdb.ssl.ca, PEM_CA],
	['DB_POSTGRESDB_SSL_CERT', PEM_CERT, (s) => s.postgresdb.ssl.cert, PEM_CERT],
	['DB_POSTGRESDB_SSL_KEY', PEM_KEY, (s) => s.postgresdb.ssl.key, PEM_KEY],
	['DB_POSTGRESDB_SSL_REJECT_UNAUTHORIZED', 'false', (s) => s.postgresdb.ssl.rejectUnauthorized, false],
];

describe('readN8nDatabaseSettings', () => {
	it("has n8n's defaults when nothing is set", () => {
		expect(readN8nDatabaseSettings({})).toEqual({
			type: 'sqlite',
			tablePrefix: '',
			postgresdb: {
				host: 'localhost',
				port: 5432,
				database: 'n8n',
				user: 'postgres',
				password: '',
				schema: 'public',
				poolSize: 2,
				connectionTimeoutMs: 20_000,
				ssl: { enabled: false, ca: '', cert: '', key: '', rejectUnauthorized: true },
			},
		});
		expect(N8N_DATABASE_DEFAULTS).toEqual(readN8nDatabaseSettings({}));
	});

	it.each(EVERY_SETTING)('reads %s from the environment', (name, value, read, expected) => {
		expect(read(readN8nDatabaseSettings({ [name]: value }))).toEqual(expected);
	});

	it.each(EVERY_SETTING)('reads %s_FILE: the file it names, trimmed', (name, value, read, expected) => {
		expect(read(readN8nDatabaseSettings({ [`${name}_FILE`]: secretFile(`  ${value}\n`) }))).toEqual(expected);
	});

	it('prefers the variable to its _FILE, even when the variable is empty', () => {
		const file = secretFile('from-file');
		expect(readN8nDatabaseSettings({ DB_POSTGRESDB_PASSWORD: 'from-env', DB_POSTGRESDB_PASSWORD_FILE: file }).postgresdb.password).toBe(
			'from-env',
		);
		expect(readN8nDatabaseSettings({ DB_POSTGRESDB_PASSWORD: '', DB_POSTGRESDB_PASSWORD_FILE: file }).postgresdb.password).toBe('');
	});

	it('ignores an empty _FILE variable', () => {
		expect(readN8nDatabaseSettings({ DB_POSTGRESDB_HOST_FILE: '' }).postgresdb.host).toBe('localhost');
	});

	it('refuses a _FILE it cannot read, naming the variable and the path, never a value', () => {
		const missing = path.join(folder, 'no-such-secret');
		const read = () => readN8nDatabaseSettings({ DB_POSTGRESDB_PASSWORD: 'secret-value', DB_POSTGRESDB_HOST_FILE: missing });
		expect(read).toThrow(N8nDatabaseSettingsError);
		expect(read).toThrow(`DB_POSTGRESDB_HOST_FILE names ${missing}, which cannot be read (ENOENT)`);
		expect(read).not.toThrow(/secret-value/);
	});

	it('takes text as n8n does: outer spaces and one pair of matching quotes removed', () => {
		const { postgresdb } = readN8nDatabaseSettings({
			DB_POSTGRESDB_HOST: '  db.internal  ',
			DB_POSTGRESDB_USER: "'n8n_app'",
			DB_POSTGRESDB_PASSWORD: '"quoted"',
			DB_POSTGRESDB_DATABASE: '"mismatched\'',
		});
		expect(postgresdb).toMatchObject({ host: 'db.internal', user: 'n8n_app', password: 'quoted', database: '"mismatched\'' });
	});

	it.each([
		['6543', 6543],
		[' 6543 ', 6543],
		['', 5432],
		['   ', 5432],
		['port', 5432],
		["'6543'", 5432],
	])('reads the number %j as %p (n8n keeps the default for what Number() cannot read)', (value, expected) => {
		expect(readN8nDatabaseSettings({ DB_POSTGRESDB_PORT: value }).postgresdb.port).toBe(expected);
	});

	it.each([
		['true', true],
		['TRUE', true],
		['1', true],
		['false', false],
		['0', false],
		['yes', false],
		[' true', false],
	])('reads the boolean %j as %p (n8n keeps the default for anything but true/1/false/0)', (value, expected) => {
		expect(readN8nDatabaseSettings({ DB_POSTGRESDB_SSL_ENABLED: value }).postgresdb.ssl.enabled).toBe(expected);
	});

	it.each([
		['postgresdb', 'postgresdb'],
		[' postgresdb ', 'postgresdb'],
		['"postgresdb"', 'postgresdb'],
		['sqlite', 'sqlite'],
		['postgres', 'sqlite'],
		['mysqldb', 'mysqldb'],
		['mariadb', 'mariadb'],
	])('reads DB_TYPE %j as %p', (value, expected) => {
		expect(readN8nDatabaseSettings({ DB_TYPE: value }).type).toBe(expected);
	});

	it("refuses database settings kept in n8n 1.x's N8N_CONFIG_FILES, which it does not read", () => {
		const withDatabase = secretFile(JSON.stringify({ database: { type: 'postgresdb' } }));
		const withoutDatabase = secretFile(JSON.stringify({ executions: { mode: 'queue' } }));
		const unreadable = path.join(folder, 'no-such-config.json');
		expect(() => readN8nDatabaseSettings({ N8N_CONFIG_FILES: `${withoutDatabase},${withDatabase}` })).toThrow(
			new RegExp(`configured in ${withDatabase} \\(N8N_CONFIG_FILES\\)`),
		);
		expect(readN8nDatabaseSettings({ N8N_CONFIG_FILES: `${withoutDatabase},${unreadable}` }).type).toBe('sqlite');
	});
});

describe('n8nConnectionSettings', () => {
	const postgres = (environment: Environment) => toPoolConfig(n8nConnectionSettings(readN8nDatabaseSettings(environment)));

	it("connects where n8n does, with n8n's pool size and connection timeout", () => {
		const config = postgres({
			DB_POSTGRESDB_HOST: 'db.internal',
			DB_POSTGRESDB_PORT: '6543',
			DB_POSTGRESDB_DATABASE: 'automation',
			DB_POSTGRESDB_USER: 'n8n_app',
			DB_POSTGRESDB_PASSWORD: 'secret',
			DB_POSTGRESDB_POOL_SIZE: '7',
			DB_POSTGRESDB_CONNECTION_TIMEOUT: '1500',
		});
		expect(config).toMatchObject({
			host: 'db.internal',
			port: 6543,
			database: 'automation',
			user: 'n8n_app',
			password: 'secret',
			max: 7,
			connectionTimeoutMillis: 1500,
		});
	});

	it('keeps its own connection limit where n8n waits without one (0)', () => {
		expect(postgres({ DB_POSTGRESDB_CONNECTION_TIMEOUT: '0' }).connectionTimeoutMillis).toBe(CONNECT_TIMEOUT_MS);
	});

	it.each([
		['nothing set: no SSL', {}, false],
		['enabled alone: verified against the system authorities', { DB_POSTGRESDB_SSL_ENABLED: 'true' }, { rejectUnauthorized: true }],
		['a CA turns SSL on, even when not enabled', { DB_POSTGRESDB_SSL_CA: PEM_CA }, { rejectUnauthorized: true, ca: PEM_CA }],
		[
			'a client certificate and key',
			{ DB_POSTGRESDB_SSL_ENABLED: 'true', DB_POSTGRESDB_SSL_CERT: PEM_CERT, DB_POSTGRESDB_SSL_KEY: PEM_KEY },
			{ rejectUnauthorized: true, cert: PEM_CERT, key: PEM_KEY },
		],
		['not rejecting an unverified server turns SSL on', { DB_POSTGRESDB_SSL_REJECT_UNAUTHORIZED: 'false' }, { rejectUnauthorized: false }],
		[
			'every SSL setting',
			{
				DB_POSTGRESDB_SSL_ENABLED: 'true',
				DB_POSTGRESDB_SSL_CA: PEM_CA,
				DB_POSTGRESDB_SSL_CERT: PEM_CERT,
				DB_POSTGRESDB_SSL_KEY: PEM_KEY,
				DB_POSTGRESDB_SSL_REJECT_UNAUTHORIZED: 'false',
			},
			{ rejectUnauthorized: false, ca: PEM_CA, cert: PEM_CERT, key: PEM_KEY },
		],
	])('SSL: %s', (_name, environment, expected) => {
		expect(postgres(environment).ssl).toEqual(expected);
	});
});

/** n8n's installs in the harness's cache, by version: the oracle runs where one is there. */
function installedN8n(version: string): string | undefined {
	if (!existsSync(CACHE_DIR)) return undefined;
	const folderName = readdirSync(CACHE_DIR).find((name) => name.startsWith(`n8n-${version}-node-`) && !name.endsWith('.lock'));
	const directory = folderName && path.join(CACHE_DIR, folderName);
	return directory && existsSync(path.join(directory, '.complete')) ? directory : undefined;
}

function n8nAnswers(directory: string, environments: Environment[]): OracleAnswer[] {
	const oracle = path.join(__dirname, '..', '..', 'support', 'n8nDatabaseOracle.ts');
	const register = path.join(__dirname, '..', '..', 'support', 'register-ts.js');
	const result = spawnSync(process.execPath, ['-r', register, oracle, directory], {
		input: JSON.stringify(environments),
		encoding: 'utf8',
		maxBuffer: 16 * 1024 * 1024,
	});
	if (result.status !== 0) throw new Error(`n8n's reading failed: ${result.stderr.slice(-2000)}`);
	return JSON.parse(result.stdout) as OracleAnswer[];
}

/** The package's answer in the oracle's terms: what it would connect with. */
function packageAnswer(environment: Environment): OracleAnswer {
	let settings: N8nDatabaseSettings;
	try {
		settings = readN8nDatabaseSettings(environment);
	} catch (error) {
		return { error: (error as Error).message };
	}
	const connection = n8nConnectionSettings(settings);
	const { postgresdb } = settings;
	return {
		type: settings.type,
		tablePrefix: settings.tablePrefix,
		postgres: {
			host: postgresdb.host,
			port: postgresdb.port,
			database: postgresdb.database,
			username: postgresdb.user,
			password: postgresdb.password,
			schema: postgresdb.schema,
			poolSize: connection.maxConnections,
			connectTimeoutMS: postgresdb.connectionTimeoutMs,
			ssl: toPoolConfig({ ...connection, host: 'h', database: 'd', user: 'u', port: 1, maxConnections: 1 }).ssl,
		},
	};
}

/** Environments that exercise every setting and every rule of n8n's reading. */
function environments(): Array<[string, Environment]> {
	const everyInFiles = Object.fromEntries(EVERY_SETTING.map(([name, value]) => [`${name}_FILE`, secretFile(` ${value}\n\n`)]));
	return [
		['nothing set', {}],
		['every setting', Object.fromEntries(EVERY_SETTING.map(([name, value]) => [name, value]))],
		['every setting from _FILE', everyInFiles],
		['variables before _FILE', { DB_POSTGRESDB_PASSWORD: '', DB_POSTGRESDB_PASSWORD_FILE: secretFile('x'), DB_POSTGRESDB_HOST_FILE: '' }],
		['an unreadable _FILE', { DB_POSTGRESDB_PASSWORD_FILE: path.join(folder, 'no-such-secret') }],
		['quotes and spaces', { DB_POSTGRESDB_HOST: " 'db' ", DB_POSTGRESDB_USER: '"u"', DB_TABLE_PREFIX: "'p_'", DB_TYPE: '"postgresdb"' }],
		['numbers n8n cannot read', { DB_POSTGRESDB_PORT: 'port', DB_POSTGRESDB_POOL_SIZE: "'7'", DB_POSTGRESDB_CONNECTION_TIMEOUT: ' 1500 ' }],
		['booleans n8n cannot read', { DB_POSTGRESDB_SSL_ENABLED: 'yes', DB_POSTGRESDB_SSL_REJECT_UNAUTHORIZED: ' false' }],
		['booleans in other spellings', { DB_POSTGRESDB_SSL_ENABLED: 'TRUE', DB_POSTGRESDB_SSL_REJECT_UNAUTHORIZED: '0' }],
		['SSL enabled alone', { DB_TYPE: 'postgresdb', DB_POSTGRESDB_SSL_ENABLED: '1' }],
		['a CA without SSL enabled', { DB_POSTGRESDB_SSL_CA_FILE: secretFile(PEM_CA) }],
		['an unknown DB_TYPE', { DB_TYPE: 'postgres' }],
	];
}

describe.each(PROVEN_N8N_VERSIONS)("the package's reading next to n8n %s's own", (version) => {
	const directory = installedN8n(version);
	const itWithN8n = directory || n8nRequired(version) ? it : it.skip;

	itWithN8n('gives the same connection for every environment', () => {
		const cases = environments();
		const theirs = n8nAnswers(
			directory!,
			cases.map(([, environment]) => environment),
		);
		cases.forEach(([name, environment], index) => {
			const ours = packageAnswer(environment);
			const n8n = theirs[index];
			if (n8n.error !== undefined || ours.error !== undefined) {
				expect([name, ours.error !== undefined]).toEqual([name, n8n.error !== undefined]);
				return;
			}
			// pg's `ssl: true` is TLS with Node's defaults: the server verified (rejectUnauthorized true).
			const ssl = n8n.postgres!.ssl === true ? { rejectUnauthorized: true } : n8n.postgres!.ssl;
			expect([name, { ...ours, postgres: { ...ours.postgres } }]).toEqual([name, { ...n8n, postgres: { ...n8n.postgres, ssl } }]);
		});
	});
});
