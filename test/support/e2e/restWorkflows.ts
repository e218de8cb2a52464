// Test-only copies of the shipped templates, created and published in the running n8n through its
// REST API (as the editor does: save, then publish), each with a webhook path of its own per run.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import * as stack from '../stack/n8nStack';
import { manualRunBody } from '../stack/n8nVersion';
import { OWNER, type Execution, type Harness } from './harness';
import type { RestClient, RestResponse } from '../stack/n8nRest';
import type { PublishedWebhook } from './checklist';
import type { WorkflowJson, WorkflowNode } from './workflows';

/** A shipped template from the repository's templates/ folder. */
export function readShippedTemplate(file: string): WorkflowJson {
	return JSON.parse(fs.readFileSync(path.join(stack.REPO_ROOT, 'templates', file), 'utf8'));
}

/** A webhook path of its own per run, so reruns and other copies never collide. */
export function freshWebhookPath(label: string): string {
	return `e2e-${label}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
}

/** n8n's Webhook node taking POSTs at `webhookPath`, as the editor saves it; `parameters` adds to or overrides its parameters. */
export function webhookNode(webhookPath: string, parameters: Record<string, unknown> = {}): WorkflowNode {
	return {
		id: randomUUID(),
		name: 'Webhook',
		type: 'n8n-nodes-base.webhook',
		typeVersion: 2.1,
		position: [0, 0],
		webhookId: randomUUID(),
		parameters: { httpMethod: 'POST', path: webhookPath, options: {}, ...parameters },
	};
}

/** The template with a fresh webhook path and id, so reruns and other copies never collide. */
export function withOwnWebhook(template: WorkflowJson, label: string): { workflow: WorkflowJson; webhookPath: string } {
	const webhookPath = freshWebhookPath(label);
	const nodes = template.nodes.map((node) =>
		node.type === 'n8n-nodes-base.webhook'
			? { ...node, webhookId: randomUUID(), parameters: { ...node.parameters, path: webhookPath } }
			: node,
	);
	return { workflow: { ...template, nodes }, webhookPath };
}

/** Saves a workflow as the owner, as the editor's "Import from File" does (new, inactive). Returns its id and versionId. */
export async function saveWorkflow(
	h: Harness,
	workflow: WorkflowJson,
	label: string,
): Promise<{ id: string; versionId: string; rest: ReturnType<Harness['rest']> }> {
	const rest = h.rest();
	await rest.ownerLogin(OWNER);
	const { name, nodes, connections, settings, pinData, meta } = workflow;
	const saved = await rest.call('POST', '/workflows', {
		name: `${name} (e2e ${label})`,
		nodes,
		connections,
		settings,
		pinData,
		meta,
		active: false,
	});
	if (saved.status !== 200) throw new Error(`saving the workflow failed (${saved.status}): ${saved.text.slice(0, 300)}`);
	return { id: saved.json.data.id, versionId: saved.json.data.versionId, rest };
}

/** Saves and publishes a workflow as the owner; resolves once n8n serves its webhook. Returns its id. */
export async function publishWorkflow(h: Harness, workflow: WorkflowJson, webhookPath: string): Promise<string> {
	const { id, refusal } = await tryPublishWorkflow(h, workflow, webhookPath);
	if (refusal !== undefined) throw new Error(`publishing the workflow failed: ${refusal}`);
	return id;
}

/**
 * Saves and publishes a workflow as the owner, as the editor does: its id once n8n serves its
 * webhook, or n8n's refusal. n8n 1.x activates within the call (a refusal is its error answer);
 * 2.x publishes through its outbox after the call, and a trigger that refuses to activate shows
 * in the workflow's publication status (what the editor shows).
 */
export async function tryPublishWorkflow(
	h: Harness,
	workflow: WorkflowJson,
	webhookPath: string,
): Promise<{ id: string; refusal?: string }> {
	const { id, versionId, rest } = await saveWorkflow(h, workflow, webhookPath);
	const published = await rest.call('POST', `/workflows/${id}/activate`, { versionId });
	if (published.status !== 200) {
		const message = (published.json as { message?: unknown } | undefined)?.message;
		return { id, refusal: `(${published.status}) ${typeof message === 'string' ? message : published.text.slice(0, 1000)}` };
	}
	// n8n 2.x writes the webhook's row before it asks the trigger, and removes it when the trigger
	// refuses: served means registered and, where n8n reports it, published.
	const refusal = await publicationOutcome(rest, id, () => stack.webhookRegistered(h.state.n8nDbUrl, webhookPath));
	return refusal === undefined ? { id } : { id, refusal };
}

/**
 * Publishes a saved workflow as the editor's Publish button does (its current version), and
 * resolves once n8n reports it active: n8n 1.x activates within the call, 2.x through its
 * publication outbox, which the publication status follows.
 */
export async function publishSaved(h: Harness, workflowId: string): Promise<void> {
	const rest = h.rest();
	await rest.ownerLogin(OWNER);
	const saved = await rest.call('GET', `/workflows/${workflowId}`);
	if (saved.status !== 200) throw new Error(`reading workflow ${workflowId} failed (${saved.status}): ${saved.text.slice(0, 300)}`);
	const published = await rest.call('POST', `/workflows/${workflowId}/activate`, { versionId: saved.json?.data?.versionId });
	if (published.status !== 200)
		throw new Error(`publishing workflow ${workflowId} failed (${published.status}): ${published.text.slice(0, 300)}`);
	const refusal = await publicationOutcome(rest, workflowId, async () => true);
	if (refusal !== undefined) throw new Error(`publishing workflow ${workflowId} failed: ${refusal}`);
}

/** Unpublishes a workflow as the editor's Unpublish (1.x: the Active toggle) does. */
export async function unpublish(h: Harness, workflowId: string): Promise<void> {
	const rest = h.rest();
	await rest.ownerLogin(OWNER);
	const answer = await rest.call('POST', `/workflows/${workflowId}/deactivate`, {});
	if (answer.status !== 200) throw new Error(`unpublishing workflow ${workflowId} failed (${answer.status}): ${answer.text.slice(0, 300)}`);
}

/**
 * Waits until n8n reports a workflow published and `served` holds: undefined then, or the error of
 * a trigger that refused. n8n 1.x has no publication status (it activates within the activate
 * call), so `served` alone decides there.
 */
async function publicationOutcome(rest: RestClient, workflowId: string, served: () => Promise<boolean>): Promise<string | undefined> {
	for (const deadline = Date.now() + 60000; ; await stack.sleep(250)) {
		const isServed = await served();
		const status = await rest.call('GET', `/workflows/${workflowId}/publication-status`);
		if (status.status === 200) {
			const failed = publicationFailure(status.json);
			if (failed !== undefined) return failed;
			if (isServed && (status.json as { data?: { status?: string } })?.data?.status === 'published') return undefined;
		} else if (isServed) {
			return undefined;
		}
		if (Date.now() > deadline) throw new Error(`n8n never reported workflow ${workflowId} published and served`);
	}
}

/** The error of a trigger that failed to activate, from n8n 2.x's publication status; undefined while it is not failed. */
function publicationFailure(body: unknown): string | undefined {
	const data = (body as { data?: { status?: string; triggers?: Array<{ status?: string; errorMessage?: string | null }> } })?.data;
	if (data?.status !== 'failed' && data?.status !== 'partial') return undefined;
	return (data.triggers ?? [])
		.filter((trigger) => trigger.status === 'failed')
		.map((trigger) => trigger.errorMessage ?? '')
		.join('; ');
}

/** Runs one of the package's shipped SQL files (from the installed package) on the app database. */
export async function runShippedSql(h: Harness, file: string): Promise<void> {
	const shipped = path.join(h.state.packageDir, 'dist', 'sql', file);
	await h.appQuery(fs.readFileSync(fs.existsSync(shipped) ? shipped : path.join(stack.REPO_ROOT, 'sql', file), 'utf8'));
}

/**
 * The shipped ordered-webhook template (Reserve → Order Guard → upsert a customer) published with a
 * webhook of its own, after the tables it needs: the Order Guard's (from the installed package's SQL)
 * and the business table `customers`, optionally with an Error Workflow. Returns { url, workflowId }.
 */
export async function publishOrderedWebhook(
	h: Harness,
	label: string,
	{ errorWorkflow }: { errorWorkflow?: string } = {},
): Promise<PublishedWebhook> {
	await runShippedSql(h, 'postgres/migrations/order/001_create_table.sql');
	await h.appQuery('CREATE TABLE IF NOT EXISTS customers (id text PRIMARY KEY, email text, version bigint NOT NULL)');
	const { workflow, webhookPath } = withOwnWebhook(readShippedTemplate('ordered-webhook.json'), label);
	// Settings → Error Workflow, as the template's Read me asks.
	if (errorWorkflow) workflow.settings = { ...workflow.settings, errorWorkflow };
	const workflowId = await publishWorkflow(h, workflow, webhookPath);
	return { url: `${h.state.baseUrl}/webhook/${webhookPath}`, workflowId };
}

/**
 * Runs a saved workflow from its Manual Trigger `triggerName` as the editor does; resolves with the
 * finished execution and the id n8n answered the run with.
 */
export async function runFromManualTrigger(
	h: Harness,
	workflowId: string,
	triggerName: string,
): Promise<{ execution: Execution; executionId: number }> {
	const mark = await h.executionMark();
	const rest = h.rest();
	await rest.ownerLogin(OWNER);
	const saved = await rest.call('GET', `/workflows/${workflowId}`);
	const body = manualRunBody(h.state.n8nVersion, { triggerName, workflow: saved.json?.data });
	const started = await rest.call('POST', `/workflows/${workflowId}/run`, body);
	if (started.status !== 200 || typeof started.json?.data?.executionId !== 'string') {
		throw new Error(`running the workflow failed (${started.status}): ${started.text.slice(0, 300)}`);
	}
	const [execution] = await h.waitForExecutions(workflowId, mark, 1, { timeoutMs: 120000 });
	return { execution, executionId: Number(started.json.data.executionId) };
}

/** The app database's connection, as a Postgres credential's data (the test's own credentials point there). */
export function appCredentialData(h: Harness): {
	host: string;
	port: number;
	database: string;
	user: string;
	password: string;
	ssl: string;
} {
	const app = new URL(h.state.appUrl);
	return {
		host: app.hostname,
		port: Number(app.port),
		database: app.pathname.slice(1),
		user: decodeURIComponent(app.username),
		password: decodeURIComponent(app.password),
		ssl: 'disable',
	};
}

/** Creates a credential as the owner, as the editor does; returns the reference a node stores ({ id, name }). */
export async function createCredential(h: Harness, type: string, data: Record<string, unknown>): Promise<{ id: string; name: string }> {
	const rest = h.rest();
	await rest.ownerLogin(OWNER);
	const created = await rest.call('POST', '/credentials', { name: `e2e ${type} ${randomUUID().slice(0, 8)}`, type, data });
	if (created.status !== 200) throw new Error(`creating a ${type} credential failed (${created.status}): ${created.text.slice(0, 300)}`);
	return { id: created.json.data.id, name: created.json.data.name };
}

/** A credential's stored (encrypted) data in n8n's database. */
export async function credentialData(h: Harness, id: string): Promise<string> {
	return (await h.n8nQuery('SELECT data FROM credentials_entity WHERE id = $1', [id])).rows[0].data;
}

/** Stored data that does not decrypt: n8n then says "Credentials could not be decrypted". */
export const UNREADABLE_CREDENTIAL_DATA = 'U2FsdGVkX1+not+what+was+encrypted+here==';

/** Makes a credential unreadable to n8n (UNREADABLE_CREDENTIAL_DATA); returns what puts its data back. */
export async function makeCredentialUnreadable(h: Harness, id: string): Promise<() => Promise<void>> {
	const readable = await credentialData(h, id);
	await h.n8nQuery('UPDATE credentials_entity SET data = $1 WHERE id = $2', [UNREADABLE_CREDENTIAL_DATA, id]);
	return async () => {
		await h.n8nQuery('UPDATE credentials_entity SET data = $1 WHERE id = $2', [readable, id]);
	};
}

/** Stops a running execution as the editor's Stop button does; n8n's answer. */
export async function stopExecution(h: Harness, executionId: string): Promise<RestResponse> {
	const rest = h.rest();
	await rest.ownerLogin(OWNER);
	return await rest.call('POST', `/executions/${executionId}/stop`);
}

/**
 * n8n's Retry on a failed execution, as the editor's "Retry with original workflow" does: it runs
 * the failed node again from the saved data; resolves with n8n's answer once the retry ended.
 */
export async function retryExecution(h: Harness, executionId: string): Promise<RestResponse> {
	const rest = h.rest();
	await rest.ownerLogin(OWNER);
	return await rest.call('POST', `/executions/${executionId}/retry`, { loadWorkflow: false });
}

/** An execution's custom data (what the executions list shows and filters by), from n8n's database. */
export async function executionCustomData(h: Harness, executionId: string | number): Promise<Record<string, string>> {
	const { rows } = await h.n8nQuery('SELECT key, value FROM execution_metadata WHERE "executionId" = $1', [executionId]);
	return Object.fromEntries(rows.map((row) => [row.key, row.value]));
}
