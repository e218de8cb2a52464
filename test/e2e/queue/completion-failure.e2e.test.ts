// Test 5's defence, made deterministic: the business step succeeds, then Settle cannot complete the key on every
// try (a trigger rejects the completion of this one key, as a database that is down would). The
// template must answer the provider 200 (the effect happened) and fail the execution in Completion
// Failed; the error-workflow template must then COMPLETE the key (not mark it failed), so the
// redelivery is a duplicate and the business step ran exactly once.
// e2e-tags: queue
import { harness, eventId } from '../../support/e2e/harness';
import { report } from '../../support/e2e/provider';
import { expectErrorWorkflowCompletedKey } from '../../support/e2e/outcome';
import { settleBlocker } from '../../support/e2e/appFaults';

describe('queue mode: Settle cannot complete the key after the business step succeeded', () => {
	const h = harness();

	const blocked = settleBlocker(h, 'e2e_block_complete');
	beforeAll(() => blocked.create());
	afterAll(() => blocked.drop());

	test('→ 200 to the provider, the execution fails in Completion Failed, the error workflow completes the key, the redelivery is a duplicate', async () => {
		const event = { id: eventId('complete_fails'), type: 'order.created' };
		const key = `evt:${event.id}`;
		await blocked.block(key);
		const mark = await h.executionMark();

		const first = await h.deliver(h.webhookUrl, event);
		await blocked.unblock(key); // the database is back
		expect([first.status, first.outcome]).toEqual([200, 'completion_pending']);

		const [webhookRun] = await h.waitForExecutions(h.IDS.webhook, mark, 1, { timeoutMs: 120000 });
		expect(webhookRun.status).toBe('error');
		expect(webhookRun.nodesRun).toEqual(
			expect.arrayContaining(['Settle (complete or mark failed)', 'Completion Failed (error workflow completes)']),
		);
		const settleOutputs = webhookRun.runData['Settle (complete or mark failed)'][0].data;
		if (!settleOutputs) throw new Error('Settle ran without output data');
		expect(settleOutputs.main.slice(0, 3).flat()).toEqual([]); // Not Settled only

		// The error workflow completes the key (it retries until the completion goes through).
		const errorRun = await expectErrorWorkflowCompletedKey(h, webhookRun.id, mark);
		const stored = await h.appQuery('SELECT status FROM processed_events WHERE key = $1', [key]);
		expect(stored.rows).toEqual([{ status: 'completed' }]);

		const again = await h.deliver(h.webhookUrl, event);
		expect([again.status, again.outcome]).toEqual([200, 'duplicate']);
		const { rows } = await h.appQuery('SELECT count(*)::int AS n FROM business_log WHERE event_key = $1', [key]);
		expect(rows[0].n).toBe(1);
		report('test 5b Settle failing to complete after the business step', {
			firstAnswer: `${first.status} ${first.outcome} in ${first.ms} ms`,
			webhookExecution: webhookRun.status,
			errorWorkflow: `${errorRun.status}: ${errorRun.nodesRun.join(' → ')}`,
			redelivery: `${again.status} ${again.outcome}`,
			rows: rows[0].n,
		});
	});
});
