import { REDACTED } from '../evidence/redactedText';
import { isSecretHeader } from '../keys/forbiddenHeaders';
import { storableText } from '../store/storableValues';

/*
 * The one rule for the answer the Idempotent Webhook trigger stores with a completed key and
 * replays to every copy of the event for the retention period. The answer is the last node's first
 * item, and a node that passes the trigger's item on (No Operation, Edit Fields, an If branch)
 * passes on the request's headers — with Basic or Header authentication the trigger's own
 * credential — and the `idempotency` object with its owner token. None of that is kept.
 */

/** Largest answer kept, as JSON text (UTF-8 bytes): every copy of the event carries it back. */
export const MAX_STORED_ANSWER_BYTES = 64 * 1024;

/** What is kept instead of an answer over the cap, or one that has no JSON form (circular, too deep). */
export const ANSWER_NOT_KEPT: Readonly<{ status: 'completed' }> = Object.freeze({ status: 'completed' });

/**
 * Members never kept, at any depth, compared without case, `-` or `_`: the request's headers (a
 * copy of them anywhere in the item), the reservation with its owner token, and the members that
 * carry a credential by name.
 */
const DROPPED_MEMBERS = new Set([
	'headers',
	'rawheaders',
	'idempotency',
	'ownertoken',
	'authorization',
	'proxyauthorization',
	'cookie',
	'setcookie',
]);

/** Whether a member is never kept in an answer (nor shown in a preview): compared without case, `-` or `_`. */
export function isWithheldMember(name: string): boolean {
	return DROPPED_MEMBERS.has(name.toLowerCase().replace(/[-_]/g, ''));
}

/** Secrets shorter than this are dropped only where a string is exactly them (a short one would match ordinary text). */
const MIN_CONTAINED_SECRET = 8;

/**
 * A credential shorter than MIN_CONTAINED_SECRET is taken out of a message only where it stands alone (not inside a
 * longer word or number); one shorter than this is left (it would match ordinary text and protects little).
 */
const MIN_STANDALONE_SECRET = 4;

/** What the answer must not give away: the request as the trigger's item carries it, and the owner tokens. */
export interface AnswerRequest {
	/** The request's headers, as on the trigger's item. */
	headers?: unknown;
	/** The request's query parameters, as on the trigger's item. */
	query?: unknown;
	ownerTokens?: readonly unknown[];
	/** Headers that carry a credential whatever their name says (the one Header Auth checks, which the user names). */
	credentialHeaders?: readonly string[];
	/**
	 * The trigger's own configured secrets (its signing secrets, the Header Auth value, the Basic Auth password): an
	 * answer may echo them (an API answering the endpoint it configured), and they are withheld as a request's are.
	 */
	ownSecrets?: readonly unknown[];
}

/**
 * The answer as it may be sent and stored: without the members above; without any string carrying a
 * credential of the request (a header value copied into a field of another name) or an owner token;
 * text repaired as the store repairs it (NUL, lone surrogates), BigInts as digit strings; and
 * ANSWER_NOT_KEPT instead of one over MAX_STORED_ANSWER_BYTES or without a JSON form (`{}` where a
 * secret is the word it holds). Undefined
 * when there is no answer. Applied where the answer is stored and again where it is replayed: an
 * answer already in the store is replayed by the same rule.
 */
export function storedAnswer(answer: unknown, request: AnswerRequest = {}): unknown {
	if (answer === undefined) return undefined;
	const secrets = new SecretMatcher(secretsOf(request).flatMap(writtenForms));
	const leaks = (text: string) => secrets.isIn(text);
	// Nothing the matcher knows is stored instead: a password "completed" would be in ANSWER_NOT_KEPT itself.
	const notKept = () => (leaks(ANSWER_NOT_KEPT.status) ? {} : { ...ANSWER_NOT_KEPT });
	// Every value and member name is counted (at least a byte) before it is searched: an answer over the cap is not
	// kept, and searching megabytes for every form of every secret would hold the event loop for seconds.
	let bytes = 0;
	const count = (size: number) => {
		bytes += Math.max(1, size);
		if (bytes > MAX_STORED_ANSWER_BYTES) throw new AnswerTooLarge();
	};
	let json: string | undefined;
	try {
		// The replacer sees every value after toJSON (dates, buffers), so nothing reaches the text unchecked.
		json = JSON.stringify(answer, (_key, member: unknown) => {
			if (typeof member === 'string') {
				count(Buffer.byteLength(member, 'utf8'));
				const text = storableText(member).text;
				return leaks(text) ? undefined : text;
			}
			// A credential of digits (a Header Auth value) is as secret as text, and a Buffer's bytes as its text.
			if (typeof member === 'number' || typeof member === 'bigint') {
				const digits = member.toString();
				count(digits.length);
				if (leaks(digits)) return undefined;
				return typeof member === 'bigint' ? digits : member;
			}
			if (isBufferJson(member) && Object.keys(member).length === 2) {
				count(member.data.length);
				return leaks(Buffer.from(member.data).toString('utf8')) ? undefined : member;
			}
			count(1);
			if (member !== null && typeof member === 'object' && !Array.isArray(member))
				return keptMembers(member as Record<string, unknown>, leaks, count);
			return member;
		});
	} catch {
		// Over the cap, circular, or nested deeper than JSON can be written.
		return notKept();
	}
	if (json === undefined) return undefined;
	if (Buffer.byteLength(json, 'utf8') > MAX_STORED_ANSWER_BYTES) return notKept();
	return JSON.parse(json) as unknown;
}

class AnswerTooLarge extends Error {}

/**
 * A text (a failure message kept with a key, or sent to the caller) with every credential of the request
 * storedAnswer withholds replaced by REDACTED: a message built from the item (a Stop and Error quoting `$json`)
 * quotes the request's headers. With `everyHeaderValue`, every value of a request header too: where a header may
 * carry a credential under a name the package is not told (n8n's Webhook node checking Header Auth).
 */
export function withoutRequestSecrets(text: string, request: AnswerRequest, { everyHeaderValue = false } = {}): string {
	const headerValues = !everyHeaderValue
		? []
		: Object.entries(isRecord(request.headers) ? request.headers : {})
				.filter(([name]) => !describesTheMessage(name))
				.flatMap(([, value]) => value)
				.filter((value): value is string => typeof value === 'string')
				.flatMap(credentialParts)
				.flatMap(asWrittenAndRepaired);
	const secrets = [...new Set([...secretsOf(request), ...headerValues])];
	return new SecretMatcher(secrets.flatMap(writtenForms)).redact(text);
}

/**
 * A secret as a message or an answer may quote it: as it is, JSON-escaped once or twice (a message built with
 * JSON.stringify, kept as text in another), percent-encoded (a URL a step built with it) or form-encoded (a query
 * built as a form: a space is "+").
 */
function writtenForms(secret: string): string[] {
	const escaped = JSON.stringify(secret).slice(1, -1);
	return [
		...new Set([
			secret,
			// Letters beyond ASCII (the matcher folds ASCII only): ß is SS upper-cased, İ i̇ lower-cased.
			secret.toUpperCase(),
			secret.toLowerCase(),
			escaped,
			JSON.stringify(escaped).slice(1, -1),
			// URLs are written from well-formed text (a lone surrogate cannot be percent-encoded).
			encodeURIComponent(storableText(secret).text),
			new URLSearchParams({ s: storableText(secret).text }).toString().slice(2),
		]),
	];
}

/**
 * What else gives away one of the trigger's own configured secrets: its base64 (an answer that encodes it, a Basic
 * header built with it as the password: its whole three-byte groups at each of the three alignments), and the HMAC
 * key of a Standard Webhooks secret, the base64 body after `whsec_`.
 */
function ownSecretForms(secret: string): string[] {
	const forms = [secret];
	if (secret.startsWith(STANDARD_WEBHOOKS_PREFIX)) forms.push(secret.slice(STANDARD_WEBHOOKS_PREFIX.length));
	const bytes = Buffer.from(secret, 'utf8');
	for (const offset of [0, 1, 2]) {
		// Whole groups of three bytes only: the last, partial one changes with what follows the secret.
		const aligned = bytes.subarray(offset, offset + Math.floor((bytes.length - offset) / 3) * 3);
		const encoded = aligned.toString('base64');
		forms.push(encoded, encoded.replace(/\+/g, '-').replace(/\//g, '_'));
	}
	return forms.filter((form) => form.length >= MIN_CONTAINED_SECRET || form === secret);
}

const STANDARD_WEBHOOKS_PREFIX = 'whsec_';

/**
 * Headers HTTP itself and proxies set, which describe the message (its length, type, encoding, the client, the
 * route it came by) and never carry a credential: with every other header value taken out, theirs would take
 * ordinary words (`close`, `https`, `application/json`) out of every failure message.
 */
function describesTheMessage(name: string): boolean {
	return MESSAGE_HEADERS.has(name.toLowerCase());
}

const MESSAGE_HEADERS = new Set([
	'accept',
	'accept-charset',
	'accept-encoding',
	'accept-language',
	'connection',
	'content-encoding',
	'content-language',
	'content-length',
	'content-type',
	'expect',
	'host',
	'keep-alive',
	'te',
	'transfer-encoding',
	'upgrade',
	'user-agent',
	'via',
	'x-forwarded-for',
	'x-forwarded-host',
	'x-forwarded-port',
	'x-forwarded-proto',
	'x-real-ip',
]);

/**
 * Where credentials show in a text, by one rule for what is stored and what is answered: anywhere once one is
 * MIN_CONTAINED_SECRET long; standing alone (not inside a longer word or number) from MIN_STANDALONE_SECRET; a
 * shorter one only as the whole text (it would match ordinary words). ASCII letters match in either case (an answer
 * may show a hex key upper-cased; a wrong match only hides more): folding them keeps every position, so plain
 * substring search finds each form, whatever its length, in time linear in the text per form.
 */
class SecretMatcher {
	private readonly contained: string[] = [];
	private readonly standalone: string[] = [];
	private readonly whole = new Set<string>();
	private readonly shortest: number = Infinity;

	constructor(forms: readonly string[]) {
		for (const form of new Set(forms.map(foldAscii))) {
			if (form.length >= MIN_CONTAINED_SECRET) this.contained.push(form);
			else if (form.length >= MIN_STANDALONE_SECRET) this.standalone.push(form);
			else if (form !== '') this.whole.add(form);
			if (form !== '') this.shortest = Math.min(this.shortest, form.length);
		}
	}

	isIn(text: string): boolean {
		return this.ranges(text, true).length > 0;
	}

	/** The text with every match replaced by REDACTED, overlapping matches as one, and a REDACTED already there left as it is. */
	redact(text: string): string {
		const ranges = this.ranges(text, false);
		if (ranges.length === 0) return text;
		// One pass over the matches (sorted, overlaps merged) and the REDACTED marks (in order) side by side.
		const marks: Array<[number, number]> = [];
		for (let at = text.indexOf(REDACTED); at !== -1; at = text.indexOf(REDACTED, at + REDACTED.length))
			marks.push([at, at + REDACTED.length]);
		let redacted = '';
		let at = 0;
		let mark = 0;
		for (const [start, end] of merged(ranges)) {
			while (mark < marks.length && marks[mark][1] <= start) mark++;
			if (mark < marks.length && marks[mark][0] <= start && end <= marks[mark][1]) continue;
			redacted += text.slice(at, start) + REDACTED;
			at = end;
		}
		return redacted + text.slice(at);
	}

	/** Where the forms are found, each form's overlapping finds as one range. */
	private ranges(text: string, first: boolean): Array<[number, number]> {
		if (text.length < this.shortest) return [];
		const folded = foldAscii(text);
		if (this.whole.has(folded)) return [[0, text.length]];
		const found: Array<[number, number]> = [];
		const search = (form: string, alone: boolean): boolean => {
			let last: [number, number] | undefined;
			for (let at = folded.indexOf(form); at !== -1; at = folded.indexOf(form, at + 1)) {
				const end = at + form.length;
				if (alone && (isWordCharacter(folded, at - 1) || isWordCharacter(folded, end))) continue;
				if (first) {
					found.push([at, end]);
					return true;
				}
				if (last && at <= last[1]) last[1] = end;
				else found.push((last = [at, end]));
			}
			return false;
		};
		for (const form of this.contained) if (search(form, false)) return found;
		for (const form of this.standalone) if (search(form, true)) return found;
		return found;
	}
}

/** Ranges sorted by start, overlapping ones joined. */
function merged(ranges: Array<[number, number]>): Array<[number, number]> {
	const joined: Array<[number, number]> = [];
	for (const [start, end] of [...ranges].sort((a, b) => a[0] - b[0])) {
		const last = joined.at(-1);
		if (last && start <= last[1]) last[1] = Math.max(last[1], end);
		else joined.push([start, end]);
	}
	return joined;
}

/** The text with ASCII letters in lower case: every other character, and so every position, as it was. */
function foldAscii(text: string): string {
	return /[A-Z]/.test(text) ? text.replace(/[A-Z]+/g, (letters) => letters.toLowerCase()) : text;
}

function isWordCharacter(text: string, index: number): boolean {
	return index >= 0 && index < text.length && /[A-Za-z0-9_]/.test(text[index]);
}

/** The request an item carries, as n8n's Webhook node and the trigger give it: its headers and its query. */
export function requestOfItem(json: unknown, ownerTokens: readonly string[] = []): AnswerRequest {
	const fields = isRecord(json) ? json : {};
	return { headers: fields.headers, query: fields.query, ownerTokens };
}

/** What a Buffer's toJSON gives. */
const isBufferJson = (value: unknown): value is { type: 'Buffer'; data: number[] } =>
	isRecord(value) && value.type === 'Buffer' && Array.isArray(value.data) && value.data.every((byte) => typeof byte === 'number');

const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** A copy without the dropped members, names repaired; own members only, `__proto__` kept as a member. */
function keptMembers(
	value: Record<string, unknown>,
	leaks: (text: string) => boolean,
	count: (bytes: number) => void,
): Record<string, unknown> {
	const copy: Record<string, unknown> = {};
	for (const key of Object.keys(value)) {
		count(Buffer.byteLength(key, 'utf8'));
		const name = storableText(key).text;
		// A credential can be a member's name too (a node that groups items by a header's value).
		if (isWithheldMember(name) || leaks(name)) continue;
		Object.defineProperty(copy, name, { value: value[key], enumerable: true, writable: true, configurable: true });
	}
	return copy;
}

/** Every text that would give a credential away: credential headers' and query parameters' values, their parts, owner tokens, the trigger's own secrets. */
function secretsOf(request: AnswerRequest): string[] {
	const secrets = new Set<string>();
	const add = (text: string) => asWrittenAndRepaired(text).forEach((secret) => secrets.add(secret));
	for (const token of request.ownerTokens ?? []) if (typeof token === 'string') add(token);
	for (const secret of request.ownSecrets ?? []) if (typeof secret === 'string') ownSecretForms(secret.trim()).forEach(add);
	const credentialHeaders = new Set((request.credentialHeaders ?? []).map((name) => name.trim().toLowerCase()));
	for (const source of [request.headers, request.query]) {
		if (source === null || typeof source !== 'object') continue;
		for (const [name, value] of Object.entries(source as Record<string, unknown>)) {
			const named = source === request.headers && credentialHeaders.has(name.toLowerCase());
			if (!named && !isSecretHeader(name)) continue;
			for (const text of [value].flat()) if (typeof text === 'string') credentialParts(text).forEach(add);
		}
	}
	return [...secrets];
}

/**
 * A secret trimmed, as written and as the store repairs it (a lone surrogate, a NUL): a text is searched before it is
 * repaired too. None for blank text.
 */
function asWrittenAndRepaired(text: string): string[] {
	const trimmed = text.trim();
	return trimmed === '' ? [] : [trimmed, storableText(trimmed).text];
}

/**
 * The value, the credential after its scheme ("Basic …", "Bearer …"), Basic's decoded user:password and
 * password, and the signatures of a list (`t=…,v1=…`: each `name=value` part and its value; a part of
 * digits only is a timestamp, not a secret).
 */
const MAX_CREDENTIAL_PARTS = 16;

function credentialParts(value: string): string[] {
	const parts = [value];
	// A real signature header has a few parts; the whole value stays a secret, its first parts too. Each part is looked
	// for in every text of an answer or message: a sender's thousand parts would make that its work a thousand times.
	for (const part of value.split(',', MAX_CREDENTIAL_PARTS).map((piece) => piece.trim())) {
		const signature = /^[A-Za-z0-9_-]+=(.+)$/.exec(part);
		if (signature && !/^\d+$/.test(signature[1])) parts.push(...[part, signature[1]].filter((text) => text.length >= MIN_CONTAINED_SECRET));
	}
	const scheme = /^\s*(\S+)\s+(\S+)\s*$/.exec(value);
	if (!scheme) return parts;
	parts.push(scheme[2]);
	if (scheme[1].toLowerCase() === 'basic') {
		const decoded = Buffer.from(scheme[2], 'base64').toString('utf8');
		const separator = decoded.indexOf(':');
		if (separator >= 0) parts.push(decoded, decoded.slice(separator + 1));
	}
	return parts;
}
