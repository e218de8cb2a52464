import { type IConnections, type INode } from 'n8n-workflow';

import { withCodeRunner } from '../support/codeTaskRunner';
import { describeWithN8n } from '../support/n8nBaseNodes';
import { link, toInput } from '../support/settleWorkflows';
import {
	baseNode as node,
	CHARGE_ID,
	definedInputsTrigger,
	events,
	ifTrue,
	keepUnlessSkipped,
	KEY_FROM,
	LOOKUP_BODY,
	mergeByEventId,
	RESPOND_WITH_ID,
	sortOn,
	SPLIT_OUT_EVENTS,
	subWorkflowRedTeam,
	subWorkflowTrigger,
	tagNode,
	threeEvents,
	type Step,
	type SubWorkflowSource,
} from '../support/triggerRedTeam';
import type { SubWorkflowCode } from '../support/triggerProvider';

/*
 * Red team 50: shapes not tried by passes 46-49: a Wait (short interval, kept in process by n8n) inside a sub-workflow
 * run once for all items; a sub-workflow given from the database (Source: Database, a workflowId: the package cannot
 * see its nodes) whose last node ran several times (fed by both branches of an If; a Loop Over Items); Execute Workflow
 * "Run Once for Each Item" whose sub-workflow filters or fans out; two Execute Workflow nodes in a row, the second given
 * the first's re-ordered results, a Merge by field after them.
 *
 * Sub-workflows as in pass 48 (n8n 2.41.1's output, no record for an unsaved one), and Source: Database as n8n 2.41.1
 * runs it: ExecuteWorkflow 1.3's getWorkflowInfo gives `{ id }` (the resource locator's value) and no `code`; n8n's
 * executeWorkflow loads that workflow (its nodes, connections and settings) from the database, runs it and answers
 * `{ executionId, data }` the same way.
 */

describeWithN8n('red team 50: waits, the database, each item, two sub-workflows in a row', () => {
	/** The workflows "in n8n's database", by id (Source: Database). */
	const database = new Map<string, SubWorkflowCode>();
	const {
		charges,
		dump,
		effectsAt,
		enrich,
		failNext,
		fieldReserve,
		httpCall,
		nodePath,
		nodeStatuses,
		nodeStep,
		record,
		runNode,
		runTrigger,
		triggerStep,
	} = subWorkflowRedTeam({
		tag: 'rt50',
		route: (route, body) => (route === 'lookup' ? { ...body } : undefined),
		engine: (engine) => withCodeRunner(engine as never) as typeof engine,
		subWorkflows: { savingSettings: true, database },
		baseNodeFiles: {
			'n8n-nodes-base.set': 'Set/Set.node.js',
			'n8n-nodes-base.filter': 'Filter/Filter.node.js',
			'n8n-nodes-base.code': 'Code/Code.node.js',
		},
	});
	const { completeNode, nodeTemplate, provideNodePath, useNodePath } = nodePath;

	/** The second sub-workflow's Lookup: its items are the first one's answers ({ id, amount, ok }). */
	const LOOKUP_ANSWER = '={{ JSON.stringify({ id: $json.id, amount: $json.amount }) }}';
	const subOf = (nodes: INode[], connections: IConnections, saved = true): SubWorkflowCode => ({
		nodes,
		connections,
		settings: saved ? {} : { saveDataSuccessExecution: 'none' },
	});
	const waitNode = (seconds = 1) => node('Pause', 'wait', 1.1, { resume: 'timeInterval', amount: seconds, unit: 'seconds' });

	/** Trigger → Sort by amount → Wait (1 s: n8n keeps it in process) → Lookup (error output unconnected). */
	const waitSub = (triggerNode: INode = subWorkflowTrigger()) =>
		subOf([triggerNode, sortOn('body.amount'), waitNode(), httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY)], {
			Webhook: { main: [link('By Amount')] },
			'By Amount': { main: [link('Pause')] },
			Pause: { main: [link('Lookup')] },
			Lookup: { main: [[], []] },
		} as IConnections);
	/** Trigger → Wait → Sort → Lookup → Wait again (last node: the answers after a second wait). */
	const waitLastSub = () =>
		subOf(
			[
				subWorkflowTrigger(),
				waitNode(),
				sortOn('body.amount'),
				httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY),
				{ ...waitNode(), name: 'Pause Again', id: 'Pause Again' },
			],
			{
				Webhook: { main: [link('Pause')] },
				Pause: { main: [link('By Amount')] },
				'By Amount': { main: [link('Lookup')] },
				Lookup: { main: [link('Pause Again'), []] },
			} as IConnections,
		);
	/** Trigger → VIP? → (true) Lookup, (false) the same Lookup: Lookup, the last node, runs twice. */
	const twiceSub = (saved = true, version = 1.2) =>
		subOf(
			[
				subWorkflowTrigger(version),
				ifTrue('$json.body.vip'),
				httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY),
			],
			{ Webhook: { main: [link('VIP?')] }, 'VIP?': { main: [link('Lookup'), link('Lookup')] }, Lookup: { main: [[], []] } } as IConnections,
			saved,
		);
	/** Trigger → VIP? → Lookup VIP / Lookup (error outputs unconnected) → Tag (Edit Fields, last, runs twice). */
	const ifTagSub = () =>
		subOf(
			[
				subWorkflowTrigger(),
				ifTrue('$json.body.vip'),
				httpCall('Lookup VIP', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY),
				httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY),
				tagNode(),
			],
			{
				Webhook: { main: [link('VIP?')] },
				'VIP?': { main: [link('Lookup VIP'), link('Lookup')] },
				'Lookup VIP': { main: [link('Tag'), []] },
				Lookup: { main: [link('Tag'), []] },
			} as IConnections,
		);
	/** Trigger → Loop Over Items (1) → Lookup → back; Done unconnected (the loop node runs last and returns Done). */
	const loopSub = () =>
		subOf(
			[
				subWorkflowTrigger(),
				node('Loop', 'splitInBatches', 3, { batchSize: 1, options: {} }),
				httpCall('Lookup', 'lookup', {}, LOOKUP_BODY),
			],
			{
				Webhook: { main: [link('Loop')] },
				Loop: { main: [[], link('Lookup')] },
				Lookup: { main: [link('Loop')] },
			} as IConnections,
		);
	/** Trigger → Sort by amount → Lookup. */
	const sortSub = (order: 'ascending' | 'descending' = 'ascending', field = 'body.amount', body = LOOKUP_BODY, saved = true) =>
		subOf(
			[subWorkflowTrigger(), sortOn(field, order), httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, body)],
			{ Webhook: { main: [link('By Amount')] }, 'By Amount': { main: [link('Lookup')] }, Lookup: { main: [[], []] } } as IConnections,
			saved,
		);
	/** Trigger → Lookup (no reordering). */
	const plainSub = (body = LOOKUP_BODY) =>
		subOf([subWorkflowTrigger(), httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, body)], {
			Webhook: { main: [link('Lookup')] },
			Lookup: { main: [[], []] },
		} as IConnections);
	/** Trigger → Keep (skip not true) → Lookup: an event with skip returns nothing. */
	const filterSub = () =>
		subOf([subWorkflowTrigger(), keepUnlessSkipped(), httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY)], {
			Webhook: { main: [link('Keep')] },
			Keep: { main: [link('Lookup')] },
			Lookup: { main: [[], []] },
		} as IConnections);
	/** Trigger → Split Out body.lines (as line) → Lookup per line ({ id: line id }): one item per line. */
	const linesSub = () =>
		subOf(
			[
				subWorkflowTrigger(),
				node('Lines', 'splitOut', 1, {
					fieldToSplitOut: 'body.lines',
					include: 'noOtherFields',
					options: { destinationFieldName: 'line' },
				}),
				httpCall(
					'Lookup',
					'lookup',
					{ onError: 'continueErrorOutput' },
					'={{ JSON.stringify({ id: $json.line.id, amount: $json.line.amount }) }}',
				),
			],
			{ Webhook: { main: [link('Lines')] }, Lines: { main: [link('Lookup')] }, Lookup: { main: [[], []] } } as IConnections,
		);

	const inline = (workflow: SubWorkflowCode): SubWorkflowSource => ({ source: 'parameter', workflowJson: JSON.stringify(workflow) });
	let stored = 0;
	/** Saves `workflow` "in the database": Source Database, the workflowId resource locator (By ID) naming it. */
	const fromDatabase = (workflow: SubWorkflowCode): SubWorkflowSource => {
		const id = `rt50-db-${++stored}`;
		database.set(id, workflow);
		return { source: 'database', workflowId: { __rl: true, value: id, mode: 'id' } };
	};
	const ALL_DONE = { answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] };
	const triggerDone = { refusal: false, ...ALL_DONE };
	const nodeDone = (p: string) => ({ ...ALL_DONE, stored: [`${p}_a`, `${p}_b`, `${p}_c`] });
	/** What a row fails once, for its own events: `charge:b` is the charge of event `<p>_b`. */
	const failing = (p: string, fail: string) => fail.replace(/:(\w+)$/, `:${p}_$1`);
	/** A trigger-path row whose events end charged once and completed each, after one retry: `fail` failing once. */
	const itTriggerDone = (title: string, p: string, label: string, step: () => Step, fail: string) =>
		it(title, async () => {
			expect(record(label, await runTrigger(p, step(), failing(p, fail)))).toMatchObject(triggerDone);
		});
	/** The same on the node path, Mark Complete finding keys by `keyFrom` (a KEY_FROM) and storing each event's own answer. */
	const itNodeDone = (
		title: string,
		p: string,
		label: string,
		step: (complete: Record<string, unknown>) => Step,
		keyFrom: object,
		fail: string,
	) =>
		it(title, async () => {
			expect(record(label, await runNode(p, step({ ...keyFrom, ...RESPOND_WITH_ID }), failing(p, fail)))).toMatchObject(nodeDone(p));
		});

	/* 1. A Wait (1 s, in process) inside a sub-workflow run once for all items. */
	describe('1. a wait inside the sub-workflow (once)', () => {
		itTriggerDone(
			"Sort → Wait → Lookup: trigger, B's charge failing once",
			'tw1',
			'wait charge trigger',
			() => triggerStep(inline(waitSub())),
			'charge:b',
		);
		itTriggerDone(
			"Sort → Wait → Lookup: trigger, A's lookup (after the wait, inside) failing once",
			'tw2',
			'wait lookup trigger',
			() => triggerStep(inline(waitSub())),
			'lookup:a',
		);
		itTriggerDone(
			"sub trigger with defined inputs (key dropped) → Sort → Wait → Lookup: trigger, B's charge failing once",
			'tw3',
			'wait inputs trigger',
			() => triggerStep(inline(waitSub(definedInputsTrigger()))),
			'charge:b',
		);
		itTriggerDone(
			"Wait → Sort → Lookup → Wait (last): trigger, C's charge failing once",
			'tw4',
			'wait last trigger',
			() => triggerStep(inline(waitLastSub())),
			'charge:c',
		);
		for (const [k, params] of Object.entries(KEY_FROM)) {
			itNodeDone(
				`Sort → Wait → Lookup: node ${k}, B's charge failing once`,
				`nw1${k[0]}`,
				`wait charge node ${k}`,
				(complete) => nodeStep(inline(waitSub()), complete),
				params,
				'charge:b',
			);
			itNodeDone(
				`sub trigger with defined inputs → Sort → Wait → Lookup: node ${k}, B's charge failing once`,
				`nw3${k[0]}`,
				`wait inputs node ${k}`,
				(complete) => nodeStep(inline(waitSub(definedInputsTrigger())), complete),
				params,
				'charge:b',
			);
			itNodeDone(
				`Wait → Sort → Lookup → Wait (last): node ${k}, C's charge failing once`,
				`nw4${k[0]}`,
				`wait last node ${k}`,
				(complete) => nodeStep(inline(waitLastSub()), complete),
				params,
				'charge:c',
			);
		}
	});

	/* 2. A sub-workflow from the database (its nodes unknown to the package), whose last node ran several times. */
	describe('2. Source: Database', () => {
		itTriggerDone(
			"If → Lookup (both branches, Lookup last, twice): trigger, B's charge failing once",
			'td1',
			'db twice charge trigger',
			() => triggerStep(fromDatabase(twiceSub())),
			'charge:b',
		);
		itTriggerDone(
			"If → Lookup (both branches, Lookup last, twice): trigger, B's lookup failing once (its error output, returned)",
			'td2',
			'db twice lookup trigger',
			() => triggerStep(fromDatabase(twiceSub())),
			'lookup:b',
		);
		// Tag and Lookup VIP share a position, so Lookup VIP (A's failure only) runs last and n8n returns that alone: B's
		// and C's answers from Tag are not returned. Their keys are failed with A's (answersNotReturned); the retry runs all
		// three, and each is charged once.
		itTriggerDone(
			"If → Lookup VIP / Lookup → Tag (last, twice): trigger, A's lookup failing once (dropped inside)",
			'td3',
			'db tag lookup trigger',
			() => triggerStep(fromDatabase(ifTagSub())),
			'lookup:a',
		);
		itTriggerDone(
			"If → Lookup VIP / Lookup → Tag (last, twice): trigger, C's charge failing once",
			'td4',
			'db tag charge trigger',
			() => triggerStep(fromDatabase(ifTagSub())),
			'charge:c',
		);
		itTriggerDone(
			"Loop Over Items (1) → Lookup, Done returned: trigger, A's charge failing once",
			'td5',
			'db loop trigger',
			() => triggerStep(fromDatabase(loopSub())),
			'charge:a',
		);
		for (const [k, params] of Object.entries(KEY_FROM)) {
			itNodeDone(
				`If → Lookup (both branches): node ${k}, B's charge failing once`,
				`nd1${k[0]}`,
				`db twice node ${k}`,
				(complete) => nodeStep(fromDatabase(twiceSub()), complete),
				params,
				'charge:b',
			);
			itNodeDone(
				`If → Lookup VIP / Lookup → Tag: node ${k}, C's charge failing once`,
				`nd4${k[0]}`,
				`db tag node ${k}`,
				(complete) => nodeStep(fromDatabase(ifTagSub()), complete),
				params,
				'charge:c',
			);
			itNodeDone(
				`Loop Over Items → Lookup: node ${k}, A's charge failing once`,
				`nd5${k[0]}`,
				`db loop node ${k}`,
				(complete) => nodeStep(fromDatabase(loopSub()), complete),
				params,
				'charge:a',
			);
		}
	});

	/* 5. A branch that ends inside the sub-workflow runs last with nothing but failures: n8n returns what the node that
	 * ran last gave (buildSubWorkflowOutput: the last node executed), so the answers another branch's end node gave
	 * before it are not returned. Laid out as a user would: the VIP branch on top (n8n's v1 order runs it first). */
	const laidOut = (workflow: SubWorkflowCode, y: Record<string, number>): SubWorkflowCode => ({
		...workflow,
		nodes: workflow.nodes.map((inner) =>
			y[inner.name] === undefined ? inner : { ...inner, position: [inner.position[0], y[inner.name]] },
		),
	});
	const branchesSub = () => laidOut(ifTagSub(), { 'Lookup VIP': -200, Lookup: 200, Tag: 0 });
	/** Trigger → Loop Over Items (1) → Lookup (error output unconnected) → back; Done unconnected. */
	const loopFailSub = () =>
		subOf(
			[
				subWorkflowTrigger(),
				node('Loop', 'splitInBatches', 3, { batchSize: 1, options: {} }),
				httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY),
			],
			{ Webhook: { main: [link('Loop')] }, Loop: { main: [[], link('Lookup')] }, Lookup: { main: [link('Loop'), []] } } as IConnections,
		);
	/** Trigger → VIP? → (true) Lookup VIP → Tag; (false) Keep (Filter: skip not true) → Lookup → Tag. The VIP branch on top. */
	const filterBranchSub = () => {
		const base = ifTagSub();
		const keep = keepUnlessSkipped();
		return laidOut(
			{
				...base,
				nodes: [...base.nodes, keep],
				connections: {
					...base.connections,
					'VIP?': { main: [link('Lookup VIP'), link('Keep')] },
					Keep: { main: [link('Lookup')] },
				} as IConnections,
			},
			{ 'Lookup VIP': -200, Keep: 200, Lookup: 200, Tag: 0 },
		);
	};
	const two = (p: string) => [
		{ id: `${p}_a`, amount: 300, vip: true },
		{ id: `${p}_b`, amount: 100 },
	];
	const TWO_DONE = { answers: [500, 200], charges: [1, 1], keys: ['completed', 'completed'] };
	/* The node path with Settle beside the step (Reserve's New → Settle, answering by its outputs), no Mark Complete. */
	const settleStep = (source: SubWorkflowSource): Step => ({
		nodes: [enrich(source), httpCall('Charge', 'charge', { onError: 'continueRegularOutput' }, CHARGE_ID)],
		connections: { Enrich: { main: [link('Charge')] } } as IConnections,
		heads: ['Enrich'],
	});
	const runSettle = async (p: string, source: SubWorkflowSource, fail: string | undefined, list: Array<Record<string, unknown>>) => {
		const ids = list.map((event) => event.id as string);
		useNodePath(`wf-rt50-${p}`);
		if (fail) failNext(fail);
		const { answers, runs } = await provideNodePath(events(list), () =>
			nodeTemplate(settleStep(source), { reserve: fieldReserve(), before: SPLIT_OUT_EVENTS, settle: true }),
		);
		dump(p, runs);
		return { answers: answers.at(-1), charges: charges(ids), keys: await nodeStatuses(ids) };
	};
	describe('5. a branch ending with failures only runs last inside', () => {
		for (const [where, source] of [
			['inline', () => inline(branchesSub())],
			['database', () => fromDatabase(branchesSub())],
		] as const) {
			it(`${where}: If → Lookup VIP (top) / Lookup (bottom) → Tag; A vip, B not; trigger, B's lookup failing once`, async () => {
				const p = `tb${where[0]}`;
				// n8n returns only what Lookup, run last, gave (B's failure), not Tag's answer for A: A's key is failed beside B's
				// (answersNotReturned), and the retry charges each once.
				expect(record(`branch ${where} trigger`, await runTrigger(p, triggerStep(source()), `lookup:${p}_b`, two(p)))).toMatchObject({
					refusal: false,
					...TWO_DONE,
				});
			});
			for (const [k, params] of Object.entries(KEY_FROM)) {
				it(`${where}: If → Lookup VIP / Lookup → Tag; node ${k}, B's lookup failing once`, async () => {
					const p = `nb${where[0]}${k[0]}`;
					// Documented (docs/templates.md, "a sub-workflow … whose branches do not all come back", on the node path): nothing
					// reaches Mark Complete; answered 200, both keys left to their lease (lost).
					expect(
						record(
							`branch ${where} node ${k}`,
							await runNode(p, nodeStep(source(), { ...params, ...RESPOND_WITH_ID }), `lookup:${p}_b`, two(p)),
						),
					).toMatchObject({ answers: [200], charges: [0, 0], keys: ['processing', 'processing'] });
				});
			}
			/* An Execute Workflow Trigger 1.1 (a sub-workflow made before 1.2, its "returnOutput" left unset): n8n returns
			 * the last node's last run alone; the If's first branch's run of Lookup is not returned. No failure at all. */
			const twice11 = () => (where === 'database' ? fromDatabase(twiceSub(true, 1.1)) : inline(twiceSub(true, 1.1)));
			it(`${where}: sub trigger 1.1, If → Lookup (both branches, Lookup last, twice): trigger, nothing failing`, async () => {
				const p = `tv${where[0]}`;
				const r = record(`trigger 1.1 ${where} trigger`, await runTrigger(p, triggerStep(twice11()), undefined));
				// A retry is fine (an event whose answer was not returned runs again); the last answer 2xx, one charge each.
				expect({ ...r, answers: r.answers.at(-1) }).toMatchObject({
					refusal: false,
					answers: 200,
					charges: [1, 1, 1],
					keys: ['completed', 'completed', 'completed'],
				});
			});
			for (const [k, params] of Object.entries(KEY_FROM)) {
				it(`${where}: sub trigger 1.1, If → Lookup (both branches): node ${k}, nothing failing`, async () => {
					const p = `nv${where[0]}${k[0]}`;
					const r = record(
						`trigger 1.1 ${where} node ${k}`,
						await runNode(p, nodeStep(twice11(), { ...params, ...RESPOND_WITH_ID }), undefined),
					);
					// Documented (docs/templates.md, "an Execute Workflow Trigger before 1.2"): on the node path the events whose
					// answers n8n did not return never reach Mark Complete: answered 200, their keys left to their lease (lost).
					expect({ ...r, answers: r.answers.at(-1) }).toMatchObject({
						answers: 200,
						charges: [1, 0, 0],
						keys: ['completed', 'processing', 'processing'],
						stored: [`${p}_a`, null, null],
					});
				});
			}
			it(`${where}: If → Lookup VIP / Lookup → Tag; node path with Settle, B's lookup failing once`, async () => {
				const p = `sb${where[0]}`;
				const source = where === 'database' ? fromDatabase(branchesSub()) : inline(branchesSub());
				// A's key is failed beside B's (Tag's answer for A not returned); the retry charges each once.
				expect(record(`branch ${where} settle`, await runSettle(p, source, `lookup:${p}_b`, two(p)))).toMatchObject({
					answers: 200,
					charges: [1, 1],
					keys: ['completed', 'completed'],
				});
			});
			it(`${where}: sub trigger 1.1, If → Lookup (both branches); node path with Settle, nothing failing`, async () => {
				const p = `sv${where[0]}`;
				expect(record(`trigger 1.1 ${where} settle`, await runSettle(p, twice11(), undefined, threeEvents(p)))).toMatchObject({
					answers: 200,
					charges: [1, 1, 1],
					keys: ['completed', 'completed', 'completed'],
				});
			});
			/* No failure at all: B (not VIP) is skipped by a Filter on the bottom branch, which runs last with nothing. */
			const skipped = (p: string) => [
				{ id: `${p}_a`, amount: 300, vip: true },
				{ id: `${p}_b`, amount: 100, skip: true },
			];
			it(`${where}: If → Lookup VIP → Tag / Keep (Filter) → Lookup → Tag; B skipped; trigger, nothing failing`, async () => {
				const p = `tf${where[0]}`;
				const source = where === 'database' ? fromDatabase(filterBranchSub()) : inline(filterBranchSub());
				const r = record(`filter branch ${where} trigger`, await runTrigger(p, triggerStep(source), undefined, skipped(p)));
				// The Filter, run last with nothing kept, is what n8n returns; A's answer from Tag is not: A's key is failed, and
				// the retry, A alone, runs the VIP branch last and charges it. B, dropped by the Filter itself, completes uncharged.
				expect(r.answers).toEqual([500, 200]);
				expect({ ...r, answers: r.answers.at(-1) }).toMatchObject({
					refusal: false,
					answers: 200,
					charges: [1, 0],
					keys: ['completed', 'completed'],
				});
			});
			it(`${where}: If → Lookup VIP → Tag / Keep (Filter) → Lookup → Tag; B skipped; node path with Settle, nothing failing`, async () => {
				const p = `sf${where[0]}`;
				const source = where === 'database' ? fromDatabase(filterBranchSub()) : inline(filterBranchSub());
				// The same: A's key is failed, and the retry charges it; B completes uncharged.
				expect(record(`filter branch ${where} settle`, await runSettle(p, source, undefined, skipped(p)))).toMatchObject({
					answers: 200,
					charges: [1, 0],
					keys: ['completed', 'completed'],
				});
			});
			it(`${where}: Loop Over Items (1) → Lookup (error output unconnected) → back; trigger, C's lookup (the last) failing once`, async () => {
				const p = `tl${where[0]}`;
				const loopSource = where === 'database' ? fromDatabase(loopFailSub()) : inline(loopFailSub());
				expect(record(`loop ${where} trigger`, await runTrigger(p, triggerStep(loopSource), `lookup:${p}_c`))).toMatchObject(triggerDone);
			});
		}
	});

	/* 7. Branches that end in nodes of their own inside a sub-workflow run once for all items: refused at publish where
	 * the sub-workflow is defined in the node; judged from the sub-execution's record where it is loaded from the
	 * database. An event the returned branch drops itself, or an If's branch left unconnected, is the workflow's design. */
	/** Trigger → VIP? → (true) Lookup VIP (an end of its own); (false) Lookup → Tag (the other end). */
	const endsApartSub = () =>
		laidOut(
			subOf(
				[
					subWorkflowTrigger(),
					ifTrue('$json.body.vip'),
					httpCall('Lookup VIP', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY),
					httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY),
					node('Tag', 'set', 3.4, {
						mode: 'manual',
						assignments: { assignments: [{ id: 't', name: 'tagged', value: true, type: 'boolean' }] },
						includeOtherFields: true,
						options: {},
					}),
				],
				{
					Webhook: { main: [link('VIP?')] },
					'VIP?': { main: [link('Lookup VIP'), link('Lookup')] },
					'Lookup VIP': { main: [[], []] },
					Lookup: { main: [link('Tag'), []] },
				} as IConnections,
			),
			{ 'Lookup VIP': -200, Lookup: 200, Tag: 200 },
		);
	/** Trigger → VIP? → (true) Lookup; the false branch left unconnected: the other events dropped by design. */
	const vipOnlySub = () =>
		subOf([subWorkflowTrigger(), ifTrue('$json.body.vip'), httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY)], {
			Webhook: { main: [link('VIP?')] },
			'VIP?': { main: [link('Lookup'), []] },
			Lookup: { main: [[], []] },
		} as IConnections);
	/** Trigger → Log (an effect, on top: run first) and Keep (Filter: not skipped) → Lookup (run last). */
	const sideLogSub = () =>
		laidOut(
			subOf(
				[
					subWorkflowTrigger(),
					httpCall('Log', 'notify', { onError: 'continueErrorOutput' }, LOOKUP_BODY),
					keepUnlessSkipped(),
					httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY),
				],
				{
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
				} as IConnections,
			),
			{ Log: -200, Keep: 200, Lookup: 200 },
		);
	describe('7. branches that end apart', () => {
		it('inline: If → Lookup VIP (an end) / Lookup → Tag (an end): trigger refused at publish, nothing charged', async () => {
			const p = 'ea1';
			const r = record('ends apart inline trigger', await runTrigger(p, triggerStep(inline(endsApartSub())), undefined, two(p)));
			expect(r.refusal).toContain('its branches end in 2 nodes ("Lookup VIP", "Tag")');
			expect(r.keys).toEqual(['failed', 'failed']);
			expect(r.charges).toEqual([0, 0]);
		});
		it('inline: If → Lookup VIP (an end) / Lookup → Tag (an end): node path, Reserve refuses before anything is reserved', async () => {
			const p = 'ea2';
			const r = record(
				'ends apart inline node',
				await runNode(p, nodeStep(inline(endsApartSub()), { ...KEY_FROM.item, ...RESPOND_WITH_ID }), undefined, two(p)),
			);
			// Reserve's refusal answers 503 (its error output), every try; no key is ever reserved.
			expect(r).toMatchObject({ answers: [503, 503, 503, 503], charges: [0, 0], keys: [null, null] });
		});
		it('database: If → Lookup VIP (an end) / Lookup → Tag (an end): trigger, A failed and retried alone, each charged once', async () => {
			const p = 'ea3';
			const r = record('ends apart database trigger', await runTrigger(p, triggerStep(fromDatabase(endsApartSub())), undefined, two(p)));
			expect(r).toMatchObject({ refusal: false, ...TWO_DONE });
		});
		it('database: If → Lookup VIP (an end) / Lookup → Tag (an end): node path with Settle, each charged once', async () => {
			const p = 'ea4';
			expect(record('ends apart database settle', await runSettle(p, fromDatabase(endsApartSub()), undefined, two(p)))).toMatchObject({
				answers: 200,
				charges: [1, 1],
				keys: ['completed', 'completed'],
			});
		});
		for (const [where, source] of [
			['inline', () => inline(vipOnlySub())],
			['database', () => fromDatabase(vipOnlySub())],
		] as const) {
			it(`${where}: If → Lookup, its false branch unconnected (B dropped by design): trigger, A charged, B completed uncharged`, async () => {
				const p = `ev${where[0]}`;
				const r = record(`vip only ${where} trigger`, await runTrigger(p, triggerStep(source()), undefined, two(p)));
				expect(r).toMatchObject({ refusal: false, answers: [200], charges: [1, 0], keys: ['completed', 'completed'] });
			});
		}
		it('database: Log (an effect, an end) beside Keep (Filter) → Lookup, B skipped: trigger, B completed uncharged, logged once', async () => {
			const p = 'es1';
			const list = [
				{ id: `${p}_a`, amount: 300 },
				{ id: `${p}_b`, amount: 100, skip: true },
			];
			const r = record('side log database trigger', await runTrigger(p, triggerStep(fromDatabase(sideLogSub())), undefined, list));
			expect(r).toMatchObject({ refusal: false, answers: [200], charges: [1, 0], keys: ['completed', 'completed'] });
			expect([effectsAt('notify', `${p}_a`), effectsAt('notify', `${p}_b`)]).toEqual([1, 1]);
		});
		it('inline: Log (a side branch, an effect) beside Keep (Filter) → Lookup: refused for the Filter beside the effect, not for ends apart', async () => {
			const p = 'es2';
			// Log gets copies of the events that go on beside it: no end of their answers. The Filter at Stop Workflow beside
			// an effect on the same events is refused by its own rule (settleShapesRedTeam52.test.ts B3: a side branch alone is accepted).
			const r = record('side log inline trigger', await runTrigger(p, triggerStep(inline(sideLogSub())), undefined, two(p)));
			expect(r.refusal).toContain('"Keep" gets the events of one delivery together after "Log"');
			expect(r.charges).toEqual([0, 0]);
		});
	});

	/* 6. A Code node (Run Once for All Items) re-ordering inside the sub-workflow, returning $input.all() sorted: the
	 * items it returns keep the pairing their input items had (to the node before it), which n8n-core does not rewrite. */
	const codeSub = (triggerNode: INode) =>
		subOf(
			[
				triggerNode,
				sortOn('body.amount'),
				node(
					'By Id',
					'code',
					2,
					{
						mode: 'runOnceForAllItems',
						jsCode: 'return $input.all().sort((a, b) => String(b.json.body.id).localeCompare(String(a.json.body.id)));',
					},
					{ onError: 'continueRegularOutput' },
				),
				httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY),
			],
			{
				Webhook: { main: [link('By Amount')] },
				'By Amount': { main: [link('By Id')] },
				'By Id': { main: [link('Lookup')] },
				Lookup: { main: [[], []] },
			} as IConnections,
		);
	describe('6. a Code node re-ordering inside', () => {
		for (const [label, triggerNode] of [
			['passthrough', () => subWorkflowTrigger()],
			['defined inputs', () => definedInputsTrigger()],
		] as const) {
			itTriggerDone(
				`${label}: Sort → Code (sort by id desc) → Lookup: trigger, B's charge failing once`,
				`tc${label[0]}`,
				`code ${label} trigger`,
				() => triggerStep(inline(codeSub(triggerNode()))),
				'charge:b',
			);
			itTriggerDone(
				`${label}: Sort → Code (sort by id desc) → Lookup: trigger, A's lookup failing once`,
				`tk${label[0]}`,
				`code ${label} lookup trigger`,
				() => triggerStep(inline(codeSub(triggerNode()))),
				'lookup:a',
			);
			for (const [k, params] of Object.entries(KEY_FROM)) {
				itNodeDone(
					`${label}: Sort → Code → Lookup: node ${k}, B's charge failing once`,
					`nc${label[0]}${k[0]}`,
					`code ${label} node ${k}`,
					(complete) => nodeStep(inline(codeSub(triggerNode())), complete),
					params,
					'charge:b',
				);
			}
		}
	});

	/* 3. Execute Workflow "Run Once for Each Item" whose sub-workflow filters or fans out. */
	describe('3. each item: filtering, fanning out', () => {
		const skipC = [{}, {}, { skip: true }];
		it("Filter drops C inside: trigger, B's charge failing once", async () => {
			const p = 'te1';
			const r = record(
				'each filter trigger',
				await runTrigger(p, triggerStep(inline(filterSub()), 'each'), `charge:${p}_b`, threeEvents(p, skipC)),
			);
			expect(r).toMatchObject({ refusal: false, answers: [500, 200], charges: [1, 1, 0], keys: ['completed', 'completed', 'completed'] });
		});
		const lines = (p: string) => [
			{
				id: `${p}_a`,
				amount: 300,
				lines: [
					{ id: `${p}_a1`, amount: 1 },
					{ id: `${p}_a2`, amount: 2 },
				],
			},
			{ id: `${p}_b`, amount: 100, lines: [{ id: `${p}_b1`, amount: 3 }] },
			{
				id: `${p}_c`,
				amount: 200,
				lines: [
					{ id: `${p}_c1`, amount: 4 },
					{ id: `${p}_c2`, amount: 5 },
				],
			},
		];
		const lineIds = (p: string) => [`${p}_a1`, `${p}_a2`, `${p}_b1`, `${p}_c1`, `${p}_c2`];
		// The same row with the sub-workflow run for each event, then once for all of them.
		for (const [mode, title, p] of [
			['each', "Split Out lines inside (2, 1, 2 items): trigger, B's only line's charge failing once", 'te2'],
			['once', "Split Out lines inside, once for all items: trigger, B's only line's charge failing once", 'te3'],
		] as const)
			it(title, async () => {
				const r = record(
					`${mode} lines trigger`,
					await runTrigger(p, triggerStep(inline(linesSub()), mode), `charge:${p}_b1`, lines(p), lineIds(p)),
				);
				expect(r).toMatchObject({
					refusal: false,
					answers: [500, 200],
					charges: [1, 1, 1, 1, 1],
					keys: ['completed', 'completed', 'completed'],
				});
			});
		for (const [k, params] of Object.entries(KEY_FROM)) {
			it(`Filter drops C inside: node ${k}, B's charge failing once`, async () => {
				const p = `ne1${k[0]}`;
				const r = record(
					`each filter node ${k}`,
					await runNode(
						p,
						nodeStep(inline(filterSub()), { ...params, ...RESPOND_WITH_ID }, 'each'),
						`charge:${p}_b`,
						threeEvents(p, skipC),
					),
				);
				// C needs no effect (filtered inside): it never reaches Complete and is left to its lease (as pass 49's row 10).
				expect(r).toMatchObject({ answers: [500, 200], charges: [1, 1, 0], keys: ['completed', 'completed', 'processing'] });
			});
			it(`Split Out lines inside: node ${k}, B's only line's charge failing once`, async () => {
				const p = `ne2${k[0]}`;
				const r = record(
					`each lines node ${k}`,
					await runNode(p, nodeStep(inline(linesSub()), { ...params, ...RESPOND_WITH_ID }, 'each'), `charge:${p}_b1`, lines(p), lineIds(p)),
				);
				expect(r).toMatchObject({ answers: [500, 200], charges: [1, 1, 1, 1, 1], keys: ['completed', 'completed', 'completed'] });
			});
		}
	});

	/* 4. Two Execute Workflow nodes in a row: the second given the first's re-ordered answers; a Merge by field after. */
	describe('4. two sub-workflows in a row', () => {
		const second = (saved = true) => sortSub('descending', 'id', LOOKUP_ANSWER, saved);
		const twoStep = (first: SubWorkflowCode, then: SubWorkflowCode, complete?: Record<string, unknown>, merge = false): Step => {
			const nodes: INode[] = [
				enrich(inline(first)),
				enrich(inline(then), 'once', 'Enrich Again'),
				httpCall('Charge', 'charge', { onError: complete ? 'continueRegularOutput' : 'continueErrorOutput' }, CHARGE_ID),
			];
			if (merge) nodes.push(mergeByEventId());
			if (complete) nodes.push(completeNode({ position: [1100, 0] }, complete));
			const connections = {
				Enrich: { main: [link('Enrich Again')] },
				'Enrich Again': { main: [link(merge ? 'Join' : 'Charge')] },
				...(merge ? { Join: { main: [link('Charge')] } } : {}),
				...(complete
					? {
							Charge: { main: [link('Mark Complete')] },
							'Mark Complete': { main: [link('Respond 200'), link('Respond 500 (provider retries)')] },
						}
					: { Charge: { main: [[], []] } }),
			} as IConnections;
			const heads = merge ? ['Enrich', 'Join#1'] : ['Enrich'];
			if (!complete && merge) connections.Webhook = { main: [[...link('Enrich'), ...toInput('Join', 1)]] };
			return { nodes, connections, heads: complete || !merge ? heads : [] };
		};
		itTriggerDone(
			"Sort by amount, then Sort by id descending: trigger, B's charge failing once",
			'tt1',
			'two trigger',
			() => twoStep(sortSub(), second()),
			'charge:b',
		);
		itTriggerDone(
			"plain, then Sort by id descending, Merge by field with the events: trigger, A's charge failing once",
			'tt2',
			'two merge trigger',
			() => twoStep(plainSub(), second(), undefined, true),
			'charge:a',
		);
		itTriggerDone(
			"Sort by amount, then Sort by id descending: trigger, A's lookup (in the first sub-workflow) failing once",
			'tt3',
			'two lookup trigger',
			() => twoStep(sortSub(), second()),
			'lookup:a',
		);
		for (const [k, params] of Object.entries(KEY_FROM)) {
			itNodeDone(
				`Sort by amount, then Sort by id descending: node ${k}, B's charge failing once`,
				`nt1${k[0]}`,
				`two node ${k}`,
				(complete) => twoStep(sortSub(), second(), complete),
				params,
				'charge:b',
			);
			itNodeDone(
				`plain, then Sort by id descending, Merge by field: node ${k}, A's charge failing once`,
				`nt2${k[0]}`,
				`two merge node ${k}`,
				(complete) => twoStep(plainSub(), second(), complete, true),
				params,
				'charge:a',
			);
		}
	});
});
