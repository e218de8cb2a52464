import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';

/*
 * Numbers JavaScript cannot hold exactly. JSON.parse rounds 12345678901234567890 to
 * 12345678901234567000 (and 1e400 to Infinity, which JSON.stringify writes as null), so a payload
 * stored from the parsed body would be replayed with altered values. Postgres jsonb keeps numbers
 * as `numeric`, exactly: the loss is only in JavaScript. So a stored payload takes such numbers
 * from the raw request text, and hands them back as strings of their exact digits.
 */

/** Postgres numeric holds at most this many digits before the decimal point … */
export const MAX_NUMERIC_INTEGER_DIGITS = 131_072;
/** … and at most this many after it (checked on Postgres 13 to 18). */
export const MAX_NUMERIC_FRACTION_DIGITS = 16_383;

/** One number token of a JSON text that JavaScript would not read exactly. */
export interface InexactNumber {
	start: number;
	end: number;
	/** The token as written. */
	token: string;
}

const NUMBER_TOKEN = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const MINUS = 0x2d;

/**
 * The number tokens of `text` that Number() would change: rounded (more digits than a double
 * holds), out of range (Infinity) or flushed to zero. Strings are skipped; one pass, no recursion,
 * so any size and depth of text is read in linear time. `text` need not be valid JSON: the caller
 * parses it afterwards.
 */
export function inexactNumbers(text: string): InexactNumber[] {
	const found: InexactNumber[] = [];
	const length = text.length;
	let position = 0;
	while (position < length) {
		const code = text.charCodeAt(position);
		if (code === QUOTE) {
			position++;
			while (position < length) {
				const inner = text.charCodeAt(position);
				if (inner === BACKSLASH) position += 2;
				else if (inner === QUOTE) break;
				else position++;
			}
			position++;
		} else if (code === MINUS || (code >= 0x30 && code <= 0x39)) {
			NUMBER_TOKEN.lastIndex = position;
			const match = NUMBER_TOKEN.exec(text);
			if (!match) {
				position++;
				continue;
			}
			const end = position + match[0].length;
			if (!isExactInJavaScript(match[0])) found.push({ start: position, end, token: match[0] });
			position = end;
		} else {
			position++;
		}
	}
	return found;
}

/** Whether Number(token) is the token's value exactly, as far as decimal notation can tell (0.1 is). */
export function isExactInJavaScript(token: string): boolean {
	// At most 15 digits and no exponent: every such decimal survives a double (DBL_DIG is 15).
	if (token.length <= 15 && !/[eE]/.test(token)) return true;
	const value = Number(token);
	if (!Number.isFinite(value)) return false;
	const exact = decimalParts(token);
	const shortest = decimalParts(String(value));
	return (
		exact.digits === shortest.digits &&
		exact.exponent === shortest.exponent &&
		(exact.digits === '0' || exact.negative === shortest.negative)
	);
}

interface DecimalParts {
	negative: boolean;
	/** Significant digits, no leading or trailing zeros ('0' for zero). */
	digits: string;
	/** value = digits × 10^exponent. */
	exponent: number;
}

function decimalParts(number: string): DecimalParts {
	const match = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/.exec(number);
	if (!match) throw new Error(`not a decimal number: ${number.slice(0, 40)}`);
	const [, sign, whole, fraction = '', exponentText = '0'] = match;
	const all = (whole + fraction).replace(/^0+/, '');
	if (all === '') return { negative: false, digits: '0', exponent: 0 };
	// Trimmed by index: an unanchored /0+$/ would try every zero of a long fraction as the start of the run.
	let end = all.length;
	while (all.charCodeAt(end - 1) === 48) end--;
	const significant = all.slice(0, end);
	return {
		negative: sign === '-',
		digits: significant,
		exponent: Number(exponentText) - fraction.length + (all.length - significant.length),
	};
}

/**
 * `token` in plain decimal notation, as Postgres numeric prints it (no exponent; the digits after
 * the point kept as written, so 1.50e1 is 15.0), or undefined when numeric cannot hold it.
 */
export function plainDecimal(token: string): string | undefined {
	const match = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/.exec(token);
	if (!match) return undefined;
	const [, sign, whole, fraction = '', exponentText = '0'] = match;
	const exponent = Number(exponentText);
	const digits = whole + fraction;
	// Where the point goes in `digits`; checked against numeric's limits before any string is built.
	const point = whole.length + exponent;
	const fractionDigits = Math.max(0, digits.length - point);
	const leadingZeros = /^0*/.exec(digits)?.[0].length ?? 0;
	const integerDigits = Math.max(0, point - leadingZeros);
	if (!Number.isFinite(point) || fractionDigits > MAX_NUMERIC_FRACTION_DIGITS || integerDigits > MAX_NUMERIC_INTEGER_DIGITS)
		return undefined;
	let integer: string;
	let decimals: string;
	if (point <= 0) {
		integer = '0';
		decimals = '0'.repeat(-point) + digits;
	} else if (point >= digits.length) {
		integer = digits + '0'.repeat(point - digits.length);
		decimals = '';
	} else {
		integer = digits.slice(0, point);
		decimals = digits.slice(point);
	}
	integer = integer.replace(/^0+(?=[0-9])/, '');
	const isZero = /^0*$/.test(integer + decimals);
	return `${sign && !isZero ? '-' : ''}${integer}${decimals ? `.${decimals}` : ''}`;
}

/**
 * JSON text parsed with each number JavaScript would alter given as a string of its exact digits
 * (12345678901234567890 → "12345678901234567890"); every other value as JSON.parse gives it.
 * The rule for reading a stored payload back: Postgres prints numbers in plain notation.
 */
export function parseWithExactNumbers(text: string): unknown {
	const inexact = inexactNumbers(text);
	if (inexact.length === 0) return JSON.parse(text);
	return JSON.parse(replaceTokens(text, inexact, (number) => `"${number.token}"`));
}

/** What the raw body gives a stored payload (see exactPayloadSource). */
export type ExactPayloadSource =
	/** Store the item's body as it is: it holds every number exactly, or there is no JSON raw body to take them from. */
	| { kind: 'body' }
	/** The raw body has numbers JavaScript rounds, but the body is not that JSON (a node changed it): store the body, with a warning. */
	| { kind: 'bodyChanged' }
	/** A number no Postgres numeric can hold: the payload cannot be stored exactly. */
	| { kind: 'beyondNumeric'; token: string }
	/** The payload's numbers alone pass `maxBytes`: over the cap, whatever the rest. */
	| { kind: 'overCap'; bytes: number }
	/** The body's text holds the placeholder's random part (one chance in 2^128): not stored rather than risk a wrong number. */
	| { kind: 'placeholderClash' }
	/**
	 * The raw body's value with each inexact number as a placeholder string; `restore` turns the
	 * placeholders in its JSON text back into the exact numbers.
	 */
	| { kind: 'exact'; value: unknown; restore: (json: string) => string };

const FATAL_UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Where a payload's numbers come from. The body is stored with its numbers exact when the raw
 * request body is JSON text whose value the body still is (JSON.parse of the raw text equals the
 * body: no node in between changed it). Only bodies with numbers JavaScript rounds take the longer
 * path; `nonce` is for tests.
 */
export function exactPayloadSource(
	body: unknown,
	rawBody: Buffer,
	maxBytes: number,
	nonce = randomBytes(16).toString('hex'),
): ExactPayloadSource {
	let text: string;
	try {
		text = FATAL_UTF8.decode(rawBody);
	} catch {
		return { kind: 'body' }; // not UTF-8, so not JSON: the body came from elsewhere (a form, a file)
	}
	if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
	const inexact = inexactNumbers(text);
	if (inexact.length === 0) return { kind: 'body' };
	let parsed: unknown;
	try {
		parsed = JSON.parse(text);
	} catch {
		return { kind: 'body' }; // not JSON (a form, XML, text): nothing to take numbers from
	}
	let same: boolean;
	try {
		same = isDeepStrictEqual(parsed, body);
	} catch {
		same = false; // nested too deeply to compare: then too deep to store as well
	}
	if (!same) return { kind: 'bodyChanged' };

	const plain: string[] = [];
	let plainBytes = 0;
	for (const number of inexact) {
		const decimal = plainDecimal(number.token);
		if (decimal === undefined) return { kind: 'beyondNumeric', token: number.token };
		plainBytes += decimal.length;
		if (plainBytes > maxBytes) return { kind: 'overCap', bytes: plainBytes };
		plain.push(decimal);
	}
	// Every string of the body appears in its JSON text (the nonce needs no escaping), so a body
	// without the nonce there has no string a placeholder could be mistaken for.
	if (JSON.stringify(parsed).includes(nonce)) return { kind: 'placeholderClash' };
	let index = 0;
	const value: unknown = JSON.parse(replaceTokens(text, inexact, () => `"exact-number:${nonce}:${index++}"`));
	const placeholders = new RegExp(`"exact-number:${nonce}:([0-9]+)"`, 'g');
	return { kind: 'exact', value, restore: (json) => json.replace(placeholders, (_match, position: string) => plain[Number(position)]) };
}

function replaceTokens(text: string, numbers: InexactNumber[], replacement: (number: InexactNumber) => string): string {
	const parts: string[] = [];
	let from = 0;
	for (const number of numbers) {
		parts.push(text.slice(from, number.start), replacement(number));
		from = number.end;
	}
	parts.push(text.slice(from));
	return parts.join('');
}
