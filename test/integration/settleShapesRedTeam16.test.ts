import { createHmac } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

import { WebhookContext } from 'n8n-core';
import {
	NodeConnectionTypes,
	Workflow,
	type ICredentialDataDecryptedObject,
	type IConnections,
	type IExecuteFunctions,
	type INode,
	type INodeExecutionData,
	type INodeType,
	type IRun,
	type IWebhookData,
	type IWebhookResponseData,
	type IWorkflowExecuteAdditionalData,
} from 'n8n-workflow';

import { OUTCOME_HEADER, FIRST_EXECUTION_HEADER } from '../../lib/webhook/answers';
import { inboxOwner } from '../../lib/webhook/inbox';
import { IdempotentWebhook } from '../../nodes/IdempotentWebhook/IdempotentWebhook.node';
import { WebhookSignatureVerify } from '../../nodes/WebhookSignatureVerify/WebhookSignatureVerify.node';
import { forgetKeptSigningSecrets } from '../../nodes/shared/signingSecret';
import { describeWithN8n, loadBaseNodeFiles, n8nInstallDirectory } from '../support/n8nBaseNodes';
import {
	addNodeTypes,
	credentialsHelperReading,
	engineBase,
	executeInProcess,
	inProcessWorkflow,
	nodeTypes,
	PACKAGE,
	packageNode,
	webhookResponses,
} from '../support/n8nEngine';
import { link } from '../support/settleWorkflows';
import { embeddedModule } from '../support/storeTargets';
import { n8nFolderForTheFile } from '../support/triggerWebhookCall';

/*
 * Sixteenth red-team pass: today's rules, attacked.
 *  (1) lib/keys/deriveKey.ts keyBody: a request's key is read from its raw bytes as JSON whenever they are JSON and
 *      the (unsigned) Content-Type does not say JSON. Where the Content-Type DOES say JSON, the body as parsed is
 *      trusted instead, and that body is not always the raw bytes' JSON: the trigger's own parser (lib/webhook/body.ts)
 *      does not strip a BOM, n8n's parseBody parses only exactly application/json (not +json), and a node between
 *      n8n's Webhook and Reserve may rewrite `body` while the raw bytes stay in binary `data`.
 *  (2) multipart: Verify refuses it, but Idempotency Reserve still reads binary `data` as the raw body.
 *  (3)/(5) the short Wait accepted behind the trigger, in a loop, At Once, against the lease and the beats.
 * n8n 2.41.1's request path (its raw body reader and parseBody, its Webhook node 2.1) and engine (WorkflowExecute),
 * the embedded store in the file's n8n folder. A row marked failing breaks a promise: its comment says what happens,
 * where, and how to reproduce it.
 */

const SECRET = 'whsec_rt16_stripe_secret';
const HEADER_AUTH = { name: 'X-Partner-Key', value: 'hk_rt16_0123456789abcdef' };
const BASIC = { user: 'rt16-sender', password: 'bp_rt16_password' };

/** The signing credential as saved: each row may change it (the kept copy is forgotten after each row). */
let signing: ICredentialDataDecryptedObject = { secret: SECRET };

const credentialsHelper = () =>
	credentialsHelperReading(async (_details, type): Promise<ICredentialDataDecryptedObject> => {
		if (type === 'webhookSignatureApi') return { ...signing };
		if (type === 'idempotentWebhookHeaderAuthApi') return { ...HEADER_AUTH };
		if (type === 'idempotentWebhookBasicAuthApi') return { ...BASIC };
		throw new Error(`No credential of type ${type}`);
	});

/* n8n's own request path, from its install ---------------------------------------------------------------------- */

/** n8n's request (rawBody: the exact bytes once read, declared on IncomingMessage by n8n-workflow). */
interface N8nRequest extends IncomingMessage {
	body?: unknown;
	contentType?: string;
	query: Record<string, string>;
	params: Record<string, string>;
	readRawBody(): Promise<void>;
}

interface N8nCli {
	rawBodyReader(request: N8nRequest, response: ServerResponse, next: () => void): void;
	parseBody(request: N8nRequest): Promise<void>;
	parseFormData(request: N8nRequest): Promise<{ body: unknown; cleanup: () => Promise<void> }>;
}

let cli: N8nCli | undefined;

/** n8n's body-parser middleware and multipart parser, loaded with Node's own require (jest's cannot load n8n). */
function n8nCli(): N8nCli {
	if (cli) return cli;
	const directory = path.join(n8nInstallDirectory(), 'node_modules', 'n8n');
	const { createRequire } = (process as unknown as { getBuiltinModule(id: string): typeof import('node:module') }).getBuiltinModule(
		'node:module',
	);
	const nativeRequire = createRequire(path.join(directory, 'package.json'));
	const bodyParser = nativeRequire(path.join(directory, 'dist', 'middlewares', 'body-parser.js')) as Pick<
		N8nCli,
		'rawBodyReader' | 'parseBody'
	>;
	const formData = nativeRequire(path.join(directory, 'dist', 'webhooks', 'webhook-form-data.js')) as {
		createMultiFormDataParser(maxMb: number): N8nCli['parseFormData'];
	};
	const { Container } = nativeRequire('@n8n/di') as { Container: { get(type: unknown): { endpoints: { formDataFileSizeMax: number } } } };
	const { GlobalConfig } = nativeRequire('@n8n/config') as { GlobalConfig: unknown };
	cli = {
		rawBodyReader: bodyParser.rawBodyReader,
		parseBody: bodyParser.parseBody,
		parseFormData: formData.createMultiFormDataParser(Container.get(GlobalConfig).endpoints.formDataFileSizeMax),
	};
	return cli;
}

/** webhook-helpers.js isParsableContentType (n8n 2.41.1). */
function isParsableContentType(contentType: string | undefined): boolean {
	if (!contentType) return false;
	return (
		contentType.startsWith('application/json') ||
		contentType.startsWith('text/plain') ||
		contentType.startsWith('application/x-www-form-urlencoded') ||
		contentType.endsWith('/xml') ||
		contentType.endsWith('+xml')
	);
}

/**
 * What n8n does with a webhook request before it calls the node's webhook() (a node of version > 1): its raw body
 * reader, then parseRequestBody. A body n8n cannot parse is answered by n8n itself (its error's status); the
 * node is then never called.
 */
async function asN8nReceives(request: IncomingMessage, response: ServerResponse): Promise<N8nRequest | undefined> {
	const n8n = n8nCli();
	const url = new URL(request.url ?? '/', 'http://localhost');
	const n8nRequest = Object.assign(request, { query: Object.fromEntries(url.searchParams), params: {} }) as N8nRequest;
	n8n.rawBodyReader(n8nRequest, response, () => {});
	try {
		if (n8nRequest.contentType === 'multipart/form-data') {
			const { body, cleanup } = await n8n.parseFormData(n8nRequest);
			n8nRequest.body = body;
			response.on('close', () => void cleanup());
		} else if (isParsableContentType(n8nRequest.contentType)) {
			await n8n.parseBody(n8nRequest);
		}
	} catch (error) {
		const status = (error as { httpStatusCode?: number }).httpStatusCode ?? 500;
		response.writeHead(status).end(JSON.stringify({ n8nError: (error as Error).message }));
		return undefined;
	}
	return n8nRequest;
}

/** A webhook node's webhook() as n8n calls it: n8n-core's WebhookContext, the request and response n8n prepared. */
async function callWebhook(
	request: N8nRequest,
	response: ServerResponse,
	node: INode,
	workflowId: string,
): Promise<IWebhookResponseData | Error> {
	const nodeType = nodeTypes.getByNameAndVersion(node.type, node.typeVersion);
	const additionalData = {
		...engineBase(credentialsHelper()),
		httpRequest: request,
		httpResponse: response,
	} as unknown as IWorkflowExecuteAdditionalData;
	const webhookData = { webhookDescription: nodeType.description.webhooks![0], workflowId, node: node.name } as unknown as IWebhookData;
	const workflow = new Workflow({ id: workflowId, nodes: [node], connections: {}, active: true, nodeTypes });
	const context = new WebhookContext(workflow, node, additionalData, 'webhook', webhookData, [], null);
	try {
		// As n8n's webhook.service.js: a node class (n8n-nodes-base's Webhook extends Node) is handed the context, a plain node type is called with it as `this`.
		const webhook = nodeType.webhook as unknown as (this: unknown, context?: unknown) => Promise<IWebhookResponseData>;
		return webhook.length >= 1 ? await webhook.call(nodeType, context) : await webhook.call(context);
	} catch (error) {
		return error as Error;
	}
}

/* The served node ------------------------------------------------------------------------------------------------- */

let activeWorkflowId = 'wf-rt16';
let activeNode: INode;
let lastResult: IWebhookResponseData | Error | undefined;
let handling: Promise<void> = Promise.resolve();

async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
	lastResult = undefined;
	const n8nRequest = await asN8nReceives(request, response);
	if (!n8nRequest) return;
	lastResult = await callWebhook(n8nRequest, response, activeNode, activeWorkflowId);
	// n8n answers what the node did not (the execution's answer is read from webhookResponses).
	if (!response.writableEnded) response.writeHead(200).end('{"started":true}');
}

let server: http.Server;
let baseUrl: string;
const n8nFolder = n8nFolderForTheFile('rt16-n8n-');
const keyFile = () => path.join(n8nFolder(), '.n8n', 'storage', 'n8n-nodes-idempotency', 'keys.sqlite');
const keyStore = () => embeddedModule().openEmbeddedKeyStore({ file: keyFile() });
const stored = async (key: string) => (await keyStore().getKeys([key], { inboxItem: true })).get(key);
const keyOf = (id: string | number) => `wf:${activeWorkflowId}:evt:${id}`;
/** Every key of the active workflow (wf:<id>:…), as the key table holds them. */
const keysOfWorkflow = async (): Promise<string[]> => {
	const { DatabaseSync } = (process as unknown as { getBuiltinModule(id: string): unknown }).getBuiltinModule('node:sqlite') as {
		DatabaseSync: new (
			file: string,
			options: { readOnly: boolean },
		) => { prepare(sql: string): { all(...parameters: unknown[]): unknown[] }; close(): void };
	};
	const database = new DatabaseSync(keyFile(), { readOnly: true });
	try {
		const rows = database.prepare('SELECT key FROM processed_events WHERE key LIKE ?').all(`wf:${activeWorkflowId}:%`) as Array<{
			key: string;
		}>;
		return rows.map((row) => row.key).sort();
	} finally {
		database.close();
	}
};

/** The items of the execution the last delivery started; none when it started none. */
const startedItems = (): INodeExecutionData[] =>
	lastResult && !(lastResult instanceof Error) ? ((lastResult.workflowData?.[0] as INodeExecutionData[] | undefined) ?? []) : [];

interface Answer {
	status: number;
	outcome: string | null;
	firstExecution: string | null;
	text: string;
	started: number;
}

async function post(body: string | Buffer | FormData, headers: Record<string, string> | Headers, route = 'rt16'): Promise<Answer> {
	const response = await fetch(`${baseUrl}/webhook/${route}`, { method: 'POST', headers, body: body as RequestInit['body'] });
	const text = await response.text();
	await handling;
	return {
		status: response.status,
		outcome: response.headers.get(OUTCOME_HEADER),
		firstExecution: response.headers.get(FIRST_EXECUTION_HEADER),
		text,
		started: startedItems().length,
	};
}

/* Signatures as the providers make them ------------------------------------------------------------------------- */

const now = () => Math.floor(Date.now() / 1000);
const hmac = (algorithm: string, key: string | Buffer, content: string | Buffer) => createHmac(algorithm, key).update(content).digest();

function stripeHeader(body: string | Buffer, { secret = SECRET, t = now() }: { secret?: string; t?: number | string } = {}): string {
	return `t=${t},v1=${hmac('sha256', secret, Buffer.concat([Buffer.from(`${t}.`), Buffer.from(body)])).toString('hex')}`;
}
const stripeHeaders = (body: string | Buffer, extra: Record<string, string> = {}, secret = SECRET) => ({
	'content-type': 'application/json',
	'stripe-signature': stripeHeader(body, { secret }),
	...extra,
});

/* The trigger and the step after it ------------------------------------------------------------------------------ */

const trigger = (scheme: string, parameters: Record<string, unknown> = {}, credentials: INode['credentials'] = {}) =>
	packageNode(
		'Idempotent Webhook',
		'idempotentWebhook',
		{ path: 'rt16', scheme, store: 'embedded', keySource: 'auto', ...parameters },
		{ typeVersion: 3, credentials: { webhookSignatureApi: { id: 'signing', name: 'Signing' }, ...credentials } },
	);

/** Every charge the step made: the event id of each. */
const charges: string[] = [];
const chargesFor = (id: string) => charges.filter((charge) => charge === id).length;

/** The id the signed payload names: the parsed body's `id`, else the `id` in the item's raw body bytes. */
async function eventIdOf(context: IExecuteFunctions, item: INodeExecutionData, index: number): Promise<string> {
	const body = item.json.body as unknown;
	if (body !== null && typeof body === 'object' && 'id' in body) return String((body as { id: unknown }).id);
	if (item.binary?.data) {
		try {
			const raw = await context.helpers.getBinaryDataBuffer(index, 'data');
			return String(
				(
					JSON.parse(
						raw
							.toString('utf8')
							.replace(/^\ufeff/, '')
							.trim(),
					) as { id?: unknown }
				).id ?? '',
			);
		} catch {
			return '';
		}
	}
	return '';
}

/** The business step: one charge per item, for the event its signed payload names; answers a receipt. */
class Rt16Charge implements INodeType {
	description: INodeType['description'] = {
		displayName: 'RT16 Charge',
		name: 'rt16Charge',
		group: ['transform'],
		version: 1,
		description: 'Charges the event the payload names',
		defaults: { name: 'Charge' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		properties: [],
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const output: INodeExecutionData[] = [];
		for (const [index, item] of this.getInputData().entries()) {
			const id = await eventIdOf(this, item, index);
			charges.push(id);
			output.push({ json: { charged: id, receipt: `rcpt_rt16_${id}_only_for_the_sender` }, pairedItem: { item: index } });
		}
		return [output];
	}
}

const chargeNode = () => packageNode('Charge', 'rt16Charge', {}, { position: [400, 0] });

/** Runs the execution the trigger started (the trigger renamed Webhook, then Charge), as n8n does. */
async function runTriggered(executionId: string, items = startedItems()): Promise<{ run: IRun; status?: number; body?: unknown }> {
	const workflow = inProcessWorkflow(activeWorkflowId, [{ ...activeNode, name: 'Webhook' }, chargeNode()], {
		Webhook: { main: [link('Charge')] },
	});
	const { run } = await executeInProcess(workflow, executionId, items, engineBase(credentialsHelper()));
	const [answer] = webhookResponses.get(executionId) ?? [];
	return { run, status: answer ? Number(answer.statusCode ?? 200) : undefined, body: answer?.body };
}

let executionCount = 0;
/** Posts, and runs the execution the delivery started, if any. */
async function deliver(
	body: string | Buffer | FormData,
	headers: Record<string, string> | Headers,
): Promise<Answer & { answered?: number }> {
	const answer = await post(body, headers);
	if (answer.started === 0) return answer;
	const { status } = await runTriggered(`rt16-${++executionCount}`);
	return { ...answer, answered: status };
}

/* The node path: n8n's Webhook node → Webhook Signature Verify → Idempotency Reserve → Charge, Settle beside it ------- */

const n8nWebhook = (rawBody: boolean): INode => ({
	id: 'Webhook',
	name: 'Webhook',
	type: 'n8n-nodes-base.webhook',
	typeVersion: 2.1,
	position: [0, 0],
	webhookId: 'rt16-node-path',
	parameters: { httpMethod: 'POST', path: 'rt16', responseMode: 'onReceived', options: rawBody ? { rawBody: true } : {} },
});

interface NodePathSettings {
	/** A node between Verify (or the Webhook) and Reserve. */
	between?: INode;
	/** No Webhook Signature Verify (an unsigned sender). */
	noVerify?: boolean;
	/** Webhook Signature Verify's parameters (Scheme Stripe unless given). */
	verify?: Record<string, unknown>;
	/** Idempotency Reserve's key parameters (Key Source Auto unless given). */
	reserve?: Record<string, unknown>;
}

function nodePathWorkflow(webhook: INode, { verify = {}, reserve = {}, between, noVerify = false }: NodePathSettings) {
	const nodes: INode[] = [
		webhook,
		packageNode(
			'Verify',
			'webhookSignatureVerify',
			{ scheme: 'stripe', onInvalid: 'route', ...verify },
			{ position: [200, 0], credentials: { webhookSignatureApi: { id: 'signing', name: 'Signing' } } },
		),
		packageNode(
			'Reserve',
			'idempotencyReserve',
			{ store: 'embedded', keySource: 'auto', mode: 'lease', leaseSeconds: 300, options: {}, ...reserve },
			{ typeVersion: 3, position: [400, 0] },
		),
		{ ...chargeNode(), position: [600, 0], onError: 'continueErrorOutput' },
		packageNode(
			'Settle',
			'idempotencyKey',
			{ operation: 'settle', store: 'embedded', options: {} },
			{ typeVersion: 3, position: [600, 240] },
		),
	];
	if (between) nodes.push(between);
	const intoReserve = between ? between.name : 'Reserve';
	const connections: IConnections = {
		Webhook: { main: [link(noVerify ? intoReserve : 'Verify')] },
		Verify: { main: [link(intoReserve), []] },
		Reserve: { main: [link('Charge', 'Settle')] },
		...(between ? { [between.name]: { main: [link('Reserve')] } } : {}),
	};
	return inProcessWorkflow(
		activeWorkflowId,
		noVerify ? nodes.filter((node) => node.name !== 'Verify') : nodes,
		noVerify ? Object.fromEntries(Object.entries(connections).filter(([name]) => name !== 'Verify')) : connections,
	);
}

/** Posts to n8n's Webhook node and runs the execution it started: what each node gave. */
async function deliverNodePath(
	rawBody: boolean,
	body: string | Buffer | FormData,
	headers: Record<string, string> | Headers,
	settings: NodePathSettings = {},
) {
	activeNode = n8nWebhook(rawBody);
	const answer = await post(body, headers);
	const items = startedItems();
	if (items.length === 0) return { answer, run: undefined };
	const { run } = await executeInProcess(
		nodePathWorkflow(activeNode, settings),
		`rt16-node-${++executionCount}`,
		items,
		engineBase(credentialsHelper()),
	);
	const outputOf = (node: string, index: number) => run.data.resultData.runData[node]?.[0]?.data?.main[index] ?? [];
	return {
		answer,
		run,
		valid: outputOf('Verify', 0).length,
		invalid: outputOf('Verify', 1).length,
		reason: (outputOf('Verify', 1)[0]?.json.signature as { reason?: string } | undefined)?.reason,
		reservedNew: outputOf('Reserve', 0).length,
		duplicate: outputOf('Reserve', 1).length,
		/** The body of the item Reserve let through as New (what the step acts on). */
		newBody: outputOf('Reserve', 0)[0]?.json.body,
		error: run.data.resultData.error?.message,
	};
}

/** A reserved key of the Reserve node (no workflow prefix). */
const storedShared = async (key: string) => (await keyStore().getKeys([key])).get(key);

/** A stand-in for n8n's Edit Fields (Set keeps the binary by default): the body normalised to the invoice it is about. */
class Rt16Normalize implements INodeType {
	description: INodeType['description'] = {
		displayName: 'RT16 Normalize',
		name: 'rt16Normalize',
		group: ['transform'],
		version: 1,
		description: 'body = { id: body.data.object.id }',
		defaults: { name: 'Normalize' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		properties: [],
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return [
			this.getInputData().map((item, index) => {
				const body = item.json.body as { data?: { object?: { id?: string } } } | undefined;
				const invoice = typeof body === 'object' && body !== null ? body.data?.object?.id : undefined;
				return { json: { ...item.json, body: { id: invoice ?? null } }, binary: item.binary, pairedItem: { item: index } };
			}),
		];
	}
}

const waitNode = (name: string, seconds: number): INode => ({
	id: name,
	name,
	type: 'n8n-nodes-base.wait',
	typeVersion: 1.1,
	position: [200, 0],
	parameters: { resume: 'timeInterval', amount: seconds, unit: 'seconds' },
});

const sleep = async (ms: number) => await new Promise((resolve) => setTimeout(resolve, ms));

describeWithN8n('red team 16: the raw-body key, multipart, the short Wait — attacked', () => {
	beforeAll(async () => {
		embeddedModule();
		n8nCli();
		addNodeTypes({
			...loadBaseNodeFiles({ 'n8n-nodes-base.webhook': 'Webhook/Webhook.node.js', 'n8n-nodes-base.wait': 'Wait/Wait.node.js' }),
			[`${PACKAGE}.rt16Charge`]: new Rt16Charge(),
			[`${PACKAGE}.rt16Normalize`]: new Rt16Normalize(),
			[`${PACKAGE}.webhookSignatureVerify`]: new WebhookSignatureVerify(),
			[`${PACKAGE}.idempotentWebhook`]: new IdempotentWebhook(),
		});
		server = http.createServer((request, response) => {
			handling = handle(request, response);
		});
		await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
		baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
	});
	afterAll(async () => {
		await new Promise((resolve) => server.close(resolve));
		embeddedModule().closeEmbeddedStores();
	});
	afterEach(() => {
		forgetKeptSigningSecrets();
		signing = { secret: SECRET };
	});
	const use = (workflowId: string, node: INode) => {
		activeWorkflowId = workflowId;
		activeNode = node;
	};

	/* (1) keyBody on the trigger -------------------------------------------------------------------------------------- */

	// A genuine delivery whose bytes start with a UTF-8 BOM (EF BB BF; some .NET / Windows senders write one), sent as
	// application/json, then the same bytes and Stripe-Signature as text/plain: one key. The trigger's parser leaves the
	// BOM out as n8n's does (lib/webhook/body.ts parseBody), and keyBody (lib/keys/deriveKey.ts) reads bytes that are
	// JSON as JSON whenever the body it is given is not an object. Before, the JSON parse threw on the BOM, the first was
	// keyed by its body hash, the copy by its id: two keys, two charges.
	it('trigger: a BOM-prefixed genuine delivery as application/json, its copy as text/plain: a duplicate, one charge', async () => {
		use('wf-rt16-bom', trigger('stripe'));
		const body = '\ufeff{"id":"evt_bom","amount":100}';
		const signature = stripeHeader(body);
		const first = await deliver(body, { 'content-type': 'application/json', 'stripe-signature': signature });
		const copy = await deliver(body, { 'content-type': 'text/plain', 'stripe-signature': signature });
		expect({
			first: [first.status, first.outcome, first.answered],
			copy: [copy.status, copy.outcome, copy.started],
			charges: chargesFor('evt_bom'),
			keys: await keysOfWorkflow(),
		}).toEqual({ first: [200, 'new', 200], copy: [200, 'duplicate', 0], charges: 1, keys: [keyOf('evt_bom')] });
	});

	// Held. Copies of a genuine delivery under every other Content-Type spelling keep its key on the trigger: +json
	// (cloudevents, vnd.api), a charset, upper case, text/plain with a charset, a form, none at all. A body with the id
	// twice (JSON.parse: the last wins, and so does the raw reader), leading whitespace and an id beyond 2^53 (read
	// exactly from the bytes) are the same key read as JSON or as text.
	it('trigger: copies as +json, with a charset, in upper case, as text, as a form, without Content-Type; duplicate members; leading whitespace and 2^53+1: one key, one charge each', async () => {
		use('wf-rt16-ct', trigger('stripe'));
		const outcomes: Record<string, unknown[]> = {};
		const run = async (label: string, id: string, body: string, copies: Array<string | undefined>) => {
			const signature = stripeHeader(body);
			const before = charges.length;
			const first = await deliver(body, { 'content-type': 'application/json', 'stripe-signature': signature });
			const answers: unknown[] = [first.outcome];
			for (const contentType of copies) {
				const headers: Record<string, string> = { 'stripe-signature': signature };
				if (contentType !== undefined) headers['content-type'] = contentType;
				// A Buffer body: fetch adds no Content-Type of its own.
				const copy = await deliver(Buffer.from(body), headers);
				answers.push(copy.outcome);
			}
			outcomes[label] = [...answers, charges.length - before, (await stored(keyOf(id)))?.status ?? null];
		};
		const spellings = [
			'application/cloudevents+json',
			'application/vnd.api+json',
			'application/json; charset=utf-8',
			'APPLICATION/JSON',
			'text/plain; charset=utf-8',
			'application/x-www-form-urlencoded',
			undefined,
		];
		await run('spellings', 'evt_ct', '{"id":"evt_ct","amount":100}', spellings);
		await run('duplicate members', 'evt_dup_last', '{"id":"evt_dup_first","amount":1,"id":"evt_dup_last"}', ['text/plain']);
		await run('whitespace, 2^53+1', '9007199254740993', ' \r\n\t {"id":9007199254740993}', [
			'text/plain',
			'application/x-www-form-urlencoded',
		]);
		expect({ outcomes, keys: (await keysOfWorkflow()).length }).toEqual({
			outcomes: {
				spellings: ['new', ...spellings.map(() => 'duplicate'), 1, 'completed'],
				'duplicate members': ['new', 'duplicate', 1, 'completed'],
				'whitespace, 2^53+1': ['new', 'duplicate', 'duplicate', 1, 'completed'],
			},
			keys: 3,
		});
	});

	// Held. Several events in one delivery (Events Path body.events): a copy of a JSON batch re-sent as text/plain or as
	// a form is not split (lib/webhook/events.ts reads the body as parsed, a string there): refused before anything is
	// reserved (503 events_not_found), so nothing runs twice. (A sender that itself posts its batches as text/plain would be
	// refused every time: never run twice, never silently dropped — the answer names the Events Path.)
	it('trigger, Events Path: a JSON batch once, its copies as text/plain and as a form: refused, nothing run again', async () => {
		use('wf-rt16-events', trigger('stripe', { options: { eventsPath: 'body.events' } }));
		const body = '{"events":[{"id":"evt_b1"},{"id":"evt_b2"}]}';
		const signature = stripeHeader(body);
		// The accepted batch's execution is not run here: only whether a copy starts anything again is asked.
		const first = await post(body, { 'content-type': 'application/json', 'stripe-signature': signature });
		const asText = await post(body, { 'content-type': 'text/plain', 'stripe-signature': signature });
		const asForm = await post(body, { 'content-type': 'application/x-www-form-urlencoded', 'stripe-signature': signature });
		expect({
			first: [first.outcome, first.started],
			asText: [asText.status, asText.started, JSON.parse(asText.text).error],
			asForm: [asForm.status, asForm.started, JSON.parse(asForm.text).error],
			keys: await keysOfWorkflow(),
		}).toEqual({
			first: ['new', 2],
			asText: [503, 0, 'events_not_found'],
			asForm: [503, 0, 'events_not_found'],
			keys: [keyOf('evt_b1'), keyOf('evt_b2')],
		});
	});

	// Held. Hostile sizes as text/plain (keyBody parses them itself): 100,000 nested arrays and a 10 MB object. Each
	// answered, keyed once (the nesting by its body hash, the big one by its id), its copy a duplicate, nothing crashes.
	it('trigger: 100k-deep JSON and a 10 MB body as text/plain: answered, one key each, the copy a duplicate', async () => {
		use('wf-rt16-hostile', trigger('stripe'));
		const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
		const big = `{"pad":"${'x'.repeat(10 * 1024 * 1024)}","id":"evt_big"}`;
		const results = [];
		for (const body of [deep, big]) {
			const headers = { 'content-type': 'text/plain', 'stripe-signature': stripeHeader(body) };
			const first = await deliver(body, headers);
			const copy = await post(body, headers);
			results.push([first.status, first.outcome, copy.status, copy.outcome]);
		}
		const keys = await keysOfWorkflow();
		expect({ results, keys: keys.length, big: keys.includes(keyOf('evt_big')), charges: chargesFor('evt_big') }).toEqual({
			results: [
				[200, 'new', 200, 'duplicate'],
				[200, 'new', 200, 'duplicate'],
			],
			keys: 2,
			big: true,
			charges: 1,
		});
	});

	/* (1) keyBody on the node path ------------------------------------------------------------------------------------ */

	// n8n's parseBody (n8n/dist/middlewares/body-parser.js) parses JSON only for exactly application/json: a +json type
	// (application/vnd.api+json, application/cloudevents+json) gives n8n's Webhook item no `body`, the bytes in binary
	// `data`. keyBody reads the bytes as JSON where the body is not an object, whatever the type says: the copy is a
	// Duplicate. When a type ending in +json counted as "already parsed", the copy had no id, was keyed by its body
	// hash, New, and charged again.
	it('node path: a genuine copy re-sent as application/vnd.api+json or cloudevents+json is a Duplicate, charged once', async () => {
		activeWorkflowId = 'wf-rt16-node-plusjson';
		const body = '{"id":"evt_pj","amount":100}';
		const signature = stripeHeader(body);
		const first = await deliverNodePath(true, body, { 'content-type': 'application/json', 'stripe-signature': signature });
		const vnd = await deliverNodePath(true, body, { 'content-type': 'application/vnd.api+json', 'stripe-signature': signature });
		const cloud = await deliverNodePath(true, body, { 'content-type': 'application/cloudevents+json', 'stripe-signature': signature });
		expect({
			first: [first.valid, first.reservedNew],
			vnd: [vnd.valid, vnd.reservedNew, vnd.duplicate],
			cloud: [cloud.valid, cloud.reservedNew, cloud.duplicate],
			charges: chargesFor('evt_pj'),
		}).toEqual({ first: [1, 1], vnd: [1, 0, 1], cloud: [1, 0, 1], charges: 1 });
		// Seen: vnd [1, 1, 0] (New, keyed by the raw-body hash), cloud [1, 0, 1] (a duplicate of the vnd copy), charges 2.
	});

	// Held (control for the row above): text/plain, a form, a charset and leading whitespace on the node path keep the key.
	it('node path: copies as text/plain, as a form, with a charset: Duplicates, charged once', async () => {
		activeWorkflowId = 'wf-rt16-node-ct';
		const body = '  {"id":"evt_nct","amount":100}';
		const signature = stripeHeader(body);
		const first = await deliverNodePath(true, body, { 'content-type': 'application/json', 'stripe-signature': signature });
		const copies = [];
		for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=utf-8']) {
			const copy = await deliverNodePath(true, body, { 'content-type': contentType, 'stripe-signature': signature });
			copies.push([copy.valid, copy.reservedNew, copy.duplicate]);
		}
		expect({ first: [first.valid, first.reservedNew], copies, charges: chargesFor('evt_nct') }).toEqual({
			first: [1, 1],
			copies: [
				[1, 0, 1],
				[1, 0, 1],
				[1, 0, 1],
			],
			charges: 1,
		});
	});

	// Documented, not guaranteed (docs/keys.md, Signed or not): a node between the Webhook and Reserve that reshapes
	// `body` reads n8n's parse of it, which follows the unsigned Content-Type. Here it sets body = { id: <the invoice the
	// event is about> } to charge once per invoice: sent as application/json Reserve keys evt:in_norm; the same genuine
	// bytes re-sent as text/plain reach the node as text, its body has no id, Reserve reads the raw bytes: evt:evt_norm,
	// New, and the step runs again. The template puts Reserve right after Webhook Signature Verify.
	it.failing(
		'node path: Reserve after a node that rewrites body: a genuine copy as text/plain is a Duplicate, the step runs once',
		async () => {
			activeWorkflowId = 'wf-rt16-node-rewrite';
			const body = '{"id":"evt_norm","data":{"object":{"id":"in_norm"}}}';
			const signature = stripeHeader(body);
			const between = packageNode('Normalize', 'rt16Normalize', {}, { position: [300, 0] });
			const before = charges.length;
			const first = await deliverNodePath(true, body, { 'content-type': 'application/json', 'stripe-signature': signature }, { between });
			const copy = await deliverNodePath(true, body, { 'content-type': 'text/plain', 'stripe-signature': signature }, { between });
			expect({
				first: [first.valid, first.reservedNew],
				copy: [copy.valid, copy.reservedNew, copy.duplicate],
				stepRuns: charges.length - before,
				keys: [(await storedShared('evt:in_norm'))?.status, (await storedShared('evt:evt_norm'))?.status],
			}).toEqual({ first: [1, 1], copy: [1, 0, 1], stepRuns: 1, keys: ['completed', undefined] });
		},
	);

	/* (2) multipart and binary `data` --------------------------------------------------------------------------------- */

	// An unsigned sender (no Verify: Header Auth or an internal form) posts multipart/form-data: n8n's Webhook puts the
	// form's text fields in `body` and each uploaded file in the item's binary under its field name, so a file field
	// named "data" lands where Reserve reads the raw body. keyBody leaves a multipart request's binary alone (it is a
	// file, not the request): each submission is keyed by its own `id` field and runs. When the file was read as the
	// raw body, two submissions attaching the same JSON document both got the file's id: the second never ran.
	it('node path, no Verify: two multipart submissions with different ids and the same JSON file "data": both run', async () => {
		activeWorkflowId = 'wf-rt16-node-multipart';
		const form = (id: string) => {
			const data = new FormData();
			data.append('id', id);
			data.append('data', new Blob(['{"id":"tmpl_7","kind":"template"}'], { type: 'application/json' }), 'template.json');
			return data;
		};
		const one = await deliverNodePath(true, form('sub_1'), {}, { noVerify: true });
		const two = await deliverNodePath(true, form('sub_2'), {}, { noVerify: true });
		expect({
			one: [one.reservedNew, one.duplicate, one.error],
			two: [two.reservedNew, two.duplicate, two.error],
			charges: [chargesFor('sub_1'), chargesFor('sub_2')],
			fileKey: (await storedShared('evt:tmpl_7'))?.status,
		}).toEqual({
			one: [1, 0, undefined],
			two: [1, 0, undefined],
			charges: [1, 1],
			fileKey: undefined,
		});
	});

	// Held. The ways a multipart request reaches Verify: odd case and spacing in the Content-Type, a boundary quoted —
	// all Invalid (multipart_body), nothing reserved. Without a Content-Type the multipart bytes are not taken apart by
	// n8n: the bytes Verify checks are the request itself, which the captured signature does not cover: Invalid.
	it('node path: multipart spelled Multipart/Form-Data, with spaces, quoted boundary, or without Content-Type: Invalid, nothing reserved', async () => {
		activeWorkflowId = 'wf-rt16-node-mp-spell';
		const captured = '{"id":"evt_mp_spell","amount":100}';
		const signature = stripeHeader(captured);
		const boundary = 'rt16boundary';
		const multipart = Buffer.from(
			`--${boundary}\r\nContent-Disposition: form-data; name="id"\r\n\r\nevt_mp_attacker\r\n` +
				`--${boundary}\r\nContent-Disposition: form-data; name="data"; filename="e.json"\r\nContent-Type: application/json\r\n\r\n${captured}\r\n` +
				`--${boundary}--\r\n`,
		);
		const results = [];
		for (const contentType of [
			`Multipart/Form-Data; boundary=${boundary}`,
			`multipart/form-data ;  boundary="${boundary}"`,
			`MULTIPART/FORM-DATA;boundary=${boundary}`,
			undefined,
		]) {
			const headers: Record<string, string> = { 'stripe-signature': signature };
			if (contentType) headers['content-type'] = contentType;
			const result = await deliverNodePath(true, multipart, headers);
			results.push([result.valid, result.reservedNew, result.reason ?? result.error ?? null]);
		}
		expect({
			results: results.map(([valid, reserved]) => [valid, reserved]),
			attacker: chargesFor('evt_mp_attacker'),
			keys: [await storedShared('evt:evt_mp_attacker'), await storedShared('evt:evt_mp_spell')],
		}).toEqual({
			results: [
				[0, 0],
				[0, 0],
				[0, 0],
				[0, 0],
			],
			attacker: 0,
			keys: [undefined, undefined],
		});
	});

	/* (3)/(5) a short Wait behind the trigger, At Once, against the lease -------------------------------------------- */

	// Held. At Once with Lease 2 s; behind the trigger three n8n Waits of 1.5 s (each under 65 s: accepted, n8n sleeps
	// inside the run), then the charge: the run lasts ~4.5 s, over twice the lease. The beats (holdWhileRunning: every
	// second, each hold three beats) keep the key; a claim of what is due (the package's retry runner) during the
	// sleeps finds nothing, the provider's copies are answered without a run; one charge, completed.
	it('At Once, Lease 2 s, three 1.5 s Waits before the charge: nothing claimed during the sleeps, copies not run, one charge', async () => {
		use('wf-rt16-wait-lease', trigger('stripe', { respond: 'atOnce', leaseSeconds: 2, firstRetrySeconds: 0.05 }));
		const body = '{"id":"evt_wait_lease","amount":1}';
		const accepted = await post(body, stripeHeaders(body));
		const items = startedItems();
		const workflow = inProcessWorkflow(
			activeWorkflowId,
			[{ ...activeNode, name: 'Webhook' }, waitNode('Wait1', 1.5), waitNode('Wait2', 1.5), waitNode('Wait3', 1.5), chargeNode()],
			{
				Webhook: { main: [link('Wait1')] },
				Wait1: { main: [link('Wait2')] },
				Wait2: { main: [link('Wait3')] },
				Wait3: { main: [link('Charge')] },
			},
		);
		const running = executeInProcess(workflow, 'rt16-wait-lease-1', items, engineBase(credentialsHelper()));
		const claimed: number[] = [];
		const copies: Array<string | null> = [];
		for (let tick = 0; tick < 4; tick++) {
			await sleep(1000);
			const claims = await keyStore().claimDueInbox({ owner: inboxOwner(activeWorkflowId), limit: 10, leaseMs: 300_000 });
			claimed.push(claims.length);
			const copy = await post(body, stripeHeaders(body));
			copies.push(`${copy.status}:${copy.outcome}:${copy.started}`);
		}
		const { run } = await running;
		expect({
			accepted: [accepted.status, accepted.outcome, items.length],
			claimed,
			copies: [...new Set(copies)],
			waited: run.waitTill ?? null,
			status: (await stored(keyOf('evt_wait_lease')))?.status,
			charges: chargesFor('evt_wait_lease'),
		}).toEqual({
			accepted: [200, 'new', 1],
			claimed: [0, 0, 0, 0],
			copies: [copies[0]],
			waited: null,
			status: 'completed',
			charges: 1,
		});
		expect(copies[0]).toMatch(/:0$/);
	});
});
