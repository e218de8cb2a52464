// Queue mode with workers that each have their OWN n8n folder — what workers on separate hosts look
// like: each would open an embedded store file of its own, and the same event run on two workers
// would be New on both (a silent duplicate). The embedded store must refuse there: a delivery it
// cannot make safe is answered non-2xx (503, nothing reserved, the provider retries) with a message
// that says to use Postgres, and no event ever has a second effect. Then the same workflow switched
// to Store: Postgres works on those very workers: every event exactly one effect, nothing refused.
// e2e-tags: queue
import fs from 'node:fs';
import { harness, eventId, outputItem } from '../../support/e2e/harness';
import { EMB, publishEmbedded, useWorkerFolders, storeFilesIn, toPostgresStore } from '../../support/e2e/embedded';
import { startSink } from '../../support/e2e/sink';
import { deliverAll, figures, report } from '../../support/e2e/provider';
import { TEMPLATE_CREDENTIALS, type Delivery } from '../../support/stack/n8nStack';
import type { Json } from '../../support/e2e/workflows';

/** A worker of the stack (GET /processes of its control server), as far as this file reads it. */
interface Worker {
	index: number;
	logFile: string;
	userFolder: string;
}

/** publishEmbedded's options: the API the business step calls, a change to each node, whether to warm up. */
type EmbeddedOptions = Parameters<typeof publishEmbedded>[2];

/** Which worker ran each execution, from the workers' logs ("Worker started execution <id> …"). */
function workerOfExecutions(workers: Worker[], executionIds: string[]) {
	const logs = workers.map((w) => ({ index: w.index, text: fs.readFileSync(w.logFile, 'utf8') }));
	return Object.fromEntries(
		executionIds.map((id) => [id, logs.find((log) => log.text.includes(`Worker started execution ${id} `))?.index ?? null]),
	);
}

/** The provider: `events` events, each delivered `copies` times at once and retried until a 2xx (bounded). */
async function deliverEvents(
	url: string,
	label: string,
	{ events, copies, budgetMs }: { events: number; copies: number; budgetMs: number },
) {
	const ids = Array.from({ length: events }, (_, i) => eventId(`${label}${i}`));
	const deliveries = ids.flatMap((id) =>
		Array.from({ length: copies }, () => ({ eventId: id, forged: false, body: { id, type: 'e2e.folders' } })),
	);
	const run = await deliverAll({
		url,
		plan: { eventIds: ids, deliveries },
		concurrency: deliveries.length,
		retry: { firstDelayMs: 300, maxDelayMs: 2000, budgetMs },
	});
	return { ids, keys: ids.map((id) => `evt:${id}`), run };
}

describe('queue mode, workers with their own n8n folders (separate hosts)', () => {
	const h = harness();
	let api: Awaited<ReturnType<typeof startSink>>;
	let workers: Worker[];

	beforeAll(async () => {
		// This file runs in queue mode only, where useWorkerFolders returns the restarted workers (never null).
		const switched = await useWorkerFolders(h, 'own');
		workers = switched!.workers;
		api = await startSink();
	});
	afterAll(async () => api?.close());

	test('the embedded store is refused (503, "use Postgres"), and no event ever has a second effect', async () => {
		const webhook = await publishEmbedded(h, 'emb-sep', { apiUrl: api.url, warmUp: false } as EmbeddedOptions);
		const mark = await h.executionMark();
		// Each event delivered 6 times at once, retried for a bounded time: both workers run copies.
		// Every attempt is refused (the store file differs on each worker, whatever the timing), so
		// 10 s of retries (about 150 attempts) prove what a longer budget would, at a fifth of n8n's CPU.
		const { keys, run } = await deliverEvents(webhook.url, 'emb_sep', { events: 8, copies: 6, budgetMs: 10000 });
		const stats = figures(run);

		// Never a silent duplicate: at most one effect per event, whichever worker ran it.
		const effects = Object.fromEntries(keys.map((key) => [key, api.calls(key)]));
		expect(Object.entries(effects).filter(([, n]) => n > 1)).toEqual([]);
		// An event answered 2xx as processed had its effect exactly once.
		for (const delivery of run.deliveries.filter((d) => d.final?.status === 200 && ['new', 'duplicate'].includes(d.final.outcome ?? ''))) {
			expect({ key: `evt:${delivery.eventId}`, effects: api.calls(`evt:${delivery.eventId}`) }).toEqual({
				key: `evt:${delivery.eventId}`,
				effects: 1,
			});
		}
		// Refused: non-2xx answers, nothing reserved, with the reason.
		const refused = run.attempts.filter((a) => a.status === 503 && a.outcome === 'not_reserved');
		expect(refused.length).toBeGreaterThan(0);
		expect(run.attempts.filter((a) => a.status >= 200 && a.status < 300 && !['new', 'duplicate'].includes(a.outcome ?? ''))).toEqual([]);

		// n8n's record: the refusal is Reserve's Not Reserved output, with an error that names Postgres.
		const executions = await h.waitForExecutions(webhook.workflowId, mark, run.attempts.length, { timeoutMs: 120000 });
		const refusals = executions.filter((e) => (e.runData[EMB.reserve]?.[0]?.data?.main?.[3] ?? []).length > 0);
		expect(refusals.length).toBeGreaterThan(0);
		const messages = [...new Set(refusals.map((e) => JSON.stringify(outputItem(e, EMB.reserve, 3).error)))];
		for (const message of messages) expect(message).toMatch(/postgres/i);
		// Every worker's file is another than the one the stack names: a new event, delivered to both
		// workers at once, is refused on each, saying its key file is a different one.
		const late = { id: eventId('emb_sep_late'), type: 'e2e.folders' };
		const lateAnswers: Array<Delivery<Json>> = await Promise.all(Array.from({ length: 10 }, () => h.deliver(webhook.url, late)));
		expect(lateAnswers.map((a) => [a.status, a.outcome])).toEqual(Array(10).fill([503, 'not_reserved']));
		for (const a of lateAnswers) expect(JSON.stringify(a.json?.error)).toMatch(/different embedded key file[\s\S]*Postgres/);
		expect(api.calls(`evt:${late.id}`)).toBe(0);
		// Both workers ran deliveries (else the test proves nothing about separate folders).
		const ranOn = workerOfExecutions(
			workers,
			executions.map((e) => String(e.id)),
		);
		expect(new Set(Object.values(ranOn).filter((i) => i !== null)).size).toBe(2);
		// Each worker has its own folder; none runs in main's.
		for (const worker of workers) expect(worker.userFolder).not.toBe(h.state.userFolder);
		const files = Object.fromEntries(workers.map((w) => [w.index, storeFilesIn(w.userFolder)]));

		report('embedded, workers in their own folders', {
			...stats,
			effects: Object.values(effects).reduce((a, b) => a + b, 0),
			eventsWithEffect: Object.values(effects).filter((n) => n === 1).length,
			refusedAnswers: refused.length,
			refusalMessages: messages,
			executionsPerWorker: Object.values(ranOn).reduce<Record<string, number>>(
				(acc, i) => ({ ...acc, [String(i)]: (acc[String(i)] ?? 0) + 1 }),
				{},
			),
			storeFiles: files,
		});
	});

	test('the same workflow switched to Store: Postgres works on these workers: every event exactly one effect, nothing refused', async () => {
		const webhook = await publishEmbedded(h, 'emb-sep-pg', {
			apiUrl: api.url,
			change: toPostgresStore(TEMPLATE_CREDENTIALS.idempotency),
			warmUp: false,
		} as EmbeddedOptions);
		const mark = await h.executionMark();
		const { keys, run } = await deliverEvents(webhook.url, 'emb_sep_pg', { events: 8, copies: 6, budgetMs: 120000 });
		const stats = figures(run);
		report('the same workflow on Postgres, workers in their own folders', stats);

		expect(stats.gaveUp).toBe(0);
		expect(run.attempts.filter((a) => ![200, 409].includes(a.status))).toEqual([]);
		expect(Object.fromEntries(keys.map((key) => [key, api.calls(key)]))).toEqual(Object.fromEntries(keys.map((key) => [key, 1])));
		const { rows } = await h.appQuery("SELECT count(*)::int AS n FROM processed_events WHERE key = ANY($1) AND status = 'completed'", [
			keys,
		]);
		expect(rows[0].n).toBe(keys.length);
		const executions = await h.waitForExecutions(webhook.workflowId, mark, run.attempts.length, { timeoutMs: 120000 });
		const ranOn = workerOfExecutions(
			workers,
			executions.map((e) => String(e.id)),
		);
		expect(new Set(Object.values(ranOn).filter((i) => i !== null)).size).toBe(2);
	});
});
