// The Idempotent Webhook trigger through templates/idempotent-webhook-trigger.json as a user runs it:
// the trigger (version 3 as shipped: Store Automatic, each workflow's keys apart, Stripe signatures)
// and the example business step, an HTTP Request to the user's API at n8n's default settings,
// pointed at the test's sink. Copies, copies in progress and forgeries are answered by the trigger
// without an execution; a new event runs once, its key completed with the answer the workflow gave,
// which its copies get back; a failing step answers 500 and the provider's retry runs it again; a
// sender that gives up before a slow step ends does not stop it: the key completes and the retry is
// a duplicate. Single process (the keys in the embedded file in n8n's folder), and queue mode with
// an `n8n webhook` process answering (the trigger's webhook() runs there) and two workers running
// the executions, each in an n8n folder of its own (the keys in n8n's own Postgres).
// e2e-tags: single queue compatibility
import crypto from 'node:crypto';
import fs from 'node:fs';
import { harness, eventId, outputItem } from '../support/e2e/harness';
import { useWorkerFolders } from '../support/e2e/embedded';
import { figures, report } from '../support/e2e/provider';
import {
	publishTrigger,
	triggerBase,
	triggerWorkflow,
	withWaitBeforeStep,
	deliverUntilAccepted as acceptedAt,
	triggerKey,
	triggerKeyStates,
	TRIGGER,
	BURST_TEST_TIMEOUT_MS,
	burstAttempts,
	deliverBurst,
} from '../support/e2e/trigger';
import { n8nReadyWithin } from '../support/e2e/readiness';
import { startSink, type Sink } from '../support/e2e/sink';
import { eventually } from '../support/e2e/eventually';
import { saveWorkflow, runFromManualTrigger, tryPublishWorkflow } from '../support/e2e/restWorkflows';
import { stripeSignature } from '../support/stack/stripeDelivery';
import * as stack from '../support/stack/n8nStack';
import type { ProcessList } from '../support/stack/n8nProcesses';

type Trigger = Awaited<ReturnType<typeof publishTrigger>>;

describe('the Idempotent Webhook trigger (templates/idempotent-webhook-trigger.json)', () => {
	const h = harness();
	let api: Sink;
	let webhook: Trigger;
	let base: Awaited<ReturnType<typeof triggerBase>>;

	beforeAll(async () => {
		// Queue mode: Store Automatic needs no shared folder (the keys are in n8n's database).
		await useWorkerFolders(h, 'own');
		base = await triggerBase(h);
		api = await startSink();
		webhook = await publishTrigger(h, 'trigger', { apiUrl: api.url, baseUrl: base.baseUrl });
	});
	afterAll(async () => api?.close());

	const deliverUntilAccepted = (event: { id: string; type: string }) => acceptedAt(h, webhook.url, event);

	/** Queue mode: each execution ran on a worker (its log names it), none on main or the webhook process. */
	async function expectRanOnWorkers(executions: Array<{ id: number }>) {
		if (h.topology !== 'queue') return;
		const { workers, webhook: webhookProcess }: ProcessList = await h.control('GET /processes');
		expect(webhookProcess).toMatchObject({ pid: base.webhookProcess.pid, alive: true, userFolder: h.state.userFolder });
		if (!webhookProcess) throw new Error('queue mode runs no webhook process');
		expect(webhook.url.startsWith(`${webhookProcess.url}/`)).toBe(true);
		const logs = workers.map((worker) => fs.readFileSync(worker.logFile, 'utf8')).join('\n');
		for (const execution of executions) expect(logs).toContain(`Worker started execution ${execution.id} `);
	}

	test('A, A with a new signature, B, a forged C, C, a body without id twice: one call per event; copies and the forgery start no execution', async () => {
		// Queue mode: the first run on a worker opens the store; warm it up like a provider retrying.
		if (h.topology === 'queue') await deliverUntilAccepted({ id: eventId('trg_warm'), type: 'e2e.warmup' });
		const mark = await h.executionMark();
		const a = { id: eventId('trg_a'), type: 'payment_intent.succeeded' };
		const b = { id: eventId('trg_b'), type: 'invoice.paid' };
		const c = { id: eventId('trg_c'), type: 'charge.refunded' };
		const raw = `{ "type": "ping",  "note": "no id here", "nonce": "${crypto.randomUUID()}" }`;
		const idlessKey = triggerKey(webhook.workflowId, { key: `sha256:${crypto.createHash('sha256').update(raw).digest('hex')}` });
		const now = Math.floor(Date.now() / 1000);

		const answers = [];
		answers.push(await h.deliver(webhook.url, a, {}, { timestamp: now - 60 }));
		answers.push(await h.deliver(webhook.url, a, {}, { timestamp: now })); // Stripe's retry: a new signature
		answers.push(await h.deliver(webhook.url, b));
		answers.push(await h.deliver(webhook.url, c, {}, { secret: 'whsec_not_the_endpoint_secret' }));
		answers.push(await h.deliver(webhook.url, c));
		answers.push(await h.deliver(webhook.url, raw));
		answers.push(await h.deliver(webhook.url, raw));
		expect(answers.map((answer) => [answer.status, answer.outcome])).toEqual([
			[200, 'new'],
			[200, 'duplicate'],
			[200, 'new'],
			[401, 'invalid_signature'],
			[200, 'new'],
			[200, 'new'],
			[200, 'duplicate'],
		]);
		const keys = [...[a, b, c].map((event) => triggerKey(webhook.workflowId, event.id)), idlessKey];
		// A new event is answered with the workflow's last node (the API's answer); its copy gets that answer back.
		expect(answers[0].json).toEqual({ ok: true, eventKey: keys[0], call: 1 });
		expect(answers[1].json).toEqual(answers[0].json);
		expect(answers[6].json).toEqual(answers[5].json);
		expect(answers[3].json).toMatchObject({ error: 'invalid_signature' });

		expect(Object.fromEntries(keys.map((key) => [key, api.calls(key)]))).toEqual(Object.fromEntries(keys.map((key) => [key, 1])));
		expect(await triggerKeyStates(h, keys)).toEqual({
			[keys[0]]: { status: 'completed', attempts: 1, duplicates: 1 },
			[keys[1]]: { status: 'completed', attempts: 1, duplicates: 0 },
			[keys[2]]: { status: 'completed', attempts: 1, duplicates: 0 },
			[keys[3]]: { status: 'completed', attempts: 1, duplicates: 1 },
		});
		// n8n's record: one execution per new event; the two copies and the forgery started none.
		const executions = await h.waitForExecutions(webhook.workflowId, mark, 4);
		expect(executions.map((e) => e.status)).toEqual(Array(4).fill('success'));
		expect(executions.map((e) => outputItem(e, TRIGGER.node).idempotency.key)).toEqual(keys);
		await expectRanOnWorkers(executions);
	});

	test(
		'100 copies of one event at once, retried until a 2xx: one call, one execution past the trigger',
		async () => {
			const mark = await h.executionMark();
			const event = { id: eventId('trg_burst'), type: 'order.created' };
			const key = triggerKey(webhook.workflowId, event.id);
			const run = await deliverBurst(webhook.url, event);
			const stats = figures(run);
			report(`trigger burst of 100 (${h.topology})`, stats);
			expect(stats.gaveUp).toBe(0);
			expect(run.deliveries.map((d) => d.final.status)).toEqual(Array(100).fill(200));
			// One delivery reserves the key. Another only after n8n failed the first one's execution itself (answered it 5xx:
			// its database ping timed out under the burst); in queue mode the key is then held to its lease end.
			expect(run.attempts.filter((attempt) => attempt.outcome === 'new' && attempt.status < 500).length).toBeLessThanOrEqual(1);
			expect(run.attempts.filter((attempt) => attempt.status === 409 && attempt.outcome !== 'in_progress')).toEqual([]);
			expect(api.calls(key)).toBe(1);
			const states = await triggerKeyStates(h, [key]);
			expect(states).toEqual({ [key]: { status: 'completed', attempts: expect.any(Number), duplicates: expect.any(Number) } });
			expect(burstAttempts(run)).toContain(states[key]?.attempts);
			// Every copy was answered by the trigger: n8n ran the workflow once. An execution n8n made but
			// could not start (it answered that delivery 5xx itself, so the package failed the key for the
			// retry; n8n 1.x under this burst) runs no node: if it starts later, it finds the key taken over…
			await h.waitForExecutions(webhook.workflowId, mark, 1);
			const executions = await h.executions(webhook.workflowId, mark);
			const ranPastTrigger = executions.filter((e) => e.nodesRun.some((name) => name !== TRIGGER.node));
			expect(ranPastTrigger).toHaveLength(1);
			// …and only where n8n failed a delivery itself (a 5xx, or no answer).
			if (executions.length > 1) expect(run.attempts.some((attempt) => attempt.status >= 500 || attempt.error !== undefined)).toBe(true);
			// Such a burst can leave n8n answering every request 503 ("Database is not ready!": its database ping
			// timed out) for a while; the next rows start once its readiness check answers 200 again.
			const origin = new URL(webhook.url).origin;
			if (!(await n8nReadyWithin(origin, 60_000))) throw new Error(`n8n at ${origin} was not ready a minute after the burst`);
		},
		BURST_TEST_TIMEOUT_MS,
	);

	test('the business step fails (the API answers 500) at its default settings: 500, the key failed, the retry runs it once', async () => {
		const mark = await h.executionMark();
		const event = { id: eventId('trg_fail'), type: 'order.created' };
		const key = triggerKey(webhook.workflowId, event.id);
		api.failNext(key, 500);
		const failed = await h.deliver(webhook.url, event);
		expect(failed.status).toBe(500);
		expect(api.calls(key)).toBe(0);
		expect(await triggerKeyStates(h, [key])).toEqual({ [key]: { status: 'failed', attempts: 1, duplicates: 0 } });

		const retried = await deliverUntilAccepted(event);
		expect(retried.map((answer) => [answer.status, answer.outcome])).toEqual([[200, 'new']]);
		expect(api.calls(key)).toBe(1);
		expect(await triggerKeyStates(h, [key])).toEqual({ [key]: { status: 'completed', attempts: 2, duplicates: 0 } });
		const executions = await h.waitForExecutions(webhook.workflowId, mark, 2);
		expect(executions.map((e) => e.status)).toEqual(['error', 'success']);
	});

	// GitHub signs no timestamp, so the trigger shows no Tolerance for it and n8n gives the node none: every
	// delivery was answered 503 while the trigger read it without a fallback.
	test('Scheme GitHub, as a user switches the template to it: a genuine delivery runs once, its copy is a duplicate, a forgery 401', async () => {
		const github = await publishTrigger(h, 'trigger-github', {
			apiUrl: api.url,
			baseUrl: base.baseUrl,
			change: (node) => (node.type === TRIGGER.type ? { ...node, parameters: { ...node.parameters, scheme: 'github' } } : node),
		});
		const event = { id: eventId('trg_github'), type: 'issues.opened' };
		const raw = JSON.stringify(event);
		const signed = (secret: string) => ({
			'x-github-delivery': crypto.randomUUID(),
			'x-hub-signature-256': `sha256=${crypto.createHmac('sha256', secret).update(raw).digest('hex')}`,
		});
		const key = triggerKey(github.workflowId, event.id);
		const first = await h.deliver(github.url, raw, signed(h.secret), { sign: false });
		const copy = await h.deliver(github.url, raw, signed(h.secret), { sign: false });
		const forged = await h.deliver(github.url, raw, signed('not-the-secret'), { sign: false });
		expect({
			first: [first.status, first.outcome],
			copy: [copy.status, copy.outcome],
			forged: forged.status,
			calls: api.calls(key),
		}).toEqual({ first: [200, 'new'], copy: [200, 'duplicate'], forged: 401, calls: 1 });
	});

	test('the sender gives up after 2 s, the step takes 6 s: the step still ends, the key completes, 409 meanwhile, the retry is a duplicate; one effect', async () => {
		const mark = await h.executionMark();
		const event = { id: eventId('trg_timeout'), type: 'order.created' };
		const key = triggerKey(webhook.workflowId, event.id);
		api.slow(key, 6000);
		const gaveUp = await h.deliver(webhook.url, event, {}, { timeoutMs: 2000 }).then(
			(answer) => ({ answered: answer.status }),
			(error: Error) => ({ error: error.name }),
		);
		expect(gaveUp).toEqual({ error: 'TimeoutError' });
		// The sender's retry while the step still works: the first delivery holds the key.
		const during = await h.deliver(webhook.url, event);
		expect([during.status, during.outcome]).toEqual([409, 'in_progress']);
		expect(api.calls(key)).toBe(0); // the step had not committed yet

		const [execution] = await h.waitForExecutions(webhook.workflowId, mark, 1);
		expect(execution.status).toBe('success');
		const completed = await eventually(
			() => triggerKeyStates(h, [key]),
			(states) => states[key]?.status === 'completed',
			{ timeoutMs: 30000 },
		);
		// The copy answered 409 is counted on the key.
		expect(completed[key]).toEqual({ status: 'completed', attempts: 1, duplicates: 1 });
		const retried = await h.deliver(webhook.url, event);
		expect([retried.status, retried.outcome]).toEqual([200, 'duplicate']);
		expect(retried.json).toEqual({ ok: true, eventKey: key, call: 1 });
		// One effect: one call reached the API and committed; nobody left it half done.
		expect([api.arrivals(key), api.calls(key), api.abandoned(key)]).toEqual([1, 1, 0]);
		expect(await h.executions(webhook.workflowId, mark)).toHaveLength(1);
		await expectRanOnWorkers([execution]);
	});

	test('a Wait after the trigger is refused when the workflow is published, the Wait named: no webhook, nothing reserved', async () => {
		const { workflow, webhookPath } = triggerWorkflow('trigger-wait', { apiUrl: api.url, edit: withWaitBeforeStep });
		const { refusal } = await tryPublishWorkflow(h, workflow, webhookPath);
		expect(refusal).toMatch(/"Wait" makes the execution wait.*The workflow was not published/);
		expect(await stack.webhookRegistered(h.state.n8nDbUrl, webhookPath)).toBe(false);
		const answer = await h.deliver(`${base.baseUrl}/webhook/${webhookPath}`, { id: eventId('trg_wait'), type: 'order.created' });
		expect(answer.status).toBe(404);
	});

	test('what the trigger answered without an execution is counted in Get Stats, and a copy names the first execution', async () => {
		// Get Stats as a user runs it from the editor, on the store the trigger uses.
		const { id: statsWorkflowId } = await saveWorkflow(h, getStatsWorkflow(), 'trigger-stats');
		const answersInWindow = async (): Promise<Record<string, number>> => {
			const { execution } = await runFromManualTrigger(h, statsWorkflowId, 'Run Now');
			expect(execution.status).toBe('success');
			return outputItem(execution, 'Get Stats').answersInWindow;
		};
		const before = await answersInWindow();
		const mark = await h.executionMark();
		const event = { id: eventId('trg_seen'), type: 'order.created' };
		const first = await h.deliver(webhook.url, event);
		const forged = await h.deliver(webhook.url, event, {}, { secret: 'whsec_not_the_endpoint_secret' });
		const [execution] = await h.waitForExecutions(webhook.workflowId, mark, 1);
		const raw = JSON.stringify(event);
		const copy = await fetch(webhook.url, {
			method: 'POST',
			headers: { 'content-type': 'application/json', 'stripe-signature': stripeSignature(raw) },
			body: raw,
		});

		expect([first.status, first.outcome, forged.status, forged.outcome]).toEqual([200, 'new', 401, 'invalid_signature']);
		expect([copy.status, copy.headers.get('x-idempotency-outcome'), copy.headers.get('x-idempotency-first-execution')]).toEqual([
			200,
			'duplicate',
			String(execution.id),
		]);
		// Each delivery is counted just after its answer is written: the last one may land a moment later.
		const counted = (after: Record<string, number>) =>
			Object.fromEntries(
				Object.keys(after)
					.map((answer) => [answer, after[answer] - (before[answer] ?? 0)])
					.filter(([, n]) => n !== 0),
			);
		const expected = { new: 1, duplicate: 1, invalid_signature: 1 };
		const after = await eventually(
			answersInWindow,
			(answers: Record<string, number>) => JSON.stringify(counted(answers)) === JSON.stringify(expected),
			{ timeoutMs: 10000, everyMs: 500 },
		);
		expect(counted(after)).toEqual(expected);
	});
});

/** Manual Trigger → Idempotency Key: Get Stats (last 24 h), a node added today: Store Automatic, as the trigger's. */
function getStatsWorkflow() {
	return {
		name: 'Trigger answers',
		nodes: [
			{ id: crypto.randomUUID(), name: 'Run Now', type: 'n8n-nodes-base.manualTrigger', typeVersion: 1, position: [0, 0], parameters: {} },
			{
				id: crypto.randomUUID(),
				name: 'Get Stats',
				type: 'n8n-nodes-idempotency.idempotencyKey',
				typeVersion: 3,
				position: [240, 0],
				parameters: { operation: 'stats', windowHours: 24, options: {} },
			},
		],
		connections: { 'Run Now': { main: [[{ node: 'Get Stats', type: 'main', index: 0 }]] } },
		settings: { executionOrder: 'v1' },
	};
}
