import { InvalidConfigurationError } from '../errors';
import { DEFAULT_ORDER_TABLE, type AdvanceOptions, type OrderDecision, type VersionedItem } from '../order/orderGuard';
import { compareVersions } from '../order/version';
import type { OrderStore } from '../store/contract';
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
		if (options.equalVersion !== 'stale' && options.equalVersion !== 'newer') {
			throw new InvalidConfigurationError(`Unknown equal-version rule ${JSON.stringify(options.equalVersion)}: use stale or newer.`);
		}
		if (items.length === 0) return [];

		const candidateByKey = new Map<string, VersionedItem>();
		for (const item of items) {
			const candidate = candidateByKey.get(item.objectKey);
			if (!candidate || compareVersions(item.version, candidate.version) > 0) candidateByKey.set(item.objectKey, item);
		}
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
		const rowByKey = new Map(rows.map((row) => [row.object_key as string, row]));

		const passedInBatch = new Set<string>();
		return items.map((item): OrderDecision => {
			const row = rowByKey.get(item.objectKey);
			if (!row) throw new InvalidConfigurationError('The embedded store returned no row for a versioned object.');
			const candidate = candidateByKey.get(item.objectKey)!;
			const holdsBatchMax = compareVersions(item.version, candidate.version) === 0;
			// Ties inside the batch: only the first item passes, unless equal versions pass anyway.
			const firstOrEqualPasses = options.equalVersion === 'newer' || !passedInBatch.has(item.objectKey);
			const newer = holdsBatchMax && firstOrEqualPasses && row.last_decision === 'newer';
			if (newer) passedInBatch.add(item.objectKey);
			return {
				outcome: newer ? 'newer' : 'stale',
				objectKey: item.objectKey,
				version: item.version,
				currentVersion: row.version as string,
				supersededInBatch: !holdsBatchMax,
				staleCount: row.stale_count as number,
				firstSeen: new Date(row.first_seen as number),
				updatedAt: new Date(row.updated_at as number),
			};
		});
	}

	async createTable(): Promise<void> {
		await ensureTable(this.open(), 'order', this.table, true, this.lockWaitMs);
	}

	private open(): EmbeddedConnection {
		if (!this.connection?.db.isOpen) this.connection = connectionFor(this.file);
		return this.connection;
	}
}
