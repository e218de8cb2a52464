/**
 * What Postgres refuses inside a settle statement — a NUL character (22P05 in jsonb, 22021 in
 * text), a lone UTF-16 surrogate (22P02 in jsonb; silently turned into U+FFFD in text) — and
 * values JSON cannot hold (BigInt, circular objects), made storable before the statement is sent.
 * One bad value must never stop a key from being settled: the key is settled, the value is
 * repaired or dropped, and the item carries a warning saying which.
 */

/** Largest stored response, as JSON text (UTF-8 bytes). Every duplicate of the key carries it back. */
export const MAX_RESPONSE_BYTES = 1024 * 1024;

/** Longest stored error message (characters), as before. */
export const MAX_ERROR_MESSAGE_LENGTH = 2000;

const REPLACEMENT = '\uFFFD';
const NUL = '\u0000';
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Text with NULs and lone surrogates replaced by U+FFFD; `changed` says whether any were. */
export function storableText(text: string): { text: string; changed: boolean } {
	const repaired = text.replaceAll(NUL, REPLACEMENT).replace(LONE_SURROGATE, REPLACEMENT);
	return { text: repaired, changed: repaired !== text };
}

export interface StorableResponse {
	/** JSON text for the jsonb column, or null to keep the stored response. */
	json: string | null;
	warnings: string[];
}

/** Complete's response as JSON text Postgres accepts, repaired or dropped with a warning. */
export function storableResponse(response: unknown): StorableResponse {
	if (response === undefined) return { json: null, warnings: [] };
	let repairedText = false;
	let bigIntToText = false;
	const repair = (text: string): string => {
		const result = storableText(text);
		repairedText ||= result.changed;
		return result.text;
	};
	let json: string | undefined;
	try {
		// The replacer sees every value after toJSON (dates, …), so nothing reaches the text unrepaired.
		json = JSON.stringify(response, (_key, value: unknown) => {
			if (typeof value === 'string') return repair(value);
			if (typeof value === 'bigint') {
				bigIntToText = true;
				return value.toString();
			}
			if (value !== null && typeof value === 'object' && !Array.isArray(value)) return withRepairedKeys(value as Record<string, unknown>, repair);
			return value;
		});
	} catch (error) {
		const reason = /circular/i.test((error as Error).message) ? 'it refers to itself (a circular structure)' : 'it cannot be written as JSON';
		return { json: null, warnings: [`The response was not stored: ${reason}. The key was settled without it.`] };
	}
	if (json === undefined) {
		return { json: null, warnings: ['The response was not stored: it has no JSON form (a function or symbol). The key was settled without it.'] };
	}
	const bytes = Buffer.byteLength(json, 'utf8');
	if (bytes > MAX_RESPONSE_BYTES) {
		return {
			json: null,
			warnings: [
				`The response was not stored: it is ${(bytes / 1024 / 1024).toFixed(1)} MB of JSON, over the ${MAX_RESPONSE_BYTES / 1024 / 1024} MB limit. The key was settled without it.`,
			],
		};
	}
	const warnings: string[] = [];
	if (repairedText) {
		warnings.push('The stored response had NUL characters or broken Unicode (lone surrogates) in its text; they were replaced with U+FFFD (�).');
	}
	if (bigIntToText) warnings.push('The stored response had BigInt numbers; they were stored as strings of digits.');
	return { json, warnings };
}

/** Mark Failed's message: repaired, then cut at a character boundary (never half a surrogate pair). */
export function storableErrorMessage(message: string): { text: string; warnings: string[] } {
	const repaired = storableText(message);
	let text = repaired.text;
	if (text.length > MAX_ERROR_MESSAGE_LENGTH) {
		text = text.slice(0, MAX_ERROR_MESSAGE_LENGTH).replace(/[\uD800-\uDBFF]$/, '');
	}
	return {
		text,
		warnings: repaired.changed
			? ['The error message had NUL characters or broken Unicode (lone surrogates); they were replaced with U+FFFD (�).']
			: [],
	};
}

function withRepairedKeys(value: Record<string, unknown>, repair: (text: string) => string): Record<string, unknown> {
	const keys = Object.keys(value);
	if (!keys.some((key) => storableText(key).changed)) return value;
	const copy: Record<string, unknown> = {};
	for (const key of keys) copy[repair(key)] = value[key];
	return copy;
}
