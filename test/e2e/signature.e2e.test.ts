// templates/idempotent-webhook.json verifies the Stripe signature before anything else: too old and
// future-dated deliveries, and forgeries signed with a wrong or a rotated-out secret, are answered
// 401 with the machine-readable reason and reserve nothing; the genuine delivery of the same event
// is then processed as new. (Unsigned, forged, tampered and garbled deliveries writing nothing is
// the production checklist's test 6, checklist.e2e.test.ts.) The test client acts as Stripe and
// signs with the test credential's secret (h.secret).
// e2e-tags: single queue compatibility
import type { Client } from 'pg';
import * as stack from '../support/stack/n8nStack';
import { servedWorkflowNodesSql } from '../support/stack/n8nVersion';
import { harness, outputItem, eventId, NODE, OWNER } from '../support/e2e/harness';
import { rejections } from '../support/e2e/rejections';

/** h.deliver's signing options (secret, timestamp). */
type DeliverOptions = Parameters<ReturnType<typeof harness>['deliver']>[3];
/** A node of a workflow as n8n stores it, as far as this file reads it. */
type StoredNode = { name: string };

describe('signature verification in templates/idempotent-webhook.json', () => {
	const h = harness();
	const { counts, traces, expectRejected, expectRejectedRuns } = rejections(h);

	test('the imported workflow routes Webhook → Verify; only Valid reaches Idempotency Reserve, Invalid → Respond 401', async () => {
		const { rows } = await stack.withClient(h.state.n8nDbUrl, (client: Client) =>
			client.query('SELECT nodes, connections FROM workflow_entity WHERE id = $1', [h.IDS.webhook]),
		);
		const { nodes, connections } = rows[0];
		const targets = (name: string): string[][] =>
			(connections[name]?.main ?? []).map((output: Array<{ node: string }> | null) => (output ?? []).map((c) => c.node));
		expect(targets('Webhook')).toEqual([[NODE.verify]]);
		// Invalid: a signature that does not verify answers 401; one that could not be checked (its secret unreadable) 503.
		expect(targets(NODE.verify)).toEqual([[NODE.reserve], [NODE.couldNotVerify]]);
		expect(targets(NODE.couldNotVerify)).toEqual([['Respond 503 (not verified)'], [NODE.respond401]]);
		// Nothing else leads into the reservation.
		const intoReserve = Object.keys(connections).filter((from) => targets(from).flat().includes(NODE.reserve));
		expect(intoReserve).toEqual([NODE.verify]);

		const verify = nodes.find((n: StoredNode) => n.name === NODE.verify);
		expect(verify.type).toBe(`${stack.PACKAGE_NAME}.webhookSignatureVerify`);
		expect(verify.parameters).toMatchObject({ scheme: 'stripe', toleranceSeconds: 300, onInvalid: 'route' });
		expect(verify.credentials).toEqual({
			webhookSignatureApi: { id: stack.TEMPLATE_CREDENTIALS.signature.id, name: 'Webhook Signature Secret' },
		});
		expect(nodes.find((n: StoredNode) => n.name === 'Webhook').parameters.options.rawBody).toBe(true);
		const respond = nodes.find((n: StoredNode) => n.name === NODE.respond401);
		expect(respond.parameters.options.responseCode).toBe(401);

		// …and that is the graph n8n serves: its published version (not an older one) has the check.
		const served = await stack.withClient(h.state.n8nDbUrl, (client: Client) =>
			client.query(servedWorkflowNodesSql(h.state.n8nVersion), [h.IDS.webhook]),
		);
		expect(served.rows).toHaveLength(1);
		expect(served.rows[0].nodes.map((n: StoredNode) => n.name)).toContain(NODE.verify);
	});

	test('the credential as a user edits it: a secret with spaces verifies, a forgery signed with one of its words does not, Previous Secret rotates', async () => {
		// The stack imports the credential with the test secret; here it is edited through the REST
		// API as the editor does, then restored.
		const rest = h.rest();
		await rest.ownerLogin(OWNER);
		const credential = stack.TEMPLATE_CREDENTIALS.signature;
		const setData = async (data: { secret: string; previousSecret: string }) => {
			const res = await rest.call('PATCH', `/credentials/${credential.id}`, { name: credential.name, type: credential.type, data });
			expect(res.status).toBe(200);
		};
		const spaced = "It's a Secret to Everybody (e2e)";
		const [first, second] = [eventId('spaced-1'), eventId('spaced-2')].map((id) => ({ id, type: 'charge.succeeded' }));
		try {
			await setData({ secret: spaced, previousSecret: '' });
			const genuine = await h.deliver(h.webhookUrl, first, {}, { secret: spaced } as DeliverOptions);
			expect([genuine.status, genuine.outcome]).toEqual([200, 'new']);
			for (const word of ['Secret', "It's", 'Everybody', "It's a Secret"]) {
				expectRejected(await h.deliver(h.webhookUrl, second, {}, { secret: word } as DeliverOptions), 'signature_mismatch');
			}
			expectRejected(await h.deliver(h.webhookUrl, second, {}, { secret: h.secret } as DeliverOptions), 'signature_mismatch');
			expect(await traces(`evt:${second.id}`)).toEqual({ keys: 0, business: 0 });

			await setData({ secret: spaced, previousSecret: h.secret });
			const rotated = await h.deliver(h.webhookUrl, second, {}, { secret: h.secret } as DeliverOptions);
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

		const old = await h.deliver(h.webhookUrl, event, {}, { timestamp: now - 301 } as DeliverOptions);
		const ahead = await h.deliver(h.webhookUrl, event, {}, { timestamp: now + 600 } as DeliverOptions);
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

	// The Content-Type's charset is not signed, and n8n decodes a JSON body by it: in a copy labelled latin1 a
	// non-ASCII id reads otherwise in n8n's parse. The key is read from the signed bytes: one effect.
	test('a genuine copy re-sent as application/json; charset=latin1 (a non-ASCII id) is a duplicate: one effect', async () => {
		const event = { id: eventId('charset_é'), type: 'invoice.paid' };
		const key = `evt:${event.id}`;
		const first = await h.deliver(h.webhookUrl, event);
		const copy = await h.deliver(h.webhookUrl, event, { 'content-type': 'application/json; charset=latin1' });
		expect([first.status, first.outcome, copy.status, copy.outcome]).toEqual([200, 'new', 200, 'duplicate']);
		expect(await traces(key)).toEqual({ keys: 1, business: 1 });
	});
});
