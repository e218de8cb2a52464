import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';

import type { SettleRequest } from '../../../lib/store/contract';
import {
	continuedFailureTest,
	judgeExecution,
	originsOfItem,
	readExecutionRecord,
	recoveredBefore,
	reservationsStillToRun,
	succeededItemsOf,
	type ExecutionView,
	type Judgement,
} from '../../shared/settlement';
import { readResponse } from '../ownedKeys';
import { quoted, type StoreOpener } from './keyOperation';
import { OWNED_KEY_PARAMETERS, RESPONSE_TO_STORE } from './sharedParameters';
import { readKeyFrom, refuseFailedExecution, SETTLE_BY_KEY_OUTPUTS, settleOwnedKeys, STALE_OUTPUT } from './settleByKey';

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
	const { failedEarlier, othersStillToRun } = judgedRun(context);
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
			// Failing the node would end the execution before other events' items reach a node that settles their keys:
			// their effects are done, and their keys would run again after the lease.
			toStale: othersStillToRun,
		},
	);
}

/** What becomes of a continued failure's key, and the fix. */
const LEFT_TO_THE_RETRY =
	"its key is not completed, and the provider's retry runs the event again once the lease ends. Set that node's On Error to Stop Workflow or route its error output elsewhere, or use Settle After Business Step, which fails such a key at once.";

/**
 * What n8n's record of this execution so far says. `failedEarlier`: whether it holds a failure of a node of the step
 * for the key's reservation (as Settle reads it), other than one the workflow recovered from on the way to this node (a
 * fallback after the failed node's error output), or this node already refused the key in an earlier run.
 * `othersStillToRun`: whether items of other events still wait to run in this execution, and this node's Stale output
 * is connected (a refused item can leave there, answered by the workflow). Neither without the record.
 */
function judgedRun(context: IExecuteFunctions): { failedEarlier: (owned: SettleRequest) => boolean; othersStillToRun: boolean } {
	try {
		const record = readExecutionRecord(context);
		const judgement = judgeExecution(record);
		const self = context.getNode().name;
		const failed = new Set<string>();
		const origins = (node: string, run: number, item: INodeExecutionData) => originsOfItem(record, node, run, item, judgement.reservations);
		// The reservations each node's success output gave a succeeded item for in this run, traced once per node.
		const served = new Map<string, Set<string>>();
		const servedBy = (recovery: string): Set<string> => {
			let found = served.get(recovery);
			if (!found) {
				found = new Set(
					(record.runData[recovery] ?? []).flatMap((task, run) =>
						succeededItemsOf(record, recovery, task).flatMap((item) => origins(recovery, run, item) ?? []),
					),
				);
				served.set(recovery, found);
			}
			return found;
		};
		for (const [id, nodes] of judgement.failedAt) {
			// A recovery counts where it gave this event an item on its success output in this run.
			const succeededForEvent = (recovery: string) => servedBy(recovery).has(id);
			if ([...nodes].every((node) => recoveredBefore(record, node, self, succeededForEvent))) continue;
			failed.add(id);
		}
		// Refused by this node in an earlier run (left through Stale with its error): never completed later in the run.
		(record.runData[self] ?? []).forEach((task, run) => {
			for (const item of task.data?.main?.[STALE_OUTPUT] ?? []) {
				if (typeof item.json.error === 'string') for (const id of origins(self, run, item) ?? []) failed.add(id);
			}
		});
		const failedKeys = new Set(
			[...failed].flatMap((id) => {
				const reservation = judgement.reservations.get(id);
				return reservation ? [JSON.stringify([reservation.key, reservation.ownerToken])] : [];
			}),
		);
		return {
			failedEarlier: (owned) => failedKeys.has(JSON.stringify([owned.key, owned.ownerToken])),
			othersStillToRun:
				(record.connectionsBySourceNode[self]?.main?.[STALE_OUTPUT] ?? []).length > 0 && othersWaiting(context, record, judgement),
		};
	} catch {
		return { failedEarlier: () => false, othersStillToRun: false };
	}
}

/** Whether items of events other than those given to this node run still wait to run (any, where one cannot be traced). */
function othersWaiting(context: IExecuteFunctions, record: ExecutionView, judgement: Judgement): boolean {
	const waiting = reservationsStillToRun(record, judgement.reservations);
	if (waiting === null) return true;
	const source = context.getInputSourceData(0);
	const given = new Set(
		context
			.getInputData()
			.flatMap((item) => originsOfItem(record, source.previousNode, source.previousNodeRun ?? 0, item, judgement.reservations) ?? []),
	);
	return [...waiting].some((id) => !given.has(id));
}

/** The continued-failure test for this node's items; none without n8n's record of the execution (nothing to read it from). */
function continuedFailureOf(context: IExecuteFunctions): (item: INodeExecutionData) => boolean {
	try {
		return continuedFailureTest(readExecutionRecord(context), context.getNode());
	} catch {
		return () => false;
	}
}
