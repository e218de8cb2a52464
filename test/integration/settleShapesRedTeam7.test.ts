import { baseNodesInstalled, effectsFor, loadBaseNodeFiles, useInMemoryDeduplication } from '../support/n8nBaseNodes';
import { addNodeTypes } from '../support/n8nEngine';
import { describeWithN8n, shapeHarness } from '../support/settleShapes';
import { baseNode, eventBodies, executeInline, inlineSubWorkflow, link, lookup, once } from '../support/settleWorkflows';

/*
 * Seventh red-team pass on the settlement rules (nodes/shared/settlement/): the rules that keep the events of
 * one run apart (wiring.ts checkStepTakesEventsApart) and the refusal of nodes that drop the provider's retries
 * (wiring.ts checkOutcomeVisible, dropsItemsSeenBefore), where the step runs inside a sub-workflow defined in
 * the Execute Workflow node; Loop Over Items whose Done output feeds the effect or leads on from a loop whose
 * charge stops the workflow (trace.ts, outcome.ts); a node failing after Settle. n8n-core's own engine with
 * n8n-nodes-base's nodes; the provider redelivers the whole delivery until it gets a 2xx.
 */

const { workflow, deliveries, statuses, provider, expectRefused, oneEffectEachOrRefused } = shapeHarness('shapesrt7', {
	baseNodes: ['n8n-nodes-base.set', 'n8n-nodes-base.stopAndError', 'n8n-nodes-base.removeDuplicates'],
	subWorkflows: true,
});
const { deliver } = deliveries;

beforeAll(async () => {
	if (!baseNodesInstalled()) return;
	await useInMemoryDeduplication();
	addNodeTypes(loadBaseNodeFiles({ 'n8n-nodes-base.respondToWebhook': 'RespondToWebhook/RespondToWebhook.node.js' }));
});

const noOp = (name: string, y: number) => baseNode(name, 'noOp', 1, {}, y, { onError: undefined });

describeWithN8n("Respond to Webhook inside the step's sub-workflow", () => {
	// n8n's Respond to Webhook (1.1+) inside a sub-workflow finds no Webhook node above it and fails, after the charge
	// before it: Settle would fail the key and every retry charge again. Refused as the same node in the step itself is
	// (wiring.ts checkSettleWiring, respondInsideStep), at any depth.
	it('one event, sub: Charge → Respond to Webhook: refused before anything is reserved', async () => {
		const respond = baseNode(
			'Sub Respond',
			'respondToWebhook',
			1.1,
			{ respondWith: 'json', responseBody: '={"ok":true}', options: {} },
			0,
			{
				onError: undefined,
			},
		);
		const sub = inlineSubWorkflow([lookup('Sub Charge rs', 'never', 0), respond], {
			Webhook: { main: [link('Sub Charge rs')] },
			'Sub Charge rs': { main: [link('Sub Respond')] },
		});
		const data = workflow('wfr7-sub-respond', {
			nodes: [executeInline(sub, 'continueRegularOutput')],
			connections: {},
			heads: ['Run Sub-workflow'],
		});
		await expectRefused(data, eventBodies(['rs_a']), 'answers the webhook from inside the business step');
	});
});

/* (a) The events-together rules, inside a sub-workflow run once with all items ------------------------------- */

describeWithN8n('several events in one sub-execution (Execute Workflow "Run Once With All Items")', () => {
	// Inside the sub-workflow the charge would get both events together at Stop Workflow: it would charge A, then throw
	// for B; the sub-execution would fail and Execute Workflow (Continue, regular output) return one error item paired
	// to every item it was given, both keys failing and the retry charging A again. The sub-workflow's nodes are judged
	// by the step's rules (wiring.ts checkInlineSubWorkflow), as the same charge in the step itself is.
	it('once, sub: Charge at the default On Error (Stop Workflow), two events, fails once for the 2nd: refused before anything is reserved', async () => {
		const ids = ['os_a', 'os_b'];
		const sub = inlineSubWorkflow([once('Sub Charge os', 'os_b', 0, { onError: undefined })], {
			Webhook: { main: [link('Sub Charge os')] },
		});
		const data = workflow('wfr7-once-stop', {
			nodes: [executeInline(sub, 'continueRegularOutput')],
			connections: {},
			heads: ['Run Sub-workflow'],
		});
		await expectRefused(data, eventBodies(ids), 'events of this run together and stops the workflow');
	});

	// Stop and Error after a charge (wiring.ts stopAfterEffect), in the sub-workflow: the charge's error output leads to
	// Stop and Error ("fail the run on a declined card"); A would be charged, B's failure would stop the sub-execution,
	// the parent's one error item would fail both keys and the retry charge A again.
	it('once, sub: Charge (Continue, error output → Stop and Error), two events, fails once for the 2nd: refused before anything is reserved', async () => {
		const ids = ['oe_a', 'oe_b'];
		const sub = inlineSubWorkflow(
			[
				once('Sub Charge oe', 'oe_b', 0, { onError: 'continueErrorOutput' }),
				noOp('Record', 0),
				baseNode('Abort', 'stopAndError', 1, { errorType: 'errorMessage', errorMessage: 'charge declined' }, 100, {
					onError: undefined,
				}),
			],
			{
				Webhook: { main: [link('Sub Charge oe')] },
				'Sub Charge oe': { main: [link('Record'), link('Abort')] },
			},
		);
		const data = workflow('wfr7-once-abort', {
			nodes: [executeInline(sub, 'continueRegularOutput')],
			connections: {},
			heads: ['Run Sub-workflow'],
		});
		await expectRefused(data, eventBodies(ids), 'ends the execution for');
	});

	// Retry On Fail and Continue with several events (wiring.ts retriedTogether), in the sub-workflow: n8n would run the
	// charge again for A and B when A's first try failed, and B, charged on the first try, would be charged again.
	it('once, sub: Charge (Continue, error output, Retry On Fail), two events, fails once for the 1st: refused before anything is reserved', async () => {
		const ids = ['or_a', 'or_b'];
		const sub = inlineSubWorkflow(
			[once('Sub Charge or', 'or_a', 0, { onError: 'continueErrorOutput', retryOnFail: true, maxTries: 2, waitBetweenTries: 0 })],
			{ Webhook: { main: [link('Sub Charge or')] } },
		);
		const data = workflow('wfr7-once-retry', {
			nodes: [executeInline(sub, 'continueRegularOutput')],
			connections: {},
			heads: ['Run Sub-workflow'],
		});
		await expectRefused(data, eventBodies(ids), 'is set to Retry On Fail');
	});

	// Execute Once after a charge (wiring.ts executeOnceAfterEffect), in the sub-workflow: its error item is paired by
	// n8n-core to the first item alone, so B's key would complete although the batch notice never went out for it.
	it('once, sub: Charge (Continue) → Notify Batch (Execute Once, Continue, error output) failing once: refused before anything is reserved', async () => {
		const ids = ['ox_a', 'ox_b'];
		const sub = inlineSubWorkflow(
			[
				once('Sub Charge ox', '', 0, { onError: 'continueErrorOutput' }),
				lookup('Notify Batch ox', 'ox_a', 0, { onError: 'continueErrorOutput', executeOnce: true }),
			],
			{ Webhook: { main: [link('Sub Charge ox')] }, 'Sub Charge ox': { main: [link('Notify Batch ox')] } },
		);
		const data = workflow('wfr7-once-execute-once', {
			nodes: [executeInline(sub, 'continueRegularOutput')],
			connections: {},
			heads: ['Run Sub-workflow'],
		});
		await expectRefused(data, eventBodies(ids), 'is set to Execute Once');
	});

	it('control: the same charge at Stop Workflow, Execute Workflow run once for each item: one charge each', async () => {
		const ids = ['oc_a', 'oc_b'];
		const sub = inlineSubWorkflow([once('Sub Charge oc', 'oc_b', 0, { onError: undefined })], {
			Webhook: { main: [link('Sub Charge oc')] },
		});
		const data = workflow('wfr7-each-stop', {
			nodes: [executeInline(sub, 'continueRegularOutput', 'each')],
			connections: {},
			heads: ['Run Sub-workflow'],
		});
		const { answers, lost } = await provider(data, eventBodies(ids));
		expect({ answers, lost, effects: ids.map(effectsFor) }).toEqual({ answers: [500, 200], lost: [], effects: [1, 1] });
	});
});

/* (b) A node that drops the provider's retries, inside a sub-workflow -------------------------------------- */

describeWithN8n('Remove Duplicates across executions inside the sub-workflow', () => {
	const seenBefore = () =>
		baseNode(
			'Seen Before?',
			'removeDuplicates',
			2,
			{
				operation: 'removeItemsSeenInPreviousExecutions',
				logic: 'removeItemsWithAlreadySeenKeyValues',
				dedupeValue: '={{ $json.body.id }}',
				options: {},
			},
			0,
			{ onError: undefined },
		);

	// Inside a sub-workflow defined in the node as in the step (wiring.ts dropsRetries): the first delivery would record
	// the event as seen and its charge fail; the retry's sub-execution would drop it, and the key complete, never charged.
	it('one event, sub: Remove Duplicates (previous executions, by event id) → Charge failing once: refused before anything is reserved', async () => {
		const id = 'rd_a';
		const sub = inlineSubWorkflow([seenBefore(), once('Sub Charge rd', 'rd_a', 0, { onError: undefined })], {
			Webhook: { main: [link('Seen Before?')] },
			'Seen Before?': { main: [link('Sub Charge rd')] },
		});
		const data = workflow('wfr7-dedupe-sub', {
			nodes: [executeInline(sub, 'continueRegularOutput')],
			connections: {},
			heads: ['Run Sub-workflow'],
		});
		await expectRefused(data, [{ id }], 'removes items processed in previous executions');
	});

	it('control: the same node in the step itself: refused before anything is reserved', async () => {
		const data = workflow('wfr7-dedupe-step', {
			nodes: [seenBefore(), once('Charge rt', 'rt_a', 0, { onError: undefined })],
			connections: { 'Seen Before?': { main: [link('Charge rt')] } },
			heads: ['Seen Before?'],
		});
		await expectRefused(data, [{ id: 'rt_a' }]);
	});
});

/* (c) Loop Over Items whose Done output feeds the effect --------------------------------------------------- */

describeWithN8n('Loop Over Items (batch 1) with the effect on its Done output', () => {
	const loopShape = (tag: string, failOnce: string, onError: 'continueErrorOutput' | undefined) => ({
		nodes: [
			baseNode('Loop', 'splitInBatches', 3, { batchSize: 1, options: {} }, 0, { onError: undefined }),
			// At Continue (regular output) its failure goes back into the loop; through an unconnected error output it
			// would end the loop with the earlier events waiting for Done (refused: checkStopsBeforeLoopDone).
			lookup(`Enrich ${tag}`, '', 100, { onError: 'continueRegularOutput' }),
			once(`Charge ${tag}`, failOnce, 0, { onError }),
		],
		connections: {
			Loop: { main: [link(`Charge ${tag}`), link(`Enrich ${tag}`)] },
			[`Enrich ${tag}`]: { main: [link('Loop')] },
		},
		heads: ['Loop'],
	});

	it('the charge on Done at Continue (error output), failing once for the 2nd of three: one charge each', async () => {
		const ids = ['ld_a', 'ld_b', 'ld_c'];
		const data = workflow('wfr7-loop-done', loopShape('ld', 'ld_b', 'continueErrorOutput'));
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

	it('the charge on Done at the default On Error, three events together: refused before anything is reserved', async () => {
		await expectRefused(workflow('wfr7-loop-done-stop', loopShape('lx', 'lx_b', undefined)), eventBodies(['lx_a', 'lx_b', 'lx_c']));
	});
});

/* (d) Loop Over Items (batch 1) at Stop Workflow, its Done output leading on ----------------------------- */

describeWithN8n('Loop Over Items (batch 1), the charge inside at the default On Error, the Done output wired on', () => {
	const stoppingLoop = (tag: string, failOnce: string, done: string[], extraNodes: ReturnType<typeof noOp>[] = []) => ({
		nodes: [
			baseNode('Loop', 'splitInBatches', 3, { batchSize: 1, options: {} }, 0, { onError: undefined }),
			once(`Charge ${tag}`, failOnce, 100, { onError: undefined }),
			...extraNodes,
		],
		connections: {
			Loop: { main: [link(...done), link(`Charge ${tag}`)] },
			[`Charge ${tag}`]: { main: [link('Loop')] },
		},
		heads: ['Loop'],
	});

	it('control: the Done output unconnected, the charge failing once for the 2nd of three: one charge each', async () => {
		await oneEffectEachOrRefused(workflow('wfr7-loop-stop-open', stoppingLoop('lo', 'lo_b', [])), eventBodies(['lo_a', 'lo_b', 'lo_c']));
	});

	// The charge would stop the execution at B with A's item back in the loop, waiting for the Done output, which leads
	// to a summary: that work still to run would fail A's key although A was charged, and the retry charge A again.
	// Refused (wiring.ts checkStopsBeforeLoopDone); with the Done output unconnected, accepted (the control above).
	it('the Done output → No Operation (a summary), the charge at Stop Workflow failing once for the 2nd of three: refused before anything is reserved', async () => {
		await expectRefused(
			workflow('wfr7-loop-stop-summary', stoppingLoop('ls', 'ls_b', ['Summary'], [noOp('Summary', 0)])),
			eventBodies(['ls_a', 'ls_b', 'ls_c']),
			'whose Done output leads on',
		);
	});

	// The wiring people draw first: Settle chained after the step, here after the loop's Done output.
	it('Settle chained after the Done output, the charge at Stop Workflow failing once for the 2nd of three: refused before anything is reserved', async () => {
		const shape = stoppingLoop('lt', 'lt_b', []);
		await expectRefused(
			workflow('wfr7-loop-stop-settle', { ...shape, settleAfter: 'Loop' }),
			eventBodies(['lt_a', 'lt_b', 'lt_c']),
			'whose Done output leads on',
		);
	});
});

/* (e) A node failing after Settle ----------------------------------------------------------------------- */

describeWithN8n("a node failing on Settle's Completed output", () => {
	// Settle has completed the key when Notify (Stop Workflow, above the answer) fails: n8n answers 500 for the failed
	// execution, and the provider's retry is answered as a duplicate. One charge.
	it('Settle → Completed → Notify (default On Error) failing once, then the answer: one charge, completed, 200 on the retry', async () => {
		const id = 'na_a';
		const data = workflow('wfr7-fail-after-settle', {
			nodes: [once('Charge na', '', 0, { onError: 'continueErrorOutput' }), lookup('Notify na', 'na_a', 100, { onError: undefined })],
			connections: {
				Settle: {
					main: [
						link('Notify na', 'Respond 200 (completed)'),
						link('Respond 500 (failed)'),
						link('Respond 200 (completion refused)'),
						link('Respond 503 (not settled)'),
					],
				},
			},
			heads: ['Charge na'],
		});
		const { answers, lost } = await provider(data, [{ id }]);
		expect({ answers, lost, effects: effectsFor(id), states: await statuses([id]) }).toEqual({
			answers: [500, 200],
			lost: [],
			effects: 1,
			states: ['completed'],
		});
	});
});
