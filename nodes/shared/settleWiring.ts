import type { IExecuteFunctions, INode } from 'n8n-workflow';

import { readExecutionRecord, type ExecutionRecord } from './executionRecord';
import { toNodeError } from './nodeError';

/**
 * Checked by the node that feeds a business step (Reserve's New, Order Guard's Newer, Claim for
 * Replay's Claimed) *before* anything is reserved or claimed: when "Settle After Business Step"
 * hangs off that output, the wiring must let it judge the step and answer every outcome. Refused
 * here, nothing has happened yet; found by Settle itself, the effect may already have run.
 */
export class UnsafeSettleWiringError extends Error {}

const SETTLE_TYPE_SUFFIX = '.idempotencyKey';
const RESPOND_TYPE = 'n8n-nodes-base.respondToWebhook';
const CONTINUING = new Set(['continueRegularOutput', 'continueErrorOutput']);

/** An enabled Idempotency Key node set to Settle After Business Step (a workflow node or n8n's summary of one). */
export function isSettleNode(node: { type: string; parameters?: INode['parameters']; disabled?: boolean } | undefined): boolean {
	return node !== undefined && node.type.endsWith(SETTLE_TYPE_SUFFIX) && node.parameters?.operation === 'settle' && node.disabled !== true;
}

export function assertSafeSettleWiring(context: IExecuteFunctions, output: number): void {
	const self = context.getNode().name;
	let record: ExecutionRecord;
	try {
		record = readExecutionRecord(context);
	} catch (error) {
		// Without n8n's record no wiring can be judged: refuse only where a Settle node would need it.
		const downstream = context.getChildNodes(self, { includeNodeParameters: true });
		if (!downstream.some(isSettleNode)) return;
		throw toNodeError(context.getNode(), error);
	}
	checkSettleWiring(record, self, output);
}

/** Throws UnsafeSettleWiringError naming the fix; returns quietly when no Settle node hangs off the output. */
export function checkSettleWiring(record: ExecutionRecord, self: string, output: number): void {
	const children = (record.connectionsBySourceNode[self]?.main?.[output] ?? [])
		.map((connection) => record.node(connection.node))
		.filter((node): node is INode => node !== undefined && node.disabled !== true);
	const settles = children.filter(isSettleNode);
	if (settles.length === 0) return;
	if (settles.length > 1) {
		throw new UnsafeSettleWiringError(`Several Settle nodes hang off one output of "${self}" (${settles.map((n) => `"${n.name}"`).join(', ')}): keep one.`);
	}
	const [settle] = settles;
	if (record.executionOrder !== 'v1') {
		throw new UnsafeSettleWiringError(
			`"${settle.name}" needs the workflow setting Execution Order "v1 (recommended)" (Workflow Settings): with the legacy order n8n may run it before the business step has finished.`,
		);
	}
	const steps = children.filter((node) => node !== settle);
	if (steps.length === 0) {
		throw new UnsafeSettleWiringError(`No business step is connected beside "${settle.name}": connect your business step to the same output of "${self}", above it.`);
	}
	for (const step of steps) {
		// n8n runs the nodes on one output from the top down; equal heights have no defined order.
		if (!(step.position[1] < settle.position[1])) {
			throw new UnsafeSettleWiringError(
				`"${step.name}" must sit above "${settle.name}" in the editor: n8n runs the nodes on one output from top to bottom, and Settle must run after the business step has finished.`,
			);
		}
	}
	const seen = new Set<string>([self, settle.name]);
	const pending = [...steps];
	while (pending.length > 0) {
		const node = pending.pop() as INode;
		if (seen.has(node.name)) continue;
		seen.add(node.name);
		if (node.type === RESPOND_TYPE) {
			throw new UnsafeSettleWiringError(
				`"${node.name}" answers the webhook from inside the business step: remove it; "${settle.name}" answers once it knows whether the step succeeded.`,
			);
		}
		if (!CONTINUING.has(node.onError ?? '') && node.continueOnFail !== true) {
			throw new UnsafeSettleWiringError(
				`"${node.name}" stops the workflow when it fails: set its Settings → On Error to "Continue (using error output)", so that "${settle.name}" can mark the key failed and answer 500 (a stopped execution may be answered 200, and the provider would not retry).`,
			);
		}
		for (const targets of record.connectionsBySourceNode[node.name]?.main ?? []) {
			for (const connection of targets ?? []) {
				const target = record.node(connection.node);
				if (target && target.disabled !== true && !seen.has(target.name)) pending.push(target);
			}
		}
	}
}
