// The production checklist of seed 002 — its six tests, in its order — on the embedded store:
// templates/idempotent-webhook-embedded.json (Store: Embedded on every node, no Postgres credential,
// its business step an HTTP call to the user's API, here the test's sink that counts every call),
// and for test 4 the ordered template switched to Store: Embedded the way a user does it in the
// editor. Single process, and queue mode with main and two workers sharing the n8n folder. Each test
// proves its claim by counting the API's calls (the effects) and reading the keys in the store file.
// (Test 2 on Postgres cuts the one-transaction template's session; Execute Query is Postgres-only, so
// here the process running the business step is killed with SIGKILL while the API call is in flight.)
const fs = require('node:fs');
const { harness, outputTaken, outputItem, eventId } = require('../support/e2e/harness');
const { EMB, publishEmbedded, warmUpDelivery, useWorkerFolders, keyStates, storedKeys, storeStats, toEmbeddedStore } = require('../support/e2e/embedded');
const { readShippedTemplate, withOwnWebhook, publishWorkflow } = require('../support/e2e/restWorkflows');
const { rejections } = require('../support/e2e/rejections');
const { startSink } = require('../support/e2e/sink');
const { deliverAll, figures, report } = require('../support/e2e/provider');
const { eventually } = require('../support/e2e/eventually');
const { pidAlive, sleep } = require('../support/stack/childProcesses');

const GUARD = 'Idempotency Order Guard';
const UPSERT = 'Business Step (upsert customer)';
const ORDER_PAID_KEY = "={{ 'order-paid:' + $json.body.data.object.metadata.order_id }}";
// Test 2's lease: the crashed run's key is taken over once it ends (the template's is 300 s).
const CRASH_LEASE_SECONDS = 20;

/** The ordered template on the embedded store; its upsert becomes a call to the user's API. */
function orderedOnEmbedded(apiUrl) {
	const template = readShippedTemplate('ordered-webhook.json');
	template.nodes = template.nodes.map(toEmbeddedStore).map((node) => {
		if (node.name !== UPSERT) return node;
		const { credentials, ...rest } = node;
		return {
			...rest,
			type: 'n8n-nodes-base.httpRequest',
			typeVersion: 4.2,
			parameters: {
				method: 'POST',
				url: apiUrl,
				sendBody: true,
				specifyBody: 'json',
				jsonBody:
					"={{ JSON.stringify({ eventKey: $('Idempotency Reserve').item.json.idempotency.key, customer: $json.body.data.object.id, email: $json.body.data.object.email, version: $json.body.created }) }}",
				options: { timeout: 10000 },
			},
		};
	});
	return template;
}

describe('production checklist (seed 002) on the embedded store', () => {
	const h = harness();
	const { expectRejected, expectRejectedRuns } = rejections(h);
	let api;
	let webhook;
	let businessKeyed;
	let shortLease;
	let ordered;

	beforeAll(async () => {
		await useWorkerFolders(h, 'shared');
		api = await startSink();
		webhook = await publishEmbedded(h, 'emb-chk', { apiUrl: api.url });
		businessKeyed = await publishEmbedded(h, 'emb-bizkey', {
			apiUrl: api.url,
			warmUpBody: (id) => ({ id, type: 'e2e.warmup', data: { object: { metadata: { order_id: `ord_warmup_${id}` } } } }),
			change: (node) => (node.name === EMB.reserve ? { ...node, parameters: { ...node.parameters, keySource: 'custom', customKey: ORDER_PAID_KEY } } : node),
		});
		shortLease = await publishEmbedded(h, 'emb-crash', {
			apiUrl: api.url,
			change: (node) => (node.name === EMB.reserve ? { ...node, parameters: { ...node.parameters, leaseSeconds: CRASH_LEASE_SECONDS } } : node),
		});
		const { workflow, webhookPath } = withOwnWebhook(orderedOnEmbedded(api.url), 'emb-ordered');
		ordered = { url: `${h.state.baseUrl}/webhook/${webhookPath}`, workflowId: await publishWorkflow(h, workflow, webhookPath) };
		if (h.topology === 'queue') {
			const customerEvent = (id) => ({ id, type: 'customer.created', created: Math.floor(Date.now() / 1000), data: { object: { id: `cus_warmup_${id}`, object: 'customer', email: 'warmup@example.com' } } });
			await warmUpDelivery(h, ordered.url, 'emb-ordered', customerEvent);
		}
	});
	afterAll(async () => {
		await api?.close();
		if (h.topology === 'queue') {
			// Leave two workers for the next test file.
			const { workers } = await h.control('GET /processes');
			for (const worker of workers) if (!worker.alive) await h.control('POST /start-worker', { index: worker.index });
		}
	});

	test('1. the same event arrives twice in quick succession (50 deliveries at once)', async () => {
		const mark = await h.executionMark();
		const event = { id: eventId('emb_twice'), type: 'order.created' };
		const key = `evt:${event.id}`;
		const now = Math.floor(Date.now() / 1000);
		const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => h.deliver(webhook.url, event, {}, { timestamp: now - i })));
		expect(new Set(answers.map((a) => a.signature)).size).toBe(50);
		expect(answers.filter((a) => a.status !== 200 && a.status !== 409)).toEqual([]);
		expect(answers.filter((a) => a.outcome === 'new')).toHaveLength(1);
		for (const a of answers.filter((x) => x.status === 409)) expect(a.outcome).toBe('in_progress');
		expect(api.calls(key)).toBe(1);
		expect(await keyStates(h, [key])).toEqual({ [key]: { status: 'completed', attempts: 1, duplicates: 49 } });

		const executions = await h.waitForExecutions(webhook.workflowId, mark, 50, { timeoutMs: 120000 });
		expect(executions.filter((e) => e.nodesRun.includes(EMB.business))).toHaveLength(1);
		expect(executions.every((e) => outputTaken(e, EMB.verify) === 0)).toBe(true);
	});

	test('2. the same event arrives after a crash between the dedup write and the side effect', async () => {
		const event = { id: eventId('emb_crash'), type: 'e2e.crash' };
		const key = `evt:${event.id}`;
		const mark = await h.executionMark();
		const arrived = api.holdNext(key);
		const first = h.deliver(shortLease.url, event).catch((error) => ({ status: 0, error: error.cause?.code ?? error.message }));
		// The API has the call and has not answered it: the reservation is written, the effect is not.
		const call = await arrived;
		expect(call).toMatchObject({ key, headerKey: key });
		const reserved = (await storedKeys(h, [key]))[key];
		expect(reserved).toMatchObject({ status: 'processing', attempts: 1 });
		expect(api.calls(key)).toBe(0);

		// The crash: the n8n process running the business step dies of SIGKILL mid-call.
		let crash;
		if (h.topology === 'queue') {
			const { workers } = await h.control('GET /processes');
			const victim = workers.find((w) => fs.readFileSync(w.logFile, 'utf8').includes(`Worker started execution ${reserved.executionId} `));
			if (!victim) throw new Error(`no worker log names execution ${reserved.executionId}`);
			const killed = await h.control('POST /kill-worker', { index: victim.index });
			crash = { pid: killed.pid, signal: killed.exited.signal, restart: () => h.control('POST /start-worker', { index: victim.index }) };
		} else {
			const restarted = await h.control('POST /restart-main');
			crash = { pid: restarted.oldPid, signal: restarted.oldExit?.signal, restart: null };
		}
		expect(crash.signal).toBe('SIGKILL');
		expect(pidAlive(crash.pid)).toBe(false);
		api.dropHeld(key); // the API never finished the call: no effect
		if (crash.restart) await crash.restart();

		// The provider retries until a 2xx: In Progress while the crashed run's lease lasts, then New.
		const crashedAt = Date.now();
		const run = await deliverAll({
			url: shortLease.url,
			plan: { eventIds: [event.id], deliveries: [{ eventId: event.id, forged: false, body: event }] },
			concurrency: 1,
			retry: { firstDelayMs: 1000, maxDelayMs: 3000, budgetMs: 180000 },
		});
		// The crashed delivery's own answer, if n8n gave one: never a 2xx (the effect did not happen).
		const crashedAnswer = await Promise.race([first, sleep(10000).then(() => ({ status: null, error: 'no answer' }))]);
		report('embedded checklist 2 (crash mid business step)', { ...figures(run), crashedAnswer, leaseSeconds: CRASH_LEASE_SECONDS, secondsAfterCrash: (Date.now() - crashedAt) / 1000 });
		expect(crashedAnswer.status >= 200 && crashedAnswer.status < 300).toBe(false);
		expect(run.deliveries[0].gaveUp).toBe(false);
		expect(run.deliveries[0].final).toMatchObject({ status: 200, outcome: 'new' });
		expect(run.attempts.filter((a) => a.status === 200)).toHaveLength(1);
		expect(api.calls(key)).toBe(1);
		// Reclaimed after the lease: a second attempt on the key, completed.
		expect(await keyStates(h, [key])).toEqual({ [key]: { status: 'completed', attempts: 2, duplicates: expect.any(Number) } });
		const again = await h.deliver(shortLease.url, event);
		expect([again.status, again.outcome]).toEqual([200, 'duplicate']);
		expect(api.calls(key)).toBe(1);
		// n8n's record: one run did the business step and succeeded (the crashed one never finished).
		const ranBusiness = (runs) => runs.filter((r) => r.status === 'success' && r.nodesRun.includes(EMB.business));
		const runs = await eventually(() => h.executions(shortLease.workflowId, mark), (rs) => ranBusiness(rs).length > 0, { timeoutMs: 60000 });
		expect(ranBusiness(runs)).toHaveLength(1);
	});

	// Two different events (ids of their own) for one business action, keyed by the business action.
	test('3. two events map to the same business object', async () => {
		const { url, workflowId } = businessKeyed;
		const order = `ord_${eventId('emb_order').slice(8)}`;
		const businessKey = `order-paid:${order}`;
		const paid = (type) => ({ id: eventId(type.replaceAll('.', '_')), type, data: { object: { metadata: { order_id: order } } } });
		const events = [paid('checkout.session.completed'), paid('payment_intent.succeeded')];

		const mark = await h.executionMark();
		const first = await Promise.all(events.map((event) => h.deliver(url, event)));
		const winner = first.findIndex((a) => a.outcome === 'new');
		expect(first.filter((a) => a.outcome === 'new')).toHaveLength(1);
		expect(first[winner].status).toBe(200);
		expect([[200, 'duplicate'], [409, 'in_progress']]).toContainEqual([first[1 - winner].status, first[1 - winner].outcome]);
		const retries = await Promise.all(events.map((event) => h.deliver(url, event)));
		expect(retries.map((a) => [a.status, a.outcome])).toEqual([[200, 'duplicate'], [200, 'duplicate']]);
		for (const a of [first[winner], ...retries]) expect(a.json).toEqual({ received: true, eventKey: businessKey });

		expect(api.calls(businessKey)).toBe(1);
		expect(api.log().find((c) => c.key === businessKey).body).toEqual({ eventKey: businessKey, type: events[winner].type });
		for (const event of events) expect(api.calls(`evt:${event.id}`)).toBe(0);
		const keys = [businessKey, ...events.map((e) => `evt:${e.id}`)];
		expect(await keyStates(h, keys)).toEqual({ [keys[0]]: { status: 'completed', attempts: 1, duplicates: 3 }, [keys[1]]: null, [keys[2]]: null });
		const runs = await h.waitForExecutions(workflowId, mark, 4);
		expect(runs.filter((run) => run.nodesRun.includes(EMB.business))).toHaveLength(1);
	});

	// The ordered template on the embedded store: the state converges to the update's; the late create is Stale.
	test('4. an out-of-order update arrives before the create', async () => {
		const { url, workflowId } = ordered;
		const customer = `cus_${eventId('emb_ubc').slice(8)}`;
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

		// The API saw only the update: the customer's state is the update's.
		const applied = api.log().filter((c) => c.body.customer === customer).map((c) => c.body);
		expect(applied).toEqual([{ eventKey: `evt:${update.id}`, customer, email: 'new@example.com', version: created + 60 }]);
		expect(await keyStates(h, [`evt:${update.id}`, `evt:${create.id}`])).toEqual({
			[`evt:${update.id}`]: { status: 'completed', attempts: 1, duplicates: 1 },
			[`evt:${create.id}`]: { status: 'completed', attempts: 1, duplicates: 0 },
		});
	});

	// Event A, A again as Stripe resends it (a different valid signature), then B.
	test('5. a valid replay arrives after the original was handled', async () => {
		const mark = await h.executionMark();
		const a = { id: eventId('emb_A'), type: 'payment_intent.succeeded', data: { amount: 1200 } };
		const b = { id: eventId('emb_B'), type: 'invoice.paid' };
		const now = Math.floor(Date.now() / 1000);
		const first = await h.deliver(webhook.url, a, {}, { timestamp: now - 60 });
		const repeat = await h.deliver(webhook.url, a, {}, { timestamp: now });
		const other = await h.deliver(webhook.url, b);
		expect(repeat.signature).not.toBe(first.signature);
		expect([first.status, first.outcome]).toEqual([200, 'new']);
		expect([repeat.status, repeat.outcome]).toEqual([200, 'duplicate']);
		expect([other.status, other.outcome]).toEqual([200, 'new']);
		expect(first.json).toEqual({ received: true, eventKey: `evt:${a.id}` });
		expect(repeat.json).toEqual(first.json);

		const executions = await h.waitForExecutions(webhook.workflowId, mark, 3);
		expect(executions.map((e) => e.status)).toEqual(['success', 'success', 'success']);
		expect(executions.map((e) => outputTaken(e, EMB.reserve))).toEqual([0, 1, 0]);
		expect(executions[1].nodesRun).not.toContain(EMB.business);
		expect(executions[1].nodesRun).toContain(EMB.respondDuplicate);
		for (const e of [executions[0], executions[2]]) expect(e.nodesRun).toEqual(expect.arrayContaining([EMB.business, EMB.settle, EMB.respond200]));

		expect([api.calls(`evt:${a.id}`), api.calls(`evt:${b.id}`)]).toEqual([1, 1]);
		expect(await keyStates(h, [`evt:${a.id}`, `evt:${b.id}`])).toEqual({
			[`evt:${a.id}`]: { status: 'completed', attempts: 1, duplicates: 1 },
			[`evt:${b.id}`]: { status: 'completed', attempts: 1, duplicates: 0 },
		});
	});

	// Unsigned, forged, tampered and garbled deliveries: 401, nothing written; the genuine one is New.
	test('6. an unsigned payload is rejected before any write', async () => {
		const event = { id: eventId('emb_forged'), type: 'charge.succeeded', data: { amount: 4200 } };
		const key = `evt:${event.id}`;
		const raw = JSON.stringify(event);
		const before = { keys: (await storeStats(h)).total, calls: api.total() };
		const mark = await h.executionMark();

		const unsigned = await h.deliver(webhook.url, event, {}, { sign: false });
		const forged = await h.deliver(webhook.url, event, {}, { secret: 'whsec_attacker_guess_e2e' });
		const tamperedRaw = raw.replace('4200', '1');
		expect(tamperedRaw).not.toBe(raw);
		const tampered = await h.deliver(webhook.url, tamperedRaw, { 'stripe-signature': h.stripeSignature(raw) }, { sign: false });
		const garbled = await h.deliver(webhook.url, event, { 'stripe-signature': 'not a stripe signature' }, { sign: false });
		expectRejected(unsigned, 'missing_header');
		expectRejected(forged, 'signature_mismatch');
		expectRejected(tampered, 'signature_mismatch');
		expectRejected(garbled, 'malformed_header');
		expectRejectedRuns(await h.waitForExecutions(webhook.workflowId, mark, 4), ['missing_header', 'signature_mismatch', 'signature_mismatch', 'malformed_header']);

		// Untouched: no key in the store, no call to the API.
		expect(await keyStates(h, [key])).toEqual({ [key]: null });
		expect({ keys: (await storeStats(h)).total, calls: api.total() }).toEqual(before);

		const mark2 = await h.executionMark();
		const genuine = await h.deliver(webhook.url, event);
		expect([genuine.status, genuine.outcome]).toEqual([200, 'new']);
		expect(genuine.json).toEqual({ received: true, eventKey: key });
		const replay = await h.deliver(webhook.url, event, { 'stripe-signature': genuine.signature }, { sign: false });
		expect([replay.status, replay.outcome]).toEqual([200, 'duplicate']);
		const runs = await h.waitForExecutions(webhook.workflowId, mark2, 2);
		expect(runs.map((e) => outputTaken(e, EMB.reserve))).toEqual([0, 1]);
		expect(outputItem(runs[0], EMB.verify, 0).signature).toMatchObject({ valid: true, scheme: 'stripe' });

		expect(api.calls(key)).toBe(1);
		expect(await keyStates(h, [key])).toEqual({ [key]: { status: 'completed', attempts: 1, duplicates: 1 } });
		expect({ keys: (await storeStats(h)).total, calls: api.total() }).toEqual({ keys: before.keys + 1, calls: before.calls + 1 });
	});
});
