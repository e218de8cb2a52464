import { InvalidConfigurationError, MissingKeyError } from '../errors';
import { canonicalJson } from './canonicalJson';
import { assertUsableKeyHeader } from './forbiddenHeaders';
import { PROVIDER_PRESETS, isProviderPreset, type ProviderPreset, type PresetSource } from './presets';
import { sha256Hex } from './sha256';

/**
 * - `auto`: the seed recipe's rule: `evt:` + body.id, else the body hash.
 * - `preset`: the provider's stable id (see PROVIDER_PRESETS).
 * - `header`: a named request header, as `<header>:<value>`.
 * - `custom`: a value computed by the caller (an n8n expression such as a business key).
 * - `bodyHash`: always `sha256:` of the raw body (or of the canonical JSON when there is no raw body).
 */
export type KeyStrategy = 'auto' | 'preset' | 'header' | 'custom' | 'bodyHash';
export type OnMissingKey = 'bodyHash' | 'error';

export interface KeyConfig {
	strategy: KeyStrategy;
	preset?: ProviderPreset;
	headerName?: string;
	/** Prepended as `<scope>:` so one table can serve many flows or tenants. */
	scope?: string;
	onMissingKey: OnMissingKey;
}

export interface KeyInput {
	/** The parsed request body (or the item itself, for items that are not webhook requests). */
	body: unknown;
	headers?: Record<string, unknown>;
	/** The request's exact bytes, when the Webhook node's "Raw Body" option is on. */
	rawBody?: Buffer;
	/** For the `custom` strategy. */
	customValue?: unknown;
}

export type KeySourceLabel =
	| 'event-id'
	| 'header'
	| 'custom'
	| 'raw-body-hash'
	| 'canonical-json-hash';

export interface DerivedKey {
	key: string;
	/** Where the key came from; `canonical-json-hash` says the raw body was not available. */
	keySource: KeySourceLabel;
	/** True when the key was too long for a btree index and was replaced by its SHA-256. */
	hashed: boolean;
}

/**
 * Btree index entries are limited to about a third of a page (~2.7 kB); keys are kept well below
 * that. A longer key is replaced by its SHA-256 — never cut, since two keys sharing a long prefix
 * must stay different.
 */
export const MAX_KEY_BYTES = 512;
export const MAX_SCOPE_LENGTH = 100;

/** Checks the configuration once per node run, before any item is read. */
export function validateKeyConfig(config: KeyConfig): void {
	if (config.strategy === 'preset' && !isProviderPreset(config.preset)) {
		throw new InvalidConfigurationError(`Unknown provider preset ${JSON.stringify(config.preset)}.`);
	}
	if (config.strategy === 'header') {
		if (!config.headerName?.trim()) throw new InvalidConfigurationError('Key source "Header" needs a header name.');
		assertUsableKeyHeader(config.headerName);
	}
	if (config.scope !== undefined && config.scope.length > MAX_SCOPE_LENGTH) {
		throw new InvalidConfigurationError(`The key scope is longer than ${MAX_SCOPE_LENGTH} characters.`);
	}
	if (!['auto', 'preset', 'header', 'custom', 'bodyHash'].includes(config.strategy)) {
		throw new InvalidConfigurationError(`Unknown key source ${JSON.stringify(config.strategy)}.`);
	}
	if (!['bodyHash', 'error'].includes(config.onMissingKey)) {
		throw new InvalidConfigurationError(`Unknown "on missing key" choice ${JSON.stringify(config.onMissingKey)}.`);
	}
}

/** Derives one item's key. Throws MissingKeyError when there is none and fallback is off. */
export function deriveKey(input: KeyInput, config: KeyConfig): DerivedKey {
	const found = findStableId(input, config);
	if (found) return finish(found.key, found.keySource, config.scope);
	if (config.strategy !== 'bodyHash' && config.onMissingKey === 'error') {
		throw new MissingKeyError(`No idempotency key: ${describeExpectedKey(config)} is missing or empty, and falling back to the body hash is off.`);
	}
	const { key, keySource } = bodyHashKey(input);
	return finish(key, keySource, config.scope);
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
			const value = scalarText(input.customValue);
			return value === undefined ? undefined : { key: value, keySource: 'custom' };
		}
		case 'bodyHash':
			return undefined;
	}
}

function fromPreset(input: KeyInput, source: PresetSource): { key: string; keySource: KeySourceLabel } | undefined {
	if (source.from === 'body') {
		const body = input.body;
		const value = body !== null && typeof body === 'object' && !Array.isArray(body)
			? scalarText((body as Record<string, unknown>)[source.field])
			: undefined;
		return value === undefined ? undefined : { key: `evt:${value}`, keySource: 'event-id' };
	}
	for (const name of source.names) {
		const value = scalarText(headerValue(input.headers, name));
		if (value !== undefined) return { key: `${name.trim().toLowerCase()}:${value}`, keySource: 'header' };
	}
	return undefined;
}

/** Header lookup is case-insensitive; a repeated header (array) uses its first value. */
function headerValue(headers: Record<string, unknown> | undefined, name: string): unknown {
	if (!headers) return undefined;
	const wanted = name.trim().toLowerCase();
	for (const [headerName, value] of Object.entries(headers)) {
		if (headerName.toLowerCase() === wanted) return Array.isArray(value) ? value[0] : value;
	}
	return undefined;
}

/** Strings and finite numbers can be keys; empty strings, objects, booleans and null cannot. */
function scalarText(value: unknown): string | undefined {
	if (typeof value === 'number' && Number.isFinite(value)) return String(value);
	if (typeof value === 'bigint') return value.toString();
	if (typeof value === 'string' && value.trim() !== '') return value.trim();
	return undefined;
}

function finish(key: string, keySource: KeySourceLabel, scope: string | undefined): DerivedKey {
	const prefix = scopePrefix(scope);
	if (Buffer.byteLength(prefix + key, 'utf8') <= MAX_KEY_BYTES) {
		return { key: prefix + key, keySource, hashed: false };
	}
	return { key: `${prefix}long-key-sha256:${sha256Hex(key)}`, keySource, hashed: true };
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
			return source.from === 'body' ? `the body field "${source.field}" (${config.preset} preset)` : `the header "${source.names.join('" or "')}" (${config.preset} preset)`;
		}
		case 'header':
			return `the header "${config.headerName}"`;
		default:
			return 'the custom key value';
	}
}
