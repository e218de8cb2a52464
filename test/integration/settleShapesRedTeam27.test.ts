import { type IConnections, type INode, type IRun } from 'n8n-workflow';

import { WebhookSignatureVerify } from '../../nodes/WebhookSignatureVerify/WebhookSignatureVerify.node';
import { describeWithN8n } from '../support/n8nBaseNodes';
import { PACKAGE, packageNode } from '../support/n8nEngine';
import { link } from '../support/settleWorkflows';
import { baseNode as node, CHARGE_BODY, EVENTS, events, triggerRedTeam, type Step } from '../support/triggerRedTeam';

/*
 * Twenty-seventh red-team pass: the edits users make to the two shipped templates. The trigger template
 * (templates/idempotent-webhook-trigger.json: Idempotent Webhook → the step) with a notify after the charge, the
 * charge in a shared sub-workflow (Define Below), disabled nodes left in the path, two Idempotent Webhook triggers in
 * one workflow, a Merge with a lookup before the charge, a Filter dropping the event. The node template
 * (templates/idempotent-webhook.json: n8n's Webhook 2.1 → Webhook Signature Verify → Idempotency Reserve → the step,
 * Settle beside it) with Settle moved after the step, Settle replaced by Idempotency Key → Complete, a second
 * Reserve on a business key, an If after Reserve, Retry On Fail on the effect. n8n 2.41.1's request path, publish
 * check and engine; the embedded store in the file's n8n folder; the effect is n8n's HTTP Request calling a local
 * API that counts what it committed per event. The provider re-delivers the same signed request until it is
 * answered 2xx. A row marked failing breaks a promise: its comment says what happens and how to reproduce it.
 */

const NOTIFY_BODY = '={{ JSON.stringify({ id: $json.id }) }}';

describeWithN8n('red team 27: the edits users make to the shipped templates', () => {
	const { effectsAt, failNext, httpCall, nodePath, provide, refusedAtPublish, statuses, useTrigger } = triggerRedTeam({
		tag: 'rt27',
		echoBody: true,
		route: (route, body, id) => (route === 'lookup' ? { id, customer: body.customer, tier: 'gold' } : undefined),
		baseNodeFiles: {
			'n8n-nodes-base.webhook': 'Webhook/Webhook.node.js',
			'n8n-nodes-base.set': 'Set/Set.node.js',
			'n8n-nodes-base.filter': 'Filter/Filter.node.js',
			'n8n-nodes-base.respondToWebhook': 'RespondToWebhook/RespondToWebhook.node.js',
			'n8n-nodes-base.executeWorkflowTrigger': 'ExecuteWorkflow/ExecuteWorkflowTrigger/ExecuteWorkflowTrigger.node.js',
		},
		nodeTypes: { [`${PACKAGE}.webhookSignatureVerify`]: new WebhookSignatureVerify() },
	});

	const ifType = (name: string, field: string, value: string, extra: Partial<INode> = {}) =>
		node(
			name,
			'if',
			2.2,
			{
				conditions: {
					options: { caseSensitive: true, leftValue: '', typeValidation: 'strict', version: 2 },
					conditions: [{ id: 'c', leftValue: `={{ ${field} }}`, rightValue: value, operator: { type: 'string', operation: 'equals' } }],
					combinator: 'and',
				},
				options: {},
			},
			extra,
		);

	const filterNot = (name: string, field: string, value: string) =>
		node(name, 'filter', 2.2, {
			conditions: {
				options: { caseSensitive: true, leftValue: '', typeValidation: 'strict', version: 2 },
				conditions: [{ id: 'f', leftValue: `={{ ${field} }}`, rightValue: value, operator: { type: 'string', operation: 'notEquals' } }],
				combinator: 'and',
			},
			options: {},
		});

	/* ===================== The trigger template ===================== */

	// (T1) The template's step followed by a Slack-like notify (HTTP Request at n8n's default On Error), one event,
	// the notify failing once after the charge succeeded. docs/templates.md "not guaranteed: one event's step with
	// several effects that fails after some of them": the retry runs the whole step again, so the charge repeats. The
	// row records that documented bound (2 charges, 1 notice), not a finding.
	it('trigger: Charge → Notify (Slack-like HTTP, Stop Workflow) failing once after the charge: 500, the retry charges again (documented bound: 2 charges, 1 notice)', async () => {
		useTrigger('wf-rt27-notify');
		const step: Step = {
			nodes: [httpCall('Charge', 'charge', {}, CHARGE_BODY), httpCall('Notify Slack', 'notify', {}, NOTIFY_BODY)],
			connections: { Charge: { main: [link('Notify Slack')] } },
			heads: ['Charge'],
		};
		const refusal = await refusedAtPublish(step);
		failNext('notify:nt_a');
		const { answers } = await provide({ id: 'nt_a' }, step);
		expect({
			refusal,
			answers,
			charges: effectsAt('charge', 'nt_a'),
			notices: effectsAt('notify', 'nt_a'),
			keys: await statuses(['nt_a']),
		}).toEqual({ refusal: false, answers: [500, 200], charges: 2, notices: 1, keys: ['completed'] });
	});

	// (T2) The charge moved into a sub-workflow defined in Execute Workflow (Source: Define Below), the same JSON pasted
	// into two workflows with their own Idempotent Webhook triggers (billing and a back-office path). One event each;
	// the sub-workflow's charge fails once for the second workflow's event.
	const sharedSub = () =>
		JSON.stringify({
			nodes: [
				node('Webhook', 'executeWorkflowTrigger', 1.1, { inputSource: 'passthrough' }),
				httpCall('Charge', 'charge', {}, CHARGE_BODY),
			],
			connections: { Webhook: { main: [link('Charge')] } },
		});
	const subStep = (): Step => ({
		nodes: [
			node('Charge (sub-workflow)', 'executeWorkflow', 1.3, {
				source: 'parameter',
				workflowJson: sharedSub(),
				options: { waitForSubWorkflow: true },
			}),
		],
		heads: ['Charge (sub-workflow)'],
	});

	it("trigger: two workflows (two triggers) call one Define Below sub-workflow that charges, failing once for the 2nd workflow's event: one charge each", async () => {
		useTrigger('wf-rt27-sub-billing');
		const refusalA = await refusedAtPublish(subStep());
		const a = await provide({ id: 'sw_a' }, subStep());
		useTrigger('wf-rt27-sub-office');
		const refusalB = await refusedAtPublish(subStep());
		failNext('charge:sw_b');
		const b = await provide({ id: 'sw_b' }, subStep());
		expect({
			refusals: [refusalA, refusalB],
			answers: [a.answers, b.answers],
			charges: [effectsAt('charge', 'sw_a'), effectsAt('charge', 'sw_b')],
			keys: await statuses(['sw_b']),
		}).toEqual({ refusals: [false, false], answers: [[200], [500, 200]], charges: [1, 1], keys: ['completed'] });
	});

	// (T3) A Wait (1 hour) the user disabled and left in the path before the charge: n8n passes the items through a
	// disabled node, so nothing waits.
	it('trigger: a disabled Wait (1 hour) left before the charge, the charge failing once: published (n8n skips it), 500, then one charge', async () => {
		useTrigger('wf-rt27-disabled-wait');
		const step: Step = {
			nodes: [
				node('Hold an Hour', 'wait', 1.1, { resume: 'timeInterval', amount: 1, unit: 'hours' }, { disabled: true, webhookId: 'rt27-wait' }),
				httpCall('Charge', 'charge', {}, CHARGE_BODY),
			],
			connections: { 'Hold an Hour': { main: [link('Charge')] } },
			heads: ['Hold an Hour'],
		};
		const refusal = await refusedAtPublish(step);
		failNext('charge:dw_a');
		const { answers } = await provide({ id: 'dw_a' }, step);
		expect({ refusal, answers, charges: effectsAt('charge', 'dw_a'), keys: await statuses(['dw_a']) }).toEqual({
			refusal: false,
			answers: [500, 200],
			charges: 1,
			keys: ['completed'],
		});
	});

	// (T4) A Respond to Webhook (200) the user disabled after the charge (left from the node template).
	it('trigger: a disabled Respond to Webhook left after the charge, the charge failing once: published; 500, then one charge', async () => {
		useTrigger('wf-rt27-disabled-respond');
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', {}, CHARGE_BODY),
				node(
					'Respond 200',
					'respondToWebhook',
					1.5,
					{ respondWith: 'json', responseBody: '={{ { ok: true } }}', options: { responseCode: 200 } },
					{ disabled: true },
				),
			],
			connections: { Charge: { main: [link('Respond 200')] } },
			heads: ['Charge'],
		};
		const refusal = await refusedAtPublish(step);
		failNext('charge:dr_a');
		const { answers } = await provide({ id: 'dr_a' }, step);
		expect({ refusal, answers, charges: effectsAt('charge', 'dr_a'), keys: await statuses(['dr_a']) }).toEqual({
			refusal: false,
			answers: [500, 200],
			charges: 1,
			keys: ['completed'],
		});
	});

	// (T5) Two Idempotent Webhook triggers in one workflow, different paths (a shop and a back office, each posting
	// orders with their own numeric ids), both feeding the same Charge; Scope left empty on both (the default).
	const twoTriggerStep = (): Step => ({
		nodes: [
			packageNode(
				'Webhook Back Office',
				'idempotentWebhook',
				{ path: 'rt27-office', scheme: 'stripe', store: 'embedded', keySource: 'auto' },
				{ typeVersion: 3, position: [0, 300], credentials: { webhookSignatureApi: { id: 'signing', name: 'Signing' } } },
			),
			httpCall('Charge', 'charge', {}, '={{ JSON.stringify({ id: $json.body.source + ":" + $json.body.id }) }}'),
		],
		connections: { 'Webhook Back Office': { main: [link('Charge')] } },
		heads: ['Charge'],
	});

	// The key is `wf:<workflow ID>:evt:<id>` for every Idempotent Webhook trigger of the workflow: without a Scope on
	// either, the back office's order 1001 would be answered 200 `duplicate` with the shop's stored answer and never
	// charged (seen before the publish check: charges [shop 1, office 0]). Refused at publish, naming the other trigger;
	// with a Scope on each, each order is charged once.
	it("trigger: two Idempotent Webhook triggers in one workflow without a Scope: refused at publish; with a Scope on each, each source's order 1001 charged once", async () => {
		useTrigger('wf-rt27-two-triggers', { path: 'rt27-shop' });
		const refusal = await refusedAtPublish(twoTriggerStep());
		expect(typeof refusal === 'string' && refusal.includes('"Webhook Back Office"') && refusal.includes('Scope')).toBe(true);
		const scoped = (scope: string): Step => {
			const step = twoTriggerStep();
			step.nodes[0] = { ...step.nodes[0], parameters: { ...step.nodes[0].parameters, options: { scope } } };
			return step;
		};
		useTrigger('wf-rt27-two-scoped', { path: 'rt27-shop', options: { scope: 'shop' } });
		const accepted = await refusedAtPublish(scoped('office'));
		const shop = await provide({ id: '1001', source: 'shop' }, scoped('office'));
		useTrigger('wf-rt27-two-scoped', { path: 'rt27-office', options: { scope: 'office' } });
		const office = await provide({ id: '1001', source: 'office' }, scoped('shop'));
		expect({
			accepted,
			answers: [shop.answers, office.answers],
			charges: [effectsAt('charge', 'shop:1001'), effectsAt('charge', 'office:1001')],
		}).toEqual({ accepted: false, answers: [[200], [200]], charges: [1, 1] });
	});

	// (T6) A Merge (Combine by Position) joining the trigger's item with a customer lookup (HTTP Request at the default
	// On Error) before the charge (Continue, error output); the lookup failing once, then the charge failing once.
	it('trigger: [event, Lookup customer] → Merge (combine by position) → Charge (error output); the lookup, then the charge failing once: one charge', async () => {
		useTrigger('wf-rt27-merge-lookup');
		const step: Step = {
			nodes: [
				httpCall('Lookup Customer', 'lookup', {}, CHARGE_BODY),
				node('Join Lookup', 'merge', 3.2, { mode: 'combine', combineBy: 'combineByPosition', options: {} }),
				httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, '={{ JSON.stringify({ id: $json.body.id, tier: $json.tier }) }}'),
			],
			connections: {
				'Lookup Customer': { main: [[{ node: 'Join Lookup', type: 'main', index: 1 }]] },
				'Join Lookup': { main: [link('Charge')] },
				Charge: { main: [[], []] },
			} as IConnections,
			heads: ['Join Lookup', 'Lookup Customer'],
		};
		const refusal = await refusedAtPublish(step);
		failNext('lookup:ml_a');
		failNext('charge:ml_a');
		const { answers } = await provide({ id: 'ml_a', customer: 'cus_1' }, step);
		expect({ refusal, answers, charges: effectsAt('charge', 'ml_a'), keys: await statuses(['ml_a']) }).toEqual({
			refusal: false,
			answers: [500, 500, 200],
			charges: 1,
			keys: ['completed'],
		});
	});

	// (T7) A Filter before the charge dropping test-mode events (zero items reach the charge): Events [A live, B test],
	// the charge failing once for A.
	it('trigger: Events [A live, B test] → Filter (drop test) → Charge (error output) failing once for A: B completed without a charge, A charged once', async () => {
		useTrigger('wf-rt27-filter', EVENTS);
		const step: Step = {
			nodes: [
				filterNot('Drop Test Events', '$json.body.mode', 'test'),
				httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_BODY),
			],
			connections: { 'Drop Test Events': { main: [link('Charge')] }, Charge: { main: [[], []] } },
			heads: ['Drop Test Events'],
		};
		const refusal = await refusedAtPublish(step);
		failNext('charge:fi_a');
		const { answers } = await provide(
			events([
				{ id: 'fi_a', mode: 'live' },
				{ id: 'fi_b', mode: 'test' },
			]),
			step,
		);
		expect({
			refusal,
			answers,
			charges: [effectsAt('charge', 'fi_a'), effectsAt('charge', 'fi_b')],
			keys: await statuses(['fi_a', 'fi_b']),
		}).toEqual({ refusal: false, answers: [500, 200], charges: [1, 0], keys: ['completed', 'completed'] });
	});

	/* ===================== The node template ===================== */

	const { nodeKey, provideNodePath, useNodePath } = nodePath;
	const reserve = (name = 'Reserve', parameters: Record<string, unknown> = {}, y = 0): INode => nodePath.reserveNode(parameters, name, y);
	const settle = (y = 240): INode =>
		packageNode(
			'Settle',
			'idempotencyKey',
			{ operation: 'settle', store: 'embedded', options: {} },
			{ typeVersion: 3, position: [700, y] },
		);
	const settleWired = {
		Settle: {
			main: [
				link('Respond 200'),
				link('Respond 500 (provider retries)'),
				link('Respond 200 (completion refused)'),
				link('Respond 503 (not settled)'),
			],
		},
	};

	/** The node template: Webhook → Verify → Reserve; Reserve's New → `newHeads`; the rest as `nodes` / `connections`. */
	const nodeTemplate = (nodes: INode[], newHeads: string[], connections: IConnections, reserveNode: INode = reserve()) =>
		nodePath.nodeTemplate({ nodes, heads: newHeads, connections }, { reserve: reserveNode });

	const nodeKeys = async (ids: string[]) => await Promise.all(ids.map(async (id) => await nodeKey(`evt:${id}`)));
	/** What Reserve sent to Not Reserved (its refusal), '[]' when nothing. */
	const refusalOf = (run: IRun | undefined) =>
		JSON.stringify(run?.data.resultData.runData.Reserve?.[0]?.data?.main[3]?.map((item) => item.json) ?? []);

	// (N1) Settle moved AFTER the step (Reserve → Filter (drop test-mode events) → Charge → Settle): a test-mode event
	// never reaches Settle. What is its key, and what does the provider hear?
	it('node path: Settle chained after Filter → Charge, a test-mode event dropped by the Filter: answered 2xx, key completed, nothing charged', async () => {
		useNodePath('wf-rt27-settle-after-filter');
		const build = () =>
			nodeTemplate(
				[filterNot('Drop Test Events', '$json.body.mode', 'test'), httpCall('Charge', 'charge', {}, CHARGE_BODY), settle(0)],
				['Drop Test Events'],
				{ 'Drop Test Events': { main: [link('Charge')] }, Charge: { main: [link('Settle')] }, ...settleWired },
			);
		const test = await provideNodePath({ id: 'sf_test', mode: 'test' }, build);
		const live = await provideNodePath({ id: 'sf_live', mode: 'live' }, build);
		expect({
			refusal: refusalOf(test.runs[0]),
			answers: [test.answers, live.answers],
			charges: [effectsAt('charge', 'sf_test'), effectsAt('charge', 'sf_live')],
			keys: await nodeKeys(['sf_test', 'sf_live']),
		}).toEqual({ refusal: '[]', answers: [[200], [200]], charges: [0, 1], keys: ['completed', 'completed'] });
	});

	// (N2) An If after Reserve that skips the charge for refunds (false branch unconnected), Settle chained after the
	// Charge (the wiring the template's step 1 offers), the charge failing once for the charge event.
	it('node path: If (type = charge) → Charge → Settle, a refund event skipped and a charge event failing once: refund completed uncharged, charge charged once', async () => {
		useNodePath('wf-rt27-if-skip');
		const build = () =>
			nodeTemplate(
				[ifType('Is Charge', '$json.body.type', 'charge'), httpCall('Charge', 'charge', {}, CHARGE_BODY), settle(0)],
				['Is Charge'],
				{ 'Is Charge': { main: [link('Charge'), []] }, Charge: { main: [link('Settle')] }, ...settleWired },
			);
		failNext('charge:is_c');
		const refund = await provideNodePath({ id: 'is_r', type: 'refund' }, build);
		const charge = await provideNodePath({ id: 'is_c', type: 'charge' }, build);
		expect({
			answers: [refund.answers, charge.answers],
			charges: [effectsAt('charge', 'is_r'), effectsAt('charge', 'is_c')],
			keys: await nodeKeys(['is_r', 'is_c']),
		}).toEqual({ answers: [[200], [500, 200]], charges: [0, 1], keys: ['completed', 'completed'] });
	});

	// (N3) Settle replaced by Idempotency Key → Complete at its defaults (Key From: Item) after the charge, Done → Respond
	// 200 (the old recipe's shape). The HTTP Request's output is the API's answer, with no `idempotency` object.
	const completeNode = (source: 'item' | 'reserveNode'): INode =>
		packageNode(
			'Mark Complete',
			'idempotencyKey',
			{ operation: 'complete', store: 'embedded', source, options: {} },
			{ typeVersion: 3, position: [900, 0] },
		);

	// Complete at Key From: Item after a node that replaced the item (an HTTP Request's answer, no `idempotency`
	// object) reads the key from the Reserve item it descends from (the one Reserve before it). Seen before that rule:
	// Complete threw after the charge on every delivery, the key stayed `processing`, and once the lease ended each
	// provider retry charged again (answers [500, 500, 500], 3 charges for one event).
	it('node path: Settle replaced by Complete (Key From: Item) after the charge, Lease 1 s, the provider retrying after the lease: charged once', async () => {
		useNodePath('wf-rt27-complete-item');
		const build = () =>
			nodeTemplate(
				[httpCall('Charge', 'charge', {}, CHARGE_BODY), completeNode('item')],
				['Charge'],
				{ Charge: { main: [link('Mark Complete')] }, 'Mark Complete': { main: [link('Respond 200'), []] } },
				reserve('Reserve', { leaseSeconds: 1 }),
			);
		const { answers, runs } = await provideNodePath({ id: 'ci_a' }, build, 3, 1200);
		expect({
			refusal: refusalOf(runs[0]),
			answers,
			charges: effectsAt('charge', 'ci_a'),
			key: await nodeKey('evt:ci_a'),
		}).toEqual({ refusal: '[]', answers: [200], charges: 1, key: 'completed' });
	});

	// (N4) Complete with Key From: Idempotency Reserve (Paired Item) — the choice that works after an HTTP Request — the
	// charge at Continue (regular output) (a user "keeping the workflow green"), the API failing once.
	// The charge fails (API 500) and n8n passes `{ error }` on the regular output. Complete refuses to complete n8n's
	// error item (seen before that rule: Complete followed the pairing to Reserve's item and completed the key, answered
	// 200 with no charge: the event lost). The key is left to its lease (1 s here), then the provider's retry charges.
	it('node path: Complete (Key From: Paired Item) after a charge at Continue (regular output) failing once: 500, then the event charged once', async () => {
		useNodePath('wf-rt27-complete-paired');
		const build = () =>
			nodeTemplate(
				[httpCall('Charge', 'charge', { onError: 'continueRegularOutput' }, CHARGE_BODY), completeNode('reserveNode')],
				['Charge'],
				{ Charge: { main: [link('Mark Complete')] }, 'Mark Complete': { main: [link('Respond 200'), []] } },
				reserve('Reserve', { leaseSeconds: 1 }),
			);
		failNext('charge:cp_a');
		const { answers, runs } = await provideNodePath({ id: 'cp_a' }, build, 4, 1200);
		expect({
			refusal: refusalOf(runs[0]),
			answers,
			charges: effectsAt('charge', 'cp_a'),
			key: await nodeKey('evt:cp_a'),
		}).toEqual({ refusal: '[]', answers: [500, 200], charges: 1, key: 'completed' });
	});

	// (N5) Complete (Paired Item) after a charge at n8n's default On Error, failing once; Lease 1 s (the lease running
	// out between Stripe's retries): no end handler (explicit control), so the key waits for its lease.
	it('node path: Complete (Paired Item) after a charge at Stop Workflow failing once, Lease 1 s: 500, copies wait out the lease, then one charge', async () => {
		useNodePath('wf-rt27-complete-stop');
		const build = () =>
			nodeTemplate(
				[httpCall('Charge', 'charge', {}, CHARGE_BODY), completeNode('reserveNode')],
				['Charge'],
				{ Charge: { main: [link('Mark Complete')] }, 'Mark Complete': { main: [link('Respond 200'), []] } },
				reserve('Reserve', { leaseSeconds: 1 }),
			);
		failNext('charge:cs_a');
		const { answers } = await provideNodePath({ id: 'cs_a' }, build, 4, 1200);
		expect({ answers, charges: effectsAt('charge', 'cs_a'), key: await nodeKey('evt:cs_a') }).toEqual({
			answers: [500, 200],
			charges: 1,
			key: 'completed',
		});
	});

	// (N6) A second Reserve on a business key (Custom Value: order id) after the first, the step and Settle beside it on
	// the second's New; its Duplicate output → Respond 200 (duplicate). Two events for one order (a charge.succeeded and
	// a payment_intent.succeeded, say): A's charge fails once; B arrives before A's retry; then A's retry.
	it("node path: Reserve (event) → Reserve (Custom: order id) → Charge, Settle beside; A failing once, B (same order) before A's retry: one charge for the order, both events settled", async () => {
		useNodePath('wf-rt27-two-reserves');
		const orderReserve = packageNode(
			'Reserve Order',
			'idempotencyReserve',
			{
				store: 'embedded',
				keySource: 'custom',
				customKey: '={{ "order:" + $json.body.order }}',
				mode: 'lease',
				leaseSeconds: 300,
				options: {},
			} as never,
			{ typeVersion: 3, position: [560, 0], onError: 'continueRegularOutput' },
		);
		const build = () =>
			nodeTemplate(
				[orderReserve, httpCall('Charge', 'charge', {}, '={{ JSON.stringify({ id: $json.body.order }) }}'), settle(240)],
				['Reserve Order'],
				{
					'Reserve Order': {
						main: [
							link('Charge', 'Settle'),
							link('Respond 200 (duplicate)'),
							link('Respond 409 (in progress)'),
							link('Respond 503 (not reserved)'),
						],
					},
					...settleWired,
				},
			);
		failNext('charge:ord_1');
		const a1 = await provideNodePath({ id: 'tr_a', order: 'ord_1' }, build, 1);
		const b = await provideNodePath({ id: 'tr_b', order: 'ord_1' }, build);
		const a2 = await provideNodePath({ id: 'tr_a', order: 'ord_1' }, build);
		expect({
			refusal: refusalOf(a1.runs[0]),
			answers: [a1.answers, b.answers, a2.answers],
			charges: effectsAt('charge', 'ord_1'),
			keys: [await nodeKey('evt:tr_a'), await nodeKey('evt:tr_b'), await nodeKey('order:ord_1')],
		}).toEqual({
			refusal: '[]',
			answers: [[500], [200], [200]],
			charges: 1,
			keys: ['completed', 'completed', 'completed'],
		});
	});

	// (N7) The template's step at Retry On Fail (3 tries, 10 ms apart), n8n's default On Error; the API failing three
	// times (every try of the first delivery), then answering.
	it('node path: Charge at Retry On Fail (3 tries) failing on all 3 tries of the first delivery: 500, the retry charges once, completed', async () => {
		useNodePath('wf-rt27-retry');
		const build = () =>
			nodeTemplate(
				[httpCall('Charge', 'charge', { retryOnFail: true, maxTries: 3, waitBetweenTries: 10 }, CHARGE_BODY), settle(240)],
				['Charge', 'Settle'],
				settleWired,
			);
		failNext('charge:rt_a', 3);
		const { answers, runs } = await provideNodePath({ id: 'rt_a' }, build);
		expect({ refusal: refusalOf(runs[0]), answers, charges: effectsAt('charge', 'rt_a'), key: await nodeKey('evt:rt_a') }).toEqual({
			refusal: '[]',
			answers: [500, 200],
			charges: 1,
			key: 'completed',
		});
	});
});
