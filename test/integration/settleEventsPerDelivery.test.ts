import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

import { HookContext } from 'n8n-core';
import {
	NodeConnectionTypes,
	Workflow,
	type ICredentialDataDecryptedObject,
	type IConnections,
	type IDataObject,
	type INode,
	type INodeExecutionData,
	type IWebhookResponseData,
	type IWorkflowExecuteAdditionalData,
} from 'n8n-workflow';

import { inboxItemOf, inboxOwner } from '../../lib/webhook/inbox';
import { IdempotentWebhook } from '../../nodes/IdempotentWebhook/IdempotentWebhook.node';
import { forgetKeptSigningSecrets } from '../../nodes/shared/signingSecret';
import { describeWithN8n, effectsFor, TestEffectOnce } from '../support/n8nBaseNodes';
import {
	addNodeTypes,
	credentialsHelperReading,
	engineBase,
	executeInProcess,
	inProcessWorkflow,
	nodeTypes,
	packageNode,
	PACKAGE,
	webhookResponses,
} from '../support/n8nEngine';
import { once } from '../support/settleWorkflows';
import { embeddedModule } from '../support/storeTargets';
import { callTriggerWebhook } from '../support/triggerWebhookCall';

/*
 * Several events in one delivery (the trigger's Events Path), settled in n8n-core's engine: the
 * trigger's webhook() in n8n-core's WebhookContext over a real HTTP exchange starts one execution
 * with one item per new event; the execution runs in n8n-core, and its end settles each event's key
 * by that event's own outcome (nodes/shared/settlement/). The store is the embedded one.
 */

const SECRET = 'whsec_events_per_delivery';
const credentialsHelper = () =>
	credentialsHelperReading(async (_details, type): Promise<ICredentialDataDecryptedObject> => {
		if (type === 'webhookSignatureApi') return { secret: SECRET };
		throw new Error(`No credential of type ${type}`);
	});

const WORKFLOW_ID = 'wf-events';
let activeTrigger: INode;
let lastResult: IWebhookResponseData | Error | undefined;

async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
	lastResult = await callTriggerWebhook(request, response, {
		trigger: activeTrigger,
		workflowId: WORKFLOW_ID,
		credentials: credentialsHelper(),
	});
	// n8n answers what the trigger did not (the execution's answer is read from webhookResponses).
	if (!response.writableEnded) response.writeHead(200).end('{"started":true}');
}

let server: http.Server;
let baseUrl: string;
let n8nFolder: string;
const keyStore = () =>
	embeddedModule().openEmbeddedKeyStore({ file: path.join(n8nFolder, '.n8n', 'storage', 'n8n-nodes-idempotency', 'keys.sqlite') });
const keyOf = (id: string) => `wf:${WORKFLOW_ID}:evt:${id}`;
const statuses = async (ids: string[]) => {
	const records = await keyStore().getKeys(ids.map(keyOf));
	return Object.fromEntries(ids.map((id) => [id, records.get(keyOf(id))?.status]));
};

async function post(events: Array<Record<string, unknown>>): Promise<Response> {
	const body = JSON.stringify({ events });
	const timestamp = Math.floor(Date.now() / 1000);
	const signature = createHmac('sha256', SECRET).update(`${timestamp}.${body}`).digest('hex');
	return await fetch(`${baseUrl}/webhook/batches`, {
		method: 'POST',
		headers: { 'content-type': 'application/json', 'stripe-signature': `t=${timestamp},v1=${signature}` },
		body,
	});
}

const batchTrigger = (parameters: Record<string, unknown> = {}) =>
	packageNode(
		'Idempotent Webhook',
		'idempotentWebhook',
		{ path: 'batches', scheme: 'stripe', store: 'embedded', options: { eventsPath: 'body.events' }, ...parameters },
		{ typeVersion: 3, credentials: { webhookSignatureApi: { id: 'signing', name: 'Signing' } } },
	);

const to = (...names: string[]): IConnections[string] => ({
	main: [names.map((node) => ({ node, type: NodeConnectionTypes.Main, index: 0 }))],
});

/** The charge, failing once for `failOnce`, each event's failure its own (On Error: Continue (using error output)). */
const charge = (failOnce: string, onError: INode['onError'] = 'continueErrorOutput') => once('Charge', failOnce, 0, { onError });

/** Runs `items` as the execution webhook() (or the inbox runner) starts, the trigger renamed Webhook. */
async function run(executionId: string, items: INodeExecutionData[], step: INode) {
	const started = { ...activeTrigger, name: 'Webhook' };
	const { run: result } = await executeInProcess(
		inProcessWorkflow(WORKFLOW_ID, [started, step], { Webhook: to(step.name) }),
		executionId,
		items,
		engineBase(credentialsHelper()),
	);
	const [answer] = webhookResponses.get(executionId) ?? [];
	return { run: result, answer };
}

const startedItems = () => (lastResult as IWebhookResponseData).workflowData![0];
const startedIds = () => startedItems().map((item) => (item.json.body as { id: string }).id);

describeWithN8n('several events in one delivery, settled in n8n-core', () => {
	beforeAll(async () => {
		n8nFolder = mkdtempSync(path.join(os.tmpdir(), 'events-n8n-'));
		process.env.N8N_USER_FOLDER = n8nFolder;
		embeddedModule();
		addNodeTypes({ [`${PACKAGE}.testEffectOnce`]: new TestEffectOnce() });
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
	afterEach(() => forgetKeptSigningSecrets());

	it('When the Workflow Ends: one event fails → 500, its key failed, the others completed; the retry runs only it, then 200', async () => {
		activeTrigger = batchTrigger();
		const events = [{ id: 'w_1' }, { id: 'w_2' }, { id: 'w_3' }];
		expect((await post(events)).status).toBe(200);
		expect(startedIds()).toEqual(['w_1', 'w_2', 'w_3']);

		const first = await run('exec-w-1', startedItems(), charge('w_2'));
		expect(first.answer?.statusCode).toBe(500);
		expect(await statuses(['w_1', 'w_2', 'w_3'])).toEqual({ w_1: 'completed', w_2: 'failed', w_3: 'completed' });

		// The provider retries the whole delivery: only the failed event runs.
		expect((await post(events)).status).toBe(200);
		expect(startedIds()).toEqual(['w_2']);
		const retry = await run('exec-w-2', startedItems(), charge('w_2'));
		expect(retry.answer?.statusCode).toBe(200);
		expect(await statuses(['w_2'])).toEqual({ w_2: 'completed' });

		const copy = await post(events);
		expect([copy.status, await copy.json()]).toEqual([200, { status: 'duplicate' }]);
		expect(['w_1', 'w_2', 'w_3'].map(effectsFor)).toEqual([1, 1, 1]);
	});

	it('At Once: one event fails → its key failed with a retry due, the others completed; the package retries only it, from its own kept item', async () => {
		activeTrigger = batchTrigger({ respond: 'atOnce', firstRetrySeconds: 1 });
		const events = [{ id: 'a_1' }, { id: 'a_2' }, { id: 'a_3' }];
		const accepted = await post(events);
		expect([accepted.status, await accepted.json()]).toEqual([200, { received: true }]);

		const first = await run('exec-a-1', startedItems(), charge('a_2'));
		// The sender has its answer: the end only settles.
		expect(first.answer).toBeUndefined();
		expect(await statuses(['a_1', 'a_2', 'a_3'])).toEqual({ a_1: 'completed', a_2: 'failed', a_3: 'completed' });

		await new Promise((resolve) => setTimeout(resolve, 2500));
		const claims = await keyStore().claimDueInbox({ owner: inboxOwner(WORKFLOW_ID), limit: 20, leaseMs: 300_000 });
		expect(claims.map((claim) => claim.key)).toEqual([keyOf('a_2')]);
		// As the inbox runner emits it (nodes/IdempotentWebhook/inboxRunner.ts).
		const [claim] = claims;
		const retried = inboxItemOf(claim.item, {
			key: claim.key,
			isNew: true,
			outcome: 'new',
			ownerToken: claim.ownerToken,
			attempts: claim.attempt,
			lockedUntil: claim.leaseEndsAt?.toISOString() ?? null,
			answeredAtOnce: true,
		})!;
		expect(retried.json.body).toEqual({ id: 'a_2' });
		expect(retried.rawBody.toString('utf8')).toBe('{"id":"a_2"}');
		await run('exec-a-2', [{ json: retried.json as IDataObject }], charge('a_2'));
		expect(await statuses(['a_2'])).toEqual({ a_2: 'completed' });
		expect(['a_1', 'a_2', 'a_3'].map(effectsFor)).toEqual([1, 1, 1]);
	});

	/* Events together at a node that stops the workflow on error ---------------------------------- */

	/** Publishes trigger → Charge as n8n does: checkExists, then create, on n8n-core's HookContext. */
	async function publish(trigger: INode, step: INode): Promise<void> {
		const workflow = new Workflow({
			id: 'wf-events-publish',
			name: 'publish',
			nodes: [trigger, step],
			connections: { [trigger.name]: to(step.name) },
			active: true,
			nodeTypes,
			settings: { executionOrder: 'v1' },
		});
		const additionalData = engineBase(credentialsHelper()) as unknown as IWorkflowExecuteAdditionalData;
		const context = new HookContext(workflow, workflow.getNode(trigger.name)!, additionalData, 'trigger', 'activate');
		const methods = new IdempotentWebhook().webhookMethods.default;
		if (!(await methods.checkExists.call(context))) await methods.create.call(context);
	}

	// n8n records a node's failure at "Stop Workflow" for all the items it was given, not which it had done:
	// every event's key would be failed and the retry would charge the others again.
	it("a charge at n8n's default On Error (Stop Workflow) behind an Events Path: refused at publish; the same without one publishes", async () => {
		await expect(publish(batchTrigger(), charge('', 'stopWorkflow'))).rejects.toThrow(
			/"Charge" gets the events of one delivery together and stops the workflow when it fails/,
		);
		await expect(publish(batchTrigger({ options: {} }), charge('', 'stopWorkflow'))).resolves.toBeUndefined();
		await expect(publish(batchTrigger(), charge(''))).resolves.toBeUndefined();
	});

	it('refuses at publish a Key Source that gives every event of a delivery the same key', async () => {
		await expect(publish(batchTrigger({ keySource: 'header', headerName: 'x-request-id' }), charge(''))).rejects.toThrow(
			/Key Source "Header" gives every event of one delivery the same key/,
		);
	});

	it('refuses at run time, before the charge, a workflow published before its charge was set to stop on error: every key failed, 500', async () => {
		activeTrigger = batchTrigger();
		expect((await post([{ id: 'r_1' }, { id: 'r_2' }])).status).toBe(200);
		const refused = await run('exec-r-1', startedItems(), charge('', 'stopWorkflow'));
		expect(refused.answer?.statusCode).toBe(500);
		expect(await statuses(['r_1', 'r_2'])).toEqual({ r_1: 'failed', r_2: 'failed' });
		expect(['r_1', 'r_2'].map(effectsFor)).toEqual([0, 0]);
	});
});
