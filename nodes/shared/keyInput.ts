import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';

import { saysMultipart } from '../../lib/headers';
import {
	deriveKey,
	payloadFingerprint,
	validateKeyConfig,
	type DerivedKey,
	type KeyInput,
	type UploadedFile,
} from '../../lib/keys/deriveKey';
import { sha256Hex } from '../../lib/keys/sha256';
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
	const headers = isWebhookItem ? (json.headers as IDataObject) : undefined;
	return {
		body: isWebhookItem ? json.body : json,
		headers,
		rawBody,
		files: headers && saysMultipart(headers) ? await uploadedFiles(context, item, itemIndex) : undefined,
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

/** The files of a multipart request, as n8n's Webhook node keeps them: one binary per form field. */
async function uploadedFiles(context: IExecuteFunctions, item: INodeExecutionData, itemIndex: number): Promise<UploadedFile[]> {
	const files: UploadedFile[] = [];
	for (const [field, binary] of Object.entries(item.binary ?? {})) {
		const bytes = await context.helpers.getBinaryDataBuffer(itemIndex, field);
		files.push({ field, fileName: binary.fileName, mimeType: binary.mimeType, sha256: sha256Hex(bytes) });
	}
	return files;
}
