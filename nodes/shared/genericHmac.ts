import type { INodeProperties } from 'n8n-workflow';

import type { GenericHmacOptions, HmacAlgorithm, SignatureEncoding } from '../../lib/signature';

/*
 * The Generic HMAC scheme's settings, shown when Scheme (Signature Scheme) is Generic HMAC: one
 * description and one reader for Webhook Signature Verify and the Idempotent Webhook trigger. The
 * names are stored in workflows: keep them stable.
 */

const showForGeneric = { show: { scheme: ['generic'] } };

export const genericHmacProperties: INodeProperties[] = [
	{
		displayName: 'Algorithm',
		name: 'algorithm',
		type: 'options',
		displayOptions: showForGeneric,
		default: 'sha256',
		options: [
			{ name: 'SHA-1', value: 'sha1' },
			{ name: 'SHA-256', value: 'sha256' },
			{ name: 'SHA-512', value: 'sha512' },
		],
		description: 'Hash function of the HMAC',
	},
	{
		displayName: 'Encoding',
		name: 'encoding',
		type: 'options',
		displayOptions: showForGeneric,
		default: 'hex',
		options: [
			{ name: 'Base64', value: 'base64' },
			{ name: 'Hex', value: 'hex' },
		],
		description: 'How the signature header writes the digest',
	},
	{
		displayName: 'Signature Header',
		name: 'signatureHeader',
		type: 'string',
		displayOptions: showForGeneric,
		default: 'X-Signature',
		required: true,
		description: 'Name of the header that carries the signature (any case)',
	},
	{
		displayName: 'Signature Prefix',
		name: 'signaturePrefix',
		type: 'string',
		displayOptions: showForGeneric,
		default: '',
		placeholder: 'sha256=',
		description: 'Text in front of the digest in the header, if any, e.g. sha256=',
	},
	{
		displayName: 'Signed Content',
		name: 'signedContent',
		type: 'options',
		displayOptions: showForGeneric,
		default: 'body',
		options: [
			{ name: 'Raw Body', value: 'body', description: 'The request body exactly as received' },
			{
				name: 'Timestamp.Body',
				value: 'timestampDotBody',
				description: 'The timestamp header value, a dot, then the raw body; the timestamp is checked against the tolerance',
			},
		],
		description: 'What the sender signs',
	},
	{
		displayName: 'Timestamp Header',
		name: 'timestampHeader',
		type: 'string',
		displayOptions: { show: { scheme: ['generic'], signedContent: ['timestampDotBody'] } },
		default: 'X-Timestamp',
		required: true,
		description: 'Name of the header with the Unix timestamp in seconds',
	},
];

/** Reads a parameter by name, with the value to take when it is not set (each node's getNodeParameter). */
export type ParameterReader = (name: string, fallback: unknown) => unknown;

/** The Generic HMAC settings; Timestamp Header only when the timestamp is signed. */
export function readGenericHmac(read: ParameterReader): GenericHmacOptions {
	const signedContent = read('signedContent', 'body') as GenericHmacOptions['signedContent'];
	return {
		algorithm: read('algorithm', 'sha256') as HmacAlgorithm,
		encoding: read('encoding', 'hex') as SignatureEncoding,
		signatureHeader: (read('signatureHeader', '') as string).trim(),
		signaturePrefix: read('signaturePrefix', '') as string,
		signedContent,
		timestampHeader: signedContent === 'timestampDotBody' ? (read('timestampHeader', '') as string).trim() : undefined,
	};
}
