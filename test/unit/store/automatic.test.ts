import path from 'node:path';
import { tmpdir } from 'node:os';

import { AutomaticStoreRefusedError, automaticStore } from '../../../lib/store/automatic';

// Store: Automatic's choice: the embedded file on one process, n8n's own Postgres in queue mode,
// and a refusal that names the fix wherever neither is safe.

const N8N_ON_POSTGRES = {
	DB_TYPE: 'postgresdb',
	DB_POSTGRESDB_HOST: 'db.internal',
	DB_POSTGRESDB_DATABASE: 'automation',
	DB_POSTGRESDB_USER: 'n8n_app',
	DB_POSTGRESDB_PASSWORD: 'secret-password',
	DB_POSTGRESDB_SCHEMA: 'automation',
	DB_POSTGRESDB_POOL_SIZE: '4',
};

describe('automaticStore', () => {
	it('picks the embedded file when n8n runs as one process, whatever its database', () => {
		expect(automaticStore({ queueMode: false, env: {} })).toEqual({ backend: 'embedded' });
		expect(automaticStore({ queueMode: false, env: N8N_ON_POSTGRES })).toEqual({ backend: 'embedded' });
		// Its settings are not even read: one broken _FILE does not stop a single process.
		expect(automaticStore({ queueMode: false, env: { DB_POSTGRESDB_PASSWORD_FILE: '/no/such/file' } })).toEqual({ backend: 'embedded' });
	});

	it("picks n8n's own Postgres in queue mode: n8n's connection, schema and table prefix", () => {
		const choice = automaticStore({ queueMode: true, env: { ...N8N_ON_POSTGRES, DB_TABLE_PREFIX: 'n8n_' } });
		expect(choice).toEqual({
			backend: 'postgres',
			connection: expect.objectContaining({
				host: 'db.internal',
				port: 5432,
				database: 'automation',
				user: 'n8n_app',
				password: 'secret-password',
				ssl: 'disable',
				maxConnections: 4,
				connectTimeoutMs: 20_000,
			}),
			schema: 'automation',
			tablePrefix: 'n8n_',
		});
	});

	it.each([
		['no DB_TYPE (n8n defaults to SQLite)', {}, /n8n's database here is sqlite \(DB_TYPE\), not Postgres/],
		['DB_TYPE=sqlite', { DB_TYPE: 'sqlite' }, /here is sqlite/],
		['DB_TYPE=mysqldb (n8n 1.x)', { DB_TYPE: 'mysqldb' }, /here is mysqldb/],
	])('refuses queue mode on a database that is not Postgres: %s', (_name, env, reason) => {
		const choose = () => automaticStore({ queueMode: true, env });
		expect(choose).toThrow(AutomaticStoreRefusedError);
		expect(choose).toThrow(reason);
		expect(choose).toThrow(/Nothing was reserved\. Run n8n on Postgres \(DB_TYPE=postgresdb.*or set Store to Postgres with a credential/);
	});

	it('refuses queue mode when a _FILE cannot be read, naming it, never a value', () => {
		const missing = path.join(tmpdir(), 'no-such-n8n-secret');
		const choose = () =>
			automaticStore({
				queueMode: true,
				env: { ...N8N_ON_POSTGRES, DB_POSTGRESDB_PASSWORD: undefined, DB_POSTGRESDB_PASSWORD_FILE: missing },
			});
		expect(choose).toThrow(AutomaticStoreRefusedError);
		expect(choose).toThrow(
			`cannot read n8n's database settings: DB_POSTGRESDB_PASSWORD_FILE names ${missing}, which cannot be read (ENOENT)`,
		);
		expect(choose).toThrow(/Nothing was reserved\. Make the settings readable/);
	});

	it.each([
		['an empty host', { DB_POSTGRESDB_HOST: '' }, /DB_POSTGRESDB_HOST is empty/],
		['an empty database', { DB_POSTGRESDB_DATABASE: '' }, /DB_POSTGRESDB_DATABASE is empty/],
		['an empty user', { DB_POSTGRESDB_USER: '' }, /DB_POSTGRESDB_USER is empty/],
		['port 0', { DB_POSTGRESDB_PORT: '0' }, /DB_POSTGRESDB_PORT is 0/],
		['port 70000', { DB_POSTGRESDB_PORT: '70000' }, /DB_POSTGRESDB_PORT is 70000/],
		['a pool of 0', { DB_POSTGRESDB_POOL_SIZE: '0' }, /DB_POSTGRESDB_POOL_SIZE is 0/],
		['a negative connection timeout', { DB_POSTGRESDB_CONNECTION_TIMEOUT: '-1' }, /DB_POSTGRESDB_CONNECTION_TIMEOUT is -1/],
		['a schema the package cannot quote', { DB_POSTGRESDB_SCHEMA: 'n8n-prod' }, /the schema "n8n-prod" \(DB_POSTGRESDB_SCHEMA\)/],
		['a table prefix with a dash', { DB_TABLE_PREFIX: 'n8n-' }, /the table prefix "n8n-" \(DB_TABLE_PREFIX\)/],
		['a table prefix starting with a digit', { DB_TABLE_PREFIX: '1_' }, /the table prefix "1_"/],
	])("refuses n8n's Postgres settings the store cannot use: %s", (_name, setting, reason) => {
		const choose = () => automaticStore({ queueMode: true, env: { ...N8N_ON_POSTGRES, ...setting } });
		expect(choose).toThrow(AutomaticStoreRefusedError);
		expect(choose).toThrow(reason);
	});

	it('never puts the password in a refusal', () => {
		try {
			automaticStore({ queueMode: true, env: { ...N8N_ON_POSTGRES, DB_POSTGRESDB_PORT: '0' } });
			throw new Error('not refused');
		} catch (error) {
			expect(error).toBeInstanceOf(AutomaticStoreRefusedError);
			expect((error as Error).message).not.toContain('secret-password');
		}
	});
});
