// The Idempotent Webhook trigger (templates/idempotent-webhook-trigger.json) given adversarial
// requests through a real n8n, each answered as the trigger's answers table says
// (docs/templates.md#with-the-idempotent-webhook-trigger): an event id with a NUL or a lone
// surrogate (503 key_refused), two ids that differ only beyond 2^53 (two events, keyed by their
// exact digits), a 5 MB body (one event), a signing secret being rotated (Previous Secret: both
// accepted, the retired one refused once cleared), a signature header and a key header sent twice.
// A refusal starts no execution: after the refused requests a sentinel event is delivered and it is
// the only execution n8n recorded since.
// e2e-tags: single queue compatibility:single
import http from 'node:http';
import * as stack from '../support/stack/n8nStack';
import { harness, eventId, outputItem, OWNER } from '../support/e2e/harness';
import { useWorkerFolders } from '../support/e2e/embedded';
import { publishTrigger, triggerBase, deliverUntilAccepted, triggerKey, triggerKeyStates, TRIGGER } from '../support/e2e/trigger';
import { startSink, type Sink } from '../support/e2e/sink';
import type { Json } from '../support/e2e/workflows';

type Trigger = Awaited<ReturnType<typeof publishTrigger>>;
/** What `post` resolves to: the status, the x-idempotency-outcome header and the JSON body (when it is JSON). */
interface Answer {
	status: number | undefined;
	outcome: string | string[] | null;
	json: { error?: string } | undefined;
}

/** POSTs raw `body` with `headers`; an array value is sent as that many header lines. */
function post(url: string, body: string, headers: Record<string, string | string[]>): Promise<Answer> {
	return new Promise((resolve, reject) => {
		const request = http.request(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers } }, (response) => {
			let text = '';
			response.setEncoding('utf8');
			response.on('data', (chunk) => (text += chunk));
			response.on('end', () => {
				let json: Answer['json'];
				try {
					json = JSON.parse(text);
				} catch {
					// not JSON: no json
				}
				resolve({ status: response.statusCode, outcome: response.headers['x-idempotency-outcome'] ?? null, json });
			});
		});
		request.on('error', reject);
		request.end(body);
	});
}

/** Two decimal ids of 19 digits that differ in their last digit and are the same JavaScript number. */
function idsEqualAsNumbers(): [string, string] {
	for (;;) {
		const head = `9${String(Math.floor(Math.random() * 1e17)).padStart(17, '0')}`;
		const [a, b] = [`${head}4`, `${head}5`];
		if (Number(a) === Number(b)) return [a, b];
	}
}

describe('the Idempotent Webhook trigger under adversarial requests (answers table, end to end)', () => {
	const h = harness();
	let api: Sink;
	let webhook: Trigger;
	let byHeader: Trigger;

	beforeAll(async () => {
		// Queue mode: Store Automatic needs no shared folder (the keys are in n8n's database).
		await useWorkerFolders(h, 'own');
		const { baseUrl } = await triggerBase(h);
		api = await startSink();
		webhook = await publishTrigger(h, 'trigger-adv', { apiUrl: api.url, baseUrl });
		// Key Source: Header, for the key header sent twice.
		byHeader = await publishTrigger(h, 'trigger-adv-hdr', {
			apiUrl: api.url,
			baseUrl,
			change: (node) =>
				node.type === TRIGGER.type
					? { ...node, parameters: { ...node.parameters, keySource: 'header', headerName: 'X-Delivery-Id' } }
					: node,
		});
		// Queue mode: the first run on a worker opens the store; warm it up like a provider retrying.
		if (h.topology === 'queue') await deliverUntilAccepted(h, webhook.url, { id: eventId('adv_warm'), type: 'e2e.warmup' });
	});
	afterAll(async () => api?.close());

	/** The executions since `mark` once a sentinel event ran: a refusal started none, so only the sentinel's is there. */
	async function expectOnlySentinelRan(target: Trigger, mark: number, headers: Record<string, string> = {}) {
		const sentinel = { id: eventId('adv_sentinel'), type: 'sentinel' };
		const answer: stack.Delivery<Json> = await h.deliver(target.url, sentinel, headers);
		expect([answer.status, answer.outcome]).toEqual([200, 'new']);
		const executions = await h.waitForExecutions(target.workflowId, mark, 1);
		expect(executions.map((e) => outputItem(e, TRIGGER.node).idempotency.key)).toEqual([answer.json.eventKey]);
	}

	test('an event id with a NUL, or with a lone surrogate: 503 key_refused (not_reserved), nothing stored, no execution', async () => {
		const mark = await h.executionMark();
		const base = eventId('adv_nul');
		const bodies = [`{"id":"${base}\\u0000x","type":"nul"}`, `{"id":"${base}\\ud800","type":"surrogate"}`];
		for (const raw of bodies) {
			const answer: stack.Delivery<Json> = await h.deliver(webhook.url, raw);
			expect([answer.status, answer.outcome, answer.json?.error]).toEqual([503, 'not_reserved', 'key_refused']);
		}
		expect(JSON.parse(bodies[0]).id).toContain('\u0000'); // the id really holds what the row names
		expect(
			api.arrivals(triggerKey(webhook.workflowId, `${base}\u0000x`)) + api.arrivals(triggerKey(webhook.workflowId, `${base}\ud800`)),
		).toBe(0);
		await expectOnlySentinelRan(webhook, mark);
		expect(JSON.parse(bodies[1]).id).toMatch(/\ud800$/);
	});

	test('two ids that differ only beyond 2^53 (the same JavaScript number): two events, keyed by their exact digits; each repeat a duplicate', async () => {
		const mark = await h.executionMark();
		const [a, b] = idsEqualAsNumbers();
		const raw = (id: string) => `{"id":${id},"type":"big.id"}`;
		expect(JSON.parse(raw(a)).id).toBe(JSON.parse(raw(b)).id); // JSON.parse alone would merge them
		const answers: Array<stack.Delivery<Json>> = [];
		for (const id of [a, b, a, b]) answers.push(await h.deliver(webhook.url, raw(id)));
		expect(answers.map((answer) => [answer.status, answer.outcome])).toEqual([
			[200, 'new'],
			[200, 'new'],
			[200, 'duplicate'],
			[200, 'duplicate'],
		]);
		const keys = [a, b].map((id) => triggerKey(webhook.workflowId, id));
		expect(answers.slice(0, 2).map((answer) => answer.json.eventKey)).toEqual(keys);
		expect(keys.map((key) => api.calls(key))).toEqual([1, 1]);
		expect(await triggerKeyStates(h, keys)).toEqual({
			[keys[0]]: { status: 'completed', attempts: 1, duplicates: 1 },
			[keys[1]]: { status: 'completed', attempts: 1, duplicates: 1 },
		});
		const executions = await h.waitForExecutions(webhook.workflowId, mark, 2);
		expect(executions.map((e) => outputItem(e, TRIGGER.node).idempotency.key)).toEqual(keys);
	});

	test('a 5 MB body: one event (200 new, one call), its repeat a duplicate', async () => {
		const mark = await h.executionMark();
		const id = eventId('adv_5mb');
		const raw = JSON.stringify({ id, type: 'big.body', blob: 'x'.repeat(5 * 1024 * 1024) });
		const first = await h.deliver(webhook.url, raw);
		const again = await h.deliver(webhook.url, raw);
		expect([first.status, first.outcome, again.status, again.outcome]).toEqual([200, 'new', 200, 'duplicate']);
		expect(again.json).toEqual(first.json);
		expect(api.calls(triggerKey(webhook.workflowId, id))).toBe(1);
		const executions = await h.waitForExecutions(webhook.workflowId, mark, 1);
		expect(executions.map((e) => e.status)).toEqual(['success']);
	});

	test('secret rotation (Previous Secret): the new and the retired secret both accepted while rotating; the retired one refused (401) once cleared, with no execution', async () => {
		const rest = h.rest();
		await rest.ownerLogin(OWNER);
		const credential = stack.TEMPLATE_CREDENTIALS.signature;
		const setData = async (data: { secret: string; previousSecret: string }) => {
			const res = await rest.call('PATCH', `/credentials/${credential.id}`, { name: credential.name, type: credential.type, data });
			expect(res.status).toBe(200);
			// The trigger keeps the secrets it read for up to a second: the next delivery must see this change.
			await new Promise((resolve) => setTimeout(resolve, 1100));
		};
		const fresh = 'whsec_e2e_rotated_in_secret';
		const events = ['rot_old', 'rot_new', 'rot_retired', 'rot_after'].map((label) => ({ id: eventId(label), type: 'rotation' }));
		try {
			await setData({ secret: fresh, previousSecret: h.secret });
			const byRetiring = await h.deliver(webhook.url, events[0], {}, { secret: h.secret });
			const byFresh = await h.deliver(webhook.url, events[1], {}, { secret: fresh });
			expect([byRetiring.status, byRetiring.outcome, byFresh.status, byFresh.outcome]).toEqual([200, 'new', 200, 'new']);

			await setData({ secret: fresh, previousSecret: '' });
			const mark = await h.executionMark();
			const retired = await h.deliver(webhook.url, events[2], {}, { secret: h.secret });
			expect([retired.status, retired.outcome, retired.json]).toEqual([
				401,
				'invalid_signature',
				{ error: 'invalid_signature', reason: 'signature_mismatch' },
			]);
			const after = await h.deliver(webhook.url, events[3], {}, { secret: fresh });
			expect([after.status, after.outcome]).toEqual([200, 'new']);
			const executions = await h.waitForExecutions(webhook.workflowId, mark, 1);
			const [refusedKey, acceptedKey] = [events[2], events[3]].map((event) => triggerKey(webhook.workflowId, event.id));
			expect(executions.map((e) => outputItem(e, TRIGGER.node).idempotency.key)).toEqual([acceptedKey]);
			expect(api.arrivals(refusedKey)).toBe(0);
			expect(await triggerKeyStates(h, [refusedKey])).toEqual({ [refusedKey]: null });
		} finally {
			await setData({ secret: h.secret, previousSecret: '' });
		}
	});

	test('a header sent twice: the signature with a forged value beside the genuine one 401 (malformed_header), the same signature twice accepted; a key header with two values, or one value twice, 503 key_refused; no execution for the refusals', async () => {
		const mark = await h.executionMark();
		const forgedBody = JSON.stringify({ id: eventId('adv_sig_twice'), type: 'twice' });
		const forged = await post(webhook.url, forgedBody, {
			'stripe-signature': [stack.stripeSignature(forgedBody, { secret: 'whsec_forged' }), stack.stripeSignature(forgedBody)],
		});
		expect([forged.status, forged.outcome, forged.json]).toEqual([
			401,
			'invalid_signature',
			{ error: 'invalid_signature', reason: 'malformed_header' },
		]);

		const sameBody = JSON.stringify({ id: eventId('adv_sig_same'), type: 'twice' });
		const signature = stack.stripeSignature(sameBody);
		const same = await post(webhook.url, sameBody, { 'stripe-signature': [signature, signature] });
		expect([same.status, same.outcome]).toEqual([200, 'new']);

		const delivery = eventId('adv_delivery');
		for (const values of [
			[`${delivery}-a`, `${delivery}-b`],
			[delivery, delivery],
		]) {
			const body = JSON.stringify({ id: eventId('adv_key_twice'), type: 'twice' });
			const refused = await post(byHeader.url, body, { 'stripe-signature': stack.stripeSignature(body), 'x-delivery-id': values });
			expect([refused.status, refused.outcome, refused.json?.error]).toEqual([503, 'not_reserved', 'key_refused']);
		}
		const executions = await h.waitForExecutions(webhook.workflowId, mark, 1);
		expect(executions.map((e) => outputItem(e, TRIGGER.node).idempotency.key)).toEqual([
			triggerKey(webhook.workflowId, JSON.parse(sameBody).id),
		]);
		await expectOnlySentinelRan(byHeader, mark, { 'x-delivery-id': eventId('adv_delivery_sentinel') });
	});
});
