import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';

import type { SettleRequest } from '../../../lib/store/contract';
import { continuedFailureTest, originsOfItem, readExecutionRecord, recoveredBefore, succeededItemsOf } from '../../shared/settlement';
import { readResponse } from '../ownedKeys';
import { quoted, type StoreOpener } from './keyOperation';
import { OWNED_KEY_PARAMETERS, RESPONSE_TO_STORE } from './sharedParameters';
import { readKeyFrom, refuseFailedExecution, SETTLE_BY_KEY_OUTPUTS, settleOwnedKeys, judgedRunOf } from './settleByKey';

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
	const failedEarlier = await failedInThisRun(context);
	return await settleOwnedKeys(
		context,
		value,
		source,
		// Whose answer an item read through a guessed pairing is cannot be told: none is stored, never another event's.
		(itemIndex, pairedByGuess) => (pairedByGuess ? undefined : readResponse(context, itemIndex)),
		async (requests) => await store.complete(requests.map((request) => ({ ...request.owned, response: request.detail }))),
		// A failure a node at Continue passed on: completing its key would lose the event, never run again.
		{
			item: (item) =>
				isContinuedFailure(item)
					? `The item carries the error of a node before this one that continues on error (On Error: Continue): ${LEFT_TO_THE_RETRY}`
					: undefined,
			// The same failure after a node that dropped its error from the item (Edit Fields, a Merge renaming the field,
			// a Merge keeping another input's item): n8n's record of the run still holds it.
			key: (owned) => failedEarlier(owned),
		},
	);
}

/** What becomes of a continued failure's key, and the fix. */
const LEFT_TO_THE_RETRY =
	"its key is not completed, and the provider's retry runs the event again once the lease ends. Set that node's On Error to Stop Workflow or route its error output elsewhere, or use Settle After Business Step, which fails such a key at once.";

/** Why a key whose event failed earlier in this run is not completed. */
const FAILED_EARLIER = `A node of the step failed for this event earlier in this execution and continued on error (On Error: Continue), and the item that reached this node no longer shows it: ${LEFT_TO_THE_RETRY}`;
const UNTRACED_FAILURE = `A node of the step failed earlier in this execution for an item whose event cannot be told (its pairing was lost on the way: a Code node returning new items without pairedItem, say), so it may be this event's: ${LEFT_TO_THE_RETRY}`;

/**
 * Why a key may not be completed: n8n's record of this execution so far holds a failure of a node of the step for the
 * key's reservation (as Settle reads it), other than one the workflow recovered from on the way to this node (a fallback
 * after the failed node's error output), or a failure whose event cannot be told; never without the record.
 */
async function failedInThisRun(context: IExecuteFunctions): Promise<(owned: SettleRequest) => string | undefined> {
	try {
		// A sub-workflow's record says which of its outputs carry failures, and whether n8n's pairing through it is a guess.
		const { record, records, judgement } = await judgedRunOf(context);
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
							(item) => originsOfItem(record, recovery, run, item, judgement.reservations, records) ?? [],
						),
					),
				);
				served.set(recovery, origins);
			}
			return origins;
		};
		// A failure that cannot be traced to its event may be any event's: no key is completed on a guess (outcome.ts).
		if (judgement.untracedFailure !== undefined) return () => UNTRACED_FAILURE;
		for (const [id, nodes] of judgement.failedAt) {
			const reservation = judgement.reservations.get(id);
			if (!reservation) continue;
			// A recovery counts where it gave this event an item on its success output in this run.
			const succeededForEvent = (recovery: string) => servedBy(recovery).has(id);
			if ([...nodes].every((node) => recoveredBefore(record, node, self, succeededForEvent))) continue;
			failed.add(JSON.stringify([reservation.key, reservation.ownerToken]));
		}
		return (owned) => (failed.has(JSON.stringify([owned.key, owned.ownerToken])) ? FAILED_EARLIER : undefined);
	} catch {
		return () => undefined;
	}
}

/** The continued-failure test for this node's items; none without n8n's record of the execution (nothing to read it from). */
function continuedFailureOf(context: IExecuteFunctions): (item: INodeExecutionData) => boolean {
	try {
		return continuedFailureTest(readExecutionRecord(context), context.getNode());
	} catch {
		return () => false;
	}
}
