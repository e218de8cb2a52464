import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';

import { validateEvidenceConfig } from '../../lib/evidence/replayEvidence';
import { keyedEntry, prepareEach, reserveAll, type KeyedEntry, type Prepared, type Reserved } from '../../lib/pipeline/steps';
import type { KeyStore } from '../../lib/store/contract';
import type { ReserveOptionsWithDetail } from '../../lib/types';
import { deriveItemKey } from './keyInput';
import type { ItemRouting } from './notProcessed';
import type { ReserveParameters } from './reservationParameters';
import { storeFor, type TableChoice } from './store';

/*
 * The reservation pipeline's n8n side, shared by Reserve, Execute Query and Order Guard: prepare
 * items → one store call → route results (the n8n-free steps are lib/pipeline/steps.ts). Items
 * refused on the way leave through the node's "not processed" output (nodes/shared/notProcessed.ts).
 */

/** Who is reserving: stored with each key, so a failed execution's keys can be found again. */
export function executionIdentity(context: IExecuteFunctions): { executionId: string; workflowId: string; instanceId: string } {
	return {
		executionId: context.getExecutionId(),
		workflowId: String(context.getWorkflow().id ?? ''),
		instanceId: context.getInstanceId(),
	};
}

/** Prepares every item; an item whose preparation throws goes to the "not processed" output (or stops the node). */
export async function prepareItems<T>(
	routing: ItemRouting,
	itemCount: number,
	prepare: (itemIndex: number) => Promise<T> | T,
): Promise<Array<Prepared<T>>> {
	return await prepareEach(itemCount, prepare, routing.failItem);
}

/** A Reserve item, prepared: its key, its settings, its request and evidence. */
export interface PreparedReservation extends KeyedEntry {
	settings: ReserveParameters;
}

/** Evidence settings already checked: parameters read once for a batch are one object for all its items. */
const checkedEvidence = new WeakSet<object>();

/** One item's reservation as Reserve makes it: evidence settings checked, key derived, evidence made. */
export async function prepareReservation(
	context: IExecuteFunctions,
	item: INodeExecutionData,
	itemIndex: number,
	settings: ReserveParameters | { error: unknown },
): Promise<PreparedReservation> {
	if ('error' in settings) throw settings.error;
	if (!checkedEvidence.has(settings.evidence)) {
		validateEvidenceConfig(settings.evidence);
		checkedEvidence.add(settings.evidence);
	}
	const { input, derived, payloadHash } = await deriveItemKey(context, item, itemIndex, settings);
	// Only a webhook item's raw body is its body's bytes (headers are there only for one).
	const entry = keyedEntry(derived, payloadHash, settings.key, {
		config: settings.evidence,
		input: {
			payload: input.body,
			rawBody: input.headers ? input.rawBody : undefined,
			headers: input.headers,
			executionId: context.getExecutionId(),
		},
	});
	return { ...entry, settings };
}

/** Opens the node's key store and reserves every prepared item's key in one call. */
export async function reserveItems<T extends PreparedReservation>(
	context: IExecuteFunctions,
	table: TableChoice,
	prepared: Array<Prepared<T>>,
	options: Omit<ReserveOptionsWithDetail, 'executionId' | 'workflowId' | 'instanceId'>,
	beforeReserving: (store: KeyStore) => void = () => {},
): Promise<{ store: KeyStore; reserved: Array<Reserved<T>> }> {
	const store = await storeFor(context, table);
	beforeReserving(store);
	const reserved = await reserveAll(store, prepared, { ...options, ...executionIdentity(context) });
	return { store, reserved };
}

/** Where one answer goes: an output and the item's new JSON; none when the item was refused on the way. */
export interface Route {
	output: number;
	itemIndex: number;
	json: IDataObject;
}

/** An output item made from an input item: its binary kept, paired with the input for `$('…').item`. */
export function outputItem(item: INodeExecutionData, itemIndex: number, json: IDataObject): INodeExecutionData {
	return { json, binary: item.binary, pairedItem: { item: itemIndex } };
}

/**
 * Routes every answer to its output. All routes are worked out before any item is placed, so a
 * route that throws leaves no answer half-routed.
 */
export function routeResults<A>(
	outputs: INodeExecutionData[][],
	items: INodeExecutionData[],
	answers: A[],
	route: (answer: A, position: number) => Route | undefined,
): void {
	const routes = answers.flatMap((answer, position) => route(answer, position) ?? []);
	for (const { output, itemIndex, json } of routes) outputs[output].push(outputItem(items[itemIndex], itemIndex, json));
}
