import type { INodeProperties } from 'n8n-workflow';

import { schemeOptions, toleranceProperty } from '../shared/providerOptions';
import { genericHmacProperties } from '../shared/genericHmac';
import { rawBodyPropertyOption } from '../shared/rawBody';

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
	...genericHmacProperties,
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
