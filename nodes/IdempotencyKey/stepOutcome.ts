import type { INodeExecutionData, IPairedItemData, ITaskData } from 'n8n-workflow';

import type { ExecutionRecord } from '../shared/executionRecord';
import { checkSettleWiring, UnsafeSettleWiringError } from '../shared/settleWiring';

/**
 * Whether the business step succeeded for each item, judged from n8n's own record of the step's
 * runs — its routing (success or error output), its node-level errors — never from the shape of
 * what it returned. Any output counts as success: arbitrary JSON, several items, zero items.
 *
 * The settling node hangs off the same output as the business step, below it. In n8n's v1
 * execution order the nodes on one output run top to bottom and each runs its whole branch first,
 * so when the settling node runs, every node run recorded after the parent's run is the business
 * step or a node after it.
 */

/** Where the settling node's items came from: one run of one output of its parent node. */
export interface ParentOutput {
	node: string;
	run: number;
	output: number;
}

/** Per input item: undefined when the step succeeded for it, else the failure's message. */
export type StepFailures = Array<string | undefined>;

// n8n's own rule for an item that carries an error on a regular output (On Error: Continue (regular output)).
const ERROR_ITEM_KEYS = new Set(['error', 'message', 'details']);
const MAX_TRACE_DEPTH = 1_000;

export function judgeBusinessStep(record: ExecutionRecord, self: string, parent: ParentOutput, itemCount: number): StepFailures {
	checkSettleWiring(record, parent.node, parent.output);
	const siblings = (record.connectionsBySourceNode[parent.node]?.main?.[parent.output] ?? [])
		.map((connection) => connection.node)
		.filter((name) => name !== self && record.node(name)?.disabled !== true);
	const parentTask = record.runData[parent.node]?.[parent.run];
	if (!parentTask) throw new UnsafeSettleWiringError(`n8n has no record of "${parent.node}" run ${parent.run}, which fed "${self}".`);

	const window: Array<{ name: string; task: ITaskData }> = [];
	for (const [name, tasks] of Object.entries(record.runData)) {
		if (name === self) continue;
		for (const task of tasks) if (task.executionIndex > parentTask.executionIndex) window.push({ name, task });
	}
	for (const sibling of siblings) {
		if (!window.some((entry) => entry.name === sibling)) {
			throw new UnsafeSettleWiringError(
				`"${sibling}" has not run yet, so "${self}" cannot tell whether it succeeded. n8n runs the nodes on one output from top to bottom: place "${sibling}" above "${self}".`,
			);
		}
	}

	const failures: StepFailures = Array.from({ length: itemCount }, () => undefined);
	const failAll = (message: string): StepFailures => failures.fill(message);
	for (const { name, task } of window) {
		// A node that failed as a whole (its credential unreadable, say) and continued passed its
		// *input* on through its success output: every item failed.
		if (task.error) return failAll(`${name}: ${task.error.message}`);
		const settings = record.node(name);
		const outputs = task.data?.main ?? [];
		const errorOutput = settings?.onError === 'continueErrorOutput' ? outputs.length - 1 : -1;
		const regularErrors = settings?.onError === 'continueRegularOutput' || settings?.continueOnFail === true;
		for (const [outputIndex, items] of outputs.entries()) {
			for (const item of items ?? []) {
				const failed = outputIndex === errorOutput || (regularErrors && isErrorItem(item));
				if (!failed) continue;
				const message = `${name}: ${errorMessageOf(item)}`;
				const origins = traceToParent(record, parent, { name, task, item }, 0);
				if (origins === null) return failAll(message);
				for (const origin of origins) if (origin < itemCount) failures[origin] ??= message;
			}
		}
	}
	return failures;
}

function isErrorItem(item: INodeExecutionData): boolean {
	if (item.error !== undefined) return true;
	const json = item.json ?? {};
	return json.error !== undefined && Object.keys(json).every((key) => ERROR_ITEM_KEYS.has(key));
}

function errorMessageOf(item: INodeExecutionData): string {
	const json = item.json ?? {};
	const error = json.error as unknown;
	if (typeof error === 'string' && error !== '') return error;
	if (error && typeof error === 'object' && typeof (error as { message?: unknown }).message === 'string') return (error as { message: string }).message;
	if (typeof json.message === 'string' && json.message !== '') return json.message;
	if (item.error?.message) return item.error.message;
	return 'the item left through the error output';
}

function pairedItemsOf(item: INodeExecutionData): IPairedItemData[] {
	const paired = item.pairedItem;
	if (paired === undefined || paired === null) return [];
	if (typeof paired === 'number') return [{ item: paired }];
	return Array.isArray(paired) ? paired : [paired];
}

/**
 * The parent items (indexes on the settling node's input) an item descends from, by n8n's paired
 * items; null when the chain is broken (a node that set no paired item), and the item cannot be
 * told apart from the others.
 */
function traceToParent(
	record: ExecutionRecord,
	parent: ParentOutput,
	at: { name: string; task: ITaskData; item: INodeExecutionData },
	depth: number,
): number[] | null {
	if (depth > MAX_TRACE_DEPTH) return null;
	const paired = pairedItemsOf(at.item);
	if (paired.length === 0) return null;
	const origins: number[] = [];
	for (const pair of paired) {
		const source = at.task.source?.[pair.input ?? 0];
		if (!source) return null;
		const run = source.previousNodeRun ?? 0;
		const output = source.previousNodeOutput ?? 0;
		if (source.previousNode === parent.node && run === parent.run) {
			if (output === parent.output) origins.push(pair.item);
			continue;
		}
		const task = record.runData[source.previousNode]?.[run];
		const item = task?.data?.main?.[output]?.[pair.item];
		if (!task || !item) return null;
		const upstream = traceToParent(record, parent, { name: source.previousNode, task, item }, depth + 1);
		if (upstream === null) return null;
		origins.push(...upstream);
	}
	return origins;
}
