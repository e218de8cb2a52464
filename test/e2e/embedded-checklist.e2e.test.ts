// The production checklist of seed 002 on the embedded store:
// templates/idempotent-webhook-embedded.json (Store: Embedded on every node, no Postgres credential,
// its business step an HTTP call to the user's API, here the test's sink that counts every call),
// and for test 4 the ordered template switched to Store: Embedded the way a user does it in the
// editor. Single process, and queue mode with main and two workers sharing the n8n folder. Each test
// proves its claim by counting the API's calls (the effects) and reading the keys in the store file.
// The six tests are test/support/e2e/checklist.js. (Test 2 on Postgres cuts the one-transaction
// template's session; Execute Query is Postgres-only, so here the process running the business step
// is killed with SIGKILL while the API call is in flight.)
// e2e-tags: single queue
import fs from 'node:fs';
import { eventId, type Execution, type Harness } from '../support/e2e/harness';
import {
	EMB,
	publishEmbedded,
	startEmbeddedWebhook,
	warmUpDelivery,
	keyStates,
	storedKeys,
	storeStats,
	toEmbeddedStore,
} from '../support/e2e/embedded';
import { defineChecklist, keyedByPaidOrder, UPSERT, type ChecklistStore, type PublishedWebhook } from '../support/e2e/checklist';
import { readShippedTemplate, withOwnWebhook, publishWorkflow } from '../support/e2e/restWorkflows';
import { deliverAll, figures, report } from '../support/e2e/provider';
import { eventually } from '../support/e2e/eventually';
import { pidAlive, sleep, type ServiceExit } from '../support/stack/childProcesses';
import type { N8nProcesses, ProcessList } from '../support/stack/n8nProcesses';
import { startStoppedWorkers } from '../support/e2e/control';
import type { Sink } from '../support/e2e/sink';
import type { WorkflowJson } from '../support/e2e/workflows';

/** What the stack's control answers to POST /kill-worker (test/support/e2e/control). */
interface KilledWorker {
	pid: number;
	exited: ServiceExit;
}
/** What the stack's control answers to POST /restart-main. */
type RestartedMain = Awaited<ReturnType<N8nProcesses['restartMain']>>;

// Test 2's lease: the crashed run's key is taken over once it ends (the template's is 300 s).
const CRASH_LEASE_SECONDS = 20;

/** The ordered template on the embedded store; its upsert becomes a call to the user's API. */
function orderedOnEmbedded(apiUrl: string): WorkflowJson {
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

/**
 * Test 2 on the embedded store: the reservation is written and the API has the call, unanswered,
 * when the n8n process running the business step dies of SIGKILL; the provider's retries are In
 * Progress while the crashed run's lease lasts, then New, and the API takes effect once.
 */
async function crashMidBusinessStep(h: Harness, api: Sink, { url, workflowId }: PublishedWebhook): Promise<void> {
	const event = { id: eventId('emb_crash'), type: 'e2e.crash' };
	const key = `evt:${event.id}`;
	const mark = await h.executionMark();
	const arrived = api.holdNext(key);
	const first = h
		.deliver(url, event)
		.catch((error: Error & { cause?: { code?: string } }) => ({ status: 0, error: error.cause?.code ?? error.message }));
	// The API has the call and has not answered it: the reservation is written, the effect is not.
	const call = await arrived;
	expect(call).toMatchObject({ key, headerKey: key });
	const reserved = (await storedKeys(h, [key]))[key];
	expect(reserved).toMatchObject({ status: 'processing', attempts: 1 });
	expect(api.calls(key)).toBe(0);

	// The crash: the n8n process running the business step dies of SIGKILL mid-call.
	let crash: { pid: number; signal: string | null | undefined; restart: (() => Promise<unknown>) | null };
	if (h.topology === 'queue') {
		const { workers }: ProcessList = await h.control('GET /processes');
		const victim = workers.find((w) => fs.readFileSync(w.logFile, 'utf8').includes(`Worker started execution ${reserved.executionId} `));
		if (!victim) throw new Error(`no worker log names execution ${reserved.executionId}`);
		const { index } = victim;
		if (index === undefined) throw new Error(`the worker whose log names execution ${reserved.executionId} has no index`);
		const killed: KilledWorker = await h.control('POST /kill-worker', { index });
		crash = { pid: killed.pid, signal: killed.exited.signal, restart: () => h.control('POST /start-worker', { index }) };
	} else {
		const restarted: RestartedMain = await h.control('POST /restart-main');
		crash = { pid: restarted.oldPid, signal: restarted.oldExit?.signal, restart: null };
	}
	expect(crash.signal).toBe('SIGKILL');
	expect(pidAlive(crash.pid)).toBe(false);
	api.dropHeld(key); // the API never finished the call: no effect
	if (crash.restart) await crash.restart();

	// The provider retries until a 2xx: In Progress while the crashed run's lease lasts, then New.
	const crashedAt = Date.now();
	const run = await deliverAll({
		url: url,
		plan: { eventIds: [event.id], deliveries: [{ eventId: event.id, forged: false, body: event }] },
		concurrency: 1,
		retry: { firstDelayMs: 1000, maxDelayMs: 3000, budgetMs: 180000 },
	});
	// The crashed delivery's own answer, if n8n gave one: never a 2xx (the effect did not happen).
	const crashedAnswer = await Promise.race([first, sleep(10000).then(() => ({ status: null, error: 'no answer' }))]);
	report('embedded checklist 2 (crash mid business step)', {
		...figures(run),
		crashedAnswer,
		leaseSeconds: CRASH_LEASE_SECONDS,
		secondsAfterCrash: (Date.now() - crashedAt) / 1000,
	});
	expect(crashedAnswer.status !== null && crashedAnswer.status >= 200 && crashedAnswer.status < 300).toBe(false);
	expect(run.deliveries[0].gaveUp).toBe(false);
	expect(run.deliveries[0].final).toMatchObject({ status: 200, outcome: 'new' });
	expect(run.attempts.filter((a) => a.status === 200)).toHaveLength(1);
	expect(api.calls(key)).toBe(1);
	// Reclaimed after the lease: a second attempt on the key, completed.
	expect(await keyStates(h, [key])).toEqual({ [key]: { status: 'completed', attempts: 2, duplicates: expect.any(Number) } });
	const again = await h.deliver(url, event);
	expect([again.status, again.outcome]).toEqual([200, 'duplicate']);
	expect(api.calls(key)).toBe(1);
	// n8n's record: one run did the business step and succeeded (the crashed one never finished).
	const ranBusiness = (runs: Execution[]) => runs.filter((r) => r.status === 'success' && r.nodesRun.includes(EMB.business));
	const runs = await eventually(
		() => h.executions(workflowId, mark),
		(rs) => ranBusiness(rs).length > 0,
		{ timeoutMs: 60000 },
	);
	expect(ranBusiness(runs)).toHaveLength(1);
}

defineChecklist({
	title: 'production checklist (seed 002) on the embedded store',
	label: 'emb_',
	nodes: EMB,
	store: (h: Harness): ChecklistStore => {
		let api: Sink;
		let shortLease: PublishedWebhook;
		return {
			setup: async () => {
				const site = await startEmbeddedWebhook(h, 'emb-chk');
				api = site.api;
				const businessKeyed = await publishEmbedded(h, 'emb-bizkey', {
					apiUrl: api.url,
					warmUpBody: (id: string) => ({ id, type: 'e2e.warmup', data: { object: { metadata: { order_id: `ord_warmup_${id}` } } } }),
					change: keyedByPaidOrder(EMB.reserve),
				});
				shortLease = await publishEmbedded(h, 'emb-crash', {
					apiUrl: api.url,
					change: (node) =>
						node.name === EMB.reserve ? { ...node, parameters: { ...node.parameters, leaseSeconds: CRASH_LEASE_SECONDS } } : node,
				});
				const { workflow, webhookPath } = withOwnWebhook(orderedOnEmbedded(api.url), 'emb-ordered');
				const ordered = { url: `${h.state.baseUrl}/webhook/${webhookPath}`, workflowId: await publishWorkflow(h, workflow, webhookPath) };
				if (h.topology === 'queue') {
					const customerEvent = (id: string) => ({
						id,
						type: 'customer.created',
						created: Math.floor(Date.now() / 1000),
						data: { object: { id: `cus_warmup_${id}`, object: 'customer', email: 'warmup@example.com' } },
					});
					await warmUpDelivery(h, ordered.url, 'emb-ordered', customerEvent);
				}
				return { webhook: site.webhook, businessKeyed, ordered };
			},
			teardown: async () => {
				await api?.close();
				if (h.topology === 'queue') await startStoppedWorkers(h.control); // two workers for the next test file
			},
			/** The API's answered calls for the key: the business step's effects. */
			effects: async (key) => api.calls(key),
			keyStates: (keys) => keyStates(h, keys),
			/** The store's keys and the API's answered calls. */
			totals: async () => ({ keys: (await storeStats(h)).total, effects: api.total() }),
			crash: () => crashMidBusinessStep(h, api, shortLease),
			checks: {
				burst: async ({ key }) => {
					expect(await keyStates(h, [key])).toEqual({ [key]: { status: 'completed', attempts: 1, duplicates: 49 } });
				},
				businessObject: async ({ businessKey, events, winner }) => {
					expect(api.calls(businessKey)).toBe(1);
					expect(api.log().find((c) => c.key === businessKey)!.body).toEqual({ eventKey: businessKey, type: events[winner].type });
					for (const event of events) expect(api.calls(`evt:${event.id}`)).toBe(0);
					const keys = [businessKey, ...events.map((e) => `evt:${e.id}`)];
					expect(await keyStates(h, keys)).toEqual({
						[keys[0]]: { status: 'completed', attempts: 1, duplicates: 3 },
						[keys[1]]: null,
						[keys[2]]: null,
					});
				},
				outOfOrder: async ({ customer, created, update, create }) => {
					// The API saw only the update: the customer's state is the update's.
					const applied = api
						.log()
						.filter((c) => c.body.customer === customer)
						.map((c) => c.body);
					expect(applied).toEqual([{ eventKey: `evt:${update.id}`, customer, email: 'new@example.com', version: created + 60 }]);
					expect(await keyStates(h, [`evt:${update.id}`, `evt:${create.id}`])).toEqual({
						[`evt:${update.id}`]: { status: 'completed', attempts: 1, duplicates: 1 },
						[`evt:${create.id}`]: { status: 'completed', attempts: 1, duplicates: 0 },
					});
				},
				replay: async ({ a, b }) => {
					expect([api.calls(`evt:${a.id}`), api.calls(`evt:${b.id}`)]).toEqual([1, 1]);
				},
			},
		};
	},
});
