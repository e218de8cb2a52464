import type { INodeProperties } from 'n8n-workflow';

import { DEFAULT_ORDER_TABLE } from '../../lib/store/rules';
import { postgresOnly, storeProperties } from '../shared/storeChoice';
import { createTableOption, schemaNameOption } from '../shared/tableOptions';

export const orderGuardProperties: INodeProperties[] = [
	{
		displayName:
			'Put this node after Idempotency Reserve: Reserve drops repeated deliveries of one event, the Order Guard drops older versions of an object that arrive late',
		name: 'orderNotice',
		type: 'notice',
		default: '',
	},
	...storeProperties,
	{
		displayName: 'Object Key',
		name: 'objectKey',
		type: 'string',
		required: true,
		default: '',
		placeholder: 'stripe:customer:{{ $json.body.data.object.customer }}',
		description:
			"Names the business object whose versions are compared (one customer, one order): text with expressions, e.g. a prefix and the object's ID",
	},
	{
		displayName: 'Version',
		name: 'version',
		type: 'string',
		required: true,
		default: '',
		placeholder: '={{ $json.body.created }}',
		description:
			"Higher means newer: a number (a sequence, or a Unix time such as Stripe's created) or an ISO 8601 date-time with a time zone. Numbers above 2^53 must come as text.",
	},
	{
		displayName: 'Equal Version Is',
		name: 'equalVersion',
		type: 'options',
		noDataExpression: true,
		options: [
			{
				name: 'Stale',
				value: 'stale',
				description: 'Only a higher version passes (the event that set the version still passes when it is retried)',
			},
			{
				name: 'Newer',
				value: 'newer',
				description:
					'A version equal to the highest seen passes too: for coarse versions (whole seconds), when your write refuses an older version and decides between equal ones',
			},
		],
		default: 'stale',
	},
	{
		displayName: 'Event Key',
		name: 'eventKey',
		type: 'string',
		default: '={{ $json.idempotency ? $json.idempotency.key : "" }}',
		description:
			"The event's own key (by default the one Idempotency Reserve added). If the run that set a version fails and the event is retried, it passes again instead of being stopped by its own version.",
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add Option',
		default: {},
		options: [
			postgresOnly(createTableOption),
			postgresOnly(schemaNameOption),
			{
				displayName: 'Table Name',
				name: 'tableName',
				type: 'string',
				default: DEFAULT_ORDER_TABLE,
				description: 'Letters, digits and underscores only (validated, then quoted). Not the idempotency keys table.',
			},
		],
	},
];
