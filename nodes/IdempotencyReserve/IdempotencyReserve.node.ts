import {
	NodeConnectionTypes,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
} from 'n8n-workflow';

import { PayloadMismatchError } from '../../lib/errors';
import { deriveKey, payloadFingerprint, validateKeyConfig, type DerivedKey } from '../../lib/keys/deriveKey';
import type { ReservationRequest } from '../../lib/types';
import { CONNECTION_TEST, testConnection } from '../shared/credential';
import { toNodeError } from '../shared/nodeError';
import { storeFor } from '../shared/store';
import { reserveProperties } from './description';
import { idempotencyOutput } from './idempotencyOutput';
import { readKeyInput } from './keyInput';
import { readReserveParameters } from './parameters';

const NEW = 0;
const DUPLICATE = 1;
const IN_PROGRESS = 2;

// Lease mode adds the In Progress output; computed from the parameters like n8n's Switch node.
const OUTPUTS_BY_MODE: `={{${string}}}` = `={{ $parameter.mode === "lease" ? [{ "type": "main", "displayName": "New" }, { "type": "main", "displayName": "Duplicate" }, { "type": "main", "displayName": "In Progress" }] : [{ "type": "main", "displayName": "New" }, { "type": "main", "displayName": "Duplicate" }] }}`;

export class IdempotencyReserve implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Idempotency Reserve',
		name: 'idempotencyReserve',
		icon: { light: 'file:idempotencyReserve.svg', dark: 'file:idempotencyReserve.dark.svg' },
		group: ['transform'],
		version: 1,
		subtitle: '={{ $parameter.mode === "lease" ? "lease" : "permanent" }}: {{ $parameter.keySource }}',
		description: 'Reserve an idempotency key atomically in Postgres and route new and duplicate deliveries apart',
		defaults: { name: 'Idempotency Reserve' },
		usableAsTool: true,
		inputs: [NodeConnectionTypes.Main],
		outputs: OUTPUTS_BY_MODE,
		credentials: [{ name: 'idempotencyPostgresApi', required: true, testedBy: 'idempotencyPostgresConnectionTest' }],
		properties: reserveProperties,
	};

	methods = { credentialTest: { [CONNECTION_TEST]: testConnection } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const items = this.getInputData();
		const parameters = readReserveParameters(this);
		try {
			validateKeyConfig(parameters.key);
		} catch (error) {
			throw toNodeError(this.getNode(), error);
		}
		const outputs: INodeExecutionData[][] = parameters.mode === 'lease' ? [[], [], []] : [[], []];
		const errorItem = (error: unknown, itemIndex: number): INodeExecutionData => ({
			json: { error: toNodeError(this.getNode(), error, itemIndex).message },
			pairedItem: { item: itemIndex },
		});

		const pending: Array<{ itemIndex: number; derived: DerivedKey; request: ReservationRequest }> = [];
		for (let itemIndex = 0; itemIndex < items.length; itemIndex++) {
			try {
				const input = await readKeyInput(this, items[itemIndex], itemIndex, parameters);
				const derived = deriveKey(input, parameters.key);
				const payloadHash = parameters.payloadFingerprint === 'off' ? null : payloadFingerprint(input);
				pending.push({ itemIndex, derived, request: { key: derived.key, keySource: derived.keySource, payloadHash } });
			} catch (error) {
				if (!this.continueOnFail()) throw toNodeError(this.getNode(), error, itemIndex);
				outputs[NEW].push(errorItem(error, itemIndex));
			}
		}

		let results;
		try {
			const store = await storeFor(this, parameters.table);
			results = await store.reserve(
				pending.map((entry) => entry.request),
				{
					mode: parameters.mode,
					leaseSeconds: parameters.leaseSeconds,
					retentionSeconds: parameters.retentionSeconds,
					executionId: this.getExecutionId(),
					workflowId: String(this.getWorkflow().id ?? ''),
				},
			);
		} catch (error) {
			// Nothing was reserved: every item fails, so no event is routed as handled.
			if (!this.continueOnFail()) throw toNodeError(this.getNode(), error);
			outputs[NEW].push(...pending.map((entry) => errorItem(error, entry.itemIndex)));
			return outputs;
		}

		for (const [position, result] of results.entries()) {
			const { itemIndex, derived } = pending[position];
			if (result.payloadMismatch && parameters.payloadFingerprint === 'error' && result.outcome !== 'new') {
				const error = new PayloadMismatchError(
					`The key ${JSON.stringify(result.key.slice(0, 80))} was seen before with a different payload.`,
				);
				if (!this.continueOnFail()) throw toNodeError(this.getNode(), error, itemIndex);
				outputs[NEW].push(errorItem(error, itemIndex));
				continue;
			}
			const item = items[itemIndex];
			const output =
				result.outcome === 'new' ? NEW : result.outcome === 'in_progress' && parameters.mode === 'lease' ? IN_PROGRESS : DUPLICATE;
			outputs[output].push({
				json: { ...item.json, idempotency: idempotencyOutput(result, derived, parameters.mode) },
				binary: item.binary,
				pairedItem: { item: itemIndex },
			});
		}
		return outputs;
	}
}
