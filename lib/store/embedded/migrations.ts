import { InvalidConfigurationError, SchemaNewerThanPackageError, SchemaOutdatedError, TableMissingError } from '../../errors';
import { namedStatement, read, withWriteLock, type EmbeddedConnection } from './connection';
import { EMBEDDED_MIGRATIONS, renderEmbeddedSql, type EmbeddedFamily } from './statements';

/*
 * A table's schema in the store file: its version is recorded in the file's own schema table
 * (the file's own tables are created when the file is opened, connection.ts), and the files of
 * `sql/embedded/migrations/<family>/` bring it to the package's version.
 */

/**
 * Brings one table to the package's schema version (once per connection and table; concurrent
 * first callers share the check). `migrate` false only checks, and the error says what is missing.
 */
export function ensureTable(
	connection: EmbeddedConnection,
	family: Exclude<EmbeddedFamily, 'file'>,
	table: string,
	migrate: boolean,
	lockWaitMs: number,
): Promise<void> {
	const cacheKey = `${family}:${table}`;
	let ready = connection.tablesReady.get(cacheKey);
	if (!ready) {
		ready = migrateTable(connection, family, table, migrate, lockWaitMs);
		connection.tablesReady.set(cacheKey, ready);
		// A failed check is tried again by the next call (the option or the file may have been fixed).
		ready.catch(() => connection.tablesReady.delete(cacheKey));
	}
	return ready;
}

async function migrateTable(
	connection: EmbeddedConnection,
	family: Exclude<EmbeddedFamily, 'file'>,
	table: string,
	migrate: boolean,
	lockWaitMs: number,
): Promise<void> {
	const files = EMBEDDED_MIGRATIONS[family];
	const state = () => {
		const row = namedStatement(connection, 'readSchemaVersion', 'file').get({ object: table });
		const exists = Number(namedStatement(connection, 'tableExists', 'file').get({ name: table })?.found ?? 0) > 0;
		if (row && row.family !== family) {
			throw new InvalidConfigurationError(
				`The table "${table}" in ${connection.file} belongs to another part of n8n-nodes-idempotency (${String(row.family)}), not the ${family} table: choose another table name.`,
			);
		}
		if (!row && exists) {
			throw new InvalidConfigurationError(
				`The file ${connection.file} already has a table "${table}" that n8n-nodes-idempotency did not create: choose another table name.`,
			);
		}
		const version = row && exists ? Number(row.version) : 0;
		if (version > files.length) {
			throw new SchemaNewerThanPackageError(
				`The table "${table}" in ${connection.file} is at schema version ${version}, newer than this n8n-nodes-idempotency knows (${files.length}): a newer version of the package changed it. Update the package on every n8n process that uses this file; nothing was changed.`,
			);
		}
		return version;
	};
	const wait = { lockWaitMs, operation: 'schema' as const };
	const before = await read(connection, wait, state);
	if (before === files.length) return;
	if (!migrate) {
		const message = `the node option "Create or Upgrade Table" is off. Turn it on (the default) so the store creates it.`;
		throw before === 0
			? new TableMissingError(`The table "${table}" does not exist in the embedded key store ${connection.file}; ${message}`)
			: new SchemaOutdatedError(
					`The table "${table}" in the embedded key store ${connection.file} is at schema version ${before}, this package needs ${files.length}; ${message} Existing keys are kept.`,
				);
	}
	await withWriteLock(connection, wait, () => {
		const current = state();
		for (const file of files.slice(current)) connection.db.exec(renderEmbeddedSql(file, family, table));
		namedStatement(connection, 'writeSchemaVersion', 'file').run({ object: table, family, version: files.length });
	});
}
