import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { INodeProperties, INodeType, INodeTypeDescription } from 'n8n-workflow';

import { IdempotencyExecuteQuery } from '../../nodes/IdempotencyExecuteQuery/IdempotencyExecuteQuery.node';
import { IdempotencyKey } from '../../nodes/IdempotencyKey/IdempotencyKey.node';
import { IdempotencyOrderGuard } from '../../nodes/IdempotencyOrderGuard/IdempotencyOrderGuard.node';
import { IdempotencyReserve } from '../../nodes/IdempotencyReserve/IdempotencyReserve.node';
import { WebhookSignatureVerify } from '../../nodes/WebhookSignatureVerify/WebhookSignatureVerify.node';
import { IdempotentWebhook } from '../../nodes/IdempotentWebhook/IdempotentWebhook.node';

// Static checks of the shipped templates against the nodes' own descriptions: the end-to-end
// suite imports and runs them in a real n8n; these catch a renamed parameter in a second.
const TEMPLATE_DIR = path.join(__dirname, '..', '..', 'templates');
const PACKAGE = 'n8n-nodes-idempotency';
const ourNodes = new Map<string, INodeType>(
	[
		new IdempotencyReserve(),
		new IdempotencyKey(),
		new WebhookSignatureVerify(),
		new IdempotencyOrderGuard(),
		new IdempotencyExecuteQuery(),
		new IdempotentWebhook(),
	].map((node) => [`${PACKAGE}.${node.description.name}`, node]),
);

interface TemplateNode {
	name: string;
	type: string;
	typeVersion: number;
	onError?: string;
	retryOnFail?: boolean;
	maxTries?: number;
	waitBetweenTries?: number;
	parameters: Record<string, unknown>;
	credentials?: Record<string, unknown>;
	webhookId?: string;
}
interface Template {
	id: string;
	name: string;
	nodes: TemplateNode[];
	connections: Record<string, { main: Array<Array<{ node: string }>> }>;
}

const templates = readdirSync(TEMPLATE_DIR)
	.filter((file) => file.endsWith('.json'))
	.map((file) => [file, JSON.parse(readFileSync(path.join(TEMPLATE_DIR, file), 'utf8')) as Template] as const);

/** How many main outputs our node has with these parameters (mirrors the description's expression). */
function outputCount(node: TemplateNode): number {
	// "On Error: Continue (using error output)" adds n8n's error output after the node's own.
	return ownOutputCount(node) + (node.onError === 'continueErrorOutput' ? 1 : 0);
}
function ownOutputCount(node: TemplateNode): number {
	if (node.type === `${PACKAGE}.idempotencyReserve`) return node.parameters.mode === 'lease' ? 4 : 3; // New, Duplicate, (In Progress,) Not Reserved
	if (node.type === `${PACKAGE}.idempotencyKey`)
		return node.parameters.operation === 'cleanup' ? 1 : node.parameters.operation === 'settle' ? 4 : 2;
	// Execute Query (New, Duplicate, Not Run) and Order Guard (Newer, Stale, Not Checked) end with their "not processed" output.
	return node.type === `${PACKAGE}.webhookSignatureVerify` ? 2 : 3;
}

/** Package nodes whose last own output carries the items they could not process. */
const WITH_NOT_PROCESSED_OUTPUT = ['idempotencyReserve', 'idempotencyExecuteQuery', 'idempotencyOrderGuard'].map(
	(name) => `${PACKAGE}.${name}`,
);

/** On an output with a Settle node, Settle answers for the business step beside it. */
function answeredBy(targets: Array<{ node: string }>): Array<{ node: string }> {
	const settle = targets.filter((target) => target.node.startsWith('Settle'));
	return settle.length > 0 ? settle : targets;
}

/**
 * The HTTP answers an item leaving one output can reach, following every connected path; a path
 * that ends in a node without connections is answered by n8n with 200 and no body.
 */
function answersFrom(template: Template, from: string, outputIndex: number): Array<number | 'acknowledged without a response'> {
	const byName = new Map(template.nodes.map((node) => [node.name, node]));
	const answers = new Set<number | 'acknowledged without a response'>();
	const seen = new Set<string>();
	const visit = (name: string): void => {
		if (seen.has(name)) return;
		seen.add(name);
		const node = byName.get(name)!;
		if (node.type === 'n8n-nodes-base.respondToWebhook') {
			answers.add((node.parameters.options as { responseCode?: number } | undefined)?.responseCode ?? 200);
			return;
		}
		const targets = (template.connections[name]?.main ?? []).flatMap((targets) => answeredBy(targets));
		if (targets.length === 0) answers.add('acknowledged without a response');
		for (const target of targets) visit(target.node);
	};
	const targets = answeredBy(template.connections[from]?.main[outputIndex] ?? []);
	if (targets.length === 0) answers.add('acknowledged without a response');
	for (const target of targets) visit(target.node);
	return [...answers];
}

/** Whether n8n has this parameter on a node of this version (its `@version` condition; the other conditions depend on values). */
function existsAtVersion(property: INodeProperties, typeVersion: number): boolean {
	const shownAt = property.displayOptions?.show?.['@version'] as unknown[] | undefined;
	const hiddenAt = property.displayOptions?.hide?.['@version'] as unknown[] | undefined;
	return (shownAt === undefined || shownAt.includes(typeVersion)) && !(hiddenAt ?? []).includes(typeVersion);
}

function checkParameters(properties: INodeProperties[], parameters: Record<string, unknown>, where: string, typeVersion: number): void {
	for (const [name, value] of Object.entries(parameters)) {
		const property = properties.find((candidate) => candidate.name === name && existsAtVersion(candidate, typeVersion));
		expect({ where, name, typeVersion, known: Boolean(property) }).toEqual({ where, name, typeVersion, known: true });
		if (!property) continue;
		if (property.type === 'options' && typeof value === 'string' && !value.startsWith('=')) {
			const allowed = (property.options as Array<{ value: unknown }>).map((option) => option.value);
			expect({ where, name, value, allowed: allowed.includes(value) }).toEqual({ where, name, value, allowed: true });
		}
		if (property.type === 'collection' && value && typeof value === 'object') {
			checkParameters(property.options as INodeProperties[], value as Record<string, unknown>, `${where}.${name}`, typeVersion);
		}
	}
}

/** The version n8n gives the node when a user adds it today. */
function defaultVersion(nodeType: INodeType): number {
	const description = nodeType.description as INodeTypeDescription & { defaultVersion?: number };
	const versions = Array.isArray(description.version) ? description.version : [description.version];
	return description.defaultVersion ?? Math.max(...versions);
}

describe.each(templates)('template %s', (_file, template) => {
	it('has an id n8n accepts and a name', () => {
		expect(template.id).toMatch(/^[A-Za-z0-9]{1,21}$/);
		expect(template.name).toBeTruthy();
	});

	it("uses the installed package's node type names and only real parameters", () => {
		for (const node of template.nodes) {
			if (node.type.startsWith(`${PACKAGE}.`)) {
				const nodeType = ourNodes.get(node.type);
				expect({ type: node.type, known: Boolean(nodeType) }).toEqual({ type: node.type, known: true });
				checkParameters(nodeType!.description.properties, node.parameters, node.name, node.typeVersion);
				const credentialTypes = (nodeType!.description.credentials ?? []).map((credential) => credential.name);
				for (const credentialType of Object.keys(node.credentials ?? {})) expect(credentialTypes).toContain(credentialType);
			} else {
				expect(node.type).toMatch(/^n8n-nodes-base\./);
			}
		}
	});

	// An older version keeps what it was saved with (keys shared between workflows, Store defaults,
	// Mode): a template must give what adding the node today gives.
	it("puts each of the package's nodes at the version a node added today gets (the node's default version)", () => {
		const ours = template.nodes.filter((node) => node.type.startsWith(`${PACKAGE}.`));
		expect(ours.map((node) => ({ node: node.name, typeVersion: node.typeVersion }))).toEqual(
			ours.map((node) => ({ node: node.name, typeVersion: defaultVersion(ourNodes.get(node.type)!) })),
		);
	});

	it('gives every node an id of its own (n8n refuses to import a workflow whose node ids repeat)', () => {
		const ids = template.nodes.map((node) => (node as unknown as { id: string }).id);
		expect(ids.filter((id, index) => ids.indexOf(id) !== index)).toEqual([]);
	});

	it('connects only existing nodes, on outputs that exist', () => {
		const byName = new Map(template.nodes.map((node) => [node.name, node]));
		for (const [from, connection] of Object.entries(template.connections)) {
			const source = byName.get(from);
			expect(source).toBeDefined();
			if (source!.type.startsWith(`${PACKAGE}.`)) expect(connection.main.length).toBeLessThanOrEqual(outputCount(source!));
			for (const targets of connection.main) for (const target of targets) expect(byName.has(target.node)).toBe(true);
		}
	});

	// An item a node could not process must make the provider retry.
	it("answers 5xx, never 2xx, for every item a package node could not process (its last output, n8n's error output)", () => {
		const answersWebhook = template.nodes.some(
			(node) => node.type === 'n8n-nodes-base.webhook' && node.parameters.responseMode === 'responseNode',
		);
		for (const node of template.nodes.filter((candidate) => WITH_NOT_PROCESSED_OUTPUT.includes(candidate.type))) {
			const continues = node.onError === 'continueRegularOutput' || node.onError === 'continueErrorOutput';
			const notProcessedOutputs = [ownOutputCount(node) - 1, ...(node.onError === 'continueErrorOutput' ? [ownOutputCount(node)] : [])];
			for (const outputIndex of notProcessedOutputs) {
				const answers = answersFrom(template, node.name, outputIndex);
				const where = { node: node.name, outputIndex };
				// Under Stop Workflow the output stays empty (the execution fails: 500); it may be left unconnected.
				if (!continues && (template.connections[node.name]?.main[outputIndex] ?? []).length === 0) continue;
				expect({ ...where, answersWebhook }).toEqual({ ...where, answersWebhook: true });
				expect({ ...where, answers }).toEqual({ ...where, answers: expect.arrayContaining([expect.any(Number)]) });
				for (const answer of answers)
					expect({ ...where, answer, is5xx: typeof answer === 'number' && answer >= 500 }).toEqual({ ...where, answer, is5xx: true });
			}
		}
	});
});

describe('the webhook template', () => {
	const [, template] = templates.find(([file]) => file === 'idempotent-webhook.json')!;
	const node = (type: string) => template.nodes.find((candidate) => candidate.type === type)!;
	const targetsOf = (name: string) => template.connections[name].main.map((targets) => targets.map((target) => target.node));

	it('receives the raw body and answers from Respond nodes', () => {
		const webhook = node('n8n-nodes-base.webhook');
		expect(webhook.parameters).toMatchObject({ httpMethod: 'POST', responseMode: 'responseNode', options: { rawBody: true } });
		expect(webhook.webhookId).toBeTruthy();
	});

	it('verifies the signature before anything is reserved', () => {
		const webhook = node('n8n-nodes-base.webhook');
		const verify = node(`${PACKAGE}.webhookSignatureVerify`);
		const reserve = node(`${PACKAGE}.idempotencyReserve`);
		expect(targetsOf(webhook.name)).toEqual([[verify.name]]);
		expect(targetsOf(verify.name)[0]).toEqual([reserve.name]);
	});

	it('reserves in lease mode and wires New, Duplicate, In Progress and Not Reserved (a 5xx: the provider retries)', () => {
		const reserve = node(`${PACKAGE}.idempotencyReserve`);
		expect(reserve.parameters.mode).toBe('lease');
		expect(targetsOf(reserve.name)).toHaveLength(4);
		const [notReserved] = targetsOf(reserve.name)[3];
		const respond = template.nodes.find((candidate) => candidate.name === notReserved)!;
		expect(respond.type).toBe('n8n-nodes-base.respondToWebhook');
		expect((respond.parameters.options as { responseCode: number }).responseCode).toBeGreaterThanOrEqual(500);
	});
});

// The quick start and its Postgres twin: the trigger as the node panel adds it, so each workflow
// keeps keys of its own and Store is the new node's default unless the template is about Postgres.
describe.each([
	['idempotent-webhook-trigger.json', undefined],
	['idempotent-webhook-trigger-postgres.json', 'postgres'],
])('the trigger template %s', (file, store) => {
	const [, template] = templates.find(([name]) => name === file)!;
	const trigger = template.nodes.find((node) => node.type === `${PACKAGE}.idempotentWebhook`)!;
	const notes = template.nodes
		.filter((node) => node.type === 'n8n-nodes-base.stickyNote')
		.map((node) => String(node.parameters.content))
		.join('\n');

	it('keeps Store at the default of a new node (Automatic) unless it is the Postgres template, with a Postgres credential only there', () => {
		expect({
			store: trigger.parameters.store,
			credential: Object.keys(trigger.credentials ?? {}).includes('idempotencyPostgresApi'),
		}).toEqual({
			store,
			credential: store === 'postgres',
		});
		expect(notes).toMatch(store === 'postgres' ? /Idempotency Postgres\* credential/ : /\*\*Store: Automatic\*\*/);
	});

	it("keys each workflow apart (Share Keys Across Workflows off) and says so; the step sends the trigger's key as Idempotency-Key", () => {
		expect(trigger.parameters.options).not.toHaveProperty('shareKeysAcrossWorkflows');
		expect(notes).toMatch(/two workflows receiving one event each run it once/);
		const step = template.nodes.find((node) => node.name === 'Business Step (call your API)')!;
		expect(JSON.stringify(step.parameters.headerParameters)).toContain('"name":"Idempotency-Key","value":"={{ $json.idempotency.key }}"');
	});
});

// n8n 1.x answers a failed execution 200 with an empty body in responseNode mode (the provider
// stops retrying: a lost event), so in a webhook template no package node before an answer may stop
// the workflow: each continues on error and routes the failure to a 5xx. Settle is the exception by
// design: everything it can report is an output; it stops only on a wiring it cannot judge.
// The dashboard's webhooks answer a person at a browser, who sees n8n's error and reloads: no sender retries them.
describe.each(
	templates.filter(
		([file, template]) =>
			!file.startsWith('idempotency-dashboard') &&
			template.nodes.some(
				(node) => node.type === 'n8n-nodes-base.webhook' && (node.parameters as { responseMode?: string }).responseMode === 'responseNode',
			),
	),
)('%s answers every failure itself', (_file, template) => {
	it('every package node that can fail before an answer continues on error', () => {
		const stopping = template.nodes
			.filter((node) => node.type.startsWith(`${PACKAGE}.`) && node.parameters.operation !== 'settle')
			.filter((node) => !['continueRegularOutput', 'continueErrorOutput'].includes(node.onError ?? ''))
			.map((node) => node.name);
		expect(stopping).toEqual([]);
	});

	it('a signing secret that cannot be read is answered 503, a bad signature 401', () => {
		const verify = template.nodes.find((node) => node.type === `${PACKAGE}.webhookSignatureVerify`)!;
		expect(answersFrom(template, verify.name, 1).sort()).toEqual([401, 503]);
	});
});

describe('the one-transaction webhook template', () => {
	const [, template] = templates.find(([file]) => file === 'idempotent-webhook-one-transaction.json')!;
	const node = (type: string) => template.nodes.find((candidate) => candidate.type === type)!;
	const targetsOf = (name: string) => template.connections[name].main.map((targets) => targets.map((target) => target.node));

	it('verifies the signature, then reserves and writes in one node (no Complete, no Release)', () => {
		const verify = node(`${PACKAGE}.webhookSignatureVerify`);
		const executeQuery = node(`${PACKAGE}.idempotencyExecuteQuery`);
		expect(node('n8n-nodes-base.webhook').parameters).toMatchObject({ options: { rawBody: true }, responseMode: 'responseNode' });
		expect(targetsOf(verify.name)[0]).toEqual([executeQuery.name]);
		expect(template.nodes.some((candidate) => candidate.type === `${PACKAGE}.idempotencyReserve`)).toBe(false);
		expect(template.nodes.some((candidate) => candidate.type === `${PACKAGE}.idempotencyKey`)).toBe(false);
	});

	it('sends a failed query to a 5xx answer through Not Run and the error output, and binds every value', () => {
		const executeQuery = node(`${PACKAGE}.idempotencyExecuteQuery`);
		expect(executeQuery.onError).toBe('continueErrorOutput');
		const [fresh, duplicate, notRun, errorOutput] = targetsOf(executeQuery.name);
		const codeOf = (name: string) =>
			(template.nodes.find((candidate) => candidate.name === name)!.parameters.options as { responseCode: number }).responseCode;
		expect([codeOf(fresh[0]), codeOf(duplicate[0]), codeOf(notRun[0]), codeOf(errorOutput[0])]).toEqual([200, 200, 500, 500]);
		// The key the node derived, whatever the body: an event without an id has a key too.
		expect(executeQuery.parameters.query).toMatch(/\$idempotency_key.*\$1/);
		expect(executeQuery.parameters.queryParameters).not.toMatch(/body\.id/);
		expect(executeQuery.parameters.query).not.toMatch(/\{\{/);
	});
});

describe('the ordered webhook template', () => {
	const [, template] = templates.find(([file]) => file === 'ordered-webhook.json')!;
	const node = (type: string) => template.nodes.find((candidate) => candidate.type === type)!;
	const targetsOf = (name: string) => template.connections[name].main.map((targets) => targets.map((target) => target.node));

	it('runs Reserve → Order Guard → business: only Newer reaches the business step', () => {
		const reserve = node(`${PACKAGE}.idempotencyReserve`);
		const guard = node(`${PACKAGE}.idempotencyOrderGuard`);
		const business = node('n8n-nodes-base.postgres');
		expect(targetsOf(node(`${PACKAGE}.webhookSignatureVerify`).name)[0]).toEqual([reserve.name]);
		expect(targetsOf(reserve.name)[0]).toEqual([guard.name]);
		expect(targetsOf(guard.name)[0]).toEqual([business.name, 'Settle (complete or mark failed)']);
	});

	it('completes the key of a stale event too (it is handled: nothing to apply)', () => {
		const guard = node(`${PACKAGE}.idempotencyOrderGuard`);
		const [staleTarget] = targetsOf(guard.name)[1];
		const markStale = template.nodes.find((candidate) => candidate.name === staleTarget)!;
		expect(markStale.type).toBe(`${PACKAGE}.idempotencyKey`);
		expect(markStale.parameters.operation).toBe('complete');
	});

	it('completes a stale event with retries, and answers 200 whatever the completion reports (nothing was written: a key left unsettled is reclaimed and the retry is Stale again)', () => {
		const guard = node(`${PACKAGE}.idempotencyOrderGuard`);
		const [staleTarget] = targetsOf(guard.name)[1];
		const markStale = template.nodes.find((candidate) => candidate.name === staleTarget)!;
		expect(markStale).toMatchObject({
			retryOnFail: true,
			maxTries: 5,
			waitBetweenTries: 5000,
			parameters: { operation: 'complete', source: 'reserveNode' },
		});
		expect(markStale.onError).toBe('continueErrorOutput');
		expect([0, 1, 2].map((output) => answersFrom(template, markStale.name, output))).toEqual([[200], [200], [200]]);
	});

	it('marks the key of an event whose version was not checked failed and answers 500 (the provider retries; the event stays replayable)', () => {
		const guard = node(`${PACKAGE}.idempotencyOrderGuard`);
		expect(guard.onError).toBe('continueRegularOutput');
		const [notCheckedTarget] = targetsOf(guard.name)[2];
		const markFailed = template.nodes.find((candidate) => candidate.name === notCheckedTarget)!;
		expect([markFailed.type, markFailed.parameters.operation]).toEqual([`${PACKAGE}.idempotencyKey`, 'fail']);
		expect(answersFrom(template, guard.name, 2)).toEqual([500]);
		// The guard's Not Checked item is `{ error: text }`: that text is the key's lastError.
		expect(evaluateExpression(String(markFailed.parameters.errorMessage), { error: 'Version: "soon" is not a number' })).toBe(
			'Version: "soon" is not a number',
		);
	});

	it('answers every path: 200 new, stale or duplicate, 409, 503 not reserved or not verified, 401, 500 after a failed step or an unchecked version', () => {
		const reserve = node(`${PACKAGE}.idempotencyReserve`);
		const guard = node(`${PACKAGE}.idempotencyOrderGuard`);
		expect([0, 1, 2, 3].map((output) => answersFrom(template, reserve.name, output).sort())).toEqual([[200, 500], [200], [409], [503]]);
		expect([0, 1, 2].map((output) => answersFrom(template, guard.name, output).sort())).toEqual([[200, 500], [200], [500]]);
		expect(answersFrom(template, 'Webhook Signature Verify', 1).sort()).toEqual([401, 503]);
		expect(answersFrom(template, 'Mark Failed', 2)).toEqual([500]);
	});

	it("keys the object and its version from the event, leaving Event Key at its default (Reserve's key)", () => {
		const guard = node(`${PACKAGE}.idempotencyOrderGuard`);
		expect(guard.parameters.objectKey).toBe('=stripe:customer:{{ $json.body.data.object.id }}');
		expect(guard.parameters.version).toBe('={{ $json.body.created }}');
		expect(guard.parameters.eventKey).toBeUndefined();
	});
});

/** The message prefix by which the error workflow recognises "the business step succeeded, Complete failed". */
const COMPLETION_FAILED_PREFIX = 'idempotency: business step succeeded, Mark Complete failed ';

// Both webhook templates with a separate business step settle it the same way: Settle After
// Business Step, beside the step and below it, judging by n8n's own record of the step (its error
// output, a node that failed before it ran), never by what the step returned; every outcome answered.
describe.each([
	['idempotent-webhook.json', 'Business Step (insert business_log)', 'Idempotency Reserve'],
	['ordered-webhook.json', 'Business Step (upsert customer)', 'Idempotency Order Guard'],
])('after the business step of %s', (file, businessStep, feeder) => {
	const webhook = templates.find(([name]) => name === file)![1];
	const byName = (template: Template, name: string) => template.nodes.find((candidate) => candidate.name === name)!;
	const targets = (template: Template, name: string) =>
		template.connections[name].main.map((outputTargets) => outputTargets.map((target) => target.node));
	const settleName = 'Settle (complete or mark failed)';
	const settle = byName(webhook, settleName);
	const position = (name: string) => (byName(webhook, name) as unknown as { position: [number, number] }).position;

	it("Settle hangs off the business step's output, below the step; the step continues on error and leads nowhere else", () => {
		expect(settle.parameters).toMatchObject({ operation: 'settle' });
		expect(settle.onError).toBeUndefined(); // Stop Workflow: an unsafe wiring is refused, never guessed
		expect(targets(webhook, feeder)[0]).toEqual([businessStep, settleName]);
		expect(position(businessStep)[1]).toBeLessThan(position(settleName)[1]);
		expect(byName(webhook, businessStep).onError).toBe('continueErrorOutput');
		expect(webhook.connections[businessStep]).toBeUndefined();
		expect((webhook as unknown as { settings: { executionOrder: string } }).settings.executionOrder).toBe('v1');
	});

	it('answers Completed 200, Failed 500, Completion Refused 200 then fails the execution, Not Settled by whether the effect happened', () => {
		expect([0, 1, 2, 3].map((output) => answersFrom(webhook, settleName, output).sort())).toEqual([[200], [500], [200], [200, 500]]);
		const [[refusedAnswer]] = [targets(webhook, settleName)[2]];
		expect(byName(webhook, refusedAnswer).parameters.options).toMatchObject({
			responseHeaders: { entries: [{ name: 'x-idempotency-outcome', value: 'completion_refused' }] },
		});
		const [[refusedStop]] = targets(webhook, refusedAnswer);
		expect(byName(webhook, refusedStop).type).toBe('n8n-nodes-base.stopAndError');
		const [[effectHappened]] = [targets(webhook, settleName)[3]];
		expect(targets(webhook, effectHappened).map((answers) => answers.map((name) => byName(webhook, name).parameters.options))).toEqual([
			[
				expect.objectContaining({
					responseCode: 200,
					responseHeaders: { entries: [{ name: 'x-idempotency-outcome', value: 'completion_pending' }] },
				}),
			],
			[expect.objectContaining({ responseCode: 500 })],
		]);
		const condition = (byName(webhook, effectHappened).parameters.conditions as { conditions: Array<{ leftValue: string }> }).conditions[0];
		expect(evaluateExpression(condition.leftValue, { idempotency: { stepSucceeded: true } })).toBe(true);
		expect(evaluateExpression(condition.leftValue, { idempotency: { stepSucceeded: false } })).toBe(false);
	});

	it('when the store cannot be reached after the step succeeded, the execution fails with the key in its error (the error workflow completes it)', () => {
		const stop = byName(webhook, 'Completion Failed (error workflow completes)');
		const message = String(stop.parameters.errorMessage);
		expect(message).toContain(`'${COMPLETION_FAILED_PREFIX}'`);
		const key = 'evt:a b{c}';
		const ownerToken = '0b6f6c1e-8d2a-4f0b-9a51-1d7e3c4a9b10';
		expect(evaluateExpression(message, { idempotency: { key, ownerToken } })).toBe(
			`${COMPLETION_FAILED_PREFIX}${JSON.stringify({ key, ownerToken })}`,
		);
	});

	it('nodes fed by an error output do not retry: n8n would take the `error` field of their items for a failure and run them again', () => {
		for (const [from, connection] of Object.entries(webhook.connections)) {
			const source = byName(webhook, from);
			if (source.onError !== 'continueErrorOutput') continue;
			const errorTargets = connection.main[connection.main.length - 1] ?? [];
			for (const target of errorTargets)
				expect({ node: target.node, retryOnFail: byName(webhook, target.node).retryOnFail ?? false }).toEqual({
					node: target.node,
					retryOnFail: false,
				});
		}
	});

	it('a sticky note tells the user to put their nodes above Settle with On Error: Continue, and that any result completes the key', () => {
		const notes = webhook.nodes.filter((node) => node.type === 'n8n-nodes-base.stickyNote').map((note) => String(note.parameters.content));
		expect(notes).toEqual(
			expect.arrayContaining([
				expect.stringMatching(/\*\*above\*\* \*Settle\*[\s\S]*On Error: Continue \(using error output\)[\s\S]*whatever they return/),
			]),
		);
		expect(notes.join('\n')).not.toMatch(/Business Step Succeeded\?|Key Completed\?|Change the check/);
	});
});

describe('the error-workflow template, after a completion failed', () => {
	const webhook = templates.find(([file]) => file === 'idempotent-webhook.json')![1];
	const errorWorkflow = templates.find(([file]) => file === 'error-workflow.json')![1];
	const byName = (template: Template, name: string) => template.nodes.find((candidate) => candidate.name === name)!;
	const targets = (template: Template, name: string) =>
		template.connections[name].main.map((outputTargets) => outputTargets.map((target) => target.node));

	it('both webhook templates name their completion failure alike, so the error workflow recognises both', () => {
		const ordered = templates.find(([file]) => file === 'ordered-webhook.json')![1];
		const stopOf = (template: Template) => template.nodes.find((node) => node.name === 'Completion Failed (error workflow completes)')!;
		expect(stopOf(ordered).parameters).toEqual(stopOf(webhook).parameters);
	});

	it('the error workflow completes that key instead of marking it failed, and marks failed only the keys of other failures', () => {
		const [[check]] = targets(errorWorkflow, 'Error Trigger');
		const ifNode = byName(errorWorkflow, check);
		expect(ifNode.type).toBe('n8n-nodes-base.if');
		const conditions = (ifNode.parameters.conditions as { conditions: Array<{ rightValue: string; operator: { operation: string } }> })
			.conditions;
		expect(conditions).toEqual([
			expect.objectContaining({ rightValue: COMPLETION_FAILED_PREFIX, operator: expect.objectContaining({ operation: 'startsWith' }) }),
		]);
		const [[whenDone], [otherwise]] = targets(errorWorkflow, ifNode.name);
		expect(byName(errorWorkflow, whenDone).parameters).toMatchObject({ operation: 'complete', source: 'custom' });
		expect(byName(errorWorkflow, otherwise).parameters).toMatchObject({
			operation: 'fail',
			source: 'execution',
			executionId: '={{ $json.execution.id }}',
		});
		// The expressions read back exactly what the webhook template's error message carries.
		const completeNode = byName(errorWorkflow, whenDone);
		const message = `${COMPLETION_FAILED_PREFIX}${JSON.stringify({ key: 'evt:a b{c}', ownerToken: '0b6f6c1e-8d2a-4f0b-9a51-1d7e3c4a9b10' })}`;
		const evaluate = (expression: string) =>
			new Function('$json', `return (${expression.replace(/^=\{\{\s*|\s*\}\}$/g, '')});`)({ execution: { error: { message } } });
		expect(evaluate(String(completeNode.parameters.key))).toBe('evt:a b{c}');
		expect(evaluate(String(completeNode.parameters.ownerToken))).toBe('0b6f6c1e-8d2a-4f0b-9a51-1d7e3c4a9b10');
	});

	it("the error workflow's Mark Failed stores which execution failed, in which node, and why", () => {
		const [, [otherwise]] = targets(errorWorkflow, 'Business Step Already Done?');
		const expression = String(byName(errorWorkflow, otherwise).parameters.errorMessage);
		const evaluate = (json: unknown) => new Function('$json', `return (${expression.replace(/^=\{\{\s*|\s*\}\}$/g, '')});`)(json);
		expect(evaluate({ execution: { id: '42', lastNodeExecuted: 'Crash', error: { message: 'worker died' } } })).toBe(
			'execution 42 failed in Crash: worker died',
		);
		expect(evaluate({ execution: { id: '43', error: {} } })).toBe('execution 43 failed: no error message');
	});
});

/** Evaluates a template's `={{ … }}` expression with this `$json` (what n8n gives the node). */
function evaluateExpression(expression: string, json: unknown): unknown {
	return new Function('$json', `return (${expression.replace(/^=\{\{\s*|\s*\}\}$/g, '')});`)(json);
}

// Both webhook templates keep a failed event (Mark Failed, never Release) with its payload, so the
// provider's retry is processed again and the replay template can process it if the provider gives up.
describe.each([
	['idempotent-webhook.json', ['Business Step (insert business_log)']],
	['ordered-webhook.json', ['Business Step (upsert customer)', 'Idempotency Order Guard']],
])('%s keeps failed events (replay evidence, dead-letter view)', (file, failingSteps) => {
	const template = templates.find(([name]) => name === file)![1];
	const reserve = template.nodes.find((node) => node.type === `${PACKAGE}.idempotencyReserve`)!;

	it('stores the payload with each key, and a note says why and when to turn it off', () => {
		expect(reserve.parameters.options).toMatchObject({ storePayload: true });
		const notes = template.nodes.filter((node) => node.type === 'n8n-nodes-base.stickyNote').map((note) => String(note.parameters.content));
		const why = notes.find((content) => content.includes('**Store Payload**'));
		expect(why).toMatch(/replay-failed-events\.json/);
		expect(why).toMatch(/personal data/);
		expect(why).toMatch(/Retention/);
	});

	it("never releases a key: a failed step's key is marked failed by Settle (kept with its payload), and answers 500", () => {
		expect(template.nodes.some((node) => node.type === `${PACKAGE}.idempotencyKey` && node.parameters.operation === 'release')).toBe(false);
		expect(answersFrom(template, 'Settle (complete or mark failed)', 1)).toEqual([500]);
		for (const step of failingSteps.filter((name) => name !== 'Idempotency Order Guard'))
			expect(template.connections[step]).toBeUndefined();
	});
});

describe('the webhook template answers', () => {
	const webhook = templates.find(([file]) => file === 'idempotent-webhook.json')![1];
	const reserve = webhook.nodes.find((node) => node.type === `${PACKAGE}.idempotencyReserve`)!;

	it('answers every path: 200 new or duplicate, 409, 503 not reserved, 401 invalid, 503 could not verify, 500 after a failed step', () => {
		expect([0, 1, 2, 3].map((output) => answersFrom(webhook, reserve.name, output).sort())).toEqual([[200, 500], [200], [409], [503]]);
		expect(answersFrom(webhook, 'Webhook Signature Verify', 1).sort()).toEqual([401, 503]);
		expect(answersFrom(webhook, 'Could Not Verify?', 0)).toEqual([503]);
		expect(answersFrom(webhook, 'Could Not Verify?', 1)).toEqual([401]);
		// Every node before an answer continues on error, so no failure ends the execution unanswered
		// (n8n 1.x answers a failed execution 200 in this response mode).
		for (const name of ['Webhook Signature Verify', 'Idempotency Reserve'])
			expect(webhook.nodes.find((node) => node.name === name)!.onError).toBe('continueRegularOutput');
	});
});

// What a user sees on the canvas: a sticky note drawn under a node hides the note's text and the
// node's output labels; a code line wider than its note is clipped. Sizes as n8n draws them: a node
// is about 100×100 at its position (its name is written below it, about 40 px); a sticky note is
// parameters.width × parameters.height. A note's code font measures 9.63 px per character in the
// editor, and the code block is 26 px narrower than its note (measured in Chromium by
// scripts/screenshots.js: a 47-character SQL line is 453 px; it was cut off in a 400 px note).
const NODE_SIZE = 100;
const NODE_LABEL_HEIGHT = 40;
const CODE_CHAR_WIDTH = 9.7;
const NOTE_PADDING = 30;

interface Rect {
	left: number;
	top: number;
	right: number;
	bottom: number;
}
const overlaps = (a: Rect, b: Rect) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
const position = (node: TemplateNode) => (node as TemplateNode & { position: [number, number] }).position;
const isSticky = (node: TemplateNode) => node.type === 'n8n-nodes-base.stickyNote';
function noteRect(note: TemplateNode): Rect {
	const [left, top] = position(note);
	return { left, top, right: left + Number(note.parameters.width), bottom: top + Number(note.parameters.height) };
}
function nodeRect(node: TemplateNode): Rect {
	const [left, top] = position(node);
	return { left, top, right: left + NODE_SIZE, bottom: top + NODE_SIZE + NODE_LABEL_HEIGHT };
}
/** The longest line inside the note's fenced code blocks, in characters (0 without code). */
function longestCodeLine(content: string): number {
	let inCode = false;
	let longest = 0;
	for (const line of content.split('\n')) {
		if (line.trim().startsWith('```')) inCode = !inCode;
		else if (inCode) longest = Math.max(longest, line.length);
	}
	return longest;
}

describe.each(templates)('layout of %s', (_file, template) => {
	const notes = template.nodes.filter(isSticky);
	const nodes = template.nodes.filter((node) => !isSticky(node));

	it('no sticky note lies under a node', () => {
		const underNotes = notes.flatMap((note) =>
			nodes.filter((node) => overlaps(noteRect(note), nodeRect(node))).map((node) => `${note.name} ↔ ${node.name}`),
		);
		expect(underNotes).toEqual([]);
	});

	it('no two sticky notes overlap (one would hide the other)', () => {
		const stacked = notes.flatMap((note, index) =>
			notes
				.slice(index + 1)
				.filter((other) => overlaps(noteRect(note), noteRect(other)))
				.map((other) => `${note.name} ↔ ${other.name}`),
		);
		expect(stacked).toEqual([]);
	});

	it("every note's code fits its width", () => {
		const clipped = notes
			.filter((note) => longestCodeLine(String(note.parameters.content)) * CODE_CHAR_WIDTH + NOTE_PADDING > Number(note.parameters.width))
			.map((note) => note.name);
		expect(clipped).toEqual([]);
	});
});

describe('the layout checks themselves', () => {
	const note = {
		name: 'n',
		type: 'n8n-nodes-base.stickyNote',
		position: [0, 0],
		parameters: { width: 300, height: 200, content: '```\n' + 'x'.repeat(30) + '\n```' },
	} as unknown as TemplateNode;
	it('see a node under a note, and a code line wider than the note', () => {
		expect(
			overlaps(noteRect(note), nodeRect({ name: 'a', type: 't', position: [250, 150], parameters: {} } as unknown as TemplateNode)),
		).toBe(true);
		expect(
			overlaps(noteRect(note), nodeRect({ name: 'b', type: 't', position: [320, 0], parameters: {} } as unknown as TemplateNode)),
		).toBe(false);
		expect(longestCodeLine(String(note.parameters.content)) * CODE_CHAR_WIDTH + NOTE_PADDING).toBeGreaterThan(300);
	});
});

describe('stock Postgres nodes in the templates', () => {
	// n8n 1.x does not recognise the error items of "Query Batching: Independently" ({message, item,
	// error}) and sends a failed insert out of the success output: the key is completed, the event lost
	// (measured on 1.123.81). One query per run is the same for a webhook's single item.
	it.each(
		templates.flatMap(([file, template]) =>
			template.nodes.filter((node) => node.type === 'n8n-nodes-base.postgres').map((node) => [file, node.name, node] as const),
		),
	)('%s › %s runs as a single query', (_file, _name, node) => {
		const batching = (node.parameters.options as { queryBatching?: string } | undefined)?.queryBatching;
		expect(batching).toBe('single');
	});
});

describe('the replay template', () => {
	const [, template] = templates.find(([file]) => file === 'replay-failed-events.json')!;
	const byName = (name: string) => template.nodes.find((candidate) => candidate.name === name)!;
	const targetsOf = (name: string) => template.connections[name].main.map((targets) => targets.map((target) => target.node));
	/** Every node an item leaving `from` on `outputIndex` can reach (not past `stopAt`). */
	const reachable = (from: string, outputIndex: number, stopAt?: string): Set<string> => {
		const seen = new Set<string>();
		const visit = (name: string): void => {
			if (seen.has(name)) return;
			seen.add(name);
			if (name === stopAt) return;
			for (const target of (template.connections[name]?.main ?? []).flat()) visit(target.node);
		};
		for (const target of template.connections[from]?.main[outputIndex] ?? []) visit(target.node);
		return seen;
	};
	const settings = () =>
		Object.fromEntries(
			(byName('Replay Settings').parameters.assignments as { assignments: Array<{ name: string; value: unknown }> }).assignments.map(
				(a) => [a.name, a.value],
			),
		);

	it('is a dry run unless the user switches it off, and lists bounded pages of replayable keys', () => {
		expect(settings()).toEqual({ dryRun: true, keyPrefix: '', pageSize: 50, maxPages: 20 });
		const list = byName('List Replayable Keys');
		expect(list.parameters).toMatchObject({
			operation: 'listKeys',
			listFilters: { status: 'replayable', keyPrefix: "={{ $('Replay Settings').first().json.keyPrefix }}" },
			limit: "={{ $('Replay Settings').first().json.pageSize }}",
		});
		expect(targetsOf('Replay Settings')).toEqual([[list.name]]);
		expect(targetsOf(list.name)).toEqual([['Dry Run?']]);
	});

	it('in a dry run reaches no node that writes before the next page is listed: no Idempotency Key operation, no business step', () => {
		const [dryRun, replay] = targetsOf('Dry Run?');
		expect(dryRun).toEqual(['Dry Run: Report Only']);
		expect(replay).toEqual(['Replay One by One']);
		const reached = reachable('Dry Run?', 0, 'List Replayable Keys');
		expect([...reached].sort()).toEqual(['Dry Run: Report Only', 'List Replayable Keys', 'Next Page', 'Next Page?', 'Replay Finished']);
		for (const name of reached)
			if (name !== 'List Replayable Keys')
				expect([name, byName(name).type]).toEqual([name, expect.stringMatching(/^n8n-nodes-base\.(set|if)$/)]);
	});

	it('sends keys without a stored payload to Needs Manual Handling before anything is claimed, then on to the next key', () => {
		expect(targetsOf('Payload Stored?')).toEqual([['Claim for Replay'], ['Needs Manual Handling']]);
		expect([...reachable('Payload Stored?', 1, 'Replay One by One')].sort()).toEqual(['Needs Manual Handling', 'Replay One by One']);
	});

	it("claims each key, runs the webhook template's business step on it, then completes it, or marks it failed on error", () => {
		const webhook = templates.find(([file]) => file === 'idempotent-webhook.json')![1];
		const webhookStep = webhook.nodes.find((node) => node.type === 'n8n-nodes-base.postgres')!;
		expect(targetsOf('Replay One by One')).toEqual([['Next Page?'], ['Payload Stored?']]);
		expect(byName('Claim for Replay').parameters).toMatchObject({ operation: 'claimForReplay', replayKey: '={{ $json.key }}' });
		const [claimed, notClaimable] = targetsOf('Claim for Replay');
		const step = byName(claimed[0]);
		expect(step.parameters).toEqual(webhookStep.parameters);
		expect(step.onError).toBe('continueErrorOutput');
		expect(notClaimable).toEqual(['Skipped (Not Claimable)']);
		// Settle judges the step by n8n's record of it: beside it on Claimed, below it.
		expect(claimed).toEqual([step.name, 'Settle (complete or mark failed)']);
		expect(template.connections[step.name]).toBeUndefined();
		const position = (name: string) => (byName(name) as unknown as { position: [number, number] }).position[1];
		expect(position(step.name)).toBeLessThan(position('Settle (complete or mark failed)'));
		expect(byName('Settle (complete or mark failed)').parameters).toMatchObject({ operation: 'settle' });
		const [completed, failed, refused, notSettled] = targetsOf('Settle (complete or mark failed)');
		// Completed and Failed go on to the next key; a refused completion stops the run for a look.
		expect([completed, failed]).toEqual([['Replay One by One'], ['Replay One by One']]);
		expect(byName(refused[0]).type).toBe('n8n-nodes-base.stopAndError');
		expect(targetsOf(notSettled[0])).toEqual([['Completion Failed (error workflow completes)'], ['Replay One by One']]);
		// Every path of a key ends back in the loop, so the next key is replayed.
		for (const end of ['Skipped (Not Claimable)', 'Needs Manual Handling'])
			expect(reachable(end, 0, 'Replay One by One').has('Replay One by One')).toBe(true);
	});

	// One run reaches every replayable key: keys that stay replayable (failing again, no payload) come
	// first in key order on every run, so one page per run would never reach the keys after them.
	describe('pages', () => {
		/** Evaluates an expression as n8n would in Next Page? (the latest List page, Replay Settings, its own run index). */
		const evaluate = (
			expression: string,
			{
				nextPageAfterKey,
				runIndex,
				maxPages = 20,
				prevNode = '',
			}: { nextPageAfterKey?: string | null; runIndex?: number; maxPages?: number; prevNode?: string },
		) => {
			const nodeData: Record<string, { json: Record<string, unknown> }> = {
				'List Replayable Keys': { json: { key: 'evt:a', nextPageAfterKey } },
				'Replay Settings': { json: { ...settings(), maxPages } },
			};
			const $ = (name: string) => ({ first: () => nodeData[name], last: () => nodeData[name] });
			return new Function('$', '$runIndex', '$prevNode', '$json', `return (${expression.replace(/^=\{\{\s*|\s*\}\}$/g, '')});`)(
				$,
				runIndex,
				{ name: prevNode },
				{ nextPageAfterKey },
			);
		};
		const conditions = () =>
			byName('Next Page?').parameters.conditions as {
				combinator: string;
				conditions: Array<{ leftValue: string; rightValue: string; operator: { type: string; operation: string } }>;
			};
		/** Next Page?'s decision: every condition (and), with the operators it uses. */
		const nextPage = (state: { nextPageAfterKey: string | null; runIndex: number; maxPages?: number }) =>
			conditions().conditions.every(({ leftValue, rightValue, operator }) => {
				const left = evaluate(leftValue, state);
				if (operator.operation === 'notEmpty') return typeof left === 'string' && left !== '';
				if (operator.operation === 'lt') return Number(left) < Number(evaluate(rightValue, state));
				throw new Error(`unexpected operator ${operator.operation}`);
			});

		it("after each page (the report, or the loop done), lists the next one after the page's last key", () => {
			expect(targetsOf('Dry Run: Report Only')).toEqual([['Next Page?']]);
			expect(targetsOf('Replay One by One')[0]).toEqual(['Next Page?']);
			expect(byName('Next Page?')).toMatchObject({ type: 'n8n-nodes-base.if', executeOnce: true });
			expect(targetsOf('Next Page?')).toEqual([['Next Page'], ['Replay Finished']]);
			expect(targetsOf('Next Page')).toEqual([['List Replayable Keys']]);
			const cursor = (byName('Next Page').parameters.assignments as { assignments: Array<{ name: string; value: string }> }).assignments;
			expect(cursor.map((a) => a.name)).toEqual(['nextPageAfterKey']);
			expect(evaluate(cursor[0].value, { nextPageAfterKey: 'evt:m' })).toBe('evt:m');
			// List Keys reads the cursor from its input: none on the first page (Replay Settings' item).
			const afterKey = String(byName('List Replayable Keys').parameters.afterKey);
			expect(evaluate(afterKey, { nextPageAfterKey: 'evt:m' })).toBe('evt:m');
			expect(evaluate(afterKey, {})).toBe('');
		});

		it('stops on the last page, or after maxPages pages (bounded), and says where it stopped', () => {
			expect(conditions().combinator).toBe('and');
			expect(nextPage({ nextPageAfterKey: 'evt:m', runIndex: 0 })).toBe(true);
			expect(nextPage({ nextPageAfterKey: 'evt:m', runIndex: 18 })).toBe(true); // page 19 of 20 read
			expect(nextPage({ nextPageAfterKey: 'evt:m', runIndex: 19 })).toBe(false); // page 20 of 20 read
			expect(nextPage({ nextPageAfterKey: null, runIndex: 0 })).toBe(false);
			expect(nextPage({ nextPageAfterKey: 'evt:m', runIndex: 0, maxPages: 1 })).toBe(false);
			const finished = Object.fromEntries(
				(byName('Replay Finished').parameters.assignments as { assignments: Array<{ name: string; value: string }> }).assignments.map(
					(a) => [a.name, a.value],
				),
			);
			expect(evaluate(finished.moreKeysAfter, { nextPageAfterKey: 'evt:m' })).toBe('evt:m');
			expect(evaluate(finished.moreKeysAfter, { nextPageAfterKey: null })).toBe('');
			expect(evaluate(finished.summary, { nextPageAfterKey: null })).toBe('every replayable key was listed');
			expect(evaluate(finished.summary, { nextPageAfterKey: 'evt:m' })).toMatch(/maxPages/);
		});

		it('starts the key loop afresh for each page, and only then (Loop Over Items keeps its items after Done otherwise)', () => {
			const reset = String((byName('Replay One by One').parameters.options as { reset?: string }).reset);
			// Every input of the loop other than Dry Run? (a new page) is its own loop coming back.
			const inputs = Object.entries(template.connections)
				.filter(([, connection]) => connection.main.some((targets) => targets.some((target) => target.node === 'Replay One by One')))
				.map(([from]) => from);
			for (const from of inputs) {
				const comesBack = reachable('Replay One by One', 1, 'Replay One by One').has(from);
				expect({ from, reset: evaluate(reset, { prevNode: from }) }).toEqual({ from, reset: !comesBack });
			}
			expect(inputs).toContain('Dry Run?');
		});

		it('notes state the bound and how to reach keys past it', () => {
			const notes = template.nodes
				.filter(isSticky)
				.map((note) => String(note.parameters.content))
				.join('\n');
			expect(notes).toMatch(/`maxPages`/);
			expect(notes).toMatch(/1,000 keys/);
			expect(notes).not.toMatch(/raise `pageSize`/);
		});
	});

	it('shows the dry run switch in a small note right under Replay Settings, not only in the Read me', () => {
		// A callout a user sees next to the node they must open, before they find it in the long Read me.
		const settingsRect = nodeRect(byName('Replay Settings'));
		const gap = (note: TemplateNode) => {
			const rect = noteRect(note);
			return Math.max(
				rect.left - settingsRect.right,
				settingsRect.left - rect.right,
				rect.top - settingsRect.bottom,
				settingsRect.top - rect.bottom,
				0,
			);
		};
		const callouts = template.nodes
			.filter(isSticky)
			.filter((note) => Number(note.parameters.width) <= 500 && Number(note.parameters.height) <= 300 && gap(note) <= 40)
			.map((note) => String(note.parameters.content));
		expect(callouts).toEqual([expect.stringMatching(/Replay Settings[\s\S]*`dryRun`[\s\S]*\*\*false\*\*/)]);
	});
});
