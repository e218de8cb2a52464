import type {
	ICredentialsDecrypted,
	ICredentialTestFunctions,
	INodeCredentialTestResult,
} from 'n8n-workflow';

import { parseSecrets } from '../../lib/signature';

/**
 * Checks the Webhook Signature Secret credential offline: there is no provider endpoint to ask.
 * Whether a secret suits a scheme (e.g. base64 after `whsec_` for Standard Webhooks) depends on
 * the node's settings, so it is checked when the node runs. Messages never echo a secret.
 */
export async function webhookSignatureSecretTest(
	this: ICredentialTestFunctions,
	credential: ICredentialsDecrypted,
): Promise<INodeCredentialTestResult> {
	const field = credential.data?.secrets;
	const secrets = parseSecrets(typeof field === 'string' ? field : '');
	if (secrets.length === 0) {
		return { status: 'Error', message: 'Enter at least one signing secret' };
	}
	return {
		status: 'OK',
		message: secrets.length === 1 ? 'One secret configured' : `${secrets.length} secrets configured (rotation)`,
	};
}
