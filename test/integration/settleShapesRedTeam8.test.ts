import type { INode, INodeParameters } from 'n8n-workflow';

import { baseNodesInstalled, effectsFor, loadBaseNodeFiles } from '../support/n8nBaseNodes';
import { addNodeTypes, packageNode } from '../support/n8nEngine';
import { describeWithN8n, shapeHarness } from '../support/settleShapes';
import {
	baseNode,
	eventBodies,
	executeInline,
	executeSaved,
	inlineSubWorkflow,
	is2xx,
	link,
	lookup,
	once,
	routeSwitch,
	setField,
} from '../support/settleWorkflows';

/*
 * Eighth red-team pass on the settlement rules (nodes/shared/settlement/): ways around the refusals of If and
 * Filter at Continue (wiring.ts conditionFailureHidden), of Switch at Continue with several events
 * (failureForNoEvent), of the several-events rules inside sub-workflows defined in Execute Workflow
 * (checkInlineSubWorkflow), and of Loop Over Items whose Done output leads on (checkStopsBeforeLoopDone, and
 * trace.ts's reading of a loop's held items); and everyday shapes that must stay accepted. n8n-core's own
 * engine with n8n-nodes-base's nodes; the provider redelivers the whole delivery until it gets a 2xx. A row
 * marked failing breaks a promise: its comment says what happens.
 */

const { workflow, deliveries, statuses, provider, expectRefused, oneEffectEachOrRefused } = shapeHarness('shapesrt8', {
	baseNodes: ['n8n-nodes-base.switch', 'n8n-nodes-base.set'],
	subWorkflows: true,
});
const { deliver } = deliveries;

beforeAll(() => {
	if (!baseNodesInstalled()) return;
	addNodeTypes(loadBaseNodeFiles({ 'n8n-nodes-base.filter': 'Filter/Filter.node.js' }));
});

/** Loop Over Items (batch 1) inside another: reset when the outer loop hands it the next event (n8n's way to nest loops). */
const resetLoop = (name: string, y: number) =>
	baseNode(name, 'splitInBatches', 3, { batchSize: 1, options: { reset: '={{ $prevNode.name === "Outer" }}' } }, y, { onError: undefined });
const noOp = (name: string, y: number) => baseNode(name, 'noOp', 1, {}, y, { onError: undefined });
const loop = (name: string, y: number, batchSize: number | string = 1, version = 3) =>
	baseNode(name, 'splitInBatches', version, { batchSize, options: {} }, y, { onError: undefined });

/** If or Filter (2.2) with strict type validation: `amount > 100` cannot be evaluated for a non-number amount. */
const strictAmountCondition = {
	options: { caseSensitive: true, leftValue: '', typeValidation: 'strict', version: 2 },
	conditions: [{ id: 'c1', leftValue: '={{ $json.body.amount }}', rightValue: 100, operator: { type: 'number', operation: 'gt' } }],
	combinator: 'and',
};
const strictCheck = (name: string, type: 'if' | 'filter', extra: Partial<INode> = {}) =>
	baseNode(name, type, 2.2, { conditions: strictAmountCondition, looseTypeValidation: false, options: {} }, 0, extra);

/* (a) If and Filter at Continue, out of the rule's sight ------------------------------------------------------ */

describeWithN8n('If and Filter whose failed condition n8n records nowhere, out of the rule’s sight', () => {
	// The If is two sub-workflows deep (Define Below inside Define Below): the rule reads the sub-workflows a step node
	// defines as deep as the judgement reads their records (wiring.ts firstIncludingInline). Were it accepted, n8n's If
	// would send the event whose amount it cannot compare to its false output and the key complete without the charge.
	it('If (strict, Continue) → Charge inside a sub-workflow defined inside a sub-workflow: refused before anything is reserved', async () => {
		const id = 'nest_a';
		const innermost = inlineSubWorkflow(
			[
				strictCheck('Check', 'if', { onError: 'continueRegularOutput' }),
				once('Sub Charge nest', '', 0, { onError: 'continueErrorOutput' }),
			],
			{ Webhook: { main: [link('Check')] }, Check: { main: [link('Sub Charge nest')] } },
		);
		const middle = inlineSubWorkflow([executeInline(innermost, 'continueRegularOutput', 'once', 'Run Inner')], {
			Webhook: { main: [link('Run Inner')] },
		});
		const data = workflow('wfr8-if-nested', {
			nodes: [executeInline(middle, 'continueRegularOutput', 'once', 'Run Outer')],
			connections: {},
			heads: ['Run Outer'],
		});
		await expectRefused(data, [{ id, amount: 'abc' }]);
	});

	// The same If one level deep is refused (settleShapesRedTeam5); the rule holds through a Merge in the step.
	it('Tag → Merge → If (strict, Continue) → Charge in the step: refused before anything is reserved', async () => {
		const data = workflow('wfr8-if-merge', {
			nodes: [
				setField('Tag', 'tier', 'gold', 0),
				baseNode('Join', 'merge', 3, {}, 0, { onError: undefined }),
				strictCheck('Check', 'if'),
				once('Charge mg', '', 0, { onError: 'continueErrorOutput' }),
			],
			connections: { Tag: { main: [link('Join')] }, Join: { main: [link('Check')] }, Check: { main: [link('Charge mg')] } },
			heads: ['Tag'],
		});
		await expectRefused(data, [{ id: 'mg_a', amount: 'abc' }], 'continues on error');
	});

	it('a disabled If (strict, Continue) before the charge: accepted (n8n passes the items through), one charge, completed', async () => {
		const data = workflow('wfr8-if-disabled', {
			nodes: [strictCheck('Check', 'if', { disabled: true }), once('Charge dis', '', 0, { onError: 'continueErrorOutput' })],
			connections: { Check: { main: [link('Charge dis')] } },
			heads: ['Check'],
		});
		await oneEffectEachOrRefused(data, [{ id: 'dis_a', amount: 'abc' }]);
		expect(effectsFor('dis_a')).toBe(1);
	});

	// A sub-workflow from the database: the package cannot read its nodes (docs/templates.md lists the hidden failure of
	// an If at Continue among the rows not guaranteed). The event whose amount the If cannot compare goes to its false
	// output, the charge never runs, the delivery is answered 200 and the key is completed: lost.
	it.failing(
		'If (strict, Continue) → Charge in a sub-workflow from the database: refused, or the key not completed without the charge',
		async () => {
			const id = 'db_a';
			deliveries.saveSubWorkflow(
				'sub-rt8-db-if',
				[
					packageNode('Webhook', 'testWebhook'),
					strictCheck('Check', 'if', { onError: 'continueRegularOutput' }),
					once('Sub Charge db', '', 0, { onError: 'continueErrorOutput' }),
				],
				{ Webhook: { main: [link('Check')] }, Check: { main: [link('Sub Charge db')] } },
			);
			const data = workflow('wfr8-if-db', {
				nodes: [executeSaved('sub-rt8-db-if', 'continueRegularOutput')],
				connections: {},
				heads: ['Run Sub-workflow'],
			});
			const first = await deliver(data, [{ id, amount: 'abc' }]);
			const refused = first.answer === 503 && (await statuses([id]))[0] === undefined;
			expect(refused || ((await statuses([id]))[0] !== 'completed' && !is2xx(first.answer))).toBe(true);
		},
	);

	// If and Filter version 1 throw for the whole node when a date cannot be read (IfV1 / FilterV1 convertDateTime).
	// At Continue n8n-core then passes the node's input on through its first output: the If's true branch, the Filter's
	// kept items; the charge would run, the If's failure fail the key, and every redelivery charge again. Refused at
	// Continue in every version (nodeKinds.ts hidesConditionFailures).
	it.each([
		[
			'If v1',
			'v1if',
			(): INode =>
				baseNode(
					'Check',
					'if',
					1,
					{
						conditions: { dateTime: [{ value1: '={{ $json.body.date }}', operation: 'after', value2: '2020-01-01T00:00:00Z' }] },
						combineOperation: 'all',
					} as INodeParameters,
					0,
				),
		],
		[
			'Filter v1',
			'v1fl',
			(): INode =>
				baseNode(
					'Check',
					'filter',
					1,
					{
						conditions: { dateTime: [{ value1: '={{ $json.body.date }}', operation: 'after', value2: '2020-01-01T00:00:00Z' }] },
						combineConditions: 'AND',
					} as INodeParameters,
					0,
				),
		],
	] as const)(
		'%s (dates) at Continue → Charge, an unreadable date: refused, or never charged more than once',
		async (_label, tag, check) => {
			const id = `${tag}_a`;
			const data = workflow(`wfr8-${tag}`, {
				nodes: [check(), once(`Charge ${tag}`, '', 0, { onError: 'continueErrorOutput' })],
				connections: { Check: { main: [link(`Charge ${tag}`)] } },
				heads: ['Check'],
			});
			await provider(data, [{ id, date: 'not a date' }]);
			expect(effectsFor(id)).toBeLessThanOrEqual(1);
		},
	);
});

/* (b) Switch: the rule for several events, and everyday shapes ------------------------------------------------ */

describeWithN8n('Switch with several events', () => {
	it('Switch in Rules mode at Continue, two events: refused before anything is reserved', async () => {
		const rules = {
			values: [
				{
					conditions: {
						options: { caseSensitive: true, leftValue: '', typeValidation: 'strict', version: 2 },
						conditions: [
							{ id: 'r1', leftValue: '={{ $json.body.amount }}', rightValue: 100, operator: { type: 'number', operation: 'gt' } },
						],
						combinator: 'and',
					},
				},
			],
		};
		const data = workflow('wfr8-switch-rules', {
			nodes: [
				baseNode('Route', 'switch', 3.2, { mode: 'rules', rules, options: {} }, 0),
				once('Charge swr', '', 0, { onError: 'continueErrorOutput' }),
			],
			connections: { Route: { main: [link('Charge swr')] } },
			heads: ['Route'],
		});
		await expectRefused(data, [
			{ id: 'swr_a', amount: 200 },
			{ id: 'swr_b', amount: 'abc' },
		]);
	});

	it('Switch at Stop Workflow (n8n’s default) before any effect, two events, the charge failing once for one: accepted, one charge each', async () => {
		const data = workflow('wfr8-switch-stop', {
			nodes: [
				routeSwitch('Route', 0, 2),
				once('Charge ssa', 'ss_b', 0, { onError: 'continueErrorOutput' }),
				once('Charge ssb', '', 100, { onError: 'continueErrorOutput' }),
			],
			connections: { Route: { main: [link('Charge ssa'), link('Charge ssb')] } },
			heads: ['Route'],
		});
		await oneEffectEachOrRefused(data, [
			{ id: 'ss_a', route: 1 },
			{ id: 'ss_b', route: 0 },
		]);
		expect(['ss_a', 'ss_b'].map(effectsFor)).toEqual([1, 1]);
	});

	it('one event per run, If (loose, Stop Workflow) before the charge, the charge failing once: accepted, one charge', async () => {
		const loose = {
			options: { caseSensitive: true, leftValue: '', typeValidation: 'loose', version: 2 },
			conditions: [{ id: 'c1', leftValue: '={{ $json.body.amount }}', rightValue: 100, operator: { type: 'number', operation: 'gt' } }],
			combinator: 'and',
		};
		const data = workflow('wfr8-if-one', {
			nodes: [
				baseNode('Check', 'if', 2.2, { conditions: loose, looseTypeValidation: true, options: {} }, 0, { onError: undefined }),
				once('Charge io', 'io_a', 0, { onError: undefined }),
			],
			connections: { Check: { main: [link('Charge io')] } },
			heads: ['Check'],
		});
		const { answers, lost } = await provider(data, [{ id: 'io_a', amount: 200 }]);
		expect({ answers, lost, effects: effectsFor('io_a') }).toEqual({ answers: [500, 200], lost: [], effects: 1 });
	});
});

/* (c) Sub-workflows defined in Execute Workflow, out of checkInlineSubWorkflow's sight ------------------------- */

describeWithN8n('several events in a sub-workflow whose Execute Workflow node hides how it runs', () => {
	// Execute Workflow's Mode given by an expression that gives "once": n8n evaluates it and runs the sub-workflow once
	// with both events. Any Mode but "each" as written is judged as once for all (runsSubWorkflowOnceForAll): the charge
	// at Stop Workflow inside is refused, as its failure for B would fail both keys after A's charge.
	it('Mode by an expression giving "once", a charge at Stop Workflow inside, two events, the 2nd failing once: refused, or one charge each', async () => {
		const ids = ['xm_a', 'xm_b'];
		const sub = inlineSubWorkflow([once('Sub Charge xm', 'xm_b', 0, { onError: undefined })], {
			Webhook: { main: [link('Sub Charge xm')] },
		});
		const node = executeInline(sub, 'continueRegularOutput');
		node.parameters = { ...node.parameters, mode: '={{ "once" }}' };
		const data = workflow('wfr8-expr-mode', { nodes: [node], connections: {}, heads: ['Run Sub-workflow'] });
		await oneEffectEachOrRefused(data, eventBodies(ids));
	});

	// Inside a sub-workflow defined in the node, an Execute Workflow node that does not wait for its own sub-workflow:
	// checkOutcomeVisible's subWorkflowNotWaitedFor reads the step's nodes only, so nothing is refused. Here the
	// sub-execution nothing waits for has ended, and its record been kept, by the time the run ends: its failure is read
	// (trace.ts failuresInside), the key fails, and the retry charges once. Where n8n has not saved that record yet
	// when the run ends, the failure could not be read.
	it('a sub-workflow (Define Below) starting another without waiting for it, the charge there failing once: refused, or one charge', async () => {
		const id = 'nw_a';
		const innermost = inlineSubWorkflow([once('Sub Charge nw', id, 0, { onError: undefined })], {
			Webhook: { main: [link('Sub Charge nw')] },
		});
		const fireAndForget = executeInline(innermost, undefined, 'once', 'Start Inner');
		fireAndForget.parameters = { ...fireAndForget.parameters, options: { waitForSubWorkflow: false } };
		const middle = inlineSubWorkflow([fireAndForget], { Webhook: { main: [link('Start Inner')] } });
		const data = workflow('wfr8-not-waited-nested', {
			nodes: [executeInline(middle, 'continueRegularOutput', 'once', 'Run Outer')],
			connections: {},
			heads: ['Run Outer'],
		});
		const first = await deliver(data, [{ id }]);
		// Let the sub-execution nothing waits for end.
		await new Promise((resolve) => setTimeout(resolve, 500));
		const refused = first.answer === 503 && effectsFor(id) === 0;
		if (!refused) {
			if (is2xx(first.answer))
				expect({ state: (await statuses([id]))[0], effects: effectsFor(id) }).toEqual({ state: 'completed', effects: 1 });
			else {
				await provider(data, [{ id }]);
				expect(effectsFor(id)).toBe(1);
			}
		}
	});

	it('"once" (Continue) → a sub-workflow running Execute Workflow "each item" at Stop Workflow with a charge inside, two events: refused', async () => {
		const ids = ['ei_a', 'ei_b'];
		const innermost = inlineSubWorkflow([once('Sub Charge ei', 'ei_b', 0, { onError: undefined })], {
			Webhook: { main: [link('Sub Charge ei')] },
		});
		const middle = inlineSubWorkflow([executeInline(innermost, undefined, 'each', 'Run Each')], { Webhook: { main: [link('Run Each')] } });
		const data = workflow('wfr8-each-in-once-stop', {
			nodes: [executeInline(middle, 'continueRegularOutput', 'once', 'Run Outer')],
			connections: {},
			heads: ['Run Outer'],
		});
		await expectRefused(data, eventBodies(ids), 'events of this run together');
	});

	it('"once" (Continue) → Execute Workflow "each item" at Continue (regular output), two events, the 2nd failing once: one charge each', async () => {
		const ids = ['ec_a', 'ec_b'];
		const innermost = inlineSubWorkflow([once('Sub Charge ec', 'ec_b', 0, { onError: undefined })], {
			Webhook: { main: [link('Sub Charge ec')] },
		});
		const middle = inlineSubWorkflow([executeInline(innermost, 'continueRegularOutput', 'each', 'Run Each')], {
			Webhook: { main: [link('Run Each')] },
		});
		const data = workflow('wfr8-each-in-once-continue', {
			nodes: [executeInline(middle, 'continueRegularOutput', 'once', 'Run Outer')],
			connections: {},
			heads: ['Run Outer'],
		});
		await oneEffectEachOrRefused(data, eventBodies(ids));
	});
});

/* (d) Loop Over Items after Loop Over Items, nested loops, batch size by an expression -------------------------- */

describeWithN8n('Loop Over Items whose Done output feeds another Loop Over Items', () => {
	// Charge each event in one loop, then ship each in a second loop fed by the first one's Done output. Were the charge
	// to stop the workflow for B, A's item would wait in the first loop for a Done output that leads on into the second
	// loop (graph.ts loopDoneLeadsOn: a loop that runs after it, not an outer one taking the items back). Refused
	// (checkStopsBeforeLoopDone), and the judgement counts such an item as work still to run.
	it('charge loop (Stop Workflow, failing once for the 2nd) → Done → ship loop: refused, or each event charged and shipped once', async () => {
		const ids = ['dl_a', 'dl_b', 'dl_c'];
		const data = workflow('wfr8-loop-into-loop', {
			nodes: [
				loop('Charge Loop', 0),
				once('Charge dl', 'dl_b', 100, { onError: undefined }),
				loop('Ship Loop', 0),
				once('Ship dl', '', 100, { onError: 'continueErrorOutput' }),
			],
			connections: {
				'Charge Loop': { main: [link('Ship Loop'), link('Charge dl')] },
				'Charge dl': { main: [link('Charge Loop')] },
				'Ship Loop': { main: [[], link('Ship dl')] },
				'Ship dl': { main: [link('Ship Loop')] },
			},
			heads: ['Charge Loop'],
		});
		await oneEffectEachOrRefused(data, eventBodies(ids), 2);
	});

	// The other way round: every event is charged in the first loop, then the shipment would stop the workflow for B in
	// the second, with C charged and never shipped: C's key would fail and the retry charge C again. A node inside a
	// loop is one event's only where nothing acted on every event before the loop (wiring.ts stopsInLoopAfterEffect).
	it('charge loop (Continue) → Done → ship loop (Stop Workflow, failing once for the 2nd): refused, or A and C charged once', async () => {
		const ids = ['ds_a', 'ds_b', 'ds_c'];
		const data = workflow('wfr8-loop-into-loop-stop', {
			nodes: [
				loop('Charge Loop', 0),
				once('Charge ds', '', 100, { onError: 'continueErrorOutput' }),
				loop('Ship Loop', 0),
				lookup('Ship ds', 'ds_b', 100, { onError: undefined }),
			],
			connections: {
				'Charge Loop': { main: [link('Ship Loop'), link('Charge ds')] },
				'Charge ds': { main: [link('Charge Loop')] },
				'Ship Loop': { main: [[], link('Ship ds')] },
				'Ship ds': { main: [link('Ship Loop')] },
			},
			heads: ['Charge Loop'],
		});
		const first = await deliver(data, eventBodies(ids));
		if (first.answer === 503 && ids.every((id) => effectsFor(id) === 0)) return;
		const { lost } = await provider(data, eventBodies(ids));
		expect({ lost, a: effectsFor('ds_a'), c: effectsFor('ds_c') }).toEqual({ lost: [], a: 1, c: 1 });
	});

	// The inner loop resets when the outer one hands it the next event; without Reset n8n's inner loop takes that event as
	// one coming back and passes it to its Done output uncharged, with nothing failed (the key completes: the workflow's
	// own logic, not a failure n8n records).
	it('Loop in Loop (both batch 1, the inner one reset), the charge at Stop Workflow in the inner one failing once for the 2nd, Done outputs unconnected: one charge each', async () => {
		const ids = ['ll_a', 'll_b', 'll_c'];
		const data = workflow('wfr8-loop-in-loop', {
			nodes: [loop('Outer', 0), resetLoop('Inner', 100), once('Charge ll', 'll_b', 200, { onError: undefined })],
			connections: {
				Outer: { main: [[], link('Inner')] },
				Inner: { main: [link('Outer'), link('Charge ll')] },
				'Charge ll': { main: [link('Inner')] },
			},
			heads: ['Outer'],
		});
		await oneEffectEachOrRefused(data, eventBodies(ids));
	});

	it('a Wait inside Loop Over Items: refused before anything is reserved', async () => {
		const data = workflow('wfr8-wait-loop', {
			nodes: [
				loop('Loop', 0),
				baseNode('Pause', 'wait', 1.1, { amount: 2, unit: 'minutes' }, 100, { onError: undefined }),
				once('Charge wl', '', 100, { onError: 'continueErrorOutput' }),
			],
			connections: { Loop: { main: [[], link('Pause')] }, Pause: { main: [link('Charge wl')] }, 'Charge wl': { main: [link('Loop')] } },
			heads: ['Loop'],
		});
		await expectRefused(data, eventBodies(['wl_a', 'wl_b']), 'is inside a loop');
	});

	// Batch size given by an expression that gives 1: oneEventAtATime reads `Number('={{ 1 }}')`, not 1, and judges the
	// charge at Stop Workflow as getting the events together. The shape is the same as with batch size 1 written out
	// (the control below accepts it): refused (503), wrongly.
	it.failing(
		'Loop Over Items with batch size "={{ 1 }}", the charge at Stop Workflow failing once for the 2nd: accepted, one charge each',
		async () => {
			const ids = ['bx_a', 'bx_b', 'bx_c'];
			const data = workflow('wfr8-loop-batch-expr', {
				nodes: [loop('Loop', 0, '={{ 1 }}'), once('Charge bx', 'bx_b', 100, { onError: undefined })],
				connections: { Loop: { main: [[], link('Charge bx')] }, 'Charge bx': { main: [link('Loop')] } },
				heads: ['Loop'],
			});
			const first = await deliver(data, eventBodies(ids));
			expect(first.answer).not.toBe(503);
			const { lost } = await provider(data, eventBodies(ids));
			expect({ lost, effects: ids.map(effectsFor) }).toEqual({ lost: [], effects: [1, 1, 1] });
		},
	);

	it('control: the same with batch size 1 written out: accepted, one charge each', async () => {
		const ids = ['bn_a', 'bn_b', 'bn_c'];
		const data = workflow('wfr8-loop-batch-one', {
			nodes: [loop('Loop', 0), once('Charge bn', 'bn_b', 100, { onError: undefined })],
			connections: { Loop: { main: [[], link('Charge bn')] }, 'Charge bn': { main: [link('Loop')] } },
			heads: ['Loop'],
		});
		await oneEffectEachOrRefused(data, eventBodies(ids));
	});
});

/* (e) A step ending with a node that keeps nothing of the charge's outcome ------------------------------------ */

describeWithN8n('Settle chained after a No Operation behind the charge', () => {
	it('Charge (Continue, error output unconnected) → Record (No Operation) → Settle, failing once: failed, 500; one charge after the retry', async () => {
		const id = 'ch_a';
		const data = workflow('wfr8-settle-chained', {
			nodes: [once('Charge ch', id, 0, { onError: 'continueErrorOutput' }), noOp('Record', 0)],
			connections: { 'Charge ch': { main: [link('Record')] } },
			heads: ['Charge ch'],
			settleAfter: 'Record',
		});
		const { answers, lost } = await provider(data, [{ id }]);
		expect({ answers, lost, effects: effectsFor(id) }).toEqual({ answers: [500, 200], lost: [], effects: 1 });
	});
});
