import type { INodeProperties, INodePropertyOptions } from 'n8n-workflow';

import { genericHmacProperties } from '../shared/genericHmac';
import { schemeOptions, toleranceProperty } from '../shared/providerOptions';
import { KEY_SOURCE_PROPERTIES, LEASE_SECONDS_PROPERTY, reservationOptionsNamed } from '../shared/reservationDescription';
import { embeddedFirstStoreProperties } from '../shared/storeChoice';

/*
 * The Idempotent Webhook trigger's parameters: the request (as n8n's Webhook node names them),
 * who may call, how the request is verified, and how its key is derived and reserved (as
 * Idempotency Reserve names them). The names are stored in workflows: keep them stable.
 */

/** The value of Signature Scheme that checks nothing; chosen on purpose, never a default. */
export const UNSIGNED = 'none';

/** Every scheme Webhook Signature Verify offers (Generic HMAC with its settings below), then "none", chosen on purpose. */
function triggerSchemeOptions(): INodePropertyOptions[] {
	return [
		...schemeOptions(),
		{
			name: 'None (Explicitly Unsigned)',
			value: UNSIGNED,
			description: 'The sender signs nothing: anyone who knows the URL can reserve an event ID',
		},
	];
}

export const idempotentWebhookProperties: INodeProperties[] = [
	{
		displayName: 'HTTP Method',
		name: 'httpMethod',
		type: 'options',
		options: ['DELETE', 'GET', 'PATCH', 'POST', 'PUT'].map((method) => ({ name: method, value: method })),
		default: 'POST',
		description: 'The HTTP method to listen to',
	},
	{
		displayName: 'Path',
		name: 'path',
		type: 'string',
		default: '',
		placeholder: 'webhook',
		required: true,
		description: 'The path to listen to, as in the Webhook node',
	},
	{
		displayName: 'Authentication',
		name: 'authentication',
		type: 'options',
		options: [
			{ name: 'Basic Auth', value: 'basicAuth' },
			{ name: 'Header Auth', value: 'headerAuth' },
			{ name: 'None', value: 'none' },
		],
		default: 'none',
		description: 'Who may call the webhook, checked before the signature (as in the Webhook node)',
	},
	{
		displayName: 'Signature Scheme',
		name: 'scheme',
		type: 'options',
		noDataExpression: true,
		options: triggerSchemeOptions(),
		default: 'stripe',
		description: 'How the sender signs its requests. A forged or stale request is answered 401 and reserves nothing.',
	},
	...genericHmacProperties,
	toleranceProperty,
	...embeddedFirstStoreProperties,
	...KEY_SOURCE_PROPERTIES,
	{
		displayName: 'Mode',
		name: 'mode',
		type: 'options',
		noDataExpression: true,
		options: [
			{ name: 'Permanent', value: 'permanent', description: 'Final at once: a copy of the event is a duplicate' },
			{ name: 'Lease', value: 'lease', description: 'Final when settled; a copy while it runs is answered 409' },
		],
		default: 'lease',
	},
	LEASE_SECONDS_PROPERTY,
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add Option',
		default: {},
		// The options the trigger reads, as Reserve names them; Reserve's others are not offered yet.
		options: reservationOptionsNamed(['onMissingKey', 'retentionDays', 'scope', 'tableName']),
	},
];
