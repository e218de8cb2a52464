import { SignatureConfigError } from './errors';
import { readFirstHeader, readHeader, type HeaderValue } from '../headers';
import { decodeBase64, decodeHex } from './hmac';
import { decodeStandardWebhooksSecret } from './secrets';
import { parseUnixSeconds } from './timestamp';
import type { GenericHmacOptions, HeaderBag, HmacAlgorithm, SignatureFailureReason, SignatureScheme } from './types';

/** What a scheme extracts from a request before any secret is involved. */
export interface SignedRequest {
	algorithm: HmacAlgorithm;
	/** Signatures the sender claims, decoded to bytes; at least one. Any of them may match. */
	candidates: Buffer[];
	/** The exact bytes the sender signed. */
	content: Buffer;
	/** The signed timestamp in Unix seconds, for schemes that sign one. */
	timestampSeconds?: number;
}

/** Either a request ready to verify, or the reason it cannot be. */
export type ParseResult = { ok: true; request: SignedRequest } | { ok: false; reason: SignatureFailureReason };

type SchemeParser = (headers: HeaderBag, rawBody: Buffer, generic?: GenericHmacOptions) => ParseResult;

const fail = (reason: SignatureFailureReason): ParseResult => ({ ok: false, reason });

const asIs = (secret: string): string => secret;

/** `"{prefix}{rawBody}"` without decoding the body: signatures are over bytes, not text. */
function prefixed(prefix: string, rawBody: Buffer): Buffer {
	return Buffer.concat([Buffer.from(prefix, 'utf8'), rawBody]);
}

/** The reason for a signature header that is not usable as a single value. */
function headerProblem(header: Exclude<HeaderValue, { status: 'present' }>): SignatureFailureReason {
	return header.status === 'missing' ? 'missing_header' : 'malformed_header';
}

type TimestampResult = { ok: true; seconds: number; text: string } | { ok: false; reason: SignatureFailureReason };

/** Reads a timestamp header, keeping the text as sent because that is what was signed. */
function readTimestamp(header: HeaderValue): TimestampResult {
	if (header.status === 'missing') return { ok: false, reason: 'missing_timestamp' };
	// A repeated timestamp header would let the sender choose which value the window sees.
	if (header.status !== 'present') return { ok: false, reason: 'malformed_timestamp' };
	const seconds = parseUnixSeconds(header.value);
	return seconds === undefined ? { ok: false, reason: 'malformed_timestamp' } : { ok: true, seconds, text: header.value };
}

/** `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>…]`; other versions (`v0`) are ignored, as Stripe's SDK does. */
const stripe: SchemeParser = (headers, rawBody) => {
	const header = readHeader(headers, 'stripe-signature');
	if (header.status !== 'present') return fail(headerProblem(header));
	const timestamps: string[] = [];
	const signatures: string[] = [];
	for (const part of header.value.split(',')) {
		const separator = part.indexOf('=');
		if (separator < 0) continue;
		const key = part.slice(0, separator).trim();
		const value = part.slice(separator + 1).trim();
		if (key === 't') timestamps.push(value);
		else if (key === 'v1') signatures.push(value);
	}
	// Nothing Stripe-shaped at all: a garbled header rather than one that lacks its timestamp.
	if (timestamps.length === 0 && signatures.length === 0) return fail('malformed_header');
	if (timestamps.length === 0) return fail('missing_timestamp');
	// Two timestamps would let the sender choose which one the window sees.
	if (timestamps.length > 1) return fail('malformed_header');
	const seconds = parseUnixSeconds(timestamps[0] as string);
	if (seconds === undefined) return fail('malformed_timestamp');
	const candidates = decodeAll(signatures, decodeHex);
	if (candidates.length === 0) return fail('malformed_header');
	return {
		ok: true,
		request: {
			algorithm: 'sha256',
			candidates,
			content: prefixed(`${timestamps[0] as string}.`, rawBody),
			timestampSeconds: seconds,
		},
	};
};

/** `X-Hub-Signature-256: sha256=<hex>` over the raw body. */
const github: SchemeParser = (headers, rawBody) => bodySignature(headers, 'x-hub-signature-256', 'sha256=', decodeHex, rawBody);

/** `X-Shopify-Hmac-Sha256: <base64>` over the raw body. */
const shopify: SchemeParser = (headers, rawBody) => bodySignature(headers, 'x-shopify-hmac-sha256', '', decodeBase64, rawBody);

/** `X-Slack-Signature: v0=<hex>` over `"v0:{ts}:{rawBody}"`, `ts` from `X-Slack-Request-Timestamp`. */
const slack: SchemeParser = (headers, rawBody) => {
	const candidate = readSingleSignature(headers, 'x-slack-signature', 'v0=', decodeHex);
	if (!Buffer.isBuffer(candidate)) return fail(candidate);
	const timestamp = readTimestamp(readHeader(headers, 'x-slack-request-timestamp'));
	if (!timestamp.ok) return fail(timestamp.reason);
	return {
		ok: true,
		request: {
			algorithm: 'sha256',
			candidates: [candidate],
			content: prefixed(`v0:${timestamp.text}:`, rawBody),
			timestampSeconds: timestamp.seconds,
		},
	};
};

/**
 * Standard Webhooks (and Svix, its origin): `webhook-signature: v1,<base64> [v1,<base64>…]` over
 * `"{webhook-id}.{webhook-timestamp}.{rawBody}"`, keyed with the base64-decoded `whsec_` secret.
 * The unbranded `webhook-*` headers win over `svix-*`; signature versions other than `v1`
 * (e.g. the asymmetric `v1a`) are ignored.
 */
const standardWebhooks: SchemeParser = (headers, rawBody) => {
	const header = readFirstHeader(headers, ['webhook-signature', 'svix-signature']);
	if (header.status !== 'present') return fail(headerProblem(header));
	const signatures: string[] = [];
	for (const entry of header.value.split(/\s+/)) {
		const separator = entry.indexOf(',');
		if (separator >= 0 && entry.slice(0, separator) === 'v1') signatures.push(entry.slice(separator + 1));
	}
	const candidates = decodeAll(signatures, decodeBase64);
	if (candidates.length === 0) return fail('malformed_header');
	const id = readFirstHeader(headers, ['webhook-id', 'svix-id']);
	if (id.status !== 'present') return fail(headerProblem(id));
	const timestamp = readTimestamp(readFirstHeader(headers, ['webhook-timestamp', 'svix-timestamp']));
	if (!timestamp.ok) return fail(timestamp.reason);
	return {
		ok: true,
		request: {
			algorithm: 'sha256',
			candidates,
			content: prefixed(`${id.value}.${timestamp.text}.`, rawBody),
			timestampSeconds: timestamp.seconds,
		},
	};
};

/** A configurable HMAC; see {@link GenericHmacOptions}. */
const generic: SchemeParser = (headers, rawBody, options) => {
	const settings = validateGeneric(options);
	const decode = settings.encoding === 'hex' ? decodeHex : decodeBase64;
	const candidate = readSingleSignature(headers, settings.signatureHeader, settings.signaturePrefix ?? '', decode);
	if (!Buffer.isBuffer(candidate)) return fail(candidate);
	const request: SignedRequest = { algorithm: settings.algorithm, candidates: [candidate], content: rawBody };
	if (settings.signedContent === 'body') return { ok: true, request };
	const timestamp = readTimestamp(readHeader(headers, settings.timestampHeader as string));
	if (!timestamp.ok) return fail(timestamp.reason);
	return {
		ok: true,
		request: { ...request, content: prefixed(`${timestamp.text}.`, rawBody), timestampSeconds: timestamp.seconds },
	};
};

/** How a scheme reads a request and turns a configured secret into its HMAC key. */
export interface SchemeDefinition {
	parse: SchemeParser;
	/** @throws SignatureConfigError when the secret cannot be used by this scheme. */
	deriveKey: (secret: string) => string | Buffer;
}

/** Every scheme. Most providers use the secret's UTF-8 bytes as they are, `whsec_` included. */
export const SCHEMES: Readonly<Record<SignatureScheme, SchemeDefinition>> = {
	stripe: { parse: stripe, deriveKey: asIs },
	github: { parse: github, deriveKey: asIs },
	shopify: { parse: shopify, deriveKey: asIs },
	slack: { parse: slack, deriveKey: asIs },
	standardWebhooks: { parse: standardWebhooks, deriveKey: decodeStandardWebhooksSecret },
	generic: { parse: generic, deriveKey: asIs },
};

const HMAC_ALGORITHMS: readonly string[] = ['sha1', 'sha256', 'sha512'];
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Checks the generic settings once, before any request data is looked at.
 *
 * @throws SignatureConfigError when a setting is missing or invalid.
 */
function validateGeneric(options: GenericHmacOptions | undefined): GenericHmacOptions {
	if (options === undefined) throw new SignatureConfigError('The generic scheme needs its HMAC settings');
	if (!HMAC_ALGORITHMS.includes(options.algorithm)) {
		throw new SignatureConfigError(`Unsupported HMAC algorithm "${options.algorithm}": use sha1, sha256 or sha512`);
	}
	if (options.encoding !== 'hex' && options.encoding !== 'base64') {
		throw new SignatureConfigError(`Unsupported signature encoding "${options.encoding}": use hex or base64`);
	}
	if (!HEADER_NAME.test(options.signatureHeader)) {
		throw new SignatureConfigError(`"${options.signatureHeader}" is not a valid signature header name`);
	}
	if (options.signedContent === 'timestampDotBody') {
		if (!HEADER_NAME.test(options.timestampHeader ?? '')) {
			throw new SignatureConfigError(`"${options.timestampHeader ?? ''}" is not a valid timestamp header name`);
		}
	} else if (options.signedContent !== 'body') {
		throw new SignatureConfigError(`Unsupported signed content "${String(options.signedContent)}": use body or timestampDotBody`);
	}
	return options;
}

/** A header holding one `{prefix}{encoded digest}` signature over the raw body. */
function bodySignature(
	headers: HeaderBag,
	headerName: string,
	prefix: string,
	decode: (text: string) => Buffer | undefined,
	rawBody: Buffer,
): ParseResult {
	const candidate = readSingleSignature(headers, headerName, prefix, decode);
	if (!Buffer.isBuffer(candidate)) return fail(candidate);
	return { ok: true, request: { algorithm: 'sha256', candidates: [candidate], content: rawBody } };
}

/** Reads a header holding one `{prefix}{encoded digest}` signature: its bytes, or why there are none. */
function readSingleSignature(
	headers: HeaderBag,
	headerName: string,
	prefix: string,
	decode: (text: string) => Buffer | undefined,
): Buffer | SignatureFailureReason {
	const header = readHeader(headers, headerName);
	if (header.status !== 'present') return headerProblem(header);
	const signature = stripPrefix(header.value, prefix);
	const candidate = signature === undefined ? undefined : decode(signature);
	return candidate ?? 'malformed_header';
}

/** The text after `prefix`, or `undefined` when it does not start with it. */
function stripPrefix(value: string, prefix: string): string | undefined {
	return value.startsWith(prefix) ? value.slice(prefix.length) : undefined;
}

/** Decodes the well-formed signatures and drops the rest: one garbled entry must not hide a valid one. */
function decodeAll(signatures: readonly string[], decode: (text: string) => Buffer | undefined): Buffer[] {
	const decoded: Buffer[] = [];
	for (const signature of signatures) {
		const bytes = decode(signature);
		if (bytes !== undefined) decoded.push(bytes);
	}
	return decoded;
}
