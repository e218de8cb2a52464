import { createHmac } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

import { HookContext } from 'n8n-core';
import {
	NodeConnectionTypes,
	Workflow,
	type ICredentialDataDecryptedObject,
	type IConnections,
	type INode,
	type INodeExecutionData,
	type INodeParameters,
	type INodeType,
	type IRun,
	type IWebhookResponseData,
	type IWorkflowBase,
	type IWorkflowExecuteAdditionalData,
} from 'n8n-workflow';

import { IdempotentWebhook } from '../../nodes/IdempotentWebhook/IdempotentWebhook.node';
import { WebhookSignatureVerify } from '../../nodes/WebhookSignatureVerify/WebhookSignatureVerify.node';
import { forgetKeptSigningSecrets } from '../../nodes/shared/signingSecret';
import { baseNodesInstalled, loadBaseNodeFiles, loadBaseNodes } from './n8nBaseNodes';
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
} from './n8nEngine';
import { asN8nReceives, callWebhook, n8nCli } from './n8nRequestPath';
import { link } from './settleWorkflows';
import { embeddedModule } from './storeTargets';
import { withSubWorkflowsInProcess, type SubWorkflowsAsN8n } from './triggerProvider';
import { n8nFolderForTheFile } from './triggerWebhookCall';

/*
 * The red-team passes' harness for the Idempotent Webhook trigger in n8n's own engine: n8n 2.41.1's request path (raw
 * body reader, parseBody, webhook() in n8n-core's WebhookContext over a real HTTP exchange), its publish check
 * (checkExists/create on n8n-core's HookContext), its engine (WorkflowExecute, sub-workflows in process), the embedded
 * store in the file's n8n folder, and a local test API whose effect routes count what they committed per event (the
 * business step is n8n's HTTP Request calling it). The provider re-delivers the same signed event until it is
 * answered 2xx, as a Stripe retry would.
 */

/** A workflow's nodes after the trigger: `heads` are the nodes the trigger feeds. */
export interface Step {
	nodes: INode[];
	connections?: IConnections;
	heads: string[];
	/** On the node path: where Reserve's Duplicate output leads (default: Respond 200 (duplicate)). */
	duplicates?: string[];
}

export interface TriggerRedTeamOptions {
	/** Names the path, the signing secret, the execution ids and the n8n folder (`rt22`). */
	tag: string;
	/** Answers a route of the test API that is no effect (a lookup, settings); undefined: not handled here. */
	route?: (route: string, body: Record<string, unknown>, id: string) => unknown;
	/** Wraps the engine an execution runs on (a task runner stand-in, say). */
	engine?: <T extends object>(engine: T) => T;
	/** How far the sub-workflows follow n8n's saving settings and Execute Workflow's options (default: records kept, waited for). */
	subWorkflows?: SubWorkflowsAsN8n;
	/** n8n-nodes-base node files the rows use beyond loadBaseNodes(), by type. */
	baseNodeFiles?: Record<string, string>;
	/** More node types (a package node, a test node), by type. */
	nodeTypes?: Record<string, INodeType>;
	/** The effect routes answer the body they were sent, with `ok` and the id (else the object they made). */
	echoBody?: boolean;
	/** The node path's Reserve lease, in seconds (300: a retry meets the key held). */
	nodeLeaseSeconds?: number;
	/** The node path provider's pause between tries (past a short lease, so a retry can take the key over). */
	providerPauseMs?: number;
}

/** Nodes between Verify and Reserve on the node path: `head` takes Verify's output, `tail` feeds Reserve. */
export interface Before {
	nodes: INode[];
	head: string;
	tail: string;
	connections?: IConnections;
}

/** How a row's node template is built around its step. */
export interface NodeTemplateOptions {
	/** Reserve (default: `reserveNode()`, Key Source Event ID, lease 300 s, at Continue). */
	reserve?: INode;
	before?: Before;
	/** Settle beside the step on Reserve's New output, answering by its outputs (default: none; the step ends in Respond 200). */
	settle?: boolean;
}

/** What the next deliveries send instead of the harness's JSON: another Content-Type, other bytes (signed anew), more headers. */
export interface Sent {
	contentType?: string;
	bytes?: (text: string) => Buffer;
	headers?: Record<string, string>;
}

/** Routes of the test API that count an effect per event. */
const EFFECT_ROUTES = new Set(['charge', 'refund', 'notify', 'ship']);

/** The Events Path option, as the trigger's rows set it: the events are `body.events`. */
export const EVENTS = { options: { eventsPath: 'body.events' } };
export const events = (list: Array<Record<string, unknown>>) => ({ events: list });

/** A node of n8n-nodes-base as a user leaves it. */
export const baseNode = (
	name: string,
	type: string,
	typeVersion: number,
	parameters: INodeParameters,
	extra: Partial<INode> = {},
	y = 0,
): INode => ({
	id: name,
	name,
	type: `n8n-nodes-base.${type}`,
	typeVersion,
	position: [400, y],
	parameters,
	...extra,
});

/** The charge, sending the event's id and its customer (JSON.stringify leaves out a customer the event has not). */
export const CHARGE_BODY = '={{ JSON.stringify({ id: $json.body.id, customer: $json.body.customer }) }}';

/** Before Reserve: the delivery's `body.events` split into one item per event, each event as `body`. */
export const SPLIT_OUT_EVENTS: Before = {
	nodes: [
		baseNode('Split Out Events', 'splitOut', 1, {
			fieldToSplitOut: 'body.events',
			include: 'noOtherFields',
			options: { destinationFieldName: 'body' },
		}),
	],
	head: 'Split Out Events',
	tail: 'Split Out Events',
};

/** Sets up the servers and node types for a describe block, and gives the rows their tools. */
export function triggerRedTeam(options: TriggerRedTeamOptions) {
	const { tag } = options;
	const secret = `whsec_${tag}`;
	const n8nFolder = n8nFolderForTheFile(`${tag}-n8n-`);

	const effects = new Map<string, number>();
	const failing = new Map<string, number>();
	const received: string[] = [];
	const effectsAt = (route: string, id: string) => effects.get(`${route}:${id}`) ?? 0;
	const failNext = (target: string, times = 1): void => void failing.set(target, (failing.get(target) ?? 0) + times);
	const takeFailure = (target: string): boolean => {
		const left = failing.get(target) ?? 0;
		if (left <= 0) return false;
		failing.set(target, left - 1);
		return true;
	};

	async function api(request: IncomingMessage, response: ServerResponse): Promise<void> {
		const body = await jsonBodyOf(request);
		const route = (request.url ?? '/').slice(1).split('?')[0];
		const id = String(body.id ?? '');
		received.push(`${route}:${id}`);
		const answer = (status: number, json: unknown): void => {
			response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
		};
		if (takeFailure(route) || takeFailure(`${route}:${id}`)) return answer(500, { message: 'upstream unavailable' });
		const own = options.route?.(route, body, id);
		if (own !== undefined) return answer(200, own);
		if (EFFECT_ROUTES.has(route)) effects.set(`${route}:${id}`, effectsAt(route, id) + 1);
		if (options.echoBody) return answer(200, { ...body, ok: true, id });
		// The API answers the object it made; a field it was not sent is left out (as many APIs do).
		answer(200, { ok: true, id, ...(body.customer !== undefined ? { customer: body.customer } : {}) });
	}

	let apiServer: http.Server | undefined;
	let apiUrl = '';
	let workflowId = `wf-${tag}`;
	let trigger: INode | undefined;
	/** The node served instead of the trigger (n8n's Webhook, for the node template path). */
	let served: INode | undefined;
	let lastResult: IWebhookResponseData | Error | undefined;
	let handling: Promise<void> = Promise.resolve();
	let triggerServer: http.Server | undefined;
	let triggerUrl = '';
	let executions = 0;
	let subExecutions = 0;

	/** n8n's HTTP Request (4.2) POSTing a JSON body to the test API's `route`, with its Options (Batching, say). */
	const httpCall = (
		name: string,
		route: string,
		extra: Partial<INode> = {},
		jsonBody = '={{ JSON.stringify({ id: $json.body.id }) }}',
		requestOptions: INodeParameters = {},
		y = 0,
	) =>
		baseNode(
			name,
			'httpRequest',
			4.2,
			{ method: 'POST', url: `${apiUrl}/${route}`, sendBody: true, specifyBody: 'json', jsonBody, options: requestOptions },
			extra,
			y,
		);

	const credentials = () =>
		credentialsHelperReading(async (_details, type): Promise<ICredentialDataDecryptedObject> => {
			if (type === 'webhookSignatureApi') return { secret };
			throw new Error(`No credential of type ${type}`);
		});
	const keyFile = () => path.join(n8nFolder(), '.n8n', 'storage', 'n8n-nodes-idempotency', 'keys.sqlite');
	const keyStore = () => embeddedModule().openEmbeddedKeyStore({ file: keyFile() });
	const keyOf = (id: string) => `wf:${workflowId}:evt:${id}`;
	const statuses = async (ids: string[]) =>
		await Promise.all(ids.map(async (id) => (await keyStore().getKeys([keyOf(id)])).get(keyOf(id))?.status ?? null));

	/** What the key table holds for the workflow's keys: key, status, last error, the stored answer (read from the file). */
	function keyRows(): Array<{ key: string; status: string; last_error: string | null; response: string | null }> {
		const { DatabaseSync } = (process as unknown as { getBuiltinModule(id: string): unknown }).getBuiltinModule('node:sqlite') as {
			DatabaseSync: new (
				file: string,
				options: { readOnly: boolean },
			) => { prepare(sql: string): { all(...parameters: unknown[]): unknown[] }; close(): void };
		};
		const database = new DatabaseSync(keyFile(), { readOnly: true });
		try {
			return database.prepare('SELECT * FROM processed_events WHERE key LIKE ? ORDER BY key').all(`wf:${workflowId}:%`) as Array<{
				key: string;
				status: string;
				last_error: string | null;
				response: string | null;
			}>;
		} finally {
			database.close();
		}
	}

	function useTrigger(id: string, parameters: INodeParameters = {}): void {
		workflowId = id;
		served = undefined;
		trigger = packageNode(
			'Webhook',
			'idempotentWebhook',
			{ path: tag, scheme: 'stripe', store: 'embedded', keySource: 'auto', ...parameters },
			{ typeVersion: 3, credentials: { webhookSignatureApi: { id: 'signing', name: 'Signing' } } },
		);
	}
	const activeTrigger = (): INode => {
		if (!trigger) throw new Error('useTrigger() first');
		return trigger;
	};
	/** Serves `node` at the same path for the workflow `id` (its executions are the caller's to run). */
	function serve(id: string, node: INode): void {
		workflowId = id;
		served = node;
	}

	async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
		lastResult = undefined;
		const n8nRequest = await asN8nReceives(request, response);
		if (!n8nRequest) return;
		lastResult = await callWebhook(n8nRequest, response, served ?? activeTrigger(), workflowId, credentials());
		if (!response.writableEnded) response.writeHead(200).end('{"started":true}');
	}

	let sent: Sent | undefined;
	/** Sends the next deliveries as `next` says, until the row ends (undefined: as JSON again). */
	const sendAs = (next: Sent | undefined): void => void (sent = next);

	async function postStripe(body: string): Promise<Response> {
		const bytes = sent?.bytes ? sent.bytes(body) : Buffer.from(body);
		const timestamp = Math.floor(Date.now() / 1000);
		const signature = createHmac('sha256', secret)
			.update(Buffer.concat([Buffer.from(`${timestamp}.`), bytes]))
			.digest('hex');
		const response = await fetch(`${triggerUrl}/webhook/${tag}`, {
			method: 'POST',
			headers: {
				'stripe-signature': `t=${timestamp},v1=${signature}`,
				...sent?.headers,
				'content-type': sent?.contentType ?? 'application/json',
			},
			body: bytes,
		});
		await handling;
		return response;
	}

	const startedItems = (): INodeExecutionData[] =>
		lastResult && !(lastResult instanceof Error) ? ((lastResult.workflowData?.[0] as INodeExecutionData[] | undefined) ?? []) : [];

	const triggerConnections = (step: Step): IConnections => ({ Webhook: { main: [link(...step.heads)] }, ...(step.connections ?? {}) });

	/** Publishes the workflow as n8n 2.x does (checkExists, then create, on n8n-core's HookContext): the refusal, or false. */
	async function refusedAtPublish(step: Step): Promise<string | false> {
		const workflow = new Workflow({
			id: workflowId,
			name: 'publish',
			nodes: [activeTrigger(), ...step.nodes],
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

	const triggerEngine = () => {
		const engine = withSubWorkflowsInProcess(engineBase(credentials()), () => `${tag}-sub-${++subExecutions}`, options.subWorkflows);
		return options.engine ? options.engine(engine) : engine;
	};

	async function runExecution(items: INodeExecutionData[], step: Step) {
		executions += 1;
		const executionId = `${tag}-${executions}`;
		const workflow = inProcessWorkflow(workflowId, [activeTrigger(), ...step.nodes], triggerConnections(step));
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

	/* The node template path: n8n's Webhook (Raw Body) → Verify → [before] → Reserve → the step ---------------------- */

	const nodeWebhook: INode = {
		id: 'Webhook',
		name: 'Webhook',
		type: 'n8n-nodes-base.webhook',
		typeVersion: 2.1,
		position: [0, 0],
		webhookId: `${tag}-node-path`,
		parameters: { httpMethod: 'POST', path: tag, responseMode: 'responseNode', options: { rawBody: true } },
	};
	// Served alone (callWebhook's workflow holds only this node), n8n's Webhook in Respond to Webhook mode refuses to
	// start (no Respond to Webhook node connected): its request phase is served in On Received mode, the same items.
	const useNodePath = (id: string) => serve(id, { ...nodeWebhook, parameters: { ...nodeWebhook.parameters, responseMode: 'onReceived' } });

	/** Respond to Webhook stand-ins (n8n-core's sendResponse, the first answer kept), as the template wires them. */
	const answerNode = (name: string, status: number, y: number): INode => packageNode(name, 'testStep', { status }, { position: [1400, y] });
	const ANSWERS: INode[] = [
		answerNode('Respond 200', 200, 120),
		answerNode('Respond 500 (provider retries)', 500, 280),
		answerNode('Respond 200 (completion refused)', 200, 440),
		answerNode('Respond 503 (not settled)', 503, 600),
		answerNode('Respond 200 (duplicate)', 200, 760),
		answerNode('Respond 409 (in progress)', 409, 920),
		answerNode('Respond 503 (not reserved)', 503, 1080),
		answerNode('Respond 401 (invalid signature)', 401, 1240),
	];
	const reserveNode = (parameters: Record<string, unknown> = {}, name = 'Reserve', y = 0): INode =>
		packageNode(
			name,
			'idempotencyReserve',
			{
				store: 'embedded',
				keySource: 'auto',
				mode: 'lease',
				leaseSeconds: options.nodeLeaseSeconds ?? 300,
				options: {},
				...parameters,
			} as never,
			{ typeVersion: 3, position: [440, y], onError: 'continueRegularOutput' },
		);
	const completeNode = (extra: Partial<INode> = {}, parameters: Record<string, unknown> = {}): INode =>
		packageNode(
			'Mark Complete',
			'idempotencyKey',
			{ operation: 'complete', store: 'embedded', source: 'item', options: {}, ...parameters } as never,
			{ typeVersion: 3, position: [900, 0], ...extra },
		);

	/**
	 * The node template around `step`: Webhook → Verify → [before] → Reserve; Reserve's New → the step's heads ("Name#1":
	 * a head's second input) and Settle when asked; Reserve's other outputs and Verify's invalid output to their answers.
	 */
	function nodeTemplate(step: Step, options: NodeTemplateOptions = {}) {
		const reserve = options.reserve ?? reserveNode();
		const { before, settle = false } = options;
		const nodes: INode[] = [
			nodeWebhook,
			packageNode(
				'Verify',
				'webhookSignatureVerify',
				{ scheme: 'stripe', onInvalid: 'route' },
				{ position: [220, 0], credentials: { webhookSignatureApi: { id: 'signing', name: 'Signing' } } },
			),
			reserve,
			...ANSWERS,
			...(settle
				? [
						packageNode(
							'Settle',
							'idempotencyKey',
							{ operation: 'settle', store: 'embedded', options: {} },
							{ typeVersion: 3, position: [700, 240] },
						),
					]
				: []),
			...(before?.nodes ?? []),
			...step.nodes,
		];
		const heads = step.heads.map((head) => {
			const [name, input] = head.split('#');
			return { node: name, type: NodeConnectionTypes.Main, index: Number(input ?? 0) };
		});
		const connections: IConnections = {
			Webhook: { main: [link('Verify')] },
			Verify: { main: [link(before?.head ?? reserve.name), link('Respond 401 (invalid signature)')] },
			...(before ? { ...before.connections, [before.tail]: { main: [link(reserve.name)] } } : {}),
			[reserve.name]: {
				main: [
					[...heads, ...(settle ? link('Settle') : [])],
					link(...(step.duplicates ?? ['Respond 200 (duplicate)'])),
					link('Respond 409 (in progress)'),
					link('Respond 503 (not reserved)'),
				],
			},
			...(settle
				? {
						Settle: {
							main: [
								link('Respond 200'),
								link('Respond 500 (provider retries)'),
								link('Respond 200 (completion refused)'),
								link('Respond 503 (not settled)'),
							],
						},
					}
				: {}),
			...(step.connections ?? {}),
		};
		return inProcessWorkflow(workflowId, nodes, connections);
	}

	/** One delivery on the node path: posts `body`, runs the execution it started; the answer and the run. */
	async function deliverNodePath(body: unknown, build: () => IWorkflowBase) {
		const response = await postStripe(JSON.stringify(body));
		await response.text();
		const items = startedItems();
		if (items.length === 0) return { answer: response.status as number | undefined, run: undefined as IRun | undefined };
		const executionId = `${tag}-node-${++executions}`;
		const { run } = await executeInProcess(build(), executionId, items, triggerEngine());
		return { answer: webhookAnswer(executionId, run), run };
	}

	/** The provider on the node path: the same bytes until 2xx (at most `attempts`), `pauseMs` between tries. */
	async function provideNodePath(body: unknown, build: () => IWorkflowBase, attempts = 4, pauseMs = options.providerPauseMs ?? 0) {
		const answers: Array<number | undefined> = [];
		const runs: IRun[] = [];
		for (let attempt = 0; attempt < attempts; attempt++) {
			if (attempt > 0 && pauseMs) await new Promise((resolve) => setTimeout(resolve, pauseMs));
			const { answer, run } = await deliverNodePath(body, build);
			answers.push(answer);
			if (run) runs.push(run);
			if (answer !== undefined && answer >= 200 && answer < 300) break;
		}
		return { answers, runs };
	}

	/** The status of a key the node path reserved (`evt:<id>` with Key Source Event ID), null when there is none. */
	const nodeKey = async (key: string) => (await keyStore().getKeys([key])).get(key)?.status ?? null;

	beforeAll(async () => {
		apiServer = http.createServer((request, response) => void api(request, response));
		await new Promise<void>((resolve) => apiServer!.listen(0, '127.0.0.1', resolve));
		apiUrl = `http://127.0.0.1:${(apiServer.address() as AddressInfo).port}`;
		if (!baseNodesInstalled()) return;
		embeddedModule();
		n8nCli();
		addNodeTypes({
			...loadBaseNodes(),
			...loadBaseNodeFiles({ 'n8n-nodes-base.httpRequest': 'HttpRequest/HttpRequest.node.js', ...options.baseNodeFiles }),
			[`${PACKAGE}.idempotentWebhook`]: new IdempotentWebhook(),
			...options.nodeTypes,
		});
		triggerServer = http.createServer((request, response) => {
			handling = handle(request, response);
		});
		await new Promise<void>((resolve) => triggerServer!.listen(0, '127.0.0.1', resolve));
		triggerUrl = `http://127.0.0.1:${(triggerServer.address() as AddressInfo).port}`;
	});
	afterAll(async () => {
		if (apiServer) await new Promise((resolve) => apiServer!.close(resolve));
		if (triggerServer) await new Promise((resolve) => triggerServer!.close(resolve));
		embeddedModule().closeEmbeddedStores();
	});
	afterEach(() => {
		forgetKeptSigningSecrets();
		failing.clear();
		sent = undefined;
	});

	return {
		/** The test API's address (set once the describe block's setup ran). */
		apiUrl: () => apiUrl,
		/** The workflow the rows run now. */
		workflowId: () => workflowId,
		/** A new execution id of this file. */
		nextExecutionId: (kind: string) => `${tag}-${kind}-${++executions}`,
		credentials,
		keyStore,
		serve,
		engine: triggerEngine,
		received,
		effectsAt,
		failNext,
		httpCall,
		useTrigger,
		statuses,
		keyRows,
		postStripe,
		sendAs,
		/** The items the last delivery started an execution with (none: it was answered without one). */
		startedItems,
		refusedAtPublish,
		provide,
		/** The node template path's parts, for rows that compare it with the trigger. */
		nodePath: { useNodePath, reserveNode, completeNode, nodeTemplate, deliverNodePath, provideNodePath, nodeKey },
	};
}

/* Red-team files with a sub-workflow in the step: shared builders --------------------------------------------------
 * The files that put an Execute Workflow node between the events and the charge build the same sub-workflow nodes,
 * the same steps around it on both paths and the same outcome of a row; here once, so a row names only what it varies. */

/** The n8n-nodes-base files every sub-workflow file loads: n8n's Webhook (the node path), Split Out, Sort, the sub-workflow's trigger. */
const SUB_WORKFLOW_BASE_NODE_FILES: Record<string, string> = {
	'n8n-nodes-base.webhook': 'Webhook/Webhook.node.js',
	'n8n-nodes-base.splitOut': 'Transform/SplitOut/SplitOut.node.js',
	'n8n-nodes-base.sort': 'Transform/Sort/Sort.node.js',
	'n8n-nodes-base.executeWorkflowTrigger': 'ExecuteWorkflow/ExecuteWorkflowTrigger/ExecuteWorkflowTrigger.node.js',
};

/** Lookup's body inside a sub-workflow: the event's id and amount, which the echoing test API answers back. */
export const LOOKUP_BODY = '={{ JSON.stringify({ id: $json.body.id, amount: $json.body.amount }) }}';
/** The charge after a sub-workflow: the id of the answer it returned (the event's, when the answer is paired right). */
export const CHARGE_ID = '={{ JSON.stringify({ id: $json.id }) }}';
/** Mark Complete's stored answer: the id of the item it completed, which nodeStored reads back. */
export const RESPOND_WITH_ID = { responseJson: '={{ JSON.stringify({ id: $json.id }) }}' };
/** Mark Complete's two ways to an item's key, each node-path row run with both: Key From Item, and the paired Reserve. */
export const KEY_FROM = { item: { source: 'item' }, paired: { source: 'reserveNode' } } as const;

/** Events A (vip, 300), B (100), C (200), ids `<p>_a`…: a Sort by amount gives B, C, A; an If on vip sends A alone to its true output. */
export const threeEvents = (p: string, extra: Array<Record<string, unknown>> = [{}, {}, {}]) => [
	{ id: `${p}_a`, amount: 300, vip: true, ...extra[0] },
	{ id: `${p}_b`, amount: 100, ...extra[1] },
	{ id: `${p}_c`, amount: 200, ...extra[2] },
];

/** A sub-workflow's Execute Workflow Trigger (all input data), named Webhook: where the harness starts a run. */
/** `inner` moved to `y` (and `x`, by default its own), as a user lays a branch out. */
export const at = (inner: INode, y: number, x = inner.position[0]): INode => ({ ...inner, position: [x, y] });

/**
 * `nodes` one after another: each node's first output to the next, a node at Continue (using error output) with
 * that output left unconnected (its failures are the step's: its keys').
 */
export const chain = (nodes: INode[]): Step => {
	const connections: IConnections = {};
	nodes.forEach((current, index) => {
		const next = nodes[index + 1];
		const errorOutput = current.onError === 'continueErrorOutput';
		connections[current.name] = { main: next ? [link(next.name), ...(errorOutput ? [[]] : [])] : errorOutput ? [[], []] : [[]] };
	});
	return { nodes: nodes.map((each, index) => at(each, 0, 400 + index * 220)), connections, heads: [nodes[0].name] };
};

export const subWorkflowTrigger = (version = 1.2) => baseNode('Webhook', 'executeWorkflowTrigger', version, { inputSource: 'passthrough' });
/** The Execute Workflow Trigger with defined inputs (only `body`): the fields the package added to an item are dropped. */
export const definedInputsTrigger = () =>
	baseNode('Webhook', 'executeWorkflowTrigger', 1.1, {
		inputSource: 'workflowInputs',
		workflowInputs: { values: [{ name: 'body', type: 'any' }] },
	});

/** An If whose true output takes the items for which `field` (an expression) is true. */
export const ifTrue = (field: string, name = 'VIP?') =>
	baseNode(name, 'if', 2.2, {
		conditions: {
			options: { caseSensitive: true, leftValue: '', typeValidation: 'loose', version: 2 },
			conditions: [
				{ id: 'v', leftValue: `={{ ${field} }}`, rightValue: '', operator: { type: 'boolean', operation: 'true', singleValue: true } },
			],
			combinator: 'and',
		},
		looseTypeValidation: true,
		options: {},
	});
/** Sort by `field` (named By Amount, as the sub-workflows wire it). */
export const sortOn = (field: string, order: 'ascending' | 'descending' = 'ascending', name = 'By Amount') =>
	baseNode(name, 'sort', 1, { sortFieldsUi: { sortField: [{ fieldName: field, order }] }, options: {} });
/** A Filter (named Keep) that lets through every event but one with `skip: true`. */
export const keepUnlessSkipped = () =>
	baseNode('Keep', 'filter', 2.2, {
		conditions: {
			options: { caseSensitive: true, leftValue: '', typeValidation: 'loose', version: 2 },
			conditions: [
				{
					id: 'k',
					leftValue: '={{ $json.body.skip === true }}',
					rightValue: '',
					operator: { type: 'boolean', operation: 'false', singleValue: true },
				},
			],
			combinator: 'and',
		},
		looseTypeValidation: true,
		options: {},
	});
/** Edit Fields (named Tag, at Continue) adding `tagged: true` to each item and keeping the rest. */
export const tagNode = () =>
	baseNode(
		'Tag',
		'set',
		3.4,
		{
			mode: 'manual',
			assignments: { assignments: [{ id: 't', name: 'tagged', value: true, type: 'boolean' }] },
			includeOtherFields: true,
			options: {},
		},
		{ onError: 'continueRegularOutput' },
	);
/** Merge 3.2 by fields (Keep Matches, both inputs): an answer (input 1, `id`) joined to its event (input 2, `body.id`). */
export const mergeByEventId = (name = 'Join') =>
	baseNode(name, 'merge', 3.2, {
		mode: 'combine',
		advanced: true,
		mergeByFields: { values: [{ field1: 'id', field2: 'body.id' }] },
		joinMode: 'keepMatches',
		outputDataFrom: 'both',
		options: {},
	});

/**
 * Where Execute Workflow finds its sub-workflow: the workflow's JSON text (Source: Parameter), or Execute Workflow's
 * source parameters as they are (`{ source: 'database', workflowId }`, say).
 */
export type SubWorkflowSource = string | Record<string, unknown>;

/**
 * triggerRedTeam with what every sub-workflow file sets (call it where triggerRedTeam would be called): the test API
 * echoes the body it was sent, so a Lookup's answer keeps the event's fields; the node path's lease (1 s) is shorter
 * than the provider's pause, so a retry takes a key over; Verify's node type and SUB_WORKFLOW_BASE_NODE_FILES beside
 * the file's own. Besides the harness's tools, the rows' builders: the Execute Workflow node, the steps around it, one
 * row's run on either path (workflow `wf-<tag>-<p>`) and its outcome, and the results printed after the file.
 */
export function subWorkflowRedTeam(options: TriggerRedTeamOptions) {
	const { tag } = options;
	const redTeam = triggerRedTeam({
		echoBody: true,
		nodeLeaseSeconds: 1,
		providerPauseMs: 1200,
		...options,
		baseNodeFiles: { ...SUB_WORKFLOW_BASE_NODE_FILES, ...options.baseNodeFiles },
		nodeTypes: { [`${PACKAGE}.webhookSignatureVerify`]: new WebhookSignatureVerify(), ...options.nodeTypes },
	});
	const { effectsAt, failNext, httpCall, keyRows, keyStore, provide, refusedAtPublish, statuses, useTrigger } = redTeam;
	const { completeNode, nodeKey, nodeTemplate, provideNodePath, reserveNode, useNodePath } = redTeam.nodePath;

	/** With `<TAG>_DUMP` set (RT50_DUMP, say): each run's error and every node's output items with their pairing, on stderr. */
	const dump = (label: string, runs: IRun[]): void => {
		if (!process.env[`${tag.toUpperCase()}_DUMP`]) return;
		for (const run of runs)
			process.stderr.write(
				`${tag.toUpperCase()} ${label} ${run.data.resultData.error?.message?.slice(0, 300)} ${JSON.stringify(
					Object.entries(run.data.resultData.runData).map(([name, tasks]) => [
						name,
						tasks.map((task) =>
							task.data?.main.map((items) => (items ?? []).map((item) => [JSON.stringify(item.json).slice(0, 90), item.pairedItem])),
						),
					]),
				)}\n`,
			);
	};

	/** Reserve keyed by each event's `body.id` (`evt:<id>`, what nodeStatuses and nodeStored read). */
	const fieldReserve = () => reserveNode({ keySource: 'field', keyField: 'body.id', keyPrefix: 'evt:' });

	/** Execute Workflow 1.3 at Continue, waiting for the sub-workflow by default. */
	const enrich = (sub: SubWorkflowSource, mode: 'once' | 'each' = 'once', name = 'Enrich', waitForSubWorkflow = true) =>
		baseNode(
			name,
			'executeWorkflow',
			1.3,
			{ ...(typeof sub === 'string' ? { source: 'parameter', workflowJson: sub } : sub), mode, options: { waitForSubWorkflow } },
			{ onError: 'continueRegularOutput' },
		);
	/** Node path: Enrich → Charge (Continue) → Mark Complete (`parameters`) → Respond 200 / 500. */
	const nodeStep = (
		sub: SubWorkflowSource,
		parameters: Record<string, unknown> = {},
		mode: 'once' | 'each' = 'once',
		chargeBody = CHARGE_ID,
	): Step => ({
		nodes: [
			enrich(sub, mode),
			httpCall('Charge', 'charge', { onError: 'continueRegularOutput' }, chargeBody),
			completeNode({ position: [1100, 0] }, parameters),
		],
		connections: {
			Enrich: { main: [link('Charge')] },
			Charge: { main: [link('Mark Complete')] },
			'Mark Complete': { main: [link('Respond 200'), link('Respond 500 (provider retries)')] },
		} as IConnections,
		heads: ['Enrich'],
	});
	/** Trigger path: Enrich → Charge (error output, unconnected). */
	const triggerStep = (sub: SubWorkflowSource, mode: 'once' | 'each' = 'once'): Step => ({
		nodes: [enrich(sub, mode), httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_ID)],
		connections: { Enrich: { main: [link('Charge')] }, Charge: { main: [[], []] } } as IConnections,
		heads: ['Enrich'],
	});

	const charges = (ids: string[]) => ids.map((id) => effectsAt('charge', id));
	/** The statuses of the keys fieldReserve took for `ids`. */
	const nodeStatuses = async (ids: string[]) => await Promise.all(ids.map(async (id) => await nodeKey(`evt:${id}`)));
	/** The ids in the answers Mark Complete stored (RESPOND_WITH_ID) for `ids`' keys, null where none. */
	const nodeStored = async (ids: string[]) => {
		const found = await keyStore().getKeys(ids.map((id) => `evt:${id}`));
		return ids.map((id) => (found.get(`evt:${id}`)?.response as { id?: string } | null | undefined)?.id ?? null);
	};
	/** The ids in the answers the trigger stored, in key order ('other': an answer without one). */
	const triggerStored = () =>
		keyRows().map((row) => (row.response ? ((JSON.parse(row.response) as { id?: string })?.id ?? 'other') : null));

	/**
	 * A trigger-path row: publishes `step`, fails `fail` once, sends `list` until answered 2xx; the charges are counted
	 * for `chargedIds` (default: the events' ids).
	 */
	const runTrigger = async (p: string, step: Step, fail: string | undefined, list = threeEvents(p), chargedIds?: string[]) => {
		const ids = list.map((event) => event.id as string);
		useTrigger(`wf-${tag}-${p}`, EVENTS);
		const refusal = await refusedAtPublish(step);
		if (fail) failNext(fail);
		const { answers, runs } = await provide(events(list), step);
		dump(p, runs);
		return {
			refusal: typeof refusal === 'string' ? refusal.slice(0, 160) : false,
			answers,
			charges: charges(chargedIds ?? ids),
			keys: await statuses(ids),
			stored: triggerStored(),
		};
	};
	/** The same row on the node path: Split Out → fieldReserve → `step`. */
	const runNode = async (p: string, step: Step, fail: string | undefined, list = threeEvents(p), chargedIds?: string[]) => {
		const ids = list.map((event) => event.id as string);
		useNodePath(`wf-${tag}-${p}`);
		if (fail) failNext(fail);
		const { answers, runs } = await provideNodePath(events(list), () =>
			nodeTemplate(step, { reserve: fieldReserve(), before: SPLIT_OUT_EVENTS }),
		);
		dump(p, runs);
		return {
			answers,
			errors: runs.map((run) => run.data.resultData.error?.message?.slice(0, 100) ?? null),
			charges: charges(chargedIds ?? ids),
			keys: await nodeStatuses(ids),
			stored: await nodeStored(ids),
		};
	};

	// What each row found, printed after the file: one read shows every shape's outcome, passing or not.
	const results: Record<string, unknown> = {};
	afterAll(() => {
		if (Object.keys(results).length === 0) return;
		process.stderr.write(
			`${tag.toUpperCase()} RESULTS\n${Object.entries(results)
				.map(([label, value]) => `${label}: ${JSON.stringify(value)}`)
				.join('\n')}\n`,
		);
	});
	const record = <T>(label: string, value: T): T => {
		results[label] = value;
		return value;
	};

	return {
		...redTeam,
		dump,
		fieldReserve,
		enrich,
		nodeStep,
		triggerStep,
		charges,
		nodeStatuses,
		nodeStored,
		triggerStored,
		runTrigger,
		runNode,
		record,
	};
}

/** A stand-in server's request body as JSON; {} for an empty body or one that is not JSON. */
export async function jsonBodyOf(request: IncomingMessage): Promise<Record<string, unknown>> {
	const chunks: Buffer[] = [];
	for await (const chunk of request) chunks.push(chunk as Buffer);
	try {
		return JSON.parse(Buffer.concat(chunks).toString() || '{}') as Record<string, unknown>;
	} catch {
		return {};
	}
}
