// The construct matrix in a real n8n: the shapes users build in place of the example business step
// (If, Merge, Wait, Loop Over Items, Execute Workflow, Retry On Fail, Code, …), made of n8n's own
// nodes, whose effect is a call to the test's API (sink.ts: it counts the calls it answered 2xx, per
// event key, and fails a call on demand). Used by the matrix's one table of rows
// (test/e2e/constructs.e2e.test.ts), run by the webhook template and the Idempotent Webhook trigger:
// each row is a workflow published once per front end, events delivered
// by a provider that retries every non-2xx, and what the API, the keys and the answers show.
import { randomUUID } from 'node:crypto';
import { NODE, eventId, type Harness } from './harness';
import { readShippedTemplate, withOwnWebhook, publishWorkflow } from './restWorkflows';
import { publishTrigger, triggerKey, TRIGGER } from './trigger';
import { deliverAll, type Attempt, type RetryOptions } from './provider';
import type { Sink } from './sink';
import type { PublishedWebhook } from './checklist';
import { eventually, within } from './eventually';
import type { Json, WorkflowJson, WorkflowNode } from './workflows';
import { requestOnOwnConnection } from '../stack/ownConnection';

/** One end of a connection between two nodes. */
export interface ConnectionTarget {
	node: string;
	type: string;
	index: number;
}

/** A node's outputs as the workflow's connections list them: `main[output]` is where that output goes. */
export type NodeConnections = Record<string, { main: ConnectionTarget[][] }>;

/**
 * What a row puts in place of the example business step (see templateRow and triggerRow): its
 * nodes, their connections, the nodes after Reserve's New output (or after the trigger), and the
 * options of the webhook template's rows.
 */
export interface RowShape {
	nodes?: WorkflowNode[];
	connections?: NodeConnections;
	heads?: string[];
	batch?: boolean;
	keepExample?: boolean;
	exampleOnError?: string;
	/** The trigger rows only: the trigger's version, parameters and credentials as the user sets them. */
	trigger?: TriggerSettings;
	/** The trigger rows only: the workflow's settings (e.g. its timeout, `executionTimeout` in seconds). */
	settings?: Record<string, unknown>;
	/** The trigger rows with `batch` only: Reserve at n8n's default On Error (Stop Workflow) instead of the webhook template's. */
	reserveStopsOnError?: boolean;
}

/** How a trigger row's Idempotent Webhook differs from the template's: its version, parameters (merged) and credentials (merged; null removes one). */
export interface TriggerSettings {
	typeVersion?: number;
	parameters?: Record<string, unknown>;
	credentials?: Record<string, { id: string; name: string } | null>;
}

/** A row of the matrix: its shape, calling the API at the given URL. */
export interface ConstructRow {
	shape: (apiUrl: string) => RowShape;
}

/** An event a row delivers (one delivery may carry several, as an array). */
export interface RowEvent {
	id: string;
	type?: string;
	failUntil?: number;
	[member: string]: unknown;
}

/** How a row's workflow refuses a shape the package cannot guarantee: the answer's status and outcome, and the key's state after it. */
export interface Refusal {
	status: number;
	outcome: string;
	state: string | null;
}

// The provider of the construct rows: a row's step may keep failing for a while (FAILING_FOR_MS of the
// matrix), retried about every 1.5 s; the budget bounds it, not the count.
export const RETRY = { firstDelayMs: 300, maxDelayMs: 1500, maxAttempts: 60, budgetMs: 90000 };
export const link = (...names: string[]): ConnectionTarget[] => names.map((node) => ({ node, type: 'main', index: 0 }));
export const toInput = (node: string, index: number): ConnectionTarget[] => [{ node, type: 'main', index }];

/** The event's key after a Wait resumed by a call: the Wait passes on that call's data, so the key is read from Reserve's item. */
export const KEY_AFTER_RESUME = "$('Idempotency Reserve').item.json.idempotency.key";

/** The API call's own timeout (the HTTP Request's Timeout option). */
export const CALL_TIMEOUT_MS = 30000;

/**
 * The user's API call, the effect: POST { eventKey } with the key as Idempotency-Key, as the
 * templates' example step. `keyOf` is the expression of the event's key on its input item.
 */
export function callApi(name: string, apiUrl: string, extra: Record<string, unknown> = {}, keyOf = '$json.idempotency.key'): WorkflowNode {
	return {
		name,
		type: 'n8n-nodes-base.httpRequest',
		typeVersion: 4.2,
		parameters: {
			method: 'POST',
			url: apiUrl,
			sendHeaders: true,
			headerParameters: { parameters: [{ name: 'Idempotency-Key', value: `={{ ${keyOf} }}` }] },
			sendBody: true,
			specifyBody: 'json',
			jsonBody: `={{ JSON.stringify({ eventKey: ${keyOf} }) }}`,
			// A call the test holds outlasts a copy delivered meanwhile, even on a loaded machine.
			options: { timeout: CALL_TIMEOUT_MS },
		},
		...extra,
	};
}

/**
 * An HTTP call that sends the Wait's resume URL to the API (as an approval link): not an effect, the
 * API files it under `link:<key>`. `keyOf` is the expression of the event's key on its input item.
 */
export function sendResumeLink(name: string, apiUrl: string, keyOf = '$json.idempotency.key'): WorkflowNode {
	const call = callApi(name, apiUrl);
	return {
		...call,
		parameters: {
			...call.parameters,
			headerParameters: { parameters: [] },
			sendHeaders: false,
			jsonBody: `={{ JSON.stringify({ eventKey: "link:" + ${keyOf}, resumeUrl: $execution.resumeUrl }) }}`,
		},
		onError: 'continueErrorOutput',
	};
}

/** If: true when the event's `flag` member is true (the event is the item's body, or the item itself after a Split Out). */
export function ifFlag(name: string, flag: string, extra: Record<string, unknown> = {}): WorkflowNode {
	return {
		name,
		type: 'n8n-nodes-base.if',
		typeVersion: 2.2,
		parameters: {
			conditions: {
				options: { caseSensitive: true, leftValue: '', typeValidation: 'loose', version: 2 },
				conditions: [
					{
						id: randomUUID(),
						leftValue: `={{ ($json.body ?? $json).${flag} === true }}`,
						rightValue: '',
						operator: { type: 'boolean', operation: 'true', singleValue: true },
					},
				],
				combinator: 'and',
			},
			looseTypeValidation: true,
			options: {},
		},
		...extra,
	};
}

export const noOp = (name: string, extra: Record<string, unknown> = {}): WorkflowNode => ({
	name,
	type: 'n8n-nodes-base.noOp',
	typeVersion: 1,
	parameters: {},
	...extra,
});
export const merge = (name: string, parameters: Record<string, unknown>): WorkflowNode => ({
	name,
	type: 'n8n-nodes-base.merge',
	typeVersion: 3,
	parameters,
});
export const MERGE_MODES: Record<string, Record<string, unknown>> = {
	append: { mode: 'append' },
	combine: { mode: 'combine', combineBy: 'combineByPosition', options: {} },
	'wait for both': { mode: 'chooseBranch', chooseBranchMode: 'waitForAll', output: 'specifiedInput', useDataOfInput: 2 },
};
export const waitFor = (name: string, amount: number, unit: 'seconds' | 'minutes' | 'hours'): WorkflowNode => ({
	name,
	type: 'n8n-nodes-base.wait',
	typeVersion: 1.1,
	webhookId: randomUUID(),
	parameters: { resume: 'timeInterval', amount, unit },
});
/** Under 65 s n8n's Wait sleeps inside the run; from 65 s it puts the execution to wait. */
export const waitSeconds = (name: string, seconds: number): WorkflowNode => waitFor(name, seconds, 'seconds');
export const waitForCall = (name: string): WorkflowNode => ({
	name,
	type: 'n8n-nodes-base.wait',
	typeVersion: 1.1,
	webhookId: randomUUID(),
	parameters: { resume: 'webhook', httpMethod: 'POST', options: {} },
});
export const loop = (name: string): WorkflowNode => ({
	name,
	type: 'n8n-nodes-base.splitInBatches',
	typeVersion: 3,
	parameters: { batchSize: 1, options: {} },
});

/** A Code node run once per item that throws while the event's `failUntil` (ms) lies ahead: it fails, then works on the retry. */
export function codeFailingUntil(name: string, extra: Record<string, unknown> = {}): WorkflowNode {
	return {
		name,
		type: 'n8n-nodes-base.code',
		typeVersion: 2,
		parameters: {
			mode: 'runOnceForEachItem',
			jsCode:
				"const event = $json.body ?? $json;\nif (event.failUntil && Date.now() < event.failUntil) throw new Error('the step refused ' + event.id);\nreturn { json: $json };",
		},
		...extra,
	};
}

export const codeReturningNothing = (name: string, extra: Record<string, unknown> = {}): WorkflowNode => ({
	name,
	type: 'n8n-nodes-base.code',
	typeVersion: 2,
	parameters: { jsCode: 'return [];' },
	...extra,
});

/**
 * Execute Workflow running a sub-workflow given as JSON (Execute Workflow Trigger → the API call at
 * default settings); `waitInside` puts a Wait (2 hours) before the sub-workflow's call; `auditBeside`
 * sets the call to Continue (using error output), that output unconnected, and puts an audit node
 * (No Operation) beside it, below, which n8n runs after it: the sub-workflow's last node, whose item
 * is its result whatever the call did.
 */
export function executeSubWorkflow(
	name: string,
	apiUrl: string,
	{ wait, waitInside = false, auditBeside = false }: { wait: boolean; waitInside?: boolean; auditBeside?: boolean },
): WorkflowNode {
	const trigger = {
		id: randomUUID(),
		name: 'When Executed by Another Workflow',
		type: 'n8n-nodes-base.executeWorkflowTrigger',
		typeVersion: 1.1,
		position: [0, 0],
		parameters: { inputSource: 'passthrough' },
	};
	const call = {
		id: randomUUID(),
		position: [440, 0],
		...callApi('Sub-workflow: call your API', apiUrl, auditBeside ? { onError: 'continueErrorOutput' } : {}),
	};
	const pause = { ...waitFor('Sub-workflow: wait', 2, 'hours'), id: randomUUID(), position: [220, 0] };
	const chain = waitInside ? [trigger, pause, call] : [trigger, call];
	const connections: Record<string, { main: unknown[] }> = Object.fromEntries(
		chain.slice(0, -1).map((node, index) => [node.name, { main: [link(chain[index + 1].name)] }]),
	);
	const audit = {
		id: randomUUID(),
		name: 'Sub-workflow: audit log',
		type: 'n8n-nodes-base.noOp',
		typeVersion: 1,
		position: [440, 200],
		parameters: {},
	};
	if (auditBeside) connections[trigger.name] = { main: [link(call.name, audit.name)] };
	const workflowJson = JSON.stringify({
		nodes: auditBeside ? [...chain, audit] : chain,
		connections,
		settings: { executionOrder: 'v1' },
	});
	return {
		name,
		type: 'n8n-nodes-base.executeWorkflow',
		typeVersion: 1.2,
		parameters: { source: 'parameter', workflowJson, mode: 'once', options: wait ? {} : { waitForSubWorkflow: false } },
		// At "Continue (using error output)" n8n overwrites the sub-workflow's second output, and the package refuses it.
		onError: 'continueRegularOutput',
	};
}

/** Slack → Send and Wait for Response (an approval in a channel), as the editor saves it; `credential` is a Slack API credential. */
export function slackSendAndWait(name: string, credential: { id: string; name: string }): WorkflowNode {
	return {
		name,
		type: 'n8n-nodes-base.slack',
		typeVersion: 2.3,
		webhookId: randomUUID(),
		parameters: {
			resource: 'message',
			operation: 'sendAndWait',
			select: 'channel',
			channelId: { __rl: true, mode: 'id', value: 'C0E2E000001' },
			message: '={{ "Approve " + $json.body.id + "?" }}',
			approvalOptions: { values: { approvalType: 'single' } },
			options: {},
		},
		credentials: { slackApi: credential },
	};
}

/** Form: a next form page (one field) shown to whoever opens the execution's form link. */
export const formPage = (name: string): WorkflowNode => ({
	name,
	type: 'n8n-nodes-base.form',
	typeVersion: 1,
	webhookId: randomUUID(),
	parameters: { formFields: { values: [{ fieldLabel: 'Approve' }] }, options: {} },
});

/** A Code node run once for all items that returns them in reverse order without pairedItem, as users sort: n8n pairs them by position. */
export const codeReversingItems = (name: string, extra: Record<string, unknown> = {}): WorkflowNode => ({
	name,
	type: 'n8n-nodes-base.code',
	typeVersion: 2,
	parameters: { mode: 'runOnceForAllItems', jsCode: 'return $input.all().reverse().map((item) => ({ json: item.json }));' },
	...extra,
});

/** Aggregate at its default (Individual Fields): one item with the list of `field` of every item. */
export const aggregateField = (name: string, field: string): WorkflowNode => ({
	name,
	type: 'n8n-nodes-base.aggregate',
	typeVersion: 1,
	parameters: { fieldsToAggregate: { fieldToAggregate: [{ fieldToAggregate: field, renameField: false }] }, options: {} },
});

/** Split Out of a list field: one item per entry, carrying that field only. */
export const splitOutField = (name: string, field: string): WorkflowNode => ({
	name,
	type: 'n8n-nodes-base.splitOut',
	typeVersion: 1,
	parameters: { fieldToSplitOut: field, include: 'noOtherFields', options: {} },
});

/** The key a call made once for all of a run's events sends (see callApiForAll): `batch:` and their keys joined by `+`. */
export const BATCH_KEY_OF_ALL = "'batch:' + $input.all().map((item) => item.json.idempotency.key).join('+')";
export const batchKey = (keys: string[]): string => `batch:${keys.join('+')}`;

/** The API called once for all the items the node gets (Execute Once), keyed by all their keys (batchKey). */
export const callApiForAll = (name: string, apiUrl: string, extra: Record<string, unknown> = {}): WorkflowNode =>
	callApi(name, apiUrl, { executeOnce: true, ...extra }, BATCH_KEY_OF_ALL);

export function respondToWebhook(name: string): WorkflowNode {
	return {
		name,
		type: 'n8n-nodes-base.respondToWebhook',
		typeVersion: 1.5,
		parameters: { respondWith: 'json', responseBody: '={{ { received: true } }}', options: { responseCode: 200 } },
	};
}

/** Split Out of the delivery's array body: one item per event, as a batch sender (SendGrid) needs. */
const splitBody = (name: string): WorkflowNode => ({
	name,
	type: 'n8n-nodes-base.splitOut',
	typeVersion: 1,
	parameters: { fieldToSplitOut: 'body', options: {} },
});

function placed(nodes: WorkflowNode[], [x, y]: [number, number]): WorkflowNode[] {
	return nodes.map((node, index) => ({ id: randomUUID(), position: [x + (index % 6) * 220, y + Math.floor(index / 6) * 160], ...node }));
}

/**
 * The Postgres webhook template (idempotent-webhook.json) edited as a user does: the example business
 * step replaced by `nodes`, `heads` connected to Reserve's New output above Settle (or Settle chained
 * after `settleAfter`), `connections` among them; `batch` puts a Split Out of the body between the
 * signature check and Reserve, keyed by each event's `id`; `keepExample` keeps the example step and
 * sets its On Error (`exampleOnError`, undefined: n8n's default).
 */
export function templateRow({
	nodes = [],
	connections = {},
	heads = [],
	batch = false,
	keepExample = false,
	exampleOnError,
}: RowShape): WorkflowJson {
	const template = readShippedTemplate('idempotent-webhook.json');
	const example = template.nodes.find((node) => node.name === NODE.business);
	if (keepExample) {
		delete example.onError;
		if (exampleOnError) example.onError = exampleOnError;
	}
	const userNodes = placed(nodes, [example.position[0], example.position[1] - 200]);
	template.nodes = [...template.nodes.filter((node) => keepExample || node !== example), ...userNodes];
	const reserve = template.connections[NODE.reserve].main;
	const settleLink = link(NODE.settle);
	reserve[0] = [...(keepExample ? link(NODE.business) : []), ...link(...heads), ...settleLink];
	Object.assign(template.connections, connections);
	if (batch) {
		const split = placed([splitBody('Split Out Events')], [300, 300])[0];
		template.nodes.push(split);
		template.connections[NODE.verify].main[0] = link(split.name);
		template.connections[split.name] = { main: [link(NODE.reserve)] };
		template.nodes = template.nodes.map((node) =>
			node.name === NODE.reserve
				? { ...node, parameters: { ...node.parameters, keySource: 'field', keyField: 'id', keyPrefix: 'evt:' } }
				: node,
		);
	}
	return template;
}

/**
 * The Postgres trigger template (idempotent-webhook-trigger-postgres.json) with its example step
 * replaced by `nodes`, `heads` after the trigger. `batch`: a delivery carrying several events gets a
 * key per event, as the webhook template gives them: Split Out of the body → Idempotency Reserve
 * (Key Source Field `id`) → the step, with Settle beside it (both taken from idempotent-webhook.json;
 * `reserveStopsOnError`: Reserve at n8n's default On Error).
 */
export function triggerRow({
	nodes = [],
	connections = {},
	heads = [],
	batch = false,
	trigger,
	settings,
	reserveStopsOnError = false,
}: RowShape): (workflow: WorkflowJson) => WorkflowJson {
	return (workflow) => {
		if (trigger) workflow = withTriggerSettings(workflow, trigger);
		if (settings) workflow = { ...workflow, settings: { ...workflow.settings, ...settings } };
		const example = workflow.nodes.find((node) => node.name === TRIGGER.business);
		const userNodes = placed(nodes, [example.position[0] + (batch ? 440 : 0), example.position[1]]);
		const added: WorkflowNode[] = [];
		const wiring: NodeConnections = { [TRIGGER.node]: { main: [link(...heads)] } };
		if (batch) {
			const template = readShippedTemplate('idempotent-webhook.json');
			const { onError, ...reserve } = template.nodes.find((node) => node.name === NODE.reserve);
			if (!reserveStopsOnError) reserve.onError = onError;
			const settle = template.nodes.find((node) => node.name === NODE.settle);
			added.push(
				...placed([splitBody('Split Out Events')], example.position),
				{
					...reserve,
					position: [example.position[0] + 220, example.position[1]],
					parameters: { ...reserve.parameters, keySource: 'field', keyField: 'id', keyPrefix: 'evt:' },
				},
				{ ...settle, position: [example.position[0] + 440, example.position[1] + 300] },
			);
			wiring[TRIGGER.node] = { main: [link('Split Out Events')] };
			wiring['Split Out Events'] = { main: [link(NODE.reserve)] };
			wiring[NODE.reserve] = { main: [link(...heads, NODE.settle), [], [], []] };
		}
		return {
			...workflow,
			nodes: [...workflow.nodes.filter((node) => node !== example), ...added, ...userNodes],
			connections: { ...wiring, ...connections },
		};
	};
}

/** The template's trigger with the row's version, parameters and credentials. */
function withTriggerSettings(workflow: WorkflowJson, { typeVersion, parameters = {}, credentials = {} }: TriggerSettings): WorkflowJson {
	const nodes = workflow.nodes.map((node) => {
		if (node.name !== TRIGGER.node) return node;
		const merged: Record<string, unknown> = { ...node.credentials, ...credentials };
		for (const [type, credential] of Object.entries(merged)) if (credential === null) delete merged[type];
		const changed = { ...node, parameters: { ...node.parameters, ...parameters }, credentials: merged };
		if (typeVersion !== undefined) changed.typeVersion = typeVersion;
		return changed;
	});
	return { ...workflow, nodes };
}

/** How many rows are published at once: n8n publishes each through its own activation, and a row waits for its webhook. */
const PUBLISHING_LANES = 4;

/** Publishes every row's workflow, a few at a time (the owner's session shared): { [row]: { url, workflowId } }. */
export async function publishRows(
	h: Harness,
	rows: Record<string, ConstructRow>,
	apiUrl: string,
	kind: 'template' | 'trigger',
): Promise<Record<string, PublishedWebhook>> {
	const published: Record<string, PublishedWebhook> = {};
	const entries = Object.entries(rows);
	const publishOne = async (index: number) => {
		const [name, row] = entries[index];
		const label = `mx${kind}${index}`;
		if (kind === 'trigger') {
			try {
				published[name] = await publishTrigger(h, label, {
					template: 'idempotent-webhook-trigger-postgres.json',
					edit: triggerRow(row.shape(apiUrl)),
				});
			} catch (error) {
				// What the trigger cannot settle is refused at publish: the row checks the refusal.
				const message = error instanceof Error ? error.message : String(error);
				if (!message.startsWith('publishing the workflow failed: ')) throw error;
				published[name] = { url: '', workflowId: '', publishRefusal: message };
			}
			return;
		}
		const { workflow, webhookPath } = withOwnWebhook(templateRow(row.shape(apiUrl)), label);
		const workflowId = await publishWorkflow(h, workflow, webhookPath);
		published[name] = { url: `${h.state.baseUrl}/webhook/${webhookPath}`, workflowId };
	};
	let next = 0;
	await Promise.all(
		Array.from({ length: Math.min(PUBLISHING_LANES, entries.length) }, async () => {
			while (next < entries.length) await publishOne(next++);
		}),
	);
	return published;
}

/**
 * Delivers each body once, retried like a provider until 2xx: { answers: { [eventId]: [status, …] },
 * gaveUp: [eventId] }. `onAttempt(attempt)` sees every answer.
 */
export async function deliverRetried(
	url: string,
	bodies: Array<RowEvent | RowEvent[]>,
	{ retry = RETRY, onAttempt }: { retry?: Partial<RetryOptions>; onAttempt?: (attempt: Attempt) => void | Promise<void> } = {},
): Promise<{ answers: Record<string, number[]>; gaveUp: string[]; attempts: Attempt[] }> {
	const deliveries = bodies.map((body) => ({ eventId: Array.isArray(body) ? body.map((e) => e.id).join('+') : body.id, body }));
	const run = await deliverAll({ url, plan: { deliveries }, concurrency: deliveries.length, retry: { ...RETRY, ...retry }, onAttempt });
	const answers: Record<string, number[]> = {};
	for (const attempt of [...run.attempts].sort((a, b) => a.at - b.at)) (answers[attempt.eventId] ??= []).push(attempt.status);
	return { answers, gaveUp: run.deliveries.filter((d) => d.gaveUp).map((d) => d.eventId), attempts: run.attempts };
}

/** A key's row in the Postgres key table, as the rows read it. */
export interface KeyRow {
	status: string;
	attempts: number;
	lastError: string | null;
	/** The answer stored with the key (the trigger's: replayed to copies), as the table holds it. */
	response: Json | null;
	/** The execution that holds or held the key, as the store recorded it. */
	executionId: string | null;
}

/** { key: { status, attempts, lastError, response, executionId } } from the Postgres key table (absent keys: null). */
export async function keyRows(h: Harness, keys: string[]): Promise<Record<string, KeyRow | null>> {
	const { rows } = await h.appQuery(
		'SELECT key, status, attempts, last_error, response, execution_id FROM processed_events WHERE key = ANY($1)',
		[keys],
	);
	const found: Record<string, KeyRow> = Object.fromEntries(
		rows.map((row) => [
			row.key,
			{ status: row.status, attempts: row.attempts, lastError: row.last_error, response: row.response, executionId: row.execution_id },
		]),
	);
	return Object.fromEntries(keys.map((key) => [key, found[key] ?? null]));
}

/** The answers of an event whose effect fails once, then works: 500, then 200 on the provider's retry. */
export const FAILED_THEN_ACCEPTED = [500, 200];

/**
 * What a row does and checks against one published workflow at `url`: deliveries retried like a
 * provider, the effects the API counted per event, the keys' states, and the usual expectations.
 * A refusal is the webhook template's (503, nothing reserved) unless `refusal` says otherwise.
 */
/** What a row's test uses: see rowContext. */
export interface RowContext {
	h: Harness;
	api: Sink;
	url: string;
	/** The key the event is stored under and the API called with (see rowKeyOf). */
	keyOf: (event: RowEvent) => string;
	deliver: (bodies: Array<RowEvent | RowEvent[]>, options?: Parameters<typeof deliverRetried>[2]) => ReturnType<typeof deliverRetried>;
	effects: (events: RowEvent[]) => number[];
	states: (events: RowEvent[]) => Promise<Array<string | null>>;
	attempts: (events: RowEvent[]) => Promise<Array<number | null>>;
	expectOneEffect: (event: RowEvent) => Promise<void>;
	expectFailedOnceThenOneEffect: (event: RowEvent) => Promise<void>;
	expectRefused: (event: RowEvent, options: { reason: RegExp | string }) => Promise<void>;
	expectFailingUntilThenOneEffect: (event: RowEvent) => Promise<void>;
	expectBatchFailedOnceThenOneEffectEach: (
		label: string,
		arrange: (events: RowEvent[]) => void,
		options?: { failUntilForSecond?: number },
	) => Promise<void>;
	expectResumedOnce: (event: RowEvent, options: { effectsWhileWaiting: number }) => Promise<void>;
}

/**
 * The key a row's events are stored and called under: the trigger's own, of its workflow (triggerKey),
 * unless the row keys them with Reserve (the webhook template; a Split Out then Reserve behind the
 * trigger, Key Source Field `id` with prefix `evt:`) or shares keys across workflows (the trigger at
 * version 1, or Share Keys Across Workflows on): then `evt:<id>`.
 */
export function rowKeyOf(kind: 'template' | 'trigger', shape: RowShape, workflowId: string): (event: RowEvent) => string {
	const options = shape.trigger?.parameters?.options as { shareKeysAcrossWorkflows?: boolean } | undefined;
	const shared = kind === 'template' || shape.batch || shape.trigger?.typeVersion === 1 || options?.shareKeysAcrossWorkflows === true;
	return shared ? (event) => `evt:${event.id}` : (event) => triggerKey(workflowId, event.id);
}

export function rowContext(
	h: Harness,
	api: Sink,
	{ url, workflowId, publishRefusal }: PublishedWebhook,
	keyOf: (event: RowEvent) => string,
	refusal: Refusal = { status: 503, outcome: 'not_reserved', state: null },
): RowContext {
	const ctx: RowContext = {
		h,
		api,
		url,
		keyOf,
		deliver: (bodies, options) => deliverRetried(url, bodies, options),
		effects: (events) => events.map((event) => api.calls(keyOf(event))),
		states: async (events) => Object.values(await keyRows(h, events.map(keyOf))).map((row) => row?.status ?? null),
		attempts: async (events) => Object.values(await keyRows(h, events.map(keyOf))).map((row) => row?.attempts ?? null),
		async expectOneEffect(event) {
			const { answers, gaveUp } = await ctx.deliver([event]);
			expect(gaveUp).toEqual([]);
			expect(answers[event.id]).toEqual([200]);
			expect(ctx.effects([event])).toEqual([1]);
			expect(await ctx.states([event])).toEqual(['completed']);
		},
		async expectFailedOnceThenOneEffect(event) {
			const { answers, gaveUp, attempts } = await ctx.deliver([event]);
			expect(gaveUp).toEqual([]);
			// A connection error is answer 0: its reason is shown beside the answers when they differ.
			const connectionErrors = attempts.filter((attempt) => attempt.status === 0).map((attempt) => attempt.error);
			expect({ answers: answers[event.id], connectionErrors }).toEqual({ answers: FAILED_THEN_ACCEPTED, connectionErrors: [] });
			expect(ctx.effects([event])).toEqual([1]);
			expect(await ctx.states([event])).toEqual(['completed']);
			expect(await ctx.attempts([event])).toEqual([2]);
		},
		/** Delivered once: refused before any effect, the reason in the answer. */
		async expectRefused(event, { reason }) {
			if (publishRefusal !== undefined) {
				// Refused before any delivery: nothing is served, so nothing runs or is reserved.
				expect(publishRefusal).toMatch(reason);
				expect(publishRefusal).toMatch(/The workflow was not published/);
				expect(ctx.effects([event])).toEqual([0]);
				expect(await ctx.states([event])).toEqual([null]);
				return;
			}
			const answer = await h.deliver(url, event);
			expect([answer.status, answer.outcome]).toEqual([refusal.status, refusal.outcome]);
			// The reason is in the answer (the webhook template's 503) or with the failed key (the trigger's 500).
			const [row] = Object.values(await keyRows(h, [keyOf(event)]));
			expect(`${answer.text} ${row?.lastError ?? ''}`).toMatch(reason);
			expect(ctx.effects([event])).toEqual([0]);
			expect(await ctx.states([event])).toEqual([refusal.state]);
		},
		/** The step fails while the event's `failUntil` lies ahead: 500 until then, then 200; one effect. */
		async expectFailingUntilThenOneEffect(event) {
			const { answers, gaveUp } = await ctx.deliver([event]);
			expect(gaveUp).toEqual([]);
			expect(answers[event.id][0]).toBe(500);
			expect(answers[event.id].at(-1)).toBe(200);
			expect(answers[event.id].slice(0, -1).every((status) => status === 500)).toBe(true);
			expect(ctx.effects([event])).toEqual([1]);
			expect(await ctx.states([event])).toEqual(['completed']);
		},
		/** Three events in one delivery; `arrange(events)` makes the second fail once: 500 (the delivery retried), then 200, one effect each. */
		async expectBatchFailedOnceThenOneEffectEach(label, arrange, { failUntilForSecond } = {}) {
			const events: RowEvent[] = [0, 1, 2].map((i) => ({
				id: eventId(`${label}_${i}`),
				type: 'e2e.batch',
				...(i === 1 && failUntilForSecond ? { failUntil: Date.now() + failUntilForSecond } : {}),
			}));
			arrange(events);
			const { answers, gaveUp } = await ctx.deliver([events]);
			const delivery = events.map((e) => e.id).join('+');
			expect(gaveUp).toEqual([]);
			expect(answers[delivery][0]).toBe(500);
			expect(answers[delivery].at(-1)).toBe(200);
			expect(ctx.effects(events)).toEqual([1, 1, 1]);
			expect(await ctx.states(events)).toEqual(['completed', 'completed', 'completed']);
		},
		/** Delivered, the execution waits for a call to the resume URL it sent the API; resumed: 200, one effect, completed. */
		async expectResumedOnce(event, { effectsWhileWaiting }) {
			const key = keyOf(event);
			const delivering = ctx.deliver([event]);
			let link: ReturnType<Sink['log']>[number] | undefined;
			for (const deadline = Date.now() + 60000; !(link = api.log().find((call) => call.key === `link:${key}`)); ) {
				if (Date.now() > deadline) throw new Error(`the workflow never sent its resume URL: ${JSON.stringify(await delivering)}`);
				await new Promise((resolve) => setTimeout(resolve, 200));
			}
			// The execution waits: the key held (one process: the provider's request still open).
			await new Promise((resolve) => setTimeout(resolve, 500));
			expect(await ctx.states([event])).toEqual(['processing']);
			expect(ctx.effects([event])).toEqual([effectsWhileWaiting]);
			// The resume URL as the sender reaches n8n (a queue-mode worker names its own default host).
			const resumeUrl = new URL(link.body.resumeUrl);
			const resumeAt = `${h.state.baseUrl}${resumeUrl.pathname}${resumeUrl.search}`;
			const resumed = await resumeWhenWaiting(resumeAt);
			expect(resumed.status).toBe(200);
			const { answers, gaveUp } = await delivering;
			if (h.topology === 'queue') {
				// In queue mode the delivery is answered 409 when the execution starts waiting (n8n would answer
				// 200 before the resumed run ends); the provider's retries are In Progress until it completed the key.
				expect({ first: answers[event.id][0], last: answers[event.id].at(-1), gaveUp }).toEqual({ first: 409, last: 200, gaveUp: [] });
			} else {
				// On a failure, n8n's record of each execution says where it went.
				const executions =
					answers[event.id].length === 1 ? [] : (await h.executions(workflowId, 0)).map((e) => [e.id, e.status, e.nodesRun.join(' > ')]);
				expect({ answers: answers[event.id], gaveUp, executions }).toEqual({ answers: [200], gaveUp: [], executions: [] });
			}
			expect(ctx.effects([event])).toEqual([1]);
			expect(await ctx.states([event])).toEqual(['completed']);
		},
	};
	return ctx;
}

/* What the trigger rows check beyond the usual expectations ------------------------------------ */

/** Two events for one delivery, in order. */
export function twoEvents(label: string): RowEvent[] {
	return [0, 1].map((i) => ({ id: eventId(`${label}_${i}`), type: 'e2e.batch' }));
}

/**
 * Calls a resume URL as the person approving would, once n8n has put the execution to wait. The
 * workflow sends the URL from the node before its Wait: on a busy machine the call can reach n8n
 * before the Wait has saved the execution as waiting, and n8n answers 409 ("is running already")
 * without resuming anything; that answer is retried, any other is returned.
 */
async function resumeWhenWaiting(url: string): Promise<{ status: number; text: string }> {
	const stillRunning = ({ status, text }: { status: number; text: string }) => status === 409 && text.includes('is running already');
	return await eventually(
		() => requestOnOwnConnection(url, { headers: { 'content-type': 'application/json' }, body: '{"approved":true}' }),
		(answer) => !stillRunning(answer),
		{ timeoutMs: 30_000 },
	);
}

/**
 * Several events in one delivery that Idempotency Reserve refuses when it runs (the refusal depends on
 * how many events the run carries, so it is not refused at publish): nothing reserved, no effect, and
 * the delivery is not answered 2xx, so the provider keeps the events.
 */
export async function expectRefusedWhenReserveRuns(ctx: RowContext, events: RowEvent[]): Promise<void> {
	const first = await ctx.h.deliver(ctx.url, events);
	expect({
		accepted: first.status >= 200 && first.status < 300,
		states: await ctx.states(events),
		effects: ctx.effects(events),
	}).toEqual({ accepted: false, states: events.map(() => null), effects: events.map(() => 0) });
}

/**
 * The event's call hangs at the API while n8n cancels its execution (`cancel(executionId)`: Stop; or
 * nothing, for the workflow's timeout): the delivery is answered `firstAnswer` (never 2xx), a copy
 * meanwhile 409, and no second call starts beside the one in flight. The API then drops the call (no
 * effect), and the provider's retries get 409 until the lease ends, then run the event once.
 */
export async function expectHeldThroughCancel(
	ctx: RowContext,
	workflowId: string,
	event: RowEvent,
	{ cancel, firstAnswer }: { cancel: (executionId: string) => Promise<void>; firstAnswer: number },
): Promise<void> {
	const key = ctx.keyOf(event);
	const held = ctx.api.holdNext(key);
	const first = ctx.h.deliver(ctx.url, event);
	await within(held, 60000, 'the call never reached the API');
	const row = await eventually(
		async () => (await keyRows(ctx.h, [key]))[key],
		(found) => Boolean(found?.executionId),
	);
	await cancel(String(row?.executionId));
	const answer = await first;
	const [cancelled] = await ctx.h.waitForExecutions(workflowId, 0, 1);
	// The call is still in flight: a copy must not run the step beside it.
	const copy = await ctx.h.deliver(ctx.url, event);
	const whileHeld = { state: await ctx.states([event]), calls: ctx.api.arrivals(key) };
	ctx.api.dropHeld(key); // the API never finished the call: no effect
	const { answers, gaveUp } = await ctx.deliver([event]);
	expect({
		first: answer.status,
		execution: cancelled?.status,
		copy: [copy.status, copy.outcome],
		whileHeld,
		retries: { gaveUp, last: answers[event.id].at(-1), before: [...new Set(answers[event.id].slice(0, -1))] },
		effects: ctx.effects([event]),
		states: await ctx.states([event]),
		attempts: await ctx.attempts([event]),
	}).toEqual({
		first: firstAnswer,
		execution: 'canceled',
		copy: [409, 'in_progress'],
		whileHeld: { state: ['processing'], calls: 1 },
		retries: { gaveUp: [], last: 200, before: answers[event.id].length > 1 ? [409] : [] },
		effects: [1],
		states: ['completed'],
		attempts: [2],
	});
}

/**
 * Where the workflow's timeout does not cancel a running node (n8n 1.x's queue-mode workers): the
 * hanging call ends at the HTTP Request's own timeout (its caller gone, no effect), the execution
 * fails and the key with it (500), and the provider's retry runs the event once.
 */
export async function expectCallEndsByItsOwnTimeout(ctx: RowContext, workflowId: string, event: RowEvent): Promise<void> {
	const key = ctx.keyOf(event);
	const held = ctx.api.holdNext(key);
	const first = ctx.h.deliver(ctx.url, event);
	await within(held, 60000, 'the call never reached the API');
	const answer = await first;
	const [failed] = await ctx.h.waitForExecutions(workflowId, 0, 1);
	const whenAnswered = { state: await ctx.states([event]), calls: ctx.api.arrivals(key) };
	ctx.api.dropHeld(key); // n8n left the call at its timeout: no effect
	const { answers, gaveUp } = await ctx.deliver([event]);
	expect({
		first: answer.status,
		execution: failed?.status,
		whenAnswered,
		retries: { gaveUp, answers: answers[event.id] },
		effects: ctx.effects([event]),
		states: await ctx.states([event]),
		attempts: await ctx.attempts([event]),
	}).toEqual({
		first: 500,
		execution: 'error',
		whenAnswered: { state: ['failed'], calls: 1 },
		retries: { gaveUp: [], answers: [200] },
		effects: [1],
		states: ['completed'],
		attempts: [2],
	});
}

/** A copy delivered while the event's call hangs is answered 409; once the call ends, the event is answered and copies get its stored answer. */
export async function expectCopyDuringRunInProgress(ctx: RowContext, event: RowEvent): Promise<void> {
	const key = ctx.keyOf(event);
	const held = ctx.api.holdNext(key);
	const first = ctx.h.deliver(ctx.url, event);
	await within(held, 60000, 'the call never reached the API');
	const during = await ctx.h.deliver(ctx.url, event);
	ctx.api.answerHeld(key);
	const answer = await first;
	const after = await ctx.h.deliver(ctx.url, event);
	expect({
		during: [during.status, during.outcome],
		first: [answer.status, answer.outcome],
		after: [after.status, after.outcome, after.json],
	}).toEqual({
		during: [409, 'in_progress'],
		first: [200, 'new'],
		after: [200, 'duplicate', answer.json],
	});
	expect(ctx.effects([event])).toEqual([1]);
	expect(await ctx.states([event])).toEqual(['completed']);
}
