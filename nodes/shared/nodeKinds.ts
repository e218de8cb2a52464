import { SEND_AND_WAIT_OPERATION, type INodeParameters, type INodeTypeDescription } from 'n8n-workflow';

/*
 * What kind of node a workflow node is, read from what n8n declares about its type (the node
 * type's description), not from lists of type names: a community node or a new n8n node that
 * declares the same is treated the same.
 */

/** A workflow node as the rules see it (an INode, or n8n's summary of one from getChildNodes). */
export interface NodeRef {
	name: string;
	type: string;
	typeVersion?: number;
	parameters?: INodeParameters;
}

/** The parts of a node type's description the rules read. */
export type NodeTypeFacts = Pick<INodeTypeDescription, 'webhooks' | 'properties'>;

/** The description n8n has for a node's type and version; undefined when n8n does not say. */
export type DescribeNode = (node: NodeRef) => NodeTypeFacts | undefined;

/** Used only when n8n's node types cannot be read: n8n's own nodes known to wait. */
const WAITS_WHEN_UNDESCRIBED = new Set(['n8n-nodes-base.wait', 'n8n-nodes-base.form']);

/**
 * Whether the node may put the execution to wait and have it resumed later, as a new run without
 * the nodes before it: n8n marks every node that resumes an execution by a webhook with
 * `restartWebhook` (Wait, Form, and the Send and Wait operation of Slack, Gmail, Email, Teams,
 * Telegram, Discord, …). A node whose waiting is one operation among others (`sendAndWait`) waits
 * only with that operation, or with an operation n8n computes per run (an expression).
 */
export function mayWait(node: NodeRef, describe: DescribeNode | undefined): boolean {
	const description = describe?.(node);
	if (!description) return WAITS_WHEN_UNDESCRIBED.has(node.type);
	if (!(description.webhooks ?? []).some((webhook) => webhook.restartWebhook === true)) return false;
	const waitingIsAnOperation = (description.properties ?? []).some(
		(property) =>
			property.name === 'operation' &&
			(property.options ?? []).some((option) => 'value' in option && option.value === SEND_AND_WAIT_OPERATION),
	);
	if (!waitingIsAnOperation) return true;
	const operation = node.parameters?.operation;
	return typeof operation !== 'string' || operation === SEND_AND_WAIT_OPERATION || operation.startsWith('=');
}

/** n8n's node that keeps what it saw across executions (n8n's deduplication store), and its operation that does. */
const REMOVE_DUPLICATES_TYPE = 'n8n-nodes-base.removeDuplicates';
const SEEN_IN_PREVIOUS_EXECUTIONS = 'removeItemsSeenInPreviousExecutions';

/**
 * Whether the node drops items it saw in an earlier execution: Remove Duplicates at *Remove Items
 * Processed in Previous Executions* (or an operation set by an expression). It records an event as
 * seen when the event passes it, whatever happens to it next, so the provider's retry of an event
 * whose step failed would be dropped there and the event lost. n8n declares nothing about this in a
 * node type's description; its deduplication store is used by this node alone.
 */
export function dropsItemsSeenBefore(node: NodeRef): boolean {
	if (node.type !== REMOVE_DUPLICATES_TYPE) return false;
	const operation = node.parameters?.operation;
	return operation === SEEN_IN_PREVIOUS_EXECUTIONS || (typeof operation === 'string' && operation.startsWith('='));
}

/** n8n's node types as a Workflow object keeps them (n8n-core's contexts hold the workflow). */
interface NodeTypesHolder {
	nodeTypes?: { getByNameAndVersion?: (type: string, version?: number) => { description?: NodeTypeFacts } | undefined };
}

/** Reads descriptions from n8n's Workflow object; undefined when it has no node types to ask. */
export function describerOf(workflow: unknown): DescribeNode | undefined {
	const nodeTypes = (workflow as NodeTypesHolder | undefined)?.nodeTypes;
	const lookup = nodeTypes?.getByNameAndVersion;
	if (typeof lookup !== 'function') return undefined;
	return (node) => {
		try {
			return lookup.call(nodeTypes, node.type, node.typeVersion)?.description;
		} catch {
			// A type n8n does not know (a node of an uninstalled package): nothing is declared.
			return undefined;
		}
	};
}
