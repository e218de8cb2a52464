import { NodeOperationError, type INode } from 'n8n-workflow';

import { IdempotencyError } from '../../lib/errors';

/** The core's errors as n8n errors, tied to the item that caused them when there is one. */
export function toNodeError(node: INode, error: unknown, itemIndex?: number): NodeOperationError {
	if (error instanceof NodeOperationError) return error;
	const message = error instanceof Error ? error.message : String(error);
	// Passed as text: given the pg error itself, n8n would replace our message with a generic
	// one derived from the socket error code ("The service refused the connection").
	return new NodeOperationError(node, message, {
		itemIndex,
		description: error instanceof IdempotencyError ? error.name : undefined,
	});
}
