import type { Icon, ICredentialType, INodeProperties } from 'n8n-workflow';

/**
 * The header a caller of the Idempotent Webhook trigger must send, and its value (n8n's own
 * Header Auth credential cannot be used by a community node).
 */
export class IdempotentWebhookHeaderAuthApi implements ICredentialType {
	name = 'idempotentWebhookHeaderAuthApi';

	// Not an API credential but what a caller must send; "API" in its name would mislead users.
	// eslint-disable-next-line n8n-nodes-base/cred-class-field-display-name-missing-api
	displayName = 'Idempotent Webhook Header Auth';

	icon: Icon = { light: 'file:webhookSignature.svg', dark: 'file:webhookSignature.dark.svg' };

	documentationUrl = 'https://www.npmjs.com/package/n8n-nodes-idempotency';

	properties: INodeProperties[] = [
		{ displayName: 'Name', name: 'name', type: 'string', default: '', required: true, placeholder: 'X-Api-Key' },
		// The value is the shared secret a caller proves itself with.
		// eslint-disable-next-line @n8n/community-nodes/credential-unnecessary-password
		{ displayName: 'Value', name: 'value', type: 'string', typeOptions: { password: true }, default: '', required: true },
	];
}
