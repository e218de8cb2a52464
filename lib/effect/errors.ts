import { IdempotencyError } from '../errors';

/** The user's SQL failed; its transaction was rolled back, so the key was not reserved either. */
export class QueryFailedError extends IdempotencyError {}

/**
 * Postgres answered the commit with an error (a deferred constraint, a serialization failure):
 * it rolled the transaction back, so neither the key nor the effect was stored.
 */
export class CommitRefusedError extends IdempotencyError {}
