import { NodeOperationError, type IDataObject, type IExecuteFunctions, type INodeExecutionData } from 'n8n-workflow';

import { inexactTextReason } from '../../lib/keys/exactText';
import type { SettleRequest } from '../../lib/store/contract';
import { settleItemProblem } from '../../lib/store/rules';
import type { FailedExecution } from '../../lib/types';
import { isReserveType, originsOfItem, readExecutionRecord, reservationsOf } from '../shared/settlement';

export type KeyFrom = 'item' | 'reserveNode' | 'custom' | 'execution';

export interface OwnedKey {
	owned: SettleRequest;
	/** The reservation the key was read from (its idempotency object), when it was read from one. */
	reservation?: IDataObject;
}

/** The key and owner token one item settles: from its idempotency object, the paired Reserve item, or expressions. */
export function readOwnedKey(
	context: IExecuteFunctions,
	item: INodeExecutionData,
	itemIndex: number,
	source: Exclude<KeyFrom, 'execution'>,
	reserveNodeName?: string,
): OwnedKey {
	if (source === 'custom') {
		const owned = {
			key: String(context.getNodeParameter('key', itemIndex) ?? ''),
			ownerToken: String(context.getNodeParameter('ownerToken', itemIndex) ?? ''),
		};
		return { owned: settleable(context, owned, itemIndex) };
	}
	const reservation =
		source === 'reserveNode'
			? pairedReservation(context, itemIndex, reserveNodeName as string)
			: (item.json.idempotency as IDataObject | undefined);
	const owned = ownedKeyOf(context, reservation, itemIndex, source === 'reserveNode' ? reserveNodeName : undefined);
	return { owned: settleable(context, owned, itemIndex), reservation };
}

/** The key of the reservation `idempotency` (a Reserve item's idempotency object, found by the package's own trace). */
export function reservationKey(context: IExecuteFunctions, idempotency: IDataObject, itemIndex: number, reserveNodeName: string): OwnedKey {
	return { owned: settleable(context, ownedKeyOf(context, idempotency, itemIndex, reserveNodeName), itemIndex), reservation: idempotency };
}

/** The key as read, refused for this item alone when it cannot be settled: the other items of the run still are. */
function settleable(context: IExecuteFunctions, owned: SettleRequest, itemIndex: number): SettleRequest {
	const problem = settleItemProblem(owned);
	if (problem) throw new NodeOperationError(context.getNode(), `${problem} Nothing was settled for this item.`, { itemIndex });
	return owned;
}

/**
 * The Idempotency Reserve node whose reservations this node settles: the one named in "Reserve
 * Node", else the only Reserve node upstream. Two upstream Reserve nodes are never guessed between:
 * settling the other node's key would end the wrong reservation.
 */
export function findReserveNode(context: IExecuteFunctions): string {
	const named = String(context.getNodeParameter('reserveNodeName', 0, '') ?? '').trim();
	const self = context.getNode().name;
	const upstream = context.getParentNodes(self).filter((node) => isReserveType(node.type) && !node.disabled);
	if (named !== '') {
		if (!upstream.some((node) => node.name === named)) {
			throw new NodeOperationError(
				context.getNode(),
				`"Reserve Node" is "${named}", but no enabled Idempotency Reserve node of that name is connected before this node${namesOf(upstream)}.`,
			);
		}
		return named;
	}
	if (upstream.length === 1) return upstream[0].name;
	if (upstream.length === 0) {
		throw new NodeOperationError(
			context.getNode(),
			'"Key From" is Idempotency Reserve (Paired Item), but no Idempotency Reserve node is connected before this node. Connect this node after Idempotency Reserve, or set "Key From" to Item or Custom.',
		);
	}
	throw new NodeOperationError(
		context.getNode(),
		`Several Idempotency Reserve nodes are connected before this node${namesOf(upstream)}: set "Reserve Node" to the one whose key this node settles.`,
	);
}

function namesOf(nodes: Array<{ name: string }>): string {
	return nodes.length === 0 ? '' : ` (${nodes.map((node) => JSON.stringify(node.name)).join(', ')})`;
}

/**
 * The idempotency object of the Reserve output item this item descends from, resolved by n8n's own
 * paired-item rules in this process: what `$('Idempotency Reserve').item.json.idempotency` gives,
 * without evaluating an expression (in n8n 2.x every expression runs in an isolated VM, which cost
 * most of a lease-mode execution's extra time; BENCHMARKS.md).
 */
function pairedReservation(context: IExecuteFunctions, itemIndex: number, reserveNodeName: string): IDataObject | undefined {
	let reserved: INodeExecutionData | undefined;
	try {
		reserved = context.getWorkflowDataProxy(itemIndex).$(reserveNodeName).item as INodeExecutionData | undefined;
	} catch (error) {
		const reason = error instanceof Error ? error.message : String(error);
		// n8n's pairing found several Reserve items (a Merge joining the events with data fetched once, which n8n pairs to
		// the first event): the package's own trace leaves such shared data out, and may name exactly one. Where the
		// pairing is missing, nothing is guessed.
		const traced = /multiple match/i.test(reason) ? tracedReservation(context, itemIndex, reserveNodeName) : undefined;
		if (traced) return traced;
		throw new NodeOperationError(
			context.getNode(),
			`Item ${itemIndex} cannot be traced back to its item from "${reserveNodeName}" (${reason}). Every node between them must keep the items' pairing (a Code node: set pairedItem), or set "Key From" to Custom.`,
			{ itemIndex },
		);
	}
	return reserved?.json?.idempotency as IDataObject | undefined;
}

/** The one reservation of `reserveNodeName` the input item at `itemIndex` descends from, by n8n's record of this run; else undefined. */
function tracedReservation(context: IExecuteFunctions, itemIndex: number, reserveNodeName: string): IDataObject | undefined {
	try {
		const source = context.getInputSourceData(0);
		const item = context.getInputData()[itemIndex];
		if (!source || !item) return undefined;
		const { record, reservations } = runOf(context);
		const origins = originsOfItem(record, source.previousNode, source.previousNodeRun ?? 0, item, reservations) ?? [];
		const own = [...new Set(origins)].flatMap((id) => {
			const reservation = reservations.get(id);
			return reservation?.reserveNode === reserveNodeName ? [reservation] : [];
		});
		return own.length === 1 ? own[0].idempotency : undefined;
	} catch {
		return undefined;
	}
}

/** n8n's record of this run and its reservations, read once for all the items of this node's run. */
const runs = new WeakMap<
	IExecuteFunctions,
	{ record: ReturnType<typeof readExecutionRecord>; reservations: ReturnType<typeof reservationsOf> }
>();
function runOf(context: IExecuteFunctions) {
	let run = runs.get(context);
	if (!run) {
		const record = readExecutionRecord(context);
		run = { record, reservations: reservationsOf(record) };
		runs.set(context, run);
	}
	return run;
}

function ownedKeyOf(
	context: IExecuteFunctions,
	idempotency: IDataObject | undefined,
	itemIndex: number,
	reserveNodeName?: string,
): SettleRequest {
	if (!idempotency || typeof idempotency.key !== 'string') {
		throw new NodeOperationError(
			context.getNode(),
			reserveNodeName === undefined
				? 'The item has no idempotency object (json.idempotency.key). Connect this node after Idempotency Reserve or to a business step\'s error output, or set "Key From" to Idempotency Reserve (Paired Item).'
				: `The item from "${reserveNodeName}" that item ${itemIndex} descends from has no idempotency object (json.idempotency.key): it did not come out of that node's reservation.`,
			{ itemIndex },
		);
	}
	if (!idempotency.ownerToken) {
		throw new NodeOperationError(
			context.getNode(),
			`The item's reservation has no owner token: it was a duplicate (outcome "${String(idempotency.outcome)}"), and only the run that reserved a key can settle it.`,
			{ itemIndex },
		);
	}
	// The lease end (database clock) bounds how long a lost connection is retried.
	const leaseEndsAt = typeof idempotency.lockedUntil === 'string' ? new Date(idempotency.lockedUntil) : null;
	return { key: idempotency.key, ownerToken: String(idempotency.ownerToken), leaseEndsAt };
}

/** Complete's optional stored response: JSON text or an object from an expression. */
export function readResponse(context: IExecuteFunctions, itemIndex: number): unknown {
	const value = context.getNodeParameter('responseJson', itemIndex, '') as unknown;
	if (value === '' || value === undefined || value === null) return undefined;
	if (typeof value !== 'string') return value;
	try {
		return JSON.parse(value);
	} catch {
		throw new NodeOperationError(context.getNode(), '"Response to Store" is not valid JSON.', { itemIndex });
	}
}

/**
 * The failed run one item names: its execution and workflow ids (Error Trigger data by default), on
 * this n8n instance (an error workflow runs on the instance of the execution that failed).
 */
export function readFailedExecution(context: IExecuteFunctions, itemIndex: number): FailedExecution {
	const executionId = String(context.getNodeParameter('executionId', itemIndex) ?? '');
	const workflowId = String(context.getNodeParameter('workflowId', itemIndex) ?? '');
	if (executionId === '' || workflowId === '') {
		throw new NodeOperationError(
			context.getNode(),
			`"Failed Execution" needs the failed execution's ${executionId === '' ? 'Execution ID' : 'Workflow ID'}, and it is empty. Connect this node after an Error Trigger, or set Execution ID and Workflow ID (execution ids repeat across n8n instances that share the table, so the execution ID alone could settle another instance's keys). Nothing was settled.`,
			{ itemIndex },
		);
	}
	for (const [what, text] of [
		['Execution ID', executionId],
		['Workflow ID', workflowId],
	]) {
		const reason = inexactTextReason(text);
		if (reason)
			throw new NodeOperationError(context.getNode(), `The ${what} ${reason}: no stored key can match it. Nothing was settled.`, {
				itemIndex,
			});
	}
	return { executionId, workflowId, instanceId: context.getInstanceId() };
}
