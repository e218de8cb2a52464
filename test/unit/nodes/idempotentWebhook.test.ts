import { RETRY_WARNING } from '../../../nodes/shared/executionCustomData';
import { createHmac } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

import {
	NodeHelpers,
	type ICredentialDataDecryptedObject,
	type ICredentialsHelper,
	type INode,
	type INodePropertyOptions,
	type IWebhookResponseData,
} from 'n8n-workflow';

import { MANUAL_TEST_PREFIX } from '../../../lib/keys/deriveKey';
import { sha256Hex } from '../../../lib/keys/sha256';
import { DELIVERY_ANSWERS } from '../../../lib/store/rules';
import type { AnswerCounts } from '../../../lib/types';
import { DELIVERY_LOG_MESSAGE, FIRST_EXECUTION_HEADER, OUTCOME_HEADER } from '../../../lib/webhook/answers';
import { INBOX_DEFAULTS } from '../../../lib/webhook/inbox';
import { IdempotentWebhook } from '../../../nodes/IdempotentWebhook/IdempotentWebhook.node';
import { keyRecordJson } from '../../../nodes/IdempotencyKey/keyRecords';
import { executionStarted } from '../../../nodes/IdempotentWebhook/unstartedExecutions';
import { genericHmacProperties } from '../../../nodes/shared/genericHmac';
import { forgetKeptSigningSecrets } from '../../../nodes/shared/signingSecret';
import { forgetKeptConnectionSettings } from '../../../nodes/shared/store';
import { WebhookSignatureVerify } from '../../../nodes/WebhookSignatureVerify/WebhookSignatureVerify.node';
import { embeddedModule } from '../../support/storeTargets';
import { SIGNERS, VERIFY_AS, type SignerName } from '../signature/signers';
import { callTriggerWebhook } from '../../support/triggerWebhookCall';
import {
	credentialsHelperReading,
	engineBase,
	executeInProcess,
	inProcessWorkflow,
	packageNode,
	webhookResponses,
} from '../../support/n8nEngine';

// The trigger's webhook() in n8n-core's own WebhookContext, over a real HTTP exchange: it answers
// by itself (the response written, no workflow data) or hands n8n one item to start an execution,
// and never throws. The embedded store is a real file under a temporary n8n folder.

const SECRET = 'whsec_node_test';
const BASIC_USER = 'provider';
const BASIC_PASSWORD = 'basic-password-never-stored';
const signingSecret: { data: ICredentialDataDecryptedObject | Error } = { data: { secret: SECRET } };

/** The signing secret as n8n's credentials helper reads it, or the error n8n gives. */
/** The credential reads n8n served, by type. */
const credentialReads: string[] = [];
function credentialsHelper(): ICredentialsHelper {
	return credentialsHelperReading(async (_details, type) => {
		credentialReads.push(type);
		if (type === 'idempotentWebhookBasicAuthApi') return { user: BASIC_USER, password: BASIC_PASSWORD };
		// A key database nothing listens on: each delivery on the Postgres store is answered 503.
		if (type === 'idempotencyPostgresApi') return { host: '127.0.0.1', port: 1, database: 'keys', user: 'keys', password: 'keys' };
		if (type !== 'webhookSignatureApi') throw new Error(`No credential of type ${type}`);
		if (signingSecret.data instanceof Error) throw signingSecret.data;
		return signingSecret.data;
	});
}

const trigger = packageNode(
	'Idempotent Webhook',
	'idempotentWebhook',
	{ path: 'orders', scheme: 'stripe', store: 'embedded', keySource: 'auto', mode: 'lease' },
	{ credentials: { webhookSignatureApi: { id: 'signing', name: 'Signing' } } },
);
/** The workflow the server's webhook() calls run in. */
let activeWorkflowId = 'wf-trigger';
/** The trigger node the server's webhook() calls run as. */
let activeTrigger = trigger;

/** Every line the trigger logged through n8n's logger, with its level. */
const logged: Array<{ level: string; message: string; meta: unknown }> = [];
const recordingLogger = Object.fromEntries(
	['error', 'warn', 'info', 'debug'].map((level) => [
		level,
		(message: string, meta?: unknown) => void logged.push({ level, message, meta }),
	]),
);

/** One webhook() call as n8n makes it, for the request this server received. */
let lastResult: IWebhookResponseData | Error | undefined;
/** 'manual' for a call to the editor's test URL. */
let webhookMode: 'webhook' | 'manual' = 'webhook';
/**
 * What n8n does after webhook() handed it an item: starts the execution and answers ('started'),
 * fails to start it and answers 500 ('notStarted', as n8n does when its database does not answer),
 * or starts it (execute() runs) and answers 500 because a node failed ('failedRun').
 */
let afterStart: 'started' | 'notStarted' | 'failedRun' = 'started';
async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
	lastResult = await callTriggerWebhook(request, response, {
		trigger: activeTrigger,
		workflowId: activeWorkflowId,
		credentials: credentialsHelper(),
		mode: webhookMode,
		logger: recordingLogger,
	});
	// n8n answers what the trigger did not: here, the start of an execution.
	if (response.writableEnded) return;
	if (afterStart === 'started') response.writeHead(200).end('{"started":true}');
	else {
		const [[item]] = (lastResult as IWebhookResponseData).workflowData!;
		if (afterStart === 'failedRun') executionStarted((item.json.idempotency as { ownerToken: string }).ownerToken);
		response.writeHead(500).end('{"message":"Error in workflow"}');
	}
}

let server: http.Server;
let baseUrl: string;
let n8nFolder: string;
beforeAll(async () => {
	n8nFolder = mkdtempSync(path.join(os.tmpdir(), 'trigger-n8n-'));
	process.env.N8N_USER_FOLDER = n8nFolder;
	embeddedModule();
	server = http.createServer((request, response) => void handle(request, response));
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
	await new Promise((resolve) => server.close(resolve));
	embeddedModule().closeEmbeddedStores();
	delete process.env.N8N_USER_FOLDER;
	rmSync(n8nFolder, { recursive: true, force: true });
});
afterEach(() => {
	forgetKeptSigningSecrets();
	forgetKeptConnectionSettings();
	signingSecret.data = { secret: SECRET };
	webhookMode = 'webhook';
	afterStart = 'started';
	activeTrigger = trigger;
	activeWorkflowId = 'wf-trigger';
});

/** A key's status and attempts in the trigger's key file, once `done` holds (the close handler writes after the answer). */
async function storedKey(key: string, done: (status: string | undefined) => boolean): Promise<{ status?: string; attempts?: number }> {
	const file = path.join(n8nFolder, '.n8n', 'storage', 'n8n-nodes-idempotency', 'keys.sqlite');
	const store = embeddedModule().openEmbeddedKeyStore({ file });
	for (const deadline = Date.now() + 3000; ; await new Promise((resolve) => setTimeout(resolve, 50))) {
		const record = (await store.getKeys([key])).get(key);
		if (done(record?.status) || Date.now() > deadline) return { status: record?.status, attempts: record?.attempts };
	}
}

async function post(body: string, secret = SECRET): Promise<Response> {
	const timestamp = Math.floor(Date.now() / 1000);
	const signature = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
	return await fetch(`${baseUrl}/webhook/orders?source=test`, {
		method: 'POST',
		headers: { 'content-type': 'application/json', 'stripe-signature': `t=${timestamp},v1=${signature}` },
		body,
	});
}

describe('Idempotent Webhook: webhook()', () => {
	it('starts one execution for a new event, with the idempotency object and the raw body, and answers a copy 409 itself', async () => {
		const body = '{"id":"evt_node_1","amount":12345678901234567891}';

		const first = await post(body);
		expect(await first.json()).toEqual({ started: true });
		const started = lastResult as IWebhookResponseData;
		expect(started.noWebhookResponse).toBeUndefined();
		const [[item]] = started.workflowData!;
		expect(item.json).toMatchObject({
			query: { source: 'test' },
			body: { id: 'evt_node_1' },
			idempotency: { key: 'evt:evt_node_1', outcome: 'new' },
		});
		expect(Buffer.from(item.binary!.data.data, 'base64').toString('utf8')).toBe(body);
		// The package's one key file in n8n's folder, where the other nodes' embedded store opens it.
		expect(existsSync(path.join(n8nFolder, '.n8n', 'storage', 'n8n-nodes-idempotency', 'keys.sqlite'))).toBe(true);

		const copy = await post(body);
		expect(copy.status).toBe(409);
		expect(copy.headers.get('x-idempotency-outcome')).toBe('in_progress');
		expect(lastResult).toEqual({ noWebhookResponse: true });
	});

	it('keeps a test-URL call apart from the real keys: the real delivery of the same event is still new', async () => {
		const body = '{"id":"evt_node_tested"}';
		webhookMode = 'manual';
		await post(body);
		const [[tested]] = (lastResult as IWebhookResponseData).workflowData!;
		expect(tested.json.idempotency).toMatchObject({ key: `${MANUAL_TEST_PREFIX}evt:evt_node_tested`, outcome: 'new' });

		webhookMode = 'webhook';
		await post(body);
		const [[real]] = (lastResult as IWebhookResponseData).workflowData!;
		expect(real.json.idempotency).toMatchObject({ key: 'evt:evt_node_tested', outcome: 'new' });
	});

	it('marks the key failed when n8n answers 5xx without starting the execution, so the retry runs at once instead of 409 until the lease ends', async () => {
		const body = '{"id":"evt_node_not_started"}';
		afterStart = 'notStarted';
		expect((await post(body)).status).toBe(500);
		expect(await storedKey('evt:evt_node_not_started', (status) => status === 'failed')).toEqual({ status: 'failed', attempts: 1 });

		afterStart = 'started';
		const retry = await post(body);
		expect(await retry.json()).toEqual({ started: true });
		expect((lastResult as IWebhookResponseData).workflowData![0][0].json.idempotency).toMatchObject({ outcome: 'new', attempts: 2 });
	});

	it('leaves the key to its execution when the execution started and n8n answers 500 (a node failed): the settlement decides', async () => {
		const body = '{"id":"evt_node_failed_run"}';
		afterStart = 'failedRun';
		expect((await post(body)).status).toBe(500);
		await new Promise((resolve) => setTimeout(resolve, 300));
		expect(await storedKey('evt:evt_node_failed_run', () => true)).toEqual({ status: 'processing', attempts: 1 });
	});

	it('answers a forged request 401 without an execution', async () => {
		const answer = await post('{"id":"evt_node_forged"}', 'not-the-secret');

		expect(answer.status).toBe(401);
		expect(await answer.json()).toEqual({ error: 'invalid_signature', reason: 'signature_mismatch' });
		expect(lastResult).toEqual({ noWebhookResponse: true });
	});

	// Every scheme the trigger offers, with its parameters as a user leaves them: n8n's Workflow drops a parameter
	// its display options hide (Tolerance for a scheme that signs no timestamp), and n8n-core throws when a node
	// reads a missing one without a fallback. A genuine delivery starts one execution; its copy is answered 409.
	it.each(Object.entries(VERIFY_AS))(
		'accepts a genuine delivery signed for %s, as n8n gives the trigger its parameters',
		async (signer, verifyAs) => {
			const schemes = (new IdempotentWebhook().description.properties.find((property) => property.name === 'scheme')!.options ?? []).map(
				(option) => (option as INodePropertyOptions).value,
			);
			expect(schemes).toEqual(expect.arrayContaining(Object.values(VERIFY_AS).map(({ scheme }) => scheme)));
			const secret =
				verifyAs.scheme === 'standardWebhooks' ? `whsec_${Buffer.from(`key-of-${signer}`).toString('base64')}` : `secret-of-${signer}`;
			const key = verifyAs.scheme === 'standardWebhooks' ? Buffer.from(`key-of-${signer}`) : secret;
			signingSecret.data = { secret };
			activeWorkflowId = `wf-scheme-${signer}`;
			activeTrigger = { ...trigger, parameters: { path: 'orders', scheme: verifyAs.scheme, store: 'embedded', ...verifyAs.generic } };
			const body = `{"id":"evt_scheme_${signer}"}`;
			const headers = {
				'content-type': 'application/json',
				...SIGNERS[signer as SignerName](key, Buffer.from(body), Math.floor(Date.now() / 1000)),
			};
			const send = async () =>
				await fetch(`${baseUrl}/webhook/orders`, { method: 'POST', headers: headers as Record<string, string>, body });

			const first = await send();
			expect([first.status, await first.json()]).toEqual([200, { started: true }]);
			const copy = await send();
			expect([copy.status, copy.headers.get(OUTCOME_HEADER)]).toEqual([409, 'in_progress']);
		},
	);

	// Each credential read costs n8n an expression isolate (its credentials helper acquires one per read):
	// the decision and the answer count share the store opened for the request.
	it("reads the Postgres store's credential once per delivery, for the decision and the answer count", async () => {
		activeTrigger = {
			...trigger,
			parameters: { ...trigger.parameters, store: 'postgres' },
			credentials: { ...trigger.credentials, idempotencyPostgresApi: { id: 'keys', name: 'Keys' } },
		};
		credentialReads.length = 0;

		const answer = await post('{"id":"evt_node_pg_once"}');

		expect(answer.status).toBe(503);
		// The count is tried after the answer is written.
		const notCounted = () => logged.some((line) => line.message.endsWith('not counted'));
		for (const deadline = Date.now() + 3000; !notCounted() && Date.now() < deadline; )
			await new Promise((resolve) => setTimeout(resolve, 20));
		expect(notCounted()).toBe(true);
		expect(credentialReads.filter((type) => type === 'idempotencyPostgresApi')).toHaveLength(1);
	});

	// A delivery on the Postgres store read its credential each time: an isolate per duplicate and forgery.
	it("keeps the Postgres store's credential read for a second in production (a burst reads it once), and reads it at every test-URL call", async () => {
		activeTrigger = {
			...trigger,
			parameters: { ...trigger.parameters, store: 'postgres' },
			credentials: { ...trigger.credentials, idempotencyPostgresApi: { id: 'keys', name: 'Keys' } },
		};
		const postgresReads = () => credentialReads.filter((type) => type === 'idempotencyPostgresApi').length;
		credentialReads.length = 0;
		const started = Date.now();
		for (let delivery = 0; delivery < 5; delivery++) expect((await post(`{"id":"evt_node_pg_kept_${delivery}"}`)).status).toBe(503);
		const elapsed = Date.now() - started;
		// One read, and one more per second the five deliveries took (a loaded machine can stretch them).
		expect(postgresReads()).toBeGreaterThanOrEqual(1);
		expect(postgresReads()).toBeLessThanOrEqual(Math.min(1 + Math.floor(elapsed / 1000), 4));

		webhookMode = 'manual';
		credentialReads.length = 0;
		for (let call = 0; call < 3; call++) expect((await post(`{"id":"evt_node_pg_test_${call}"}`)).status).toBe(503);
		expect(postgresReads()).toBe(3);
	});

	// Each read of the signing secret costs n8n an expression isolate: a burst of copies or forgeries
	// must not read it per request, yet a secret the user saves is honoured within a second.
	it('reads the signing secret once for a burst of copies and forgeries (at most once a second under a flood)', async () => {
		credentialReads.length = 0;
		const started = Date.now();
		const copies = await Promise.all(Array.from({ length: 5 }, async () => await post('{"id":"evt_node_secret_burst"}')));
		expect(copies.map((answer) => answer.status).sort()).toEqual([200, 409, 409, 409, 409]);
		// Forgeries spread over most of a second: each mismatch may ask for a fresh read.
		for (let forgery = 0; forgery < 4; forgery++) {
			expect((await post('{"id":"evt_node_forgery_flood"}', 'not-the-secret')).status).toBe(401);
			await new Promise((resolve) => setTimeout(resolve, 200));
		}
		const elapsed = Date.now() - started;

		// One read, and one more per second the ten requests took (a loaded machine can stretch them).
		const reads = credentialReads.filter((type) => type === 'webhookSignatureApi').length;
		expect(reads).toBeGreaterThanOrEqual(1);
		expect(reads).toBeLessThanOrEqual(Math.min(1 + Math.floor(elapsed / 1000), 5));
	});

	it('accepts a secret saved since the last read once the copy is a second old, and refuses the removed one from that read on', async () => {
		const NEW_SECRET = 'whsec_node_rotated';
		expect((await post('{"id":"evt_node_rotate_1"}')).status).toBe(200);
		signingSecret.data = { secret: NEW_SECRET };

		// Within a second of the read the refusal stands (the provider retries), and the kept copy still
		// accepts the removed secret. After a second the credential is read anew.
		expect((await post('{"id":"evt_node_rotate_2"}', NEW_SECRET)).status).toBe(401);
		expect((await post('{"id":"evt_node_rotate_3"}')).status).toBe(200);
		await new Promise((resolve) => setTimeout(resolve, 1050));
		credentialReads.length = 0;
		expect((await post('{"id":"evt_node_rotate_2"}', NEW_SECRET)).status).toBe(200);
		expect(credentialReads.filter((type) => type === 'webhookSignatureApi')).toHaveLength(1);
		const removed = await post('{"id":"evt_node_rotate_4"}');
		expect(removed.status).toBe(401);
		expect(await removed.json()).toEqual({ error: 'invalid_signature', reason: 'signature_mismatch' });
	});

	it('reads the signing secret on every call to the test URL (the user may have just edited it)', async () => {
		webhookMode = 'manual';
		credentialReads.length = 0;
		expect((await post('{"id":"evt_node_manual_1"}')).status).toBe(200);
		expect((await post('{"id":"evt_node_manual_2"}')).status).toBe(200);
		expect(credentialReads.filter((type) => type === 'webhookSignatureApi')).toHaveLength(2);
	});

	it('answers 503 when n8n cannot read the signing secret, and does not throw', async () => {
		signingSecret.data = new Error(`Credentials could not be decrypted (${SECRET})`);

		const answer = await post('{"id":"evt_node_secret"}');

		expect(answer.status).toBe(503);
		expect(await answer.text()).not.toContain(SECRET);
		expect(lastResult).toEqual({ noWebhookResponse: true });
	});
});

describe('Idempotent Webhook: Respond At Once', () => {
	const atOnce = (parameters: Record<string, unknown> = {}) =>
		({
			...trigger,
			typeVersion: 2,
			parameters: { ...trigger.parameters, respond: 'atOnce', acceptedBody: '{"ok":1}', authentication: 'basicAuth', ...parameters },
			credentials: { ...trigger.credentials, idempotentWebhookBasicAuthApi: { id: 'basic', name: 'Basic' } },
		}) as INode;
	const basic = `Basic ${Buffer.from(`${BASIC_USER}:${BASIC_PASSWORD}`).toString('base64')}`;
	async function postAuthenticated(body: string): Promise<Response> {
		const timestamp = Math.floor(Date.now() / 1000);
		const signature = createHmac('sha256', SECRET).update(`${timestamp}.${body}`).digest('hex');
		return await fetch(`${baseUrl}/webhook/orders?source=test`, {
			method: 'POST',
			headers: {
				'content-type': 'application/json',
				authorization: basic,
				'x-trace': 'kept',
				'stripe-signature': `t=${timestamp},v1=${signature}`,
			},
			body,
		});
	}
	const keyFile = () => path.join(n8nFolder, '.n8n', 'storage', 'n8n-nodes-idempotency', 'keys.sqlite');

	it('answers 200 with the Response Body before the execution, keeps the item without the credential, and answers a copy 200 duplicate', async () => {
		activeTrigger = atOnce();
		const body = '{"id":"evt_at_once","amount":12345678901234567891}';
		const first = await postAuthenticated(body);
		expect([first.status, first.headers.get(OUTCOME_HEADER), await first.json()]).toEqual([200, 'new', { ok: 1 }]);
		// n8n still starts the execution (workflowData), and writes nothing more (noWebhookResponse).
		const started = lastResult as IWebhookResponseData;
		expect(started.noWebhookResponse).toBe(true);
		const [[item]] = started.workflowData!;
		const key = 'wf:wf-trigger:evt:evt_at_once';
		expect(item.json.idempotency).toMatchObject({ key, outcome: 'new', answeredAtOnce: true, attempts: 1 });

		const store = embeddedModule().openEmbeddedKeyStore({ file: keyFile() });
		const record = (await store.getKeys([key], { inboxItem: true })).get(key)!;
		expect(record).toMatchObject({
			status: 'processing',
			inboxOwner: 'workflow:wf-trigger',
			maxAttempts: 12,
			hasInboxItem: true,
		});
		const kept = JSON.parse(record.inboxItem!) as { json: { headers: Record<string, string>; body: unknown }; rawBody: string };
		// The request as the workflow sees it, the exact bytes kept; no header that carries a credential or a signature.
		expect(Buffer.from(kept.rawBody, 'base64').toString('utf8')).toBe(body);
		expect(kept.json.headers['x-trace']).toBe('kept');
		expect(Object.keys(kept.json.headers)).not.toEqual(expect.arrayContaining(['authorization']));
		expect(Object.keys(kept.json.headers)).not.toEqual(expect.arrayContaining(['stripe-signature']));
		expect(record.inboxItem).not.toContain(BASIC_PASSWORD);
		expect(record.inboxItem).not.toContain(basic.slice('Basic '.length));
		expect(kept.json).not.toHaveProperty('idempotency');
		// Get Key and List Keys show it as an inbox event, without the kept item.
		expect(keyRecordJson(record)).toMatchObject({
			status: 'processing',
			inbox: { owner: 'workflow:wf-trigger', eventKept: true, maxAttempts: 12, nextAttemptAt: null, deadLettered: false },
		});
		expect(JSON.stringify(keyRecordJson(record))).not.toContain('x-trace');

		// A copy while the run goes on: accepted already, so 200 duplicate, never stored data.
		const copy = await postAuthenticated(body);
		expect([copy.status, copy.headers.get(OUTCOME_HEADER), await copy.json()]).toEqual([200, 'duplicate', { status: 'duplicate' }]);
		expect(lastResult).toEqual({ noWebhookResponse: true });
	});

	it('answers a delivery too large to keep when the workflow ends, as When the Workflow Ends does', async () => {
		activeTrigger = atOnce();
		const body = JSON.stringify({ id: 'evt_at_once_large', blob: 'x'.repeat(1024 * 1024) });
		const answer = await postAuthenticated(body);
		expect(await answer.json()).toEqual({ started: true });
		const [[item]] = (lastResult as IWebhookResponseData).workflowData!;
		expect(item.json.idempotency).not.toHaveProperty('answeredAtOnce');
		const record = (await embeddedModule().openEmbeddedKeyStore({ file: keyFile() }).getKeys(['wf:wf-trigger:evt:evt_at_once_large'])).get(
			'wf:wf-trigger:evt:evt_at_once_large',
		);
		expect(record).toMatchObject({ status: 'processing', inboxOwner: null, hasInboxItem: false });
	});

	it("keeps no inbox for the editor's test URL: a test run is answered when it ends", async () => {
		activeTrigger = atOnce();
		webhookMode = 'manual';
		const answer = await postAuthenticated('{"id":"evt_at_once_tested"}');
		expect(await answer.json()).toEqual({ started: true });
		expect((lastResult as IWebhookResponseData).workflowData![0][0].json.idempotency).not.toHaveProperty('answeredAtOnce');
	});
});

describe('Idempotent Webhook: several events in one delivery (Events Path)', () => {
	const withEvents = (eventsPath: string, parameters: Record<string, unknown> = {}) =>
		({
			...trigger,
			typeVersion: 3,
			parameters: { ...trigger.parameters, options: { eventsPath }, ...parameters },
		}) as INode;

	it('hands n8n one execution with one item per new event, each with its own key and its own bytes; copies only: 200 without one', async () => {
		activeTrigger = withEvents('body.events');
		const events = ['{"id":"evt_batch_1","amount":1}', '{"id":"evt_batch_2","amount":2}'];
		expect(await (await post(`{"events":[${events.join(',')}]}`)).json()).toEqual({ started: true });
		const [items] = (lastResult as IWebhookResponseData).workflowData!;
		expect(items.map((item) => (item.json.idempotency as { key: string }).key)).toEqual([
			'wf:wf-trigger:evt:evt_batch_1',
			'wf:wf-trigger:evt:evt_batch_2',
		]);
		expect(items.map((item) => item.json.body)).toEqual([
			{ id: 'evt_batch_1', amount: 1 },
			{ id: 'evt_batch_2', amount: 2 },
		]);
		expect(items.map((item) => Buffer.from(item.binary!.data.data, 'base64').toString('utf8'))).toEqual(events);
		expect(items.map((item) => item.json.query)).toEqual([{ source: 'test' }, { source: 'test' }]);

		// While they run, a delivery repeating one of them is told to retry.
		expect((await post(`{"events":[${events[1]}]}`)).status).toBe(409);
	});

	it('marks every key of the delivery failed when n8n answers 5xx without starting the execution', async () => {
		activeTrigger = withEvents('body');
		afterStart = 'notStarted';
		expect((await post('[{"id":"evt_batch_unstarted_1"},{"id":"evt_batch_unstarted_2"}]')).status).toBe(500);
		for (const id of ['evt_batch_unstarted_1', 'evt_batch_unstarted_2'])
			expect(await storedKey(`wf:wf-trigger:evt:${id}`, (status) => status === 'failed')).toEqual({ status: 'failed', attempts: 1 });
	});

	it('ignores the option in version 1 (no Events Path there): the body is one event', async () => {
		activeTrigger = { ...withEvents('body'), typeVersion: 1 };
		await post('[{"id":"evt_v1_a"},{"id":"evt_v1_b"}]');
		const [items] = (lastResult as IWebhookResponseData).workflowData!;
		expect(items).toHaveLength(1);
		expect((items[0].json.idempotency as { key: string }).key).toMatch(/^sha256:/);
	});

	it('Respond At Once: answers 200 once every event is kept, and hands n8n one item per event', async () => {
		activeTrigger = withEvents('body', { respond: 'atOnce', acceptedBody: '{"ok":2}' });
		const answer = await post('[{"id":"evt_batch_at_once_1"},{"id":"evt_batch_at_once_2"}]');
		expect([answer.status, await answer.json()]).toEqual([200, { ok: 2 }]);
		const started = lastResult as IWebhookResponseData;
		expect(started.noWebhookResponse).toBe(true);
		expect(started.workflowData![0].map((item) => (item.json.idempotency as { answeredAtOnce?: boolean }).answeredAtOnce)).toEqual([
			true,
			true,
		]);
	});
});

describe('Idempotent Webhook: version 2 keys each workflow apart', () => {
	/** The trigger as the node panel adds it now: version 2, every parameter at its default. */
	const triggerV2 = (parameters: Record<string, unknown> = {}) =>
		packageNode(
			'Idempotent Webhook',
			'idempotentWebhook',
			{ path: 'orders', ...parameters },
			{ typeVersion: 2, credentials: { webhookSignatureApi: { id: 'signing', name: 'Signing' } } },
		);
	const keyOfStart = () => (lastResult as IWebhookResponseData).workflowData![0][0].json.idempotency as { key: string; outcome: string };

	it('runs one event in each of two workflows at their defaults (Embedded store, no Scope): neither is a copy of the other', async () => {
		const body = '{"id":"evt_two_workflows"}';
		activeTrigger = triggerV2();

		activeWorkflowId = 'wf-billing';
		expect(await (await post(body)).json()).toEqual({ started: true });
		const billing = keyOfStart();
		activeWorkflowId = 'wf-analytics';
		expect(await (await post(body)).json()).toEqual({ started: true });
		const analytics = keyOfStart();

		expect(billing).toMatchObject({ key: 'wf:wf-billing:evt:evt_two_workflows', outcome: 'new' });
		expect(analytics).toMatchObject({ key: 'wf:wf-analytics:evt:evt_two_workflows', outcome: 'new' });
		// Within one workflow a copy is still a copy.
		expect((await post(body)).status).toBe(409);
	});

	it('puts the workflow before the Scope, and shares keys across workflows only when asked (then the keys of version 1)', async () => {
		activeTrigger = triggerV2({ options: { scope: 'stripe' } });
		activeWorkflowId = 'wf-scoped';
		await post('{"id":"evt_scoped"}');
		expect(keyOfStart()).toMatchObject({ key: 'wf:wf-scoped:stripe:evt:evt_scoped', outcome: 'new' });

		const body = '{"id":"evt_shared"}';
		activeTrigger = triggerV2({ options: { shareKeysAcrossWorkflows: true } });
		activeWorkflowId = 'wf-shared-1';
		await post(body);
		expect(keyOfStart()).toMatchObject({ key: 'evt:evt_shared', outcome: 'new' });
		activeWorkflowId = 'wf-shared-2';
		expect((await post(body)).status).toBe(409);
	});

	it('keeps the keys of version 1 as they were: evt:<id>, shared by every workflow on the store', async () => {
		const body = '{"id":"evt_version_one"}';
		activeWorkflowId = 'wf-v1-a';
		await post(body);
		expect(keyOfStart()).toMatchObject({ key: 'evt:evt_version_one', outcome: 'new' });
		activeWorkflowId = 'wf-v1-b';
		expect((await post(body)).status).toBe(409);
	});

	it('reserves with a lease in version 2, even when the saved parameters still say Permanent', async () => {
		activeTrigger = triggerV2({ mode: 'permanent' });
		activeWorkflowId = 'wf-lease-only';
		await post('{"id":"evt_v2_lease"}');
		expect(await storedKey('wf:wf-lease-only:evt:evt_v2_lease', () => true)).toEqual({ status: 'processing', attempts: 1 });
	});
});

describe('Idempotent Webhook: version 1 in Permanent mode', () => {
	it('answers a copy 409 while the first delivery runs, and 200 duplicate once its execution completed the key', async () => {
		const body = '{"id":"evt_v1_permanent"}';
		activeTrigger = { ...trigger, parameters: { ...trigger.parameters, mode: 'permanent' } };
		await post(body);
		const [[item]] = (lastResult as IWebhookResponseData).workflowData!;

		const whileRunning = await post(body);
		expect(whileRunning.status).toBe(409);
		expect(whileRunning.headers.get('x-idempotency-outcome')).toBe('in_progress');

		// n8n runs the execution's start node through execute(), in the process that runs the execution.
		const started = packageNode('Webhook', 'idempotentWebhook', activeTrigger.parameters, { credentials: trigger.credentials });
		const { run } = await executeInProcess(
			inProcessWorkflow('wf-trigger', [started], {}),
			'exec-permanent',
			[item],
			engineBase(credentialsHelper()),
		);
		expect(run.data.resultData.error).toBeUndefined();
		const after = await post(body);
		expect(after.status).toBe(200);
		expect(after.headers.get('x-idempotency-outcome')).toBe('duplicate');
	});
});

describe('Idempotent Webhook: parameters', () => {
	const description = new IdempotentWebhook().description;
	const resolved = (parameters: Record<string, unknown>, node: INode = trigger) =>
		NodeHelpers.getNodeParameters(description.properties, parameters as never, true, false, node, description)!;
	const atVersion = (typeVersion: number) => ({ ...trigger, typeVersion });

	it('shows one Store parameter, Embedded by default on versions 1 and 2, Automatic on 3, and a Postgres credential only for Postgres', () => {
		expect(resolved({})).toMatchObject({
			store: 'embedded',
			scheme: 'stripe',
			mode: 'lease',
			leaseSeconds: 300,
			httpMethod: 'POST',
			authentication: 'none',
		});
		for (const [typeVersion, store] of [
			[1, 'embedded'],
			[2, 'embedded'],
			[3, 'automatic'],
		] as const) {
			const parameters = resolved({}, atVersion(typeVersion));
			expect([typeVersion, parameters.store]).toEqual([typeVersion, store]);
			const shown = description.properties.filter(
				(property) => property.name === 'store' && NodeHelpers.displayParameter(parameters, property, atVersion(typeVersion), description),
			);
			expect([typeVersion, shown.length]).toEqual([typeVersion, 1]);
			expect((shown[0].options as INodePropertyOptions[]).map((option) => option.value)).toEqual(['automatic', 'embedded', 'postgres']);
		}
		expect(description.credentials?.find((credential) => credential.name === 'idempotencyPostgresApi')?.displayOptions).toEqual({
			show: { store: ['postgres'] },
		});
	});

	it.each([2, 3])(
		'is version 3 when added from the node panel; version %p has no Mode (a lease, always) and offers Share Keys Across Workflows',
		(typeVersion) => {
			expect(description.version).toEqual([1, 2, 3]);
			expect(description.defaultVersion).toBe(3);

			const parameters = resolved({}, atVersion(typeVersion));
			expect(parameters).not.toHaveProperty('mode');
			expect(parameters).toMatchObject({ leaseSeconds: 300, options: {} });
			const options = description.properties.filter(
				(property) =>
					property.name === 'options' && NodeHelpers.displayParameter(parameters, property, atVersion(typeVersion), description),
			);
			expect(options).toHaveLength(1);
			expect(options[0].options).toContainEqual(
				expect.objectContaining({ displayName: 'Share Keys Across Workflows', name: 'shareKeysAcrossWorkflows', default: false }),
			);
		},
	);

	it('offers Respond from version 2 on, When the Workflow Ends by default, with the inbox defaults the code uses', () => {
		expect(resolved({}, atVersion(1))).not.toHaveProperty('respond');
		for (const typeVersion of [2, 3]) expect(resolved({}, atVersion(typeVersion))).toMatchObject({ respond: 'workflowEnds' });
		const atOnce = resolved({ respond: 'atOnce' }, atVersion(2));
		expect(atOnce).toMatchObject({
			maxAttempts: INBOX_DEFAULTS.maxAttempts,
			firstRetrySeconds: INBOX_DEFAULTS.firstRetrySeconds,
			retryForHours: INBOX_DEFAULTS.retryForHours,
		});
		expect(JSON.parse(atOnce.acceptedBody as string)).toEqual(INBOX_DEFAULTS.acceptedBody);
	});

	it('keeps Mode in version 1, Permanent named for what it promises', () => {
		const v1 = resolved({ mode: 'permanent' }, atVersion(1));
		expect(v1).toMatchObject({ mode: 'permanent' });
		expect(v1).not.toHaveProperty('leaseSeconds');
		const mode = description.properties.filter(
			(property) => property.name === 'mode' && NodeHelpers.displayParameter(v1, property, atVersion(1), description),
		);
		expect(mode).toHaveLength(1);
		expect(mode[0].options).toContainEqual(expect.objectContaining({ name: 'Permanent (No Retry After a Crash)', value: 'permanent' }));
		const v1Options = description.properties.filter(
			(property) => property.name === 'options' && NodeHelpers.displayParameter(v1, property, atVersion(1), description),
		);
		expect(v1Options).toHaveLength(1);
		expect(v1Options[0].options?.map((option) => option.name)).not.toContain('shareKeysAcrossWorkflows');
	});

	it('offers an unsigned webhook only as an explicit choice, and asks for no signing secret then', () => {
		const scheme = description.properties.find((property) => property.name === 'scheme')!;
		expect(scheme.default).not.toBe('none');
		expect(scheme.options).toContainEqual(expect.objectContaining({ name: 'None (Explicitly Unsigned)', value: 'none' }));
		expect(description.credentials?.find((credential) => credential.name === 'webhookSignatureApi')?.displayOptions).toEqual({
			hide: { scheme: ['none'] },
		});
	});
});

describe('Idempotent Webhook: what it keeps about each delivery', () => {
	const keyFile = () => path.join(n8nFolder, '.n8n', 'storage', 'n8n-nodes-idempotency', 'keys.sqlite');
	const counts = async () => await embeddedModule().openEmbeddedKeyStore({ file: keyFile() }).answerCounts(1);
	const counted = (after: AnswerCounts, before: AnswerCounts) =>
		Object.fromEntries(DELIVERY_ANSWERS.map((answer) => [answer, after[answer] - before[answer]]).filter(([, count]) => count !== 0));

	it('logs one line per delivery (outcome, status, a hash of the key) and never the payload, a header or a secret; the store counts each answer', async () => {
		const marker = 'card-4242-payload-marker';
		const body = `{"id":"evt_logged","card":"${marker}"}`;
		const before = await counts();
		logged.length = 0;

		await post(body);
		expect((await post(body)).status).toBe(409);
		expect((await post(body, 'not-the-secret')).status).toBe(401);
		signingSecret.data = new Error(`Credentials could not be decrypted (${SECRET})`);
		// The copy kept from the deliveries above has run out.
		forgetKeptSigningSecrets();
		expect((await post(body)).status).toBe(503);

		const keyHash = sha256Hex('evt:evt_logged').slice(0, 16);
		const node = { workflowId: 'wf-trigger', node: 'Idempotent Webhook' };
		expect(logged.filter((line) => line.message.startsWith(DELIVERY_LOG_MESSAGE))).toEqual([
			{
				level: 'info',
				message: `${DELIVERY_LOG_MESSAGE}: outcome=new status=- keyHash=${keyHash} counted=true`,
				meta: { outcome: 'new', status: null, keyHash, counted: true, ...node },
			},
			{
				level: 'info',
				message: `${DELIVERY_LOG_MESSAGE}: outcome=in_progress status=409 keyHash=${keyHash} counted=true`,
				meta: { outcome: 'in_progress', status: 409, keyHash, counted: true, ...node },
			},
			{
				level: 'info',
				message: `${DELIVERY_LOG_MESSAGE}: outcome=invalid_signature status=401 keyHash=- counted=true`,
				meta: { outcome: 'invalid_signature', status: 401, keyHash: null, counted: true, ...node },
			},
			{
				level: 'info',
				message: `${DELIVERY_LOG_MESSAGE}: outcome=not_verified status=503 keyHash=- counted=true`,
				meta: { outcome: 'not_verified', status: 503, keyHash: null, counted: true, ...node },
			},
		]);
		const everything = JSON.stringify(logged);
		for (const text of [marker, SECRET, 'not-the-secret', 'evt_logged', 'stripe-signature', 'v1=', 'source=test'])
			expect(everything).not.toContain(text);

		expect(counted(await counts(), before)).toEqual({ new: 1, in_progress: 1, invalid_signature: 1, not_verified: 1 });
	});

	it('records the execution its event started: a copy after it completed names it in x-idempotency-first-execution', async () => {
		const body = '{"id":"evt_first_execution"}';
		await post(body);
		const [[item]] = (lastResult as IWebhookResponseData).workflowData!;
		// n8n runs the execution's start node through execute(), in the process that runs the execution.
		const started = packageNode('Webhook', 'idempotentWebhook', trigger.parameters, { credentials: trigger.credentials });
		const { run } = await executeInProcess(
			inProcessWorkflow('wf-trigger', [started], {}),
			'exec-4711',
			[item],
			engineBase(credentialsHelper()),
		);
		expect(run.data.resultData.error).toBeUndefined();
		// n8n's Retry on this execution would run the steps outside the key: the execution says not to use it.
		expect(run.data.resultData.metadata).toMatchObject({ idempotency_retry: RETRY_WARNING });

		const copy = await post(body);
		expect(copy.status).toBe(200);
		expect(copy.headers.get('x-idempotency-outcome')).toBe('duplicate');
		expect(copy.headers.get(FIRST_EXECUTION_HEADER)).toBe('exec-4711');
		expect(
			(await embeddedModule().openEmbeddedKeyStore({ file: keyFile() }).getKeys(['evt:evt_first_execution'])).get(
				'evt:evt_first_execution',
			),
		).toMatchObject({
			status: 'completed',
			executionId: 'exec-4711',
			duplicateCount: 1,
		});
	});
});

describe('Idempotent Webhook: the answer stored for copies', () => {
	const keyFile = () => path.join(n8nFolder, '.n8n', 'storage', 'n8n-nodes-idempotency', 'keys.sqlite');
	const basicTrigger = packageNode(
		'Idempotent Webhook',
		'idempotentWebhook',
		{ path: 'orders', scheme: 'none', authentication: 'basicAuth', store: 'embedded', keySource: 'auto', mode: 'lease' },
		{ credentials: { idempotentWebhookBasicAuthApi: { id: 'basic', name: 'Basic' } } },
	);
	const AUTHORIZATION = `Basic ${Buffer.from(`${BASIC_USER}:${BASIC_PASSWORD}`).toString('base64')}`;
	const postWithBasicAuth = async (body: string) =>
		await fetch(`${baseUrl}/webhook/orders?source=test`, {
			method: 'POST',
			headers: { 'content-type': 'application/json', authorization: AUTHORIZATION, cookie: 'session=cookie-never-stored' },
			body,
		});
	/** Runs the started execution with the trigger as its last node, as No Operation or Edit Fields pass its item on. */
	const runStarted = async (executionId: string, after: INode[] = [], connections = {}, startedBy: INode = basicTrigger) => {
		const [[item]] = (lastResult as IWebhookResponseData).workflowData!;
		const started = { ...startedBy, name: 'Webhook' };
		const { run } = await executeInProcess(
			inProcessWorkflow('wf-trigger', [started, ...after], connections),
			executionId,
			[item],
			engineBase(credentialsHelper()),
		);
		return { run, ownerToken: (item.json.idempotency as { ownerToken: string }).ownerToken };
	};

	it('stores and replays neither the request headers (the Basic credential) nor the idempotency object: the first answer and every copy get the same body', async () => {
		activeTrigger = basicTrigger;
		const body = '{"id":"evt_answer_headers","amount":5}';
		const first = await postWithBasicAuth(body);
		expect(first.status).toBe(200);
		const { ownerToken } = await runStarted('exec-answer-headers');
		const [answered] = webhookResponses.get('exec-answer-headers')!;

		const copy = await postWithBasicAuth(body);
		expect(copy.status).toBe(200);
		expect(copy.headers.get(OUTCOME_HEADER)).toBe('duplicate');
		const replayed = (await copy.json()) as unknown;
		const stored = (await embeddedModule().openEmbeddedKeyStore({ file: keyFile() }).getKeys(['evt:evt_answer_headers'])).get(
			'evt:evt_answer_headers',
		);

		expect(stored?.status).toBe('completed');
		for (const kept of [answered.body, replayed, stored?.response]) {
			expect(kept).toEqual({ query: { source: 'test' }, body: { id: 'evt_answer_headers', amount: 5 } });
			const text = JSON.stringify(kept);
			for (const secret of [AUTHORIZATION, BASIC_PASSWORD, 'cookie-never-stored', ownerToken]) expect(text).not.toContain(secret);
		}
	});

	it('answers a failed step 500 with x-idempotency-outcome: failed, as the webhook template does', async () => {
		activeTrigger = basicTrigger;
		await postWithBasicAuth('{"id":"evt_answer_failed"}');
		const failing = packageNode('Failing Step', 'testFailingStep', { shape: 'code', message: 'card declined for ada@example.com' });
		await runStarted('exec-answer-failed', [failing], { Webhook: { main: [[{ node: 'Failing Step', type: 'main', index: 0 }]] } });

		const [answer] = webhookResponses.get('exec-answer-failed')!;
		expect(answer).toMatchObject({ statusCode: 500, headers: { [OUTCOME_HEADER]: 'failed' } });
		expect((answer.body as { message: string }).message).toContain('declined for ada@example.com');
		expect(
			(await embeddedModule().openEmbeddedKeyStore({ file: keyFile() }).getKeys(['evt:evt_answer_failed'])).get('evt:evt_answer_failed')
				?.status,
		).toBe('failed');
	});
});

describe('Idempotent Webhook: an unsigned trigger', () => {
	it("answers a failed step 500 without the step's error, which may quote data: nobody proved who the caller is", async () => {
		const unsigned = packageNode('Idempotent Webhook', 'idempotentWebhook', {
			path: 'orders',
			scheme: 'none',
			authentication: 'none',
			store: 'embedded',
			keySource: 'auto',
			mode: 'lease',
		});
		activeTrigger = unsigned;
		await fetch(`${baseUrl}/webhook/orders`, {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: '{"id":"evt_unsigned_failed"}',
		});
		const [[item]] = (lastResult as IWebhookResponseData).workflowData!;
		const failing = packageNode('Failing Step', 'testFailingStep', { shape: 'code', message: 'card declined for ada@example.com' });
		await executeInProcess(
			inProcessWorkflow('wf-trigger', [{ ...unsigned, name: 'Webhook' }, failing], {
				Webhook: { main: [[{ node: 'Failing Step', type: 'main', index: 0 }]] },
			}),
			'exec-unsigned-failed',
			[item],
			engineBase(credentialsHelper()),
		);
		const [answer] = webhookResponses.get('exec-unsigned-failed')!;
		expect(answer).toMatchObject({ statusCode: 500, headers: { [OUTCOME_HEADER]: 'failed' } });
		expect(JSON.stringify(answer.body)).not.toContain('ada@example.com');
	});
});

describe('Idempotent Webhook: Generic HMAC', () => {
	const genericTrigger = (settings: Record<string, unknown>) =>
		packageNode(
			'Idempotent Webhook',
			'idempotentWebhook',
			{ path: 'orders', scheme: 'generic', store: 'embedded', keySource: 'auto', mode: 'lease', ...settings },
			{ credentials: { webhookSignatureApi: { id: 'signing', name: 'Signing' } } },
		);
	const send = async (body: string, headers: Record<string, string>) =>
		await fetch(`${baseUrl}/webhook/orders`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

	it('verifies with the settings of Webhook Signature Verify: header, algorithm, encoding and prefix', async () => {
		activeTrigger = genericTrigger({
			signatureHeader: 'X-Shop-Signature',
			algorithm: 'sha512',
			encoding: 'base64',
			signaturePrefix: 'v1=',
		});
		const body = '{"id":"evt_generic_1"}';
		const signed = `v1=${createHmac('sha512', SECRET).update(body).digest('base64')}`;

		expect(await (await send(body, { 'x-shop-signature': signed })).json()).toEqual({ started: true });
		expect((lastResult as IWebhookResponseData).workflowData![0][0].json.idempotency).toMatchObject({ outcome: 'new' });

		// The default settings (SHA-256, hex, no prefix) are not what this sender uses: refused.
		const otherSettings = createHmac('sha256', SECRET).update(body).digest('hex');
		const refused = await send('{"id":"evt_generic_2"}', { 'x-shop-signature': otherSettings });
		expect(refused.status).toBe(401);
		expect(await refused.json()).toMatchObject({ error: 'invalid_signature' });
	});

	it('a signed timestamp (Timestamp.Body) is checked against the tolerance', async () => {
		activeTrigger = genericTrigger({ signedContent: 'timestampDotBody', timestampHeader: 'X-Sent-At', toleranceSeconds: 300 });
		const body = '{"id":"evt_generic_timed"}';
		const signedAt = (seconds: number) => ({
			'x-sent-at': String(seconds),
			'x-signature': createHmac('sha256', SECRET).update(`${seconds}.${body}`).digest('hex'),
		});
		const stale = await send(body, signedAt(Math.floor(Date.now() / 1000) - 3600));
		expect(stale.status).toBe(401);
		expect(await stale.json()).toMatchObject({ error: 'invalid_signature', reason: expect.stringMatching(/timestamp/) });

		expect(await (await send(body, signedAt(Math.floor(Date.now() / 1000)))).json()).toEqual({ started: true });
	});

	it('shows the very parameters Webhook Signature Verify shows, from one description', () => {
		const triggerProperties = new IdempotentWebhook().description.properties;
		const verifyProperties = new WebhookSignatureVerify().description.properties;
		expect(genericHmacProperties.map((property) => property.name)).toEqual([
			'algorithm',
			'encoding',
			'signatureHeader',
			'signaturePrefix',
			'signedContent',
			'timestampHeader',
		]);
		for (const property of genericHmacProperties) {
			expect(triggerProperties.filter((shown) => shown === property)).toHaveLength(1);
			expect(verifyProperties.filter((shown) => shown === property)).toHaveLength(1);
		}
		const scheme = triggerProperties.find((property) => property.name === 'scheme')!;
		expect(scheme.options).toContainEqual(expect.objectContaining({ value: 'generic' }));
	});
});
