import { DEFAULT_ORDER_TABLE, type AdvanceOptions, type OrderDecision, type VersionedItem } from '../postgres/orderStore';
import type { OrderStore } from '../contract';
import { orderCandidates, orderDecisions, validateAdvanceOptions, type OrderMark } from '../rules';
import { withWriteLock } from './connection';
import { EmbeddedTableStore, type EmbeddedStoreOptions } from './tableStore';

/**
 * The Order Guard's store in the embedded file: per business object, the highest version applied,
 * with the same decisions as the Postgres OrderGuard. Within one batch, each object's highest
 * version is the only candidate; across batches and processes, one statement decides under the
 * file's write lock.
 */
export class EmbeddedOrderStore extends EmbeddedTableStore implements OrderStore {
	constructor(options: EmbeddedStoreOptions) {
		super(options, 'order', DEFAULT_ORDER_TABLE);
	}

	async advance(items: VersionedItem[], options: AdvanceOptions): Promise<OrderDecision[]> {
		validateAdvanceOptions(options);
		if (items.length === 0) return [];

		const candidateByKey = orderCandidates(items);
		const candidates = [...candidateByKey.values()];
		const connection = await this.readyConnection();
		const rows = await withWriteLock(connection, this.wait('order'), () =>
			this.statement(connection, 'order_advance').all({
				items: JSON.stringify(candidates.map((item) => [item.objectKey, item.version, item.eventKey])),
				equal: options.equalVersion,
				execution_id: options.executionId ?? null,
				workflow_id: options.workflowId ?? null,
			}),
		);
		const markByKey = new Map(
			rows.map((row): [string, OrderMark] => [
				row.object_key as string,
				{
					lastDecision: row.last_decision as OrderMark['lastDecision'],
					version: row.version as string,
					staleCount: row.stale_count as number,
					firstSeen: new Date(row.first_seen as number),
					updatedAt: new Date(row.updated_at as number),
				},
			]),
		);
		return orderDecisions(items, candidateByKey, markByKey, options.equalVersion);
	}

}
