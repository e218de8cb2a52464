// The seed recipe's experiment, replayed against the webhook template on a real n8n:
// event A, A again with a different (fresh, valid) stripe-signature, B → 3 executions, 2 business
// rows, the repeat answered 200 without running the business step; a body without id twice →
// sha256: key, duplicate. Every delivery is signed like Stripe (the template verifies first).
const crypto = require('node:crypto');
const { harness, outputTaken, eventId, NODE } = require('./support/harness');

describe('seed experiment through templates/idempotent-webhook.json', () => {
	const h = harness();

	test('A, A (new stripe-signature), B: 3 executions, 2 business rows, the repeat is answered 200 without the business step', async () => {
		const mark = await h.executionMark();
		const a = { id: eventId('A'), type: 'payment_intent.succeeded', data: { amount: 1200 } };
		const b = { id: eventId('B'), type: 'invoice.paid' };

		const now = Math.floor(Date.now() / 1000);
		const first = await h.deliver(h.webhookUrl, a, {}, { timestamp: now - 60 });
		// Stripe's retry: same event, a new timestamp, so a different (valid) Stripe-Signature header.
		const repeat = await h.deliver(h.webhookUrl, a, {}, { timestamp: now });
		const other = await h.deliver(h.webhookUrl, b);
		expect(repeat.signature).not.toBe(first.signature);

		expect([first.status, first.outcome]).toEqual([200, 'new']);
		expect([repeat.status, repeat.outcome]).toEqual([200, 'duplicate']);
		expect([other.status, other.outcome]).toEqual([200, 'new']);
		// The duplicate replays the response Mark Complete stored for the first delivery.
		expect(first.json).toEqual({ received: true, eventKey: `evt:${a.id}` });
		expect(repeat.json).toEqual(first.json);

		const executions = await h.waitForExecutions(h.IDS.webhook, mark, 3);
		expect(executions).toHaveLength(3);
		expect(executions.map((e) => e.status)).toEqual(['success', 'success', 'success']);
		expect(executions.map((e) => outputTaken(e, NODE.verify))).toEqual([0, 0, 0]); // all Valid
		expect(executions.map((e) => outputTaken(e, NODE.reserve))).toEqual([0, 1, 0]);
		expect(executions[1].nodesRun).not.toContain(NODE.business);
		expect(executions[1].nodesRun).toContain(NODE.respondDuplicate);
		for (const e of [executions[0], executions[2]]) {
			expect(e.nodesRun).toEqual(expect.arrayContaining([NODE.business, NODE.complete, NODE.respond200]));
		}

		const { rows } = await h.appQuery('SELECT event_key, event_type FROM business_log WHERE event_key = ANY($1) ORDER BY id', [
			[`evt:${a.id}`, `evt:${b.id}`],
		]);
		expect(rows).toEqual([
			{ event_key: `evt:${a.id}`, event_type: a.type },
			{ event_key: `evt:${b.id}`, event_type: b.type },
		]);
		const keys = await h.appQuery('SELECT key, status, attempts, duplicate_count FROM processed_events WHERE key = ANY($1) ORDER BY key', [
			[`evt:${a.id}`, `evt:${b.id}`],
		]);
		expect(keys.rows).toEqual([
			{ key: `evt:${a.id}`, status: 'completed', attempts: 1, duplicate_count: 1 },
			{ key: `evt:${b.id}`, status: 'completed', attempts: 1, duplicate_count: 0 },
		]);
	});

	test('a body without id, sent twice: the key is sha256: of the raw body and the second delivery takes the duplicate branch', async () => {
		const mark = await h.executionMark();
		// Raw bytes with unusual spacing: the key must hash exactly these bytes, not re-serialised JSON.
		const raw = `{ "type": "ping",  "note": "no id here", "nonce": "${crypto.randomUUID()}" }`;
		const expectedKey = `sha256:${crypto.createHash('sha256').update(raw).digest('hex')}`;

		const first = await h.deliver(h.webhookUrl, raw);
		const second = await h.deliver(h.webhookUrl, raw);
		expect([first.status, first.outcome, first.json?.eventKey]).toEqual([200, 'new', expectedKey]);
		expect([second.status, second.outcome]).toEqual([200, 'duplicate']);

		const executions = await h.waitForExecutions(h.IDS.webhook, mark, 2);
		expect(executions.map((e) => outputTaken(e, NODE.reserve))).toEqual([0, 1]);
		const reserved = executions[0].runData[NODE.reserve][0].data.main[0][0].json.idempotency;
		expect(reserved).toMatchObject({ key: expectedKey, outcome: 'new', isNew: true });
		const { rows } = await h.appQuery('SELECT count(*)::int AS n FROM business_log WHERE event_key = $1', [expectedKey]);
		expect(rows[0].n).toBe(1);
	});
});
