import type { INode } from 'n8n-workflow';

import type { ExecutionRecord } from './executionRecord';
import { isPackageType, LOOP_TYPE, loopOutputsOf, mayHaveEffect, onErrorOf, type LoopOutputs } from './nodeKinds';

/*
 * The workflow's wiring as the rules walk it: n8n's main connections only, a disabled node passing
 * its items on (n8n runs what is behind it).
 */

/** A main connection that ends at a node: the node and output it leaves from, the input it reaches. */
export interface Feed {
	from: string;
	output: number;
	index: number;
}

/** The nodes on one main output of `name`. */
export function targets(record: ExecutionRecord, name: string, output: number): INode[] {
	return (record.connectionsBySourceNode[name]?.main?.[output] ?? [])
		.map((connection) => record.node(connection.node))
		.filter((node): node is INode => node !== undefined);
}

/** The enabled nodes on one main output of `name`. */
export function enabledTargets(record: ExecutionRecord, name: string, output: number): INode[] {
	return targets(record, name, output).filter((node) => node.disabled !== true);
}

/** The nodes on every main output of `name`. */
export function allTargets(record: ExecutionRecord, name: string): INode[] {
	return (record.connectionsBySourceNode[name]?.main ?? [])
		.flatMap((outputs) => outputs ?? [])
		.map((connection) => record.node(connection.node))
		.filter((node): node is INode => node !== undefined);
}

// n8n's connection type from a tool to the AI Agent that calls it (NodeConnectionTypes.AiTool in n8n 2.x, the same
// string in 1.x's NodeConnectionType).
const AI_TOOL = 'ai_tool';

/** The enabled nodes `name` calls as its tools (an AI Agent's), and theirs in turn (an agent used as a tool). */
export function toolsOf(record: ExecutionRecord, name: string, seen = new Set<string>([name])): INode[] {
	const tools = Object.entries(record.connectionsBySourceNode)
		.filter(
			([from, byType]) => !seen.has(from) && (byType[AI_TOOL] ?? []).some((links) => (links ?? []).some((link) => link.node === name)),
		)
		.map(([from]) => record.node(from))
		.filter((node): node is INode => node !== undefined && node.disabled !== true);
	for (const tool of tools) seen.add(tool.name);
	return [...tools, ...tools.flatMap((tool) => toolsOf(record, tool.name, seen))];
}

/** The main connections that end at `name`. */
export function feedsOf(record: ExecutionRecord, name: string): Feed[] {
	const found: Feed[] = [];
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

/** Whether `node` has more than one input wired (a Merge, Compare Datasets): it joins what its inputs bring. */
export function hasSeveralInputs(record: ExecutionRecord, node: INode): boolean {
	return inputIndexes(record, node.name).size > 1;
}

/**
 * The enabled nodes reachable from `start` over main connections (through disabled nodes, which
 * pass their items on), not past `seen` nor past a node `stopAt` accepts.
 */
export function downstreamOf(
	record: ExecutionRecord,
	start: INode[],
	seen: Set<string>,
	stopAt: (node: INode) => boolean = () => false,
): INode[] {
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

/** The names of the nodes one node's outputs lead to, directly or further on, over any connection (itself too, inside a loop). */
export function reachableFrom(record: ExecutionRecord, name: string): Set<string> {
	const found = new Set<string>();
	const pending = [name];
	while (pending.length > 0) {
		const current = pending.pop() as string;
		for (const outputs of Object.values(record.connectionsBySourceNode[current] ?? {})) {
			for (const connections of outputs ?? []) {
				for (const connection of connections ?? []) {
					if (found.has(connection.node)) continue;
					found.add(connection.node);
					pending.push(connection.node);
				}
			}
		}
	}
	return found;
}

/** The enabled nodes on some path from `self` to `node` (its ancestors, not past `self`). */
export function ranBefore(record: ExecutionRecord, self: string, node: INode): INode[] {
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
 * Whether the items a loop node holds for its Done output have work still to run: the
 * output leads to a node other than a loop node, to a loop node that runs after it (a second loop),
 * or to an outer loop taking them back (this loop is in its body) whose own Done output does. A
 * loop node only passes items it takes back on to its Done output.
 */
export function loopDoneLeadsOn(record: ExecutionRecord, name: string, seen = new Set<string>()): boolean {
	seen.add(name);
	const loopNode = record.node(name);
	const done = loopNode ? loopOutputs(record, loopNode).done : 0;
	for (const connection of record.connectionsBySourceNode[name]?.main?.[done] ?? []) {
		if (!connection) continue;
		const target = record.node(connection.node);
		if (target?.type !== LOOP_TYPE) return true;
		const body = downstreamOf(record, targets(record, target.name, loopOutputs(record, target).loop), new Set([target.name]));
		if (!body.some((node) => node.name === name)) return true;
		if (!seen.has(target.name) && loopDoneLeadsOn(record, target.name, seen)) return true;
	}
	return false;
}

/** A loop node's Done and loop outputs, as n8n names them for its version. */
export function loopOutputs(record: ExecutionRecord, loop: INode): LoopOutputs {
	return record.loopOutputs?.(loop) ?? loopOutputsOf(loop, undefined);
}

/** The first node that may have an effect (the package's own nodes left out) after `name`'s first output. */
export function firstActingAfter(record: ExecutionRecord, name: string): INode | undefined {
	return downstreamOf(record, targets(record, name, 0), new Set([name])).find(
		(next) => !isPackageType(next.type) && mayHaveEffect({ ...next, typeVersion: next.typeVersion ?? 1 }),
	);
}

/** Whether a node that may have an effect (the package's own nodes left out) follows `name`'s first output. */
export function actsAfter(record: ExecutionRecord, name: string): boolean {
	return firstActingAfter(record, name) !== undefined;
}

/**
 * The nodes where the branches from `start` end with their answers: none of their outputs leads to a node, or only the
 * error output (a fallback after a failure). Not a side branch: a node fed only by outputs that also feed others gets
 * copies of items that go on beside it.
 */
export function endsOf(record: ExecutionRecord, start: string): INode[] {
	const answersEndAt = (node: INode) => {
		const outputs = record.connectionsBySourceNode[node.name]?.main ?? [];
		if (outputs.every((connections) => (connections ?? []).length === 0)) return true;
		return onErrorOf(node) === 'continueErrorOutput' && (outputs[0] ?? []).length === 0;
	};
	const sideBranch = (node: INode) =>
		feedsOf(record, node.name).every(
			(feed) => (record.connectionsBySourceNode[feed.from]?.main?.[feed.output] ?? []).filter(Boolean).length > 1,
		);
	return downstreamOf(record, allTargets(record, start), new Set([start])).filter((node) => answersEndAt(node) && !sideBranch(node));
}
