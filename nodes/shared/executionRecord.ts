import { NodeOperationError, type IConnections, type IExecuteFunctions, type INode, type IRunData } from 'n8n-workflow';

/**
 * What n8n itself recorded about the current execution: every node run so far (its outputs, its
 * error, its order) and the workflow's wiring and node settings. A node's public helpers expose its
 * own input only; deciding whether a business step succeeded needs n8n's record of that step — a
 * step that fails before it runs, under "On Error: Continue", passes its *input* on through its
 * success output, so no downstream item can tell success from failure.
 *
 * The record is read from the execution context's own fields (n8n-core's execute context keeps
 * `runExecutionData` and `workflow`, on the 1.x and 2.x lines the package is tested on). When a
 * version lacks them, the node refuses to settle rather than guess.
 */
export interface ExecutionRecord {
	readonly runData: IRunData;
	readonly connectionsBySourceNode: IConnections;
	readonly executionOrder: string | undefined;
	node(name: string): INode | undefined;
}

interface ExecuteContextFields {
	runExecutionData?: { resultData?: { runData?: IRunData } };
	workflow?: {
		nodes?: Record<string, INode>;
		connectionsBySourceNode?: IConnections;
		settings?: { executionOrder?: string };
	};
}

export function readExecutionRecord(context: IExecuteFunctions): ExecutionRecord {
	const fields = context as unknown as ExecuteContextFields;
	const runData = fields.runExecutionData?.resultData?.runData;
	const workflow = fields.workflow;
	if (!runData || !workflow?.nodes || !workflow.connectionsBySourceNode) {
		throw new NodeOperationError(
			context.getNode(),
			"This n8n version does not let the node read the execution's record, so it cannot tell whether the business step succeeded; nothing was settled.",
			{ description: 'Use Complete on the business step\'s success output and Mark Failed on its error output instead.' },
		);
	}
	const nodes = workflow.nodes;
	return {
		runData,
		connectionsBySourceNode: workflow.connectionsBySourceNode,
		executionOrder: workflow.settings?.executionOrder,
		node: (name) => nodes[name],
	};
}
