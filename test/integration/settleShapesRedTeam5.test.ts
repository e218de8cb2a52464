import type { INode, INodeParameters } from 'n8n-workflow';

import { baseNodesInstalled, effectsFor, loadBaseNodeFiles } from '../support/n8nBaseNodes';
import { addNodeTypes } from '../support/n8nEngine';
import { describeWithN8n, shapeHarness } from '../support/settleShapes';
import {
	baseNode,
	eventBodies,
	executeInline,
	inlineSubWorkflow,
	link,
	lookup,
	once,
	routeSwitch,
	setField,
} from '../support/settleWorkflows';

/*
 * Fifth red-team pass on the settlement rules (nodes/shared/settlement/), in n8n-core's own engine with
 * n8n-nodes-base's nodes. The harness is test/support/settleShapes.ts; the provider redelivers the whole
 * delivery until it gets a 2xx. A row marked failing breaks a promise (an effect doubled, or an event
 * lost) where n8n's record gives no signal: docs/templates.md lists it as not guaranteed.
 */

const { workflow, deliveries, statuses, provider } = shapeHarness('shapesrt5', {
	baseNodes: [
		'n8n-nodes-base.switch',
		'n8n-nodes-base.aggregate',
		'n8n-nodes-base.splitOut',
		'n8n-nodes-base.stopAndError',
		'n8n-nodes-base.set',
	],
	subWorkflows: true,
});
const { deliver } = deliveries;

beforeAll(() => {
	if (!baseNodesInstalled()) return;
	addNodeTypes(
		loadBaseNodeFiles({
			'n8n-nodes-base.filter': 'Filter/Filter.node.js',
			'n8n-nodes-base.respondToWebhook': 'RespondToWebhook/RespondToWebhook.node.js',
		}),
	);
});

/** n8n's Respond to Webhook (version 1: no check for n8n's own Webhook node, which the harness stands in for). */
const respond = (name: string, y: number, extra: Partial<INode> = {}) =>
	baseNode(name, 'respondToWebhook', 1, { respondWith: 'noData', options: { responseCode: 200 } }, y, { onError: undefined, ...extra });

/* Respond to Webhook inside the step ------------------------------------------------------------------ */

describeWithN8n('a Respond to Webhook node inside the business step', () => {
	it('Settle beside the step, Respond to Webhook behind an If in the step: refused before anything is reserved', async () => {
		const id = 'rsb_a';
		const data = workflow('wfr5-respond-if', {
			nodes: [
				baseNode(
					'Check',
					'if',
					2,
					{
						conditions: {
							options: { caseSensitive: true, leftValue: '', typeValidation: 'loose' },
							conditions: [
								{
									id: 'c1',
									leftValue: '={{ $json.body.fast }}',
									rightValue: '',
									operator: { type: 'boolean', operation: 'true', singleValue: true },
								},
							],
							combinator: 'and',
						},
						looseTypeValidation: true,
					},
					0,
				),
				respond('Ack', 0),
				once('Charge', '', 0),
			],
			connections: { Check: { main: [link('Ack'), link('Charge')] }, Ack: { main: [link('Charge')] } },
			heads: ['Check'],
		});
		const refused = await deliver(data, [{ id, fast: true }]);
		expect({ answer: refused.answer, effects: effectsFor(id), states: await statuses([id]) }).toEqual({
			answer: 503,
			effects: 0,
			states: [undefined],
		});
		expect(JSON.stringify(refused.run.data.resultData.runData)).toContain('\\"Ack\\" answers the webhook from inside the business step');
	});

	it('Settle beside the step, Respond to Webhook inside Loop Over Items (batch 1) after the charge: refused before anything is reserved', async () => {
		const ids = ['rsl_a', 'rsl_b'];
		const data = workflow('wfr5-respond-loop', {
			nodes: [baseNode('Loop', 'splitInBatches', 3, { batchSize: 1, options: {} }, 0), once('Charge', '', 100), respond('Ack', 100)],
			connections: { Loop: { main: [[], link('Charge')] }, Charge: { main: [link('Ack')] }, Ack: { main: [link('Loop')] } },
			heads: ['Loop'],
		});
		const refused = await deliver(data, eventBodies(ids));
		expect({ answer: refused.answer, effects: ids.map(effectsFor), states: await statuses(ids) }).toEqual({
			answer: 503,
			effects: [0, 0],
			states: [undefined, undefined],
		});
		expect(JSON.stringify(refused.run.data.resultData.runData)).toContain('\\"Ack\\" answers the webhook from inside the business step');
	});

	// n8n would send the Respond node's 200 before the charge; the charge failing, the key failed, the provider would
	// already have its 2xx and never retry: lost. Refused with Settle chained after the step as beside it
	// (wiring.ts checkOutcomeVisible).
	it('Settle chained after the step, Respond to Webhook (200) before a charge: refused before anything is reserved', async () => {
		const id = 'rsa_a';
		const data = workflow('wfr5-respond-after', {
			nodes: [respond('Ack', 0), once('Charge', id, 0)],
			connections: { Ack: { main: [link('Charge')] } },
			heads: ['Ack'],
			settleAfter: 'Charge',
		});
		const refused = await deliver(data, [{ id }]);
		expect({ answer: refused.answer, effects: effectsFor(id), states: await statuses([id]) }).toEqual({
			answer: 503,
			effects: 0,
			states: [undefined],
		});
		expect(JSON.stringify(refused.run.data.resultData.runData)).toContain('\\"Ack\\" answers the webhook from inside the business step');
	});
});

/* Stop and Error after an effect, several events ---------------------------------------------------------- */

describeWithN8n('Stop and Error after an effect, several events in one run', () => {
	// When Stop and Error ends the run for one event, n8n runs nothing more for the others: the other event's remaining
	// work (Ship) never runs, its key fails, and the retry would charge it again. Refused where Stop and Error follows
	// a node that may have an effect and gets several events (wiring.ts checkStepTakesEventsApart, stopAfterEffect).
	const stopAfterCharge = (loop: boolean) =>
		workflow(`wfr5-stop-after-effect${loop ? '-loop' : ''}`, {
			nodes: [
				...(loop ? [baseNode('Loop', 'splitInBatches', 3, { batchSize: 1, options: {} }, 0)] : []),
				once('Charge', '', 0, { onError: 'continueErrorOutput' }),
				lookup('Lookup', loop ? 'sel_b' : 'se_b', 0, { onError: 'continueErrorOutput' }),
				lookup('Ship', '', 100, { onError: 'continueErrorOutput' }),
				baseNode('Abort', 'stopAndError', 1, { errorType: 'errorMessage', errorMessage: 'lookup failed' }, -100, {
					onError: 'stopWorkflow',
				}),
			],
			connections: {
				...(loop ? { Loop: { main: [[], link('Charge')] }, Ship: { main: [link('Loop')] } } : {}),
				Charge: { main: [link('Lookup')] },
				Lookup: { main: [link('Ship'), link('Abort')] },
			},
			heads: [loop ? 'Loop' : 'Charge'],
		});

	it('Charge (Continue) → Lookup (Continue, error output → Stop and Error, above) / success → Ship, two events: refused before anything is reserved', async () => {
		const ids = ['se_a', 'se_b'];
		const refused = await deliver(stopAfterCharge(false), eventBodies(ids));
		expect({ answer: refused.answer, effects: ids.map(effectsFor), states: await statuses(ids) }).toEqual({
			answer: 503,
			effects: [0, 0],
			states: [undefined, undefined],
		});
		expect(JSON.stringify(refused.run.data.resultData.runData)).toContain('\\"Abort\\" ends the execution for');
	});

	// One event per run: A's run ended before B's began, so A is charged once; B's own step stopped after its charge,
	// and its retry charges it again, as for any step that fails after its effect (docs/templates.md).
	it('the same inside Loop Over Items (batch size 1): accepted; the lookup failing once for B, A charged once', async () => {
		const ids = ['sel_a', 'sel_b'];
		const { answers, lost } = await provider(stopAfterCharge(true), eventBodies(ids));
		expect({ lost, effects: ids.map(effectsFor), answers: answers[answers.length - 1] }).toEqual({
			lost: [],
			effects: [1, 2],
			answers: 200,
		});
	});
});

/* Routing nodes at Continue whose condition fails ---------------------------------------------------------- */

const strictAmountCondition = {
	options: { caseSensitive: true, leftValue: '', typeValidation: 'strict', version: 2 },
	conditions: [
		{
			id: 'c1',
			leftValue: '={{ $json.body.amount }}',
			rightValue: 100,
			operator: { type: 'number', operation: 'gt' },
		},
	],
	combinator: 'and',
};

describeWithN8n('If, Filter and Switch at Continue whose evaluation fails for one event', () => {
	// At Continue n8n's Switch (V3) puts `{ json: { error } }` paired to no event on its output 0, so the failure cannot
	// be traced and every key of the run would fail (the other event refunded again on every retry); If (V2) sends an
	// item whose condition throws to its false output and Filter (V2) drops it, recording no failure (the key would be
	// completed without the charge). Refused before anything is reserved (wiring.ts failureForNoEvent,
	// conditionFailureHidden); at Stop Workflow, n8n's default, the same failure fails the key (the control below).
	it('Switch (expression, 3 outputs) at Continue, two events: refused before anything is reserved', async () => {
		const ids = ['swc_ok', 'swc_bad'];
		const data = workflow('wfr5-switch-continue', {
			nodes: [
				routeSwitch('Route', 0, 3, { onError: 'continueRegularOutput' }),
				lookup('Log', '', 0, { onError: 'continueErrorOutput' }),
				once('Refund', '', 100, { onError: 'continueErrorOutput' }),
			],
			connections: { Route: { main: [link('Log'), link('Refund')] } },
			heads: ['Route'],
		});
		const refused = await deliver(data, [
			{ id: 'swc_ok', route: 1 },
			{ id: 'swc_bad', route: 7 },
		]);
		expect({ answer: refused.answer, refunds: ids.map(effectsFor), states: await statuses(ids) }).toEqual({
			answer: 503,
			refunds: [0, 0],
			states: [undefined, undefined],
		});
		expect(JSON.stringify(refused.run.data.resultData.runData)).toContain('an error item that belongs to none of them');
	});

	it('Switch at Continue with one event per run: accepted; the event routed out of range failed, 500, no refund', async () => {
		const id = 'swo_bad';
		const data = workflow('wfr5-switch-one', {
			nodes: [
				routeSwitch('Route', 0, 3, { onError: 'continueRegularOutput' }),
				once('Refund', '', 100, { onError: 'continueErrorOutput' }),
			],
			connections: { Route: { main: [[], link('Refund')] } },
			heads: ['Route'],
		});
		const first = await deliver(data, [{ id, route: 7 }]);
		expect({ answer: first.answer, refunds: effectsFor(id), states: await statuses([id]) }).toEqual({
			answer: 500,
			refunds: 0,
			states: ['failed'],
		});
	});

	it.each([
		[
			'If (strict types) at Continue, true → charge',
			'ifc',
			(): INode => baseNode('Check', 'if', 2.2, { conditions: strictAmountCondition, looseTypeValidation: false, options: {} }, 0),
		],
		[
			'Filter (strict types) at Continue → charge',
			'flc',
			(): INode => baseNode('Check', 'filter', 2.2, { conditions: strictAmountCondition, looseTypeValidation: false, options: {} }, 0),
		],
		[
			'If (strict types) at Continue (using error output), true → charge',
			'ife',
			(): INode =>
				baseNode('Check', 'if', 2.2, { conditions: strictAmountCondition, looseTypeValidation: false, options: {} }, 0, {
					onError: 'continueErrorOutput',
				}),
		],
	] as const)('%s: refused before anything is reserved, Stop Workflow named', async (_label, tag, check) => {
		const id = `${tag}_a`;
		const data = workflow(`wfr5-${tag}`, {
			nodes: [check(), once('Charge', '', 0, { onError: 'continueErrorOutput' })],
			connections: { Check: { main: [link('Charge')] } },
			heads: ['Check'],
		});
		const refused = await deliver(data, [{ id, amount: 'abc' }]);
		expect({ answer: refused.answer, effects: effectsFor(id), states: await statuses([id]) }).toEqual({
			answer: 503,
			effects: 0,
			states: [undefined],
		});
		expect(JSON.stringify(refused.run.data.resultData.runData)).toContain('On Error to \\"Stop Workflow\\" (n8n\'s default)');
	});

	it('the same If inside a sub-workflow defined in the node: refused before anything is reserved', async () => {
		const id = 'ifsub_a';
		const inner = [baseNode('Check', 'if', 2.2, { conditions: strictAmountCondition, looseTypeValidation: false, options: {} }, 0)];
		const data = workflow('wfr5-if-sub', {
			nodes: [
				executeInline(inlineSubWorkflow(inner, {}), 'continueRegularOutput', 'once', 'Run Sub'),
				once('Charge', '', 0, { onError: 'continueErrorOutput' }),
			],
			connections: { 'Run Sub': { main: [link('Charge')] } },
			heads: ['Run Sub'],
		});
		const refused = await deliver(data, [{ id, amount: 'abc' }]);
		expect({ answer: refused.answer, effects: effectsFor(id) }).toEqual({ answer: 503, effects: 0 });
		expect(JSON.stringify(refused.run.data.resultData.runData)).toContain('Run Sub\\" → \\"Check');
	});

	it('control: the same If at Stop Workflow: the key failed, 500, no charge', async () => {
		const id = 'ifs_a';
		const data = workflow('wfr5-if-stop', {
			nodes: [
				baseNode('Check', 'if', 2.2, { conditions: strictAmountCondition, looseTypeValidation: false, options: {} }, 0, {
					onError: undefined,
				}),
				once('Charge', '', 0, { onError: 'continueErrorOutput' }),
			],
			connections: { Check: { main: [link('Charge')] } },
			heads: ['Check'],
		});
		const first = await deliver(data, [{ id, amount: 'abc' }]);
		expect({ answer: first.answer, effects: effectsFor(id), states: await statuses([id]) }).toEqual({
			answer: 500,
			effects: 0,
			states: ['failed'],
		});
	});
});

/* A join of every event (Aggregate, All Item Data) before a node that fails after the effect ------------------ */

describeWithN8n('Charge → Aggregate (All Item Data) → a node at Continue that fails once, several events', () => {
	// The Notify item is paired to every event (trace.ts): its failure would fail both keys and the retry would charge
	// both again. Refused, as the same one-call-for-all shape built with Execute Once is (wiring.ts
	// checkJoinedAfterEffect, joinedAfterEffect).
	it('Notify for the batch after the charge: refused before anything is reserved', async () => {
		const ids = ['ag_a', 'ag_b'];
		const data = workflow('wfr5-aggregate-notify', {
			nodes: [
				once('Charge', '', 0, { onError: 'continueErrorOutput' }),
				baseNode('Batch', 'aggregate', 1, { aggregate: 'aggregateAllItemData', options: {} }, 0, { onError: undefined }),
				setField('Name Batch', 'id', 'ag_batch', 0, { onError: 'continueRegularOutput' }),
				lookup('Notify', 'ag_batch', 0, { onError: 'continueErrorOutput' }),
			],
			connections: { Charge: { main: [link('Batch')] }, Batch: { main: [link('Name Batch')] }, 'Name Batch': { main: [link('Notify')] } },
			heads: ['Charge'],
		});
		const refused = await deliver(data, eventBodies(ids));
		expect({ answer: refused.answer, effects: ids.map(effectsFor), states: await statuses(ids) }).toEqual({
			answer: 503,
			effects: [0, 0],
			states: [undefined, undefined],
		});
		expect(JSON.stringify(refused.run.data.resultData.runData)).toContain('gets the one item \\"Batch\\" makes of');
	});

	it('control: the same Notify set to Execute Once: refused before anything is reserved', async () => {
		const ids = ['ao_a', 'ao_b'];
		const data = workflow('wfr5-execute-once-notify', {
			nodes: [
				once('Charge', '', 0, { onError: 'continueErrorOutput' }),
				lookup('Notify', 'ao_a', 0, { onError: 'continueErrorOutput', executeOnce: true }),
			],
			connections: { Charge: { main: [link('Notify')] } },
			heads: ['Charge'],
		});
		const refused = await deliver(data, eventBodies(ids));
		expect({ answer: refused.answer, effects: ids.map(effectsFor), states: await statuses(ids) }).toEqual({
			answer: 503,
			effects: [0, 0],
			states: [undefined, undefined],
		});
	});
});

/* Nodes that run several times in one execution ------------------------------------------------------- */

describeWithN8n('a node run several times in one execution', () => {
	it('Loop Over Items (batch 1) → Charge at Stop Workflow with Retry On Fail, failing once for the 2nd event: retried in the run; one effect each, 200', async () => {
		const ids = ['lr_a', 'lr_b', 'lr_c'];
		const data = workflow('wfr5-loop-retry-stop', {
			nodes: [
				baseNode('Loop', 'splitInBatches', 3, { batchSize: 1, options: {} }, 0),
				once('Charge', 'lr_b', 100, { retryOnFail: true, maxTries: 2, waitBetweenTries: 10 }),
			],
			connections: { Loop: { main: [[], link('Charge')] }, Charge: { main: [link('Loop')] } },
			heads: ['Loop'],
		});
		const { answers, lost } = await provider(data, eventBodies(ids));
		expect({ answers, lost, effects: ids.map(effectsFor), states: await statuses(ids) }).toEqual({
			answers: [200],
			lost: [],
			effects: [1, 1, 1],
			states: ['completed', 'completed', 'completed'],
		});
	});

	it('Loop Over Items (batch 1) → Charge → Ship (Stop Workflow), Ship failing once on the 2nd iteration: A done, B and C retried; one ship each', async () => {
		const ids = ['ls_a', 'ls_b', 'ls_c'];
		const data = workflow('wfr5-loop-ship-stop', {
			nodes: [
				baseNode('Loop', 'splitInBatches', 3, { batchSize: 1, options: {} }, 0),
				lookup('Charge', '', 100),
				once('Ship', 'ls_b', 100),
			],
			connections: { Loop: { main: [[], link('Charge')] }, Charge: { main: [link('Ship')] }, Ship: { main: [link('Loop')] } },
			heads: ['Loop'],
		});
		const first = await deliver(data, eventBodies(ids));
		expect({ answer: first.answer, states: await statuses(ids) }).toEqual({ answer: 500, states: ['completed', 'failed', 'failed'] });
		const { answers, lost } = await provider(data, eventBodies(ids));
		expect({ answers, lost, effects: ids.map(effectsFor) }).toEqual({ answers: [200], lost: [], effects: [1, 1, 1] });
	});

	it('Charge fed by two branches (If true → Tag → Charge; false → Charge), runs twice, fails once for an event of its 2nd run: one effect each', async () => {
		const ids = ['tb_a', 'tb_b', 'tb_c'];
		const data = workflow('wfr5-two-feeds', {
			nodes: [
				baseNode(
					'VIP',
					'if',
					2,
					{
						conditions: {
							options: { caseSensitive: true, leftValue: '', typeValidation: 'loose' },
							conditions: [
								{
									id: 'c1',
									leftValue: '={{ $json.body.vip }}',
									rightValue: '',
									operator: { type: 'boolean', operation: 'true', singleValue: true },
								},
							],
							combinator: 'and',
						},
						looseTypeValidation: true,
					},
					0,
					{ onError: undefined },
				),
				setField('Tag', 'tier', 'vip', 0, { onError: 'continueRegularOutput' }),
				once('Charge', 'tb_c', 100, { onError: 'continueErrorOutput' }),
			],
			connections: { VIP: { main: [link('Tag'), link('Charge')] }, Tag: { main: [link('Charge')] } },
			heads: ['VIP'],
		});
		const events = [
			{ id: 'tb_a', vip: true },
			{ id: 'tb_b', vip: false },
			{ id: 'tb_c', vip: false },
		];
		const first = await deliver(data, events);
		expect({ answer: first.answer, states: await statuses(ids) }).toEqual({ answer: 500, states: ['completed', 'completed', 'failed'] });
		const { answers, lost } = await provider(data, events);
		expect({ answers, lost, effects: ids.map(effectsFor) }).toEqual({ answers: [200], lost: [], effects: [1, 1, 1] });
	});
});

/* Always Output Data, a forged `idempotency` field ----------------------------------------------------------- */

describeWithN8n('Always Output Data on a failing charge; a forged idempotency field in the event body', () => {
	it('charge at Continue (regular output) with Always Output Data, failing once, Ship after it: failed, 500; one effect after the retry', async () => {
		const id = 'ao_continueRegularOutput';
		const data = workflow('wfr5-always-continueRegularOutput', {
			nodes: [
				once('Charge', id, 0, { onError: 'continueRegularOutput', alwaysOutputData: true }),
				lookup('Ship', '', 0, { onError: 'continueErrorOutput' }),
			],
			connections: { Charge: { main: [link('Ship')] } },
			heads: ['Charge'],
		});
		const { answers, lost } = await provider(data, [{ id }]);
		expect({ answers, lost, effects: effectsFor(id), states: await statuses([id]) }).toEqual({
			answers: [500, 200],
			lost: [],
			effects: 1,
			states: ['completed'],
		});
	});

	// At Continue (using error output) the failed charge's emptied success output gets n8n's empty item: Ship would run
	// for an event whose charge failed. Refused before anything is reserved.
	it('charge at Continue (error output) with Always Output Data, Ship after it: refused before anything is reserved, nothing charged', async () => {
		const id = 'ao_continueErrorOutput';
		const data = workflow('wfr5-always-continueErrorOutput', {
			nodes: [
				once('Charge', id, 0, { onError: 'continueErrorOutput', alwaysOutputData: true }),
				lookup('Ship', '', 0, { onError: 'continueErrorOutput' }),
			],
			connections: { Charge: { main: [link('Ship')] } },
			heads: ['Charge'],
		});
		const first = await deliver(data, [{ id }]);
		expect({
			answer: first.answer,
			refusal: JSON.stringify(first.run.data.resultData.runData.Reserve?.[0]?.data?.main[3] ?? []).includes('Always Output Data'),
			effects: effectsFor(id),
			states: await statuses([id]),
		}).toEqual({ answer: 503, refusal: true, effects: 0, states: [undefined] });
	});

	const flatten = (y: number): INode =>
		baseNode('Flatten', 'set', 3.4, { mode: 'raw', jsonOutput: '={{ JSON.stringify($json.body) }}', options: {} } as INodeParameters, y, {
			onError: undefined,
		});

	it("an event body carrying another event's `idempotency` object (flattened into the item) cannot settle that key, nor its own wrongly", async () => {
		const victim = 'fg_victim';
		const attacker = 'fg_attacker';
		const data = workflow('wfr5-forged', {
			nodes: [flatten(0), once('Charge', attacker, 0, { onError: 'continueErrorOutput' })],
			connections: { Flatten: { main: [link('Charge')] } },
			heads: ['Flatten'],
		});
		// The victim's key is held by a run of its own that has not ended (a reservation with an owner token).
		const forged = {
			outcome: 'new',
			key: `evt:${victim}`,
			ownerToken: 'guessed-owner-token',
			lockedUntil: new Date(Date.now() + 60_000).toISOString(),
		};
		await deliver(data, [{ id: victim }]);
		expect(await statuses([victim])).toEqual(['completed']);
		const { answers, lost } = await provider(data, [{ id: attacker, idempotency: forged }]);
		expect({ answers, lost, effects: [victim, attacker].map(effectsFor), states: await statuses([victim, attacker]) }).toEqual({
			answers: [500, 200],
			lost: [],
			effects: [1, 1],
			states: ['completed', 'completed'],
		});
	});
});
