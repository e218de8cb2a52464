import type { Icon, ICredentialType, INodeProperties } from 'n8n-workflow';

/**
 * The signing secret of one webhook sender, plus the previous one while it is being rotated.
 * Each field holds one exact secret: nothing is split or trimmed. Tested by the Webhook Signature
 * Verify node (`webhookSignatureSecretTest`): there is no provider endpoint to call.
 */
export class WebhookSignatureApi implements ICredentialType {
	name = 'webhookSignatureApi';

	// Not an API credential but a shared signing secret; "API" in its name would mislead users.
	// eslint-disable-next-line n8n-nodes-base/cred-class-field-display-name-missing-api
	displayName = 'Webhook Signature Secret';

	icon: Icon = { light: 'file:webhookSignature.svg', dark: 'file:webhookSignature.dark.svg' };

	documentationUrl = 'https://www.npmjs.com/package/n8n-nodes-idempotency';

	properties: INodeProperties[] = [
		{
			displayName: 'Secret',
			name: 'secret',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			required: true,
			placeholder: 'whsec_…',
			description:
				'The webhook signing secret, exactly as the provider shows it. Every character counts, spaces included, at the start and end too; Stripe and Standard Webhooks secrets keep their whsec_ prefix.',
		},
		{
			displayName: 'Previous Secret',
			name: 'previousSecret',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			description:
				'Only while rotating: the secret being replaced, exactly as before. A request signed with either secret is accepted. Clear it once the provider signs only with the new secret.',
		},
		{
			// Version 0.1.0's space-separated list. Kept declared so n8n still hands it to the node
			// (undeclared fields are dropped) and redacts it like a password in the editor.
			// Read only when Secret is empty, and only if it holds one secret without spaces.
			displayName: 'Secrets (Version 0.1.0)',
			name: 'secrets',
			type: 'hidden',
			typeOptions: { password: true },
			default: '',
		},
	];
}
