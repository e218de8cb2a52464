import type { IExecuteFunctions } from 'n8n-workflow';
import type { Pool } from 'pg';

import { poolFor } from '../../lib/postgres/pool';
import { IdempotencyStore, type StoreOptions } from '../../lib/postgres/store';
import type { KeyStore } from '../../lib/store/contract';
import { DEFAULT_SCHEMA, DEFAULT_TABLE } from '../../lib/store/rules';
import { CREDENTIAL_TYPE, connectionSettings } from './credential';

export interface TableChoice {
	tableName?: string;
	schemaName?: string;
	createTable?: boolean;
}

/** The pool for this node's credential, shared across executions. */
export async function credentialPool(context: IExecuteFunctions): Promise<Pool> {
	return poolFor(connectionSettings(await context.getCredentials(CREDENTIAL_TYPE)));
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

/** The store for this node's credential and table options; the pool is shared across executions. */
export async function storeFor(context: IExecuteFunctions, table: TableChoice): Promise<KeyStore> {
	return new IdempotencyStore(await credentialPool(context), tableOptions(table));
}
