import type { INodeProperties, INodePropertyOptions } from 'n8n-workflow';

import { postgresOnly, storeProperties } from '../shared/storeChoice';
import { schemaNameOption, tableNameOption } from '../shared/tableOptions';

const settleOperations = ['complete', 'release', 'fail'];

const ITEM_SOURCE: INodePropertyOptions = {
	name: 'Item',
	value: 'item',
	description: "The incoming item's idempotency object (from Idempotency Reserve, also on a business step's error output)",
};
const RESERVE_SOURCE: INodePropertyOptions = {
	name: 'Idempotency Reserve (Paired Item)',
	value: 'reserveNode',
	description:
		'The reservation of the Idempotency Reserve item this item came from (its paired item), without an expression',
};
const CUSTOM_SOURCE: INodePropertyOptions = { name: 'Custom', value: 'custom', description: 'Key and owner token from expressions' };
const EXECUTION_SOURCE: INodePropertyOptions = {
	name: 'Failed Execution',
	value: 'execution',
	description: 'Every live reservation of one execution (Error Trigger workflows)',
};

/**
 * Mark Failed's default error message. A failed node's items on its error output carry the text as
 * `error` (a string: Code node, most nodes) or as `message` beside an `error` object without one
 * (the Postgres node); an Error Trigger item carries it in `execution.error.message`. A superset of
 * the first default (`error` only): n8n does not save a parameter left at its default, so workflows
 * saved with that one get this one, and read the same text wherever the first found one.
 */
export const FAIL_ERROR_MESSAGE_DEFAULT =
	"={{ (typeof $json.error === 'object' ? $json.error?.message : $json.error) || $json.message || $json.execution?.error?.message }}";

export const keyProperties: INodeProperties[] = [
	...storeProperties,
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		options: [
			{
				name: 'Claim for Replay',
				value: 'claimForReplay',
				action: 'Claim a stored key for replay',
				description:
					'Take over a failed key, or one whose lease ran out, to process its stored payload again; never a completed or held key',
			},
			{
				name: 'Complete',
				value: 'complete',
				action: 'Complete a reservation',
				description: 'Make a lease-mode reservation final, optionally storing the response for duplicates to replay',
			},
			{
				name: 'Delete Expired Keys',
				value: 'cleanup',
				action: 'Delete expired keys',
				description: 'Delete keys past retention in batches (for a scheduled cleanup workflow)',
			},
			{
				name: 'Get Key',
				value: 'getKey',
				action: 'Get a stored key',
				description: 'Read the stored record of one key: status, attempts, last error, stored response and payload (or found: false)',
			},
			{
				name: 'Get Stats',
				value: 'stats',
				action: 'Get key stats',
				description: 'Counts by status, stuck leases, and new keys, duplicates, reclaims and failures within a window (for a daily report)',
			},
			{
				name: 'List Keys',
				value: 'listKeys',
				action: 'List stored keys',
				description: 'One page of stored keys and their payloads, filtered by status, stuck lease, age or key prefix (a dead-letter view)',
			},
			{
				name: 'Mark Failed',
				value: 'fail',
				action: 'Mark a reservation failed',
				description: 'Keep the key with the error message; the next delivery is processed again',
			},
			{
				name: 'Release',
				value: 'release',
				action: 'Release a reservation',
				description: "Delete the key after a failed business step, so the provider's retry is processed",
			},
			{
				name: 'Settle After Business Step',
				value: 'settle',
				action: 'Settle a reservation after the business step',
				description:
					'Beside the business step, below it: completes the key if n8n ran the step without error (any output), else fails it',
			},
		],
		default: 'release',
	},
	// "Failed Execution" exists for Release and Mark Failed: both let the next delivery run the business
	// step again, which is what a failed run needs; completing its keys blind could lose an event whose
	// effect never happened. One parameter per operation group, same name.
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
	{
		displayName: 'Execution ID',
		name: 'executionId',
		type: 'string',
		displayOptions: { show: { operation: ['release', 'fail'], source: ['execution'] } },
		default: '={{ $json.execution.id }}',
		required: true,
		description: 'Execution whose live (lease-mode) reservations are released or marked failed; the default reads it from the Error Trigger\'s output',
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
	{
		displayName:
			'Connect this node to the same output as your business step, below it (n8n runs that output top to bottom). Set On Error: Continue on the business step\'s nodes. The key is completed when n8n ran them without error, and marked failed when one failed, whatever they returned. Keep this node\'s On Error at Stop Workflow.',
		name: 'settleNotice',
		type: 'notice',
		displayOptions: { show: { operation: ['settle'] } },
		default: '',
	},
	{
		displayName: 'Response to Store',
		name: 'responseJson',
		type: 'json',
		displayOptions: { show: { operation: ['complete', 'settle'] } },
		default: '',
		description: 'Optional JSON that later duplicates carry as idempotency.response, for Respond to Webhook to replay',
	},
	{
		displayName: 'Error Message',
		name: 'errorMessage',
		type: 'string',
		displayOptions: { show: { operation: ['fail'] } },
		default: FAIL_ERROR_MESSAGE_DEFAULT,
		description: "Stored as the key's lastError. The default reads a Code node's error, a Postgres node's message and an Error Trigger's error.",
	},
	{
		displayName: 'Retention (Days)',
		name: 'retentionDays',
		type: 'number',
		typeOptions: { minValue: 0.0001 },
		displayOptions: { show: { operation: ['cleanup'] } },
		default: 30,
		description:
			"Keys are deleted when their retention ends, the one Idempotency Reserve gave them when it last reserved them (a retry or reclaim extends it), and never under a running lease. This value applies only to keys without one (e.g. the hand-built recipe's rows), counted from first seen: use the Reserve node's Retention.",
	},
	{
		displayName: 'Batch Size',
		name: 'batchSize',
		type: 'number',
		typeOptions: { minValue: 1 },
		displayOptions: { show: { operation: ['cleanup'] } },
		default: 10000,
		description: 'Rows per DELETE; small batches keep locks short',
	},
	{
		displayName: 'Time Budget (Seconds)',
		name: 'timeBudgetSeconds',
		type: 'number',
		typeOptions: { minValue: 1 },
		displayOptions: { show: { operation: ['cleanup'] } },
		default: 60,
		description: 'Stop starting new batches after this long; the next run continues',
	},
	{
		displayName: 'Key',
		name: 'lookupKey',
		type: 'string',
		displayOptions: { show: { operation: ['getKey'] } },
		default: '',
		required: true,
		placeholder: 'e.g. stripe:evt_1NXqb2',
		description: 'The stored key, including any scope prefix, as Idempotency Reserve output it in idempotency.key',
	},
	{
		displayName: 'Key',
		name: 'replayKey',
		type: 'string',
		displayOptions: { show: { operation: ['claimForReplay'] } },
		default: '={{ $json.key }}',
		required: true,
		description: 'The stored key, exactly as List Keys or Get Key output it (hashed keys such as sha256:… included)',
	},
	{
		displayName: 'Lease (Seconds)',
		name: 'leaseSeconds',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: 604800 },
		displayOptions: { show: { operation: ['claimForReplay'] } },
		default: 300,
		description:
			'How long the replay owns the key: longer than the business step takes. Until then a redelivery of the event answers In Progress; after it, another run may take the key over.',
	},
	{
		displayName: 'Retention (Days)',
		name: 'retentionDays',
		type: 'number',
		typeOptions: { minValue: 0.0001 },
		displayOptions: { show: { operation: ['claimForReplay'] } },
		default: 30,
		description: "How long the key keeps catching duplicates, counted from the claim (as Idempotency Reserve's Retention)",
	},
	{
		displayName: 'Window (Hours)',
		name: 'windowHours',
		type: 'number',
		typeOptions: { minValue: 0.01, maxValue: 8784 },
		displayOptions: { show: { operation: ['stats'] } },
		default: 24,
		description: 'The window counts cover keys first seen (new) or last seen (duplicates, reclaims, failures) within this many hours',
	},
	{
		displayName: 'Limit',
		name: 'limit',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: 1000 },
		displayOptions: { show: { operation: ['listKeys'] } },
		default: 50,
		description: 'Max number of results to return',
	},
	{
		displayName: 'After Key',
		name: 'afterKey',
		type: 'string',
		displayOptions: { show: { operation: ['listKeys'] } },
		default: '',
		description: "Empty for the first page; for the next one, the previous page's nextPageAfterKey",
	},
	{
		displayName: 'Filters',
		name: 'listFilters',
		type: 'collection',
		placeholder: 'Add Filter',
		displayOptions: { show: { operation: ['listKeys'] } },
		default: {},
		options: [
			{
				displayName: 'First Seen More Than (Hours) Ago',
				name: 'olderThanHours',
				type: 'number',
				typeOptions: { minValue: 0 },
				default: 24,
			},
			{
				displayName: 'Key Prefix',
				name: 'keyPrefix',
				type: 'string',
				default: '',
				placeholder: 'e.g. stripe:',
			},
			{
				displayName: 'Status',
				name: 'status',
				type: 'options',
				options: [
					{ name: 'Any', value: 'any' },
					{ name: 'Completed', value: 'completed' },
					{ name: 'Failed', value: 'failed', description: 'Marked failed: the next delivery is processed again' },
					{ name: 'Processing', value: 'processing' },
					{
						name: 'Replayable (Failed or Lease Expired)',
						value: 'replayable',
						description: 'Failed, or still processing after the lease ran out: the keys a replay can take over',
					},
				],
				default: 'any',
			},
			{
				displayName: 'Stuck Leases Only',
				name: 'stuckLeasesOnly',
				type: 'boolean',
				default: false,
				description: 'Whether to list only keys still processing after their lease ran out (the run died or hung)',
			},
		],
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add Option',
		default: {},
		options: [postgresOnly(schemaNameOption), tableNameOption],
	},
];
