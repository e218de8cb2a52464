import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';

import { assertExactRunText, assertStoredKeyText } from '../../lib/keys/exactText';
import type { KeyStore } from '../../lib/store/contract';
import type { KeySourceLabel } from '../../lib/keys/deriveKey';
import type { ReplayClaim } from '../../lib/types';
import { idempotencyOutput } from '../IdempotencyReserve/idempotencyOutput';
import { assertSafeSettleWiring } from '../shared/settleWiring';
import { toNodeError } from '../shared/nodeError';
import { isoTime } from './keyRecords';

/*
 * Claim for Replay: takes over stored keys a replay may run again (failed, or a
 * lease that ran out), one statement for every item. A claimed item carries an `idempotency`
 * object shaped like Idempotency Reserve's, so Complete, Mark Failed and Release work on it
 * unchanged, and the stored payload as `body`, where the Webhook node put it, so the webhook
 * workflow's business step reads it with the same expressions.
 */

const CLAIMED = 0;
const NOT_CLAIMABLE = 1;

export async function claimForReplay(context: IExecuteFunctions, store: KeyStore): Promise<INodeExecutionData[][]> {
	const items = context.getInputData();
	const outputs: INodeExecutionData[][] = [[], []];
	const executionId = context.getExecutionId();
	const workflowId = String(context.getWorkflow().id ?? '');
	assertExactRunText({ 'execution id': executionId, 'workflow id': workflowId });
	assertSafeSettleWiring(context, CLAIMED);
	// One statement for the batch: its lease and retention are read once, from the first item.
	const leaseSeconds = context.getNodeParameter('leaseSeconds', 0) as number;
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
			outputs[NOT_CLAIMABLE].push({
				json: { ...items[itemIndex].json, error: toNodeError(context.getNode(), error, itemIndex).message },
				pairedItem: { item: itemIndex },
			});
		}
	}

	const results = await store.claimForReplay(
		requests.map((request) => request.key),
		{ leaseSeconds, retentionSeconds: Math.round(retentionDays * 86_400), executionId, workflowId, instanceId: context.getInstanceId() },
	);
	for (const [position, result] of results.entries()) {
		const { itemIndex } = requests[position];
		const item = items[itemIndex];
		const json: IDataObject = result.claimed
			? { ...item.json, body: result.payload as IDataObject, payload: result.payload as IDataObject, idempotency: claimedOutput(result) }
			: { ...item.json, idempotency: notClaimableOutput(result) };
		outputs[result.claimed ? CLAIMED : NOT_CLAIMABLE].push({ json, binary: item.binary, pairedItem: { item: itemIndex } });
	}
	return outputs;
}

/** Idempotency Reserve's fields for a reservation that took a key over, for the run that now owns it. */
function claimedOutput(result: Extract<ReplayClaim, { claimed: true }>): IDataObject {
	const { record } = result;
	const reservation = { outcome: 'new', key: result.key, ownerToken: result.ownerToken, reclaimed: true, repeatInBatch: false, payloadMismatch: null, record } as const;
	const fields = idempotencyOutput(reservation, { key: result.key, keySource: record.keySource as KeySourceLabel, hashed: false }, { mode: 'lease', detail: 'full', fingerprinting: false });
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
