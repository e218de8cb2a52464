import type { IExecuteFunctions, INode } from 'n8n-workflow';

import { EXECUTE_WORKFLOW_TYPE, LOOP_TYPE, onErrorOf, readExecutionRecord, type ExecutionRecord } from './executionRecord';
import { isReservingNode, isTriggerType } from './executionTrace';
import { dropsItemsSeenBefore, mayWait, type DescribeNode } from './nodeKinds';
import { toNodeError } from './nodeError';

/**
 * Checked by the node that feeds a business step (Reserve's New, Order Guard's Newer, Claim for
 * Replay's Claimed) *before* anything is reserved or claimed: the wiring must let the package learn
 * how the step ended. Refused here, nothing has happened yet; found later, the effect may already
 * have run.
 */
export class UnsafeSettleWiringError extends Error {}

const SETTLE_TYPE_SUFFIX = '.idempotencyKey';
const RESPOND_TYPE = 'n8n-nodes-base.respondToWebhook';
const POSTGRES_TYPE = 'n8n-nodes-base.postgres';
const AGGREGATE_TYPE = 'n8n-nodes-base.aggregate';
const SUMMARIZE_TYPE = 'n8n-nodes-base.summarize';
const SPLIT_OUT_TYPE = 'n8n-nodes-base.splitOut';
// The field in which the package's nodes give each item its key.
const KEY_FIELD = 'idempotency';
// The package's own nodes settle, route or verify: their failures are handled where they run.
const PACKAGE_TYPE_SUFFIXES = [
	'.idempotencyKey',
	'.idempotencyReserve',
	'.idempotencyOrderGuard',
	'.idempotencyExecuteQuery',
	'.webhookSignatureVerify',
];
// n8n's nodes that pass, join, batch or order items, or stop them on purpose: no effect, and no failure
// that depends on one event's data.
const NEVER_FAILING_TYPES = new Set(
	['noOp', 'merge', 'splitInBatches', 'limit', 'sort', 'removeDuplicates', 'aggregate', 'stopAndError', 'wait', 'form'].map(
		(name) => `n8n-nodes-base.${name}`,
	),
);
// n8n's nodes that route or reshape items: no effect, but they can fail on one event's data (a Switch
// output out of range, an If with strict types, an expression).
const ROUTING_TYPES = new Set(
	['if', 'switch', 'filter', 'set', 'splitOut', 'summarize', 'renameKeys'].map((name) => `n8n-nodes-base.${name}`),
);

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
	checkOutcomeVisible(record, self, output);
	checkEventsApart(record, self, output, context.getInputData().length);
}

/** Throws UnsafeSettleWiringError naming the fix; returns quietly when no Settle node hangs off the output. */
export function checkSettleWiring(record: ExecutionRecord, self: string, output: number): void {
	const children = enabledTargets(record, self, output);
	const settles = children.filter(isSettleNode);
	if (settles.length === 0) return;
	if (settles.length > 1) {
		throw new UnsafeSettleWiringError(
			`Several Settle nodes hang off one output of "${self}" (${settles.map((n) => `"${n.name}"`).join(', ')}): keep one.`,
		);
	}
	const [settle] = settles;
	if (record.executionOrder !== 'v1') {
		throw new UnsafeSettleWiringError(
			`"${settle.name}" needs the workflow setting Execution Order "v1 (recommended)" (Workflow Settings): with the legacy order n8n may run it before the business step has finished.`,
		);
	}
	// A disabled node passes its items on: the step may start behind one.
	const steps = targets(record, self, output).filter((node) => node.name !== settle.name);
	if (steps.length === 0) {
		throw new UnsafeSettleWiringError(
			`No business step is connected beside "${settle.name}": connect your business step to the same output of "${self}", above it.`,
		);
	}
	for (const node of downstreamOf(record, steps, new Set([self, settle.name]))) {
		if (node.type === RESPOND_TYPE) {
			throw new UnsafeSettleWiringError(
				`"${node.name}" answers the webhook from inside the business step: remove it; "${settle.name}" answers once it knows whether the step succeeded.`,
			);
		}
	}
}

/**
 * Throws UnsafeSettleWiringError, before anything is reserved, for a business step whose outcome
 * the package could not learn: a sub-workflow started without waiting for it (its failure never
 * reaches this execution), and any wiring that lets a resumed run end, or wait again, without a
 * node of the package running in it (nothing would settle the key, or extend its hold): a node
 * after a Wait that stops the execution when it fails, a Wait that can run more than once, Settle
 * run before the step.
 */
export function checkOutcomeVisible(record: ExecutionRecord, self: string, output: number): void {
	const stopAt = (node: INode) => node.type.endsWith(SETTLE_TYPE_SUFFIX);
	const step = downstreamOf(record, targets(record, self, output), new Set([self]), stopAt);
	const settleBeside = enabledTargets(record, self, output).some(isSettleNode);
	const settleAfter = !settleBeside && downstreamOf(record, targets(record, self, output), new Set([self])).some(isSettleNode);
	const waits = step.filter((node) => waitsIn(record, node));
	// Only the run that starts waiting holds the key; a later run that waits again has no node of the package in it.
	if (waits.length > 1) {
		throw new UnsafeSettleWiringError(
			`"${waits[0].name}" and "${waits[1].name}" both make the execution wait: the key is held only through the first wait, so a retry during the next one would run the step again. Keep one Wait in the business step (one Wait for the whole time).`,
		);
	}
	for (const node of waits) {
		if (downstreamOf(record, allTargets(record, node.name), new Set([self]), stopAt).some((after) => after.name === node.name)) {
			throw new UnsafeSettleWiringError(
				`"${node.name}" is inside a loop, so it can make the execution wait more than once: the key is held only through the first wait, so a retry during the next one would run the step again. Move the Wait out of the loop, before or after it.`,
			);
		}
		const feeds = feedsOf(record, node.name);
		if (feeds.length > 1) {
			throw new UnsafeSettleWiringError(
				`"${node.name}" is fed by ${feeds.length} connections, so it can make the execution wait more than once: the key is held only through the first wait, so a retry during the next one would run the step again. Give it one incoming connection (a Merge before it).`,
			);
		}
		// n8n runs a node with several inputs (a Merge) once nothing else is left when one input has no data:
		// after Settle, so the Wait behind it would start with Settle already passed, and nothing would settle after it.
		const joining = step.find(
			(candidate) =>
				inputIndexes(record, candidate.name).size > 1 &&
				downstreamOf(record, allTargets(record, candidate.name), new Set([self]), stopAt).some((after) => after.name === node.name),
		);
		if (joining) {
			throw new UnsafeSettleWiringError(
				`"${node.name}" comes after "${joining.name}", which has several inputs: n8n may run "${joining.name}" after Settle, and then nothing would settle the key once the wait ends. Put the Wait before "${joining.name}", or at the start of the business step.`,
			);
		}
		if (settleBeside) assertSettleRunsAfterStep(record, self, output, node);
	}
	// Before the reserving node too: a retry dropped on its way to it never reaches the step either.
	const reserving = record.node(self);
	const dropping = [...step, ...(reserving ? ranBefore(record, self, reserving) : [])].find(dropsItemsSeenBefore);
	if (dropping) throw new UnsafeSettleWiringError(droppedRetryReason(dropping.name));
	for (const node of step) {
		if (mayNotWaitForSubWorkflow(node)) {
			throw new UnsafeSettleWiringError(
				`"${node.name}" may start a sub-workflow without waiting for it (its option "Wait For Sub-Workflow Completion" is off, or an expression), so its failure would never reach this execution and the key would be completed: turn the option on.`,
			);
		}
		// Before 1.3, Execute Workflow run for each item puts item i's error on its output i, and n8n-core's
		// error-output split overwrites those outputs: the failure vanishes from the run and the key completes.
		if (
			node.type === EXECUTE_WORKFLOW_TYPE &&
			node.typeVersion < 1.3 &&
			node.parameters?.mode === 'each' &&
			onErrorOf(node) === 'continueErrorOutput'
		) {
			throw new UnsafeSettleWiringError(
				`"${node.name}" runs the sub-workflow for each item with On Error "Continue (using error output)" in a version of the node (${node.typeVersion}) whose failures n8n loses: a failed item would complete its key. Replace it with a new Execute Workflow node (version 1.3 or later).`,
			);
		}
		if (!waitsIn(record, node)) continue;
		if (onErrorOf(node) === 'continueErrorOutput') {
			// n8n-core's error-output split empties the input array the waiting node passed on, and that
			// array is what n8n saves to resume from: the resumed run has no items and nothing runs.
			throw new UnsafeSettleWiringError(
				`"${node.name}" is set to On Error "Continue (using error output)": when its wait ends n8n resumes it without its items, so the rest of the step would never run and the key would be completed. Set its Settings → On Error to "Stop Workflow" or "Continue (regular output)".`,
			);
		}
		if (settleAfter) {
			throw new UnsafeSettleWiringError(
				`"${node.name}" makes the execution wait, and Settle is chained after the step: if the step then fails, no item reaches Settle and nothing would settle the key in the resumed execution. Connect Settle beside the step, to the same output of "${self}".`,
			);
		}
		for (const after of downstreamOf(record, targets(record, node.name, 0), new Set([self, node.name]), stopAt)) {
			if (!continuesOnError(after)) {
				throw new UnsafeSettleWiringError(
					`"${after.name}" runs after "${node.name}" and stops the workflow when it fails: the execution resumed after the wait would end before any Idempotency node runs, and the key would stay reserved until its lease ends. Set its Settings → On Error to "Continue (using error output)" and settle after it.`,
				);
			}
		}
	}
}

/**
 * Throws UnsafeSettleWiringError, before anything is reserved, when several events of one run would
 * reach a node of the step together that stops the workflow when it fails (n8n's default On Error)
 * and the package settles their keys. n8n records such a node's failure for all the items it was
 * given, not which of them it had already done: every one of those keys has to be failed, and the
 * retry would repeat the effects done for the others. Not refused: nodes that cannot fail on one
 * event's data (No Operation, Merge, Loop Over Items…; Stop and Error, whose failure is the point),
 * nodes that route or reshape items while no node that may have an effect ran before them, a
 * Postgres node sending its items as one query or one transaction (all or nothing), and nodes that
 * every path from the reserving node reaches through Loop Over Items with batch size 1 (one event at
 * a time). Continuing on error, or Loop Over Items, does not make a failure one event's where the
 * node's items do not stand for one event each (checkSplitFromKeylessJoin, checkExecuteOnce).
 */
export function checkEventsApart(record: ExecutionRecord, self: string, output: number, events: number): void {
	if (events < 2) return;
	const stopAt = (node: INode) => node.type.endsWith(SETTLE_TYPE_SUFFIX);
	const heads = targets(record, self, output);
	const settled =
		enabledTargets(record, self, output).some(isSettleNode) || downstreamOf(record, heads, new Set([self])).some(isSettleNode);
	if (!settled) return;
	const step = downstreamOf(record, heads, new Set([self]), stopAt);
	const oneAtATime = oneEventAtATime(record, self, step, stopAt);
	for (const node of step) {
		if (failsAllOrNothing(node)) continue;
		checkSplitFromKeylessJoin(record, self, node, events);
		if (oneAtATime.has(node.name)) continue;
		if (continuesOnError(node)) {
			checkExecuteOnce(record, self, node, events);
			continue;
		}
		const effectBefore = ROUTING_TYPES.has(node.type) ? ranBefore(record, self, node).find(mayHaveEffect) : undefined;
		if (ROUTING_TYPES.has(node.type) && !effectBefore) continue;
		const after = effectBefore ? ` after "${effectBefore.name}"` : '';
		throw new UnsafeSettleWiringError(
			`"${node.name}" gets the ${events} events of this run together${after} and stops the workflow when it fails (On Error "Stop Workflow", n8n's default): if it failed for one event, n8n would not record which of the others had been done, so their keys could not be completed and the provider's retry would do them again. Set its Settings → On Error to "Continue (using error output)" (each event's failure is then its own; the error output need not be connected), or put Loop Over Items (batch size 1) before it.`,
		);
	}
}

/** Whether the node may make the execution wait, as n8n declares it (n8n's own waiting nodes when the record cannot tell). */
function waitsIn(record: ExecutionRecord, node: INode): boolean {
	return record.waits ? record.waits(node) : mayWait(node, undefined);
}

/**
 * A node that continues on error fails item by item, each failed item paired to its event, but a
 * node set to Execute Once runs once, on the first item, for all the events it gets: its failure is
 * every one of them. Refused where an effect may already have been done for each event before it,
 * as the retry would do it again; before any effect, the retry only runs the one call again.
 */
function checkExecuteOnce(record: ExecutionRecord, self: string, node: INode, events: number): void {
	if (node.executeOnce !== true) return;
	const effectBefore = ranBefore(record, self, node).find(mayHaveEffect);
	if (!effectBefore) return;
	throw new UnsafeSettleWiringError(
		`"${node.name}" is set to Execute Once and comes after "${effectBefore.name}": it runs once for the ${events} events of this run, so if it failed, it would fail for all of them, after "${effectBefore.name}" had done its work for each, and the provider's retry would do that again. Move "${node.name}" before "${effectBefore.name}", or turn off its Execute Once setting.`,
	);
}

/**
 * An item split out (Split Out) of one that joined the events without their keys (Aggregate at
 * Individual Fields, Summarize) is paired by n8n to every event of the join, and carries no key to
 * tell which one it is: its failure, whatever the node's On Error and even one item at a time (Loop
 * Over Items), fails every key. Refused where an effect may already have been done for some of them
 * (by a node before it, or by the node itself for the other items), as the retry would do it again.
 */
function checkSplitFromKeylessJoin(record: ExecutionRecord, self: string, node: INode, events: number): void {
	const before = ranBefore(record, self, node);
	if (!mayHaveEffect(node) && !before.some(mayHaveEffect)) return;
	const split = before.find((candidate) => candidate.type === SPLIT_OUT_TYPE && ranBefore(record, self, candidate).some(joinsWithoutKeys));
	if (!split) return;
	const join = ranBefore(record, self, split).find(joinsWithoutKeys) as INode;
	throw new UnsafeSettleWiringError(
		`"${node.name}" gets the items "${split.name}" splits out of "${join.name}", which joins the ${events} events of this run without their keys: n8n pairs each of those items to every event, so one item's failure would fail every key, and the provider's retry would do the others again. Set "${join.name}" to aggregate All Item Data, which keeps each event's key.`,
	);
}

/**
 * A node that joins several items into one that keeps none of their keys (the `idempotency` field):
 * Aggregate at Individual Fields (its default) or keeping only some fields, Summarize.
 */
function joinsWithoutKeys(node: INode): boolean {
	if (node.type === SUMMARIZE_TYPE) return true;
	if (node.type !== AGGREGATE_TYPE) return false;
	const parameters = node.parameters ?? {};
	if ((parameters.aggregate ?? 'aggregateIndividualFields') !== 'aggregateAllItemData') return true;
	const fields = (name: string) =>
		String(parameters[name] ?? '')
			.split(',')
			.map((field) => field.trim());
	if (parameters.include === 'specifiedFields') return !fields('fieldsToInclude').includes(KEY_FIELD);
	if (parameters.include === 'allFieldsExcept') return fields('fieldsToExclude').includes(KEY_FIELD);
	return false;
}

function continuesOnError(node: INode): boolean {
	return onErrorOf(node) !== 'stopWorkflow';
}

/** A node whose failure leaves none of its items done: one that cannot fail on an event, the package's own, a Postgres batch in one query or transaction. */
function failsAllOrNothing(node: INode): boolean {
	if (PACKAGE_TYPE_SUFFIXES.some((suffix) => node.type.endsWith(suffix)) || NEVER_FAILING_TYPES.has(node.type)) return true;
	if (node.type !== POSTGRES_TYPE) return false;
	// Version 1 names the batching "mode" (default: one query for all items); version 2 "Query Batching".
	if (node.typeVersion < 2)
		return ['multiple', 'transaction', undefined].includes((node.parameters?.additionalFields as { mode?: string } | undefined)?.mode);
	return (node.parameters?.options as { queryBatching?: unknown } | undefined)?.queryBatching !== 'independently';
}

/** Whether a node may act outside n8n (a Postgres node writes, even all or nothing). */
function mayHaveEffect(node: INode): boolean {
	if (node.type === POSTGRES_TYPE) return true;
	return !failsAllOrNothing(node) && !ROUTING_TYPES.has(node.type);
}

/**
 * The nodes that every path from `self` reaches only through the loop output of a Loop Over Items
 * (version 3 and later) with batch size 1: each of their runs gets one event.
 */
function oneEventAtATime(record: ExecutionRecord, self: string, step: INode[], stopAt: (node: INode) => boolean): Set<string> {
	const inside = new Set<string>();
	for (const loop of step) {
		if (loop.type !== LOOP_TYPE || loop.typeVersion < 3 || Number(loop.parameters?.batchSize ?? 1) !== 1) continue;
		const reached = new Set(
			downstreamOf(record, targets(record, loop.name, 1), new Set([self, loop.name]), stopAt).map((node) => node.name),
		);
		// A node also fed from outside the loop body (a Merge, a second path) gets events together.
		for (let changed = true; changed; ) {
			changed = false;
			for (const name of reached) {
				const fedFromOutside = feedsOf(record, name).some(
					(feed) => !reached.has(feed.from) && !(feed.from === loop.name && feed.output === 1),
				);
				if (fedFromOutside) {
					reached.delete(name);
					changed = true;
				}
			}
		}
		for (const name of reached) inside.add(name);
	}
	return inside;
}

/** The enabled nodes on some path from `self` to `node` (its ancestors inside the step). */
function ranBefore(record: ExecutionRecord, self: string, node: INode): INode[] {
	const found: INode[] = [];
	const seen = new Set([self, node.name]);
	const pending = feedsOf(record, node.name).map((feed) => feed.from);
	while (pending.length > 0) {
		const name = pending.pop() as string;
		if (seen.has(name)) continue;
		seen.add(name);
		const ancestor = record.node(name);
		if (!ancestor) continue;
		if (ancestor.disabled !== true) found.push(ancestor);
		pending.push(...feedsOf(record, name).map((feed) => feed.from));
	}
	return found;
}

/**
 * Settle beside a step that waits must run after the wait, so that it runs in the resumed run and
 * settles the key there. Among the nodes on one parent's outputs n8n's v1 order runs the one
 * highest on the canvas first (smallest y, then smallest x), each with its whole branch; at the
 * same position the order depends on the connections, which the canvas does not show.
 */
function assertSettleRunsAfterStep(record: ExecutionRecord, self: string, output: number, wait: INode): void {
	const siblings = targets(record, self, output);
	const settle = siblings.find(isSettleNode);
	if (!settle) return;
	const [settleX, settleY] = settle.position;
	for (const head of siblings) {
		if (head.name === settle.name) continue;
		const [headX, headY] = head.position;
		if (settleY < headY || (settleY === headY && settleX <= headX)) {
			throw new UnsafeSettleWiringError(
				`"${settle.name}" sits above "${head.name}" on the canvas (or level with it and not to its right), so n8n runs it before the business step, and "${wait.name}" makes the execution wait: nothing would settle the key after the wait. Move "${settle.name}" below the business step's first nodes.`,
			);
		}
	}
}

function targets(record: ExecutionRecord, name: string, output: number): INode[] {
	return (record.connectionsBySourceNode[name]?.main?.[output] ?? [])
		.map((connection) => record.node(connection.node))
		.filter((node): node is INode => node !== undefined);
}

/** The nodes on every main output of `name`. */
function allTargets(record: ExecutionRecord, name: string): INode[] {
	return (record.connectionsBySourceNode[name]?.main ?? [])
		.flatMap((outputs) => outputs ?? [])
		.map((connection) => record.node(connection.node))
		.filter((node): node is INode => node !== undefined);
}

/** The main connections that end at `name`: the node and output they leave from, the input they reach. */
function feedsOf(record: ExecutionRecord, name: string): Array<{ from: string; output: number; index: number }> {
	const found: Array<{ from: string; output: number; index: number }> = [];
	for (const [from, byType] of Object.entries(record.connectionsBySourceNode)) {
		for (const [output, connections] of (byType.main ?? []).entries()) {
			for (const connection of connections ?? []) if (connection.node === name) found.push({ from, output, index: connection.index });
		}
	}
	return found;
}

/** The inputs of `name` that have a connection (a Merge with both wired: 0 and 1). */
function inputIndexes(record: ExecutionRecord, name: string): Set<number> {
	return new Set(feedsOf(record, name).map((connection) => connection.index));
}

function enabledTargets(record: ExecutionRecord, name: string, output: number): INode[] {
	return targets(record, name, output).filter((node) => node.disabled !== true);
}

/**
 * The enabled nodes reachable from `start` over main connections (through disabled nodes, which
 * pass their items on), not past `seen` nor past a node `stopAt` accepts.
 */
function downstreamOf(record: ExecutionRecord, start: INode[], seen: Set<string>, stopAt: (node: INode) => boolean = () => false): INode[] {
	const found: INode[] = [];
	const pending = [...start];
	while (pending.length > 0) {
		const node = pending.pop() as INode;
		if (seen.has(node.name)) continue;
		seen.add(node.name);
		if (node.disabled !== true && stopAt(node)) continue;
		if (node.disabled !== true) found.push(node);
		for (const outputs of record.connectionsBySourceNode[node.name]?.main ?? []) {
			for (const connection of outputs ?? []) {
				const target = record.node(connection.node);
				if (target && !seen.has(target.name)) pending.push(target);
			}
		}
	}
	return found;
}

/** The nodes of the sub-workflow an Execute Workflow node defines in its own parameters (Source "Define Below"). */
function inlineSubWorkflowNodes(node: { type: string; parameters?: INode['parameters'] }): ChildNode[] {
	if (node.type !== EXECUTE_WORKFLOW_TYPE || node.parameters?.source !== 'parameter') return [];
	const json = node.parameters.workflowJson;
	if (typeof json !== 'string' || json.startsWith('=')) return [];
	try {
		const nodes = (JSON.parse(json) as { nodes?: unknown }).nodes;
		return Array.isArray(nodes)
			? nodes.filter((inner): inner is ChildNode => typeof inner?.name === 'string' && typeof inner?.type === 'string')
			: [];
	} catch {
		// Not JSON: n8n refuses to run it, before any step.
		return [];
	}
}

function droppedRetryReason(name: string): string {
	return `"${name}" removes items processed in previous executions: it records an event as seen before the step has run, so the provider's retry of an event whose step failed would be dropped there and the event lost. Copies of an event are already answered without running the step: set its Operation to "Remove Items Repeated Within Current Input", or remove it.`;
}

/** An Execute Workflow node whose "Wait For Sub-Workflow Completion" is off, or an expression n8n evaluates per item. */
function mayNotWaitForSubWorkflow(node: { type: string; parameters?: INode['parameters'] }): boolean {
	if (node.type !== EXECUTE_WORKFLOW_TYPE) return false;
	const wait = (node.parameters?.options as { waitForSubWorkflow?: unknown } | undefined)?.waitForSubWorkflow;
	return wait === false || (typeof wait === 'string' && wait.startsWith('='));
}

const ORDER_GUARD_TYPE_SUFFIX = '.idempotencyOrderGuard';

/**
 * A node that checks its wiring when it runs, before it reserves or claims (its keys leave by
 * output 0): Reserve and Claim for Replay (the reserving nodes but the trigger), and Order Guard.
 */
function checksWiringWhenItRuns(node: INode): boolean {
	return (isReservingNode(node) && !isTriggerType(node.type)) || node.type.endsWith(ORDER_GUARD_TYPE_SUFFIX);
}

/**
 * Why a node among `names` (downstream of the Idempotent Webhook trigger) would refuse every event
 * when it runs — after the nodes before it have already acted: the wiring rules Reserve, Order Guard
 * and Claim for Replay check, judged on the workflow before anything runs. The rule that depends on
 * how many events one run carries is left to the node itself.
 */
export function refusalDownstream(record: ExecutionRecord, names: string[]): string | undefined {
	for (const name of names) {
		const node = record.node(name);
		if (!node || node.disabled === true || !checksWiringWhenItRuns(node)) continue;
		try {
			checkSettleWiring(record, name, 0);
			checkOutcomeVisible(record, name, 0);
		} catch (error) {
			// The checks throw only their refusals (UnsafeSettleWiringError).
			return `"${name}" would refuse every event after the nodes before it had run: ${error instanceof Error ? error.message : String(error)}`;
		}
	}
	return undefined;
}

/** A node downstream of the Idempotent Webhook trigger, as n8n's getChildNodes gives it. */
interface ChildNode {
	name: string;
	type: string;
	typeVersion?: number;
	disabled?: boolean;
	parameters?: INode['parameters'];
}

/**
 * Why the key of an event the Idempotent Webhook trigger started could not follow what happened, for
 * the first of its downstream nodes that prevents it; undefined when none does. Checked at the
 * trigger's first step, before any of the user's nodes runs: a Wait or Form (the resumed run has no
 * node of the package in it), a Respond to Webhook node (it needs the Webhook node and fails after
 * any effect before it: the retry would repeat that effect), a sub-workflow not waited for (its
 * failure never reaches the execution, and the key would be completed).
 */
export function unsettleableAfterTrigger(children: ChildNode[], describe: DescribeNode | undefined): string | undefined {
	for (const node of children) {
		if (node.disabled === true) continue;
		if (mayWait(node, describe))
			return `"${node.name}" makes the execution wait (n8n resumes it later as a new run), and the key of an event this trigger started cannot be settled after a wait.`;
		const waitingInside = inlineSubWorkflowNodes(node).find((inner) => inner.disabled !== true && mayWait(inner, describe));
		if (waitingInside) {
			return `"${node.name}" runs a sub-workflow whose node "${waitingInside.name}" makes the execution wait (n8n resumes it later as a new run), and the key of an event this trigger started cannot be settled after a wait.`;
		}
		if (node.type === RESPOND_TYPE) {
			return `"${node.name}" answers the webhook, which this trigger answers itself once the workflow has ended (the answer the event's copies get back).`;
		}
		if (dropsItemsSeenBefore(node)) return droppedRetryReason(node.name);
		if (mayNotWaitForSubWorkflow(node)) {
			return `"${node.name}" may start a sub-workflow without waiting for it (its option "Wait For Sub-Workflow Completion" is off, or an expression), so its failure would never reach this execution and the key would be completed: turn the option on.`;
		}
	}
	return undefined;
}
