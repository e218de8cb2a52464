/*
 * The reservation pipeline, free of n8n: every node that reserves (Reserve, Execute Query, Order
 * Guard, the Idempotent Webhook trigger) runs the same three steps.
 *
 *   prepare items   each item's key (or version) derived and checked; a refused item never
 *                   reaches the store, and refusing one item leaves the others alone
 *   reserve all     one store call for the whole batch, answers in item order
 *   route results   each answer to its route (new, duplicate, in progress), its item alongside
 *
 * The node side (`nodes/shared/reservationPipeline.ts`) turns refusals and routes into n8n outputs.
 */
import {
	capBatchPayloads,
	defaultSource,
	replayEvidence,
	type EvidenceConfig,
	type EvidenceInput,
	type EvidenceReport,
} from '../evidence/replayEvidence';
import type { DerivedKey, KeyConfig } from '../keys/deriveKey';
import { distinctBatch } from '../store/rules';
import type { KeyStore } from '../store/contract';
import type {
	CompactRecord,
	ReplayEvidence,
	ReservationMode,
	ReservationRequest,
	ReservationResult,
	ReserveOptionsWithDetail,
} from '../types';

/** One item that passed preparation: its index in the input and what was made from it. */
export interface Prepared<T> {
	itemIndex: number;
	value: T;
}

/**
 * Prepares every item in order. An item whose `prepare` throws is handed to `refuse` and left
 * out; `refuse` may itself throw (a node that stops on the first error), which ends the step.
 */
export async function prepareEach<T>(
	itemCount: number,
	prepare: (itemIndex: number) => Promise<T> | T,
	refuse: (error: unknown, itemIndex: number) => void,
): Promise<Array<Prepared<T>>> {
	const prepared: Array<Prepared<T>> = [];
	for (let itemIndex = 0; itemIndex < itemCount; itemIndex++) {
		let value: T;
		try {
			value = await prepare(itemIndex);
		} catch (error) {
			refuse(error, itemIndex);
			continue;
		}
		prepared.push({ itemIndex, value });
	}
	return prepared;
}

/** What a prepared item gives the store: its reservation request and what to tell it about its evidence. */
export interface ReservationEntry {
	request: ReservationRequest;
	/** What the item is told about its replay evidence. */
	evidence: EvidenceReport;
}

/** A reservation entry with the key it reserves. */
export interface KeyedEntry extends ReservationEntry {
	derived: DerivedKey;
}

/**
 * One item's reservation request from its derived key: the evidence stored with it is made from
 * what the key was derived from (the webhook body, or the whole item).
 */
export function keyedEntry(
	derived: DerivedKey,
	payloadHash: string | null,
	key: KeyConfig,
	evidence: { config: EvidenceConfig; input: Omit<EvidenceInput, 'derivedSource'> },
): KeyedEntry {
	const made = replayEvidence(evidence.config, { ...evidence.input, derivedSource: defaultSource(key) });
	// Evidence with nothing in it is sent as none: a batch of 10,000 such items then carries no
	// evidence columns at all, and the store reads a missing value as null all the same.
	const stored = hasStoredEvidence(made.evidence) ? made.evidence : undefined;
	return {
		derived,
		request: { key: derived.key, keySource: derived.keySource, payloadHash, evidence: stored },
		evidence: made.report,
	};
}

function hasStoredEvidence(evidence: ReplayEvidence): boolean {
	return evidence.payloadJson !== null || evidence.payloadBytes !== null || evidence.source !== null || evidence.correlationId !== null;
}

/** One store answer with the prepared item it belongs to. */
export interface Reserved<T extends ReservationEntry> extends Prepared<T> {
	result: ReservationResult<CompactRecord>;
}

/**
 * Reserves every prepared item's key in one store call. Only the first item of each key sends
 * its evidence (a repeat in the batch is a duplicate), and the payloads of one call are capped
 * together. Throws what the store throws: then nothing is known to be reserved.
 */
export async function reserveAll<T extends ReservationEntry>(
	store: KeyStore,
	prepared: Array<Prepared<T>>,
	options: ReserveOptionsWithDetail,
): Promise<Array<Reserved<T>>> {
	const requests = prepared.map(({ value }) => value.request);
	const withEvidence = prepared.flatMap(({ value }) =>
		value.request.evidence ? [{ evidence: value.request.evidence, report: value.evidence, request: value.request }] : [],
	);
	capBatchPayloads(distinctBatch(withEvidence.map(({ request }) => request)).firstIndexes.map((index) => withEvidence[index]));
	const results = await store.reserve(requests, options);
	return results.map((result, position) => ({ ...prepared[position], result }));
}

/** Where a reservation's item goes: its key is this run's, someone else's finished, or someone else's running. */
export type ReservationRoute = 'new' | 'duplicate' | 'inProgress';

/**
 * The route of one reservation answer. In Permanent mode a copy of a running event is a
 * duplicate: without a lease there is no "in progress" to wait for.
 */
export function routeOf(result: ReservationResult<CompactRecord>, mode: ReservationMode): ReservationRoute {
	if (result.outcome === 'new') return 'new';
	return result.outcome === 'in_progress' && mode === 'lease' ? 'inProgress' : 'duplicate';
}

/**
 * The run is about to fail after its store call: releases every key it reserved first, so the
 * provider's retry is processed rather than found as a duplicate. The error's message says
 * whether that worked.
 */
export async function releasedBeforeFailing<E extends Error>(
	store: KeyStore,
	results: Array<ReservationResult<CompactRecord>>,
	error: E,
): Promise<E> {
	const owned = results.flatMap((result) => (result.ownerToken ? [{ key: result.key, ownerToken: result.ownerToken }] : []));
	if (owned.length === 0) return error;
	try {
		await store.release(owned);
		error.message += ` The ${owned.length} key(s) this run had reserved were released.`;
	} catch (releaseError) {
		error.message += ` Releasing the ${owned.length} key(s) this run had reserved also failed (${(releaseError as Error).message}): release them with Idempotency Key → Release Execution.`;
	}
	return error;
}
