import { deriveKey, type KeyConfig } from '../../../lib/keys/deriveKey';
import { verifySignature } from '../../../lib/signature';
import { BODY, NOW } from '../signature/fixtures';

/*
 * Standard Webhooks and Svix name the same signed id `webhook-id` or `svix-id`; the verifier reads
 * either (webhook-* first), and so does the key preset. Found by red-teaming the header rule: one
 * delivery, re-sent with its id under the other name, is still genuine (the id's value is what is
 * signed, not the header's name) — so its key must not change either, or the re-sent copy is New.
 */
const SECRET = 'whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=';
// From standardWebhooks.test.ts: HMAC of 'msg_1.1700000000.' + BODY with the key under SECRET.
const SIGNATURE = 'v1,swWzXvokW8YVExXQw2PnyAsWN+wxu2/MGbRbWUVovRI=';
const PRESET: KeyConfig = { strategy: 'preset', preset: 'standardWebhooks', onMissingKey: 'bodyHash' };

const asSvix = { 'svix-id': 'msg_1', 'svix-timestamp': String(NOW), 'svix-signature': SIGNATURE };
// The same delivery re-sent with the id under the other name (a proxy renaming, or a replay within the tolerance).
const idRenamed = { 'webhook-id': 'msg_1', 'svix-timestamp': String(NOW), 'svix-signature': SIGNATURE };
const asStandard = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(NOW), 'webhook-signature': SIGNATURE };
const asStandardIdRenamed = { 'svix-id': 'msg_1', 'webhook-timestamp': String(NOW), 'webhook-signature': SIGNATURE };

const genuine = (headers: Record<string, string>) =>
	verifySignature({ scheme: 'standardWebhooks', headers, rawBody: Buffer.from(BODY), secrets: [SECRET], nowSeconds: NOW }).valid;
const keyOf = (headers: Record<string, string>) => deriveKey({ body: JSON.parse(BODY), headers }, PRESET).key;

describe('the Standard Webhooks preset: one signed id, whichever header name carries it', () => {
	it('every form of the delivery is genuine (the precondition of the attack)', () => {
		for (const headers of [asSvix, idRenamed, asStandard, asStandardIdRenamed]) expect(genuine(headers)).toBe(true);
	});

	it('gives every genuine form of one delivery the same key, so a re-sent copy is a Duplicate', () => {
		const keys = new Set([asSvix, idRenamed, asStandard, asStandardIdRenamed].map(keyOf));
		expect([...keys]).toEqual(['webhook-id:msg_1']);
	});
});
