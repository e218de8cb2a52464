import type { HeaderBag } from './types';

/** A header read from a request: absent, present once, or sent more than once with different spellings or values. */
export type HeaderValue = { status: 'missing' } | { status: 'ambiguous' } | { status: 'present'; value: string };

/**
 * How a header sent more than once arrives joined into one value: Node's HTTP parser (and so n8n's
 * Webhook node) joins repeats with ", ", as HTTP allows. None of the signature, timestamp or id
 * formats read here contains a comma followed by whitespace, so such a value is split back into
 * the values that were sent.
 */
const JOINED_REPEATS = /,[ \t]+/;

/**
 * Reads one header by name, case-insensitively, trimmed. An empty value counts as missing.
 * Two different values (a repeated header given as an array, joined with ", ", or two spellings
 * of the name in a plain object) are `ambiguous`: picking one would let a sender choose which
 * value is checked. The same value repeated counts once.
 */
export function readHeader(headers: HeaderBag, name: string): HeaderValue {
	const wanted = name.toLowerCase();
	const values: string[] = [];
	for (const [key, raw] of Object.entries(headers)) {
		if (key.toLowerCase() !== wanted || raw === undefined) continue;
		for (const value of typeof raw === 'string' ? [raw] : raw) {
			for (const part of value.split(JOINED_REPEATS)) {
				const trimmed = part.trim();
				if (trimmed !== '' && !values.includes(trimmed)) values.push(trimmed);
			}
		}
	}
	if (values.length === 0) return { status: 'missing' };
	if (values.length > 1) return { status: 'ambiguous' };
	return { status: 'present', value: values[0] as string };
}

/** Reads the first of several alternative header names that is present (e.g. `webhook-id`, then `svix-id`). */
export function readFirstHeader(headers: HeaderBag, names: readonly string[]): HeaderValue {
	for (const name of names) {
		const header = readHeader(headers, name);
		if (header.status !== 'missing') return header;
	}
	return { status: 'missing' };
}
