import {
	NodeConnectionTypes,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
} from 'n8n-workflow';

import { eventKeyOf, objectKeyOf } from '../../lib/order/objectKey';
import type { EqualVersion, OrderDecision, VersionedItem } from '../../lib/order/orderGuard';
import { parseVersion } from '../../lib/order/version';
import { CONNECTION_TEST, testConnection } from '../shared/credential';
import { STORE_NODE_DEFAULT_VERSION, STORE_NODE_VERSIONS } from '../shared/storeChoice';
import { itemRouting, outputsWithNotProcessed } from '../shared/notProcessed';
import { assertSafeSettleWiring } from '../shared/settleWiring';
import { orderStoreFor, type TableChoice } from '../shared/store';
import { orderGuardProperties } from './description';

const NEWER = 0;
const STALE = 1;

export class IdempotencyOrderGuard implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Idempotency Order Guard',
		name: 'idempotencyOrderGuard',
		icon: { light: 'file:idempotencyOrderGuard.svg', dark: 'file:idempotencyOrderGuard.dark.svg' },
		group: ['transform'],
		// 2: Store defaults to Embedded; version 1 (workflows saved before the Store parameter) keeps Postgres.
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
		const { outputs, failItem, failAll } = routing;
		return await routing.run(items.length, async () => {
			try {
				assertSafeSettleWiring(this, NEWER);
			} catch (error) {
				failAll(error, items.map((_item, itemIndex) => itemIndex));
				return;
			}
			const equalVersion = this.getNodeParameter('equalVersion', 0, 'stale') as EqualVersion;
			const table = this.getNodeParameter('options', 0, {}) as TableChoice;

			// Every item is read and checked before anything is written: a bad item never half-applies a batch.
			const pending: Array<{ itemIndex: number; versioned: VersionedItem }> = [];
			for (let itemIndex = 0; itemIndex < items.length; itemIndex++) {
				try {
					pending.push({
						itemIndex,
						versioned: {
							objectKey: objectKeyOf(this.getNodeParameter('objectKey', itemIndex)),
							version: parseVersion(this.getNodeParameter('version', itemIndex)),
							eventKey: eventKeyOf(this.getNodeParameter('eventKey', itemIndex, '')),
						},
					});
				} catch (error) {
					failItem(error, itemIndex);
				}
			}
			if (pending.length === 0) return;

			let decisions: OrderDecision[];
			try {
				const guard = await orderStoreFor(this, table);
				decisions = await guard.advance(
					pending.map((entry) => entry.versioned),
					{ equalVersion, executionId: this.getExecutionId(), workflowId: String(this.getWorkflow().id ?? '') },
				);
			} catch (error) {
				// Nothing was recorded: every item fails, so none is applied as if it were the newest.
				failAll(error, pending.map((entry) => entry.itemIndex));
				return;
			}

			for (const [position, decision] of decisions.entries()) {
				const { itemIndex } = pending[position];
				const item = items[itemIndex];
				outputs[decision.outcome === 'newer' ? NEWER : STALE].push({
					json: {
						...item.json,
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
					binary: item.binary,
					pairedItem: { item: itemIndex },
				});
			}
		});
	}
}
