import { MissingKeyError } from '../errors';
import { deriveKey } from '../keys/deriveKey';
import { inexactTextReason } from '../keys/exactText';
import { InvalidObjectKeyError } from './errors';

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

/** NUL and lone surrogates are refused per item, never replaced (the rule Reserve's keys follow). */
function assertExactText(value: unknown, what: string): void {
	const reason = typeof value === 'string' ? inexactTextReason(value) : undefined;
	if (reason) throw new InvalidObjectKeyError(`The ${what} ${reason}.`);
}
