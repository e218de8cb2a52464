import {
	NodeConnectionTypes,
	NodeOperationError,
	type IDataObject,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
} from 'n8n-workflow';

import type { KeyStore, SettleReport, SettleRequest } from '../../lib/store/contract';
import type { FailedExecution } from '../../lib/types';
import { CONNECTION_TEST, testConnection } from '../shared/credential';
import { STORE_NODE_DEFAULT_VERSION, STORE_NODE_VERSIONS } from '../shared/storeChoice';
import { toNodeError } from '../shared/nodeError';
import { itemRouting } from '../shared/notProcessed';
import { storeFor, type TableChoice } from '../shared/store';
import { keyProperties } from './description';
import { getKeys, keyStats, listKeys } from './keyRecords';
import { claimForReplay } from './replayClaim';
import { settleAfterStep } from './settleAfterStep';
import { findReserveNode, readFailedExecution, readOwnedKey, readResponse, type KeyFrom } from './ownedKeys';

type Operation = 'settle' | 'complete' | 'release' | 'fail' | 'cleanup' | 'getKey' | 'listKeys' | 'stats' | 'claimForReplay';

const DONE = 0;
const STALE = 1;

// Cleanup has one output (its summary); the others tell settled items from stale ones.
const OUTPUTS_BY_OPERATION: `={{${string}}}` = `={{ $parameter.operation === "cleanup" ? [{ "type": "main", "displayName": "Summary" }] : $parameter.operation === "stats" ? [{ "type": "main", "displayName": "Stats" }] : ["getKey", "listKeys"].includes($parameter.operation) ? [{ "type": "main", "displayName": "Keys" }] : $parameter.operation === "claimForReplay" ? [{ "type": "main", "displayName": "Claimed" }, { "type": "main", "displayName": "Not Claimable" }] : $parameter.operation === "settle" ? [{ "type": "main", "displayName": "Completed" }, { "type": "main", "displayName": "Failed" }, { "type": "main", "displayName": "Completion Refused" }, { "type": "main", "displayName": "Not Settled" }] : [{ "type": "main", "displayName": "Done" }, { "type": "main", "displayName": "Stale" }] }}`;
// Get Key, List Keys and Get Stats only read, with one output (see keyRecords.ts).
const READ_OPERATIONS: Operation[] = ['getKey', 'listKeys', 'stats'];

export class IdempotencyKey implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Idempotency Key',
		name: 'idempotencyKey',
		icon: { light: 'file:idempotencyKey.svg', dark: 'file:idempotencyKey.dark.svg' },
		group: ['transform'],
		// 1.1: Store defaults to Embedded; version 1 (workflows saved before the Store parameter) keeps Postgres.
		version: STORE_NODE_VERSIONS,
		defaultVersion: STORE_NODE_DEFAULT_VERSION,
		// The operation's label, as the Operation list shows it (never its internal value).
		subtitle:
			'={{ {"settle": "Settle After Business Step", "complete": "Complete", "release": $parameter.source === "execution" ? "Release (failed execution)" : "Release", "fail": $parameter.source === "execution" ? "Mark Failed (failed execution)" : "Mark Failed", "cleanup": "Delete Expired Keys", "getKey": "Get Key", "listKeys": "List Keys", "stats": "Get Stats", "claimForReplay": "Claim for Replay"}[$parameter.operation] || $parameter.operation }}',
		description: 'Complete, release on error, mark failed, clean up, read, count or claim for replay idempotency keys reserved by Idempotency Reserve',
		defaults: { name: 'Idempotency Key' },
		usableAsTool: true,
		inputs: [NodeConnectionTypes.Main],
		outputs: OUTPUTS_BY_OPERATION,
		// Only the Postgres store needs the credential: shown and required only when Store is Postgres.
		credentials: [
			{
				name: 'idempotencyPostgresApi',
				required: true,
				testedBy: 'idempotencyPostgresConnectionTest',
				displayOptions: { show: { store: ['postgres'] } },
			},
		],
		properties: keyProperties,
	};

	methods = { credentialTest: { [CONNECTION_TEST]: testConnection } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const operation = this.getNodeParameter('operation', 0) as Operation;
		const table = this.getNodeParameter('options', 0, {}) as TableChoice;
		// Settle opens the store itself: an unreachable store is one of its outcomes, never a throw.
		if (operation === 'settle') return await settleAfterStep(this, async () => await storeFor(this, table));
		try {
			const store = await storeFor(this, table);
			if (operation === 'cleanup') return [[await cleanup(this, store)]];
			if (operation === 'getKey') return await getKeys(this, store);
			if (operation === 'listKeys') return await listKeys(this, store);
			if (operation === 'stats') return await keyStats(this, store);
			if (operation === 'claimForReplay') return await claimForReplay(this, store);
			const source = this.getNodeParameter('source', 0) as KeyFrom;
			if (source === 'execution') {
				if (operation !== 'release' && operation !== 'fail') {
					throw new NodeOperationError(this.getNode(), '"Failed Execution" works with the Release and Mark Failed operations only.');
				}
				return await settleExecutions(this, store, operation);
			}
			return await settle(this, store, operation, source);
		} catch (error) {
			if (!this.continueOnFail()) throw toNodeError(this.getNode(), error);
			const items = this.getInputData();
			const failed = items.map((_item, itemIndex) => ({
				json: { error: toNodeError(this.getNode(), error, itemIndex).message },
				pairedItem: { item: itemIndex },
			}));
			if (operation === 'cleanup' || READ_OPERATIONS.includes(operation)) return [failed];
			// Nothing was claimed: never on Claimed, which leads to the business step. A settle that failed
			// as a whole stays on output 0: n8n's Retry On Fail looks only at output 0's first item.
			return operation === 'claimForReplay' ? [[], failed] : [failed, []];
		}
	}
}

async function cleanup(context: IExecuteFunctions, store: KeyStore): Promise<INodeExecutionData> {
	const result = await store.cleanup({
		retentionSeconds: Math.round((context.getNodeParameter('retentionDays', 0) as number) * 86_400),
		batchSize: context.getNodeParameter('batchSize', 0) as number,
		timeBudgetSeconds: context.getNodeParameter('timeBudgetSeconds', 0) as number,
	});
	const pairedItem = context.getInputData().map((_item, itemIndex) => ({ item: itemIndex }));
	return { json: { ...result }, pairedItem };
}

/** Key From = Failed Execution: every live reservation of each item's execution, released or marked failed. */
async function settleExecutions(context: IExecuteFunctions, store: KeyStore, operation: 'release' | 'fail'): Promise<INodeExecutionData[][]> {
	const items = context.getInputData();
	// An item without a usable execution leaves through the last output (Stale), as in settle.
	const { outputs, failItem } = itemRouting(context, 1);
	for (let itemIndex = 0; itemIndex < items.length; itemIndex++) {
		let execution: FailedExecution;
		try {
			execution = readFailedExecution(context, itemIndex);
		} catch (error) {
			failItem(error, itemIndex);
			continue;
		}
		const { executionId, workflowId } = execution;
		let idempotency: IDataObject;
		if (operation === 'release') {
			idempotency = { operation, executionId, workflowId, releasedKeys: await store.releaseExecution(execution) };
		} else {
			const error = String(context.getNodeParameter('errorMessage', itemIndex, '') ?? '');
			const failed = await store.failExecution(execution, error);
			idempotency = { operation, executionId, workflowId, failedKeys: failed.keys };
			if (failed.warnings.length > 0) idempotency.warnings = failed.warnings;
		}
		outputs[DONE].push({ json: { ...items[itemIndex].json, idempotency }, pairedItem: { item: itemIndex } });
	}
	return outputs;
}

/** Complete, Release and Mark Failed: one statement for every item, then each item to Done or Stale. */
async function settle(
	context: IExecuteFunctions,
	store: KeyStore,
	operation: Exclude<Operation, 'cleanup'>,
	source: Exclude<KeyFrom, 'execution'>,
): Promise<INodeExecutionData[][]> {
	const items = context.getInputData();
	// An item that cannot be read leaves through the last output (Stale) under Continue: never Done.
	const { outputs, failItem } = itemRouting(context, 1);
	const requests: Array<{ itemIndex: number; owned: SettleRequest; reservation?: IDataObject; response?: unknown; error?: string }> = [];
	// Found once per run: every item settles a reservation of the same Reserve node.
	const reserveNodeName = source === 'reserveNode' ? findReserveNode(context) : undefined;
	for (let itemIndex = 0; itemIndex < items.length; itemIndex++) {
		try {
			const { owned, reservation } = readOwnedKey(context, items[itemIndex], itemIndex, source, reserveNodeName);
			requests.push({
				itemIndex,
				owned,
				reservation,
				response: operation === 'complete' ? readResponse(context, itemIndex) : undefined,
				error: operation === 'fail' ? String(context.getNodeParameter('errorMessage', itemIndex, '') ?? '') : undefined,
			});
		} catch (error) {
			failItem(error, itemIndex);
		}
	}

	let results: SettleReport[];
	if (operation === 'complete') {
		results = await store.complete(requests.map((request) => ({ ...request.owned, response: request.response })));
	} else if (operation === 'fail') {
		results = await store.fail(requests.map((request) => ({ ...request.owned, error: request.error ?? '' })));
	} else {
		results = await store.release(requests.map((request) => request.owned));
	}

	for (const [position, result] of results.entries()) {
		const { itemIndex, reservation } = requests[position];
		const item = items[itemIndex];
		// With Key From: Idempotency Reserve, the item gets the reservation back, so a later node can read $json.idempotency.
		const previous = reservation ?? (item.json.idempotency as IDataObject | undefined) ?? {};
		const idempotency: IDataObject = {
			...previous,
			key: result.key,
			operation,
			applied: result.applied,
			staleReason: result.applied ? null : result.reason,
		};
		// What had to be repaired or dropped so that the key could be settled (the key always is).
		if (result.warnings) idempotency.warnings = result.warnings;
		outputs[result.applied ? DONE : STALE].push({
			json: { ...item.json, idempotency },
			binary: item.binary,
			pairedItem: { item: itemIndex },
		});
	}
	return outputs;
}
