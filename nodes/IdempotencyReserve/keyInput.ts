import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';

import type { KeyInput } from '../../lib/keys/deriveKey';
import { readRawBody } from '../shared/rawBody';
import type { ReserveParameters } from './parameters';

/**
 * What the key is derived from, for one item. Webhook items carry `body` and `headers`; any other
 * item (a batch from a database or an API) is its own body.
 */
export async function readKeyInput(
	context: IExecuteFunctions,
	item: INodeExecutionData,
	itemIndex: number,
	parameters: ReserveParameters,
): Promise<KeyInput> {
	const json = item.json;
	const isWebhookItem = 'body' in json && typeof json.headers === 'object' && json.headers !== null;
	const rawBody = await readRawBody(context, item, itemIndex, parameters.rawBodyProperty);
	return {
		body: isWebhookItem ? json.body : json,
		headers: isWebhookItem ? (json.headers as IDataObject) : undefined,
		rawBody,
		customValue: parameters.key.strategy === 'custom' ? context.getNodeParameter('customKey', itemIndex) : undefined,
		// A field path starts at the item (body.…, headers.…), read here without an n8n expression.
		item: parameters.key.strategy === 'field' ? json : undefined,
	};
}
