import {
	NodeConnectionTypes,
	type INode,
	type INodeParameters,
	type IRun,
	type IWorkflowBase,
	type WorkflowExecuteMode,
} from 'n8n-workflow';

import { RETRY_WARNING } from '../../nodes/shared/executionCustomData';
import { connectionSettings, postgresSchemaFixture } from '../support/database';
import { webhookItem } from '../support/fakeExecuteFunctions';
import {
	CREDENTIAL_DOWN,
	CREDENTIAL_UP,
	engineWithUpAndDownCredentials,
	itemsAt,
	packageNode,
	runWorkflowExecution,
	type EngineBase,
	type OnErrorSetting,
} from '../support/n8nEngine';

/*
 * Through n8n-core's own engine: every Reserve run writes its outcome into the
 * execution's custom data (resultData.metadata, what n8n stores and the executions list filters
 * on), with keys n8n accepts (letters, digits, underscores) even in a manual run, where n8n throws
 * for a refused key.
 */

const db = postgresSchemaFixture('customdata');

let base: EngineBase;

beforeAll(() => {
	base = engineWithUpAndDownCredentials(connectionSettings());
});

interface Setup {
	parameters?: INodeParameters;
	onError?: OnErrorSetting;
	credentialId?: string;
}

/** Webhook → Reserve (custom key from body.id, lease mode) → one step per output. */
function workflow({ parameters = {}, onError = 'continueRegularOutput', credentialId = CREDENTIAL_UP }: Setup = {}): IWorkflowBase {
	const node = packageNode;
	const reserve: INode = {
		...node('Idempotency Reserve', 'idempotencyReserve', {
			keySource: 'custom',
			customKey: "={{ 'evt:' + $json.body.id }}",
			mode: 'lease',
			leaseSeconds: 120,
			...parameters,
			options: { schemaName: db.schema, tableName: 'custom_data_events', createTable: true, ...(parameters.options as object) },
		}),
		credentials: { idempotencyPostgresApi: { id: credentialId, name: 'Idempotency Postgres' } },
		onError,
	};
	const steps = ['New', 'Duplicate', 'In Progress', 'Not Reserved'];
	return {
		id: 'wf-custom-data',
		name: 'Custom data of Reserve',
		active: false,
		activeVersionId: null,
		isArchived: false,
		createdAt: new Date(),
		updatedAt: new Date(),
		nodes: [node('Webhook', 'testWebhook'), reserve, ...steps.map((name) => node(name, 'testStep'))],
		connections: {
			Webhook: { main: [[{ node: 'Idempotency Reserve', type: NodeConnectionTypes.Main, index: 0 }]] },
			'Idempotency Reserve': { main: steps.map((name) => [{ node: name, type: NodeConnectionTypes.Main, index: 0 }]) },
		},
		settings: { executionOrder: 'v1' },
	};
}

async function run(executionId: string, ids: string[], setup: Setup = {}, mode: WorkflowExecuteMode = 'webhook'): Promise<IRun> {
	return await runWorkflowExecution(
		workflow(setup),
		executionId,
		ids.map((id) => webhookItem({ id })),
		base,
		mode,
	);
}

const customData = (result: IRun) => result.data.resultData.metadata;

describe('Idempotency Reserve records its outcome in the execution custom data', () => {
	it('a new event, then its redelivery: new, then duplicate, with the key and attempt', async () => {
		const first = await run('cd-new', ['a1']);
		expect(itemsAt(first, 'New')).toHaveLength(1);
		expect(customData(first)).toEqual({
			idempotency_outcome: 'new',
			idempotency_counts: 'new=1',
			idempotency_key: 'evt:a1',
			idempotency_attempt: '1',
			// n8n's Retry would run the step outside the key: the execution says not to use it.
			idempotency_retry: RETRY_WARNING,
		});

		const again = await run('cd-again', ['a1']);
		expect(itemsAt(again, 'In Progress')).toHaveLength(1);
		expect(customData(again)).toMatchObject({ idempotency_outcome: 'in_progress', idempotency_key: 'evt:a1' });
		// A run that reserved nothing ran no step under a key.
		expect(customData(again)).not.toHaveProperty('idempotency_retry');
	});

	it('a completed event redelivered: duplicate', async () => {
		await run('cd-perm-1', ['p1'], { parameters: { mode: 'permanent' } });
		const again = await run('cd-perm-2', ['p1'], { parameters: { mode: 'permanent' } });
		expect(itemsAt(again, 'Duplicate')).toHaveLength(1);
		expect(customData(again)).toMatchObject({
			idempotency_outcome: 'duplicate',
			idempotency_counts: 'duplicate=1',
			idempotency_key: 'evt:p1',
		});
	});

	it('a batch with a repeat: mixed, with counts per outcome and the first key', async () => {
		const result = await run('cd-batch', ['b1', 'b2', 'b1'], { parameters: { mode: 'permanent' } });
		expect(customData(result)).toMatchObject({
			idempotency_outcome: 'mixed',
			idempotency_counts: 'new=2 duplicate=1',
			idempotency_key: 'evt:b1',
		});
	});

	it('in a manual (editor) run, where n8n throws for a refused key name, the run succeeds and records', async () => {
		const result = await run('cd-manual', ['m1'], {}, 'manual');
		expect(result.data.resultData.error).toBeUndefined();
		expect(customData(result)).toMatchObject({ idempotency_outcome: 'new', idempotency_key: 'n8n-manual-test:evt:m1' });
	});

	it('Postgres unreachable, Continue: not_reserved', async () => {
		const result = await run('cd-down-continue', ['d1', 'd2'], { credentialId: CREDENTIAL_DOWN });
		expect(itemsAt(result, 'Not Reserved')).toHaveLength(2);
		expect(customData(result)).toEqual({ idempotency_outcome: 'not_reserved', idempotency_counts: 'not_reserved=2' });
	});

	it('Postgres unreachable, Stop Workflow: the execution fails and still says not_reserved', async () => {
		const result = await run('cd-down-stop', ['d3'], { credentialId: CREDENTIAL_DOWN, onError: 'stopWorkflow' });
		expect(result.data.resultData.error).toBeDefined();
		expect(customData(result)).toEqual({ idempotency_outcome: 'not_reserved', idempotency_counts: 'not_reserved=1' });
	});

	it('Postgres unreachable with Let Through: unverified', async () => {
		const result = await run('cd-unverified', ['u1'], {
			credentialId: CREDENTIAL_DOWN,
			parameters: { options: { onStoreUnavailable: 'letThrough' } },
		});
		expect(itemsAt(result, 'New')).toHaveLength(1);
		expect(customData(result)).toMatchObject({ idempotency_outcome: 'unverified', idempotency_key: 'evt:u1' });
	});

	it('with Correlation ID on, the correlation id too (here from x-request-id), so a delivery can be found by its trace id', async () => {
		const setup = { parameters: { options: { correlationId: 'header', correlationHeader: 'x-request-id' } } };
		const result = await runWorkflowExecution(
			workflow(setup),
			'cd-correlation',
			[webhookItem({ id: 'c1' }, { 'x-request-id': 'req-trace-1' })],
			base,
		);
		expect(customData(result)).toEqual({
			idempotency_outcome: 'new',
			idempotency_counts: 'new=1',
			idempotency_key: 'evt:c1',
			idempotency_attempt: '1',
			idempotency_correlation_id: 'req-trace-1',
			idempotency_retry: RETRY_WARNING,
		});
	});

	it('a long key is cut to 255 characters (n8n logs an error above that)', async () => {
		const id = 'x'.repeat(400);
		const result = await run('cd-long', [id]);
		expect(customData(result)?.idempotency_key).toBe(`evt:${id}`.slice(0, 255));
	});
});

describe('Reserve evidence options that differ per item (expressions), through the engine', () => {
	const perItemCap = { options: { storePayload: true, maxPayloadKb: "={{ $json.body.id === 'x2' ? 0 : 64 }}" } };

	it('Continue: the item with a bad Max Payload Size leaves through Not Reserved naming the option; the other is reserved', async () => {
		const result = await run('cd-per-item-continue', ['x1', 'x2'], { parameters: perItemCap });
		expect(itemsAt(result, 'New').map((item) => (item.json.idempotency as { key: string }).key)).toEqual(['evt:x1']);
		const notReserved = itemsAt(result, 'Not Reserved');
		expect(notReserved).toHaveLength(1);
		expect(notReserved[0].json.error).toMatch(/Max Payload Size \(KB\) must be a whole number from 1 to 1024; it is 0\./);
		// Reserve's own Not Reserved output (lease mode: New, Duplicate, In Progress, Not Reserved) pairs it with input item 1.
		const reserveOutputs = result.data.resultData.runData['Idempotency Reserve'][0].data?.main ?? [];
		expect(reserveOutputs[3]?.map((item) => item.pairedItem)).toEqual([{ item: 1 }]);
	});

	it('Stop Workflow: the execution fails with a NodeOperationError for item 1, before anything is reserved', async () => {
		const result = await run('cd-per-item-stop', ['y1', 'x2'], { parameters: perItemCap, onError: 'stopWorkflow' });
		expect(result.data.resultData.error).toMatchObject({
			name: 'NodeOperationError',
			message: expect.stringMatching(/Max Payload Size \(KB\) must be a whole number/),
			context: { itemIndex: 1 },
		});
		expect((await db.pool.query(`select key from ${db.schema}.custom_data_events where key = 'evt:y1'`)).rows).toEqual([]);
	});
});
