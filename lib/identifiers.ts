import { InvalidConfigurationError } from './errors';

// Letters, digits and underscores, not starting with a digit. Stricter than Postgres on purpose:
// names come from node options, and anything else is far more likely a mistake or an attack.
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

// Postgres truncates identifiers at 63 bytes; index and companion table names append up to 22 characters to the table name.
export const MAX_TABLE_NAME_LENGTH = 40;
export const MAX_SCHEMA_NAME_LENGTH = 63;

/** Validates a table or schema name and returns it double-quoted. Throws InvalidConfigurationError. */
export function quoteIdentifier(name: string, what: 'table' | 'schema'): string {
	const maxLength = what === 'table' ? MAX_TABLE_NAME_LENGTH : MAX_SCHEMA_NAME_LENGTH;
	if (typeof name !== 'string' || !IDENTIFIER.test(name) || name.length > maxLength) {
		throw new InvalidConfigurationError(
			`Invalid ${what} name ${JSON.stringify(String(name).slice(0, 80))}: use 1–${maxLength} letters, digits or underscores, not starting with a digit.`,
		);
	}
	return `"${name}"`;
}

/** A validated, quoted table reference and the names derived from it. */
export interface TableRef {
	/** `"schema"."table"`, safe to splice into SQL. */
	qualified: string;
	/** Quoted names for the table's indexes, derived from the table name. */
	indexName: (suffix: string) => string;
	/** `"schema"."<table>_<suffix>"`: a table that belongs to this one (its answer counts). */
	companion: (suffix: string) => string;
	schema: string;
	table: string;
}

export function tableRef(schema: string, table: string): TableRef {
	const quotedSchema = quoteIdentifier(schema, 'schema');
	const quotedTable = quoteIdentifier(table, 'table');
	return {
		qualified: `${quotedSchema}.${quotedTable}`,
		indexName: (suffix) => `"${table}_${suffix}"`,
		companion: (suffix) => `${quotedSchema}."${table}_${suffix}"`,
		schema,
		table,
	};
}
