import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';

import { continuedFailureTest, readExecutionRecord } from '../../shared/settlement';
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
	return await settleOwnedKeys(
		context,
		value,
		source,
		(itemIndex) => readResponse(context, itemIndex),
		async (requests) => await store.complete(requests.map((request) => ({ ...request.owned, response: request.detail }))),
		// A failure a node at Continue passed on: completing its key would lose the event, never run again.
		(item) =>
			isContinuedFailure(item)
				? "The item carries the error of a node before this one that continues on error (On Error: Continue): its key is not completed, and the provider's retry runs the event again once the lease ends. Set that node's On Error to Stop Workflow or route its error output elsewhere, or use Settle After Business Step, which fails such a key at once."
				: undefined,
	);
}

/** The continued-failure test for this node's items; none without n8n's record of the execution (nothing to read it from). */
function continuedFailureOf(context: IExecuteFunctions): (item: INodeExecutionData) => boolean {
	try {
		return continuedFailureTest(readExecutionRecord(context), context.getNode());
	} catch {
		return () => false;
	}
}
