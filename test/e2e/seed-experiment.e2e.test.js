// The seed recipe's experiment, replayed against the webhook template on a real n8n: a body without
// id twice → sha256: key, duplicate. (Its first part, A, A again with a fresh valid signature, B, is
// the production checklist's test 5, checklist.e2e.test.js.) Every delivery is signed like Stripe.
const crypto = require('node:crypto');
const { harness, outputTaken, NODE } = require('./support/harness');

describe('seed experiment through templates/idempotent-webhook.json', () => {
	const h = harness();

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
