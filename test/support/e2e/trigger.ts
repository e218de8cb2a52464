// The Idempotent Webhook trigger's template (templates/idempotent-webhook-trigger.json) in the
// running n8n: published per test file with the one change a user makes — the business step's URL
// pointed at their API (here the test's sink) — on a webhook path of its own. The trigger is at the
// version a new node gets (3): each workflow's keys apart, Store: Automatic.
import { randomUUID } from 'node:crypto';
import { readShippedTemplate, freshWebhookPath, publishWorkflow } from './restWorkflows';
import { keyStates } from './embedded';
import type { DeliveryAnswer, Harness } from './harness';
import { deliverAll, type ProviderRun } from './provider';
import type { Json, NodeChange, WorkflowJson } from './workflows';

export const TRIGGER_TEMPLATE = 'idempotent-webhook-trigger.json';
export const TRIGGER = {
	node: 'Idempotent Webhook',
	business: 'Business Step (call your API)',
	type: 'n8n-nodes-idempotency.idempotentWebhook',
};

/**
 * The key the template's trigger stores for an event, and sends on as the step's Idempotency-Key:
 * `wf:<workflowId>:` (each workflow's keys apart) before the key Key Source derives — `evt:<id>` for
 * an event id, or `{ key }` for one derived otherwise (a body hash: `sha256:…`).
 */
export function triggerKey(workflowId: string, event: string | { key: string }): string {
	return `wf:${workflowId}:${typeof event === 'string' ? `evt:${event}` : event.key}`;
}

/**
 * How long a burst's sender retries. n8n can fail to start the execution after the trigger reserved
 * the key (its database pool timing out on a loaded machine, in queue mode's webhook process and on
 * one process too: n8n answers 500); the trigger cannot tell, so the key waits for the template's
 * 300 s lease and the first retry after it runs the event (docs/idempotent-webhook.md). The budget
 * outlasts the lease and that run on a loaded machine (a run that began at 300 s had not answered
 * by 330 s).
 */
const BURST_BUDGET_MS = 420_000;
/** A burst test's jest timeout: the sender's budget and the checks after it. */
export const BURST_TEST_TIMEOUT_MS = BURST_BUDGET_MS + 90_000;

/** 100 copies of one event sent at once to `url`, each retried (backoff 0.5–3 s) until a 2xx or the budget ends. */
export async function deliverBurst(url: string, event: { id: string; type: string }): Promise<ProviderRun> {
	return await deliverAll({
		url,
		plan: { eventIds: [event.id], deliveries: Array.from({ length: 100 }, () => ({ eventId: event.id, forged: false, body: event })) },
		concurrency: 100,
		retry: { firstDelayMs: 500, maxDelayMs: 3000, budgetMs: BURST_BUDGET_MS },
	});
}

/**
 * The key attempts a burst may leave: 1; or 2 once n8n answered a 500, which it does without
 * starting the first execution (the lease ran out, a retry took the key) and also for a copy it
 * failed to route under load (the first execution ran: still 1).
 */
export function burstAttempts(run: ProviderRun): number[] {
	return run.attempts.some((attempt) => attempt.status === 500) ? [1, 2] : [1];
}

/** A key's state as the trigger tests compare it; null when the key is not stored. */
export type TriggerKeyState = { status: string; attempts: number; duplicates: number } | null;

/**
 * { key: { status, attempts, duplicates } } where the template's trigger keeps its keys (Store:
 * Automatic): the embedded file in n8n's folder on one process, the package's table in n8n's own
 * Postgres in queue mode.
 */
export async function triggerKeyStates(h: Harness, keys: string[]): Promise<Record<string, TriggerKeyState>> {
	if (h.topology !== 'queue') return await keyStates(h, keys);
	const { rows: table } = await h.n8nQuery("SELECT to_regclass('public.processed_events') IS NOT NULL AS present");
	const { rows } = table[0].present
		? await h.n8nQuery('SELECT key, status, attempts, duplicate_count FROM processed_events WHERE key = ANY($1)', [keys])
		: { rows: [] };
	const found = new Map(rows.map((row) => [row.key, { status: row.status, attempts: row.attempts, duplicates: row.duplicate_count }]));
	return Object.fromEntries(keys.map((key) => [key, found.get(key) ?? null]));
}

/**
 * Where the trigger's deliveries go: main in one process; in queue mode an `n8n webhook` process
 * (started on first use, in main's user folder: one host), so that the trigger's webhook() runs
 * there and its executions on the workers. Returns { baseUrl, webhookProcess: { pid, url } | null }.
 */
export async function triggerBase(h: Harness): Promise<{ baseUrl: string; webhookProcess: Json }> {
	if (h.topology !== 'queue') return { baseUrl: h.state.baseUrl, webhookProcess: null };
	const webhookProcess = await h.control('POST /ensure-webhook-process');
	return { baseUrl: webhookProcess.url, webhookProcess };
}

/**
 * Publishes a copy of the trigger template calling `apiUrl`; `edit(workflow)` changes the workflow
 * first, `change(node)` each node; `baseUrl` is where its URL points (main unless given). Returns
 * { url, workflowId, webhookPath }.
 */
export async function publishTrigger(
	h: Harness,
	label: string,
	{
		apiUrl,
		baseUrl = h.state.baseUrl,
		change = (node) => node,
		template = TRIGGER_TEMPLATE,
		edit = (workflow) => workflow,
	}: { apiUrl?: string; baseUrl?: string; change?: NodeChange; template?: string; edit?: (workflow: WorkflowJson) => WorkflowJson } = {},
): Promise<{ url: string; workflowId: string; webhookPath: string }> {
	const { workflow, webhookPath } = triggerWorkflow(label, { apiUrl, change, template, edit });
	const workflowId = await publishWorkflow(h, workflow, webhookPath);
	return { url: `${baseUrl}/webhook/${webhookPath}`, workflowId, webhookPath };
}

/** The trigger template as publishTrigger publishes it (a path of its own, the business step at `apiUrl`), not yet saved. */
export function triggerWorkflow(
	label: string,
	{
		apiUrl,
		change = (node) => node,
		template = TRIGGER_TEMPLATE,
		edit = (workflow) => workflow,
	}: { apiUrl?: string; change?: NodeChange; template?: string; edit?: (workflow: WorkflowJson) => WorkflowJson } = {},
): { workflow: WorkflowJson; webhookPath: string } {
	const workflow = edit(readShippedTemplate(template));
	const webhookPath = freshWebhookPath(label);
	workflow.nodes = workflow.nodes
		.map((node) =>
			node.type === TRIGGER.type ? { ...node, webhookId: randomUUID(), parameters: { ...node.parameters, path: webhookPath } } : node,
		)
		.map((node) => (node.name === TRIGGER.business && apiUrl ? { ...node, parameters: { ...node.parameters, url: apiUrl } } : node))
		.map(change);
	return { workflow, webhookPath };
}

/** The trigger's Lease Seconds set to `seconds`, so a crashed delivery's lease ends within a test. */
export function withLeaseSeconds(seconds: number): NodeChange {
	return (node) => (node.type === TRIGGER.type ? { ...node, parameters: { ...node.parameters, leaseSeconds: seconds } } : node);
}

/**
 * A delivery retried like a provider until it is answered 2xx (at most `budgetMs`): every answer, in
 * order. `headers` go with every attempt (a caller's credentials); `sign: false` sends it unsigned.
 */
export async function deliverUntilAccepted(
	h: Harness,
	url: string,
	event: Parameters<Harness['deliver']>[1],
	{ budgetMs = 60000, headers = {}, sign = true }: { budgetMs?: number; headers?: Record<string, string>; sign?: boolean } = {},
): Promise<DeliveryAnswer[]> {
	const answers: DeliveryAnswer[] = [];
	for (const deadline = Date.now() + budgetMs; ; await new Promise((resolve) => setTimeout(resolve, 500))) {
		const answer = await h.deliver(url, event, headers, { sign });
		answers.push(answer);
		if (answer.status >= 200 && answer.status < 300) return answers;
		if (Date.now() > deadline)
			throw new Error(`never accepted: ${JSON.stringify(answers.slice(-3).map((a) => [a.status, a.text.slice(0, 200)]))}`);
	}
}

/** The template with a Wait node (2 hours: n8n puts the execution to wait) between the trigger and the business step. */
export function withWaitBeforeStep(workflow: WorkflowJson): WorkflowJson {
	const wait = {
		id: randomUUID(),
		name: 'Wait',
		type: 'n8n-nodes-base.wait',
		typeVersion: 1.1,
		position: [120, 0],
		webhookId: randomUUID(),
		parameters: { amount: 2, unit: 'hours' },
	};
	return {
		...workflow,
		nodes: [...workflow.nodes, wait],
		connections: {
			[TRIGGER.node]: { main: [[{ node: 'Wait', type: 'main', index: 0 }]] },
			Wait: { main: [[{ node: TRIGGER.business, type: 'main', index: 0 }]] },
		},
	};
}

/** A key as the Postgres store keeps it (processed_events), in the names the embedded store's records use. */
export interface PostgresKeyRecord {
	key: string;
	status: string;
	attempts: number;
	duplicateCount: number;
	nextAttemptAt: string | null;
	deadLetteredAt: string | null;
	lastError: string | null;
}

/** Each of `keys` found in the Postgres store's table (the trigger's Store: Postgres, its default table), by key. */
export async function postgresKeys(h: Harness, keys: string[]): Promise<Record<string, PostgresKeyRecord>> {
	const { rows } = await h.appQuery(
		`SELECT key, status, attempts, duplicate_count AS "duplicateCount", next_attempt_at AS "nextAttemptAt", dead_lettered_at AS "deadLetteredAt", last_error AS "lastError"
		   FROM processed_events WHERE key = ANY($1)`,
		[keys],
	);
	return Object.fromEntries((rows as PostgresKeyRecord[]).map((row) => [row.key, row]));
}
