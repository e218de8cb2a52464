import { type IConnections, type INode, type IRun } from 'n8n-workflow';

import { WebhookSignatureVerify } from '../../nodes/WebhookSignatureVerify/WebhookSignatureVerify.node';
import { withCodeRunner } from '../support/codeTaskRunner';
import { describeWithN8n } from '../support/n8nBaseNodes';
import { PACKAGE } from '../support/n8nEngine';
import { link } from '../support/settleWorkflows';
import { baseNode as node, EVENTS, events, SPLIT_OUT_EVENTS, tagNode, triggerRedTeam, type Step } from '../support/triggerRedTeam';
import type { SubWorkflowCode } from '../support/triggerProvider';

/*
 * Red team 51: shapes not tried by passes 1-50:
 *  1. sub-workflows nested 2, 3, 4, 5 and 10 deep (Define Below and Source: Database), the innermost one dropping an event on
 *     a failure (its error output unconnected, a node after it the last);
 *  2. a nested sub-workflow whose Execute Workflow Trigger is before 1.2 and whose last node ran twice (n8n returns its last
 *     run alone one level down, not at the top);
 *  3. Execute Workflow set to Execute Once with several events (n8n gives the sub-workflow the first event alone);
 *  4. Always Output Data on a lookup before the effect, and on the effect itself at Continue (using error output);
 *  5. Switch sending to all matching outputs, with a fallback output;
 *  6. Execute Workflow "Run Once for Each Item" with one sub-execution failing, at the top and one level down; an inner
 *     sub-workflow whose last node fails for every event (it returns nothing on its success output);
 *  7. publish-time refusals deep inside nested Define Below sub-workflows (Retry On Fail with several events, an If at
 *     Continue), and a disabled Execute Workflow whose sub-workflow would be refused (n8n passes items through);
 *  8. a Code node (Run Once for All Items) whose pairedItem contradicts the key each item carries;
 *  9. a notification after the charge, several events.
 *
 * Each row asserts what a demanding user expects: per event one effect after the provider's retries, or its key not
 * completed (so the provider retries it); no second effect; or the shape refused at publish with the node named.
 * Sub-workflows run as n8n 2.41.1 runs them (test/support/triggerProvider.ts: records kept, its output rules).
 *
 * What the pass found (each an event completed without its effect, lost), every row seen failing before the fix:
 *  F1 (section 1): a failure five or more sub-workflows deep was not seen: failuresInside descended only three levels
 *     although the records of ten are read. Now SUB_WORKFLOW_DEPTH levels.
 *  F2 (section 2): a sub-workflow one level down whose Execute Workflow Trigger is before 1.2 and whose last node ran
 *     twice: n8n returns its last run alone to the middle sub-workflow. failuresInside now judges each nested run's
 *     answers that did not come back (answersNotReturned), where a node that may act follows it, inside or outside.
 *  F3 (section 3): Execute Once on an Execute Workflow node (either mode), on a sub-workflow's trigger, or on a
 *     sub-workflow's last node with an effect after the Execute Workflow node: now refused at publish
 *     (checkFirstEventOnly follows the way out of the sub-workflow). From the database: documented, not guaranteed.
 *  F4 (section 7): an Execute Workflow at Continue (using error output) inside a Define Below sub-workflow: now refused
 *     at any depth.
 */

describeWithN8n('red team 51: nested sub-workflows, Execute Once on Execute Workflow, Always Output Data, Switch', () => {
	const database = new Map<string, SubWorkflowCode>();
	const { effectsAt, failNext, httpCall, nodePath, provide, refusedAtPublish, statuses, useTrigger, keyRows } = triggerRedTeam({
		tag: 'rt51',
		route: (route, body) => (route === 'lookup' ? { ...body } : route === 'empty' ? [] : undefined),
		engine: (engine) => withCodeRunner(engine as never) as typeof engine,
		subWorkflows: { savingSettings: true, database },
		echoBody: true,
		nodeLeaseSeconds: 1,
		providerPauseMs: 1200,
		baseNodeFiles: {
			'n8n-nodes-base.webhook': 'Webhook/Webhook.node.js',
			'n8n-nodes-base.splitOut': 'Transform/SplitOut/SplitOut.node.js',
			'n8n-nodes-base.set': 'Set/Set.node.js',
			'n8n-nodes-base.filter': 'Filter/Filter.node.js',
			'n8n-nodes-base.code': 'Code/Code.node.js',
			'n8n-nodes-base.switch': 'Switch/Switch.node.js',
			'n8n-nodes-base.executeWorkflowTrigger': 'ExecuteWorkflow/ExecuteWorkflowTrigger/ExecuteWorkflowTrigger.node.js',
		},
		nodeTypes: { [`${PACKAGE}.webhookSignatureVerify`]: new WebhookSignatureVerify() },
	});
	const { nodeKey, nodeTemplate, provideNodePath, reserveNode, useNodePath } = nodePath;
	const FIELD_RESERVE = () => reserveNode({ keySource: 'field', keyField: 'body.id', keyPrefix: 'evt:' });

	const dump = (label: string, runs: IRun[]) => {
		if (process.env.RT51_DUMP)
			for (const run of runs)
				process.stderr.write(
					`RT51 ${label} ${run.data.resultData.error?.message?.slice(0, 300)} ${JSON.stringify(
						Object.entries(run.data.resultData.runData).map(([name, tasks]) => [
							name,
							tasks.map((task) =>
								task.data?.main.map((items) => (items ?? []).map((item) => [JSON.stringify(item.json).slice(0, 90), item.pairedItem])),
							),
						]),
					)}\n`,
				);
	};

	/* Building blocks ------------------------------------------------------------------------------------------------- */

	const LOOKUP_BODY = '={{ JSON.stringify({ id: $json.body.id, amount: $json.body.amount }) }}';
	const EVENT_ID = '={{ JSON.stringify({ id: $json.body.id }) }}';
	const CHARGE_ID = '={{ JSON.stringify({ id: $json.id }) }}';
	const trigger = (version = 1.2) => node('Webhook', 'executeWorkflowTrigger', version, { inputSource: 'passthrough' });
	const subOf = (nodes: INode[], connections: IConnections): SubWorkflowCode => ({ nodes, connections, settings: {} });
	const ifOn = (field: string, name = 'VIP?', extra: Partial<INode> = {}) =>
		node(
			name,
			'if',
			2.2,
			{
				conditions: {
					options: { caseSensitive: true, leftValue: '', typeValidation: 'loose', version: 2 },
					conditions: [
						{ id: 'v', leftValue: `={{ ${field} }}`, rightValue: '', operator: { type: 'boolean', operation: 'true', singleValue: true } },
					],
					combinator: 'and',
				},
				looseTypeValidation: true,
				options: {},
			},
			extra,
		);
	/** Trigger → Lookup (error output unconnected: a failing lookup drops the event) → Tag (last). */
	const dropSub = () =>
		subOf([trigger(), httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY), tagNode()], {
			Webhook: { main: [link('Lookup')] },
			Lookup: { main: [link('Tag'), []] },
		} as IConnections);
	/** Trigger → Lookup (error output unconnected), the last node: a failing lookup returns its error on the second output. */
	const lastFailsSub = () =>
		subOf([trigger(), httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY)], {
			Webhook: { main: [link('Lookup')] },
			Lookup: { main: [[], []] },
		} as IConnections);
	/** Trigger (version) → VIP? → Lookup on both branches (Lookup last, run twice with three events, A vip). */
	const twiceSub = (version: number) =>
		subOf([trigger(version), ifOn('$json.body.vip'), httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY)], {
			Webhook: { main: [link('VIP?')] },
			'VIP?': { main: [link('Lookup'), link('Lookup')] },
			Lookup: { main: [[], []] },
		} as IConnections);

	type SubSource = Record<string, unknown>;
	const inline = (workflow: SubWorkflowCode): SubSource => ({ source: 'parameter', workflowJson: JSON.stringify(workflow) });
	let stored = 0;
	const fromDatabase = (workflow: SubWorkflowCode): SubSource => {
		const id = `rt51-db-${++stored}`;
		database.set(id, workflow);
		return { source: 'database', workflowId: { __rl: true, value: id, mode: 'id' } };
	};
	const sourceOf = (where: 'inline' | 'database', workflow: SubWorkflowCode) =>
		where === 'inline' ? inline(workflow) : fromDatabase(workflow);
	/** An Execute Workflow node (1.3, waiting), Continue (regular output) unless `extra` says otherwise. */
	const runSub = (name: string, source: SubSource, mode: 'once' | 'each' = 'once', extra: Partial<INode> = {}) =>
		node(
			name,
			'executeWorkflow',
			1.3,
			{ ...source, mode, options: { waitForSubWorkflow: true } },
			{ onError: 'continueRegularOutput', ...extra },
		);
	/** `innermost` wrapped in `levels - 1` sub-workflows, each Trigger → Run Level n (its last node): `levels` deep in all. */
	const nest = (levels: number, innermost: SubWorkflowCode, where: 'inline' | 'database' = 'inline'): SubSource => {
		let source = sourceOf(where, innermost);
		for (let level = levels; level > 1; level--) {
			const name = `Run Level ${level}`;
			source = sourceOf(where, subOf([trigger(), runSub(name, source)], { Webhook: { main: [link(name)] } } as IConnections));
		}
		return source;
	};
	/** Trigger path: Enrich → Charge (error output unconnected). */
	const chargeAfter = (source: SubSource, mode: 'once' | 'each' = 'once'): Step => ({
		nodes: [runSub('Enrich', source, mode), httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_ID)],
		connections: { Enrich: { main: [link('Charge')] }, Charge: { main: [[], []] } } as IConnections,
		heads: ['Enrich'],
	});

	/* Running a row --------------------------------------------------------------------------------------------------- */

	const three = (p: string, extra: Array<Record<string, unknown>> = [{}, {}, {}]) => [
		{ id: `${p}_a`, amount: 300, vip: true, ...extra[0] },
		{ id: `${p}_b`, amount: 100, ...extra[1] },
		{ id: `${p}_c`, amount: 200, ...extra[2] },
	];
	const charges = (ids: string[], route = 'charge') => ids.map((id) => effectsAt(route, id));
	/** Lost: no effect and the key completed (the provider stops). Doubled: more than one effect. */
	const judge = (ids: string[], effects: number[], keys: Array<string | null>) => ({
		lost: ids.filter((_, index) => effects[index] === 0 && keys[index] === 'completed'),
		doubled: ids.filter((_, index) => effects[index] > 1),
	});
	const results: Record<string, unknown> = {};
	afterAll(() => {
		process.stderr.write(
			`RT51 RESULTS\n${Object.entries(results)
				.map(([label, value]) => `${label}: ${JSON.stringify(value)}`)
				.join('\n')}\n`,
		);
	});
	const record = <T>(label: string, value: T): T => {
		results[label] = value;
		return value;
	};

	const runTrigger = async (p: string, step: Step, fail: Array<[string, number]> = [], list = three(p), route = 'charge', attempts = 4) => {
		const ids = list.map((event) => event.id as string);
		useTrigger(`wf-rt51-${p}`, EVENTS);
		const refusal = await refusedAtPublish(step);
		if (refusal !== false) return { refusal: refusal.slice(0, 600), answers: [], charges: [], keys: [], lost: [], doubled: [] };
		for (const [target, times] of fail) failNext(target, times);
		const { answers, runs } = await provide(events(list), step, attempts);
		dump(p, runs);
		const effects = charges(ids, route);
		const keys = await statuses(ids);
		return { refusal: false as const, answers, charges: effects, keys, ...judge(ids, effects, keys) };
	};
	const runOne = async (p: string, step: Step, fail: Array<[string, number]> = []) => {
		const id = `${p}_a`;
		useTrigger(`wf-rt51-${p}`);
		const refusal = await refusedAtPublish(step);
		if (refusal !== false) return { refusal: refusal.slice(0, 600), answers: [], charges: [], keys: [], lost: [], doubled: [] };
		for (const [target, times] of fail) failNext(target, times);
		const { answers, runs } = await provide({ id, amount: 300, vip: true }, step);
		dump(p, runs);
		const effects = charges([id]);
		const keys = await statuses([id]);
		return {
			refusal: false as const,
			answers,
			charges: effects,
			keys,
			...judge([id], effects, keys),
			stored: keyRows().map((row) => row.response),
		};
	};
	/** The node path with Settle beside the step: Split Out → Reserve (Field) → the step + Settle. */
	const runSettle = async (p: string, step: Step, fail: Array<[string, number]> = [], list = three(p)) => {
		const ids = list.map((event) => event.id as string);
		useNodePath(`wf-rt51-${p}`);
		for (const [target, times] of fail) failNext(target, times);
		const { answers, runs } = await provideNodePath(events(list), () =>
			nodeTemplate(step, { reserve: FIELD_RESERVE(), before: SPLIT_OUT_EVENTS, settle: true }),
		);
		dump(p, runs);
		const effects = charges(ids);
		const keys = await Promise.all(ids.map(async (id) => await nodeKey(`evt:${id}`)));
		return {
			answers,
			errors: runs.map((run) => run.data.resultData.error?.message?.slice(0, 200) ?? null),
			charges: effects,
			keys,
			...judge(ids, effects, keys),
		};
	};
	const CORRECT = { refusal: false, lost: [], doubled: [] };

	/* 1. Nested sub-workflows, the innermost dropping B on a failed lookup ------------------------------------------- */
	describe('1. nested sub-workflows, the innermost drops an event on a failure', () => {
		for (const levels of [2, 3, 4, 5]) {
			it(`${levels} deep (Define Below): innermost Lookup (error output unconnected) → Tag; B's lookup failing once`, async () => {
				const p = `n${levels}`;
				const r = record(`nested ${levels} inline`, await runTrigger(p, chargeAfter(nest(levels, dropSub())), [[`lookup:${p}_b`, 1]]));
				// Documented (docs/templates.md): a failure at a node before the last, "also in a sub-workflow it starts (ten levels)".
				expect(r).toMatchObject({ ...CORRECT, answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] });
			});
		}
		for (const levels of [2, 5, 10]) {
			it(`${levels} deep (Source: Database): innermost Lookup (error output unconnected) → Tag; B's lookup failing once`, async () => {
				const p = `d${levels}`;
				const r = record(
					`nested ${levels} database`,
					await runTrigger(p, chargeAfter(nest(levels, dropSub(), 'database')), [[`lookup:${p}_b`, 1]]),
				);
				expect(r).toMatchObject({ ...CORRECT, answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] });
			});
		}
		it('5 deep, node path with Settle beside Enrich → Charge: B dropped innermost on a failed lookup', async () => {
			const p = 's5';
			const step: Step = {
				nodes: [runSub('Enrich', nest(5, dropSub())), httpCall('Charge', 'charge', { onError: 'continueRegularOutput' }, CHARGE_ID)],
				connections: { Enrich: { main: [link('Charge')] } } as IConnections,
				heads: ['Enrich'],
			};
			const r = record('nested 5 settle', await runSettle(p, step, [[`lookup:${p}_b`, 1]]));
			expect({ lost: r.lost, doubled: r.doubled, charges: r.charges }).toEqual({ lost: [], doubled: [], charges: [1, 1, 1] });
		});
		it('2 deep: the inner last node (Lookup, error output unconnected) fails for every event once: nothing returned', async () => {
			const p = 'nz';
			const r = record(
				'nested last fails all',
				await runTrigger(p, chargeAfter(nest(2, lastFailsSub())), [
					[`lookup:${p}_a`, 1],
					[`lookup:${p}_b`, 1],
					[`lookup:${p}_c`, 1],
				]),
			);
			expect(r).toMatchObject({ ...CORRECT, answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] });
		});
	});

	/* 2. A nested sub-workflow whose trigger is before 1.2 and whose last node ran twice ------------------------------ */
	describe('2. Execute Workflow Trigger 1.1 one level down, its last node run twice', () => {
		for (const where of ['inline', 'database'] as const) {
			it(`${where}: Enrich → [Run Inner → (1.1: VIP? → Lookup on both branches)] → Charge; nothing failing`, async () => {
				const p = `v${where[0]}`;
				const r = record(`nested 1.1 ${where}`, await runTrigger(p, chargeAfter(nest(2, twiceSub(1.1), where))));
				// Top level (pass 50): the events whose answers n8n did not return fail, none is lost. One level down the same.
				expect({ refusal: r.refusal, lost: r.lost, doubled: r.doubled }).toEqual({ refusal: false, lost: [], doubled: [] });
			});
		}
		it('control: the same one level deep (pass 50 shape), nothing failing: no event lost', async () => {
			const p = 'v1';
			const r = record('top 1.1', await runTrigger(p, chargeAfter(inline(twiceSub(1.1)))));
			expect({ refusal: r.refusal, lost: r.lost, doubled: r.doubled }).toEqual({ refusal: false, lost: [], doubled: [] });
		});
		it('inline: the charge inside the outer sub-workflow, after Run Inner (1.1, last node twice); nothing after Enrich', async () => {
			const p = 'vc';
			const outer = subOf(
				[
					trigger(),
					runSub('Run Inner', inline(twiceSub(1.1))),
					httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_ID),
				],
				{ Webhook: { main: [link('Run Inner')] }, 'Run Inner': { main: [link('Charge')] }, Charge: { main: [[], []] } } as IConnections,
			);
			const step: Step = { nodes: [runSub('Enrich', inline(outer))], heads: ['Enrich'] };
			const r = record('nested 1.1 charge inside', await runTrigger(p, step));
			expect({ refusal: r.refusal, lost: r.lost, doubled: r.doubled }).toEqual({ refusal: false, lost: [], doubled: [] });
		});
		it('inline, node path with Settle: Enrich → [Run Inner → (1.1 twice)] → Charge; nothing failing', async () => {
			const p = 'vs';
			const step: Step = {
				nodes: [runSub('Enrich', nest(2, twiceSub(1.1))), httpCall('Charge', 'charge', { onError: 'continueRegularOutput' }, CHARGE_ID)],
				connections: { Enrich: { main: [link('Charge')] } } as IConnections,
				heads: ['Enrich'],
			};
			const r = record('nested 1.1 settle', await runSettle(p, step));
			expect({ lost: r.lost, doubled: r.doubled }).toEqual({ lost: [], doubled: [] });
		});
	});

	/* 3. Execute Workflow set to Execute Once, several events --------------------------------------------------------- */
	describe('3. Execute Workflow at Execute Once', () => {
		/** Trigger → Charge (error output unconnected), charging `$json.body.id`: the sub-workflow is the effect. */
		const billingSub = () =>
			subOf([trigger(), httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, EVENT_ID)], {
				Webhook: { main: [link('Charge')] },
				Charge: { main: [[], []] },
			} as IConnections);
		for (const mode of ['once', 'each'] as const) {
			it(`Billing (Execute Workflow ${mode}, Execute Once, Define Below: the charge) as the step, three events: refused, or each charged once`, async () => {
				const p = `eo${mode[0]}`;
				const step: Step = { nodes: [runSub('Billing', inline(billingSub()), mode, { executeOnce: true })], heads: ['Billing'] };
				const r = record(`execute once ${mode}`, await runTrigger(p, step));
				// n8n gives the sub-workflow the first event alone: nothing can charge B and C. A demanding user expects the shape
				// refused at publish (as Execute Once before an effect is), not B and C completed uncharged.
				expect(r.refusal === false ? { lost: r.lost } : 'refused').toEqual('refused');
			});
		}
		it('Enrich (once) → [Run Billing (Execute Once) → (the charge)]: nested, three events: refused, or each charged once', async () => {
			const p = 'eon';
			const outer = subOf([trigger(), runSub('Run Billing', inline(billingSub()), 'once', { executeOnce: true })], {
				Webhook: { main: [link('Run Billing')] },
			} as IConnections);
			const r = record('execute once nested', await runTrigger(p, { nodes: [runSub('Enrich', inline(outer))], heads: ['Enrich'] }));
			expect(r.refusal === false ? { lost: r.lost } : 'refused').toEqual('refused');
		});
		it('node path with Settle: Billing (Execute Once) beside Settle, three events: refused before reserving, or each charged once', async () => {
			const p = 'eos';
			const step: Step = { nodes: [runSub('Billing', inline(billingSub()), 'once', { executeOnce: true })], heads: ['Billing'] };
			const r = record('execute once settle', await runSettle(p, step));
			expect({ lost: r.lost, doubled: r.doubled }).toEqual({ lost: [], doubled: [] });
		});
		/** Trigger → Get Token (lookup, Execute Once, Continue regular) → Charge (error output unconnected, by the token's answer). */
		const tokenSub = () =>
			subOf(
				[
					trigger(),
					httpCall('Get Token', 'lookup', { executeOnce: true, onError: 'continueRegularOutput' }, LOOKUP_BODY),
					httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_ID),
				],
				{ Webhook: { main: [link('Get Token')] }, 'Get Token': { main: [link('Charge')] }, Charge: { main: [[], []] } } as IConnections,
			);
		it('Define Below: Enrich → (Get Token at Execute Once → Charge), three events: refused at publish (documented)', async () => {
			const p = 'tki';
			const r = record('token once inline', await runTrigger(p, { nodes: [runSub('Enrich', inline(tokenSub()))], heads: ['Enrich'] }));
			expect(r.refusal).toEqual(expect.stringContaining('Get Token'));
		});
		it('Source: Database: Enrich → (Get Token at Execute Once → Charge), three events: B and C lost (documented)', async () => {
			const p = 'tkd';
			const r = record(
				'token once database',
				await runTrigger(p, { nodes: [runSub('Enrich', fromDatabase(tokenSub()))], heads: ['Enrich'] }),
			);
			// Documented (docs/templates.md, "Execute Once … in a sub-workflow from the database"): the package cannot read
			// this sub-workflow's nodes at publish, and n8n's record of the sub-execution shows "Get Token" given three items
			// and giving one, as a node that joins them (Aggregate) would: Charge runs for the first event only.
			expect({ refusal: r.refusal, charges: r.charges, lost: r.lost, doubled: r.doubled }).toEqual({
				refusal: false,
				charges: [1, 0, 0],
				lost: [`${p}_b`, `${p}_c`],
				doubled: [],
			});
		});
		it("Define Below: the sub-workflow's own trigger set to Execute Once → Charge inside, three events: refused, or each charged once", async () => {
			const p = 'tto';
			const sub = subOf([{ ...trigger(), executeOnce: true }, httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, EVENT_ID)], {
				Webhook: { main: [link('Charge')] },
				Charge: { main: [[], []] },
			} as IConnections);
			const r = record('sub trigger execute once', await runTrigger(p, { nodes: [runSub('Enrich', inline(sub))], heads: ['Enrich'] }));
			expect(r.refusal === false ? { lost: r.lost, charges: r.charges } : 'refused').toEqual('refused');
		});
		it('Define Below: Enrich → (Lookup at Execute Once, the last node) → Charge after Enrich, three events: refused, or each charged once', async () => {
			const p = 'tlo';
			const sub = subOf([trigger(), httpCall('Lookup', 'lookup', { executeOnce: true, onError: 'continueRegularOutput' }, LOOKUP_BODY)], {
				Webhook: { main: [link('Lookup')] },
			} as IConnections);
			const r = record('sub last execute once', await runTrigger(p, chargeAfter(inline(sub))));
			// docs/templates.md: Execute Once with a node that may act after it is refused, "on every path, inside a sub-workflow
			// defined in the node". Here the path leaves the sub-workflow: the Charge after Enrich acts for the first event only.
			expect(r.refusal === false ? { lost: r.lost, charges: r.charges } : 'refused').toEqual('refused');
		});
		it('control: one event, Billing (Execute Once): one charge, completed, 200', async () => {
			const p = 'eo1';
			const step: Step = { nodes: [runSub('Billing', inline(billingSub()), 'once', { executeOnce: true })], heads: ['Billing'] };
			const r = record('execute once one event', await runOne(p, step, [[`charge:${p}_a`, 1]]));
			expect(r).toMatchObject({ ...CORRECT, answers: [500, 200], charges: [1], keys: ['completed'] });
		});
	});

	/* 4. Always Output Data ------------------------------------------------------------------------------------------- */
	describe('4. Always Output Data', () => {
		it('Lookup (HTTP, Always Output Data, Continue regular) answering [] → Charge, three events: refused at publish (naming Lookup)', async () => {
			const p = 'ad1';
			const step: Step = {
				nodes: [
					httpCall('Lookup', 'empty', { onError: 'continueRegularOutput', alwaysOutputData: true }, LOOKUP_BODY),
					httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, "={{ JSON.stringify({ id: $('Webhook').item.json.body.id }) }}"),
				],
				connections: { Lookup: { main: [link('Charge')] }, Charge: { main: [[], []] } } as IConnections,
				heads: ['Lookup'],
			};
			const r = record('aod lookup', await runTrigger(p, step));
			expect(r.refusal).toEqual(expect.stringContaining('Lookup'));
		});
		it('Lookup (HTTP, Always Output Data) answering [] → Charge by the event, one event: one charge, completed', async () => {
			const p = 'ad2';
			const step: Step = {
				nodes: [
					httpCall('Lookup', 'empty', { alwaysOutputData: true }, LOOKUP_BODY),
					httpCall('Charge', 'charge', {}, "={{ JSON.stringify({ id: $('Webhook').item.json.body.id }) }}"),
				],
				connections: { Lookup: { main: [link('Charge')] } } as IConnections,
				heads: ['Lookup'],
			};
			const r = record('aod lookup one', await runOne(p, step, [[`charge:${p}_a`, 1]]));
			expect(r).toMatchObject({ ...CORRECT, answers: [500, 200], charges: [1], keys: ['completed'] });
		});
		it('Charge itself at Always Output Data and Continue (error output), nothing after, every event failing once', async () => {
			const p = 'ad3';
			const step: Step = {
				nodes: [httpCall('Charge', 'charge', { onError: 'continueErrorOutput', alwaysOutputData: true }, EVENT_ID)],
				connections: { Charge: { main: [[], []] } } as IConnections,
				heads: ['Charge'],
			};
			const r = record(
				'aod charge all fail',
				await runTrigger(p, step, [
					[`charge:${p}_a`, 1],
					[`charge:${p}_b`, 1],
					[`charge:${p}_c`, 1],
				]),
			);
			expect(r).toMatchObject({ ...CORRECT, answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] });
		});
		it('Charge at Always Output Data and Continue (error output) → Record (Edit Fields), B failing once', async () => {
			const p = 'ad4';
			const step: Step = {
				nodes: [httpCall('Charge', 'charge', { onError: 'continueErrorOutput', alwaysOutputData: true }, EVENT_ID), tagNode()],
				connections: { Charge: { main: [link('Tag'), []] } } as IConnections,
				heads: ['Charge'],
			};
			const r = record('aod charge then tag', await runTrigger(p, step, [[`charge:${p}_b`, 1]]));
			// Refused at publish (emptyItemAfterEffect: Tag, an Edit Fields, may fail on the one empty item after the charge):
			// stricter than needed for an Edit Fields that only adds a field, but clear, and nothing is lost.
			expect(r.refusal).toEqual(expect.stringContaining('"Tag" comes after "Charge", which is set to Always Output Data'));
		});
		it('Filter (vip only, Always Output Data) → Charge, no event vip: the empty item charges nobody, every key completed', async () => {
			const p = 'ad5';
			const step: Step = {
				nodes: [
					node(
						'Only VIP',
						'filter',
						2.2,
						{
							conditions: {
								options: { caseSensitive: true, leftValue: '', typeValidation: 'loose', version: 2 },
								conditions: [
									{
										id: 'k',
										leftValue: '={{ $json.body.vip === true }}',
										rightValue: '',
										operator: { type: 'boolean', operation: 'true', singleValue: true },
									},
								],
								combinator: 'and',
							},
							looseTypeValidation: true,
							options: {},
						},
						{ alwaysOutputData: true },
					),
					httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, '={{ JSON.stringify({ id: $json.body?.id }) }}'),
				],
				connections: { 'Only VIP': { main: [link('Charge')] }, Charge: { main: [[], []] } } as IConnections,
				heads: ['Only VIP'],
			};
			const list = three(p, [{ vip: false }, {}, {}]);
			const r = record('aod filter', await runTrigger(p, step, [], list));
			const phantom = record('aod filter: charges with no id', effectsAt('charge', ''));
			// The user's Filter keeps no event: no event's charge is due, and every key completes (not a loss: the workflow
			// decided). n8n's one empty item (paired to all three events) still calls the API once, with no id.
			expect({ refusal: r.refusal, answers: r.answers, charges: r.charges, keys: r.keys, phantom }).toEqual({
				refusal: false,
				answers: [200],
				charges: [0, 0, 0],
				keys: ['completed', 'completed', 'completed'],
				phantom: 1,
			});
		});
	});

	/* 5. Switch to all matching outputs ------------------------------------------------------------------------------- */
	describe('5. Switch sending to all matching outputs', () => {
		const numberAtLeast = (left: string, right: number) => ({
			options: { caseSensitive: true, leftValue: '', typeValidation: 'loose', version: 2 },
			conditions: [{ id: `n-${right}`, leftValue: left, rightValue: right, operator: { type: 'number', operation: 'gte' } }],
			combinator: 'and',
		});
		const vipTrue = {
			options: { caseSensitive: true, leftValue: '', typeValidation: 'loose', version: 2 },
			conditions: [
				{
					id: 'vip',
					leftValue: '={{ $json.body.vip === true }}',
					rightValue: '',
					operator: { type: 'boolean', operation: 'true', singleValue: true },
				},
			],
			combinator: 'and',
		};
		const switchStep = (): Step => ({
			nodes: [
				node('Route', 'switch', 3.2, {
					rules: { values: [{ conditions: numberAtLeast('={{ $json.body.amount }}', 200) }, { conditions: vipTrue }] },
					looseTypeValidation: true,
					options: { allMatchingOutputs: true, fallbackOutput: 'extra' },
				}),
				httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, EVENT_ID, {}, 0),
				httpCall('Ship', 'ship', { onError: 'continueErrorOutput' }, EVENT_ID, {}, 200),
			],
			connections: {
				Route: { main: [link('Charge'), link('Ship'), []] },
				Charge: { main: [[], []] },
				Ship: { main: [[], []] },
			} as IConnections,
			heads: ['Route'],
		});
		it("A (300, vip) to both, B (100) to the fallback (unconnected), C (200) to Charge; C's charge failing once", async () => {
			const p = 'sw1';
			const r = record('switch all matching', await runTrigger(p, switchStep(), [[`charge:${p}_c`, 1]]));
			const ships = charges([`${p}_a`, `${p}_b`, `${p}_c`], 'ship');
			// B goes to the fallback output, left unconnected: no effect is due (the user's routing), its key completes.
			expect({ ...r, ships }).toMatchObject({
				refusal: false,
				doubled: [],
				answers: [500, 200],
				charges: [1, 0, 1],
				ships: [1, 0, 0],
				keys: ['completed', 'completed', 'completed'],
			});
		});
		it("the same, A's ship failing once: A's key failed, retried (the charge done beside it repeats: documented several effects)", async () => {
			const p = 'sw2';
			const r = record('switch all matching ship fails', await runTrigger(p, switchStep(), [[`ship:${p}_a`, 1]]));
			const ships = charges([`${p}_a`, `${p}_b`, `${p}_c`], 'ship');
			// docs/templates.md "one event's step with several effects ... that fails after some of them": not guaranteed. A's
			// charge, done beside the failed ship for the same event, runs again with the retry (2 charges).
			expect({ answers: r.answers, charges: r.charges, ships, keys: r.keys }).toEqual({
				answers: [500, 200],
				charges: [2, 0, 1],
				ships: [1, 0, 0],
				keys: ['completed', 'completed', 'completed'],
			});
		});
	});

	/* 6. Execute Workflow "each", one sub-execution failing ----------------------------------------------------------- */
	describe('6. each item, one sub-execution failing', () => {
		/** Trigger → Charge at Stop Workflow (one event per sub-execution). */
		const stopSub = () =>
			subOf([trigger(), httpCall('Charge', 'charge', {}, EVENT_ID)], { Webhook: { main: [link('Charge')] } } as IConnections);
		for (const where of ['inline', 'database'] as const) {
			it(`${where}: Billing (each, Continue regular) → (Charge at Stop Workflow); B's charge failing once`, async () => {
				const p = `ea${where[0]}`;
				const step: Step = { nodes: [runSub('Billing', sourceOf(where, stopSub()), 'each')], heads: ['Billing'] };
				const r = record(`each fails ${where}`, await runTrigger(p, step, [[`charge:${p}_b`, 1]]));
				expect(r).toMatchObject({ ...CORRECT, answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] });
			});
			it(`${where}: Enrich (once) → [Run Billing (each) → (Charge at Stop Workflow)]; B's charge failing once`, async () => {
				const p = `en${where[0]}`;
				const outer = subOf([trigger(), runSub('Run Billing', sourceOf(where, stopSub()), 'each')], {
					Webhook: { main: [link('Run Billing')] },
				} as IConnections);
				const step: Step = { nodes: [runSub('Enrich', sourceOf(where, outer))], heads: ['Enrich'] };
				const r = record(`nested each fails ${where}`, await runTrigger(p, step, [[`charge:${p}_b`, 1]]));
				expect(r).toMatchObject({ ...CORRECT, answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] });
			});
		}
		it('Billing (each) at Stop Workflow, three events: refused at publish', async () => {
			const p = 'es';
			const step: Step = { nodes: [runSub('Billing', inline(stopSub()), 'each', { onError: 'stopWorkflow' })], heads: ['Billing'] };
			const r = record('each stop', await runTrigger(p, step));
			expect(r.refusal).toEqual(expect.stringContaining('Billing'));
		});
	});

	/* 7. Publish-time refusals deep inside nested sub-workflows; a disabled Execute Workflow ------------------------- */
	describe('7. refusals deep inside', () => {
		it('3 deep (Define Below): the innermost Charge at Retry On Fail and Continue (error output), three events: refused at publish', async () => {
			const p = 'rr';
			const innermost = subOf(
				[
					trigger(),
					httpCall('Charge', 'charge', { onError: 'continueErrorOutput', retryOnFail: true, maxTries: 2, waitBetweenTries: 0 }, EVENT_ID),
				],
				{ Webhook: { main: [link('Charge')] }, Charge: { main: [[], []] } } as IConnections,
			);
			const r = record('retry deep', await runTrigger(p, { nodes: [runSub('Enrich', nest(3, innermost))], heads: ['Enrich'] }));
			expect(r.refusal).toEqual(expect.stringContaining('Charge'));
		});
		it('4 deep (Define Below): an If at Continue (regular output) before the innermost Charge: refused at publish', async () => {
			const p = 'ri';
			const innermost = subOf(
				[
					trigger(),
					ifOn('$json.body.vip', 'VIP?', { onError: 'continueRegularOutput' }),
					httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, EVENT_ID),
				],
				{ Webhook: { main: [link('VIP?')] }, 'VIP?': { main: [link('Charge'), []] }, Charge: { main: [[], []] } } as IConnections,
			);
			const r = record('if continue deep', await runTrigger(p, { nodes: [runSub('Enrich', nest(4, innermost))], heads: ['Enrich'] }));
			expect(r.refusal).toEqual(expect.stringContaining('VIP?'));
		});
		it('control: Enrich (Execute Workflow) at Continue (using error output): refused at publish (documented)', async () => {
			const p = 'ceo';
			const step: Step = {
				nodes: [
					runSub('Enrich', inline(lastFailsSub()), 'once', { onError: 'continueErrorOutput' }),
					httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_ID),
				],
				connections: { Enrich: { main: [link('Charge'), []] }, Charge: { main: [[], []] } } as IConnections,
				heads: ['Enrich'],
			};
			const r = record('top execute workflow error output', await runTrigger(p, step));
			expect(r.refusal).toEqual(expect.stringContaining('Enrich'));
		});
		it("2 deep (Define Below): the inner Execute Workflow at Continue (using error output), its sub-workflow returning B's failure on its second output; B's lookup failing once", async () => {
			const p = 'nee';
			const outer = subOf([trigger(), runSub('Run Inner', inline(lastFailsSub()), 'once', { onError: 'continueErrorOutput' }), tagNode()], {
				Webhook: { main: [link('Run Inner')] },
				'Run Inner': { main: [link('Tag'), []] },
			} as IConnections);
			const r = record('nested execute workflow error output', await runTrigger(p, chargeAfter(inline(outer)), [[`lookup:${p}_b`, 1]]));
			// docs: Execute Workflow at Continue (using error output) is refused at publish (n8n overwrites the failures its
			// sub-workflow returns on the second output); one level down, the same must hold, or B be retried.
			expect(r.refusal === false ? { lost: r.lost, doubled: r.doubled } : 'refused').toEqual('refused');
		});
		it("the same on the node path with Settle beside Enrich → Charge: refused before reserving, or B retried; B's lookup failing once", async () => {
			const p = 'nes';
			const outer = subOf([trigger(), runSub('Run Inner', inline(lastFailsSub()), 'once', { onError: 'continueErrorOutput' }), tagNode()], {
				Webhook: { main: [link('Run Inner')] },
				'Run Inner': { main: [link('Tag'), []] },
			} as IConnections);
			const step: Step = {
				nodes: [runSub('Enrich', inline(outer)), httpCall('Charge', 'charge', { onError: 'continueRegularOutput' }, CHARGE_ID)],
				connections: { Enrich: { main: [link('Charge')] } } as IConnections,
				heads: ['Enrich'],
			};
			const r = record('nested execute workflow error output settle', await runSettle(p, step, [[`lookup:${p}_b`, 1]]));
			expect({ lost: r.lost, doubled: r.doubled }).toEqual({ lost: [], doubled: [] });
		});
		it('2 deep (Define Below): the inner Execute Workflow not waiting for its sub-workflow: refused at publish', async () => {
			const p = 'nnw';
			const outer = subOf(
				[
					trigger(),
					node('Run Inner', 'executeWorkflow', 1.3, { ...inline(dropSub()), mode: 'once', options: { waitForSubWorkflow: false } }),
				],
				{ Webhook: { main: [link('Run Inner')] } } as IConnections,
			);
			const r = record('nested not waiting', await runTrigger(p, chargeAfter(inline(outer))));
			expect(r.refusal).toEqual(expect.stringContaining('Run Inner'));
		});
		it('a disabled Execute Workflow not waiting (n8n passes the events through) before the Charge, B failing once: accepted, one charge each', async () => {
			const p = 'dx';
			const step: Step = {
				nodes: [
					node(
						'Old Audit',
						'executeWorkflow',
						1.3,
						{ ...inline(dropSub()), mode: 'once', options: { waitForSubWorkflow: false } },
						{ disabled: true },
					),
					httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, EVENT_ID),
				],
				connections: { 'Old Audit': { main: [link('Charge')] }, Charge: { main: [[], []] } } as IConnections,
				heads: ['Old Audit'],
			};
			const r = record('disabled execute workflow', await runTrigger(p, step, [[`charge:${p}_b`, 1]]));
			expect(r).toMatchObject({ ...CORRECT, answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] });
		});
		it('Enrich (Define Below) whose sub-workflow has a disabled Tag at Execute Once after the Lookup, B failing once', async () => {
			const p = 'dn';
			const sub = subOf(
				[
					trigger(),
					httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY),
					{ ...tagNode(), disabled: true, executeOnce: true },
				],
				{ Webhook: { main: [link('Lookup')] }, Lookup: { main: [link('Tag'), []] } } as IConnections,
			);
			const r = record('disabled inner', await runTrigger(p, chargeAfter(inline(sub)), [[`lookup:${p}_b`, 1]]));
			expect(r).toMatchObject({ ...CORRECT, answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] });
		});
	});

	/* 9. A node after the business step failing (a notification after the charge) -------------------------------------- */
	describe('9. a notification after the charge', () => {
		it('Charge (error output) → Notify at Stop Workflow, three events: refused at publish (Notify gets them together after the charge)', async () => {
			const p = 'nt';
			const step: Step = {
				nodes: [httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, EVENT_ID), httpCall('Notify', 'notify', {}, CHARGE_ID)],
				connections: { Charge: { main: [link('Notify'), []] } } as IConnections,
				heads: ['Charge'],
			};
			const r = record('notify stop', await runTrigger(p, step));
			expect(r.refusal).toEqual(expect.stringContaining('Notify'));
		});
		it('Charge → Notify (both error output unconnected), three events, nothing failing: one charge and one notice each, 200', async () => {
			const p = 'nn';
			const step: Step = {
				nodes: [
					httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, EVENT_ID),
					httpCall('Notify', 'notify', { onError: 'continueErrorOutput' }, CHARGE_ID),
				],
				connections: { Charge: { main: [link('Notify'), []] }, Notify: { main: [[], []] } } as IConnections,
				heads: ['Charge'],
			};
			const r = record('notify continue', await runTrigger(p, step));
			const notices = charges([`${p}_a`, `${p}_b`, `${p}_c`], 'notify');
			expect({ ...r, notices }).toMatchObject({ ...CORRECT, answers: [200], charges: [1, 1, 1], notices: [1, 1, 1] });
		});
	});

	/* 8. A Code node whose pairedItem contradicts the key each item carries ------------------------------------------- */
	describe('8. Code with a pairedItem against the key', () => {
		it("Code (all items) rotating pairedItem, items keep their key → Charge; B's charge failing once", async () => {
			const p = 'cp';
			const step: Step = {
				nodes: [
					node(
						'Shift',
						'code',
						2,
						{
							mode: 'runOnceForAllItems',
							jsCode:
								'const all = $input.all(); return all.map((item, i) => ({ json: item.json, pairedItem: { item: (i + 1) % all.length } }));',
						},
						{ onError: 'continueRegularOutput' },
					),
					httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, EVENT_ID),
				],
				connections: { Shift: { main: [link('Charge')] }, Charge: { main: [[], []] } } as IConnections,
				heads: ['Shift'],
			};
			const r = record('code rotated pairing', await runTrigger(p, step, [[`charge:${p}_b`, 1]]));
			expect(r).toMatchObject({ ...CORRECT, answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] });
		});
		it("Code (each item) returning nothing for B (skip) and the item for the others → Charge; C's charge failing once", async () => {
			const p = 'ce';
			const step: Step = {
				nodes: [
					node(
						'Skip Some',
						'code',
						2,
						{ mode: 'runOnceForEachItem', jsCode: 'return $input.item.json.body.skip ? null : $input.item;' },
						{ onError: 'continueRegularOutput' },
					),
					httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, EVENT_ID),
				],
				connections: { 'Skip Some': { main: [link('Charge')] }, Charge: { main: [[], []] } } as IConnections,
				heads: ['Skip Some'],
			};
			const r = record('code each skip', await runTrigger(p, step, [[`charge:${p}_c`, 1]], three(p, [{}, { skip: true }, {}])));
			// B needs no charge (the user's code skips it): completed uncharged is right.
			expect({ answers: r.answers, charges: r.charges, keys: r.keys, doubled: r.doubled }).toEqual({
				answers: [500, 200],
				charges: [1, 0, 1],
				keys: ['completed', 'completed', 'completed'],
				doubled: [],
			});
		});
	});
});
