// The production checklist of seed 002 ("Rode também estes testes"): its six tests, in its order,
// defined once and run for each store by its own test file (test/e2e/checklist.e2e.test.js on
// Postgres, test/e2e/embedded-checklist.e2e.test.js on the embedded store). The deliveries and what
// n8n answers and records are the same for both; what differs — how a test reads the effects and
// the keys, and how test 2 crashes a run — is the store's (see defineChecklist). Uses jest's globals.
import { harness, outputTaken, outputItem, eventId, type DeliveryAnswer, type Execution, type Harness, type NODE } from './harness';
import { rejections, type Rejections } from './rejections';
import type { Json, NodeChange } from './workflows';

export const GUARD = 'Idempotency Order Guard';
export const UPSERT = 'Business Step (upsert customer)';
// Test 3's business key: one paid order, whichever of Stripe's events about it arrives.
export const ORDER_PAID_KEY = "={{ 'order-paid:' + $json.body.data.object.metadata.order_id }}";

/** A published workflow: where its webhook is, and its id. */
export interface PublishedWebhook {
	url: string;
	workflowId: string;
	/** n8n's answer when it refused to publish the workflow (the trigger's check at publish): nothing is served. */
	publishRefusal?: string;
}

/** What a store's setup publishes for the six tests. */
export interface ChecklistWorkflows {
	webhook: PublishedWebhook;
	businessKeyed: PublishedWebhook;
	ordered: PublishedWebhook;
}

/** An event as the tests send it (Stripe's shape: id, type, created, data). */
export interface ChecklistEvent {
	id: string;
	type: string;
	created?: number;
	data?: Json;
}

/** A key's state as the checklist compares it. */
export interface KeyState {
	status: string;
	attempts: number;
	duplicates: number;
}

/** What one store asserts beyond the shared tests, per test. */
export interface ChecklistChecks {
	burst?: (context: { event: ChecklistEvent; key: string; answers: DeliveryAnswer[]; executions: Execution[] }) => unknown;
	businessObject?: (context: {
		businessKey: string;
		events: ChecklistEvent[];
		eventKeys: string[];
		winner: number;
		runs: Execution[];
	}) => unknown;
	outOfOrder?: (context: {
		customer: string;
		created: number;
		update: ChecklistEvent;
		create: ChecklistEvent;
		runs: Execution[];
	}) => unknown;
	replay?: (context: { a: ChecklistEvent; b: ChecklistEvent; executions: Execution[] }) => unknown;
	genuineAfterForgeries?: (context: { key: string; runs: Execution[] }) => unknown;
}

/** A store's side of the six tests (see defineChecklist). */
export interface ChecklistStore {
	setup: () => Promise<ChecklistWorkflows>;
	teardown?: () => unknown;
	effects: (key: string) => Promise<number>;
	keyStates: (keys: string[]) => Promise<Record<string, KeyState | null>>;
	totals: () => Promise<{ keys: number; effects: number }>;
	crash: (published: ChecklistWorkflows) => Promise<unknown>;
	checks: ChecklistChecks;
}

/** Reserve of the webhook template keyed by the business action (Key Source: Custom Value), as a user keys it. */
export function keyedByPaidOrder(reserveName: string): NodeChange {
	return (node) =>
		node.name === reserveName ? { ...node, parameters: { ...node.parameters, keySource: 'custom', customKey: ORDER_PAID_KEY } } : node;
}

/**
 * Defines the six tests for one store:
 *  title      the describe title
 *  label      prefix of the tests' event ids ('' | 'emb_')
 *  nodes      the webhook template's node names (harness NODE | embedded EMB)
 *  store(h, tools)  → the store's side (tools = rejections(h)):
 *    setup()      before the tests: publishes { webhook, businessKeyed, ordered } (each { url, workflowId })
 *    teardown()   after the tests
 *    effects(key)      how many times the business step took effect for this key
 *    keyStates(keys)   { key: { status, attempts, duplicates } | null }
 *    totals()          { keys, effects } of the whole store and business side
 *    crash(published)  test 2 whole: the crash differs by store
 *    checks       what one store asserts beyond the shared test, per test (each optional):
 *                 burst, businessObject, outOfOrder, replay, genuineAfterForgeries (each (context) => void)
 */
export function defineChecklist({
	title,
	label,
	nodes,
	store: makeStore,
}: {
	title: string;
	label: string;
	nodes: typeof NODE;
	store: (h: Harness, tools: Rejections) => ChecklistStore;
}): void {
	describe(title, () => {
		const h = harness();
		const tools = rejections(h);
		const { expectRejected, expectRejectedRuns } = tools;
		const store = makeStore(h, tools);
		let published: ChecklistWorkflows;

		beforeAll(async () => {
			published = await store.setup();
		});
		afterAll(async () => store.teardown?.());

		// The webhook template; 50 deliveries at once, not just two, each with its own valid signature (as Stripe's retries are).
		test('1. the same event arrives twice in quick succession (50 deliveries at once)', async () => {
			const { webhook } = published;
			const mark = await h.executionMark();
			const event = { id: eventId(`${label}burst`), type: 'order.created' };
			const key = `evt:${event.id}`;
			const now = Math.floor(Date.now() / 1000);
			const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => h.deliver(webhook.url, event, {}, { timestamp: now - i })));
			expect(new Set(answers.map((a) => a.signature)).size).toBe(50);
			expect(answers.filter((a) => a.status !== 200 && a.status !== 409)).toEqual([]);
			expect(answers.filter((a) => a.outcome === 'new')).toHaveLength(1);
			for (const a of answers.filter((x) => x.status === 409)) expect(a.outcome).toBe('in_progress');
			expect(await store.effects(key)).toBe(1);

			const executions = await h.waitForExecutions(webhook.workflowId, mark, 50, { timeoutMs: 120000 });
			expect(executions.filter((e) => e.nodesRun.includes(nodes.business))).toHaveLength(1);
			expect(executions.every((e) => outputTaken(e, nodes.verify) === 0)).toBe(true); // all Valid
			await store.checks.burst?.({ event, key, answers, executions });
		});

		test('2. the same event arrives after a crash between the dedup write and the side effect', async () => {
			await store.crash(published);
		});

		// Two different events (ids of their own) for one business action: Stripe sends both
		// checkout.session.completed and payment_intent.succeeded for one paid order. The guarantee is one
		// effect per business action: Reserve keyed by the business key (Key Source: Custom Value,
		// `order-paid:<order id>`, docs/keys.md), so whichever event comes first, even at the same moment,
		// does the work and the other is a Duplicate. (Two versions of one object converging is test 4.)
		test('3. two events map to the same business object', async () => {
			const { url, workflowId } = published.businessKeyed;
			const order = `ord_${eventId(`${label}order`).slice(8)}`;
			const businessKey = `order-paid:${order}`;
			const paid = (type: string): ChecklistEvent => ({
				id: eventId(type.replaceAll('.', '_')),
				type,
				data: { object: { metadata: { order_id: order } } },
			});
			const events = [paid('checkout.session.completed'), paid('payment_intent.succeeded')];
			const eventKeys = events.map((e) => `evt:${e.id}`);

			const mark = await h.executionMark();
			const first = await Promise.all(events.map((event) => h.deliver(url, event)));
			const winner = first.findIndex((a) => a.outcome === 'new');
			expect(first.filter((a) => a.outcome === 'new')).toHaveLength(1);
			expect(first[winner].status).toBe(200);
			// The other: a Duplicate if it came after the first was done, In Progress (409) if at the same moment.
			expect([
				[200, 'duplicate'],
				[409, 'in_progress'],
			]).toContainEqual([first[1 - winner].status, first[1 - winner].outcome]);
			// The provider retries (after a 409 it must): both events are now Duplicates answered with the stored response.
			const retries = await Promise.all(events.map((event) => h.deliver(url, event)));
			expect(retries.map((a) => [a.status, a.outcome])).toEqual([
				[200, 'duplicate'],
				[200, 'duplicate'],
			]);
			for (const a of [first[winner], ...retries]) expect(a.json).toEqual({ received: true, eventKey: businessKey });

			const runs = await h.waitForExecutions(workflowId, mark, 4);
			expect(runs.filter((run) => run.nodesRun.includes(nodes.business))).toHaveLength(1);
			await store.checks.businessObject?.({ businessKey, events, eventKeys, winner, runs });
		});

		// The ordered-webhook template (Reserve → Order Guard → upsert): the state converges to the
		// update's; the late create is Stale and changes nothing.
		test('4. an out-of-order update arrives before the create', async () => {
			const { url, workflowId } = published.ordered;
			const customer = `cus_${eventId(`${label}ubc`).slice(8)}`;
			const created = Math.floor(Date.now() / 1000) - 120;
			const event = (type: string, at: number, email: string): ChecklistEvent => ({
				id: eventId(type.replace('.', '_')),
				type,
				created: at,
				data: { object: { id: customer, object: 'customer', email } },
			});
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
			await store.checks.outOfOrder?.({ customer, created, update, create, runs });
		});

		// The seed recipe's experiment through the webhook template: event A, A again as Stripe resends it
		// (a new timestamp, so a different valid Stripe-Signature), then B.
		test('5. a valid replay arrives after the original was handled', async () => {
			const { webhook } = published;
			const mark = await h.executionMark();
			const a = { id: eventId(`${label}A`), type: 'payment_intent.succeeded', data: { amount: 1200 } };
			const b = { id: eventId(`${label}B`), type: 'invoice.paid' };

			const now = Math.floor(Date.now() / 1000);
			const first = await h.deliver(webhook.url, a, {}, { timestamp: now - 60 });
			const repeat = await h.deliver(webhook.url, a, {}, { timestamp: now });
			const other = await h.deliver(webhook.url, b);
			expect(repeat.signature).not.toBe(first.signature);

			expect([first.status, first.outcome]).toEqual([200, 'new']);
			expect([repeat.status, repeat.outcome]).toEqual([200, 'duplicate']);
			expect([other.status, other.outcome]).toEqual([200, 'new']);
			// The duplicate replays the response Mark Complete stored for the first delivery.
			expect(first.json).toEqual({ received: true, eventKey: `evt:${a.id}` });
			expect(repeat.json).toEqual(first.json);

			const executions = await h.waitForExecutions(webhook.workflowId, mark, 3);
			expect(executions.map((e) => e.status)).toEqual(['success', 'success', 'success']);
			expect(executions.map((e) => outputTaken(e, nodes.reserve))).toEqual([0, 1, 0]);
			expect(executions[1].nodesRun).not.toContain(nodes.business);
			expect(executions[1].nodesRun).toContain(nodes.respondDuplicate);
			for (const e of [executions[0], executions[2]]) {
				expect(e.nodesRun).toEqual(expect.arrayContaining([nodes.business, nodes.settle, nodes.respond200]));
			}

			expect(await store.keyStates([`evt:${a.id}`, `evt:${b.id}`])).toEqual({
				[`evt:${a.id}`]: { status: 'completed', attempts: 1, duplicates: 1 },
				[`evt:${b.id}`]: { status: 'completed', attempts: 1, duplicates: 0 },
			});
			await store.checks.replay?.({ a, b, executions });
		});

		// The webhook template: unsigned, forged (wrong secret), tampered and garbled deliveries are
		// answered 401 and write nothing; the genuine delivery of the same event afterwards is New.
		test('6. an unsigned payload is rejected before any write', async () => {
			const { webhook } = published;
			const event = { id: eventId(`${label}forged`), type: 'charge.succeeded', data: { amount: 4200 } };
			const key = `evt:${event.id}`;
			const raw = JSON.stringify(event);
			const before = await store.totals();
			const mark = await h.executionMark();

			const unsigned = await h.deliver(webhook.url, event, {}, { sign: false });
			const forged = await h.deliver(webhook.url, event, {}, { secret: 'whsec_attacker_guess_e2e' });
			// A genuine signature over the original bytes, sent with a changed body (amount 4200 → 1).
			const tamperedRaw = raw.replace('4200', '1');
			expect(tamperedRaw).not.toBe(raw);
			const tampered = await h.deliver(webhook.url, tamperedRaw, { 'stripe-signature': h.stripeSignature(raw) }, { sign: false });
			const garbled = await h.deliver(webhook.url, event, { 'stripe-signature': 'not a stripe signature' }, { sign: false });

			expectRejected(unsigned, 'missing_header');
			expectRejected(forged, 'signature_mismatch');
			expectRejected(tampered, 'signature_mismatch');
			expectRejected(garbled, 'malformed_header');
			expectRejectedRuns(await h.waitForExecutions(webhook.workflowId, mark, 4), [
				'missing_header',
				'signature_mismatch',
				'signature_mismatch',
				'malformed_header',
			]);

			// Untouched: no key for the event id, no effect, nothing anywhere else either.
			expect(await store.keyStates([key])).toEqual({ [key]: null });
			expect(await store.effects(key)).toBe(0);
			expect(await store.totals()).toEqual(before);

			// The genuine delivery of the same event is new: the forgeries did not reserve its id.
			const mark2 = await h.executionMark();
			const genuine = await h.deliver(webhook.url, event);
			expect([genuine.status, genuine.outcome]).toEqual([200, 'new']);
			expect(genuine.json).toEqual({ received: true, eventKey: key });
			// A byte-for-byte replay of it inside the window passes the signature check and is a duplicate.
			const replay = await h.deliver(webhook.url, event, { 'stripe-signature': genuine.signature! }, { sign: false });
			expect([replay.status, replay.outcome]).toEqual([200, 'duplicate']);

			const runs = await h.waitForExecutions(webhook.workflowId, mark2, 2);
			expect(runs.map((e) => outputTaken(e, nodes.reserve))).toEqual([0, 1]);
			expect(outputItem(runs[0], nodes.verify, 0).signature).toMatchObject({ valid: true, scheme: 'stripe' });
			await store.checks.genuineAfterForgeries?.({ key, runs });

			expect(await store.effects(key)).toBe(1);
			expect(await store.keyStates([key])).toEqual({ [key]: { status: 'completed', attempts: 1, duplicates: 1 } });
			expect(await store.totals()).toEqual({ keys: before.keys + 1, effects: before.effects + 1 });
		});
	});
}
