import { resolveWebhookDescriptionField, webhookDescriptionIsNativelyResolvable, type INode, type IWebhookDescription } from 'n8n-workflow';

import { IdempotentWebhook } from '../../../nodes/IdempotentWebhook/IdempotentWebhook.node';

// n8n reads the trigger's method and path on every request: from the parameters where it can, in its
// expression engine otherwise. Both must give the same value, and the editor must see the same templates.

const [webhook] = new IdempotentWebhook().description.webhooks as IWebhookDescription[];
const trigger = (parameters: INode['parameters']): INode => ({
	id: 't',
	name: 'Idempotent Webhook',
	type: 'n8n-nodes-idempotency.idempotentWebhook',
	typeVersion: 1,
	position: [0, 0],
	parameters,
});

describe("the Idempotent Webhook trigger's webhook description", () => {
	it('keeps the templates the editor and n8n 1.x evaluate', () => {
		expect(JSON.parse(JSON.stringify(webhook))).toMatchObject({
			httpMethod: '={{$parameter["httpMethod"]}}',
			path: '={{$parameter["path"]}}',
			isFullPath: true,
		});
	});

	it("is read from static parameters without n8n's expression engine", () => {
		expect(webhookDescriptionIsNativelyResolvable(webhook)).toBe(true);
		const node = trigger({ httpMethod: 'PUT', path: 'stripe/events', scheme: 'stripe' });
		expect(resolveWebhookDescriptionField(node, webhook, 'httpMethod')).toEqual({ resolved: true, value: 'PUT' });
		expect(resolveWebhookDescriptionField(node, webhook, 'path')).toEqual({ resolved: true, value: 'stripe/events' });
	});

	it('is left to the expression engine when a parameter holds an expression', () => {
		const node = trigger({ httpMethod: 'POST', path: '={{ "events" }}' });
		expect(resolveWebhookDescriptionField(node, webhook, 'path')).toEqual({ resolved: false });
	});
});
