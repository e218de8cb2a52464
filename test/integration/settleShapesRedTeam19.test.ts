import { createHmac } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { HookContext } from 'n8n-core';
import {
	Workflow,
	type ICredentialDataDecryptedObject,
	type IConnections,
	type INode,
	type INodeExecutionData,
	type INodeParameters,
	type IRun,
	type ITriggerFunctions,
	type IWebhookResponseData,
	type IWorkflowExecuteAdditionalData,
	type WorkflowExecuteMode,
} from 'n8n-workflow';

import { OUTCOME_HEADER } from '../../lib/webhook/answers';
import { inboxOwner } from '../../lib/webhook/inbox';
import { IdempotentWebhook } from '../../nodes/IdempotentWebhook/IdempotentWebhook.node';
import { runInbox } from '../../nodes/IdempotentWebhook/inboxRunner';
import { forgetKeptSigningSecrets } from '../../nodes/shared/signingSecret';
import { connectionSettings, postgresSchemaFixture } from '../support/database';
import { baseNodesInstalled, describeWithN8n, loadBaseNodeFiles, loadBaseNodes } from '../support/n8nBaseNodes';
import {
	addNodeTypes,
	credentialsHelperReading,
	engineBase,
	engineWithUpAndDownCredentials,
	executeInProcess,
	inProcessWorkflow,
	nodeTypes,
	packageNode,
	webhookResponses,
	type EngineBase,
} from '../support/n8nEngine';
import { inProcessDeliveries, keyStatesIn, link, settleWorkflow, toInput, type Shape } from '../support/settleWorkflows';
import { withCodeRunner } from '../support/codeTaskRunner';
import { embeddedModule } from '../support/storeTargets';
import { withSubWorkflowsInProcess } from '../support/triggerProvider';
import { callTriggerWebhook, n8nFolderForTheFile } from '../support/triggerWebhookCall';

/*
 * Nineteenth red-team pass, in n8n 2.41.1's own engine (n8n-core's WorkflowExecute, n8n-nodes-base 2.41.1's nodes).
 *  (1) False refusals and regressions: the workflows n8n users build every day behind the Idempotent Webhook trigger
 *      (checked at publish through n8n-core's HookContext, then run over a real HTTP exchange) and on the webhook
 *      template's node path (Reserve → the step, Settle beside it, on Postgres): each must be accepted and give one
 *      effect per event after a call failing once and the provider's retries.
 *  (2) The rules added today, attacked: a Code node run once for all items, Always Output Data, the older
 *      continueOnFail beside On Error "Stop Workflow", in shapes the rules may not see, and n8n-nodes-base nodes that do
 *      what those rules are about under another type.
 * The effect is n8n's real HTTP Request node (4.2) calling a local test API that counts the charges it committed per
 * event (2xx only) and fails the calls it is told to fail. n8n's Code node (and AI Transform, which runs generated
 * code the same way) runs through a stand-in for n8n's task runner answering what @n8n/task-runner 2.41.1 answers.
 * A row is a plain `it` where the package holds; `it.failing` where it breaks, with what happens and how.
 */

const SECRET = 'whsec_rt19';
const sleep = async (ms: number) => await new Promise((resolve) => setTimeout(resolve, ms));
// Before anything else: n8n-core keeps the n8n folder it first reads for the rest of the file.
const n8nFolder = n8nFolderForTheFile('rt19-n8n-');

/* The test API: charges per event, failures on demand ------------------------------------------------------------ */

const charges = new Map<string, number>();
const failing = new Map<string, number>();
/** Every call received, in order (`<route>:<id>`). */
const received: string[] = [];
const charged = (id: string) => charges.get(id) ?? 0;
const callsTo = (route: string, id?: string) =>
	received.filter((call) => call === `${route}:${id ?? ''}` || (id === undefined && call.startsWith(`${route}:`))).length;

function failNext(target: string, times = 1): void {
	failing.set(target, (failing.get(target) ?? 0) + times);
}

function takeFailure(target: string): boolean {
	const left = failing.get(target) ?? 0;
	if (left <= 0) return false;
	failing.set(target, left - 1);
	return true;
}

/** Routes that commit an effect per id: a charge, a CRM update, a sheet row, an issue comment. */
const EFFECT_ROUTES = new Set(['charge', 'crm', 'sheet', 'comment', 'refund']);

async function api(request: IncomingMessage, response: ServerResponse): Promise<void> {
	const chunks: Buffer[] = [];
	for await (const chunk of request) chunks.push(chunk as Buffer);
	const text = Buffer.concat(chunks).toString();
	let body: { id?: string } = {};
	try {
		body = JSON.parse(text || '{}') as { id?: string };
	} catch {
		// A file upload (multipart): no id.
	}
	const route = (request.url ?? '/').slice(1);
	const id = String(body.id ?? '');
	received.push(`${route}:${id}`);
	const answer = (status: number, json: unknown): void => {
		response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
	};
	if (takeFailure(route) || takeFailure(`${route}:${id}`)) {
		answer(500, { message: 'upstream unavailable' });
		return;
	}
	if (EFFECT_ROUTES.has(route)) charges.set(`${route}:${id}`, (charges.get(`${route}:${id}`) ?? 0) + 1);
	if (route === 'charge') charges.set(id, charged(id) + 1);
	answer(200, { ok: true, id });
}

const effectsAt = (route: string, id: string) => charges.get(`${route}:${id}`) ?? 0;

let apiServer: http.Server;
let apiUrl: string;

/* Nodes as users leave them ----------------------------------------------------------------------------------------- */

const node = (name: string, type: string, typeVersion: number, parameters: INodeParameters, extra: Partial<INode> = {}, y = 0): INode => ({
	id: name,
	name,
	type: `n8n-nodes-base.${type}`,
	typeVersion,
	position: [400, y],
	parameters,
	...extra,
});

/** n8n's HTTP Request (4.2) POSTing `{ id }` (the event's id) to the test API's `route`. */
const httpCall = (
	name: string,
	route: string,
	extra: Partial<INode> = {},
	jsonBody = '={{ JSON.stringify({ id: $json.body.id }) }}',
	y = 0,
): INode =>
	node(
		name,
		'httpRequest',
		4.2,
		{ method: 'POST', url: `${apiUrl}/${route}`, sendBody: true, specifyBody: 'json', jsonBody, options: {} },
		extra,
		y,
	);

/** The event's id read back from the trigger's item (after an HTTP Request, `$json` is the API's answer). */
const FROM_WEBHOOK = '={{ JSON.stringify({ id: $("Webhook").item.json.body.id }) }}';

/** n8n's Code node (2), JavaScript, mode left at its default (Run Once for All Items: n8n saves no parameter at its default). */
const codeAtDefaults = (name: string, jsCode: string, extra: Partial<INode> = {}): INode => node(name, 'code', 2, { jsCode }, extra);
const codeNode = (name: string, mode: string, jsCode: string, extra: Partial<INode> = {}): INode =>
	node(name, 'code', 2, { mode, language: 'javaScript', jsCode }, extra);

/** Edit Fields (3.4), keeping the other fields, setting `field`. */
const editFields = (name: string, field: string, value: string, extra: Partial<INode> = {}): INode =>
	node(
		name,
		'set',
		3.4,
		{
			mode: 'manual',
			assignments: { assignments: [{ id: 'f', name: field, value, type: 'string' }] },
			includeOtherFields: true,
			options: {},
		},
		extra,
	);

const stringEquals = (left: string, right: string) => ({
	options: { caseSensitive: true, leftValue: '', typeValidation: 'strict', version: 2 },
	conditions: [{ id: `c-${right}`, leftValue: left, rightValue: right, operator: { type: 'string', operation: 'equals' } }],
	combinator: 'and',
});

/** n8n's If (2.2) at its defaults (Stop Workflow, strict types): `left` equals `right`. */
const ifEquals = (name: string, left: string, right: string, extra: Partial<INode> = {}, y = 0): INode =>
	node(name, 'if', 2.2, { conditions: stringEquals(left, right), options: {} }, extra, y);

/** n8n's Switch (3.2) in Rules mode (its default), a route per value of `left`. */
const switchRules = (name: string, left: string, values: string[]): INode =>
	node(name, 'switch', 3.2, { rules: { values: values.map((value) => ({ conditions: stringEquals(left, value) })) }, options: {} });

/* The Idempotent Webhook trigger, published and served ------------------------------------------------------------- */

let workflowId = 'wf-rt19';
let trigger: INode;
let lastResult: IWebhookResponseData | Error | undefined;
let handling: Promise<void> = Promise.resolve();
let triggerServer: http.Server;
let triggerUrl: string;
let executions = 0;
let subExecutions = 0;

const credentials = () =>
	credentialsHelperReading(async (_details, type): Promise<ICredentialDataDecryptedObject> => {
		if (type === 'webhookSignatureApi') return { secret: SECRET };
		throw new Error(`No credential of type ${type}`);
	});
const keyFile = () =>
	embeddedModule().openEmbeddedKeyStore({ file: path.join(n8nFolder(), '.n8n', 'storage', 'n8n-nodes-idempotency', 'keys.sqlite') });
const keyOf = (id: string) => `wf:${workflowId}:evt:${id}`;
const triggerStatuses = async (ids: string[]) =>
	await Promise.all(ids.map(async (id) => (await keyFile().getKeys([keyOf(id)])).get(keyOf(id))?.status));

function useTrigger(id: string, parameters: INodeParameters = {}): void {
	workflowId = id;
	trigger = packageNode(
		'Webhook',
		'idempotentWebhook',
		{ path: 'rt19', scheme: 'stripe', store: 'embedded', keySource: 'auto', ...parameters },
		{ typeVersion: 3, credentials: { webhookSignatureApi: { id: 'signing', name: 'Signing' } } },
	);
}

async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
	lastResult = undefined;
	lastResult = await callTriggerWebhook(request, response, { trigger, workflowId, credentials: credentials() });
	if (!response.writableEnded) response.writeHead(200).end('{"started":true}');
}

async function postStripe(body: string): Promise<Response> {
	const timestamp = Math.floor(Date.now() / 1000);
	const signature = createHmac('sha256', SECRET).update(`${timestamp}.${body}`).digest('hex');
	const response = await fetch(`${triggerUrl}/webhook/rt19`, {
		method: 'POST',
		headers: { 'content-type': 'application/json', 'stripe-signature': `t=${timestamp},v1=${signature}` },
		body,
	});
	await handling;
	return response;
}

const startedItems = (): INodeExecutionData[] =>
	lastResult && !(lastResult instanceof Error) ? ((lastResult.workflowData?.[0] as INodeExecutionData[] | undefined) ?? []) : [];

interface Step {
	nodes: INode[];
	connections?: IConnections;
	heads: string[];
}

const triggerConnections = (step: Step): IConnections => ({ Webhook: { main: [link(...step.heads)] }, ...(step.connections ?? {}) });

/** Publishes the trigger's workflow as n8n 2.x does (checkExists, then create, on n8n-core's HookContext): the refusal, or false. */
async function refusedAtPublish(step: Step): Promise<string | false> {
	const workflow = new Workflow({
		id: `${workflowId}-publish`,
		name: 'publish',
		nodes: [trigger, ...step.nodes],
		connections: triggerConnections(step),
		active: true,
		nodeTypes,
		settings: { executionOrder: 'v1' },
	});
	const additionalData = engineBase(credentials()) as unknown as IWorkflowExecuteAdditionalData;
	const context = new HookContext(workflow, workflow.getNode('Webhook')!, additionalData, 'trigger', 'activate');
	const methods = new IdempotentWebhook().webhookMethods.default;
	try {
		if (!(await methods.checkExists.call(context))) await methods.create.call(context);
		return false;
	} catch (error) {
		return (error as Error).message;
	}
}

/** The engine for the trigger's executions: the Code runner, Execute Workflow's sub-workflows run in-process. */
const triggerEngine = () => withSubWorkflowsInProcess(withCodeRunner(engineBase(credentials())), () => `rt19-sub-${++subExecutions}`);

async function runExecution(items: INodeExecutionData[], step: Step, mode: WorkflowExecuteMode = 'webhook') {
	executions += 1;
	const executionId = `rt19-${executions}`;
	const workflow = inProcessWorkflow(workflowId, [trigger, ...step.nodes], triggerConnections(step));
	const { run } = await executeInProcess(workflow, executionId, items, triggerEngine(), { mode });
	const [answer] = webhookResponses.get(executionId) ?? [];
	return { run, status: answer ? Number(answer.statusCode ?? 200) : undefined };
}

/** The provider: posts `body` until a 2xx (at most `attempts` times); each answer, and every run it started. */
async function provide(body: unknown, step: Step, attempts = 4): Promise<{ answers: number[]; runs: IRun[] }> {
	const answers: number[] = [];
	const runs: IRun[] = [];
	for (let attempt = 0; attempt < attempts; attempt++) {
		const response = await postStripe(JSON.stringify(body));
		let status = response.status;
		const items = startedItems();
		if (items.length > 0) {
			const { run, status: answered } = await runExecution(items, step);
			runs.push(run);
			status = answered ?? (run.data.resultData.error ? 500 : 200);
		}
		answers.push(status);
		if (status >= 200 && status < 300) break;
	}
	return { answers, runs };
}

/** An everyday row: accepted at publish, then through a failing call and the provider's retries. */
async function publishAndProvide(body: unknown, step: Step, attempts = 4) {
	const refusal = await refusedAtPublish(step);
	const { answers, runs } = await provide(body, step, attempts);
	return { refusal, answers, firstError: String(runs[0]?.data.resultData.error?.message ?? '') };
}

const events = (ids: string[]) => ({ events: ids.map((id) => ({ id })) });

/* The webhook template's node path, on Postgres ------------------------------------------------------------------- */

const db = postgresSchemaFixture('shapesrt19', { keyTables: ['processed_events'] });
let templateEngine: EngineBase;
const deliveries = inProcessDeliveries('rt19-tpl', () => templateEngine);
const templateStates = keyStatesIn(db);
const template = (id: string, shape: Shape) => settleWorkflow(db.schema, id, shape);

beforeAll(async () => {
	apiServer = http.createServer((request, response) => void api(request, response));
	await new Promise<void>((resolve) => apiServer.listen(0, '127.0.0.1', resolve));
	apiUrl = `http://127.0.0.1:${(apiServer.address() as AddressInfo).port}`;
	if (!baseNodesInstalled()) return;
	embeddedModule();
	addNodeTypes({
		...loadBaseNodes(),
		...loadBaseNodeFiles({
			'n8n-nodes-base.httpRequest': 'HttpRequest/HttpRequest.node.js',
			'n8n-nodes-base.code': 'Code/Code.node.js',
			'n8n-nodes-base.set': 'Set/Set.node.js',
			'n8n-nodes-base.switch': 'Switch/Switch.node.js',
			'n8n-nodes-base.executeWorkflowTrigger': 'ExecuteWorkflow/ExecuteWorkflowTrigger/ExecuteWorkflowTrigger.node.js',
			'n8n-nodes-base.aiTransform': 'AiTransform/AiTransform.node.js',
			'n8n-nodes-base.convertToFile': 'Files/ConvertToFile/ConvertToFile.node.js',
		}),
	});
	templateEngine = withCodeRunner(engineWithUpAndDownCredentials(connectionSettings()));
	deliveries.runSubWorkflowsInProcess();
	triggerServer = http.createServer((request, response) => {
		handling = handle(request, response);
	});
	await new Promise<void>((resolve) => triggerServer.listen(0, '127.0.0.1', resolve));
	triggerUrl = `http://127.0.0.1:${(triggerServer.address() as AddressInfo).port}`;
});

afterAll(async () => {
	await new Promise((resolve) => apiServer.close(resolve));
	if (triggerServer) await new Promise((resolve) => triggerServer.close(resolve));
	embeddedModule().closeEmbeddedStores();
});

afterEach(() => {
	forgetKeptSigningSecrets();
	failing.clear();
});

/* (1) Everyday workflows behind the trigger, one event per delivery ---------------------------------------------- */

describeWithN8n('red team 19: everyday workflows behind the Idempotent Webhook trigger', () => {
	// Stripe → Charge → Update CRM → Slack notify, three HTTP Request nodes at n8n's defaults; the charge failing once.
	it('Stripe → charge → CRM update → Slack notify, the charge failing once: accepted at publish, 500, then one of each', async () => {
		useTrigger('wf-rt19-stripe');
		failNext('charge:r19_stripe');
		const outcome = await publishAndProvide(
			{ id: 'r19_stripe', type: 'charge.succeeded' },
			{
				nodes: [
					httpCall('Charge', 'charge'),
					httpCall('Update CRM', 'crm', {}, FROM_WEBHOOK),
					httpCall('Notify Slack', 'slack', {}, FROM_WEBHOOK),
				],
				connections: { Charge: { main: [link('Update CRM')] }, 'Update CRM': { main: [link('Notify Slack')] } },
				heads: ['Charge'],
			},
		);
		expect({
			...outcome,
			charges: charged('r19_stripe'),
			crm: effectsAt('crm', 'r19_stripe'),
			slack: callsTo('slack', 'r19_stripe'),
			key: (await triggerStatuses(['r19_stripe']))[0],
		}).toEqual({ refusal: false, answers: [500, 200], firstError: expect.any(String), charges: 1, crm: 1, slack: 1, key: 'completed' });
	});

	// A Code node at its defaults (Run Once for All Items, Stop Workflow) reshaping the one event before the charge, and
	// another formatting the Slack message after it: with one event per delivery the Code rule (runsOnceForAllItems) has
	// nothing to refuse.
	it('Code at defaults before and after the charge (one event), the charge failing once: accepted, 500, then one charge', async () => {
		useTrigger('wf-rt19-code-defaults');
		failNext('charge:r19_code');
		const outcome = await publishAndProvide(
			{ id: 'r19_code', amount: 1200 },
			{
				nodes: [
					codeAtDefaults('Shape Event', 'return $input.all().map((item) => ({ json: { ...item.json, cents: item.json.body.amount } }));'),
					httpCall('Charge', 'charge'),
					codeAtDefaults('Format Message', 'return [{ json: { text: "charged " + $input.first().json.id } }];'),
					httpCall('Notify Slack', 'slack', {}, '={{ JSON.stringify({ id: $("Shape Event").item.json.body.id, text: $json.text }) }}'),
				],
				connections: {
					'Shape Event': { main: [link('Charge')] },
					Charge: { main: [link('Format Message')] },
					'Format Message': { main: [link('Notify Slack')] },
				},
				heads: ['Shape Event'],
			},
		);
		expect({ ...outcome, charges: charged('r19_code'), slack: callsTo('slack', 'r19_code') }).toEqual({
			refusal: false,
			answers: [500, 200],
			firstError: expect.any(String),
			charges: 1,
			slack: 1,
		});
	});

	// Edit Fields (3.4) setting the customer before the charge; If by event type (2.2, strict, Stop Workflow) routing
	// charge.succeeded to the CRM update and anything else to a refund call; the CRM call failing once.
	it('Edit Fields → If by event type → CRM update / refund, the CRM call failing once: accepted, 500, then one update', async () => {
		useTrigger('wf-rt19-if-type');
		failNext('crm:r19_if');
		const step: Step = {
			nodes: [
				editFields('Set Customer', 'customer', '={{ $json.body.customer ?? "guest" }}'),
				ifEquals('Succeeded?', '={{ $json.body.type }}', 'charge.succeeded'),
				httpCall('Update CRM', 'crm', {}, undefined, 0),
				httpCall('Refund', 'refund', {}, undefined, 200),
			],
			connections: { 'Set Customer': { main: [link('Succeeded?')] }, 'Succeeded?': { main: [link('Update CRM'), link('Refund')] } },
			heads: ['Set Customer'],
		};
		const outcome = await publishAndProvide({ id: 'r19_if', type: 'charge.succeeded', customer: 'c1' }, step);
		const other = await provide({ id: 'r19_if_other', type: 'charge.failed' }, step);
		expect({
			...outcome,
			crm: effectsAt('crm', 'r19_if'),
			refunds: effectsAt('refund', 'r19_if'),
			other: other.answers,
			otherRefunds: effectsAt('refund', 'r19_if_other'),
		}).toEqual({ refusal: false, answers: [500, 200], firstError: expect.any(String), crm: 1, refunds: 0, other: [200], otherRefunds: 1 });
	});

	// Switch (3.2, Rules) by event type, a branch per type, each calling an API; the sheet append failing once.
	it('Switch (Rules) by type, a branch per type each calling an API, one failing once: accepted, 500, then one effect', async () => {
		useTrigger('wf-rt19-switch');
		failNext('sheet:r19_sw_order');
		const step: Step = {
			nodes: [
				switchRules('Route by Type', '={{ $json.body.type }}', ['orders/create', 'orders/cancelled', 'customers/create']),
				httpCall('Append Row', 'sheet'),
				httpCall('Refund', 'refund'),
				httpCall('Update CRM', 'crm'),
			],
			connections: { 'Route by Type': { main: [link('Append Row'), link('Refund'), link('Update CRM')] } },
			heads: ['Route by Type'],
		};
		const outcome = await publishAndProvide({ id: 'r19_sw_order', type: 'orders/create' }, step);
		const cancel = await provide({ id: 'r19_sw_cancel', type: 'orders/cancelled' }, step);
		expect({
			...outcome,
			sheet: effectsAt('sheet', 'r19_sw_order'),
			cancel: cancel.answers,
			refunds: effectsAt('refund', 'r19_sw_cancel'),
		}).toEqual({
			refusal: false,
			answers: [500, 200],
			firstError: expect.any(String),
			sheet: 1,
			cancel: [200],
			refunds: 1,
		});
	});

	// If → (true: Edit Fields tags a VIP) / (false: straight on) → Merge (3, Append) → charge, the charge failing once.
	it('If → Edit Fields / straight on → Merge (Append) → charge, failing once: accepted, 500, then one charge', async () => {
		useTrigger('wf-rt19-merge-after-if');
		failNext('charge:r19_merge');
		const outcome = await publishAndProvide(
			{ id: 'r19_merge', tier: 'vip' },
			{
				nodes: [
					ifEquals('VIP?', '={{ $json.body.tier }}', 'vip'),
					editFields('Tag VIP', 'priority', 'high'),
					node('Merge', 'merge', 3, {}),
					httpCall('Charge', 'charge'),
				],
				connections: {
					'VIP?': { main: [link('Tag VIP'), toInput('Merge', 1)] },
					'Tag VIP': { main: [toInput('Merge', 0)] },
					Merge: { main: [link('Charge')] },
				},
				heads: ['VIP?'],
			},
		);
		expect({ ...outcome, charges: charged('r19_merge') }).toEqual({
			refusal: false,
			answers: [500, 200],
			firstError: expect.any(String),
			charges: 1,
		});
	});

	// A Wait of 1 second (Wait 1.1, After Time Interval) before a rate-limited call: n8n sleeps inside the run.
	it('Wait 1 s before a rate-limited call, failing once: accepted at publish, 500, then one charge', async () => {
		useTrigger('wf-rt19-wait');
		failNext('charge:r19_wait');
		const outcome = await publishAndProvide(
			{ id: 'r19_wait' },
			{
				nodes: [node('Rate Limit', 'wait', 1.1, { amount: 1 }, { webhookId: 'rt19-wait' }), httpCall('Charge', 'charge')],
				connections: { 'Rate Limit': { main: [link('Charge')] } },
				heads: ['Rate Limit'],
			},
		);
		expect({ ...outcome, charges: charged('r19_wait'), key: (await triggerStatuses(['r19_wait']))[0] }).toEqual({
			refusal: false,
			answers: [500, 200],
			firstError: expect.any(String),
			charges: 1,
			key: 'completed',
		});
	});

	// Execute Workflow (1.3, Define Below, waiting, Run Once with All Items: its defaults) to a shared sub-workflow that
	// starts at n8n's "When Executed by Another Workflow" (passthrough) and charges; the charge failing once.
	it('Execute Workflow to a shared sub-workflow that charges, failing once: accepted, 500, then one charge', async () => {
		useTrigger('wf-rt19-sub');
		failNext('charge:r19_sub');
		const sub = JSON.stringify({
			nodes: [node('Webhook', 'executeWorkflowTrigger', 1.1, { inputSource: 'passthrough' }), httpCall('Charge', 'charge')],
			connections: { Webhook: { main: [link('Charge')] } },
		});
		const outcome = await publishAndProvide(
			{ id: 'r19_sub' },
			{
				nodes: [
					node('Charge Customer', 'executeWorkflow', 1.3, {
						source: 'parameter',
						workflowJson: sub,
						options: { waitForSubWorkflow: true },
					}),
				],
				heads: ['Charge Customer'],
			},
		);
		expect({ ...outcome, charges: charged('r19_sub') }).toEqual({
			refusal: false,
			answers: [500, 200],
			firstError: expect.any(String),
			charges: 1,
		});
	});

	// Respond At Once: the provider gets 200 at once; the run's charge fails once; the package's retry runner runs it again.
	it('Respond At Once, the charge failing once: accepted at publish, 200 at once, the runner charges once, completed', async () => {
		useTrigger('wf-rt19-at-once', { respond: 'atOnce', firstRetrySeconds: 0.05 });
		failNext('charge:r19_atonce');
		const step: Step = { nodes: [httpCall('Charge', 'charge')], heads: ['Charge'] };
		const refusal = await refusedAtPublish(step);
		const accepted = await postStripe('{"id":"r19_atonce"}');
		const items = startedItems();
		const retries: Array<Promise<unknown>> = [];
		const context = {
			emit: (data: INodeExecutionData[][]) => retries.push(runExecution(data[0], step, 'trigger').catch(() => undefined)),
			logger: { warn: () => {}, info: () => {}, debug: () => {}, error: () => {} },
		} as unknown as ITriggerFunctions;
		await runExecution(items, step);
		const runner = runInbox(context, { openStore: async () => keyFile(), owner: inboxOwner(workflowId), leaseMs: 300_000, pollMs: 50 });
		for (let i = 0; i < 40 && charged('r19_atonce') === 0; i++) await sleep(50);
		await sleep(200);
		await runner.closeFunction?.();
		await Promise.all(retries);
		const again = await postStripe('{"id":"r19_atonce"}');
		expect({
			refusal,
			accepted: [accepted.status, accepted.headers.get(OUTCOME_HEADER)],
			charges: charged('r19_atonce'),
			key: (await triggerStatuses(['r19_atonce']))[0],
			again: [again.status, again.headers.get(OUTCOME_HEADER)],
		}).toEqual({ refusal: false, accepted: [200, 'new'], charges: 1, key: 'completed', again: [200, 'duplicate'] });
	});
});

/* (1b) Everyday workflows with an Events Path (a batch per delivery) ---------------------------------------------- */

describeWithN8n('red team 19: everyday batch workflows behind the trigger (Events Path)', () => {
	// Loop Over Items (3, batch size 1) over the delivery's events → the charge (Stop Workflow) → back to the loop,
	// Done unconnected; B failing once: A is done, B fails, C never ran; the redelivery runs B and C.
	it('Loop Over Items (1) → charge at Stop Workflow, B failing once: accepted at publish, 500, then one charge each', async () => {
		useTrigger('wf-rt19-loop', { options: { eventsPath: 'body.events' } });
		const ids = ['r19_lp_a', 'r19_lp_b', 'r19_lp_c'];
		failNext('charge:r19_lp_b');
		const outcome = await publishAndProvide(events(ids), {
			nodes: [node('Each Event', 'splitInBatches', 3, { batchSize: 1, options: {} }), httpCall('Charge', 'charge')],
			connections: { 'Each Event': { main: [[], link('Charge')] }, Charge: { main: [link('Each Event')] } },
			heads: ['Each Event'],
		});
		expect({ ...outcome, charges: ids.map(charged), keys: await triggerStatuses(ids) }).toEqual({
			refusal: false,
			answers: [500, 200],
			firstError: expect.any(String),
			charges: [1, 1, 1],
			keys: ['completed', 'completed', 'completed'],
		});
	});

	// Code at defaults (Run Once for All Items) reshaping the batch BEFORE any effect, at Continue (using error output),
	// then the charge at Continue (using error output): the Code rule is for a Code node after an effect only.
	it('Code (All Items) at Continue before the charge, a batch, B failing once: accepted at publish, 500, then one charge each', async () => {
		useTrigger('wf-rt19-code-before', { options: { eventsPath: 'body.events' } });
		const ids = ['r19_cb_a', 'r19_cb_b'];
		failNext('charge:r19_cb_b');
		const outcome = await publishAndProvide(events(ids), {
			nodes: [
				codeAtDefaults(
					'Shape Events',
					'return $input.all().map((item) => ({ json: { ...item.json, shaped: true }, pairedItem: item.pairedItem }));',
					{
						onError: 'continueErrorOutput',
					},
				),
				httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }),
			],
			connections: { 'Shape Events': { main: [link('Charge'), []] } },
			heads: ['Shape Events'],
		});
		expect({ ...outcome, charges: ids.map(charged) }).toEqual({ refusal: false, answers: [500, 200], firstError: '', charges: [1, 1] });
	});
});

/* (1c) Everyday workflows on the webhook template's node path ----------------------------------------------------- */

describeWithN8n('red team 19: everyday steps on the webhook template (Reserve → the step, Settle beside it)', () => {
	// Shopify order → Code at defaults reshaping it → append a row (HTTP, Continue using error output as the template's
	// own step), the append failing once: 500, then one row, completed.
	it('template: Code at defaults → append row via HTTP, failing once: 500, then one row, completed', async () => {
		failNext('sheet:r19_t_code');
		const data = template('wfr19-code', {
			nodes: [
				codeAtDefaults('Shape Order', 'return $input.all().map((item) => ({ json: { ...item.json, line: 1 } }));'),
				httpCall('Append Row', 'sheet', { onError: 'continueErrorOutput' }),
			],
			connections: { 'Shape Order': { main: [link('Append Row')] } },
			heads: ['Shape Order'],
		});
		const { answers, lost } = await deliveries.provider(data, [{ id: 'r19_t_code' }], templateStates.statuses, 4);
		expect({ answers, lost, rows: effectsAt('sheet', 'r19_t_code'), key: (await templateStates.statuses(['r19_t_code']))[0] }).toEqual({
			answers: [500, 200],
			lost: [],
			rows: 1,
			key: 'completed',
		});
	});

	// GitHub issue event → Wait 1 s (rate limit) → comment on the issue (HTTP at Stop Workflow), failing once.
	it('template: Wait 1 s → GitHub issue comment, failing once: accepted before reserving, 500, then one comment', async () => {
		failNext('comment:r19_t_wait');
		const data = template('wfr19-wait', {
			nodes: [node('Rate Limit', 'wait', 1.1, { amount: 1 }, { webhookId: 'rt19-t-wait' }), httpCall('Comment', 'comment')],
			connections: { 'Rate Limit': { main: [link('Comment')] } },
			heads: ['Rate Limit'],
		});
		const { answers, lost } = await deliveries.provider(data, [{ id: 'r19_t_wait' }], templateStates.statuses, 4);
		expect({ answers, lost, comments: effectsAt('comment', 'r19_t_wait') }).toEqual({ answers: [500, 200], lost: [], comments: 1 });
	});

	// If by event type → charge (true) / CRM update (false) → both to Slack via a Merge; the charge failing once.
	it('template: If by type → charge / CRM → Merge → Slack, the charge failing once: 500, then one charge, completed', async () => {
		failNext('charge:r19_t_if');
		const data = template('wfr19-if', {
			nodes: [
				ifEquals('Paid?', '={{ $json.body.type }}', 'invoice.paid'),
				httpCall('Charge', 'charge', {}, undefined, 0),
				httpCall('Update CRM', 'crm', {}, undefined, 200),
				node('Merge', 'merge', 3, {}),
				httpCall('Notify Slack', 'slack', {}, '={{ JSON.stringify({ id: "note" }) }}'),
			],
			connections: {
				'Paid?': { main: [link('Charge'), link('Update CRM')] },
				Charge: { main: [toInput('Merge', 0)] },
				'Update CRM': { main: [toInput('Merge', 1)] },
				Merge: { main: [link('Notify Slack')] },
			},
			heads: ['Paid?'],
		});
		const { answers, lost } = await deliveries.provider(data, [{ id: 'r19_t_if', type: 'invoice.paid' }], templateStates.statuses, 4);
		expect({ answers, lost, charges: charged('r19_t_if'), crm: effectsAt('crm', 'r19_t_if') }).toEqual({
			answers: [500, 200],
			lost: [],
			charges: 1,
			crm: 0,
		});
	});
});

/* (1d) The package's error-workflow template behind a failing execution ------------------------------------------ */

describeWithN8n('red team 19: the error-workflow template (templates/error-workflow-embedded.json)', () => {
	// Webhook → Idempotency Reserve (embedded, lease) → the charge (HTTP at Stop Workflow) → Settle chained after it; the
	// charge fails once: the execution fails (n8n answers 500) and n8n runs the Error Workflow, the package's template as
	// shipped (its Error Trigger standing in as the start). Mark Failed must accept the failed execution; the provider's
	// retry then charges once and the key is completed.
	it('error workflow template after a failed charge, then the retry: no error in the error workflow, one charge, completed', async () => {
		const wfId = 'wf-rt19-errwf';
		const key = 'rt19err:r19_err';
		const reserve = packageNode(
			'Idempotency Reserve',
			'idempotencyReserve',
			{
				store: 'embedded',
				keySource: 'custom',
				customKey: '={{ "rt19err:" + $json.body.id }}',
				mode: 'lease',
				leaseSeconds: 300,
				options: {},
			},
			{ typeVersion: 3, position: [200, 0] },
		);
		const settle = packageNode(
			'Settle',
			'idempotencyKey',
			{ operation: 'settle', store: 'embedded', options: {} },
			{ typeVersion: 3, position: [600, 0] },
		);
		const workflow = inProcessWorkflow(wfId, [packageNode('Webhook', 'testWebhook'), reserve, httpCall('Charge', 'charge'), settle], {
			Webhook: { main: [link('Idempotency Reserve')] },
			'Idempotency Reserve': { main: [link('Charge')] },
			Charge: { main: [link('Settle')] },
		});
		const item = { json: { headers: { 'content-type': 'application/json' }, params: {}, query: {}, body: { id: 'r19_err' } } };
		const shipped = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'templates', 'error-workflow-embedded.json'), 'utf8')) as {
			nodes: INode[];
			connections: IConnections;
		};
		const errorNodes = shipped.nodes
			.filter((candidate) => candidate.type !== 'n8n-nodes-base.stickyNote')
			.map((candidate) => (candidate.type === 'n8n-nodes-base.errorTrigger' ? packageNode('Webhook', 'testWebhook') : candidate));
		const errorConnections: IConnections = { ...shipped.connections, Webhook: shipped.connections['Error Trigger'] };
		delete errorConnections['Error Trigger'];
		failNext('charge:r19_err');
		const results: Array<{ error?: string; errorWorkflow?: string }> = [];
		for (let attempt = 1; attempt <= 3; attempt++) {
			const executionId = `rt19-err-${attempt}`;
			const { run } = await executeInProcess(workflow, executionId, [item], withCodeRunner(engineBase(credentials())));
			const error = run.data.resultData.error?.message;
			if (!error) {
				results.push({});
				break;
			}
			const base = engineBase(credentials());
			base.getRunExecutionData = async (id) => (id === executionId ? (JSON.parse(JSON.stringify(run.data)) as typeof run.data) : undefined);
			const errorRun = await executeInProcess(
				inProcessWorkflow(`${wfId}-errors`, errorNodes, errorConnections),
				`${executionId}-error-workflow`,
				[
					{
						json: {
							execution: {
								id: executionId,
								error: { message: error },
								lastNodeExecuted: run.data.resultData.lastNodeExecuted,
								mode: 'webhook',
							},
							workflow: { id: wfId, name: wfId },
						},
					},
				],
				base,
				{ mode: 'error' },
			);
			results.push({ error, errorWorkflow: String(errorRun.run.data.resultData.error?.message ?? '') });
		}
		const store = embeddedModule().openEmbeddedKeyStore({
			file: path.join(n8nFolder(), '.n8n', 'storage', 'n8n-nodes-idempotency', 'keys.sqlite'),
		});
		expect({ results, charges: charged('r19_err'), key: (await store.getKeys([key])).get(key)?.status }).toEqual({
			results: [{ error: expect.any(String), errorWorkflow: '' }, {}],
			charges: 1,
			key: 'completed',
		});
	});
});

/* (2) The new rules, attacked (trigger with an Events Path: several events in one run) --------------------------- */

describeWithN8n('red team 19: the new refusals, attacked', () => {
	/** What a trustworthy package does: refused (at publish, or at the first step with nothing charged), or one charge each after the retries. */
	async function refusedOrOneEach(id: string, ids: string[], step: Step, failTarget: string) {
		useTrigger(id, { options: { eventsPath: 'body.events' } });
		const refusal = await refusedAtPublish(step);
		failNext(failTarget);
		const { answers } = await provide(events(ids), step);
		const refusedAtRun = answers.every((answer) => answer === 500) && ids.every((one) => charged(one) === 0);
		return { refusal, refusedAtRun, answers, charges: ids.map(charged) };
	}
	/** Refused (at publish or before anything ran), or one charge each and a 2xx at the end. */
	const heldOutcome = (outcome: Awaited<ReturnType<typeof refusedOrOneEach>>) =>
		outcome.refusal !== false ||
		outcome.refusedAtRun ||
		(outcome.answers[outcome.answers.length - 1] === 200 && outcome.charges.every((count) => count === 1));

	// The Code rule inside a sub-workflow defined in Execute Workflow (Run Once with All Items): the charge outside,
	// the Code node (All Items, Continue using error output) inside it failing once.
	it('charge → Execute Workflow (Define Below) → Code (All Items) at Continue inside, failing once: refused', async () => {
		const sub = JSON.stringify({
			nodes: [
				node('Webhook', 'executeWorkflowTrigger', 1.1, { inputSource: 'passthrough' }),
				codeAtDefaults('Totals', 'throw new Error("tax service timed out");', { onError: 'continueErrorOutput' }),
			],
			connections: { Webhook: { main: [link('Totals')] } },
		});
		const outcome = await refusedOrOneEach(
			'wf-rt19-code-sub',
			['r19_cs_a', 'r19_cs_b'],
			{
				nodes: [
					httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }),
					node(
						'Run Totals',
						'executeWorkflow',
						1.3,
						{ source: 'parameter', workflowJson: sub, options: { waitForSubWorkflow: true } },
						{
							onError: 'continueRegularOutput',
						},
					),
				],
				connections: { Charge: { main: [link('Run Totals'), []] } },
				heads: ['Charge'],
			},
			'none',
		);
		expect({ rule: String(outcome.refusal).includes('"Totals" runs once for all'), charges: outcome.charges }).toEqual({
			rule: true,
			charges: [0, 0],
		});
	});

	// The Code rule behind a Merge: charge → Merge (Append, with an Edit Fields branch at Continue) → Code (All Items, Continue).
	it('charge → Merge (Append) → Code (All Items) at Continue: refused', async () => {
		const outcome = await refusedOrOneEach(
			'wf-rt19-code-merge',
			['r19_cm_a', 'r19_cm_b'],
			{
				nodes: [
					httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }),
					editFields('Tag', 'tag', 'x', { onError: 'continueErrorOutput' }),
					node('Merge', 'merge', 3, {}),
					codeAtDefaults('Totals', 'throw new Error("tax service timed out");', { onError: 'continueErrorOutput' }),
				],
				connections: {
					Charge: { main: [toInput('Merge', 0), []] },
					Tag: { main: [toInput('Merge', 1)] },
					Merge: { main: [link('Totals')] },
				},
				heads: ['Charge', 'Tag'],
			},
			'none',
		);
		expect({ rule: String(outcome.refusal).includes('"Totals" runs once for all'), charges: outcome.charges }).toEqual({
			rule: true,
			charges: [0, 0],
		});
	});

	// The Code node's Mode set by an expression giving "runOnceForAllItems": n8n evaluates it, the rule must not read it as Each Item.
	it('charge → Code with Mode set by an expression (All Items) at Continue: refused', async () => {
		const outcome = await refusedOrOneEach(
			'wf-rt19-code-expr',
			['r19_ce_a', 'r19_ce_b'],
			{
				nodes: [
					httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }),
					codeNode('Totals', '={{ "runOnceForAllItems" }}', 'throw new Error("tax service timed out");', {
						onError: 'continueErrorOutput',
					}),
				],
				connections: { Charge: { main: [link('Totals'), []] } },
				heads: ['Charge'],
			},
			'none',
		);
		expect({ rule: String(outcome.refusal).includes('"Totals" runs once for all'), charges: outcome.charges }).toEqual({
			rule: true,
			charges: [0, 0],
		});
	});

	// Always Output Data two hops before the failing call: charge → Code (Each Item) returning nothing for every event, at
	// Always Output Data (one empty item for all of them) → Edit Fields → Notify. Refused by the Always Output Data rule.
	it('charge → Code (Each Item) returning nothing, Always Output Data → Edit Fields → Notify: refused by the Always Output Data rule', async () => {
		const outcome = await refusedOrOneEach(
			'wf-rt19-aod-two',
			['r19_ao_a', 'r19_ao_b'],
			{
				nodes: [
					httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }),
					codeNode('Find Coupon', 'runOnceForEachItem', 'return null;', { onError: 'continueErrorOutput', alwaysOutputData: true }),
					editFields('Note', 'note', 'no coupon', { onError: 'continueErrorOutput' }),
					httpCall('Notify', 'notify', { onError: 'continueErrorOutput' }, '={{ JSON.stringify({ id: "coupon" }) }}'),
				],
				connections: {
					Charge: { main: [link('Find Coupon'), []] },
					'Find Coupon': { main: [link('Note'), []] },
					Note: { main: [link('Notify'), []] },
				},
				heads: ['Charge'],
			},
			'notify',
		);
		expect({ rule: String(outcome.refusal).includes('Always Output Data'), charges: outcome.charges }).toEqual({
			rule: true,
			charges: [0, 0],
		});
	});

	// On Error "Stop Workflow" AND the older continueOnFail on a node inside a sub-workflow defined in Execute Workflow.
	it('the legacy flag beside Stop Workflow on a node inside an inline sub-workflow: refused at publish', async () => {
		useTrigger('wf-rt19-legacy-sub');
		const sub = JSON.stringify({
			nodes: [
				node('Webhook', 'executeWorkflowTrigger', 1.1, { inputSource: 'passthrough' }),
				ifEquals('Valid?', '={{ $json.body.amount }}', '1', { onError: 'stopWorkflow', continueOnFail: true }),
				httpCall('Charge', 'charge'),
			],
			connections: { Webhook: { main: [link('Valid?')] }, 'Valid?': { main: [link('Charge'), []] } },
		});
		const refusal = await refusedAtPublish({
			nodes: [
				node('Run Charge', 'executeWorkflow', 1.3, { source: 'parameter', workflowJson: sub, options: { waitForSubWorkflow: true } }),
			],
			heads: ['Run Charge'],
		});
		expect(String(refusal)).toContain('continueOnFail');
	});

	// n8n's AI Transform node runs its generated JavaScript exactly as a Code node in "Run Once for All Items" does
	// (AiTransform.node.js: sandbox.runCodeAllItems): at Continue its failure is ONE item `{ json: { error } }` with no
	// pairedItem, standing for every event. After an effect with several events it is refused (nodeKinds.ts
	// runsOnceForAllItems); accepted, the transform failing once would fail both keys after both charges and the
	// redelivery charge A and B again (charges [2, 2]).
	it('charge → AI Transform at Continue failing once, two events: refused, or one charge each', async () => {
		const tag = `aiT${Date.now()}`;
		const outcome = await refusedOrOneEach(
			'wf-rt19-ai-transform',
			['r19_ai_a', 'r19_ai_b'],
			{
				nodes: [
					httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }),
					node(
						'Summarise',
						'aiTransform',
						1,
						{
							instructions: 'Add the total of all charges',
							jsCode: `const seen = (globalThis.__rt19 ??= {}); if (!seen['${tag}']) { seen['${tag}'] = true; throw new Error('bad total'); } return $input.all();`,
						},
						{ onError: 'continueErrorOutput' },
					),
				],
				connections: { Charge: { main: [link('Summarise'), []] } },
				heads: ['Charge'],
			},
			'none',
		);
		expect(heldOutcome(outcome)).toBe(true);
	});

	// n8n's Convert to File (1.1, CSV) turns all the events into ONE item paired to every one of them
	// (spreadsheet.operation.js: generatePairedItemData(items.length)): a join, like Aggregate (nodeKinds.ts joinsItems).
	// Charge each event (Continue, error output) → Convert to File (Continue, error output) → upload the CSV report
	// (HTTP, Continue, error output) failing once is refused; accepted, the one failed upload item would be every
	// event's, both keys would fail after both charges, and the redelivery charge A and B again (charges [2, 2]).
	it('charge → Convert to File (CSV) → upload report failing once, two events: refused, or one charge each', async () => {
		const outcome = await refusedOrOneEach(
			'wf-rt19-csv',
			['r19_csv_a', 'r19_csv_b'],
			{
				nodes: [
					httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }),
					node('To CSV', 'convertToFile', 1.1, { operation: 'csv', options: {} }, { onError: 'continueErrorOutput' }),
					httpCall('Upload Report', 'upload', { onError: 'continueErrorOutput' }, '={{ JSON.stringify({ id: "report" }) }}'),
				],
				connections: { Charge: { main: [link('To CSV'), []] }, 'To CSV': { main: [link('Upload Report'), []] } },
				heads: ['Charge'],
			},
			'upload',
		);
		expect(heldOutcome(outcome)).toBe(true);
	});
});
