// Test 5's defence, made deterministic: the business step succeeds, then Settle cannot complete the key on every
// try (a trigger rejects the completion of this one key, as a database that is down would). The
// template must answer the provider 200 (the effect happened) and fail the execution in Completion
// Failed; the error-workflow template must then COMPLETE the key (not mark it failed), so the
// redelivery is a duplicate and the business step ran exactly once.
const { harness, eventId } = require('../../support/e2e/harness');
const { report } = require('../../support/e2e/provider');
const { expectErrorWorkflowCompletedKey } = require('../../support/e2e/outcome');

describe('queue mode: Settle cannot complete the key after the business step succeeded', () => {
	const h = harness();

	beforeAll(async () => {
		await h.appQuery('CREATE TABLE IF NOT EXISTS e2e_block_complete (key text PRIMARY KEY)');
		await h.appQuery(`CREATE OR REPLACE FUNCTION e2e_block_complete() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN
				IF NEW.status = 'completed' AND EXISTS (SELECT 1 FROM e2e_block_complete b WHERE b.key = NEW.key) THEN
					RAISE EXCEPTION 'e2e: completion of % is blocked', NEW.key;
				END IF;
				RETURN NEW;
			END $$`);
		await h.appQuery('DROP TRIGGER IF EXISTS e2e_block_complete ON processed_events');
		await h.appQuery('CREATE TRIGGER e2e_block_complete BEFORE UPDATE ON processed_events FOR EACH ROW EXECUTE FUNCTION e2e_block_complete()');
	});
	afterAll(async () => {
		await h.appQuery('DROP TRIGGER IF EXISTS e2e_block_complete ON processed_events');
		await h.appQuery('DROP TABLE IF EXISTS e2e_block_complete');
	});

	test('→ 200 to the provider, the execution fails in Completion Failed, the error workflow completes the key, the redelivery is a duplicate', async () => {
		const event = { id: eventId('complete_fails'), type: 'order.created' };
		const key = `evt:${event.id}`;
		await h.appQuery('INSERT INTO e2e_block_complete (key) VALUES ($1)', [key]);
		const mark = await h.executionMark();

		const first = await h.deliver(h.webhookUrl, event);
		await h.appQuery('DELETE FROM e2e_block_complete WHERE key = $1', [key]); // the database is back
		expect([first.status, first.outcome]).toEqual([200, 'completion_pending']);

		const [webhookRun] = await h.waitForExecutions(h.IDS.webhook, mark, 1, { timeoutMs: 120000 });
		expect(webhookRun.status).toBe('error');
		expect(webhookRun.nodesRun).toEqual(expect.arrayContaining(['Settle (complete or mark failed)', 'Completion Failed (error workflow completes)']));
		expect(webhookRun.runData['Settle (complete or mark failed)'][0].data.main.slice(0, 3).flat()).toEqual([]); // Not Settled only

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
