import { createHmac } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

import { WebhookContext } from 'n8n-core';
import {
	NodeConnectionTypes,
	Workflow,
	type ICredentialDataDecryptedObject,
	type IWebhookData,
	type IWorkflowExecuteAdditionalData,
	type WorkflowExecuteMode,
	type IExecuteFunctions,
	type INode,
	type INodeExecutionData,
	type INodeType,
	type IWebhookResponseData,
} from 'n8n-workflow';

import { OUTCOME_HEADER } from '../../lib/webhook/answers';
import { IdempotentWebhook } from '../../nodes/IdempotentWebhook/IdempotentWebhook.node';
import { forgetKeptSigningSecrets } from '../../nodes/shared/signingSecret';
import { describeWithN8n } from '../support/n8nBaseNodes';
import {
	addNodeTypes,
	credentialsHelperReading,
	engineBase,
	executeInProcess,
	inProcessWorkflow,
	PACKAGE,
	nodeTypes,
	packageNode,
	webhookResponses,
} from '../support/n8nEngine';
import { asN8nReceives, callWebhook, n8nCli, type N8nRequest } from '../support/n8nRequestPath';
import { link } from '../support/settleWorkflows';
import { embeddedModule } from '../support/storeTargets';
import { n8nFolderForTheFile } from '../support/triggerWebhookCall';

/*
 * Twenty-first red-team pass: the Idempotent Webhook trigger's saved versions (1, 2, 3 with only the parameters a
 * user changed, as n8n saves them), Events Path batches (an event repeated, events without ids or not objects, ids
 * beyond 2^53, 1,000 and 1,001 events, a batch posted as text/plain), a key from a request with no body (HTTP Method
 * GET), and the trigger's own answers against docs/idempotent-webhook.md. n8n 2.41.1's request path (its raw body
 * reader and parseBody, then webhook() in n8n-core's WebhookContext over a real HTTP exchange; the Workflow fills in
 * each parameter's default as n8n does for a saved node), its engine (WorkflowExecute) for the execution the trigger
 * starts, and the embedded store in the file's n8n folder. The business step charges one effect per item, named by
 * the item's body. A row marked failing breaks a promise: its comment says what happens and how to reproduce it.
 */

const SECRET = 'whsec_rt21_stripe_secret';
const BASIC = { user: 'rt21-sender', password: 'bp_rt21_password' };

const credentialsHelper = () =>
	credentialsHelperReading(async (_details, type): Promise<ICredentialDataDecryptedObject> => {
		if (type === 'webhookSignatureApi') return { secret: SECRET };
		if (type === 'idempotentWebhookBasicAuthApi') return { ...BASIC };
		throw new Error(`No credential of type ${type}`);
	});

/* The served node ------------------------------------------------------------------------------------------------- */

let activeWorkflowId = 'wf-rt21';
let activeNode: INode;
let lastResult: IWebhookResponseData | Error | undefined;
let handling: Promise<void> = Promise.resolve();
/** 'manual': the editor's test URL (n8n calls the node's webhook() in manual mode and runs the execution so). */
let activeMode: WorkflowExecuteMode = 'webhook';

/** callWebhook (test/support/n8nRequestPath.ts) in manual mode: n8n-core's WebhookContext as the test URL makes it. */
async function callTestUrl(request: N8nRequest, response: ServerResponse): Promise<IWebhookResponseData | Error> {
	const nodeType = nodeTypes.getByNameAndVersion(activeNode.type, activeNode.typeVersion);
	const additionalData = {
		...engineBase(credentialsHelper()),
		httpRequest: request,
		httpResponse: response,
	} as unknown as IWorkflowExecuteAdditionalData;
	const webhookData = {
		webhookDescription: nodeType.description.webhooks![0],
		workflowId: activeWorkflowId,
		node: activeNode.name,
	} as unknown as IWebhookData;
	const workflow = new Workflow({ id: activeWorkflowId, nodes: [activeNode], connections: {}, active: false, nodeTypes });
	const context = new WebhookContext(workflow, activeNode, additionalData, 'manual', webhookData, [], null);
	try {
		return await (nodeType.webhook as unknown as (this: unknown) => Promise<IWebhookResponseData>).call(context);
	} catch (error) {
		return error as Error;
	}
}

async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
	lastResult = undefined;
	const n8nRequest = await asN8nReceives(request, response);
	if (!n8nRequest) return;
	lastResult =
		activeMode === 'manual'
			? await callTestUrl(n8nRequest, response)
			: await callWebhook(n8nRequest, response, activeNode, activeWorkflowId, credentialsHelper());
	if (!response.writableEnded) response.writeHead(200).end('{"started":true}');
}

let server: http.Server;
let baseUrl: string;
const n8nFolder = n8nFolderForTheFile('rt21-n8n-');
const keyFile = () => path.join(n8nFolder(), '.n8n', 'storage', 'n8n-nodes-idempotency', 'keys.sqlite');
const keyStore = () => embeddedModule().openEmbeddedKeyStore({ file: keyFile() });
const stored = async (key: string) => (await keyStore().getKeys([key])).get(key);

const startedItems = (): INodeExecutionData[] =>
	lastResult && !(lastResult instanceof Error) ? ((lastResult.workflowData?.[0] as INodeExecutionData[] | undefined) ?? []) : [];

interface Answer {
	status: number;
	outcome: string | null;
	text: string;
	started: number;
	wwwAuthenticate: string | null;
	contentType: string | null;
}

async function post(body: string | undefined, headers: Record<string, string>, { method = 'POST', query = '' } = {}): Promise<Answer> {
	const response = await fetch(`${baseUrl}/webhook/rt21${query}`, { method, headers, body });
	const text = await response.text();
	await handling;
	return {
		status: response.status,
		outcome: response.headers.get(OUTCOME_HEADER),
		text,
		started: startedItems().length,
		wwwAuthenticate: response.headers.get('www-authenticate'),
		contentType: response.headers.get('content-type'),
	};
}

const now = () => Math.floor(Date.now() / 1000);
function stripeHeaders(body: string, extra: Record<string, string> = {}): Record<string, string> {
	const t = now();
	const v1 = createHmac('sha256', SECRET).update(`${t}.${body}`).digest('hex');
	return { 'content-type': 'application/json', 'stripe-signature': `t=${t},v1=${v1}`, ...extra };
}

/* The trigger (as saved: only what the user changed) and the step after it -------------------------------------- */

const savedTrigger = (typeVersion: number, parameters: Record<string, unknown>, signed = true): INode =>
	packageNode(
		'Idempotent Webhook',
		'idempotentWebhook',
		{ path: 'rt21', ...parameters },
		{ typeVersion, credentials: signed ? { webhookSignatureApi: { id: 'signing', name: 'Signing' } } : {} },
	);

/** Every effect the step had: the JSON of each item's body. */
const charges: string[] = [];
const chargesFor = (body: unknown) => charges.filter((charge) => charge === JSON.stringify(body)).length;

class Rt21Charge implements INodeType {
	description: INodeType['description'] = {
		displayName: 'RT21 Charge',
		name: 'rt21Charge',
		group: ['transform'],
		version: 1,
		description: 'One effect per item, named by its body',
		defaults: { name: 'Charge' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		properties: [],
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return [
			this.getInputData().map((item, index) => {
				charges.push(JSON.stringify(item.json.body ?? null));
				return { json: { charged: true }, pairedItem: { item: index } };
			}),
		];
	}
}

let executionCount = 0;
/** Runs the execution the last delivery started (the trigger renamed Webhook, then Charge); its answer's status. */
async function runTriggered(): Promise<number | undefined> {
	const executionId = `rt21-${++executionCount}`;
	const workflow = inProcessWorkflow(
		activeWorkflowId,
		// Continue (using error output): each event's failure its own, as the trigger asks of a step that gets several events.
		[{ ...activeNode, name: 'Webhook' }, packageNode('Charge', 'rt21Charge', {}, { position: [400, 0], onError: 'continueErrorOutput' })],
		{ Webhook: { main: [link('Charge')] } },
	);
	await executeInProcess(workflow, executionId, startedItems(), engineBase(credentialsHelper()), { mode: activeMode });
	const [answer] = webhookResponses.get(executionId) ?? [];
	return answer ? Number(answer.statusCode ?? 200) : undefined;
}

async function deliver(
	body: string | undefined,
	headers: Record<string, string>,
	options: { method?: string; query?: string } = {},
): Promise<Answer & { answered?: number }> {
	const answer = await post(body, headers, options);
	if (answer.started === 0) return answer;
	return { ...answer, answered: await runTriggered() };
}

describeWithN8n('red team 21: saved trigger versions, Events Path batches, bodiless requests, the answers', () => {
	beforeAll(async () => {
		embeddedModule();
		n8nCli();
		addNodeTypes({
			[`${PACKAGE}.rt21Charge`]: new Rt21Charge(),
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
	afterEach(() => forgetKeptSigningSecrets());
	const use = (workflowId: string, node: INode) => {
		activeWorkflowId = workflowId;
		activeNode = node;
	};

	/* (1) Saved versions: only the path (and the credential) saved; every other parameter n8n's default ------------- */

	// Version 1 as saved with its defaults: Lease mode (the started item carries a lease end), keys shared across workflows (no wf: prefix), the embedded
	// store. A second workflow on the same store receiving the same event answers it as a copy (documented for v1).
	it('version 1 saved with defaults: key evt:<id> under a lease, shared: the second workflow answers the copy 200 duplicate, one effect', async () => {
		const body = '{"id":"evt_rt21_v1","amount":1}';
		use('wf-rt21-v1-a', savedTrigger(1, {}));
		const first = await deliver(body, stripeHeaders(body));
		// Lease mode: the started item's reservation has a lease end (Permanent has none).
		const leaseEnd = (startedItems()[0]?.json.idempotency as { lockedUntil?: unknown } | undefined)?.lockedUntil;
		const record = await stored('evt:evt_rt21_v1');
		use('wf-rt21-v1-b', savedTrigger(1, {}));
		const second = await deliver(body, stripeHeaders(body));
		expect({
			first: [first.status, first.outcome, first.answered],
			status: record?.status,
			leased: typeof leaseEnd === 'string' && leaseEnd !== '',
			second: [second.status, second.outcome, second.started],
			effects: chargesFor({ id: 'evt_rt21_v1', amount: 1 }),
		}).toEqual({ first: [200, 'new', 200], status: 'completed', leased: true, second: [200, 'duplicate', 0], effects: 1 });
	});

	// Versions 2 and 3 as saved with their defaults (version 3's Store: Automatic, which is this host's file when n8n
	// runs as one process): keys wf:<id>:evt:<id>; two workflows each run the event once; a copy to either is a copy.
	it('versions 2 and 3 saved with defaults: keys per workflow; each workflow runs the event once, its copy 200 duplicate', async () => {
		const body = '{"id":"evt_rt21_v23","amount":2}';
		const outcomes: unknown[] = [];
		for (const [workflowId, version] of [
			['wf-rt21-v2', 2],
			['wf-rt21-v3', 3],
		] as const) {
			use(workflowId, savedTrigger(version, {}));
			const first = await deliver(body, stripeHeaders(body));
			const copy = await deliver(body, stripeHeaders(body));
			outcomes.push([first.status, first.outcome, first.answered, copy.status, copy.outcome, copy.started]);
			outcomes.push((await stored(`wf:${workflowId}:evt:evt_rt21_v23`))?.status);
		}
		expect({ outcomes, shared: await stored('evt:evt_rt21_v23'), effects: chargesFor({ id: 'evt_rt21_v23', amount: 2 }) }).toEqual({
			outcomes: [[200, 'new', 200, 200, 'duplicate', 0], 'completed', [200, 'new', 200, 200, 'duplicate', 0], 'completed'],
			shared: undefined,
			effects: 2,
		});
	});

	// The editor's test URL (manual mode) keys apart from production: a test delivery of an event never makes its real
	// delivery a copy, and each side's copy is a copy on its own side.
	it('test URL and production: one event runs once on each side, under n8n-manual-test:wf:<id>: and wf:<id>:; each copy 200 duplicate', async () => {
		use('wf-rt21-manual', savedTrigger(3, {}));
		const body = '{"id":"evt_rt21_manual"}';
		const outcomes: unknown[] = [];
		try {
			for (const mode of ['manual', 'webhook', 'webhook', 'manual'] as const) {
				activeMode = mode;
				const answer = await deliver(body, stripeHeaders(body));
				outcomes.push([mode, answer.status, answer.outcome, answer.answered ?? null]);
			}
		} finally {
			activeMode = 'webhook';
		}
		expect({
			outcomes,
			test: (await stored('n8n-manual-test:wf:wf-rt21-manual:evt:evt_rt21_manual'))?.status,
			production: (await stored('wf:wf-rt21-manual:evt:evt_rt21_manual'))?.status,
			effects: chargesFor({ id: 'evt_rt21_manual' }),
		}).toEqual({
			outcomes: [
				['manual', 200, 'new', 200],
				['webhook', 200, 'new', 200],
				['webhook', 200, 'duplicate', null],
				['manual', 200, 'duplicate', null],
			],
			test: 'completed',
			production: 'completed',
			effects: 2,
		});
	});

	/* (2) A request with no body: HTTP Method GET, Key Source Auto (the default) ---------------------------------- */

	// The trigger offers HTTP Method GET; a GET delivery has no body, so Key Source Auto (the default) finds no body.id
	// and would fall back to the body hash, sha256 of zero bytes: every GET delivery one key, the first event run and
	// every later, different one answered 200 duplicate and never run. A request without a body is refused a body-hash
	// key (lib/keys/deriveKey.ts deriveKey: 503 key_refused, the answer naming the fix); with Key Source Field
	// `query.event` each event runs once.
	it('HTTP Method GET: Key Source Auto refused (no body to key on), Key Source Field query.event: two events each run once', async () => {
		use('wf-rt21-get', savedTrigger(3, { httpMethod: 'GET', scheme: 'none' }, false));
		const refused = await deliver(undefined, {}, { method: 'GET', query: '?event=ev_get_0' });
		use('wf-rt21-get-field', savedTrigger(3, { httpMethod: 'GET', scheme: 'none', keySource: 'field', keyField: 'query.event' }, false));
		const first = await deliver(undefined, {}, { method: 'GET', query: '?event=ev_get_1' });
		const second = await deliver(undefined, {}, { method: 'GET', query: '?event=ev_get_2' });
		expect({
			refused: [refused.status, JSON.parse(refused.text).error, refused.started],
			first: [first.status, first.outcome, first.answered],
			second: [second.status, second.outcome, second.answered],
		}).toEqual({ refused: [503, 'key_refused', 0], first: [200, 'new', 200], second: [200, 'new', 200] });
	});

	/* (3) Events Path batches ---------------------------------------------------------------------------------------- */

	// One delivery: an event repeated, an event without an id, events that are not objects (a string, null, a number,
	// an array), two ids beyond 2^53 that JSON.parse rounds to one number. Each distinct event runs once; the
	// repeated one once; the two big ids are two events; the same delivery again runs nothing.
	it('Events Path "body": a repeated event runs once, id-less and non-object events each once, ids beyond 2^53 kept apart; the copy runs nothing', async () => {
		use('wf-rt21-batch', savedTrigger(3, { options: { eventsPath: 'body' } }));
		const body =
			'[{"id":"a"},{"id":"a"},{"noid":1},"plain",null,7,[1,2],{"id":12345678901234567890},{"id":12345678901234567891},{"id":"b"}]';
		const first = await deliver(body, stripeHeaders(body));
		const again = await deliver(body, stripeHeaders(body));
		const bigKeys = await Promise.all(
			['12345678901234567890', '12345678901234567891'].map(async (id) => (await stored(`wf:wf-rt21-batch:evt:${id}`))?.status),
		);
		expect({
			first: [first.status, first.outcome, first.started, first.answered],
			again: [again.status, again.outcome, JSON.parse(again.text), again.started],
			bigKeys,
			repeated: chargesFor({ id: 'a' }),
			others: [{ noid: 1 }, 'plain', null, 7, [1, 2], { id: 'b' }].map(chargesFor),
		}).toEqual({
			first: [200, 'new', 9, 200],
			again: [200, 'duplicate', { status: 'duplicate' }, 0],
			bigKeys: ['completed', 'completed'],
			repeated: 1,
			others: [1, 1, 1, 1, 1, 1],
		});
	});

	// The bound: 1,000 events run in one execution, each once; 1,001 is 413 too_many_events and reserves nothing; a
	// nested path (body.data.events) and a path that leads to an object are answered as documented.
	it('Events Path: 1,000 events run once each; 1,001 is 413 with nothing reserved; a path to an object is 503 events_not_found', async () => {
		use('wf-rt21-thousand', savedTrigger(3, { options: { eventsPath: 'body.data.events' } }));
		const events = (count: number, tag: string) => Array.from({ length: count }, (_, index) => ({ id: `${tag}_${index}` }));
		const thousand = JSON.stringify({ data: { events: events(1000, 'k') } });
		const ran = await deliver(thousand, stripeHeaders(thousand));
		const tooMany = JSON.stringify({ data: { events: events(1001, 'm') } });
		const refused = await post(tooMany, stripeHeaders(tooMany));
		const objectBody = JSON.stringify({ data: { events: { id: 'o' } } });
		const notArray = await post(objectBody, stripeHeaders(objectBody));
		const effects = events(1000, 'k').map(chargesFor);
		expect({
			ran: [ran.status, ran.outcome, ran.started, ran.answered],
			everyOnce: effects.every((count) => count === 1),
			refused: [refused.status, refused.outcome, JSON.parse(refused.text).error, refused.started],
			firstOfRefused: await stored('wf:wf-rt21-thousand:evt:m_0'),
			notArray: [notArray.status, notArray.outcome, JSON.parse(notArray.text).error, notArray.started],
		}).toEqual({
			ran: [200, 'new', 1000, 200],
			everyOnce: true,
			refused: [413, 'not_reserved', 'too_many_events', 0],
			firstOfRefused: undefined,
			notArray: [503, 'not_reserved', 'events_not_found', 0],
		});
	});

	// Reference for the next row: ONE event, its JSON posted as text/plain (Content-Type is not signed). The key is
	// read from the raw bytes' JSON whatever the Content-Type says (docs/keys.md, docs/upgrading.md): it runs, and a
	// copy of it sent as application/json is a copy.
	it('one event, its signed JSON posted as text/plain: it runs once, its application/json copy is 200 duplicate', async () => {
		use('wf-rt21-text-one', savedTrigger(3, {}));
		const body = '{"id":"evt_rt21_text","amount":3}';
		const plain = await deliver(body, stripeHeaders(body, { 'content-type': 'text/plain' }));
		const json = await deliver(body, stripeHeaders(body));
		expect({
			plain: [plain.status, plain.outcome, plain.answered],
			json: [json.status, json.outcome, json.started],
			// The item's body is the text n8n parsed (text/plain); the effect is named by it.
			effects: chargesFor(body),
		}).toEqual({ plain: [200, 'new', 200], json: [200, 'duplicate', 0], effects: 1 });
	});

	// With an Events Path, the batch is found in the signed bytes' JSON whatever the Content-Type says (lib/webhook/
	// decide.ts, keyBody), as one event's key is (previous row): a genuine JSON array posted as text/plain runs its
	// events. Found in the body as parsed (a string there), every delivery would be answered 503 events_not_found and
	// no event of the batch would ever run.
	it('Events Path "body": a signed JSON array posted as text/plain runs its events once (as one event posted as text/plain does)', async () => {
		use('wf-rt21-text-batch', savedTrigger(3, { options: { eventsPath: 'body' } }));
		const body = '[{"id":"evt_rt21_tb1"},{"id":"evt_rt21_tb2"}]';
		const plain = await deliver(body, stripeHeaders(body, { 'content-type': 'text/plain' }));
		expect({
			plain: [plain.status, plain.outcome, plain.started, plain.answered],
			effects: [chargesFor({ id: 'evt_rt21_tb1' }), chargesFor({ id: 'evt_rt21_tb2' })],
		}).toEqual({ plain: [200, 'new', 2, 200], effects: [1, 1] });
	});

	/* (4) The answers the trigger gives by itself, against docs/idempotent-webhook.md -------------------------------- */

	// Basic auth with none sent: 401, WWW-Authenticate, JSON, x-idempotency-outcome authorization_required; wrong
	// credentials: 403 forbidden; a forged signature: 401 invalid_signature with its reason; an empty array: 200
	// {"status":"no_events"}. Nothing reserved, nothing run.
	it('the answers: 401 authorization_required with WWW-Authenticate, 403 forbidden, 401 invalid_signature, 200 no_events; nothing run', async () => {
		use('wf-rt21-answers', {
			...savedTrigger(3, { authentication: 'basicAuth', options: { eventsPath: 'body' } }),
			credentials: {
				webhookSignatureApi: { id: 'signing', name: 'Signing' },
				idempotentWebhookBasicAuthApi: { id: 'basic', name: 'Basic' },
			},
		});
		const body = '[{"id":"evt_rt21_ans"}]';
		const authorization = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
		const none = await post(body, stripeHeaders(body));
		const wrong = await post(body, stripeHeaders(body, { authorization: authorization(BASIC.user, 'nope') }));
		const forged = await post(body, {
			...stripeHeaders('[{"id":"other"}]'),
			authorization: authorization(BASIC.user, BASIC.password),
		});
		const empty = await post('[]', { ...stripeHeaders('[]'), authorization: authorization(BASIC.user, BASIC.password) });
		const shape = (answer: Answer) => [answer.status, answer.outcome, answer.contentType?.startsWith('application/json'), answer.started];
		expect({
			none: [...shape(none), none.wwwAuthenticate],
			wrong: shape(wrong),
			forged: [...shape(forged), JSON.parse(forged.text)],
			empty: [...shape(empty), JSON.parse(empty.text)],
			key: await stored('wf:wf-rt21-answers:evt:evt_rt21_ans'),
		}).toEqual({
			none: [401, 'authorization_required', true, 0, 'Basic realm="Webhook"'],
			wrong: [403, 'forbidden', true, 0],
			forged: [401, 'invalid_signature', true, 0, { error: 'invalid_signature', reason: 'signature_mismatch' }],
			empty: [200, 'duplicate', true, 0, { status: 'no_events' }],
			key: undefined,
		});
	});
});
