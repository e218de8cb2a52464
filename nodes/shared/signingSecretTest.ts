import type { ICredentialsDecrypted, ICredentialTestFunctions, INodeCredentialTestResult } from 'n8n-workflow';

import { hasOuterWhitespace, resolveSecrets } from '../../lib/signature';
import { configuredSecrets } from './signingSecret';

/**
 * Checks the Webhook Signature Secret credential offline: there is no provider endpoint to ask.
 * Whether a secret suits a scheme (e.g. base64 after `whsec_` for Standard Webhooks) depends on
 * the node's settings, so it is checked when the node runs. Messages never echo a secret.
 */
export async function webhookSignatureSecretTest(
	this: ICredentialTestFunctions,
	credential: ICredentialsDecrypted,
): Promise<INodeCredentialTestResult> {
	let secrets: string[];
	try {
		secrets = resolveSecrets(configuredSecrets(credential.data));
	} catch (error) {
		return { status: 'Error', message: (error as Error).message };
	}
	// Allowed, since whitespace is part of the key, but almost always a paste accident; n8n shows
	// only an error's message, so the warning is an error.
	if (secrets.some(hasOuterWhitespace)) {
		return {
			status: 'Error',
			message:
				"A secret starts or ends with a space (or other whitespace), which is used as part of the secret. Remove it unless the provider's secret really has it.",
		};
	}
	return {
		status: 'OK',
		message: secrets.length === 1 ? 'One secret configured' : 'Secret and previous secret configured (rotation)',
	};
}
