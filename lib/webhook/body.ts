import { parse as parseForm } from 'node:querystring';

import { isJsonMediaType, mediaTypeOf, type HeaderBag } from '../headers';

/**
 * The request body as the item shows it and the key is derived from, parsed as n8n's Webhook node
 * parses it: JSON (`application/json`, `…+json`), a form (`application/x-www-form-urlencoded`,
 * as Slack sends), else the text. An empty body is `{}`. A JSON body that does not parse is kept
 * as its text: it has no id field, so its key is its body hash (or it is refused, as configured).
 * Numbers JavaScript would round are read exactly from the raw bytes where a key needs them.
 */
export function parseBody(rawBody: Buffer, headers: HeaderBag): unknown {
	if (rawBody.length === 0) return {};
	const text = rawBody.toString('utf8');
	const mediaType = mediaTypeOf(headers);
	if (isJsonMediaType(mediaType)) {
		try {
			// A leading byte order mark is left out, as n8n's own body parser does.
			return JSON.parse(text.replace(/^\uFEFF/, '')) as unknown;
		} catch {
			return text;
		}
	}
	// As n8n's body parser reads a form: a field given twice is the list of its values (no one of them is the field's).
	if (mediaType === 'application/x-www-form-urlencoded')
		return parseForm(text.replace(/^\uFEFF/, ''), undefined, undefined, { maxKeys: 1000 });
	return text;
}
