// The production checklist of seed 002 ("Rode também estes testes"): its six tests, in its order,
// in one place, through a real n8n (one process and queue mode) with the shipped templates imported
// as users import them and every delivery signed like Stripe. Each test proves its claim by counting
// rows in the business table and the keys table. docs/testing.md maps each item to its guarantee.
const { harness, outputTaken, outputItem, eventId, NODE } = require('../support/e2e/harness');
const { readShippedTemplate, withOwnWebhook, publishWorkflow, publishOrderedWebhook } = require('../support/e2e/restWorkflows');
const { rejections } = require('../support/e2e/rejections');

const EXECUTE_QUERY = 'Idempotency Execute Query';
// The one-transaction template's insert, made to wait while a switch row names the event, so test 2
// can cut the session at a known point: after the reservation, inside the transaction, before the commit.
const PAUSING_QUERY = `INSERT INTO business_log (event_key, event_type)
SELECT $idempotency_key, $1 FROM (SELECT pg_sleep(CASE WHEN EXISTS (SELECT 1 FROM e2e_pause_once WHERE event_key = $idempotency_key) THEN 60 ELSE 0 END)) AS pause
RETURNING id`;
const GUARD = 'Idempotency Order Guard';
const UPSERT = 'Business Step (upsert customer)';
// Test 3's business key: one paid order, whichever of Stripe's events about it arrives.
const ORDER_PAID_KEY = "={{ 'order-paid:' + $json.body.data.object.metadata.order_id }}";

/** A workflow made from a shipped template, published with a webhook of its own: { url, workflowId }. */
async function publishVariant(h, file, label, changeNode) {
	const template = readShippedTemplate(file);
	template.nodes = template.nodes.map(changeNode);
	const { workflow, webhookPath } = withOwnWebhook(template, label);
	const workflowId = await publishWorkflow(h, workflow, webhookPath);
	return { url: `${h.state.baseUrl}/webhook/${webhookPath}`, workflowId };
}

describe('production checklist (seed 002)', () => {
	const h = harness();
	const { counts, traces, expectRejected, expectRejectedRuns } = rejections(h);
	let oneTransaction;
	let businessKeyed;
	let ordered;

	beforeAll(async () => {
		await h.appQuery('CREATE TABLE IF NOT EXISTS e2e_pause_once (event_key text PRIMARY KEY)');
		oneTransaction = await publishVariant(h, 'idempotent-webhook-one-transaction.json', 'onetx', (node) =>
			node.name === EXECUTE_QUERY ? { ...node, parameters: { ...node.parameters, query: PAUSING_QUERY } } : node,
		);
		// The webhook template as a user keys it by the business action (Key Source: Custom Value).
		businessKeyed = await publishVariant(h, 'idempotent-webhook.json', 'bizkey', (node) =>
			node.name === NODE.reserve ? { ...node, parameters: { ...node.parameters, keySource: 'custom', customKey: ORDER_PAID_KEY } } : node,
		);
		ordered = await publishOrderedWebhook(h, 'ordered');
	});

	// The webhook template; 50 deliveries at once, not just two, each with its own valid signature (as Stripe's retries are).
	test('1. the same event arrives twice in quick succession', async () => {
		const mark = await h.executionMark();
		const event = { id: eventId('burst'), type: 'order.created' };
		const now = Math.floor(Date.now() / 1000);
		const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => h.deliver(h.webhookUrl, event, {}, { timestamp: now - i })));
		expect(new Set(answers.map((a) => a.signature)).size).toBe(50);
		const statuses = answers.map((a) => a.status);
		expect(statuses.every((s) => s === 200 || s === 409)).toBe(true);
		expect(answers.filter((a) => a.outcome === 'new')).toHaveLength(1);
		expect(answers.every((a) => ['new', 'duplicate', 'in_progress'].includes(a.outcome))).toBe(true);
		for (const a of answers.filter((x) => x.status === 409)) expect(a.outcome).toBe('in_progress');

		const { rows } = await h.appQuery('SELECT count(*)::int AS n FROM business_log WHERE event_key = $1', [`evt:${event.id}`]);
		expect(rows[0].n).toBe(1);

		const executions = await h.waitForExecutions(h.IDS.webhook, mark, 50, { timeoutMs: 120000 });
		expect(executions).toHaveLength(50);
		expect(executions.filter((e) => e.nodesRun.includes(NODE.business))).toHaveLength(1);
		expect(executions.every((e) => outputTaken(e, NODE.verify) === 0)).toBe(true); // all Valid
		expect(executions.filter((e) => outputTaken(e, NODE.reserve) === 0)).toHaveLength(1);
		const key = await h.appQuery('SELECT status, attempts FROM processed_events WHERE key = $1', [`evt:${event.id}`]);
		expect(key.rows).toEqual([{ status: 'completed', attempts: 1 }]);
		process.stderr.write(
			`[e2e] burst of 50: ${statuses.filter((s) => s === 200).length}×200, ${statuses.filter((s) => s === 409).length}×409, slowest ${Math.max(...answers.map((a) => a.ms))} ms\n`,
		);
	});

	// The one-transaction template: the database session running Idempotency Execute Query dies after
	// the reservation and before the commit. (The lease variant, a worker killed in the business step,
	// is test/e2e/queue/worker-crash.e2e.test.js.)
	test('2. the same event arrives after a crash between the dedup write and the side effect', async () => {
		const { url, workflowId } = oneTransaction;
		const event = { id: eventId('onetx'), type: 'e2e.onetx' };
		const key = `evt:${event.id}`;
		await h.appQuery('INSERT INTO e2e_pause_once (event_key) VALUES ($1)', [key]);

		const mark = await h.executionMark();
		const crashed = h.deliver(url, event);
		// The node's transaction: it has reserved the key (a write lock on processed_events) and sleeps in our SQL.
		let backend;
		for (let attempt = 0; attempt < 240 && !backend; attempt++) {
			const { rows } = await h.appQuery(
				`SELECT a.pid, a.state, a.backend_xid IS NOT NULL AS wrote,
				        EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.relation = 'processed_events'::regclass AND l.mode = 'RowExclusiveLock') AS reserved
				   FROM pg_stat_activity a WHERE a.wait_event = 'PgSleep' AND a.query LIKE '%e2e_pause_once%'`,
			);
			backend = rows[0];
			if (!backend) await new Promise((resolve) => setTimeout(resolve, 250));
		}
		expect(backend).toMatchObject({ state: 'active', wrote: true, reserved: true });
		expect((await h.appQuery('SELECT 1 FROM processed_events WHERE key = $1', [key])).rowCount).toBe(0); // not committed

		await h.appQuery('DELETE FROM e2e_pause_once WHERE event_key = $1', [key]); // the retry will not wait
		const { rows: terminated } = await h.appQuery('SELECT pg_terminate_backend($1) AS ok', [backend.pid]);
		expect(terminated).toEqual([{ ok: true }]);
		for (let attempt = 0; attempt < 100; attempt++) {
			const { rowCount } = await h.appQuery('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [backend.pid]);
			if (rowCount === 0) break;
			await new Promise((resolve) => setTimeout(resolve, 50));
		}
		// The crash happened: the session that held the reservation is gone.
		expect((await h.appQuery('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [backend.pid])).rowCount).toBe(0);

		const answer = await crashed;
		expect([answer.status, answer.outcome]).toEqual([500, 'query_failed']);
		expect((await h.appQuery('SELECT 1 FROM processed_events WHERE key = $1', [key])).rowCount).toBe(0);
		expect((await h.appQuery('SELECT 1 FROM business_log WHERE event_key = $1', [key])).rowCount).toBe(0);

		const retried = await h.deliver(url, event);
		expect([retried.status, retried.outcome]).toEqual([200, 'new']);
		const again = await h.deliver(url, event);
		expect([again.status, again.outcome]).toEqual([200, 'duplicate']);

		const runs = await h.waitForExecutions(workflowId, mark, 3);
		expect(runs.map((run) => outputTaken(run, EXECUTE_QUERY))).toEqual([3, 0, 1]); // error output (after Not Run), New, Duplicate
		expect((await h.appQuery('SELECT count(*)::int AS n FROM business_log WHERE event_key = $1', [key])).rows).toEqual([{ n: 1 }]);
		expect((await h.appQuery('SELECT status FROM processed_events WHERE key = $1', [key])).rows).toEqual([{ status: 'completed' }]);
	});

	// Two different events (ids of their own) for one business action: Stripe sends both
	// checkout.session.completed and payment_intent.succeeded for one paid order. The guarantee is one
	// effect per business action: Reserve keyed by the business key (Key Source: Custom Value,
	// `order-paid:<order id>`, docs/keys.md), so whichever event comes first, even at the same moment,
	// does the work and the other is a Duplicate. (Two versions of one object converging is test 4.)
	test('3. two events map to the same business object', async () => {
		const { url, workflowId } = businessKeyed;
		const order = `ord_${eventId('order').slice(8)}`;
		const businessKey = `order-paid:${order}`;
		const paid = (type) => ({ id: eventId(type.replaceAll('.', '_')), type, data: { object: { metadata: { order_id: order } } } });
		const events = [paid('checkout.session.completed'), paid('payment_intent.succeeded')];
		const eventKeys = events.map((e) => `evt:${e.id}`);

		const mark = await h.executionMark();
		const first = await Promise.all(events.map((event) => h.deliver(url, event)));
		const winner = first.findIndex((a) => a.outcome === 'new');
		expect(first.filter((a) => a.outcome === 'new')).toHaveLength(1);
		expect(first[winner].status).toBe(200);
		// The other: a Duplicate if it came after the first was done, In Progress (409) if at the same moment.
		expect([[200, 'duplicate'], [409, 'in_progress']]).toContainEqual([first[1 - winner].status, first[1 - winner].outcome]);
		// The provider retries (after a 409 it must): both events are now Duplicates answered with the stored response.
		const retries = await Promise.all(events.map((event) => h.deliver(url, event)));
		expect(retries.map((a) => [a.status, a.outcome])).toEqual([[200, 'duplicate'], [200, 'duplicate']]);
		for (const a of [first[winner], ...retries]) expect(a.json).toEqual({ received: true, eventKey: businessKey });

		const runs = await h.waitForExecutions(workflowId, mark, 4);
		expect(runs).toHaveLength(4);
		expect(runs.filter((run) => run.nodesRun.includes(NODE.business))).toHaveLength(1);
		const business = await h.appQuery('SELECT event_key, event_type FROM business_log WHERE event_key = ANY($1)', [[businessKey, ...eventKeys]]);
		expect(business.rows).toEqual([{ event_key: businessKey, event_type: events[winner].type }]);
		const keys = await h.appQuery('SELECT key, status, attempts FROM processed_events WHERE key = ANY($1)', [[businessKey, ...eventKeys]]);
		expect(keys.rows).toEqual([{ key: businessKey, status: 'completed', attempts: 1 }]);
	});

	// The ordered-webhook template (Reserve → Order Guard → upsert): the state converges to the
	// update's; the late create is Stale and changes nothing.
	test('4. an out-of-order update arrives before the create', async () => {
		const { url, workflowId } = ordered;
		const customer = `cus_${eventId('ubc').slice(8)}`;
		const created = Math.floor(Date.now() / 1000) - 120;
		const event = (type, at, email) => ({ id: eventId(type.replace('.', '_')), type, created: at, data: { object: { id: customer, object: 'customer', email } } });
		const update = event('customer.updated', created + 60, 'new@example.com');
		const create = event('customer.created', created, 'old@example.com');

		const mark = await h.executionMark();
		const first = await h.deliver(url, update);
		expect([first.status, first.outcome]).toEqual([200, 'new']);
		const late = await h.deliver(url, create);
		expect([late.status, late.outcome]).toEqual([200, 'stale']);
		const repeat = await h.deliver(url, update);
		expect([repeat.status, repeat.outcome]).toEqual([200, 'duplicate']);

		const runs = await h.waitForExecutions(workflowId, mark, 3);
		expect(runs.map((run) => run.status)).toEqual(['success', 'success', 'success']);
		expect(outputTaken(runs[0], GUARD)).toBe(0); // Newer
		expect(outputTaken(runs[1], GUARD)).toBe(1); // Stale
		expect(runs[1].nodesRun).not.toContain(UPSERT);
		expect(runs[2].nodesRun).not.toContain(GUARD); // Reserve stopped the repeat first

		const { rows } = await h.appQuery('SELECT email, version::text AS version FROM customers WHERE id = $1', [customer]);
		expect(rows).toEqual([{ email: 'new@example.com', version: String(created + 60) }]);
		// event_key comes from the node's default Event Key expression: Reserve's key of the update.
		const marks = await h.appQuery('SELECT version::text AS version, stale_count, event_key FROM object_versions WHERE object_key = $1', [
			`stripe:customer:${customer}`,
		]);
		expect(marks.rows).toEqual([{ version: String(created + 60), stale_count: 1, event_key: `evt:${update.id}` }]);
		const keys = await h.appQuery('SELECT key, status FROM processed_events WHERE key = ANY($1) ORDER BY key', [[`evt:${update.id}`, `evt:${create.id}`]]);
		expect(keys.rows.map((row) => row.status)).toEqual(['completed', 'completed']);
	});

	// The seed recipe's experiment through the webhook template: event A, A again as Stripe resends it
	// (a new timestamp, so a different valid Stripe-Signature), then B.
	test('5. a valid replay arrives after the original was handled', async () => {
		const mark = await h.executionMark();
		const a = { id: eventId('A'), type: 'payment_intent.succeeded', data: { amount: 1200 } };
		const b = { id: eventId('B'), type: 'invoice.paid' };

		const now = Math.floor(Date.now() / 1000);
		const first = await h.deliver(h.webhookUrl, a, {}, { timestamp: now - 60 });
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
			expect(e.nodesRun).toEqual(expect.arrayContaining([NODE.business, NODE.settle, NODE.respond200]));
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

	// The webhook template: unsigned, forged (wrong secret), tampered and garbled deliveries are
	// answered 401 and write nothing; the genuine delivery of the same event afterwards is New.
	test('6. an unsigned payload is rejected before any write', async () => {
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
		expect(runs[0].nodesRun).toEqual(expect.arrayContaining([NODE.business, NODE.settle, NODE.respond200]));

		expect(await traces(key)).toEqual({ keys: 1, business: 1 });
		const stored = await h.appQuery('SELECT status, attempts, duplicate_count FROM processed_events WHERE key = $1', [key]);
		expect(stored.rows).toEqual([{ status: 'completed', attempts: 1, duplicate_count: 1 }]);
		const after = await counts();
		expect([after.keys - before.keys, after.business - before.business]).toEqual([1, 1]);
	});
});
