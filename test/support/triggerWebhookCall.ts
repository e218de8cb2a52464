import type { IncomingMessage, ServerResponse } from 'node:http';

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
	{ trigger, workflowId, credentials }: { trigger: INode; workflowId: string; credentials: ICredentialsHelper },
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
	const context = new WebhookContext(workflow, trigger, additionalData, 'webhook', webhookData, [], null);
	try {
		return await new IdempotentWebhook().webhook.call(context);
	} catch (error) {
		return error as Error;
	}
}
