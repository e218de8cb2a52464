import { type IConnections, type INode } from 'n8n-workflow';

import { withCodeRunner } from '../support/codeTaskRunner';
import { describeWithN8n } from '../support/n8nBaseNodes';
import { link } from '../support/settleWorkflows';
import {
	baseNode as node,
	ifTrue,
	keepUnlessSkipped,
	LOOKUP_BODY,
	subWorkflowRedTeam,
	threeEvents,
	type Step,
	type SubWorkflowSource,
} from '../support/triggerRedTeam';
import type { SubWorkflowCode } from '../support/triggerProvider';

/*
 * Red team 52: the rules on sub-workflow answers n8n does not return (trace.ts answersNotReturned/droppedOnTheWayTo),
 * on sub-workflows whose branches end apart (wiring.ts checkSubWorkflowEndsInOne) and on Execute Once
 * (checkFirstEventOnly), tried for false positives (a working workflow refused or failed forever) and false negatives
 * (an event completed without its effect). Each row asserts what a demanding user expects: one charge per event after
 * the provider's retries, every key completed, a workflow that works in n8n not refused.
 *
 * What the pass found (each row seen failing before the change that answers it):
 *  F1 (C1, C2, C9, C10): a sub-workflow node whose answer is its success output (left unconnected) while its error output
 *     leads on (Log Failure, a NoOp, a fallback Lookup Backup): when one event fails there, the error branch runs last and
 *     n8n returns only its items; the other events' answers never came back and were completed uncharged (lost). Now
 *     such a first output is an end of its own (answersLeftThere: only the error output taken, carrying failures), and
 *     endsOf counts the node: refused at publish where defined in the node; from the database, A and C are failed once
 *     and charged by their retry. B, charged on the recovery's answer and failed, is charged again (documented: "a
 *     recovery after an error output", as F4).
 *  F2 (D1, D2): an If inside (Source: Database) dropping events into an end of their own (a Log, a NoOp) while the kept
 *     branch runs last: the dropped events are failed, and their retry, alone, hands their end's items on to the step,
 *     as n8n does with one event per delivery (D1: B and C charged, logged twice). Documented; defined in the node, the
 *     shape is refused at publish.
 *  F3 (B3, and rt50's side-branch row): Log beside Lookup, every event on both (works in n8n): was refused at publish;
 *     an end fed only by outputs that also feed other nodes is now a side branch, not an end.
 *  F4 (A4, A7; the failuresInside rule): a failure handled inside by an error output leading to a fallback that
 *     answers: the event is failed although the step after acted on the fallback's answer; charged twice. Documented.
 *  Close calls: D5 (database): Token at Execute Once joined by position keeps A alone, B and C completed uncharged
 *     (Execute Once from the database is documented as not guaranteed); C8: nested ends apart inline not refused at
 *     publish, the record catches it (A failed once, retried).
 */

describeWithN8n('red team 52: answers not returned, ends apart, Execute Once', () => {
	const database = new Map<string, SubWorkflowCode>();
	const { charges, dump, effectsAt, failNext, httpCall, provide, record, refusedAtPublish, runTrigger, statuses, triggerStep, useTrigger } =
		subWorkflowRedTeam({
			tag: 'rt52',
			route: (route, body) => (route === 'lookup' ? { ...body } : undefined),
			engine: (engine) => withCodeRunner(engine as never) as typeof engine,
			subWorkflows: { savingSettings: true, database },
			baseNodeFiles: {
				'n8n-nodes-base.set': 'Set/Set.node.js',
				'n8n-nodes-base.filter': 'Filter/Filter.node.js',
				'n8n-nodes-base.code': 'Code/Code.node.js',
				'n8n-nodes-base.switch': 'Switch/Switch.node.js',
			},
		});

	/* Builders ---------------------------------------------------------------------------------------------------------- */
	const at = (inner: INode, y: number, x = inner.position[0]): INode => ({ ...inner, position: [x, y] });
	const trigger = (version = 1.2) => node('Webhook', 'executeWorkflowTrigger', version, { inputSource: 'passthrough' });
	const subOf = (nodes: INode[], connections: IConnections): SubWorkflowCode => ({ nodes, connections, settings: {} });

	const tag = (name = 'Tag') =>
		node(
			name,
			'set',
			3.4,
			{
				mode: 'manual',
				assignments: { assignments: [{ id: 't', name: 'tagged', value: true, type: 'boolean' }] },
				includeOtherFields: true,
				options: {},
			},
			{ onError: 'continueRegularOutput' },
		);
	/** Code (all items) making new items { body } without pairedItem. */
	const renumber = (name = 'Renumber') =>
		node(name, 'code', 2, { mode: 'runOnceForAllItems', jsCode: 'return $input.all().map((i) => ({ json: { body: i.json.body } }));' });
	const lookup = (name = 'Lookup', onError: INode['onError'] = 'continueErrorOutput') => httpCall(name, 'lookup', { onError }, LOOKUP_BODY);
	const log = (name = 'Log') => httpCall(name, 'notify', { onError: 'continueErrorOutput' }, LOOKUP_BODY);
	const loop = () => node('Loop', 'splitInBatches', 3, { batchSize: 1, options: {} });
	const merge = (name = 'Join') => node(name, 'merge', 3.2, { mode: 'append', options: {} });
	const runSub = (name: string, source: SubWorkflowSource, mode: 'once' | 'each' = 'once') =>
		node(
			name,
			'executeWorkflow',
			1.3,
			{ ...(source as Record<string, unknown>), mode, options: { waitForSubWorkflow: true } },
			{ onError: 'continueRegularOutput' },
		);

	const inline = (workflow: SubWorkflowCode): SubWorkflowSource => ({ source: 'parameter', workflowJson: JSON.stringify(workflow) });
	let stored = 0;
	const fromDatabase = (workflow: SubWorkflowCode): SubWorkflowSource => {
		const id = `rt52-db-${++stored}`;
		database.set(id, workflow);
		return { source: 'database', workflowId: { __rl: true, value: id, mode: 'id' } };
	};
	const sources = (make: () => SubWorkflowCode) =>
		[
			['inline', () => inline(make())],
			['database', () => fromDatabase(make())],
		] as const;

	/** One event, no Events Path. */
	const runOne = async (p: string, step: Step, fail?: string, event: Record<string, unknown> = { amount: 300, vip: true }) => {
		const id = `${p}_a`;
		useTrigger(`wf-rt52-${p}`);
		const refusal = await refusedAtPublish(step);
		if (fail) failNext(fail.replace('%', id));
		const { answers, runs } = await provide({ id, ...event }, step);
		dump(p, runs);
		return {
			refusal: typeof refusal === 'string' ? refusal.slice(0, 200) : false,
			answers,
			charges: charges([id]),
			keys: await statuses([id]),
		};
	};
	const ONE_DONE = { refusal: false, charges: [1], keys: ['completed'] };
	const ALL_DONE = { refusal: false, charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] };
	const fails = (p: string, what: string) => what.replace(/:(\w)$/, `:${p}_$1`);

	/* Sub-workflow shapes ----------------------------------------------------------------------------------------------- */
	/** Trigger → Log (top, an end) and → Renumber (Code, no pairedItem) → Lookup (bottom, last). */
	const sideLogRenumberSub = () =>
		subOf([trigger(), at(log(), -200), at(renumber(), 200), at(lookup(), 200, 600)], {
			Webhook: {
				main: [
					[
						{ node: 'Log', type: 'main', index: 0 },
						{ node: 'Renumber', type: 'main', index: 0 },
					],
				],
			},
			Log: { main: [[], []] },
			Renumber: { main: [link('Lookup')] },
			Lookup: { main: [[], []] },
		} as IConnections);
	/** Trigger → Lookup, its success output the answer (unconnected), its error output → Log Failure (notify). */
	const errorLogSub = () =>
		subOf([trigger(), lookup(), at(log('Log Failure'), 200, 700)], {
			Webhook: { main: [link('Lookup')] },
			Lookup: { main: [[], link('Log Failure')] },
			'Log Failure': { main: [[], []] },
		} as IConnections);
	/** Trigger → Lookup, its success output the answer (unconnected), its error output → Lookup Backup (the fallback API). */
	const fallbackSub = () =>
		subOf([trigger(), lookup(), at(lookup('Lookup Backup'), 200, 700)], {
			Webhook: { main: [link('Lookup')] },
			Lookup: { main: [[], link('Lookup Backup')] },
			'Lookup Backup': { main: [[], []] },
		} as IConnections);
	/** Same, the error output → Failed (NoOp). */
	const errorNoOpSub = () =>
		subOf([trigger(), lookup(), at(node('Failed', 'noOp', 1, {}), 200, 700)], {
			Webhook: { main: [link('Lookup')] },
			Lookup: { main: [[], link('Failed')] },
		} as IConnections);
	/** Trigger → VIP? → Lookup VIP (top, an end) / Lookup → Tag (bottom, an end). */
	const endsApartSub = () =>
		subOf([trigger(), ifTrue('$json.body.vip'), at(lookup('Lookup VIP'), -200), at(lookup(), 200), at(tag(), 200, 800)], {
			Webhook: { main: [link('VIP?')] },
			'VIP?': { main: [link('Lookup VIP'), link('Lookup')] },
			'Lookup VIP': { main: [[], []] },
			Lookup: { main: [link('Tag'), []] },
		} as IConnections);
	/** Trigger → Log (top, an end) and → Lookup (bottom, last): a side branch every event also passes the returned one. */
	const parallelSub = () =>
		subOf([trigger(), at(log(), -200), at(lookup(), 200)], {
			Webhook: {
				main: [
					[
						{ node: 'Log', type: 'main', index: 0 },
						{ node: 'Lookup', type: 'main', index: 0 },
					],
				],
			},
			Log: { main: [[], []] },
			Lookup: { main: [[], []] },
		} as IConnections);
	/** Trigger → Log (top) and → Keep (Filter) → Lookup. */
	const sideLogKeepSub = () =>
		subOf([trigger(), at(log(), -200), at(keepUnlessSkipped(), 200), at(lookup(), 200, 700)], {
			Webhook: {
				main: [
					[
						{ node: 'Log', type: 'main', index: 0 },
						{ node: 'Keep', type: 'main', index: 0 },
					],
				],
			},
			Log: { main: [[], []] },
			Keep: { main: [link('Lookup')] },
			Lookup: { main: [[], []] },
		} as IConnections);
	/** Trigger → VIP? → Lookup VIP → Join (in 0) / Lookup → Join (in 1), Merge append. */
	const mergeSub = () =>
		subOf([trigger(), ifTrue('$json.body.vip'), at(lookup('Lookup VIP'), -200), at(lookup(), 200), at(merge(), 0, 900)], {
			Webhook: { main: [link('VIP?')] },
			'VIP?': { main: [link('Lookup VIP'), link('Lookup')] },
			'Lookup VIP': { main: [[{ node: 'Join', type: 'main', index: 0 }], []] },
			Lookup: { main: [[{ node: 'Join', type: 'main', index: 1 }], []] },
		} as IConnections);
	/** Trigger → Loop (1) → Lookup (Continue regular output) → back; Done → Tag. */
	const loopDoneSub = () =>
		subOf([trigger(), loop(), at(lookup('Lookup', 'continueRegularOutput'), 200, 700), at(tag(), -200, 700)], {
			Webhook: { main: [link('Loop')] },
			Loop: { main: [link('Tag'), link('Lookup')] },
			Lookup: { main: [link('Loop')] },
		} as IConnections);
	/** Trigger → Loop (1) → Lookup → back and → Audit (NoOp, below, an end); Done → Tag. */
	const loopAuditSub = () =>
		subOf([trigger(), loop(), at(lookup(), 200, 700), at(tag(), -200, 700), at(node('Audit', 'noOp', 1, {}), 400, 1000)], {
			Webhook: { main: [link('Loop')] },
			Loop: { main: [link('Tag'), link('Lookup')] },
			Lookup: {
				main: [
					[
						{ node: 'Loop', type: 'main', index: 0 },
						{ node: 'Audit', type: 'main', index: 0 },
					],
					[],
				],
			},
		} as IConnections);
	/** VIP? → Lookup VIP (top, an end) / Renumber (Code, no pairedItem) → Lookup (bottom, an end). */
	const endsApartRenumberSub = () =>
		subOf([trigger(), ifTrue('$json.body.vip'), at(lookup('Lookup VIP'), -200), at(renumber(), 200), at(lookup(), 200, 800)], {
			Webhook: { main: [link('VIP?')] },
			'VIP?': { main: [link('Lookup VIP'), link('Renumber')] },
			'Lookup VIP': { main: [[], []] },
			Renumber: { main: [link('Lookup')] },
			Lookup: { main: [[], []] },
		} as IConnections);
	/** VIP? → Lookup (bottom, run last) / Skipped (top, an end: Log, or a NoOp): non-vip events dropped by design. */
	const dropWithLogSub = (noOp = false) =>
		subOf(
			[
				trigger(),
				ifTrue('$json.body.vip'),
				at(lookup(), 200, 800),
				at(
					noOp ? node('Skipped', 'noOp', 1, {}) : httpCall('Skipped', 'notify', { onError: 'continueErrorOutput' }, LOOKUP_BODY),
					-200,
					800,
				),
			],
			{
				Webhook: { main: [link('VIP?')] },
				'VIP?': { main: [link('Lookup'), link('Skipped')] },
				Lookup: { main: [[], []] },
				...(noOp ? {} : { Skipped: { main: [[], []] } }),
			} as IConnections,
		);
	/** Trigger → Lookup at Execute Once (the last node): harmless where each sub-execution has one event. */
	const onceLookupSub = () =>
		subOf([trigger(), { ...lookup(), executeOnce: true }], {
			Webhook: { main: [link('Lookup')] },
			Lookup: { main: [[], []] },
		} as IConnections);
	/** Trigger → Lookup (bottom) → Join (in 0) and → Token (Edit Fields at Execute Once, top) → Join (in 1); Merge combine by position. */
	const tokenByPositionSub = () =>
		subOf(
			[
				trigger(),
				at(lookup(), 200),
				at(
					node(
						'Token',
						'set',
						3.4,
						{ mode: 'manual', assignments: { assignments: [{ id: 't', name: 'token', value: 'x', type: 'string' }] }, options: {} },
						{ executeOnce: true, onError: 'continueRegularOutput' },
					),
					-200,
				),
				at(node('Join', 'merge', 3.2, { mode: 'combine', combineBy: 'combineByPosition', options: {} }), 0, 900),
			],
			{
				Webhook: {
					main: [
						[
							{ node: 'Lookup', type: 'main', index: 0 },
							{ node: 'Token', type: 'main', index: 0 },
						],
					],
				},
				Lookup: { main: [[{ node: 'Join', type: 'main', index: 0 }], []] },
				Token: { main: [[{ node: 'Join', type: 'main', index: 1 }]] },
			} as IConnections,
		);
	/** Trigger → Run Inner (`inner`). */
	const outerSub = (inner: SubWorkflowSource) =>
		subOf([trigger(), runSub('Run Inner', inner)], { Webhook: { main: [link('Run Inner')] } } as IConnections);

	/* A. One event (no Events Path): never failed forever where the workflow works ------------------------------------ */
	describe('A. one event', () => {
		for (const [where, source] of sources(sideLogRenumberSub)) {
			it(`${where}: Log (an end) beside Renumber (Code, no pairedItem) → Lookup, nothing failing: 200, charged once`, async () => {
				const p = `a1${where[0]}`;
				const r = record(`A1 ${where}`, await runOne(p, triggerStep(source())));
				expect(r).toMatchObject({ ...ONE_DONE, answers: [200] });
			});
		}
		for (const [where, source] of sources(endsApartSub)) {
			it(`${where}: VIP? → Lookup VIP / Lookup → Tag (ends apart), a non-vip event, nothing failing: accepted, charged once`, async () => {
				const p = `a2${where[0]}`;
				const r = record(`A2 ${where}`, await runOne(p, triggerStep(source()), undefined, { amount: 100 }));
				expect(r).toMatchObject({ ...ONE_DONE, answers: [200] });
			});
		}
		it('inline: Log beside Keep (Filter) → Lookup, the event skipped: completed uncharged, logged once', async () => {
			const p = 'a3';
			const r = record('A3', await runOne(p, triggerStep(inline(sideLogKeepSub())), undefined, { amount: 100, skip: true }));
			expect(r).toMatchObject({ refusal: false, answers: [200], charges: [0], keys: ['completed'] });
			expect(effectsAt('notify', `${p}_a`)).toBe(1);
		});
		// Documented (docs/templates.md, "a node at Continue (using error output) whose error output leads to a recovery"):
		// the item on the error output is the event's failure whatever follows it; here the Charge after Enrich acted on
		// the recovery's answer, and the retry charges again.
		it("database: Lookup's error output → Log Failure; the lookup failing once: retried, charged twice (documented)", async () => {
			const p = 'a4';
			const r = record('A4', await runOne(p, triggerStep(fromDatabase(errorLogSub())), 'lookup:%'));
			expect(r).toMatchObject({ ...ONE_DONE, answers: [500, 200], charges: [2] });
		});
		it("inline: Lookup's error output → Lookup Backup (a fallback that answers); the first lookup failing once: charged twice (documented)", async () => {
			const p = 'a7';
			const r = record('A7', await runOne(p, triggerStep(inline(fallbackSub())), 'lookup:%'));
			expect(r).toMatchObject({ ...ONE_DONE, answers: [500, 200], charges: [2] });
		});
		it('inline: Loop (1) → Lookup → back, Done → Tag, nothing failing: 200, charged once', async () => {
			const p = 'a5';
			const r = record('A5', await runOne(p, triggerStep(inline(loopDoneSub()))));
			expect(r).toMatchObject({ ...ONE_DONE, answers: [200] });
		});
		it('inline: Log (top) beside Lookup (parallel), nothing failing: accepted, 200, charged once', async () => {
			const p = 'a6';
			const r = record('A6', await runOne(p, triggerStep(inline(parallelSub()))));
			expect(r).toMatchObject({ ...ONE_DONE, answers: [200] });
		});
	});

	/* B. Several events: working shapes not refused, not failed forever ----------------------------------------------- */
	describe('B. several events, working shapes', () => {
		it("each item, inline: VIP? → Lookup VIP / Lookup → Tag (ends apart, one event a run); B's lookup failing once", async () => {
			const p = 'b1';
			const r = record('B1', await runTrigger(p, triggerStep(inline(endsApartSub()), 'each'), fails(p, 'lookup:b')));
			expect(r).toMatchObject({ ...ALL_DONE, answers: [500, 200] });
		});
		it("each item, inline: Log beside Lookup (parallel); B's lookup failing once", async () => {
			const p = 'b2';
			const r = record('B2', await runTrigger(p, triggerStep(inline(parallelSub()), 'each'), fails(p, 'lookup:b')));
			expect(r).toMatchObject({ ...ALL_DONE, answers: [500, 200] });
		});
		it('once, inline: Log (top, an end) beside Lookup (every event on both): works in n8n, not refused, each charged once', async () => {
			const p = 'b3';
			const r = record('B3', await runTrigger(p, triggerStep(inline(parallelSub())), undefined));
			expect(r).toMatchObject({ ...ALL_DONE, answers: [200] });
		});
		it("once, database: Log beside Lookup; B's lookup failing once: B retried alone, each charged once", async () => {
			const p = 'b4';
			const r = record('B4', await runTrigger(p, triggerStep(fromDatabase(parallelSub())), fails(p, 'lookup:b')));
			expect(r).toMatchObject({ ...ALL_DONE, answers: [500, 200] });
		});
		it("once, inline: VIP? → Lookup VIP / Lookup → Join (Merge append); C's lookup failing once", async () => {
			const p = 'b5';
			const r = record('B5', await runTrigger(p, triggerStep(inline(mergeSub())), fails(p, 'lookup:c')));
			expect(r).toMatchObject({ ...ALL_DONE, answers: [500, 200] });
		});
		it('once, inline: the same Merge, no event vip (Join fed on one input): each charged once', async () => {
			const p = 'b6';
			const r = record('B6', await runTrigger(p, triggerStep(inline(mergeSub())), undefined, threeEvents(p, [{ vip: false }, {}, {}])));
			expect(r).toMatchObject({ ...ALL_DONE, answers: [200] });
		});
		for (const [where, source] of sources(loopDoneSub)) {
			it(`once, ${where}: Loop (1) → Lookup → back, Done → Tag; C's lookup failing once`, async () => {
				const p = `b7${where[0]}`;
				const r = record(`B7 ${where}`, await runTrigger(p, triggerStep(source()), fails(p, 'lookup:c')));
				expect(r).toMatchObject({ ...ALL_DONE, answers: [500, 200] });
			});
		}
	});

	/* D. Drops by design, Execute Once where each run has one event -------------------------------------------------- */
	describe('D. drops by design', () => {
		for (const [where, source] of sources(() => dropWithLogSub())) {
			it(`once, ${where}: VIP? → Lookup (run last) / Skipped (Log, top, an end): A charged, B and C logged once, all completed`, async () => {
				const p = `d1${where[0]}`;
				const r = record(`D1 ${where}`, await runTrigger(p, triggerStep(source()), undefined));
				record(`D1 ${where} logged B, C`, [effectsAt('notify', `${p}_b`), effectsAt('notify', `${p}_c`)]);
				if (where === 'inline') {
					expect(r.refusal).toContain('its branches end in 2 nodes ("Lookup", "Skipped")');
					expect(r.charges).toEqual([0, 0, 0]);
					return;
				}
				// Documented (docs/templates.md, "whose branches do not all come back"): an end of its own for the skipped events
				// is what n8n hands back when it runs last. B and C are failed (Lookup ran last), and their retry, B and C alone,
				// hands Skipped's answers on to the Charge, as n8n does with one event per delivery: charged, logged twice.
				expect(r).toMatchObject({ refusal: false, answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] });
				expect([effectsAt('notify', `${p}_b`), effectsAt('notify', `${p}_c`)]).toEqual([2, 2]);
			});
		}
		it('once, database: VIP? → Lookup (run last) / Skipped (NoOp, top): A charged, B and C completed uncharged', async () => {
			const p = 'd2';
			const r = record('D2', await runTrigger(p, triggerStep(fromDatabase(dropWithLogSub(true))), undefined));
			// B and C are failed once (Skipped's answers not handed back); their retry hands on Skipped's (No Operation) items,
			// which the Charge's body reads nothing from: uncharged, completed.
			expect(r).toMatchObject({ refusal: false, answers: [500, 200], charges: [1, 0, 0], keys: ['completed', 'completed', 'completed'] });
		});
		for (const [where, source] of sources(tokenByPositionSub)) {
			it(`once, ${where}: Lookup and Token (Execute Once) → Join by position (only A pairs): refused, or each charged once`, async () => {
				const p = `d5${where[0]}`;
				const r = record(`D5 ${where}`, await runTrigger(p, triggerStep(source()), undefined));
				// From the database: documented (docs/templates.md, Execute Once "in a sub-workflow from the database"): B and C lost.
				if (where === 'database') expect(r).toMatchObject({ refusal: false, charges: [1, 0, 0] });
				else expect(r.charges).toEqual([0, 0, 0]);
			});
		}
		it("each item, inline: the sub-workflow's Lookup at Execute Once (one event a run); B's lookup failing once: accepted, each charged once", async () => {
			const p = 'd3';
			const r = record('D3', await runTrigger(p, triggerStep(inline(onceLookupSub()), 'each'), fails(p, 'lookup:b')));
			expect(r).toMatchObject({ ...ALL_DONE, answers: [500, 200] });
		});
		it("each item, inline: the sub-workflow's own trigger at Execute Once (one event a run): accepted, each charged once", async () => {
			const p = 'd4';
			const sub = subOf([{ ...trigger(), executeOnce: true }, lookup()], {
				Webhook: { main: [link('Lookup')] },
				Lookup: { main: [[], []] },
			} as IConnections);
			const r = record('D4', await runTrigger(p, triggerStep(inline(sub), 'each'), undefined));
			expect(r).toMatchObject({ ...ALL_DONE, answers: [200] });
		});
	});

	/* C. Several events: no event lost -------------------------------------------------------------------------------- */
	/**
	 * Lookup's answers on its success output (unconnected), its error output leading to a recovery (`ends`: the two ends). Defined in the node:
	 * refused at publish. From the database: A's and C's answers, not handed back when the error branch ran last, fail
	 * them once, and their retry charges each once; B, whose failure the recovery answered and the Charge acted on, is
	 * charged again by its retry (documented: "a recovery after an error output").
	 */
	const expectNoneLost = (r: { refusal: string | boolean; charges: number[] }, where: string, ends: string) => {
		if (where === 'inline') {
			expect(r.refusal).toContain(`its branches end in 2 nodes (${ends})`);
			expect(r.charges).toEqual([0, 0, 0]);
			return;
		}
		expect(r).toMatchObject({ refusal: false, charges: [1, 2, 1], keys: ['completed', 'completed', 'completed'] });
	};
	describe('C. several events, no event lost', () => {
		for (const [where, source] of sources(errorLogSub)) {
			it(`once, ${where}: Lookup (answer on its success output) / error output → Log Failure; B's lookup failing once`, async () => {
				const p = `c1${where[0]}`;
				const r = record(`C1 ${where}`, await runTrigger(p, triggerStep(source()), fails(p, 'lookup:b')));
				expectNoneLost(r, where, '"Log Failure", "Lookup"');
			});
		}
		for (const [where, source] of sources(fallbackSub)) {
			it(`once, ${where}: Lookup (answer on its success output) / error output → Lookup Backup; B's first lookup failing once`, async () => {
				const p = `c10${where[0]}`;
				const r = record(`C10 ${where}`, await runTrigger(p, triggerStep(source()), fails(p, 'lookup:b')));
				expectNoneLost(r, where, '"Lookup", "Lookup Backup"');
			});
		}
		it("once, inline: Lookup / error output → Failed (NoOp); B's lookup failing once", async () => {
			const p = 'c2';
			const r = record('C2', await runTrigger(p, triggerStep(inline(errorNoOpSub())), fails(p, 'lookup:b')));
			expectNoneLost(r, 'inline', '"Failed", "Lookup"');
		});
		it('once, database: VIP? → Lookup VIP (an end) / Renumber (Code, no pairedItem) → Lookup: each charged once', async () => {
			const p = 'c3';
			const r = record('C3', await runTrigger(p, triggerStep(fromDatabase(endsApartRenumberSub())), undefined));
			expect(r).toMatchObject({ ...ALL_DONE });
		});
		it('once, database: Log (an end) beside Renumber (Code, no pairedItem) → Lookup: each charged once, not failed forever', async () => {
			const p = 'c4';
			const r = record('C4', await runTrigger(p, triggerStep(fromDatabase(sideLogRenumberSub())), undefined));
			expect(r).toMatchObject({ ...ALL_DONE, answers: [200] });
		});
		for (const [where, source] of sources(loopAuditSub)) {
			it(`once, ${where}: Loop (1) → Lookup → back and → Audit (an end), Done → Tag: refused, or each charged once`, async () => {
				const p = `c5${where[0]}`;
				const r = record(`C5 ${where}`, await runTrigger(p, triggerStep(source()), undefined));
				if (r.refusal === false) expect(r).toMatchObject(ALL_DONE);
				else expect(r.charges).toEqual([0, 0, 0]);
			});
		}
		it('nested: outer inline → Run Inner (database: VIP? → Lookup VIP / Lookup → Tag, ends apart): each charged once', async () => {
			const p = 'c6';
			const r = record('C6', await runTrigger(p, triggerStep(inline(outerSub(fromDatabase(endsApartSub())))), undefined));
			expect(r).toMatchObject(ALL_DONE);
		});
		it('nested: outer database → Run Inner (database, ends apart): each charged once', async () => {
			const p = 'c7';
			const r = record('C7', await runTrigger(p, triggerStep(fromDatabase(outerSub(fromDatabase(endsApartSub())))), undefined));
			expect(r).toMatchObject(ALL_DONE);
		});
		it('nested: outer inline → Run Inner (inline, ends apart; nothing after it inside, Charge after Enrich): refused, or each charged once', async () => {
			const p = 'c8';
			const r = record('C8', await runTrigger(p, triggerStep(inline(outerSub(inline(endsApartSub())))), undefined));
			// Close call: not refused at publish (checkSubWorkflowEndsInOne asks actsAfter inside the outer sub-workflow only),
			// but the record catches it: A failed once and retried.
			if (r.refusal === false) expect(r).toMatchObject(ALL_DONE);
			else expect(r.charges).toEqual([0, 0, 0]);
		});
		it("nested: outer inline → Run Inner (database: Lookup / error output → Log Failure); B's lookup failing once", async () => {
			const p = 'c9';
			const r = record('C9', await runTrigger(p, triggerStep(inline(outerSub(fromDatabase(errorLogSub())))), fails(p, 'lookup:b')));
			expectNoneLost(r, 'database', '"Log Failure", "Lookup"');
		});
	});
});
