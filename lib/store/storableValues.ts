import { exactPayloadSource, type ExactPayloadSource } from '../evidence/exactNumbers';
import { redactedErrorText } from '../evidence/redactedText';

/**
 * What Postgres refuses inside a settle statement — a NUL character (22P05 in jsonb, 22021 in
 * text), a lone UTF-16 surrogate (22P02 in jsonb; silently turned into U+FFFD in text) — and
 * values JSON cannot hold (BigInt, circular objects), made storable before the statement is sent.
 * One bad value must never stop a key from being settled: the key is settled, the value is
 * repaired or dropped, and the item carries a warning saying which.
 */

/** Largest stored response, as JSON text (UTF-8 bytes). Every duplicate of the key carries it back. */
export const MAX_RESPONSE_BYTES = 1024 * 1024;

/** Longest stored error message (characters). */
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

/** A value as JSON text Postgres jsonb accepts, or why it has none. */
type StorableJson = { json: string; bytes: number; repairedText: boolean; bigIntToText: boolean } | { json: null; reason: string };

/**
 * The one rule for JSON the package stores (Complete's response, Reserve's payload): every string
 * and object key repaired with storableText, BigInts as digit strings; none for what JSON cannot hold.
 */
function storableJson(value: unknown): StorableJson {
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
		json = JSON.stringify(value, (_key, member: unknown) => {
			if (typeof member === 'string') return repair(member);
			if (typeof member === 'bigint') {
				bigIntToText = true;
				return member.toString();
			}
			if (member !== null && typeof member === 'object' && !Array.isArray(member))
				return withRepairedKeys(member as Record<string, unknown>, repair);
			return member;
		});
	} catch (error) {
		const message = (error as Error).message;
		if (/circular/i.test(message)) return { json: null, reason: 'it refers to itself (a circular structure)' };
		// V8 gives up before Postgres does (jsonb takes about 10,000 levels); say which limit it was.
		if (error instanceof RangeError) return { json: null, reason: 'it is nested too deeply (thousands of levels) to be written as JSON' };
		return { json: null, reason: 'it cannot be written as JSON' };
	}
	if (json === undefined) return { json: null, reason: 'it has no JSON form (absent, a function or a symbol)' };
	return { json, bytes: Buffer.byteLength(json, 'utf8'), repairedText, bigIntToText };
}

/** Complete's response as JSON text Postgres accepts, repaired or dropped with a warning. */
export function storableResponse(response: unknown): StorableResponse {
	if (response === undefined) return { json: null, warnings: [] };
	const stored = storableJson(response);
	if (stored.json === null)
		return { json: null, warnings: [`The response was not stored: ${stored.reason}. The key was settled without it.`] };
	if (stored.bytes > MAX_RESPONSE_BYTES) {
		return {
			json: null,
			warnings: [
				`The response was not stored: it is ${(stored.bytes / 1024 / 1024).toFixed(1)} MB of JSON, over the ${MAX_RESPONSE_BYTES / 1024 / 1024} MB limit. The key was settled without it.`,
			],
		};
	}
	return { json: stored.json, warnings: repairWarnings('stored response', stored) };
}

export interface StorablePayload {
	/** JSON text for the jsonb column; null when not stored. */
	json: string | null;
	/** Its size in UTF-8 bytes, also when over the cap; null when it has no JSON form. */
	bytes: number | null;
	/** Why it was not stored (over the cap, no JSON form); absent when stored. */
	notStoredReason?: string;
	warnings: string[];
}

/**
 * Reserve's payload (replay evidence) as JSON text Postgres accepts, or not stored — never a
 * reason to leave a key unreserved: over `maxBytes` or without a JSON form it is dropped and the
 * reason given; repaired text is stored with a warning. With the request's raw body, numbers
 * JavaScript rounds (integers beyond 2^53, …) are stored with the digits the sender wrote (see
 * exactPayloadSource); a payload that cannot be stored exactly is not stored.
 */
export function storablePayload(payload: unknown, maxBytes: number, rawBody?: Buffer): StorablePayload {
	const source: ExactPayloadSource = rawBody ? exactPayloadSource(payload, rawBody, maxBytes) : { kind: 'body' };
	if (source.kind === 'beyondNumeric') {
		return {
			json: null,
			bytes: null,
			notStoredReason: `The payload was not stored: its number ${JSON.stringify(source.token.slice(0, 40))} has more digits than Postgres numeric holds, so it cannot be stored exactly. The key was reserved without it.`,
			warnings: [],
		};
	}
	if (source.kind === 'overCap') return overCap(source.bytes, maxBytes, 'at least ');
	if (source.kind === 'placeholderClash') {
		return {
			json: null,
			bytes: null,
			notStoredReason: 'The payload was not stored: its exact numbers could not be put back into it. The key was reserved without it.',
			warnings: [],
		};
	}
	const stored = storableJson(source.kind === 'exact' ? source.value : payload);
	if (stored.json === null)
		return { json: null, bytes: null, notStoredReason: `The payload was not stored: ${stored.reason}.`, warnings: [] };
	const json = source.kind === 'exact' ? source.restore(stored.json) : stored.json;
	const bytes = source.kind === 'exact' ? Buffer.byteLength(json, 'utf8') : stored.bytes;
	if (bytes > maxBytes) return overCap(bytes, maxBytes);
	const warnings = repairWarnings('stored payload', stored);
	if (source.kind === 'bodyChanged') {
		warnings.push(
			"The stored payload's numbers beyond JavaScript's precision (such as integers over 2^53) are rounded: the item's body is no longer the raw request body's JSON (a node before this one changed it), so they could not be taken from the raw body.",
		);
	}
	return { json, bytes, warnings };
}

/** Not stored for its size; `atLeast` when only part of the payload was measured (its numbers). */
function overCap(bytes: number, maxBytes: number, atLeast = ''): StorablePayload {
	return {
		json: null,
		bytes,
		notStoredReason: `The payload was not stored: it is ${atLeast}${bytes} bytes of JSON, over the ${maxBytes}-byte limit (Max Payload Size). The key was reserved without it.`,
		warnings: [],
	};
}

function repairWarnings(what: string, stored: { repairedText: boolean; bigIntToText: boolean }): string[] {
	const warnings: string[] = [];
	if (stored.repairedText) {
		warnings.push(`The ${what} had NUL characters or broken Unicode (lone surrogates) in its text; they were replaced with U+FFFD (�).`);
	}
	if (stored.bigIntToText) warnings.push(`The ${what} had BigInt numbers; they were stored as strings of digits.`);
	return warnings;
}

/** The first `maxLength` UTF-16 units of `text`, never ending in half a surrogate pair. */
export function cutText(text: string, maxLength: number): string {
	return text.length > maxLength ? text.slice(0, maxLength).replace(/[\uD800-\uDBFF]$/, '') : text;
}

/** A failure's message: the credentials it quotes redacted, repaired, then cut at a character boundary (never half a surrogate pair). */
export function storableErrorMessage(message: string): { text: string; warnings: string[] } {
	const repaired = storableText(redactedErrorText(message));
	return {
		text: cutText(repaired.text, MAX_ERROR_MESSAGE_LENGTH),
		warnings: repaired.changed
			? ['The error message had NUL characters or broken Unicode (lone surrogates); they were replaced with U+FFFD (�).']
			: [],
	};
}

function withRepairedKeys(value: Record<string, unknown>, repair: (text: string) => string): Record<string, unknown> {
	const keys = Object.keys(value);
	const repaired = new Set(keys.filter((key) => storableText(key).changed));
	if (repaired.size === 0) return value;
	// No prototype: a member named "__proto__" (JSON.parse makes it an own member) stays a member
	// instead of setting the copy's prototype and vanishing from the stored JSON.
	const copy: Record<string, unknown> = Object.create(null);
	// Names that need no repair keep theirs. A repaired name already taken ("a\0" and "a\uD800" both
	// become "a\uFFFD") gets U+FFFD and its member's position, so no member is overwritten; each
	// attempt is a new name, so a crafted body costs one attempt per member it adds. jsonb orders
	// members itself: the order here does not matter.
	for (const key of keys) if (!repaired.has(key)) copy[key] = value[key];
	for (const [position, key] of keys.entries()) {
		if (!repaired.has(key)) continue;
		const base = repair(key);
		let name = base;
		for (let attempt = 1; Object.hasOwn(copy, name); attempt++)
			name = `${base}${REPLACEMENT}${position}${attempt > 1 ? `.${attempt}` : ''}`;
		copy[name] = value[key];
	}
	return copy;
}
