import type { IExecuteFunctions } from 'n8n-workflow';

import { poolFor } from '../../lib/postgres/pool';
import { DEFAULT_SCHEMA, DEFAULT_TABLE, IdempotencyStore } from '../../lib/store';
import { CREDENTIAL_TYPE, connectionSettings } from './credential';

export interface TableChoice {
	tableName?: string;
	schemaName?: string;
	createTable?: boolean;
}

/** The store for this node's credential and table options; the pool is shared across executions. */
export async function storeFor(context: IExecuteFunctions, table: TableChoice): Promise<IdempotencyStore> {
	const credential = await context.getCredentials(CREDENTIAL_TYPE);
	return new IdempotencyStore(poolFor(connectionSettings(credential)), {
		table: table.tableName || DEFAULT_TABLE,
		schema: table.schemaName || DEFAULT_SCHEMA,
		// n8n leaves an option the user never added out of the collection: absent means the default, on.
		createTable: table.createTable !== false,
	});
}
