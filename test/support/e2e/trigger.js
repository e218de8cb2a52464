// The Idempotent Webhook trigger's template (templates/idempotent-webhook-trigger.json) in the
// running n8n: published per test file with the one change a user makes — the business step's URL
// pointed at their API (here the test's sink) — on a webhook path of its own.
const { randomUUID } = require('node:crypto');
const { readShippedTemplate, freshWebhookPath, publishWorkflow } = require('./restWorkflows');

const TRIGGER_TEMPLATE = 'idempotent-webhook-trigger.json';
const TRIGGER = { node: 'Idempotent Webhook', business: 'Business Step (call your API)', type: 'n8n-nodes-idempotency.idempotentWebhook' };

/**
 * Publishes a copy of the trigger template calling `apiUrl`; `edit(workflow)` changes the workflow
 * first, `change(node)` each node. Returns { url, workflowId, webhookPath }.
 */
async function publishTrigger(h, label, { apiUrl, change = (node) => node, template = TRIGGER_TEMPLATE, edit = (workflow) => workflow } = {}) {
	const workflow = edit(readShippedTemplate(template));
	const webhookPath = freshWebhookPath(label);
	workflow.nodes = workflow.nodes
		.map((node) => (node.type === TRIGGER.type ? { ...node, webhookId: randomUUID(), parameters: { ...node.parameters, path: webhookPath } } : node))
		.map((node) => (node.name === TRIGGER.business && apiUrl ? { ...node, parameters: { ...node.parameters, url: apiUrl } } : node))
		.map(change);
	const workflowId = await publishWorkflow(h, workflow, webhookPath);
	return { url: `${h.state.baseUrl}/webhook/${webhookPath}`, workflowId, webhookPath };
}

module.exports = { TRIGGER, TRIGGER_TEMPLATE, publishTrigger, withWaitBeforeStep };

/** The template with a Wait node (1 s) between the trigger and the business step, as a user adds one. */
function withWaitBeforeStep(workflow) {
	const wait = { id: randomUUID(), name: 'Wait', type: 'n8n-nodes-base.wait', typeVersion: 1.1, position: [120, 0], webhookId: randomUUID(), parameters: { amount: 1 } };
	return {
		...workflow,
		nodes: [...workflow.nodes, wait],
		connections: {
			[TRIGGER.node]: { main: [[{ node: 'Wait', type: 'main', index: 0 }]] },
			Wait: { main: [[{ node: TRIGGER.business, type: 'main', index: 0 }]] },
		},
	};
}
