// Every row of the webhook template's answers table (docs/templates.md), through a real n8n, on each
// n8n line the suite runs: no failure is ever answered 2xx unless the effect happened, and none is
// left to n8n's own answer for a failed execution (n8n 1.x answers that 200 with an empty body in
// this response mode: the provider would stop retrying and the event would be lost).
// e2e-tags: single queue compatibility
import { harness, eventId, outputItem } from '../support/e2e/harness';
import type { Json, WorkflowJson } from '../support/e2e/workflows';
import {
	readShippedTemplate,
	withOwnWebhook,
	publishWorkflow,
	appCredentialData,
	createCredential,
	makeCredentialUnreadable,
} from '../support/e2e/restWorkflows';
import { settleBlocker } from '../support/e2e/appFaults';

const BUSINESS = 'Business Step (insert business_log)';
const SETTLE = 'Settle (complete or mark failed)';

describe('the webhook template answers every outcome itself', () => {
	const h = harness();
	// Refuses the settling of listed keys, as a database that is down for that statement would.
	const blocked = settleBlocker(h, `e2e_answers_block_${Date.now().toString(36)}`);
	beforeAll(() => blocked.create());
	afterAll(() => blocked.drop());

	/** The shipped template, published with its own webhook; `edit` changes it as a user (or a fault) would. */
	async function publishTemplate(label: string, edit: (template: WorkflowJson) => void | Promise<void> = () => {}) {
		const template = readShippedTemplate('idempotent-webhook.json');
		await edit(template);
		const { workflow, webhookPath } = withOwnWebhook(template, label);
		const workflowId = await publishWorkflow(h, workflow, webhookPath);
		return { url: `${h.state.baseUrl}/webhook/${webhookPath}`, workflowId };
	}

	const nodeOf = (template: WorkflowJson, name: string) => {
		const node = template.nodes.find((candidate) => candidate.name === name);
		if (!node) throw new Error(`the template has no node named ${name}`);
		return node;
	};
	const businessSql = (sql: string) => (template: WorkflowJson) => {
		nodeOf(template, BUSINESS).parameters = {
			operation: 'executeQuery',
			query: sql,
			options: { queryReplacement: '={{ [$json.idempotency.key] }}' },
		};
	};

	test('the key store unreachable → 503 not_reserved, nothing ran', async () => {
		const unreachable = await createCredential(h, 'idempotencyPostgresApi', { ...appCredentialData(h), port: 1, maxConnections: 2 });
		const { url, workflowId } = await publishTemplate('store-down', (template) => {
			for (const node of template.nodes)
				if (node.credentials?.idempotencyPostgresApi) node.credentials = { idempotencyPostgresApi: unreachable };
		});
		const mark = await h.executionMark();
		const answer = await h.deliver(url, { id: eventId('store_down'), type: 'e2e.answers' });
		expect([answer.status, answer.outcome]).toEqual([503, 'not_reserved']);
		const [run] = await h.waitForExecutions(workflowId, mark, 1, { timeoutMs: 120000 });
		expect(run.nodesRun).not.toContain(BUSINESS);
	});

	test('a key the node refuses (a NUL in the event id) → 503 not_reserved, nothing stored', async () => {
		const answer = await h.deliver(h.webhookUrl, { id: 'evt_nul\u0000x', type: 'e2e.answers' });
		expect([answer.status, answer.outcome]).toEqual([503, 'not_reserved']);
		const body: Json = answer.json;
		expect(body.error).toMatch(/NUL|\\u0000|null character/i);
	});

	test('the signing secret unreadable → 503 not_verified (never Valid, never 200)', async () => {
		const secret = await createCredential(h, 'webhookSignatureApi', { secret: h.secret });
		const { url } = await publishTemplate('secret-unreadable', (template) => {
			nodeOf(template, 'Webhook Signature Verify').credentials = { webhookSignatureApi: secret };
		});
		await makeCredentialUnreadable(h, secret.id);
		const id = eventId('secret_unreadable');
		const answer = await h.deliver(url, { id, type: 'e2e.answers' });
		expect([answer.status, answer.outcome]).toEqual([503, 'not_verified']);
		expect((await h.appQuery('SELECT 1 FROM processed_events WHERE key = $1', [`evt:${id}`])).rowCount).toBe(0);
	});

	test("a business step left at n8n's default (stop the workflow on error): a success → 200, completed; a failure → 500, the key failed, the retry processed once", async () => {
		// The user's step at its defaults: no error output. Settle below it is not reached when it fails:
		// the key is settled when the execution ends, and n8n answers the failure.
		const fails = (template: WorkflowJson) => {
			delete nodeOf(template, BUSINESS).onError;
			businessSql('SELECT 1 / (CASE WHEN EXISTS (SELECT 1 FROM e2e_fail_once WHERE event_key = $1) THEN 0 ELSE 1 END)')(template);
		};
		await h.appQuery('CREATE TABLE IF NOT EXISTS e2e_fail_once (event_key text PRIMARY KEY)');
		const { url, workflowId } = await publishTemplate('default-settings', fails);
		const ok = eventId('default_ok');
		const failing = eventId('default_fails');
		await h.appQuery('INSERT INTO e2e_fail_once VALUES ($1)', [`evt:${failing}`]);
		const mark = await h.executionMark();

		const succeeded = await h.deliver(url, { id: ok, type: 'e2e.answers' });
		expect(succeeded.status).toBe(200);
		const failed = await h.deliver(url, { id: failing, type: 'e2e.answers' });
		expect(failed.status).toBe(500);
		const keys = async () =>
			(
				await h.appQuery('SELECT key, status, attempts FROM processed_events WHERE key = ANY($1) ORDER BY key', [
					[`evt:${ok}`, `evt:${failing}`],
				])
			).rows;
		expect(await keys()).toEqual([
			{ key: `evt:${failing}`, status: 'failed', attempts: 1 },
			{ key: `evt:${ok}`, status: 'completed', attempts: 1 },
		]);
		// The cause fixed, the provider's retry runs the step once more, and only once.
		await h.appQuery('DELETE FROM e2e_fail_once WHERE event_key = $1', [`evt:${failing}`]);
		const retried = await h.deliver(url, { id: failing, type: 'e2e.answers' });
		expect([retried.status, retried.outcome]).toEqual([200, 'new']);
		const again = await h.deliver(url, { id: failing, type: 'e2e.answers' });
		expect([again.status, again.outcome]).toEqual([200, 'duplicate']);
		expect(await keys()).toEqual([
			{ key: `evt:${failing}`, status: 'completed', attempts: 2 },
			{ key: `evt:${ok}`, status: 'completed', attempts: 1 },
		]);
		const runs = await h.waitForExecutions(workflowId, mark, 4, { timeoutMs: 120000 });
		expect(runs.map((run) => run.status)).toEqual(['success', 'error', 'success', 'success']);
	});

	test('a failing business step → 500 failed, the key marked failed', async () => {
		const { url } = await publishTemplate('step-fails', businessSql('SELECT 1 / 0 WHERE $1 IS NOT NULL'));
		const id = eventId('step_fails');
		const answer = await h.deliver(url, { id, type: 'e2e.answers' });
		expect([answer.status, answer.outcome]).toEqual([500, 'failed']);
		expect((await h.appQuery('SELECT status, last_error FROM processed_events WHERE key = $1', [`evt:${id}`])).rows).toEqual([
			{ status: 'failed', last_error: expect.stringMatching(/division by zero/) },
		]);
	});

	test('a failing business step whose key cannot be marked failed → 500, and the execution fails for the error workflow', async () => {
		const { url, workflowId } = await publishTemplate('fail-unsettled', businessSql('SELECT 1 / 0 WHERE $1 IS NOT NULL'));
		const id = eventId('fail_unsettled');
		await blocked.block(`evt:${id}`, 'failed');
		const mark = await h.executionMark();
		const answer = await h.deliver(url, { id, type: 'e2e.answers' });
		expect([answer.status, answer.outcome]).toEqual([500, 'failed']);
		const [run] = await h.waitForExecutions(workflowId, mark, 1, { timeoutMs: 120000 });
		expect(run.status).toBe('error');
		expect(run.nodesRun).toEqual(
			expect.arrayContaining(['Respond 500 (not marked failed)', 'Mark Failed Failed (error workflow marks it)']),
		);
	});

	test('a successful step whose key cannot be completed → 200 completion_pending, the execution fails with the key for the error workflow', async () => {
		const { url, workflowId } = await publishTemplate('complete-unsettled', businessSql('SELECT $1::text AS done'));
		const id = eventId('complete_unsettled');
		await blocked.block(`evt:${id}`, 'completed');
		const mark = await h.executionMark();
		const answer = await h.deliver(url, { id, type: 'e2e.answers' });
		expect([answer.status, answer.outcome]).toEqual([200, 'completion_pending']);
		const [run] = await h.waitForExecutions(workflowId, mark, 1, { timeoutMs: 120000 });
		expect(run.status).toBe('error');
		expect(run.nodesRun).toContain('Completion Failed (error workflow completes)');
	});

	// The key was taken from this run while its step ran: the effect happened here, so the provider
	// gets 200 (a 5xx would invite a second effect), and the execution fails so someone looks.
	test.each([
		['not_found', 'DELETE FROM processed_events WHERE key = $1'],
		['not_owner', 'UPDATE processed_events SET owner_token = gen_random_uuid() WHERE key = $1'],
		['failed', "UPDATE processed_events SET status = 'failed', locked_until = null WHERE key = $1"],
	])('a completion refused (%s) → 200 completion_refused, never "new", and the execution fails for a look', async (reason, sql) => {
		const { url, workflowId } = await publishTemplate(`refused-${reason}`, businessSql(sql));
		const id = eventId(`refused_${reason}`);
		const mark = await h.executionMark();
		const answer = await h.deliver(url, { id, type: 'e2e.answers' });
		expect([answer.status, answer.outcome]).toEqual([200, 'completion_refused']);
		const [run] = await h.waitForExecutions(workflowId, mark, 1, { timeoutMs: 120000 });
		expect(run.status).toBe('error');
		expect(outputItem(run, SETTLE, 2).idempotency).toMatchObject({
			stepSucceeded: true,
			applied: false,
			staleReason: reason,
		});
		expect(run.nodesRun).toContain('Completion Refused (check the key)');
	});
});
