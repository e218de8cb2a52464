import {
	NodeConnectionTypes,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
} from 'n8n-workflow';

import { schemeSubtitle } from '../shared/providerOptions';
import { webhookSignatureSecretTest } from '../shared/signingSecretTest';
import { properties } from './description';
import { verifyItems } from './execute';

/**
 * Verifies a webhook request's HMAC signature (Stripe, GitHub, Shopify, Slack, Standard Webhooks /
 * Svix, or a generic HMAC) over the raw body, and routes the item to Valid or Invalid. Belongs
 * right after the Webhook node and before Idempotency Reserve.
 */
export class WebhookSignatureVerify implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Webhook Signature Verify',
		name: 'webhookSignatureVerify',
		icon: { light: 'file:webhookSignatureVerify.svg', dark: 'file:webhookSignatureVerify.dark.svg' },
		group: ['transform'],
		version: 1,
		subtitle: schemeSubtitle(),
		description: 'Verify the HMAC signature of an incoming webhook before acting on it',
		defaults: {
			name: 'Webhook Signature Verify',
		},
		usableAsTool: true,
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main, NodeConnectionTypes.Main],
		outputNames: ['Valid', 'Invalid'],
		credentials: [
			{
				name: 'webhookSignatureApi',
				required: true,
				testedBy: 'webhookSignatureSecretTest',
			},
		],
		properties,
	};

	methods = {
		credentialTest: { webhookSignatureSecretTest },
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return await verifyItems.call(this);
	}
}
