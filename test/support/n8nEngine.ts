import { ExecutionLifecycleHooks, ExternalSecretsProxy, WorkflowExecute } from 'n8n-core';
import {
	createRunExecutionData,
	NodeConnectionTypes,
	NodeHelpers,
	NodeOperationError,
	Workflow,
	type ICredentialDataDecryptedObject,
	type ICredentialsHelper,
	type IDataObject,
	type IExecuteFunctions,
	type IExecuteResponsePromiseData,
	type INodeCredentialsDetails,
	type INode,
	type INodeExecutionData,
	type INodeParameters,
	type INodeProperties,
	type INodeType,
	type INodeTypes,
	type IRunExecutionData,
	type IVersionedNodeType,
	type IRun,
	type RelatedExecution,
	type IWorkflowBase,
	type IWorkflowExecuteAdditionalData,
	type WorkflowExecuteMode,
} from 'n8n-workflow';

import { IdempotencyPostgresApi } from '../../credentials/IdempotencyPostgresApi.credentials';
import { IdempotencyExecuteQuery } from '../../nodes/IdempotencyExecuteQuery/IdempotencyExecuteQuery.node';
import { IdempotencyKey } from '../../nodes/IdempotencyKey/IdempotencyKey.node';
import { IdempotencyOrderGuard } from '../../nodes/IdempotencyOrderGuard/IdempotencyOrderGuard.node';
import { IdempotencyReserve } from '../../nodes/IdempotencyReserve/IdempotencyReserve.node';
import { IdempotentWebhook } from '../../nodes/IdempotentWebhook/IdempotentWebhook.node';
import { serverRefusesConnection } from './pgConnectionErrors';

/*
 * The package's nodes run by n8n's own engine (n8n-core's WorkflowExecute), in-process: real
 * parameter and expression resolution, real credential lookup through ICredentialsHelper, real
 * output routing over the workflow's connections. What the fake IExecuteFunctions cannot prove.
 */

export const PACKAGE = 'n8n-nodes-idempotency';

export type OnErrorSetting = 'stopWorkflow' | 'continueRegularOutput' | 'continueErrorOutput';
export const ON_ERROR_SETTINGS: OnErrorSetting[] = ['stopWorkflow', 'continueRegularOutput', 'continueErrorOutput'];

export type EngineBase = Omit<IWorkflowExecuteAdditionalData, 'hooks' | 'executionId'>;

/**
 * Stands in for n8n-nodes-base's Webhook node (not installed here). A node type with a `webhook`
 * method and no `execute` is one WorkflowExecute passes its input through, which is how n8n runs a
 * webhook execution: the request's items start on the execution stack at the webhook node.
 */
export class TestWebhook implements INodeType {
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
		// As n8n's Webhook node declares it (the package reads it: Header Auth and JWT check a header the user names).
		properties: [
			{
				displayName: 'Authentication',
				name: 'authentication',
				type: 'options',
				options: [
					{ name: 'Basic Auth', value: 'basicAuth' },
					{ name: 'Header Auth', value: 'headerAuth' },
					{ name: 'JWT Auth', value: 'jwtAuth' },
					{ name: 'None', value: 'none' },
				],
				default: 'none',
			},
		],
	};

	async webhook(): Promise<never> {
		throw new Error('Not called: the test puts the request items on the execution stack');
	}
}

/** A test stand-in for a business step: one main input, one main output. */
function stepDescription(
	name: string,
	displayName: string,
	defaultName: string,
	description: string,
	properties: INodeProperties[] = [],
): INodeType['description'] {
	return {
		displayName,
		name,
		group: ['transform'],
		version: 1,
		description,
		defaults: { name: defaultName },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		properties,
	};
}

/**
 * Stands in for the business step (status 0) and for Respond to Webhook (its output says which
 * status it would answer): records which items reached it.
 */
export class TestStep implements INodeType {
	description = stepDescription('testStep', 'Test Step', 'Step', 'Records the items that reached it', [
		{ displayName: 'Status', name: 'status', type: 'number', default: 0 },
		// A business step that replaces the items (as a database node does) and keeps only some of them.
		{ displayName: 'Replace Items', name: 'replaceItems', type: 'boolean', default: false },
		{ displayName: 'Keep Only Item', name: 'keepOnlyItem', type: 'number', default: -1 },
		// A Code node that splits each item in two and forgets pairedItem: n8n cannot infer the pairing.
		{ displayName: 'Split Without Pairing', name: 'splitWithoutPairing', type: 'boolean', default: false },
	]);

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const status = this.getNodeParameter('status', 0) as number;
		const replaceItems = this.getNodeParameter('replaceItems', 0, false) as boolean;
		const keepOnlyItem = this.getNodeParameter('keepOnlyItem', 0, -1) as number;
		const splitWithoutPairing = this.getNodeParameter('splitWithoutPairing', 0, false) as boolean;
		const mark = status ? { respondedWith: status } : { businessStepRan: true };
		// Answers as Respond to Webhook does (n8n keeps the first answer of an execution).
		if (status) this.sendResponse({ body: {}, headers: {}, statusCode: status });
		const output = this.getInputData().map((item, index) => ({
			json: replaceItems ? { ...mark, inputPosition: index } : { ...item.json, ...mark },
			pairedItem: { item: index },
		}));
		if (splitWithoutPairing) return [output.flatMap(({ json }) => [{ json }, { json }])];
		return [keepOnlyItem >= 0 ? output.filter((_item, index) => index === keepOnlyItem) : output];
	}
}

/** A business step that succeeds while n8n's own database goes down under it (n8nDatabase). */
export class TestStepN8nDatabaseDown implements INodeType {
	description = stepDescription(
		'testStepN8nDatabaseDown',
		'Test Step, n8n Database Down',
		'Step',
		"Succeeds, and n8n's database goes down meanwhile",
	);

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		n8nDatabase.down = true;
		return [this.getInputData().map((item, index) => ({ json: { ...item.json, businessStepRan: true }, pairedItem: { item: index } }))];
	}
}

/**
 * A business step that fails, returning under Continue On Fail the error items n8n-nodes-base's
 * nodes return (2.40.7): the Postgres node's `{ message, error: { ...NodeOperationError } }` (the
 * error object's own fields, where `message` is not one: it is not enumerable) and the Code node's
 * `{ error: message }` with its pairedItem. Throws with Stop Workflow.
 */
export class TestFailingStep implements INodeType {
	description = stepDescription('testFailingStep', 'Test Failing Step', 'Failing Step', 'Fails like a stock node', [
		{
			displayName: 'Shape',
			name: 'shape',
			type: 'options',
			options: [
				{ name: 'Postgres', value: 'postgres' },
				{ name: 'Code', value: 'code' },
			],
			default: 'postgres',
		},
		{ displayName: 'Message', name: 'message', type: 'string', default: 'boom' },
	]);

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const shape = this.getNodeParameter('shape', 0) as string;
		const error = new NodeOperationError(this.getNode(), new Error(this.getNodeParameter('message', 0) as string), {
			description: 'Failed query',
		});
		if (!this.continueOnFail()) throw error;
		if (shape === 'postgres') return [[{ json: { message: error.message, error: { ...error } } }]];
		return [this.getInputData().map((_item, index) => ({ json: { error: error.message }, pairedItem: { item: index } }))];
	}
}

/**
 * A business step that fails as a whole before its items are processed, whatever its "On Error"
 * says — as a stock node does when n8n cannot read its credential. Under Continue, n8n-core then
 * passes the node's *input* items on through its success output.
 */
export class TestThrowingStep implements INodeType {
	description = stepDescription('testThrowingStep', 'Test Throwing Step', 'Throwing Step', 'Fails before it runs');

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		throw new NodeOperationError(this.getNode(), 'Credential could not be decrypted');
	}
}

/**
 * A business step that succeeds for every item but one, which it returns as a Code node's error
 * item (`{ error }` with its pairedItem): under Continue (using error output) n8n moves it there.
 */
export class TestPartlyFailingStep implements INodeType {
	description = stepDescription('testPartlyFailingStep', 'Test Partly Failing Step', 'Partly Failing Step', 'Fails for one item', [
		{ displayName: 'Failing Item', name: 'failingItem', type: 'number', default: 0 },
	]);

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const failing = this.getNodeParameter('failingItem', 0) as number;
		return [
			this.getInputData().map((item, index) =>
				index === failing
					? { json: { error: `item ${index} refused` }, pairedItem: { item: index } }
					: { json: { done: index }, pairedItem: { item: index } },
			),
		];
	}
}

const nodeTypeByName: Record<string, INodeType> = Object.fromEntries(
	[
		new TestWebhook(),
		new TestStep(),
		new TestStepN8nDatabaseDown(),
		new TestFailingStep(),
		new TestThrowingStep(),
		new TestPartlyFailingStep(),
		new IdempotencyReserve(),
		new IdempotencyKey(),
		new IdempotencyExecuteQuery(),
		new IdempotencyOrderGuard(),
		new IdempotentWebhook(),
	].map((nodeType) => [`${PACKAGE}.${nodeType.description.name}`, nodeType]),
);

/** Node types from elsewhere (n8n-nodes-base's, see n8nBaseNodes.ts), by their full type name. */
const extraNodeTypes: Record<string, INodeType | IVersionedNodeType> = {};

export function addNodeTypes(types: Record<string, INodeType | IVersionedNodeType>): void {
	Object.assign(extraNodeTypes, types);
}

export const nodeTypes: INodeTypes = {
	getByName: (type) => known(type),
	getByNameAndVersion: (type, version) => known(type, version),
	getKnownTypes: () => ({}),
};

function known(type: string, version?: number): INodeType {
	const nodeType = nodeTypeByName[type] ?? extraNodeTypes[type];
	if (!nodeType) throw new Error(`Unknown node type ${type}`);
	return 'nodeVersions' in nodeType ? (nodeType as unknown as IVersionedNodeType).getNodeType(version) : (nodeType as INodeType);
}

const credentialType = new IdempotencyPostgresApi();

/**
 * n8n's own database, as the credentials helper sees it: while down, every credential read fails
 * with `failure()` — by default what pg gives n8n while Postgres shuts down (57P03).
 */
export const n8nDatabase: { down: boolean; failure: () => Promise<unknown> } = {
	down: false,
	failure: databaseShuttingDown,
};

/** pg's own error for a Postgres that is shutting down. */
export function databaseShuttingDown(): Promise<Error> {
	return serverRefusesConnection('57P03', 'the database system is shutting down');
}

/**
 * n8n's credentials helper, reduced to what a node without HTTP needs: the stored credential by ID,
 * with the credential type's defaults applied the way n8n applies them (NodeHelpers.getNodeParameters).
 * The stored data has no ssl or maxConnections, as a credential saved with defaults may not.
 */
export function credentialsHelper(stored: Record<string, ICredentialDataDecryptedObject>): ICredentialsHelper {
	const lookups: string[] = [];
	const helper = credentialsHelperReading(async (details, type) => {
		lookups.push(`${type}:${details.id}`);
		// n8n reads the credential from its own database, and fails as that database does.
		if (n8nDatabase.down) throw await n8nDatabase.failure();
		const data = details.id ? stored[details.id] : undefined;
		if (!data || type !== credentialType.name) throw new Error(`No credential ${details.id} of type ${type}`);
		return NodeHelpers.getNodeParameters(
			credentialType.properties,
			data as INodeParameters,
			true,
			false,
			null,
			null,
		) as ICredentialDataDecryptedObject;
	});
	return Object.assign(helper, { lookups });
}

/** n8n's credentials helper with only the decrypted read a node without HTTP makes; everything else refuses. */
export function credentialsHelperReading(
	getDecrypted: (details: INodeCredentialsDetails, type: string) => Promise<ICredentialDataDecryptedObject>,
): ICredentialsHelper {
	const helper = {
		getParentTypes: () => [],
		isCredentialUsableByNode: () => true,
		getCredentialsProperties: (type: string) => {
			if (type !== credentialType.name) throw new Error(`Unknown credential type ${type}`);
			return credentialType.properties;
		},
		getDecrypted: async (_additionalData: unknown, details: INodeCredentialsDetails, type: string) => await getDecrypted(details, type),
		getCredentials: notAvailable('getCredentials'),
		authenticate: notAvailable('authenticate'),
		preAuthentication: notAvailable('preAuthentication'),
		runPreAuthentication: notAvailable('runPreAuthentication'),
		updateCredentials: notAvailable('updateCredentials'),
		updateCredentialsOauthTokenData: notAvailable('updateCredentialsOauthTokenData'),
	};
	return helper as unknown as ICredentialsHelper;
}

export function notAvailable(name: string) {
	return async (): Promise<never> => {
		throw new Error(`${name} is not available in the in-process test`);
	};
}

export const CREDENTIAL_UP = 'cred-up';
export const CREDENTIAL_DOWN = 'cred-down';

/** An engine with two credentials: CREDENTIAL_UP (the test database) and CREDENTIAL_DOWN (port 1: nothing listens, nothing is stored). */
export function engineWithUpAndDownCredentials(database: {
	host: string;
	port: number;
	database: string;
	user: string;
	password: string;
}): EngineBase {
	const { host, port, database: name, user, password } = database;
	return engineBase(
		credentialsHelper({
			[CREDENTIAL_UP]: { host, port, database: name, user, password },
			[CREDENTIAL_DOWN]: { host, port: 1, database: name, user, password },
		}),
	);
}

/** The additional data n8n gives an execution, reduced to what the package's nodes use. */
export function engineBase(helper: ICredentialsHelper): EngineBase {
	return {
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
	} as EngineBase;
}

/** Runs a workflow with n8n-core's WorkflowExecute; the request items start at its Webhook node. */
export async function runWorkflowExecution(
	workflowData: IWorkflowBase,
	executionId: string,
	items: INodeExecutionData[],
	base: EngineBase,
	mode: WorkflowExecuteMode = 'webhook',
): Promise<IRun> {
	return (await executeInProcess(workflowData, executionId, items, base, { mode })).run;
}

/**
 * runWorkflowExecution on a workflow loaded with `staticData` (what n8n stored for it), answering
 * the run and the loaded workflow, whose static data the run may have changed.
 */
export async function executeInProcess(
	workflowData: IWorkflowBase,
	executionId: string,
	items: INodeExecutionData[],
	base: EngineBase,
	{
		mode = 'webhook',
		staticData,
		onStart,
		parentExecution,
	}: {
		mode?: WorkflowExecuteMode;
		staticData?: IDataObject;
		onStart?: (cancel: () => void) => void;
		/** A sub-execution's: the execution that ran it, as n8n records it (Execute Workflow passes it). */
		parentExecution?: RelatedExecution;
	} = {},
): Promise<{ run: IRun; workflow: Workflow }> {
	const workflow = loadedWorkflow(workflowData, staticData);
	const hooks = hooksRecordingAnswers(mode, executionId, workflowData);
	// Each execution counts its node runs from 0, as n8n's additional data does per execution.
	const additionalData = { ...base, executionId, hooks, currentNodeExecutionIndex: 0 } as IWorkflowExecuteAdditionalData;
	const webhookNode = workflow.getNode('Webhook')!;
	const runExecutionData = createRunExecutionData({
		executionData: { nodeExecutionStack: [{ node: webhookNode, data: { main: [items] }, source: null }] },
		parentExecution,
	});
	const running = new WorkflowExecute(additionalData, mode, runExecutionData).processRunExecutionData(workflow);
	// n8n's Stop button and a workflow timeout cancel the running execution this way.
	onStart?.(() => running.cancel());
	const run = await running;
	return { run, workflow };
}

/** A saved workflow as n8n loads it to run, with the test's node types. */
function loadedWorkflow(workflowData: IWorkflowBase, staticData?: IDataObject): Workflow {
	return new Workflow({
		id: workflowData.id,
		name: workflowData.name,
		nodes: workflowData.nodes,
		connections: workflowData.connections,
		active: false,
		nodeTypes,
		settings: workflowData.settings,
		staticData,
	});
}

/** The status codes each execution answered its webhook with, in order (n8n sends the first). */
export const webhookAnswers = new Map<string, number[]>();
/** The answers themselves (status, headers, body), in the same order. */
export const webhookResponses = new Map<string, IExecuteResponsePromiseData[]>();

function hooksRecordingAnswers(mode: WorkflowExecuteMode, executionId: string, workflowData: IWorkflowBase): ExecutionLifecycleHooks {
	const hooks = new ExecutionLifecycleHooks(mode, executionId, workflowData);
	hooks.addHandler('sendResponse', (response) => {
		webhookAnswers.set(executionId, [...(webhookAnswers.get(executionId) ?? []), Number(response.statusCode ?? 200)]);
		webhookResponses.set(executionId, [...(webhookResponses.get(executionId) ?? []), response]);
	});
	return hooks;
}

/**
 * What n8n 2.41.1 answers a webhook in "Using Respond to Webhook Node" mode (webhook-helpers.js):
 * the first answer sent during the execution; else, once it ends, 500 when it failed and 200 when it
 * succeeded; nothing yet while it waits.
 */
export function webhookAnswer(executionId: string, run: IRun): number | undefined {
	const sent = webhookAnswers.get(executionId)?.[0];
	if (sent !== undefined) return sent;
	if (run.waitTill || run.status === 'waiting') return undefined;
	return run.data.resultData.error ? 500 : 200;
}

/**
 * Resumes a waiting execution the way n8n does: a new WorkflowExecute, with new lifecycle hooks and
 * execution indexes from 0, over the run data n8n saved (a JSON copy, as its database gives back).
 */
export async function resumeInProcess(
	workflowData: IWorkflowBase,
	executionId: string,
	saved: IRunExecutionData,
	base: EngineBase,
	mode: WorkflowExecuteMode = 'webhook',
): Promise<IRun> {
	const workflow = loadedWorkflow(workflowData);
	const hooks = hooksRecordingAnswers(mode, executionId, workflowData);
	const additionalData = {
		...base,
		executionId,
		hooks,
		restartExecutionId: executionId,
		currentNodeExecutionIndex: 0,
	} as IWorkflowExecuteAdditionalData;
	const runExecutionData = JSON.parse(JSON.stringify(saved)) as IRunExecutionData;
	return await new WorkflowExecute(additionalData, mode, runExecutionData).processRunExecutionData(workflow);
}

/** A node of this package (or a test stand-in) for an in-process workflow. */
export function packageNode(name: string, type: string, parameters: INodeParameters = {}, extra: Partial<INode> = {}): INode {
	return { id: name, name, type: `${PACKAGE}.${type}`, typeVersion: 1, position: [0, 0], parameters, ...extra };
}

/** A saved workflow as WorkflowExecute needs it (inactive, execution order v1). */
export function inProcessWorkflow(id: string, nodes: INode[], connections: IWorkflowBase['connections']): IWorkflowBase {
	const now = new Date();
	return {
		id,
		name: id,
		active: false,
		activeVersionId: null,
		isArchived: false,
		createdAt: now,
		updatedAt: now,
		nodes,
		connections,
		settings: { executionOrder: 'v1' },
	};
}

/** The items one node received over its (only) run, or none when it did not run. */
export function itemsAt(run: IRun, nodeName: string): INodeExecutionData[] {
	return run.data.resultData.runData[nodeName]?.[0]?.data?.main[0] ?? [];
}
