import { DEFAULT_ORDER_TABLE, type AdvanceOptions, type OrderDecision, type VersionedItem } from '../order/orderGuard';
import type { OrderStore } from '../store/contract';
import { orderCandidates, orderDecisions, validateAdvanceOptions, type OrderMark } from '../store/rules';
import { DEFAULT_LOCK_WAIT_MS, connectionFor, ensureTable, namedStatement, withWriteLock, type EmbeddedConnection } from './connection';
import type { EmbeddedStoreOptions } from './keyStore';
import { embeddedTableName } from './statements';

/**
 * The Order Guard's store in the embedded file: per business object, the highest version applied,
 * with the same decisions as the Postgres OrderGuard. Within one batch, each object's highest
 * version is the only candidate; across batches and processes, one statement decides under the
 * file's write lock.
 */
export class EmbeddedOrderStore implements OrderStore {
	readonly backend = 'embedded' as const;
	readonly file: string;
	private readonly table: string;
	private readonly createTableOption: boolean;
	private readonly lockWaitMs: number;
	private connection?: EmbeddedConnection;

	constructor(options: EmbeddedStoreOptions) {
		this.file = options.file;
		this.table = embeddedTableName(options.table ?? DEFAULT_ORDER_TABLE).name;
		this.createTableOption = options.createTable ?? true;
		this.lockWaitMs = options.lockWaitMs ?? DEFAULT_LOCK_WAIT_MS;
	}

	async advance(items: VersionedItem[], options: AdvanceOptions): Promise<OrderDecision[]> {
		validateAdvanceOptions(options);
		if (items.length === 0) return [];

		const candidateByKey = orderCandidates(items);
		const candidates = [...candidateByKey.values()];
		const connection = this.open();
		await ensureTable(connection, 'order', this.table, this.createTableOption, this.lockWaitMs);
		const rows = await withWriteLock(connection, { lockWaitMs: this.lockWaitMs, operation: 'order' }, () =>
			namedStatement(connection, 'order_advance', 'order', this.table).all({
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

	async createTable(): Promise<void> {
		await ensureTable(this.open(), 'order', this.table, true, this.lockWaitMs);
	}

	private open(): EmbeddedConnection {
		if (!this.connection?.db.isOpen) this.connection = connectionFor(this.file);
		return this.connection;
	}
}
