import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';

import type { SettleRequest } from '../../../lib/store/contract';
import {
	continuedFailureTest,
	itemsWaitingAt,
	judgeExecution,
	originsOfItem,
	readExecutionRecord,
	recoveredBefore,
	succeededItemsOf,
} from '../../shared/settlement';
import { readResponse } from '../ownedKeys';
import { quoted, type StoreOpener } from './keyOperation';
import { OWNED_KEY_PARAMETERS, RESPONSE_TO_STORE } from './sharedParameters';
import { readKeyFrom, refuseFailedExecution, SETTLE_BY_KEY_OUTPUTS, settleOwnedKeys } from './settleByKey';

export const value = 'complete';

export const option = {
	name: 'Complete',
	action: 'Complete a reservation',
	description: 'Make a lease-mode reservation final, optionally storing the response for duplicates to replay',
};

export const description: INodeProperties[] = [...OWNED_KEY_PARAMETERS, RESPONSE_TO_STORE];

export const outputs = SETTLE_BY_KEY_OUTPUTS;

export const subtitle = quoted(option.name);

// A Complete that failed as a whole stays on output 0: n8n's Retry On Fail looks only at output 0's first item.
export const failedOutput = 0;

export async function execute(context: IExecuteFunctions, openStore: StoreOpener): Promise<INodeExecutionData[][]> {
	const store = await openStore();
	const source = readKeyFrom(context);
	if (source === 'execution') refuseFailedExecution(context);
	const isContinuedFailure = continuedFailureOf(context);
	const { failedEarlier, waiting } = judgedRun(context);
	return await settleOwnedKeys(
		context,
		value,
		source,
		(itemIndex) => readResponse(context, itemIndex),
		async (requests) => await store.complete(requests.map((request) => ({ ...request.owned, response: request.detail }))),
		// A failure a node at Continue passed on: completing its key would lose the event, never run again.
		{
			item: (item) =>
				isContinuedFailure(item)
					? `The item carries the error of a node before this one that continues on error (On Error: Continue): ${LEFT_TO_THE_RETRY}`
					: undefined,
			// The same failure after a node that dropped its error from the item (Edit Fields, a Merge renaming the field,
			// a Merge keeping another input's item): n8n's record of the run still holds it.
			key: (owned) =>
				failedEarlier(owned)
					? `A node of the step failed for this event earlier in this execution and continued on error (On Error: Continue), and the item that reached this node no longer shows it: ${LEFT_TO_THE_RETRY}`
					: undefined,
			// Failing ends the execution before the other events' items waiting for a Complete node reach it: their effects
			// are done, and their keys would run again after the lease. Completed now, each judged as its own run would judge
			// it, without a response to store (the node's parameters are read for the items it was given).
			beforeFailing: async () => {
				const given = new Set(context.getInputData().flatMap((item) => keyOfItem(item) ?? []));
				const due = waiting
					.filter(({ item, owned }) => !isContinuedFailure(item) && !failedEarlier(owned) && !given.has(ownedId(owned)))
					.map(({ owned }) => owned);
				if (due.length > 0) await store.complete(due);
			},
		},
	);
}

/** What becomes of a continued failure's key, and the fix. */
const LEFT_TO_THE_RETRY =
	"its key is not completed, and the provider's retry runs the event again once the lease ends. Set that node's On Error to Stop Workflow or route its error output elsewhere, or use Settle After Business Step, which fails such a key at once.";

/**
 * What n8n's record of this execution so far says. `failedEarlier`: whether it holds a failure of a node of the step
 * for the key's reservation (as Settle reads it), other than one the workflow recovered from on the way to this node (a
 * fallback after the failed node's error output). `waiting`: the items still on n8n's stack for a later run of a
 * Complete node (this one or another), each traced to the one key it settles. Neither without the record.
 */
function judgedRun(context: IExecuteFunctions): {
	failedEarlier: (owned: SettleRequest) => boolean;
	waiting: Array<{ item: INodeExecutionData; owned: SettleRequest }>;
} {
	try {
		const record = readExecutionRecord(context);
		const judgement = judgeExecution(record);
		const self = context.getNode().name;
		const failed = new Set<string>();
		// The reservations each node's success output gave a succeeded item for in this run, traced once per node.
		const served = new Map<string, Set<string>>();
		const servedBy = (recovery: string): Set<string> => {
			let origins = served.get(recovery);
			if (!origins) {
				origins = new Set(
					(record.runData[recovery] ?? []).flatMap((task, run) =>
						succeededItemsOf(record, recovery, task).flatMap(
							(item) => originsOfItem(record, recovery, run, item, judgement.reservations) ?? [],
						),
					),
				);
				served.set(recovery, origins);
			}
			return origins;
		};
		for (const [id, nodes] of judgement.failedAt) {
			const reservation = judgement.reservations.get(id);
			if (!reservation) continue;
			// A recovery counts where it gave this event an item on its success output in this run.
			const succeededForEvent = (recovery: string) => servedBy(recovery).has(id);
			if ([...nodes].every((node) => recoveredBefore(record, node, self, succeededForEvent))) continue;
			failed.add(ownedId(reservation));
		}
		const { type } = context.getNode();
		const completes = (name: string) => {
			const node = record.node(name);
			return node?.type === type && node.disabled !== true && node.parameters?.operation === value;
		};
		const waiting = itemsWaitingAt(record, completes, judgement.reservations).flatMap(({ item, origins }) => {
			const reservation = origins?.length === 1 ? judgement.reservations.get(origins[0]) : undefined;
			return reservation ? [{ item, owned: { key: reservation.key, ownerToken: reservation.ownerToken } }] : [];
		});
		return { failedEarlier: (owned) => failed.has(ownedId(owned)), waiting };
	} catch {
		return { failedEarlier: () => false, waiting: [] };
	}
}

function ownedId(owned: { key: string; ownerToken: string }): string {
	return JSON.stringify([owned.key, owned.ownerToken]);
}

/** The key an item carries (its `idempotency` object), as an id. */
function keyOfItem(item: INodeExecutionData): string | undefined {
	const idempotency = item.json.idempotency as { key?: unknown; ownerToken?: unknown } | undefined;
	return typeof idempotency?.key === 'string' && typeof idempotency.ownerToken === 'string'
		? ownedId({ key: idempotency.key, ownerToken: idempotency.ownerToken })
		: undefined;
}

/** The continued-failure test for this node's items; none without n8n's record of the execution (nothing to read it from). */
function continuedFailureOf(context: IExecuteFunctions): (item: INodeExecutionData) => boolean {
	try {
		return continuedFailureTest(readExecutionRecord(context), context.getNode());
	} catch {
		return () => false;
	}
}
