import type { INodeProperties } from 'n8n-workflow';

import { KEY_SOURCE_PROPERTIES, LEASE_SECONDS_PROPERTY, RESERVATION_OPTIONS, SIGNATURE_NOTICE } from '../shared/reservationDescription';
import { storeProperties } from '../shared/storeChoice';

export const reserveProperties: INodeProperties[] = [
	SIGNATURE_NOTICE,
	...storeProperties,
	...KEY_SOURCE_PROPERTIES,
	{
		displayName: 'Mode',
		name: 'mode',
		type: 'options',
		noDataExpression: true,
		options: [
			{
				name: 'Permanent',
				value: 'permanent',
				description: 'Final at once (the hand-built recipe). Release the key if the business step fails.',
			},
			{
				name: 'Lease',
				value: 'lease',
				description: 'Final when an Idempotency Key node completes it; a crashed run frees the key when the lease ends. Adds In Progress.',
			},
		],
		default: 'permanent',
	},
	LEASE_SECONDS_PROPERTY,
	RESERVATION_OPTIONS,
];
