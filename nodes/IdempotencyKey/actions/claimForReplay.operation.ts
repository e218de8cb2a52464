import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';

import { assertExactRunText, assertStoredKeyText } from '../../../lib/keys/exactText';
import type { KeySourceLabel } from '../../../lib/keys/deriveKey';
import type { ReplayClaim } from '../../../lib/types';
import { idempotencyOutput, isoTime } from '../../../lib/pipeline/idempotencyOutput';
import { inboxItemOf } from '../../../lib/webhook/inbox';
import {
	assertExecutionEndVisible,
	assertSafeSettleWiring,
	holdWhileRunning,
	settlesAtExecutionEnd,
	settleWhenExecutionEnds,
} from '../../shared/settlement';
import { toNodeError } from '../../shared/nodeError';
import { quoted, type StoreOpener } from './keyOperation';

/*
 * Claim for Replay: takes over stored keys a replay may run again (failed, or a
 * lease that ran out), one statement for every item. A claimed item carries an `idempotency`
 * object shaped like Idempotency Reserve's, so Complete, Mark Failed and Release work on it
 * unchanged, and the stored payload as `body`, where the Webhook node put it, so the webhook
 * workflow's business step reads it with the same expressions.
 */

export const value = 'claimForReplay';

export const option = {
	name: 'Claim for Replay',
	action: 'Claim a stored key for replay',
	description: 'Take over a failed key, or one whose lease ran out, to process its stored payload again; never a completed or held key',
};

export const description: INodeProperties[] = [
	{
		displayName: 'Key',
		name: 'replayKey',
		type: 'string',
		displayOptions: { show: { operation: ['claimForReplay'] } },
		default: '={{ $json.key }}',
		required: true,
		description: 'The stored key, exactly as List Keys or Get Key output it (hashed keys such as sha256:… included)',
	},
	{
		displayName: 'Lease (Seconds)',
		name: 'leaseSeconds',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: 604800 },
		displayOptions: { show: { operation: ['claimForReplay'] } },
		default: 300,
		description:
			'How long the replay owns the key: longer than the business step takes. Until then a redelivery of the event answers In Progress; after it, another run may take the key over.',
	},
	{
		displayName: 'Retention (Days)',
		name: 'retentionDays',
		type: 'number',
		typeOptions: { minValue: 0.0001 },
		displayOptions: { show: { operation: ['claimForReplay'] } },
		default: 30,
		description: "How long the key keeps catching duplicates, counted from the claim (as Idempotency Reserve's Retention)",
	},
];

export const outputs = ['Claimed', 'Not Claimable'] as const;
const CLAIMED = 0;
const NOT_CLAIMABLE = 1;

export const subtitle = quoted(option.name);

// Nothing was claimed: never on Claimed, which leads to the business step.
export const failedOutput = NOT_CLAIMABLE;

export async function execute(context: IExecuteFunctions, openStore: StoreOpener): Promise<INodeExecutionData[][]> {
	const store = await openStore();
	const items = context.getInputData();
	const routed: INodeExecutionData[][] = outputs.map(() => []);
	const executionId = context.getExecutionId();
	const workflowId = String(context.getWorkflow().id ?? '');
	assertExactRunText({ 'execution id': executionId, 'workflow id': workflowId });
	const settlesAtEnd = settlesAtExecutionEnd(context);
	if (settlesAtEnd) assertExecutionEndVisible(context);
	assertSafeSettleWiring(context, CLAIMED);
	// One statement for the batch: its lease and retention are read once, from the first item.
	const leaseSeconds = context.getNodeParameter('leaseSeconds', 0) as number;
	// Registered before the claim: a key claimed is always settled by how the execution ends.
	if (settlesAtEnd) settleWhenExecutionEnds(context, [context.getNode().name], async () => store, leaseSeconds * 1000);
	const retentionDays = context.getNodeParameter('retentionDays', 0, 30) as number;

	const requests: Array<{ itemIndex: number; key: string }> = [];
	for (let itemIndex = 0; itemIndex < items.length; itemIndex++) {
		try {
			const key = context.getNodeParameter('replayKey', itemIndex) as unknown;
			assertStoredKeyText(key, 'key to replay');
			requests.push({ itemIndex, key });
		} catch (error) {
			if (!context.continueOnFail()) throw toNodeError(context.getNode(), error, itemIndex);
			// Never on Claimed: an item whose key could not be read must not reach the business step.
			routed[NOT_CLAIMABLE].push({
				json: { ...items[itemIndex].json, error: toNodeError(context.getNode(), error, itemIndex).message },
				pairedItem: { item: itemIndex },
			});
		}
	}

	const results = await store.claimForReplay(
		requests.map((request) => request.key),
		{ leaseSeconds, retentionSeconds: Math.round(retentionDays * 86_400), executionId, workflowId, instanceId: context.getInstanceId() },
	);
	// A replay longer than its lease must not look dead: the package's own retry runner (an event the trigger
	// accepted At Once) and a redelivery would run the event again beside it. Held while this execution runs.
	await holdWhileRunning(
		context,
		results.flatMap((result) =>
			result.claimed ? [{ key: result.key, ownerToken: result.ownerToken, leaseEndsAt: result.record.lockedUntil }] : [],
		),
		async () => store,
		leaseSeconds * 1000,
	);
	for (const [position, result] of results.entries()) {
		const { itemIndex } = requests[position];
		const item = items[itemIndex];
		const json: IDataObject = result.claimed
			? { ...item.json, ...replayedEvent(result), idempotency: claimedOutput(result) }
			: { ...item.json, idempotency: notClaimableOutput(result) };
		routed[result.claimed ? CLAIMED : NOT_CLAIMABLE].push({ json, binary: item.binary, pairedItem: { item: itemIndex } });
	}
	return routed;
}

/**
 * The event to run again: the Idempotent Webhook's kept request for an event it accepted At Once
 * (its body, query and the headers it kept), else the payload Reserve stored (`body` and `payload`).
 */
function replayedEvent(result: Extract<ReplayClaim, { claimed: true }>): IDataObject {
	const kept = result.inboxItem ? inboxItemOf(result.inboxItem, {}) : undefined;
	if (kept) {
		const { headers, query, body } = kept.json;
		return { headers, query, body, payload: body } as IDataObject;
	}
	return { body: result.payload as IDataObject, payload: result.payload as IDataObject };
}

/** Idempotency Reserve's fields for a reservation that took a key over, for the run that now owns it. */
function claimedOutput(result: Extract<ReplayClaim, { claimed: true }>): IDataObject {
	const { record } = result;
	const reservation = {
		outcome: 'new',
		key: result.key,
		ownerToken: result.ownerToken,
		reclaimed: true,
		repeatInBatch: false,
		payloadMismatch: null,
		record,
	} as const;
	const fields = idempotencyOutput(
		reservation,
		{ key: result.key, keySource: record.keySource as KeySourceLabel, hashed: false },
		{ mode: 'lease', detail: 'full', fingerprinting: false },
	);
	// Whether Reserve hashed the key is not stored: say nothing rather than guess.
	delete fields.keyHashed;
	return {
		...fields,
		outcome: 'replay',
		claimed: true,
		payloadStored: result.payloadStored,
		source: result.source,
		correlationId: result.correlationId,
	};
}

/** Why the key was not claimed, and its state now (never its owner token). */
function notClaimableOutput(result: Extract<ReplayClaim, { claimed: false }>): IDataObject {
	const { record } = result;
	return {
		key: result.key,
		outcome: 'not_claimable',
		claimed: false,
		reason: result.reason,
		status: record?.status ?? null,
		lockedUntil: isoTime(record?.lockedUntil ?? null),
		completedAt: isoTime(record?.completedAt ?? null),
		reservedByExecutionId: record?.executionId ?? null,
		lastError: record?.lastError ?? null,
	};
}
