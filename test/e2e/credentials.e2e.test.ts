// The credential test through n8n's REST API (POST /rest/credentials/test, as the editor's "Test"
// button does), with an owner set up (POST /rest/owner/setup) and logged in (POST /rest/login).
// e2e-tags: single compatibility
import * as stack from '../support/stack/n8nStack';
import { harness, OWNER } from '../support/e2e/harness';

/** n8n's answer to a credential test (POST /rest/credentials/test). */
interface CredentialTestAnswer {
	data: { status: string; message: string };
}

describe('credential tests through the n8n REST API', () => {
	const h = harness();
	const rest = h.rest();
	const cred = stack.TEMPLATE_CREDENTIALS.idempotency;
	const testCredential = (credential: unknown) => rest.testCredential<CredentialTestAnswer>(credential);

	beforeAll(async () => {
		await rest.ownerLogin(OWNER);
	});

	test('the community package credential type is loaded and the imported credential is listed', async () => {
		const list = await rest.call('GET', '/credentials');
		expect(list.status).toBe(200);
		const types = list.json.data.map((c: { id: string; type: string }) => `${c.id}:${c.type}`);
		expect(types).toEqual(
			expect.arrayContaining([
				`${cred.id}:idempotencyPostgresApi`,
				'businessPg01:postgres',
				`${stack.TEMPLATE_CREDENTIALS.signature.id}:webhookSignatureApi`,
			]),
		);
	});

	test('Idempotency Postgres: a good credential passes', async () => {
		const res = await testCredential({ ...cred, data: stack.idempotencyCredentialData(h.state.app) });
		expect(res.status).toBe(200);
		expect(res.json.data.status).toBe('OK');
	});

	test('Idempotency Postgres: a wrong password fails with a clear message', async () => {
		const res = await testCredential({
			...cred,
			data: { ...stack.idempotencyCredentialData(h.state.app), password: 'definitely-wrong' },
		});
		expect(res.status).toBe(200);
		expect(res.json.data.status).toBe('Error');
		expect(res.json.data.message).toMatch(/password|authentication/i);
		expect(res.json.data.message).not.toContain('definitely-wrong');
	});

	test('Idempotency Postgres: an unreachable server fails with a clear message', async () => {
		const data = { ...stack.idempotencyCredentialData(h.state.app), port: 1 };
		const res = await testCredential({ ...cred, data });
		expect(res.json.data.status).toBe('Error');
		expect(res.json.data.message).toMatch(/connect|refused|reach/i);
	});

	test('Webhook Signature Secret: a secret passes, a previous secret is a rotation, blank and 0.1.0 lists fail; no message echoes a secret', async () => {
		const signature = stack.TEMPLATE_CREDENTIALS.signature;
		const one = await testCredential({ ...signature, data: { secret: h.secret } });
		expect(one.json.data).toEqual({ status: 'OK', message: 'One secret configured' });
		const two = await testCredential({ ...signature, data: { secret: h.secret, previousSecret: 'whsec_e2e_old_secret' } });
		expect(two.json.data).toEqual({ status: 'OK', message: 'Secret and previous secret configured (rotation)' });
		const blank = await testCredential({ ...signature, data: { secret: '  ' } });
		expect(blank.json.data.status).toBe('Error');
		// A 0.1.0 credential's space-separated list is refused, never split.
		const legacyList = await testCredential({ ...signature, data: { secrets: `${h.secret} whsec_e2e_old_secret` } });
		expect(legacyList.json.data.status).toBe('Error');
		expect(legacyList.json.data.message).toContain('"Previous Secret"');
		for (const res of [one, two, blank, legacyList]) expect(res.text).not.toMatch(/whsec_/);
	});

	test('the stock Postgres credential of the business step passes too', async () => {
		const res = await testCredential({ ...stack.TEMPLATE_CREDENTIALS.business, data: stack.businessCredentialData(h.state.app) });
		expect(res.json.data).toEqual({ status: 'OK', message: 'Connection successful!' });
	});
});
