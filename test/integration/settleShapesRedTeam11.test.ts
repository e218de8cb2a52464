import type { INode } from 'n8n-workflow';

import { effectsFor } from '../support/n8nBaseNodes';

import { describeWithN8n, shapeHarness } from '../support/settleShapes';
import { baseNode, executeInline, inlineSubWorkflow, link, lookup, once, setField, toInput } from '../support/settleWorkflows';
import { inProcessTriggerShapes } from '../support/triggerProvider';

import { n8nFolderForTheFile } from '../support/triggerWebhookCall';

/*
 * Eleventh red-team pass on the settlement rules (nodes/shared/settlement/): the rule that counts an effect on
 * another branch of the same output as one before a node that may stop the run (wiring.ts effectNotAfter,
 * sameEventsBeside), with several events: branches that part at a node sending the same items to two outputs
 * (Switch "Send data to all matching outputs"), at a disabled node, or that meet again at the effect; and
 * everyday shapes it must leave alone (one event per run, nodes at Continue, No Operation or Merge beside).
 * n8n-core's own engine with n8n-nodes-base's nodes; the provider redelivers the whole delivery until it gets a
 * 2xx. A row marked failing breaks a promise: its comment says what happens.
 */

// Before anything else: n8n-core keeps the n8n folder it first reads for the rest of the file.
const n8nFolder = n8nFolderForTheFile('rt11-n8n-');

const { workflow, deliveries, provider, statuses } = shapeHarness('shapesrt11', {
	baseNodes: ['n8n-nodes-base.set', 'n8n-nodes-base.stopAndError', 'n8n-nodes-base.switch'],
	subWorkflows: true,
});
const { deliver } = deliveries;

/* Nodes ------------------------------------------------------------------------------------------------------ */

/** If (2.2) at n8n's default On Error, strict type validation: `amount > 100` cannot be evaluated for a non-number amount. */
const strictAmountIf = (name: string, y: number, extra: Partial<INode> = {}) =>
	baseNode(
		name,
		'if',
		2.2,
		{
			conditions: {
				options: { caseSensitive: true, leftValue: '', typeValidation: 'strict', version: 2 },
				conditions: [{ id: 'c1', leftValue: '={{ $json.body.amount }}', rightValue: 100, operator: { type: 'number', operation: 'gt' } }],
				combinator: 'and',
			},
			looseTypeValidation: false,
			options: {},
		},
		y,
		{ onError: undefined, ...extra },
	);

/** A Switch (3.2) rule: true when the expression `value` is true (loose types). */
const rule = (value: string) => ({
	conditions: {
		options: { caseSensitive: true, leftValue: '', typeValidation: 'loose', version: 2 },
		conditions: [{ id: 'r', leftValue: value, rightValue: '', operator: { type: 'boolean', operation: 'true', singleValue: true } }],
		combinator: 'and',
	},
});

/**
 * Switch (3.2) in Rules mode at n8n's default On Error, one output per rule. With `allMatching` ("Send data to all
 * matching outputs") an event goes to every output whose rule holds; without, to the first.
 */
const rulesSwitch = (name: string, rules: string[], allMatching: boolean, y = 0) =>
	baseNode(
		name,
		'switch',
		3.2,
		{ mode: 'rules', rules: { values: rules.map(rule) }, looseTypeValidation: true, options: { allMatchingOutputs: allMatching } },
		y,
		{ onError: undefined },
	);

const stopAndError = (name: string, y: number) =>
	baseNode(name, 'stopAndError', 1, { errorType: 'errorMessage', errorMessage: 'Order needs a manual review' }, y, { onError: undefined });

type Bodies = Array<{ id: string } & Record<string, unknown>>;

/**
 * What a trustworthy package does with a delivery one event of which fails on every attempt: refuses it before
 * anything is reserved (503, no effect), or acts at most once for each event of `once` through `attempts` deliveries.
 */
async function refusedOrAtMostOnce(data: Parameters<typeof deliver>[0], bodies: Bodies, onceIds: string[], attempts = 3): Promise<void> {
	const first = await deliver(data, bodies);
	if (first.answer === 503 && bodies.every((body) => effectsFor(body.id) === 0)) return;
	await provider(data, bodies, attempts - 1);
	expect(onceIds.map(effectsFor)).toEqual(onceIds.map(() => 1));
}

/** Accepted: the first delivery answered 200, every key completed, one effect each for `charged`. */
async function acceptedOnce(data: Parameters<typeof deliver>[0], bodies: Bodies, charged: string[]): Promise<void> {
	const ids = bodies.map((body) => body.id);
	const first = await deliver(data, bodies);
	expect({ answer: first.answer, keys: await statuses(ids), effects: charged.map(effectsFor) }).toEqual({
		answer: 200,
		keys: ids.map(() => 'completed'),
		effects: charged.map(() => 1),
	});
}

/* (a) Branches that take the same events, missed ------------------------------------------------------------ */

describeWithN8n('several events: branches that take the same events without parting at one output', () => {
	// Switch (Rules, "Send data to all matching outputs"): every order → Charge (top, Continue (error output)); every
	// order → a strict If (Stop Workflow) routing big orders to Sales. Both outputs carry both events: were the If to
	// fail on B's amount after the Charge's branch ran for both, every redelivery would charge A again. Branches are
	// apart only where a node sends each item to one output (wiring.ts partedFrom); this Switch does not: refused.
	it('Switch (all matching outputs): Charge on one route, a strict If (Stop Workflow) on the other, B unreadable: refused, or A charged once', async () => {
		const data = workflow('wfr11-switch-all-if', {
			nodes: [
				rulesSwitch('Route', ['={{ !!$json.body.id }}', '={{ !!$json.body.id }}'], true),
				once('Charge sa', '', 0, { onError: 'continueErrorOutput' }),
				strictAmountIf('Big Order?', 100),
				lookup('Notify Sales sa', '', 100, { onError: 'continueErrorOutput' }),
			],
			connections: {
				Route: { main: [link('Charge sa'), link('Big Order?')] },
				'Big Order?': { main: [link('Notify Sales sa'), []] },
			},
			heads: ['Route'],
		});
		await refusedOrAtMostOnce(
			data,
			[
				{ id: 'sa_a', amount: 50 },
				{ id: 'sa_b', amount: 'fifty' },
			],
			['sa_a'],
		);
	});

	// The same Switch: every order → Charge; orders flagged for review → Stop and Error. B, flagged, goes to both: the
	// Charge's branch runs first for A and B, then Stop and Error ends the run. Its failure is traced to the items it
	// was given (B alone): A's key completes, B's fails on every attempt (its own step failed after its charge).
	it('Switch (all matching outputs): Charge on one route, Stop and Error for flagged orders on another, B flagged: refused, or A charged once', async () => {
		const data = workflow('wfr11-switch-all-stop', {
			nodes: [
				rulesSwitch('Route', ['={{ !!$json.body.id }}', '={{ $json.body.review === true }}'], true),
				once('Charge ss', '', 0, { onError: 'continueErrorOutput' }),
				stopAndError('Review', 100),
			],
			connections: { Route: { main: [link('Charge ss'), link('Review')] } },
			heads: ['Route'],
		});
		await refusedOrAtMostOnce(
			data,
			[
				{ id: 'ss_a', review: false },
				{ id: 'ss_b', review: true },
			],
			['ss_a'],
		);
	});

	// The same Switch, a lookup set to Execute Once (Continue (regular output)) on the second route, failing once for
	// the first event: its failure would be every event's (checkExecuteOnce) after both were charged. Refused, as
	// Execute Once after an effect is.
	it('Switch (all matching outputs): Charge on one route, an Execute Once lookup (Continue) on the other failing once: refused, or B charged once', async () => {
		const data = workflow('wfr11-switch-all-once', {
			nodes: [
				rulesSwitch('Route', ['={{ !!$json.body.id }}', '={{ !!$json.body.id }}'], true),
				once('Charge so', '', 0, { onError: 'continueErrorOutput' }),
				lookup('Daily Totals so', 'so_a', 100, { onError: 'continueRegularOutput', executeOnce: true }),
			],
			connections: { Route: { main: [link('Charge so'), link('Daily Totals so')] } },
			heads: ['Route'],
		});
		await refusedOrAtMostOnce(data, [{ id: 'so_a' }, { id: 'so_b' }], ['so_b']);
	});

	// The same Switch, an Execute Workflow (Continue (regular output), Run Once with All Items) on the second route,
	// its sub-workflow defined in the node with a strict If (Stop Workflow): the If fails on B, the sub-workflow's
	// failure would be every event's. The inner If is judged after what acted before or beside the Execute Workflow
	// node (checkInlineSubWorkflow's `outside`), the Charge on the other route among them: refused.
	it('Switch (all matching outputs): Charge on one route, Execute Workflow whose sub-workflow has a strict If (Stop Workflow) on the other, B unreadable: refused, or A charged once', async () => {
		const json = inlineSubWorkflow([strictAmountIf('Sub Big?', 0), lookup('Sub Notify sx', '', 0, { onError: 'continueErrorOutput' })], {
			Webhook: { main: [link('Sub Big?')] },
			'Sub Big?': { main: [link('Sub Notify sx'), []] },
		});
		const data = workflow('wfr11-switch-all-sub', {
			nodes: [
				rulesSwitch('Route', ['={{ !!$json.body.id }}', '={{ !!$json.body.id }}'], true),
				once('Charge sx', '', 0, { onError: 'continueErrorOutput' }),
				{ ...executeInline(json, 'continueRegularOutput'), position: [400, 100] },
			],
			connections: { Route: { main: [link('Charge sx'), link('Run Sub-workflow')] } },
			heads: ['Route'],
		});
		await refusedOrAtMostOnce(
			data,
			[
				{ id: 'sx_a', amount: 50 },
				{ id: 'sx_b', amount: 'fifty' },
			],
			['sx_a'],
		);
	});

	// A disabled Edit Fields node (kept for later) where the two branches part: n8n passes its items on to both the
	// Charge and the strict If. A disabled node sends no item to one output only: the branches take the same events,
	// and the If's failure on B after the Charge's branch ran for both would charge A again. Refused.
	it('a disabled Edit Fields → [Charge (top), strict If (Stop Workflow) below], B unreadable: refused, or A charged once', async () => {
		const data = workflow('wfr11-disabled-fork', {
			nodes: [
				setField('Tag Order', 'tag', 'order', 0, { disabled: true }),
				once('Charge df', '', 0, { onError: 'continueErrorOutput' }),
				strictAmountIf('Big Order?', 100),
				lookup('Notify Sales df', '', 100, { onError: 'continueErrorOutput' }),
			],
			connections: {
				'Tag Order': { main: [link('Charge df', 'Big Order?')] },
				'Big Order?': { main: [link('Notify Sales df'), []] },
			},
			heads: ['Tag Order'],
		});
		await refusedOrAtMostOnce(
			data,
			[
				{ id: 'df_a', amount: 50 },
				{ id: 'df_b', amount: 'fifty' },
			],
			['df_a'],
		);
	});

	// The Ops notification (top, Continue (error output)) gets every event from Reserve, and again the big orders from
	// a strict If (Stop Workflow) below: the same node on both branches. n8n reaches it without passing the If, so it
	// counts as beside the If (effectNotAfter): refused.
	it('Notify Ops (top) fed by Reserve and by a strict If (Stop Workflow) below, B unreadable: refused, or A notified once', async () => {
		const data = workflow('wfr11-rejoin-at-effect', {
			nodes: [once('Notify Ops rj', '', 0, { onError: 'continueErrorOutput' }), strictAmountIf('Big Order?', 100)],
			connections: { 'Big Order?': { main: [link('Notify Ops rj'), []] } },
			heads: ['Notify Ops rj', 'Big Order?'],
		});
		await refusedOrAtMostOnce(
			data,
			[
				{ id: 'rj_a', amount: 50 },
				{ id: 'rj_b', amount: 'fifty' },
			],
			['rj_a'],
		);
	});
});

/* (b) Shapes the rule must still refuse ----------------------------------------------------------------------- */

describeWithN8n('several events: branches of one output that meet again, or a loop on another route', () => {
	// Charge (top) and a strict If (Stop Workflow) on Reserve's New output, both into a Merge (append): the Charge is
	// on a branch of the same output, before or after the If.
	it('Charge (top) and a strict If (Stop Workflow) both into a Merge, B unreadable: refused before anything is reserved', async () => {
		const data = workflow('wfr11-rejoin-merge', {
			nodes: [
				once('Charge rm', '', 0, { onError: 'continueErrorOutput' }),
				strictAmountIf('Big Order?', 100),
				baseNode('Join', 'merge', 3, {}, 0, { onError: undefined }),
			],
			connections: {
				'Charge rm': { main: [toInput('Join', 0)] },
				'Big Order?': { main: [toInput('Join', 1), toInput('Join', 1)] },
			},
			heads: ['Charge rm', 'Big Order?'],
		});
		const first = await deliver(data, [
			{ id: 'rm_a', amount: 50 },
			{ id: 'rm_b', amount: 'fifty' },
		]);
		expect({ answer: first.answer, effects: ['rm_a', 'rm_b'].map(effectsFor) }).toEqual({ answer: 503, effects: [0, 0] });
	});

	// Switch (all matching outputs): Charge on one route, Loop Over Items (1) → ship check (Stop Workflow) on the
	// other: the loop rule reads every node of the step outside the loop (effectBeforeLoop), the other route too.
	it('Switch (all matching outputs): Charge on one route, Loop Over Items (1) → check (Stop Workflow) on the other: refused, or B charged once', async () => {
		const data = workflow('wfr11-switch-all-loop', {
			nodes: [
				rulesSwitch('Route', ['={{ !!$json.body.id }}', '={{ !!$json.body.id }}'], true),
				once('Charge sl', '', 0, { onError: 'continueErrorOutput' }),
				baseNode('Each', 'splitInBatches', 3, { batchSize: 1, options: {} }, 100, { onError: undefined }),
				lookup('Ship Check sl', 'sl_a', 100, { onError: undefined }),
			],
			connections: {
				Route: { main: [link('Charge sl'), link('Each')] },
				Each: { main: [[], link('Ship Check sl')] },
				'Ship Check sl': { main: [link('Each')] },
			},
			heads: ['Route'],
		});
		const ids = ['sl_a', 'sl_b'];
		const first = await deliver(
			data,
			ids.map((id) => ({ id })),
		);
		if (first.answer === 503 && ids.every((id) => effectsFor(id) === 0)) return;
		await provider(
			data,
			ids.map((id) => ({ id })),
		);
		expect(effectsFor('sl_b')).toBe(1);
	});

	// Control: Switch (first matching output only), big orders to Stop and Error, the others to the Charge: the routes
	// take other events. A is charged once, B's key fails on every attempt.
	it('Switch (first match): Charge for small orders, Stop and Error for big ones: accepted, A charged once', async () => {
		const data = workflow('wfr11-switch-first', {
			nodes: [
				rulesSwitch('Route', ['={{ $json.body.review !== true }}', '={{ $json.body.review === true }}'], false),
				once('Charge sf', '', 0, { onError: 'continueErrorOutput' }),
				stopAndError('Review', 100),
			],
			connections: { Route: { main: [link('Charge sf'), link('Review')] } },
			heads: ['Route'],
		});
		const bodies = [
			{ id: 'sf_a', review: false },
			{ id: 'sf_b', review: true },
		];
		const first = await deliver(data, bodies);
		expect(first.answer).not.toBe(503);
		await provider(data, bodies, 2);
		expect({ a: effectsFor('sf_a'), b: effectsFor('sf_b'), keys: await statuses(['sf_a', 'sf_b']) }).toEqual({
			a: 1,
			b: 0,
			keys: ['completed', 'failed'],
		});
	});
});

/* (c) Everyday shapes the rule must leave alone ------------------------------------------------------------- */

describeWithN8n('shapes that must be accepted', () => {
	it('one event per run: Charge (top) beside a strict If (Stop Workflow): accepted, charged once', async () => {
		const data = workflow('wfr11-one-event', {
			nodes: [
				once('Charge oe', '', 0, { onError: 'continueErrorOutput' }),
				strictAmountIf('Big Order?', 100),
				lookup('Notify Sales oe', '', 100, { onError: 'continueErrorOutput' }),
			],
			connections: { 'Big Order?': { main: [link('Notify Sales oe'), []] } },
			heads: ['Charge oe', 'Big Order?'],
		});
		await acceptedOnce(data, [{ id: 'oe_a', amount: 500 }], ['oe_a']);
	});

	it('two events: Charge (top) beside an Edit Fields at Continue (regular output): accepted, one charge each', async () => {
		const data = workflow('wfr11-beside-continue', {
			nodes: [
				once('Charge bc', '', 0, { onError: 'continueErrorOutput' }),
				setField('Stamp', 'seen', '={{ $json.body.id }}', 100, { onError: 'continueRegularOutput' }),
			],
			connections: {},
			heads: ['Charge bc', 'Stamp'],
		});
		await acceptedOnce(data, [{ id: 'bc_a' }, { id: 'bc_b' }], ['bc_a', 'bc_b']);
	});

	it('two events: Charge (top) beside a No Operation, both into a Merge (append): accepted, one charge each', async () => {
		const data = workflow('wfr11-beside-noop-merge', {
			nodes: [
				once('Charge bn', '', 0, { onError: 'continueErrorOutput' }),
				baseNode('Pass', 'noOp', 1, {}, 100, { onError: undefined }),
				baseNode('Join', 'merge', 3, {}, 0, { onError: undefined }),
			],
			connections: { 'Charge bn': { main: [toInput('Join', 0)] }, Pass: { main: [toInput('Join', 1)] } },
			heads: ['Charge bn', 'Pass'],
		});
		await acceptedOnce(data, [{ id: 'bn_a' }, { id: 'bn_b' }], ['bn_a', 'bn_b']);
	});

	// An If (Stop Workflow) whose true branch charges and whose false branch ends in Stop and Error: the two outputs
	// take other events. A charged once, B's key failed on each attempt.
	it("two events: If's true → Charge, false → Stop and Error: accepted, A charged once", async () => {
		const data = workflow('wfr11-if-two-outputs', {
			nodes: [
				strictAmountIf('Big Enough?', 0),
				stopAndError('Too Small', 100),
				once('Charge it', '', 0, { onError: 'continueErrorOutput' }),
			],
			connections: { 'Big Enough?': { main: [link('Charge it'), link('Too Small')] } },
			heads: ['Big Enough?'],
		});
		const bodies = [
			{ id: 'it_a', amount: 500 },
			{ id: 'it_b', amount: 5 },
		];
		const first = await deliver(data, bodies);
		expect(first.answer).not.toBe(503);
		await provider(data, bodies, 2);
		expect({ a: effectsFor('it_a'), b: effectsFor('it_b'), keys: await statuses(['it_a', 'it_b']) }).toEqual({
			a: 1,
			b: 0,
			keys: ['completed', 'failed'],
		});
	});
});

/* (d) The Idempotent Webhook trigger ------------------------------------------------------------------------- */

describeWithN8n('the trigger, one event per delivery: an If (Stop Workflow) beside the charge', () => {
	const { provide, record } = inProcessTriggerShapes('one', n8nFolder);

	it('Charge (top) beside a strict If (Stop Workflow), a readable amount: accepted, charged once, key completed', async () => {
		const id = 'to_a';
		const { answers } = await provide(
			{ id, amount: 500 },
			{
				nodes: [
					once('Charge to', '', 0, { onError: 'continueErrorOutput' }),
					strictAmountIf('Big Order?', 100),
					lookup('Notify Sales to', '', 100, { onError: 'continueErrorOutput' }),
				],
				connections: { 'Big Order?': { main: [link('Notify Sales to'), []] } },
				heads: ['Charge to', 'Big Order?'],
			},
			1,
		);
		expect({ answers, charges: effectsFor(id), key: (await record(id))?.status }).toEqual({ answers: [200], charges: 1, key: 'completed' });
	});
});

describeWithN8n('the trigger with an Events Path: a Switch sending every event to every matching output', () => {
	const { provide, record } = inProcessTriggerShapes('events', n8nFolder, { eventsPath: 'body.events' });

	// The trigger judges the events of one delivery by checkEventsApart's rules (eventsTogetherAfterTrigger): the
	// Switch's two outputs carry the same events, and the strict If beside the Charge is refused at publish.
	it('two events, Switch (all matching outputs): Charge on one route, a strict If (Stop Workflow) on the other, B unreadable: refused, or A charged once', async () => {
		const events = [
			{ id: 'tw_a', amount: 50 },
			{ id: 'tw_b', amount: 'fifty' },
		];
		await provide(
			{ events },
			{
				nodes: [
					rulesSwitch('Route', ['={{ !!$json.body.id }}', '={{ !!$json.body.id }}'], true),
					once('Charge tw', '', 0, { onError: 'continueErrorOutput' }),
					strictAmountIf('Big Order?', 100),
					lookup('Notify Sales tw', '', 100, { onError: 'continueErrorOutput' }),
				],
				connections: {
					Route: { main: [link('Charge tw'), link('Big Order?')] },
					'Big Order?': { main: [link('Notify Sales tw'), []] },
				},
				heads: ['Route'],
			},
			3,
		);
		// Refused at the trigger's first step: nothing charged. Accepted: A charged once, its key completed.
		if (effectsFor('tw_a') === 0 && effectsFor('tw_b') === 0) return;
		expect({ a: effectsFor('tw_a'), key: (await record('tw_a'))?.status }).toEqual({ a: 1, key: 'completed' });
	});
});
