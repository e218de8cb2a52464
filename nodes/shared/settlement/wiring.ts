import type { IExecuteFunctions, INode } from 'n8n-workflow';

import { toNodeError } from '../nodeError';
import { inlineSubWorkflowRecord, readExecutionRecord, type ExecutionRecord } from './executionRecord';
import {
	actsAfter,
	allTargets,
	downstreamOf,
	enabledTargets,
	endsOf,
	feedsOf,
	firstActingAfter,
	hasSeveralInputs,
	loopDoneLeadsOn,
	ranBefore,
	targets,
	toolsOf,
} from './graph';
import {
	checksWiringWhenItRuns,
	continuesOnError,
	continuingLosesTheEvent,
	dropsItemsSeenBefore,
	endsBusinessStep,
	errorSettingsDisagree,
	EXECUTE_WORKFLOW_TYPE,
	failsAllOrNothing,
	failsForNoEvent,
	hidesConditionFailures,
	sendsFailuresDownFirstBranch,
	hidesStatementFailures,
	inlineSubWorkflowNodes,
	isRouting,
	isSettleNode,
	joinsAndSplitsWithoutKeys,
	joinsItems,
	joinsWithoutKeys,
	LOOP_TYPE,
	losesSubWorkflowFailures,
	mayHaveEffect,
	mayNotWaitForSubWorkflow,
	mayWait,
	nestedInlineNodes,
	onErrorOf,
	pairsKeptItemsByPlace,
	queriesForFirstItemOnly,
	RESPOND_TYPE,
	sendsEachItemToOneOutput,
	hasRunOnceMode,
	runsOnceForAllItems,
	runsSubWorkflowOnceForAll,
	sendsStatementsAsOne,
	splitsItems,
	stopsTheRun,
	SUB_WORKFLOW_TRIGGER_TYPE,
	type DescribeNode,
	type NodeRef,
} from './nodeKinds';
import { refusal, REFUSALS, type RefusalReason } from './refusals';
import { SUB_WORKFLOW_DEPTH } from './subExecution';

/*
 * The wirings whose keys the package could not settle by what happened, judged on the workflow
 * before anything runs: by the node that feeds a business step (Reserve's New, Order Guard's Newer,
 * Claim for Replay's Claimed) before it reserves or claims, and by the Idempotent Webhook trigger
 * when the workflow is published and at its first step. Refused there, nothing has happened yet;
 * found later, the effect may already have run. The reasons, in words, are in refusals.ts.
 */

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
	if (settles.length > 1) throw refusal('severalSettles', { self, settles: settles.map((node) => node.name) });
	const [settle] = settles;
	if (record.executionOrder !== 'v1') throw refusal('legacyExecutionOrder', { settle: settle.name });
	// A disabled node passes its items on: the step may start behind one.
	const steps = targets(record, self, output).filter((node) => node.name !== settle.name);
	if (steps.length === 0) throw refusal('noStepBesideSettle', { self, settle: settle.name });
	const respond = firstIncludingInline(downstreamOf(record, steps, new Set([self, settle.name])), answersWebhook);
	if (respond) throw refusal('respondInsideStep', { node: respond, settle: settle.name });
}

/** n8n's Respond to Webhook; inside a sub-workflow it fails (no Webhook node above it), after the step's effects before it. */
const answersWebhook = (node: NodeRef): boolean => node.type === RESPOND_TYPE;

/**
 * Throws UnsafeSettleWiringError, before anything is reserved, for a business step whose outcome
 * the package could not learn: a sub-workflow started without waiting for it (its failure never
 * reaches this execution), a node that drops the provider's retries (it keeps what it saw across
 * executions), and any wiring that lets a resumed run end, or wait again, without a node of the
 * package running in it (nothing would settle the key, or extend its hold): a node after a Wait
 * that stops the execution when it fails, a Wait that can run more than once, Settle run before
 * the step.
 */
export function checkOutcomeVisible(record: ExecutionRecord, self: string, output: number): void {
	const step = downstreamOf(record, targets(record, self, output), new Set([self]), endsBusinessStep);
	const settleBeside = enabledTargets(record, self, output).some(isSettleNode);
	const settleChained = settleBeside ? undefined : downstreamOf(record, targets(record, self, output), new Set([self])).find(isSettleNode);
	const settleAfter = settleChained !== undefined;
	// Settle beside the step: checkSettleWiring. Chained after it, a Respond to Webhook before it answers before the outcome is known just the same.
	const respond = settleChained && firstIncludingInline(step, answersWebhook);
	if (respond) throw refusal('respondInsideStep', { node: respond, settle: settleChained.name });
	const disagreeing = firstIncludingInline(step, errorSettingsDisagree);
	if (disagreeing) throw refusal('errorSettingsDisagree', { node: disagreeing });
	const waits = step.filter((node) => waitsIn(record, node));
	// Only the run that starts waiting holds the key; a later run that waits again has no node of the package in it.
	if (waits.length > 1) throw refusal('twoWaits', { first: waits[0].name, second: waits[1].name });
	for (const node of waits) {
		if (downstreamOf(record, allTargets(record, node.name), new Set([self]), endsBusinessStep).some((after) => after.name === node.name))
			throw refusal('waitInLoop', { wait: node.name });
		const feeds = feedsOf(record, node.name);
		if (feeds.length > 1) throw refusal('waitFedTwice', { wait: node.name, feeds: feeds.length });
		// n8n runs a node with several inputs (a Merge) once nothing else is left when one input has no data:
		// after Settle, so the Wait behind it would start with Settle already passed, and nothing would settle after it.
		const joining = step.find(
			(candidate) =>
				hasSeveralInputs(record, candidate) &&
				downstreamOf(record, allTargets(record, candidate.name), new Set([self]), endsBusinessStep).some(
					(after) => after.name === node.name,
				),
		);
		if (joining) throw refusal('waitAfterJoin', { wait: node.name, join: joining.name });
		if (settleBeside) assertSettleRunsAfterStep(record, self, output, node);
	}
	// Settled by the run's record, a condition failure n8n records nowhere would complete the key.
	if (settleBeside || settleAfter) {
		const hiding = firstIncludingInline(step, hidesConditionFailures);
		if (hiding) throw refusal('conditionFailureHidden', { node: hiding });
	}
	// Whoever settles: a failure reported as a success is a success to Settle, Mark Complete and the error handler alike.
	const hidingStatements = firstIncludingInline(step, hidesStatementFailures);
	if (hidingStatements) throw refusal('statementFailureHidden', { node: hidingStatements });
	const downFirstBranch = firstIncludingInline(step, sendsFailuresDownFirstBranch);
	if (downFirstBranch) throw refusal('failureDownFirstBranch', { node: downFirstBranch });
	// Before the reserving node too: a retry dropped on its way to it never reaches the step either.
	const reserving = record.node(self);
	const dropping = firstIncludingInline([...step, ...(reserving ? ranBefore(record, self, reserving) : [])], dropsItemsSeenBefore);
	if (dropping) throw refusal('dropsRetries', { node: dropping });
	const notWaitedFor = firstIncludingInline(step, mayNotWaitForSubWorkflow);
	if (notWaitedFor) throw refusal('subWorkflowNotWaitedFor', { node: notWaitedFor });
	for (const node of step) {
		const losing = firstIncludingInline([node], losesSubWorkflowFailures);
		if (losing) throw refusal('subWorkflowFailuresLost', { node: losing });
		const acting = actsAfterFailureIncludingInline(record, node, self);
		if (acting) throw refusal('successAfterFailure', acting);
		if (!waitsIn(record, node)) continue;
		// n8n-core's error-output split empties the input array the waiting node passed on, and that
		// array is what n8n saves to resume from: the resumed run has no items and nothing runs.
		if (onErrorOf(node) === 'continueErrorOutput') throw refusal('waitAtErrorOutput', { wait: node.name });
		if (settleAfter) throw refusal('waitWithSettleAfter', { wait: node.name, self });
		for (const after of downstreamOf(record, targets(record, node.name, 0), new Set([self, node.name]), endsBusinessStep)) {
			if (continuesOnError(after)) continue;
			// An If or Switch deciding on the answer before anything may have acted: its failure holds the key
			// until the lease ends, and the provider's retry then runs the step again (at Continue an If would
			// take the failure as false and complete the key: conditionFailureHidden).
			if (isRouting(after) && !ranBefore(record, self, after).some(mayHaveEffect)) continue;
			throw refusal('stopsAfterWait', { node: after.name, wait: node.name });
		}
	}
}

/**
 * The first node after `node`'s success output that may act, when `node` is set to Always Output Data and sends its
 * failures to its error output: n8n-core then gives the emptied success output one empty item, and what follows acts
 * as if `node` had succeeded.
 */
function actsAfterFailure(record: ExecutionRecord, node: INode, self: string): INode | undefined {
	if (node.alwaysOutputData !== true || onErrorOf(node) !== 'continueErrorOutput') return undefined;
	return downstreamOf(record, targets(record, node.name, 0), new Set([self, node.name]), endsBusinessStep).find(mayHaveEffect);
}

/** actsAfterFailure for `node` and, when it defines its sub-workflow (Define Below), for that sub-workflow's nodes. */
function actsAfterFailureIncludingInline(
	record: ExecutionRecord,
	node: INode,
	self: string,
	depth = 0,
): { node: string; after: string } | undefined {
	const acting = actsAfterFailure(record, node, self);
	if (acting) return { node: node.name, after: acting.name };
	const inner = depth < SUB_WORKFLOW_DEPTH ? inlineSubWorkflowRecord(node, record) : undefined;
	if (!inner) return undefined;
	for (const innerNode of inlineSubWorkflowNodes(node)) {
		const found = actsAfterFailureIncludingInline(inner.record, innerNode as INode, inner.start, depth + 1);
		if (found) return { node: `${node.name}" → "${found.node}`, after: found.after };
	}
	return undefined;
}

/**
 * Throws UnsafeSettleWiringError, before anything is reserved, when several events of one run would
 * reach a node of the step together that stops the workflow when it fails (n8n's default On Error)
 * and the package settles their keys. n8n records such a node's failure for all the items it was
 * given, not which of them it had already done: every one of those keys has to be failed, and the
 * retry would repeat the effects done for the others. Not refused: nodes that cannot fail on one
 * event's data (No Operation, Merge, Loop Over Items…; Stop and Error before any node that may have
 * an effect: after one, it would end the run with the others' steps half done),
 * nodes that route or reshape items while no node that may have an effect ran before them, a
 * Postgres node sending its items as one query or one transaction (all or nothing), and nodes that
 * every path from the reserving node reaches through Loop Over Items with batch size 1 (one event at
 * a time). Continuing on error, or Loop Over Items, does not make a failure one event's where the
 * node's items do not stand for one event each (checkSplitFromKeylessJoin, checkRunsOnceForAll).
 */
export function checkEventsApart(record: ExecutionRecord, self: string, output: number, events: number): void {
	if (events < 2) return;
	const heads = targets(record, self, output);
	const settled =
		enabledTargets(record, self, output).some(isSettleNode) || downstreamOf(record, heads, new Set([self])).some(isSettleNode);
	if (settled) return checkStepTakesEventsApart(record, self, output, events);
	// Whoever settles the keys (Complete, Mark Failed), a node that runs for the first event only leaves the others' steps
	// undone, inside a sub-workflow that gets the events together too.
	checkFirstEventOnlyIncludingInline(record, self, output, events);
}

/**
 * A node calling tools that may act (an AI Agent), given several events: n8n records which tool run served which of
 * the agent's items, but the agent's later runs (after its tools) as fed from its parent's first output, whatever
 * output feeds it, so a tool's failure is read as every event's or another event's, inside Loop Over Items too.
 */
function checkActingTools(record: ExecutionRecord, node: INode, events: number | undefined): void {
	const tool = toolsOf(record, node.name).find(mayHaveEffect);
	if (tool) throw refusal('toolsWithSeveralEvents', { node: node.name, tool: tool.name, events });
}

/** checkFirstEventOnly for the step `output` of `self` feeds and for the sub-workflows it runs once for all the events. */
function checkFirstEventOnlyIncludingInline(
	record: ExecutionRecord,
	self: string,
	output: number,
	events: number,
	depth = 0,
	actingOutside?: string,
): void {
	const step = downstreamOf(record, targets(record, self, output), new Set([self]), endsBusinessStep);
	const oneAtATime = oneEventAtATime(record, self, step);
	checkFirstEventOnly(record, self, step, oneAtATime, events, actingOutside);
	for (const node of step) checkActingTools(record, node, events);
	// Inside Loop Over Items (batch size 1) the sub-workflow gets one event a run.
	for (const node of step.filter((candidate) => !oneAtATime.has(candidate.name))) {
		checkSubWorkflowEndsInOne(record, node, events, depth);
		checkInlineSubWorkflow(record, node, depth, (inner, start, next) =>
			checkFirstEventOnlyIncludingInline(inner, start, 0, events, next, firstActingAfter(record, node.name)?.name ?? actingOutside),
		);
	}
}

/**
 * Why the step after the Idempotent Webhook trigger could not settle the events of one delivery
 * each by its own outcome (checkEventsApart's rules: the trigger always settles its keys), judged
 * before the workflow is published and at its first step; undefined when it can.
 */
export function eventsTogetherAfterTrigger(record: ExecutionRecord, trigger: string): string | undefined {
	try {
		checkStepTakesEventsApart(record, trigger, 0, undefined);
		return undefined;
	} catch (error) {
		return error instanceof Error ? error.message : String(error);
	}
}

/** checkEventsApart's rules for the step that `output` of `self` feeds; `events` undefined: not counted yet. */
function checkStepTakesEventsApart(
	record: ExecutionRecord,
	self: string,
	output: number,
	events: number | undefined,
	outside?: INode,
	depth = 0,
	actingOutside?: string,
): void {
	const heads = targets(record, self, output);
	const step = downstreamOf(record, heads, new Set([self]), endsBusinessStep);
	const oneAtATime = oneEventAtATime(record, self, step);
	// A node that may have acted before `node` ends the run: before it, on a branch beside it (n8n may run that branch
	// first), or before the Execute Workflow node running this sub-workflow.
	const effectBefore = (node: INode) => effectNotAfter(record, self, node, step) ?? outside;
	// Inside Loop Over Items each run gets one event, unless something acted on every event outside the loop
	// (before it, or beside it): a failure that ends the run there leaves the events the loop had not reached half done.
	const effectBeforeLoop = (loop: INode) => {
		const fromLoop = new Set(downstreamOf(record, allTargets(record, loop.name), new Set([self, loop.name])).map((after) => after.name));
		const outsideLoop = [...ranBefore(record, self, loop), ...step].filter((node) => node.name !== loop.name && !fromLoop.has(node.name));
		return outsideLoop.find(mayHaveEffect) ?? outside;
	};
	const oneEventAndNothingDone = (node: INode) => {
		const loop = oneAtATime.get(node.name);
		return loop !== undefined && !effectBeforeLoop(loop);
	};
	for (const node of step) {
		// Stop and Error ends the run for every event: an effect done before it, or beside it for the same events, is left half done.
		if (stopsTheRun(node) && !oneEventAndNothingDone(node)) {
			const effect = effectBefore(node);
			if (effect) throw refusal('stopAfterEffect', { node: node.name, effect: effect.name, events });
		}
		checkKeptItemsPairedByPlace(record, self, node, events, step);
		checkActingTools(record, node, events);
		if (failsAllOrNothing(node)) continue;
		checkSplitFromKeylessJoin(record, self, node, events, outside);
		// Before the one-at-a-time skip: Loop Over Items after a join loops over the one joined item, not over events.
		checkJoinedAfterEffect(record, self, node, events, step, oneAtATime, outside);
		checkStopsBeforeLoopDone(record, node, oneAtATime);
		if (oneEventAndNothingDone(node)) continue;
		const loop = oneAtATime.get(node.name);
		if (loop && !continuesOnError(node)) {
			const effect = effectBeforeLoop(loop) as INode;
			throw refusal('stopsInLoopAfterEffect', { node: node.name, loop: loop.name, effect: effect.name });
		}
		checkSubWorkflowEndsInOne(record, node, events, depth);
		checkInlineSubWorkflow(record, node, depth, (inner, start, next) =>
			checkStepTakesEventsApart(
				inner,
				start,
				0,
				events,
				effectBefore(node),
				next,
				firstActingAfter(record, node.name)?.name ?? actingOutside,
			),
		);
		if (continuesOnError(node)) {
			if (failsForNoEvent(node)) throw refusal('failureForNoEvent', { node: node.name, events });
			if (sendsStatementsAsOne(node)) throw refusal('statementsAsOne', { node: node.name, events });
			checkRunsOnceForAll(node, events, effectBefore(node));
			if (node.retryOnFail === true && mayHaveEffect(node)) throw refusal('retriedTogether', { node: node.name, events });
			continue;
		}
		const effect = isRouting(node) ? effectBefore(node) : undefined;
		if (isRouting(node) && !effect) continue;
		throw refusal('eventsTogether', {
			node: node.name,
			events,
			after: effect?.name,
			subWorkflow: node.type === EXECUTE_WORKFLOW_TYPE,
			continueHides: continuingLosesTheEvent(node),
			onceForAll: runsOnceForAllItems(node),
		});
	}
	// After the rules above, whose reasons name an effect the node comes after more closely.
	checkFirstEventOnly(record, self, step, oneAtATime, events, actingOutside);
}

/**
 * A node set to Execute Once runs for the first event only: what follows it, unless joined with the events again (a
 * node with several inputs), acts for that one, and the others would be settled as if their step had run. So does an
 * Execute Workflow node at Execute Once (its sub-workflow gets the first event), and a sub-workflow whose own trigger
 * is. Inside a sub-workflow (`self` its trigger) what follows a branch's end is what acts after the Execute Workflow
 * node (`actingOutside`). Not inside Loop Over Items (batch size 1), where each run has one event.
 */
function checkFirstEventOnly(
	record: ExecutionRecord,
	self: string,
	step: INode[],
	oneAtATime: Map<string, INode>,
	events: number | undefined,
	actingOutside?: string,
): void {
	const joinsEvents = (candidate: INode) => hasSeveralInputs(record, candidate);
	// What acts for the one item, or settles only the key that item carries (Complete, Mark Failed: Settle reads the run,
	// where the node's item stands for every event, as a call made once for all of them does).
	const actsOrSettlesOne = (candidate: INode) => mayHaveEffect(candidate) || (endsBusinessStep(candidate) && !isSettleNode(candidate));
	const firstQueryOnly = step.find((candidate) => queriesForFirstItemOnly(candidate) && !oneAtATime.has(candidate.name));
	if (firstQueryOnly) throw refusal('queryForFirstEventOnly', { node: firstQueryOnly.name, events });
	const start = record.node(self);
	if (start?.type === SUB_WORKFLOW_TRIGGER_TYPE && start.executeOnce === true && start.disabled !== true) {
		const acting = step.find(actsOrSettlesOne)?.name ?? actingOutside;
		if (acting) throw refusal('firstEventOnly', { node: self, after: acting, events });
	}
	for (const node of step) {
		if (node.executeOnce !== true || oneAtATime.has(node.name)) continue;
		if (node.type === EXECUTE_WORKFLOW_TYPE) throw refusal('firstEventOnly', { node: node.name, events });
		const after = downstreamOf(record, allTargets(record, node.name), new Set([self, node.name]), joinsEvents);
		// Where the way from it ends the sub-workflow, its items are what the Execute Workflow node returns.
		const endsHere = actingOutside !== undefined && [node, ...after].some((candidate) => allTargets(record, candidate.name).length === 0);
		const acting = after.find(actsOrSettlesOne)?.name ?? (endsHere ? actingOutside : undefined);
		if (acting) throw refusal('firstEventOnly', { node: node.name, after: acting, events });
	}
}

/** The first of `nodes` (and of the sub-workflows they define) the `test` finds, named by its path as the user reads it. */
function firstIncludingInline(nodes: NodeRef[], test: (node: NodeRef) => boolean): string | undefined {
	for (const node of nodes) {
		if (node.disabled === true) continue;
		if (test(node)) return node.name;
		const inner = nestedInlineNodes(node, SUB_WORKFLOW_DEPTH).find((candidate) => test(candidate.node));
		if (inner) return inner.path;
	}
	return undefined;
}

/** Whether the node may make the execution wait, as n8n declares it (n8n's own waiting nodes when the record cannot tell). */
function waitsIn(record: ExecutionRecord, node: INode): boolean {
	const waits = (candidate: INode) => (record.waits ? record.waits(candidate) : mayWait(candidate, undefined));
	// An AI Agent waits while a tool it calls does (Send and Wait as a human-in-the-loop tool).
	return waits(node) || toolsOf(record, node.name).some(waits);
}

/**
 * A node that continues on error fails item by item, each failed item paired to its event, but a
 * node set to Execute Once runs once, on the first item, for all the events it gets, and a Code node
 * run once for all items answers a failure with one item for all of them: its failure is every one
 * of them. Refused where an effect may already have been done for each event before it, as the retry
 * would do it again; before any effect, the retry only runs the one call again.
 */
function checkRunsOnceForAll(node: INode, events: number | undefined, effectBefore: INode | undefined): void {
	if (!runsOnceForAllItems(node) || !effectBefore) return;
	if (node.executeOnce === true) throw refusal('executeOnceAfterEffect', { node: node.name, effect: effectBefore.name, events });
	throw refusal('codeForAllAfterEffect', { node: node.name, effect: effectBefore.name, events, mode: hasRunOnceMode(node) });
}

/**
 * A node that pairs the items it keeps by their place (pairsKeptItemsByPlace) given several events, with a node that may
 * have an effect after it in the step: the effect's outcome would be settled for the wrong events. Refused whatever
 * the node's settings, since n8n's pairing is wrong before anything fails.
 */
function checkKeptItemsPairedByPlace(record: ExecutionRecord, self: string, node: INode, events: number | undefined, step: INode[]): void {
	if (!pairsKeptItemsByPlace(node)) return;
	const after = new Set(downstreamOf(record, allTargets(record, node.name), new Set([self, node.name])).map((next) => next.name));
	const effect = step.find((candidate) => after.has(candidate.name) && candidate.disabled !== true && mayHaveEffect(candidate));
	if (effect) throw refusal('keptItemsPairedByPlace', { node: node.name, effect: effect.name, events });
}

/**
 * A node that may fail, given the one item a join (Aggregate, even of All Item Data; Summarize) made
 * of the events after a node that may have had an effect for each: as with Execute Once, its failure
 * is every event's, and the retry would repeat those effects. Not where the joined item is split
 * again before it (each split item narrowed to the key it carries).
 */
function checkJoinedAfterEffect(
	record: ExecutionRecord,
	self: string,
	node: INode,
	events: number | undefined,
	step: INode[],
	oneAtATime: Map<string, INode>,
	outside: INode | undefined,
): void {
	if (!mayHaveEffect(node) && !isRouting(node)) return;
	if (splitsItems(node)) return;
	const before = ranBefore(record, self, node);
	const comesAfter = (later: INode, earlier: INode) => ranBefore(record, self, later).some((each) => each.name === earlier.name);
	// A node set to Always Output Data that returns nothing gives one empty item, paired to every item it got, even
	// when that node is the effect itself (an API answering each call with an empty list).
	for (const empty of before.filter((candidate) => candidate.alwaysOutputData === true && !oneAtATime.has(candidate.name))) {
		const effect = effectNotAfter(record, self, empty, step) ?? outside ?? (mayHaveEffect(empty) ? empty : undefined);
		if (effect) throw refusal('emptyItemAfterEffect', { node: node.name, empty: empty.name, effect: effect.name, events });
	}
	// A join inside Loop Over Items (batch size 1) joins one event. A node set to Execute Once, even one that cannot
	// fail (a No Operation), gives what it made of the first item for all the items it got. A sub-workflow given all the
	// items in one run that joins them hands back what it made of all of them; when a node inside may act, its node is
	// itself a call made for all of them, whatever the sub-workflow did before its join.
	const joinsOnce = (candidate: NodeRef & Partial<Pick<INode, 'executeOnce'>>) => joinsItems(candidate) || candidate.executeOnce === true;
	const joinInside = (candidate: INode) => {
		if (!runsSubWorkflowOnceForAll(candidate)) return undefined;
		const nested = nestedInlineNodes(candidate, SUB_WORKFLOW_DEPTH);
		const inner = nested.find((each) => joinsOnce(each.node));
		const acts = nested.some((each) => each.node.type !== SUB_WORKFLOW_TRIGGER_TYPE && mayHaveEffect(each.node as INode));
		return inner && { inner, acts };
	};
	const joins = before
		.filter((candidate) => !oneAtATime.has(candidate.name))
		.map((candidate) => ({ join: candidate, inside: joinInside(candidate) }))
		.filter(({ join, inside }) => joinsOnce(join) || inside !== undefined);
	for (const { join, inside } of joins) {
		// An effect before the join, beside it, or made of the joined item (a batch call) before `node` or beside it:
		// reached from the join through no node that joins its item with the events again (a Merge, Compare Datasets).
		const madeOfTheJoin = downstreamOf(record, allTargets(record, join.name), new Set([self, join.name]), (candidate) =>
			hasSeveralInputs(record, candidate),
		).find(
			(candidate) =>
				candidate.name !== node.name &&
				mayHaveEffect(candidate) &&
				!comesAfter(candidate, node) &&
				!partedFrom(record, self, step, candidate, node),
		);
		const inner = inside?.inner;
		const actsInside = inside?.acts === true;
		const effect = effectNotAfter(record, self, join, step) ?? outside ?? madeOfTheJoin ?? (actsInside ? join : undefined);
		if (!effect) continue;
		// Split again into one item per event, before anything acted on the joined item: a split after a batch call
		// does not undo that the call was made once for all of them.
		const splitAgain =
			!actsInside &&
			before.some((split) => splitsItems(split) && comesAfter(split, join) && !(madeOfTheJoin && comesAfter(split, madeOfTheJoin)));
		if (splitAgain) continue;
		throw refusal('joinedAfterEffect', {
			node: node.name,
			join: inner?.path ?? join.name,
			effect: effect.name,
			events,
			executeOnce: !joinsItems(inner?.node ?? join),
			actsOnTheJoin: actsInside && effect === join,
		});
	}
}

/**
 * A node of the step that may have an effect for the events `node` gets, in the same run, without
 * coming only after it: one before it, or one n8n reaches without passing through it or a join that
 * waits for it (on a branch beside it, or fed by such a branch too), which the same events may take.
 * Run before or after it, its effect may be done either way.
 */
function effectNotAfter(record: ExecutionRecord, self: string, node: INode, step: INode[]): INode | undefined {
	const after = new Set(downstreamOf(record, [node], new Set([self])).map((candidate) => candidate.name));
	// A node with several inputs (a Merge) that `node` feeds runs once `node` has: what follows it comes after.
	const waitsForNode = (candidate: INode) => after.has(candidate.name) && hasSeveralInputs(record, candidate);
	const around = new Set(
		downstreamOf(record, allTargets(record, self), new Set([self, node.name]), waitsForNode).map((candidate) => candidate.name),
	);
	return (
		ranBefore(record, self, node).find(mayHaveEffect) ??
		step.find((candidate) => around.has(candidate.name) && mayHaveEffect(candidate) && !partedFrom(record, self, step, candidate, node))
	);
}

/**
 * Whether `a` and `b` get other events: both reached only through a node that sends each item to one
 * of its outputs (an If's true or false, a Switch's route unless it sends to all matching outputs, a
 * node's success or error output), `a` through some of its outputs and `b` through others.
 */
function partedFrom(record: ExecutionRecord, self: string, step: INode[], a: INode, b: INode): boolean {
	for (const router of step) {
		if (!sendsEachItemToOneOutput(router)) continue;
		const outputs = record.connectionsBySourceNode[router.name]?.main ?? [];
		const reached = outputs.map(
			(_, output) =>
				new Set(
					downstreamOf(record, targets(record, router.name, output), new Set([self, router.name]), endsBusinessStep).map(
						(node) => node.name,
					),
				),
		);
		const throughA = reached.map((names) => names.has(a.name));
		const throughB = reached.map((names) => names.has(b.name));
		if (!throughA.some(Boolean) || !throughB.some(Boolean) || throughA.some((reaches, output) => reaches && throughB[output])) continue;
		// The router must be the only way to both: with it left out, neither is reached.
		const without = new Set(downstreamOf(record, allTargets(record, self), new Set([self, router.name])).map((node) => node.name));
		if (!without.has(a.name) && !without.has(b.name)) return true;
	}
	return false;
}

/**
 * An item split out (Split Out, Item Lists' Split Out Items) of one that joined the events without
 * their keys (Aggregate at Individual Fields, Summarize, Item Lists doing either) is paired by n8n
 * to every event of the join, and carries no key to tell which one it is: its failure, whatever the
 * node's On Error and even one item at a time (Loop Over Items), fails every key. Refused where an effect may already have been done for some of them
 * (by a node before it, or by the node itself for the other items), as the retry would do it again.
 */
function checkSplitFromKeylessJoin(
	record: ExecutionRecord,
	self: string,
	node: INode,
	events: number | undefined,
	outside: INode | undefined,
): void {
	const before = ranBefore(record, self, node);
	if (!mayHaveEffect(node) && !before.some(mayHaveEffect) && !outside) return;
	const sqlJoin = before.find(joinsAndSplitsWithoutKeys);
	if (sqlJoin) throw refusal('rowsFromKeylessSqlJoin', { node: node.name, merge: sqlJoin.name, events });
	const split = before.find((candidate) => splitsItems(candidate) && ranBefore(record, self, candidate).some(joinsWithoutKeys));
	if (!split) return;
	const join = ranBefore(record, self, split).find(joinsWithoutKeys) as INode;
	throw refusal('splitFromKeylessJoin', { node: node.name, split: split.name, join: join.name, events });
}

/**
 * Inside Loop Over Items (batch size 1), a node whose failure ends the loop (it stops the workflow,
 * or its error output does not lead back into the loop) leaves the events that went round waiting
 * for the Done output: where that output leads on, their keys fail at the end although their step's
 * work was done, and the provider's retry would do it again. Refused where the loop's body may have
 * an effect; with the Done output unconnected, an event that went round is finished.
 */
function checkStopsBeforeLoopDone(record: ExecutionRecord, node: INode, oneAtATime: Map<string, INode>): void {
	const loop = oneAtATime.get(node.name);
	if (!loop || failsAllOrNothing(node) || !endsLoopWhenItFails(record, node, loop) || !loopDoneLeadsOn(record, loop.name)) return;
	const body = [...oneAtATime].filter(([, owner]) => owner.name === loop.name).map(([name]) => record.node(name));
	const effect = body.find(
		(candidate): candidate is INode => candidate !== undefined && candidate.disabled !== true && mayHaveEffect(candidate),
	);
	if (effect) throw refusal('stopsBeforeLoopDone', { node: node.name, loop: loop.name, effect: effect.name });
}

/** Whether `node`'s failure ends `loop`: it stops the workflow, or its error output (the one after its single regular output) leads elsewhere. */
function endsLoopWhenItFails(record: ExecutionRecord, node: INode, loop: INode): boolean {
	if (!continuesOnError(node)) return true;
	// At Continue (regular output) the failed item goes on like any other; an If's or a Switch's outputs are its own.
	if (onErrorOf(node) !== 'continueErrorOutput' || continuingLosesTheEvent(node)) return false;
	const onError = targets(record, node.name, 1);
	return (
		!onError.some((target) => target.name === loop.name) &&
		!downstreamOf(record, onError, new Set()).some((after) => after.name === loop.name)
	);
}

/**
 * A sub-workflow defined in an Execute Workflow node (Source "Define Below") that gets all the
 * node's items in one run is part of the step: its nodes get the events together, after whatever
 * may have acted before the Execute Workflow node, and the same rules hold for them: `check` judges
 * its step, the one after its trigger (`start`), `depth` levels down.
 */
function checkInlineSubWorkflow(
	record: ExecutionRecord,
	node: INode,
	depth: number,
	check: (inner: ExecutionRecord, start: string, depth: number) => void,
): void {
	if (depth >= SUB_WORKFLOW_DEPTH || !runsSubWorkflowOnceForAll(node)) return;
	const inner = inlineSubWorkflowRecord(node, record);
	if (!inner) return;
	check(inner.record, inner.start, depth + 1);
}

/**
 * A sub-workflow defined in `node`, run once for all the events, whose branches end in more than one node: n8n hands
 * back only what the node that ran last gave, so the events another end answered would never reach the nodes after
 * `node`, and their keys would be completed without them. Where nothing that may act follows `node`, the sub-workflow
 * was the step and its ends did it. A sub-workflow loaded from elsewhere is judged by its run's record
 * (trace.ts, answersNotReturned).
 */
function checkSubWorkflowEndsInOne(record: ExecutionRecord, node: INode, events: number | undefined, depth: number): void {
	if (!actsAfter(record, node.name)) return;
	checkInlineSubWorkflow(record, node, depth, (inner, start) => {
		const ends = endsOf(inner, start)
			.map((end) => end.name)
			.sort();
		if (ends.length > 1) throw refusal('subWorkflowEndsApart', { node: node.name, ends, events });
	});
}

/**
 * The nodes that every path from `self` reaches only through the loop output of a Loop Over Items
 * (version 3 and later) with batch size 1, each with its loop: each of their runs gets one event.
 */
function oneEventAtATime(record: ExecutionRecord, self: string, step: INode[]): Map<string, INode> {
	const inside = new Map<string, INode>();
	for (const loop of step) {
		if (loop.type !== LOOP_TYPE || loop.typeVersion < 3 || Number(loop.parameters?.batchSize ?? 1) !== 1) continue;
		const reached = new Set(
			downstreamOf(record, targets(record, loop.name, 1), new Set([self, loop.name]), endsBusinessStep).map((node) => node.name),
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
		for (const name of reached) inside.set(name, loop);
	}
	return inside;
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
		if (settleY < headY || (settleY === headY && settleX <= headX))
			throw refusal('settleAboveStep', { settle: settle.name, head: head.name, wait: wait.name });
	}
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
			return REFUSALS.refusedDownstream({ node: name, reason: error instanceof Error ? error.message : String(error) });
		}
	}
	return undefined;
}

/**
 * Why the key of an event the Idempotent Webhook trigger started could not follow what happened, for
 * the first of its downstream nodes (n8n's summaries of them) that prevents it; undefined when none
 * does. Checked when the workflow is published and at the trigger's first step, before any of the
 * user's nodes runs: a node that waits (the resumed run has no node of the package in it), a Respond
 * to Webhook node (it needs the Webhook node and fails after any effect before it: the retry would
 * repeat that effect), a node that drops the provider's retries, a sub-workflow not waited for (its
 * failure never reaches the execution, and the key would be completed), and, read from `record`'s
 * nodes (n8n's summaries carry no On Error), an Execute Workflow node whose sub-workflow's failures
 * n8n overwrites (losesSubWorkflowFailures).
 */
export function unsettleableAfterTrigger(
	children: NodeRef[],
	describe: DescribeNode | undefined,
	record?: ExecutionRecord,
	trigger = '',
): string | undefined {
	const reason = <R extends RefusalReason>(name: R, facts: Parameters<(typeof REFUSALS)[R]>[0]) => refusal(name, facts).message;
	for (const node of children) {
		if (node.disabled === true) continue;
		if (mayWait(node, describe)) return reason('waitsBehindTrigger', { node: node.name });
		const waitingTool = record && toolsOf(record, node.name).find((tool) => mayWait(tool, describe));
		if (waitingTool) return reason('waitsBehindTrigger', { node: waitingTool.name });
		const waitingInside = nestedInlineNodes(node, SUB_WORKFLOW_DEPTH).find((inner) => mayWait(inner.node, describe));
		if (waitingInside) return reason('subWorkflowWaitsBehindTrigger', { node: node.name, inner: waitingInside.node.name });
		const responding = firstIncludingInline([node], answersWebhook);
		if (responding) return reason('respondBehindTrigger', { node: responding });
		const disagreeing = firstIncludingInline([record?.node(node.name) ?? node], errorSettingsDisagree);
		if (disagreeing) return reason('errorSettingsDisagree', { node: disagreeing });
		const dropping = firstIncludingInline([node], dropsItemsSeenBefore);
		if (dropping) return reason('dropsRetries', { node: dropping });
		const notWaitedFor = firstIncludingInline([node], mayNotWaitForSubWorkflow);
		if (notWaitedFor) return reason('subWorkflowNotWaitedFor', { node: notWaitedFor });
		const full = record?.node(node.name);
		const losing = full && firstIncludingInline([full], losesSubWorkflowFailures);
		if (losing) return reason('subWorkflowFailuresLost', { node: losing });
		const hiding = full && firstIncludingInline([full], hidesConditionFailures);
		if (hiding) return reason('conditionFailureHidden', { node: hiding });
		const hidingStatements = full && firstIncludingInline([full], hidesStatementFailures);
		if (hidingStatements) return reason('statementFailureHidden', { node: hidingStatements });
		const downFirstBranch = full && firstIncludingInline([full], sendsFailuresDownFirstBranch);
		if (downFirstBranch) return reason('failureDownFirstBranch', { node: downFirstBranch });
		const acting = full && record && actsAfterFailureIncludingInline(record, full, trigger);
		if (acting) return reason('successAfterFailure', acting);
	}
	return undefined;
}
