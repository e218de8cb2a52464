import { createHmac } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

import type {
	ICredentialDataDecryptedObject,
	IConnections,
	INode,
	INodeExecutionData,
	INodeParameters,
	IRun,
	ITriggerFunctions,
	IWebhookResponseData,
	IWorkflowBase,
	IWorkflowSettings,
	WorkflowExecuteMode,
} from 'n8n-workflow';

import { OUTCOME_HEADER } from '../../lib/webhook/answers';
import { inboxOwner } from '../../lib/webhook/inbox';
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
	packageNode,
	webhookResponses,
	type EngineBase,
} from '../support/n8nEngine';
import { inProcessDeliveries, keyStatesIn, link, settleWorkflow, type Shape } from '../support/settleWorkflows';
import { withCodeRunner } from '../support/codeTaskRunner';
import { embeddedModule } from '../support/storeTargets';
import { callTriggerWebhook, n8nFolderForTheFile } from '../support/triggerWebhookCall';

/*
 * Seventeenth red-team pass: the per-node SETTINGS and OPTIONS n8n users leave on or change on their business step
 * nodes, with n8n-nodes-base 2.41.1's own nodes in n8n-core's WorkflowExecute. The effect is n8n's real HTTP Request
 * node (4.2) calling a local test API that counts the charges it committed per event (a charge is counted only when
 * the API answers 2xx) and fails the calls it is told to fail. n8n's real Code node (2) runs its JavaScript through a
 * stand-in for n8n's task runner (`startRunnerTask` below) that gives back exactly what @n8n/task-runner 2.41.1's
 * js-task-runner gives back (Run Once for All Items at Continue: one `{ json: { error } }` item with no pairedItem;
 * for Each Item: `{ json: { error }, pairedItem: { item } }`).
 *
 * Fronts: the Idempotent Webhook trigger (Respond When the Workflow Ends, and At Once with the package's own retry
 * runner, inboxRunner.ts runInbox) served over a real HTTP exchange (webhook() in n8n-core's WebhookContext), with and
 * without an Events Path; and the webhook template's node path (Webhook → Idempotency Reserve → the step, Settle After
 * Business Step beside it or chained after it) on a real Postgres. The provider posts the whole delivery again until
 * it gets a 2xx. A row is a plain `it` where the package holds; `it.failing` where it breaks, with what happens.
 */

const SECRET = 'whsec_rt17';
const sleep = async (ms: number) => await new Promise((resolve) => setTimeout(resolve, ms));
// Before anything else: n8n-core keeps the n8n folder it first reads for the rest of the file.
const n8nFolder = n8nFolderForTheFile('rt17-n8n-');

/* The test API: charges per event, failures on demand ------------------------------------------------------------ */

/** Charges the API committed, per event id. */
const charges = new Map<string, number>();
/** Calls still to fail (answered 500, nothing committed), by `<path>:<id>` or `<path>` for any call there. */
const failing = new Map<string, number>();
/** Every call received, in order (`<path>:<id>`). */
const received: string[] = [];
const charged = (id: string) => charges.get(id) ?? 0;

function failNext(target: string, times = 1): void {
	failing.set(target, (failing.get(target) ?? 0) + times);
}

function takeFailure(target: string): boolean {
	const left = failing.get(target) ?? 0;
	if (left <= 0) return false;
	failing.set(target, left - 1);
	return true;
}

async function api(request: IncomingMessage, response: ServerResponse): Promise<void> {
	const chunks: Buffer[] = [];
	for await (const chunk of request) chunks.push(chunk as Buffer);
	const body = JSON.parse(Buffer.concat(chunks).toString() || '{}') as { id?: string; ids?: string[] };
	const route = (request.url ?? '/').slice(1);
	const ids = route === 'batch' ? (body.ids ?? []) : [String(body.id)];
	received.push(`${route}:${ids.join('+')}`);
	const answer = (status: number, json: unknown): void => {
		response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
	};
	if (takeFailure(route) || ids.some((id) => takeFailure(`${route}:${id}`))) {
		answer(500, { message: 'upstream unavailable' });
		return;
	}
	if (route === 'charge' || route === 'batch') for (const id of ids) charges.set(id, charged(id) + 1);
	answer(200, { ok: true, charged: route === 'batch' ? ids : ids[0] });
}

let apiServer: http.Server;
let apiUrl: string;

/* Nodes ---------------------------------------------------------------------------------------------------------- */

const node = (name: string, type: string, typeVersion: number, parameters: INodeParameters, extra: Partial<INode> = {}, y = 0): INode => ({
	id: name,
	name,
	type: `n8n-nodes-base.${type}`,
	typeVersion,
	position: [400, y],
	parameters,
	...extra,
});

/** n8n's HTTP Request (4.2) POSTing `{ id }` (the event's id) to the test API's `route`; `options` as the node's Options. */
const httpCall = (name: string, route: string, options: INodeParameters = {}, extra: Partial<INode> = {}, jsonBody?: string): INode =>
	node(
		name,
		'httpRequest',
		4.2,
		{
			method: 'POST',
			url: `${apiUrl}/${route}`,
			sendBody: true,
			specifyBody: 'json',
			jsonBody: jsonBody ?? '={{ JSON.stringify({ id: $json.body.id }) }}',
			options,
		},
		extra,
	);

/** n8n's Code node (2), JavaScript, in `mode`. */
const codeNode = (name: string, mode: 'runOnceForAllItems' | 'runOnceForEachItem', jsCode: string, extra: Partial<INode> = {}): INode =>
	node(name, 'code', 2, { mode, language: 'javaScript', jsCode }, extra);

/** n8n's If (2) on one number condition, strict type validation (n8n's default). */
const ifNumber = (name: string, left: string, operation: 'gte' | 'lt', right: number, extra: Partial<INode> = {}): INode =>
	node(
		name,
		'if',
		2,
		{
			conditions: {
				options: { caseSensitive: true, leftValue: '', typeValidation: 'strict' },
				conditions: [{ id: 'c1', leftValue: left, rightValue: right, operator: { type: 'number', operation } }],
				combinator: 'and',
			},
			options: {},
		},
		extra,
	);

const stopAndError = (name: string, message: string, extra: Partial<INode> = {}): INode =>
	node(name, 'stopAndError', 1, { errorType: 'errorMessage', errorMessage: message }, extra);

/** A Code node that fails the first time it runs in this file under `tag` (a call it makes times out once), then passes its items on. */
const failsOnceJs = (tag: string, each = false) =>
	`const seen = (globalThis.__rt17 ??= {}); if (!seen['${tag}']) { seen['${tag}'] = true; throw new Error('tax service timed out'); } return ${each ? '{ json: $json }' : '$input.all()'};`;

/* The Idempotent Webhook trigger, served -------------------------------------------------------------------------- */

let workflowId = 'wf-rt17';
let trigger: INode;
let lastResult: IWebhookResponseData | Error | undefined;
let handling: Promise<void> = Promise.resolve();
let triggerServer: http.Server;
let triggerUrl: string;
let executions = 0;

const credentials = () =>
	credentialsHelperReading(async (_details, type): Promise<ICredentialDataDecryptedObject> => {
		if (type === 'webhookSignatureApi') return { secret: SECRET };
		throw new Error(`No credential of type ${type}`);
	});
const keyFile = () =>
	embeddedModule().openEmbeddedKeyStore({ file: path.join(n8nFolder(), '.n8n', 'storage', 'n8n-nodes-idempotency', 'keys.sqlite') });
const keyOf = (id: string) => `wf:${workflowId}:evt:${id}`;
const triggerRecord = async (id: string) => (await keyFile().getKeys([keyOf(id)])).get(keyOf(id));
const triggerStatuses = async (ids: string[]) => await Promise.all(ids.map(async (id) => (await triggerRecord(id))?.status));

/** The trigger (version 3, Stripe-signed, Embedded store) with `parameters` over its defaults, for workflow `id`. */
function useTrigger(id: string, parameters: INodeParameters = {}): void {
	workflowId = id;
	trigger = packageNode(
		'Idempotent Webhook',
		'idempotentWebhook',
		{ path: 'rt17', scheme: 'stripe', store: 'embedded', keySource: 'auto', ...parameters },
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
	const response = await fetch(`${triggerUrl}/webhook/rt17`, {
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
	/** Workflow settings over the package's test defaults (execution order v1). */
	settings?: IWorkflowSettings;
}

/** One execution of the trigger's workflow (the trigger renamed Webhook, then `step`) from `items`, as n8n runs it. */
async function runExecution(items: INodeExecutionData[], step: Step, mode: WorkflowExecuteMode = 'webhook') {
	executions += 1;
	const executionId = `rt17-${executions}`;
	const workflow = inProcessWorkflow(workflowId, [{ ...trigger, name: 'Webhook' }, ...step.nodes], {
		Webhook: { main: [link(...step.heads)] },
		...(step.connections ?? {}),
	});
	workflow.settings = { ...workflow.settings, ...step.settings };
	const { run } = await executeInProcess(workflow, executionId, items, withCodeRunner(engineBase(credentials())), { mode });
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

const runError = (run: IRun | undefined) => String(run?.data.resultData.error?.message ?? '');

/* The webhook template's node path, on Postgres ------------------------------------------------------------------- */

const db = postgresSchemaFixture('shapesrt17', { keyTables: ['processed_events'] });
let templateEngine: EngineBase;
const deliveries = inProcessDeliveries('rt17-tpl', () => templateEngine);
const templateStates = keyStatesIn(db);
const template = (id: string, shape: Shape, settings?: IWorkflowSettings): IWorkflowBase => {
	const data = settleWorkflow(db.schema, id, shape);
	if (settings) data.settings = { ...data.settings, ...settings };
	return data;
};

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
			'n8n-nodes-base.stopAndError': 'StopAndError/StopAndError.node.js',
			'n8n-nodes-base.aggregate': 'Transform/Aggregate/Aggregate.node.js',
		}),
	});
	templateEngine = withCodeRunner(engineWithUpAndDownCredentials(connectionSettings()));
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

/* (1) The trigger, one event per delivery: the HTTP Request node's own options ----------------------------------- */

describeWithN8n('red team 17: the trigger, one event, HTTP Request options and node settings', () => {
	// Settings → Retry On Fail (Max Tries 3, Wait Between Tries 300 ms) on the charge at Stop Workflow, the API failing
	// twice: n8n retries inside the run; the key is completed once the third try succeeds.
	it('HTTP Request, Retry On Fail (3 tries), the API failing twice then 200: one charge, completed, 200', async () => {
		useTrigger('wf-rt17-retry');
		failNext('charge:r17_retry', 2);
		const { answers } = await provide(
			{ id: 'r17_retry' },
			{ nodes: [httpCall('Charge', 'charge', {}, { retryOnFail: true, maxTries: 3, waitBetweenTries: 300 })], heads: ['Charge'] },
		);
		expect({ answers, charges: charged('r17_retry'), key: (await triggerStatuses(['r17_retry']))[0] }).toEqual({
			answers: [200],
			charges: 1,
			key: 'completed',
		});
	});

	// Options → Response → Never Error and Include Response Headers and Status (Full Response), then the check the docs
	// recommend: If statusCode >= 300 → Stop and Error. The API answers 500 once (nothing committed): the key fails,
	// 500; the redelivery charges once.
	it('HTTP Request, Never Error + Full Response → If status >= 300 → Stop and Error, the API 500 once: 500, then one charge', async () => {
		useTrigger('wf-rt17-never-error');
		failNext('charge:r17_never', 1);
		const { answers } = await provide(
			{ id: 'r17_never' },
			{
				nodes: [
					httpCall('Charge', 'charge', { response: { response: { neverError: true, fullResponse: true } } }),
					ifNumber('Failed?', '={{ $json.statusCode }}', 'gte', 300),
					stopAndError('Reject', 'the API refused the charge'),
				],
				connections: { Charge: { main: [link('Failed?')] }, 'Failed?': { main: [link('Reject'), []] } },
				heads: ['Charge'],
			},
		);
		expect({ answers, charges: charged('r17_never'), key: (await triggerStatuses(['r17_never']))[0] }).toEqual({
			answers: [500, 200],
			charges: 1,
			key: 'completed',
		});
	});

	// Workflow Settings → Execution Order "v0 (legacy)" behind the trigger (no Settle node to run early): the key is
	// settled by the execution's end, whatever the order. The charge fails once: 500, the redelivery charges once.
	it('Execution Order v0 (legacy) behind the trigger, the charge failing once: 500, then one charge', async () => {
		useTrigger('wf-rt17-v0');
		failNext('charge:r17_v0', 1);
		const { answers } = await provide(
			{ id: 'r17_v0' },
			{
				nodes: [httpCall('Charge', 'charge'), node('After', 'noOp', 1, {})],
				connections: { Charge: { main: [link('After')] } },
				heads: ['Charge'],
				settings: { executionOrder: 'v0' },
			},
		);
		expect({ answers, charges: charged('r17_v0') }).toEqual({ answers: [500, 200], charges: 1 });
	});

	// An old saved workflow: the If carries the legacy `continueOnFail: true` (no onError). n8n runs it as Continue
	// (regular output); the package reads the legacy flag the same way (nodeKinds.ts onErrorOf) and refuses the If at
	// Continue at the trigger's first step (conditionFailureHidden): nothing runs, nothing is charged.
	it('legacy `continueOnFail: true` on an If before the charge: refused at the first step, nothing charged', async () => {
		useTrigger('wf-rt17-legacy-if');
		const { answers, runs } = await provide(
			{ id: 'r17_legacy_if', amount: '100' },
			{
				nodes: [ifNumber('Valid Amount?', '={{ $json.body.amount }}', 'gte', 1, { continueOnFail: true }), httpCall('Charge', 'charge')],
				connections: { 'Valid Amount?': { main: [link('Charge'), []] } },
				heads: ['Valid Amount?'],
			},
			2,
		);
		expect({ answers, charges: charged('r17_legacy_if'), refusal: runError(runs[0]).includes('continues on error') }).toEqual({
			answers: [500, 500],
			charges: 0,
			refusal: true,
		});
	});

	// A node that carries BOTH `onError: "stopWorkflow"` and the legacy `continueOnFail: true` (an old node whose On
	// Error was later set, or workflow JSON written by the API, an import, a generator). The node's own context reads
	// On Error first (n8n-core base-execute-context continueOnFail), but n8n-core's engine goes on past a failed node
	// when either says so (workflow-execute.js continuesOnError): the If (strict types, the amount a string) throws and
	// n8n passes its input on through the true output to the charge. Refused (nodeKinds.ts errorSettingsDisagree, at
	// publish and at the trigger's first step). Accepted, the key would fail and every redelivery charge again (4 charges).
	it('If with onError "stopWorkflow" AND legacy continueOnFail true, a type error: refused, or charged at most once', async () => {
		useTrigger('wf-rt17-both-flags');
		await provide(
			{ id: 'r17_both', amount: '100' },
			{
				nodes: [
					ifNumber('Valid Amount?', '={{ $json.body.amount }}', 'gte', 1, { onError: 'stopWorkflow', continueOnFail: true }),
					httpCall('Charge', 'charge'),
				],
				connections: { 'Valid Amount?': { main: [link('Charge'), []] } },
				heads: ['Valid Amount?'],
			},
		);
		expect(charged('r17_both')).toBeLessThanOrEqual(1);
	});

	// Code node "Run Once for Each Item" at Continue (using error output) before the charge, its code failing for the
	// event once (a call it makes times out): the event leaves by the error output, nothing is charged, the key fails,
	// 500; the redelivery charges once.
	it('Code (Each Item) at Continue (error output) failing once before the charge: 500, then one charge', async () => {
		useTrigger('wf-rt17-code-each');
		const { answers } = await provide(
			{ id: 'r17_code_each' },
			{
				nodes: [
					codeNode('Enrich', 'runOnceForEachItem', failsOnceJs('each', true), { onError: 'continueErrorOutput' }),
					httpCall('Charge', 'charge'),
				],
				connections: { Enrich: { main: [link('Charge'), []] } },
				heads: ['Enrich'],
			},
		);
		expect({ answers, charges: charged('r17_code_each') }).toEqual({ answers: [500, 200], charges: 1 });
	});
});

/* (2) The trigger with an Events Path: several events in one run ------------------------------------------------- */

describeWithN8n('red team 17: the trigger with an Events Path, node settings with several events', () => {
	const events = (ids: string[]) => ({ events: ids.map((id) => ({ id })) });

	// Options → Batching (1 item per batch, 100 ms between batches) on the charge at Continue (using error output), the
	// API failing B's call once: only B's key fails, 500; the redelivery runs B alone (A and C are copies).
	it('HTTP Request, Batching (1 per batch, 100 ms) at Continue (error output), B failing once: 500, then one charge each', async () => {
		useTrigger('wf-rt17-batching', { options: { eventsPath: 'body.events' } });
		const ids = ['r17_bt_a', 'r17_bt_b', 'r17_bt_c'];
		failNext('charge:r17_bt_b', 1);
		const { answers } = await provide(events(ids), {
			nodes: [
				httpCall('Charge', 'charge', { batching: { batch: { batchSize: 1, batchInterval: 100 } } }, { onError: 'continueErrorOutput' }),
			],
			heads: ['Charge'],
		});
		expect({ answers, charges: ids.map(charged), keys: await triggerStatuses(ids) }).toEqual({
			answers: [500, 200],
			charges: [1, 1, 1],
			keys: ['completed', 'completed', 'completed'],
		});
	});

	// The legacy `continueOnFail: true` on the charge (no onError): n8n makes B's failure an item of its own on the
	// regular output; the package reads the flag as Continue (regular output) and fails B's key alone.
	it('legacy `continueOnFail: true` on the charge, B failing once: 500, then one charge each', async () => {
		useTrigger('wf-rt17-legacy-charge', { options: { eventsPath: 'body.events' } });
		const ids = ['r17_lc_a', 'r17_lc_b'];
		failNext('charge:r17_lc_b', 1);
		const { answers } = await provide(events(ids), {
			nodes: [httpCall('Charge', 'charge', {}, { continueOnFail: true })],
			heads: ['Charge'],
		});
		expect({ answers, charges: ids.map(charged) }).toEqual({ answers: [500, 200], charges: [1, 1] });
	});

	// Retry On Fail on the charge with several events: n8n retries the node for all of them when the first fails.
	// Refused at the trigger's first step (retriedTogether), nothing charged.
	it('HTTP Request, Retry On Fail at Continue (error output), two events: refused at the first step, nothing charged', async () => {
		useTrigger('wf-rt17-retry-together', { options: { eventsPath: 'body.events' } });
		const ids = ['r17_rt_a', 'r17_rt_b'];
		const { answers, runs } = await provide(
			events(ids),
			{ nodes: [httpCall('Charge', 'charge', {}, { onError: 'continueErrorOutput', retryOnFail: true, maxTries: 2 })], heads: ['Charge'] },
			2,
		);
		expect({ answers, charges: ids.map(charged), refusal: runError(runs[0]).includes('Retry On Fail') }).toEqual({
			answers: [500, 500],
			charges: [0, 0],
			refusal: true,
		});
	});

	// Aggregate (All Item Data) → one batch call for every event (Continue, error output), the API failing it once:
	// both keys fail with the one call, nothing was committed; the redelivery charges each once.
	it('Aggregate (All Item Data) → one batch HTTP call failing once: 500, then one charge each', async () => {
		useTrigger('wf-rt17-aggregate', { options: { eventsPath: 'body.events' } });
		const ids = ['r17_ag_a', 'r17_ag_b'];
		failNext('batch', 1);
		const { answers } = await provide(events(ids), {
			nodes: [
				node('All', 'aggregate', 1, { aggregate: 'aggregateAllItemData', destinationFieldName: 'data', options: {} }),
				httpCall(
					'Charge All',
					'batch',
					{},
					{ onError: 'continueErrorOutput' },
					'={{ JSON.stringify({ ids: $json.data.map((e) => e.body.id) }) }}',
				),
			],
			connections: { All: { main: [link('Charge All')] } },
			heads: ['All'],
		});
		expect({ answers, charges: ids.map(charged) }).toEqual({ answers: [500, 200], charges: [1, 1] });
	});

	// Stop and Error after the charge, at Continue (regular output): refused at the first step (stopAfterEffect), at
	// any On Error: it would fail every event's key after their charges.
	it('Stop and Error at Continue after the charge, two events: refused at the first step, nothing charged', async () => {
		useTrigger('wf-rt17-stop-continue', { options: { eventsPath: 'body.events' } });
		const ids = ['r17_se_a', 'r17_se_b'];
		const { answers, runs } = await provide(
			events(ids),
			{
				nodes: [
					httpCall('Charge', 'charge', {}, { onError: 'continueErrorOutput' }),
					stopAndError('Reject', 'stop', { onError: 'continueRegularOutput' }),
				],
				connections: { Charge: { main: [link('Reject'), []] } },
				heads: ['Charge'],
			},
			2,
		);
		expect({ answers, charges: ids.map(charged), refusal: runError(runs[0]).includes('"Reject" ends the execution') }).toEqual({
			answers: [500, 500],
			charges: [0, 0],
			refusal: true,
		});
	});

	// Execution Order v0 (legacy) with several events, the charge at Continue (error output), B failing once.
	it('Execution Order v0 (legacy), two events, B failing once: 500, then one charge each', async () => {
		useTrigger('wf-rt17-v0-events', { options: { eventsPath: 'body.events' } });
		const ids = ['r17_v0_a', 'r17_v0_b'];
		failNext('charge:r17_v0_b', 1);
		const { answers } = await provide(events(ids), {
			nodes: [httpCall('Charge', 'charge', {}, { onError: 'continueErrorOutput' })],
			heads: ['Charge'],
			settings: { executionOrder: 'v0' },
		});
		expect({ answers, charges: ids.map(charged) }).toEqual({ answers: [500, 200], charges: [1, 1] });
	});

	// A Code node in "Run Once for All Items" (the Code node's default mode) after the charge, with several events. At
	// Continue n8n's task runner answers a failure with ONE item `{ json: { error } }` and no pairedItem, standing for
	// every event: refused after an effect as Execute Once is (wiring.ts checkRunsOnceForAll, codeForAllAfterEffect),
	// and at Stop Workflow the refusal does not advise Continue. Accepted, both keys would fail and the redelivery charge
	// A and B again (charges [2, 2]).
	it('charge → Code (All Items) at Continue (error output) failing once: refused, or one charge each', async () => {
		useTrigger('wf-rt17-code-all', { options: { eventsPath: 'body.events' } });
		const ids = ['r17_ca_a', 'r17_ca_b'];
		const { answers } = await provide(events(ids), {
			nodes: [
				httpCall('Charge', 'charge', {}, { onError: 'continueErrorOutput' }),
				codeNode('Totals', 'runOnceForAllItems', failsOnceJs('all-trigger'), { onError: 'continueErrorOutput' }),
			],
			connections: { Charge: { main: [link('Totals'), []] } },
			heads: ['Charge'],
		});
		const refused = answers.every((answer) => answer === 500) && ids.every((id) => charged(id) === 0);
		expect(refused || (answers[answers.length - 1] === 200 && ids.every((id) => charged(id) === 1))).toBe(true);
	});

	// Settings → Always Output Data on a node after the charge that returns no item (a Code node finding no coupon:
	// `return []`): n8n-core makes one empty item paired to EVERY input item (workflow-execute.js ensureAlwaysOutputData),
	// so the next node's call is one call for all the events. Refused like a join after an effect (wiring.ts
	// checkJoinedAfterEffect, emptyItemAfterEffect). Accepted, the Notify call failing once would fail both keys and the
	// redelivery charge A and B again (charges [2, 2]).
	it('charge → Code returning [] with Always Output Data → Notify failing once: refused, or one charge each', async () => {
		useTrigger('wf-rt17-always-output', { options: { eventsPath: 'body.events' } });
		const ids = ['r17_ao_a', 'r17_ao_b'];
		failNext('notify', 1);
		const { answers } = await provide(events(ids), {
			nodes: [
				httpCall('Charge', 'charge', {}, { onError: 'continueErrorOutput' }),
				codeNode('Find Coupon', 'runOnceForAllItems', 'return [];', { onError: 'continueErrorOutput', alwaysOutputData: true }),
				httpCall('Notify', 'notify', {}, { onError: 'continueErrorOutput' }, '={{ JSON.stringify({ id: "coupon-check" }) }}'),
			],
			connections: { Charge: { main: [link('Find Coupon'), []] }, 'Find Coupon': { main: [link('Notify'), []] } },
			heads: ['Charge'],
		});
		const refused = answers.every((answer) => answer === 500) && ids.every((id) => charged(id) === 0);
		expect(refused || (answers[answers.length - 1] === 200 && ids.every((id) => charged(id) === 1))).toBe(true);
	});
});

/* (3) The trigger at Respond At Once: Retry On Fail waiting longer than the lease --------------------------------- */

describeWithN8n('red team 17: At Once, Retry On Fail waiting longer than the lease', () => {
	// Lease 1 s; the charge's Retry On Fail waits 2 s between tries (longer than the lease) and the API fails twice:
	// the run takes ~4 s. The package's retry runner polls every 50 ms meanwhile: the run's heartbeats hold the key
	// (executionEnd.ts holdWhileRunning), so the runner never starts a second run; one charge, completed.
	it('At Once, Lease 1 s, Retry On Fail waiting 2 s (API failing twice): no second run started, one charge, completed', async () => {
		useTrigger('wf-rt17-at-once', { respond: 'atOnce', leaseSeconds: 1, firstRetrySeconds: 0.05 });
		failNext('charge:r17_ao_lease', 2);
		const step: Step = {
			nodes: [httpCall('Charge', 'charge', {}, { retryOnFail: true, maxTries: 3, waitBetweenTries: 2000 })],
			heads: ['Charge'],
		};
		const accepted = await postStripe('{"id":"r17_ao_lease"}');
		expect([accepted.status, accepted.headers.get(OUTCOME_HEADER)]).toEqual([200, 'new']);
		const items = startedItems();
		const retries: Array<Promise<unknown>> = [];
		const context = {
			emit: (data: INodeExecutionData[][]) => retries.push(runExecution(data[0], step, 'trigger').catch(() => undefined)),
			logger: { warn: () => {}, info: () => {}, debug: () => {}, error: () => {} },
		} as unknown as ITriggerFunctions;
		const runner = runInbox(context, { openStore: async () => keyFile(), owner: inboxOwner(workflowId), leaseMs: 1000, pollMs: 50 });
		await runExecution(items, step);
		await sleep(1500);
		await runner.closeFunction?.();
		await Promise.all(retries);
		expect({
			retries: retries.length,
			charges: charged('r17_ao_lease'),
			calls: received.filter((call) => call === 'charge:r17_ao_lease').length,
			key: (await triggerRecord('r17_ao_lease'))?.status,
		}).toEqual({ retries: 0, charges: 1, calls: 3, key: 'completed' });
	});
});

/* (4) The webhook template's node path: Reserve → the step, Settle beside it ------------------------------------ */

describeWithN8n('red team 17: the webhook template, node settings on the step', () => {
	const bodies = (ids: string[]) => ids.map((id) => ({ id }));

	// The Code node of (2) on the template's path: two events in one delivery (two webhook items), the charge (Continue,
	// error output) → Code (All Items, Continue error output) failing once: refused before anything is reserved (503).
	// Accepted, both keys would fail and the redelivery charge both again (charges [2, 2]).
	it('template: charge → Code (All Items) at Continue (error output) failing once: refused, or one charge each', async () => {
		const ids = ['r17_tca_a', 'r17_tca_b'];
		const data = template('wfr17-code-all', {
			nodes: [
				httpCall('Charge', 'charge', {}, { onError: 'continueErrorOutput' }),
				codeNode('Totals', 'runOnceForAllItems', failsOnceJs('all-template'), { onError: 'continueErrorOutput' }),
			],
			connections: { Charge: { main: [link('Totals'), []] } },
			heads: ['Charge'],
		});
		const first = await deliveries.deliver(data, bodies(ids));
		if (first.answer === 503 && ids.every((id) => charged(id) === 0)) return;
		const { answers, lost } = await deliveries.provider(data, bodies(ids), templateStates.statuses, 4);
		expect({ first: first.answer, lost, charges: ids.map(charged), last: answers[answers.length - 1] }).toEqual({
			first: 500,
			lost: [],
			charges: [1, 1],
			last: 200,
		});
	});

	// The both-flags If of (1) on the template's path (Settle beside the step): refused before anything is reserved.
	// Accepted, n8n would go on past the If's failure to the charge, the key fail, and every redelivery charge again.
	it('template: If with onError "stopWorkflow" AND continueOnFail true, a type error: refused, or charged at most once', async () => {
		const data = template('wfr17-both-flags', {
			nodes: [
				ifNumber('Valid Amount?', '={{ $json.body.amount }}', 'gte', 1, { onError: 'stopWorkflow', continueOnFail: true }),
				httpCall('Charge', 'charge'),
			],
			connections: { 'Valid Amount?': { main: [link('Charge'), []] } },
			heads: ['Valid Amount?'],
		});
		await deliveries.provider(data, [{ id: 'r17_tbf', amount: '100' }], templateStates.statuses, 4);
		expect(charged('r17_tbf')).toBeLessThanOrEqual(1);
	});

	// Execution Order v0 (legacy) with Settle CHAINED after the charge (not beside it, where v0 is refused): the
	// settlement at the execution's end covers what Settle does not see; the charge failing once: 500, then one charge.
	it('template: Execution Order v0, Settle chained after the charge, failing once: 500, then one charge', async () => {
		failNext('charge:r17_tv0', 1);
		const data = template(
			'wfr17-v0-chained',
			{
				nodes: [httpCall('Charge', 'charge', {}, { onError: 'continueErrorOutput' })],
				connections: {},
				heads: ['Charge'],
				settleAfter: 'Charge',
			},
			{ executionOrder: 'v0' },
		);
		const { answers, lost } = await deliveries.provider(data, [{ id: 'r17_tv0' }], templateStates.statuses, 4);
		expect({ answers, lost, charges: charged('r17_tv0'), key: (await templateStates.statuses(['r17_tv0']))[0] }).toEqual({
			answers: [500, 200],
			lost: [],
			charges: 1,
			key: 'completed',
		});
	});

	// Settings → Retry On Fail on the charge with one event per delivery (Wait Between Tries 300 ms), the API failing
	// twice: retried inside the run, one charge, Settle completes the key, 200.
	it('template: HTTP Request Retry On Fail, the API failing twice: one charge, completed, 200', async () => {
		failNext('charge:r17_tr', 2);
		const data = template('wfr17-retry', {
			nodes: [httpCall('Charge', 'charge', {}, { retryOnFail: true, maxTries: 3, waitBetweenTries: 300 })],
			connections: {},
			heads: ['Charge'],
		});
		const { answers, lost } = await deliveries.provider(data, [{ id: 'r17_tr' }], templateStates.statuses, 4);
		expect({ answers, lost, charges: charged('r17_tr') }).toEqual({ answers: [200], lost: [], charges: 1 });
	});
});
