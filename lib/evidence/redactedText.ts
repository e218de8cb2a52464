import { isSecretHeader } from '../keys/forbiddenHeaders';

/*
 * Credentials an error message may quote, taken out of it before it is stored or shown: a node's
 * failure can quote the URL it called, or the item it was given (a Stop and Error message built from
 * the trigger's item carries the request's headers).
 */

export const REDACTED = '[redacted]';

/** `Bearer …`, `Basic …` and the like: a credential after its scheme. */
const SCHEME_CREDENTIAL = /\b(Bearer|Basic|Token|Digest)\s+[A-Za-z0-9._~+/=-]{4,}/gi;
/** A `name=value` pair in a URL's query or a form body. */
const NAMED_VALUE = /([?&;\s"']|^)([A-Za-z0-9_.-]+)=([^&\s"';]*)/g;
/** A JSON member with a text value, `"name":"value"`, as JSON.stringify writes an item into a message. */
const JSON_MEMBER = /"([A-Za-z0-9_.-]+)"(\s*:\s*)"(?:[^"\\]|\\.)*"/g;

/**
 * An error message without the credentials it quotes: a credential after its scheme (`Bearer …`),
 * and the value of a query parameter or JSON member named like a credential (`?api_key=…`,
 * `"authorization":"…"`; isSecretHeader), redacted.
 */
export function redactedErrorText(text: string): string;
export function redactedErrorText(text: string | null): string | null;
export function redactedErrorText(text: string | null): string | null {
	if (text === null) return null;
	return text
		.replace(SCHEME_CREDENTIAL, (_match, scheme: string) => `${scheme} ${REDACTED}`)
		.replace(NAMED_VALUE, (match, before: string, name: string) => (isSecretHeader(name) ? `${before}${name}=${REDACTED}` : match))
		.replace(JSON_MEMBER, (match, name: string, colon: string) => (isSecretHeader(name) ? `"${name}"${colon}"${REDACTED}"` : match));
}
