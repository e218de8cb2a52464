import { IdempotencyError } from '../errors';

/** An item's version is missing, not a number or date-time, or could not be kept exact. */
export class InvalidVersionError extends IdempotencyError {}

/** An item's object key is missing or cannot be stored as exact text (NUL, lone surrogate halves). */
export class InvalidObjectKeyError extends IdempotencyError {}
