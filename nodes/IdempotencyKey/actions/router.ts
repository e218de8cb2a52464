import { NodeOperationError, type IExecuteFunctions, type INodeExecutionData } from 'n8n-workflow';

import { toNodeError } from '../../shared/nodeError';
import { storeFor, type TableChoice } from '../../shared/store';
import { DEFAULT_OPERATION } from './nodeDescription';
import { operationNamed } from './operations';

/** Runs the chosen operation; under On Error: Continue, an operation that fails as a whole sends every item, with its error, to its failedOutput. */
export async function router(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const value = this.getNodeParameter('operation', 0) as string;
	const table = this.getNodeParameter('options', 0, {}) as TableChoice;
	const openStore = async () => await storeFor(this, table);
	const operation = operationNamed(value);
	if (operation && operation.failedOutput === undefined) return await operation.execute(this, openStore);
	try {
		if (!operation)
			throw new NodeOperationError(this.getNode(), `The operation ${JSON.stringify(value)} is not known to this version of the node.`);
		return await operation.execute(this, openStore);
	} catch (error) {
		if (!this.continueOnFail()) throw toNodeError(this.getNode(), error);
		const failed = this.getInputData().map((_item, itemIndex) => ({
			json: { error: toNodeError(this.getNode(), error, itemIndex).message },
			pairedItem: { item: itemIndex },
		}));
		const { outputs, failedOutput = 0 } = operation ?? DEFAULT_OPERATION;
		return outputs.map((_output, index) => (index === failedOutput ? failed : []));
	}
}
