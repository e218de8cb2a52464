import { createHmac } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

import type {
	ICredentialDataDecryptedObject,
	IConnections,
	INode,
	INodeExecutionData,
	IRunExecutionData,
	IWebhookResponseData,
} from 'n8n-workflow';

import { OUTCOME_HEADER } from '../../lib/webhook/answers';
import { forgetKeptSigningSecrets } from '../../nodes/shared/signingSecret';
import { credentialsHelperReading, engineBase, executeInProcess, inProcessWorkflow, packageNode, webhookResponses } from './n8nEngine';
import { link } from './settleWorkflows';
import { embeddedModule } from './storeTargets';
import { callTriggerWebhook } from './triggerWebhookCall';

/**
 * The Idempotent Webhook trigger (Stripe-signed, Embedded store) served on a local HTTP server, in
 * n8n-core's engine, and a provider that posts an event, runs the execution the trigger started with
 * one step behind it (sub-workflows, nested ones too, each run as its own execution whose record is
 * kept, as n8n keeps it), and posts it again while the answer is not 2xx. Call inside a describe: it
 * registers its own beforeAll, afterAll and afterEach. `n8nFolder`: the file's n8n folder
 * (n8nFolderForTheFile), where the trigger's key file is.
 */
export function inProcessTriggerProvider(label: string, n8nFolder: () => string) {
	const secret = `whsec_${label}`;
	const workflowId = `wf-${label}-trigger`;
	const credentials = () =>
		credentialsHelperReading(async (_details, type): Promise<ICredentialDataDecryptedObject> => {
			if (type === 'webhookSignatureApi') return { secret };
			throw new Error(`No credential of type ${type}`);
		});
	const trigger = packageNode(
		'Idempotent Webhook',
		'idempotentWebhook',
		{ path: label, scheme: 'stripe', store: 'embedded' },
		{ typeVersion: 2, credentials: { webhookSignatureApi: { id: 'signing', name: 'Signing' } } },
	);
	let started: IWebhookResponseData | Error | undefined;
	let server: http.Server;
	let baseUrl: string;
	let executions = 0;

	async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
		started = await callTriggerWebhook(request, response, { trigger, workflowId, credentials: credentials() });
		// n8n answers what the trigger did not (the execution's answer is read from webhookResponses).
		if (!response.writableEnded) response.writeHead(200).end('{"started":true}');
	}

	beforeAll(async () => {
		embeddedModule();
		server = http.createServer((request, response) => void handle(request, response));
		await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
		baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
	});
	afterAll(async () => {
		await new Promise((resolve) => server.close(resolve));
		embeddedModule().closeEmbeddedStores();
	});
	afterEach(() => forgetKeptSigningSecrets());

	const keyOf = (id: string) => `wf:${workflowId}:evt:${id}`;

	/** n8n's engine for the trigger's execution, running each sub-workflow as its own execution and keeping its record. */
	function engineWithSubWorkflows() {
		const base = engineBase(credentials());
		const records = new Map<string, IRunExecutionData>();
		base.getRunExecutionData = async (executionId) => records.get(executionId);
		base.executeWorkflow = async (workflowInfo, _additionalData, options) => {
			const code = workflowInfo.code as { nodes: INode[]; connections: IConnections };
			executions += 1;
			const executionId = `${label}-trigger-sub-${executions}`;
			const { run } = await executeInProcess(
				inProcessWorkflow(executionId, code.nodes, code.connections),
				executionId,
				options.inputData ?? [],
				base,
			);
			records.set(executionId, JSON.parse(JSON.stringify(run.data)) as IRunExecutionData);
			if (run.data.resultData.error) throw new Error(run.data.resultData.error.message);
			const last = run.data.resultData.lastNodeExecuted as string;
			return { executionId, data: run.data.resultData.runData[last]?.[0]?.data?.main ?? [null] };
		};
		return base;
	}

	return {
		/** The trigger's key status for an event, read from its key file. */
		async triggerStatus(id: string): Promise<string | undefined> {
			const store = embeddedModule().openEmbeddedKeyStore({
				file: path.join(n8nFolder(), '.n8n', 'storage', 'n8n-nodes-idempotency', 'keys.sqlite'),
			});
			return (await store.getKeys([keyOf(id)])).get(keyOf(id))?.status;
		},
		/** Posts the event (at most four times) until its answer is 2xx; each answer's status and outcome header. */
		async provide(event: { id: string }, step: INode): Promise<Array<{ status: number; outcome: string | null }>> {
			const answers: Array<{ status: number; outcome: string | null }> = [];
			for (let attempt = 0; attempt < 4; attempt++) {
				const body = JSON.stringify(event);
				const timestamp = Math.floor(Date.now() / 1000);
				const signature = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
				started = undefined;
				const response = await fetch(`${baseUrl}/webhook/${label}`, {
					method: 'POST',
					headers: { 'content-type': 'application/json', 'stripe-signature': `t=${timestamp},v1=${signature}` },
					body,
				});
				const items = (started as IWebhookResponseData | undefined)?.workflowData?.[0] as INodeExecutionData[] | undefined;
				let status = response.status;
				if (items && items.length > 0) {
					executions += 1;
					const executionId = `${label}-trigger-${executions}`;
					await executeInProcess(
						inProcessWorkflow(workflowId, [{ ...trigger, name: 'Webhook' }, step], { Webhook: { main: [link(step.name)] } }),
						executionId,
						items,
						engineWithSubWorkflows(),
					);
					status = Number((webhookResponses.get(executionId) ?? [])[0]?.statusCode ?? 200);
				}
				answers.push({ status, outcome: response.headers.get(OUTCOME_HEADER) });
				if (status >= 200 && status < 300) break;
			}
			return answers;
		},
	};
}
