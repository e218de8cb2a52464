// 100 simultaneous deliveries of one event to templates/idempotent-webhook-embedded.json (Store:
// Embedded), each retried until a 2xx: exactly one API call and one New; every other 2xx a
// Duplicate. In queue mode the deliveries spread over two workers that share main's n8n folder: two OS
// processes reserving in one store file at the same moment.
// e2e-tags: single queue
import { harness, outputTaken, eventId } from '../support/e2e/harness';
import { EMB, useEmbeddedWebhook, keyStates } from '../support/e2e/embedded';
import { deliverAll, figures, report } from '../support/e2e/provider';

const countBy = <T>(items: T[], keyOf: (item: T) => string) =>
	items.reduce<Record<string, number>>((acc, item) => ({ ...acc, [keyOf(item)]: (acc[keyOf(item)] ?? 0) + 1 }), {});

const BURST = 100;

describe('a burst of one event on the embedded store', () => {
	const h = harness();
	// { api, webhook }, filled in by the beforeAll useEmbeddedWebhook registers, before the test runs.
	const site = useEmbeddedWebhook(h, 'emb-burst');

	// 100 deliveries at once is also a load test of n8n itself: in one process its own database pool
	// can time out reading the signing secret (503 not_verified), n8n can fail the execution (500),
	// or answer after the provider's 30 s timeout. Each is an answer the provider retries, as Stripe
	// does; what must hold is one effect and one reservation, whatever n8n answered.
	test(`${BURST} simultaneous deliveries of one event, each retried until a 2xx → exactly one effect, one reservation`, async () => {
		const { api, webhook } = site;
		const mark = await h.executionMark();
		const event = { id: eventId('emb_burst'), type: 'order.created' };
		const key = `evt:${event.id}`;
		const callsBefore = api.total();
		const run = await deliverAll({
			url: webhook.url,
			plan: { eventIds: [event.id], deliveries: Array.from({ length: BURST }, () => ({ eventId: event.id, forged: false, body: event })) },
			concurrency: BURST,
			retry: { firstDelayMs: 500, maxDelayMs: 3000, budgetMs: 180000 },
		});
		const stats = figures(run);
		const firstRound = run.attempts.filter((a) => a.attempt === 1);
		report(`embedded burst of ${BURST} (${h.topology})`, { ...stats, firstRound: countBy(firstRound, (a) => `${a.status} ${a.outcome}`) });

		expect(stats.gaveUp).toBe(0);
		expect(run.deliveries.map((d) => d.final.status)).toEqual(Array(BURST).fill(200));
		// At most one answer says New (the provider may have timed out waiting for it: then a retry is a Duplicate).
		expect(run.attempts.filter((a) => a.outcome === 'new').length).toBeLessThanOrEqual(1);
		// 2xx only as New or Duplicate; anything else is an answer the provider retries.
		expect(run.attempts.filter((a) => a.status >= 200 && a.status < 300 && a.outcome !== 'new' && a.outcome !== 'duplicate')).toEqual([]);
		expect(run.attempts.filter((a) => a.status === 409 && a.outcome !== 'in_progress')).toEqual([]);
		expect(run.attempts.filter((a) => ![200, 409, 500, 503].includes(a.status) && a.error !== 'timeout')).toEqual([]);
		expect(api.calls(key)).toBe(1);
		expect(api.total() - callsBefore).toBe(1);
		// One reservation went New (a key's attempts count each New and each takeover), and every
		// other delivery that reached the store was counted against it.
		const stored = await keyStates(h, [key]);
		expect(stored).toEqual({ [key]: { status: 'completed', attempts: 1, duplicates: expect.any(Number) } });
		expect(stored[key]!.duplicates).toBeGreaterThanOrEqual(BURST - 1);

		// n8n's record, where n8n managed to save it under this load (it may not, when its own
		// database pool timed out): never a second run of the business step.
		const executions = await h.executions(webhook.workflowId, mark);
		expect(executions.filter((e) => e.nodesRun.includes(EMB.business)).length).toBeLessThanOrEqual(1);
		expect(executions.filter((e) => outputTaken(e, EMB.reserve) === 0).length).toBeLessThanOrEqual(1);
	});
});
