import type { IExecuteFunctions, INode, INodeExecutionData, IRunData, ITaskData } from 'n8n-workflow';

import { EXECUTE_WORKFLOW_TYPE, inlineSubWorkflowNodes, onErrorOf } from './nodeKinds';

/*
 * What n8n recorded for the sub-executions an Execute Workflow node ran. The node returns every
 * output of the sub-workflow's last node, so an item on its second output may be that node's error
 * output (a failure) or an If's false branch whose business data has a field named `error` (not
 * one). The sub-execution's record says which node ran last and what it output; the sub-workflow
 * defined in the node's parameters says that node's On Error (the record holds no node settings).
 * n8n names the sub-execution on each item (mode "each item") or on the node run ("once").
 *
 * The judge (trace.ts) stays synchronous: the records are read before it runs, and it is given them.
 */

/** The part of a sub-execution's record (n8n's IRunExecutionData) the rule reads. */
export interface SubExecutionRecord {
	resultData?: { runData?: IRunData; lastNodeExecuted?: string };
}

/** Sub-execution records by execution id; undefined where n8n could not give one (the rule then reads a failure). */
export type SubExecutionRecords = ReadonlyMap<string, SubExecutionRecord | undefined>;

/** Reads an execution's record, as the execute context's getExecutionDataById does. */
export type ExecutionReader = (executionId: string) => Promise<SubExecutionRecord | undefined>;

/**
 * The most sub-executions read for one judgement: a bound on memory far above what one run of a
 * webhook's events starts. Beyond it, an item returned beyond the first output keeps the safe
 * reading (a failure), and a failure a sub-execution did not return goes unseen.
 */
const MAX_READS = 10_000;
/** How many records are read at once: n8n's database pool is small, and other executions share it. */
const READS_AT_ONCE = 16;

interface SubExecutionMetadata {
	subExecution?: { executionId?: unknown };
}

/** The sub-execution an item of an Execute Workflow node run came from: the item's own ("each item"), else the run's ("once"). */
export function subExecutionIdOf(item: INodeExecutionData, task: ITaskData | undefined): string | undefined {
	return subExecutionNamedBy(item.metadata) ?? subExecutionOfRun(task);
}

/** The sub-execution an Execute Workflow run names as its own ("once"); undefined in "each item" mode. */
export function subExecutionOfRun(task: ITaskData | undefined): string | undefined {
	return subExecutionNamedBy(task?.metadata);
}

/** Every sub-execution an Execute Workflow run names: on each item it returned ("each item"), or on the run ("once"). */
export function subExecutionsOfRun(task: ITaskData): Set<string> {
	const ids = new Set<string>();
	for (const item of (task.data?.main ?? []).flatMap((items) => items ?? [])) {
		const id = subExecutionIdOf(item, task);
		if (id !== undefined) ids.add(id);
	}
	const ofRun = subExecutionOfRun(task);
	if (ofRun !== undefined) ids.add(ofRun);
	return ids;
}

function subExecutionNamedBy(metadata: unknown): string | undefined {
	const id = (metadata as SubExecutionMetadata | undefined)?.subExecution?.executionId;
	if (typeof id === 'string' && id !== '') return id;
	if (typeof id === 'number') return String(id);
	return undefined;
}

/** How deep sub-workflows started by sub-workflows are followed: their records read, their definitions judged. */
export const SUB_WORKFLOW_DEPTH = 10;

/**
 * The records of the sub-executions the judgement needs (trace.ts `subExecutionsToRead`), each read
 * once, and of the sub-executions those started in turn (nested sub-workflows, SUB_WORKFLOW_DEPTH deep).
 * A read that fails, or an n8n without the method, leaves the record undefined: an item returned
 * beyond the first output is then read as a failure, since a retry is safer than a lost event.
 */
export async function readSubExecutions(ids: string[], read: ExecutionReader | undefined): Promise<SubExecutionRecords> {
	const records = new Map<string, SubExecutionRecord | undefined>();
	if (!read) return records;
	let next = [...new Set(ids)];
	for (let depth = 0; depth < SUB_WORKFLOW_DEPTH && next.length > 0; depth++) {
		const batch = next.filter((id) => !records.has(id)).slice(0, MAX_READS - records.size);
		for (let start = 0; start < batch.length; start += READS_AT_ONCE) {
			await Promise.all(
				batch.slice(start, start + READS_AT_ONCE).map(async (id) => {
					records.set(id, await read(id).catch(() => undefined));
				}),
			);
		}
		next = batch.flatMap((id) => subExecutionsNamedIn(records.get(id)));
	}
	return records;
}

/** The sub-executions a sub-execution's own Execute Workflow runs started, as n8n names them on their items or runs. */
function subExecutionsNamedIn(record: SubExecutionRecord | undefined): string[] {
	return Object.values(record?.resultData?.runData ?? {}).flatMap((tasks) => tasks.flatMap((task) => [...subExecutionsOfRun(task)]));
}

/** The execute context's reader of execution records; undefined on an n8n without it. */
export function executionReaderOf(context: IExecuteFunctions): ExecutionReader | undefined {
	const read = (context as Partial<Pick<IExecuteFunctions, 'getExecutionDataById'>>).getExecutionDataById;
	if (typeof read !== 'function') return undefined;
	return async (executionId) => (await read.call(context, executionId)) as SubExecutionRecord | undefined;
}

/**
 * Whether output `outputIndex` of the sub-execution `executionId`, run by the Execute Workflow node
 * `node`, is where its last node put its failures: true when that node is set to Continue (using
 * error output) and the output is its last; false when it is a regular output and no node of the
 * sub-execution could have passed a failure on as an item (none continues on error, none runs a
 * sub-workflow of its own). Undefined when that cannot be told: no record, or no definition of the
 * sub-workflow in the node's parameters (n8n's record holds the node runs, not the nodes' settings).
 */
export function isSubWorkflowErrorOutput(
	node: INode,
	executionId: string | undefined,
	outputIndex: number,
	records: SubExecutionRecords | undefined,
): boolean | undefined {
	const record = executionId === undefined ? undefined : records?.get(executionId);
	const runData = record?.resultData?.runData;
	const last = record?.resultData?.lastNodeExecuted;
	const lastRuns = last === undefined ? undefined : runData?.[last];
	const lastRun = lastRuns?.[lastRuns.length - 1];
	if (!runData || !last || !lastRun) return undefined;
	const nodes = new Map(
		inlineSubWorkflowNodes(node).map((inner) => [inner.name, inner as Pick<INode, 'type' | 'onError' | 'continueOnFail'>]),
	);
	const lastNode = nodes.get(last);
	if (!lastNode) return undefined;
	const lastSetting = onErrorOf(lastNode);
	if (lastSetting === 'continueErrorOutput' && outputIndex === (lastRun.data?.main?.length ?? 0) - 1) return true;
	for (const name of Object.keys(runData)) {
		const inner = nodes.get(name);
		if (!inner || inner.type === EXECUTE_WORKFLOW_TYPE) return undefined;
		// The last node's own failures under Continue (using error output) left by its last output, not this one.
		const passesFailuresOn = name === last ? lastSetting === 'continueRegularOutput' : onErrorOf(inner) !== 'stopWorkflow';
		if (passesFailuresOn) return undefined;
	}
	return false;
}
