import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';

import type { KeyStore } from '../../../lib/store/contract';
import type { ListKeysOptions, RecordStatus, StoredKey } from '../../../lib/types';
import { keyPreviewJson, keyRecordJson } from '../keyRecords';
import { quoted, type StoreOpener } from './keyOperation';
import { PAYLOAD_PREVIEW } from './sharedParameters';

export const value = 'listKeys';

export const option = {
	name: 'List Keys',
	action: 'List stored keys',
	description: 'One page of stored keys and their payloads, filtered by status, stuck lease, age or key prefix (a dead-letter view)',
};

export const description: INodeProperties[] = [
	{
		displayName: 'Limit',
		name: 'limit',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: 1000 },
		displayOptions: { show: { operation: ['listKeys'] } },
		default: 50,
		description: 'Max number of results to return',
	},
	{
		displayName: 'After Key',
		name: 'afterKey',
		type: 'string',
		displayOptions: { show: { operation: ['listKeys'] } },
		default: '',
		description: "Empty for the first page; for the next one, the previous page's nextPageAfterKey",
	},
	{
		displayName: 'Filters',
		name: 'listFilters',
		type: 'collection',
		placeholder: 'Add Filter',
		displayOptions: { show: { operation: ['listKeys'] } },
		default: {},
		options: [
			{
				displayName: 'Dead-Lettered Only',
				name: 'deadLetteredOnly',
				type: 'boolean',
				default: false,
				description:
					'Whether to list only events the Idempotent Webhook accepted at once and stopped retrying (out of attempts or time): failed, kept for a replay by hand',
			},
			{
				displayName: 'First Seen More Than (Hours) Ago',
				name: 'olderThanHours',
				type: 'number',
				typeOptions: { minValue: 0 },
				default: 24,
			},
			{
				displayName: 'Key Prefix',
				name: 'keyPrefix',
				type: 'string',
				default: '',
				placeholder: 'e.g. stripe:',
			},
			{
				displayName: 'Status',
				name: 'status',
				type: 'options',
				options: [
					{ name: 'Any', value: 'any' },
					{ name: 'Completed', value: 'completed' },
					{ name: 'Failed', value: 'failed', description: 'Marked failed: the next delivery is processed again' },
					{ name: 'Processing', value: 'processing' },
					{
						name: 'Replayable (Failed or Lease Expired)',
						value: 'replayable',
						description: 'Failed, or still processing after the lease ran out: the keys a replay can take over',
					},
				],
				default: 'any',
			},
			{
				displayName: 'Stuck Leases Only',
				name: 'stuckLeasesOnly',
				type: 'boolean',
				default: false,
				description: 'Whether to list only keys still processing after their lease ran out (the run died or hung)',
			},
		],
	},
	PAYLOAD_PREVIEW,
];

export const outputs = ['Keys'] as const;

export const subtitle = quoted(option.name);

export const failedOutput = 0;

interface ListFilters {
	status?: RecordStatus | 'any' | 'replayable';
	stuckLeasesOnly?: boolean;
	deadLetteredOnly?: boolean;
	olderThanHours?: number;
	keyPrefix?: string;
}

/** One page of keys (one item each), read with the first item's parameters. */
export async function execute(context: IExecuteFunctions, openStore: StoreOpener): Promise<INodeExecutionData[][]> {
	const store = await openStore();
	const filters = context.getNodeParameter('listFilters', 0, {}) as ListFilters;
	const options: ListKeysOptions = {
		limit: context.getNodeParameter('limit', 0, 100) as number,
		afterKey: String(context.getNodeParameter('afterKey', 0, '') ?? ''),
		status: filters.status && filters.status !== 'any' && filters.status !== 'replayable' ? filters.status : undefined,
		replayableOnly: filters.status === 'replayable',
		stuckLeasesOnly: filters.stuckLeasesOnly,
		deadLetteredOnly: filters.deadLetteredOnly,
		olderThanSeconds: filters.olderThanHours === undefined ? undefined : filters.olderThanHours * 3600,
		keyPrefix: filters.keyPrefix || undefined,
	};
	const { keys, nextAfterKey } = await store.listKeys(options);
	const pairedItem = context.getInputData().map((_item, itemIndex) => ({ item: itemIndex }));
	const preview = context.getNodeParameter('payloadPreview', 0, false) as boolean;
	const listed = preview ? await withKeptItems(store, keys) : keys;
	const recordJson = preview ? keyPreviewJson : keyRecordJson;
	// Every item says where the next page starts, so "After Key" can be {{ $json.nextPageAfterKey }} of the last item.
	return [listed.map((stored) => ({ json: { ...recordJson(stored), nextPageAfterKey: nextAfterKey }, pairedItem }))];
}

/** The page with the trigger's kept items of the events that have no stored payload (a page never reads them: they may be large). */
async function withKeptItems(store: KeyStore, keys: StoredKey[]): Promise<StoredKey[]> {
	const kept = keys.filter((stored) => !stored.payloadStored && stored.hasInboxItem).map((stored) => stored.key);
	if (kept.length === 0) return keys;
	const read = await store.getKeys(kept, { inboxItem: true });
	return keys.map((stored) => ({ ...stored, inboxItem: read.get(stored.key)?.inboxItem ?? null }));
}
