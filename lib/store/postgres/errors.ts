import {
	DatabaseAuthenticationError,
	DatabaseError,
	DatabaseUnreachableError,
	IdempotencyError,
	InvalidConfigurationError,
	LockTimeoutError,
	OutcomeUnknownError,
	SchemaOutdatedError,
	StatementTimeoutError,
	TableMissingError,
} from '../../errors';
import type { RetriedOperation } from '../driver';

/** The statement a failure interrupted, so the message can say what did (or may have) changed. */
export type Operation = RetriedOperation;

/** What a failed query was doing, so the error can name the table and the fix. */
export interface ErrorContext {
	table?: string;
	operation?: Operation;
	/** The statement was sent and its answer was lost: it may have been applied. */
	outcomeUnknown?: boolean;
}

// The state after a failure that certainly changed nothing, in the words of each operation.
const NOTHING_CHANGED: Record<Operation, string> = {
	reserve: 'Nothing was reserved.',
	complete: 'The key was not completed: it stays reserved until its lease ends, and a delivery after that runs the business step again.',
	release: 'Nothing was released: a redelivery reads In Progress until the lease ends.',
	fail: 'Nothing was marked failed: a redelivery reads In Progress until the lease ends.',
	hold: 'The lease was not extended: a delivery after it ends, while the execution still waits, runs the business step again.',
	claimForReplay: 'Nothing was claimed: the keys are as they were, and the next replay run tries them again.',
	claimDueInbox: 'No retry was claimed: the events are as they were, and the next look for due retries tries them again.',
};

// The state after a failure whose outcome is unknown: never claim nothing happened.
const MAYBE_CHANGED: Record<Operation, string> = {
	reserve:
		'The keys may have been reserved. If so, a redelivery reads In Progress until the lease ends (Lease mode) or Duplicate (Permanent mode: delete those keys by hand, or the event is never processed).',
	complete:
		'The key may or may not have been completed; if not, it stays reserved until its lease ends, and a delivery after that runs the business step again.',
	release: 'The key may or may not have been released; if not, a redelivery reads In Progress until the lease ends.',
	fail: 'The key may or may not have been marked failed; if not, a redelivery reads In Progress until the lease ends.',
	hold: 'The lease may or may not have been extended; if not, a delivery after it ends, while the execution still waits, runs the business step again.',
	claimForReplay:
		'The keys may have been claimed for this run; if so, they are held until the replay lease ends, and a replay run after that claims them again.',
	claimDueInbox:
		'Due retries may have been claimed; if so, they are held until their lease ends, and a look for due retries after that claims them again (an attempt each).',
};

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
	queryCanceled: '57014',
	lockNotAvailable: '55P03',
} as const;

// Server codes that mean the session (not the statement) is gone or cannot start.
const CONNECTION_SQLSTATES = new Set<string>([
	SQLSTATE.tooManyConnections,
	SQLSTATE.cannotConnectNow,
	SQLSTATE.adminShutdown,
	SQLSTATE.crashShutdown,
]);

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
	EPIPE: 'connection closed',
};

const LOST_CONNECTION = /terminated unexpectedly|Connection terminated|connection timeout|timeout exceeded when trying to connect/i;
const QUERY_READ_TIMEOUT = /Query read timeout/i;
// PgBouncer's answer to a startup parameter it does not know (statement_timeout, lock_timeout).
const UNSUPPORTED_STARTUP_PARAMETER = /unsupported startup parameter:\s*([a-z_]+)/i;

function refusedStartupParameter(error: unknown): string | undefined {
	const message = error instanceof Error ? error.message : String(error);
	return UNSUPPORTED_STARTUP_PARAMETER.exec(message)?.[1];
}

function codeOf(error: unknown): string | undefined {
	const code = (error as { code?: unknown } | null)?.code;
	return typeof code === 'string' ? code : undefined;
}

/**
 * Why a connection-class failure happened, in words; undefined when the error is not one (a
 * statement Postgres answered with an error, which was rolled back and is never worth retrying).
 */
export function connectionFailureReason(error: unknown): string | undefined {
	if (refusedStartupParameter(error)) return undefined;
	const code = codeOf(error);
	if (code && CONNECTION_SQLSTATES.has(code)) return 'Postgres is restarting or not accepting connections';
	if (code && code.startsWith('08')) return 'connection failure';
	const unreachable = code ? UNREACHABLE_CODES[code] : undefined;
	if (unreachable) return unreachable;
	const message = error instanceof Error ? error.message : String(error);
	if (QUERY_READ_TIMEOUT.test(message)) return "no answer within the credential's Query Timeout";
	if (LOST_CONNECTION.test(message)) return 'connection lost or timed out';
	return undefined;
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
	const nothingChanged = context.operation ? ` ${NOTHING_CHANGED[context.operation]}` : '';

	const parameter = refusedStartupParameter(error);
	if (parameter) {
		return new InvalidConfigurationError(
			`The server refused the connection setting "${parameter}" (a connection pooler such as PgBouncer?). Set the credential's Statement Timeout and Lock Timeout to 0 and set them on the database role instead (ALTER ROLE … SET ${parameter} = …), or add them to the pooler's ignore_startup_parameters.${nothingChanged}`,
			{ cause: error },
		);
	}

	const lost = connectionFailureReason(error);
	// Once a sent statement's answer was lost, no later failure can prove that nothing changed.
	if (context.outcomeUnknown) {
		const operation = context.operation ?? 'reserve';
		return new OutcomeUnknownError(
			`The answer from Postgres was lost after the ${operation} statement was sent, and re-sending it did not get an answer either (${lost ?? `Postgres error ${code ?? 'without a code'}`}). ${MAYBE_CHANGED[operation]}`,
			{ cause: error },
		);
	}

	switch (code) {
		case SQLSTATE.undefinedTable:
		case SQLSTATE.invalidSchemaName:
			return new TableMissingError(
				`The idempotency table ${table} does not exist. Turn on the node option "Create or Upgrade Table" (the default), or run the files in sql/postgres/migrations/keys/ of the n8n-nodes-idempotency package in order (with your schema and table name).`,
				{ cause: error },
			);
		case SQLSTATE.undefinedColumn:
			return new SchemaOutdatedError(
				`The table ${table} is missing columns of an idempotency table. If it is another table of yours (or another table the package made), choose another Table Name: nothing was changed in it. If it is the hand-built recipe's two-column table, turn on the node option "Create or Upgrade Table" (the default), or run sql/postgres/migrations/keys/002_migrate_from_seed.sql and the files after it, in order; existing keys are kept.`,
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
			return new DatabaseUnreachableError(`Postgres is not accepting connections: ${serverMessage}.${nothingChanged}`, { cause: error });
		case SQLSTATE.queryCanceled:
			return new StatementTimeoutError(
				`Postgres cancelled the statement on ${table}: it ran longer than the credential's Statement Timeout (or an administrator cancelled it).${nothingChanged}`,
				{ cause: error },
			);
		case SQLSTATE.lockNotAvailable:
			return new LockTimeoutError(
				`Postgres gave up waiting for a row lock on ${table} after the credential's Lock Timeout: another session holds the row, e.g. a long-running transaction or an unfinished manual edit.${nothingChanged}`,
				{ cause: error },
			);
	}
	if (lost) return new DatabaseUnreachableError(`Postgres could not be reached (${lost}).${nothingChanged}`, { cause: error });
	return new DatabaseError(`Postgres error${code ? ` ${code}` : ''}: ${serverMessage}`, { cause: error });
}
