import { isSecretHeader } from '../../../lib/keys/forbiddenHeaders';

// The one rule for a header (or query parameter) that may carry a credential or a signature: what
// the stored answer, the inbox's kept item, key headers and correlation headers all refuse.
describe('isSecretHeader', () => {
	it.each([
		'authorization',
		'x-gitlab-token',
		'x-api-token',
		'token',
		'access_token',
		'stripe-signature',
		'x-hub-signature-256',
		'cookie',
		'x-api-key',
		'api_key',
		'X_API_KEY',
		'private_key',
		'x-shopify-hmac-sha256',
		'pwd',
		'passphrase',
		'access_key',
		'accessKey',
		'aws-access-key-id',
		'signing_key',
		'x-jwt',
	])('%s may carry a credential or a signature', (name) => expect(isSecretHeader(name)).toBe(true));

	it.each(['i-twilio-idempotency-token', 'idempotency-key', 'x-request-id', 'traceparent', 'x-github-delivery', 'content-type'])(
		'%s names the event or the request, not the caller',
		(name) => expect(isSecretHeader(name)).toBe(false),
	);
});
