import { isUtf8 } from 'node:buffer';

import { InvalidConfigurationError, MissingKeyError, UnusableKeyError } from '../errors';
import { isJsonMediaType, mediaTypeOf, readHeader, saysMultipart } from '../headers';
import { canonicalJson } from './canonicalJson';
import { assertExactText } from './exactText';
import { parseFieldPath, valueAtPath, type PathStep } from './fieldPath';
import { assertUsableKeyHeader } from './forbiddenHeaders';
import { PROVIDER_PRESETS, isProviderPreset, type ProviderPreset, type PresetSource } from './presets';
import { memberAtPath } from './rawJsonMember';
import { sha256Hex } from './sha256';

/**
 * - `auto`: the seed recipe's rule: `evt:` + body.id, else the body hash.
 * - `preset`: the provider's stable id (see PROVIDER_PRESETS).
 * - `header`: a named request header, as `<header>:<value>`.
 * - `custom`: a value computed by the caller (an n8n expression such as a business key).
 * - `field`: the value at a field path of the item (e.g. `body.data.object.id`), after an optional prefix.
 * - `bodyHash`: always `sha256:` of the raw body (or of the canonical JSON when there is no raw body).
 */
export type KeyStrategy = 'auto' | 'preset' | 'header' | 'custom' | 'field' | 'bodyHash';
const KEY_STRATEGIES: KeyStrategy[] = ['auto', 'preset', 'header', 'custom', 'field', 'bodyHash'];
export type OnMissingKey = 'bodyHash' | 'error';

export interface KeyConfig {
	strategy: KeyStrategy;
	preset?: ProviderPreset;
	headerName?: string;
	/** For `field`: where the key is in the item, e.g. `body.data.object.id` (see parseFieldPath). */
	fieldPath?: string;
	/** For `field`: text put before the value, e.g. `stripe:`. */
	fieldPrefix?: string;
	/** Prepended as `<scope>:` so one table can serve many flows or tenants. */
	scope?: string;
	/**
	 * Keys of this workflow only: `wf:<id>:` goes before the scope, so two workflows receiving the
	 * same event never take each other's key. Absent: keys are shared by whoever derives them alike.
	 */
	workflowId?: string;
	/** An editor (manual) run: the key goes under MANUAL_TEST_PREFIX, apart from every real key. */
	manualTest?: boolean;
	onMissingKey: OnMissingKey;
}

export interface KeyInput {
	/** The parsed request body (or the item itself, for items that are not webhook requests). */
	body: unknown;
	headers?: Record<string, unknown>;
	/** The request's exact bytes, when the Webhook node's "Raw Body" option is on. */
	rawBody?: Buffer;
	/** The bytes the sender sent, when `rawBody` is one event of them written out again (Events Path). */
	sentBytes?: Buffer;
	/** A multipart request's files (n8n keeps them as the item's binaries), for its body hash. */
	files?: UploadedFile[];
	/** For the `custom` strategy. */
	customValue?: unknown;
	/**
	 * For the `field` strategy: the whole item the path starts from. For a webhook item `body` is
	 * its `body` member (the raw body's bytes are that member); for any other item, the item itself.
	 */
	item?: unknown;
}

/** One file of a multipart request, by its form field, as its body hash counts it. */
export interface UploadedFile {
	field: string;
	fileName?: string;
	mimeType?: string;
	sha256: string;
}

export type KeySourceLabel = 'event-id' | 'header' | 'custom' | 'field' | 'raw-body-hash' | 'canonical-json-hash';

/**
 * Where a key came from, in the words of the Key Source options (what outputs show). The stored
 * `key_source` column keeps the identifiers above: existing rows, and SQL that filters on them,
 * stay valid. A value the package did not write (a row inserted by hand) is shown as it is.
 */
export const KEY_SOURCE_WORDS: Record<KeySourceLabel, string> = {
	'event-id': 'Event ID',
	header: 'Header',
	custom: 'Custom Value',
	field: 'Field',
	'raw-body-hash': 'Body Hash',
	'canonical-json-hash': 'Body Hash (Parsed JSON, No Raw Body)',
};

export function keySourceInWords(stored: string | null): string | null {
	return stored !== null && Object.hasOwn(KEY_SOURCE_WORDS, stored) ? KEY_SOURCE_WORDS[stored as KeySourceLabel] : stored;
}

export interface DerivedKey {
	key: string;
	/** Where the key came from; `canonical-json-hash` says the raw body was not available. */
	keySource: KeySourceLabel;
	/** True when the key was too long for a btree index and was replaced by its SHA-256. */
	hashed: boolean;
	/** True when the key was put under MANUAL_TEST_PREFIX (a manual run in the editor). */
	manualTest?: boolean;
}

/**
 * Btree index entries are limited to about a third of a page (~2.7 kB); keys are kept well below
 * that. A longer key is replaced by its SHA-256 — never cut, since two keys sharing a long prefix
 * must stay different.
 */
export const MAX_KEY_BYTES = 512;
export const MAX_SCOPE_LENGTH = 100;

/**
 * The keys the package derives itself end in `sha256:<hex>` (body hash) or
 * `long-key-sha256:<hex>` (long key), after an optional `<scope>:`. A key built from user text
 * (an id, a header, a custom value) that ends the same way could equal one of them, so it is
 * refused; every other user text is kept exactly.
 */
/** Where keys reserved by manual (editor) runs live; no real key may start with it. */
export const MANUAL_TEST_PREFIX = 'n8n-manual-test:';

const DERIVED_FORM = /(?:^|:)(?:long-key-)?sha256:[0-9a-f]{64}$/;

/** Checks the configuration once per node run, before any item is read. */
export function validateKeyConfig(config: KeyConfig): void {
	if (config.strategy === 'preset' && !isProviderPreset(config.preset)) {
		throw new InvalidConfigurationError(`Unknown provider preset ${JSON.stringify(config.preset)}.`);
	}
	if (config.strategy === 'header') {
		if (!config.headerName?.trim()) throw new InvalidConfigurationError('Key source "Header" needs a header name.');
		assertUsableKeyHeader(config.headerName);
		assertExactText(config.headerName, 'header name');
	}
	if (config.strategy === 'field') {
		parseFieldPath(config.fieldPath as string);
		validatePrefix(config.fieldPrefix, 'field key prefix');
	}
	validateScope(config.scope);
	validateWorkflowId(config.workflowId);
	if (!KEY_STRATEGIES.includes(config.strategy)) {
		throw new InvalidConfigurationError(`Unknown key source ${JSON.stringify(config.strategy)}.`);
	}
	if (!['bodyHash', 'error'].includes(config.onMissingKey)) {
		throw new InvalidConfigurationError(`Unknown "on missing key" choice ${JSON.stringify(config.onMissingKey)}.`);
	}
}

/** Refuses a scope (which may come from a per-item expression) that is too long or not exact text. */
export function validateScope(scope: string | undefined): void {
	validatePrefix(scope, 'key scope');
}

/** A workflow's keys need its id: without one they would be everyone's. */
function validateWorkflowId(workflowId: string | undefined): void {
	if (workflowId === undefined) return;
	if (typeof workflowId !== 'string' || workflowId.trim() === '') {
		throw new InvalidConfigurationError('The workflow has no ID to keep its keys apart: save the workflow first.');
	}
	validatePrefix(workflowId, 'workflow ID');
}

function validatePrefix(prefix: string | undefined, what: string): void {
	if (prefix === undefined) return;
	if (typeof prefix !== 'string') throw new InvalidConfigurationError(`The ${what} must be text.`);
	if (prefix.length > MAX_SCOPE_LENGTH) {
		throw new InvalidConfigurationError(`The ${what} is longer than ${MAX_SCOPE_LENGTH} characters.`);
	}
	assertExactText(prefix, what);
}

/**
 * Derives one item's key. Throws MissingKeyError when there is none and fallback is off, and
 * UnusableKeyError when the value cannot be kept exactly (it is never rounded or replaced).
 */
export function deriveKey(input: KeyInput, config: KeyConfig): DerivedKey {
	validateScope(config.scope);
	validateWorkflowId(config.workflowId);
	const found = findStableId(input, config);
	if (found) {
		assertExactText(found.key, `key from ${describeExpectedKey(config)}`);
		assertReadExactly(found, input, config);
		const derived = finish(found.key, found.keySource, config);
		if (!derived.hashed && DERIVED_FORM.test(derived.key)) {
			throw new UnusableKeyError(
				`The key from ${describeExpectedKey(config)} ends like a key this node derives itself ("sha256:<hex>" or "long-key-sha256:<hex>"), so it could match another event's body-hash key. Use another prefix (for example "content-sha256:"). The item was not reserved.`,
			);
		}
		return derived;
	}
	if (config.strategy !== 'bodyHash' && config.onMissingKey === 'error') {
		throw new MissingKeyError(
			`No idempotency key: ${describeExpectedKey(config)} is missing or empty, and falling back to the body hash is off.`,
		);
	}
	// Every request without a body hashes alike (a GET, a DELETE, an empty POST): one key for all would answer
	// each later event as a copy of the first, and it would never run.
	// A multipart request's binary field is one of its files, not the request: its hash would key every submission
	// attaching that file alike. Its parsed fields are hashed instead, with every file it carries (two uploads that
	// differ only in their files are two events).
	const hashed = input.headers !== undefined && saysMultipart(input.headers) ? multipartHashed(input) : input;
	if (hasEmptyRequestBody(hashed)) {
		throw new MissingKeyError(
			`No idempotency key: the request has no body${config.strategy === 'bodyHash' ? '' : ` and ${describeExpectedKey(config)} is missing`}, so its body hash would be the same for every such request. Choose a Key Source that names the event (Field \`query.<name>\`, Header, Custom Value). The item was not reserved.`,
		);
	}
	const { key, keySource } = bodyHashKey(hashed);
	return finish(key, keySource, config);
}

const REPLACEMENT_CHARACTER = Buffer.from('\uFFFD', 'utf8');
const JSON_ESCAPED_REPLACEMENT = /\\u[fF]{3}[dD]/;

/**
 * Bytes that are not UTF-8 (or a form's percent escape of them) are read as U+FFFD, each invalid sequence alike:
 * two ids differing only there would get one key, and the second event would be taken for a copy of the first and
 * never run. Such a key is refused.
 */
function assertReadExactly(found: { key: string; keySource: KeySourceLabel }, input: KeyInput, config: KeyConfig): void {
	if (found.keySource !== 'event-id' && found.keySource !== 'field') return;
	if (!found.key.includes('\uFFFD')) return;
	// A multipart request's fields were decoded by n8n from bytes the package never sees (its raw bytes are a file).
	const bytes = input.headers !== undefined && saysMultipart(input.headers) ? undefined : (input.sentBytes ?? input.rawBody);
	// Without the request's bytes (Raw Body off) nothing can be told.
	if (bytes === undefined && input.rawBody === undefined) return;
	// Sent as the character itself, or as JSON's escape of it: anything else (invalid bytes, a form's `%FF`) read as it.
	if (
		bytes !== undefined &&
		isUtf8(bytes) &&
		(bytes.includes(REPLACEMENT_CHARACTER) || JSON_ESCAPED_REPLACEMENT.test(bytes.toString('latin1')))
	)
		return;
	throw new UnusableKeyError(
		`The key from ${describeExpectedKey(config)} holds bytes that are not UTF-8, which read as "\uFFFD" whatever they are, so two different events could get one key. Have the sender send UTF-8 (as JSON requires), or choose a Key Source that names the event in UTF-8 (a Header). The item was not reserved.`,
	);
}

/** Whether the key is read from the request's body (or its hash), which a request without a body cannot give. */
export function keyReadsTheBody(config: Pick<KeyConfig, 'strategy' | 'preset' | 'fieldPath'>): boolean {
	if (config.strategy === 'auto' || config.strategy === 'bodyHash') return true;
	if (config.strategy === 'preset') return isProviderPreset(config.preset) && PROVIDER_PRESETS[config.preset].from === 'body';
	if (config.strategy === 'field') return /^body(\.|\[|$)/.test((config.fieldPath ?? '').trim());
	return false;
}

/** A webhook request that carried no body: no bytes, or (without its raw bytes) an empty parsed body. */
function hasEmptyRequestBody(input: KeyInput): boolean {
	// An item that is no request (a row, a file read from disk) is hashed as it is, empty or not.
	if (input.headers === undefined) return false;
	if (input.rawBody !== undefined) return input.rawBody.length === 0;
	const { body } = input;
	return (
		body === undefined ||
		body === null ||
		body === '' ||
		(typeof body === 'object' && !Array.isArray(body) && Object.keys(body).length === 0)
	);
}

/** A multipart request as its body hash reads it: its fields, and its files (when it has any) by field. */
function multipartHashed(input: KeyInput): KeyInput {
	const files = [...(input.files ?? [])].sort((a, b) => (a.field < b.field ? -1 : a.field > b.field ? 1 : 0));
	return { ...input, rawBody: undefined, body: files.length === 0 ? input.body : { fields: input.body ?? {}, files } };
}

/** `sha256:` of the raw body when there is one, else of the canonical JSON of the parsed body. */
export function bodyHashKey(input: Pick<KeyInput, 'body' | 'rawBody'>): { key: string; keySource: KeySourceLabel } {
	if (input.rawBody) return { key: `sha256:${sha256Hex(input.rawBody)}`, keySource: 'raw-body-hash' };
	return { key: `sha256:${sha256Hex(canonicalJson(input.body))}`, keySource: 'canonical-json-hash' };
}

/** The payload fingerprint stored beside a key: the same bytes as the body-hash key, without prefix. */
export function payloadFingerprint(input: Pick<KeyInput, 'body' | 'rawBody'>): string {
	return input.rawBody ? sha256Hex(input.rawBody) : sha256Hex(canonicalJson(input.body));
}

function findStableId(input: KeyInput, config: KeyConfig): { key: string; keySource: KeySourceLabel } | undefined {
	switch (config.strategy) {
		case 'auto':
			return fromPreset(input, { from: 'body', field: 'id' });
		case 'preset':
			return fromPreset(input, PROVIDER_PRESETS[config.preset as ProviderPreset]);
		case 'header':
			return fromPreset(input, { from: 'header', names: [config.headerName as string] });
		case 'custom': {
			const value = scalarText(input.customValue, () => undefined, 'the custom key value');
			return value === undefined ? undefined : { key: value, keySource: 'custom' };
		}
		case 'field':
			return fromField(input, config);
		case 'bodyHash':
			return undefined;
	}
}

/**
 * The body a key is read from. A request's Content-Type and its charset are not signed, and n8n parses by them:
 * re-sent as text/plain or as a form, a genuine JSON delivery is text or one odd form field (a form parse of JSON
 * can even find a field inside one of its strings, `…?a=1&id=…`); as `…+json` n8n leaves it unparsed; with
 * `charset=latin1` its non-ASCII text reads otherwise. So unless n8n parsed the bytes as the JSON they are
 * (`application/json` in UTF-8: the body is that JSON, or what a node before made of it), a JSON object or array in
 * the raw bytes is read as UTF-8 JSON. Not for multipart: the binary field there is one of its files, not the request.
 */
export function keyBody(input: Pick<KeyInput, 'body' | 'rawBody' | 'headers'>): unknown {
	const { rawBody, headers, body } = input;
	if (rawBody === undefined || headers === undefined || saysMultipart(headers)) return body;
	if (parsedAsSent(headers) && body !== null && typeof body === 'object') return body;
	return rawJson(rawBody) ?? body;
}

/**
 * Whether n8n parses the request's body as the JSON its bytes are: `application/json` in UTF-8. Read as n8n's
 * content-type parser reads it (@n8n/backend-network parseContentType): the media type up to the first `;`, in lower
 * case and not trimmed; each parameter's name trimmed, its value trimmed, unquoted and URL-decoded, the last
 * `charset` winning, UTF-8 when none is said.
 */
function parsedAsSent(headers: Record<string, unknown>): boolean {
	const contentType = readHeader(headers, 'content-type');
	if (contentType.status !== 'present') return false;
	const [mediaType, ...parameters] = contentType.value.split(';');
	let charset = 'utf-8';
	for (const parameter of parameters) {
		const at = parameter.indexOf('=');
		if (at !== -1 && parameter.slice(0, at).toLowerCase().trim() === 'charset') charset = parameterValue(parameter.slice(at + 1));
	}
	return mediaType.toLowerCase() === 'application/json' && ['utf-8', 'utf8'].includes(charset.toLowerCase());
}

function parameterValue(raw: string): string {
	const unquote = (text: string) => (text.length >= 2 && text.startsWith('"') && text.endsWith('"') ? text.slice(1, -1) : text);
	const decode = (text: string) => {
		try {
			return decodeURIComponent(text);
		} catch {
			return text;
		}
	};
	const value = raw.trim();
	return value.startsWith('"') && value.endsWith('"') ? decode(unquote(value)) : unquote(decode(value));
}

/**
 * The value at `steps` of the body a key is read from (keyBody). Where the signed bytes lack it and the request
 * says JSON, it is read from the body as the item has it (`item`, by default the body): a node before may have
 * added it, the same for every copy. A form's or a text's parse of JSON bytes is never read past the bytes: it
 * could find a field inside one of their strings.
 */
function bodyValue(input: KeyInput, steps: readonly PathStep[], item: () => unknown = () => valueAtPath(input.body, steps)): unknown {
	const body = keyBody(input);
	if (body === input.body) return item();
	const fromBytes = valueAtPath(body, steps);
	return fromBytes === undefined && isJsonMediaType(mediaTypeOf(input.headers)) ? item() : fromBytes;
}

/**
 * The bytes as a JSON object or array (a leading byte order mark and white space left out); undefined for anything
 * else. UTF-8, or UTF-16 when the bytes begin with its byte order mark (a sender's choice no header needs to say).
 */
function rawJson(rawBody: Buffer): object | undefined {
	const text = textOfBytes(rawBody)
		.replace(/^\uFEFF/, '')
		.trimStart();
	if (!text.startsWith('{') && !text.startsWith('[')) return undefined;
	try {
		return JSON.parse(text) as object;
	} catch {
		return undefined;
	}
}

function textOfBytes(bytes: Buffer): string {
	if (bytes.length >= 2 && bytes[0] === 0xff && bytes[1] === 0xfe) return bytes.subarray(2).toString('utf16le');
	if (bytes.length >= 2 && bytes[0] === 0xfe && bytes[1] === 0xff) {
		const even = bytes.subarray(2, bytes.length - (bytes.length % 2));
		return Buffer.from(even).swap16().toString('utf16le');
	}
	return bytes.toString('utf8');
}

function fromPreset(input: KeyInput, source: PresetSource): { key: string; keySource: KeySourceLabel } | undefined {
	if (source.from === 'body') {
		const exactNumber = (parsed: number) => exactNumberText(input.rawBody, [source.field], parsed);
		const value = scalarText(bodyValue(input, [source.field]), exactNumber, `the body field "${source.field}"`);
		return value === undefined ? undefined : { key: `evt:${value}`, keySource: 'event-id' };
	}
	// Alternative names carry one id (webhook-id, svix-id: the signed value, not the name): the key
	// is under the first name, or a delivery re-sent with the id renamed would be New, still genuine.
	const keyName = (source.names[0] ?? '').trim().toLowerCase();
	for (const name of source.names) {
		const value = keyHeaderValue(input.headers, name);
		if (value !== undefined) return { key: `${keyName}:${value}`, keySource: 'header' };
	}
	return undefined;
}

function fromField(input: KeyInput, config: KeyConfig): { key: string; keySource: KeySourceLabel } | undefined {
	const path = config.fieldPath as string;
	const steps = parseFieldPath(path);
	const item = input.item ?? input.body;
	// The raw bytes are the webhook item's `body` (or the whole item when it is its own body).
	const rawSteps = item === input.body ? steps : steps[0] === 'body' ? steps.slice(1) : undefined;
	const exactNumber = (parsed: number) => (rawSteps ? exactNumberText(input.rawBody, rawSteps, parsed) : undefined);
	const found = rawSteps ? bodyValue(input, rawSteps, () => valueAtPath(item, steps)) : valueAtPath(item, steps);
	// A webhook item's `headers.<name>` is a header: a joined (repeated) value is refused as by Key Source Header.
	const header =
		item !== input.body && steps.length === 2 && steps[0] === 'headers' && typeof found === 'string' ? String(steps[1]) : undefined;
	const value = header === undefined ? scalarText(found, exactNumber, `the field "${path}"`) : keyHeaderValue({ [header]: found }, header);
	return value === undefined ? undefined : { key: (config.fieldPrefix ?? '') + value, keySource: 'field' };
}

/**
 * The header's value by the package's one header rule (lib/headers.ts), or undefined when it is
 * missing. A key header must say which event this is: sent more than once with different values,
 * or not text, it is refused, never one value picked. A value joined with ", " is refused even when
 * its parts are the same: it is how n8n hands over a header sent twice, earlier versions keyed on
 * the whole joined text, and a key must never change silently for the same delivery.
 */
function keyHeaderValue(headers: Record<string, unknown> | undefined, name: string): string | undefined {
	const header = readHeader(headers, name);
	const what = `The header "${name.trim().toLowerCase()}"`;
	const fix = 'Have the sender send it once, or choose the key with Key Source → Custom Value. The item was not reserved.';
	switch (header.status) {
		case 'missing':
			return undefined;
		case 'ambiguous':
			throw new UnusableKeyError(
				`${what} was sent more than once with different values, so it does not say which event this is (two deliveries of one event could get different keys). ${fix}`,
			);
		case 'notText':
			throw new UnusableKeyError(`${what} is not text (${header.type}), so it cannot be a key as it is. ${fix}`);
		case 'present':
			if (header.joined) {
				throw new UnusableKeyError(
					`${what} arrived as several values joined with ", " (how n8n hands over a header sent more than once), so it is not one id. ${fix}`,
				);
			}
			return header.value;
	}
}

/**
 * Strings and numbers can be keys; empty strings, objects, booleans and null cannot. A number is
 * used as its digits when it is a whole number within ±2^53 (1, 1.0 and 1e0 are all "1"); any
 * other number (beyond 2^53, a fraction, an exponent that leaves the safe range) may already have
 * been rounded, so only its exact text from the raw body is used, and without it the item is refused.
 */
function scalarText(value: unknown, exactNumber: (parsed: number) => string | undefined, what: string): string | undefined {
	if (typeof value === 'number') {
		if (Number.isSafeInteger(value)) return String(value);
		const exact = exactNumber(value);
		if (exact !== undefined) return exact;
		throw new UnusableKeyError(
			`The key from ${what} is a number that cannot be read exactly (${String(value)}: beyond 2^53, a fraction or an exponent), and rounding it could merge two events. Turn on the Webhook node's Raw Body option so the exact digits are used, or send the id as a string. The item was not reserved.`,
		);
	}
	if (typeof value === 'bigint') return value.toString();
	if (typeof value === 'string' && value.trim() !== '') return value.trim();
	return undefined;
}

/** The number token exactly as the raw body spells it, when it is the number the parsed body holds. */
function exactNumberText(rawBody: Buffer | undefined, path: readonly PathStep[], parsed: number): string | undefined {
	if (!rawBody || path.length === 0) return undefined;
	const token = memberAtPath(rawBody, path);
	if (token?.kind !== 'number' || !Object.is(Number(token.text), parsed)) return undefined;
	return token.text;
}

function finish(key: string, keySource: KeySourceLabel, config: KeyConfig): DerivedKey {
	const scoped = workflowPrefix(config.workflowId) + scopePrefix(config.scope);
	if ((scoped + key).startsWith(MANUAL_TEST_PREFIX)) {
		throw new UnusableKeyError(
			`The key starts with "${MANUAL_TEST_PREFIX}", which is kept for keys reserved by manual runs in the editor. Use another scope or prefix. The item was not reserved.`,
		);
	}
	if (config.workflowId === undefined && (scoped + key).startsWith(WORKFLOW_KEY_PREFIX)) {
		// Else a sender choosing the text of a shared key could take one workflow's key and be answered its event.
		throw new UnusableKeyError(
			`The key starts with "${WORKFLOW_KEY_PREFIX}", which is kept for the keys of one workflow (the Idempotent Webhook trigger, version 2). Use a scope or a prefix. The item was not reserved.`,
		);
	}
	const prefix = (config.manualTest ? MANUAL_TEST_PREFIX : '') + scoped;
	if (Buffer.byteLength(prefix + key, 'utf8') <= MAX_KEY_BYTES) {
		return { key: prefix + key, keySource, hashed: false, ...manualFlag(config) };
	}
	return { key: `${prefix}long-key-sha256:${sha256Hex(key)}`, keySource, hashed: true, ...manualFlag(config) };
}

function manualFlag(config: KeyConfig): Pick<DerivedKey, 'manualTest'> {
	return config.manualTest ? { manualTest: true } : {};
}

/** Where the keys of one workflow live; no key shared between workflows may start with it. */
const WORKFLOW_KEY_PREFIX = 'wf:';

function workflowPrefix(workflowId: string | undefined): string {
	return workflowId === undefined ? '' : `${WORKFLOW_KEY_PREFIX}${workflowId.trim()}:`;
}

function scopePrefix(scope: string | undefined): string {
	const trimmed = scope?.trim() ?? '';
	if (trimmed === '') return '';
	return trimmed.endsWith(':') ? trimmed : `${trimmed}:`;
}

function describeExpectedKey(config: KeyConfig): string {
	switch (config.strategy) {
		case 'auto':
			return 'the body field "id"';
		case 'preset': {
			const source = PROVIDER_PRESETS[config.preset as ProviderPreset];
			return source.from === 'body'
				? `the body field "${source.field}" (${config.preset} preset)`
				: `the header "${source.names.join('" or "')}" (${config.preset} preset)`;
		}
		case 'header':
			return `the header "${config.headerName}"`;
		case 'field':
			return `the field "${config.fieldPath}"`;
		default:
			return 'the custom key value';
	}
}
