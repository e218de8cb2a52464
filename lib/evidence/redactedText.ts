import { isSecretHeader } from '../keys/forbiddenHeaders';

/*
 * Credentials an error message may quote, taken out of it before it is stored or shown: a node's
 * failure can quote the URL it called, or the item it was given (a Stop and Error message built from
 * the trigger's item carries the request's headers).
 */

export const REDACTED = '[redacted]';

/** `Bearer …`, `Basic …` and the like: a credential after its scheme. */
const SCHEME_CREDENTIAL = /\b(Bearer|Basic|Token|Digest)\s+[A-Za-z0-9._~+/=-]{4,}/gi;
/**
 * A `name=value` pair in a URL's query or a form body, or `name = "value"` in a message; the value quoted (to its
 * quote, else to the end of the text) or not.
 */
const NAMED_VALUE = /([?&;\s"',]|^)([A-Za-z0-9_.-]+)(\s*=\s*)("[^"]*"?|'[^']*'?|[^&\s"';,]*)/g;
/**
 * An Authorization header's credential after any scheme (`Bot …`, `ApiKey …`, `SSWS …`, `OAuth oauth_token="…", …`):
 * to the quote that opened the value, else to the end of the line.
 */
const QUOTED_AUTHORIZATION = /\b((?:proxy-)?authorization['"]?\s*:\s*)(['"])([A-Za-z][A-Za-z0-9_-]*) (?!\[redacted\])(?:(?!\2)[^\n])+/gi;
const AUTHORIZATION_LINE = /\b((?:proxy-)?authorization\s*:\s*)([A-Za-z][A-Za-z0-9_-]*) (?!\[redacted\])[^\n]+/gi;
/** A JSON string (unclosed only where the text ends), number or array of strings, as JSON.stringify writes a member's value. */
const JSON_VALUE = String.raw`(?:"(?:[^"\\]|\\.)*(?:"|$)|-?\d[\d.eE+-]*|\[\s*(?:"(?:[^"\\]|\\.)*"\s*(?:,\s*)?)*\])`;
/** A JSON member with a text, number or text-array value, `"name":"value"`, as JSON.stringify writes an item into a message. */
const JSON_MEMBER = new RegExp(String.raw`"([A-Za-z0-9_.-]+)"(\s*:\s*)${JSON_VALUE}`, 'g');
/** The same inside a JSON string (an API's error body quoted by n8n's `400 - "{\"api_key\":…}"`). */
const ESCAPED_JSON_MEMBER = /\\"([A-Za-z0-9_.-]+)\\"(\s*:\s*)\\"(?:[^"\\]|\\[^"])*\\"/g;
/**
 * `name: value` as a header dump or Node's inspect of an object writes it (`x-api-key: sk_…`, `apiKey: 'sk_…'`,
 * `'x-api-key': 'sk_…'`); not where the value is the next pair's name (`headers: x-api-key: …`) or already
 * redacted after its scheme.
 */
const COLON_VALUE =
	/([\s,;{([]|^)('?)([A-Za-z0-9_.-]+)\2(\s*:\s*)(?![A-Za-z0-9_.-]+\s*:\s|[A-Za-z][A-Za-z0-9_-]* \[redacted\]|\[redacted\])(\[[^\]\n]{0,256}\]|'[^']*'|"[^"]*"|[^\s,;'"})\]]+)/g;
/**
 * The user information of a URL (`https://user:password@host`, `https://token@host`). A scheme starts where no scheme
 * character stands before it: tried at every word boundary, a run like `a.a.a.…` would be scanned again from each.
 */
const URL_USER_INFO = /(?<![a-z0-9+.-])([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]+@/gi;
/**
 * The longest text the patterns read: a failure message is kept cut to far less, and a payload preview shows less; the
 * rest is cut off before redacting, so no message costs more than this much work.
 */
export const MAX_REDACTED_LENGTH = 65_536;

/**
 * An error message without the credentials it quotes: a URL's user information, a credential after
 * its scheme (`Bearer …`), and the value of a query parameter, `name: value` pair or JSON member
 * (escaped in a JSON string too) named like a credential (`?api_key=…`, `x-api-key: …`,
 * `"authorization":"…"`; isSecretHeader), redacted.
 */
export function redactedErrorText(text: string): string;
export function redactedErrorText(text: string | null): string | null;
export function redactedErrorText(text: string | null): string | null {
	if (text === null) return null;
	return cutForRedaction(text)
		.replace(URL_USER_INFO, (_match, scheme: string) => `${scheme}${REDACTED}@`)
		.replace(SCHEME_CREDENTIAL, (_match, scheme: string) => `${scheme} ${REDACTED}`)
		.replace(QUOTED_AUTHORIZATION, (_match, name: string, quote: string, scheme: string) => `${name}${quote}${scheme} ${REDACTED}`)
		.replace(AUTHORIZATION_LINE, (_match, name: string, scheme: string) => `${name}${scheme} ${REDACTED}`)
		.replace(NAMED_VALUE, (match, before: string, name: string, equals: string) =>
			isSecretHeader(name) ? `${before}${name}${equals}${REDACTED}` : match,
		)
		.replace(COLON_VALUE, (match, before: string, quote: string, name: string, colon: string) =>
			isSecretHeader(name) ? `${before}${quote}${name}${quote}${colon}${REDACTED}` : match,
		)
		.replace(JSON_MEMBER, (match, name: string, colon: string) => (isSecretHeader(name) ? `"${name}"${colon}"${REDACTED}"` : match))
		.replace(ESCAPED_JSON_MEMBER, (match, name: string, colon: string) =>
			isSecretHeader(name) ? `\\"${name}\\"${colon}\\"${REDACTED}\\"` : match,
		);
}

/**
 * `text` cut to MAX_REDACTED_LENGTH, marked with `…`. The cut may fall inside a credential, whose start no pattern would
 * then recognise: the text is cut back to its last white space before it, leaving no part of the word it fell in.
 */
function cutForRedaction(text: string): string {
	if (text.length <= MAX_REDACTED_LENGTH) return text;
	const cut = text.slice(0, MAX_REDACTED_LENGTH);
	const lastSpace = cut.search(/\s\S*$/);
	return `${lastSpace > 0 ? cut.slice(0, lastSpace) : ''}…`;
}
