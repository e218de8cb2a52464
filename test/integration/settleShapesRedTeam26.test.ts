import { createHmac } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
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
	type IWebhookResponseData,
	type IWorkflowExecuteAdditionalData,
} from 'n8n-workflow';

import { IdempotentWebhook } from '../../nodes/IdempotentWebhook/IdempotentWebhook.node';
import { WebhookSignatureVerify } from '../../nodes/WebhookSignatureVerify/WebhookSignatureVerify.node';
import { forgetKeptSigningSecrets } from '../../nodes/shared/signingSecret';
import { baseNodesInstalled, describeWithN8n, loadBaseNodeFiles, loadBaseNodes } from '../support/n8nBaseNodes';
import {
	addNodeTypes,
	credentialsHelperReading,
	engineBase,
	executeInProcess,
	inProcessWorkflow,
	nodeTypes,
	PACKAGE,
	packageNode,
	webhookAnswer,
	webhookResponses,
} from '../support/n8nEngine';
import { asN8nReceives, callWebhook, n8nCli } from '../support/n8nRequestPath';
import { link, toInput } from '../support/settleWorkflows';
import { embeddedModule } from '../support/storeTargets';
import { withSubWorkflowsInProcess } from '../support/triggerProvider';
import { n8nFolderForTheFile } from '../support/triggerWebhookCall';

/*
 * Twenty-sixth red-team pass: nodes the package counts as unable to fail on the events' data (nodeKinds.ts
 * NEVER_FAILING_TYPES: Limit, Wait, Merge, …) placed after the effect with several events in one run, and Merge / Respond
 * to Webhook placements, behind the Idempotent Webhook trigger (Events Path body.events) and on the node template path
 * (n8n-nodes-base's Webhook 2.1 → Webhook Signature Verify → Split Out of the batch → Idempotency Reserve, Key Source
 * Field → the step, Settle beside it, answered through Respond stand-ins). n8n 2.41.1's request path (raw body reader,
 * parseBody, webhook() in n8n-core's WebhookContext), its publish check (HookContext), its engine (WorkflowExecute), the
 * embedded store in the file's n8n folder. The effect is n8n's HTTP Request calling a local test API that counts what
 * it committed per event. The provider re-delivers the same signed request until it is answered 2xx (at most 4
 * times). A row marked failing breaks a promise: its comment says what happens and how to reproduce it.
 */

const SECRET = 'whsec_rt26';
const n8nFolder = n8nFolderForTheFile('rt26-n8n-');

/* The test API: effects per event, failures on demand ------------------------------------------------------------- */

const effects = new Map<string, number>();
const failing = new Map<string, number>();
const received: string[] = [];
const effectsAt = (route: string, id: string) => effects.get(`${route}:${id}`) ?? 0;

function failNext(target: string, times = 1): void {
	failing.set(target, (failing.get(target) ?? 0) + times);
}
function takeFailure(target: string): boolean {
	const left = failing.get(target) ?? 0;
	if (left <= 0) return false;
	failing.set(target, left - 1);
	return true;
}

const EFFECT_ROUTES = new Set(['charge', 'refund', 'notify', 'ship']);

async function api(request: IncomingMessage, response: ServerResponse): Promise<void> {
	const chunks: Buffer[] = [];
	for await (const chunk of request) chunks.push(chunk as Buffer);
	const text = Buffer.concat(chunks).toString();
	let body: Record<string, unknown> = {};
	try {
		body = JSON.parse(text || '{}') as Record<string, unknown>;
	} catch {
		// not JSON
	}
	const route = (request.url ?? '/').slice(1).split('?')[0];
	const id = String(body.id ?? '');
	received.push(`${route}:${id}`);
	const answer = (status: number, json: unknown): void => {
		response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
	};
	if (takeFailure(route) || takeFailure(`${route}:${id}`)) {
		answer(500, { message: 'upstream unavailable' });
		return;
	}
	if (route === 'lookup') {
		answer(200, { customer: body.customer, tier: body.customer === 'cus_gold' ? 'gold' : 'basic', lookedUpFor: id });
		return;
	}
	if (EFFECT_ROUTES.has(route)) effects.set(`${route}:${id}`, effectsAt(route, id) + 1);
	answer(200, { ...body, ok: true, id });
}

let apiServer: http.Server;
let apiUrl: string;

/* Nodes as users leave them ------------------------------------------------------------------------------------------ */

const node = (name: string, type: string, typeVersion: number, parameters: INodeParameters, extra: Partial<INode> = {}, y = 0): INode => ({
	id: name,
	name,
	type: `n8n-nodes-base.${type}`,
	typeVersion,
	position: [400, y],
	parameters,
	...extra,
});

const httpCall = (
	name: string,
	route: string,
	extra: Partial<INode> = {},
	jsonBody = '={{ JSON.stringify({ id: $json.body.id }) }}',
	options: INodeParameters = {},
	y = 0,
) =>
	node(
		name,
		'httpRequest',
		4.2,
		{ method: 'POST', url: `${apiUrl}/${route}`, sendBody: true, specifyBody: 'json', jsonBody, options },
		extra,
		y,
	);

const CHARGE_BODY = '={{ JSON.stringify({ id: $json.body.id, customer: $json.body.customer }) }}';
const NOTIFY_BODY = '={{ JSON.stringify({ id: $json.id }) }}';

/* The trigger, published and served --------------------------------------------------------------------------------- */

let workflowId = 'wf-rt26';
let trigger: INode;
/** The node the request path serves: the trigger, or n8n's Webhook on the node path. */
let served: INode | undefined;
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
const keyFile = () => path.join(n8nFolder(), '.n8n', 'storage', 'n8n-nodes-idempotency', 'keys.sqlite');
const keyStore = () => embeddedModule().openEmbeddedKeyStore({ file: keyFile() });
const keyOf = (id: string) => `wf:${workflowId}:evt:${id}`;
const statuses = async (ids: string[]) =>
	await Promise.all(ids.map(async (id) => (await keyStore().getKeys([keyOf(id)])).get(keyOf(id))?.status ?? null));

function useTrigger(id: string, parameters: INodeParameters = {}): void {
	workflowId = id;
	served = undefined;
	trigger = packageNode(
		'Webhook',
		'idempotentWebhook',
		{ path: 'rt26', scheme: 'stripe', store: 'embedded', keySource: 'auto', ...parameters },
		{ typeVersion: 3, credentials: { webhookSignatureApi: { id: 'signing', name: 'Signing' } } },
	);
}

async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
	lastResult = undefined;
	const n8nRequest = await asN8nReceives(request, response);
	if (!n8nRequest) return;
	lastResult = await callWebhook(n8nRequest, response, served ?? trigger, workflowId, credentials());
	if (!response.writableEnded) response.writeHead(200).end('{"started":true}');
}

async function postStripe(body: string): Promise<Response> {
	const timestamp = Math.floor(Date.now() / 1000);
	const signature = createHmac('sha256', SECRET).update(`${timestamp}.${body}`).digest('hex');
	const response = await fetch(`${triggerUrl}/webhook/rt26`, {
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

/** Publishes the workflow as n8n 2.x does (checkExists, then create, on n8n-core's HookContext): the refusal, or false. */
async function refusedAtPublish(step: Step): Promise<string | false> {
	const workflow = new Workflow({
		id: workflowId,
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

const triggerEngine = () => withSubWorkflowsInProcess(engineBase(credentials()), () => `rt26-sub-${++subExecutions}`);

async function runExecution(items: INodeExecutionData[], step: Step) {
	executions += 1;
	const executionId = `rt26-${executions}`;
	const workflow = inProcessWorkflow(workflowId, [trigger, ...step.nodes], triggerConnections(step));
	const { run } = await executeInProcess(workflow, executionId, items, triggerEngine());
	const [answer] = webhookResponses.get(executionId) ?? [];
	return { run, status: answer ? Number(answer.statusCode ?? 200) : undefined };
}

/** The provider: posts `body` until a 2xx (at most `attempts` times); each answer, and every run it started. */
async function provide(body: unknown, step: Step, attempts = 4): Promise<{ answers: number[]; runs: IRun[] }> {
	const answers: number[] = [];
	const runs: IRun[] = [];
	for (let attempt = 0; attempt < attempts; attempt++) {
		const response = await postStripe(JSON.stringify(body));
		await response.text();
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

const events = (list: Array<Record<string, unknown>>) => ({ events: list });
const EVENTS = { options: { eventsPath: 'body.events' } };


/* The node template path: n8n's Webhook → Verify → Split Out → Reserve (Field) → the step, Settle beside it ---------- */

const n8nWebhook: INode = {
	id: 'Webhook',
	name: 'Webhook',
	type: 'n8n-nodes-base.webhook',
	typeVersion: 2.1,
	position: [0, 0],
	webhookId: 'rt26-node-path',
	parameters: { httpMethod: 'POST', path: 'rt26', responseMode: 'responseNode', options: { rawBody: true } },
};

function useNodePath(id: string): void {
	workflowId = id;
	served = n8nWebhook;
}

/** Respond to Webhook stand-ins (n8n-core's sendResponse, the first answer kept), as the template wires them. */
const ANSWERS: Array<[string, number, number]> = [
	['Respond 200', 200, 120],
	['Respond 500 (provider retries)', 500, 280],
	['Respond 200 (completion refused)', 200, 440],
	['Respond 503 (not settled)', 503, 600],
	['Respond 200 (duplicate)', 200, 760],
	['Respond 409 (in progress)', 409, 920],
	['Respond 503 (not reserved)', 503, 1080],
	['Respond 401 (invalid signature)', 401, 1240],
];
const answerNode = ([name, status, y]: [string, number, number]): INode =>
	packageNode(name, 'testStep', { status }, { position: [1400, y] });

/** The template's graph around `step` (its heads on Reserve's New output, beside Settle); `before` between Verify and Split Out. */
function nodePathWorkflow(step: Step, before: { nodes: INode[]; connections: IConnections; head: string; tail: string } | undefined) {
	const nodes: INode[] = [
		n8nWebhook,
		packageNode(
			'Verify',
			'webhookSignatureVerify',
			{ scheme: 'stripe', onInvalid: 'route' },
			{ position: [200, 0], credentials: { webhookSignatureApi: { id: 'signing', name: 'Signing' } } },
		),
		node('Split Out Events', 'splitOut', 1, { fieldToSplitOut: 'body.events', include: 'noOtherFields', options: { destinationFieldName: 'body' } }),
		packageNode(
			'Reserve',
			'idempotencyReserve',
			{ store: 'embedded', keySource: 'field', keyField: 'body.id', keyPrefix: 'evt:', mode: 'lease', leaseSeconds: 300, options: {} },
			{ typeVersion: 3, position: [600, 0], onError: 'continueRegularOutput' },
		),
		packageNode('Settle', 'idempotencyKey', { operation: 'settle', store: 'embedded', options: {} }, { typeVersion: 3, position: [900, 240] }),
		...ANSWERS.map(answerNode),
		...(before?.nodes ?? []),
		...step.nodes,
	];
	const connections: IConnections = {
		Webhook: { main: [link('Verify')] },
		Verify: { main: [link(before?.head ?? 'Split Out Events'), link('Respond 401 (invalid signature)')] },
		...(before ? { ...before.connections, [before.tail]: { main: [link('Split Out Events')] } } : {}),
		'Split Out Events': { main: [link('Reserve')] },
		Reserve: {
			main: [
				link(...step.heads, 'Settle'),
				link('Respond 200 (duplicate)'),
				link('Respond 409 (in progress)'),
				link('Respond 503 (not reserved)'),
			],
		},
		Settle: {
			main: [link('Respond 200'), link('Respond 500 (provider retries)'), link('Respond 200 (completion refused)'), link('Respond 503 (not settled)')],
		},
		...(step.connections ?? {}),
	};
	return inProcessWorkflow(workflowId, nodes, connections);
}

/** The provider on the node path: posts `body` until answered 2xx (at most `attempts` times); each answer and run. */
async function provideNodePath(
	body: unknown,
	step: Step,
	attempts = 4,
	before?: { nodes: INode[]; connections: IConnections; head: string; tail: string },
): Promise<{ answers: Array<number | undefined>; runs: IRun[] }> {
	const answers: Array<number | undefined> = [];
	const runs: IRun[] = [];
	for (let attempt = 0; attempt < attempts; attempt++) {
		const response = await postStripe(JSON.stringify(body));
		await response.text();
		const items = startedItems();
		if (items.length === 0) {
			answers.push(response.status);
			break;
		}
		executions += 1;
		const executionId = `rt26-node-${executions}`;
		const { run } = await executeInProcess(nodePathWorkflow(step, before), executionId, items, engineBase(credentials()));
		runs.push(run);
		const answer = webhookAnswer(executionId, run);
		answers.push(answer);
		if (answer !== undefined && answer >= 200 && answer < 300) break;
	}
	return { answers, runs };
}

const nodeKeyStatuses = async (ids: string[]) =>
	await Promise.all(ids.map(async (id) => (await keyStore().getKeys([`evt:${id}`])).get(`evt:${id}`)?.status ?? null));

/** Why Reserve refused the run (its Not Reserved items, or the run's error), '' when it did not. */
const reserveRefusal = (run: IRun | undefined) =>
	JSON.stringify(run?.data.resultData.runData.Reserve?.[0]?.data?.main[3]?.map((item) => item.json) ?? []) +
	(run?.data.resultData.error?.message ?? '');

describeWithN8n('red team 26: "cannot fail" nodes after the effect, Merge and Respond placements, several events', () => {
	beforeAll(async () => {
		apiServer = http.createServer((request, response) => void api(request, response));
		await new Promise<void>((resolve) => apiServer.listen(0, '127.0.0.1', resolve));
		apiUrl = `http://127.0.0.1:${(apiServer.address() as AddressInfo).port}`;
		if (!baseNodesInstalled()) return;
		embeddedModule();
		n8nCli();
		addNodeTypes({
			...loadBaseNodes(),
			...loadBaseNodeFiles({
				'n8n-nodes-base.webhook': 'Webhook/Webhook.node.js',
				'n8n-nodes-base.httpRequest': 'HttpRequest/HttpRequest.node.js',
				'n8n-nodes-base.set': 'Set/Set.node.js',
				'n8n-nodes-base.sort': 'Transform/Sort/Sort.node.js',
				'n8n-nodes-base.splitOut': 'Transform/SplitOut/SplitOut.node.js',
				'n8n-nodes-base.aggregate': 'Transform/Aggregate/Aggregate.node.js',
				'n8n-nodes-base.limit': 'Transform/Limit/Limit.node.js',
				'n8n-nodes-base.respondToWebhook': 'RespondToWebhook/RespondToWebhook.node.js',
			}),
			[`${PACKAGE}.idempotentWebhook`]: new IdempotentWebhook(),
			[`${PACKAGE}.webhookSignatureVerify`]: new WebhookSignatureVerify(),
		});
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

	/* (1) Limit after the charge, its Max Items read by n8n from the first event only -------------------------------- */

	const limitAfterCharge = (): Step => ({
		nodes: [
			httpCall(
				'Charge',
				'charge',
				{ onError: 'continueErrorOutput' },
				'={{ JSON.stringify({ id: $json.body.id, customer: $json.body.customer, settings: $json.body.settings }) }}',
			),
			node('Notify At Most', 'limit', 1, { maxItems: '={{ $json.settings.notify_limit }}' }),
			httpCall('Notify', 'notify', { onError: 'continueErrorOutput' }, NOTIFY_BODY),
		],
		connections: {
			Charge: { main: [link('Notify At Most'), []] },
			'Notify At Most': { main: [link('Notify')] },
			Notify: { main: [[], []] },
		},
		heads: ['Charge'],
	});

	it('trigger: Events [B alone, with settings] → Charge → Limit (Max Items from $json.settings) → Notify: accepted, one charge, one notice', async () => {
		useTrigger('wf-rt26-limit-alone', EVENTS);
		const step = limitAfterCharge();
		const refusal = await refusedAtPublish(step);
		const { answers } = await provide(events([{ id: 'la_b', settings: { notify_limit: 5 } }]), step);
		expect({ refusal, answers, charges: effectsAt('charge', 'la_b'), notices: effectsAt('notify', 'la_b') }).toEqual({
			refusal: false,
			answers: [200],
			charges: 1,
			notices: 1,
		});
	});

	it('trigger: Events [A without settings, B with settings] → Charge (error output) → Limit (Max Items = {{ $json.settings.notify_limit }}) → Notify: B charged once', async () => {
		useTrigger('wf-rt26-limit-expr', EVENTS);
		const step = limitAfterCharge();
		const refusal = await refusedAtPublish(step);
		const { answers, runs } = await provide(events([{ id: 'le_a', settings: { notify_limit: 'unlimited' } }, { id: 'le_b', settings: { notify_limit: 5 } }]), step);
		expect({
			refusal: typeof refusal === 'string' ? refusal.slice(0, 200) : refusal,
			limit: JSON.stringify(runs[0]?.data.resultData.runData['Notify At Most']),
			answers,
			error: runs[0]?.data.resultData.error?.message,
			charges: [effectsAt('charge', 'le_a'), effectsAt('charge', 'le_b')],
			keys: await statuses(['le_a', 'le_b']),
		}).toEqual({ refusal: false, answers: [200], error: undefined, charges: [1, 1], keys: ['completed', 'completed'] });
	});

	/* (2) Node path: Wait "At Specified Time" after the charge, its date read from the first event only ----------------- */

	const waitAfterCharge = (): Step => ({
		nodes: [
			httpCall(
				'Charge',
				'charge',
				{ onError: 'continueErrorOutput' },
				'={{ JSON.stringify({ id: $json.body.id, ship_at: $json.body.ship_at }) }}',
			),
			node('Until Ship Date', 'wait', 1.1, { resume: 'specificTime', dateTime: '={{ $json.ship_at }}' }, { webhookId: 'rt26-wait' }),
			httpCall('Ship', 'ship', { onError: 'continueErrorOutput' }, NOTIFY_BODY),
		],
		connections: {
			Charge: { main: [link('Until Ship Date'), []] },
			'Until Ship Date': { main: [link('Ship')] },
			Ship: { main: [[], []] },
		},
		heads: ['Charge'],
	});

	it('node path: one event [B, ship date passed] → Charge → Wait until {{ $json.ship_at }} → Ship: accepted, charged and shipped once', async () => {
		useNodePath('wf-rt26-wait-alone');
		const { answers, runs } = await provideNodePath(events([{ id: 'wa_b', ship_at: '2020-01-01T00:00:00Z' }]), waitAfterCharge());
		console.log(JSON.stringify(Object.fromEntries(Object.entries(runs[0]?.data.resultData.runData ?? {}).map(([k, v]) => [k, v.map((t) => [t.error?.message, (t.data?.main ?? []).map((o) => JSON.stringify(o ?? []).slice(0, 400))])]))), runs[0]?.data.resultData.error?.message);
		expect({
			refusal: reserveRefusal(runs[0]),
			answers,
			charges: effectsAt('charge', 'wa_b'),
			ships: effectsAt('ship', 'wa_b'),
			keys: await nodeKeyStatuses(['wa_b']),
		}).toEqual({ refusal: '[]', answers: [200], charges: 1, ships: 1, keys: ['completed'] });
	});

	it('node path: Events [A ship_at "asap", B ship date passed] → Charge (error output) → Wait until {{ $json.ship_at }} → Ship: B charged once', async () => {
		useNodePath('wf-rt26-wait-expr');
		const { answers, runs } = await provideNodePath(
			events([
				{ id: 'we_a', ship_at: 'asap' },
				{ id: 'we_b', ship_at: '2020-01-01T00:00:00Z' },
			]),
			waitAfterCharge(),
		);
		expect({
			refusal: reserveRefusal(runs[0]).slice(0, 300),
			answers,
			charges: [effectsAt('charge', 'we_a'), effectsAt('charge', 'we_b')],
			ships: [effectsAt('ship', 'we_a'), effectsAt('ship', 'we_b')],
			keys: await nodeKeyStatuses(['we_a', 'we_b']),
		}).toEqual({ refusal: '[]', answers: [500], charges: [1, 1], ships: [0, 1], keys: ['failed', 'completed'] });
	});
});
