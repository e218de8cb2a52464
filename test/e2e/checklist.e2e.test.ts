// The production checklist of seed 002 on the Postgres store: the shipped templates imported as
// users import them, every delivery signed like Stripe, through a real n8n (one process and queue
// mode). Each test proves its claim by counting rows in the business table and the keys table.
// The six tests are test/support/e2e/checklist.js; docs/testing.md maps each item to its guarantee.
// e2e-tags: single queue
import { NODE, eventId, outputTaken, type Harness } from '../support/e2e/harness';
import { defineChecklist, keyedByPaidOrder, type ChecklistStore, type KeyState, type PublishedWebhook } from '../support/e2e/checklist';
import type { Rejections } from '../support/e2e/rejections';
import type { NodeChange } from '../support/e2e/workflows';
import { readShippedTemplate, withOwnWebhook, publishWorkflow, publishOrderedWebhook } from '../support/e2e/restWorkflows';

const EXECUTE_QUERY = 'Idempotency Execute Query';
// The one-transaction template's insert, made to wait while a switch row names the event, so test 2
// can cut the session at a known point: after the reservation, inside the transaction, before the commit.
const PAUSING_QUERY = `INSERT INTO business_log (event_key, event_type)
SELECT $idempotency_key, $1 FROM (SELECT pg_sleep(CASE WHEN EXISTS (SELECT 1 FROM e2e_pause_once WHERE event_key = $idempotency_key) THEN 60 ELSE 0 END)) AS pause
RETURNING id`;

/** A workflow made from a shipped template, published with a webhook of its own: { url, workflowId }. */
async function publishVariant(h: Harness, file: string, label: string, changeNode: NodeChange): Promise<PublishedWebhook> {
	const template = readShippedTemplate(file);
	template.nodes = template.nodes.map(changeNode);
	const { workflow, webhookPath } = withOwnWebhook(template, label);
	const workflowId = await publishWorkflow(h, workflow, webhookPath);
	return { url: `${h.state.baseUrl}/webhook/${webhookPath}`, workflowId };
}

/**
 * Test 2 on the one-transaction template: the database session running Idempotency Execute Query
 * dies after the reservation and before the commit. (The lease variant, a worker killed in the
 * business step, is test/e2e/queue/worker-crash.e2e.test.js.)
 */
async function crashInsideTheTransaction(h: Harness, { url, workflowId }: PublishedWebhook): Promise<void> {
	const event = { id: eventId('onetx'), type: 'e2e.onetx' };
	const key = `evt:${event.id}`;
	await h.appQuery('INSERT INTO e2e_pause_once (event_key) VALUES ($1)', [key]);

	const mark = await h.executionMark();
	const crashed = h.deliver(url, event);
	// The node's transaction: it has reserved the key (a write lock on processed_events) and sleeps in our SQL.
	let backend: { pid: number; state: string; wrote: boolean; reserved: boolean } | undefined;
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
	if (!backend) throw new Error('no session of the one-transaction template was found sleeping in its insert');
	expect((await h.appQuery('SELECT 1 FROM processed_events WHERE key = $1', [key])).rowCount).toBe(0); // not committed

	await h.appQuery('DELETE FROM e2e_pause_once WHERE event_key = $1', [key]); // the retry will not wait
	const { rows: terminated } = await h.appQuery('SELECT pg_terminate_backend($1) AS ok', [backend.pid]);
	expect(terminated).toEqual([{ ok: true }]);
	for (let attempt = 0; attempt < 100; attempt++) {
		const { rowCount } = await h.appQuery('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [backend.pid]);
		if (rowCount === 0) break;
		await new Promise((resolve) => setTimeout(resolve, 50));
	}
	// The crash happened: the session that held the reservation is gone.
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
}

defineChecklist({
	title: 'production checklist (seed 002)',
	label: '',
	nodes: NODE,
	store: (h: Harness, { counts }: Rejections): ChecklistStore => {
		let oneTransaction: PublishedWebhook;
		return {
			setup: async () => {
				await h.appQuery('CREATE TABLE IF NOT EXISTS e2e_pause_once (event_key text PRIMARY KEY)');
				oneTransaction = await publishVariant(h, 'idempotent-webhook-one-transaction.json', 'onetx', (node) =>
					node.name === EXECUTE_QUERY ? { ...node, parameters: { ...node.parameters, query: PAUSING_QUERY } } : node,
				);
				return {
					webhook: { url: h.webhookUrl, workflowId: h.IDS.webhook },
					businessKeyed: await publishVariant(h, 'idempotent-webhook.json', 'bizkey', keyedByPaidOrder(NODE.reserve)),
					ordered: await publishOrderedWebhook(h, 'ordered'),
				};
			},
			/** Rows in business_log for the key: the business step's inserts. */
			effects: async (key) => (await h.appQuery('SELECT count(*)::int AS n FROM business_log WHERE event_key = $1', [key])).rows[0].n,
			keyStates: async (keys) => {
				const { rows } = await h.appQuery('SELECT key, status, attempts, duplicate_count FROM processed_events WHERE key = ANY($1)', [
					keys,
				]);
				const byKey = new Map<string, KeyState>(
					rows.map((row: { key: string; status: string; attempts: number; duplicate_count: number }) => [
						row.key,
						{ status: row.status, attempts: row.attempts, duplicates: row.duplicate_count },
					]),
				);
				return Object.fromEntries(keys.map((key) => [key, byKey.get(key) ?? null]));
			},
			/** Whole tables: the keys table and the business table. */
			totals: async () => {
				const { keys, business } = await counts();
				return { keys, effects: business };
			},
			crash: () => crashInsideTheTransaction(h, oneTransaction),
			checks: {
				burst: async ({ event, answers, executions }) => {
					expect(answers.every((a) => a.outcome !== null && ['new', 'duplicate', 'in_progress'].includes(a.outcome))).toBe(true);
					expect(executions).toHaveLength(50);
					expect(executions.filter((e) => outputTaken(e, NODE.reserve) === 0)).toHaveLength(1);
					const key = await h.appQuery('SELECT status, attempts FROM processed_events WHERE key = $1', [`evt:${event.id}`]);
					expect(key.rows).toEqual([{ status: 'completed', attempts: 1 }]);
					const statuses = answers.map((a) => a.status);
					process.stderr.write(
						`[e2e] burst of 50: ${statuses.filter((s) => s === 200).length}×200, ${statuses.filter((s) => s === 409).length}×409, slowest ${Math.max(...answers.map((a) => a.ms))} ms\n`,
					);
				},
				businessObject: async ({ businessKey, events, eventKeys, winner, runs }) => {
					expect(runs).toHaveLength(4);
					const business = await h.appQuery('SELECT event_key, event_type FROM business_log WHERE event_key = ANY($1)', [
						[businessKey, ...eventKeys],
					]);
					expect(business.rows).toEqual([{ event_key: businessKey, event_type: events[winner].type }]);
					const keys = await h.appQuery('SELECT key, status, attempts FROM processed_events WHERE key = ANY($1)', [
						[businessKey, ...eventKeys],
					]);
					expect(keys.rows).toEqual([{ key: businessKey, status: 'completed', attempts: 1 }]);
				},
				outOfOrder: async ({ customer, created, update, create }) => {
					const { rows } = await h.appQuery('SELECT email, version::text AS version FROM customers WHERE id = $1', [customer]);
					expect(rows).toEqual([{ email: 'new@example.com', version: String(created + 60) }]);
					// event_key comes from the node's default Event Key expression: Reserve's key of the update.
					const marks = await h.appQuery(
						'SELECT version::text AS version, stale_count, event_key FROM object_versions WHERE object_key = $1',
						[`stripe:customer:${customer}`],
					);
					expect(marks.rows).toEqual([{ version: String(created + 60), stale_count: 1, event_key: `evt:${update.id}` }]);
					const keys = await h.appQuery('SELECT key, status FROM processed_events WHERE key = ANY($1) ORDER BY key', [
						[`evt:${update.id}`, `evt:${create.id}`],
					]);
					expect(keys.rows.map((row: { status: string }) => row.status)).toEqual(['completed', 'completed']);
				},
				replay: async ({ a, b, executions }) => {
					expect(executions).toHaveLength(3);
					expect(executions.map((e) => outputTaken(e, NODE.verify))).toEqual([0, 0, 0]); // all Valid
					const { rows } = await h.appQuery('SELECT event_key, event_type FROM business_log WHERE event_key = ANY($1) ORDER BY id', [
						[`evt:${a.id}`, `evt:${b.id}`],
					]);
					expect(rows).toEqual([
						{ event_key: `evt:${a.id}`, event_type: a.type },
						{ event_key: `evt:${b.id}`, event_type: b.type },
					]);
				},
				genuineAfterForgeries: async ({ runs }) => {
					expect(runs.map((e) => outputTaken(e, NODE.verify))).toEqual([0, 0]);
					expect(runs[0].nodesRun).toEqual(expect.arrayContaining([NODE.business, NODE.settle, NODE.respond200]));
				},
			},
		};
	},
});
