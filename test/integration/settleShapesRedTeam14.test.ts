import { createHmac } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { deflateSync, gzipSync } from 'node:zlib';

import {
	NodeConnectionTypes,
	type ICredentialDataDecryptedObject,
	type IConnections,
	type IExecuteFunctions,
	type INode,
	type INodeExecutionData,
	type INodeType,
	type IRun,
	type IWebhookResponseData,
} from 'n8n-workflow';

import { OUTCOME_HEADER, FIRST_EXECUTION_HEADER } from '../../lib/webhook/answers';
import { inboxOwner } from '../../lib/webhook/inbox';
import { IdempotentWebhook } from '../../nodes/IdempotentWebhook/IdempotentWebhook.node';
import { WebhookSignatureVerify } from '../../nodes/WebhookSignatureVerify/WebhookSignatureVerify.node';
import { forgetKeptSigningSecrets } from '../../nodes/shared/signingSecret';
import { describeWithN8n, loadBaseNodeFiles } from '../support/n8nBaseNodes';
import {
	addNodeTypes,
	credentialsHelperReading,
	engineBase,
	executeInProcess,
	inProcessWorkflow,
	PACKAGE,
	packageNode,
	webhookResponses,
} from '../support/n8nEngine';
import { link } from '../support/settleWorkflows';
import { embeddedModule } from '../support/storeTargets';
import { asN8nReceives, callWebhook, n8nCli } from '../support/n8nRequestPath';
import { n8nFolderForTheFile } from '../support/triggerWebhookCall';

/*
 * Fourteenth red-team pass: FORGERY and HOSTILE INPUT through n8n's own request path. The thirteen earlier passes
 * attacked the settlement's graph rules, the At Once inbox, replay and what is shown; this one asks of every
 * signature scheme, of the caller checks and of key derivation: can a forged (or tampered, or replayed) delivery be
 * accepted, can it touch a key, can it make a real event a duplicate, can a copy of an event get through as new?
 *
 * The request path is n8n 2.41.1's own, loaded from its install (not the package's test helper): its raw body reader
 * (n8n/dist/middlewares/body-parser.js rawBodyReader: gzip and deflate inflated, the charset read), then what
 * webhook-helpers.js parseRequestBody does before a webhook node is called (parseBody for JSON, text, form and XML
 * bodies; its multipart parser, webhook-form-data.js, for multipart/form-data), then the node's webhook() in n8n-core's
 * WebhookContext over a real HTTP exchange: the Idempotent Webhook trigger, or n8n-nodes-base's own Webhook node
 * (2.1) for the node path (Webhook → Webhook Signature Verify → Idempotency Reserve → the step, Settle beside it).
 * Executions run in n8n-core's WorkflowExecute. The store is the embedded one, in the file's n8n folder. The business
 * step charges the event its signed payload names (its `body.id`, else the `id` in the item's raw body bytes), so a
 * second run of one event is counted even where the item's body is not the parsed JSON. A row marked failing breaks
 * a promise: its comment says what happens, where, and how to reproduce it.
 */

/*
 * Sixteenth red-team pass (the second describe block), on the same request path: the rules the fourteenth led to.
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

const SECRET = 'whsec_rt14_stripe_secret';
const SW_SECRET = `whsec_${Buffer.from('rt14-standard-webhooks-key-0123456789').toString('base64')}`;
const HEADER_AUTH = { name: 'X-Partner-Key', value: 'hk_rt14_0123456789abcdef' };
const BASIC = { user: 'rt14-sender', password: 'bp_rt14_password' };

/** The signing credential as saved: each row may change it (the kept copy is forgotten after each row). */
let signing: ICredentialDataDecryptedObject = { secret: SECRET };

const credentialsHelper = () =>
	credentialsHelperReading(async (_details, type): Promise<ICredentialDataDecryptedObject> => {
		if (type === 'webhookSignatureApi') return { ...signing };
		if (type === 'idempotentWebhookHeaderAuthApi') return { ...HEADER_AUTH };
		if (type === 'idempotentWebhookBasicAuthApi') return { ...BASIC };
		throw new Error(`No credential of type ${type}`);
	});

/* The served node ------------------------------------------------------------------------------------------------- */

let activeWorkflowId = 'wf-rt14';
let activeNode: INode;
let lastResult: IWebhookResponseData | Error | undefined;
let handling: Promise<void> = Promise.resolve();

async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
	lastResult = undefined;
	const n8nRequest = await asN8nReceives(request, response);
	if (!n8nRequest) return;
	lastResult = await callWebhook(n8nRequest, response, activeNode, activeWorkflowId, credentialsHelper());
	// n8n answers what the node did not (the execution's answer is read from webhookResponses).
	if (!response.writableEnded) response.writeHead(200).end('{"started":true}');
}

let server: http.Server;
let baseUrl: string;
const n8nFolder = n8nFolderForTheFile('rt14-n8n-');
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

async function post(body: string | Buffer | FormData, headers: Record<string, string> | Headers, route = 'rt14'): Promise<Answer> {
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
const githubSignature = (body: string) => `sha256=${hmac('sha256', SECRET, body).toString('hex')}`;
const shopifySignature = (body: string) => hmac('sha256', SECRET, body).toString('base64');
const slackSignature = (body: string, ts: number | string) => `v0=${hmac('sha256', SECRET, `v0:${ts}:${body}`).toString('hex')}`;
const swKey = (secret = SW_SECRET) => Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
const swSignature = (id: string, ts: number | string, body: string, secret = SW_SECRET) =>
	`v1,${hmac('sha256', swKey(secret), `${id}.${ts}.${body}`).toString('base64')}`;

/* The trigger and the step after it ------------------------------------------------------------------------------ */

const trigger = (scheme: string, parameters: Record<string, unknown> = {}, credentials: INode['credentials'] = {}) =>
	packageNode(
		'Idempotent Webhook',
		'idempotentWebhook',
		{ path: 'rt14', scheme, store: 'embedded', keySource: 'auto', ...parameters },
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
			return String((JSON.parse(raw.toString('utf8')) as { id?: unknown }).id ?? '');
		} catch {
			return '';
		}
	}
	return '';
}

/** The business step: one charge per item, for the event its signed payload names; answers a receipt. */
class Rt14Charge implements INodeType {
	description: INodeType['description'] = {
		displayName: 'RT14 Charge',
		name: 'rt14Charge',
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
			output.push({ json: { charged: id, receipt: `rcpt_rt14_${id}_only_for_the_sender` }, pairedItem: { item: index } });
		}
		return [output];
	}
}

const chargeNode = () => packageNode('Charge', 'rt14Charge', {}, { position: [400, 0] });

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
	const { status } = await runTriggered(`rt14-${++executionCount}`);
	return { ...answer, answered: status };
}

/* The node path: n8n's Webhook node → Webhook Signature Verify → Idempotency Reserve → Charge, Settle beside it ------- */

const n8nWebhook = (rawBody: boolean): INode => ({
	id: 'Webhook',
	name: 'Webhook',
	type: 'n8n-nodes-base.webhook',
	typeVersion: 2.1,
	position: [0, 0],
	webhookId: 'rt14-node-path',
	parameters: { httpMethod: 'POST', path: 'rt14', responseMode: 'onReceived', options: rawBody ? { rawBody: true } : {} },
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
		`rt14-node-${++executionCount}`,
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
class Rt14Normalize implements INodeType {
	description: INodeType['description'] = {
		displayName: 'RT14 Normalize',
		name: 'rt14Normalize',
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

describeWithN8n('red teams 14 and 16: forgery and hostile input through n8n’s own request path', () => {
	beforeAll(async () => {
		embeddedModule();
		n8nCli();
		addNodeTypes({
			...loadBaseNodeFiles({ 'n8n-nodes-base.webhook': 'Webhook/Webhook.node.js', 'n8n-nodes-base.wait': 'Wait/Wait.node.js' }),
			[`${PACKAGE}.rt14Charge`]: new Rt14Charge(),
			[`${PACKAGE}.rt14Normalize`]: new Rt14Normalize(),
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

	/* (1) Stripe: the exact bytes n8n received ----------------------------------------------------------------------- */

	it('Stripe: a valid signature over one body, sent with another (same id): 401 signature_mismatch, no key; the genuine one then runs once', async () => {
		use('wf-rt14-swap-body', trigger('stripe'));
		const genuine = '{"id":"evt_swap","amount":100}';
		const forged = await deliver('{"id":"evt_swap","amount":999999}', stripeHeaders(genuine));
		const keyAfterForgery = await stored(keyOf('evt_swap'));
		const real = await deliver(genuine, stripeHeaders(genuine));
		expect({
			forged: [forged.status, forged.outcome, JSON.parse(forged.text), forged.started],
			keyAfterForgery,
			real: [real.status, real.outcome, real.answered],
			charges: chargesFor('evt_swap'),
		}).toEqual({
			forged: [401, 'invalid_signature', { error: 'invalid_signature', reason: 'signature_mismatch' }, 0],
			keyAfterForgery: undefined,
			real: [200, 'new', 200],
			charges: 1,
		});
	});

	// The signed bytes re-serialised so that JSON.parse reads the same event (or n8n's own parser does): whitespace, a
	// \u-escaped id, a duplicate member, a BOM (n8n's parseBody strips it), a trailing newline, CRLF. The signature is
	// over bytes, not over the parsed event: each is refused before any key is derived.
	it('Stripe: the signed body re-serialised (whitespace, \\u escapes, duplicate member, BOM, trailing newline): each 401, no key', async () => {
		use('wf-rt14-reserialised', trigger('stripe'));
		const genuine = '{"id":"evt_reser","amount":100}';
		const variants = [
			'{ "id": "evt_reser", "amount": 100 }',
			'{"id":"\\u0065vt_reser","amount":100}',
			'{"id":"evt_reser","amount":100,"amount":1}',
			`\ufeff${genuine}`,
			`${genuine}\n`,
			'{"id":"evt_reser",\r\n"amount":100}',
		];
		const answers = [];
		for (const variant of variants) answers.push([(await post(variant, stripeHeaders(genuine))).status, startedItems().length]);
		expect({ answers, key: await stored(keyOf('evt_reser')), charges: chargesFor('evt_reser') }).toEqual({
			answers: variants.map(() => [401, 0]),
			key: undefined,
			charges: 0,
		});
	});

	// Content-Encoding: n8n's raw body reader inflates gzip and deflate before anything reads the body, so the trigger
	// verifies the bytes the sender signed (the inflated JSON), not the compressed ones. A compressed copy of another
	// body under the genuine signature is refused.
	it('Stripe: gzip and deflate bodies are verified as n8n inflates them; a compressed forgery is 401', async () => {
		use('wf-rt14-gzip', trigger('stripe'));
		const genuine = '{"id":"evt_gzip","amount":100}';
		const gzip = await deliver(gzipSync(genuine), stripeHeaders(genuine, { 'content-encoding': 'gzip' }));
		const deflated = await post(deflateSync(genuine), stripeHeaders(genuine, { 'content-encoding': 'deflate' }));
		const forged = await post(gzipSync('{"id":"evt_gzip_forged","amount":1}'), stripeHeaders(genuine, { 'content-encoding': 'gzip' }));
		// The compressed bytes signed instead of the body: not what was received once inflated.
		const signedCompressed = gzipSync('{"id":"evt_gzip_c"}');
		const compressedSigned = await post(signedCompressed, stripeHeaders(signedCompressed, { 'content-encoding': 'gzip' }));
		expect({
			gzip: [gzip.status, gzip.outcome, gzip.answered],
			deflated: [deflated.status, deflated.outcome, deflated.started],
			forged: [forged.status, await stored(keyOf('evt_gzip_forged'))],
			compressedSigned: [compressedSigned.status, await stored(keyOf('evt_gzip_c'))],
			charges: chargesFor('evt_gzip'),
		}).toEqual({
			gzip: [200, 'new', 200],
			deflated: [200, 'duplicate', 0],
			forged: [401, undefined],
			compressedSigned: [401, undefined],
			charges: 1,
		});
	});

	// Node's HTTP parser joins a header sent twice with ", ": the package splits it back and refuses two different
	// values (it never picks one). In either order; then the genuine delivery alone is new and runs once.
	it('Stripe: Stripe-Signature sent twice (a forged one beside a genuine one, either order): 401 malformed_header, no key; the genuine one alone runs once', async () => {
		use('wf-rt14-twice', trigger('stripe'));
		const genuine = '{"id":"evt_twice","amount":100}';
		const good = stripeHeader(genuine);
		const bad = stripeHeader('{"id":"evt_twice","amount":999999}');
		const answers = [];
		for (const pair of [
			[good, bad],
			[bad, good],
		]) {
			const headers = new Headers({ 'content-type': 'application/json' });
			for (const value of pair) headers.append('stripe-signature', value);
			const answer = await post('{"id":"evt_twice","amount":999999}', headers);
			answers.push([answer.status, JSON.parse(answer.text).reason, answer.started]);
		}
		const keyBefore = await stored(keyOf('evt_twice'));
		const real = await deliver(genuine, stripeHeaders(genuine));
		expect({ answers, keyBefore, real: [real.status, real.outcome], charges: chargesFor('evt_twice') }).toEqual({
			answers: [
				[401, 'malformed_header', 0],
				[401, 'malformed_header', 0],
			],
			keyBefore: undefined,
			real: [200, 'new'],
			charges: 1,
		});
	});

	// The v1 digest in upper case is the same digest (accepted, as bytes); truncated, empty, odd, non-hex, only v0, a
	// second t=, a signature comma-joined onto a forged one in ONE header (Stripe's own "any v1" rule: the forged v1
	// beside a genuine one over the same bytes changes nothing).
	it('Stripe: signature variants — truncated, empty, non-hex, v0 only, two t=: 401 and no key; upper-case hex is the same digest', async () => {
		use('wf-rt14-sigforms', trigger('stripe'));
		const body = '{"id":"evt_sigforms"}';
		const t = now();
		const digest = hmac('sha256', SECRET, `${t}.${body}`).toString('hex');
		const refused: Array<[string, string]> = [
			[`t=${t},v1=${digest.slice(0, 63)}`, 'malformed_header'],
			[`t=${t},v1=${digest.slice(0, 62)}`, 'signature_mismatch'],
			[`t=${t},v1=`, 'malformed_header'],
			[`t=${t},v1=${digest.slice(0, 62)}zz`, 'malformed_header'],
			[`t=${t},v0=${digest}`, 'malformed_header'],
			[`t=${t},t=${t},v1=${digest}`, 'malformed_header'],
			[`v1=${digest}`, 'missing_timestamp'],
			[`t=${t},v1=${digest}00`, 'signature_mismatch'],
		];
		const answers = [];
		for (const [header] of refused) {
			const answer = await post(body, { 'content-type': 'application/json', 'stripe-signature': header });
			answers.push([answer.status, JSON.parse(answer.text).reason, answer.started]);
		}
		const keyAfter = await stored(keyOf('evt_sigforms'));
		const upper = await deliver(body, { 'content-type': 'application/json', 'stripe-signature': `t=${t},v1=${digest.toUpperCase()}` });
		const withForgedBeside = await post(body, {
			'content-type': 'application/json',
			'stripe-signature': `t=${t},v1=${'0'.repeat(64)},v1=${digest}`,
		});
		expect({
			answers,
			keyAfter,
			upper: [upper.status, upper.outcome],
			beside: [withForgedBeside.status, withForgedBeside.outcome],
		}).toEqual({
			answers: refused.map(([, reason]) => [401, reason, 0]),
			keyAfter: undefined,
			upper: [200, 'new'],
			beside: [200, 'duplicate'],
		});
	});

	// Genuinely signed (with the real secret) but dated outside the window, or a timestamp that is not whole Unix
	// seconds: the replay window holds for a genuine signature too, and nothing is reserved.
	it('Stripe: genuine signatures dated 301 s ago, 301 s ahead, 10^12 s, 13 digits, "+t", "-t": 401 with the reason, no key; 299 s ago is accepted', async () => {
		use('wf-rt14-window', trigger('stripe'));
		const body = '{"id":"evt_window"}';
		const cases: Array<[number | string, string]> = [
			[now() - 301, 'timestamp_too_old'],
			[now() + 301, 'timestamp_in_future'],
			['999999999999', 'timestamp_in_future'],
			[`${now()}000`, 'malformed_timestamp'],
			[`+${now()}`, 'malformed_timestamp'],
			[`-${now()}`, 'malformed_timestamp'],
			[`${now()}.5`, 'malformed_timestamp'],
		];
		const answers = [];
		for (const [t] of cases) {
			const answer = await post(body, { 'content-type': 'application/json', 'stripe-signature': stripeHeader(body, { t }) });
			answers.push([answer.status, JSON.parse(answer.text).reason]);
		}
		const keyAfter = await stored(keyOf('evt_window'));
		const inside = await post(body, { 'content-type': 'application/json', 'stripe-signature': stripeHeader(body, { t: now() - 299 }) });
		expect({ answers, keyAfter, inside: [inside.status, inside.outcome] }).toEqual({
			answers: cases.map(([, reason]) => [401, reason]),
			keyAfter: undefined,
			inside: [200, 'new'],
		});
	});

	// The secret is one exact string: whsec_ is part of Stripe's key; outer spaces are part of it; during a rotation
	// both the current and the previous secret verify and nothing else; an empty or blank Secret refuses every delivery
	// (503: nothing could be checked, the sender retries) rather than accept any.
	it('Stripe secrets: whsec_ and spaces are part of the key, rotation accepts exactly two, an empty or blank secret is 503 with no key', async () => {
		use('wf-rt14-secrets', trigger('stripe'));
		const results: Record<string, Array<number | string | null>> = {};
		const attempt = async (label: string, id: string, secretUsed: string) => {
			const body = `{"id":"${id}"}`;
			const answer = await post(body, stripeHeaders(body, {}, secretUsed));
			results[label] = [answer.status, answer.outcome, (await stored(keyOf(id)))?.status ?? null];
			forgetKeptSigningSecrets();
		};
		await attempt('prefix stripped', 'evt_sec_1', SECRET.replace(/^whsec_/, ''));
		signing = { secret: '  sp ace secret  ' };
		await attempt('spaces trimmed', 'evt_sec_2', 'sp ace secret');
		await attempt('spaces exact', 'evt_sec_3', '  sp ace secret  ');
		signing = { secret: 'whsec_new', previousSecret: 'whsec_old' };
		await attempt('rotation new', 'evt_sec_4', 'whsec_new');
		await attempt('rotation old', 'evt_sec_5', 'whsec_old');
		await attempt('rotation older', 'evt_sec_6', 'whsec_older');
		await attempt('both joined', 'evt_sec_7', 'whsec_new whsec_old');
		signing = { secret: '' };
		await attempt('empty secret, empty key', 'evt_sec_8', '');
		signing = { secret: '   ' };
		await attempt('blank secret', 'evt_sec_9', '   ');
		signing = { secret: '', previousSecret: 'whsec_old' };
		await attempt('only a previous secret', 'evt_sec_10', 'whsec_old');
		expect(results).toEqual({
			'prefix stripped': [401, 'invalid_signature', null],
			'spaces trimmed': [401, 'invalid_signature', null],
			'spaces exact': [200, 'new', 'processing'],
			'rotation new': [200, 'new', 'processing'],
			'rotation old': [200, 'new', 'processing'],
			'rotation older': [401, 'invalid_signature', null],
			'both joined': [401, 'invalid_signature', null],
			'empty secret, empty key': [503, 'not_verified', null],
			'blank secret': [503, 'not_verified', null],
			'only a previous secret': [503, 'not_verified', null],
		});
	});

	/* (2) What a forged delivery gets, and what it can touch --------------------------------------------------------- */

	// A completed event whose answer carries a receipt. A forged copy (a bad signature; no signature; a signature made
	// with another secret) is 401 with the reason only: no stored answer, no first-execution header, no receipt. A
	// genuine copy gets the stored answer (a verified caller). An explicitly unsigned trigger without authentication
	// answers a copy {"status":"duplicate"} only.
	it('a completed event: forged copies get 401 and none of the stored answer; the genuine copy gets it; unsigned + no auth gets {"status":"duplicate"}', async () => {
		use('wf-rt14-stored', trigger('stripe'));
		const body = '{"id":"evt_stored","amount":100}';
		const first = await deliver(body, stripeHeaders(body));
		const receipt = 'rcpt_rt14_evt_stored_only_for_the_sender';
		const forgedCopies = [
			await post(body, { 'content-type': 'application/json', 'stripe-signature': `t=${now()},v1=${'ab'.repeat(32)}` }),
			await post(body, { 'content-type': 'application/json' }),
			await post(body, stripeHeaders(body, {}, 'whsec_attacker')),
		];
		const genuineCopy = await post(body, stripeHeaders(body));
		use('wf-rt14-stored-unsigned', trigger('none'));
		await deliver(body, { 'content-type': 'application/json' });
		const unsignedCopy = await post(body, { 'content-type': 'application/json' });
		expect({
			first: [first.status, first.answered],
			forged: forgedCopies.map((answer) => [
				answer.status,
				answer.outcome,
				answer.firstExecution,
				answer.text.includes(receipt),
				answer.started,
			]),
			genuine: [genuineCopy.status, genuineCopy.outcome, genuineCopy.firstExecution !== null, genuineCopy.text.includes(receipt)],
			unsigned: [unsignedCopy.status, JSON.parse(unsignedCopy.text), unsignedCopy.firstExecution],
			charges: chargesFor('evt_stored'),
		}).toEqual({
			first: [200, 200],
			forged: [
				[401, 'invalid_signature', null, false, 0],
				[401, 'invalid_signature', null, false, 0],
				[401, 'invalid_signature', null, false, 0],
			],
			genuine: [200, 'duplicate', true, true],
			unsigned: [200, { status: 'duplicate' }, null],
			charges: 2,
		});
	});

	// At Once: a forged delivery carrying a real event's id (before the real one arrives, and while the real one's run
	// is pending) keeps nothing, reserves nothing, and the real event is then accepted, run and completed once.
	it('At Once: forgeries with a real event id before and after it arrives: 401, nothing kept; the real event runs once and completes', async () => {
		use('wf-rt14-atonce', trigger('stripe', { respond: 'atOnce', firstRetrySeconds: 0.05 }));
		const genuine = '{"id":"evt_atonce","amount":100}';
		const forgedBody = '{"id":"evt_atonce","amount":999999}';
		const before = await post(forgedBody, stripeHeaders(genuine));
		const keyBefore = await stored(keyOf('evt_atonce'));
		const real = await post(genuine, stripeHeaders(genuine));
		const items = startedItems();
		const during = await post(forgedBody, { 'content-type': 'application/json', 'stripe-signature': `t=${now()},v1=${'cd'.repeat(32)}` });
		const pending = await stored(keyOf('evt_atonce'));
		await runTriggered('rt14-atonce-1', items);
		const done = await stored(keyOf('evt_atonce'));
		expect({
			before: [before.status, before.started],
			keyBefore,
			real: [real.status, real.outcome, items.length],
			during: [during.status, during.outcome, during.started],
			pendingKept: pending?.hasInboxItem,
			done: [done?.status, done?.hasInboxItem],
			charges: chargesFor('evt_atonce'),
		}).toEqual({
			before: [401, 0],
			keyBefore: undefined,
			real: [200, 'new', 1],
			during: [401, 'invalid_signature', 0],
			pendingKept: true,
			done: ['completed', false],
			charges: 1,
		});
	});

	// The key of a Stripe event is read from the body (Key Source Auto: evt:<body.id>), and whether n8n or the trigger
	// parses the body as JSON depends on the Content-Type header, which no scheme signs. A copy of a genuine delivery
	// (the same bytes and Stripe-Signature, inside the 300 s window) re-sent as text/plain or as a form verifies; its key
	// is read from the raw bytes as JSON whatever the Content-Type says (lib/keys/deriveKey.ts keyBody): the same key,
	// answered 200 duplicate, nothing started. Read from the body as parsed it has no id: a body-hash key, answered 200
	// "new", charged again.
	it('Stripe: a genuine copy re-sent with Content-Type text/plain or form keeps its key: a duplicate, nothing run', async () => {
		use('wf-rt14-content-type', trigger('stripe'));
		const copyAs = async (id: string, contentType: string) => {
			const body = `{"id":"${id}","amount":100}`;
			const signature = stripeHeader(body);
			const first = await deliver(body, { 'content-type': 'application/json', 'stripe-signature': signature });
			const copy = await deliver(body, { 'content-type': contentType, 'stripe-signature': signature });
			return [first.outcome, copy.status, copy.outcome, copy.started, chargesFor(id)];
		};
		expect({
			asText: await copyAs('evt_ct_text', 'text/plain'),
			asForm: await copyAs('evt_ct_form', 'application/x-www-form-urlencoded'),
			keys: (await keysOfWorkflow()).length,
		}).toEqual({
			asText: ['new', 200, 'duplicate', 0, 1],
			asForm: ['new', 200, 'duplicate', 0, 1],
			keys: 2,
		});
	});

	/* (3) The other schemes ------------------------------------------------------------------------------------------ */

	// Slack signs "v0:{ts}:{rawBody}"; its slash commands and interactivity post a form. The form body n8n received is
	// verified as bytes (a parameter moved is a forgery), and a timestamp header sent twice with different values is
	// refused, not one picked.
	it('Slack: a signed form body is accepted once; reordered parameters, a second timestamp header, an old timestamp: 401, no key', async () => {
		use('wf-rt14-slack', trigger('slack', { keySource: 'preset', preset: 'slack' }));
		const ts = now();
		const body = 'event_id=Ev_rt14_slack&token=x&text=hello%20world';
		const form = { 'content-type': 'application/x-www-form-urlencoded' };
		const genuine = await deliver(body, {
			...form,
			'x-slack-signature': slackSignature(body, ts),
			'x-slack-request-timestamp': String(ts),
		});
		const copy = await post(body, { ...form, 'x-slack-signature': slackSignature(body, ts), 'x-slack-request-timestamp': String(ts) });
		const reordered = await post('token=x&event_id=Ev_rt14_slack2&text=hello%20world', {
			...form,
			'x-slack-signature': slackSignature(body, ts),
			'x-slack-request-timestamp': String(ts),
		});
		const twoTimestamps = new Headers({ ...form, 'x-slack-signature': slackSignature('event_id=Ev_rt14_slack3', ts) });
		twoTimestamps.append('x-slack-request-timestamp', String(ts));
		twoTimestamps.append('x-slack-request-timestamp', String(ts + 1));
		const twice = await post('event_id=Ev_rt14_slack3', twoTimestamps);
		const old = await post('event_id=Ev_rt14_slack4', {
			...form,
			'x-slack-signature': slackSignature('event_id=Ev_rt14_slack4', ts - 400),
			'x-slack-request-timestamp': String(ts - 400),
		});
		expect({
			genuine: [genuine.status, genuine.outcome, genuine.answered],
			copy: [copy.status, copy.outcome, copy.started],
			reordered: [reordered.status, JSON.parse(reordered.text).reason],
			twice: [twice.status, JSON.parse(twice.text).reason],
			old: [old.status, JSON.parse(old.text).reason],
			keys: await keysOfWorkflow(),
		}).toEqual({
			genuine: [200, 'new', 200],
			copy: [200, 'duplicate', 0],
			reordered: [401, 'signature_mismatch'],
			twice: [401, 'malformed_timestamp'],
			old: [401, 'timestamp_too_old'],
			keys: [keyOf('Ev_rt14_slack')],
		});
	});

	// Standard Webhooks signs "{id}.{ts}.{body}" and the preset keys on the id: renaming webhook-id to svix-id is the
	// same event (documented); a webhook-id added to a genuine svix-* delivery changes what is checked (401); a svix-id
	// added beside a genuine webhook-id changes nothing (the same key); a list with a garbled entry before the genuine
	// one verifies (the spec's rotation list); the signature header twice with different values is refused; a secret
	// that is not whsec_+base64 is 503 (unusable), never a key anyone can sign with.
	it('Standard Webhooks: id renamed, id added, list with a bad entry, header twice, an unusable secret: no forgery accepted, one run per id', async () => {
		signing = { secret: SW_SECRET };
		use('wf-rt14-sw', trigger('standardWebhooks', { keySource: 'preset', preset: 'standardWebhooks' }));
		const ts = now();
		const body = '{"type":"invoice.paid","amount":100}';
		const genuine = await deliver(body, {
			'content-type': 'application/json',
			'webhook-id': 'msg_rt14_1',
			'webhook-timestamp': String(ts),
			'webhook-signature': swSignature('msg_rt14_1', ts, body),
		});
		const renamed = await post(body, {
			'content-type': 'application/json',
			'svix-id': 'msg_rt14_1',
			'svix-timestamp': String(ts),
			'svix-signature': swSignature('msg_rt14_1', ts, body),
		});
		const idAdded = await post(body, {
			'content-type': 'application/json',
			'webhook-id': 'msg_rt14_forged',
			'svix-id': 'msg_rt14_1',
			'svix-timestamp': String(ts),
			'svix-signature': swSignature('msg_rt14_1', ts, body),
		});
		const svixAdded = await post(body, {
			'content-type': 'application/json',
			'webhook-id': 'msg_rt14_1',
			'svix-id': 'msg_rt14_other',
			'webhook-timestamp': String(ts),
			'webhook-signature': swSignature('msg_rt14_1', ts, body),
		});
		const list = await deliver(body, {
			'content-type': 'application/json',
			'webhook-id': 'msg_rt14_2',
			'webhook-timestamp': String(ts),
			'webhook-signature': `v1,${'A'.repeat(44)} v1a,xyz ${swSignature('msg_rt14_2', ts, body)}`,
		});
		const twiceHeaders = new Headers({ 'content-type': 'application/json', 'webhook-id': 'msg_rt14_3', 'webhook-timestamp': String(ts) });
		twiceHeaders.append('webhook-signature', swSignature('msg_rt14_3', ts, body));
		twiceHeaders.append('webhook-signature', `v1,${'B'.repeat(44)}`);
		const twice = await post(body, twiceHeaders);
		forgetKeptSigningSecrets();
		signing = { secret: 'whsec_not base64!' };
		const unusable = await post(body, {
			'content-type': 'application/json',
			'webhook-id': 'msg_rt14_4',
			'webhook-timestamp': String(ts),
			'webhook-signature': swSignature('msg_rt14_4', ts, body),
		});
		expect({
			genuine: [genuine.status, genuine.outcome],
			renamed: [renamed.status, renamed.outcome, renamed.started],
			idAdded: [idAdded.status, JSON.parse(idAdded.text).reason],
			svixAdded: [svixAdded.status, svixAdded.outcome, svixAdded.started],
			list: [list.status, list.outcome],
			twice: [twice.status, JSON.parse(twice.text).reason],
			unusable: [unusable.status, JSON.parse(unusable.text).error],
			keys: await keysOfWorkflow(),
		}).toEqual({
			genuine: [200, 'new'],
			renamed: [200, 'duplicate', 0],
			idAdded: [401, 'signature_mismatch'],
			svixAdded: [200, 'duplicate', 0],
			list: [200, 'new'],
			twice: [401, 'malformed_header'],
			unusable: [503, 'signing_secret_unusable'],
			keys: [`wf:wf-rt14-sw:webhook-id:msg_rt14_1`, `wf:wf-rt14-sw:webhook-id:msg_rt14_2`],
		});
	});

	// The trigger with Scheme GitHub or Shopify, whose Tolerance n8n drops (shown only for the schemes that sign a
	// timestamp; n8n's Workflow leaves out a parameter its display options hide): Tolerance is read only where the
	// scheme shows it (providerOptions.ts toleranceSecondsOf). It was read without a fallback, and n8n-core threw
	// "Could not get parameter": every delivery, genuine too, was answered 503 and never ran.
	it('trigger, Scheme GitHub or Shopify: a genuine delivery is run once (its Tolerance, hidden, is not read)', async () => {
		const body = '{"action":"opened","number":7}';
		use('wf-rt14-github', trigger('github', { keySource: 'preset', preset: 'github' }));
		const github = await deliver(body, {
			'content-type': 'application/json',
			'x-github-delivery': 'd-gh-1',
			'x-hub-signature-256': githubSignature(body),
		});
		use('wf-rt14-shopify', trigger('shopify', { keySource: 'preset', preset: 'shopify' }));
		const shopify = await deliver(body, {
			'content-type': 'application/json',
			'x-shopify-webhook-id': 'wh-1',
			'x-shopify-hmac-sha256': shopifySignature(body),
		});
		expect({
			github: [github.status, github.outcome, github.answered],
			shopify: [shopify.status, shopify.outcome, shopify.answered],
		}).toEqual({
			github: [200, 'new', 200],
			shopify: [200, 'new', 200],
		});
	});

	// GitHub through the node path (where Tolerance is read only for timestamped schemes): GitHub signs the body only,
	// with no timestamp, and X-GitHub-Delivery is not signed. docs/keys.md ("Signed or not") says a copy re-sent under a
	// new delivery id is New with the GitHub preset, and to key on the body where that matters: both halves as
	// documented. The signature's own forms: sha1= (the legacy header's prefix) and the header twice are Invalid.
	it('node path, GitHub: a copy under a new X-GitHub-Delivery is New with the preset (documented), a Duplicate with Body Hash; sha1= and a second header: Invalid', async () => {
		activeWorkflowId = 'wf-rt14-node-github';
		const body = '{"action":"opened","number":7,"id":"gh_rt14"}';
		const headers = (delivery: string) => ({
			'content-type': 'application/json',
			'x-github-delivery': delivery,
			'x-hub-signature-256': githubSignature(body),
		});
		const preset: NodePathSettings = { verify: { scheme: 'github' }, reserve: { keySource: 'preset', preset: 'github' } };
		const hash: NodePathSettings = { verify: { scheme: 'github' }, reserve: { keySource: 'bodyHash' } };
		const presetFirst = await deliverNodePath(true, body, headers('d-rt14-1'), preset);
		const presetRenamed = await deliverNodePath(true, body, headers('d-rt14-2'), preset);
		const hashBody = '{"action":"closed","number":8}';
		const hashHeaders = (delivery: string) => ({
			'content-type': 'application/json',
			'x-github-delivery': delivery,
			'x-hub-signature-256': githubSignature(hashBody),
		});
		const hashFirst = await deliverNodePath(true, hashBody, hashHeaders('d-rt14-3'), hash);
		const hashRenamed = await deliverNodePath(true, hashBody, hashHeaders('d-rt14-4'), hash);
		const sha1 = await deliverNodePath(
			true,
			body,
			{
				'content-type': 'application/json',
				'x-github-delivery': 'd-rt14-5',
				'x-hub-signature-256': `sha1=${hmac('sha1', SECRET, body).toString('hex')}`,
			},
			preset,
		);
		const twoHeaders = new Headers({ 'content-type': 'application/json', 'x-github-delivery': 'd-rt14-6' });
		twoHeaders.append('x-hub-signature-256', githubSignature(body));
		twoHeaders.append('x-hub-signature-256', githubSignature('{"action":"deleted"}'));
		const twice = await deliverNodePath(true, '{"action":"deleted"}', twoHeaders, preset);
		expect({
			preset: [presetFirst.reservedNew, presetRenamed.reservedNew],
			hash: [hashFirst.reservedNew, hashRenamed.duplicate],
			sha1: [sha1.invalid, sha1.reason, await storedShared('x-github-delivery:d-rt14-5')],
			twice: [twice.invalid, twice.reason, await storedShared('x-github-delivery:d-rt14-6')],
		}).toEqual({
			preset: [1, 1],
			hash: [1, 1],
			sha1: [1, 'malformed_header', undefined],
			twice: [1, 'malformed_header', undefined],
		});
	});

	// Shopify through the node path: base64, padded, standard alphabet. Unpadded, URL-safe, with a space, or the hex
	// form of the same digest: Invalid (a strict decoder: Buffer.from(…, 'base64') would accept most of them).
	it('node path, Shopify: the digest unpadded, URL-safe, hex, with a space: Invalid and no key; the genuine one is New', async () => {
		activeWorkflowId = 'wf-rt14-node-shopify';
		const body = '{"id":820982911946154500,"email":"jon@example.com"}';
		const digest = hmac('sha256', SECRET, body);
		const settings: NodePathSettings = { verify: { scheme: 'shopify' }, reserve: { keySource: 'preset', preset: 'shopify' } };
		const forms = [
			digest.toString('base64').replace(/=+$/, ''),
			digest.toString('base64url'),
			digest.toString('hex'),
			`${digest.toString('base64').slice(0, 20)} ${digest.toString('base64').slice(20)}`,
		];
		const answers = [];
		for (const form of forms) {
			const result = await deliverNodePath(
				true,
				body,
				{ 'content-type': 'application/json', 'x-shopify-webhook-id': 'wh-rt14', 'x-shopify-hmac-sha256': form },
				settings,
			);
			answers.push([result.valid, result.invalid]);
		}
		const keyBefore = await storedShared('x-shopify-webhook-id:wh-rt14');
		const genuine = await deliverNodePath(
			true,
			body,
			{ 'content-type': 'application/json', 'x-shopify-webhook-id': 'wh-rt14', 'x-shopify-hmac-sha256': shopifySignature(body) },
			settings,
		);
		expect({ answers, keyBefore, genuine: [genuine.valid, genuine.reservedNew] }).toEqual({
			answers: forms.map(() => [0, 1]),
			keyBefore: undefined,
			genuine: [1, 1],
		});
	});

	// Generic HMAC: SHA-512, base64, a prefix, Timestamp.Body. Without the prefix, the timestamp header missing or
	// sent twice, the digest of the body alone: refused.
	it('Generic HMAC (sha512, base64, prefix, timestamp.body): variants refused, the genuine one accepted once', async () => {
		use(
			'wf-rt14-generic',
			trigger('generic', {
				algorithm: 'sha512',
				encoding: 'base64',
				signatureHeader: 'X-Rt14-Signature',
				signaturePrefix: 'v=',
				signedContent: 'timestampDotBody',
				timestampHeader: 'X-Rt14-Time',
			}),
		);
		const ts = now();
		const body = '{"id":"evt_generic"}';
		const digest = hmac('sha512', SECRET, `${ts}.${body}`).toString('base64');
		const variants: Array<[Record<string, string> | Headers, string]> = [
			[{ 'x-rt14-signature': digest, 'x-rt14-time': String(ts) }, 'malformed_header'],
			[{ 'x-rt14-signature': `v=${digest}` }, 'missing_timestamp'],
			[{ 'x-rt14-signature': `v=${hmac('sha512', SECRET, body).toString('base64')}`, 'x-rt14-time': String(ts) }, 'signature_mismatch'],
			[
				{ 'x-rt14-signature': `v=${hmac('sha256', SECRET, `${ts}.${body}`).toString('base64')}`, 'x-rt14-time': String(ts) },
				'signature_mismatch',
			],
		];
		const twoTimes = new Headers({ 'x-rt14-signature': `v=${digest}` });
		twoTimes.append('x-rt14-time', String(ts));
		twoTimes.append('x-rt14-time', String(ts - 1));
		variants.push([twoTimes, 'malformed_timestamp']);
		const answers = [];
		for (const [headers] of variants) {
			const merged = new Headers(headers);
			merged.set('content-type', 'application/json');
			const answer = await post(body, merged);
			answers.push([answer.status, JSON.parse(answer.text).reason]);
		}
		const keyBefore = await stored(keyOf('evt_generic'));
		const genuine = await post(body, { 'content-type': 'application/json', 'x-rt14-signature': `v=${digest}`, 'x-rt14-time': String(ts) });
		expect({ answers, keyBefore, genuine: [genuine.status, genuine.outcome] }).toEqual({
			answers: variants.map(([, reason]) => [401, reason]),
			keyBefore: undefined,
			genuine: [200, 'new'],
		});
	});

	// Header Auth and Basic on an explicitly unsigned trigger: the wrong value, the header twice (right + wrong), Basic
	// with a password that has the right one as its prefix: 403 and nothing reserved; a copy of a completed event with
	// the wrong credential gets 403, not the stored answer. Basic's scheme word in lower case is accepted (RFC 7617).
	it('Header Auth and Basic (unsigned scheme): wrong, doubled, extended credentials are 403 with no key; a wrong-credential copy gets no stored answer', async () => {
		use('wf-rt14-header', trigger('none', { authentication: 'headerAuth' }, { idempotentWebhookHeaderAuthApi: { id: 'h', name: 'H' } }));
		const body = '{"id":"evt_auth"}';
		const wrong = await post(body, { 'content-type': 'application/json', [HEADER_AUTH.name]: `${HEADER_AUTH.value}x` });
		const doubled = new Headers({ 'content-type': 'application/json' });
		doubled.append(HEADER_AUTH.name, HEADER_AUTH.value);
		doubled.append(HEADER_AUTH.name, 'hk_attacker');
		const twice = await post(body, doubled);
		const keyBefore = await stored(keyOf('evt_auth'));
		const genuine = await deliver(body, { 'content-type': 'application/json', [HEADER_AUTH.name]: HEADER_AUTH.value });
		const wrongCopy = await post(body, { 'content-type': 'application/json', [HEADER_AUTH.name]: 'hk_attacker' });
		use('wf-rt14-basic', trigger('none', { authentication: 'basicAuth' }, { idempotentWebhookBasicAuthApi: { id: 'b', name: 'B' } }));
		const basic = (user: string, password: string, scheme = 'Basic') => ({
			'content-type': 'application/json',
			authorization: `${scheme} ${Buffer.from(`${user}:${password}`).toString('base64')}`,
		});
		const extended = await post('{"id":"evt_basic"}', basic(BASIC.user, `${BASIC.password}:extra`));
		const userPrefix = await post('{"id":"evt_basic"}', basic(`${BASIC.user}:${BASIC.password}`, ''));
		const keyBasicBefore = await stored(keyOf('evt_basic'));
		const lower = await post('{"id":"evt_basic"}', basic(BASIC.user, BASIC.password, 'basic'));
		expect({
			wrong: wrong.status,
			twice: twice.status,
			keyBefore,
			genuine: [genuine.status, genuine.answered],
			wrongCopy: [wrongCopy.status, wrongCopy.text.includes('rcpt_rt14'), wrongCopy.firstExecution],
			extended: extended.status,
			userPrefix: userPrefix.status,
			keyBasicBefore,
			lower: [lower.status, lower.outcome],
		}).toEqual({
			wrong: 403,
			twice: 403,
			keyBefore: undefined,
			genuine: [200, 200],
			wrongCopy: [403, false, null],
			extended: 403,
			userPrefix: 403,
			keyBasicBefore: undefined,
			lower: [200, 'new'],
		});
	});

	/* (4) Keys from hostile input ------------------------------------------------------------------------------------ */

	// Ids that look alike but are different events stay apart (NFC/NFD, case, a zero-width space, two ids over the key
	// limit that differ only at their end, ids that differ only beyond 2^53 in a single-event body); a NUL in the id
	// refuses the delivery (503, nothing reserved) rather than merge or cut it.
	it('keys: NFC vs NFD, case, zero-width space, long ids differing at the end, ids beyond 2^53: each its own key and charge; NUL: 503 key_refused', async () => {
		use('wf-rt14-keys', trigger('stripe'));
		const long = 'evt_'.padEnd(700, 'x');
		const bodies = [
			'{"id":"evt_caf\u00e9"}',
			'{"id":"evt_cafe\u0301"}',
			'{"id":"EVT_CASE"}',
			'{"id":"evt_case"}',
			'{"id":"evt_zw\u200b"}',
			'{"id":"evt_zw"}',
			`{"id":"${long}a"}`,
			`{"id":"${long}b"}`,
			'{"id":9007199254740993}',
			'{"id":9007199254740992}',
		];
		const answers = [];
		for (const body of bodies) answers.push((await deliver(body, stripeHeaders(body))).outcome);
		const copies = [];
		for (const body of bodies) copies.push((await post(body, stripeHeaders(body))).outcome);
		const nul = await post('{"id":"evt_nul\\u0000x"}', stripeHeaders('{"id":"evt_nul\\u0000x"}'));
		const keys = await keysOfWorkflow();
		expect({
			answers,
			copies,
			keys: keys.length,
			hashed: keys.filter((key) => key.includes('long-key-sha256:')).length,
			exact: [keys.includes(keyOf('9007199254740993')), keys.includes(keyOf('9007199254740992'))],
			nul: [nul.status, JSON.parse(nul.text).error, nul.started],
		}).toEqual({
			answers: bodies.map(() => 'new'),
			copies: bodies.map(() => 'duplicate'),
			keys: bodies.length,
			hashed: 2,
			exact: [true, true],
			nul: [503, 'key_refused', 0],
		});
	});

	// Bodies with no `id` (a JSON array, a string, a number, null) are keyed by their body hash: each accepted once, its
	// exact copy a duplicate, and nothing crashes or merges two different bodies. An empty body is refused (503
	// key_refused): every bodiless request hashes alike, and one key for all would answer every later event as a copy.
	it('bodies without an id (array, string, number, null): keyed by body hash, once each, a copy a duplicate; an empty body refused', async () => {
		use('wf-rt14-shapes', trigger('stripe'));
		const empty = await deliver('', stripeHeaders(''));
		expect([empty.status, empty.outcome, JSON.parse(empty.text).error]).toEqual([503, 'not_reserved', 'key_refused']);
		const bodies = ['[{"id":"evt_in_array"}]', '"evt_a_string"', '12345678901234567890', 'null'];
		const first = [];
		for (const body of bodies) {
			const answer = await deliver(body, stripeHeaders(body));
			first.push([answer.status, answer.outcome, answer.answered]);
		}
		const copies = [];
		for (const body of bodies) copies.push((await post(body, stripeHeaders(body))).outcome);
		const keys = await keysOfWorkflow();
		expect({ first, copies, keys: keys.length, allHashes: keys.every((key) => /:sha256:[0-9a-f]{64}$/.test(key)) }).toEqual({
			first: bodies.map(() => [200, 'new', 200]),
			copies: bodies.map(() => 'duplicate'),
			keys: bodies.length,
			allHashes: true,
		});
	});

	// A multipart/form-data request to the trigger: n8n's multipart parser consumes the body before the trigger is
	// called, so there are no raw bytes to verify: 503 (nothing checked, nothing reserved), never accepted.
	it('multipart/form-data to the trigger (a signed event as its file): 503, nothing reserved', async () => {
		use('wf-rt14-multipart-trigger', trigger('stripe'));
		const genuine = '{"id":"evt_mp_trigger"}';
		const form = new FormData();
		form.append('data', new Blob([genuine], { type: 'application/json' }), 'event.json');
		form.append('id', 'evt_mp_trigger');
		const answer = await post(form, { 'stripe-signature': stripeHeader(genuine) });
		expect({ status: answer.status, started: answer.started, keys: await keysOfWorkflow() }).toEqual({ status: 503, started: 0, keys: [] });
	});

	/* (5) The node path: n8n's Webhook node → Webhook Signature Verify → Idempotency Reserve --------------------------- */

	it('node path, Raw Body on: genuine → Valid → New, one charge; its copy a Duplicate; a forged body → Invalid, no key', async () => {
		activeWorkflowId = 'wf-rt14-node';
		const genuine = '{"id":"evt_node_ok","amount":100}';
		const first = await deliverNodePath(true, genuine, stripeHeaders(genuine));
		const copy = await deliverNodePath(true, genuine, stripeHeaders(genuine));
		const forged = await deliverNodePath(true, '{"id":"evt_node_forged","amount":1}', stripeHeaders(genuine));
		expect({
			first: [first.valid, first.reservedNew, first.error],
			copy: [copy.valid, copy.duplicate],
			forged: [forged.valid, forged.invalid, forged.reservedNew],
			keys: [(await storedShared('evt:evt_node_ok'))?.status, await storedShared('evt:evt_node_forged')],
			charges: [chargesFor('evt_node_ok'), chargesFor('evt_node_forged')],
		}).toEqual({
			first: [1, 1, undefined],
			copy: [1, 1],
			forged: [0, 1, 0],
			keys: ['completed', undefined],
			charges: [1, 0],
		});
	});

	it('node path, Raw Body off: the Verify node stops ("No raw request body"): nothing reserved, nothing charged', async () => {
		activeWorkflowId = 'wf-rt14-node-noraw';
		const genuine = '{"id":"evt_node_noraw"}';
		const result = await deliverNodePath(false, genuine, stripeHeaders(genuine));
		expect({
			error: result.error?.includes('No raw request body'),
			reserved: result.reservedNew,
			key: await storedShared('evt:evt_node_noraw'),
			charges: chargesFor('evt_node_noraw'),
		}).toEqual({ error: true, reserved: 0, key: undefined, charges: 0 });
	});

	// n8n's Webhook node puts a multipart/form-data request's uploaded files in the item's binary under their form field
	// names (n8n-nodes-base Webhook/utils.js handleFormData) and the form's text fields in `body`, whatever the Raw Body
	// option says: a file field named "data" takes the place Webhook Signature Verify reads the raw body from. Anyone
	// holding ONE genuine signed delivery posts it as the file "data" of a form whose fields are their own event.
	// A multipart request is refused before any signature is checked (lib/signature/verify.ts, reason multipart_body):
	// Invalid, no key, and the real event runs once when it comes. Verified, the file would let the attacker's fields be
	// reserved New and charged, and the real event with that id would be a Duplicate that never runs.
	it('node path: a multipart form whose file "data" is a captured genuine delivery is Invalid, nothing reserved; the real event then runs once', async () => {
		activeWorkflowId = 'wf-rt14-node-multipart';
		const captured = '{"id":"evt_captured","amount":100}';
		const signature = stripeHeader(captured);
		const form = () => {
			const data = new FormData();
			data.append('data', new Blob([captured], { type: 'application/json' }), 'event.json');
			data.append('id', 'evt_real_next');
			data.append('amount', '999999');
			return data;
		};
		const forged = await deliverNodePath(true, form(), { 'stripe-signature': signature });
		// The real event evt_real_next arrives afterwards, genuinely signed.
		const realBody = '{"id":"evt_real_next","amount":100}';
		const real = await deliverNodePath(true, realBody, stripeHeaders(realBody));
		expect({
			forged: [forged.valid, forged.invalid, forged.reservedNew],
			// What the step acted on as New: the attacker's own fields, none of them signed.
			actedOn: forged.newBody,
			real: [real.valid, real.reservedNew, real.duplicate],
			charges: chargesFor('evt_real_next'),
		}).toEqual({
			forged: [0, 1, 0],
			actedOn: undefined,
			real: [1, 1, 0],
			charges: 1,
		});
	});

	// The node path's form of the row above: Idempotency Reserve reads the key from the raw body as JSON (Raw Body on,
	// which Webhook Signature Verify needs) whatever the unsigned Content-Type says: the copy re-sent as text/plain is a
	// Duplicate. Keyed on n8n's parsed `body` (text, no id), it would be New, keyed by its body hash, charged again.
	it('node path: a genuine copy re-sent with Content-Type text/plain is a Duplicate, charged once', async () => {
		activeWorkflowId = 'wf-rt14-node-ct';
		const body = '{"id":"evt_node_ct","amount":100}';
		const signature = stripeHeader(body);
		const first = await deliverNodePath(true, body, { 'content-type': 'application/json', 'stripe-signature': signature });
		const asText = await deliverNodePath(true, body, { 'content-type': 'text/plain', 'stripe-signature': signature });
		expect({
			first: [first.valid, first.reservedNew],
			asText: [asText.valid, asText.reservedNew, asText.duplicate],
			charges: chargesFor('evt_node_ct'),
		}).toEqual({
			first: [1, 1],
			asText: [1, 0, 1],
			charges: 1,
		});
	});
	/* The sixteenth pass ---------------------------------------------------------------------------------------------- */

	/* (1) keyBody on the trigger -------------------------------------------------------------------------------------- */

	// A genuine delivery whose bytes start with a UTF-8 BOM (EF BB BF; some .NET / Windows senders write one), sent as
	// application/json, then the same bytes and Stripe-Signature as text/plain: one key. The trigger's parser leaves the
	// BOM out as n8n's does (lib/webhook/body.ts parseBody), and keyBody (lib/keys/deriveKey.ts) reads bytes that are
	// JSON as JSON whenever the body it is given is not an object. A JSON parse that throws on the BOM would key the first
	// by its body hash and the copy by its id: two keys, two charges.
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

	// Several events in one delivery (Events Path body.events): the events are found in the signed bytes' JSON whatever
	// the Content-Type says (lib/webhook/decide.ts, keyBody), so a copy of a JSON batch re-sent as text/plain or as a form
	// is the same events: answered as copies of a batch still running (409), nothing started again.
	it('trigger, Events Path: a JSON batch once, its copies as text/plain and as a form: the same events, nothing run again', async () => {
		use('wf-rt16-events', trigger('stripe', { options: { eventsPath: 'body.events' } }));
		const body = '{"events":[{"id":"evt_b1"},{"id":"evt_b2"}]}';
		const signature = stripeHeader(body);
		// The accepted batch's execution is not run here: only whether a copy starts anything again is asked.
		const first = await post(body, { 'content-type': 'application/json', 'stripe-signature': signature });
		const asText = await post(body, { 'content-type': 'text/plain', 'stripe-signature': signature });
		const asForm = await post(body, { 'content-type': 'application/x-www-form-urlencoded', 'stripe-signature': signature });
		expect({
			first: [first.outcome, first.started],
			asText: [asText.status, asText.started],
			asForm: [asForm.status, asForm.started],
			keys: await keysOfWorkflow(),
		}).toEqual({
			first: ['new', 2],
			asText: [409, 0],
			asForm: [409, 0],
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
	// Duplicate. Taken as "already parsed", a type ending in +json would leave the copy no id: keyed by its body hash,
	// New, charged again.
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
			const between = packageNode('Normalize', 'rt14Normalize', {}, { position: [300, 0] });
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
	// file, not the request): each submission is keyed by its own `id` field and runs. Read as the raw body, the file
	// would give two submissions attaching the same JSON document one key: the second would never run.
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
