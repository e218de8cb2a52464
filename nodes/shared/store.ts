import { NodeOperationError, type IExecuteFunctions, type IWebhookFunctions } from 'n8n-workflow';
import type { Pool } from 'pg';

import { AutomaticStoreRefusedError, automaticStore, type AutomaticChoice } from '../../lib/store/automatic';
import { openEmbeddedKeyStore, openEmbeddedOrderStore } from '../../lib/store/embedded';
import type { ConnectionSettings } from '../../lib/store/postgres/connectionSettings';
import { poolFor } from '../../lib/store/postgres/pool';
import { PostgresKeyStore, PostgresOrderStore, type StoreOptions } from '../../lib/store/postgres/stores';
import type { KeyStore, OrderStore, StoreBackend } from '../../lib/store/contract';
import { DEFAULT_ORDER_TABLE, DEFAULT_SCHEMA, DEFAULT_TABLE } from '../../lib/store/rules';
import { KeptReads } from '../../lib/webhook/keptReads';
import { CREDENTIAL_TYPE, connectionSettings } from './credential';
import { embeddedFileFor, runsInQueueMode } from './embeddedFile';
import { isN8nDatabaseUnreachable } from './n8nDatabaseUnreachable';
import { toNodeError } from './nodeError';
import { storeSettingOf, type StoreSetting } from './storeChoice';

export interface TableChoice {
	tableName?: string;
	schemaName?: string;
	createTable?: boolean;
}

/** The connection settings this process last read for each credential, by credential id. */
const lastReadSettings = new Map<string, ConnectionSettings>();

/** What reading the node's Postgres credential needs: an execution's context, or a trigger's. */
export type CredentialContext = Pick<IExecuteFunctions, 'getNode' | 'getCredentials'>;

/** What opening a store needs: the credential's context, and n8n's log for a refusal the sender of a webhook is not told about. */
export type StoreContext = CredentialContext & Partial<Pick<IExecuteFunctions, 'logger'>>;

/** The pool for this node's credential, shared across executions. */
export async function credentialPool(context: CredentialContext): Promise<Pool> {
	return poolFor(await credentialSettings(context));
}

/** What a trigger's webhook() reads its credential with, and what names its kept copy. */
export type WebhookCredentialContext = CredentialContext & Pick<IWebhookFunctions, 'getMode' | 'getWorkflow'>;

/** Kept copies of the triggers' Postgres credentials, for this process (lib/webhook/keptReads.ts says how long). */
const keptConnectionSettings = new KeptReads<ConnectionSettings>();

/**
 * The pool for a trigger's webhook(): n8n reads a credential outside an execution with an
 * expression isolate of its own, so a production delivery uses the copy this process read within
 * the last second, as the signing secrets are kept (nodes/shared/signingSecret.ts). A call to the
 * editor's test URL reads the credential every time (the user may have just edited it).
 */
export async function keptCredentialPool(context: WebhookCredentialContext): Promise<Pool> {
	const credentialId = context.getNode().credentials?.[CREDENTIAL_TYPE]?.id;
	if (context.getMode() === 'manual' || !credentialId) return await credentialPool(context);
	const id = `${String(context.getWorkflow().id ?? '')}\u0000${context.getNode().id}\u0000${credentialId}`;
	return poolFor((await keptConnectionSettings.current(id, async () => await credentialSettings(context))).value);
}

/** Drops every kept copy: the next delivery of each trigger reads its Postgres credential. */
export function forgetKeptConnectionSettings(): void {
	keptConnectionSettings.clear();
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
export function storeChoice(context: IExecuteFunctions): StoreSetting {
	return storeSettingOf(context.getNodeParameter('store', 0, 'postgres'), 'postgres');
}

/** Where a setting keeps the keys in this process: the credential's Postgres, the embedded file, or n8n's own Postgres (Automatic). */
export type StorePlace = StoreBackend | 'n8nDatabase';

/** Where `setting` keeps the keys in this process, without opening anything: Automatic by queue mode alone. */
export function storePlaceOf(setting: StoreSetting): StorePlace {
	if (setting !== 'automatic') return setting;
	return runsInQueueMode() ? 'n8nDatabase' : 'embedded';
}

type N8nDatabaseChoice = Extract<AutomaticChoice, { backend: 'postgres' }>;

/** Where a setting keeps the keys, with what opening it needs: Automatic resolved (lib/store/automatic). */
type ResolvedStore = { place: 'embedded' } | { place: 'postgres' } | ({ place: 'n8nDatabase' } & N8nDatabaseChoice);

/**
 * A setting resolved in this process. Automatic's refusal is also written to n8n's log: a trigger
 * answers the sender only 503, and the operator needs the fix.
 */
function resolveStore(setting: StoreSetting, context: StoreContext): ResolvedStore {
	if (setting !== 'automatic') return { place: setting };
	let choice: AutomaticChoice;
	try {
		choice = automaticStore({ queueMode: runsInQueueMode() });
	} catch (error) {
		if (error instanceof AutomaticStoreRefusedError) context.logger?.warn(error.message, { node: context.getNode().name });
		throw toNodeError(context.getNode(), error);
	}
	return choice.backend === 'embedded' ? { place: 'embedded' } : { place: 'n8nDatabase', ...choice };
}

/** The key store the node's Store parameter picks; a Postgres pool is shared across executions. */
export async function storeFor(context: IExecuteFunctions, table: TableChoice): Promise<KeyStore> {
	return await keyStoreOn(storeChoice(context), context, () => embeddedFileFor(context), table);
}

/**
 * The key store of a Store setting; `embeddedFile` is asked only for the embedded store, and
 * `postgresPool` (the credential's pool, read now, by default) only for Postgres.
 */
export async function keyStoreOn(
	setting: StoreSetting,
	context: StoreContext,
	embeddedFile: () => string,
	table: TableChoice,
	postgresPool: () => Promise<Pool> = async () => await credentialPool(context),
): Promise<KeyStore> {
	const store = resolveStore(setting, context);
	switch (store.place) {
		case 'embedded':
			// The embedded file has no schemas, and its table is always created: only the table name applies.
			return openEmbeddedKeyStore({ file: embeddedFile(), table: table.tableName || DEFAULT_TABLE });
		case 'n8nDatabase':
			return new PostgresKeyStore(poolFor(store.connection), inN8nDatabase(store, table, DEFAULT_TABLE));
		case 'postgres':
			return new PostgresKeyStore(await postgresPool(), tableOptions(table));
	}
}

/** The Order Guard's store the node's Store parameter picks. */
export async function orderStoreFor(context: IExecuteFunctions, table: TableChoice): Promise<OrderStore> {
	const store = resolveStore(storeChoice(context), context);
	switch (store.place) {
		case 'embedded':
			return openEmbeddedOrderStore({ file: embeddedFileFor(context), table: table.tableName || DEFAULT_ORDER_TABLE });
		case 'n8nDatabase':
			return new PostgresOrderStore(poolFor(store.connection), inN8nDatabase(store, table, DEFAULT_ORDER_TABLE));
		case 'postgres':
			return new PostgresOrderStore(await credentialPool(context), tableOptions(table, DEFAULT_ORDER_TABLE));
	}
}

/**
 * The package's table in n8n's own database: in n8n's schema, named with n8n's table prefix, created
 * on first use (n8n's database user creates n8n's own tables, so it may create these).
 */
function inN8nDatabase(choice: N8nDatabaseChoice, table: TableChoice, defaultTable: string): StoreOptions {
	return { table: `${choice.tablePrefix}${table.tableName || defaultTable}`, schema: choice.schema, createTable: true };
}
