import { InvalidConfigurationError, UnusableKeyError } from '../errors';

// node-postgres encodes text as UTF-8: a lone surrogate becomes U+FFFD (two different ids would
// share one row) and Postgres refuses NUL in text outright (22021, failing the whole batch).
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why `text` cannot be sent to Postgres unchanged, or undefined when it can. */
export function inexactTextReason(text: string): string | undefined {
	if (text.includes('\u0000')) return 'contains a NUL character (\\u0000), which Postgres text cannot hold';
	if (LONE_SURROGATE.test(text)) {
		return 'contains a lone UTF-16 surrogate, which would be stored as U+FFFD and merge with other keys';
	}
	return undefined;
}

/** Throws UnusableKeyError naming `what` when `text` would not reach Postgres exactly as it is. */
export function assertExactText(text: string, what: string): void {
	const reason = inexactTextReason(text);
	if (reason) throw new UnusableKeyError(`The ${what} ${reason}. The item was not reserved.`);
}

/**
 * The execution and workflow ids go into the same statement as every key of the batch: one
 * inexact text among them would fail the whole statement, so the run is refused before it.
 */
export function assertExactRunText(fields: Record<string, string>): void {
	for (const [what, text] of Object.entries(fields)) {
		const reason = inexactTextReason(text);
		if (reason) throw new InvalidConfigurationError(`The n8n ${what} ${reason}; nothing was reserved.`);
	}
}

/**
 * A stored key handed back to the store as it was read (Claim for Replay takes List Keys' keys
 * verbatim, hashed `sha256:` ones included): it must be non-empty and reach Postgres unchanged.
 */
export function assertStoredKeyText(key: unknown, what: string): asserts key is string {
	if (typeof key !== 'string' || key === '') {
		throw new UnusableKeyError(
			`The ${what} is ${key === '' ? 'empty' : `not text (${typeof key})`}: pass a stored key, such as List Keys' key. Nothing was claimed.`,
		);
	}
	const reason = inexactTextReason(key);
	if (reason) throw new UnusableKeyError(`The ${what} ${reason}, so no stored key can match it. Nothing was claimed.`);
}
