import type { ICredentialDataDecryptedObject } from 'n8n-workflow';

import type { ConfiguredSecrets } from '../../lib/signature';

/*
 * The Webhook Signature Secret credential, as Webhook Signature Verify and the Idempotent Webhook
 * trigger read it.
 */

// Spelled out in the node description too: n8n's lint reads it as a literal there.
export const CREDENTIAL_TYPE = 'webhookSignatureApi';

const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** The credential's stored fields, untouched: a secret is used exactly as entered. */
export function configuredSecrets(data: ICredentialDataDecryptedObject | undefined): ConfiguredSecrets {
	return {
		secret: text(data?.secret),
		previousSecret: text(data?.previousSecret),
		legacySecrets: text(data?.secrets),
	};
}
