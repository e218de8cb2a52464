/*
 * The one rule for reading a request header from an item, used by every reader: the idempotency
 * key (Key Source Header and the header presets), signature verification, and the correlation id.
 */

/**
 * Request headers as Node's `IncomingHttpHeaders` or n8n's Webhook node hand them over (names in
 * lower case, a repeated header joined with ", ", `set-cookie` as an array), or as a Code or Set
 * node built them (names in any case, values of any JSON type).
 */
export type HeaderBag = Readonly<Record<string, unknown>>;

/**
 * One header as read from a request:
 * - `missing`: absent, `null`, or only empty values;
 * - `present`: one value; `joined` when it arrived as the same value repeated and joined with ", "
 *   (a header sent twice, as n8n hands it over), which a reader that keeps arbitrary text may refuse;
 * - `ambiguous`: sent more than once with different values (an empty one among them counts);
 * - `notText`: a value that is not text (a boolean, an object, a number that may have been rounded).
 */
export type HeaderValue =
	| { status: 'missing' }
	| { status: 'present'; value: string; joined: boolean }
	| { status: 'ambiguous' }
	| { status: 'notText'; type: string };

/**
 * How a header sent more than once arrives joined into one value: Node's HTTP parser (and so n8n's
 * Webhook node) joins repeats with ", ", as HTTP allows. None of the signature, timestamp or trace
 * formats read contains a comma followed by whitespace, so such a value is split back into the
 * values that were sent; a key, which may be any text, refuses a joined value (deriveKey).
 */
const JOINED_REPEATS = /,[ \t]+/g;

/** A header bag is a plain object; anything else (an array, text, null) holds no headers. */
export function isHeaderBag(value: unknown): value is HeaderBag {
	return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Reads one header by name, case-insensitively (ASCII letters only, as HTTP names are ASCII:
 * `toLowerCase` would let the Kelvin sign match a `k`), each value trimmed.
 *
 * Every occurrence counts: the entries of an array, each spelling of the name in a plain object,
 * each part of a value joined with ", ". They must all be the same text, or the header is
 * `ambiguous`: picking one would let a sender choose which value is checked, or give two
 * deliveries of one event different keys. A safe integer is read as its digits (a Code node may
 * set one); any other non-text value is `notText`, never guessed at. Stops at the second different
 * value, so an absurdly long header costs one pass.
 */
export function readHeader(headers: unknown, name: string): HeaderValue {
	if (!isHeaderBag(headers)) return { status: 'missing' };
	const wanted = asciiLowerCase(name.trim());
	let value: string | undefined;
	let joined = false;
	for (const [key, raw] of Object.entries(headers)) {
		if (asciiLowerCase(key) !== wanted || raw === undefined || raw === null) continue;
		for (const entry of Array.isArray(raw) ? (raw as unknown[]) : [raw]) {
			const text = headerText(entry);
			if (typeof text !== 'string') return text;
			let partCount = 0;
			for (const part of joinedParts(text)) {
				if (++partCount > 1) joined = true;
				const trimmed = part.trim();
				if (value === undefined) value = trimmed;
				else if (trimmed !== value) return { status: 'ambiguous' };
			}
		}
	}
	if (value === undefined || value === '') return { status: 'missing' };
	return { status: 'present', value, joined };
}

/** The Content-Type's media type in lower case (`application/json`); empty when it is missing or sent twice with different values. */
export function mediaTypeOf(headers: unknown): string {
	const contentType = readHeader(headers, 'content-type');
	return contentType.status === 'present' ? contentType.value.split(';')[0].trim().toLowerCase() : '';
}

/** Whether the media type says JSON (`application/json`, `…+json`), as the trigger parses a body. */
export function isJsonMediaType(mediaType: string): boolean {
	return mediaType === 'application/json' || mediaType.endsWith('+json');
}

/**
 * Whether any Content-Type the request carries, under any spelling of the name, says multipart. Stricter than
 * `mediaTypeOf`: a request n8n may have parsed as multipart is taken for one, whatever else it says.
 */
export function saysMultipart(headers: unknown): boolean {
	if (!isHeaderBag(headers)) return false;
	return Object.entries(headers).some(
		([name, value]) =>
			asciiLowerCase(name) === 'content-type' &&
			(Array.isArray(value) ? (value as unknown[]) : [value]).some((entry) => typeof entry === 'string' && /^\s*multipart\//i.test(entry)),
	);
}

/** The values a joined header holds, one at a time (no array of a million parts for a huge one). */
function* joinedParts(text: string): Generator<string> {
	const separator = new RegExp(JOINED_REPEATS);
	let start = 0;
	for (let match = separator.exec(text); match !== null; match = separator.exec(text)) {
		yield text.slice(start, match.index);
		start = match.index + match[0].length;
	}
	yield text.slice(start);
}

/** Reads the first of several alternative header names that is not missing (e.g. `webhook-id`, then `svix-id`). */
export function readFirstHeader(headers: unknown, names: readonly string[]): HeaderValue {
	for (const name of names) {
		const header = readHeader(headers, name);
		if (header.status !== 'missing') return header;
	}
	return { status: 'missing' };
}

/** One occurrence's text, or why it has none. `null` inside an array is an empty value. */
function headerText(entry: unknown): string | Extract<HeaderValue, { status: 'notText' }> {
	if (typeof entry === 'string') return entry;
	if (entry === null || entry === undefined) return '';
	if (typeof entry === 'number' && Number.isSafeInteger(entry)) return String(entry);
	if (typeof entry === 'bigint') return entry.toString();
	return { status: 'notText', type: typeof entry === 'number' ? 'a number that is not a whole number within ±2^53' : describeType(entry) };
}

function describeType(entry: unknown): string {
	if (Array.isArray(entry)) return 'a list inside a list';
	return typeof entry === 'object' ? 'an object' : `a ${typeof entry}`;
}

function asciiLowerCase(text: string): string {
	return text.replace(/[A-Z]/g, (letter) => letter.toLowerCase());
}
