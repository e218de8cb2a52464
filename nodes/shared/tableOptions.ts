import type { INodeProperties } from 'n8n-workflow';

import { DEFAULT_SCHEMA, DEFAULT_TABLE } from '../../lib/store/rules';

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

/** On by default so the first run works; a user without DDL rights gets the files to run instead. */
export const createTableOption: INodeProperties = {
	displayName: 'Create or Upgrade Table',
	name: 'createTable',
	type: 'boolean',
	default: true,
	description:
		'Whether to create the table, or bring it to the schema version this package needs, on first use (the database user needs CREATE on the schema). Off: a missing or older table stops the node with the SQL files to run.',
};
