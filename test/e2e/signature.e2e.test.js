// templates/idempotent-webhook.json verifies the Stripe signature before anything else: unsigned,
// forged (wrong secret), tampered, garbled, too old and future-dated deliveries are answered 401
// with the machine-readable reason and reserve nothing; the genuine delivery of the same event is
// then processed as new — a forged request never reserved the real event id. The test client
// acts as Stripe and signs with the test credential's secret (h.secret).
const stack = require('../../scripts/lib/n8n-stack');
const { servedWorkflowNodesSql } = require('../../scripts/lib/n8n-version');
const { harness, outputTaken, outputItem, eventId, NODE, OWNER } = require('./support/harness');

describe('signature verification in templates/idempotent-webhook.json', () => {
	const h = harness();

	const counts = async () => {
		const { rows } = await h.appQuery(
			'SELECT (SELECT count(*)::int FROM processed_events) AS keys, (SELECT count(*)::int FROM business_log) AS business',
		);
		return rows[0];
	};
	const traces = async (key) => ({
		keys: (await h.appQuery('SELECT 1 FROM processed_events WHERE key = $1', [key])).rowCount,
		business: (await h.appQuery('SELECT 1 FROM business_log WHERE event_key = $1', [key])).rowCount,
	});

	/** Every rejected delivery: 401, the reason in a small JSON body, nothing about the secret. */
	const expectRejected = (answer, reason) => {
		expect([answer.status, answer.outcome]).toEqual([401, 'invalid_signature']);
		expect(answer.json).toEqual({ error: 'invalid_signature', reason });
		expect(answer.text).not.toContain(h.secret);
		expect(answer.text).not.toMatch(/whsec_|secret/i);
	};

	/** The rejected executions: Verify sent the item to Invalid, only Respond 401 ran after it. */
	const expectRejectedRuns = (executions, reasons) => {
		expect(executions).toHaveLength(reasons.length);
		executions.forEach((execution, i) => {
			expect(execution.status).toBe('success');
			expect(outputTaken(execution, NODE.verify)).toBe(1);
			expect(execution.nodesRun.sort()).toEqual(['Webhook', NODE.verify, NODE.respond401].sort());
			expect(outputItem(execution, NODE.verify, 1).signature).toMatchObject({ valid: false, scheme: 'stripe', reason: reasons[i] });
		});
	};

	test('the imported workflow routes Webhook → Verify; only Valid reaches Idempotency Reserve, Invalid → Respond 401', async () => {
		const { rows } = await stack.withClient(h.state.n8nDbUrl, (client) =>
			client.query('SELECT nodes, connections FROM workflow_entity WHERE id = $1', [h.IDS.webhook]),
		);
		const { nodes, connections } = rows[0];
		const targets = (name) => (connections[name]?.main ?? []).map((output) => (output ?? []).map((c) => c.node));
		expect(targets('Webhook')).toEqual([[NODE.verify]]);
		expect(targets(NODE.verify)).toEqual([[NODE.reserve], [NODE.respond401]]);
		// Nothing else leads into the reservation.
		const intoReserve = Object.keys(connections).filter((from) => targets(from).flat().includes(NODE.reserve));
		expect(intoReserve).toEqual([NODE.verify]);

		const verify = nodes.find((n) => n.name === NODE.verify);
		expect(verify.type).toBe(`${stack.PACKAGE_NAME}.webhookSignatureVerify`);
		expect(verify.parameters).toMatchObject({ scheme: 'stripe', toleranceSeconds: 300, onInvalid: 'route' });
		expect(verify.credentials).toEqual({ webhookSignatureApi: { id: stack.TEMPLATE_CREDENTIALS.signature.id, name: 'Webhook Signature Secret' } });
		expect(nodes.find((n) => n.name === 'Webhook').parameters.options.rawBody).toBe(true);
		const respond = nodes.find((n) => n.name === NODE.respond401);
		expect(respond.parameters.options.responseCode).toBe(401);

		// …and that is the graph n8n serves: its published version (not an older one) has the check.
		const served = await stack.withClient(h.state.n8nDbUrl, (client) =>
			client.query(servedWorkflowNodesSql(h.state.n8nVersion), [h.IDS.webhook]),
		);
		expect(served.rows).toHaveLength(1);
		expect(served.rows[0].nodes.map((n) => n.name)).toContain(NODE.verify);
	});

	test('unsigned, forged (wrong secret), tampered and garbled deliveries → 401, nothing reserved; then the genuine delivery → 200 new, 1 business row', async () => {
		const event = { id: eventId('forged'), type: 'charge.succeeded', data: { amount: 4200 } };
		const key = `evt:${event.id}`;
		const raw = JSON.stringify(event);
		const before = await counts();
		const mark = await h.executionMark();

		const unsigned = await h.deliver(h.webhookUrl, event, {}, { sign: false });
		const forged = await h.deliver(h.webhookUrl, event, {}, { secret: 'whsec_attacker_guess_e2e' });
		// A genuine signature over the original bytes, sent with a changed body (amount 4200 → 1).
		const tamperedRaw = raw.replace('4200', '1');
		expect(tamperedRaw).not.toBe(raw);
		const tampered = await h.deliver(h.webhookUrl, tamperedRaw, { 'stripe-signature': h.stripeSignature(raw) }, { sign: false });
		const garbled = await h.deliver(h.webhookUrl, event, { 'stripe-signature': 'not a stripe signature' }, { sign: false });

		expectRejected(unsigned, 'missing_header');
		expectRejected(forged, 'signature_mismatch');
		expectRejected(tampered, 'signature_mismatch');
		expectRejected(garbled, 'malformed_header');
		expectRejectedRuns(await h.waitForExecutions(h.IDS.webhook, mark, 4), [
			'missing_header',
			'signature_mismatch',
			'signature_mismatch',
			'malformed_header',
		]);

		// Untouched: no key for the event id, no business row, no row anywhere else either.
		expect(await traces(key)).toEqual({ keys: 0, business: 0 });
		expect(await counts()).toEqual(before);

		// The genuine delivery of the same event is new: the forgeries did not reserve its id.
		const mark2 = await h.executionMark();
		const genuine = await h.deliver(h.webhookUrl, event);
		expect([genuine.status, genuine.outcome]).toEqual([200, 'new']);
		expect(genuine.json).toEqual({ received: true, eventKey: key });
		// A byte-for-byte replay of it inside the window passes the signature check and is a duplicate.
		const replay = await h.deliver(h.webhookUrl, event, { 'stripe-signature': genuine.signature }, { sign: false });
		expect([replay.status, replay.outcome]).toEqual([200, 'duplicate']);

		const runs = await h.waitForExecutions(h.IDS.webhook, mark2, 2);
		expect(runs.map((e) => outputTaken(e, NODE.verify))).toEqual([0, 0]);
		expect(runs.map((e) => outputTaken(e, NODE.reserve))).toEqual([0, 1]);
		expect(outputItem(runs[0], NODE.verify, 0).signature).toMatchObject({ valid: true, scheme: 'stripe' });
		expect(runs[0].nodesRun).toEqual(expect.arrayContaining([NODE.business, NODE.complete, NODE.respond200]));

		expect(await traces(key)).toEqual({ keys: 1, business: 1 });
		const stored = await h.appQuery('SELECT status, attempts, duplicate_count FROM processed_events WHERE key = $1', [key]);
		expect(stored.rows).toEqual([{ status: 'completed', attempts: 1, duplicate_count: 1 }]);
		const after = await counts();
		expect([after.keys - before.keys, after.business - before.business]).toEqual([1, 1]);
	});

	test('the credential as a user edits it: a secret with spaces verifies, a forgery signed with one of its words does not, Previous Secret rotates', async () => {
		// The stack imports the credential with the test secret; here it is edited through the REST
		// API as the editor does, then restored.
		const rest = h.rest();
		await rest.ownerLogin(OWNER);
		const credential = stack.TEMPLATE_CREDENTIALS.signature;
		const setData = async (data) => {
			const res = await rest.call('PATCH', `/credentials/${credential.id}`, { name: credential.name, type: credential.type, data });
			expect(res.status).toBe(200);
		};
		const spaced = "It's a Secret to Everybody (e2e)";
		const [first, second] = [eventId('spaced-1'), eventId('spaced-2')].map((id) => ({ id, type: 'charge.succeeded' }));
		try {
			await setData({ secret: spaced, previousSecret: '' });
			const genuine = await h.deliver(h.webhookUrl, first, {}, { secret: spaced });
			expect([genuine.status, genuine.outcome]).toEqual([200, 'new']);
			for (const word of ['Secret', "It's", 'Everybody', "It's a Secret"]) {
				expectRejected(await h.deliver(h.webhookUrl, second, {}, { secret: word }), 'signature_mismatch');
			}
			expectRejected(await h.deliver(h.webhookUrl, second, {}, { secret: h.secret }), 'signature_mismatch');
			expect(await traces(`evt:${second.id}`)).toEqual({ keys: 0, business: 0 });

			await setData({ secret: spaced, previousSecret: h.secret });
			const rotated = await h.deliver(h.webhookUrl, second, {}, { secret: h.secret });
			expect([rotated.status, rotated.outcome]).toEqual([200, 'new']);
		} finally {
			await setData({ secret: h.secret, previousSecret: '' });
		}
	});

	test('a genuine signature with an old timestamp (> 300 s) → 401 timestamp_too_old; one too far ahead → 401 timestamp_in_future; nothing reserved', async () => {
		const event = { id: eventId('stale'), type: 'invoice.paid' };
		const key = `evt:${event.id}`;
		const now = Math.floor(Date.now() / 1000);
		const before = await counts();
		const mark = await h.executionMark();

		const old = await h.deliver(h.webhookUrl, event, {}, { timestamp: now - 301 });
		const ahead = await h.deliver(h.webhookUrl, event, {}, { timestamp: now + 600 });
		expectRejected(old, 'timestamp_too_old');
		expectRejected(ahead, 'timestamp_in_future');
		const executions = await h.waitForExecutions(h.IDS.webhook, mark, 2);
		expectRejectedRuns(executions, ['timestamp_too_old', 'timestamp_in_future']);
		// The signature over the timestamp matched, so the node reports which timestamp it judged.
		expect(outputItem(executions[0], NODE.verify, 1).signature.timestamp).toBe(now - 301);
		expect(outputItem(executions[1], NODE.verify, 1).signature.timestamp).toBe(now + 600);
		expect(await traces(key)).toEqual({ keys: 0, business: 0 });
		expect(await counts()).toEqual(before);

		// A fresh signature for the same event is processed.
		const fresh = await h.deliver(h.webhookUrl, event);
		expect([fresh.status, fresh.outcome]).toEqual([200, 'new']);
		expect(await traces(key)).toEqual({ keys: 1, business: 1 });
	});
});
