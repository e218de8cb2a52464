// The shipped ordered-webhook template (Reserve → Order Guard → upsert) through a real n8n, when
// something goes wrong after or inside the guard: nothing is lost, and the key stays failed with
// its error and payload (replayable) until the provider's retry is processed. When the upsert
// happened but its completion cannot be stored, the provider is answered 200 and the error-workflow
// template completes the key: nothing is done twice. (An update that arrives before its create,
// seed 002's test, is the production checklist's test 4, checklist.e2e.test.js.)
const { harness, outputTaken, eventId } = require('./support/harness');
const { expectErrorWorkflowCompletedKey } = require('./support/outcome');
const { publishOrderedWebhook } = require('./support/restWorkflows');

const GUARD = 'Idempotency Order Guard';
const CONSTRAINT = 'customers_e2e_rejects_poison';
const BUSINESS = 'Business Step (upsert customer)';
const COMPLETION_FAILED = 'Completion Failed (error workflow completes)';
// Like a database that refuses writes: a trigger rejects the completion of the keys in this table,
// and counts each attempt in a sequence (nextval is not undone by the rollback).
const BLOCKED = 'e2e_ordered_block_complete';

describe('ordered-webhook template: failures around the Order Guard', () => {
	const h = harness();
	let url;
	let workflowId;
	const key = async (id) =>
		(await h.appQuery('SELECT status, attempts, last_error, payload, locked_until FROM processed_events WHERE key = $1', [`evt:${id}`])).rows[0];

	beforeAll(async () => {
		({ url, workflowId } = await publishOrderedWebhook(h, 'ordered', { errorWorkflow: h.IDS.error }));
		await h.appQuery(`CREATE TABLE IF NOT EXISTS ${BLOCKED} (key text PRIMARY KEY)`);
		await h.appQuery(`CREATE SEQUENCE IF NOT EXISTS ${BLOCKED}_attempts`);
		await h.appQuery(`CREATE OR REPLACE FUNCTION ${BLOCKED}() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN
				IF NEW.status = 'completed' AND EXISTS (SELECT 1 FROM ${BLOCKED} b WHERE b.key = NEW.key) THEN
					PERFORM nextval('${BLOCKED}_attempts');
					RAISE EXCEPTION 'e2e: completion of % is blocked', NEW.key;
				END IF;
				RETURN NEW;
			END $$`);
		await h.appQuery(`DROP TRIGGER IF EXISTS ${BLOCKED} ON processed_events`);
		await h.appQuery(`CREATE TRIGGER ${BLOCKED} BEFORE UPDATE ON processed_events FOR EACH ROW EXECUTE FUNCTION ${BLOCKED}()`);
	});

	afterAll(async () => {
		await h.appQuery(`ALTER TABLE customers DROP CONSTRAINT IF EXISTS ${CONSTRAINT}`);
		await h.appQuery(`DROP TRIGGER IF EXISTS ${BLOCKED} ON processed_events`);
		await h.appQuery(`DROP FUNCTION IF EXISTS ${BLOCKED}()`);
		await h.appQuery(`DROP TABLE IF EXISTS ${BLOCKED}`);
		await h.appQuery(`DROP SEQUENCE IF EXISTS ${BLOCKED}_attempts`);
	});

	test('the event that set a version, retried after its business step failed, passes the guard again (nothing is lost)', async () => {
		const customer = `cus_${eventId('retry').slice(8)}`;
		const at = Math.floor(Date.now() / 1000);
		const update = { id: eventId('poisoned'), type: 'customer.updated', created: at, data: { object: { id: customer, object: 'customer', email: 'e2e-poison@example.com' } } };
		await h.appQuery(`ALTER TABLE customers ADD CONSTRAINT ${CONSTRAINT} CHECK (email IS DISTINCT FROM 'e2e-poison@example.com')`);

		const mark = await h.executionMark();
		const failed = await h.deliver(url, update);
		expect([failed.status, failed.outcome]).toEqual([500, 'failed']);
		// The guard recorded the version before the business step failed.
		const recorded = await h.appQuery('SELECT version::text AS version FROM object_versions WHERE object_key = $1', [`stripe:customer:${customer}`]);
		expect(recorded.rows).toEqual([{ version: String(at) }]);
		// The key is kept failed, with the upsert's error and the event (what a replay needs).
		const kept = await key(update.id);
		expect(kept).toMatchObject({ status: 'failed', attempts: 1, payload: update, locked_until: null });
		expect(kept.last_error).toMatch(new RegExp(CONSTRAINT));

		await h.appQuery(`ALTER TABLE customers DROP CONSTRAINT ${CONSTRAINT}`);
		const retried = await h.deliver(url, update);
		expect([retried.status, retried.outcome]).toEqual([200, 'new']);
		expect(await key(update.id)).toMatchObject({ status: 'completed', attempts: 2 });

		const runs = await h.waitForExecutions(workflowId, mark, 2);
		expect(runs.map((run) => outputTaken(run, GUARD))).toEqual([0, 0]); // Newer both times
		const { rows } = await h.appQuery('SELECT email FROM customers WHERE id = $1', [customer]);
		expect(rows).toEqual([{ email: 'e2e-poison@example.com' }]);
	});

	test('an event whose version cannot be checked leaves through Not Checked: key marked failed with the error, 500, never the upsert; the fixed retry is New', async () => {
		const customer = `cus_${eventId('unchecked').slice(8)}`;
		const id = eventId('unchecked');
		const event = (created) => ({ id, type: 'customer.updated', created, data: { object: { id: customer, object: 'customer', email: 'checked@example.com' } } });

		const mark = await h.executionMark();
		const refused = await h.deliver(url, event('soon'));
		expect([refused.status, refused.outcome]).toEqual([500, 'failed']);
		// Mark Failed found Reserve's key through the error item's pairedItem: not held, kept failed
		// with the guard's error and the event; no version was recorded.
		const kept = await key(id);
		expect(kept).toMatchObject({ status: 'failed', attempts: 1, payload: event('soon'), locked_until: null });
		expect(kept.last_error).toMatch(/soon/);
		expect((await h.appQuery('SELECT 1 FROM object_versions WHERE object_key = $1', [`stripe:customer:${customer}`])).rowCount).toBe(0);
		expect((await h.appQuery('SELECT 1 FROM customers WHERE id = $1', [customer])).rowCount).toBe(0);

		const retried = await h.deliver(url, event(Math.floor(Date.now() / 1000)));
		expect([retried.status, retried.outcome]).toEqual([200, 'new']);
		expect(await key(id)).toMatchObject({ status: 'completed', attempts: 2 });

		const runs = await h.waitForExecutions(workflowId, mark, 2);
		expect(runs.map((run) => outputTaken(run, GUARD))).toEqual([2, 0]); // Not Checked, then Newer
		expect(runs[0].nodesRun).not.toContain(BUSINESS);
		expect((await h.appQuery('SELECT email FROM customers WHERE id = $1', [customer])).rows).toEqual([{ email: 'checked@example.com' }]);
	});

	test('the upsert happened, Settle cannot complete the key → 200 completion_pending, the execution fails in Completion Failed, the error workflow completes the key, the redelivery is a duplicate (one upsert)', async () => {
		const customer = `cus_${eventId('pending').slice(8)}`;
		const at = Math.floor(Date.now() / 1000);
		const update = { id: eventId('pending'), type: 'customer.updated', created: at, data: { object: { id: customer, object: 'customer', email: 'pending@example.com' } } };
		const eventKey = `evt:${update.id}`;
		await h.appQuery(`INSERT INTO ${BLOCKED} (key) VALUES ($1)`, [eventKey]);
		const attemptsBefore = Number((await h.appQuery(`SELECT last_value, is_called FROM ${BLOCKED}_attempts`)).rows.map((r) => (r.is_called ? r.last_value : 0))[0]);
		const mark = await h.executionMark();

		const first = await h.deliver(url, update);
		await h.appQuery(`DELETE FROM ${BLOCKED} WHERE key = $1`, [eventKey]); // the database is back
		expect([first.status, first.outcome]).toEqual([200, 'completion_pending']);
		// The fault happened: Settle's completion reached the database and was refused.
		const attemptsAfter = Number((await h.appQuery(`SELECT last_value FROM ${BLOCKED}_attempts`)).rows[0].last_value);
		expect(attemptsAfter - attemptsBefore).toBeGreaterThanOrEqual(1);
		// The effect happened: the customer was written, and the guard recorded this event's version.
		expect((await h.appQuery('SELECT email, version::text AS version FROM customers WHERE id = $1', [customer])).rows).toEqual([{ email: 'pending@example.com', version: String(at) }]);
		expect((await h.appQuery('SELECT version::text AS version, event_key FROM object_versions WHERE object_key = $1', [`stripe:customer:${customer}`])).rows).toEqual([
			{ version: String(at), event_key: eventKey },
		]);

		const [run] = await h.waitForExecutions(workflowId, mark, 1, { timeoutMs: 120000 });
		expect(run.status).toBe('error');
		expect(run.nodesRun).toEqual(expect.arrayContaining([BUSINESS, 'Settle (complete or mark failed)', COMPLETION_FAILED]));
		expect(run.runData['Settle (complete or mark failed)'][0].data.main.slice(0, 3).flat()).toEqual([]); // Not Settled only

		// The error workflow completes the key (not marked failed: a redelivery would write again).
		await expectErrorWorkflowCompletedKey(h, run.id, mark);
		expect(await key(update.id)).toMatchObject({ status: 'completed', attempts: 1, locked_until: null });

		const again = await h.deliver(url, update);
		expect([again.status, again.outcome]).toEqual([200, 'duplicate']);
		const runs = await h.waitForExecutions(workflowId, mark, 2);
		expect(runs.map((execution) => execution.nodesRun.includes(BUSINESS))).toEqual([true, false]);
		expect((await h.appQuery('SELECT email FROM customers WHERE id = $1', [customer])).rows).toEqual([{ email: 'pending@example.com' }]);
	});
});
