import type { INodeProperties } from 'n8n-workflow';

import { schemeOptions, toleranceProperty } from '../shared/providerOptions';
import { rawBodyPropertyOption } from '../shared/rawBody';


const showForGeneric = { show: { scheme: ['generic'] } };

/** The node's parameters; the names are the contract stored in workflows, keep them stable. */
export const properties: INodeProperties[] = [
	{
		displayName:
			'Put this node right after the Webhook node, with the Webhook option "Raw Body" turned on, and before any reservation: a forged request must never reserve a real event ID.',
		name: 'notice',
		type: 'notice',
		default: '',
	},
	{
		displayName: 'Scheme',
		name: 'scheme',
		type: 'options',
		noDataExpression: true,
		default: 'stripe',
		description: 'How the sender signs its requests',
		options: schemeOptions(),
	},
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
	toleranceProperty,
	{
		displayName: 'On Invalid Signature',
		name: 'onInvalid',
		type: 'options',
		noDataExpression: true,
		default: 'route',
		options: [
			{
				name: 'Send to Invalid Output',
				value: 'route',
				description: 'The item goes to the Invalid output, with the reason in its signature field',
			},
			{
				name: 'Stop With Error',
				value: 'throw',
				description: 'The execution fails with an error naming the reason',
			},
		],
		description: 'What happens to a request whose signature does not verify',
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add Option',
		default: {},
		options: [
			{
				displayName: 'Headers Field',
				name: 'headersField',
				type: 'string',
				default: 'headers',
				description: 'Field of the input item that holds the request headers; the Webhook node puts them in "headers"',
			},
			rawBodyPropertyOption,
		],
	},
];
