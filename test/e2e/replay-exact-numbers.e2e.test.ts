// A replay runs the business step on the digits the provider sent, through a real n8n: an event
// whose amount is 12345678901234567890 (beyond 2^53: JSON.parse, and so the Webhook node's body,
// gives 12345678901234567000) reaches the shipped webhook template (Raw Body on, Store Payload on),
// its business step fails and the key is marked failed; the shipped replay template, with its
// business step replaced by one that writes the amount (as a user replaces it with theirs), then
// writes exactly 12345678901234567890.
// e2e-tags: single compatibility
import { harness, eventId, type Execution } from '../support/e2e/harness';
import type { Json } from '../support/e2e/workflows';
import { readShippedTemplate, withOwnWebhook, publishWorkflow, saveWorkflow, runFromManualTrigger } from '../support/e2e/restWorkflows';

const POISON = 'business_log_e2e_exact_poison';
const AMOUNTS = 'replay_amounts_e2e';
const BIG = '12345678901234567890';
const BUSINESS_STEP = 'Business Step (insert business_log)';

/** One field of a Set node's assignments (Replay Settings). */
interface Assignment {
	name: string;
	value: unknown;
}

/** What an item of the replay's nodes carries, as far as this file reads it. */
interface ReplayItem {
	idempotency: { key: string };
	body: { data: { object: { amount: string } } };
}

/** The replay template with a user's Replay Settings and a business step that writes the event's amount. */
function replayWorkflow(settings: Record<string, unknown>) {
	const template = readShippedTemplate('replay-failed-events.json');
	const nodes = template.nodes.map((node) => {
		if (node.name === 'Replay Settings') {
			const assignments = (node.parameters.assignments as { assignments: Assignment[] }).assignments.map((assignment) =>
				assignment.name in settings ? { ...assignment, value: settings[assignment.name] } : assignment,
			);
			return { ...node, parameters: { ...node.parameters, assignments: { assignments } } };
		}
		if (node.name === BUSINESS_STEP) {
			return {
				...node,
				parameters: {
					...node.parameters,
					query: `INSERT INTO ${AMOUNTS} (event_key, amount) VALUES ($1, $2) RETURNING id`,
					options: {
						...(node.parameters.options as Record<string, unknown>),
						queryReplacement: '={{ [$json.idempotency.key, $json.body.data.object.amount] }}',
					},
				},
			};
		}
		return node;
	});
	return { ...template, nodes };
}

function itemsOut(execution: Execution, nodeName: string, outputIndex = 0): ReplayItem[] {
	return (execution.runData[nodeName] ?? []).flatMap((run) => run.data?.main?.[outputIndex] ?? []).map((item): Json => item.json);
}

describe('replay with a number beyond 2^53 (templates/replay-failed-events.json)', () => {
	const h = harness();
	const id = eventId('exact');
	const key = `evt:${id}`;
	// Written by hand: JSON.stringify could not produce these digits.
	const raw = `{"id":"${id}","object":"event","type":"e2e.replay_exact_poison","data":{"object":{"amount":${BIG},"currency":"eur"}}}`;
	let url: string;
	let replayId: string;

	/** Runs the workflow from its Manual Trigger as the editor does; resolves with the finished execution. */
	async function run(workflowId: string): Promise<Execution> {
		const { execution } = await runFromManualTrigger(h, workflowId, 'Run Replay');
		expect([execution.mode, execution.status]).toEqual(['manual', 'success']);
		return execution;
	}

	beforeAll(async () => {
		await h.appQuery(`CREATE TABLE IF NOT EXISTS ${AMOUNTS} (id bigserial PRIMARY KEY, event_key text NOT NULL, amount numeric)`);
		await h.appQuery(`ALTER TABLE business_log ADD CONSTRAINT ${POISON} CHECK (event_type IS DISTINCT FROM 'e2e.replay_exact_poison')`);
		const { workflow, webhookPath } = withOwnWebhook(readShippedTemplate('idempotent-webhook.json'), 'exact');
		await publishWorkflow(h, workflow, webhookPath);
		url = `${h.state.baseUrl}/webhook/${webhookPath}`;
		replayId = (await saveWorkflow(h, replayWorkflow({ keyPrefix: key, dryRun: false }), `replay exact ${id}`)).id;
	});

	afterAll(async () => {
		await h.appQuery(`ALTER TABLE business_log DROP CONSTRAINT IF EXISTS ${POISON}`);
	});

	test('the delivery fails in its business step: the key is failed, its payload stored with the exact digits', async () => {
		const answer = await h.deliver(url, raw);
		expect([answer.status, answer.outcome]).toEqual([500, 'failed']);
		const { rows } = await h.appQuery(`SELECT status, payload #>> '{data,object,amount}' AS amount FROM processed_events WHERE key = $1`, [
			key,
		]);
		expect(rows).toEqual([{ status: 'failed', amount: BIG }]);
	});

	test('the replay template claims it and its business step writes exactly 12345678901234567890', async () => {
		const execution = await run(replayId);

		const { rows } = await h.appQuery(`SELECT amount::text AS amount FROM ${AMOUNTS} WHERE event_key = $1`, [key]);
		expect(rows).toEqual([{ amount: BIG }]);
		const claimed = itemsOut(execution, 'Claim for Replay', 0);
		expect(claimed.map((item) => [item.idempotency.key, item.body.data.object.amount])).toEqual([[key, BIG]]);
		const stored = await h.appQuery('SELECT status, attempts FROM processed_events WHERE key = $1', [key]);
		expect(stored.rows).toEqual([{ status: 'completed', attempts: 2 }]);
	});
});
