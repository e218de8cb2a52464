import type { INodeProperties } from 'n8n-workflow';

import { DEFAULT_CORRELATION_HEADER, DEFAULT_MAX_PAYLOAD_KB, MAX_PAYLOAD_KB_LIMIT } from '../../lib/evidence/replayEvidence';
import { presetOptions } from './providerOptions';
import { rawBodyPropertyOption } from './rawBody';
import { postgresOnly } from './storeChoice';
import { createTableOption, schemaNameOption, tableNameOption } from './tableOptions';

/*
 * The parameters of a key reservation that Idempotency Reserve and Idempotency Execute Query both
 * show (same names, same rules, same table options): one definition, each node lists them.
 */

/** The subtitle's words for each Key Source, as the option list names them (shared with Execute Query). */
export const KEY_SOURCE_SUBTITLE =
	'{{ {"auto": "event ID or hash", "bodyHash": "body hash", "custom": "custom key", "field": "field " + ($parameter.keyField || ""), "header": "header " + $parameter.headerName, "preset": "provider preset"}[$parameter.keySource] }}';

/** Reserve's replay evidence options; the one-transaction Execute Query node does not offer them. */
export const EVIDENCE_OPTION_NAMES: readonly string[] = ['correlationHeader', 'correlationId', 'maxPayloadKb', 'source', 'storePayload'];

export const SIGNATURE_NOTICE: INodeProperties = {
	displayName:
		'Verify the webhook signature before this node (Webhook Signature Verify), so a forged request can never reserve a real event ID',
	name: 'signatureNotice',
	type: 'notice',
	default: '',
};

/** Key Source and the parameters each source needs. */
export const KEY_SOURCE_PROPERTIES: INodeProperties[] = [
	{
		displayName: 'Key Source',
		name: 'keySource',
		type: 'options',
		noDataExpression: true,
		options: [
			{ name: 'Body Hash', value: 'bodyHash', description: 'Always a hash of the raw body (key sha256:…)' },
			{ name: 'Custom Value', value: 'custom', description: 'An expression, e.g. a business key like subscription_id:billing_period' },
			{
				name: 'Event ID, Else Body Hash',
				value: 'auto',
				description:
					"The body's event ID when it has one (key evt:…), else a hash of the raw body (key sha256:…): the hand-built recipe's rule",
			},
			{
				name: 'Field',
				value: 'field',
				description: 'A field of the item read without an expression, e.g. body.event_id (faster than Custom Value on big batches)',
			},
			{ name: 'Header', value: 'header', description: 'A request header such as Idempotency-Key or X-GitHub-Delivery' },
			{ name: 'Provider Preset', value: 'preset', description: "The provider's retry-stable ID (Stripe, GitHub, Shopify, …)" },
		],
		default: 'auto',
	},
	{
		displayName: 'Provider',
		name: 'preset',
		type: 'options',
		noDataExpression: true,
		displayOptions: { show: { keySource: ['preset'] } },
		options: presetOptions(),
		default: 'stripe',
	},
	{
		displayName: 'Header Name',
		name: 'headerName',
		type: 'string',
		displayOptions: { show: { keySource: ['header'] } },
		default: 'idempotency-key',
		placeholder: 'idempotency-key',
		description: 'Signature and timestamp headers are refused: they change on every retry. A header sent twice fails the item.',
	},
	{
		displayName: 'Field',
		name: 'keyField',
		type: 'string',
		noDataExpression: true,
		displayOptions: { show: { keySource: ['field'] } },
		default: 'body.id',
		placeholder: 'e.g. body.event_id',
		description:
			'Path of the key in the item (on a webhook item body.… or headers.…): member names with dots, [n] for array positions, e.g. body.items[0].event_id. Numbers beyond 2^53 are read exactly from the raw body.',
	},
	{
		displayName: 'Key Prefix',
		name: 'keyPrefix',
		type: 'string',
		displayOptions: { show: { keySource: ['field'] } },
		default: '',
		placeholder: 'e.g. stripe:',
		description: 'Text put before the value, so IDs from different sources cannot meet',
	},
	{
		displayName: 'Key',
		name: 'customKey',
		type: 'string',
		displayOptions: { show: { keySource: ['custom'] } },
		default: '',
		placeholder: "={{ $json.body.subscription_id + ':' + $json.body.billing_period }}",
		description: 'The value that identifies one business effect',
	},
];

/** The Options collection, as Idempotency Reserve shows it (Execute Query leaves out the evidence options). */
export const RESERVATION_OPTIONS: INodeProperties = {
	displayName: 'Options',
	name: 'options',
	type: 'collection',
	placeholder: 'Add Option',
	default: {},
	options: [
		{
			displayName: 'Correlation Header',
			name: 'correlationHeader',
			type: 'string',
			default: DEFAULT_CORRELATION_HEADER,
			placeholder: 'X-Request-ID',
			description:
				'With Correlation ID "Request Header, Else Execution ID": the request header to read, e.g. traceparent or X-Request-ID. Sent twice with different values, it is not used (the execution ID is, with a warning).',
		},
		{
			displayName: 'Correlation ID',
			name: 'correlationId',
			type: 'options',
			options: [
				{ name: 'Off', value: 'off' },
				{
					name: 'Request Header, Else Execution ID',
					value: 'header',
					description: 'The request header named in Correlation Header (traces a delivery from the sender), else the execution ID',
				},
				{ name: 'Execution ID', value: 'executionId', description: 'The n8n execution ID of this run' },
			],
			default: 'off',
			description:
				'Stores an ID with the key to trace a delivery from the sender to its side effect (Get Key and List Keys show it; at most 255 characters)',
		},
		postgresOnly(createTableOption),
		{
			displayName: 'Manual Runs',
			name: 'manualRuns',
			type: 'options',
			options: [
				{
					name: 'Use a Test Scope',
					value: 'testScope',
					description:
						'Runs started in the editor reserve keys under n8n-manual-test:, so they never turn a real delivery into a duplicate',
				},
				{ name: 'Reserve for Real', value: 'real', description: 'Runs started in the editor reserve the real keys' },
			],
			default: 'testScope',
			description: 'Whether a run started in the editor (for example with pinned data) reserves the real key',
		},
		{
			displayName: 'Max Payload Size (KB)',
			name: 'maxPayloadKb',
			type: 'number',
			typeOptions: { minValue: 1, maxValue: MAX_PAYLOAD_KB_LIMIT, numberPrecision: 0 },
			default: DEFAULT_MAX_PAYLOAD_KB,
			description: `With Store Payload on: a larger payload is not stored, but the key is still reserved and the item says so (idempotency.payloadStored = false). At most ${MAX_PAYLOAD_KB_LIMIT}.`,
		},
		{
			displayName: 'On Missing Key',
			name: 'onMissingKey',
			type: 'options',
			options: [
				{ name: 'Fall Back to Body Hash', value: 'bodyHash' },
				{ name: 'Fail', value: 'error' },
			],
			default: 'bodyHash',
			description: 'What to do when the chosen key source has no value for an item',
		},
		// Let Through is for an unreachable Postgres: an embedded file is never "unreachable".
		postgresOnly({
			displayName: 'On Store Unavailable',
			name: 'onStoreUnavailable',
			type: 'options',
			options: [
				{
					name: 'Fail',
					value: 'fail',
					description: 'Nothing goes on: the items fail (or leave through Not Reserved), so the provider retries',
				},
				{
					name: 'Let Through (Unverified)',
					value: 'letThrough',
					description:
						'While Postgres cannot be reached, items leave through New with idempotency.unverified = true: duplicates are NOT caught',
				},
			],
			default: 'fail',
			description: 'What to do when Postgres cannot be reached (only then: bad keys, a missing table or a refused password always fail)',
		}),
		{
			displayName: 'Output',
			name: 'output',
			type: 'options',
			options: [
				{
					name: 'Compact',
					value: 'compact',
					description: 'Key, outcome, isNew, owner token, attempts; lease end in Lease mode; stored response on duplicates',
				},
				{
					name: 'Full',
					value: 'full',
					description: 'Every column of the stored row as well (first and last seen, counts, expiry, reserving execution, …)',
				},
			],
			default: 'compact',
			description: 'How much of the reservation each item carries in idempotency. Compact is smaller and faster in big batches.',
		},
		{
			displayName: 'Payload Fingerprint',
			name: 'payloadFingerprint',
			type: 'options',
			options: [
				{ name: 'Off', value: 'off' },
				{ name: 'Flag Mismatch', value: 'flag', description: 'Duplicates with a different payload get idempotency.payloadMismatch = true' },
				{ name: 'Error on Mismatch', value: 'error', description: 'A duplicate key with a different payload fails the item' },
			],
			default: 'off',
			description: 'Whether to store a hash of the payload and compare it when the key comes again',
		},
		rawBodyPropertyOption,
		{
			displayName: 'Retention (Days)',
			name: 'retentionDays',
			type: 'number',
			typeOptions: { minValue: 0.0001 },
			default: 30,
			description: 'How long a key blocks duplicates; longer than the provider can resend (Stripe CLI: 30 days)',
		},
		postgresOnly(schemaNameOption),
		{
			displayName: 'Scope',
			name: 'scope',
			type: 'string',
			default: '',
			placeholder: 'stripe',
			description: 'Prefix (scope:key) so one table can serve several flows or tenants',
		},
		{
			displayName: 'Source',
			name: 'source',
			type: 'string',
			default: '',
			placeholder: 'stripe',
			description:
				'Who sent the event, stored with the key (at most 255 characters). Empty: the Provider when Key Source is Provider Preset, else the Scope, else nothing.',
		},
		{
			displayName: 'Store Payload',
			name: 'storePayload',
			type: 'boolean',
			default: false,
			description:
				"Whether to store the item's body with the key, so a failed event can be replayed from it (Get Key, List Keys). Off by default: payloads can hold personal data, and they take space; see Max Payload Size.",
		},
		tableNameOption,
	],
};

/** Lease (Seconds), shown in Lease mode; Reserve and the Idempotent Webhook trigger show it. */
export const LEASE_SECONDS_PROPERTY: INodeProperties = {
	displayName: 'Lease (Seconds)',
	name: 'leaseSeconds',
	type: 'number',
	typeOptions: { minValue: 1 },
	displayOptions: { show: { mode: ['lease'] } },
	default: 300,
	description: 'How long a run may take before another delivery can take the key over. Longer than your slowest business step.',
};

/** Options of Reserve's collection, by name, for a node that shows only some of them. */
export function reservationOptionsNamed(names: readonly string[]): INodeProperties[] {
	return (RESERVATION_OPTIONS.options as INodeProperties[]).filter((option) => names.includes(option.name));
}
