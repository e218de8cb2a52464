import { IdempotencyError } from '../errors';

/** The user's SQL failed; its transaction was rolled back, so the key was not reserved either. */
export class QueryFailedError extends IdempotencyError {}
