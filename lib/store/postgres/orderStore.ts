import type { Pool, QueryResultRow } from 'pg';

import { tableRef, type TableRef } from '../../identifiers';
import { PostgresRunner } from './runner';
import { SchemaGate } from './schemaGate';
import { ORDER_MIGRATIONS } from './migrations';
import { renderStatement, type OrderStatement } from './statements';
import type { AdvanceOptions, OrderDecision, OrderStore, VersionedItem } from '../contract';
import { orderCandidates, orderDecisions, validateAdvanceOptions, type OrderMark } from '../rules';

export const DEFAULT_ORDER_TABLE = 'object_versions';

export interface OrderGuardOptions {
	schema: string;
	table: string;
	/** Create the table, or bring it to the package's schema version, on first use (sql/migrations/order/). */
	createTable: boolean;
}

export type { AdvanceOptions, EqualVersion, OrderDecision, VersionedItem } from '../contract';

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
		validateAdvanceOptions(options);
		if (items.length === 0) return [];

		const candidateByKey = orderCandidates(items);
		const candidates = [...candidateByKey.values()];
		const rows = await this.query('orderAdvance', [
			candidates.map((item) => item.objectKey),
			candidates.map((item) => item.version),
			candidates.map((item) => item.eventKey),
			options.equalVersion,
			options.executionId ?? null,
			options.workflowId ?? null,
		]);
		const markByKey = new Map(
			rows.map((row): [string, OrderMark] => [
				row.object_key as string,
				{
					lastDecision: row.last_decision as OrderMark['lastDecision'],
					version: row.version as string,
					staleCount: row.stale_count as number,
					firstSeen: row.first_seen as Date,
					updatedAt: row.updated_at as Date,
				},
			]),
		);
		return orderDecisions(items, candidateByKey, markByKey, options.equalVersion);
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
