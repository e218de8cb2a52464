import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';

import { executionReaderOf, withoutSecretsOfExecution, withoutSecretsOfRun } from '../../shared/settlement';
import { quoted, type StoreOpener } from './keyOperation';
import { FAILED_EXECUTION_PARAMETERS, OWNED_KEY_PARAMETERS } from './sharedParameters';
import { readKeyFrom, SETTLE_BY_KEY_OUTPUTS, settleFailedExecutions, settleOwnedKeys } from './settleByKey';

export const value = 'fail';

export const option = {
	name: 'Mark Failed',
	action: 'Mark a reservation failed',
	description: 'Keep the key with the error message; the next delivery is processed again',
};

/**
 * Mark Failed's default error message. A failed node's items on its error output carry the text as
 * `error` (a string: Code node, most nodes) or as `message` beside an `error` object without one
 * (the Postgres node); an Error Trigger item carries it in `execution.error.message`. A superset of
 * the first default (`error` only): n8n does not save a parameter left at its default, so workflows
 * saved with that one get this one, and read the same text wherever the first found one.
 */
export const FAIL_ERROR_MESSAGE_DEFAULT =
	"={{ (typeof $json.error === 'object' ? $json.error?.message : $json.error) || $json.message || $json.execution?.error?.message }}";

export const description: INodeProperties[] = [
	...OWNED_KEY_PARAMETERS,
	...FAILED_EXECUTION_PARAMETERS,
	{
		displayName: 'Error Message',
		name: 'errorMessage',
		type: 'string',
		displayOptions: { show: { operation: ['fail'] } },
		default: FAIL_ERROR_MESSAGE_DEFAULT,
		description:
			"Stored as the key's lastError. The default reads a Code node's error, a Postgres node's message and an Error Trigger's error.",
	},
];

export const outputs = SETTLE_BY_KEY_OUTPUTS;

export const subtitle = `$parameter.source === "execution" ? ${quoted('Mark Failed (failed execution)')} : ${quoted(option.name)}`;

// A Mark Failed that failed as a whole stays on output 0: n8n's Retry On Fail looks only at output 0's first item.
export const failedOutput = 0;

export async function execute(context: IExecuteFunctions, openStore: StoreOpener): Promise<INodeExecutionData[][]> {
	const store = await openStore();
	const source = readKeyFrom(context);
	// The message may quote the request (the Webhook's item, or the failed execution's): kept without its credentials.
	if (source === 'execution') {
		return await settleFailedExecutions(context, async (execution, itemIndex) => {
			const withoutSecrets = await withoutSecretsOfExecution(executionReaderOf(context), execution.executionId);
			const failed = await store.failExecution(execution, withoutSecrets(errorMessage(context, itemIndex)));
			const idempotency: IDataObject = {
				operation: value,
				executionId: execution.executionId,
				workflowId: execution.workflowId,
				failedKeys: failed.keys,
			};
			if (failed.warnings.length > 0) idempotency.warnings = failed.warnings;
			return idempotency;
		});
	}
	const withoutSecrets = withoutSecretsOfRun(context);
	return await settleOwnedKeys(
		context,
		value,
		source,
		(itemIndex) => withoutSecrets(errorMessage(context, itemIndex)),
		async (requests) => await store.fail(requests.map((request) => ({ ...request.owned, error: request.detail }))),
	);
}

function errorMessage(context: IExecuteFunctions, itemIndex: number): string {
	return String(context.getNodeParameter('errorMessage', itemIndex, '') ?? '');
}
