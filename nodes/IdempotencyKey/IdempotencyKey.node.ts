import { NodeConnectionTypes, type INodeType, type INodeTypeDescription } from 'n8n-workflow';

import { CONNECTION_TEST, testConnection } from '../shared/credential';
import { STORE_NODE_DEFAULT_VERSION, STORE_NODE_VERSIONS } from '../shared/storeChoice';
import { keyProperties, OUTPUTS_BY_OPERATION, SUBTITLE_BY_OPERATION } from './actions/nodeDescription';
import { router } from './actions/router';

/** One operation per module in actions/ (see actions/operations.ts): this class only names the node. */
export class IdempotencyKey implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Idempotency Key',
		name: 'idempotencyKey',
		icon: { light: 'file:idempotencyKey.svg', dark: 'file:idempotencyKey.dark.svg' },
		group: ['transform'],
		// The Store default of each version (1 Postgres, 2 Embedded, 3 Automatic): nodes/shared/storeChoice.ts.
		version: STORE_NODE_VERSIONS,
		defaultVersion: STORE_NODE_DEFAULT_VERSION,
		subtitle: SUBTITLE_BY_OPERATION,
		description:
			'Complete, release on error, mark failed, clean up, read, count or claim for replay idempotency keys reserved by Idempotency Reserve',
		defaults: { name: 'Idempotency Key' },
		usableAsTool: true,
		inputs: [NodeConnectionTypes.Main],
		outputs: OUTPUTS_BY_OPERATION,
		// Only the Postgres store needs the credential: shown and required only when Store is Postgres.
		credentials: [
			{
				name: 'idempotencyPostgresApi',
				required: true,
				testedBy: 'idempotencyPostgresConnectionTest',
				displayOptions: { show: { store: ['postgres'] } },
			},
		],
		properties: keyProperties,
	};

	methods = { credentialTest: { [CONNECTION_TEST]: testConnection } };

	execute = router;
}
