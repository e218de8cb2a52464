import { createHmac } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

import type {
	ICredentialDataDecryptedObject,
	IConnections,
	INode,
	INodeExecutionData,
	INodeParameters,
	IRun,
	IRunExecutionData,
	IWebhookResponseData,
} from 'n8n-workflow';

import { OUTCOME_HEADER } from '../../lib/webhook/answers';
import { forgetKeptSigningSecrets } from '../../nodes/shared/signingSecret';
import { credentialsHelperReading, engineBase, executeInProcess, inProcessWorkflow, packageNode, webhookResponses } from './n8nEngine';
import { link, type Shape } from './settleWorkflows';
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
	const served = serveTrigger(trigger, workflowId, credentials);
	let executions = 0;

	const keyOf = (id: string) => `wf:${workflowId}:evt:${id}`;

	/** n8n's engine for the trigger's execution, running each sub-workflow as its own execution and keeping its record. */
	function engineWithSubWorkflows() {
		return withSubWorkflowsInProcess(engineBase(credentials()), () => `${label}-trigger-sub-${(executions += 1)}`);
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
				const response = await fetch(`${served.baseUrl()}/webhook/${label}`, {
					method: 'POST',
					headers: { 'content-type': 'application/json', 'stripe-signature': `t=${timestamp},v1=${signature}` },
					body,
				});
				const items = served.started()?.workflowData?.[0] as INodeExecutionData[] | undefined;
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

/** How a caller proves itself to the trigger, beside the signature: its Authentication and the credential's values. */
export interface TriggerCaller {
	authentication?: 'none' | 'basicAuth' | 'headerAuth';
	basic?: { user: string; password: string };
	header?: { name: string; value: string };
}

/**
 * The Idempotent Webhook trigger (version 3, Stripe-signed, Embedded store, `options` and `caller`'s
 * Authentication) served on a local HTTP server, the execution it starts run by n8n-core with a
 * shape's nodes behind it (the trigger renamed Webhook; sub-workflows each their own execution, their
 * record kept), and a provider that posts a delivery again while its answer is not 2xx. Call inside
 * a describe, or at a file's top: it registers its own beforeAll, afterAll and afterEach.
 */
export function inProcessTriggerShapes(label: string, n8nFolder: () => string, options: INodeParameters = {}, caller: TriggerCaller = {}) {
	const { authentication = 'none', basic, header } = caller;
	const secret = `whsec_${label}`;
	const workflowId = `wf-${label}-shapes`;
	const credentials = () =>
		credentialsHelperReading(async (_details, type): Promise<ICredentialDataDecryptedObject> => {
			if (type === 'webhookSignatureApi') return { secret };
			if (type === 'idempotentWebhookBasicAuthApi' && basic) return { ...basic };
			if (type === 'idempotentWebhookHeaderAuthApi' && header) return { ...header };
			throw new Error(`No credential of type ${type}`);
		});
	const authCredentials: Record<string, { id: string; name: string }> =
		authentication === 'basicAuth'
			? { idempotentWebhookBasicAuthApi: { id: 'basic', name: 'Basic' } }
			: authentication === 'headerAuth'
				? { idempotentWebhookHeaderAuthApi: { id: 'header', name: 'Header' } }
				: {};
	const trigger = packageNode(
		'Idempotent Webhook',
		'idempotentWebhook',
		{ path: label, scheme: 'stripe', store: 'embedded', authentication, options },
		{ typeVersion: 3, credentials: { webhookSignatureApi: { id: 'signing', name: 'Signing' }, ...authCredentials } },
	);
	const served = serveTrigger(trigger, workflowId, credentials);
	let executions = 0;

	const keyOf = (id: string) => `wf:${workflowId}:evt:${id}`;
	const keyFile = () =>
		embeddedModule().openEmbeddedKeyStore({ file: path.join(n8nFolder(), '.n8n', 'storage', 'n8n-nodes-idempotency', 'keys.sqlite') });

	function engine() {
		return withSubWorkflowsInProcess(engineBase(credentials()), () => `${label}-shapes-sub-${(executions += 1)}`);
	}

	/** The sender's own headers: its credential as the trigger checks it (Header Auth's header given twice when asked). */
	function callerHeaders(twice: boolean): Headers {
		const headers = new Headers({ 'content-type': 'application/json' });
		if (authentication === 'basicAuth' && basic)
			headers.set('Authorization', `Basic ${Buffer.from(`${basic.user}:${basic.password}`).toString('base64')}`);
		if (authentication === 'headerAuth' && header) {
			headers.append(header.name, header.value);
			if (twice) headers.append(header.name, header.value);
		}
		return headers;
	}

	return {
		/** The key's stored record (status, answer, last error), read from the trigger's key file. */
		async record(id: string) {
			return (await keyFile().getKeys([keyOf(id)])).get(keyOf(id));
		},
		/** Each event's key status, read from the trigger's key file. */
		async statuses(ids: string[]): Promise<Array<string | undefined>> {
			const records = await keyFile().getKeys(ids.map(keyOf));
			return ids.map((id) => records.get(keyOf(id))?.status);
		},
		/** Posts `body` (at most `attempts` times) until its answer is 2xx; each answer's status and every body answered, as text. */
		async provide(body: unknown, shape: Pick<Shape, 'nodes' | 'connections' | 'heads'>, attempts = 4, { twice = false } = {}) {
			const answers: number[] = [];
			const bodies: string[] = [];
			for (let attempt = 0; attempt < attempts; attempt++) {
				const text = JSON.stringify(body);
				const timestamp = Math.floor(Date.now() / 1000);
				const signature = createHmac('sha256', secret).update(`${timestamp}.${text}`).digest('hex');
				const headers = callerHeaders(twice);
				headers.set('stripe-signature', `t=${timestamp},v1=${signature}`);
				const response = await fetch(`${served.baseUrl()}/webhook/${label}`, { method: 'POST', headers, body: text });
				let answered = await response.text();
				const items = served.started()?.workflowData?.[0] as INodeExecutionData[] | undefined;
				let status = response.status;
				if (items && items.length > 0) {
					executions += 1;
					const executionId = `${label}-shapes-${executions}`;
					await executeInProcess(
						inProcessWorkflow(workflowId, [{ ...trigger, name: 'Webhook' }, ...shape.nodes], {
							Webhook: { main: [link(...shape.heads)] },
							...shape.connections,
						}),
						executionId,
						items,
						engine(),
					);
					const [answer] = webhookResponses.get(executionId) ?? [];
					status = Number(answer?.statusCode ?? 200);
					answered = JSON.stringify(answer?.body ?? null);
				}
				answers.push(status);
				bodies.push(answered);
				if (status >= 200 && status < 300) break;
			}
			return { answers, bodies };
		},
	};
}

/**
 * Serves `trigger` on a local HTTP server as n8n's webhook route calls it, for a describe's tests (its own
 * beforeAll, afterAll and afterEach): its address, and what the trigger's webhook() returned for the
 * request answered last (the items of the execution it started, if any).
 */
function serveTrigger(trigger: INode, workflowId: string, credentials: () => ReturnType<typeof credentialsHelperReading>) {
	let started: IWebhookResponseData | undefined;
	let server: http.Server;
	let baseUrl: string;

	async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
		started = undefined;
		const outcome = await callTriggerWebhook(request, response, { trigger, workflowId, credentials: credentials() });
		started = outcome instanceof Error ? undefined : outcome;
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

	return { baseUrl: () => baseUrl, started: () => started };
}

/**
 * What a sub-workflow returns to its Execute Workflow node, as n8n 2.41.1 builds it (buildSubWorkflowOutput): every run of
 * its last node, in the order they ran, joined per output; its last run alone where the Execute Workflow Trigger is older
 * than version 1.2 and not set to return all runs.
 */
function subWorkflowOutput(run: IRun, nodes: INode[]): Array<INodeExecutionData[] | null> {
	const last = run.data.resultData.lastNodeExecuted;
	const runs = last === undefined ? [] : (run.data.resultData.runData[last] ?? []);
	if (runs.length === 0) return [null];
	const trigger = nodes.find((node) => node.type === 'n8n-nodes-base.executeWorkflowTrigger');
	const lastRunOnly = (trigger?.typeVersion ?? 1) < 1.2 && trigger?.parameters?.returnOutput !== 'allRuns';
	if (lastRunOnly) return runs[runs.length - 1].data?.main ?? [null];
	const inOrder = [...runs].sort((a, b) => (a.executionIndex ?? 0) - (b.executionIndex ?? 0));
	const outputs = Math.max(...inOrder.map((task) => task.data?.main?.length ?? 0));
	return Array.from({ length: outputs }, (_, branch) => inOrder.flatMap((task) => task.data?.main?.[branch] ?? []));
}

/** How far the in-process sub-workflows follow n8n's saving and its Execute Workflow options. */
export interface SubWorkflowsAsN8n {
	/** A sub-workflow whose settings save no successful execution (saveDataSuccessExecution 'none') leaves no record. */
	savingSettings?: boolean;
	/**
	 * Where a sub-workflow the node does not wait for (doNotWaitToFinish) runs on, for the test to await: the node gets
	 * n8n's `[null]` at once. Without it such a sub-workflow is waited for.
	 */
	background?: Array<Promise<unknown>>;
	/** The workflows in n8n's database, by id, for an Execute Workflow node whose Source is Database. */
	database?: Map<string, SubWorkflowCode>;
}

/** A sub-workflow as an Execute Workflow node gives it (Source: Define Below) or n8n loads it (Source: Database). */
export interface SubWorkflowCode {
	nodes: INode[];
	connections: IConnections;
	settings?: { saveDataSuccessExecution?: string };
}

/**
 * `base`, running each sub-workflow an Execute Workflow node calls as an execution of its own (its id from
 * `nextId`), as n8n does, and keeping its record for getRunExecutionData (the settlement reads a sub-execution's
 * failures from it). A sub-workflow that fails throws its error, as n8n's does.
 */
export function withSubWorkflowsInProcess(
	base: ReturnType<typeof engineBase>,
	nextId: () => string,
	asN8n: SubWorkflowsAsN8n = {},
): ReturnType<typeof engineBase> {
	const records = new Map<string, IRunExecutionData | undefined>();
	base.getRunExecutionData = async (executionId) => records.get(executionId);
	base.executeWorkflow = async (workflowInfo, _additionalData, options) => {
		const code = subWorkflowCode(workflowInfo, asN8n.database);
		const executionId = nextId();
		const unsaved = asN8n.savingSettings === true && code.settings?.saveDataSuccessExecution === 'none';
		const running = executeInProcess(
			inProcessWorkflow(workflowInfo.id ?? executionId, code.nodes, code.connections),
			executionId,
			options.inputData ?? [],
			base,
			{ parentExecution: options.parentExecution },
		).then(({ run }) => {
			records.set(executionId, unsaved ? undefined : (JSON.parse(JSON.stringify(run.data)) as IRunExecutionData));
			return run;
		});
		if (options.doNotWaitToFinish && asN8n.background) {
			asN8n.background.push(running);
			return { executionId, data: [null] };
		}
		const run = await running;
		if (run.data.resultData.error) throw new Error(run.data.resultData.error.message);
		return { executionId, data: subWorkflowOutput(run, code.nodes) };
	};
	return base;
}

/** The sub-workflow an Execute Workflow node runs: the one it gives, or the one n8n loads by id (its own error when none). */
function subWorkflowCode(
	workflowInfo: { id?: string; code?: unknown },
	database: Map<string, SubWorkflowCode> | undefined,
): SubWorkflowCode {
	if (workflowInfo.id === undefined) return workflowInfo.code as SubWorkflowCode;
	const stored = database?.get(workflowInfo.id);
	if (!stored) throw new Error(`Workflow with ID "${workflowInfo.id}" does not exist.`);
	return JSON.parse(JSON.stringify(stored)) as SubWorkflowCode;
}
