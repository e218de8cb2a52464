import { NodeOperationError, type IDataObject, type IExecuteFunctions, type INodeExecutionData } from 'n8n-workflow';

import type { SettleReport, SettleRequest } from '../../../lib/store/contract';
import type { FailedExecution } from '../../../lib/types';
import { itemRouting } from '../../shared/notProcessed';
import {
	executionReaderOf,
	judgeExecution,
	originsOfInputItem,
	pairingIsKnown,
	pairingThroughSubWorkflows,
	readExecutionRecord,
	readSubExecutions,
	subExecutionsToRead,
	type ExecutionView,
	type Judgement,
	type Reservation,
	type SubExecutionRecords,
} from '../../shared/settlement';
import { findReserveNode, readFailedExecution, readOwnedKey, reservationKey, type KeyFrom, type OwnedKey } from '../ownedKeys';

/*
 * What Complete, Release and Mark Failed share: each settles the keys its items name (Key From),
 * one statement for every item, and sends each item to Done or Stale.
 */

export const SETTLE_BY_KEY_OUTPUTS = ['Done', 'Stale'] as const;
const DONE = 0;
const STALE = 1;

export type SettleOperation = 'complete' | 'release' | 'fail';

/** Key From, read once per run. */
export function readKeyFrom(context: IExecuteFunctions): KeyFrom {
	return context.getNodeParameter('source', 0) as KeyFrom;
}

/** Key From: Failed Execution works with the operations that let the next delivery run again only. */
export function refuseFailedExecution(context: IExecuteFunctions): never {
	throw new NodeOperationError(context.getNode(), '"Failed Execution" works with the Release and Mark Failed operations only.');
}

/**
 * Settles the key each item names: its detail (Complete's response, Mark Failed's error) is read
 * per item, then `settle` sends every readable item in one statement.
 */
export async function settleOwnedKeys<Detail>(
	context: IExecuteFunctions,
	operation: SettleOperation,
	source: Exclude<KeyFrom, 'execution'>,
	/** `pairedByGuess`: the key was read through n8n's guess of the item's pairing (`readPairedKey`). */
	readDetail: (itemIndex: number, pairedByGuess: boolean) => Detail,
	settle: (requests: Array<{ owned: SettleRequest; detail: Detail }>) => Promise<SettleReport[]>,
	/** Why an item, or the key it holds, must not be settled this way (its settle would lose the event), or undefined. */
	refuse: { item?: (item: INodeExecutionData) => string | undefined; key?: (owned: SettleRequest) => string | undefined } = {},
): Promise<INodeExecutionData[][]> {
	const items = context.getInputData();
	// An item that cannot be read leaves through the last output (Stale) under Continue: never Done.
	const { outputs, failItem } = itemRouting(context, 1);
	const requests: Array<{ itemIndex: number; owned: SettleRequest; reservation?: IDataObject; detail: Detail }> = [];
	// Found once per run: every item settles a reservation of the same Reserve node.
	const reserveNodeName = source === 'reserveNode' ? findReserveNode(context) : undefined;
	let onlyReserve: string | undefined | null = null;
	const pairedFallback = () => (onlyReserve === null ? (onlyReserve = onlyReserveNode(context)) : onlyReserve);
	// Read once per run, at the first key read through n8n's pairing.
	const throughSubWorkflows = new Map<string, Promise<SubWorkflowPairing | undefined>>();
	// Routed (or thrown, at Stop Workflow) once the other items are settled: one item's problem must not leave the
	// keys of the others, whose effects are done, unsettled.
	const refused: Array<{ error: unknown; itemIndex: number }> = [];
	for (let itemIndex = 0; itemIndex < items.length; itemIndex++) {
		try {
			const item = items[itemIndex];
			const refuseWith = (refusal: string | undefined) => {
				if (refusal) throw new NodeOperationError(context.getNode(), `${refusal} Nothing was settled for this item.`, { itemIndex });
			};
			refuseWith(refuse.item?.(item));
			// Key From: Item, an item a node after Reserve replaced (an HTTP Request's answer): the Reserve item it
			// descends from, when one Reserve node is before this one. Failing here would come after the step's effect.
			const pairedFrom = source === 'item' && !hasIdempotencyKey(item) ? pairedFallback() : reserveNodeName;
			let pairedByGuess = false;
			let read: OwnedKey;
			if (pairedFrom === undefined) read = readOwnedKey(context, item, itemIndex, source);
			else {
				let pairing = throughSubWorkflows.get(pairedFrom);
				if (!pairing) throughSubWorkflows.set(pairedFrom, (pairing = subWorkflowPairingOf(context, pairedFrom)));
				({ read, pairedByGuess } = readPairedKey(context, item, itemIndex, pairedFrom, await pairing));
			}
			refuseWith(refuse.key?.(read.owned));
			requests.push({ itemIndex, owned: read.owned, reservation: read.reservation, detail: readDetail(itemIndex, pairedByGuess) });
		} catch (error) {
			refused.push({ error, itemIndex });
		}
	}

	const results = await settle(requests);
	for (const [position, result] of results.entries()) {
		const { itemIndex, reservation } = requests[position];
		const item = items[itemIndex];
		// With Key From: Idempotency Reserve, the item gets the reservation back, so a later node can read $json.idempotency.
		const previous = reservation ?? (item.json.idempotency as IDataObject | undefined) ?? {};
		const idempotency: IDataObject = {
			...previous,
			key: result.key,
			operation,
			applied: result.applied,
			staleReason: result.applied ? null : result.reason,
		};
		// What had to be repaired or dropped so that the key could be settled (the key always is).
		if (result.warnings) idempotency.warnings = result.warnings;
		outputs[result.applied ? DONE : STALE].push({
			json: { ...item.json, idempotency },
			binary: item.binary,
			pairedItem: { item: itemIndex },
		});
	}
	for (const { error, itemIndex } of refused) failItem(error, itemIndex);
	return outputs;
}

function hasIdempotencyKey(item: INodeExecutionData): boolean {
	const idempotency = item.json.idempotency as IDataObject | undefined;
	return typeof idempotency?.key === 'string';
}

/**
 * The one enabled Reserve node before this node, when n8n's pairing back to it was set by the nodes in between
 * (pairingIsKnown); undefined when there is none, more than one, or the pairing may be n8n's guess.
 */
function onlyReserveNode(context: IExecuteFunctions): string | undefined {
	try {
		const reserveNode = findReserveNode(context);
		return pairingIsKnown(readExecutionRecord(context), reserveNode, context.getNode()) ? reserveNode : undefined;
	} catch {
		return undefined;
	}
}

/** What the package's trace needs to read keys past an Execute Workflow run (`pairingThroughSubWorkflows`), once per run. */
interface SubWorkflowPairing {
	record: ExecutionView;
	records: SubExecutionRecords;
	reservations: Map<string, Reservation>;
	guessAllowed: boolean;
}

/** How keys read back to `reserveNode` pass an Execute Workflow run between: undefined where none does (n8n's pairing stands). */
async function subWorkflowPairingOf(context: IExecuteFunctions, reserveNode: string): Promise<SubWorkflowPairing | undefined> {
	let run: JudgedRun;
	try {
		run = await judgedRunOf(context);
	} catch {
		return undefined;
	}
	const { record, records, judgement } = run;
	if (records.size === 0) return undefined;
	const through = pairingThroughSubWorkflows(record, reserveNode, context.getNode(), records, judgement);
	return through && { record, records, reservations: judgement.reservations, guessAllowed: through.guessAllowed };
}

/**
 * The key of the `reserveNode` item this item descends from: by n8n's pairing (`$('Reserve').item`), or, past an Execute
 * Workflow run, by the package's trace of the sub-execution's record (n8n's re-pairing through it may name another
 * event). Where the trace cannot name one reservation, n8n's guess stands only as `pairingThroughSubWorkflows` allows
 * (`pairedByGuess`: whose answer the item is stays unknown); otherwise the item is refused with the fixes.
 */
function readPairedKey(
	context: IExecuteFunctions,
	item: INodeExecutionData,
	itemIndex: number,
	reserveNode: string,
	pairing: SubWorkflowPairing | undefined,
): { read: OwnedKey; pairedByGuess: boolean } {
	if (!pairing) return { read: readOwnedKey(context, item, itemIndex, 'reserveNode', reserveNode), pairedByGuess: false };
	const source = context.getInputSourceData(0);
	const origins = source ? originsOfInputItem(pairing.record, source, itemIndex, item, pairing.reservations, pairing.records) : null;
	const own = [...new Set(origins ?? [])].flatMap((id) => {
		const reservation = pairing.reservations.get(id);
		return reservation?.reserveNode === reserveNode ? [reservation] : [];
	});
	if (own.length === 1) return { read: reservationKey(context, own[0].idempotency, itemIndex, reserveNode), pairedByGuess: false };
	const refusal = new NodeOperationError(context.getNode(), `${GUESSED_PAIRING} Nothing was settled for this item.`, { itemIndex });
	if (!pairing.guessAllowed) throw refusal;
	try {
		return { read: readOwnedKey(context, item, itemIndex, 'reserveNode', reserveNode), pairedByGuess: true };
	} catch {
		throw refusal;
	}
}

/** n8n's record of this execution so far, the records of the sub-executions it names, and the judgement of both. */
export interface JudgedRun {
	record: ExecutionView;
	records: SubExecutionRecords;
	judgement: Judgement;
}

/**
 * This execution judged as Settle judges it (trace.ts `judgeExecution`, with the sub-executions `subExecutionsToRead`
 * names), read and judged once per node run however many rules of the node ask. Rejects without n8n's record.
 */
export async function judgedRunOf(context: IExecuteFunctions): Promise<JudgedRun> {
	let run = judgedRuns.get(context);
	if (!run) {
		run = (async () => {
			const record = readExecutionRecord(context);
			const records = await readSubExecutions(subExecutionsToRead(record), executionReaderOf(context));
			return { record, records, judgement: judgeExecution(record, undefined, records) };
		})();
		judgedRuns.set(context, run);
	}
	return await run;
}
const judgedRuns = new WeakMap<IExecuteFunctions, Promise<JudgedRun>>();

const GUESSED_PAIRING =
	"This item carries no key of its own (json.idempotency) and reached the node through an Execute Workflow node run once for several events, and which event it stands for cannot be told: the sub-execution's record does not lead it back to one (n8n did not save it: the sub-workflow's \"Save successful production executions\", or EXECUTIONS_DATA_SAVE_ON_SUCCESS=none; or a node inside joined events), and n8n's own pairing is a guess that could settle one event by another's outcome. The key is left to its lease and the provider's retry runs the event again. Keep the idempotency field on the items the sub-workflow returns and use Key From: Item, save the sub-workflow's successful executions, or run it once for each item.";

/** Key From: Failed Execution: every live reservation of each item's execution, settled by `settle`. */
export async function settleFailedExecutions(
	context: IExecuteFunctions,
	settle: (execution: FailedExecution, itemIndex: number) => Promise<IDataObject>,
): Promise<INodeExecutionData[][]> {
	const items = context.getInputData();
	// An item without a usable execution leaves through the last output (Stale), as in settleOwnedKeys.
	const { outputs, failItem } = itemRouting(context, 1);
	for (let itemIndex = 0; itemIndex < items.length; itemIndex++) {
		let execution: FailedExecution;
		try {
			execution = readFailedExecution(context, itemIndex);
		} catch (error) {
			failItem(error, itemIndex);
			continue;
		}
		const idempotency = await settle(execution, itemIndex);
		outputs[DONE].push({ json: { ...items[itemIndex].json, idempotency }, pairedItem: { item: itemIndex } });
	}
	return outputs;
}
