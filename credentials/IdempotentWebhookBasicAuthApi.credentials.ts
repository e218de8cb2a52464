import type { Icon, ICredentialType, INodeProperties } from 'n8n-workflow';

/**
 * The user and password a caller of the Idempotent Webhook trigger must send with HTTP Basic
 * authentication (n8n's own Basic Auth credential cannot be used by a community node).
 */
export class IdempotentWebhookBasicAuthApi implements ICredentialType {
	name = 'idempotentWebhookBasicAuthApi';

	// Not an API credential but what a caller must send; "API" in its name would mislead users.
	// eslint-disable-next-line n8n-nodes-base/cred-class-field-display-name-missing-api
	displayName = 'Idempotent Webhook Basic Auth';

	icon: Icon = { light: 'file:webhookSignature.svg', dark: 'file:webhookSignature.dark.svg' };

	documentationUrl = 'https://www.npmjs.com/package/n8n-nodes-idempotency';

	properties: INodeProperties[] = [
		{ displayName: 'User', name: 'user', type: 'string', default: '', required: true },
		{ displayName: 'Password', name: 'password', type: 'string', typeOptions: { password: true }, default: '', required: true },
	];
}
