// Seed 002's test "mesmo evento chega após um crash entre a escrita de deduplicação e o efeito
// colateral", for the one-transaction template: through a real n8n, the database session running
// Idempotency Execute Query dies after the reservation and before the commit. Nothing is stored;
// the provider's retry runs the effect; a further repeat is Duplicate; exactly one business row.
const { harness, outputTaken, eventId } = require('./support/harness');
const { readShippedTemplate, withOwnWebhook, publishWorkflow } = require('./support/restWorkflows');

const EXECUTE_QUERY = 'Idempotency Execute Query';
// The template's insert, made to wait while a switch row names the event, so the test can cut the
// session at a known point: after the reservation, inside the transaction, before the commit.
const PAUSING_QUERY = `INSERT INTO business_log (event_key, event_type)
SELECT $1, $2 FROM (SELECT pg_sleep(CASE WHEN EXISTS (SELECT 1 FROM e2e_pause_once WHERE event_key = $1) THEN 60 ELSE 0 END)) AS pause
RETURNING id`;

describe('one-transaction crash (idempotent-webhook-one-transaction template)', () => {
	const h = harness();
	let url;
	let workflowId;

	beforeAll(async () => {
		await h.appQuery('CREATE TABLE IF NOT EXISTS e2e_pause_once (event_key text PRIMARY KEY)');
		const template = readShippedTemplate('idempotent-webhook-one-transaction.json');
		template.nodes = template.nodes.map((node) => (node.name === EXECUTE_QUERY ? { ...node, parameters: { ...node.parameters, query: PAUSING_QUERY } } : node));
		const { workflow, webhookPath } = withOwnWebhook(template, 'onetx');
		workflowId = await publishWorkflow(h, workflow, webhookPath);
		url = `${h.state.baseUrl}/webhook/${webhookPath}`;
	});

	test('the session dies between the reservation and the commit → nothing stored, 500; the retry runs the effect once', async () => {
		const event = { id: eventId('onetx'), type: 'e2e.onetx' };
		const key = `evt:${event.id}`;
		await h.appQuery('INSERT INTO e2e_pause_once (event_key) VALUES ($1)', [key]);

		const mark = await h.executionMark();
		const crashed = h.deliver(url, event);
		// The node's transaction: it has reserved the key (a write lock on processed_events) and sleeps in our SQL.
		let backend;
		for (let attempt = 0; attempt < 240 && !backend; attempt++) {
			const { rows } = await h.appQuery(
				`SELECT a.pid, a.state, a.backend_xid IS NOT NULL AS wrote,
				        EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.relation = 'processed_events'::regclass AND l.mode = 'RowExclusiveLock') AS reserved
				   FROM pg_stat_activity a WHERE a.wait_event = 'PgSleep' AND a.query LIKE '%e2e_pause_once%'`,
			);
			backend = rows[0];
			if (!backend) await new Promise((resolve) => setTimeout(resolve, 250));
		}
		expect(backend).toMatchObject({ state: 'active', wrote: true, reserved: true });
		expect((await h.appQuery('SELECT 1 FROM processed_events WHERE key = $1', [key])).rowCount).toBe(0); // not committed

		await h.appQuery('DELETE FROM e2e_pause_once WHERE event_key = $1', [key]); // the retry will not wait
		const { rows: terminated } = await h.appQuery('SELECT pg_terminate_backend($1) AS ok', [backend.pid]);
		expect(terminated).toEqual([{ ok: true }]);
		for (let attempt = 0; attempt < 100; attempt++) {
			const { rowCount } = await h.appQuery('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [backend.pid]);
			if (rowCount === 0) break;
			await new Promise((resolve) => setTimeout(resolve, 50));
		}
		expect((await h.appQuery('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [backend.pid])).rowCount).toBe(0);

		const answer = await crashed;
		expect([answer.status, answer.outcome]).toEqual([500, 'query_failed']);
		expect((await h.appQuery('SELECT 1 FROM processed_events WHERE key = $1', [key])).rowCount).toBe(0);
		expect((await h.appQuery('SELECT 1 FROM business_log WHERE event_key = $1', [key])).rowCount).toBe(0);

		const retried = await h.deliver(url, event);
		expect([retried.status, retried.outcome]).toEqual([200, 'new']);
		const again = await h.deliver(url, event);
		expect([again.status, again.outcome]).toEqual([200, 'duplicate']);

		const runs = await h.waitForExecutions(workflowId, mark, 3);
		expect(runs.map((run) => outputTaken(run, EXECUTE_QUERY))).toEqual([3, 0, 1]); // error output (after Not Run), New, Duplicate
		expect((await h.appQuery('SELECT count(*)::int AS n FROM business_log WHERE event_key = $1', [key])).rows).toEqual([{ n: 1 }]);
		expect((await h.appQuery('SELECT status FROM processed_events WHERE key = $1', [key])).rows).toEqual([{ status: 'completed' }]);
	});
});
