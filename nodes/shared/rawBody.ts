import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';

/** Where the Webhook node's "Raw Body" option puts the request bytes; shared by the nodes that read them. */
export const rawBodyPropertyOption: INodeProperties = {
	displayName: 'Raw Body Binary Field',
	name: 'rawBodyProperty',
	type: 'string',
	default: 'data',
	description: 'Binary field that holds the exact request body; the Webhook node puts it in "data" when its "Raw Body" option is on',
};

/** The exact request bytes, from memory or from n8n's binary data store; undefined when the item has none. */
export async function readRawBody(
	context: IExecuteFunctions,
	item: INodeExecutionData,
	itemIndex: number,
	property: string,
): Promise<Buffer | undefined> {
	if (item.binary?.[property] === undefined) return undefined;
	return await context.helpers.getBinaryDataBuffer(itemIndex, property);
}
