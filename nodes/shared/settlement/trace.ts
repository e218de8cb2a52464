import type { IDataObject, INode, INodeExecutionData, IPairedItemData, IRunData, ISourceData, ITaskData } from 'n8n-workflow';

import type { ExecutionRecord, ExecutionView } from './executionRecord';
import { actsAfter, downstreamOf, loopDoneLeadsOn, ranBefore as nodesBefore, reachableFrom } from './graph';
import {
	branchesOnItems,
	EXECUTE_WORKFLOW_TYPE,
	inlineSubWorkflowNodes,
	isKeyType,
	isReserveType,
	isReservingNode,
	isReservingOrSettlingType,
	isPackageType,
	isSettlingOperation,
	joinsByPlace,
	LOOP_TYPE,
	mayHaveEffect,
	mayReturnUnpairedItems,
	onErrorOf,
	writesAllOrNone,
} from './nodeKinds';
import {
	isSubWorkflowErrorOutput,
	subExecutionIdOf,
	subExecutionOfRun,
	subExecutionsOfRun,
	SUB_WORKFLOW_DEPTH,
	type SubExecutionRecord,
	type SubExecutionRecords,
} from './subExecution';

/*
 * What happened to each key an execution reserved, read from n8n's own record of the execution and
 * traced item by item (n8n's paired items) back to the Idempotency Reserve item that reserved it.
 * Position plays no part: a key's step has failed when an item descending from its reservation
 * failed anywhere, and it has not finished while an item descending from it still waits to run (on
 * n8n's execution stack, at a node waiting for its other inputs, or held by a loop node).
 */

// n8n's own rule for an item that carries an error on a regular output (On Error: Continue (regular output)).
const ERROR_ITEM_KEYS = new Set(['error', 'message', 'details']);
const MAX_TRACE_DEPTH = 1_000;

/** One key this execution reserved: the New item of one Reserve run, named by that run's input item. */
export interface Reservation {
	id: string;
	reserveNode: string;
	key: string;
	ownerToken: string;
	leaseEndsAt: Date | null;
	/** The reservation as Reserve output it (the item's idempotency object). */
	idempotency: IDataObject;
}

/** The reservations an item descends from; null when n8n's pairing cannot tell. */
type Origins = string[] | null;

export interface Judgement {
	reservations: Map<string, Reservation>;
	/** The failure message of every reservation whose step failed for one of its items. */
	failed: Map<string, string>;
	/** The nodes each failed reservation's step failed at. */
	failedAt: Map<string, Set<string>>;
	/** Reservations with work still to run. */
	pending: Set<string>;
	/** A failure that cannot be traced to its reservation: no key may be completed on a guess. */
	untracedFailure?: string;
	/** Work still to run that cannot be traced: no key may be called finished. */
	untracedPending: boolean;
}

export function reservationId(reserveNode: string, run: number, inputIndex: number): string {
	return JSON.stringify([reserveNode, run, inputIndex]);
}

/** Every key the enabled Reserve nodes reserved in this execution (their New items with an owner token). */
export function reservationsOf(view: ExecutionRecord): Map<string, Reservation> {
	const found = new Map<string, Reservation>();
	for (const [name, tasks] of Object.entries(view.runData)) {
		if (!isReservingNode(view.node(name))) continue;
		tasks.forEach((task, run) => {
			for (const item of task.data?.main?.[0] ?? []) {
				const held = heldKeyOf(item);
				if (!held) continue;
				for (const pair of pairedItemsOf(item)) {
					found.set(reservationId(name, run, pair.item), { id: reservationId(name, run, pair.item), reserveNode: name, ...held });
				}
			}
		});
	}
	return found;
}

/** The key an item holds for this run to settle (its reservation's key, owner token and lease end); undefined when it holds none. */
export function heldKeyOf(item: INodeExecutionData): Pick<Reservation, 'key' | 'ownerToken' | 'leaseEndsAt' | 'idempotency'> | undefined {
	const idempotency = reservedBy(item);
	if (!idempotency) return undefined;
	const leaseEndsAt = typeof idempotency.lockedUntil === 'string' ? new Date(idempotency.lockedUntil) : null;
	return { key: idempotency.key as string, ownerToken: idempotency.ownerToken as string, leaseEndsAt, idempotency };
}

function reservedBy(item: INodeExecutionData): IDataObject | undefined {
	const idempotency = item.json?.idempotency as IDataObject | undefined;
	if (!idempotency || !(idempotency.outcome === 'new' || (idempotency.outcome === 'replay' && idempotency.claimed === true)))
		return undefined;
	if (typeof idempotency.key !== 'string' || typeof idempotency.ownerToken !== 'string' || idempotency.ownerToken === '') return undefined;
	return idempotency;
}

/** Reservation ids by key and owner token: read where an item's pairing is lost. */
type HeldKeys = Map<string, string[]>;

/** Finds where the items of one execution come from; what it reads once is kept for the whole judgement. */
class Tracer {
	private heldKeys?: HeldKeys;
	private readonly sameEvents = new Map<INodeExecutionData[], boolean>();

	constructor(
		readonly view: ExecutionRecord,
		private readonly reservations?: Map<string, Reservation>,
		/** The sub-execution records judgeExecution was given (`subExecutionsToRead`): where one is missing, pairing may be too. */
		private readonly subExecutions?: SubExecutionRecords,
	) {}

	/**
	 * The reservations an item that one run of `node` output descends from: [] when its chain reaches
	 * the execution's start (or a Reserve output other than New) without a reservation, null when a
	 * link is missing and the item holds no key of this execution either.
	 */
	ofItem(node: string, run: number, item: INodeExecutionData, depth = 0): Origins {
		if (depth > MAX_TRACE_DEPTH) return null;
		if (isReservingNode(this.view.node(node))) {
			if (!reservedBy(item)) return [];
			return pairedItemsOf(item).map((pair) => reservationId(node, run, pair.item));
		}
		const task = this.view.runData[node]?.[run];
		if (task && isStart(task)) return [];
		const links = this.upstreamOf(node, task, item);
		if (links === null) return this.ofHeldKey(item);
		const origins = this.ofLinks(links, depth);
		if (origins === null) return null;
		return this.contradictedBy(item, origins) ?? this.narrowedByHeldKey(node, item, origins, task);
	}

	/**
	 * The reservations the input items an output item is paired to descend from; null where one cannot be traced. An
	 * item joined from several nodes (a Merge, Compare Datasets) with the one item of a node set to Execute Once (data
	 * fetched once for all the events) descends from the events of its other inputs: that item is no event's.
	 */
	private ofLinks(links: Array<{ source: ISourceData; item: INodeExecutionData }>, depth: number): Origins {
		const sharedData = (link: { source: ISourceData }) => this.view.node(link.source.previousNode)?.executeOnce === true;
		const joined = new Set(links.map((link) => link.source.previousNode)).size > 1;
		if (joined && links.some(sharedData)) {
			// Only where the other inputs bring the events: an Execute Once node on the event's own path is its link.
			const events = this.tracedLinks(
				links.filter((link) => !sharedData(link)),
				depth,
			);
			if (events !== null && events.length > 0) return events;
		}
		return this.tracedLinks(links, depth);
	}

	private tracedLinks(links: Array<{ source: ISourceData; item: INodeExecutionData }>, depth: number): Origins {
		const origins: string[] = [];
		for (const link of links) {
			const traced = this.ofItem(link.source.previousNode, link.source.previousNodeRun ?? 0, link.item, depth + 1);
			if (traced === null) return null;
			origins.push(...traced);
		}
		return origins;
	}

	/**
	 * The reservation whose key and owner token an item carries, when n8n's pairing does not lead to it:
	 * the item descends from that one. n8n-core pairs the items a node returns without pairedItem by
	 * position when there are as many as it was given (a Code node sorting events), and a guess that
	 * moves an event to another's place would fail the key whose effect was done and complete the one
	 * whose effect failed. Undefined when the item carries no key of this execution or its pairing
	 * agrees with it.
	 */
	private contradictedBy(item: INodeExecutionData, origins: string[]): string[] | undefined {
		const held = this.ofHeldKey(item);
		if (held === null || origins.includes(held[0])) return undefined;
		return held;
	}

	/**
	 * Whether n8n's pairing of an output item of one node run cannot be followed: a link is missing, or
	 * it leads away from the key the item carries. The keys that went into such a run and came out under
	 * no item are judged by `judgeUnpaired`.
	 */
	pairingLost(node: string, task: ITaskData | undefined, item: INodeExecutionData): boolean {
		const links = this.upstreamOf(node, task, item);
		if (links === null) return true;
		if (this.ofHeldKey(item) === null) return false;
		const origins = this.ofLinks(links, 0);
		return origins !== null && this.contradictedBy(item, origins) !== undefined;
	}

	/**
	 * An item traced to several reservations that itself carries the key and owner token of exactly one
	 * of them descends from that one: n8n pairs an aggregated item (Aggregate) to every item it took in,
	 * so each item split out of it again (Split Out) traces to every key, while it still carries its own.
	 * Failing every key for one item's failure would repeat the effects already done. Only narrows
	 * within the traced reservations, never adds one, never after a Merge joining items by their place
	 * (`joinsByPlace`), and only when each of them is carried by some item of the same node run: an item
	 * that joins two events (a Merge by position) carries one key, and narrowing it would let the other
	 * key pass as finished.
	 */
	private narrowedByHeldKey(node: string, item: INodeExecutionData, origins: string[], task: ITaskData | undefined): string[] {
		const traced = new Set(origins);
		if (traced.size < 2) return origins;
		// A Merge by position gives an item one input's key and another event's data: it stands for both.
		if (joinsByPlace(this.view.node(node))) return origins;
		const held = reservedBy(item);
		if (!held) return origins;
		const named = (this.heldKeysOf().get(heldKeyId(held.key as string, held.ownerToken as string)) ?? []).filter((id) => traced.has(id));
		if (named.length !== 1) return origins;
		const carriedInRun = new Set<string>();
		for (const items of task?.data?.main ?? []) {
			for (const sibling of items ?? []) {
				const key = reservedBy(sibling);
				if (key) for (const id of this.heldKeysOf().get(heldKeyId(key.key as string, key.ownerToken as string)) ?? []) carriedInRun.add(id);
			}
		}
		return [...traced].every((id) => carriedInRun.has(id)) ? named : origins;
	}

	/** The input items (as their source node output them) an output item of a node run comes from; null where n8n's pairing is lost. */
	upstreamOf(
		node: string,
		task: ITaskData | undefined,
		item: INodeExecutionData,
	): Array<{ source: ISourceData; item: INodeExecutionData }> | null {
		const throughSubWorkflow = this.subWorkflowLinks(node, task, item);
		if (throughSubWorkflow !== undefined) return throughSubWorkflow;
		const paired = pairingOf(this.view, node, task, item);
		if (paired.length === 0) return null;
		const links: Array<{ source: ISourceData; item: INodeExecutionData }> = [];
		for (const pair of paired) {
			const source = (pair as IPairedItemData & { sourceOverwrite?: ISourceData }).sourceOverwrite ?? task?.source?.[pair.input ?? 0];
			const upstream = source ? outputItem(this.view, source, pair.item) : undefined;
			if (!source || !upstream) return null;
			links.push({ source, item: upstream });
		}
		return links;
	}

	/**
	 * The input items an item returned by an Execute Workflow run "once" (waiting for its sub-workflow) comes from, read
	 * through the sub-execution's record, not through n8n's re-pairing: n8n's findPairedItemThroughWorkflowData follows
	 * each node's first input only and reads an input index as an output index (an If → Merge inside pairs one event's
	 * answer to another's), and without the record (not saved) leaves the sub-workflow's own indexes. One item given, or
	 * several that descend from the same events (one event's lines): every item comes from them. Otherwise the record
	 * missing, or a link in it, loses the pairing (null: the key the item carries still names its reservation,
	 * `ofHeldKey`). Undefined where n8n's pairing stands: not such a run, or the records were not read
	 * (`subExecutionsToRead`).
	 */
	private subWorkflowLinks(
		node: string,
		task: ITaskData | undefined,
		item: INodeExecutionData,
	): Array<{ source: ISourceData; item: INodeExecutionData }> | null | undefined {
		const id = returnedBySubWorkflow(this.view, node, task);
		if (id === undefined || !this.subExecutions?.has(id)) return undefined;
		const source = task?.source?.[0];
		const given = source ? outputItems(this.view.runData, source) : [];
		if (!source || given.length === 0) return null;
		const everyGiven = given.map((upstream) => ({ source, item: upstream }));
		// Where the record cannot tell, only items that all descend from the same events can be followed.
		const unknown = () => (this.givenFromSameEvents(source, given) ? everyGiven : null);
		if (given.length === 1) return everyGiven;
		const record = this.subExecutions.get(id);
		const cameFrom = record && task ? returnedCameFrom(record, this.subExecutions, task, item) : null;
		if (cameFrom === null) return unknown();
		const links: Array<{ source: ISourceData; item: INodeExecutionData }> = [];
		for (const origin of cameFrom) {
			const upstream =
				typeof origin === 'number'
					? given[origin]
					: given.find((candidate) => {
							const held = reservedBy(candidate);
							return held !== undefined && heldKeyId(held.key as string, held.ownerToken as string) === origin;
						});
			if (!upstream) return unknown();
			links.push({ source, item: upstream });
		}
		return links.length > 0 ? links : unknown();
	}

	/** Whether every item given to a node run descends from the same reservations (the lines of one event): then any of them stands for all. */
	private givenFromSameEvents(source: ISourceData, given: INodeExecutionData[]): boolean {
		const known = this.sameEvents.get(given);
		if (known !== undefined) return known;
		const origins = given.map((upstream) => this.ofInput(source, upstream));
		const first = origins[0] === null ? null : JSON.stringify([...new Set(origins[0])].sort());
		const same = first !== null && origins.every((each) => each !== null && JSON.stringify([...new Set(each)].sort()) === first);
		this.sameEvents.set(given, same);
		return same;
	}

	/**
	 * Whether n8n's own pairing of the items an Execute Workflow run returned may differ from the package's
	 * (`subWorkflowLinks`): with one item given too, n8n's re-pairing can name an input the node does not have (a Merge's
	 * second input inside).
	 */
	pairsThroughSubWorkflow(node: string, task: ITaskData | undefined): boolean {
		return returnedBySubWorkflow(this.view, node, task) !== undefined;
	}

	/** The reservations the item at `index` of one node output descends from. */
	ofOutput(source: ISourceData, index: number): Origins {
		const item = outputItem(this.view, source, index);
		return item ? this.ofItem(source.previousNode, source.previousNodeRun ?? 0, item) : null;
	}

	/** The reservations an item waiting at a node's input descends from (it is an item its source node output). */
	ofInput(source: ISourceData | null | undefined, item: INodeExecutionData): Origins {
		if (!source) return this.ofHeldKey(item);
		return this.ofItem(source.previousNode, source.previousNodeRun ?? 0, item);
	}

	/**
	 * An item waiting at a node's input is the item at the same position of its source node's output:
	 * traced from that output as n8n recorded it (the waiting copy's own pairing may have been rewritten
	 * by n8n-core once the node started), else from the copy.
	 */
	ofWaitingItem(source: ISourceData | null | undefined, index: number, item: INodeExecutionData): Origins {
		if (!source) return this.ofHeldKey(item);
		return this.ofItem(source.previousNode, source.previousNodeRun ?? 0, outputItem(this.view, source, index) ?? item);
	}

	/**
	 * Where n8n's pairing stops (a Code node that returns fewer items than it was given, without
	 * pairedItem), the key the item still carries names its reservation, when it names exactly one of
	 * this execution: failing every key instead would repeat the effects already done. The keys that
	 * went into that node run and came out under no item are judged by `judgeUnpaired`.
	 */
	private ofHeldKey(item: INodeExecutionData): Origins {
		const held = reservedBy(item);
		if (!held) return null;
		const ids = this.heldKeysOf().get(heldKeyId(held.key as string, held.ownerToken as string)) ?? [];
		return ids.length === 1 ? ids : null;
	}

	/**
	 * The reservations a failure inside a sub-execution came from (`cameFromInside`): a held key id
	 * names its reservation, a position the input item at that place of `given` (items of `input`).
	 * Null when one cannot be told.
	 */
	ofCameFrom(cameFrom: Array<string | number>, input: ISourceData | undefined, given: Array<INodeExecutionData | undefined>): Origins {
		const origins: string[] = [];
		for (const origin of cameFrom) {
			const item = typeof origin === 'number' ? given[origin] : undefined;
			const traced =
				typeof origin === 'string' ? (this.heldKeysOf().get(origin) ?? null) : item && input ? this.ofInput(input, item) : null;
			if (traced === null) return null;
			origins.push(...traced);
		}
		return origins.length > 0 ? origins : null;
	}

	private heldKeysOf(): HeldKeys {
		if (this.heldKeys) return this.heldKeys;
		const heldKeys: HeldKeys = new Map();
		for (const reservation of (this.reservations ?? reservationsOf(this.view)).values()) {
			const id = heldKeyId(reservation.key, reservation.ownerToken);
			heldKeys.set(id, [...(heldKeys.get(id) ?? []), reservation.id]);
		}
		return (this.heldKeys = heldKeys);
	}
}

function heldKeyId(key: string, ownerToken: string): string {
	return JSON.stringify([key, ownerToken]);
}

/**
 * The reservations an item that one run of `node` output descends from: [] when its chain reaches
 * the execution's start (or a Reserve output other than New) without a reservation, null when it
 * cannot be traced. `reservations`: the execution's, when the caller has them already.
 */
export function originsOfItem(
	view: ExecutionRecord,
	node: string,
	run: number,
	item: INodeExecutionData,
	reservations?: Map<string, Reservation>,
	subExecutions?: SubExecutionRecords,
): Origins {
	return new Tracer(view, reservations, subExecutions).ofItem(node, run, item);
}

/** The reservations the item at `index` of a node's input descends from (`Tracer.ofWaitingItem`: traced from its source's output as n8n recorded it). */
export function originsOfInputItem(
	view: ExecutionRecord,
	source: ISourceData,
	index: number,
	item: INodeExecutionData,
	reservations?: Map<string, Reservation>,
	subExecutions?: SubExecutionRecords,
): Origins {
	return new Tracer(view, reservations, subExecutions).ofWaitingItem(source, index, item);
}

/** The items one node run output on one output (a node's input, as n8n gave it). */
function outputItems(runData: IRunData, source: ISourceData): INodeExecutionData[] {
	return runData[source.previousNode]?.[source.previousNodeRun ?? 0]?.data?.main?.[source.previousNodeOutput ?? 0] ?? [];
}

function outputItem(view: ExecutionRecord, source: ISourceData, index: number): INodeExecutionData | undefined {
	return outputItems(view.runData, source)[index];
}

/**
 * The input items an output item comes from. A node run given several items that outputs one item
 * without pairedItem (a Code node aggregating them) is paired by n8n-core to input item 0 alone
 * (assignPairedItems, exactly `{ item: 0 }`); it is read as coming from every input item, so that no
 * key whose item went into it is called finished while it fails or waits. A node set to Execute Once
 * runs on the first item of each input alone, once for all of them (one call for `$input.all()`): each
 * item it outputs, an error item too, comes from every item it was given.
 */
function pairingOf(view: ExecutionRecord, node: string, task: ITaskData | undefined, item: INodeExecutionData): IPairedItemData[] {
	if (view.node(node)?.executeOnce === true && task?.source?.some((source) => source)) {
		return (task.source ?? []).flatMap((source, input) =>
			source ? outputItems(view.runData, source).map((_, index) => ({ item: index, input })) : [],
		);
	}
	const paired = pairedItemsOf(item);
	const raw = item.pairedItem;
	const assigned = typeof raw === 'object' && raw !== null && !Array.isArray(raw) && raw.item === 0 && Object.keys(raw).length === 1;
	if (!assigned || !task) return paired;
	const outputs = task.data?.main ?? [];
	const source = task.source?.length === 1 ? task.source[0] : null;
	if (outputs.length !== 1 || outputs[0]?.length !== 1 || !source) return paired;
	const given = outputItems(view.runData, source).length;
	return given > 1 ? Array.from({ length: given }, (_, index) => ({ item: index })) : paired;
}

/**
 * The reservations and those their reserving items descend from: a key reserved per event inside a
 * delivery the Idempotent Webhook trigger reserved (Split Out → Reserve) fails or waits with it, so
 * the delivery is retried. A link that cannot be traced adds nothing: the nearer key still counts.
 */
function withEnclosing(tracer: Tracer, origins: string[]): string[] {
	const all = new Set(origins);
	const pending = [...origins];
	while (pending.length > 0) {
		const [node, run, inputIndex] = JSON.parse(pending.pop() as string) as [string, number, number];
		const source = tracer.view.runData[node]?.[run]?.source?.[0];
		if (!source) continue;
		for (const enclosing of tracer.ofOutput(source, inputIndex) ?? []) {
			if (all.has(enclosing)) continue;
			all.add(enclosing);
			pending.push(enclosing);
		}
	}
	return [...all];
}

function isStart(task: ITaskData): boolean {
	return !task.source || task.source.every((source) => !source);
}

/**
 * The sub-executions whose record the judgement needs (subExecution.ts): every one an Execute Workflow
 * run names. Its result says what it returned; its record also holds the failures it did not return
 * (`failuresInside`), and which of its outputs carry failures.
 */
export function subExecutionsToRead(view: ExecutionRecord): string[] {
	const ids = new Set<string>();
	for (const [name, tasks] of Object.entries(view.runData)) {
		if (view.node(name)?.type !== EXECUTE_WORKFLOW_TYPE) continue;
		for (const task of tasks) for (const id of subExecutionsOfRun(task)) ids.add(id);
	}
	return [...ids];
}

/**
 * Judges every reservation of the execution. `failedNode` is the node the execution stopped at, if
 * it stopped on an error: its input items (n8n put them back on the stack) failed. `subExecutions`:
 * the records of the sub-executions `subExecutionsToRead` names, as n8n gave them.
 */
export function judgeExecution(
	view: ExecutionView,
	failedNode?: { name: string; message: string },
	subExecutions?: SubExecutionRecords,
): Judgement {
	const judgement: Judgement = {
		reservations: reservationsOf(view),
		failed: new Map(),
		failedAt: new Map(),
		pending: new Set(),
		untracedPending: false,
	};
	const tracer = new Tracer(view, judgement.reservations, subExecutions);
	const failures: Failure[] = [];
	const waitingAt = new Set<string>();
	const fail = (origins: Origins, message: string, node: string, task?: ITaskData): void => {
		failures.push({ node, task, message });
		if (origins === null) {
			judgement.untracedFailure ??= message;
			return;
		}
		for (const origin of withEnclosing(tracer, origins)) {
			if (!judgement.failed.has(origin)) judgement.failed.set(origin, message);
			judgement.failedAt.set(origin, (judgement.failedAt.get(origin) ?? new Set()).add(node));
		}
	};
	const wait = (origins: Origins, node: string): void => {
		waitingAt.add(node);
		if (origins === null) judgement.untracedPending = true;
		else for (const origin of withEnclosing(tracer, origins)) judgement.pending.add(origin);
	};

	for (const [name, tasks] of Object.entries(view.runData)) {
		const node = view.node(name);
		// The package's own nodes route their refusals themselves; they are not part of any key's step.
		if (isReservingOrSettlingType(node?.type)) {
			if (isReserveType(node?.type)) tasks.forEach((task) => failNotReserved(tracer, name, task, fail));
			continue;
		}
		tasks.forEach((task, run) => {
			const failEveryInput = (message: string): void => {
				for (const source of task.source ?? []) {
					if (!source) continue;
					for (const item of outputItems(view.runData, source)) fail(tracer.ofInput(source, item), message, name, task);
				}
				if (isStart(task)) fail(null, message, name, task);
			};
			// A node that failed as a whole passed its *input* on (or stopped): every item it was given failed.
			if (task.error) return failEveryInput(`${name}: ${task.error.message}`);
			const outputs = task.data?.main ?? [];
			const onError = node ? onErrorOf(node) : 'stopWorkflow';
			const errorOutput = onError === 'continueErrorOutput' ? outputs.length - 1 : -1;
			// At Continue (using error output) a failure leaves through the error output: an `error` field on an item of
			// its other outputs is the answer's (an API's `"error": "none"`), not a failure.
			const continuesOnRegularOutput = onError === 'continueRegularOutput';
			const subWorkflow = node?.type === EXECUTE_WORKFLOW_TYPE;
			for (const [outputIndex, items] of outputs.entries()) {
				for (const item of items ?? []) {
					// Beyond the first output, which of a sub-workflow's outputs carry failures is for its sub-execution's record to say.
					const beyondFirst = subWorkflow && outputIndex > 0 && carriesError(item);
					const failed =
						outputIndex === errorOutput ||
						(subWorkflow && isErrorItem(item)) ||
						(beyondFirst && failedInSubWorkflow(node, task, outputIndex, item, subExecutions)) ||
						// A sub-workflow's last node that continued on error returns its error item as its result.
						(!beyondFirst && (continuesOnRegularOutput || subWorkflow) && carriesError(item) && !errorCameIn(tracer, name, task, item));
					if (!failed) continue;
					const message = `${name}: ${errorMessageOf(item)}`;
					// One failure undid the whole write: the items reported done were rolled back with it.
					if (node && writesAllOrNone(node)) return failEveryInput(message);
					fail(tracer.ofItem(name, run, item), message, name, task);
				}
			}
			if (subWorkflow && node) {
				const input = task.source?.[0] ?? undefined;
				const inputItems = input ? outputItems(view.runData, input) : [];
				// Whether a node that may act follows: a walk of the graph, the same for every sub-execution of this run.
				const acting = actsAfter(view, name);
				for (const id of subExecutionsOfRun(task)) {
					const record = subExecutions?.get(id);
					if (!record) continue;
					const returned = outputs.flatMap((items) => (items ?? []).filter((item) => subExecutionIdOf(item, task) === id));
					const given = inputPositionsOf(task, id, inputItems.length).map((position) => inputItems[position]);
					const cameBackHere = new Set(returned.flatMap((item) => tracer.ofItem(name, run, item) ?? []));
					for (const failure of failuresInside(node, record, subExecutions)) {
						const message = `${name}: ${failure.message}`;
						if (failure.notReturned) {
							// A nested sub-workflow's answer that did not come back: lost only where a node that may act follows.
							const origins = acting && failure.cameFrom ? tracer.ofCameFrom(failure.cameFrom, input, given) : null;
							const lost = origins?.filter((origin) => !cameBackHere.has(origin)) ?? [];
							if (lost.length > 0) fail(lost, message, name, task);
							continue;
						}
						const origins = failure.cameFrom && tracer.ofCameFrom(failure.cameFrom, input, given);
						if (origins) {
							fail(origins, message, name, task);
							continue;
						}
						// Its event cannot be told: the events this sub-execution returned items for failed, or, if none, every event the node was given.
						if (returned.length === 0) failEveryInput(message);
						for (const item of returned) fail(tracer.ofItem(name, run, item), message, name, task);
					}
					// The answers n8n did not hand back (another end's, the last node's earlier runs'): an event none of whose items
					// came back, and that the returned branch did not drop itself, never ran its step here, and completing its key
					// would lose it. Only where the step goes on after this node to a node that may act: where the sub-workflow was the
					// step, those answers did the work (failing them would repeat it).
					const notReturned = acting ? answersNotReturned(record, subExecutions, task, id) : undefined;
					if (notReturned && notReturned.answers.length > 0) {
						// An event the returned branch dropped itself (a Filter keeping nothing) ended there by the workflow's design.
						// Where that cannot be traced, none counts as dropped.
						const droppedThere = new Set(
							notReturned.droppedOnTheWay.flatMap((cameFrom) => (cameFrom && tracer.ofCameFrom(cameFrom, input, given)) ?? []),
						);
						for (const answer of notReturned.answers) {
							// Its event cannot be told: every event the node was given and none of whose items came back.
							const origins =
								(answer.cameFrom && tracer.ofCameFrom(answer.cameFrom, input, given)) ??
								given.flatMap((item) => (item && input ? (tracer.ofInput(input, item) ?? []) : []));
							const lost = origins.filter((origin) => !cameBackHere.has(origin) && !droppedThere.has(origin));
							if (lost.length > 0) fail(lost, `${name}: ${answer.message}`, name, task);
						}
					}
				}
			}
		});
	}

	const { nodeExecutionStack = [], waitingExecution = {}, waitingExecutionSource = {}, contextData = {} } = view.pending;
	for (const entry of nodeExecutionStack) {
		const atFailure = failedNode !== undefined && entry.node.name === failedNode.name && entry === nodeExecutionStack[0];
		if (isKeyType(entry.node.type) && !atFailure) continue;
		for (const [input, items] of (entry.data.main ?? []).entries()) {
			for (const [index, item] of (items ?? []).entries()) {
				const origins = entry.source === null ? [] : tracer.ofWaitingItem(entry.source.main?.[input], index, item);
				if (atFailure) fail(origins, `${failedNode.name}: ${failedNode.message}`, failedNode.name);
				wait(origins, entry.node.name);
			}
		}
	}
	for (const [name, runs] of Object.entries(waitingExecution)) {
		if (isKeyType(view.node(name)?.type)) continue;
		for (const [run, data] of Object.entries(runs)) {
			for (const [input, items] of (data?.main ?? []).entries()) {
				for (const [index, item] of (items ?? []).entries())
					wait(tracer.ofWaitingItem(waitingExecutionSource[name]?.[run]?.main?.[input], index, item), name);
			}
		}
	}
	// A loop node (Loop Over Items) holds in its node context the items it has not sent yet (`items`;
	// copies of its first run's input: its saved source, else the source n8n recorded for that run)
	// and, until its Done output (its first) runs (`done`), the items already looped that came back to it
	// (`processedItems`, each paired to the node output it came from, as `sourceOverwrite`): work still
	// to run when that output leads to a node.
	for (const [scope, value] of Object.entries(contextData)) {
		if (!scope.startsWith('node:') || !value || typeof value !== 'object') continue;
		const { items, sourceData, processedItems, done } = value as {
			items?: unknown;
			sourceData?: unknown;
			processedItems?: unknown;
			done?: unknown;
		};
		const name = scope.slice('node:'.length);
		if (Array.isArray(items) && items.length > 0) {
			const source =
				sourceData && typeof sourceData === 'object' ? (sourceData as ISourceData) : (view.runData[name]?.[0]?.source?.[0] ?? undefined);
			for (const item of items as INodeExecutionData[]) wait(ofUnsentItem(tracer, source, item), name);
		}
		if (done !== true && Array.isArray(processedItems) && loopDoneLeadsOn(view, name)) {
			for (const item of processedItems as INodeExecutionData[]) wait(ofLoopedItem(tracer, item), name);
		}
	}
	judgeUnpaired(tracer, judgement, failures, waitingAt);
	return judgement;
}

/**
 * An item Loop Over Items has not sent yet: a copy of an item of its first run's input, which n8n-core
 * paired to the item's place in that input (the source node's output) before the loop ran. Traced
 * from that output item: the copy's own pairing would be read as a link to the source node's input,
 * which a node making several items of one (Split Out, a Code node) does not have, and every key
 * would then wait for the end of the execution (Settle inside the loop sending nothing on, the loop
 * stopping there). Else from the copy.
 */
function ofUnsentItem(tracer: Tracer, source: ISourceData | undefined, item: INodeExecutionData): Origins {
	const [pair] = pairedItemsOf(item);
	const upstream = source && pair ? outputItem(tracer.view, source, pair.item) : undefined;
	if (!source || !upstream) return tracer.ofInput(source, item);
	return tracer.ofItem(source.previousNode, source.previousNodeRun ?? 0, upstream);
}

/**
 * An item Loop Over Items holds for its Done output: a copy of the item at `pairedItem.item` of the
 * node output `pairedItem.sourceOverwrite` (the input of the loop's run that took it back), traced
 * from that output as n8n recorded it, else by the key it carries.
 */
function ofLoopedItem(tracer: Tracer, item: INodeExecutionData): Origins {
	const [pair] = pairedItemsOf(item) as Array<IPairedItemData & { sourceOverwrite?: ISourceData }>;
	const source = pair?.sourceOverwrite;
	const upstream = source ? outputItem(tracer.view, source, pair.item) : undefined;
	if (!source || !upstream) return tracer.ofInput(undefined, item);
	return tracer.ofItem(source.previousNode, source.previousNodeRun ?? 0, upstream);
}

/**
 * Reserve behind a key reserved before it (the trigger's event) at *Continue*: an item it could not
 * reserve leaves by its last output (Not Reserved, or the Error output), and the event it came from
 * did not run its step — whatever that output is wired to, the earlier key is failed, never
 * completed. An item whose input traces to no earlier key (Reserve is the first) is Reserve's own
 * business: its routing says what happens.
 */
function failNotReserved(
	tracer: Tracer,
	name: string,
	task: ITaskData,
	fail: (origins: Origins, message: string, node: string, task?: ITaskData) => void,
): void {
	const outputs = task.data?.main ?? [];
	const notReserved = outputs.length > 1 ? (outputs[outputs.length - 1] ?? []) : [];
	const source = task.source?.[0];
	if (notReserved.length === 0 || !source) return;
	const inputs = outputItems(tracer.view.runData, source);
	for (const item of notReserved) {
		const index = pairedItemsOf(item)[0]?.item;
		const input = index === undefined ? undefined : inputs[index];
		for (const target of input ? [input] : inputs) {
			const origins = tracer.ofInput(source, target);
			if (origins !== null && origins.length > 0) fail(origins, `${name}: ${errorMessageOf(item)}`, name, task);
		}
	}
}

/** A failure the judgement found: where (the node run, none for the node the execution stopped at) and why. */
interface Failure {
	node: string;
	task?: ITaskData;
	message: string;
}

/**
 * A node run that returned items without pairing (a Code node filtering or grouping them), or paired
 * against the keys they carry, is traced past by the key each item carries, but a key whose items
 * went into it and came out under no item
 * (dropped, or merged into an item that carries another key) cannot be followed: its effect may ride
 * on another key's item. Such a key is failed when a failure follows that node run downstream (its
 * effect may be the one that failed: completing it could lose the event) and waits while work
 * downstream waits; otherwise it finished with the rest and is completed.
 */
function judgeUnpaired(tracer: Tracer, judgement: Judgement, failures: Failure[], waitingAt: Set<string>): void {
	const { view } = tracer;
	for (const [name, tasks] of Object.entries(view.runData)) {
		const node = view.node(name);
		if (isReservingOrSettlingType(node?.type)) continue;
		tasks.forEach((task, run) => {
			if (task.error || isStart(task)) return;
			const outputs = (task.data?.main ?? []).flatMap((items) => items ?? []);
			if (!outputs.some((item) => tracer.pairingLost(name, task, item))) return;
			const cameOut = new Set(outputs.flatMap((item) => tracer.ofItem(name, run, item) ?? []));
			const wentIn = new Set<string>();
			for (const source of task.source ?? []) {
				if (!source) continue;
				for (const item of outputItems(view.runData, source)) {
					const origins = tracer.ofInput(source, item);
					// An input that cannot be traced may be any key: every key is in doubt.
					for (const origin of origins ?? judgement.reservations.keys()) wentIn.add(origin);
				}
			}
			const lost = [...wentIn].filter((origin) => !cameOut.has(origin));
			if (lost.length === 0) return;
			const below = reachableFrom(view, name);
			const failure = failures.find((found) => below.has(found.node) && !(found.task && ranBefore(found.task, task)));
			for (const origin of withEnclosing(tracer, lost)) {
				if (failure) {
					if (!judgement.failed.has(origin)) {
						judgement.failed.set(
							origin,
							`The items of this key were merged or dropped by ${name} without pairing, and a failure followed (${failure.message}).`,
						);
					}
				} else if ([...waitingAt].some((waiting) => below.has(waiting))) judgement.pending.add(origin);
			}
		});
	}
}

/** Whether one node run started before another (n8n's execution index where it records one). */
function ranBefore(task: ITaskData, other: ITaskData): boolean {
	if (typeof task.executionIndex === 'number' && typeof other.executionIndex === 'number')
		return task.executionIndex < other.executionIndex;
	return task.startTime < other.startTime;
}

/** The keys an Idempotency Key node already settled (or tried to) in this execution. */
export function keysSettledByNodes(runData: IRunData, view: ExecutionRecord): Set<string> {
	const keys = new Set<string>();
	for (const [name, tasks] of Object.entries(runData)) {
		if (!isKeyType(view.node(name)?.type)) continue;
		for (const task of tasks) {
			for (const items of task.data?.main ?? []) {
				for (const item of items ?? []) {
					const idempotency = item.json?.idempotency as IDataObject | undefined;
					if (typeof idempotency?.key === 'string' && isSettlingOperation(idempotency.operation)) keys.add(idempotency.key);
				}
			}
		}
	}
	return keys;
}

export function isErrorItem(item: INodeExecutionData): boolean {
	if (item.error !== undefined) return true;
	const json = item.json ?? {};
	return json.error !== undefined && Object.keys(json).every((key) => ERROR_ITEM_KEYS.has(key));
}

/**
 * A node that continues on error (n8n's continueOnFail) catches its own failure and outputs an item
 * for it: n8n-core's routing node and its error normalisation give `{ error }`, and n8n's nodes put
 * `error` beside fields of their own (Salesforce: `{ error, description, httpCode, … }`). On the
 * regular output n8n marks it no further, so an item such a node output with an `error` it did not
 * receive is its failure. An `error` its input item already carried passed through (an Edit Fields
 * after a failed node, an event with an `error` field): that node did not fail.
 */
function errorCameIn(tracer: Tracer, node: string, task: ITaskData, item: INodeExecutionData): boolean {
	if (item.error !== undefined) return false;
	const error = JSON.stringify(item.json?.error);
	return (tracer.upstreamOf(node, task, item) ?? []).some((link) => JSON.stringify(link.item.json?.error) === error);
}

/**
 * An item a sub-workflow returned on an output beyond the first that carries an error: a failure when
 * the sub-execution's last node put it on its error output (n8n-core's error-output split gives it
 * the input's fields and `error`), whatever the parent node's own On Error; not one when n8n's record
 * shows that output is a regular one (an If's false branch with a business field named `error`).
 * When the record cannot tell, a failure: a retry is safer than a lost event. An `{ error }` item on
 * any output is one too (`isErrorItem`).
 */
function failedInSubWorkflow(
	node: INode | undefined,
	task: ITaskData,
	outputIndex: number,
	item: INodeExecutionData,
	subExecutions: SubExecutionRecords | undefined,
): boolean {
	if (!node) return true;
	return isSubWorkflowErrorOutput(node, subExecutionIdOf(item, task), outputIndex, subExecutions) !== false;
}

/**
 * A failure a sub-execution recorded: why, and where it came from: the keys (`heldKeyId`) of the
 * items it came from, or, for an item that carries none, the position of the input item n8n gave the
 * sub-execution (its start node's output); null where n8n's pairing cannot tell.
 */
interface FailureInside {
	message: string;
	cameFrom: Array<string | number> | null;
	/** An answer a nested sub-workflow did not hand back: lost only where a node that may act comes after it. */
	notReturned?: boolean;
}

/**
 * The failures a sub-execution recorded besides what it returned. n8n hands a sub-workflow's result
 * back as its last node's output, so a failure at a node before it (an error output left unconnected,
 * or a node beside the one that ran last) never reaches this execution's record, and the key would be
 * completed without its effect. Read from the sub-execution's own record, as this execution's is: an
 * item on a node's error output, one a node at Continue (regular output) made with an `error` it was
 * not given, the items a node failing as a whole was given. Each node's On Error is read from the
 * sub-workflow defined in the node; for one the package cannot see (from the database, a file or a
 * URL), an item with an error on the last of a node's several outputs, or with an `error` its node
 * was not given, is read as a failure: a retry is safer than a lost event. The last node's final run
 * is its result, judged from this execution's record.
 */
function failuresInside(node: INode, record: SubExecutionRecord, records: SubExecutionRecords | undefined, depth = 0): FailureInside[] {
	const runData = record.resultData?.runData ?? {};
	const last = record.resultData?.lastNodeExecuted;
	const settings = new Map(inlineSubWorkflowNodes(node).map((inner) => [inner.name, inner as INode]));
	const failures: FailureInside[] = [];
	const failed = (name: string, run: number, item: INodeExecutionData, message: string, position: number): void => {
		failures.push({ message, cameFrom: cameFromInside(runData, records, name, run, item, position) });
	};
	for (const [name, tasks] of Object.entries(runData)) {
		tasks.forEach((task, run) => {
			const failEveryInput = (message: string): void => {
				for (const source of task.source ?? []) {
					if (!source) continue;
					outputItems(runData, source).forEach((item, position) =>
						failed(source.previousNode, source.previousNodeRun ?? 0, item, message, position),
					);
				}
			};
			// A node that failed as a whole passed its input on as if done (or stopped the sub-execution, and so this node).
			if (task.error) return failEveryInput(`${name}: ${task.error.message}`);
			const inner = settings.get(name);
			// A sub-workflow this one started (nested): its own failures, followed back to the items this run was given.
			const source = task.source?.[0] ?? undefined;
			const given = source ? outputItems(runData, source) : [];
			for (const id of depth < SUB_WORKFLOW_DEPTH - 1 ? subExecutionsOfRun(task) : []) {
				const nested = records?.get(id);
				if (!nested || !source) continue;
				const positions = inputPositionsOf(task, id, given.length);
				const starter = inner ?? ({ name, type: EXECUTE_WORKFLOW_TYPE, parameters: {} } as unknown as INode);
				// Its position in the nested sub-execution's input, followed back to where it came from here.
				const outward = (cameFrom: Array<string | number> | null): Array<string | number> | null => {
					const found = cameFrom?.flatMap((origin) => {
						if (typeof origin === 'string') return [origin];
						const position = positions[origin];
						const item = position === undefined ? undefined : given[position];
						return item === undefined
							? [null]
							: (cameFromInside(runData, records, source.previousNode, source.previousNodeRun ?? 0, item, position) ?? [null]);
					});
					return found?.includes(null) ? null : ((found ?? null) as Array<string | number> | null);
				};
				for (const failure of failuresInside(starter, nested, records, depth + 1))
					failures.push({ ...failure, message: `${name}: ${failure.message}`, cameFrom: outward(failure.cameFrom) });
				// The answers the nested sub-workflow did not hand back to this run (answersNotReturned), for an event none of
				// whose items came back from it and that its returned branch did not drop: lost where a node that may act
				// follows, here (a node took this run's output) or after the Execute Workflow node outside.
				const notReturned = answersNotReturned(nested, records, task, id);
				if (!notReturned || notReturned.answers.length === 0) continue;
				const positionsOf = (cameFrom: Array<string | number> | null) => (cameFrom ?? []).map(String);
				const kept = new Set([
					...(task.data?.main ?? []).flatMap((items) =>
						(items ?? [])
							.filter((item) => subExecutionIdOf(item, task) === id)
							.flatMap((item) => positionsOf(returnedCameFrom(nested, records ?? new Map(), task, item, depth + 1))),
					),
					...notReturned.droppedOnTheWay.flatMap(positionsOf),
				]);
				const followedHere = Object.values(runData).some((tasks) =>
					tasks.some((each) => (each.source ?? []).some((from) => from?.previousNode === name && (from.previousNodeRun ?? 0) === run)),
				);
				for (const answer of notReturned.answers) {
					// Its event cannot be told: left to the failures found for it, if any.
					const lost = outward(answer.cameFrom?.filter((origin) => !kept.has(String(origin))) ?? null);
					if (lost && lost.length > 0) failures.push({ message: `${name}: ${answer.message}`, cameFrom: lost, notReturned: !followedHere });
				}
			}
			const outputs = task.data?.main ?? [];
			const onError = inner ? onErrorOf(inner) : undefined;
			const errorOutput = onError === 'continueErrorOutput' || (!inner && outputs.length > 1) ? outputs.length - 1 : -1;
			const found: Array<{ item: INodeExecutionData; position: number }> = [];
			for (const [outputIndex, items] of outputs.entries()) {
				for (const [position, item] of (items ?? []).entries()) {
					const isFailure =
						outputIndex === errorOutput
							? inner !== undefined || carriesError(item)
							: (onError === 'continueRegularOutput' || (!inner && !isStart(task))) &&
								carriesError(item) &&
								!errorGivenInside(runData, task, item);
					if (isFailure) found.push({ item, position });
				}
			}
			if (found.length === 0) return;
			// One failure undid the whole write, the last node's too: the items it reports done were rolled back with it.
			if (inner && writesAllOrNone({ ...inner, typeVersion: inner.typeVersion ?? 1 }))
				return failEveryInput(`${name}: ${errorMessageOf(found[0].item)}`);
			// The last node's final run is the sub-workflow's result, judged from this execution's record.
			if (name === last && run === tasks.length - 1) return;
			for (const { item, position } of found) failed(name, run, item, `${name}: ${errorMessageOf(item)}`, position);
		});
	}
	return failures;
}

/**
 * The answers a sub-execution gave that n8n did not hand back to the Execute Workflow run `task`. n8n returns only what
 * its last-executed node gave (`returnedBy`): not the items of another end of the sub-workflow (a node run whose outputs
 * no node took, a branch ending in a node of its own), nor, with an Execute Workflow Trigger before version 1.2 at its
 * default, the last node's earlier runs. Each end's first output, items without an error (the failures are
 * `failuresInside`'s); read from the record alone, which names no node's type or connections. With them, the items the
 * returned branch dropped itself (`droppedOnTheWayTo`). Undefined where what came back cannot be told.
 */
function answersNotReturned(
	record: SubExecutionRecord,
	records: SubExecutionRecords | undefined,
	task: ITaskData,
	id: string,
): { answers: FailureInside[]; droppedOnTheWay: Array<Array<string | number> | null> } | undefined {
	const returned = returnedBy(
		record,
		(task.data?.main ?? []).map((items) => (items ?? []).filter((item) => subExecutionIdOf(item, task) === id).length),
	);
	if (!returned) return undefined;
	const { last } = returned;
	const runData = record.resultData?.runData ?? {};
	const lastRuns = runData[last]?.length ?? 0;
	const returnedRuns = new Set(returned.lastRunAlone ? [lastRuns - 1] : Array.from({ length: lastRuns }, (_, run) => run));
	// Each node run's outputs that a later run took as its input.
	const taken = new Map<string, Set<number>>();
	for (const tasks of Object.values(runData))
		for (const each of tasks)
			for (const source of each.source ?? []) {
				if (!source) continue;
				const ref = runRef(source.previousNode, source.previousNodeRun ?? 0);
				taken.set(ref, (taken.get(ref) ?? new Set()).add(source.previousNodeOutput ?? 0));
			}
	const earlierRun = `its answer was not returned: "${last}" ran more than once in the sub-workflow, and its Execute Workflow Trigger (before version 1.2) returns its last run alone. Set the trigger's option to return all runs, or lead the branches into one node with a Merge.`;
	const otherEnd = (end: string) =>
		`its answer was not returned: its branch of the sub-workflow ended at "${end}", and n8n returns only what the node that ran last ("${last}") gave. Lead every branch into one node (a Merge) at the sub-workflow's end, or branch after this node.`;
	const answers: FailureInside[] = [];
	for (const [node, tasks] of Object.entries(runData)) {
		for (const [run, each] of tasks.entries()) {
			const isReturned = node === last && returnedRuns.has(run);
			if (isReturned || each.error || isStart(each) || !answersLeftThere(each, taken.get(runRef(node, run)))) continue;
			const message = node === last ? earlierRun : otherEnd(node);
			for (const [position, item] of (each.data?.main?.[0] ?? []).entries())
				if (!carriesError(item)) answers.push({ message, cameFrom: cameFromInside(runData, records, node, run, item, position) });
		}
	}
	return { answers, droppedOnTheWay: droppedOnTheWayTo(runData, records, taken, last, returnedRuns) };
}

/**
 * Where the items came from that a node on the way to `last`'s runs `runs` dropped: given to it, it passed them on the
 * way to none of those runs nor to another branch (a node took that output), only to an output left unconnected (a
 * Filter's discarded items) or to none (a Filter keeping nothing, the returned node itself). Such an event ended where
 * the workflow's own design ended it; one sent down another branch did not. Walked back from those runs over the
 * sources n8n recorded (`taken`: the outputs a later run took); a node's output names the input items it came from by
 * its pairing.
 */
function droppedOnTheWayTo(
	runData: IRunData,
	records: SubExecutionRecords | undefined,
	taken: ReadonlyMap<string, ReadonlySet<number>>,
	last: string,
	runs: Iterable<number>,
): Array<Array<string | number> | null> {
	const returnedRuns = new Set([...runs].map((run) => runRef(last, run)));
	// The runs on the way: the returned runs, and every run they came from.
	const way = new Map<string, { node: string; run: number }>();
	const pending = [...runs].map((run) => ({ node: last, run }));
	while (pending.length > 0) {
		const next = pending.pop() as { node: string; run: number };
		const ref = runRef(next.node, next.run);
		if (way.has(ref)) continue;
		way.set(ref, next);
		for (const source of runData[next.node]?.[next.run]?.source ?? [])
			if (source) pending.push({ node: source.previousNode, run: source.previousNodeRun ?? 0 });
	}
	const dropped: Array<Array<string | number> | null> = [];
	for (const [ref, { node, run }] of way) {
		const task = runData[node]?.[run];
		if (!task) continue;
		// An output leads on where a later run took it; n8n hands back every output of a returned run.
		const took = taken.get(ref);
		const leadsOn = (output: number) =>
			returnedRuns.has(ref) || (took?.has(output) ?? false) || (output === 0 && answersLeftThere(task, took));
		// Each input item ("input:position"), by whether an output that leads on carries an item made from it.
		const ledOn = new Set<string>();
		for (const [output, items] of (task.data?.main ?? []).entries()) {
			if (!leadsOn(output)) continue;
			for (const item of items ?? []) for (const pair of pairedItemsOf(item)) ledOn.add(`${pair.input ?? 0}:${pair.item}`);
		}
		for (const [input, source] of (task.source ?? []).entries()) {
			if (!source) continue;
			const upstreamRun = source.previousNodeRun ?? 0;
			for (const [position, item] of outputItems(runData, source).entries())
				if (!ledOn.has(`${input}:${position}`))
					dropped.push(cameFromInside(runData, records, source.previousNode, upstreamRun, item, position));
		}
	}
	return dropped;
}

/**
 * Whether a node run's first output, its answers, ended there (`took`: the outputs a later run took): no output of it
 * was taken, or only its error output (the last, carrying failures), a fallback after a failure. An If's branch left
 * unconnected beside a taken one carries no failure: its items were sent nowhere by design.
 */
function answersLeftThere(task: ITaskData, took: ReadonlySet<number> | undefined): boolean {
	if (!took || took.size === 0) return true;
	const outputs = task.data?.main ?? [];
	const errorOutput = outputs.length - 1;
	return errorOutput > 0 && !took.has(0) && took.size === 1 && took.has(errorOutput) && (outputs[errorOutput] ?? []).some(carriesError);
}

function runRef(node: string, run: number): string {
	return JSON.stringify([node, run]);
}

/** The sub-execution an Execute Workflow run "once" that waited for its sub-workflow returned its items from; else undefined. */
function returnedBySubWorkflow(view: ExecutionRecord, node: string, task: ITaskData | undefined): string | undefined {
	const executeWorkflow = view.node(node);
	const options = executeWorkflow?.parameters?.options as { waitForSubWorkflow?: unknown } | undefined;
	if (executeWorkflow?.type !== EXECUTE_WORKFLOW_TYPE || options?.waitForSubWorkflow === false) return undefined;
	return subExecutionOfRun(task);
}

/** Where an item sits in a node run's outputs (the same object n8n recorded); undefined for a copy. */
function positionIn(task: ITaskData | undefined, item: INodeExecutionData): { output: number; index: number } | undefined {
	for (const [output, items] of (task?.data?.main ?? []).entries()) {
		const index = (items ?? []).indexOf(item);
		if (index >= 0) return { output, index };
	}
	return undefined;
}

/** An item of a sub-execution's last node: the run that gave it and its place on that run's output. */
interface ReturnedPlace {
	run: number;
	item: INodeExecutionData;
	at: number;
}

/**
 * What n8n returned from a sub-execution, told by how many items came back on each output (`returned`): its last
 * node's outputs, every run of it in the order they ran, joined per output (n8n 2.x, an Execute Workflow Trigger from
 * version 1.2 or set to all runs), or its last run alone (`lastRunAlone`; where every other run gave nothing the two are
 * the same, and it is every run). Undefined where neither matches, or no node ran.
 */
function returnedBy(
	record: SubExecutionRecord,
	returned: number[],
): { last: string; places: ReturnedPlace[][]; lastRunAlone: boolean } | undefined {
	const runData = record.resultData?.runData ?? {};
	const last = record.resultData?.lastNodeExecuted;
	const runs = last === undefined ? [] : (runData[last] ?? []);
	if (last === undefined || runs.length === 0) return undefined;
	const place = (run: number) => (items: INodeExecutionData[] | null) => (items ?? []).map((item, at) => ({ run, item, at }));
	const lastRun = (runs[runs.length - 1].data?.main ?? []).map(place(runs.length - 1));
	const inOrder = runs.map((task, run) => ({ task, run })).sort((a, b) => (a.task.executionIndex ?? 0) - (b.task.executionIndex ?? 0));
	const outputs = Math.max(0, ...runs.map((task) => task.data?.main?.length ?? 0));
	const allRuns = Array.from({ length: outputs }, (_, branch) =>
		inOrder.flatMap(({ task, run }) => place(run)(task.data?.main?.[branch] ?? null)),
	);
	const matches = (candidate: ReturnedPlace[][]) => returned.every((count, branch) => (candidate[branch]?.length ?? 0) === count);
	if (matches(allRuns)) return { last, places: allRuns, lastRunAlone: false };
	return matches(lastRun) ? { last, places: lastRun, lastRunAlone: true } : undefined;
}

/**
 * Where an item an Execute Workflow run (`task`) returned came from inside its sub-execution (`returnedBy`), followed
 * back by `cameFromInside`. Null where it cannot be followed (the item a copy, not the one n8n recorded).
 */
function returnedCameFrom(
	record: SubExecutionRecord,
	records: SubExecutionRecords,
	task: ITaskData,
	item: INodeExecutionData,
	depth = 0,
): Array<string | number> | null {
	const at = positionIn(task, item);
	if (!at) return null;
	const returned = returnedBy(
		record,
		(task.data?.main ?? []).map((items) => items?.length ?? 0),
	);
	const found = returned?.places[at.output]?.[at.index];
	if (!returned || !found) return null;
	return cameFromInside(record.resultData?.runData ?? {}, records, returned.last, found.run, found.item, found.at, depth);
}

/**
 * Where the input items n8n gave a sub-execution sit in its Execute Workflow run's input: all of
 * them, in order ("once"), or the one item its results are paired to ("each item"; none when it
 * returned nothing).
 */
function inputPositionsOf(task: ITaskData, id: string, inputCount: number): number[] {
	if (id === subExecutionOfRun(task)) return Array.from({ length: inputCount }, (_, position) => position);
	const returned = (task.data?.main ?? []).flatMap((items) => items ?? []).find((item) => subExecutionIdOf(item, task) === id);
	return returned ? pairedItemsOf(returned).map((pair) => pair.item) : [];
}

/** Whether an item's paired input item, inside a sub-execution, already carried the same `error` (passed on, not made). */
function errorGivenInside(runData: IRunData, task: ITaskData, item: INodeExecutionData): boolean {
	const error = JSON.stringify(item.json?.error);
	return pairedItemsOf(item).some((pair) => {
		const source = task.source?.[pair.input ?? 0];
		const given = source ? outputItems(runData, source)[pair.item] : undefined;
		return given !== undefined && JSON.stringify(given.json?.error) === error;
	});
}

/**
 * Where an item inside a sub-execution came from, followed back through n8n's pairing: the key
 * (`heldKeyId`) of the first item on the way that holds one (the items this execution gave the
 * sub-workflow carry their `idempotency` field, unless a node dropped it: an Edit Fields, n8n's own
 * sub-workflow trigger with its inputs defined), else the position of the start node's item, which is
 * the position of the input item n8n gave the sub-execution. A nested Execute Workflow run is followed through its own
 * record (`cameThroughNested`). Null where a link is missing.
 */
function cameFromInside(
	runData: IRunData,
	records: SubExecutionRecords | undefined,
	node: string,
	run: number,
	item: INodeExecutionData,
	position: number,
	depth = 0,
): Array<string | number> | null {
	const held = reservedBy(item);
	if (held) return [heldKeyId(held.key as string, held.ownerToken as string)];
	const task = runData[node]?.[run];
	if (task && isStart(task)) return [position];
	if (depth > MAX_TRACE_DEPTH || !task) return null;
	// An Execute Workflow run "once" inside: followed through its own sub-execution's record, never n8n's re-pairing.
	const nested = subExecutionOfRun(task);
	if (nested !== undefined && records?.has(nested)) return cameThroughNested(runData, records, task, item, nested, depth);
	const pairs = pairedItemsOf(item);
	if (pairs.length === 0) return null;
	const origins: Array<string | number> = [];
	for (const pair of pairs) {
		// Loop Over Items' Done output names the loop run each item came back from.
		const source = (pair as IPairedItemData & { sourceOverwrite?: ISourceData }).sourceOverwrite ?? task.source?.[pair.input ?? 0];
		const upstream = source ? outputItems(runData, source)[pair.item] : undefined;
		if (!source || !upstream) return null;
		const behind = cameFromInside(runData, records, source.previousNode, source.previousNodeRun ?? 0, upstream, pair.item, depth + 1);
		if (behind === null) return null;
		origins.push(...behind);
	}
	return origins;
}

/**
 * Where an item an Execute Workflow run "once" inside a sub-execution returned came from, as `Tracer.subWorkflowLinks`
 * follows one at the top: through that run's own sub-execution record to the items it was given, then on back. One item
 * given: it. The record missing (not saved) with several items given, or not leading back: null.
 */
function cameThroughNested(
	runData: IRunData,
	records: SubExecutionRecords,
	task: ITaskData,
	item: INodeExecutionData,
	id: string,
	depth: number,
): Array<string | number> | null {
	const source = task.source?.[0];
	const given = source ? outputItems(runData, source) : [];
	if (!source || given.length === 0) return null;
	const through = (index: number) =>
		cameFromInside(runData, records, source.previousNode, source.previousNodeRun ?? 0, given[index], index, depth + 1);
	if (given.length === 1) return through(0);
	const record = records.get(id);
	const cameFrom = record ? returnedCameFrom(record, records, task, item, depth + 1) : null;
	if (cameFrom === null) return null;
	const origins: Array<string | number> = [];
	for (const origin of cameFrom) {
		if (typeof origin === 'string') {
			origins.push(origin);
			continue;
		}
		const behind = origin < given.length ? through(origin) : null;
		if (behind === null) return null;
		origins.push(...behind);
	}
	return origins.length > 0 ? origins : null;
}

/**
 * Whether an item that reaches `node` is a failure a node before it continued past: such a node of the step runs
 * before it (after a Reserve node: at Continue (regular output), at Continue (using error output) with `node` after
 * its error output, or a sub-workflow, whose nodes may continue; disabled nodes and the package's own left out), and
 * the item carries an error; in a sub-execution with no Reserve node before `node` (the caller's key), any item that
 * carries one. An `"error": false` or `null` is an API's success, and an `error` with no node continuing before is a
 * field of the data.
 */
export function continuedFailureTest(record: ExecutionRecord, node: INode): (item: INodeExecutionData) => boolean {
	// Only the step's nodes, after a Reserve node: a node before it failed for no reserved event.
	const afterReserve = (upstream: INode) => nodesBefore(record, '', upstream).some((earlier) => isReserveType(earlier.type));
	const continuing = nodesBefore(record, '', node).some((upstream) => {
		// The package's own nodes route what they could not process to an output of its own, never on.
		if (isPackageType(upstream.type) || !afterReserve(upstream)) return false;
		// A sub-workflow returns what its last node gave, a failure one of its nodes continued past too.
		if (upstream.type === EXECUTE_WORKFLOW_TYPE) return true;
		const onError = onErrorOf(upstream);
		if (onError === 'continueRegularOutput') return true;
		// At Continue (using error output) a failure leaves through the error output, after the node's own outputs:
		// only an item that came that way is one.
		if (onError !== 'continueErrorOutput') return false;
		const outputs = record.connectionsBySourceNode[upstream.name]?.main ?? [];
		const afterFirst = outputs
			.slice(1)
			.flatMap((connections) => (connections ?? []).flatMap((connection) => record.node(connection.node) ?? []));
		return downstreamOf(record, afterFirst, new Set()).some((reached) => reached.name === node.name);
	});
	// In a sub-execution without a Reserve node before this one, the key is the caller's: the nodes that may have
	// continued past the event's failure are the caller's too, and an item that carries an error may be one.
	const callersKey = (record as Partial<ExecutionView>).subExecution === true && !afterReserve(node);
	return (item) => (continuing || callersKey) && carriesError(item);
}

/**
 * Whether `node` is reached after `failed` failed through a recovery the user built, whose outcome `node` settles: a
 * node that may act (a backup call, or `failed` itself run again in a retry loop) reached from its error output
 * (Continue (using error output)), or from its regular output (Continue (regular output)) through a node that routes
 * items (an If, a Filter or a Switch on the `error` field), and that gave the event an item on its success output
 * (`succeededForEvent`: a branch the event did not take, a backup that failed too, a retry loop that gave up are none).
 * A failure passed on through nodes that only reshape the item is no recovery.
 */
export function recoveredBefore(
	record: ExecutionRecord,
	failed: string,
	node: string,
	succeededForEvent: (recovery: string) => boolean,
): boolean {
	const failedNode = record.node(failed);
	if (!failedNode) return false;
	const onError = onErrorOf(failedNode);
	const outputs = record.connectionsBySourceNode[failed]?.main ?? [];
	const targetsOf = (connections: Array<Array<{ node: string }> | null>) =>
		connections.flatMap((outputConnections) => (outputConnections ?? []).flatMap((connection) => record.node(connection.node) ?? []));
	const reaches = (from: INode[], target: string) => downstreamOf(record, from, new Set()).some((reached) => reached.name === target);
	// A node whose success leads back into the failed node is a lap of a retry loop (a token refreshed before the next
	// try), not a backup: only the failed node's own later success recovers it. A backup whose error output starts over
	// is one where it succeeded; so is one whose way back passes `node` or Loop Over Items (the next item, not a retry).
	const successTargets = (candidate: INode) => {
		const connected = record.connectionsBySourceNode[candidate.name]?.main ?? [];
		const outputCount = (record.runData[candidate.name] ?? []).reduce(
			(most, task) => Math.max(most, task.data?.main?.length ?? 0),
			connected.length,
		);
		return targetsOf(onErrorOf(candidate) === 'continueErrorOutput' ? connected.slice(0, outputCount - 1) : connected);
	};
	const inRetryLoop = (candidate: INode) =>
		candidate.name !== failed &&
		downstreamOf(record, successTargets(candidate), new Set([node]), (next) => next.type === LOOP_TYPE).some(
			(reached) => reached.name === failed,
		);
	const mayRecover = (candidate: INode) =>
		mayHaveEffect(candidate) &&
		candidate.name !== node &&
		!inRetryLoop(candidate) &&
		reaches([candidate], node) &&
		succeededForEvent(candidate.name);
	if (onError === 'continueErrorOutput') return downstreamOf(record, targetsOf(outputs.slice(1)), new Set([node])).some(mayRecover);
	if (onError !== 'continueRegularOutput') return false;
	const routes = downstreamOf(record, targetsOf(outputs.slice(0, 1)), new Set([failed, node])).filter(branchesOnItems);
	return routes.some((route) =>
		downstreamOf(record, targetsOf(record.connectionsBySourceNode[route.name]?.main ?? []), new Set([route.name, node])).some(mayRecover),
	);
}

/**
 * Whether n8n's pairing from `node` back to the Reserve node's items was set by the nodes in between, not guessed:
 * n8n-core pairs by position the items a node returns without pairedItem (a Code node run once for all items that
 * sorts the events), and a key read through such a guess could be another event's.
 */
export function pairingIsKnown(record: ExecutionRecord, reserveNode: string, node: INode): boolean {
	return !nodesBefore(record, reserveNode, node).some(mayReturnUnpairedItems);
}

/**
 * Where `node` reads a key through n8n's pairing back to `reserveNode` (`$('Reserve').item`) and an Execute Workflow run
 * "once" lies between them, n8n's pairing through it may differ from the package's
 * (`subWorkflowLinks`): the key is read by the package's trace instead (`originsOfItem` with the same records). Undefined
 * where no such run lies between. `guessAllowed`: where the trace cannot name one reservation (the record not saved, or
 * not leading back), n8n's guess may stand, because it cannot move an outcome: every such run returned each item it was
 * given once by n8n's pairing (a re-ordering), and none of the events given failed or has work still to run; then only
 * whose answer an item is stays unknown.
 */
export function pairingThroughSubWorkflows(
	record: ExecutionRecord,
	reserveNode: string,
	node: INode,
	records: SubExecutionRecords,
	judgement: Judgement,
): { guessAllowed: boolean } | undefined {
	const tracer = new Tracer(record, judgement.reservations, records);
	const given = new Set<string>();
	let found = false;
	let guessAllowed = true;
	for (const before of nodesBefore(record, reserveNode, node)) {
		for (const task of record.runData[before.name] ?? []) {
			if (!tracer.pairsThroughSubWorkflow(before.name, task)) continue;
			found = true;
			const source = task.source?.[0] ?? undefined;
			const items = source ? outputItems(record.runData, source) : [];
			if (!returnsEachOnce(task, items.length)) guessAllowed = false;
			for (const item of items) {
				const origins = tracer.ofInput(source, item);
				if (origins === null) guessAllowed = false;
				else for (const origin of origins) given.add(origin);
			}
		}
	}
	if (!found) return undefined;
	const unfinished = [...given].some((id) => judgement.failed.has(id) || judgement.pending.has(id));
	if (unfinished || judgement.untracedFailure !== undefined || judgement.untracedPending) guessAllowed = false;
	return { guessAllowed };
}

/** Whether n8n's pairing of the items a run returned names each of the `given` items it was given exactly once. */
function returnsEachOnce(task: ITaskData, given: number): boolean {
	const returned = (task.data?.main ?? []).flatMap((items) => items ?? []);
	if (returned.length !== given) return false;
	const named = new Set<number>();
	for (const item of returned) {
		const pairs = pairedItemsOf(item);
		if (pairs.length !== 1 || (pairs[0].input ?? 0) !== 0 || pairs[0].item >= given || named.has(pairs[0].item)) return false;
		named.add(pairs[0].item);
	}
	return true;
}

/**
 * The items of a node run's success output that stand for a success: at Continue (regular output) n8n puts a failed
 * item there too, carrying its error.
 */
export function succeededItemsOf(record: ExecutionRecord, node: string, task: ITaskData): INodeExecutionData[] {
	const items = task.data?.main?.[0] ?? [];
	const continuesOnRegularOutput = onErrorOf(record.node(node) ?? {}) === 'continueRegularOutput';
	return continuesOnRegularOutput ? items.filter((item) => !carriesError(item)) : items;
}

/** An item that carries an error: n8n's own error, or a non-empty `error` field. */
function carriesError(item: INodeExecutionData): boolean {
	const error = item.json?.error as unknown;
	return item.error !== undefined || (typeof error === 'string' && error !== '') || (typeof error === 'object' && error !== null);
}

export function errorMessageOf(item: INodeExecutionData): string {
	const json = item.json ?? {};
	const error = json.error as unknown;
	if (typeof error === 'string' && error !== '') return error;
	if (error && typeof error === 'object' && typeof (error as { message?: unknown }).message === 'string')
		return (error as { message: string }).message;
	if (typeof json.message === 'string' && json.message !== '') return json.message;
	if (item.error?.message) return item.error.message;
	return 'the item left through the error output';
}

export function pairedItemsOf(item: INodeExecutionData): IPairedItemData[] {
	const paired = item.pairedItem;
	if (paired === undefined || paired === null) return [];
	if (typeof paired === 'number') return [{ item: paired }];
	return Array.isArray(paired) ? paired : [paired];
}
