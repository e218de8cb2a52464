import { InvalidConfigurationError } from '../errors';
import type { KeyConfig } from '../keys/deriveKey';
import { assertStorableEvidenceHeader } from '../keys/forbiddenHeaders';
import { cutText, storablePayload, storableText } from '../store/storableValues';
import { readHeader } from '../headers';
import type { ReplayEvidence } from '../types';

/*
 * What Idempotency Reserve stores per key so a failed event can be replayed and a
 * delivery traced (schema version 3). Evidence never costs an event: a payload over the cap, text
 * Postgres refuses, an ambiguous header — the key is reserved anyway and the item says what was
 * stored, repaired or left out. Only a broken option (a size that is not a whole number, a header
 * name that is not one) fails the item, like every other bad option.
 */

/** Where the correlation id comes from. */
export type CorrelationSource = 'off' | 'header' | 'executionId';

export interface EvidenceConfig {
	/** Store the payload (off by default: it may hold personal data, and it costs space). */
	storePayload: boolean;
	/** The largest payload stored, in KB of JSON text (1 KB = 1024 bytes). */
	maxPayloadKb: number;
	/** Who sent the event; empty: derived from the key settings (see defaultSource). */
	source?: string;
	correlation: CorrelationSource;
	/** The request header read when `correlation` is `header`. */
	correlationHeader: string;
}

export const DEFAULT_MAX_PAYLOAD_KB = 64;
/** The cap's upper bound: the size of a stored response (MAX_RESPONSE_BYTES). Every page of List Keys carries payloads. */
export const MAX_PAYLOAD_KB_LIMIT = 1024;
/** Longest source and correlation id stored (characters); also the limit of an n8n custom data value. */
export const MAX_EVIDENCE_TEXT_LENGTH = 255;
export const DEFAULT_CORRELATION_HEADER = 'traceparent';
/**
 * Most bytes of payloads one Reserve statement carries. A batch is one statement: 1000 items of
 * 1 MB would be one 1 GB parameter, past what the Postgres client can build (a JavaScript string
 * of ~512 MB) and what Postgres takes (1 GB per value), and then no key of the batch is reserved.
 */
export const MAX_BATCH_PAYLOAD_BYTES = 32 * 1024 * 1024;

// RFC 9110 token characters: what a header name may hold.
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

export function validateEvidenceConfig(config: EvidenceConfig): void {
	const kb = config.maxPayloadKb;
	if (!(Number.isInteger(kb) && kb >= 1 && kb <= MAX_PAYLOAD_KB_LIMIT)) {
		throw new InvalidConfigurationError(
			`Max Payload Size (KB) must be a whole number from 1 to ${MAX_PAYLOAD_KB_LIMIT}; it is ${JSON.stringify(kb)}.`,
		);
	}
	if (!['off', 'header', 'executionId'].includes(config.correlation)) {
		throw new InvalidConfigurationError(
			`Unknown Correlation ID choice ${JSON.stringify(config.correlation)}: use off, header or executionId.`,
		);
	}
	if (config.correlation === 'header' && !HEADER_NAME.test(config.correlationHeader.trim())) {
		throw new InvalidConfigurationError(
			`Correlation Header must be a header name such as traceparent or x-request-id; it is ${JSON.stringify(config.correlationHeader.slice(0, 80))}.`,
		);
	}
	if (config.correlation === 'header') assertStorableEvidenceHeader(config.correlationHeader, 'Correlation Header');
}

/** The source stored when the Source option is empty: the Provider Preset's id, else the Scope, else none. */
export function defaultSource(key: KeyConfig): string | undefined {
	if (key.strategy === 'preset' && key.preset) return key.preset;
	return key.scope?.trim() || undefined;
}

export interface EvidenceInput {
	/** What the key was derived from: the webhook item's body, or the whole item when it is not a webhook item. */
	payload: unknown;
	/**
	 * The request's exact bytes, for a webhook item with the Webhook node's Raw Body on: numbers
	 * JavaScript rounds are stored with their exact digits from it (see storablePayload).
	 */
	rawBody?: Buffer;
	headers?: Record<string, unknown>;
	executionId: string;
	/** defaultSource of the item's key settings. */
	derivedSource?: string;
}

/** What the item is told about its evidence. */
export interface EvidenceReport {
	/** Only with Store Payload on: whether this delivery's payload went into the statement. */
	payloadStored?: boolean;
	payloadBytes?: number | null;
	payloadNotStoredReason?: string;
	/** Only with a Correlation ID choice: this delivery's correlation id. */
	correlationId?: string | null;
	warnings: string[];
}

/** The evidence of one item, storable as it is, and what to tell the item about it. */
export function replayEvidence(config: EvidenceConfig, input: EvidenceInput): { evidence: ReplayEvidence; report: EvidenceReport } {
	const report: EvidenceReport = { warnings: [] };
	const evidence: ReplayEvidence = { payloadJson: null, payloadBytes: null, source: null, correlationId: null };

	if (config.storePayload) {
		const payload = storablePayload(input.payload, config.maxPayloadKb * 1024, input.rawBody);
		evidence.payloadJson = payload.json;
		evidence.payloadBytes = payload.bytes;
		report.payloadStored = payload.json !== null;
		report.payloadBytes = payload.bytes;
		if (payload.notStoredReason) report.payloadNotStoredReason = payload.notStoredReason;
		report.warnings.push(...payload.warnings);
	}

	const source = String(config.source ?? '').trim() || input.derivedSource;
	if (source) evidence.source = storableEvidenceText(source, 'source', report.warnings);

	if (config.correlation !== 'off') {
		evidence.correlationId = storableEvidenceText(correlationIdOf(config, input, report.warnings), 'correlation id', report.warnings);
		report.correlationId = evidence.correlationId;
	}
	return { evidence, report };
}

/**
 * Keeps the payloads of one statement within `maxBytes`, items in order: a payload that would pass
 * it is left out (its key is still reserved) and its report says why. Changes the entries given.
 */
export function capBatchPayloads(
	entries: Array<{ evidence: ReplayEvidence; report: EvidenceReport }>,
	maxBytes = MAX_BATCH_PAYLOAD_BYTES,
): void {
	let total = 0;
	for (const { evidence, report } of entries) {
		if (evidence.payloadJson === null || evidence.payloadBytes === null) continue;
		if (total + evidence.payloadBytes <= maxBytes) {
			total += evidence.payloadBytes;
			continue;
		}
		evidence.payloadJson = null;
		report.payloadStored = false;
		report.payloadNotStoredReason = `The payload was not stored: the payloads of this run's items passed ${maxBytes / 1024 / 1024} MB, the most one reservation statement carries. The key was reserved without it; run fewer items at a time (for example with Loop Over Items) to store every payload.`;
	}
}

/**
 * The header's value, else the execution id. A header sent more than once with different values,
 * or with a value that is not text, is not guessed at (the package's one header rule, as for
 * signatures and keys): the execution id is used, with a warning.
 */
function correlationIdOf(config: EvidenceConfig, input: EvidenceInput, warnings: string[]): string {
	if (config.correlation === 'executionId') return input.executionId;
	const name = config.correlationHeader.trim();
	const header = readHeader(input.headers, name);
	if (header.status === 'present') return header.value;
	if (header.status === 'ambiguous') {
		warnings.push(
			`The header "${name}" was sent more than once with different values; the correlation id is the n8n execution id instead.`,
		);
	}
	if (header.status === 'notText') {
		warnings.push(`The header "${name}" is not text (${header.type}); the correlation id is the n8n execution id instead.`);
	}
	return input.executionId;
}

/** Repaired (NUL, lone surrogates) and cut to MAX_EVIDENCE_TEXT_LENGTH, with a warning for each. */
function storableEvidenceText(text: string, what: string, warnings: string[]): string {
	const repaired = storableText(text);
	if (repaired.changed)
		warnings.push(`The ${what} had NUL characters or broken Unicode (lone surrogates); they were replaced with U+FFFD (�).`);
	// A source or trace id is one line: a newline or an escape sequence from a sender (or an item
	// not from a Webhook node, whose headers no HTTP parser checked) must not reach whoever shows it.
	const oneLine = repaired.text.replace(CONTROL_CHARACTERS, '\uFFFD');
	if (oneLine !== repaired.text)
		warnings.push(`The ${what} had control characters (a newline, a tab, an escape); they were replaced with U+FFFD (�).`);
	const cut = cutText(oneLine, MAX_EVIDENCE_TEXT_LENGTH);
	if (cut.length < oneLine.length) {
		warnings.push(`The ${what} was ${oneLine.length} characters long; only its first ${MAX_EVIDENCE_TEXT_LENGTH} were stored.`);
	}
	return cut;
}

// Unicode's control characters (Cc): C0, DEL and C1 (NUL is already storableText's U+FFFD).
const CONTROL_CHARACTERS = /\p{Cc}/gu;
