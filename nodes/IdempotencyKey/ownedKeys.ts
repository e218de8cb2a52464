import { NodeOperationError, type IDataObject, type IExecuteFunctions, type INodeExecutionData } from 'n8n-workflow';

import type { SettleRequest } from '../../lib/postgres/store';

export type KeyFrom = 'item' | 'custom' | 'execution';

/** The key and owner token one item settles: from its idempotency object, or from expressions. */
export function readOwnedKey(context: IExecuteFunctions, item: INodeExecutionData, itemIndex: number, source: KeyFrom): SettleRequest {
	if (source === 'custom') {
		return {
			key: String(context.getNodeParameter('key', itemIndex) ?? ''),
			ownerToken: String(context.getNodeParameter('ownerToken', itemIndex) ?? ''),
		};
	}
	const idempotency = item.json.idempotency as IDataObject | undefined;
	if (!idempotency || typeof idempotency.key !== 'string') {
		throw new NodeOperationError(
			context.getNode(),
			'The item has no idempotency object (json.idempotency.key). Connect this node after Idempotency Reserve or to a business step\'s error output, or set "Key From" to Custom and point the expressions at the Reserve node.',
		);
	}
	if (!idempotency.ownerToken) {
		throw new NodeOperationError(
			context.getNode(),
			`The item's reservation has no owner token: it was a duplicate (outcome "${String(idempotency.outcome)}"), and only the run that reserved a key can settle it.`,
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
