import { HookContext } from 'n8n-core';
import {
	NodeConnectionTypes,
	Workflow,
	type IConnections,
	type INode,
	type IWorkflowExecuteAdditionalData,
	type WorkflowActivateMode,
} from 'n8n-workflow';

import { IdempotentWebhook } from '../../nodes/IdempotentWebhook/IdempotentWebhook.node';
import { describeWithN8n, loadBaseNodeFiles, loadBaseNodes } from '../support/n8nBaseNodes';
import { addNodeTypes, credentialsHelper, engineBase, nodeTypes, packageNode } from '../support/n8nEngine';

/*
 * Nodes that make the execution wait, as n8n's own node types declare it (a webhook that resumes the
 * execution), behind the Idempotent Webhook trigger: the trigger cannot settle its key after a wait,
 * so n8n refuses to publish such a workflow, with the node named, before any delivery — here through
 * n8n-core's own HookContext, the context n8n gives webhookMethods when a workflow is published.
 * Send and Wait for Response of Slack and Gmail, not only Wait and Form: read from the descriptions,
 * not from a list of names.
 */

const WAITING_NODES: Record<string, string> = {
	'n8n-nodes-base.slack': 'Slack/Slack.node.js',
	'n8n-nodes-base.gmail': 'Google/Gmail/Gmail.node.js',
	'n8n-nodes-base.form': 'Form/Form.node.js',
	'n8n-nodes-base.httpRequest': 'HttpRequest/HttpRequest.node.js',
};

const trigger = packageNode(
	'Idempotent Webhook',
	'idempotentWebhook',
	{ path: 'orders', scheme: 'stripe', store: 'embedded', keySource: 'auto', mode: 'lease' },
	{ credentials: { webhookSignatureApi: { id: 'signing', name: 'Signing' } } },
);

const step = (name: string, type: string, typeVersion: number, parameters: INode['parameters']): INode => ({
	id: name,
	name,
	type,
	typeVersion,
	position: [200, 0],
	parameters,
});

const to = (...names: string[]): IConnections[string] => ({
	main: [names.map((node) => ({ node, type: NodeConnectionTypes.Main, index: 0 }))],
});

/** Publishes trigger → `next` (→ `more`) as n8n does: checkExists, then create, on a HookContext of the loaded workflow. */
async function publish(next: INode, more: { nodes: INode[]; connections: IConnections } = { nodes: [], connections: {} }): Promise<void> {
	const workflow = new Workflow({
		id: 'wf-waiting',
		name: 'waiting',
		nodes: [trigger, next, ...more.nodes],
		connections: { [trigger.name]: to(next.name), ...more.connections },
		active: true,
		nodeTypes,
		settings: { executionOrder: 'v1' },
	});
	const additionalData = engineBase(credentialsHelper({})) as unknown as IWorkflowExecuteAdditionalData;
	const context = new HookContext(workflow, workflow.getNode(trigger.name)!, additionalData, 'trigger', 'activate');
	const methods = new IdempotentWebhook().webhookMethods.default;
	if (!(await methods.checkExists.call(context))) await methods.create.call(context);
}

describeWithN8n("the Idempotent Webhook refuses at publish what n8n's nodes declare may wait", () => {
	beforeAll(() => {
		addNodeTypes(loadBaseNodes());
		addNodeTypes(loadBaseNodeFiles(WAITING_NODES));
	});

	it.each([
		['Slack, Send and Wait for Response', step('Ask', 'n8n-nodes-base.slack', 2.3, { resource: 'message', operation: 'sendAndWait' })],
		['Gmail, Send and Wait for Response', step('Ask', 'n8n-nodes-base.gmail', 2.1, { resource: 'message', operation: 'sendAndWait' })],
		['Wait for 2 hours', step('Ask', 'n8n-nodes-base.wait', 1.1, { amount: 2, unit: 'hours' })],
		['Wait version 1, at its defaults (1 hour)', step('Ask', 'n8n-nodes-base.wait', 1, {})],
		['Wait for a time set by an expression', step('Ask', 'n8n-nodes-base.wait', 1.1, { amount: '={{ $json.delay }}' })],
		['Wait for a webhook call', step('Ask', 'n8n-nodes-base.wait', 1.1, { resume: 'webhook' })],
		['Form', step('Ask', 'n8n-nodes-base.form', 1, {})],
	])('%s: refused, the node named', async (_label, next) => {
		await expect(publish(next)).rejects.toThrow(/"Ask" makes the execution wait.*The workflow was not published\./);
	});

	it.each([
		['Slack, Send Message', step('Tell', 'n8n-nodes-base.slack', 2.3, { resource: 'message', operation: 'post' })],
		['Gmail, Send', step('Tell', 'n8n-nodes-base.gmail', 2.1, { resource: 'message', operation: 'send' })],
		['HTTP Request', step('Tell', 'n8n-nodes-base.httpRequest', 4.2, { url: 'http://127.0.0.1:9/' })],
		['a Wait that is disabled', { ...step('Tell', 'n8n-nodes-base.wait', 1.1, { amount: 2, unit: 'hours' }), disabled: true }],
		// n8n's Wait sleeps inside the run below 65 s (Wait.node.js), as after any other node.
		['Wait at its defaults (5 seconds)', step('Tell', 'n8n-nodes-base.wait', 1.1, {})],
		['Wait for 64 seconds', step('Tell', 'n8n-nodes-base.wait', 1.1, { amount: 64 })],
	])('%s: published', async (_label, next) => {
		await expect(publish(next)).resolves.toBeUndefined();
	});

	it('refuses a Reserve downstream whose wiring it would refuse at its run, after the call before it', async () => {
		const charge = step('Charge', 'n8n-nodes-base.httpRequest', 4.2, { url: 'http://127.0.0.1:9/' });
		const reserve = packageNode('Reserve', 'idempotencyReserve', { keySource: 'auto', mode: 'lease' }, { position: [400, 0] });
		const settle = packageNode('Settle', 'idempotencyKey', { operation: 'settle' }, { position: [600, 240] });
		// Settle beside nothing: Reserve refuses this at its run, which would be after Charge called.
		await expect(
			publish(charge, { nodes: [reserve, settle], connections: { Charge: to('Reserve'), Reserve: to('Settle') } }),
		).rejects.toThrow(
			/"Reserve" would refuse every event after the nodes before it had run: No business step is connected beside "Settle"/,
		);
		const call = step('Call', 'n8n-nodes-base.httpRequest', 4.2, { url: 'http://127.0.0.1:9/' });
		await expect(
			publish(charge, {
				nodes: [reserve, settle, { ...call, position: [600, 0] }],
				connections: { Charge: to('Reserve'), Reserve: to('Call', 'Settle') },
			}),
		).resolves.toBeUndefined();
	});

	// n8n overwrites an Execute Workflow node's error output with the errors it finds on its first output, and with
	// it the failed items the sub-workflow returned there: the trigger would complete the key of an event that failed.
	it('refuses Execute Workflow at Continue (using error output) at publish; publishes it at Continue (regular output) or Stop Workflow', async () => {
		const subWorkflow = JSON.stringify({
			nodes: [step('Start', 'n8n-nodes-base.executeWorkflowTrigger', 1.1, { inputSource: 'passthrough' })],
			connections: {},
		});
		const execute = (onError: INode['onError']): INode => ({
			...step('Run Sub-workflow', 'n8n-nodes-base.executeWorkflow', 1.3, { source: 'parameter', workflowJson: subWorkflow, mode: 'once' }),
			onError,
		});
		await expect(publish(execute('continueErrorOutput'))).rejects.toThrow(
			/"Run Sub-workflow" is set to On Error "Continue \(using error output\)".*"Continue \(regular output\)".*The workflow was not published\./,
		);
		await expect(publish(execute('continueRegularOutput'))).resolves.toBeUndefined();
		await expect(publish(execute('stopWorkflow'))).resolves.toBeUndefined();
	});

	it('refuses Respond to Webhook at publish too (the trigger answers the event itself)', async () => {
		addNodeTypes(loadBaseNodeFiles({ 'n8n-nodes-base.respondToWebhook': 'RespondToWebhook/RespondToWebhook.node.js' }));
		await expect(publish(step('Answer', 'n8n-nodes-base.respondToWebhook', 1.1, {}))).rejects.toThrow(/"Answer" answers the webhook/);
	});
});

describeWithN8n('the Idempotent Webhook answering At Once refuses a second Idempotent Webhook in its workflow', () => {
	const atOnce = { ...trigger, typeVersion: 2, parameters: { ...trigger.parameters, respond: 'atOnce' } };
	const other = { ...trigger, id: 'other', name: 'Other Webhook', typeVersion: 2, parameters: { ...trigger.parameters, path: 'refunds' } };
	async function publishWith(nodes: INode[], activation: WorkflowActivateMode = 'activate'): Promise<void> {
		const workflow = new Workflow({
			id: 'wf-inbox',
			name: 'inbox',
			nodes,
			connections: {},
			active: true,
			nodeTypes,
			settings: { executionOrder: 'v1' },
		});
		const additionalData = engineBase(credentialsHelper({})) as unknown as IWorkflowExecuteAdditionalData;
		const context = new HookContext(workflow, workflow.getNode(nodes[0].name)!, additionalData, 'trigger', activation);
		const methods = new IdempotentWebhook().webhookMethods.default;
		if (!(await methods.checkExists.call(context))) await methods.create.call(context);
	}

	it('refused, the other trigger named: the workflow owns the retries of the events it accepted', async () => {
		await expect(publishWith([atOnce, other])).rejects.toThrow(
			/"Other Webhook" is a second Idempotent Webhook.*The workflow was not published\./,
		);
	});

	it('published alone, or beside a disabled one; a trigger answering when the workflow ends may share its workflow, each with a Scope', async () => {
		await expect(publishWith([atOnce])).resolves.toBeUndefined();
		await expect(publishWith([atOnce, { ...other, disabled: true }])).resolves.toBeUndefined();
		const workflowEnds = { ...atOnce, parameters: { ...atOnce.parameters, respond: 'workflowEnds' } };
		const scoped = (node: INode, scope: string): INode => ({ ...node, parameters: { ...node.parameters, options: { scope } } });
		await expect(publishWith([scoped(workflowEnds, 'orders'), scoped(other, 'refunds')])).resolves.toBeUndefined();
		// Without a Scope the two share the workflow's keys: an id both senders use would run once for the two.
		await expect(publishWith([workflowEnds, other])).rejects.toThrow(
			/"Other Webhook" is another Idempotent Webhook in this workflow with the same keys/,
		);
		// n8n activating at its start a workflow that ran before: not refused (a Scope added now would change its keys).
		await expect(publishWith([workflowEnds, other], 'init')).resolves.toBeUndefined();
	});
});
