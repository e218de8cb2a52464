import type { AdvanceOptions, OrderDecision, OrderStore, VersionedItem } from './contract';
import type { OrderDriver, SendRule } from './driver';
import { orderCandidates, orderDecisions, validateAdvanceOptions, type OrderMark } from './rules';

/**
 * The Order Guard's store, written once for every backend over its driver: per business object,
 * the highest version applied, so events that arrive out of order converge (an "updated" that
 * overtook its "created" passes, and the late "created" is Stale).
 *
 * Within one batch, each object's highest version is the only candidate (the first item holding
 * it; with equal = newer, every item holding it): the others are Stale as superseded. So the items
 * that pass never include two versions of one object, and downstream nodes may run them in any
 * order or in parallel. Across batches and processes, one statement decides under the row lock
 * (Postgres) or the file's write lock (embedded).
 */
export class DriverOrderStore implements OrderStore {
	constructor(protected readonly driver: OrderDriver) {}

	get backend() {
		return this.driver.backend;
	}

	/** One decision per item, in item order; one statement for the whole batch. */
	async advance(items: VersionedItem[], options: AdvanceOptions): Promise<OrderDecision[]> {
		validateAdvanceOptions(options);
		if (items.length === 0) return [];

		const candidateByKey = orderCandidates(items);
		const candidates = [...candidateByKey.values()];
		const rule: SendRule = { kind: 'writeOnce' };
		await this.driver.ready('advance', rule);
		const [{ rows, read }] = await this.driver.send(
			'advance',
			{
				name: 'orderAdvance',
				parameters: {
					items: candidates.map((item) => [item.objectKey, item.version, item.eventKey]),
					equalVersion: options.equalVersion,
					executionId: options.executionId ?? null,
					workflowId: options.workflowId ?? null,
				},
			},
			rule,
		);
		const markByKey = new Map(
			rows.map((row): [string, OrderMark] => [
				read.value(row, 'object_key') as string,
				{
					lastDecision: read.value(row, 'last_decision') as OrderMark['lastDecision'],
					version: read.value(row, 'version') as string,
					eventKey: (read.value(row, 'event_key') as string | null) ?? null,
					staleCount: read.value(row, 'stale_count') as number,
					firstSeen: read.time(row, 'first_seen') as Date,
					updatedAt: read.time(row, 'updated_at') as Date,
				},
			]),
		);
		return orderDecisions(items, candidateByKey, markByKey, options.equalVersion);
	}

	/** Creates the table or brings it to the package's schema version. */
	async createTable(): Promise<void> {
		await this.driver.createTable();
	}
}
