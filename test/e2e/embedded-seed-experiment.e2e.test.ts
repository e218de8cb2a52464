// The seed recipe's experiment through templates/idempotent-webhook-embedded.json: Store Embedded on
// every node, no Postgres credential, its business step an HTTP call to the user's API (the test's
// sink counts the calls). Event A, A again as Stripe resends it (a new valid signature), B, a forgery
// of C (401), C, and a body without id twice. Single process, and queue mode with main and two workers
// sharing the n8n folder (one host).
// e2e-tags: single queue compatibility
import crypto from 'node:crypto';
import { harness, outputTaken, outputItem, eventId } from '../support/e2e/harness';
import { EMB, useEmbeddedWebhook, keyStates } from '../support/e2e/embedded';
import type { Delivery } from '../support/stack/n8nStack';
import type { Json } from '../support/e2e/workflows';

describe('seed experiment through templates/idempotent-webhook-embedded.json (Store: Embedded)', () => {
	const h = harness();
	// { api, webhook }, filled in by the beforeAll useEmbeddedWebhook registers, before the tests run.
	const site = useEmbeddedWebhook(h, 'emb-seed');

	// Queue mode on one host: main and the workers share one n8n folder, and the key file's store id
	// is set on every process (IDEMPOTENCY_EMBEDDED_STORE_ID, as the harness and docs/embedded-store.md do).
	(h.topology === 'queue' ? test : test.skip)(
		'queue mode, one shared folder, the store id set on every process: the first delivery is processed, once',
		async () => {
			const { api, webhook } = site;
			if (!webhook.warmUp) throw new Error('the embedded template was published without its warm-up delivery in queue mode');
			const { answers, key } = webhook.warmUp;
			expect(answers).toEqual([expect.objectContaining({ status: 200, outcome: 'new' })]);
			expect(api.calls(key)).toBe(1);
			expect(await keyStates(h, [key])).toEqual({ [key]: { status: 'completed', attempts: 1, duplicates: 0 } });
		},
	);

	test('A, A with a new signature, B, a forged C, C, a body without id twice: one API call per event, the repeats duplicates, nothing in Postgres', async () => {
		const { api, webhook } = site;
		const mark = await h.executionMark();
		const a = { id: eventId('emb_a'), type: 'payment_intent.succeeded' };
		const b = { id: eventId('emb_b'), type: 'invoice.paid' };
		const c = { id: eventId('emb_c'), type: 'charge.refunded' };
		// Raw bytes with unusual spacing: the key hashes exactly these bytes, not re-serialised JSON.
		const raw = `{ "type": "ping",  "note": "no id here", "nonce": "${crypto.randomUUID()}" }`;
		const idlessKey = `sha256:${crypto.createHash('sha256').update(raw).digest('hex')}`;
		const now = Math.floor(Date.now() / 1000);

		const answers: Array<Delivery<Json>> = [];
		answers.push(await h.deliver(webhook.url, a, {}, { timestamp: now - 60 }));
		answers.push(await h.deliver(webhook.url, a, {}, { timestamp: now })); // Stripe's retry: a new signature
		answers.push(await h.deliver(webhook.url, b));
		answers.push(await h.deliver(webhook.url, c, {}, { secret: 'whsec_not_the_endpoint_secret' }));
		answers.push(await h.deliver(webhook.url, c));
		answers.push(await h.deliver(webhook.url, raw));
		answers.push(await h.deliver(webhook.url, raw));
		expect(answers[0].signature).not.toBe(answers[1].signature);
		expect(answers.map((answer) => [answer.status, answer.outcome])).toEqual([
			[200, 'new'],
			[200, 'duplicate'],
			[200, 'new'],
			[401, 'invalid_signature'],
			[200, 'new'],
			[200, 'new'],
			[200, 'duplicate'],
		]);
		const keys = [`evt:${a.id}`, `evt:${b.id}`, `evt:${c.id}`, idlessKey];
		expect(answers.filter((answer) => answer.status === 200).map((answer) => answer.json?.eventKey)).toEqual([
			keys[0],
			keys[0],
			keys[1],
			keys[2],
			keys[3],
			keys[3],
		]);
		// The duplicate replays the answer Settle stored for the first delivery.
		expect(answers[1].json).toEqual(answers[0].json);

		// The effects: one API call per event, with the event's key as its Idempotency-Key.
		expect(Object.fromEntries(keys.map((key) => [key, api.calls(key)]))).toEqual(Object.fromEntries(keys.map((key) => [key, 1])));
		expect(api.log().every((call) => call.idempotencyKey === call.key)).toBe(true);
		// The keys are in the embedded store, completed; the forgery reserved nothing.
		expect(await keyStates(h, keys)).toEqual({
			[keys[0]]: { status: 'completed', attempts: 1, duplicates: 1 },
			[keys[1]]: { status: 'completed', attempts: 1, duplicates: 0 },
			[keys[2]]: { status: 'completed', attempts: 1, duplicates: 0 },
			[keys[3]]: { status: 'completed', attempts: 1, duplicates: 1 },
		});
		// …and not in Postgres: the template uses no database of the user's.
		const inPostgres = await h.appQuery('SELECT count(*)::int AS n FROM processed_events WHERE key = ANY($1)', [keys]);
		expect(inPostgres.rows[0].n).toBe(0);

		const executions = await h.waitForExecutions(webhook.workflowId, mark, 7);
		expect(executions.map((e) => e.status)).toEqual(Array(7).fill('success'));
		expect(executions.map((e) => outputTaken(e, EMB.verify))).toEqual([0, 0, 0, 1, 0, 0, 0]);
		expect(executions.filter((e) => outputTaken(e, EMB.verify) === 0).map((e) => outputTaken(e, EMB.reserve))).toEqual([0, 1, 0, 0, 0, 1]);
		expect(executions.filter((e) => e.nodesRun.includes(EMB.business))).toHaveLength(4);
		const reserved = outputItem(executions[5], EMB.reserve).idempotency;
		expect(reserved).toMatchObject({ key: idlessKey, outcome: 'new', isNew: true });
	});
});
