import type { ICredentialDataDecryptedObject, IWebhookFunctions } from 'n8n-workflow';

import { resolveSecrets, type ConfiguredSecrets } from '../../lib/signature';
import { KeptReads, type KeptRead } from '../../lib/webhook/keptReads';
import type { VerificationSettings } from '../../lib/webhook/decide';

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

/** Kept copies of the trigger's secrets, for this process (lib/webhook/keptReads.ts says how long). */
const webhookSecretCache = new KeptReads<readonly string[]>();

/**
 * The signing secrets a webhook delivery verifies with. A production delivery uses the copy this
 * process read within the last seconds and reads anew before refusing on it; a call to the
 * editor's test URL reads the credential every time (the user may have just edited it).
 */
export function webhookSigningSecrets(
	context: Pick<IWebhookFunctions, 'getCredentials' | 'getNode' | 'getMode' | 'getWorkflow'>,
): Pick<Extract<VerificationSettings, { secrets: unknown }>, 'secrets' | 'secretsAfterMismatch'> {
	const read = async () => resolveSecrets(configuredSecrets(await context.getCredentials<ICredentialDataDecryptedObject>(CREDENTIAL_TYPE)));
	const credentialId = context.getNode().credentials?.[CREDENTIAL_TYPE]?.id;
	if (context.getMode() === 'manual' || !credentialId) return { secrets: read };
	const id = `${String(context.getWorkflow().id ?? '')}\u0000${context.getNode().id}\u0000${credentialId}`;
	let used: KeptRead<readonly string[]> | undefined;
	return {
		secrets: async () => (used = await webhookSecretCache.current(id, read)).value,
		secretsAfterMismatch: async () => (used ? (await webhookSecretCache.fresh(id, read, used))?.value : await read()),
	};
}

/** Drops every kept copy: the next delivery of each trigger reads its credential. */
export function forgetKeptSigningSecrets(): void {
	webhookSecretCache.clear();
}
