/**
 * One flat family of errors, matched with `instanceof`. Outcomes (new, duplicate, in progress,
 * stale owner) are values, not errors: these are thrown only when something is misconfigured or broken.
 */
export class IdempotencyError extends Error {
	constructor(message: string, options?: { cause?: unknown }) {
		super(message, options);
		this.name = new.target.name;
	}
}

/** A node option or credential field has a value the package cannot use (e.g. an invalid table name). */
export class InvalidConfigurationError extends IdempotencyError {}

/** The configured key source may never be a key (signature and timestamp headers change on every retry). */
export class ForbiddenKeySourceError extends IdempotencyError {}

/** No key could be derived and falling back to the body hash is switched off. */
export class MissingKeyError extends IdempotencyError {}

/** The same key arrived with a different payload while the payload fingerprint option says "error". */
export class PayloadMismatchError extends IdempotencyError {}

/** The refusal of a key seen before with a different payload (Payload Fingerprint: Error on Mismatch). */
export function payloadMismatchError(key: string): PayloadMismatchError {
	return new PayloadMismatchError(`The key ${JSON.stringify(key.slice(0, 80))} was seen before with a different payload.`);
}

/** The idempotency table does not exist; the message names the SQL file to run. */
export class TableMissingError extends IdempotencyError {}

/** The table exists but is at an older schema version (e.g. the seed's two-column table); the message names the migrations. */
export class SchemaOutdatedError extends IdempotencyError {}

/** The table's schema version is newer than this package knows: refused, nothing is changed. */
export class SchemaNewerThanPackageError extends IdempotencyError {}

/**
 * Postgres could not serve the statement: unreachable (DatabaseUnreachableError), or reached but
 * the statement timed out, waited too long on a lock, or lost its answer (the other subclasses).
 */
export class DatabaseUnavailableError extends IdempotencyError {}

/**
 * No connection: Postgres could not be reached or did not accept one (refused, unknown host,
 * timed out connecting, shutting down, too many connections), or the connection broke before an
 * answer in a transaction that was then rolled back. Nothing changed. The only failure On Store
 * Unavailable: Let Through lets through: the others can mean another delivery of the same event
 * holds the key right now, or that this reservation committed.
 */
export class DatabaseUnreachableError extends DatabaseUnavailableError {}

/** Postgres refused the credential (wrong user or password, or no access to the database). */
export class DatabaseAuthenticationError extends IdempotencyError {}

/** Postgres answered with an error the package has no specific meaning for. */
export class DatabaseError extends IdempotencyError {}

/**
 * One item's key cannot be stored as the exact text it came from (a lone UTF-16 surrogate, a NUL,
 * a number beyond 2^53, or text that would look like a key the package derives itself): refused
 * rather than collapsed into another item's key.
 */
export class UnusableKeyError extends IdempotencyError {}

/** Postgres cancelled the statement (Statement Timeout, 57014): it was rolled back, nothing changed. */
export class StatementTimeoutError extends DatabaseUnavailableError {}

/** Postgres gave up waiting for a row lock another session holds (Lock Timeout, 55P03): nothing changed. */
export class LockTimeoutError extends DatabaseUnavailableError {}

/**
 * The statement was sent but its answer never arrived (connection lost, or no answer within the
 * Query Timeout) and re-sending could not settle it: it may or may not have been applied.
 */
export class OutcomeUnknownError extends DatabaseUnavailableError {}

/** Postgres answered, but not as the statement promises (e.g. no row back for a reserved key). */
export class UnexpectedResultError extends DatabaseError {}

/**
 * An inbox event's item is larger than any store keeps (MAX_INBOX_ITEM_BYTES): the batch was
 * refused, nothing reserved. The item is never stored cut short.
 */
export class InboxItemTooLargeError extends IdempotencyError {}
