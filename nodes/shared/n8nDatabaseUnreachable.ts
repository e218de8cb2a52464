import { ApplicationError, BaseError, DbConnectionTimeoutError, ExecutionBaseError } from 'n8n-workflow';

import { connectionFailureReason } from '../../lib/store/postgres/errors';

// Postgres cancelled n8n's own query (its statement timeout): the database is overloaded, not refusing.
const QUERY_CANCELED = '57014';

/**
 * Whether n8n's read of a credential failed only because n8n's own database could not be reached:
 * its connection refused, reset, terminated or timed out, the server shutting down or not accepting
 * connections, or n8n's query timing out. Only then may a node use the settings it last read.
 *
 * Every other failure is a decision n8n made and stands: the credential deleted or not found, not
 * shared with the workflow's project, unusable in workflows, blocked by a policy, an end user's
 * credential the trigger cannot use, external secrets it may not read, data that does not decrypt.
 * n8n raises those as its own errors (UserError, ExpressionError, OperationalError, NodeOperationError,
 * all under BaseError, ApplicationError or ExecutionBaseError), never carrying a connection code.
 *
 * What n8n's database layer throws: the `pg` error itself when no connection could be had (a code
 * such as ECONNREFUSED, an 08xxx or 57P0x SQLSTATE, or pg's "Connection terminated…" without a code),
 * TypeORM's QueryFailedError around it (`driverError`) when a query failed, and n8n's
 * DbConnectionTimeoutError (`cause`) when no connection came within its timeout.
 */
export function isN8nDatabaseUnreachable(error: unknown): boolean {
	if (error instanceof DbConnectionTimeoutError) return true;
	if (error instanceof BaseError || error instanceof ApplicationError || error instanceof ExecutionBaseError) return false;
	return databaseErrorsIn(error).some(
		(candidate) => connectionFailureReason(candidate) !== undefined || codeOf(candidate) === QUERY_CANCELED,
	);
}

/** The error and the driver error or cause it wraps (one level: n8n's database layer wraps once). */
function databaseErrorsIn(error: unknown): unknown[] {
	if (typeof error !== 'object' || error === null) return [];
	const { driverError, cause } = error as { driverError?: unknown; cause?: unknown };
	return [error, driverError, cause].filter((candidate) => typeof candidate === 'object' && candidate !== null);
}

function codeOf(error: unknown): string | undefined {
	const code = (error as { code?: unknown }).code;
	return typeof code === 'string' ? code : undefined;
}
