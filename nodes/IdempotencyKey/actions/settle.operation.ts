import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';

import type { KeyStore, SettleReport, SettleRequest } from '../../../lib/store/contract';
import { failedAnswer, inProgressAnswer } from '../../../lib/webhook/answers';
import { withoutRequestSecrets } from '../../../lib/webhook/storedAnswer';
import { toNodeError } from '../../shared/nodeError';
import {
	answerNow,
	checkSettleWiring,
	feedsBusinessStep,
	isReserveType,
	keyOutcome,
	keysSettledByNodes,
	originsOfItem,
	requestOfRun,
	settleWhenExecutionEnds,
	type ExecutionView,
	type Judgement,
	type Reservation,
	type SubExecutionRecords,
} from '../../shared/settlement';
import { readOwnedKey, readResponse } from '../ownedKeys';
import { quoted, type StoreOpener } from './keyOperation';
import { judgedRunOf } from './settleByKey';
import { RESPONSE_TO_STORE } from './sharedParameters';

/*
 * "Settle After Business Step": beside the business step (on the output that feeds it: Idempotency
 * Reserve's New, Order Guard's Newer, Claim for Replay's Claimed) or after it. It traces each of its
 * items to the reservation it descends from (nodes/shared/settlement/trace.ts), completes the key when
 * the key's items finished without a failure, marks it failed when one failed, and sends each item
 * to the output whose answer is true for it. A key with work still to run is left to the end of the
 * execution (nodes/shared/settlement/outcome.ts, one rule for both). The store being unreachable is an outcome here, not an
 * error: by now the effect may have happened, and the workflow must still answer.
 */
export const value = 'settle';

export const option = {
	name: 'Settle After Business Step',
	action: 'Settle a reservation after the business step',
	description: 'Beside the business step or after it: completes the key if its items ran without error (any output), else fails it',
};

export const description: INodeProperties[] = [
	{
		displayName:
			"Connect this node beside your business step (to the same output) or after its last node. The key is completed when every node of the step ran without error for the key's items, whatever they returned, and marked failed when one failed, whatever its On Error says. Work still to run when this node runs (a Merge, a loop, a node below) is waited for: the key is then settled when the execution ends. Keep this node's On Error at Stop Workflow.",
		name: 'settleNotice',
		type: 'notice',
		displayOptions: { show: { operation: ['settle'] } },
		default: '',
	},
	{
		displayName:
			'Refused by Idempotency Reserve before anything is reserved, because the outcome could not be learned: an Execute Workflow node with "Wait For Sub-Workflow Completion" off, or set to "Continue (using error output)" (n8n overwrites the failures its sub-workflow returns: use "Continue (regular output)"); a Wait node set to "Continue (using error output)"; a Wait with this node chained after the step instead of beside it; a node after a Wait that stops the workflow on error; more than one Wait in the step, a Wait inside a loop or fed by several connections (the key is held through the first wait only); a Wait after a Merge (n8n may run the Merge after this node); a Wait in the step with this node placed above the first nodes of the step (n8n would run it before the Wait: place it below them). A Wait holds the key for as long as it waits; in queue mode the delivery is then answered 409 (retry later), and the retries are In Progress until the resumed run ends.',
		name: 'settleRefusedNotice',
		type: 'notice',
		displayOptions: { show: { operation: ['settle'] } },
		default: '',
	},
	{
		displayName:
			'Several events in one run (Split Out before Idempotency Reserve): every node of the step that gets them together must continue on error (Settings → On Error → "Continue (using error output)"; the error output need not be connected; Execute Workflow: "Continue (regular output)"), or run inside Loop Over Items with batch size 1. At "Stop Workflow" (n8n\'s default) n8n does not record which events a failed node had already done, so Reserve refuses it. May stay at Stop Workflow: nodes that cannot fail on one event (Merge, No Operation, Loop Over Items…), If, Switch or Edit Fields before any node with an effect, Stop and Error, and a Postgres node sending its items as one query.',
		name: 'settleSeveralEventsNotice',
		type: 'notice',
		displayOptions: { show: { operation: ['settle'] } },
		default: '',
	},
	RESPONSE_TO_STORE,
];

export const outputs = ['Completed', 'Failed', 'Completion Refused', 'Not Settled'] as const;
const COMPLETED = 0;
const FAILED = 1;
const COMPLETION_REFUSED = 2;
const NOT_SETTLED = 3;

export const subtitle = quoted(option.name);

// No failedOutput: Settle opens the store itself (an unreachable store is one of its outcomes, never
// a throw) and refuses to run, whatever On Error says, only when continuing would be unsafe.

interface Entry {
	owned: SettleRequest;
	reservation?: IDataObject;
	failure?: string;
	response?: unknown;
	/** The input items this key answers for. */
	itemIndexes: number[];
}

export async function execute(context: IExecuteFunctions, openStore: StoreOpener): Promise<INodeExecutionData[][]> {
	const items = context.getInputData();
	const routed: INodeExecutionData[][] = outputs.map(() => []);
	const source = context.getInputSourceData();

	let view: ExecutionView;
	let judgement: Judgement;
	let subExecutions: SubExecutionRecords;
	try {
		// A sub-workflow's item that carries an error on an output beyond the first is judged by its sub-execution's record.
		({ record: view, records: subExecutions, judgement } = await judgedRunOf(context));
		// Beside the business step, on the output that feeds it: the wiring Reserve checked before reserving.
		if (feedsBusinessStep(view.node(source.previousNode)?.type))
			checkSettleWiring(view, source.previousNode, source.previousNodeOutput ?? 0);
	} catch (error) {
		// Refused whatever "On Error" says: continuing would let the business step run after the answer.
		throw toNodeError(context.getNode(), error);
	}
	const started = requestOfRun(view.runData, view.node, { subExecution: view.subExecution });
	const byKey = new Map<string, Reservation>();
	for (const reservation of judgement.reservations.values()) byKey.set(`${reservation.key}\u0000${reservation.ownerToken}`, reservation);

	// Each key once, whichever of its items (or of the items descending from it) reached this node.
	const entries = new Map<string, Entry>();
	let deferred = 0;
	for (let itemIndex = 0; itemIndex < items.length; itemIndex++) {
		const traced =
			originsOfItem(view, source.previousNode, source.previousNodeRun ?? 0, items[itemIndex], judgement.reservations, subExecutions) ?? [];
		let reservations = traced.flatMap((id) => judgement.reservations.get(id) ?? []);
		if (reservations.length === 0) {
			// Not traceable to a Reserve item: the key the item carries, if this execution reserved it.
			let owned: SettleRequest;
			try {
				owned = readOwnedKey(context, items[itemIndex], itemIndex, 'item').owned;
			} catch (error) {
				routed[NOT_SETTLED].push(
					outcomeItem(items[itemIndex], itemIndex, undefined, { stepSucceeded: null, stepError: null, error: messageOf(error) }),
				);
				continue;
			}
			const reserved = byKey.get(`${owned.key}\u0000${owned.ownerToken}`);
			if (!reserved) {
				routed[NOT_SETTLED].push(
					outcomeItem(items[itemIndex], itemIndex, undefined, {
						stepSucceeded: null,
						stepError: null,
						error: `The key "${owned.key}" was not reserved by this execution's Idempotency Reserve node, so this node cannot tell how its step went. Nothing was settled.`,
					}),
				);
				continue;
			}
			reservations = [reserved];
		}
		for (const reservation of reservations) {
			const outcome = keyOutcome(judgement, reservation);
			// Work of this key still to run (a node below, a Merge waiting for its other input, a loop, a Wait):
			// the key is settled when the execution ends, and this node answers nothing for it.
			if (outcome.settle === 'defer') {
				deferred += 1;
				continue;
			}
			// The failure may quote the run's request (the Webhook's item): kept without its credentials.
			const failure =
				outcome.settle === 'fail'
					? withoutRequestSecrets(
							outcome.error,
							{ ...started.request, ownerTokens: [reservation.ownerToken] },
							{ everyHeaderValue: started.unnamedCredential },
						)
					: undefined;
			const entry = entries.get(reservation.id);
			if (entry) {
				entry.itemIndexes.push(itemIndex);
				continue;
			}
			entries.set(reservation.id, {
				owned: { key: reservation.key, ownerToken: reservation.ownerToken, leaseEndsAt: reservation.leaseEndsAt },
				reservation: reservation.idempotency,
				failure,
				response: failure === undefined ? readResponse(context, itemIndex) : undefined,
				itemIndexes: [itemIndex],
			});
		}
	}

	let store: KeyStore | undefined;
	const open = async (): Promise<KeyStore> => (store ??= await openStore());
	// An execution resumed after a Wait has new end handlers: this node registers them for its keys.
	const reserveNodes = new Set([...judgement.reservations.values()].map((reservation) => reservation.reserveNode));
	settleWhenExecutionEnds(context, [...reserveNodes], open);

	const all = [...entries.values()];
	// The other keys of this execution, wherever their items are (Settle chained after the step runs once
	// per arriving batch): one still running, or failed with nobody to answer for it yet.
	const settledByNodes = keysSettledByNodes(view.runData, view);
	const here = new Set(all.map((entry) => entry.owned.key));
	const elsewhere = (id: string) => {
		const key = judgement.reservations.get(id)?.key;
		return key !== undefined && !here.has(key) && !settledByNodes.has(key);
	};
	const stillRunning = deferred > 0 || judgement.untracedPending || [...judgement.pending].some(elsewhere);
	const failedElsewhere = [...judgement.failed.keys()].filter(elsewhere);
	// One delivery whose keys are still running in part: a 2xx now would answer for a key that may still
	// fail, and the provider would not retry it. Its finished keys are completed with the others at the end.
	const succeeded = stillRunning ? [] : all.filter((entry) => entry.failure === undefined);
	const failed = all.filter((entry) => entry.failure !== undefined);
	const settleGroup = async (group: Entry[], settle: (store: KeyStore) => Promise<SettleReport[]>): Promise<SettleReport[] | Error> => {
		if (group.length === 0) return [];
		try {
			return await settle(await open());
		} catch (error) {
			return error instanceof Error ? error : new Error(String(error));
		}
	};
	const completed = await settleGroup(succeeded, (s) =>
		s.complete(succeeded.map((entry) => ({ ...entry.owned, response: entry.response }))),
	);
	const markedFailed = await settleGroup(failed, (s) => s.fail(failed.map((entry) => ({ ...entry.owned, error: entry.failure ?? '' }))));

	const route = (group: Entry[], reports: SettleReport[] | Error, operation: 'complete' | 'fail'): void => {
		for (const [position, entry] of group.entries()) {
			const stepSucceeded = entry.failure === undefined;
			const base = { stepSucceeded, stepError: entry.failure ?? null };
			for (const itemIndex of entry.itemIndexes) {
				if (reports instanceof Error) {
					routed[NOT_SETTLED].push(
						outcomeItem(items[itemIndex], itemIndex, entry.reservation, { ...base, key: entry.owned.key, error: reports.message }),
					);
					continue;
				}
				const report = reports[position];
				const idempotency: IDataObject = {
					...base,
					operation: 'settle',
					settledAs: operation === 'complete' ? 'completed' : 'failed',
					key: report.key,
					applied: report.applied,
					staleReason: report.applied ? null : report.reason,
				};
				if (report.warnings) idempotency.warnings = report.warnings;
				const output = stepSucceeded ? (report.applied ? COMPLETED : COMPLETION_REFUSED) : FAILED;
				routed[output].push(outcomeItem(items[itemIndex], itemIndex, entry.reservation, idempotency));
			}
		}
	};
	route(succeeded, completed, 'complete');
	route(failed, markedFailed, 'fail');
	// One delivery, several events, some failed: the provider retries the delivery only on a non-2xx, and the
	// Completed output's answer would otherwise go out first. The retry finds the others duplicates.
	if (failedElsewhere.length > 0 && failed.length === 0) {
		await answerNow(
			context,
			failedAnswer(
				`The business step failed for ${failedElsewhere.length} other event(s) of this delivery: ${judgement.failed.get(failedElsewhere[0]) ?? ''}`,
			),
		);
	} else if (stillRunning && answeredElsewhere(view)) {
		// Copies (Duplicate, In Progress) in the same delivery are answered by their own branch, which n8n may
		// run before the keys still running here end: retry later, when each is completed or failed.
		await answerNow(context, inProgressAnswer('Some events of this delivery are still being processed: retry later.'));
	}
	if (failed.length > 0 && succeeded.length > 0) {
		await answerNow(
			context,
			failedAnswer(
				`The business step failed for ${failed.length} of the ${all.length} events of this delivery: ${failed[0].failure ?? ''}`,
				{
					failed: failed.map((entry) => entry.owned.key),
				},
			),
		);
	}
	return routed;
}

/** Whether a Reserve node of this execution sent items out of another output than New (a copy, a key not reserved). */
function answeredElsewhere(view: ExecutionView): boolean {
	return Object.entries(view.runData).some(
		([name, tasks]) =>
			isReserveType(view.node(name)?.type) &&
			tasks.some((task) => (task.data?.main ?? []).slice(1).some((items) => (items?.length ?? 0) > 0)),
	);
}

function outcomeItem(
	item: INodeExecutionData,
	itemIndex: number,
	reservation: IDataObject | undefined,
	fields: IDataObject,
): INodeExecutionData {
	const previous = reservation ?? (item.json.idempotency as IDataObject | undefined) ?? {};
	const { error, ...idempotencyFields } = fields;
	const json: IDataObject = { ...item.json, idempotency: { ...previous, operation: 'settle', ...idempotencyFields } };
	if (error !== undefined) json.error = error;
	return { json, binary: item.binary, pairedItem: { item: itemIndex } };
}

function messageOf(error: unknown): string {
	return error instanceof Error ? error.message : String(error);
}
