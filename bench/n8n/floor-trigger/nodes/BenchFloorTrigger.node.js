'use strict';
// The floor of an answer without an execution: n8n routes the request to this trigger's webhook(),
// which writes `{}` on the response and starts nothing. The Idempotent Webhook trigger answers a
// duplicate the same way (writeHead, end, noWebhookResponse); whatever it does beyond this is its cost.
// The path is read from the parameter without n8n's expression engine where n8n can (2.x), as the
// Idempotent Webhook trigger's is (nodes/IdempotentWebhook/webhookFields.ts): the floor is the cheapest
// a community trigger can be.
function pathField() {
	const template = '={{$parameter["path"]}}';
	return { path: template, [Symbol.for('n8n.webhookDescriptionResolvers')]: { path: { template, resolve: (parameters) => parameters?.path } } };
}

class BenchFloorTrigger {
	constructor() {
		this.description = {
			displayName: 'Bench Floor Trigger',
			name: 'benchFloorTrigger',
			group: ['trigger'],
			version: 1,
			description: 'Benchmark only: answers {} and starts no execution',
			defaults: { name: 'Bench Floor Trigger' },
			inputs: [],
			outputs: ['main'],
			webhooks: [{ name: 'default', httpMethod: 'POST', ...pathField(), isFullPath: true, responseMode: 'lastNode' }],
			properties: [{ displayName: 'Path', name: 'path', type: 'string', default: '', required: true }],
		};
	}

	async webhook() {
		this.getResponseObject().writeHead(200, { 'content-type': 'application/json' }).end('{}');
		return { noWebhookResponse: true };
	}
}

module.exports = { BenchFloorTrigger };
