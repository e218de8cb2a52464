import {
	NodeConnectionTypes,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
} from 'n8n-workflow';

import { bindEffectQuery, OneTransactionEffect, parseEffectQuery } from '../../lib/effect/oneTransaction';
import { payloadMismatchError } from '../../lib/errors';
import { CONNECTION_TEST, testConnection } from '../shared/credential';
import { itemRouting, outputsWithNotProcessed } from '../shared/notProcessed';
import { credentialPool, tableOptions } from '../shared/store';
import { idempotencyOutput } from '../../lib/pipeline/idempotencyOutput';
import { deriveItemKey } from '../shared/keyInput';
import { readBatchParameters } from '../shared/reservationParameters';
import { executionIdentity, prepareItems, routeResults } from '../shared/reservationPipeline';
import { KEY_SOURCE_SUBTITLE } from '../shared/reservationDescription';
import { executeQueryProperties } from './description';
import { readQueryParameters } from './parameters';

const NEW = 0;
const DUPLICATE = 1;

export class IdempotencyExecuteQuery implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Idempotency Execute Query',
		name: 'idempotencyExecuteQuery',
		icon: { light: 'file:idempotencyExecuteQuery.svg', dark: 'file:idempotencyExecuteQuery.dark.svg' },
		group: ['transform'],
		version: 1,
		subtitle: `=Key: ${KEY_SOURCE_SUBTITLE}`,
		description: 'Reserve an idempotency key and run your SQL in one Postgres transaction: both happen once, or neither',
		defaults: { name: 'Idempotency Execute Query' },
		usableAsTool: true,
		inputs: [NodeConnectionTypes.Main],
		outputs: outputsWithNotProcessed(['New', 'Duplicate'], 'Not Run'),
		credentials: [{ name: 'idempotencyPostgresApi', required: true, testedBy: 'idempotencyPostgresConnectionTest' }],
		properties: executeQueryProperties,
	};

	methods = { credentialTest: { [CONNECTION_TEST]: testConnection } };

	// Items whose key and query were not committed leave through Not Run under Continue, never
	// through New (see nodes/shared/notProcessed.ts). One transaction per item: a failing query rolls
	// back its own key only. Under Stop Workflow the run stops at that item; the items before it are
	// committed (their retries are Duplicate), the ones after it were never touched (their retries are New).
	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const items = this.getInputData();
		const routing = itemRouting(this, 2);
		const { outputs } = routing;
		return await routing.run(items.length, async () => {
			// Options such as Scope may be expressions, so each item's settings are its own; the
			// table (one credential, one table per run) is the same for every item, as in Reserve.
			const { statement, items: settingsPerItem } = readBatchParameters(this, items.length);
			const query = parseEffectQuery(this.getNodeParameter('query', 0) as string);
			const effect = new OneTransactionEffect(await credentialPool(this), tableOptions(statement.table));
			// Each item runs its own transaction as it is prepared: under Stop Workflow the run stops at
			// the first refused item, and the items after it are never touched.
			const committed = await prepareItems(routing, items.length, async (itemIndex) => {
				const settings = settingsPerItem[itemIndex];
				if ('error' in settings) throw settings.error;
				// The query's effect is real even in an editor run, so its key is the real one too: a test
				// scope would let the production delivery run the effect a second time.
				const parameters = { ...settings, key: { ...settings.key, manualTest: false } };
				const { derived, payloadHash } = await deriveItemKey(this, items[itemIndex], itemIndex, parameters);
				const result = await effect.run(
					{ key: derived.key, keySource: derived.keySource, payloadHash },
					bindEffectQuery(query, readQueryParameters(this, itemIndex), derived.key),
					{ retentionSeconds: parameters.retentionSeconds, ...executionIdentity(this) },
				);
				if (result.outcome === 'duplicate' && result.reservation.payloadMismatch && parameters.payloadFingerprint === 'error') {
					throw payloadMismatchError(result.reservation.key);
				}
				return { derived, parameters, result };
			});
			routeResults(outputs, items, committed, ({ itemIndex, value: { derived, parameters, result } }) => {
				const idempotency = idempotencyOutput(result.reservation, derived, {
					mode: 'permanent',
					detail: parameters.output,
					fingerprinting: parameters.payloadFingerprint !== 'off',
				});
				const json = items[itemIndex].json;
				return result.outcome === 'new'
					? {
							output: NEW,
							itemIndex,
							json: { ...json, idempotency, sqlResult: { command: result.command, rowCount: result.rowCount, rows: result.rows } },
						}
					: { output: DUPLICATE, itemIndex, json: { ...json, idempotency } };
			});
		});
	}
}
