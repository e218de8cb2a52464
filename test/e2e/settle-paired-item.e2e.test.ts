// Idempotency Key's Key From "Idempotency Reserve (Paired Item)" in a real n8n: the key and owner
// token come from the Reserve item each input item descends from (n8n's paired items), with no
// expression — after a business step that replaced the items, with two items in one execution, and
// in the shipped webhook template.
// e2e-tags: single queue
import { randomUUID } from 'node:crypto';
import { harness, outputItem, eventId } from '../support/e2e/harness';
import { readTemplate } from '../support/e2e/workflows';
import { freshWebhookPath, publishWorkflow, webhookNode } from '../support/e2e/restWorkflows';

const PKG = 'n8n-nodes-idempotency';
const CREDENTIAL = { idempotencyPostgresApi: { id: 'idempotencyPg01', name: 'Idempotency Postgres' } };
const link = (node: string) => [{ node, type: 'main', index: 0 }];

/**
 * Webhook → Split Out (body.events) → Reserve (lease, Key Source Field `id`) → Edit Fields (replaces
 * each item with `{ keep }`, as a business step's output would) → If keep → Mark Complete (paired item).
 */
function twoItemWorkflow(webhookPath: string) {
	const uid = () => randomUUID();
	return {
		name: 'E2E paired-item settle, two items',
		nodes: [
			webhookNode(webhookPath, { responseMode: 'lastNode' }),
			{
				id: uid(),
				name: 'Split Out',
				type: 'n8n-nodes-base.splitOut',
				typeVersion: 1,
				position: [220, 0],
				parameters: { fieldToSplitOut: 'body.events', options: {} },
			},
			{
				id: uid(),
				name: 'Idempotency Reserve',
				type: `${PKG}.idempotencyReserve`,
				typeVersion: 1,
				position: [440, 0],
				parameters: { keySource: 'field', keyField: 'id', keyPrefix: 'e2e-paired:', mode: 'lease', leaseSeconds: 300, options: {} },
				credentials: CREDENTIAL,
			},
			{
				id: uid(),
				name: 'Business Step',
				type: 'n8n-nodes-base.set',
				typeVersion: 3.4,
				position: [660, 0],
				parameters: {
					assignments: { assignments: [{ id: uid(), name: 'keep', value: '={{ $json.keep }}', type: 'boolean' }] },
					options: {},
				},
			},
			{
				id: uid(),
				name: 'Keep?',
				type: 'n8n-nodes-base.if',
				typeVersion: 2.2,
				position: [880, 0],
				parameters: {
					conditions: {
						options: { caseSensitive: true, leftValue: '', typeValidation: 'loose', version: 2 },
						conditions: [
							{
								id: uid(),
								leftValue: '={{ $json.keep }}',
								rightValue: '',
								operator: { type: 'boolean', operation: 'true', singleValue: true },
							},
						],
						combinator: 'and',
					},
					options: {},
				},
			},
			{
				id: uid(),
				name: 'Mark Complete',
				type: `${PKG}.idempotencyKey`,
				typeVersion: 1,
				position: [1100, 0],
				parameters: { operation: 'complete', source: 'reserveNode', options: {} },
				credentials: CREDENTIAL,
			},
		],
		connections: {
			Webhook: { main: [link('Split Out')] },
			'Split Out': { main: [link('Idempotency Reserve')] },
			'Idempotency Reserve': { main: [link('Business Step'), [], []] },
			'Business Step': { main: [link('Keep?')] },
			'Keep?': { main: [link('Mark Complete'), []] },
		},
		settings: { executionOrder: 'v1' },
		pinData: {},
	};
}

describe('Key From: Idempotency Reserve (Paired Item), in a real n8n', () => {
	const h = harness();
	const status = async (key: string) => (await h.appQuery('SELECT status FROM processed_events WHERE key = $1', [key])).rows[0]?.status;

	test('two items in one execution: the business step replaced both and kept the second; only its key is completed', async () => {
		const webhookPath = freshWebhookPath('paired');
		const workflowId = await publishWorkflow(h, twoItemWorkflow(webhookPath), webhookPath);
		const [first, second] = [eventId('paired_a'), eventId('paired_b')];
		const mark = await h.executionMark();
		const response = await fetch(`${h.state.baseUrl}/webhook/${webhookPath}`, {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify({
				events: [
					{ id: first, keep: false },
					{ id: second, keep: true },
				],
			}),
		});
		expect(response.status).toBe(200);
		const [run] = await h.waitForExecutions(workflowId, mark, 1);
		expect(run.status).toBe('success');
		// Mark Complete's input had no idempotency object: Edit Fields replaced the items.
		expect(outputItem(run, 'Keep?')).toEqual({ keep: true });
		const completeItems = run.runData['Mark Complete'][0].data?.main[0];
		if (!completeItems) throw new Error('Mark Complete emitted no items on its first output');
		const done = completeItems.map((item) => item.json.idempotency);
		expect(done).toHaveLength(1);
		expect(done[0]).toMatchObject({ key: `e2e-paired:${second}`, operation: 'complete', applied: true });
		expect(await status(`e2e-paired:${second}`)).toBe('completed');
		const { rows } = await h.appQuery('SELECT key_source FROM processed_events WHERE key = $1', [`e2e-paired:${second}`]);
		expect(rows).toEqual([{ key_source: 'field' }]);
		expect(await status(`e2e-paired:${first}`)).toBe('processing');
	});

	test("the webhook template settles the reserved key from Reserve's own item: Settle completes it, no key expression", async () => {
		const template = readTemplate('webhook');
		const settle = template.nodes.find((n: { name: string }) => n.name === 'Settle (complete or mark failed)');
		// No key parameter: the key comes from Reserve's item. Store written out: the template keeps Postgres at version 3.
		expect(settle.parameters).toEqual({ operation: 'settle', store: 'postgres', responseJson: expect.any(String), options: {} });
		const id = eventId('paired_tpl');
		const mark = await h.executionMark();
		const delivery = await h.deliver(h.webhookUrl, { id, type: 'invoice.paid' });
		expect([delivery.status, delivery.outcome]).toEqual([200, 'new']);
		const [run] = await h.waitForExecutions(h.IDS.webhook, mark, 1);
		expect(run.status).toBe('success');
		// The reservation came back with the settled item (only this Key From returns it).
		expect(outputItem(run, 'Settle (complete or mark failed)').idempotency).toMatchObject({
			key: `evt:${id}`,
			operation: 'settle',
			stepSucceeded: true,
			applied: true,
			outcome: 'new',
		});
		const { rows } = await h.appQuery('SELECT status, response FROM processed_events WHERE key = $1', [`evt:${id}`]);
		expect(rows).toEqual([{ status: 'completed', response: { received: true, eventKey: `evt:${id}` } }]);
		const repeat = await h.deliver(h.webhookUrl, { id, type: 'invoice.paid' });
		expect([repeat.status, repeat.outcome]).toEqual([200, 'duplicate']);
	});
});
