import { type IConnections, type INode } from 'n8n-workflow';

import { describeWithN8n } from '../support/n8nBaseNodes';
import { link } from '../support/settleWorkflows';
import {
	baseNode as node,
	CHARGE_ID,
	EVENTS,
	events,
	ifTrue,
	LOOKUP_BODY,
	RESPOND_WITH_ID,
	sortOn,
	SPLIT_OUT_EVENTS,
	subWorkflowRedTeam,
	subWorkflowTrigger,
	threeEvents,
	type Step,
} from '../support/triggerRedTeam';

/*
 * Red team 48: the trace of 12c31d6 past an Execute Workflow run once for all items (Tracer.subWorkflowLinks,
 * returnedCameFrom, cameFromInside), on the trigger path (Events Path) and the node path (Complete, Key From Item).
 *
 * Each sub-workflow runs as its own execution and returns what n8n 2.41.1 returns (withSubWorkflowsInProcess); one
 * whose settings say saveDataSuccessExecution 'none' has no record (getRunExecutionData answers undefined), as in
 * n8n, and one the node does not wait for runs in the background.
 */

describeWithN8n('red team 48: the trace through a sub-execution record', () => {
	// Sub-workflows the Execute Workflow node does not wait for, awaited after each row.
	const background: Array<Promise<unknown>> = [];
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
		nodeStored,
		provide,
		refusedAtPublish,
		statuses,
		triggerStep,
		useTrigger,
	} = subWorkflowRedTeam({
		tag: 'rt48',
		route: (route, body) => (route === 'lookup' ? { ...body } : undefined),
		subWorkflows: { savingSettings: true, background },
		baseNodeFiles: { 'n8n-nodes-base.aggregate': 'Transform/Aggregate/Aggregate.node.js' },
	});
	const { completeNode, nodeTemplate, provideNodePath, useNodePath } = nodePath;

	const sub = (nodes: INode[], connections: IConnections, saved = true) =>
		JSON.stringify({ nodes, connections, settings: saved ? {} : { saveDataSuccessExecution: 'none' } });

	/** Trigger → VIP? → (true) Lookup, (false) the same Lookup: Lookup, the last node, runs twice. */
	const twiceSub = (version: number, saved = true) =>
		sub(
			[
				subWorkflowTrigger(version),
				ifTrue('$json.body.vip'),
				httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY),
			],
			{ Webhook: { main: [link('VIP?')] }, 'VIP?': { main: [link('Lookup'), link('Lookup')] }, Lookup: { main: [[], []] } } as IConnections,
			saved,
		);
	/** Trigger → Loop Over Items (1) → Lookup → back; Done unconnected (the loop node runs last and returns Done). */
	const loopSub = (saved = true) =>
		sub(
			[
				subWorkflowTrigger(),
				node('Loop', 'splitInBatches', 3, { batchSize: 1, options: {} }),
				httpCall('Lookup', 'lookup', {}, LOOKUP_BODY),
			],
			{ Webhook: { main: [link('Loop')] }, Loop: { main: [[], link('Lookup')] }, Lookup: { main: [link('Loop')] } } as IConnections,
			saved,
		);

	afterEach(async () => {
		await Promise.all(background.splice(0));
	});

	/* 1. Loop Over Items inside the sub-workflow: its Done items are paired `{ item: 0, sourceOverwrite }` (the body's
	 * run they came back from); cameFromInside reads `task.source[pair.input]` (the loop's last run's input), never
	 * sourceOverwrite: every answer is read as the last event's. */
	it("trigger: sub Loop Over Items (1) → Lookup, Done returned; A's charge failing once: A charged (not lost), one charge each", async () => {
		const ids = threeEvents('tl').map((event) => event.id);
		useTrigger('wf-rt48-loop-trigger', EVENTS);
		const step = triggerStep(loopSub());
		const refusal = await refusedAtPublish(step);
		failNext(`charge:${ids[0]}`);
		const { answers, runs } = await provide(events(threeEvents('tl')), step);
		dump('tl', runs);
		expect({ refusal, answers, charges: charges(ids), keys: await statuses(ids) }).toEqual({
			refusal: false,
			answers: [500, 200],
			charges: [1, 1, 1],
			keys: ['completed', 'completed', 'completed'],
		});
	});

	it("node path: the same sub (Loop inside), Complete (Key From Item), A's charge failing once: A charged, one charge each", async () => {
		const ids = threeEvents('nl').map((event) => event.id);
		useNodePath('wf-rt48-loop-node');
		failNext(`charge:${ids[0]}`);
		const { answers, runs } = await provideNodePath(events(threeEvents('nl')), () =>
			nodeTemplate(nodeStep(loopSub(), RESPOND_WITH_ID), {
				reserve: fieldReserve(),
				before: SPLIT_OUT_EVENTS,
			}),
		);
		dump('nl', runs);
		expect({ answers: answers.at(-1), charges: charges(ids), keys: await nodeStatuses(ids), stored: await nodeStored(ids) }).toEqual({
			answers: 200,
			charges: [1, 1, 1],
			keys: ['completed', 'completed', 'completed'],
			stored: [...ids],
		});
	});

	/* 2. The sub-workflow's last node ran twice (an If whose two branches feed the same Lookup). With Execute Workflow
	 * Trigger 1.2 n8n returns both runs (run 0 then run 1); returnedCameFrom reads the item at the same index of the
	 * LAST run only. */
	for (const version of [1.2]) {
		it(`trigger: sub If → Lookup (both branches; trigger ${version}), B's charge failing once: B charged (not lost)`, async () => {
			const p = `tt${String(version).replace('.', '')}`;
			const ids = threeEvents(p).map((event) => event.id);
			useTrigger(`wf-rt48-twice-trigger-${p}`, EVENTS);
			const step = triggerStep(twiceSub(version));
			const refusal = await refusedAtPublish(step);
			failNext(`charge:${ids[1]}`);
			const { answers, runs } = await provide(events(threeEvents(p)), step);
			dump(p, runs);
			const result = { refusal, answers, charges: charges(ids), keys: await statuses(ids) };
			expect(result).toEqual({ refusal: false, answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] });
		});

		it(`node path: sub If → Lookup (both branches; trigger ${version}), Complete (Key From Item), B's charge failing once: B charged (not lost)`, async () => {
			const p = `nt${String(version).replace('.', '')}`;
			const ids = threeEvents(p).map((event) => event.id);
			useNodePath(`wf-rt48-twice-node-${p}`);
			failNext(`charge:${ids[1]}`);
			const { answers, runs } = await provideNodePath(events(threeEvents(p)), () =>
				nodeTemplate(nodeStep(twiceSub(version), RESPOND_WITH_ID), {
					reserve: fieldReserve(),
					before: SPLIT_OUT_EVENTS,
				}),
			);
			dump(p, runs);
			const result = { answers: answers.at(-1), charges: charges(ids), keys: await nodeStatuses(ids), stored: await nodeStored(ids) };
			expect(result).toEqual({ answers: 200, charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'], stored: [...ids] });
		});
	}

	/* 3. Merge (combine by position) in the parent: the sub-workflow's answers (input 1) joined with Reserve's items
	 * (input 2), a Sort inside the (saved) sub-workflow: the joined item carries one event's key and another's answer. */
	const sortSub = (saved = true) =>
		sub(
			[subWorkflowTrigger(), sortOn('body.amount'), httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY)],
			{ Webhook: { main: [link('By Amount')] }, 'By Amount': { main: [link('Lookup')] }, Lookup: { main: [[], []] } } as IConnections,
			saved,
		);
	it("node path: Enrich (Sort inside, saved) and Reserve → Merge by position → Charge → Complete, B's charge failing once: refused on every delivery, none lost (documented)", async () => {
		const ids = ['mp_a', 'mp_b'];
		useNodePath('wf-rt48-merge-position');
		failNext(`charge:${ids[1]}`);
		const step: Step = {
			nodes: [
				enrich(sortSub()),
				node('Join', 'merge', 3.2, { mode: 'combine', combineBy: 'combineByPosition', options: {} }),
				httpCall('Charge', 'charge', { onError: 'continueRegularOutput' }, CHARGE_ID),
				completeNode({ position: [1100, 0] }, {}),
			],
			connections: {
				Enrich: { main: [link('Join')] },
				Join: { main: [link('Charge')] },
				Charge: { main: [link('Mark Complete')] },
				'Mark Complete': { main: [link('Respond 200'), link('Respond 500 (provider retries)')] },
			} as IConnections,
			heads: ['Enrich', 'Join#1'],
		};
		const { answers, runs } = await provideNodePath(
			events([
				{ id: ids[0], amount: 300 },
				{ id: ids[1], amount: 100 },
			]),
			() => nodeTemplate(step, { reserve: fieldReserve(), before: SPLIT_OUT_EVENTS }),
		);
		dump('mp', runs);
		// Documented (docs/templates.md, "a Merge by position that joins the items a sub-workflow returned with the events"):
		// each joined item stands for two events, so Complete cannot tell whose key it settles: refused on every delivery,
		// nothing completed, none lost; each retry charges again.
		expect({ answers, charges: ids.map((id) => effectsAt('charge', id)), keys: await nodeStatuses(ids) }).toEqual({
			answers: [500, 500, 500, 500],
			charges: [4, 3],
			keys: ['processing', 'processing'],
		});
	});

	/* 4. Execute Workflow inside Loop Over Items in the parent (trigger path): several runs of the same node, one item each. */
	it("trigger: Loop Over Items (1) → Enrich (sub: Lookup) → Charge (Continue) → back, B's charge failing once: one charge each", async () => {
		const ids = ['pl_a', 'pl_b', 'pl_c'];
		useTrigger('wf-rt48-parent-loop', EVENTS);
		const lookupSub = sub([subWorkflowTrigger(), httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY)], {
			Webhook: { main: [link('Lookup')] },
			Lookup: { main: [[], []] },
		} as IConnections);
		const step: Step = {
			nodes: [
				node('Loop', 'splitInBatches', 3, { batchSize: 1, options: {} }),
				enrich(lookupSub),
				httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_ID),
			],
			connections: {
				Loop: { main: [[], link('Enrich')] },
				Enrich: { main: [link('Charge')] },
				Charge: { main: [link('Loop'), link('Loop')] },
			} as IConnections,
			heads: ['Loop'],
		};
		const refusal = await refusedAtPublish(step);
		failNext(`charge:${ids[1]}`);
		const { answers, runs } = await provide(events(ids.map((id, n) => ({ id, amount: 100 * (3 - n) }))), step);
		dump('pl', runs);
		expect({ refusal, answers, charges: charges(ids), keys: await statuses(ids) }).toEqual({
			refusal: false,
			answers: [500, 200],
			charges: [1, 1, 1],
			keys: ['completed', 'completed', 'completed'],
		});
	});

	/* 5. The sub-workflow's last node an If (both branches end there): n8n returns both outputs; the Execute Workflow node
	 * has one output, so what the false branch returns goes nowhere in the parent. (5a) Lookup before the If: documented
	 * refusal, docs/templates.md: "| an If, Filter or Switch after a node that may have an effect, several events in one
	 * run | refused before anything is reserved (trigger with *Events Path*: at publish)". (5b) The If alone: the events'
	 * own items (with their keys) come back on two outputs. */
	it('trigger: sub Lookup → If as the last node, several events: refused at publish (documented)', async () => {
		useTrigger('wf-rt48-if-last', EVENTS);
		const ifLast = sub(
			[subWorkflowTrigger(), httpCall('Lookup', 'lookup', { onError: 'continueErrorOutput' }, LOOKUP_BODY), ifTrue('$json.vip')],
			{
				Webhook: { main: [link('Lookup')] },
				Lookup: { main: [link('VIP?'), []] },
			} as IConnections,
		);
		expect(await refusedAtPublish(triggerStep(ifLast))).toMatch(/"VIP\?" gets the events of one delivery together after "Lookup"/);
	});
	it('trigger: sub with an If alone as its last node (A vip, B not), Charge by the event id: B ends as an If branch that ends (documented)', async () => {
		const ids = ['ia_a', 'ia_b'];
		useTrigger('wf-rt48-if-alone', EVENTS);
		const ifAlone = sub([subWorkflowTrigger(), ifTrue('$json.body.vip')], { Webhook: { main: [link('VIP?')] } } as IConnections);
		const step: Step = {
			nodes: [enrich(ifAlone), httpCall('Charge', 'charge', { onError: 'continueErrorOutput' })],
			connections: { Enrich: { main: [link('Charge')] }, Charge: { main: [[], []] } } as IConnections,
			heads: ['Enrich'],
		};
		const refusal = await refusedAtPublish(step);
		const { answers, runs } = await provide(events([{ id: ids[0], vip: true }, { id: ids[1] }]), step);
		dump('ia', runs);
		const keys = await statuses(ids);
		// Documented (docs/templates.md): what the sub-workflow's last node gives on an output beyond the Execute Workflow
		// node's one output goes nowhere in the parent, as an If branch that ends: B's key completes without a charge.
		expect({ refusal, aCharges: effectsAt('charge', ids[0]), bCharges: effectsAt('charge', ids[1]), keys, answers }).toEqual({
			refusal: false,
			aCharges: 1,
			bCharges: 0,
			keys: ['completed', 'completed'],
			answers: [200],
		});
	});

	/* 6. Wait For Sub-Workflow Completion off: documented, docs/templates.md: "an Execute Workflow not waiting for its
	 * sub-workflow ... It refuses, at its first step" (the trigger: refused at publish). */
	it('trigger: Enrich not waiting for its sub-workflow: refused at publish (documented)', async () => {
		useTrigger('wf-rt48-no-wait', EVENTS);
		const step: Step = {
			nodes: [enrich(sortSub(), 'once', 'Enrich', false), httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_ID)],
			connections: { Enrich: { main: [link('Charge')] }, Charge: { main: [[], []] } } as IConnections,
			heads: ['Enrich'],
		};
		expect(await refusedAtPublish(step)).toEqual(expect.any(String));
	});
});
