import type { INodeProperties, INodePropertyOptions } from 'n8n-workflow';

/*
 * Parameters shown for several operations: one object each, listed in the description of every
 * operation that shows it, its displayOptions naming them all.
 */

const ITEM_SOURCE: INodePropertyOptions = {
	name: 'Item',
	value: 'item',
	description: "The incoming item's idempotency object (from Idempotency Reserve, also on a business step's error output)",
};
const RESERVE_SOURCE: INodePropertyOptions = {
	name: 'Idempotency Reserve (Paired Item)',
	value: 'reserveNode',
	description: 'The reservation of the Idempotency Reserve item this item came from (its paired item), without an expression',
};
const CUSTOM_SOURCE: INodePropertyOptions = { name: 'Custom', value: 'custom', description: 'Key and owner token from expressions' };
const EXECUTION_SOURCE: INodePropertyOptions = {
	name: 'Failed Execution',
	value: 'execution',
	description: 'Every live reservation of one execution (Error Trigger workflows)',
};

const settleOperations = ['complete', 'release', 'fail'];

/**
 * Key From, for Complete, Release and Mark Failed: one parameter, one shape per operation group.
 * "Failed Execution" exists for Release and Mark Failed: both let the next delivery run the business
 * step again, which is what a failed run needs; completing its keys blind could lose an event whose
 * effect never happened.
 */
const KEY_FROM: INodeProperties[] = [
	{
		displayName: 'Key From',
		name: 'source',
		type: 'options',
		noDataExpression: true,
		displayOptions: { show: { operation: ['release', 'fail'] } },
		options: [ITEM_SOURCE, RESERVE_SOURCE, CUSTOM_SOURCE, EXECUTION_SOURCE],
		default: 'item',
	},
	{
		displayName: 'Key From',
		name: 'source',
		type: 'options',
		noDataExpression: true,
		displayOptions: { show: { operation: ['complete'] } },
		options: [ITEM_SOURCE, RESERVE_SOURCE, CUSTOM_SOURCE],
		default: 'item',
	},
];

/** Where Complete, Release and Mark Failed find the key and owner token they settle. */
export const OWNED_KEY_PARAMETERS: INodeProperties[] = [
	...KEY_FROM,
	{
		displayName: 'Reserve Node',
		name: 'reserveNodeName',
		type: 'string',
		noDataExpression: true,
		displayOptions: { show: { operation: settleOperations, source: ['reserveNode'] } },
		default: '',
		placeholder: 'e.g. Idempotency Reserve',
		// Shown under the field: an empty field reads as "still to fill in" without it.
		hint: 'Leave empty when only one Idempotency Reserve comes before this node',
		description:
			'Name of the Idempotency Reserve node whose key this node settles. Leave empty when there is only one before this node; name it when there are several.',
	},
	{
		displayName: 'Key',
		name: 'key',
		type: 'string',
		displayOptions: { show: { operation: settleOperations, source: ['custom'] } },
		default: "={{ $('Idempotency Reserve').item.json.idempotency.key }}",
		required: true,
	},
	{
		displayName: 'Owner Token',
		name: 'ownerToken',
		type: 'string',
		displayOptions: { show: { operation: settleOperations, source: ['custom'] } },
		typeOptions: { password: true },
		default: "={{ $('Idempotency Reserve').item.json.idempotency.ownerToken }}",
		required: true,
		description: 'The token Idempotency Reserve gave the run that owns the key; a run whose lease was taken over cannot settle it',
	},
];

/** Key From: Failed Execution, for Release and Mark Failed. */
export const FAILED_EXECUTION_PARAMETERS: INodeProperties[] = [
	{
		displayName: 'Execution ID',
		name: 'executionId',
		type: 'string',
		displayOptions: { show: { operation: ['release', 'fail'], source: ['execution'] } },
		default: '={{ $json.execution.id }}',
		required: true,
		description:
			"Execution whose live (lease-mode) reservations are released or marked failed; the default reads it from the Error Trigger's output",
	},
	// Execution ids repeat across n8n instances sharing a table; the workflow id tells them apart.
	// n8n does not save a parameter left at its default, so workflows saved before this parameter
	// existed read this default too: the Error Trigger's workflow id.
	{
		displayName: 'Workflow ID',
		name: 'workflowId',
		type: 'string',
		displayOptions: { show: { operation: ['release', 'fail'], source: ['execution'] } },
		default: '={{ $json.workflow?.id }}',
		required: true,
		description:
			"Workflow of that execution; only its reservations are settled (with the execution ID and this n8n instance). The default reads it from the Error Trigger's output.",
	},
];

/** Complete's and Settle After Business Step's response, stored for duplicates to replay. */
export const RESPONSE_TO_STORE: INodeProperties = {
	displayName: 'Response to Store',
	name: 'responseJson',
	type: 'json',
	displayOptions: { show: { operation: ['complete', 'settle'] } },
	default: '',
	description: 'Optional JSON that later duplicates carry as idempotency.response, for Respond to Webhook to replay',
};

/** Get Key's and List Keys' choice of a redacted preview instead of the stored payload and answer. */
export const PAYLOAD_PREVIEW: INodeProperties = {
	displayName: 'Redacted Payload Preview',
	name: 'payloadPreview',
	type: 'boolean',
	displayOptions: { show: { operation: ['getKey', 'listKeys'] } },
	default: false,
	description:
		'Whether to output payloadPreview, a short text of the stored payload (or of the body the Idempotent Webhook kept for a retry), instead of payload and response: headers left out, members named like a credential (token, secret, password, authorization, …) redacted, at most 400 characters; lastError with credentials in it (Bearer …, ?api_key=…) redacted. For pages people read.',
};
