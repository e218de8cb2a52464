import { type IConnections, type INode } from 'n8n-workflow';

import { WebhookSignatureVerify } from '../../nodes/WebhookSignatureVerify/WebhookSignatureVerify.node';
import { withCodeRunner } from '../support/codeTaskRunner';
import { describeWithN8n } from '../support/n8nBaseNodes';
import { PACKAGE } from '../support/n8nEngine';
import { link } from '../support/settleWorkflows';
import { baseNode as node, events, SPLIT_OUT_EVENTS, type Step, triggerRedTeam } from '../support/triggerRedTeam';

/*
 * Thirtieth red-team pass, on the last changes: (1) continuedFailureTest (Complete refuses an item with an `error`
 * only behind a non-package node at Continue): a node at Continue before Reserve, a sub-workflow whose own node
 * continues, legacy continueOnFail, an error item through Edit Fields, Execute Workflow at Continue; (2) pairingIsKnown
 * (the Key From: Item fallback skipped only behind a Code node / Execute Once): Sort and Limit, which return their input
 * items with the pairedItem those items already had; (3) assertReadExactly (U+FFFD keys refused when the bytes are not
 * UTF-8): a form-urlencoded body whose id is percent-encoded non-UTF-8. n8n 2.41.1's request path, engine and nodes; the
 * embedded store; the effect is n8n's HTTP Request calling a local API that counts what it committed per event. The
 * provider re-delivers the same signed bytes until answered 2xx. A row marked failing breaks a promise.
 */

/** The payment API: it commits a payment per call and answers `replies[id]`. */
const payments = new Map<string, number>();
const replies = new Map<string, unknown>();

describeWithN8n('red team 30: continued failures before Reserve / in sub-workflows, Sort+Limit pairing, percent-encoded keys', () => {
	const { effectsAt, failNext, httpCall, nodePath, provide, statuses, useTrigger, sendAs } = triggerRedTeam({
		tag: 'rt30',
		nodeLeaseSeconds: 1,
		providerPauseMs: 1200,
		engine: (engine) => withCodeRunner(engine as never),
		route: (route, _body, id) => {
			if (route !== 'pay') return undefined;
			payments.set(id, (payments.get(id) ?? 0) + 1);
			return replies.get(id) ?? { ok: true };
		},
		baseNodeFiles: {
			'n8n-nodes-base.webhook': 'Webhook/Webhook.node.js',
			'n8n-nodes-base.splitOut': 'Transform/SplitOut/SplitOut.node.js',
			'n8n-nodes-base.code': 'Code/Code.node.js',
			'n8n-nodes-base.set': 'Set/Set.node.js',
			'n8n-nodes-base.sort': 'Transform/Sort/Sort.node.js',
			'n8n-nodes-base.limit': 'Transform/Limit/Limit.node.js',
			'n8n-nodes-base.executeWorkflowTrigger': 'ExecuteWorkflow/ExecuteWorkflowTrigger/ExecuteWorkflowTrigger.node.js',
		},
		nodeTypes: { [`${PACKAGE}.webhookSignatureVerify`]: new WebhookSignatureVerify() },
	});

	/* The node path: n8n's Webhook (Raw Body) → Verify → [before] → Reserve (lease 1 s) → the step → Complete (Key From: Item) */

	const { completeNode, nodeKey, nodeTemplate, provideNodePath, reserveNode, useNodePath } = nodePath;
	const splitOut = SPLIT_OUT_EVENTS;

	const charge = (extra: Partial<INode> = {}) => httpCall('Charge', 'charge', extra, '={{ JSON.stringify({ id: $json.body.id }) }}');

	/* (1) continuedFailureTest ------------------------------------------------------------------------------------ */

	const payStep = (): Step => ({
		nodes: [httpCall('Pay', 'pay', {}, '={{ JSON.stringify({ id: $json.body.id }) }}'), completeNode()],
		connections: { Pay: { main: [link('Mark Complete')] }, 'Mark Complete': { main: [link('Respond 200'), []] } },
		heads: ['Pay'],
	});
	const normalizeBefore = (extra: Partial<INode>) => ({
		nodes: [
			node(
				'Normalize',
				'set',
				3.4,
				{
					mode: 'manual',
					assignments: { assignments: [{ id: 's', name: 'source', value: 'stripe', type: 'string' }] },
					includeOtherFields: true,
					options: {},
				},
				extra,
			),
		],
		head: 'Normalize',
		tail: 'Normalize',
	});

	// An Edit Fields node BEFORE Reserve at On Error: Continue (regular output); it never fails. The business step (Pay,
	// at Stop Workflow) succeeds with `{ ok: true, id: "pay_1", error: "none" }`. Complete counts only the step's nodes
	// (after a Reserve node) as continuing past failures, so this success is completed. (Seen when it counted every node
	// before it: answers [500, 500, 500, 500], 4 payments for one event.)
	it('node path: Edit Fields at Continue (regular) BEFORE Reserve, never failing; Pay answers { ok, id, error: "none" } → Complete: paid once, completed', async () => {
		useNodePath('wf-rt30-before-reserve');
		replies.set('evt_rt30_before', { ok: true, id: 'pay_1', error: 'none' });
		const { answers } = await provideNodePath({ id: 'evt_rt30_before', amount: 100 }, () =>
			nodeTemplate(payStep(), { before: normalizeBefore({ onError: 'continueRegularOutput' }) }),
		);
		expect({ answers, payments: payments.get('evt_rt30_before') ?? 0, key: await nodeKey('evt:evt_rt30_before') }).toEqual({
			answers: [200],
			payments: 1,
			key: 'completed',
		});
	});

	// Control: the same Edit Fields at Stop Workflow before Reserve: the success is completed.
	it('node path: Edit Fields at Stop Workflow before Reserve; Pay answers { ok, id, error: "none" } → Complete: paid once, completed', async () => {
		useNodePath('wf-rt30-before-reserve-stop');
		replies.set('evt_rt30_before_stop', { ok: true, id: 'pay_1', error: 'none' });
		const { answers } = await provideNodePath({ id: 'evt_rt30_before_stop', amount: 100 }, () =>
			nodeTemplate(payStep(), { before: normalizeBefore({}) }),
		);
		expect({ answers, payments: payments.get('evt_rt30_before_stop') ?? 0, key: await nodeKey('evt:evt_rt30_before_stop') }).toEqual({
			answers: [200],
			payments: 1,
			key: 'completed',
		});
	});

	/** Reserve → `nodes` in a chain ending with Complete → Respond 200. */
	const chain = (...nodes: INode[]): Step => {
		const all = [...nodes, completeNode()];
		const connections: IConnections = {};
		for (let i = 0; i < all.length - 1; i++) connections[all[i].name] = { main: [link(all[i + 1].name)] };
		connections['Mark Complete'] = { main: [link('Respond 200'), []] };
		return { nodes: all, connections, heads: [all[0].name] };
	};

	// Legacy Continue On Fail (a workflow saved by an older n8n: `continueOnFail: true`, no onError) on Charge,
	// failing once: its error item is refused by Complete, the retry charges once.
	it('node path: Charge (legacy continueOnFail: true) failing once → Complete (Key From: Item): charged once, completed', async () => {
		useNodePath('wf-rt30-legacy');
		failNext('charge:evt_rt30_legacy');
		const { answers } = await provideNodePath({ id: 'evt_rt30_legacy' }, () => nodeTemplate(chain(charge({ continueOnFail: true }))));
		expect({ answers, charges: effectsAt('charge', 'evt_rt30_legacy'), key: await nodeKey('evt:evt_rt30_legacy') }).toEqual({
			answers: [500, 200],
			charges: 1,
			key: 'completed',
		});
	});

	// Charge at Continue (regular) failing once → Edit Fields (keeps the other fields, adds `note`) → Complete: the
	// error field travels on, Complete refuses it.
	it('node path: Charge (Continue regular) failing once → Edit Fields (include other fields) → Complete: charged once, completed', async () => {
		useNodePath('wf-rt30-editfields');
		failNext('charge:evt_rt30_set');
		const note = node('Note', 'set', 3.4, {
			mode: 'manual',
			assignments: { assignments: [{ id: 'n', name: 'note', value: 'charged', type: 'string' }] },
			includeOtherFields: true,
			options: {},
		});
		const { answers } = await provideNodePath({ id: 'evt_rt30_set' }, () =>
			nodeTemplate(chain(charge({ onError: 'continueRegularOutput' }), note)),
		);
		expect({ answers, charges: effectsAt('charge', 'evt_rt30_set'), key: await nodeKey('evt:evt_rt30_set') }).toEqual({
			answers: [500, 200],
			charges: 1,
			key: 'completed',
		});
	});

	/** A Define Below sub-workflow: Execute Workflow Trigger → Charge (with `chargeExtra`). */
	const subWorkflow = (chargeExtra: Partial<INode>) =>
		JSON.stringify({
			nodes: [node('Webhook', 'executeWorkflowTrigger', 1.1, { inputSource: 'passthrough' }), charge(chargeExtra)],
			connections: { Webhook: { main: [link('Charge')] } },
		});

	// Execute Workflow (Define Below, waits, at Stop Workflow) whose sub-workflow's Charge is at Continue (regular
	// output) and fails once: the sub-workflow returns Charge's error item. Complete counts a sub-workflow of the step as
	// a node that may pass a failure on, so it refuses that item and the retry charges once. (Seen when it looked only at
	// the parent's nodes: answered 200, 0 charges, key completed: the event lost.)
	it('node path: Execute Workflow (Stop) → sub: Charge (Continue regular) failing once → Complete (Key From: Item): charged once, completed', async () => {
		useNodePath('wf-rt30-sub-continue');
		failNext('charge:evt_rt30_sub');
		const run = node('Run Charge', 'executeWorkflow', 1.3, {
			source: 'parameter',
			workflowJson: subWorkflow({ onError: 'continueRegularOutput' }),
			options: { waitForSubWorkflow: true },
		});
		const { answers } = await provideNodePath({ id: 'evt_rt30_sub' }, () => nodeTemplate(chain(run)));
		expect({ answers, charges: effectsAt('charge', 'evt_rt30_sub'), key: await nodeKey('evt:evt_rt30_sub') }).toEqual({
			answers: [500, 200],
			charges: 1,
			key: 'completed',
		});
	});

	// Execute Workflow at Continue (regular output) whose sub-workflow's Charge (Stop) fails once: the parent's error
	// item is refused by Complete; the retry charges once.
	it('node path: Execute Workflow (Continue regular) → sub: Charge (Stop) failing once → Complete: charged once, completed', async () => {
		useNodePath('wf-rt30-sub-parent-continue');
		failNext('charge:evt_rt30_subp');
		const run = node(
			'Run Charge',
			'executeWorkflow',
			1.3,
			{ source: 'parameter', workflowJson: subWorkflow({}), options: { waitForSubWorkflow: true } },
			{ onError: 'continueRegularOutput' },
		);
		const { answers } = await provideNodePath({ id: 'evt_rt30_subp' }, () => nodeTemplate(chain(run)));
		expect({ answers, charges: effectsAt('charge', 'evt_rt30_subp'), key: await nodeKey('evt:evt_rt30_subp') }).toEqual({
			answers: [500, 200],
			charges: 1,
			key: 'completed',
		});
	});

	/* (2) pairingIsKnown: Sort and Limit ------------------------------------------------------------------------------ */

	const fieldReserve = () => reserveNode({ keySource: 'field', keyField: 'body.id', keyPrefix: 'evt:' });
	const sortByAmountDesc = () =>
		node('Largest First', 'sort', 1, { sortFieldsUi: { sortField: [{ fieldName: 'body.amount', order: 'descending' }] }, options: {} });
	const limit = () => node('Limit', 'limit', 1, { maxItems: 10 });

	// Control: Sort alone (largest first) → Charge (Continue regular) failing once for B → Complete (Key From: Item).
	it('node path: Events [A 100, B 200] → Sort (amount desc) → Charge (Continue regular) failing once for B → Complete: one charge each', async () => {
		useNodePath('wf-rt30-sort');
		failNext('charge:so_b');
		const { answers } = await provideNodePath(
			events([
				{ id: 'so_a', amount: 100 },
				{ id: 'so_b', amount: 200 },
			]),
			() =>
				nodeTemplate(chain(sortByAmountDesc(), charge({ onError: 'continueRegularOutput' })), {
					reserve: fieldReserve(),
					before: splitOut,
				}),
		);
		expect({
			answers,
			charges: [effectsAt('charge', 'so_a'), effectsAt('charge', 'so_b')],
			keys: [await nodeKey('evt:so_a'), await nodeKey('evt:so_b')],
		}).toEqual({ answers: [500, 200], charges: [1, 1], keys: ['completed', 'completed'] });
	});

	// Sort (largest first) then Limit (10): both return their input items as they are, with the pairedItem those items
	// already carried. Held: one charge each, both keys completed.
	it('node path: Events [A 100, B 200] → Sort (amount desc) → Limit (10) → Charge (Continue regular) failing once for B → Complete: one charge each', async () => {
		useNodePath('wf-rt30-sort-limit');
		failNext('charge:sl_b');
		const { answers } = await provideNodePath(
			events([
				{ id: 'sl_a', amount: 100 },
				{ id: 'sl_b', amount: 200 },
			]),
			() =>
				nodeTemplate(chain(sortByAmountDesc(), limit(), charge({ onError: 'continueRegularOutput' })), {
					reserve: fieldReserve(),
					before: splitOut,
				}),
		);
		expect({
			answers,
			charges: [effectsAt('charge', 'sl_a'), effectsAt('charge', 'sl_b')],
			keys: [await nodeKey('evt:sl_a'), await nodeKey('evt:sl_b')],
		}).toEqual({ answers: [500, 200], charges: [1, 1], keys: ['completed', 'completed'] });
	});

	/* (3) A percent-encoded id that is not UTF-8 --------------------------------------------------------------------- */

	// Two different events posted as application/x-www-form-urlencoded, `id=%FF&amount=100` then `id=%FE&amount=200`
	// (each validly signed). The bytes are ASCII, but n8n's parseBody (querystring.parse) decodes both percent-encoded
	// ids that are not UTF-8 to U+FFFD: one key for both. Such a key is refused (503 key_refused, the sender retries,
	// visible), never merged. (Seen when only the bytes were checked for UTF-8: the second was answered as a copy of
	// the first and never ran.)
	it('trigger: two form-urlencoded events id=%FF and id=%FE (different amounts): refused (503 key_refused), never merged', async () => {
		useTrigger('wf-rt30-form-ffff');
		const step = {
			nodes: [httpCall('Charge', 'charge', {}, '={{ JSON.stringify({ id: "form_" + $json.body.amount }) }}')],
			heads: ['Charge'],
		};
		sendAs({ contentType: 'application/x-www-form-urlencoded', bytes: () => Buffer.from('id=%FF&amount=100') });
		const first = await provide({}, step);
		sendAs({ contentType: 'application/x-www-form-urlencoded', bytes: () => Buffer.from('id=%FE&amount=200') });
		const second = await provide({}, step);
		expect({
			answers: [first.answers, second.answers],
			runs: [first.runs.length, second.runs.length],
			charges: [effectsAt('charge', 'form_100'), effectsAt('charge', 'form_200')],
			sharedKey: await statuses(['\uFFFD']),
		}).toEqual({
			answers: [
				[503, 503, 503, 503],
				[503, 503, 503, 503],
			],
			runs: [0, 0],
			charges: [0, 0],
			sharedKey: [null],
		});
	});
});
