import {
	NodeConnectionTypes,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
} from 'n8n-workflow';

import { eventKeyOf, objectKeyOf } from '../../lib/order/objectKey';
import type { EqualVersion, OrderDecision, VersionedItem } from '../../lib/store/contract';
import { parseVersion } from '../../lib/order/version';
import { CONNECTION_TEST, testConnection } from '../shared/credential';
import { STORE_NODE_DEFAULT_VERSION, STORE_NODE_VERSIONS } from '../shared/storeChoice';
import { itemRouting, outputsWithNotProcessed } from '../shared/notProcessed';
import { assertSafeSettleWiring } from '../shared/settlement';
import { orderStoreFor, type TableChoice } from '../shared/store';
import { executionIdentity, prepareItems, routeResults } from '../shared/reservationPipeline';
import { orderGuardProperties } from './description';

const NEWER = 0;
const STALE = 1;

export class IdempotencyOrderGuard implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Idempotency Order Guard',
		name: 'idempotencyOrderGuard',
		icon: { light: 'file:idempotencyOrderGuard.svg', dark: 'file:idempotencyOrderGuard.dark.svg' },
		group: ['transform'],
		// The Store default of each version (1 Postgres, 2 Embedded, 3 Automatic): nodes/shared/storeChoice.ts.
		version: STORE_NODE_VERSIONS,
		defaultVersion: STORE_NODE_DEFAULT_VERSION,
		subtitle: '={{ $parameter.equalVersion === "newer" ? "Newer or equal version passes" : "Only a newer version passes" }}',
		description: 'Let only the newest version of each business object through, so events that arrive out of order converge',
		defaults: { name: 'Idempotency Order Guard' },
		usableAsTool: true,
		inputs: [NodeConnectionTypes.Main],
		outputs: outputsWithNotProcessed(['Newer', 'Stale'], 'Not Checked'),
		// Only the Postgres store needs the credential: shown and required only when Store is Postgres.
		credentials: [
			{
				name: 'idempotencyPostgresApi',
				required: true,
				testedBy: 'idempotencyPostgresConnectionTest',
				displayOptions: { show: { store: ['postgres'] } },
			},
		],
		properties: orderGuardProperties,
	};

	methods = { credentialTest: { [CONNECTION_TEST]: testConnection } };

	// Items whose version was not checked leave through Not Checked under Continue, never through
	// Newer (the business step) or Stale (acknowledged as handled): see nodes/shared/notProcessed.ts.
	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const items = this.getInputData();
		const routing = itemRouting(this, 2);
		const { outputs, failAll } = routing;
		return await routing.run(items.length, async () => {
			try {
				assertSafeSettleWiring(this, NEWER);
			} catch (error) {
				failAll(
					error,
					items.map((_item, itemIndex) => itemIndex),
				);
				return;
			}
			const equalVersion = this.getNodeParameter('equalVersion', 0, 'stale') as EqualVersion;
			const table = this.getNodeParameter('options', 0, {}) as TableChoice;

			// Every item is read and checked before anything is written: a bad item never half-applies a batch.
			const prepared = await prepareItems(
				routing,
				items.length,
				(itemIndex): VersionedItem => ({
					objectKey: objectKeyOf(this.getNodeParameter('objectKey', itemIndex)),
					version: parseVersion(this.getNodeParameter('version', itemIndex)),
					eventKey: eventKeyOf(this.getNodeParameter('eventKey', itemIndex, '')),
				}),
			);
			if (prepared.length === 0) return;

			let decisions: OrderDecision[];
			try {
				const guard = await orderStoreFor(this, table);
				const { executionId, workflowId } = executionIdentity(this);
				decisions = await guard.advance(
					prepared.map((entry) => entry.value),
					{ equalVersion, executionId, workflowId },
				);
			} catch (error) {
				// Nothing was recorded: every item fails, so none is applied as if it were the newest.
				failAll(
					error,
					prepared.map((entry) => entry.itemIndex),
				);
				return;
			}

			routeResults(outputs, items, decisions, (decision, position) => {
				const { itemIndex } = prepared[position];
				return {
					output: decision.outcome === 'newer' ? NEWER : STALE,
					itemIndex,
					json: {
						...items[itemIndex].json,
						orderGuard: {
							objectKey: decision.objectKey,
							version: decision.version,
							outcome: decision.outcome,
							isNewer: decision.outcome === 'newer',
							currentVersion: decision.currentVersion,
							supersededInBatch: decision.supersededInBatch,
							staleCount: decision.staleCount,
							firstSeen: decision.firstSeen.toISOString(),
							updatedAt: decision.updatedAt.toISOString(),
						},
					},
				};
			});
		});
	}
}
