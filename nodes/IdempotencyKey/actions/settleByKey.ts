import { NodeOperationError, type IDataObject, type IExecuteFunctions, type INodeExecutionData } from 'n8n-workflow';

import type { SettleReport, SettleRequest } from '../../../lib/store/contract';
import type { FailedExecution } from '../../../lib/types';
import { itemRouting } from '../../shared/notProcessed';
import {
	executionReaderOf,
	guessedSubWorkflowPairing,
	judgeExecution,
	pairingIsKnown,
	readExecutionRecord,
	readSubExecutions,
	reservationsOf,
	subExecutionsToRead,
	type ExecutionView,
	type SubExecutionRecords,
} from '../../shared/settlement';
import { findReserveNode, readFailedExecution, readOwnedKey, type KeyFrom } from '../ownedKeys';

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
	/** `pairedByGuess`: the key was read through n8n's guess of the item's pairing (`guessedPairingRefusal`). */
	readDetail: (itemIndex: number, pairedByGuess: boolean) => Detail,
	settle: (requests: Array<{ owned: SettleRequest; detail: Detail }>) => Promise<SettleReport[]>,
	/** Why an item, or the key it holds, must not be settled this way (its settle would lose the event), or undefined. */
	refuse: { item?: (item: INodeExecutionData) => string | undefined; key?: (owned: SettleRequest) => string | undefined } = {},
): Promise<INodeExecutionData[][]> {
	const items = context.getInputData();
	// An item that cannot be read leaves through the last output (Stale) under Continue: never Done.
	const { outputs, failItem } = itemRouting(context, 1);
	const read: Array<{ itemIndex: number; owned: SettleRequest; reservation?: IDataObject; pairedFrom?: string }> = [];
	// Found once per run: every item settles a reservation of the same Reserve node.
	const reserveNodeName = source === 'reserveNode' ? findReserveNode(context) : undefined;
	let onlyReserve: string | undefined | null = null;
	const pairedFallback = () => (onlyReserve === null ? (onlyReserve = onlyReserveNode(context)) : onlyReserve);
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
			const fallback = source === 'item' && !hasIdempotencyKey(item) ? pairedFallback() : undefined;
			const { owned, reservation } = fallback
				? readOwnedKey(context, item, itemIndex, 'reserveNode', fallback)
				: readOwnedKey(context, item, itemIndex, source, reserveNodeName);
			refuseWith(refuse.key?.(owned));
			read.push({ itemIndex, owned, reservation, pairedFrom: fallback ?? reserveNodeName });
		} catch (error) {
			refused.push({ error, itemIndex });
		}
	}
	const guessed = await guessedPairingRefusal(context, read);
	const requests: Array<{ itemIndex: number; owned: SettleRequest; reservation?: IDataObject; detail: Detail }> = [];
	for (const { itemIndex, owned, reservation, pairedFrom } of read) {
		try {
			if (pairedFrom !== undefined && guessed.refusal)
				throw new NodeOperationError(context.getNode(), `${guessed.refusal} Nothing was settled for this item.`, { itemIndex });
			requests.push({ itemIndex, owned, reservation, detail: readDetail(itemIndex, pairedFrom !== undefined && guessed.guess) });
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

/**
 * Whether the keys read through n8n's pairing (`pairedFrom`: the Reserve node read back to) passed a guess: an Execute
 * Workflow run once for several events whose sub-execution n8n did not save (its successful executions not kept), so
 * n8n paired the items it returned by the sub-workflow's own positions — a Sort or a Filter inside moves one event's
 * answer to another's place. Such keys are settled only where the guess cannot move an outcome: they name each event
 * given to the sub-workflow once, and none of those events failed in this run; then only which event's answer is whose
 * is unknown (`guess`: Complete stores none). Else `refusal` says why and the fix.
 */
async function guessedPairingRefusal(
	context: IExecuteFunctions,
	read: Array<{ owned: SettleRequest; pairedFrom?: string }>,
): Promise<{ guess: boolean; refusal?: string }> {
	const paired = read.filter((entry) => entry.pairedFrom !== undefined);
	if (paired.length === 0) return { guess: false };
	let record: ExecutionView;
	try {
		record = readExecutionRecord(context);
	} catch {
		return { guess: false };
	}
	const records = await subExecutionRecordsOf(context, record);
	if (records.size === 0) return { guess: false };
	const judgement = judgeExecution(record, undefined, records);
	const byKey = new Map(
		[...reservationsOf(record).values()].map((reservation) => [`${reservation.key}\u0000${reservation.ownerToken}`, reservation.id]),
	);
	const named = paired.map((entry) => byKey.get(`${entry.owned.key}\u0000${entry.owned.ownerToken}`));
	const eachOnce = new Set(named).size === named.length && !named.includes(undefined);
	let guessed = false;
	for (const reserveNode of new Set(paired.map((entry) => entry.pairedFrom as string))) {
		const guess = guessedSubWorkflowPairing(record, reserveNode, context.getNode(), records, judgement);
		if (!guess) continue;
		guessed = true;
		const { given, failed } = guess;
		if (failed || given === null || !eachOnce || ![...given].every((id) => named.includes(id)))
			return { guess: true, refusal: GUESSED_PAIRING };
	}
	return { guess: guessed };
}

/** The records of the sub-executions this execution's record names (trace.ts subExecutionsToRead), read once per node run. */
export async function subExecutionRecordsOf(context: IExecuteFunctions, record: ExecutionView): Promise<SubExecutionRecords> {
	let records = recordsRead.get(context);
	if (!records) {
		records = readSubExecutions(subExecutionsToRead(record), executionReaderOf(context));
		recordsRead.set(context, records);
	}
	return await records;
}
const recordsRead = new WeakMap<IExecuteFunctions, Promise<SubExecutionRecords>>();

const GUESSED_PAIRING =
	"This item reached the node through an Execute Workflow node run once for several events whose sub-execution n8n did not save (the sub-workflow's \"Save successful production executions\", or EXECUTIONS_DATA_SAVE_ON_SUCCESS=none): n8n paired the items it returned by the sub-workflow's own positions, a guess, and this item carries no key of its own (json.idempotency). Here the guess could settle one event by another's outcome, so the key is left to its lease and the provider's retry runs the event again. Keep the idempotency field on the items the sub-workflow returns and use Key From: Item, save the sub-workflow's successful executions, or run it once for each item.";

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
