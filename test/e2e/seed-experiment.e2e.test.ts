// The seed recipe's experiment, replayed against the webhook template on a real n8n: a body without
// id twice → sha256: key, duplicate. (Its first part, A, A again with a fresh valid signature, B, is
// the production checklist's test 5, checklist.e2e.test.ts.) Every delivery is signed like Stripe.
// The whole experiment, A, A again, B and the id-less body twice, also goes through the
// one-transaction template, whose SQL writes the key the node derived ($idempotency_key).
// e2e-tags: single queue compatibility
import crypto from 'node:crypto';
import { harness, outputTaken, outputItem, eventId, NODE, type DeliverOptions, type Execution } from '../support/e2e/harness';
import { readShippedTemplate, withOwnWebhook, publishWorkflow } from '../support/e2e/restWorkflows';
import type { Delivery } from '../support/stack/n8nStack';
import type { Json } from '../support/e2e/workflows';

describe('seed experiment through templates/idempotent-webhook.json', () => {
	const h = harness();

	test('a body without id, sent twice: the key is sha256: of the raw body and the second delivery takes the duplicate branch', async () => {
		const mark = await h.executionMark();
		// Raw bytes with unusual spacing: the key must hash exactly these bytes, not re-serialised JSON.
		const raw = `{ "type": "ping",  "note": "no id here", "nonce": "${crypto.randomUUID()}" }`;
		const expectedKey = `sha256:${crypto.createHash('sha256').update(raw).digest('hex')}`;

		const first: Delivery<Json> = await h.deliver(h.webhookUrl, raw);
		const second = await h.deliver(h.webhookUrl, raw);
		expect([first.status, first.outcome, first.json?.eventKey]).toEqual([200, 'new', expectedKey]);
		expect([second.status, second.outcome]).toEqual([200, 'duplicate']);

		const executions = await h.waitForExecutions(h.IDS.webhook, mark, 2);
		expect(executions.map((e: Execution) => outputTaken(e, NODE.reserve))).toEqual([0, 1]);
		const reserved = outputItem(executions[0], NODE.reserve).idempotency;
		expect(reserved).toMatchObject({ key: expectedKey, outcome: 'new', isNew: true });
		const { rows } = await h.appQuery('SELECT count(*)::int AS n FROM business_log WHERE event_key = $1', [expectedKey]);
		expect(rows[0].n).toBe(1);
	});
});

describe('seed experiment through templates/idempotent-webhook-one-transaction.json', () => {
	const h = harness();
	const EXECUTE_QUERY = 'Idempotency Execute Query';
	let url: string;
	let workflowId: string;

	beforeAll(async () => {
		const { workflow, webhookPath } = withOwnWebhook(readShippedTemplate('idempotent-webhook-one-transaction.json'), 'seed-onetx');
		workflowId = await publishWorkflow(h, workflow, webhookPath);
		url = `${h.state.baseUrl}/webhook/${webhookPath}`;
	});

	test('A, A with a new signature, B, a body without id twice: 200 each, one business row per event, the repeats duplicates', async () => {
		const mark = await h.executionMark();
		const a = { id: eventId('seed_a'), type: 'payment_intent.succeeded' };
		const b = { id: eventId('seed_b'), type: 'payment_intent.succeeded' };
		const raw = `{ "type": "ping",  "note": "no id here", "nonce": "${crypto.randomUUID()}" }`;
		const idlessKey = `sha256:${crypto.createHash('sha256').update(raw).digest('hex')}`;
		const now = Math.floor(Date.now() / 1000);

		const answers: Array<Delivery<Json>> = [];
		answers.push(await h.deliver(url, a, {}, { timestamp: now } as DeliverOptions));
		answers.push(await h.deliver(url, a, {}, { timestamp: now - 1 } as DeliverOptions)); // Stripe's retry: a new signature
		answers.push(await h.deliver(url, b));
		answers.push(await h.deliver(url, raw));
		answers.push(await h.deliver(url, raw));
		expect(answers[0].signature).not.toBe(answers[1].signature);
		expect(answers.map((answer) => [answer.status, answer.outcome])).toEqual([
			[200, 'new'],
			[200, 'duplicate'],
			[200, 'new'],
			[200, 'new'],
			[200, 'duplicate'],
		]);
		expect(answers.map((answer) => answer.json?.eventKey)).toEqual([`evt:${a.id}`, `evt:${a.id}`, `evt:${b.id}`, idlessKey, idlessKey]);

		const keys = [`evt:${a.id}`, `evt:${b.id}`, idlessKey];
		const { rows } = await h.appQuery(
			'SELECT event_key, event_type, count(*) OVER (PARTITION BY event_key)::int AS n FROM business_log WHERE event_key = ANY($1) ORDER BY id',
			[keys],
		);
		expect(rows).toEqual([
			{ event_key: keys[0], event_type: 'payment_intent.succeeded', n: 1 },
			{ event_key: keys[1], event_type: 'payment_intent.succeeded', n: 1 },
			{ event_key: keys[2], event_type: 'ping', n: 1 },
		]);
		const stored = await h.appQuery('SELECT key, status FROM processed_events WHERE key = ANY($1) ORDER BY key', [keys]);
		expect(stored.rows).toEqual([...keys].sort().map((key) => ({ key, status: 'completed' })));

		const executions = await h.waitForExecutions(workflowId, mark, 5);
		expect(executions.map((execution: Execution) => outputTaken(execution, EXECUTE_QUERY))).toEqual([0, 1, 0, 0, 1]);
	});
});
