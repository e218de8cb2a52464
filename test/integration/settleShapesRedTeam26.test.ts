import { type INode, type IRun } from 'n8n-workflow';

import { WebhookSignatureVerify } from '../../nodes/WebhookSignatureVerify/WebhookSignatureVerify.node';
import { describeWithN8n } from '../support/n8nBaseNodes';
import { PACKAGE } from '../support/n8nEngine';
import { link, toInput } from '../support/settleWorkflows';
import {
	baseNode as node,
	CHARGE_BODY,
	EVENTS,
	events,
	mergeByEventId,
	SPLIT_OUT_EVENTS,
	triggerRedTeam,
	type Before,
	type Step,
} from '../support/triggerRedTeam';

/*
 * Twenty-sixth red-team pass: nodes the package counts as unable to fail on the events' data (nodeKinds.ts
 * NEVER_FAILING_TYPES: Limit, Wait, Merge, …) placed after the effect with several events in one run, and Merge / Respond
 * to Webhook placements, behind the Idempotent Webhook trigger (Events Path body.events) and on the node template path
 * (n8n-nodes-base's Webhook 2.1 → Webhook Signature Verify → Split Out of the batch → Idempotency Reserve, Key Source
 * Field → the step, Settle beside it, answered through Respond stand-ins). n8n 2.41.1's request path (raw body reader,
 * parseBody, webhook() in n8n-core's WebhookContext), its publish check (HookContext), its engine (WorkflowExecute), the
 * embedded store in the file's n8n folder. The effect is n8n's HTTP Request calling a local test API that counts what
 * it committed per event. The provider re-delivers the same signed request until it is answered 2xx (at most 4
 * times). A row marked failing breaks a promise: its comment says what happens and how to reproduce it.
 */

const NOTIFY_BODY = '={{ JSON.stringify({ id: $json.id }) }}';

describeWithN8n('red team 26: "cannot fail" nodes after the effect, Merge and Respond placements, several events', () => {
	const { effectsAt, failNext, httpCall, keyStore, nodePath, provide, refusedAtPublish, statuses, useTrigger } = triggerRedTeam({
		tag: 'rt26',
		echoBody: true,
		route: (route, body, id) =>
			route === 'lookup' ? { customer: body.customer, tier: body.customer === 'cus_gold' ? 'gold' : 'basic', lookedUpFor: id } : undefined,
		baseNodeFiles: {
			'n8n-nodes-base.webhook': 'Webhook/Webhook.node.js',
			'n8n-nodes-base.set': 'Set/Set.node.js',
			'n8n-nodes-base.sort': 'Transform/Sort/Sort.node.js',
			'n8n-nodes-base.splitOut': 'Transform/SplitOut/SplitOut.node.js',
			'n8n-nodes-base.aggregate': 'Transform/Aggregate/Aggregate.node.js',
			'n8n-nodes-base.limit': 'Transform/Limit/Limit.node.js',
			'n8n-nodes-base.respondToWebhook': 'RespondToWebhook/RespondToWebhook.node.js',
		},
		nodeTypes: { [`${PACKAGE}.webhookSignatureVerify`]: new WebhookSignatureVerify() },
	});

	/* The node template path: n8n's Webhook → Verify → Split Out → Reserve (Field) → the step, Settle beside it ---------- */

	const { useNodePath } = nodePath;
	/** Split Out of the batch before Reserve, after `before` when a row puts nodes between Verify and it. */
	const splitOutAfter = (before: Before | undefined): Before =>
		before
			? {
					nodes: [...before.nodes, ...SPLIT_OUT_EVENTS.nodes],
					head: before.head,
					tail: SPLIT_OUT_EVENTS.tail,
					connections: { ...before.connections, [before.tail]: { main: [link(SPLIT_OUT_EVENTS.head)] } },
				}
			: SPLIT_OUT_EVENTS;
	const fieldReserve = nodePath.reserveNode({ keySource: 'field', keyField: 'body.id', keyPrefix: 'evt:' });

	/** The provider on the node path: posts `body` until answered 2xx (at most `attempts` times); each answer and run. */
	const provideNodePath = async (body: unknown, step: Step, attempts = 4, before?: Before) =>
		await nodePath.provideNodePath(
			body,
			() => nodePath.nodeTemplate(step, { reserve: fieldReserve, before: splitOutAfter(before), settle: true }),
			attempts,
		);

	const nodeKeyStatuses = async (ids: string[]) =>
		await Promise.all(ids.map(async (id) => (await keyStore().getKeys([`evt:${id}`])).get(`evt:${id}`)?.status ?? null));

	/** Why Reserve refused the run (its Not Reserved items, or the run's error), '' when it did not. */
	const reserveRefusal = (run: IRun | undefined) =>
		JSON.stringify(run?.data.resultData.runData.Reserve?.[0]?.data?.main[3]?.map((item) => item.json) ?? []) +
		(run?.data.resultData.error?.message ?? '');

	/* (1) Node path: Wait "At Specified Time" after the charge, its date read from the first event only ----------------- */

	const waitAfterCharge = (): Step => ({
		nodes: [
			httpCall(
				'Charge',
				'charge',
				{ onError: 'continueErrorOutput' },
				'={{ JSON.stringify({ id: $json.body.id, ship_at: $json.body.ship_at }) }}',
			),
			node('Until Ship Date', 'wait', 1.1, { resume: 'specificTime', dateTime: '={{ $json.ship_at }}' }, { webhookId: 'rt26-wait' }),
			httpCall('Ship', 'ship', { onError: 'continueErrorOutput' }, NOTIFY_BODY),
		],
		connections: {
			Charge: { main: [link('Until Ship Date'), []] },
			'Until Ship Date': { main: [link('Ship')] },
			Ship: { main: [[], []] },
		},
		heads: ['Charge'],
	});

	it('node path: one event [B, ship date passed] → Charge → Wait until {{ $json.ship_at }} → Ship: accepted, charged and shipped once', async () => {
		useNodePath('wf-rt26-wait-alone');
		const { answers, runs } = await provideNodePath(events([{ id: 'wa_b', ship_at: '2020-01-01T00:00:00Z' }]), waitAfterCharge());
		expect({
			refusal: reserveRefusal(runs[0]),
			answers,
			charges: effectsAt('charge', 'wa_b'),
			ships: effectsAt('ship', 'wa_b'),
			keys: await nodeKeyStatuses(['wa_b']),
		}).toEqual({ refusal: '[]', answers: [200], charges: 1, ships: 1, keys: ['completed'] });
	});

	// The template path with a batch split before Reserve (Key Source Field body.id): Charge (HTTP Request, Continue
	// (using error output)) → Wait 1.1 "At Specified Time", Date and Time `{{ $json.ship_at }}` (n8n's default On Error,
	// Stop Workflow) → Ship (error output). n8n-nodes-base's Wait reads the date of item 0 only and throws "Cannot put
	// execution to wait because `dateTime` parameter is not a valid date" when it is not a date: event A's "asap"
	// would fail the Wait for every event of the run, after every charge (seen while Wait counted as a node that
	// cannot fail: answers [500, 500, 500, 500], charges [A 4, B 4]). A Wait set by an expression after an effect,
	// given several events, is refused before anything is reserved, naming it.
	it('node path: Events [A ship_at "asap", B ship date passed] → Charge (error output) → Wait until {{ $json.ship_at }} → Ship: refused, nothing charged', async () => {
		useNodePath('wf-rt26-wait-expr');
		const { answers, runs } = await provideNodePath(
			events([
				{ id: 'we_a', ship_at: 'asap' },
				{ id: 'we_b', ship_at: '2020-01-01T00:00:00Z' },
			]),
			waitAfterCharge(),
			2,
		);
		expect({
			refusedNamingWait: /Until Ship Date/.test(reserveRefusal(runs[0])),
			answers,
			charges: [effectsAt('charge', 'we_a'), effectsAt('charge', 'we_b')],
			keys: await nodeKeyStatuses(['we_a', 'we_b']),
		}).toEqual({ refusedNamingWait: true, answers: [503, 503], charges: [0, 0], keys: [null, null] });
	});

	// The same class with Resume "After Time Interval", Wait Amount `{{ $json.delay_seconds }}` (seconds): n8n reads the
	// amount of item 0 and throws "Invalid wait amount" for a negative one. The control: B alone (delay 0) is charged and
	// shipped once.
	const delayAfterCharge = (): Step => ({
		nodes: [
			httpCall(
				'Charge',
				'charge',
				{ onError: 'continueErrorOutput' },
				'={{ JSON.stringify({ id: $json.body.id, delay_seconds: $json.body.delay_seconds }) }}',
			),
			node(
				'Delay',
				'wait',
				1.1,
				{ resume: 'timeInterval', amount: '={{ $json.delay_seconds }}', unit: 'seconds' },
				{ webhookId: 'rt26-delay' },
			),
			httpCall('Ship', 'ship', { onError: 'continueErrorOutput' }, NOTIFY_BODY),
		],
		connections: { Charge: { main: [link('Delay'), []] }, Delay: { main: [link('Ship')] }, Ship: { main: [[], []] } },
		heads: ['Charge'],
	});

	it('node path: one event [B, delay 0] → Charge → Wait {{ $json.delay_seconds }} s → Ship: accepted, charged and shipped once', async () => {
		useNodePath('wf-rt26-delay-alone');
		const { answers } = await provideNodePath(events([{ id: 'da_b', delay_seconds: 0 }]), delayAfterCharge());
		expect({
			answers,
			charges: effectsAt('charge', 'da_b'),
			ships: effectsAt('ship', 'da_b'),
			keys: await nodeKeyStatuses(['da_b']),
		}).toEqual({
			answers: [200],
			charges: 1,
			ships: 1,
			keys: ['completed'],
		});
	});

	// The same with Resume "After Time Interval", Wait Amount `{{ $json.delay_seconds }}`: n8n reads the amount of item
	// 0 and throws "Invalid wait amount" for a negative one, for every event. Refused before anything is reserved.
	it('node path: Events [A delay -1, B delay 0] → Charge (error output) → Wait {{ $json.delay_seconds }} s → Ship: refused, nothing charged', async () => {
		useNodePath('wf-rt26-delay-expr');
		const { answers, runs } = await provideNodePath(
			events([
				{ id: 'de_a', delay_seconds: -1 },
				{ id: 'de_b', delay_seconds: 0 },
			]),
			delayAfterCharge(),
			2,
		);
		expect({
			refusedNamingWait: /Delay/.test(reserveRefusal(runs[0])),
			answers,
			charges: [effectsAt('charge', 'de_a'), effectsAt('charge', 'de_b')],
		}).toEqual({ refusedNamingWait: true, answers: [503, 503], charges: [0, 0] });
	});

	/* (2) Trigger: If before the charge, a charge on each branch, Merge (Append) joining them, then Notify ------------- */

	const ifChargesMerge = (): Step => ({
		nodes: [
			node(
				'Is VIP',
				'if',
				2.2,
				{
					conditions: {
						options: { caseSensitive: true, leftValue: '', typeValidation: 'strict', version: 2 },
						conditions: [
							{ id: 'vip', leftValue: '={{ $json.body.tier }}', rightValue: 'vip', operator: { type: 'string', operation: 'equals' } },
						],
						combinator: 'and',
					},
					options: {},
				},
				{},
				0,
			),
			httpCall('Charge VIP', 'charge', { onError: 'continueErrorOutput' }, CHARGE_BODY, {}, 0),
			httpCall('Charge Basic', 'charge', { onError: 'continueErrorOutput' }, CHARGE_BODY, {}, 200),
			node('Join', 'merge', 3.2, { numberInputs: 2 }),
			httpCall('Notify', 'notify', { onError: 'continueErrorOutput' }, NOTIFY_BODY),
		],
		connections: {
			'Is VIP': { main: [link('Charge VIP'), link('Charge Basic')] },
			'Charge VIP': { main: [link('Join'), []] },
			'Charge Basic': { main: [toInput('Join', 1), []] },
			Join: { main: [link('Notify')] },
			Notify: { main: [[], []] },
		},
		heads: ['Is VIP'],
	});

	it('trigger: Events [A vip, B basic] → If → Charge VIP / Charge Basic (error outputs) → Merge (Append) → Notify, the VIP charge failing once for A: one charge and one notice each', async () => {
		useTrigger('wf-rt26-if-merge', EVENTS);
		const step = ifChargesMerge();
		const refusal = await refusedAtPublish(step);
		failNext('charge:im_a');
		const { answers } = await provide(
			events([
				{ id: 'im_a', tier: 'vip' },
				{ id: 'im_b', tier: 'basic' },
			]),
			step,
		);
		expect({
			refusal,
			answers,
			charges: [effectsAt('charge', 'im_a'), effectsAt('charge', 'im_b')],
			notices: [effectsAt('notify', 'im_a'), effectsAt('notify', 'im_b')],
			keys: await statuses(['im_a', 'im_b']),
		}).toEqual({ refusal: false, answers: [500, 200], charges: [1, 1], notices: [1, 1], keys: ['completed', 'completed'] });
	});

	// One branch gets no event (both basic): Merge (Append) runs with its first input empty, after the rest (v1 order).
	// The basic charge failing once for B: B's key failed alone, A not charged again.
	it('trigger: Events [A basic, B basic] → If (VIP branch empty) → Merge (Append) → Notify, the charge failing once for B: one charge and one notice each', async () => {
		useTrigger('wf-rt26-if-merge-empty', EVENTS);
		const step = ifChargesMerge();
		const refusal = await refusedAtPublish(step);
		failNext('charge:ie_b');
		const { answers } = await provide(
			events([
				{ id: 'ie_a', tier: 'basic' },
				{ id: 'ie_b', tier: 'basic' },
			]),
			step,
		);
		expect({
			refusal,
			answers,
			charges: [effectsAt('charge', 'ie_a'), effectsAt('charge', 'ie_b')],
			notices: [effectsAt('notify', 'ie_a'), effectsAt('notify', 'ie_b')],
			keys: await statuses(['ie_a', 'ie_b']),
		}).toEqual({ refusal: false, answers: [500, 200], charges: [1, 1], notices: [1, 1], keys: ['completed', 'completed'] });
	});

	/* (3) Node path: Merge re-joining each charge to its event, then Notify ------------------------------------------ */

	// Reserve's New → Charge (error output) → Merge 3.2 input 1; Reserve's New → Merge input 2; Combine by Matching Fields
	// (id = body.id, Keep Matches, Both Inputs) → Notify (error output). The charge failing once for B: B's key failed
	// alone, the retry charges B once, A is answered as a copy.
	it('node path: Events [A, B] → Charge (error output) → Merge by fields with the reserved events → Notify, the charge failing once for B: one charge and one notice each', async () => {
		useNodePath('wf-rt26-node-merge');
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_BODY, {}, 0),
				mergeByEventId('Rejoin Event'),
				httpCall('Notify', 'notify', { onError: 'continueErrorOutput' }, '={{ JSON.stringify({ id: $json.body.id }) }}'),
			],
			connections: {
				Charge: { main: [link('Rejoin Event'), []] },
				'Rejoin Event': { main: [link('Notify')] },
				Notify: { main: [[], []] },
			},
			// Reserve's New feeds the Merge's second input too.
			heads: ['Charge', 'Rejoin Event#1'],
		};
		failNext('charge:nm_b');
		const { answers, runs } = await provideNodePath(events([{ id: 'nm_a' }, { id: 'nm_b' }]), step);
		expect({
			refusal: reserveRefusal(runs[0]),
			answers,
			charges: [effectsAt('charge', 'nm_a'), effectsAt('charge', 'nm_b')],
			notices: [effectsAt('notify', 'nm_a'), effectsAt('notify', 'nm_b')],
			keys: await nodeKeyStatuses(['nm_a', 'nm_b']),
		}).toEqual({ refusal: '[]', answers: [500, 200], charges: [1, 1], notices: [1, 1], keys: ['completed', 'completed'] });
	});

	/* (4) Node path: Respond to Webhook placements ------------------------------------------------------------------- */

	const respondNode = (name: string, y: number): INode =>
		node(
			name,
			'respondToWebhook',
			1.5,
			{ respondWith: 'json', responseBody: '={{ { received: true } }}', options: { responseCode: 200 } },
			{},
			y,
		);

	// A Respond to Webhook node on one branch of the step (If "ping" → Respond 200; else → Charge): refused by Reserve
	// before anything is reserved (503), nothing charged.
	it('node path: Respond to Webhook on an If branch inside the step (ping events answered at once): 503, nothing reserved or charged', async () => {
		useNodePath('wf-rt26-respond-branch');
		const step: Step = {
			nodes: [
				node(
					'Is Ping',
					'if',
					2.2,
					{
						conditions: {
							options: { caseSensitive: true, leftValue: '', typeValidation: 'strict', version: 2 },
							conditions: [
								{ id: 'ping', leftValue: '={{ $json.body.type }}', rightValue: 'ping', operator: { type: 'string', operation: 'equals' } },
							],
							combinator: 'and',
						},
						options: {},
					},
					{},
					0,
				),
				respondNode('Answer Ping', 0),
				httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_BODY, {}, 100),
			],
			connections: { 'Is Ping': { main: [link('Answer Ping'), link('Charge')] }, Charge: { main: [[], []] } },
			heads: ['Is Ping'],
		};
		const { answers, runs } = await provideNodePath(
			events([
				{ id: 'rb_a', type: 'ping' },
				{ id: 'rb_b', type: 'charge' },
			]),
			step,
			2,
		);
		expect({
			refusedNamingRespond: /Answer Ping/.test(reserveRefusal(runs[0])),
			answers,
			charges: [effectsAt('charge', 'rb_a'), effectsAt('charge', 'rb_b')],
			keys: await nodeKeyStatuses(['rb_a', 'rb_b']),
		}).toEqual({ refusedNamingRespond: true, answers: [503, 503], charges: [0, 0], keys: [null, null] });
	});

	// A Respond to Webhook node between Verify and Split Out ("acknowledge at once, then process"): not inside the
	// step, so Reserve accepts it. The provider gets 200 before the step runs; the charge failing once for B fails B's
	// key (kept for a replay) but the provider never retries: B is charged 0 times until someone replays it. The same
	// as the documented "Respond: Immediately" row (docs/architecture.md), reached with a Respond node instead.
	it('node path: Respond to Webhook before Split Out (ack first), the charge failing once for B: answered 200 once, A charged, B failed and not retried (as Respond: Immediately)', async () => {
		useNodePath('wf-rt26-respond-first');
		const step: Step = {
			nodes: [httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_BODY)],
			connections: { Charge: { main: [[], []] } },
			heads: ['Charge'],
		};
		failNext('charge:ra_b');
		const { answers, runs } = await provideNodePath(events([{ id: 'ra_a' }, { id: 'ra_b' }]), step, 4, {
			nodes: [respondNode('Ack', -200)],
			connections: {},
			head: 'Ack',
			tail: 'Ack',
		});
		expect({
			refusal: reserveRefusal(runs[0]),
			answers,
			charges: [effectsAt('charge', 'ra_a'), effectsAt('charge', 'ra_b')],
			keys: await nodeKeyStatuses(['ra_a', 'ra_b']),
		}).toEqual({ refusal: '[]', answers: [200], charges: [1, 0], keys: ['completed', 'failed'] });
	});
});
