import { NodeConnectionTypes, type IExecuteFunctions, type INodeExecutionData, type INodeOutputConfiguration } from 'n8n-workflow';

import { toNodeError } from './nodeError';

/*
 * The one routing rule for items a node could not process (Reserve's "Not Reserved", Execute
 * Query's "Not Run", Order Guard's "Not Checked"), for every "On Error" setting:
 * - Stop Workflow: the node throws, the execution fails and the webhook answers 500.
 * - Continue (regular output): failed items leave through the node's last output, never through
 *   an output that runs the business step or acknowledges the event.
 * - Continue (using error output): the same items; n8n moves `{ error }` items from every main
 *   output to its Error output.
 * While continuing the node never throws: n8n-core would then pass the *input* items out of
 * output 0, the business output.
 */

/** The node's business outputs followed by its "not processed" output, always last. */
export function outputsWithNotProcessed(businessOutputs: string[], notProcessed: string): INodeOutputConfiguration[] {
	return [...businessOutputs, notProcessed].map((displayName) => ({ type: NodeConnectionTypes.Main, displayName }));
}

export interface ItemRouting {
	/** One list per output; the last one is the "not processed" output. */
	readonly outputs: INodeExecutionData[][];
	/** Routes one item to the "not processed" output, or throws for it when the node stops on errors. */
	failItem(error: unknown, itemIndex: number): void;
	/** Routes these items to the "not processed" output (or throws once) and returns the outputs. */
	failAll(error: unknown, itemIndexes: number[]): INodeExecutionData[][];
	/**
	 * Runs the node's work; an error escaping it fails every item not yet on an output, so a
	 * missed case still never throws while continuing.
	 */
	run(itemCount: number, work: () => Promise<void>): Promise<INodeExecutionData[][]>;
}

export function itemRouting(context: IExecuteFunctions, businessOutputCount: number): ItemRouting {
	const node = context.getNode();
	const continueOnFail = context.continueOnFail();
	const outputs: INodeExecutionData[][] = Array.from({ length: businessOutputCount + 1 }, () => []);
	const notProcessed = outputs[businessOutputCount];
	const failItem = (error: unknown, itemIndex: number): void => {
		if (!continueOnFail) throw toNodeError(node, error, itemIndex);
		notProcessed.push({ json: { error: toNodeError(node, error, itemIndex).message }, pairedItem: { item: itemIndex } });
	};
	const failAll = (error: unknown, itemIndexes: number[]): INodeExecutionData[][] => {
		if (!continueOnFail) throw toNodeError(node, error);
		for (const itemIndex of itemIndexes) failItem(error, itemIndex);
		return outputs;
	};
	const run = async (itemCount: number, work: () => Promise<void>): Promise<INodeExecutionData[][]> => {
		try {
			await work();
		} catch (error) {
			const routed = new Set(outputs.flatMap((items) => items.map((item) => pairedIndex(item))));
			const unrouted = Array.from({ length: itemCount }, (_, itemIndex) => itemIndex).filter((itemIndex) => !routed.has(itemIndex));
			return failAll(error, unrouted);
		}
		return outputs;
	};
	return { outputs, failItem, failAll, run };
}

function pairedIndex(item: INodeExecutionData): number | undefined {
	const paired = item.pairedItem;
	if (typeof paired === 'number') return paired;
	if (Array.isArray(paired)) return paired[0]?.item;
	return paired?.item;
}
