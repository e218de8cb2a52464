import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import type { HeaderBag } from '../../../lib/headers';
import type { KeyConfig } from '../../../lib/keys/deriveKey';
import type { KeyStore } from '../../../lib/store/contract';
import { ANSWER_RULES, FIRST_EXECUTION_HEADER, OUTCOME_HEADER } from '../../../lib/webhook/answers';
import { decideWebhook, type DecideInput, type KeySettings, type StartedEvent, type WebhookDecision } from '../../../lib/webhook/decide';
import { embeddedModule } from '../../support/storeTargets';
import { freshStore, type StoreFixture } from '../../support/stores';

// Every row of the trigger's answers table (lib/webhook/answers.ts), on a real embedded store in
// a temporary file; the same rows on Postgres are in test/integration/webhookDecision.test.ts.

const SECRET = 'whsec_test_secret';
const NOW_SECONDS = 1_700_000_000;
const clock = (): Date => new Date(NOW_SECONDS * 1000);

function stripeHeaders(body: Buffer, timestamp = NOW_SECONDS, secret = SECRET): Record<string, string> {
	const signature = createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
	return { 'content-type': 'application/json', 'stripe-signature': `t=${timestamp},v1=${signature}` };
}

const EVENT_ID: KeyConfig = { strategy: 'auto', onMissingKey: 'bodyHash' };
const LEASE: Omit<KeySettings, 'key'> = { mode: 'lease', leaseSeconds: 300, retentionSeconds: 86_400 };

let fixture: StoreFixture;
beforeAll(async () => {
	fixture = await freshStore('embedded', { prefix: 'webhook' });
});
afterAll(async () => {
	await fixture.close();
	embeddedModule().closeEmbeddedStores();
});
beforeEach(async () => {
	await fixture.clear();
});

/** A signed Stripe delivery of `body`, decided against the fixture's store. */
async function deliver(
	body: string | Buffer,
	overrides: Partial<DecideInput> & { headers?: HeaderBag; key?: KeyConfig } = {},
): Promise<WebhookDecision> {
	const rawBody = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
	return await decideWebhook({
		request: { method: 'POST', headers: overrides.headers ?? stripeHeaders(rawBody), rawBody, query: {} },
		verification: { scheme: 'stripe', secrets: () => [SECRET] },
		keySettings: { ...LEASE, key: overrides.key ?? EVENT_ID },
		store: () => fixture.store,
		clock,
		workflowId: 'wf-1',
		...overrides,
	});
}

function answerOf(decision: WebhookDecision): { status: number; headers: Record<string, string>; body: unknown } {
	if (!('answer' in decision))
		throw new Error(`expected an answer, got a start for ${JSON.stringify(decision.start.events.map((event) => event.idempotency))}`);
	return decision.answer;
}

/** The one event a delivery without an Events Path starts. */
function startOf(decision: WebhookDecision): StartedEvent {
	if (!('start' in decision)) throw new Error(`expected a start, got ${JSON.stringify(decision.answer)}`);
	expect(decision.start.events).toHaveLength(1);
	return decision.start.events[0];
}

describe('decideWebhook', () => {
	it('starts an execution for a new, verified event, its item carrying the idempotency object and the key reserved', async () => {
		const start = startOf(await deliver('{"id":"evt_new","type":"charge.succeeded"}'));

		expect(start.idempotency).toMatchObject({ key: 'evt:evt_new', isNew: true, outcome: 'new', attempts: 1 });
		expect(typeof start.idempotency.ownerToken).toBe('string');
		expect(start.item).toMatchObject({ body: { id: 'evt_new', type: 'charge.succeeded' }, query: {}, idempotency: start.idempotency });
		expect((await fixture.row('evt:evt_new'))?.status).toBe('processing');
	});

	it('answers a copy of an event still being processed 409, without starting anything', async () => {
		startOf(await deliver('{"id":"evt_busy"}'));

		const answer = answerOf(await deliver('{"id":"evt_busy"}'));

		expect(answer).toMatchObject({ status: 409, body: { status: 'in_progress' } });
		expect(answer.headers[OUTCOME_HEADER]).toBe('in_progress');
	});

	it('answers a duplicate of a completed event with the answer stored for it, naming the first execution', async () => {
		const first = startOf(await deliver('{"id":"evt_done"}'));
		await fixture.store.complete([
			{ key: 'evt:evt_done', ownerToken: first.idempotency.ownerToken as string, response: { received: true, eventKey: 'evt:evt_done' } },
		]);
		await fixture.update('evt:evt_done', { executionId: '4711' });

		const answer = answerOf(await deliver('{"id":"evt_done"}'));

		expect(answer.status).toBe(200);
		expect(answer.body).toEqual({ received: true, eventKey: 'evt:evt_done' });
		expect(answer.headers).toMatchObject({ [OUTCOME_HEADER]: 'duplicate', [FIRST_EXECUTION_HEADER]: '4711' });
	});

	it('answers a duplicate completed without a stored answer 200 {"status":"duplicate"}, and names no execution the store does not know', async () => {
		const first = startOf(await deliver('{"id":"evt_plain"}'));
		await fixture.store.complete([{ key: 'evt:evt_plain', ownerToken: first.idempotency.ownerToken as string }]);

		const answer = answerOf(await deliver('{"id":"evt_plain"}'));

		expect(answer).toMatchObject({ status: 200, body: { status: 'duplicate' } });
		expect(answer.headers).not.toHaveProperty(FIRST_EXECUTION_HEADER);
	});

	it('replays a stored answer that holds request headers and the idempotency object without them', async () => {
		const first = startOf(await deliver('{"id":"evt_old_answer"}'));
		const ownerToken = first.idempotency.ownerToken as string;
		await fixture.store.complete([
			{
				key: 'evt:evt_old_answer',
				ownerToken,
				response: {
					headers: { authorization: 'Basic cHJvdmlkZXI6c2VjcmV0' },
					body: { id: 'evt_old_answer' },
					idempotency: { key: 'evt:evt_old_answer', ownerToken },
				},
			},
		]);

		const answer = answerOf(await deliver('{"id":"evt_old_answer"}'));

		expect(answer).toMatchObject({ status: 200, headers: { [OUTCOME_HEADER]: 'duplicate' } });
		expect(answer.body).toEqual({ body: { id: 'evt_old_answer' } });
	});

	it("replays an answer stored with the trigger's own signing secret or authentication value without them", async () => {
		const authentication = { kind: 'header' as const, credentials: async () => ({ name: 'x-hook-auth', value: 'hk_value_0123456789' }) };
		const headers = (raw: string) => ({ ...stripeHeaders(Buffer.from(raw)), 'x-hook-auth': 'hk_value_0123456789' });
		const raw = '{"id":"evt_own_secret"}';
		const first = startOf(await deliver(raw, { authentication, headers: headers(raw) }));
		await fixture.store.complete([
			{
				key: 'evt:evt_own_secret',
				ownerToken: first.idempotency.ownerToken as string,
				response: { id: 'we_1', secret: SECRET, url: `https://example.test/?s=${encodeURIComponent(SECRET)}`, auth: 'hk_value_0123456789' },
			},
		]);

		const answer = answerOf(await deliver(raw, { authentication, headers: headers(raw) }));

		expect(answer).toMatchObject({ status: 200, body: { id: 'we_1' }, headers: { [OUTCOME_HEADER]: 'duplicate' } });
		expect(answer.body).toEqual({ id: 'we_1' });
	});

	describe('an unsigned trigger', () => {
		const unsigned = { headers: { 'content-type': 'application/json' }, verification: { scheme: 'none' as const } };
		const completeWithAnswer = async (id: string) => {
			const first = startOf(await deliver(`{"id":"${id}"}`, unsigned));
			await fixture.store.complete([
				{ key: `evt:${id}`, ownerToken: first.idempotency.ownerToken as string, response: { received: true, customer: 'cus_private' } },
			]);
			await fixture.update(`evt:${id}`, { executionId: '4711' });
		};

		it('answers a copy from a caller nothing verified 200 {"status":"duplicate"}: never the stored answer or the first execution', async () => {
			await completeWithAnswer('evt_unsigned_done');

			const answer = answerOf(await deliver('{"id":"evt_unsigned_done"}', unsigned));

			expect(answer.status).toBe(200);
			expect(answer.body).toEqual({ status: 'duplicate' });
			expect(answer.headers[OUTCOME_HEADER]).toBe('duplicate');
			expect(answer.headers).not.toHaveProperty(FIRST_EXECUTION_HEADER);
		});

		it('replays the stored answer to a caller that passed authentication', async () => {
			await completeWithAnswer('evt_unsigned_authenticated');
			const authentication = { kind: 'header' as const, credentials: async () => ({ name: 'x-api-key', value: 'k-123' }) };

			const answer = answerOf(
				await deliver('{"id":"evt_unsigned_authenticated"}', {
					...unsigned,
					authentication,
					headers: { 'content-type': 'application/json', 'x-api-key': 'k-123' },
				}),
			);

			expect(answer.body).toEqual({ received: true, customer: 'cus_private' });
			expect(answer.headers).toMatchObject({ [OUTCOME_HEADER]: 'duplicate', [FIRST_EXECUTION_HEADER]: '4711' });
		});
	});

	it('names no first execution whose stored id could not be sent as a header value', async () => {
		const first = startOf(await deliver('{"id":"evt_odd_execution"}'));
		await fixture.store.complete([{ key: 'evt:evt_odd_execution', ownerToken: first.idempotency.ownerToken as string }]);
		await fixture.update('evt:evt_odd_execution', { executionId: '12\r\nset-cookie: x' });

		const answer = answerOf(await deliver('{"id":"evt_odd_execution"}'));

		expect(answer.status).toBe(200);
		expect(answer.headers).not.toHaveProperty(FIRST_EXECUTION_HEADER);
	});

	describe("Permanent mode (the trigger's version 1)", () => {
		const PERMANENT: Omit<KeySettings, 'key'> = { mode: 'permanent', leaseSeconds: 300, retentionSeconds: 86_400 };
		const permanent = async (body: string) => await deliver(body, { keySettings: { ...PERMANENT, key: EVENT_ID } });

		it("answers a copy 409 while the first delivery's run has not ended: its key is not completed by its run yet", async () => {
			startOf(await permanent('{"id":"evt_permanent_busy"}'));

			const answer = answerOf(await permanent('{"id":"evt_permanent_busy"}'));

			expect(answer).toMatchObject({ status: 409, body: { status: 'in_progress' } });
			expect(answer.headers[OUTCOME_HEADER]).toBe('in_progress');
		});

		it('answers a copy 200 duplicate once the run completed the key, and runs the event again once the run failed it', async () => {
			const done = startOf(await permanent('{"id":"evt_permanent_done"}'));
			await fixture.store.complete([{ key: 'evt:evt_permanent_done', ownerToken: done.idempotency.ownerToken as string }]);
			expect(answerOf(await permanent('{"id":"evt_permanent_done"}'))).toMatchObject({ status: 200, body: { status: 'duplicate' } });

			const failed = startOf(await permanent('{"id":"evt_permanent_failed"}'));
			await fixture.store.fail([
				{ key: 'evt:evt_permanent_failed', ownerToken: failed.idempotency.ownerToken as string, error: 'step failed' },
			]);
			expect(startOf(await permanent('{"id":"evt_permanent_failed"}')).idempotency).toMatchObject({ outcome: 'new', attempts: 2 });
		});
	});

	it('answers a forged signature 401 and reserves nothing', async () => {
		const body = Buffer.from('{"id":"evt_forged"}');
		const answer = answerOf(await deliver(body, { headers: stripeHeaders(body, NOW_SECONDS, 'not-the-secret') }));

		expect(answer).toMatchObject({ status: 401, body: { error: 'invalid_signature', reason: 'signature_mismatch' } });
		expect(await fixture.count()).toBe(0);
	});

	it('answers a genuine signature older than the tolerance 401 and reserves nothing', async () => {
		const body = Buffer.from('{"id":"evt_stale"}');
		const answer = answerOf(await deliver(body, { headers: stripeHeaders(body, NOW_SECONDS - 301) }));

		expect(answer).toMatchObject({ status: 401, body: { error: 'invalid_signature', reason: 'timestamp_too_old' } });
		expect(await fixture.count()).toBe(0);
	});

	it.each([
		['missing', () => [] as string[]],
		['unreadable', () => Promise.reject(new Error(`credential could not be decrypted: ${SECRET}`))],
	])('answers 503 when the signing secret is %s, saying nothing of it, and reserves nothing', async (_case, secrets) => {
		const answer = answerOf(await deliver('{"id":"evt_secret"}', { verification: { scheme: 'stripe', secrets } }));

		expect(answer.status).toBe(503);
		expect(answer.headers[OUTCOME_HEADER]).toBe('not_verified');
		expect(JSON.stringify(answer)).not.toContain(SECRET);
		expect(await fixture.count()).toBe(0);
	});

	describe('with a kept copy of the secrets', () => {
		const ROTATED = 'whsec_rotated_secret';
		const kept = (afterMismatch: () => Promise<readonly string[] | undefined>) => {
			const asked: string[] = [];
			const verification = {
				scheme: 'stripe' as const,
				secrets: () => [SECRET],
				secretsAfterMismatch: async () => {
					asked.push('after mismatch');
					return await afterMismatch();
				},
			};
			return { verification, asked };
		};

		it('verifies against a new read before refusing: a delivery signed with a secret saved since the copy is accepted', async () => {
			const body = Buffer.from('{"id":"evt_rotated"}');
			const { verification, asked } = kept(async () => [ROTATED]);

			const decision = await deliver(body, { headers: stripeHeaders(body, NOW_SECONDS, ROTATED), verification });

			expect(startOf(decision).idempotency).toMatchObject({ outcome: 'new', key: 'evt:evt_rotated' });
			expect(asked).toEqual(['after mismatch']);
		});

		it('refuses 401 when the copy is current (nothing new read), and 503 when the new read fails', async () => {
			const body = Buffer.from('{"id":"evt_forged_kept"}');
			const headers = stripeHeaders(body, NOW_SECONDS, 'not-the-secret');
			expect(answerOf(await deliver(body, { headers, verification: kept(async () => undefined).verification }))).toMatchObject({
				status: 401,
				body: { reason: 'signature_mismatch' },
			});
			const failing = kept(async () => await Promise.reject(new Error(`credential could not be decrypted: ${SECRET}`)));
			const answer = answerOf(await deliver(body, { headers, verification: failing.verification }));
			expect(answer.status).toBe(503);
			expect(JSON.stringify(answer)).not.toContain(SECRET);
			expect(await fixture.count()).toBe(0);
		});

		it('reads nothing anew for a refusal no secret changes (a stale timestamp, a missing header)', async () => {
			const body = Buffer.from('{"id":"evt_stale_kept"}');
			const { verification, asked } = kept(async () => [ROTATED]);

			expect(answerOf(await deliver(body, { headers: stripeHeaders(body, NOW_SECONDS - 301), verification })).status).toBe(401);
			expect(answerOf(await deliver(body, { headers: { 'content-type': 'application/json' }, verification })).status).toBe(401);
			expect(asked).toEqual([]);
		});
	});

	it('answers 503 when the key store cannot be opened, naming neither the file nor the payload', async () => {
		const folder = mkdtempSync(path.join(os.tmpdir(), 'webhook-unusable-'));
		const notAFolder = path.join(folder, 'file');
		writeFileSync(notAFolder, '');
		try {
			const unusable: KeyStore = embeddedModule().openEmbeddedKeyStore({ file: path.join(notAFolder, 'keys.sqlite') });
			const answer = answerOf(await deliver('{"id":"evt_store","secret":"payload-text"}', { store: () => unusable }));

			expect(answer).toMatchObject({ status: 503, body: { error: 'key_store_unavailable' } });
			expect(answer.headers[OUTCOME_HEADER]).toBe('not_reserved');
			expect(JSON.stringify(answer)).not.toMatch(/payload-text|webhook-unusable/);
		} finally {
			rmSync(folder, { recursive: true, force: true });
		}
	});

	it.each([
		['a NUL character', '{"id":"evt_\\u0000"}', EVENT_ID],
		['a lone surrogate', '{"id":"evt_\\ud800"}', EVENT_ID],
		['no id, with the body-hash fallback off', '{"type":"no.id"}', { ...EVENT_ID, onMissingKey: 'error' } as KeyConfig],
	])('answers a key with %s 503 not_reserved (docs/templates.md#answers) and reserves nothing', async (_case, body, key) => {
		const answer = answerOf(await deliver(body, { key }));

		expect(answer.status).toBe(ANSWER_RULES.not_reserved.status);
		expect(answer.status).toBe(503);
		expect(answer.body).toMatchObject({ error: 'key_refused' });
		expect(answer.headers[OUTCOME_HEADER]).toBe('not_reserved');
		expect(await fixture.count()).toBe(0);
	});

	it('keys an event without an id by its body hash when the fallback is on', async () => {
		const start = startOf(await deliver('{"type":"no.id"}'));

		expect(start.idempotency.key).toMatch(/^sha256:[0-9a-f]{64}$/);
	});

	// Every bodiless request hashes alike: one key for all would answer each later event as a copy of the first.
	it('refuses a body hash key for an empty body (503 key_refused, its signature checked first); a key from the query is taken', async () => {
		const refused = answerOf(await deliver(Buffer.alloc(0)));
		const forged = answerOf(await deliver(Buffer.alloc(0), { headers: stripeHeaders(Buffer.alloc(0), NOW_SECONDS, 'whsec_not_it') }));
		const fromQuery: KeyConfig = { strategy: 'field', fieldPath: 'query.event', onMissingKey: 'error' };
		const headers = stripeHeaders(Buffer.alloc(0));
		const keyed = startOf(
			await deliver(Buffer.alloc(0), {
				key: fromQuery,
				request: { method: 'POST', headers, rawBody: Buffer.alloc(0), query: { event: 'ev_1' } },
			}),
		);

		expect(refused).toMatchObject({ status: 503, body: { error: 'key_refused' } });
		expect(forged.status).toBe(401);
		expect([keyed.idempotency.key, keyed.item.body]).toEqual(['ev_1', {}]);
	});

	it('reads a Field key from the query, and a form body as its fields', async () => {
		const body = Buffer.from('event_id=ev%2042&type=command');
		const headers = { ...stripeHeaders(body), 'content-type': 'application/x-www-form-urlencoded' };
		const fromQuery: KeyConfig = { strategy: 'field', fieldPath: 'query.delivery', fieldPrefix: 'q:', onMissingKey: 'error' };
		const fromForm: KeyConfig = { strategy: 'field', fieldPath: 'body.event_id', onMissingKey: 'error' };

		const byQuery = startOf(
			await deliver(body, { headers, key: fromQuery, request: { method: 'POST', headers, rawBody: body, query: { delivery: 'd-1' } } }),
		);
		const byForm = startOf(await deliver(body, { headers, key: fromForm }));

		expect(byQuery.idempotency.key).toBe('q:d-1');
		expect(byForm.idempotency.key).toBe('ev 42');
		expect(byForm.item.body).toEqual({ event_id: 'ev 42', type: 'command' });
	});

	it('keeps an id beyond 2^53 exact, from the raw bytes', async () => {
		const start = startOf(await deliver('{"id":12345678901234567891}'));

		expect(start.idempotency.key).toBe('evt:12345678901234567891');
		expect(startOf(await deliver('{"id":12345678901234567892}')).idempotency.key).toBe('evt:12345678901234567892');
	});

	it('verifies and keys a 5 MB body', async () => {
		const body = Buffer.from(JSON.stringify({ id: 'evt_large', blob: 'x'.repeat(5 * 1024 * 1024) }));

		const start = startOf(await deliver(body));

		expect(start.idempotency.key).toBe('evt:evt_large');
		expect(start.rawBody.length).toBe(body.length);
	});

	it('refuses a signature header given twice with different values (401), and one given twice alike verifies', async () => {
		const body = Buffer.from('{"id":"evt_twice"}');
		const genuine = stripeHeaders(body)['stripe-signature'];
		const forged = stripeHeaders(body, NOW_SECONDS, 'other')['stripe-signature'];

		const twiceDifferent = answerOf(
			await deliver(body, { headers: { 'content-type': 'application/json', 'stripe-signature': [genuine, forged] } }),
		);
		expect(twiceDifferent).toMatchObject({ status: 401, body: { error: 'invalid_signature', reason: 'malformed_header' } });

		const twiceAlike = await deliver(body, { headers: { 'content-type': 'application/json', 'stripe-signature': [genuine, genuine] } });
		expect(startOf(twiceAlike).idempotency.key).toBe('evt:evt_twice');
	});

	it('refuses a key header given twice with different values 503 not_reserved', async () => {
		const headerKey: KeyConfig = { strategy: 'header', headerName: 'x-event-id', onMissingKey: 'error' };
		const body = Buffer.from('{"id":"evt_header"}');

		const answer = answerOf(
			await deliver(body, { key: headerKey, verification: { scheme: 'none' }, headers: { 'x-event-id': ['a', 'b'] } }),
		);

		expect(answer).toMatchObject({ status: 503, body: { error: 'key_refused' } });
	});

	it('takes an unsigned request only when "none" is chosen explicitly', async () => {
		const body = '{"id":"evt_unsigned"}';
		const unsigned = { 'content-type': 'application/json' };

		expect(answerOf(await deliver(body, { headers: unsigned })).status).toBe(401);
		expect(startOf(await deliver(body, { headers: unsigned, verification: { scheme: 'none' } })).idempotency.key).toBe('evt:evt_unsigned');
	});

	describe('authentication, before the signature', () => {
		const basic = { kind: 'basic' as const, credentials: async () => ({ user: 'provider', password: 'pässword' }) };
		const header = { kind: 'header' as const, credentials: async () => ({ name: 'x-api-key', value: 'k-123' }) };
		const body = Buffer.from('{"id":"evt_auth"}');
		const withHeaders = (extra: Record<string, string | string[]>) => ({ ...stripeHeaders(body), ...extra });
		const basicOf = (credentials: string) => `Basic ${Buffer.from(credentials, 'utf8').toString('base64')}`;

		it.each([
			['Basic, none sent', basic, {}, 401],
			['Basic, wrong password', basic, { authorization: basicOf('provider:wrong') }, 403],
			['Header, none sent', header, {}, 403],
			['Header, wrong value', header, { 'x-api-key': 'k-124' }, 403],
			['Header, sent twice with different values', header, { 'x-api-key': ['k-123', 'k-999'] }, 403],
		])('refuses a caller (%s) and reserves nothing', async (_case, authentication, extra, status) => {
			const answer = answerOf(await deliver(body, { authentication, headers: withHeaders(extra) }));

			expect(answer.status).toBe(status);
			if (status === 401) expect(answer.headers['www-authenticate']).toBe('Basic realm="Webhook"');
			expect(await fixture.count()).toBe(0);
		});

		it.each([
			['Basic', basic, { authorization: basicOf('provider:pässword') }],
			['Header', header, { 'x-api-key': 'k-123' }],
		])('lets a caller with the right %s credentials through to the signature check', async (_case, authentication, extra) => {
			expect(startOf(await deliver(body, { authentication, headers: withHeaders(extra) })).idempotency.key).toBe('evt:evt_auth');
		});

		it('answers 503 when the authentication credential cannot be read', async () => {
			const unreadable = { kind: 'basic' as const, credentials: () => Promise.reject(new Error('cannot decrypt')) };
			expect(answerOf(await deliver(body, { authentication: unreadable })).status).toBe(503);
		});
	});

	it('answers anything unexpected 503 with a generic body, and never throws', async () => {
		const answer = answerOf(
			await deliver('{"id":"evt_odd","card":"4242"}', {
				store: () => {
					throw new TypeError(`unexpected: ${SECRET} 4242`);
				},
			}),
		);
		expect(answer.status).toBe(503);
		expect(JSON.stringify(answer)).not.toMatch(/4242|whsec/);

		const broken = await decideWebhook({ request: null } as unknown as DecideInput);
		expect(answerOf(broken)).toMatchObject({ status: 503, body: { error: 'internal_error' } });
	});

	it("says what each answer is counted as, with the key once it was derived (for the log line's hash)", async () => {
		const counted = (decision: WebhookDecision) => ('answer' in decision ? { counted: decision.counted, key: decision.key } : 'started');
		const basic = { kind: 'basic' as const, credentials: async () => ({ user: 'provider', password: 'right' }) };
		const body = '{"id":"evt_counted"}';

		expect(counted(await deliver(body))).toBe('started');
		expect(counted(await deliver(body))).toEqual({ counted: 'in_progress', key: 'evt:evt_counted' });
		await fixture.update('evt:evt_counted', { status: 'completed', lockedUntil: null });
		expect(counted(await deliver(body))).toEqual({ counted: 'duplicate', key: 'evt:evt_counted' });
		expect(counted(await deliver(body, { headers: stripeHeaders(Buffer.from(body), NOW_SECONDS, 'forged') }))).toEqual({
			counted: 'invalid_signature',
			key: undefined,
		});
		expect(counted(await deliver(body, { verification: { scheme: 'stripe', secrets: () => Promise.reject(new Error('x')) } }))).toEqual({
			counted: 'not_verified',
			key: undefined,
		});
		expect(counted(await deliver(body, { authentication: basic }))).toEqual({ counted: 'authorization_required', key: undefined });
		expect(counted(await deliver('{"type":"no.id"}', { key: { ...EVENT_ID, onMissingKey: 'error' } }))).toEqual({
			counted: 'key_refused',
			key: undefined,
		});
		const unreachable = () => Promise.reject(new Error('store down'));
		expect(counted(await deliver('{"id":"evt_unreachable"}', { store: unreachable }))).toEqual({
			counted: 'key_store_unavailable',
			key: 'evt:evt_unreachable',
		});
		expect(counted(await decideWebhook({ request: null } as unknown as DecideInput))).toEqual({
			counted: 'internal_error',
			key: undefined,
		});
	});
});
