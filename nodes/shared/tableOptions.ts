import type { INodeProperties } from 'n8n-workflow';

import { DEFAULT_SCHEMA, DEFAULT_TABLE } from '../../lib/store';

/** Where the idempotency table lives; shared by every node of the package. */
export const tableNameOption: INodeProperties = {
	displayName: 'Table Name',
	name: 'tableName',
	type: 'string',
	default: DEFAULT_TABLE,
	description: 'Letters, digits and underscores only (validated, then quoted)',
};

export const schemaNameOption: INodeProperties = {
	displayName: 'Schema',
	name: 'schemaName',
	type: 'string',
	default: DEFAULT_SCHEMA,
	description: 'Letters, digits and underscores only (validated, then quoted)',
};
