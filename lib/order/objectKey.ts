import { MissingKeyError } from '../errors';
import { deriveKey } from '../keys/deriveKey';
import { InvalidObjectKeyError } from './errors';

// Postgres text cannot hold NUL, and pg would turn a lone surrogate half into U+FFFD, so two
// different keys could silently become one. Both are refused per item, never replaced.
const NUL = '\u0000';
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * The business object's key (e.g. `stripe:customer:cus_123`), by the same rules as a Reserve
 * custom key: strings and finite numbers, trimmed, hashed (never cut) when longer than a btree
 * entry should be. Throws InvalidObjectKeyError for anything else.
 */
export function objectKeyOf(value: unknown): string {
	assertExactText(value, 'object key');
	try {
		return deriveKey({ body: null, customValue: value }, { strategy: 'custom', onMissingKey: 'error' }).key;
	} catch (error) {
		throw inObjectKeyWords(error);
	}
}

function inObjectKeyWords(error: unknown): unknown {
	if (!(error instanceof MissingKeyError)) return error;
	return new InvalidObjectKeyError('The object key is missing or empty: it must be text or a number, e.g. stripe:customer:cus_123.', {
		cause: error,
	});
}

/** The event's own key (usually Reserve's idempotency key), or null when the item has none. */
export function eventKeyOf(value: unknown): string | null {
	if (value === undefined || value === null || (typeof value === 'string' && value.trim() === '')) return null;
	return objectKeyOf(value);
}

function assertExactText(value: unknown, what: string): void {
	if (typeof value !== 'string') return;
	if (value.includes(NUL)) throw new InvalidObjectKeyError(`The ${what} contains a NUL character, which Postgres text cannot store.`);
	if (LONE_SURROGATE.test(value)) {
		throw new InvalidObjectKeyError(`The ${what} contains a lone UTF-16 surrogate (ill-formed Unicode), which cannot be stored exactly.`);
	}
}
