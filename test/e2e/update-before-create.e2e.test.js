// Seed 002's test "update fora de ordem chega antes do create": through a real n8n, the shipped
// ordered-webhook template (Reserve → Order Guard → upsert) receives a customer's update before its
// create. The state converges to the update's; the late create is Stale and changes nothing.
const { harness, outputTaken, eventId } = require('./support/harness');
const { readShippedTemplate, withOwnWebhook, publishWorkflow, runShippedSql } = require('./support/restWorkflows');

const GUARD = 'Idempotency Order Guard';
const CONSTRAINT = 'customers_e2e_rejects_poison';
const BUSINESS = 'Business Step (upsert customer)';

describe('update before create (ordered-webhook template)', () => {
	const h = harness();
	let url;
	let workflowId;

	beforeAll(async () => {
		await runShippedSql(h, 'migrations/order/001_create_table.sql');
		await h.appQuery('CREATE TABLE IF NOT EXISTS customers (id text PRIMARY KEY, email text, version bigint NOT NULL)');
		const { workflow, webhookPath } = withOwnWebhook(readShippedTemplate('ordered-webhook.json'), 'ordered');
		workflowId = await publishWorkflow(h, workflow, webhookPath);
		url = `${h.state.baseUrl}/webhook/${webhookPath}`;
	});

	afterAll(async () => {
		await h.appQuery(`ALTER TABLE customers DROP CONSTRAINT IF EXISTS ${CONSTRAINT}`);
	});

	test('an update that arrives before its create converges to the update; the late create is Stale; a repeat is Duplicate', async () => {
		const customer = `cus_${eventId('ubc').slice(8)}`;
		const created = Math.floor(Date.now() / 1000) - 120;
		const event = (type, at, email) => ({ id: eventId(type.replace('.', '_')), type, created: at, data: { object: { id: customer, object: 'customer', email } } });
		const update = event('customer.updated', created + 60, 'new@example.com');
		const create = event('customer.created', created, 'old@example.com');

		const mark = await h.executionMark();
		const first = await h.deliver(url, update);
		expect([first.status, first.outcome]).toEqual([200, 'new']);
		const late = await h.deliver(url, create);
		expect([late.status, late.outcome]).toEqual([200, 'stale']);
		const repeat = await h.deliver(url, update);
		expect([repeat.status, repeat.outcome]).toEqual([200, 'duplicate']);

		const runs = await h.waitForExecutions(workflowId, mark, 3);
		expect(runs.map((run) => run.status)).toEqual(['success', 'success', 'success']);
		expect(outputTaken(runs[0], GUARD)).toBe(0); // Newer
		expect(outputTaken(runs[1], GUARD)).toBe(1); // Stale
		expect(runs[1].nodesRun).not.toContain(BUSINESS);
		expect(runs[2].nodesRun).not.toContain(GUARD); // Reserve stopped the repeat first

		const { rows } = await h.appQuery('SELECT email, version::text AS version FROM customers WHERE id = $1', [customer]);
		expect(rows).toEqual([{ email: 'new@example.com', version: String(created + 60) }]);
		// event_key comes from the node's default Event Key expression: Reserve's key of the update.
		const marks = await h.appQuery('SELECT version::text AS version, stale_count, event_key FROM object_versions WHERE object_key = $1', [
			`stripe:customer:${customer}`,
		]);
		expect(marks.rows).toEqual([{ version: String(created + 60), stale_count: 1, event_key: `evt:${update.id}` }]);
		const keys = await h.appQuery('SELECT key, status FROM processed_events WHERE key = ANY($1) ORDER BY key', [[`evt:${update.id}`, `evt:${create.id}`]]);
		expect(keys.rows.map((row) => row.status)).toEqual(['completed', 'completed']);
	});

	test('the event that set a version, retried after its business step failed, passes the guard again (nothing is lost)', async () => {
		const customer = `cus_${eventId('retry').slice(8)}`;
		const at = Math.floor(Date.now() / 1000);
		const update = { id: eventId('poisoned'), type: 'customer.updated', created: at, data: { object: { id: customer, object: 'customer', email: 'e2e-poison@example.com' } } };
		await h.appQuery(`ALTER TABLE customers ADD CONSTRAINT ${CONSTRAINT} CHECK (email IS DISTINCT FROM 'e2e-poison@example.com')`);

		const mark = await h.executionMark();
		const failed = await h.deliver(url, update);
		expect([failed.status, failed.outcome]).toEqual([500, 'released']);
		// The guard recorded the version before the business step failed.
		const recorded = await h.appQuery('SELECT version::text AS version FROM object_versions WHERE object_key = $1', [`stripe:customer:${customer}`]);
		expect(recorded.rows).toEqual([{ version: String(at) }]);

		await h.appQuery(`ALTER TABLE customers DROP CONSTRAINT ${CONSTRAINT}`);
		const retried = await h.deliver(url, update);
		expect([retried.status, retried.outcome]).toEqual([200, 'new']);

		const runs = await h.waitForExecutions(workflowId, mark, 2);
		expect(runs.map((run) => outputTaken(run, GUARD))).toEqual([0, 0]); // Newer both times
		const { rows } = await h.appQuery('SELECT email FROM customers WHERE id = $1', [customer]);
		expect(rows).toEqual([{ email: 'e2e-poison@example.com' }]);
	});

	test('an event whose version cannot be checked leaves through Not Checked: key released, 500, never the upsert; the fixed retry is New', async () => {
		const customer = `cus_${eventId('unchecked').slice(8)}`;
		const id = eventId('unchecked');
		const event = (created) => ({ id, type: 'customer.updated', created, data: { object: { id: customer, object: 'customer', email: 'checked@example.com' } } });

		const mark = await h.executionMark();
		const refused = await h.deliver(url, event('soon'));
		expect([refused.status, refused.outcome]).toEqual([500, 'released']);
		// Release Key found Reserve's key through the error item's pairedItem: nothing is left held.
		expect((await h.appQuery('SELECT 1 FROM processed_events WHERE key = $1', [`evt:${id}`])).rowCount).toBe(0);
		expect((await h.appQuery('SELECT 1 FROM customers WHERE id = $1', [customer])).rowCount).toBe(0);

		const retried = await h.deliver(url, event(Math.floor(Date.now() / 1000)));
		expect([retried.status, retried.outcome]).toEqual([200, 'new']);

		const runs = await h.waitForExecutions(workflowId, mark, 2);
		expect(runs.map((run) => outputTaken(run, GUARD))).toEqual([2, 0]); // Not Checked, then Newer
		expect(runs[0].nodesRun).not.toContain(BUSINESS);
		expect((await h.appQuery('SELECT email FROM customers WHERE id = $1', [customer])).rows).toEqual([{ email: 'checked@example.com' }]);
	});
});
