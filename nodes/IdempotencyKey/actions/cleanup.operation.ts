import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';

import { quoted, type StoreOpener } from './keyOperation';

export const value = 'cleanup';

export const option = {
	name: 'Delete Expired Keys',
	action: 'Delete expired keys',
	description: 'Delete keys past retention in batches (for a scheduled cleanup workflow)',
};

export const description: INodeProperties[] = [
	{
		displayName: 'Retention (Days)',
		name: 'retentionDays',
		type: 'number',
		typeOptions: { minValue: 0.0001 },
		displayOptions: { show: { operation: ['cleanup'] } },
		default: 30,
		description:
			"Keys are deleted when their retention ends, the one Idempotency Reserve gave them when it last reserved them (a retry or reclaim extends it), and never under a running lease. This value applies only to keys without one (e.g. the hand-built recipe's rows), counted from first seen: use the Reserve node's Retention.",
	},
	{
		displayName: 'Batch Size',
		name: 'batchSize',
		type: 'number',
		typeOptions: { minValue: 1 },
		displayOptions: { show: { operation: ['cleanup'] } },
		default: 10000,
		description: 'Rows per DELETE; small batches keep locks short',
	},
	{
		displayName: 'Time Budget (Seconds)',
		name: 'timeBudgetSeconds',
		type: 'number',
		typeOptions: { minValue: 1 },
		displayOptions: { show: { operation: ['cleanup'] } },
		default: 60,
		description: 'Stop starting new batches after this long; the next run continues',
	},
];

// One output: the run's summary.
export const outputs = ['Summary'] as const;

export const subtitle = quoted(option.name);

export const failedOutput = 0;

/** One summary item for the run, paired with every input item. */
export async function execute(context: IExecuteFunctions, openStore: StoreOpener): Promise<INodeExecutionData[][]> {
	const store = await openStore();
	const result = await store.cleanup({
		retentionSeconds: Math.round((context.getNodeParameter('retentionDays', 0) as number) * 86_400),
		batchSize: context.getNodeParameter('batchSize', 0) as number,
		timeBudgetSeconds: context.getNodeParameter('timeBudgetSeconds', 0) as number,
	});
	const pairedItem = context.getInputData().map((_item, itemIndex) => ({ item: itemIndex }));
	return [[{ json: { ...result }, pairedItem }]];
}
