import { NodeOperationError, type IExecuteFunctions } from 'n8n-workflow';
import type { Pool } from 'pg';

import { openEmbeddedKeyStore, openEmbeddedOrderStore } from '../../lib/store/embedded';
import type { ConnectionSettings } from '../../lib/store/postgres/connectionSettings';
import { poolFor } from '../../lib/store/postgres/pool';
import { PostgresKeyStore, PostgresOrderStore, type StoreOptions } from '../../lib/store/postgres/stores';
import type { KeyStore, OrderStore, StoreBackend } from '../../lib/store/contract';
import { DEFAULT_ORDER_TABLE, DEFAULT_SCHEMA, DEFAULT_TABLE } from '../../lib/store/rules';
import { CREDENTIAL_TYPE, connectionSettings } from './credential';
import { embeddedFileFor } from './embeddedFile';
import { isN8nDatabaseUnreachable } from './n8nDatabaseUnreachable';

export interface TableChoice {
	tableName?: string;
	schemaName?: string;
	createTable?: boolean;
}

/** The connection settings this process last read for each credential, by credential id. */
const lastReadSettings = new Map<string, ConnectionSettings>();

/** What reading the node's Postgres credential needs: an execution's context, or a trigger's. */
export type CredentialContext = Pick<IExecuteFunctions, 'getNode' | 'getCredentials'>;

/** The pool for this node's credential, shared across executions. */
export async function credentialPool(context: CredentialContext): Promise<Pool> {
	return poolFor(await credentialSettings(context));
}

/**
 * The node's credential as connection settings. n8n reads a credential from its own database at
 * every call, and that database is often the very server that holds the keys: when n8n's database
 * cannot be reached (isN8nDatabaseUnreachable), the settings this process last read for the same
 * credential are used. A Settle after the business step then reaches the keys (or retries them)
 * instead of giving up at once while the effect has happened. Any other failure is n8n refusing
 * the credential (deleted, not shared, a policy, …): it stands, and the keys are not touched.
 */
async function credentialSettings(context: CredentialContext): Promise<ConnectionSettings> {
	const id = context.getNode().credentials?.[CREDENTIAL_TYPE]?.id;
	try {
		const settings = connectionSettings(await context.getCredentials(CREDENTIAL_TYPE));
		if (id) lastReadSettings.set(id, settings);
		return settings;
	} catch (error) {
		if (id && isN8nDatabaseUnreachable(error)) {
			const lastRead = lastReadSettings.get(id);
			if (lastRead) return lastRead;
		} else if (id) {
			// Refused once, never used again from memory: a later outage must not revive it.
			lastReadSettings.delete(id);
		}
		throw new NodeOperationError(context.getNode(), error as Error);
	}
}

/** The node's table options with the package's defaults filled in. */
export function tableOptions(table: TableChoice, defaultTable = DEFAULT_TABLE): StoreOptions {
	return {
		table: table.tableName || defaultTable,
		schema: table.schemaName || DEFAULT_SCHEMA,
		// n8n leaves an option the user never added out of the collection: absent means the default, on.
		createTable: table.createTable !== false,
	};
}

/**
 * The node's Store parameter. n8n fills in the default of the node's version (nodes/shared/storeChoice.ts);
 * a node without the parameter (a context that does not know it) keeps the keys where they always were: Postgres.
 */
export function storeChoice(context: IExecuteFunctions): StoreBackend {
	return context.getNodeParameter('store', 0, 'postgres') === 'embedded' ? 'embedded' : 'postgres';
}

/** The key store the node's Store parameter picks; a Postgres pool is shared across executions. */
export async function storeFor(context: IExecuteFunctions, table: TableChoice): Promise<KeyStore> {
	return await keyStoreOn(storeChoice(context), context, () => embeddedFileFor(context), table);
}

/** The key store on a backend; `embeddedFile` is asked only for the embedded store. */
export async function keyStoreOn(
	backend: StoreBackend,
	context: CredentialContext,
	embeddedFile: () => string,
	table: TableChoice,
): Promise<KeyStore> {
	if (backend === 'embedded') {
		// The embedded file has no schemas, and its table is always created: only the table name applies.
		return openEmbeddedKeyStore({ file: embeddedFile(), table: table.tableName || DEFAULT_TABLE });
	}
	return new PostgresKeyStore(await credentialPool(context), tableOptions(table));
}

/** The Order Guard's store the node's Store parameter picks. */
export async function orderStoreFor(context: IExecuteFunctions, table: TableChoice): Promise<OrderStore> {
	if (storeChoice(context) === 'embedded') {
		return openEmbeddedOrderStore({ file: embeddedFileFor(context), table: table.tableName || DEFAULT_ORDER_TABLE });
	}
	return new PostgresOrderStore(await credentialPool(context), tableOptions(table, DEFAULT_ORDER_TABLE));
}
