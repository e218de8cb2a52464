import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';

import type { KeyStore, SettleReport, SettleRequest } from '../../../lib/store/contract';
import { readExecutionRecord } from '../../shared/executionRecord';
import { toNodeError } from '../../shared/nodeError';
import { readOwnedKey, readResponse } from '../ownedKeys';
import { judgeBusinessStep, type ParentOutput, type StepFailures } from '../stepOutcome';
import { quoted, type StoreOpener } from './keyOperation';
import { RESPONSE_TO_STORE } from './sharedParameters';

/*
 * "Settle After Business Step": connected to the output that feeds the business step (Idempotency
 * Reserve's New, Order Guard's Passed, Claim for Replay's Claimed), below the business step. It
 * reads n8n's record of the step and completes the key of every item the step succeeded for, marks
 * failed the key of every item it failed for, and sends each item to the output whose answer is
 * true for it. The store being unreachable is an outcome here, not an error: by now the effect may
 * have happened, and the workflow must still answer.
 */
export const value = 'settle';

export const option = {
	name: 'Settle After Business Step',
	action: 'Settle a reservation after the business step',
	description:
		'Beside the business step, below it: completes the key if n8n ran the step without error (any output), else fails it',
};

export const description: INodeProperties[] = [
	{
		displayName:
			'Connect this node to the same output as your business step, below it (n8n runs that output top to bottom). Set On Error: Continue on the business step\'s nodes. The key is completed when n8n ran them without error, and marked failed when one failed, whatever they returned. Keep this node\'s On Error at Stop Workflow.',
		name: 'settleNotice',
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
	itemIndex: number;
	owned: SettleRequest;
	reservation?: IDataObject;
	failure?: string;
	response?: unknown;
}

export async function execute(context: IExecuteFunctions, openStore: StoreOpener): Promise<INodeExecutionData[][]> {
	const items = context.getInputData();
	const self = context.getNode().name;
	const routed: INodeExecutionData[][] = outputs.map(() => []);
	const source = context.getInputSourceData();
	const parent: ParentOutput = { node: source.previousNode, run: source.previousNodeRun ?? 0, output: source.previousNodeOutput ?? 0 };

	let failures: StepFailures;
	try {
		failures = judgeBusinessStep(readExecutionRecord(context), self, parent, items.length);
	} catch (error) {
		// Refused whatever "On Error" says: continuing would let the business step run after the answer.
		throw toNodeError(context.getNode(), error);
	}

	const entries: Entry[] = [];
	for (let itemIndex = 0; itemIndex < items.length; itemIndex++) {
		const failure = failures[itemIndex];
		try {
			const { owned, reservation } = readOwnedKey(context, items[itemIndex], itemIndex, 'item');
			entries.push({ itemIndex, owned, reservation, failure, response: failure === undefined ? readResponse(context, itemIndex) : undefined });
		} catch (error) {
			routed[NOT_SETTLED].push(outcomeItem(items[itemIndex], itemIndex, undefined, { stepSucceeded: failure === undefined, stepError: failure ?? null, error: messageOf(error) }));
		}
	}

	const succeeded = entries.filter((entry) => entry.failure === undefined);
	const failed = entries.filter((entry) => entry.failure !== undefined);
	let store: KeyStore | undefined;
	const settleGroup = async (group: Entry[], settle: (store: KeyStore) => Promise<SettleReport[]>): Promise<SettleReport[] | Error> => {
		if (group.length === 0) return [];
		try {
			store ??= await openStore();
			return await settle(store);
		} catch (error) {
			return error instanceof Error ? error : new Error(String(error));
		}
	};
	const completed = await settleGroup(succeeded, (s) => s.complete(succeeded.map((entry) => ({ ...entry.owned, response: entry.response }))));
	const markedFailed = await settleGroup(failed, (s) => s.fail(failed.map((entry) => ({ ...entry.owned, error: entry.failure ?? '' }))));

	const route = (group: Entry[], reports: SettleReport[] | Error, operation: 'complete' | 'fail'): void => {
		for (const [position, entry] of group.entries()) {
			const stepSucceeded = entry.failure === undefined;
			const base = { stepSucceeded, stepError: entry.failure ?? null };
			if (reports instanceof Error) {
				routed[NOT_SETTLED].push(outcomeItem(items[entry.itemIndex], entry.itemIndex, entry.reservation, { ...base, error: reports.message }));
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
			routed[output].push(outcomeItem(items[entry.itemIndex], entry.itemIndex, entry.reservation, idempotency));
		}
	};
	route(succeeded, completed, 'complete');
	route(failed, markedFailed, 'fail');
	return routed;
}

function outcomeItem(item: INodeExecutionData, itemIndex: number, reservation: IDataObject | undefined, fields: IDataObject): INodeExecutionData {
	const previous = reservation ?? (item.json.idempotency as IDataObject | undefined) ?? {};
	const { error, ...idempotencyFields } = fields;
	const json: IDataObject = { ...item.json, idempotency: { ...previous, operation: 'settle', ...idempotencyFields } };
	if (error !== undefined) json.error = error;
	return { json, binary: item.binary, pairedItem: { item: itemIndex } };
}

function messageOf(error: unknown): string {
	return error instanceof Error ? error.message : String(error);
}
