import { type IConnections, type INode } from 'n8n-workflow';

import { describeWithN8n } from '../support/n8nBaseNodes';
import { link } from '../support/settleWorkflows';
import {
	baseNode as node,
	CHARGE_ID,
	events,
	ifTrue,
	LOOKUP_BODY,
	sortOn,
	SPLIT_OUT_EVENTS,
	subWorkflowRedTeam,
	subWorkflowTrigger,
	type Step,
} from '../support/triggerRedTeam';

/*
 * Red team 46: Complete (Release, Mark Failed, Settle) after an Execute Workflow run once for all the events, around
 * the rule of c50d46a (n8n's pairing through a sub-execution it did not save is a guess). The engine here saves a
 * sub-execution's record unless the sub-workflow's own settings say saveDataSuccessExecution 'none' (as n8n does), so
 * a nested sub-workflow can be unsaved under a saved one.
 */

describeWithN8n('red team 46: the guessed pairing of a sub-workflow', () => {
	const { dump, effectsAt, enrich, failNext, fieldReserve, httpCall, keyStore, nodePath, nodeStatuses, nodeStep } = subWorkflowRedTeam({
		tag: 'rt46',
		route: (route, body) => (route === 'lookup' ? { ...body } : undefined),
		subWorkflows: { savingSettings: true },
	});
	const { completeNode, nodeKey, nodeTemplate, provideNodePath, useNodePath } = nodePath;

	/** Every sub-workflow here starts with an Execute Workflow Trigger 1.1. */
	const trigger = () => subWorkflowTrigger(1.1);
	const sub = (nodes: INode[], connections: IConnections, saved: boolean) =>
		JSON.stringify({ nodes, connections, settings: saved ? {} : { saveDataSuccessExecution: 'none' } });

	/** Trigger → Sort by amount → If (vip) → true: Lookup VIP, false: Lookup → Merge (append): every event answered. */
	const ifMergeSub = (saved: boolean) =>
		sub(
			[
				trigger(),
				sortOn('body.amount'),
				ifTrue('$json.body.vip'),
				httpCall('Lookup VIP', 'lookup', {}, LOOKUP_BODY),
				httpCall('Lookup', 'lookup', {}, LOOKUP_BODY),
				node('Join', 'merge', 3.2, {}),
			],
			{
				Webhook: { main: [link('By Amount')] },
				'By Amount': { main: [link('VIP?')] },
				'VIP?': { main: [link('Lookup VIP'), link('Lookup')] },
				'Lookup VIP': { main: [link('Join')] },
				Lookup: { main: [[{ node: 'Join', type: 'main', index: 1 }]] },
			} as IConnections,
			saved,
		);
	/** Trigger → Sort by amount → Lookup. */
	const sortSub = (saved: boolean, lookup: Partial<INode> = {}) =>
		sub(
			[trigger(), sortOn('body.amount'), httpCall('Lookup', 'lookup', lookup, LOOKUP_BODY)],
			{ Webhook: { main: [link('By Amount')] }, 'By Amount': { main: [link('Lookup')] } },
			saved,
		);
	/** Trigger → Inner (Execute Workflow once, waiting, of `inner`). */
	const outerSub = (inner: string, saved: boolean) =>
		sub(
			[
				trigger(),
				node('Inner', 'executeWorkflow', 1.3, {
					source: 'parameter',
					workflowJson: inner,
					mode: 'once',
					options: { waitForSubWorkflow: true },
				}),
			],
			{ Webhook: { main: [link('Inner')] } },
			saved,
		);
	/** Trigger → Split Out body.lines (each line with the event's id) → Lookup per line. */
	const linesSub = (saved: boolean) =>
		sub(
			[
				trigger(),
				node('Lines', 'splitOut', 1, {
					fieldToSplitOut: 'body.lines',
					include: 'selectedOtherFields',
					fieldsToInclude: 'body.id',
					options: { destinationFieldName: 'line' },
				}),
				httpCall(
					'Lookup',
					'lookup',
					{},
					'={{ JSON.stringify({ id: $json.body?.id ?? $json["body.id"], line: $json.line.n, amount: $json.line.amount }) }}',
				),
			],
			{ Webhook: { main: [link('Lines')] }, Lines: { main: [link('Lookup')] } },
			saved,
		);
	/** Trigger → Sort by line amount → Lookup per line. */
	const sortLinesSub = (saved: boolean) =>
		sub(
			[
				trigger(),
				sortOn('line.amount'),
				httpCall('Lookup', 'lookup', {}, '={{ JSON.stringify({ id: $json.body.id, line: $json.line.n, amount: $json.line.amount }) }}'),
			],
			{ Webhook: { main: [link('By Amount')] }, 'By Amount': { main: [link('Lookup')] } },
			saved,
		);

	const CHARGE_LINE = '={{ JSON.stringify({ id: $json.id + "-" + $json.line }) }}';

	const storedAnswers = async (ids: string[]) => {
		const stored = await keyStore().getKeys(ids.map((id) => `evt:${id}`));
		return ids.map((id) => (stored.get(`evt:${id}`)?.response as { charged?: string } | null | undefined)?.charged ?? null);
	};

	/* 1. The record saved, but n8n's own backtracking through it (findPairedItemThroughWorkflowData) follows only the first
	 * input of each node and output 0 of each: an If + Merge inside moves answers to other events. */
	it('saved record, Sort → If → two Lookups → Merge (append) inside, three events, Response to Store: each completed with its own answer', async () => {
		const ids = ['im_a', 'im_b', 'im_c'];
		useNodePath('wf-rt46-ifmerge-store');
		const { answers, runs } = await provideNodePath(
			events([
				{ id: ids[0], amount: 300, vip: true },
				{ id: ids[1], amount: 100 },
				{ id: ids[2], amount: 200 },
			]),
			() =>
				nodeTemplate(nodeStep(ifMergeSub(true), { responseJson: '={{ JSON.stringify({ charged: $json.id }) }}' }), {
					reserve: fieldReserve(),
					before: SPLIT_OUT_EVENTS,
				}),
		);
		dump('ifmerge-store', runs);
		expect({
			answers: answers.at(-1),
			charges: ids.map((id) => effectsAt('charge', id)),
			keys: await nodeStatuses(ids),
			stored: await storedAnswers(ids),
		}).toEqual({ answers: 200, charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'], stored: ids });
	});

	it("saved record, the same If + Merge inside, C's charge failing once: C charged (not lost), every key completed", async () => {
		const ids = ['if_a', 'if_b', 'if_c'];
		useNodePath('wf-rt46-ifmerge-fail');
		failNext(`charge:${ids[2]}`);
		const { answers, runs } = await provideNodePath(
			events([
				{ id: ids[0], amount: 300, vip: true },
				{ id: ids[1], amount: 100 },
				{ id: ids[2], amount: 200 },
			]),
			() => nodeTemplate(nodeStep(ifMergeSub(true)), { reserve: fieldReserve(), before: SPLIT_OUT_EVENTS }),
		);
		dump('ifmerge-fail', runs);
		expect({
			answers: answers.at(-1),
			cCharged: effectsAt('charge', ids[2]) >= 1,
			keys: await nodeStatuses(ids),
		}).toEqual({ answers: 200, cCharged: true, keys: ['completed', 'completed', 'completed'] });
	});

	// Documented ("otherwise refused", as the Filter row: on every delivery): n8n keeps the sub-workflow's Merge pairing
	// { item, input: 1 }, which names an input the Execute Workflow node has not; nothing is completed, no event lost.
	it("unsaved record, the same If + Merge inside, C's charge failing once: refused on every delivery, none lost (documented)", async () => {
		const ids = ['iu_a', 'iu_b', 'iu_c'];
		useNodePath('wf-rt46-ifmerge-unsaved');
		failNext(`charge:${ids[2]}`);
		const { answers, runs } = await provideNodePath(
			events([
				{ id: ids[0], amount: 300, vip: true },
				{ id: ids[1], amount: 100 },
				{ id: ids[2], amount: 200 },
			]),
			() => nodeTemplate(nodeStep(ifMergeSub(false)), { reserve: fieldReserve(), before: SPLIT_OUT_EVENTS }),
		);
		dump('ifmerge-unsaved', runs);
		expect({
			answers,
			charges: ids.map((id) => effectsAt('charge', id)),
			keys: await nodeStatuses(ids),
		}).toEqual({ answers: [500, 500, 500, 500], charges: [4, 4, 3], keys: ['processing', 'processing', 'processing'] });
	});

	/* Release on the Charge's error output, Complete on its success output, after the unsaved Sort sub-workflow. */
	it("unsaved Sort sub-workflow, Charge at Continue (error output) → Release / success → Complete, B's charge failing once: B charged, both completed", async () => {
		const [a, b] = ['re_a', 're_b'];
		useNodePath('wf-rt46-release');
		failNext(`charge:${b}`);
		const release = { ...completeNode({ position: [1100, 300] }, { operation: 'release' }), id: 'Release', name: 'Release' };
		const step: Step = {
			nodes: [
				enrich(sortSub(false)),
				httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_ID),
				completeNode({ position: [1100, 0] }, {}),
				release,
			],
			connections: {
				Enrich: { main: [link('Charge')] },
				Charge: { main: [link('Mark Complete'), link('Release')] },
				'Mark Complete': { main: [link('Respond 200'), link('Respond 500 (provider retries)')] },
				Release: { main: [link('Respond 500 (provider retries)'), link('Respond 500 (provider retries)')] },
			} as IConnections,
			heads: ['Enrich'],
		};
		const { answers, runs } = await provideNodePath(
			events([
				{ id: a, amount: 300 },
				{ id: b, amount: 100 },
			]),
			() => nodeTemplate(step, { reserve: fieldReserve(), before: SPLIT_OUT_EVENTS }),
		);
		dump('release', runs);
		expect({
			answers: answers.at(-1),
			charges: [effectsAt('charge', a), effectsAt('charge', b)],
			keys: await nodeStatuses([a, b]),
		}).toEqual({ answers: 200, charges: [2, 1], keys: ['completed', 'completed'] });
	});

	/* 2. Nested: the outer sub-workflow saved, its own sub-workflow (Sort inside) not. */
	it("nested: outer saved, inner unsaved with a Sort, B's charge failing once: B not lost (documented: A charged again)", async () => {
		const [a, b] = ['ns_a', 'ns_b'];
		useNodePath('wf-rt46-nested');
		failNext(`charge:${b}`);
		const { answers, runs } = await provideNodePath(
			events([
				{ id: a, amount: 300 },
				{ id: b, amount: 100 },
			]),
			() => nodeTemplate(nodeStep(outerSub(sortSub(false), true)), { reserve: fieldReserve(), before: SPLIT_OUT_EVENTS }),
		);
		dump('nested', runs);
		expect({
			answers: answers.at(-1),
			charges: [effectsAt('charge', a), effectsAt('charge', b)],
			keys: await nodeStatuses([a, b]),
		}).toEqual({ answers: 200, charges: [2, 1], keys: ['completed', 'completed'] });
	});

	/* 3. One event given, more items returned: Split Out inside the unsaved sub-workflow. */
	for (const saved of [true, false]) {
		it(`one event, Split Out of its two lines inside (${saved ? 'saved' : 'unsaved'}), line 2's charge failing once: line 2 charged, key completed`, async () => {
			const id = saved ? 'ls_a' : 'lu_a';
			useNodePath(`wf-rt46-lines-${saved}`);
			failNext(`charge:${id}-2`);
			const { answers, runs } = await provideNodePath(
				events([
					{
						id,
						lines: [
							{ n: 1, amount: 10 },
							{ n: 2, amount: 20 },
						],
					},
				]),
				() => nodeTemplate(nodeStep(linesSub(saved), {}, 'once', CHARGE_LINE), { reserve: fieldReserve(), before: SPLIT_OUT_EVENTS }),
			);
			dump(`lines-${saved}`, runs);
			expect({
				answers: answers.at(-1),
				line2: effectsAt('charge', `${id}-2`),
				key: await nodeKey(`evt:${id}`),
			}).toEqual({ answers: 200, line2: 1, key: 'completed' });
		});
	}

	/* 4. One event split into its lines after Reserve, the lines given to the unsaved sub-workflow (a Sort inside). */
	it('one event, its lines split after Reserve and sorted in an unsaved sub-workflow: each line charged once, completed', async () => {
		const id = 'sl_a';
		useNodePath('wf-rt46-split-after');
		const step: Step = {
			nodes: [
				node('Lines', 'splitOut', 1, {
					fieldToSplitOut: 'body.lines',
					include: 'allOtherFields',
					options: { destinationFieldName: 'line' },
				}),
				enrich(sortLinesSub(false)),
				httpCall('Charge', 'charge', { onError: 'continueRegularOutput' }, CHARGE_LINE),
				completeNode({ position: [1100, 0] }, {}),
			],
			connections: {
				Lines: { main: [link('Enrich')] },
				Enrich: { main: [link('Charge')] },
				Charge: { main: [link('Mark Complete')] },
				'Mark Complete': { main: [link('Respond 200'), link('Respond 500 (provider retries)')] },
			} as IConnections,
			heads: ['Lines'],
		};
		const { answers, runs } = await provideNodePath(
			events([
				{
					id,
					lines: [
						{ n: 1, amount: 20 },
						{ n: 2, amount: 10 },
					],
				},
			]),
			() => nodeTemplate(step, { reserve: fieldReserve(), before: SPLIT_OUT_EVENTS }),
		);
		dump('split-after', runs);
		expect({
			answers,
			lines: [effectsAt('charge', `${id}-1`), effectsAt('charge', `${id}-2`)],
			key: await nodeKey(`evt:${id}`),
		}).toEqual({ answers: [200], lines: [1, 1], key: 'completed' });
	});

	/* 5. Complete reached in two node runs: an If after the charge sends each event to its own Complete. */
	it('unsaved Sort sub-workflow, an If after Charge splitting the answers to two Complete nodes, both charged: each once, both completed', async () => {
		const [a, b] = ['tc_a', 'tc_b'];
		useNodePath('wf-rt46-two-completes');
		const second = { ...completeNode({ position: [1100, 300] }, {}), id: 'Mark Complete 2', name: 'Mark Complete 2' };
		const step: Step = {
			nodes: [
				enrich(sortSub(false)),
				httpCall('Charge', 'charge', { onError: 'continueRegularOutput' }, CHARGE_ID),
				node('Big?', 'if', 2.2, {
					conditions: {
						options: { caseSensitive: true, leftValue: '', typeValidation: 'loose', version: 2 },
						conditions: [{ id: 'b', leftValue: '={{ $json.id }}', rightValue: a, operator: { type: 'string', operation: 'equals' } }],
						combinator: 'and',
					},
					looseTypeValidation: true,
					options: {},
				}),
				completeNode({ position: [1100, 0] }, {}),
				second,
			],
			connections: {
				Enrich: { main: [link('Charge')] },
				Charge: { main: [link('Big?')] },
				'Big?': { main: [link('Mark Complete'), link('Mark Complete 2')] },
				'Mark Complete': { main: [link('Respond 200'), link('Respond 500 (provider retries)')] },
				'Mark Complete 2': { main: [link('Respond 200'), link('Respond 500 (provider retries)')] },
			} as IConnections,
			heads: ['Enrich'],
		};
		const { answers, runs } = await provideNodePath(
			events([
				{ id: a, amount: 300 },
				{ id: b, amount: 100 },
			]),
			() => nodeTemplate(step, { reserve: fieldReserve(), before: SPLIT_OUT_EVENTS }),
		);
		dump('two-completes', runs);
		expect({
			answers,
			charges: [effectsAt('charge', a), effectsAt('charge', b)],
			keys: await nodeStatuses([a, b]),
			refusals: runs.map((run) => /did not save/.test(run.data.resultData.error?.message ?? '')),
		}).toEqual({ answers: [200], charges: [1, 1], keys: ['completed', 'completed'], refusals: [false] });
	});

	/* 6. Settle beside the step, the unsaved Sort sub-workflow, B's charge failing once. */
	it("Settle beside the step, unsaved Sort sub-workflow, B's charge failing once: B charged, both completed", async () => {
		const [a, b] = ['st_a', 'st_b'];
		useNodePath('wf-rt46-settle');
		failNext(`charge:${b}`);
		const step: Step = {
			nodes: [
				enrich(sortSub(false, { onError: 'continueRegularOutput' })),
				httpCall('Charge', 'charge', { onError: 'continueRegularOutput' }, CHARGE_ID),
			],
			connections: { Enrich: { main: [link('Charge')] } } as IConnections,
			heads: ['Enrich'],
		};
		const { answers, runs } = await provideNodePath(
			events([
				{ id: a, amount: 300 },
				{ id: b, amount: 100 },
			]),
			() => nodeTemplate(step, { reserve: fieldReserve(), before: SPLIT_OUT_EVENTS, settle: true }),
		);
		dump('settle', runs);
		expect({
			answers: answers.at(-1),
			bCharged: effectsAt('charge', b),
			aCharges: effectsAt('charge', a) <= 2,
			keys: await nodeStatuses([a, b]),
		}).toEqual({ answers: 200, bCharged: 1, aCharges: true, keys: ['completed', 'completed'] });
	});
});
