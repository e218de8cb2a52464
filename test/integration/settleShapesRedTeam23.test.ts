import { createHmac } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

import {
	NodeConnectionTypes,
	NodeOperationError,
	type ICredentialDataDecryptedObject,
	type IConnections,
	type IExecuteFunctions,
	type INode,
	type INodeExecutionData,
	type INodeType,
	type IWebhookResponseData,
} from 'n8n-workflow';

import { OUTCOME_HEADER } from '../../lib/webhook/answers';
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
import { asN8nReceives, callWebhook, n8nCli } from '../support/n8nRequestPath';
import { link } from '../support/settleWorkflows';
import { embeddedModule } from '../support/storeTargets';
import { n8nFolderForTheFile } from '../support/triggerWebhookCall';

/*
 * Twenty-third red-team pass: the node path (n8n-nodes-base's Webhook 2.1 with Raw Body → Webhook Signature Verify →
 * Idempotency Reserve → a business step, Settle beside it) and the Idempotent Webhook trigger, through n8n 2.41.1's
 * own request path (its raw body reader, which reads the Content-Type's charset, and parseBody, then webhook() in
 * n8n-core's WebhookContext over a real HTTP exchange) and its engine (WorkflowExecute). The store is the embedded one
 * in the file's n8n folder. Inputs: the Content-Type's charset (unsigned) with a non-ASCII id, bodies that are not
 * UTF-8, header spellings of each scheme, timestamps, two executions of one event at once, and what a failing step's
 * message quotes. The step charges one effect per item, named by the id its signed bytes carry (read as UTF-8 from the
 * raw bytes, so a charge is counted per genuine event whatever n8n made of the body). A row marked failing breaks a
 * promise: its comment says what happens and how to reproduce it.
 */

const SECRET = 'whsec_rt23_stripe_secret';
const signing: ICredentialDataDecryptedObject = { secret: SECRET };

const credentialsHelper = () =>
	credentialsHelperReading(async (_details, type): Promise<ICredentialDataDecryptedObject> => {
		if (type === 'webhookSignatureApi') return { ...signing };
		throw new Error(`No credential of type ${type}`);
	});

/* The served node ------------------------------------------------------------------------------------------------- */

let activeWorkflowId = 'wf-rt23';
let activeNode: INode;
let lastResult: IWebhookResponseData | Error | undefined;
let handling: Promise<void> = Promise.resolve();

async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
	lastResult = undefined;
	const n8nRequest = await asN8nReceives(request, response);
	if (!n8nRequest) return;
	lastResult = await callWebhook(n8nRequest, response, activeNode, activeWorkflowId, credentialsHelper());
	if (!response.writableEnded) response.writeHead(200).end('{"started":true}');
}

let server: http.Server;
let baseUrl: string;
const n8nFolder = n8nFolderForTheFile('rt23-n8n-');
const keyFile = () => path.join(n8nFolder(), '.n8n', 'storage', 'n8n-nodes-idempotency', 'keys.sqlite');
const keyStore = () => embeddedModule().openEmbeddedKeyStore({ file: keyFile() });
const stored = async (key: string) => (await keyStore().getKeys([key])).get(key);
/** Every key of the table that starts with `prefix`. */
async function keysLike(prefix: string): Promise<string[]> {
	const { DatabaseSync } = (process as unknown as { getBuiltinModule(id: string): unknown }).getBuiltinModule('node:sqlite') as {
		DatabaseSync: new (
			file: string,
			options: { readOnly: boolean },
		) => { prepare(sql: string): { all(...parameters: unknown[]): unknown[] }; close(): void };
	};
	const database = new DatabaseSync(keyFile(), { readOnly: true });
	try {
		const rows = database.prepare('SELECT key FROM processed_events WHERE key LIKE ?').all(`${prefix}%`) as Array<{ key: string }>;
		return rows.map((row) => row.key).sort();
	} finally {
		database.close();
	}
}

const startedItems = (): INodeExecutionData[] =>
	lastResult && !(lastResult instanceof Error) ? ((lastResult.workflowData?.[0] as INodeExecutionData[] | undefined) ?? []) : [];

interface Answer {
	status: number;
	outcome: string | null;
	text: string;
	started: number;
}

async function post(body: string | Buffer, headers: Record<string, string>): Promise<Answer> {
	const response = await fetch(`${baseUrl}/webhook/rt23`, { method: 'POST', headers, body: body as RequestInit['body'] });
	const text = await response.text();
	await handling;
	return { status: response.status, outcome: response.headers.get(OUTCOME_HEADER), text, started: startedItems().length };
}

/* Signatures ----------------------------------------------------------------------------------------------------- */

const now = () => Math.floor(Date.now() / 1000);
const hmac = (key: string | Buffer, content: string | Buffer) => createHmac('sha256', key).update(content).digest();
function stripeHeader(body: string | Buffer, t: number | string = now()): string {
	return `t=${t},v1=${hmac(SECRET, Buffer.concat([Buffer.from(`${t}.`), Buffer.from(body)])).toString('hex')}`;
}

/* The business step ---------------------------------------------------------------------------------------------- */

/** Every charge: the id the item's signed bytes carry (UTF-8 JSON of binary `data`), else the parsed body's id. */
const charges: string[] = [];
const chargesFor = (id: string) => charges.filter((charge) => charge === id).length;
/** When set, the step fails every item with this message (after charging nothing). */
let failWith: string | undefined;

async function signedId(context: IExecuteFunctions, item: INodeExecutionData, index: number): Promise<string> {
	if (item.binary?.data) {
		try {
			const raw = await context.helpers.getBinaryDataBuffer(index, 'data');
			const parsed = JSON.parse(raw.toString('utf8').replace(/^\uFEFF/, '')) as { id?: unknown };
			if (parsed.id !== undefined) return String(parsed.id);
			// eslint-disable-next-line no-empty
		} catch {}
	}
	const body = item.json.body as { id?: unknown } | undefined;
	return body !== null && typeof body === 'object' && body.id !== undefined ? String(body.id) : '';
}

class Rt23Charge implements INodeType {
	description: INodeType['description'] = {
		displayName: 'RT23 Charge',
		name: 'rt23Charge',
		group: ['transform'],
		version: 1,
		description: 'Charges the event its signed bytes name',
		defaults: { name: 'Charge' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		properties: [],
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const output: INodeExecutionData[] = [];
		for (const [index, item] of this.getInputData().entries()) {
			if (failWith !== undefined) throw new NodeOperationError(this.getNode(), failWith, { itemIndex: index });
			const id = await signedId(this, item, index);
			// Two executions of one event at once: give the other a chance to run in between.
			await new Promise((resolve) => setTimeout(resolve, 20));
			charges.push(id);
			output.push({ json: { charged: id }, pairedItem: { item: index } });
		}
		return [output];
	}
}

/* The node path: n8n's Webhook → Verify → Reserve → Charge, Settle beside it --------------------------------------- */

const n8nWebhook: INode = {
	id: 'Webhook',
	name: 'Webhook',
	type: 'n8n-nodes-base.webhook',
	typeVersion: 2.1,
	position: [0, 0],
	webhookId: 'rt23-node-path',
	parameters: { httpMethod: 'POST', path: 'rt23', responseMode: 'onReceived', options: { rawBody: true } },
};

interface NodePathSettings {
	verify?: Record<string, unknown>;
	reserve?: Record<string, unknown>;
}

function nodePathWorkflow({ verify = {}, reserve = {} }: NodePathSettings) {
	const nodes: INode[] = [
		n8nWebhook,
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
		packageNode('Charge', 'rt23Charge', {}, { position: [600, 0], onError: 'continueErrorOutput' }),
		packageNode(
			'Settle',
			'idempotencyKey',
			{ operation: 'settle', store: 'embedded', options: {} },
			{ typeVersion: 3, position: [600, 240] },
		),
	];
	const connections: IConnections = {
		Webhook: { main: [link('Verify')] },
		Verify: { main: [link('Reserve'), []] },
		Reserve: { main: [link('Charge', 'Settle')] },
	};
	return inProcessWorkflow(activeWorkflowId, nodes, connections);
}

let executionCount = 0;
/** What one execution of the node path did with the items n8n's Webhook gave. */
async function runNodePath(items: INodeExecutionData[], settings: NodePathSettings = {}) {
	const { run } = await executeInProcess(
		nodePathWorkflow(settings),
		`rt23-node-${++executionCount}`,
		items,
		engineBase(credentialsHelper()),
	);
	const outputOf = (node: string, index: number) => run.data.resultData.runData[node]?.[0]?.data?.main[index] ?? [];
	return {
		valid: outputOf('Verify', 0).length,
		invalid: outputOf('Verify', 1).length,
		reason: (outputOf('Verify', 1)[0]?.json.signature as { reason?: string } | undefined)?.reason,
		reservedNew: outputOf('Reserve', 0).length,
		duplicate: outputOf('Reserve', 1).length,
		inProgress: outputOf('Reserve', 2).length,
		/** Why the items Reserve refused were refused (its Not Reserved output, or the run's error). */
		refusal: JSON.stringify(outputOf('Reserve', 3).map((item) => item.json)) + (run.data.resultData.error?.message ?? ''),
		key: (outputOf('Reserve', 0)[0]?.json.idempotency as { key?: string } | undefined)?.key,
		settleOutput: JSON.stringify(run.data.resultData.runData.Settle ?? null),
		runError: run.data.resultData.error?.message,
		run,
	};
}

/** Posts to n8n's Webhook node and runs the execution it started. */
async function deliverNodePath(body: string | Buffer, headers: Record<string, string>, settings: NodePathSettings = {}) {
	activeNode = n8nWebhook;
	const answer = await post(body, headers);
	const items = startedItems();
	if (items.length === 0)
		return { answer, valid: 0, invalid: 0, reason: undefined, reservedNew: 0, duplicate: 0, inProgress: 0, refusal: '' } as const;
	return { answer, ...(await runNodePath(items, settings)) };
}

/* The trigger ---------------------------------------------------------------------------------------------------- */

const trigger = (parameters: Record<string, unknown> = {}) =>
	packageNode(
		'Idempotent Webhook',
		'idempotentWebhook',
		{ path: 'rt23', scheme: 'stripe', store: 'embedded', keySource: 'auto', ...parameters },
		{ typeVersion: 3, credentials: { webhookSignatureApi: { id: 'signing', name: 'Signing' } } },
	);

async function deliverTrigger(body: string | Buffer, headers: Record<string, string>): Promise<Answer & { answered?: number }> {
	const answer = await post(body, headers);
	if (answer.started === 0) return answer;
	const executionId = `rt23-trigger-${++executionCount}`;
	const workflow = inProcessWorkflow(
		activeWorkflowId,
		[{ ...activeNode, name: 'Webhook' }, packageNode('Charge', 'rt23Charge', {}, { position: [400, 0] })],
		{ Webhook: { main: [link('Charge')] } },
	);
	await executeInProcess(workflow, executionId, startedItems(), engineBase(credentialsHelper()));
	const [response] = webhookResponses.get(executionId) ?? [];
	return { ...answer, answered: response ? Number(response.statusCode ?? 200) : undefined };
}

describeWithN8n('red team 23: the node path and the request surface, through n8n’s own request path and engine', () => {
	beforeAll(async () => {
		embeddedModule();
		n8nCli();
		addNodeTypes({
			...loadBaseNodeFiles({ 'n8n-nodes-base.webhook': 'Webhook/Webhook.node.js' }),
			[`${PACKAGE}.rt23Charge`]: new Rt23Charge(),
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
		failWith = undefined;
	});

	/* (1) The Content-Type's charset: unsigned, and n8n decodes the body by it --------------------------------------- */

	// n8n's body parser decodes an application/json body with the charset the (unsigned) Content-Type names
	// (body-parser.js: rawBody.toString(encoding)): the same genuine, signed bytes re-sent as
	// `application/json; charset=latin1` give a non-ASCII id another text (`évt_ü` read as `Ã©vt_Ã¼`) in n8n's parse.
	// The key is read from the signed bytes, so the copy keeps it: a Duplicate, charged once.
	it('node path: a genuine copy re-sent as application/json; charset=latin1 (non-ASCII id) is a Duplicate, charged once', async () => {
		activeWorkflowId = 'wf-rt23-latin1';
		const body = Buffer.from('{"id":"évt_rt23_ü","amount":100}', 'utf8');
		const signature = stripeHeader(body);
		const first = await deliverNodePath(body, { 'content-type': 'application/json', 'stripe-signature': signature });
		const copy = await deliverNodePath(body, { 'content-type': 'application/json; charset=latin1', 'stripe-signature': signature });
		expect({
			first: [first.valid, first.reservedNew],
			copy: [copy.valid, copy.reservedNew, copy.duplicate],
			charges: chargesFor('évt_rt23_ü'),
		}).toEqual({ first: [1, 1], copy: [1, 0, 1], charges: 1 });
	});

	// Control: the trigger parses the bytes as UTF-8 whatever the charset (lib/webhook/body.ts): the copy is a copy.
	// n8n does not parse a `…+json` body (not a type its webhook path parses): the key is read from the signed bytes,
	// and the copy keeps it.
	it('node path: a genuine copy re-sent as application/vnd.api+json is a Duplicate, charged once', async () => {
		activeWorkflowId = 'wf-rt23-vendor-json';
		const body = Buffer.from('{"id":"evt_rt23_vendor","amount":100}', 'utf8');
		const signature = stripeHeader(body);
		const first = await deliverNodePath(body, { 'content-type': 'application/json', 'stripe-signature': signature });
		const copy = await deliverNodePath(body, { 'content-type': 'application/vnd.api+json', 'stripe-signature': signature });
		expect({
			first: [first.valid, first.reservedNew],
			copy: [copy.valid, copy.reservedNew, copy.duplicate],
			charges: chargesFor('evt_rt23_vendor'),
		}).toEqual({ first: [1, 1], copy: [1, 0, 1], charges: 1 });
	});

	it('trigger: the same latin1-labelled copy is 200 duplicate, charged once', async () => {
		activeWorkflowId = 'wf-rt23-latin1-trigger';
		activeNode = trigger();
		const body = Buffer.from('{"id":"évt_rt23_tü","amount":100}', 'utf8');
		const signature = stripeHeader(body);
		const first = await deliverTrigger(body, { 'content-type': 'application/json', 'stripe-signature': signature });
		const copy = await deliverTrigger(body, { 'content-type': 'application/json; charset=latin1', 'stripe-signature': signature });
		expect({
			first: [first.status, first.outcome, first.answered],
			copy: [copy.status, copy.outcome, copy.started],
			charges: chargesFor('évt_rt23_tü'),
		}).toEqual({ first: [200, 'new', 200], copy: [200, 'duplicate', 0], charges: 1 });
	});

	/* (2) Bodies that are not UTF-8 ------------------------------------------------------------------------------------ */

	// Two genuine, different events whose ids differ only in a byte that is not UTF-8 (0xFF, 0xFE): each would be
	// decoded as UTF-8 with U+FFFD in its place, one key for both, and the second answered as a copy of the first and
	// never run. Such a key is refused (503 key_refused, retried by the sender, visible), never merged.
	it('trigger: two signed events whose ids differ only in a non-UTF-8 byte are refused (503 key_refused), never merged', async () => {
		activeWorkflowId = 'wf-rt23-bytes-trigger';
		activeNode = trigger();
		const event = (byte: number) => Buffer.concat([Buffer.from('{"id":"evt_rt23_'), Buffer.from([byte]), Buffer.from('"}')]);
		const before = charges.length;
		const a = await deliverTrigger(event(0xff), { 'content-type': 'application/json', 'stripe-signature': stripeHeader(event(0xff)) });
		const b = await deliverTrigger(event(0xfe), { 'content-type': 'application/json', 'stripe-signature': stripeHeader(event(0xfe)) });
		expect({
			a: [a.status, JSON.parse(a.text).error],
			b: [b.status, JSON.parse(b.text).error],
			effects: charges.length - before,
			keys: await keysLike('wf:wf-rt23-bytes-trigger:'),
		}).toEqual({ a: [503, 'key_refused'], b: [503, 'key_refused'], effects: 0, keys: [] });
	});

	// The same on the node path: n8n's parseBody decodes the bytes as UTF-8 too.
	it('node path: two signed events whose ids differ only in a non-UTF-8 byte are refused (Not Reserved), never merged', async () => {
		activeWorkflowId = 'wf-rt23-bytes-node';
		const event = (byte: number) => Buffer.concat([Buffer.from('{"id":"evt_rt23n_'), Buffer.from([byte]), Buffer.from('"}')]);
		const before = charges.length;
		const a = await deliverNodePath(event(0xff), { 'content-type': 'application/json', 'stripe-signature': stripeHeader(event(0xff)) });
		const b = await deliverNodePath(event(0xfe), { 'content-type': 'application/json', 'stripe-signature': stripeHeader(event(0xfe)) });
		expect({
			a: [a.valid, a.reservedNew, a.duplicate, /not UTF-8/.test(a.refusal)],
			b: [b.valid, b.reservedNew, b.duplicate, /not UTF-8/.test(b.refusal)],
			effects: charges.length - before,
			key: await stored('evt:evt_rt23n_\ufffd').then((record) => record?.status ?? null),
		}).toEqual({ a: [1, 0, 0, true], b: [1, 0, 0, true], effects: 0, key: null });
	});

	/* (3) Signature spellings on the node path: what each scheme accepts ---------------------------------------------- */

	// Stripe: several v1= entries (a garbled one, a wrong one, the right one) and a v0 entry: Valid; the header given
	// twice with the same value (Node joins it with ", "): one value, Valid; a header with a space after a comma: refused
	// (malformed_header), never Valid on a forged entry. Only the Valid ones reserve a key, one charge in all.
	it('Stripe: several v1= entries and a repeated identical header are Valid, one charge; spaces after commas and a forged entry alone are Invalid', async () => {
		activeWorkflowId = 'wf-rt23-stripe-forms';
		const body = '{"id":"evt_rt23_forms","amount":1}';
		const t = now();
		const good = stripeHeader(body, t).split(',v1=')[1];
		const wrong = hmac('whsec_other', `${t}.${body}`).toString('hex');
		const results: unknown[] = [];
		for (const header of [`t=${t},v1=zz-not-hex,v1=${wrong},v0=${wrong},v1=${good}`, `t=${t}, v1=${good}`, `t=${t},v1=${wrong}`]) {
			const result = await deliverNodePath(body, { 'content-type': 'application/json', 'stripe-signature': header });
			results.push([result.valid, result.invalid, result.reason ?? null, result.reservedNew, result.duplicate]);
		}
		// The same header sent twice (fetch joins repeated values with ", " as Node's parser does on the way in).
		const twice = new Headers({ 'content-type': 'application/json' });
		twice.append('stripe-signature', `t=${t},v1=${good}`);
		twice.append('stripe-signature', `t=${t},v1=${good}`);
		activeNode = n8nWebhook;
		await post(body, Object.fromEntries(twice.entries()));
		const repeated = await runNodePath(startedItems());
		expect({
			results,
			repeated: [repeated.valid, repeated.reservedNew, repeated.duplicate],
			charges: chargesFor('evt_rt23_forms'),
		}).toEqual({
			results: [
				[1, 0, null, 1, 0],
				[0, 1, 'malformed_header', 0, 0],
				[0, 1, 'signature_mismatch', 0, 0],
			],
			repeated: [1, 0, 1],
			charges: 1,
		});
	});

	// Stripe timestamps: a leading zero (still 12 digits at most, signed as sent) is read as the same second and Valid;
	// negative, a fraction, 13 digits, an hour old: Invalid with their reason, nothing reserved.
	it('Stripe timestamps: leading zero Valid; negative, fraction, 13 digits, an hour old: Invalid, nothing reserved', async () => {
		activeWorkflowId = 'wf-rt23-stripe-ts';
		const outcomes: unknown[] = [];
		const cases: Array<[string, string]> = [
			['0' + String(now()), 'evt_rt23_ts_zero'],
			[String(-now()), 'evt_rt23_ts_neg'],
			[`${now()}.5`, 'evt_rt23_ts_frac'],
			['1' + String(now()).padStart(12, '0'), 'evt_rt23_ts_13'],
			[String(now() - 3600), 'evt_rt23_ts_old'],
		];
		for (const [t, id] of cases) {
			const body = JSON.stringify({ id });
			const result = await deliverNodePath(body, { 'content-type': 'application/json', 'stripe-signature': stripeHeader(body, t) });
			outcomes.push([id, result.valid, result.reason ?? null, result.reservedNew, chargesFor(id)]);
		}
		expect(outcomes).toEqual([
			['evt_rt23_ts_zero', 1, null, 1, 1],
			['evt_rt23_ts_neg', 0, 'malformed_timestamp', 0, 0],
			['evt_rt23_ts_frac', 0, 'malformed_timestamp', 0, 0],
			['evt_rt23_ts_13', 0, 'malformed_timestamp', 0, 0],
			['evt_rt23_ts_old', 0, 'timestamp_too_old', 0, 0],
		]);
	});

	// GitHub: upper-case hex Valid, the prefix in upper case (SHA256=) Invalid malformed_header; Shopify: padded base64
	// Valid, the same without its padding Invalid. Only the Valid ones are reserved (Body Hash keys), each charged once.
	it('GitHub SHA256= prefix and Shopify unpadded base64: Invalid (malformed_header); upper-case hex and padded base64: Valid, charged once', async () => {
		activeWorkflowId = 'wf-rt23-gh-shop';
		const outcomes: unknown[] = [];
		const github = (body: string) => hmac(SECRET, body).toString('hex');
		const shopify = (body: string) => hmac(SECRET, body).toString('base64');
		const cases: Array<[string, string, Record<string, string>]> = [
			['github', '{"id":"gh_upper_hex"}', { 'x-hub-signature-256': `sha256=${github('{"id":"gh_upper_hex"}').toUpperCase()}` }],
			['github', '{"id":"gh_upper_prefix"}', { 'x-hub-signature-256': `SHA256=${github('{"id":"gh_upper_prefix"}')}` }],
			['shopify', '{"id":"sh_padded"}', { 'x-shopify-hmac-sha256': shopify('{"id":"sh_padded"}') }],
			['shopify', '{"id":"sh_unpadded"}', { 'x-shopify-hmac-sha256': shopify('{"id":"sh_unpadded"}').replace(/=+$/, '') }],
		];
		for (const [scheme, body, headers] of cases) {
			const result = await deliverNodePath(body, { 'content-type': 'application/json', ...headers }, { verify: { scheme } });
			const id = (JSON.parse(body) as { id: string }).id;
			outcomes.push([id, result.valid, result.reason ?? null, result.reservedNew, chargesFor(id)]);
		}
		expect(outcomes).toEqual([
			['gh_upper_hex', 1, null, 1, 1],
			['gh_upper_prefix', 0, 'malformed_header', 0, 0],
			['sh_padded', 1, null, 1, 1],
			['sh_unpadded', 0, 'malformed_header', 0, 0],
		]);
	});

	/* (4) Two executions of one event at once, on the node path ------------------------------------------------------ */

	// The second execution finds the key under the first one's lease: In Progress (Reserve's third output), not run.
	it('node path: one genuine delivery run by two n8n executions at once (embedded store): one New, one In Progress, one charge', async () => {
		activeWorkflowId = 'wf-rt23-concurrent';
		const body = '{"id":"evt_rt23_conc","amount":5}';
		activeNode = n8nWebhook;
		await post(body, { 'content-type': 'application/json', 'stripe-signature': stripeHeader(body) });
		const items = startedItems();
		const [a, b] = await Promise.all([runNodePath(items), runNodePath(items)]);
		expect({
			news: a.reservedNew + b.reservedNew,
			inProgress: a.inProgress + b.inProgress,
			duplicates: a.duplicate + b.duplicate,
			charges: chargesFor('evt_rt23_conc'),
			status: (await stored('evt:evt_rt23_conc'))?.status,
		}).toEqual({ news: 1, inProgress: 1, duplicates: 0, charges: 1, status: 'completed' });
	});

	/* (5) What a failing step's message quotes: the key's stored last error --------------------------------------- */

	// The node path: Reserve → a step that fails with a message (n8n's NodeOperationError, the step at Continue (using
	// error output)) → Settle beside it marks the key failed with that message, redacted (lib/evidence/redactedText.ts)
	// before it is stored; Get Key, List Keys and the dashboard read it back. docs/dashboard.md and
	// docs/replay-and-visibility.md: "a last error that quotes a credential (`Bearer …`, `?api_key=…`) shows it
	// redacted"; the package's promise: nothing secret stored. (n8n's own execution record keeps the step's message as
	// n8n keeps it; what is asked here is the key's stored row.) `broken` rows are confirmed leaks: the stored last
	// error holds the credential verbatim. Repro for each: n8n Webhook (Raw Body) → Verify → Reserve → a step that
	// throws the message, Settle beside it; then Get Key on evt:<id> (lastError).
	const quoted: Array<{ label: string; message: string; secret: string; broken: boolean }> = [
		{
			label: 'Bearer token',
			message: 'upstream 401: Authorization: Bearer sk_live_rt23_bearer_0123',
			secret: 'sk_live_rt23_bearer_0123',
			broken: false,
		},
		{
			label: 'query api_key',
			message: 'GET https://api.example.com/v1/charge?api_key=sk_live_rt23_query_0123 failed',
			secret: 'sk_live_rt23_query_0123',
			broken: false,
		},
		// A header as `name: value` (stored verbatim before the rule for such pairs).
		{
			label: 'header dump name: value',
			message: 'request failed; sent headers: x-api-key: sk_live_rt23_colon_0123',
			secret: 'sk_live_rt23_colon_0123',
			broken: false,
		},
		// Node's util.inspect form of an object.
		{
			label: 'util.inspect object',
			message: "request failed with config { apiKey: 'sk_live_rt23_inspect_0123', retries: 2 }",
			secret: 'sk_live_rt23_inspect_0123',
			broken: false,
		},
		// An API's error body quoted as a JSON string (n8n's `400 - "{\"…\"}"` form of NodeApiError).
		{
			label: 'JSON inside a JSON string',
			message: '400 - "{\\"error\\":\\"bad\\",\\"api_key\\":\\"sk_live_rt23_escaped_0123\\"}"',
			secret: 'sk_live_rt23_escaped_0123',
			broken: false,
		},
		// user:password@ in a URL.
		{
			label: 'URL userinfo',
			message: 'POST https://svc:pw_rt23_userinfo_0123@api.example.com/charge answered 502',
			secret: 'pw_rt23_userinfo_0123',
			broken: false,
		},
		// Documented, not recognised (docs/dashboard.md): a value quoted without a name that says it is a credential.
		// Seen stored: "Charge: signature check against whsec_rt23_stripe_secret failed" (the Verify credential's secret;
		// the node path has no list of the request's credentials to strip, unlike the trigger).
		{ label: 'the signing secret itself', message: `signature check against ${SECRET} failed`, secret: SECRET, broken: true },
	];
	for (const { label, message, secret, broken } of quoted) {
		(broken ? it.failing : it)(
			`node path, the step's failure quoting a credential (${label}): the key's stored last error does not hold it`,
			async () => {
				activeWorkflowId = `wf-rt23-leak-${label.replace(/\W+/g, '-')}`;
				const id = `evt_rt23_leak_${label.replace(/\W+/g, '_')}`;
				const body = JSON.stringify({ id });
				failWith = message;
				const result = await deliverNodePath(body, { 'content-type': 'application/json', 'stripe-signature': stripeHeader(body) });
				const record = await stored(`evt:${id}`);
				expect({
					reserved: result.reservedNew,
					status: record?.status,
					failureKept: String(record?.lastError ?? '').startsWith('Charge: '),
					storedHasSecret: String(record?.lastError ?? '').includes(secret),
				}).toEqual({ reserved: 1, status: 'failed', failureKept: true, storedHasSecret: false });
			},
		);
	}
});
