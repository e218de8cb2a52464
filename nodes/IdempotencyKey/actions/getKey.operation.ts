import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';

import { keyPreviewJson, keyRecordJson } from '../keyRecords';
import { quoted, type StoreOpener } from './keyOperation';
import { PAYLOAD_PREVIEW } from './sharedParameters';

export const value = 'getKey';

export const option = {
	name: 'Get Key',
	action: 'Get a stored key',
	description: 'Read the stored record of one key: status, attempts, last error, stored response and payload (or found: false)',
};

export const description: INodeProperties[] = [
	{
		displayName: 'Key',
		name: 'lookupKey',
		type: 'string',
		displayOptions: { show: { operation: ['getKey'] } },
		default: '',
		required: true,
		placeholder: 'e.g. stripe:evt_1NXqb2',
		description: 'The stored key, including any scope prefix, as Idempotency Reserve output it in idempotency.key',
	},
	PAYLOAD_PREVIEW,
];

export const outputs = ['Keys'] as const;

export const subtitle = quoted(option.name);

export const failedOutput = 0;

/** One output item per input item, `found: false` when the key is not stored. */
export async function execute(context: IExecuteFunctions, openStore: StoreOpener): Promise<INodeExecutionData[][]> {
	const store = await openStore();
	const items = context.getInputData();
	const keys = items.map((_item, itemIndex) => String(context.getNodeParameter('lookupKey', itemIndex) ?? ''));
	// The preview reads the trigger's kept items, for the events that have no stored payload.
	const preview = context.getNodeParameter('payloadPreview', 0, false) as boolean;
	const found = await store.getKeys(
		keys.filter((key) => key !== ''),
		{ inboxItem: preview },
	);
	const recordJson = preview ? keyPreviewJson : keyRecordJson;
	return [
		keys.map((key, itemIndex) => {
			const stored = found.get(key);
			return { json: stored ? recordJson(stored) : { found: false, key }, pairedItem: { item: itemIndex } };
		}),
	];
}
