// Store: Automatic in a real n8n: the trigger template as a new node gets it (the Idempotent
// Webhook at version 3, no store parameter) with only its signing secret — no Postgres credential.
// In queue mode (main, an `n8n webhook` process receiving the deliveries, two workers each in an n8n
// folder of its own, as on separate hosts) the keys go to n8n's own Postgres, in the package's table;
// on one process they stay in the embedded file in n8n's folder. A burst of 100 copies of one event
// and 200 events × 3 copies: nothing lost, nothing run twice.
// e2e-tags: single queue
import { harness, eventId } from '../support/e2e/harness';
import { keyStates, useWorkerFolders } from '../support/e2e/embedded';
import { deliverAll, figures, report, type Attempt } from '../support/e2e/provider';
import { publishTrigger, triggerBase, triggerKey, TRIGGER } from '../support/e2e/trigger';
import { startSink, type Sink } from '../support/e2e/sink';
import type { NodeChange } from '../support/e2e/workflows';

/** The trigger as a new node: version 3 (Store: Automatic by default), no store or mode parameter saved. */
const asNewTrigger: NodeChange = (node) => {
	if (node.type !== TRIGGER.type) return node;
	const { store: _store, mode: _mode, ...parameters } = node.parameters;
	return { ...node, typeVersion: 3, parameters };
};

describe('Store: Automatic: the trigger template with only a signing secret', () => {
	const h = harness();
	let api: Sink;
	let webhook: Awaited<ReturnType<typeof publishTrigger>>;

	beforeAll(async () => {
		// Queue mode: workers in folders of their own, where an embedded file could not be shared.
		await useWorkerFolders(h, 'own');
		const base = await triggerBase(h);
		api = await startSink();
		webhook = await publishTrigger(h, 'automatic', { apiUrl: api.url, baseUrl: base.baseUrl, change: asNewTrigger });
	});
	afterAll(async () => api?.close());

	/**
	 * The trigger's own refusals: its store could not be opened or used (503 not_reserved) or failed
	 * unexpectedly. A 503 without the package's outcome header is n8n's own (a loaded machine's
	 * database ping), retried like any 503; none may be the trigger's.
	 */
	const storeRefusals = (attempts: Attempt[]) =>
		attempts.filter((attempt) => attempt.outcome === 'not_reserved' || attempt.outcome === 'internal_error');

	/** The keys' rows in the package's table in n8n's own database (none when the table is not there). */
	async function inN8nDatabase(keys: string[]): Promise<Record<string, { status: string; attempts: number }>> {
		const { rows: table } = await h.n8nQuery("SELECT to_regclass('public.processed_events') IS NOT NULL AS present");
		if (!table[0].present) return {};
		const { rows } = await h.n8nQuery('SELECT key, status, attempts FROM processed_events WHERE key = ANY($1)', [keys]);
		return Object.fromEntries(rows.map((row) => [row.key, { status: row.status, attempts: row.attempts }]));
	}

	/** Where the keys are: n8n's database in queue mode, the embedded file on one process; never both. */
	async function expectKeysWhereAutomaticPutsThem(keys: string[]) {
		const completedOnce = Object.fromEntries(keys.map((key) => [key, expect.objectContaining({ status: 'completed', attempts: 1 })]));
		const absent = Object.fromEntries(keys.map((key) => [key, null]));
		if (h.topology === 'queue') {
			expect(await inN8nDatabase(keys)).toEqual(completedOnce);
			const { rows } = await h.n8nQuery("SELECT obj_description('public.processed_events'::regclass) AS stamp");
			expect(rows[0].stamp).toMatch(/^n8n-nodes-idempotency keys schema version \d+$/);
			expect(await keyStates(h, keys)).toEqual(absent);
		} else {
			expect(await keyStates(h, keys)).toEqual(completedOnce);
			expect(await inN8nDatabase(keys)).toEqual({});
		}
	}

	test('100 copies of one event at once, retried until a 2xx: none lost, one call, one execution', async () => {
		const mark = await h.executionMark();
		const event = { id: eventId('auto_burst'), type: 'order.created' };
		const key = triggerKey(webhook.workflowId, event.id);
		const run = await deliverAll({
			url: webhook.url,
			plan: { eventIds: [event.id], deliveries: Array.from({ length: 100 }, () => ({ eventId: event.id, forged: false, body: event })) },
			concurrency: 100,
			retry: { firstDelayMs: 500, maxDelayMs: 3000, budgetMs: 180000 },
		});
		const stats = figures(run);
		report(`Store: Automatic, burst of 100 (${h.topology})`, stats);
		expect(stats.gaveUp).toBe(0);
		expect(run.deliveries.map((delivery) => delivery.final.status)).toEqual(Array(100).fill(200));
		expect(run.attempts.filter((attempt) => attempt.outcome === 'new')).toHaveLength(1);
		expect(storeRefusals(run.attempts)).toEqual([]);
		expect(api.calls(key)).toBe(1);
		await h.waitForExecutions(webhook.workflowId, mark, 1);
		expect(await h.executions(webhook.workflowId, mark)).toHaveLength(1);
		await expectKeysWhereAutomaticPutsThem([key]);
	});

	test('200 events × 3 copies, shuffled, 16 at a time: each event runs once', async () => {
		const mark = await h.executionMark();
		const ids = Array.from({ length: 200 }, (_, index) => eventId(`auto_soak_${index}`));
		const deliveries = ids.flatMap((id) => [0, 1, 2].map(() => ({ eventId: id, forged: false, body: { id, type: 'e2e.soak' } })));
		// A fixed shuffle: copies of one event arrive apart and together.
		deliveries.sort((a, b) => ((ids.indexOf(a.eventId) * 7919) % 601) - ((ids.indexOf(b.eventId) * 7919) % 601));
		const run = await deliverAll({ url: webhook.url, plan: { eventIds: ids, deliveries }, concurrency: 16 });
		const stats = figures(run);
		report(`Store: Automatic, 200 events × 3 (${h.topology})`, stats);
		expect(stats.gaveUp).toBe(0);
		const keys = ids.map((id) => triggerKey(webhook.workflowId, id));
		expect(keys.filter((key) => api.calls(key) !== 1)).toEqual([]);
		expect(storeRefusals(run.attempts)).toEqual([]);
		await h.waitForExecutions(webhook.workflowId, mark, ids.length);
		expect(await h.executions(webhook.workflowId, mark)).toHaveLength(ids.length);
		await expectKeysWhereAutomaticPutsThem(keys);
	});
});
