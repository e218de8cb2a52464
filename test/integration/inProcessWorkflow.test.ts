import { ExecutionLifecycleHooks, ExternalSecretsProxy, WorkflowExecute } from 'n8n-core';
import {
	createRunExecutionData,
	NodeConnectionTypes,
	NodeHelpers,
	Workflow,
	type ICredentialDataDecryptedObject,
	type ICredentialsHelper,
	type INode,
	type INodeCredentialsDetails,
	type INodeExecutionData,
	type INodeParameters,
	type INodeType,
	type INodeTypes,
	type IRun,
	type IWorkflowBase,
	type IWorkflowExecuteAdditionalData,
} from 'n8n-workflow';
import type { Pool } from 'pg';

import { IdempotencyPostgresApi } from '../../credentials/IdempotencyPostgresApi.credentials';
import { closeAllPools } from '../../lib/postgres/pool';
import { IdempotencyKey } from '../../nodes/IdempotencyKey/IdempotencyKey.node';
import { IdempotencyReserve } from '../../nodes/IdempotencyReserve/IdempotencyReserve.node';
import { adminPool, connectionSettings, freshSchema } from '../support/database';
import { webhookItem } from '../support/fakeExecuteFunctions';

/*
 * The package's nodes run by n8n's own engine (n8n-core's WorkflowExecute), in-process: real
 * parameter and expression resolution, real credential lookup through ICredentialsHelper, real
 * output routing over the workflow's connections. What the fake IExecuteFunctions cannot prove.
 */

const PACKAGE = 'n8n-nodes-idempotency';

/**
 * Stands in for n8n-nodes-base's Webhook node (not installed here). A node type with a `webhook`
 * method and no `execute` is one WorkflowExecute passes its input through, which is how n8n runs a
 * webhook execution: the request's items start on the execution stack at the webhook node.
 */
class TestWebhook implements INodeType {
	description: INodeType['description'] = {
		displayName: 'Test Webhook',
		name: 'testWebhook',
		group: ['trigger'],
		version: 1,
		description: 'Webhook stand-in for the in-process workflow test',
		defaults: { name: 'Webhook' },
		inputs: [],
		outputs: [NodeConnectionTypes.Main],
		webhooks: [{ name: 'default', httpMethod: 'POST', path: 'test', responseMode: 'onReceived' }],
		properties: [],
	};

	async webhook(): Promise<never> {
		throw new Error('Not called: the test puts the request items on the execution stack');
	}
}

const nodeTypeByName: Record<string, INodeType> = {
	[`${PACKAGE}.testWebhook`]: new TestWebhook(),
	[`${PACKAGE}.idempotencyReserve`]: new IdempotencyReserve(),
	[`${PACKAGE}.idempotencyKey`]: new IdempotencyKey(),
};

const nodeTypes: INodeTypes = {
	getByName: (type) => known(type),
	getByNameAndVersion: (type) => known(type),
	getKnownTypes: () => ({}),
};

function known(type: string): INodeType {
	const nodeType = nodeTypeByName[type];
	if (!nodeType) throw new Error(`Unknown node type ${type}`);
	return nodeType;
}

const CREDENTIAL_ID = 'cred-idempotency-pg';
const credentialType = new IdempotencyPostgresApi();

/**
 * n8n's credentials helper, reduced to what a node without HTTP needs: the stored credential by ID,
 * with the credential type's defaults applied the way n8n applies them (NodeHelpers.getNodeParameters).
 * The stored data has no ssl or maxConnections, as a credential saved with defaults may not.
 */
function credentialsHelper(stored: Record<string, ICredentialDataDecryptedObject>): ICredentialsHelper {
	const lookups: string[] = [];
	const helper = {
		lookups,
		getParentTypes: () => [],
		isCredentialUsableByNode: () => true,
		getCredentialsProperties: (type: string) => {
			if (type !== credentialType.name) throw new Error(`Unknown credential type ${type}`);
			return credentialType.properties;
		},
		async getDecrypted(_additionalData: unknown, details: INodeCredentialsDetails, type: string) {
			lookups.push(`${type}:${details.id}`);
			const data = details.id ? stored[details.id] : undefined;
			if (!data || type !== credentialType.name) throw new Error(`No credential ${details.id} of type ${type}`);
			return NodeHelpers.getNodeParameters(credentialType.properties, data as INodeParameters, true, false, null, null) as ICredentialDataDecryptedObject;
		},
		getCredentials: notAvailable('getCredentials'),
		authenticate: notAvailable('authenticate'),
		preAuthentication: notAvailable('preAuthentication'),
		runPreAuthentication: notAvailable('runPreAuthentication'),
		updateCredentials: notAvailable('updateCredentials'),
		updateCredentialsOauthTokenData: notAvailable('updateCredentialsOauthTokenData'),
	};
	return helper as unknown as ICredentialsHelper;
}

function notAvailable(name: string) {
	return async (): Promise<never> => {
		throw new Error(`${name} is not available in the in-process test`);
	};
}

let pool: Pool;
let schema: string;
let lookups: string[];
let additionalBase: Omit<IWorkflowExecuteAdditionalData, 'hooks' | 'executionId'>;

function templateWorkflow(): IWorkflowBase {
	const credentials = { idempotencyPostgresApi: { id: CREDENTIAL_ID, name: 'Idempotency Postgres' } };
	const nodes: INode[] = [
		{ id: 'n1', name: 'Webhook', type: `${PACKAGE}.testWebhook`, typeVersion: 1, position: [0, 0], parameters: {} },
		{
			id: 'n2',
			name: 'Idempotency Reserve',
			type: `${PACKAGE}.idempotencyReserve`,
			typeVersion: 1,
			position: [200, 0],
			credentials,
			parameters: {
				keySource: 'custom',
				customKey: "={{ 'order:' + $json.body.order.id }}",
				mode: 'lease',
				leaseSeconds: 120,
				options: { schemaName: schema, tableName: 'processed_events', createTable: true },
			},
		},
		{
			id: 'n3',
			name: 'Complete',
			type: `${PACKAGE}.idempotencyKey`,
			typeVersion: 1,
			position: [400, 0],
			credentials,
			parameters: {
				operation: 'complete',
				source: 'item',
				responseJson: '={{ JSON.stringify({ received: true, order: $json.body.order.id, by: $(\'Webhook\').item.json.headers["x-source"] }) }}',
				options: { schemaName: schema, tableName: 'processed_events' },
			},
		},
	];
	return {
		id: 'wf-in-process',
		name: 'Idempotent webhook (in-process)',
		active: false,
		activeVersionId: null,
		isArchived: false,
		createdAt: new Date(),
		updatedAt: new Date(),
		nodes,
		// New → Complete; Duplicate and In Progress lead nowhere.
		connections: {
			Webhook: { main: [[{ node: 'Idempotency Reserve', type: 'main', index: 0 }]] },
			'Idempotency Reserve': { main: [[{ node: 'Complete', type: 'main', index: 0 }], [], []] },
		},
		settings: { executionOrder: 'v1' },
	};
}

/** One webhook execution as n8n runs it: the request item starts at the Webhook node. */
async function runWebhookExecution(executionId: string, item: INodeExecutionData): Promise<IRun> {
	const workflowData = templateWorkflow();
	const workflow = new Workflow({
		id: workflowData.id,
		name: workflowData.name,
		nodes: workflowData.nodes,
		connections: workflowData.connections,
		active: false,
		nodeTypes,
		settings: workflowData.settings,
	});
	const hooks = new ExecutionLifecycleHooks('webhook', executionId, workflowData);
	const additionalData = { ...additionalBase, executionId, hooks } as IWorkflowExecuteAdditionalData;
	const webhookNode = workflow.getNode('Webhook')!;
	const runExecutionData = createRunExecutionData({
		executionData: { nodeExecutionStack: [{ node: webhookNode, data: { main: [[item]] }, source: null }] },
	});
	return await new WorkflowExecute(additionalData, 'webhook', runExecutionData).processRunExecutionData(workflow);
}

/** The items on one output of one node's (only) run. */
function output(run: IRun, nodeName: string, outputIndex: number): INodeExecutionData[] {
	const taskData = run.data.resultData.runData[nodeName];
	expect(taskData).toHaveLength(1);
	return taskData[0].data?.main[outputIndex] ?? [];
}

function idempotency(item: INodeExecutionData): Record<string, unknown> {
	return item.json.idempotency as Record<string, unknown>;
}

beforeAll(async () => {
	pool = adminPool();
	schema = await freshSchema(pool, 'inprocess');
	const { host, port, database, user, password } = connectionSettings();
	const helper = credentialsHelper({ [CREDENTIAL_ID]: { host, port, database, user, password } });
	lookups = (helper as unknown as { lookups: string[] }).lookups;
	additionalBase = {
		credentialsHelper: helper,
		externalSecretsProxy: new ExternalSecretsProxy(),
		executeWorkflow: notAvailable('executeWorkflow'),
		getRunExecutionData: notAvailable('getRunExecutionData'),
		getRuntimeCredential: notAvailable('getRuntimeCredential'),
		startRunnerTask: notAvailable('startRunnerTask'),
		logAiEvent: () => {},
		currentNodeExecutionIndex: 0,
		variables: {},
		restApiUrl: 'http://localhost:5678/rest',
		instanceBaseUrl: 'http://localhost:5678',
		formBaseUrl: 'http://localhost:5678/form',
		formWaitingBaseUrl: 'http://localhost:5678/form-waiting',
		formTestBaseUrl: 'http://localhost:5678/form-test',
		webhookBaseUrl: 'http://localhost:5678/webhook',
		webhookWaitingBaseUrl: 'http://localhost:5678/webhook-waiting',
		webhookTestBaseUrl: 'http://localhost:5678/webhook-test',
		mcpBaseUrl: 'http://localhost:5678/mcp',
		mcpTestBaseUrl: 'http://localhost:5678/mcp-test',
	} as Omit<IWorkflowExecuteAdditionalData, 'hooks' | 'executionId'>;
});

afterAll(async () => {
	await closeAllPools();
	await pool.end();
});

describe('a lease-mode workflow run by n8n-core WorkflowExecute, in-process', () => {
	it('routes the first delivery to New → Complete and the retry to Duplicate with the stored response', async () => {
		const delivery = () => webhookItem({ order: { id: 'ord_4711' }, amount: 12 }, { 'x-source': 'shop' });

		const first = await runWebhookExecution('exec-first', delivery());
		expect(first.data.resultData.error).toBeUndefined();
		expect(first.status).toBe('success');
		const [fresh, duplicate, inProgress] = [0, 1, 2].map((index) => output(first, 'Idempotency Reserve', index));
		expect([fresh.length, duplicate.length, inProgress.length]).toEqual([1, 0, 0]);
		// The custom key is the expression's value: n8n's expression engine ran in-process.
		expect(idempotency(fresh[0])).toMatchObject({
			key: 'order:ord_4711',
			keySource: 'custom',
			outcome: 'new',
			mode: 'lease',
			status: 'processing',
			executionId: 'exec-first',
			workflowId: 'wf-in-process',
		});
		const [done, stale] = [0, 1].map((index) => output(first, 'Complete', index));
		expect(stale).toHaveLength(0);
		expect(done).toHaveLength(1);
		expect(idempotency(done[0])).toMatchObject({ key: 'order:ord_4711', operation: 'complete', applied: true, staleReason: null });

		const second = await runWebhookExecution('exec-retry', delivery());
		expect(second.data.resultData.error).toBeUndefined();
		expect(second.status).toBe('success');
		const [freshAgain, duplicateAgain, inProgressAgain] = [0, 1, 2].map((index) => output(second, 'Idempotency Reserve', index));
		expect([freshAgain.length, duplicateAgain.length, inProgressAgain.length]).toEqual([0, 1, 0]);
		expect(idempotency(duplicateAgain[0])).toMatchObject({
			key: 'order:ord_4711',
			outcome: 'duplicate',
			status: 'completed',
			ownerToken: null,
			executionId: 'exec-first',
			response: { received: true, order: 'ord_4711', by: 'shop' },
		});
		// Nothing is connected to Duplicate: Complete did not run the second time.
		expect(second.data.resultData.runData.Complete).toBeUndefined();

		// Every node that ran (Reserve, Complete; then Reserve) got its credential through the helper, by ID.
		expect(lookups).toEqual(Array(3).fill(`idempotencyPostgresApi:${CREDENTIAL_ID}`));
		const rows = await pool.query(`select key, status, response from ${schema}.processed_events`);
		expect(rows.rows).toEqual([{ key: 'order:ord_4711', status: 'completed', response: { received: true, order: 'ord_4711', by: 'shop' } }]);
	});
});
