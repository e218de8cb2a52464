import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

import {
	NodeConnectionTypes,
	NodeOperationError,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeType,
	type IVersionedNodeType,
} from 'n8n-workflow';

import { DEFAULT_N8N_VERSION, n8nRequired } from './stack/n8nVersion';

/*
 * n8n-nodes-base's own If, Merge, Wait, Loop Over Items (SplitInBatches), No Op and Execute Workflow
 * nodes, loaded from the n8n install the end-to-end suite uses (scripts/ensure-n8n.sh), for
 * workflows run by n8n-core's engine in-process. They resolve their own copy of n8n-workflow; the
 * routing they do (outputs, paired items, the wait, the loop's node context) is plain data that
 * crosses the two copies unchanged. The Code node runs JavaScript in n8n's task runner, which is not
 * here: the business steps are the stand-ins below.
 */

const NODE24_VERSION = process.env.NODE24_VERSION ?? '24.22.3';

/** The n8n line whose n8n-nodes-base these tests load. */
const BASE_NODES_LINE = process.env.N8N_VERSION || DEFAULT_N8N_VERSION;

export function n8nInstallDirectory(version = BASE_NODES_LINE): string {
	const cache = process.env.N8N_IDEMPOTENCY_CACHE ?? join(homedir(), '.cache', 'n8n-nodes-idempotency');
	return join(cache, `n8n-${version}-node-${NODE24_VERSION}`);
}

/** Whether the n8n install is there; the suites that need it say how to get it when it is not. */
export function baseNodesInstalled(): boolean {
	return existsSync(join(n8nInstallDirectory(), '.complete'));
}

/** The tests on n8n-nodes-base's own nodes: they run where the line is installed, and fail without it where it is required. */
export const describeWithN8n = baseNodesInstalled() || n8nRequired(BASE_NODES_LINE) ? describe : describe.skip;

const BASE_NODES: Record<string, string> = {
	'n8n-nodes-base.if': 'If/If.node.js',
	'n8n-nodes-base.merge': 'Merge/Merge.node.js',
	'n8n-nodes-base.wait': 'Wait/Wait.node.js',
	'n8n-nodes-base.splitInBatches': 'SplitInBatches/SplitInBatches.node.js',
	'n8n-nodes-base.noOp': 'NoOp/NoOp.node.js',
	'n8n-nodes-base.executeWorkflow': 'ExecuteWorkflow/ExecuteWorkflow/ExecuteWorkflow.node.js',
};

export function loadBaseNodes(): Record<string, INodeType | IVersionedNodeType> {
	return loadBaseNodeFiles(BASE_NODES);
}

/** n8n-nodes-base node types by type name, from their files under n8n-nodes-base/dist/nodes/. */
export function loadBaseNodeFiles(files: Record<string, string>): Record<string, INodeType | IVersionedNodeType> {
	const directory = join(n8nInstallDirectory(), 'node_modules', 'n8n-nodes-base', 'dist', 'nodes');
	// Node's own require, not jest's: n8n-nodes-base's dependencies include ES modules, which Node 24 requires natively.
	// (jest replaces `require` and node:module in a test; process.getBuiltinModule gives Node's own.)
	const { createRequire } = (process as unknown as { getBuiltinModule(id: string): typeof import('node:module') }).getBuiltinModule(
		'node:module',
	);
	const nativeRequire = createRequire(join(directory, 'package.json'));
	const types: Record<string, INodeType | IVersionedNodeType> = {};
	for (const [type, file] of Object.entries(files)) {
		const module = nativeRequire(join(directory, file)) as Record<string, new () => INodeType | IVersionedNodeType>;
		// A node file may export shared properties beside its class (Form exports its fields): take the class.
		const NodeClass = Object.values(module).find((value) => typeof value === 'function') as new () => INodeType | IVersionedNodeType;
		types[type] = new NodeClass();
	}
	return types;
}

/** Every business effect that happened, in order: the event id of each. */
export const effects: string[] = [];

/** Attempts per event id, for a step that fails a number of times before it succeeds. */
const attempts = new Map<string, number>();

function eventIdOf(item: INodeExecutionData): string {
	const json = item.json as { body?: { id?: unknown }; id?: unknown };
	return String(json.body?.id ?? json.id ?? '');
}

/**
 * A business step with an effect (a charge, a write), item by item as a stock node works: it fails
 * for the events named in "Fail For" (or for the first "Fail Times" attempts of each event), records
 * the effect of every other item, and under Continue returns a Code node's error item for the failed
 * one; under Stop Workflow it throws, after the effects of the items before it.
 */
export class TestEffect implements INodeType {
	description: INodeType['description'] = {
		displayName: 'Test Effect',
		name: 'testEffect',
		group: ['transform'],
		version: 1,
		description: 'A business effect per item',
		defaults: { name: 'Effect' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		properties: [
			{ displayName: 'Fail For', name: 'failFor', type: 'string', default: '' },
			{ displayName: 'Fail Times', name: 'failTimes', type: 'number', default: 0 },
			{ displayName: 'Output Nothing', name: 'outputNothing', type: 'boolean', default: false },
		],
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const failFor = new Set(
			String(this.getNodeParameter('failFor', 0, ''))
				.split(',')
				.filter(Boolean),
		);
		const failTimes = this.getNodeParameter('failTimes', 0, 0) as number;
		const outputNothing = this.getNodeParameter('outputNothing', 0, false) as boolean;
		const output: INodeExecutionData[] = [];
		for (const [index, item] of this.getInputData().entries()) {
			const id = eventIdOf(item);
			const attempt = (attempts.get(`${this.getNode().name}:${id}`) ?? 0) + 1;
			attempts.set(`${this.getNode().name}:${id}`, attempt);
			if (failFor.has(id) || attempt <= failTimes) {
				const error = new NodeOperationError(this.getNode(), `effect refused for ${id}`, { itemIndex: index });
				if (!this.continueOnFail()) throw error;
				output.push({ json: { error: error.message }, pairedItem: { item: index } });
				continue;
			}
			effects.push(id);
			output.push({ json: { ...item.json, effectDone: id }, pairedItem: { item: index } });
		}
		return [outputNothing ? [] : output];
	}
}

const onceAttempts = new Map<string, number>();

/** A business effect per item that fails the first attempt of the events named in "Fail Once"; with "No Effect", a check (a lookup, a validation). */
export class TestEffectOnce implements INodeType {
	description: INodeType['description'] = {
		displayName: 'Test Effect Once',
		name: 'testEffectOnce',
		group: ['transform'],
		version: 1,
		description: 'A business effect per item, failing once for named events',
		defaults: { name: 'Effect' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		properties: [
			{ displayName: 'Fail Once', name: 'failOnce', type: 'string', default: '' },
			{ displayName: 'No Effect', name: 'noEffect', type: 'boolean', default: false },
		],
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const failOnce = new Set(
			String(this.getNodeParameter('failOnce', 0, ''))
				.split(',')
				.filter(Boolean),
		);
		const noEffect = this.getNodeParameter('noEffect', 0, false) as boolean;
		const output: INodeExecutionData[] = [];
		for (const [index, item] of this.getInputData().entries()) {
			const id = eventIdOf(item);
			const attempt = (onceAttempts.get(`${this.getNode().name}:${id}`) ?? 0) + 1;
			onceAttempts.set(`${this.getNode().name}:${id}`, attempt);
			if (failOnce.has(id) && attempt === 1) {
				const error = new NodeOperationError(this.getNode(), `effect refused for ${id}`, { itemIndex: index });
				if (!this.continueOnFail()) throw error;
				output.push({ json: { error: error.message }, pairedItem: { item: index } });
				continue;
			}
			if (!noEffect) effects.push(id);
			output.push({ json: { ...item.json, effectDone: id }, pairedItem: { item: index } });
		}
		return [output];
	}
}

export function effectsFor(id: string): number {
	return effects.filter((effect) => effect === id).length;
}

/** n8n's deduplication store (its database in n8n), in memory: what Remove Duplicates "across executions" records. */
export const seenByRemoveDuplicates = new Set<string>();

/** Gives n8n-core's Remove Duplicates the in-memory store above (n8n gives it one backed by its database). */
export async function useInMemoryDeduplication(): Promise<void> {
	const store = {
		async checkProcessedAndRecord(items: unknown[]) {
			const fresh = items.filter((item) => !seenByRemoveDuplicates.has(String(item)));
			const processed = items.filter((item) => seenByRemoveDuplicates.has(String(item)));
			for (const item of items) seenByRemoveDuplicates.add(String(item));
			return { new: fresh, processed };
		},
		async removeProcessed() {},
		async clearAllProcessedItems() {},
		async getProcessedDataCount() {
			return seenByRemoveDuplicates.size;
		},
	};
	// Loaded here: n8n-core is n8n's, found only where n8n is installed.
	const { DataDeduplicationService } = await import('n8n-core');
	await DataDeduplicationService.init(store as never);
}
