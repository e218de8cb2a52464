import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';

import { quoted, type StoreOpener } from './keyOperation';
import { FAILED_EXECUTION_PARAMETERS, OWNED_KEY_PARAMETERS } from './sharedParameters';
import { readKeyFrom, SETTLE_BY_KEY_OUTPUTS, settleFailedExecutions, settleOwnedKeys } from './settleByKey';

export const value = 'release';

export const option = {
	name: 'Release',
	action: 'Release a reservation',
	description: "Delete the key after a failed business step, so the provider's retry is processed",
};

export const description: INodeProperties[] = [...OWNED_KEY_PARAMETERS, ...FAILED_EXECUTION_PARAMETERS];

export const outputs = SETTLE_BY_KEY_OUTPUTS;

export const subtitle = `$parameter.source === "execution" ? ${quoted('Release (failed execution)')} : ${quoted(option.name)}`;

// A release that failed as a whole stays on output 0: n8n's Retry On Fail looks only at output 0's first item.
export const failedOutput = 0;

export async function execute(context: IExecuteFunctions, openStore: StoreOpener): Promise<INodeExecutionData[][]> {
	const store = await openStore();
	const source = readKeyFrom(context);
	if (source === 'execution') {
		return await settleFailedExecutions(context, async (execution) => ({
			operation: value,
			executionId: execution.executionId,
			workflowId: execution.workflowId,
			releasedKeys: await store.releaseExecution(execution),
		}));
	}
	return await settleOwnedKeys(
		context,
		value,
		source,
		() => undefined,
		async (requests) => await store.release(requests.map((request) => request.owned)),
	);
}
