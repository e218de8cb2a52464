import { baseNodesInstalled, effectsFor, loadBaseNodeFiles } from '../support/n8nBaseNodes';
import { addNodeTypes, packageNode } from '../support/n8nEngine';
import { describeWithN8n, shapeHarness } from '../support/settleShapes';
import {
	baseNode,
	definedInputsTrigger,
	eventBodies,
	executeInline,
	executeSaved,
	inlineSubWorkflow,
	keepOnlyBody,
	link,
	lookup,
	once,
	routeSwitch,
	setField,
	skipIf,
	toInput,
} from '../support/settleWorkflows';

/*
 * Sixth red-team pass on the settlement rules (nodes/shared/settlement/), on the rules for: failures read
 * inside sub-executions (trace.ts failuresInside, cameFromInside, inputPositionsOf), Stop and Error after an
 * effect and a join after an effect (wiring.ts stopAfterEffect, checkJoinedAfterEffect), a Respond to
 * Webhook with Settle chained after the step. n8n-core's own engine with n8n-nodes-base's nodes; the
 * provider redelivers the whole delivery until it gets a 2xx. A row marked failing breaks a promise
 * where n8n's record cannot tell: docs/templates.md lists it as not guaranteed.
 */

const { workflow, deliveries, statuses, provider } = shapeHarness('shapesrt6', {
	baseNodes: [
		'n8n-nodes-base.set',
		'n8n-nodes-base.aggregate',
		'n8n-nodes-base.splitOut',
		'n8n-nodes-base.stopAndError',
		'n8n-nodes-base.switch',
	],
	subWorkflows: true,
});
const { deliver } = deliveries;

beforeAll(() => {
	if (!baseNodesInstalled()) return;
	addNodeTypes(
		loadBaseNodeFiles({
			'n8n-nodes-base.respondToWebhook': 'RespondToWebhook/RespondToWebhook.node.js',
			'n8n-nodes-base.executeWorkflowTrigger': 'ExecuteWorkflow/ExecuteWorkflowTrigger/ExecuteWorkflowTrigger.node.js',
		}),
	);
});

const noOp = (name: string, y: number) => baseNode(name, 'noOp', 1, {}, y, { onError: undefined });
const aggregateAll = (name: string, y: number) =>
	baseNode(name, 'aggregate', 1, { aggregate: 'aggregateAllItemData', options: {} }, y, { onError: undefined });

/* (a) Joins and splits after / before an effect: shapes that must stay accepted ------------------------------ */

describeWithN8n('joins and Stop and Error where they are safe', () => {
	it('Charge (Continue) → Aggregate (All Item Data) → Split Out (data) → Ship per event (Continue), charge failing once for the 2nd: accepted; one charge each', async () => {
		const ids = ['as_a', 'as_b'];
		const data = workflow('wfr6-agg-split', {
			nodes: [
				once('Charge as', 'as_b', 0, { onError: 'continueErrorOutput' }),
				aggregateAll('Batch', 0),
				baseNode('Each', 'splitOut', 1, { fieldToSplitOut: 'data', include: 'noOtherFields', options: {} }, 0, {
					onError: 'continueErrorOutput',
				}),
				lookup('Ship as', '', 0, { onError: 'continueErrorOutput' }),
			],
			connections: { 'Charge as': { main: [link('Batch')] }, Batch: { main: [link('Each')] }, Each: { main: [link('Ship as')] } },
			heads: ['Charge as'],
		});
		const first = await deliver(data, eventBodies(ids));
		const firstDelivery = { answer: first.answer, states: await statuses(ids) };
		const { answers, lost } = await provider(data, eventBodies(ids));
		expect({ firstDelivery, answers, lost, effects: ids.map(effectsFor) }).toEqual({
			firstDelivery: { answer: 500, states: ['completed', 'failed'] },
			answers: [200],
			lost: [],
			effects: [1, 1],
		});
	});

	it('Edit Fields → Aggregate (All Item Data) of both events BEFORE any effect → one bulk call (Continue) failing once: accepted; both keys failed, then one bulk call', async () => {
		const ids = ['ab_a', 'ab_b'];
		const data = workflow('wfr6-agg-before', {
			nodes: [
				setField('Tag', 'tier', 'std', 0),
				aggregateAll('Batch', 0),
				setField('Name Batch', 'id', 'ab_batch', 0),
				once('Bulk Call ab', 'ab_batch', 0, { onError: 'continueErrorOutput' }),
			],
			connections: {
				Tag: { main: [link('Batch')] },
				Batch: { main: [link('Name Batch')] },
				'Name Batch': { main: [link('Bulk Call ab')] },
			},
			heads: ['Tag'],
		});
		const { answers, lost } = await provider(data, eventBodies(ids));
		expect({ answers, lost, batch: effectsFor('ab_batch'), states: await statuses(ids) }).toEqual({
			answers: [500, 200],
			lost: [],
			batch: 1,
			states: ['completed', 'completed'],
		});
	});

	it('If (bad?) → true: Stop and Error (above) / false: Charge, BEFORE any effect, two events one bad: accepted; the good key never completed without its charge', async () => {
		const ids = ['sb_good', 'sb_bad'];
		const data = workflow('wfr6-stop-before', {
			nodes: [
				skipIf('Bad?', 0, 'bad'),
				baseNode('Abort', 'stopAndError', 1, { errorType: 'errorMessage', errorMessage: 'bad event' }, -100, { onError: undefined }),
				once('Charge sb', '', 100, { onError: 'continueErrorOutput' }),
			],
			connections: { 'Bad?': { main: [link('Abort'), link('Charge sb')] } },
			heads: ['Bad?'],
		});
		const events = [{ id: 'sb_good' }, { id: 'sb_bad', bad: true }];
		const first = await deliver(data, events);
		const states = await statuses(ids);
		expect(first.answer).not.toBe(503);
		expect(first.answer).toBe(500);
		// The good event: completed only with its charge.
		expect(states[0] === 'completed').toBe(effectsFor('sb_good') === 1);
		expect({ bad: states[1], badEffects: effectsFor('sb_bad') }).toEqual({ bad: 'failed', badEffects: 0 });
	});

	it('Stop and Error reached through a Switch after the charge, two events: refused before anything is reserved', async () => {
		const ids = ['ss_a', 'ss_b'];
		const data = workflow('wfr6-stop-switch', {
			nodes: [
				once('Charge ss', '', 0, { onError: 'continueErrorOutput' }),
				routeSwitch('Route', 0, 2, { onError: undefined }),
				lookup('Ship ss', '', 0, { onError: 'continueErrorOutput' }),
				baseNode('Abort', 'stopAndError', 1, { errorType: 'errorMessage', errorMessage: 'no route' }, 100, { onError: undefined }),
			],
			connections: { 'Charge ss': { main: [link('Route')] }, Route: { main: [link('Ship ss'), link('Abort')] } },
			heads: ['Charge ss'],
		});
		const refused = await deliver(data, [
			{ id: 'ss_a', route: 0 },
			{ id: 'ss_b', route: 1 },
		]);
		expect({ answer: refused.answer, effects: ids.map(effectsFor), states: await statuses(ids) }).toEqual({
			answer: 503,
			effects: [0, 0],
			states: [undefined, undefined],
		});
	});

	it("n8n's Respond to Webhook on Settle's Completed output (after Settle, outside the step): accepted, 200, completed, one charge", async () => {
		const id = 'ra_a';
		const data = workflow('wfr6-respond-after-settle', {
			nodes: [
				once('Charge ra', '', 0, { onError: 'continueErrorOutput' }),
				baseNode('Ack', 'respondToWebhook', 1, { respondWith: 'noData', options: { responseCode: 200 } }, 120, { onError: undefined }),
			],
			connections: {
				Settle: {
					main: [link('Ack'), link('Respond 500 (failed)'), link('Respond 200 (completion refused)'), link('Respond 503 (not settled)')],
				},
			},
			heads: ['Charge ra'],
		});
		const { answers, lost } = await provider(data, [{ id }]);
		expect({ answers, lost, effects: effectsFor(id), states: await statuses([id]) }).toEqual({
			answers: [200],
			lost: [],
			effects: 1,
			states: ['completed'],
		});
	});
});

/* (b) A join of every event after an effect, unseen ------------------------------------------------------------ */

describeWithN8n('a join of every event after an effect that the join rule does not see', () => {
	// Reserve → [Charge (above)] and [Aggregate (All Item Data) → Notify for the batch (Continue), below]. n8n runs the
	// Charge branch first, for both events, then Notify; Notify's one item is paired to both events, so its failure would
	// fail both keys after both charges. Refused: an effect on a branch beside the join counts as one before it
	// (wiring.ts checkJoinedAfterEffect, effectNotAfter).
	it('Charge (above) beside Aggregate (All Item Data) → Notify (Continue), two events: refused before anything is reserved', async () => {
		const ids = ['jb_a', 'jb_b'];
		const data = workflow('wfr6-join-beside', {
			nodes: [
				once('Charge jb', '', -100, { onError: 'continueErrorOutput' }),
				aggregateAll('Batch', 100),
				setField('Name Batch', 'id', 'jb_batch', 100),
				lookup('Notify jb', 'jb_batch', 100, { onError: 'continueErrorOutput' }),
			],
			connections: { Batch: { main: [link('Name Batch')] }, 'Name Batch': { main: [link('Notify jb')] } },
			heads: ['Charge jb', 'Batch'],
		});
		const refused = await deliver(data, eventBodies(ids));
		expect({ answer: refused.answer, effects: ids.map(effectsFor), states: await statuses(ids) }).toEqual({
			answer: 503,
			effects: [0, 0],
			states: [undefined, undefined],
		});
	});
	// The one item Aggregate makes of both events goes through Loop Over Items (batch 1): one item at a time is not one
	// event at a time, so the nodes inside the loop are judged as joined after the charge: refused (wiring.ts
	// checkStepTakesEventsApart checks joins before its one-at-a-time skip).
	it('Charge (Continue) → Aggregate (All Item Data) → Loop Over Items (batch 1) → Edit Fields → Notify for the batch (Continue) → back, two events: refused before anything is reserved', async () => {
		const ids = ['jl_a', 'jl_b'];
		const data = workflow('wfr6-join-loop', {
			nodes: [
				once('Charge jl', '', 0, { onError: 'continueErrorOutput' }),
				aggregateAll('Batch', 0),
				setField('Name Batch', 'id', 'jl_batch', 0),
				baseNode('Loop', 'splitInBatches', 3, { batchSize: 1, options: {} }, 0, { onError: undefined }),
				lookup('Notify jl', 'jl_batch', 100, { onError: 'continueErrorOutput' }),
			],
			connections: {
				'Charge jl': { main: [link('Batch')] },
				Batch: { main: [link('Loop')] },
				Loop: { main: [[], link('Name Batch')] },
				'Name Batch': { main: [link('Notify jl')] },
				'Notify jl': { main: [link('Loop')] },
			},
			heads: ['Charge jl'],
		});
		const refused = await deliver(data, eventBodies(ids));
		expect({ answer: refused.answer, effects: ids.map(effectsFor), states: await statuses(ids) }).toEqual({
			answer: 503,
			effects: [0, 0],
			states: [undefined, undefined],
		});
	});
});

/* (a) Sub-workflows: what must not fail, (b) what must fail ---------------------------------------------- */

describeWithN8n('sub-workflows read from their records', () => {
	// The business `error` field is made by an Edit Fields at Stop Workflow (settings known: Define Below), routed by an
	// If to a Log node; nothing failed: both keys completed, one charge for the good event.
	it('once, sub: Edit Fields (error = "declined" for a declined event) → If error exists → Log Decline / else Charge → Record; no failure: both completed', async () => {
		const ids = ['bd_a', 'bd_b'];
		const sub = inlineSubWorkflow(
			[
				setField('Mark', 'error', '={{ $json.body.declined ? "declined" : "" }}', 0),
				baseNode(
					'Declined?',
					'if',
					2,
					{
						conditions: {
							options: { caseSensitive: true, leftValue: '', typeValidation: 'loose' },
							conditions: [
								{
									id: 'e',
									leftValue: '={{ $json.error }}',
									rightValue: '',
									operator: { type: 'string', operation: 'notEmpty', singleValue: true },
								},
							],
							combinator: 'and',
						},
						looseTypeValidation: true,
					},
					0,
					{ onError: undefined },
				),
				noOp('Log Decline', 0),
				once('Sub Charge bd', '', 100, { onError: 'continueErrorOutput' }),
				noOp('Record', 100),
			],
			{
				Webhook: { main: [link('Mark')] },
				Mark: { main: [link('Declined?')] },
				'Declined?': { main: [link('Log Decline'), link('Sub Charge bd')] },
				'Sub Charge bd': { main: [link('Record')] },
			},
		);
		const data = workflow('wfr6-business-error', {
			nodes: [executeInline(sub, 'continueRegularOutput')],
			connections: {},
			heads: ['Run Sub-workflow'],
		});
		const { answers, lost } = await provider(data, [{ id: 'bd_a', declined: true }, { id: 'bd_b' }]);
		expect({ answers, lost, effects: ids.map(effectsFor), states: await statuses(ids) }).toEqual({
			answers: [200],
			lost: [],
			effects: [0, 1],
			states: ['completed', 'completed'],
		});
	});

	const recoveringSub = (tag: string, failOnce: string) =>
		inlineSubWorkflow(
			[
				once(`Sub Charge ${tag}`, failOnce, 0, { onError: 'continueErrorOutput' }),
				once(`Fallback Charge ${tag}`, '', 100, { onError: 'continueErrorOutput' }),
				noOp('Record', 0),
			],
			{
				Webhook: { main: [link(`Sub Charge ${tag}`)] },
				[`Sub Charge ${tag}`]: { main: [link('Record'), link(`Fallback Charge ${tag}`)] },
				[`Fallback Charge ${tag}`]: { main: [link('Record')] },
			},
		);

	// Not guaranteed (docs/templates.md; a doubled effect). The sub-workflow recovers from its own failure: the charge's
	// error output leads to a fallback charge whose result goes on to Record; the event's effect happened once (the
	// fallback). An item on an error output is the event's failure, whatever follows it (an alert after it must not
	// complete the key): B's key fails after the fallback charged it, and the retry charges B again.
	it.failing(
		'once, sub: Charge (error output → Fallback Charge → Record) failing once for the 2nd of two: one effect each, no retry needed',
		async () => {
			const ids = ['rc_a', 'rc_b'];
			const data = workflow('wfr6-recovering-sub', {
				nodes: [executeInline(recoveringSub('rc', 'rc_b'), 'continueRegularOutput')],
				connections: {},
				heads: ['Run Sub-workflow'],
			});
			const first = await deliver(data, eventBodies(ids));
			const firstDelivery = { answer: first.answer, states: await statuses(ids), effects: ids.map(effectsFor) };
			const { answers, lost } = await provider(data, eventBodies(ids));
			expect({ firstDelivery, answers, lost, effects: ids.map(effectsFor) }).toEqual({
				firstDelivery: { answer: 200, states: ['completed', 'completed'], effects: [1, 1] },
				answers: [200],
				lost: [],
				effects: [1, 1],
			});
		},
	);

	// Not guaranteed either at the top level (the same reading of an error output).
	it.failing('control: the same recovery in the step itself (Charge error output → Fallback Charge): one effect each', async () => {
		const ids = ['rt_a', 'rt_b'];
		const data = workflow('wfr6-recovering-top', {
			nodes: [
				once('Charge rt', 'rt_b', 0, { onError: 'continueErrorOutput' }),
				once('Fallback Charge rt', '', 100, { onError: 'continueErrorOutput' }),
				noOp('Record', 0),
			],
			connections: {
				'Charge rt': { main: [link('Record'), link('Fallback Charge rt')] },
				'Fallback Charge rt': { main: [link('Record')] },
			},
			heads: ['Charge rt'],
		});
		const first = await deliver(data, eventBodies(ids));
		const firstDelivery = { answer: first.answer, states: await statuses(ids), effects: ids.map(effectsFor) };
		const { answers, lost } = await provider(data, eventBodies(ids));
		expect({ firstDelivery, answers, lost, effects: ids.map(effectsFor) }).toEqual({
			firstDelivery: { answer: 200, states: ['completed', 'completed'], effects: [1, 1] },
			answers: [200],
			lost: [],
			effects: [1, 1],
		});
	});

	it('from the database: sub: Loop Over Items (batch 1) → Charge (Continue regular output) → back; done → Record; fails once for the 2nd of two: one effect each', async () => {
		const ids = ['dl_a', 'dl_b'];
		deliveries.saveSubWorkflow(
			'sub-rt6-db-loop',
			[
				packageNode('Webhook', 'testWebhook'),
				baseNode('Loop', 'splitInBatches', 3, { batchSize: 1, options: {} }, 0, { onError: undefined }),
				once('Sub Charge dl', 'dl_b', 100, { onError: 'continueRegularOutput' }),
				noOp('Record', 0),
			],
			{
				Webhook: { main: [link('Loop')] },
				Loop: { main: [link('Record'), link('Sub Charge dl')] },
				'Sub Charge dl': { main: [link('Loop')] },
			},
		);
		const data = workflow('wfr6-db-loop', {
			nodes: [executeSaved('sub-rt6-db-loop', 'continueRegularOutput')],
			connections: {},
			heads: ['Run Sub-workflow'],
		});
		const first = await deliver(data, eventBodies(ids));
		const firstDelivery = { answer: first.answer, states: await statuses(ids) };
		const { answers, lost } = await provider(data, eventBodies(ids));
		expect({ firstDelivery, answers, lost, effects: ids.map(effectsFor) }).toEqual({
			firstDelivery: { answer: 500, states: ['completed', 'failed'] },
			answers: [200],
			lost: [],
			effects: [1, 1],
		});
	});

	it('from the database: sub: Switch (route) → Charge A / Charge B (error outputs unconnected) → Merge (append) → Record; fails once for one of three', async () => {
		const ids = ['dw_a', 'dw_b', 'dw_c'];
		deliveries.saveSubWorkflow(
			'sub-rt6-db-switch',
			[
				packageNode('Webhook', 'testWebhook'),
				routeSwitch('Route', 0, 2, { onError: undefined }),
				once('Sub Charge dwA', '', 0, { onError: 'continueErrorOutput' }),
				once('Sub Charge dwB', 'dw_c', 100, { onError: 'continueErrorOutput' }),
				baseNode('Join', 'merge', 3, {}, 0, { onError: undefined }),
				noOp('Record', 0),
			],
			{
				Webhook: { main: [link('Route')] },
				Route: { main: [link('Sub Charge dwA'), link('Sub Charge dwB')] },
				'Sub Charge dwA': { main: [link('Join')] },
				'Sub Charge dwB': { main: [toInput('Join', 1)] },
				Join: { main: [link('Record')] },
			},
		);
		const data = workflow('wfr6-db-switch', {
			nodes: [executeSaved('sub-rt6-db-switch', 'continueRegularOutput')],
			connections: {},
			heads: ['Run Sub-workflow'],
		});
		const events = [
			{ id: 'dw_a', route: 0 },
			{ id: 'dw_b', route: 1 },
			{ id: 'dw_c', route: 1 },
		];
		const first = await deliver(data, events);
		const firstDelivery = { answer: first.answer, states: await statuses(ids) };
		const { answers, lost } = await provider(data, events);
		expect({ firstDelivery, answers, lost, effects: ids.map(effectsFor) }).toEqual({
			firstDelivery: { answer: 500, states: ['completed', 'completed', 'failed'] },
			answers: [200],
			lost: [],
			effects: [1, 1, 1],
		});
	});

	it('three levels, the key dropped at the middle: Execute Workflow → sub: Edit Fields (only body) → Run Inner → inner: [charge (error output unconnected)] + [Audit Log]; fails once for the 2nd of two', async () => {
		const ids = ['km_a', 'km_b'];
		const inner = inlineSubWorkflow([once('Inner Charge km', 'km_b', 0, { onError: 'continueErrorOutput' }), noOp('Audit Log', 200)], {
			Webhook: { main: [link('Inner Charge km', 'Audit Log')] },
		});
		// Run Inner at Continue (regular output): at Stop Workflow it would get both events together, refused.
		const outer = inlineSubWorkflow([keepOnlyBody('Only Body'), executeInline(inner, 'continueRegularOutput', 'once', 'Run Inner')], {
			Webhook: { main: [link('Only Body')] },
			'Only Body': { main: [link('Run Inner')] },
		});
		const data = workflow('wfr6-middle-drop', {
			nodes: [executeInline(outer, 'continueRegularOutput')],
			connections: {},
			heads: ['Run Sub-workflow'],
		});
		const first = await deliver(data, eventBodies(ids));
		const firstDelivery = { answer: first.answer, states: await statuses(ids) };
		const { answers, lost } = await provider(data, eventBodies(ids));
		expect({ firstDelivery, answers, lost, effects: ids.map(effectsFor) }).toEqual({
			firstDelivery: { answer: 500, states: ['completed', 'failed'] },
			answers: [200],
			lost: [],
			effects: [1, 1],
		});
	});

	// Each sub-workflow starts the next, five deep: the innermost sub-execution's record is read through the four
	// records above it (subExecution.ts readSubExecutions follows ten levels).
	it('five levels: Execute Workflow → sub → sub → sub → sub: [charge (error output unconnected)] + [Audit Log]; fails once for the 2nd of two', async () => {
		const ids = ['kd_a', 'kd_b'];
		let level = inlineSubWorkflow([once('Inner Charge kd', 'kd_b', 0, { onError: 'continueErrorOutput' }), noOp('Audit Log', 200)], {
			Webhook: { main: [link('Inner Charge kd', 'Audit Log')] },
		});
		for (const name of ['Run Level 4', 'Run Level 3', 'Run Level 2']) {
			level = inlineSubWorkflow([executeInline(level, 'continueRegularOutput', 'once', name)], { Webhook: { main: [link(name)] } });
		}
		const data = workflow('wfr6-five-levels', {
			nodes: [executeInline(level, 'continueRegularOutput')],
			connections: {},
			heads: ['Run Sub-workflow'],
		});
		const first = await deliver(data, eventBodies(ids));
		const firstDelivery = { answer: first.answer, states: await statuses(ids) };
		const { answers, lost } = await provider(data, eventBodies(ids));
		expect({ firstDelivery, answers, lost, effects: ids.map(effectsFor) }).toEqual({
			firstDelivery: { answer: 500, states: ['completed', 'failed'] },
			answers: [200],
			lost: [],
			effects: [1, 1],
		});
	});

	it('each item at the top, once inside: Execute Workflow (each) → sub: Run Inner (once) → inner: [charge (error output unconnected)] + [Audit Log]; fails once for the 2nd of three', async () => {
		const ids = ['en_a', 'en_b', 'en_c'];
		const inner = inlineSubWorkflow([once('Inner Charge en', 'en_b', 0, { onError: 'continueErrorOutput' }), noOp('Audit Log', 200)], {
			Webhook: { main: [link('Inner Charge en', 'Audit Log')] },
		});
		const outer = inlineSubWorkflow([executeInline(inner, undefined, 'once', 'Run Inner')], { Webhook: { main: [link('Run Inner')] } });
		const data = workflow('wfr6-each-nested', {
			nodes: [executeInline(outer, 'continueRegularOutput', 'each')],
			connections: {},
			heads: ['Run Sub-workflow'],
		});
		const first = await deliver(data, eventBodies(ids));
		const firstDelivery = { answer: first.answer, states: await statuses(ids) };
		const { answers, lost } = await provider(data, eventBodies(ids));
		expect({ firstDelivery, answers, lost, effects: ids.map(effectsFor) }).toEqual({
			firstDelivery: { answer: 500, states: ['completed', 'failed', 'completed'] },
			answers: [200],
			lost: [],
			effects: [1, 1, 1],
		});
	});

	it("each item, n8n's trigger with its inputs defined, three events: [charge (error output unconnected)] + [Audit Log]; fails once for the 2nd", async () => {
		const ids = ['de_a', 'de_b', 'de_c'];
		const sub = inlineSubWorkflow(
			[once('Sub Charge de', 'de_b', 0, { onError: 'continueErrorOutput' }), noOp('Audit Log', 200)],
			{ Webhook: { main: [link('Sub Charge de', 'Audit Log')] } },
			definedInputsTrigger(),
		);
		const data = workflow('wfr6-defined-each', {
			nodes: [executeInline(sub, 'continueRegularOutput', 'each')],
			connections: {},
			heads: ['Run Sub-workflow'],
		});
		const first = await deliver(data, eventBodies(ids));
		const firstDelivery = { answer: first.answer, states: await statuses(ids) };
		const { answers, lost } = await provider(data, eventBodies(ids));
		expect({ firstDelivery, answers, lost, effects: ids.map(effectsFor) }).toEqual({
			firstDelivery: { answer: 500, states: ['completed', 'failed', 'completed'] },
			answers: [200],
			lost: [],
			effects: [1, 1, 1],
		});
	});
});
