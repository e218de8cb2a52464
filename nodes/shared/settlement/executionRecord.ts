import {
	NodeOperationError,
	type IConnections,
	type IExecuteFunctions,
	type INode,
	type INodeExecutionData,
	type IRunData,
	type ISourceData,
} from 'n8n-workflow';

import { requestOfItem, withoutRequestSecrets, type AnswerRequest } from '../../../lib/webhook/storedAnswer';
import { describerOf, inlineSubWorkflow, loopOutputsOf, mayWait, SUB_WORKFLOW_TRIGGER_TYPE, type LoopOutputs } from './nodeKinds';
import { N8N_REFUSALS } from './refusals';

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
	/** Whether a node may put the execution to wait (nodeKinds.ts); by n8n's own nodes when absent. */
	waits?(node: INode): boolean;
	/** A loop node's Done and loop outputs as n8n names them; Loop Over Items 3's when absent. */
	loopOutputs?(node: INode): LoopOutputs;
}

/** What remains of the execution besides its finished node runs: the work n8n has not run yet. */
export interface PendingWork {
	nodeExecutionStack?: Array<{
		node: { name: string; type: string };
		data: { main?: Array<INodeExecutionData[] | null> };
		source: { main?: Array<ISourceData | null> } | null;
	}>;
	waitingExecution?: Record<string, Record<string, { main?: Array<INodeExecutionData[] | null> }>>;
	waitingExecutionSource?: Record<string, Record<string, { main?: Array<ISourceData | null> }> | null>;
	contextData?: Record<string, unknown>;
}

/** The record of an execution that ran (or runs): its node runs and the work still to run. */
export interface ExecutionView extends ExecutionRecord {
	readonly pending: PendingWork;
	/** Run by another execution (Execute Workflow): its request was checked by a node of that run. */
	readonly subExecution: boolean;
}

/** The part of n8n's run data (IRunExecutionData) the package reads. */
export interface RunExecutionDataFields {
	resultData?: { runData?: IRunData };
	executionData?: PendingWork;
	/** Set by n8n on a sub-execution: the execution that ran it. */
	parentExecution?: unknown;
}

/** The part of n8n's Workflow object the package reads. */
export interface WorkflowFields {
	nodes?: Record<string, INode>;
	connectionsBySourceNode?: IConnections;
	settings?: { executionOrder?: string };
}

interface ExecuteContextFields {
	runExecutionData?: RunExecutionDataFields;
	workflow?: WorkflowFields;
}

export function readExecutionRecord(context: IExecuteFunctions): ExecutionView {
	const fields = context as unknown as ExecuteContextFields;
	const view = executionView(fields.runExecutionData, fields.workflow);
	if (!view) {
		const { message, description } = N8N_REFUSALS.noExecutionRecord;
		throw new NodeOperationError(context.getNode(), message, { description });
	}
	return view;
}

/**
 * The workflow's wiring as a record with nothing run yet: what the rules can judge before an
 * execution (when the workflow is published, or at the trigger's first step). Undefined when the
 * workflow lacks what it needs.
 */
export function wiringRecord(workflow: WorkflowFields | undefined): ExecutionRecord | undefined {
	if (!workflow?.nodes || !workflow.connectionsBySourceNode) return undefined;
	const nodes = workflow.nodes;
	const describe = describerOf(workflow);
	return {
		runData: {},
		connectionsBySourceNode: workflow.connectionsBySourceNode,
		executionOrder: workflow.settings?.executionOrder,
		node: (name) => nodes[name],
		waits: (node) => mayWait(node, describe),
		loopOutputs: (node) => loopOutputsOf(node, describe),
	};
}

/** The execution's record from n8n's run data and workflow; undefined when they lack what it needs. */
export function executionView(
	runExecutionData: RunExecutionDataFields | undefined,
	workflow: WorkflowFields | undefined,
): ExecutionView | undefined {
	const runData = runExecutionData?.resultData?.runData;
	if (!runData || !workflow?.nodes || !workflow.connectionsBySourceNode) return undefined;
	const nodes = workflow.nodes;
	const describe = describerOf(workflow);
	return {
		waits: (node) => mayWait(node, describe),
		loopOutputs: (node) => loopOutputsOf(node, describe),
		runData,
		connectionsBySourceNode: workflow.connectionsBySourceNode,
		executionOrder: workflow.settings?.executionOrder,
		node: (name) => nodes[name],
		pending: runExecutionData?.executionData ?? {},
		subExecution: runExecutionData?.parentExecution != null,
	};
}

/**
 * The wiring of the sub-workflow an Execute Workflow node defines (Source "Define Below") as a record
 * with nothing run yet, and the node it starts from: n8n's sub-workflow trigger (Execute Workflow
 * Trigger), as n8n starts it, else the first node no other node feeds; undefined for any other node.
 */
export function inlineSubWorkflowRecord(node: INode, parent: ExecutionRecord): { record: ExecutionRecord; start: string } | undefined {
	const inner = inlineSubWorkflow(node);
	if (!inner) return undefined;
	const nodes = new Map(inner.nodes.map((candidate) => [candidate.name, candidate as INode]));
	const fed = new Set(
		Object.values(inner.connections).flatMap((byType) => (byType.main ?? []).flatMap((output) => (output ?? []).map((link) => link.node))),
	);
	const start =
		inner.nodes.find((candidate) => candidate.type === SUB_WORKFLOW_TRIGGER_TYPE && candidate.disabled !== true) ??
		inner.nodes.find((candidate) => !fed.has(candidate.name) && inner.connections[candidate.name] !== undefined);
	if (!start) return undefined;
	const record: ExecutionRecord = {
		runData: {},
		connectionsBySourceNode: inner.connections,
		executionOrder: 'v1',
		node: (name) => nodes.get(name),
		waits: parent.waits,
		loopOutputs: parent.loopOutputs,
	};
	return { record, start: start.name };
}

/** What n8n's Webhook node (and any trigger with an `authentication` parameter) checks under a header name of the user's. */
const UNNAMED_HEADER_CREDENTIALS = new Set(['headerAuth', 'jwtAuth']);

/**
 * The request a run started with, as the item of the node it started at gives it (`first`: the package's trigger, when
 * the run has one; else n8n's Webhook), and whether any of its headers may carry a credential the package is not told
 * the name of: a start node whose `authentication` checks a header the user named (Header Auth, JWT), or a
 * sub-execution's (the request, passed on by its parent, was checked by a node this run cannot see).
 */
export function requestOfRun(
	runData: IRunData,
	nodeOf: (name: string) => { parameters?: { authentication?: unknown } } | undefined,
	{ first = [], subExecution = false }: { first?: string[]; subExecution?: boolean } = {},
): { request: AnswerRequest; unnamedCredential: boolean } {
	const startNodes = Object.keys(runData).filter((name) => (runData[name]?.[0]?.source ?? []).every((source) => !source));
	for (const name of first.length > 0 ? first : startNodes) {
		const json = runData[name]?.[0]?.data?.main?.[0]?.[0]?.json;
		if (!json) continue;
		const authentication = nodeOf(name)?.parameters?.authentication;
		return {
			request: requestOfItem(json),
			unnamedCredential: subExecution || (typeof authentication === 'string' && UNNAMED_HEADER_CREDENTIALS.has(authentication)),
		};
	}
	return { request: {}, unnamedCredential: false };
}

/**
 * A failure message of this run without its request's credentials (a message built from the item quotes the
 * Webhook's headers), as Settle keeps one; unchanged where n8n gives no record of the run.
 */
export function withoutSecretsOfRun(context: IExecuteFunctions): (text: string) => string {
	const fields = context as unknown as ExecuteContextFields;
	const view = executionView(fields.runExecutionData, fields.workflow);
	if (!view) return (text) => text;
	const started = requestOfRun(view.runData, view.node, { subExecution: view.subExecution });
	return (text) => withoutRequestSecrets(text, started.request, { everyHeaderValue: started.unnamedCredential });
}

/**
 * A failure message about another execution (an Error Trigger's) without that execution's request credentials,
 * read from its record; every header value counts, the settings of its start node are not in the record. Without
 * the record (n8n did not keep the failed execution, or cannot read it) nothing tells which parts of the message
 * are the request's: it is not kept.
 */
export async function withoutSecretsOfExecution(
	read: ((executionId: string) => Promise<RunExecutionDataFields | undefined>) | undefined,
	executionId: string,
): Promise<(text: string) => string> {
	const runData = (await read?.(executionId).catch(() => undefined))?.resultData?.runData;
	if (!runData) return () => unreadableExecutionMessage(executionId);
	const started = requestOfRun(runData, () => undefined);
	return (text) => withoutRequestSecrets(text, started.request, { everyHeaderValue: true });
}

const unreadableExecutionMessage = (executionId: string): string =>
	`Execution ${executionId} failed. Its error message was not kept: n8n has no record of that execution to tell which parts of the message are the request's credentials (keep failed production executions: Workflow Settings → Save failed production executions).`;
