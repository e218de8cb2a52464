import {
	DatabaseAuthenticationError,
	DatabaseError,
	DatabaseUnavailableError,
	IdempotencyError,
	InvalidConfigurationError,
	SchemaOutdatedError,
	TableMissingError,
} from '../errors';

/** What a failed query was doing, so the error can name the table and the fix. */
export interface ErrorContext {
	table?: string;
}

// Postgres SQLSTATE codes this package gives a meaning to (https://www.postgresql.org/docs/current/errcodes-appendix.html).
const SQLSTATE = {
	undefinedTable: '42P01',
	undefinedColumn: '42703',
	invalidSchemaName: '3F000',
	invalidCatalogName: '3D000',
	invalidPassword: '28P01',
	invalidAuthorization: '28000',
	insufficientPrivilege: '42501',
	tooManyConnections: '53300',
	cannotConnectNow: '57P03',
	adminShutdown: '57P01',
	crashShutdown: '57P02',
} as const;

// Node's socket error codes for a server that is not there, in words (n8n rewrites messages that
// contain the raw codes into generic ones).
const UNREACHABLE_CODES: Record<string, string> = {
	ECONNREFUSED: 'connection refused',
	ENOTFOUND: 'unknown host',
	EAI_AGAIN: 'host name lookup failed',
	ETIMEDOUT: 'timed out',
	ECONNRESET: 'connection reset',
	EHOSTUNREACH: 'host unreachable',
	ENETUNREACH: 'network unreachable',
};

function codeOf(error: unknown): string | undefined {
	const code = (error as { code?: unknown } | null)?.code;
	return typeof code === 'string' ? code : undefined;
}

/**
 * Turns a `pg` error into the package's error family. Messages name the fix and never
 * contain connection secrets or payloads.
 */
export function classifyPostgresError(error: unknown, context: ErrorContext = {}): IdempotencyError {
	if (error instanceof IdempotencyError) return error;
	const code = codeOf(error);
	const table = context.table ?? 'processed_events';
	const serverMessage = error instanceof Error ? error.message : String(error);

	switch (code) {
		case SQLSTATE.undefinedTable:
		case SQLSTATE.invalidSchemaName:
			return new TableMissingError(
				`The idempotency table ${table} does not exist. Turn on the node option "Create or Upgrade Table" (the default), or run the files in sql/migrations/keys/ of the n8n-nodes-idempotency package in order (with your schema and table name).`,
				{ cause: error },
			);
		case SQLSTATE.undefinedColumn:
			return new SchemaOutdatedError(
				`The idempotency table ${table} is missing columns (the hand-built recipe's two-column table?). Turn on the node option "Create or Upgrade Table" (the default), or run sql/migrations/keys/002_migrate_from_seed.sql once; existing keys are kept.`,
				{ cause: error },
			);
		case SQLSTATE.invalidPassword:
		case SQLSTATE.invalidAuthorization:
			return new DatabaseAuthenticationError(`Postgres rejected the credential: ${serverMessage}`, { cause: error });
		case SQLSTATE.invalidCatalogName:
			return new InvalidConfigurationError(`The database in the credential does not exist: ${serverMessage}`, { cause: error });
		case SQLSTATE.insufficientPrivilege:
			return new DatabaseAuthenticationError(
				`The Postgres user lacks a privilege on ${table} (needs SELECT, INSERT, UPDATE, DELETE): ${serverMessage}`,
				{ cause: error },
			);
		case SQLSTATE.tooManyConnections:
		case SQLSTATE.cannotConnectNow:
		case SQLSTATE.adminShutdown:
		case SQLSTATE.crashShutdown:
			return new DatabaseUnavailableError(`Postgres is not accepting connections: ${serverMessage}`, { cause: error });
	}
	const unreachable = code ? UNREACHABLE_CODES[code] : undefined;
	if (unreachable || /timeout|terminated unexpectedly|Connection terminated/i.test(serverMessage)) {
		return new DatabaseUnavailableError(`Postgres could not be reached (${unreachable ?? 'connection lost or timed out'}). Nothing was reserved.`, {
			cause: error,
		});
	}
	return new DatabaseError(`Postgres error${code ? ` ${code}` : ''}: ${serverMessage}`, { cause: error });
}
