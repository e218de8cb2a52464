import type { Pool, QueryResultRow } from 'pg';

import { InvalidConfigurationError } from '../errors';
import { tableRef, type TableRef } from '../identifiers';
import { PostgresRunner } from '../postgres/runner';
import { SchemaGate } from '../postgres/schemaGate';
import { ORDER_MIGRATIONS } from '../sql/migrations';
import { renderStatement, type OrderStatement } from '../sql/statements';
import type { OrderStore } from '../store/contract';
import { compareVersions } from './version';

export const DEFAULT_ORDER_TABLE = 'object_versions';

/** Whether a delivery whose version equals the mark passes. */
export type EqualVersion = 'stale' | 'newer';

export interface OrderGuardOptions {
	schema: string;
	table: string;
	/** Create the table, or bring it to the package's schema version, on first use (sql/migrations/order/). */
	createTable: boolean;
}

export interface VersionedItem {
	/** From objectKeyOf. */
	objectKey: string;
	/** From parseVersion: an exact decimal string. */
	version: string;
	/** The event's own key (from eventKeyOf), so the same event retried after a failed run passes again. */
	eventKey: string | null;
}

export interface AdvanceOptions {
	equalVersion: EqualVersion;
	executionId?: string;
	workflowId?: string;
}

export interface OrderDecision {
	outcome: 'newer' | 'stale';
	objectKey: string;
	version: string;
	/** The object's mark after this batch (the highest version applied). */
	currentVersion: string;
	/** True when a higher version of the same object came in the same batch (this item is Stale). */
	supersededInBatch: boolean;
	/** Stale deliveries this object has had so far. */
	staleCount: number;
	firstSeen: Date;
	/** When the mark was last raised (or passed again). */
	updatedAt: Date;
}

/**
 * Keeps, per business object, the highest version applied, so events that arrive out of order
 * converge: an "updated" that overtook its "created" passes, and the late "created" is Stale.
 *
 * Within one batch, each object's highest version is the only candidate (the first item holding
 * it; with equal = newer, every item holding it): the others are Stale as superseded. So the items
 * that pass never include two versions of one object, and downstream nodes may run them in any
 * order or in parallel. Across batches and processes, one statement decides under the row lock.
 */
export class OrderGuard implements OrderStore {
	readonly backend = 'postgres' as const;
	private readonly table: TableRef;
	private readonly gate: SchemaGate;
	private readonly runner: PostgresRunner;

	constructor(pool: Pool, options: OrderGuardOptions) {
		this.table = tableRef(options.schema, options.table);
		this.gate = new SchemaGate(pool, this.table, ORDER_MIGRATIONS, options.createTable);
		this.runner = PostgresRunner.onPool(pool);
	}

	/** One decision per item, in item order. One round trip for the whole batch. */
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
		const rows = await this.query('orderAdvance', [
			candidates.map((item) => item.objectKey),
			candidates.map((item) => item.version),
			candidates.map((item) => item.eventKey),
			options.equalVersion,
			options.executionId ?? null,
			options.workflowId ?? null,
		]);
		const rowByKey = new Map(rows.map((row) => [row.object_key as string, row]));

		const passedInBatch = new Set<string>();
		return items.map((item): OrderDecision => {
			const row = rowByKey.get(item.objectKey);
			if (!row) throw new InvalidConfigurationError('Postgres returned no row for a versioned object.');
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
				firstSeen: row.first_seen as Date,
				updatedAt: row.updated_at as Date,
			};
		});
	}

	/** Creates the table or brings it to the package's schema version (sql/migrations/order/). */
	async createTable(): Promise<void> {
		await this.gate.create();
	}

	private async query(statement: OrderStatement, values: unknown[]): Promise<QueryResultRow[]> {
		await this.gate.ready();
		return (await this.runner.run(renderStatement(statement, this.table), values, { context: { table: this.table.qualified } })).rows;
	}
}
