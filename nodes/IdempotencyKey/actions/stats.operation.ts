import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';

import { quoted, type StoreOpener } from './keyOperation';

export const value = 'stats';

export const option = {
	name: 'Get Stats',
	action: 'Get key stats',
	description: 'Counts by status, stuck leases, and new keys, duplicates, reclaims and failures within a window (for a daily report)',
};

export const description: INodeProperties[] = [
	{
		displayName: 'Window (Hours)',
		name: 'windowHours',
		type: 'number',
		typeOptions: { minValue: 0.01, maxValue: 8784 },
		displayOptions: { show: { operation: ['stats'] } },
		default: 24,
		description: 'The window counts cover keys first seen (new) or last seen (duplicates, reclaims, failures) within this many hours',
	},
	{
		displayName: 'Answers Per Hour',
		name: 'answersPerHour',
		type: 'boolean',
		displayOptions: { show: { operation: ['stats'] } },
		default: false,
		description:
			"Whether to add answersPerHour: the Idempotent Webhook's deliveries per answer for each hour of the window that had any, oldest first (for a chart)",
	},
];

export const outputs = ['Stats'] as const;

export const subtitle = quoted(option.name);

export const failedOutput = 0;

/**
 * One item with the counts (read with the first item's window), and the Idempotent Webhook's
 * deliveries per answer (`answersInWindow`, named as its x-idempotency-outcome header).
 */
export async function execute(context: IExecuteFunctions, openStore: StoreOpener): Promise<INodeExecutionData[][]> {
	const store = await openStore();
	const windowHours = context.getNodeParameter('windowHours', 0, 24) as number;
	const stats = await store.stats(windowHours);
	const answersInWindow = await store.answerCounts(windowHours);
	const byHour = (context.getNodeParameter('answersPerHour', 0, false) as boolean)
		? await store.answerCountsByHour(windowHours)
		: undefined;
	const answersPerHour = byHour?.map(({ hour, counts }) => ({ hour: hour.toISOString(), ...counts }));
	const pairedItem = context.getInputData().map((_item, itemIndex) => ({ item: itemIndex }));
	return [[{ json: { ...stats, answersInWindow, ...(answersPerHour && { answersPerHour }) }, pairedItem }]];
}
