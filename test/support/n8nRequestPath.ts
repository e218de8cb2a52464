import type { IncomingMessage, ServerResponse } from 'node:http';
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

import { n8nInstallDirectory } from './n8nBaseNodes';
import { engineBase, nodeTypes } from './n8nEngine';

/*
 * n8n's own request path for a webhook, loaded from its install: its raw body reader (gzip and deflate inflated, the
 * charset read), what webhook-helpers.js parseRequestBody does before a webhook node is called (parseBody for JSON,
 * text, form and XML bodies; its multipart parser for multipart/form-data), then the node's webhook() in n8n-core's
 * WebhookContext. For tests about what a request's bytes, headers and Content-Type do once n8n has them.
 */

/** n8n's request (rawBody: the exact bytes once read, declared on IncomingMessage by n8n-workflow). */
export interface N8nRequest extends IncomingMessage {
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
export function n8nCli(): N8nCli {
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
export async function asN8nReceives(request: IncomingMessage, response: ServerResponse): Promise<N8nRequest | undefined> {
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
export async function callWebhook(
	request: N8nRequest,
	response: ServerResponse,
	node: INode,
	workflowId: string,
	credentials: ICredentialsHelper,
): Promise<IWebhookResponseData | Error> {
	const nodeType = nodeTypes.getByNameAndVersion(node.type, node.typeVersion);
	const additionalData = {
		...engineBase(credentials),
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
