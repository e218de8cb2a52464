import type { INodeProperties, INodePropertyOptions } from 'n8n-workflow';

import { genericHmacProperties } from '../shared/genericHmac';
import { schemeOptions, toleranceProperty } from '../shared/providerOptions';
import { KEY_SOURCE_PROPERTIES, LEASE_SECONDS_PROPERTY, reservationOptionsNamed } from '../shared/reservationDescription';
import { triggerStoreProperties } from '../shared/storeChoice';
import { MAX_EVENTS_PER_DELIVERY } from '../../lib/webhook/events';
import { MAX_INBOX_ITEM_BYTES } from '../../lib/webhook/inbox';

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

/** Version 2 keys each workflow apart unless this is on. */
export const SHARE_KEYS_ACROSS_WORKFLOWS: INodeProperties = {
	displayName: 'Share Keys Across Workflows',
	name: 'shareKeysAcrossWorkflows',
	type: 'boolean',
	default: false,
	description:
		"Whether workflows on the same store share keys, so an event runs in only one of them (keys as in version 1). Off: each key starts with wf: and this workflow's ID, so two workflows receiving one event both run it.",
};

/** Where the events are when one delivery carries several (version 2 on); empty, its default, is one event per delivery. */
export const EVENTS_PATH: INodeProperties = {
	displayName: 'Events Path',
	name: 'eventsPath',
	type: 'string',
	default: '',
	placeholder: 'body.events',
	description: `Where the events are when one delivery carries several (HubSpot, SendGrid, Segment, Adyen): "body" when the body is an array of events, "body.events" when they are its member "events". Each event gets its own key (Key Source read from the event as if it were the body) and its own item; one execution runs the new ones. At most ${MAX_EVENTS_PER_DELIVERY} events per delivery. Empty: the body is one event.`,
};

/** Respond's values; When the Workflow Ends is what every workflow saved before Respond existed does. */
export const RESPOND = { workflowEnds: 'workflowEnds', atOnce: 'atOnce' } as const;

const AT_ONCE = { show: { respond: [RESPOND.atOnce] } };

/** When the sender is answered, and what the package keeps to retry an event itself (version 2 on). The defaults are INBOX_DEFAULTS (lib/webhook/inbox.ts), written out for n8n's lint. */
const RESPOND_PROPERTIES: INodeProperties[] = [
	{
		displayName: 'Respond',
		name: 'respond',
		type: 'options',
		noDataExpression: true,
		options: [
			{
				name: 'When the Workflow Ends',
				value: RESPOND.workflowEnds,
				description:
					"The sender waits for the run: 200 with the last node's answer, 500 when the step failed (the sender retries). For senders that wait long enough for the whole workflow.",
			},
			{
				name: 'At Once (Retry Failed Runs Here)',
				value: RESPOND.atOnce,
				description:
					'200 as soon as the event is verified and kept, before the workflow runs; a failed run is run again by n8n from the kept event. For senders that wait only seconds (Slack, Shopify, Sentry).',
			},
		],
		default: 'workflowEnds',
		displayOptions: { hide: { '@version': [1] } },
		description: 'When the sender gets its answer',
	},
	{
		displayName: `Each accepted event is kept with its request (without headers that carry a credential or a signature; at most ${MAX_INBOX_ITEM_BYTES / 1024 / 1024} MB, a larger one is answered when the workflow ends) until a run completes it. A failed run (or one whose n8n process died, after its lease) runs again from it; after the last attempt the event is dead-lettered: kept with its error until the key's retention ends, for a replay by hand. The workflow cannot wait (Wait, forms, approvals).`,
		name: 'atOnceNotice',
		type: 'notice',
		default: '',
		displayOptions: AT_ONCE,
	},
	{
		displayName: 'Response Body',
		name: 'acceptedBody',
		type: 'json',
		default: '{"received":true}',
		displayOptions: AT_ONCE,
		description: 'What every accepted delivery and every copy of it is answered with (200). Never data of the event.',
	},
	{
		displayName: 'Run Attempts',
		name: 'maxAttempts',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: 100 },
		default: 12,
		displayOptions: AT_ONCE,
		description: 'Runs of one event in all, the first included, before it is dead-lettered',
	},
	{
		displayName: 'First Retry After (Seconds)',
		name: 'firstRetrySeconds',
		type: 'number',
		typeOptions: { minValue: 1 },
		default: 30,
		displayOptions: AT_ONCE,
		description: 'The wait before the first retry; each next wait doubles, up to an hour, spread at random so retries do not bunch',
	},
	{
		displayName: 'Retry For (Hours)',
		name: 'retryForHours',
		type: 'number',
		typeOptions: { minValue: 0.01 },
		default: 24,
		displayOptions: AT_ONCE,
		description: 'No retry starts later than this after the event was accepted',
	},
];

/** The Options collection: the options the trigger reads, as Reserve names them (Reserve's others are not offered yet). */
function optionsOf(names: readonly string[], extra: INodeProperties[] = []): INodeProperties {
	return {
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add Option',
		default: {},
		options: [...reservationOptionsNamed(names), ...extra].sort((a, b) => a.displayName.localeCompare(b.displayName)),
	};
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
	...triggerStoreProperties,
	...RESPOND_PROPERTIES,
	...KEY_SOURCE_PROPERTIES,
	// Version 1 only: Permanent stays for the workflows saved with it; version 2 always takes a lease.
	{
		displayName: 'Mode',
		name: 'mode',
		type: 'options',
		noDataExpression: true,
		displayOptions: { show: { '@version': [1] } },
		options: [
			{
				name: 'Permanent (No Retry After a Crash)',
				value: 'permanent',
				description:
					'No lease. A copy while the run goes is answered 409; a failed run is retried; a run that dies before it ends is never run again, and its copies get 409 until the key expires.',
			},
			{ name: 'Lease', value: 'lease', description: 'Final when settled; a copy while it runs is answered 409' },
		],
		default: 'lease',
	},
	{ ...LEASE_SECONDS_PROPERTY, displayOptions: { show: { '@version': [1], mode: ['lease'] } } },
	{ ...LEASE_SECONDS_PROPERTY, displayOptions: { hide: { '@version': [1] } } },
	{ ...optionsOf(['onMissingKey', 'retentionDays', 'scope', 'tableName']), displayOptions: { show: { '@version': [1] } } },
	{
		...optionsOf(['onMissingKey', 'retentionDays', 'scope', 'tableName'], [EVENTS_PATH, SHARE_KEYS_ACROSS_WORKFLOWS]),
		displayOptions: { hide: { '@version': [1] } },
	},
];
