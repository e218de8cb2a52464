import type { INodeProperties } from 'n8n-workflow';

import { EVIDENCE_OPTION_NAMES, KEY_SOURCE_PROPERTIES, RESERVATION_OPTIONS, SIGNATURE_NOTICE } from '../shared/reservationDescription';
import { withoutStoreCondition } from '../shared/storeChoice';

// The key settings are Idempotency Reserve's own (same names, same rules, same table options).
const reserveOptions: INodeProperties = {
	...RESERVATION_OPTIONS,
	// This node has no Store parameter (Postgres only): the Postgres options apply as they are.
	options: (RESERVATION_OPTIONS.options as INodeProperties[] | undefined)
		?.filter((option) => !EVIDENCE_OPTION_NAMES.includes(option.name))
		.map(withoutStoreCondition),
};

export const executeQueryProperties: INodeProperties[] = [
	{
		displayName:
			'This node works with Postgres only: its point is one transaction with your own Postgres, so it needs an Idempotency Postgres credential. With the Embedded store, use Idempotency Reserve, your business step, then Idempotency Key.',
		name: 'postgresOnlyNotice',
		type: 'notice',
		default: '',
	},
	SIGNATURE_NOTICE,
	...KEY_SOURCE_PROPERTIES,
	{
		// The reservation is final when the transaction commits: there is no lease to complete.
		displayName: 'Mode',
		name: 'mode',
		type: 'hidden',
		default: 'permanent',
	},
	{
		displayName:
			"The key and your query commit together or not at all. Use one statement with $1, $2, … placeholders and Query Parameters, and $idempotency_key for the key this node derived; it runs with the credential's rights.",
		name: 'queryNotice',
		type: 'notice',
		default: '',
	},
	{
		displayName: 'Query',
		name: 'query',
		type: 'string',
		typeOptions: { editor: 'sqlEditor', sqlDialect: 'PostgreSQL' },
		noDataExpression: true,
		required: true,
		default: '',
		placeholder: 'insert into payments (event_key, amount) values ($idempotency_key, $1) returning *',
		description:
			'One SQL statement, run only for a new key, in the same transaction as the reservation. $idempotency_key is the key this node derived (bound as a parameter).',
	},
	{
		displayName: 'Query Parameters',
		name: 'queryParameters',
		type: 'string',
		default: '',
		placeholder: '={{ [$json.body.data.object.amount, $json.body.type] }}',
		description:
			'The values for $1, $2, … as a list (an expression giving an array, or a JSON array). A single value is $1. Never write values into the query text.',
	},
	reserveOptions,
];
