'use strict';
// The floor of an answer without an execution: n8n routes the request to this trigger's webhook(),
// which writes `{}` on the response and starts nothing. The Idempotent Webhook trigger answers a
// duplicate the same way (writeHead, end, noWebhookResponse); whatever it does beyond this is its cost.
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
			webhooks: [{ name: 'default', httpMethod: 'POST', path: '={{$parameter["path"]}}', isFullPath: true, responseMode: 'lastNode' }],
			properties: [{ displayName: 'Path', name: 'path', type: 'string', default: '', required: true }],
		};
	}

	async webhook() {
		this.getResponseObject().writeHead(200, { 'content-type': 'application/json' }).end('{}');
		return { noWebhookResponse: true };
	}
}

module.exports = { BenchFloorTrigger };
