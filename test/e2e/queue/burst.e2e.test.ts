// Test 2 (queue mode): 200 simultaneous deliveries of one event, spread over two workers → exactly
// one business row; every answer 200 or 409.
// e2e-tags: queue
import { harness, eventId } from '../../support/e2e/harness';
import { figures, report } from '../../support/e2e/provider';

/** h.deliver's signing options (secret, timestamp). */
type DeliverOptions = Parameters<ReturnType<typeof harness>['deliver']>[3];

describe('queue mode: a burst of one event', () => {
	const h = harness();

	test('200 simultaneous deliveries of one event → exactly 1 business row, every answer 200 or 409', async () => {
		const event = { id: eventId('qburst'), type: 'order.created' };
		const now = Math.floor(Date.now() / 1000);
		const started = Date.now();
		const answers = await Promise.all(
			Array.from({ length: 200 }, (_, i) => h.deliver(h.webhookUrl, event, {}, { timestamp: now - (i % 240) } as DeliverOptions)),
		);
		const run = {
			ms: Date.now() - started,
			attempts: answers.map((a) => ({ status: a.status, ms: a.ms, at: started })),
			deliveries: answers.map(() => ({ gaveUp: false })),
		};
		report('test 2 burst of 200 (queue mode)', { ...figures(run), rows: undefined });
		expect(answers.every((a) => a.status === 200 || a.status === 409)).toBe(true);
		expect(answers.filter((a) => a.outcome === 'new')).toHaveLength(1);
		const { rows } = await h.appQuery('SELECT count(*)::int AS n FROM business_log WHERE event_key = $1', [`evt:${event.id}`]);
		report('test 2 rows', { rows: rows[0].n });
		expect(rows[0].n).toBe(1);
		const key = await h.appQuery('SELECT status FROM processed_events WHERE key = $1', [`evt:${event.id}`]);
		expect(key.rows).toEqual([{ status: 'completed' }]);
	});
});
