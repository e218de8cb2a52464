import { NodeOperationError, type INode } from 'n8n-workflow';

import { IdempotencyError } from '../../lib/errors';

/** The core's errors as n8n errors, tied to the item that caused them when there is one. */
export function toNodeError(node: INode, error: unknown, itemIndex?: number): NodeOperationError {
	if (error instanceof NodeOperationError) return error;
	const cause = error instanceof Error ? error : new Error(String(error));
	return new NodeOperationError(node, cause, {
		itemIndex,
		message: cause.message,
		description: error instanceof IdempotencyError ? `${error.name}` : undefined,
	});
}
