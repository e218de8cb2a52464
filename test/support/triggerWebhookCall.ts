import { mkdtempSync, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import os from 'node:os';
import path from 'node:path';

import { WebhookContext } from 'n8n-core';
import {
	Workflow,
	type ICredentialsHelper,
	type INode,
	type IWebhookData,
	type IWebhookResponseData,
	type IWorkflowExecuteAdditionalData,
} from 'n8n-workflow';

import { IdempotentWebhook } from '../../nodes/IdempotentWebhook/IdempotentWebhook.node';
import { engineBase, nodeTypes } from './n8nEngine';

/**
 * The Idempotent Webhook's webhook() as n8n calls it for a request its HTTP server received: in
 * n8n-core's WebhookContext, the request given what n8n's parsing adds (the query, the raw body read
 * on demand). Answers what webhook() returned, or the error it threw; n8n answers what the trigger
 * did not, so a caller ends the response when the trigger left it open.
 */
export async function callTriggerWebhook(
	request: IncomingMessage,
	response: ServerResponse,
	{
		trigger,
		workflowId,
		credentials,
		mode = 'webhook',
		logger,
	}: {
		trigger: INode;
		workflowId: string;
		credentials: ICredentialsHelper;
		/** 'manual' for a call to the editor's test URL. */
		mode?: 'webhook' | 'manual';
		/** n8n's logger is a process-wide singleton: a test that reads what the call logged gives its own. */
		logger?: unknown;
	},
): Promise<IWebhookResponseData | Error> {
	const url = new URL(request.url ?? '/', 'http://localhost');
	const n8nRequest = Object.assign(request, {
		query: Object.fromEntries(url.searchParams),
		rawBody: undefined as Buffer | undefined,
		async readRawBody(): Promise<void> {
			const chunks: Buffer[] = [];
			for await (const chunk of request) chunks.push(chunk as Buffer);
			n8nRequest.rawBody = Buffer.concat(chunks);
		},
	});
	const additionalData = {
		...engineBase(credentials),
		httpRequest: n8nRequest,
		httpResponse: response,
	} as unknown as IWorkflowExecuteAdditionalData;
	const webhookData = {
		webhookDescription: new IdempotentWebhook().description.webhooks![0],
		workflowId,
		node: trigger.name,
	} as unknown as IWebhookData;
	const workflow = new Workflow({ id: workflowId, nodes: [trigger], connections: {}, active: true, nodeTypes });
	const context = new WebhookContext(workflow, trigger, additionalData, mode, webhookData, [], null);
	if (logger) Object.defineProperty(context, 'logger', { value: logger });
	try {
		return await new IdempotentWebhook().webhook.call(context);
	} catch (error) {
		return error as Error;
	}
}

/**
 * A temporary n8n folder (N8N_USER_FOLDER) for the whole test file, set before the file's first test
 * and kept until its last, as a real n8n keeps its folder for the life of its process. Call it at the
 * top of the file, before anything that registers hooks. n8n-core reads N8N_USER_FOLDER once: @n8n/di
 * builds InstanceSettings (and @n8n/config's InstanceSettingsConfig, getN8nFolder) when the first node
 * context of the file asks for it, a webhook() call or a node run in whichever block comes first, and
 * getStoragePath answers from that folder ever after. The trigger's webhook() reads N8N_USER_FOLDER at
 * each call (nodes/shared/embeddedFile.ts storagePathOutsideExecution, getN8nFolder's own rule). Set
 * later by one describe block, the two disagree: webhook() reserves the key in the block's folder, the
 * execution's recordExecution looks for it in the folder n8n-core read first (unset: $HOME/.n8n), does
 * not find it, and the trigger answers 409 "taken over".
 */
export function n8nFolderForTheFile(prefix: string): () => string {
	let folder: string | undefined;
	let before: string | undefined;
	beforeAll(() => {
		folder = mkdtempSync(path.join(os.tmpdir(), prefix));
		before = process.env.N8N_USER_FOLDER;
		process.env.N8N_USER_FOLDER = folder;
	});
	afterAll(() => {
		if (before === undefined) delete process.env.N8N_USER_FOLDER;
		else process.env.N8N_USER_FOLDER = before;
		if (folder) rmSync(folder, { recursive: true, force: true });
	});
	return () => {
		if (!folder) throw new Error("The n8n folder is set in the file's first beforeAll: read it in a test or a hook.");
		return folder;
	};
}
