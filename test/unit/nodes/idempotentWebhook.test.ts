import { createHmac } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

import { WebhookContext } from 'n8n-core';
import {
	NodeHelpers,
	Workflow,
	type ICredentialDataDecryptedObject,
	type ICredentialsHelper,
	type IWebhookData,
	type IWebhookResponseData,
	type IWorkflowExecuteAdditionalData,
} from 'n8n-workflow';

import { MANUAL_TEST_PREFIX } from '../../../lib/keys/deriveKey';
import { IdempotentWebhook } from '../../../nodes/IdempotentWebhook/IdempotentWebhook.node';
import { executionStarted } from '../../../nodes/IdempotentWebhook/unstartedExecutions';
import { embeddedModule } from '../../support/storeTargets';
import { credentialsHelperReading, engineBase, nodeTypes, packageNode } from '../../support/n8nEngine';

// The trigger's webhook() in n8n-core's own WebhookContext, over a real HTTP exchange: it answers
// by itself (the response written, no workflow data) or hands n8n one item to start an execution,
// and never throws. The embedded store is a real file under a temporary n8n folder.

const SECRET = 'whsec_node_test';
const signingSecret: { data: ICredentialDataDecryptedObject | Error } = { data: { secret: SECRET } };

/** The signing secret as n8n's credentials helper reads it, or the error n8n gives. */
function credentialsHelper(): ICredentialsHelper {
	return credentialsHelperReading(async (_details, type) => {
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
const workflow = new Workflow({ id: 'wf-trigger', nodes: [trigger], connections: {}, active: true, nodeTypes });

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
	const url = new URL(request.url ?? '/', 'http://localhost');
	// What n8n's request parsing adds to Node's request before a trigger runs.
	const n8nRequest = Object.assign(request, {
		query: Object.fromEntries(url.searchParams),
		rawBody: undefined as Buffer | undefined,
		async readRawBody(): Promise<void> {
			const chunks: Buffer[] = [];
			for await (const chunk of request) chunks.push(chunk as Buffer);
			n8nRequest.rawBody = Buffer.concat(chunks);
		},
	});
	const additionalData = { ...engineBase(credentialsHelper()), httpRequest: n8nRequest, httpResponse: response } as unknown as IWorkflowExecuteAdditionalData;
	const webhookData = { webhookDescription: new IdempotentWebhook().description.webhooks![0], workflowId: 'wf-trigger', node: trigger.name } as unknown as IWebhookData;
	const context = new WebhookContext(workflow, trigger, additionalData, webhookMode, webhookData, [], null);
	try {
		lastResult = await new IdempotentWebhook().webhook.call(context);
	} catch (error) {
		lastResult = error as Error;
	}
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
	signingSecret.data = { secret: SECRET };
	webhookMode = 'webhook';
	afterStart = 'started';
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
		expect(item.json).toMatchObject({ query: { source: 'test' }, body: { id: 'evt_node_1' }, idempotency: { key: 'evt:evt_node_1', outcome: 'new' } });
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

	it('answers 503 when n8n cannot read the signing secret, and does not throw', async () => {
		signingSecret.data = new Error(`Credentials could not be decrypted (${SECRET})`);

		const answer = await post('{"id":"evt_node_secret"}');

		expect(answer.status).toBe(503);
		expect(await answer.text()).not.toContain(SECRET);
		expect(lastResult).toEqual({ noWebhookResponse: true });
	});
});

describe('Idempotent Webhook: parameters', () => {
	const description = new IdempotentWebhook().description;
	const resolved = (parameters: Record<string, unknown>) =>
		NodeHelpers.getNodeParameters(description.properties, parameters as never, true, false, null, description)!;

	it('shows the Store parameter, Embedded by default, and a Postgres credential only for Postgres', () => {
		expect(resolved({})).toMatchObject({ store: 'embedded', scheme: 'stripe', mode: 'lease', leaseSeconds: 300, httpMethod: 'POST', authentication: 'none' });
		const store = description.properties.filter((property) => property.name === 'store');
		expect(store).toHaveLength(1);
		expect(NodeHelpers.displayParameter(resolved({}), store[0], trigger, description)).toBe(true);
		expect(description.credentials?.find((credential) => credential.name === 'idempotencyPostgresApi')?.displayOptions).toEqual({ show: { store: ['postgres'] } });
	});

	it('offers an unsigned webhook only as an explicit choice, and asks for no signing secret then', () => {
		const scheme = description.properties.find((property) => property.name === 'scheme')!;
		expect(scheme.default).not.toBe('none');
		expect(scheme.options).toContainEqual(expect.objectContaining({ name: 'None (Explicitly Unsigned)', value: 'none' }));
		expect(description.credentials?.find((credential) => credential.name === 'webhookSignatureApi')?.displayOptions).toEqual({ hide: { scheme: ['none'] } });
	});
});
