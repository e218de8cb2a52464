import type { Icon, ICredentialType, INodeProperties } from 'n8n-workflow';

/**
 * The signing secrets of one webhook sender. Several secrets are accepted so that a secret can be
 * rotated without rejecting deliveries signed with the old one. Tested by the Webhook Signature
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
			displayName: 'Secrets',
			name: 'secrets',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			required: true,
			placeholder: 'whsec_…',
			description:
				'The webhook signing secret, exactly as the provider shows it (Stripe and Standard Webhooks secrets keep their whsec_ prefix). To rotate, enter the new and the old secret separated by a space or a line break; a request signed with any of them is accepted.',
		},
	];
}
