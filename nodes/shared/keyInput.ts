import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';

import { deriveKey, payloadFingerprint, validateKeyConfig, type DerivedKey, type KeyInput } from '../../lib/keys/deriveKey';
import { readRawBody } from './rawBody';
import type { ReserveParameters } from './reservationParameters';

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

export interface ItemKey {
	input: KeyInput;
	derived: DerivedKey;
	/** The payload's fingerprint, or null when Payload Fingerprint is off. */
	payloadHash: string | null;
}

/** One item's key, as Reserve and Execute Query derive it: the key settings checked, the item read, the key and fingerprint made. */
export async function deriveItemKey(
	context: IExecuteFunctions,
	item: INodeExecutionData,
	itemIndex: number,
	parameters: ReserveParameters,
): Promise<ItemKey> {
	validateKeyConfig(parameters.key);
	const input = await readKeyInput(context, item, itemIndex, parameters);
	const derived = deriveKey(input, parameters.key);
	const payloadHash = parameters.payloadFingerprint === 'off' ? null : payloadFingerprint(input);
	return { input, derived, payloadHash };
}
