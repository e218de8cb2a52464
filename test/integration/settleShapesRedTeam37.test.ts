import { type IConnections, type INode } from 'n8n-workflow';

import { WebhookSignatureVerify } from '../../nodes/WebhookSignatureVerify/WebhookSignatureVerify.node';
import { describeWithN8n } from '../support/n8nBaseNodes';
import { PACKAGE, packageNode } from '../support/n8nEngine';
import { link, toInput } from '../support/settleWorkflows';
import { baseNode as node, CHARGE_BODY, EVENTS, events, SPLIT_OUT_EVENTS, triggerRedTeam, type Step } from '../support/triggerRedTeam';

/*
 * Thirty-seventh red-team pass: the Execute Once link drop (Tracer.ofLinks) with the Execute Once node on the event
 * path, Execute Once before the effect with several events, recoveredBefore through a branch the failed event did not
 * take and a retry loop that gives up, and the wiring refusals for routing nodes at Stop Workflow after an effect.
 * n8n 2.41.1's engine in-process; the embedded store. A row that fails breaks a promise.
 */

describeWithN8n('red team 37: Execute Once link drop, recoveredBefore branches, routing after the effect', () => {
	const { effectsAt, failNext, httpCall, nodePath, provide, refusedAtPublish, statuses, useTrigger } = triggerRedTeam({
		tag: 'rt37',
		nodeLeaseSeconds: 1,
		providerPauseMs: 1200,
		route: (route, _body, id) => (route === 'token' ? { token: `tok_${id || 'x'}` } : undefined),
		baseNodeFiles: {
			'n8n-nodes-base.webhook': 'Webhook/Webhook.node.js',
			'n8n-nodes-base.splitOut': 'Transform/SplitOut/SplitOut.node.js',
			'n8n-nodes-base.set': 'Set/Set.node.js',
			'n8n-nodes-base.switch': 'Switch/Switch.node.js',
			'n8n-nodes-base.filter': 'Filter/Filter.node.js',
			'n8n-nodes-base.compareDatasets': 'CompareDatasets/CompareDatasets.node.js',
			'n8n-nodes-base.executeWorkflowTrigger': 'ExecuteWorkflow/ExecuteWorkflowTrigger/ExecuteWorkflowTrigger.node.js',
		},
		nodeTypes: { [`${PACKAGE}.webhookSignatureVerify`]: new WebhookSignatureVerify() },
	});
	const { completeNode: complete, nodeKey, nodeTemplate, provideNodePath, reserveNode, useNodePath } = nodePath;
	const completeNode = (name = 'Mark Complete', extra: Partial<INode> = {}): INode => ({ ...complete(extra), name, id: name });
	const markFailedNode = (name = 'Mark Failed'): INode =>
		packageNode(
			name,
			'idempotencyKey',
			{ operation: 'fail', store: 'embedded', source: 'item', options: {} },
			{ typeVersion: 3, position: [900, 300] },
		);
	const RESERVED_ID = '={{ JSON.stringify({ id: $("Reserve").item.json.body.id }) }}';
	const ERROR_OUTPUT: Partial<INode> = { onError: 'continueErrorOutput' };
	const REGULAR: Partial<INode> = { onError: 'continueRegularOutput' };
	const completeAnswers = { 'Mark Complete': { main: [link('Respond 200'), []] } };
	const errorsOf = (runs: Array<{ data: { resultData: { error?: { message?: string } } } }>) =>
		runs.map((run) => run.data.resultData.error?.message?.slice(0, 140) ?? null);
	const dump = (label: string, value: unknown) => {
		if (process.env.RT37_DUMP) process.stderr.write(`RT37 ${label}: ${JSON.stringify(value)}\n`);
	};
	const names = (refusal: string | false, name: string) => typeof refusal === 'string' && refusal.includes(name);
	/** Edit Fields keeping only what it sets (drops `error`). */
	const only = (name: string, field: string, value: string) =>
		node(name, 'set', 3.4, {
			mode: 'manual',
			assignments: { assignments: [{ id: field, name: field, value, type: 'string' }] },
			options: {},
		});
	const ifCondition = (name: string, left: string, operation: string, right: unknown, type = 'number', extra: Partial<INode> = {}) =>
		node(
			name,
			'if',
			2.2,
			{
				conditions: {
					options: { caseSensitive: true, leftValue: '', typeValidation: 'strict', version: 2 },
					conditions: [{ id: 'c', leftValue: left, rightValue: right, operator: { type, operation } }],
					combinator: 'and',
				},
				options: {},
			} as never,
			extra,
		);

	/* (1) Execute Once on the event path, joined with an input that is no event's ----------------------------------- */

	// Verify → [Reserve, Rates (Edit Fields, before Reserve)]; Reserve → Tag (Edit Fields, Execute Once; one event per
	// delivery, so harmless) → Merge (by position) ← Rates; Merge → Ship (Continue regular) → Result (Edit Fields,
	// drops `error`) → Complete. Ship fails once: the key must not be completed (the event's only link is through Tag).
	const joinedStep = (executeOnce: boolean): Step => ({
		nodes: [
			node('Tag', 'set', 3.4, { mode: 'manual', includeOtherFields: true, assignments: { assignments: [] }, options: {} }, { executeOnce }),
			only('Rates', 'rate', '5'),
			node('Join', 'merge', 3.2, { mode: 'combine', combineBy: 'combineByPosition', options: {} }),
			httpCall('Ship', 'ship', REGULAR, '={{ JSON.stringify({ id: $json.body.id }) }}'),
			only('Result', 'done', 'yes'),
			completeNode(),
		],
		connections: {
			Verify: { main: [link('Reserve', 'Rates'), link('Respond 401 (invalid signature)')] },
			Tag: { main: [toInput('Join', 0)] },
			Rates: { main: [toInput('Join', 1)] },
			Join: { main: [link('Ship')] },
			Ship: { main: [link('Result')] },
			Result: { main: [link('Mark Complete')] },
			...completeAnswers,
		} as IConnections,
		heads: ['Tag'],
	});
	for (const executeOnce of [false, true])
		it(`node path: Reserve → Tag (Execute Once: ${executeOnce}) → Merge (by position) ← Rates (before Reserve) → Ship (Continue regular, fails once) → Edit Fields → Complete: never completed unshipped`, async () => {
			const id = `jo_${executeOnce ? 'once' : 'each'}`;
			useNodePath(`wf-rt37-join-${id}`);
			failNext(`ship:${id}`);
			const { answers, runs } = await provideNodePath({ id }, () => nodeTemplate(joinedStep(executeOnce)));
			expect({ answers, ships: effectsAt('ship', id), key: await nodeKey(`evt:${id}`), errors: errorsOf(runs) }).toEqual({
				answers: expect.anything(),
				ships: 1,
				key: 'completed',
				errors: expect.anything(),
			});
		});

	// The same join with Settle beside the step (no Complete), Ship at Continue regular.
	it('node path, Settle beside: Reserve → Tag (Execute Once) → Merge (by position) ← Rates → Ship (Continue regular, fails once): never completed unshipped', async () => {
		const id = 'js_once';
		useNodePath('wf-rt37-join-settle');
		failNext(`ship:${id}`);
		const step = joinedStep(true);
		step.nodes = step.nodes.filter((n) => n.name !== 'Result' && n.name !== 'Mark Complete');
		const connections = { ...(step.connections as Record<string, unknown>) };
		delete connections.Ship;
		delete connections.Result;
		delete connections['Mark Complete'];
		step.connections = connections as IConnections;
		const { answers, runs } = await provideNodePath({ id }, () => nodeTemplate(step, { settle: true }));
		expect({ answers, ships: effectsAt('ship', id), key: await nodeKey(`evt:${id}`), errors: errorsOf(runs) }).toEqual({
			answers: [500, 200],
			ships: 1,
			key: 'completed',
			errors: expect.anything(),
		});
	});

	/* (2) Execute Once before the effect with several events on the node path -------------------------------------- */

	const tokenStep = (withComplete: boolean): Step => ({
		nodes: [
			httpCall('Get Token', 'token', { executeOnce: true, ...REGULAR }, '={{ JSON.stringify({ id: "t" }) }}'),
			httpCall('Charge', 'charge', ERROR_OUTPUT, RESERVED_ID),
			...(withComplete ? [completeNode(), markFailedNode()] : []),
		],
		connections: {
			'Get Token': { main: [link('Charge')] },
			Charge: withComplete ? { main: [link('Mark Complete'), link('Mark Failed')] } : { main: [[], []] },
			...(withComplete ? { ...completeAnswers, 'Mark Failed': { main: [link('Respond 500 (provider retries)'), []] } } : {}),
		},
		heads: ['Get Token'],
	});
	// Get Token at Execute Once runs for A only, and Charge after it charged A alone; B was completed uncharged (Settle)
	// or left held after the 200 (Complete). Refused before anything is reserved, naming the fix.
	for (const withComplete of [true, false])
		it(`node path: Split Out [A, B] → Reserve (Field) → Get Token (Execute Once) → Charge → ${withComplete ? 'Complete' : '(Settle beside)'}: refused before anything is reserved`, async () => {
			const tag = withComplete ? 'tc' : 'ts';
			useNodePath(`wf-rt37-token-${tag}`);
			const body = events([{ id: `${tag}_a` }, { id: `${tag}_b` }]);
			const build = () =>
				nodeTemplate(tokenStep(withComplete), {
					settle: !withComplete,
					reserve: reserveNode({ keySource: 'field', keyField: 'body.id', keyPrefix: 'evt:' }),
					before: SPLIT_OUT_EVENTS,
				});
			const { answers, runs } = await provideNodePath(body, build);
			dump(tag, {
				answers,
				charges: [effectsAt('charge', `${tag}_a`), effectsAt('charge', `${tag}_b`)],
				keys: [await nodeKey(`evt:${tag}_a`), await nodeKey(`evt:${tag}_b`)],
				errors: errorsOf(runs),
			});
			const refusal = JSON.stringify(runs[0]?.data.resultData.runData.Reserve?.[0]?.data?.main[3] ?? []);
			expect({
				refused: /Get Token.*Execute Once.*first of them only/.test(refusal),
				answers,
				charges: [effectsAt('charge', `${tag}_a`), effectsAt('charge', `${tag}_b`)],
				keys: [await nodeKey(`evt:${tag}_a`), await nodeKey(`evt:${tag}_b`)],
			}).toEqual({ refused: true, answers: [503, 503, 503, 503], charges: [0, 0], keys: [null, null] });
		});

	/* (3) recoveredBefore through a branch this event did not take -------------------------------------------------- */

	// Charge (Continue regular) → Shape (Edit Fields, drops `error`) → If (amount > 100): true → Backup Charge →
	// Complete; false → Complete. An event of amount 5 whose charge fails goes false → Complete: nothing recovered it.
	it('node path: Charge (Continue regular) fails → Edit Fields → If (amount > 100, not taken) … Backup → Complete; false → Complete: not completed uncharged', async () => {
		const id = 'rb_small';
		useNodePath('wf-rt37-branch-not-taken');
		failNext(`charge:${id}`);
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', REGULAR, '={{ JSON.stringify({ id: $json.body.id }) }}'),
				node('Shape', 'set', 3.4, {
					mode: 'manual',
					assignments: { assignments: [{ id: 'a', name: 'amount', value: '={{ $("Reserve").item.json.body.amount }}', type: 'number' }] },
					options: {},
				}),
				ifCondition('Big?', '={{ $json.amount }}', 'gt', 100),
				httpCall('Backup Charge', 'refund', {}, RESERVED_ID),
				completeNode(),
			],
			connections: {
				Charge: { main: [link('Shape')] },
				Shape: { main: [link('Big?')] },
				'Big?': { main: [link('Backup Charge'), link('Mark Complete')] },
				'Backup Charge': { main: [link('Mark Complete')] },
				...completeAnswers,
			},
			heads: ['Charge'],
		};
		const { answers, runs } = await provideNodePath({ id, amount: 5 }, () => nodeTemplate(step));
		dump(id, { answers, refunds: effectsAt('refund', id), key: await nodeKey(`evt:${id}`), errors: errorsOf(runs) });
		expect({
			answers,
			effects: effectsAt('charge', id) + effectsAt('refund', id),
			key: await nodeKey(`evt:${id}`),
			errors: errorsOf(runs),
		}).toEqual({ answers: expect.anything(), effects: 1, key: 'completed', errors: expect.anything() });
	});

	// Error output variant: Charge (error output) → If (kind = card): true → Backup Charge → Complete; false → Note
	// (Edit Fields) → Complete. A "bank" event whose charge fails takes the false branch: no recovery ran.
	it('node path: Charge (error output) fails → If (kind = card, not taken) … Backup → Complete; false → Note → Complete: not completed uncharged', async () => {
		const id = 'rb_bank';
		useNodePath('wf-rt37-error-branch-not-taken');
		failNext(`charge:${id}`);
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', ERROR_OUTPUT, '={{ JSON.stringify({ id: $json.body.id }) }}'),
				ifCondition('Card?', '={{ $("Reserve").item.json.body.kind }}', 'equals', 'card', 'string'),
				httpCall('Backup Charge', 'refund', {}, RESERVED_ID),
				only('Note', 'note', 'charge failed'),
				completeNode(),
			],
			connections: {
				Charge: { main: [link('Mark Complete'), link('Card?')] },
				'Card?': { main: [link('Backup Charge'), link('Note')] },
				'Backup Charge': { main: [link('Mark Complete')] },
				Note: { main: [link('Mark Complete')] },
				...completeAnswers,
			},
			heads: ['Charge'],
		};
		const { answers, runs } = await provideNodePath({ id, kind: 'bank' }, () => nodeTemplate(step));
		dump(id, { answers, refunds: effectsAt('refund', id), key: await nodeKey(`evt:${id}`), errors: errorsOf(runs) });
		expect({
			answers,
			effects: effectsAt('charge', id) + effectsAt('refund', id),
			key: await nodeKey(`evt:${id}`),
			errors: errorsOf(runs),
		}).toEqual({ answers: expect.anything(), effects: 1, key: 'completed', errors: expect.anything() });
	});

	// A retry loop that gives up: Charge (error output) → If ($runIndex < 2): true → back into Charge; false → Gave Up
	// (Edit Fields) → Complete. Charge fails 3 times in the first delivery.
	it('node path: Charge (error output → If (tries < 3) → back into Charge; else Gave Up → Complete), 3 failures: not completed uncharged', async () => {
		const id = 'gu_a';
		useNodePath('wf-rt37-give-up');
		failNext(`charge:${id}`, 3);
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', ERROR_OUTPUT, RESERVED_ID),
				ifCondition('Try Again?', '={{ $runIndex }}', 'lt', 2),
				only('Gave Up', 'status', 'gave up'),
				completeNode(),
			],
			connections: {
				Charge: { main: [link('Mark Complete'), link('Try Again?')] },
				'Try Again?': { main: [link('Charge'), link('Gave Up')] },
				'Gave Up': { main: [link('Mark Complete')] },
				...completeAnswers,
			},
			heads: ['Charge'],
		};
		const { answers, runs } = await provideNodePath({ id }, () => nodeTemplate(step));
		dump(id, { answers, charges: effectsAt('charge', id), key: await nodeKey(`evt:${id}`), errors: errorsOf(runs) });
		expect({ answers, charges: effectsAt('charge', id), key: await nodeKey(`evt:${id}`), errors: errorsOf(runs) }).toEqual({
			answers: expect.anything(),
			charges: 1,
			key: 'completed',
			errors: expect.anything(),
		});
	});

	/* (4) Routing nodes at Stop Workflow after an effect, several events: refused at publish ------------------------ */

	it('trigger, Events: Charge (error output) → Compare Datasets / If / Filter (Stop Workflow) → Notify: each refused at publish; before the charge: published', async () => {
		useTrigger('wf-rt37-routing-after', EVENTS);
		const notify = httpCall('Notify', 'notify', ERROR_OUTPUT, '={{ JSON.stringify({ id: $json.id }) }}');
		const charge = httpCall('Charge', 'charge', ERROR_OUTPUT, CHARGE_BODY);
		const known = node('Known', 'set', 3.4, { mode: 'raw', jsonOutput: '{ "id": "x" }', options: {} }, { executeOnce: true });
		const compare = node('Check', 'compareDatasets', 2.3, { mergeByFields: { values: [{ field1: 'id', field2: 'id' }] }, options: {} });
		const outcome: Record<string, string | boolean> = {};
		outcome.compareAfter =
			(await refusedAtPublish({
				nodes: [charge, known, compare, notify],
				connections: {
					Charge: { main: [link('Check'), []] },
					Known: { main: [toInput('Check', 1)] },
					Check: { main: [link('Notify'), [], [], []] },
					Notify: { main: [[], []] },
				} as IConnections,
				heads: ['Charge', 'Known'],
			})) !== false;
		for (const [label, check] of [
			['ifAfter', ifCondition('Check', '={{ $json.id }}', 'equals', 'x', 'string')],
			['filterAfter', node('Check', 'filter', 2.2, ifCondition('Check', '={{ $json.id }}', 'equals', 'x', 'string').parameters as never)],
		] as const)
			outcome[label] = names(
				await refusedAtPublish({
					nodes: [charge, check, notify],
					connections: { Charge: { main: [link('Check'), []] }, Check: { main: [link('Notify')] }, Notify: { main: [[], []] } },
					heads: ['Charge'],
				}),
				'Check',
			);
		// over-refusal control: Compare Datasets before the charge
		outcome.compareBefore = await refusedAtPublish({
			nodes: [known, { ...compare, parameters: { mergeByFields: { values: [{ field1: 'body.id', field2: 'id' }] }, options: {} } }, charge],
			connections: {
				Known: { main: [toInput('Check', 1)] },
				Check: { main: [link('Charge'), [], [], []] },
				Charge: { main: [[], []] },
			} as IConnections,
			heads: ['Check', 'Known'],
		});
		dump('routing', outcome);
		expect(outcome).toEqual({ compareAfter: true, ifAfter: true, filterAfter: true, compareBefore: false });
	});

	/* (5) Trigger: Merge by position with an Execute Once input, several events ------------------------------------- */

	// Merge by position keeps as many items as its shorter input at its defaults: B is dropped before the charge, and
	// its key is completed as a Filter's dropped event is (the workflow chose not to run its step). A is charged once.
	it('trigger, Events [A, B]: [events, Token (Execute Once)] → Merge (by position) → Charge: B dropped by the Merge, completed uncharged as a filtered event', async () => {
		useTrigger('wf-rt37-merge-position', EVENTS);
		const step: Step = {
			nodes: [
				httpCall('Token', 'token', { executeOnce: true, ...ERROR_OUTPUT }, '={{ JSON.stringify({ id: "t" }) }}'),
				node('With Token', 'merge', 3.2, { mode: 'combine', combineBy: 'combineByPosition', options: {} }),
				httpCall('Charge', 'charge', ERROR_OUTPUT, CHARGE_BODY),
			],
			connections: {
				Webhook: { main: [[toInput('With Token', 0)[0], { node: 'Token', type: 'main', index: 0 }]] },
				Token: { main: [toInput('With Token', 1), []] },
				'With Token': { main: [link('Charge')] },
				Charge: { main: [[], []] },
			} as IConnections,
			heads: [],
		};
		const refusal = await refusedAtPublish(step);
		failNext('charge:mp_b');
		const { answers, runs } = await provide(events([{ id: 'mp_a' }, { id: 'mp_b' }]), step);
		dump('mp', { refusal, answers, keys: await statuses(['mp_a', 'mp_b']), errors: errorsOf(runs) });
		expect({
			refusal,
			answers,
			charges: [effectsAt('charge', 'mp_a'), effectsAt('charge', 'mp_b')],
			keys: await statuses(['mp_a', 'mp_b']),
			errors: errorsOf(runs),
		}).toEqual({
			refusal: false,
			answers: [200],
			charges: [1, 0],
			keys: ['completed', 'completed'],
			errors: [null],
		});
	});

	it('trigger, Events [A, B]: Get Token (Execute Once, Continue) → Charge (error output): refused at publish, or each event charged once', async () => {
		useTrigger('wf-rt37-trigger-token-chain', EVENTS);
		const step: Step = {
			nodes: [
				httpCall('Get Token', 'token', { executeOnce: true, ...REGULAR }, '={{ JSON.stringify({ id: "t" }) }}'),
				httpCall('Charge', 'charge', ERROR_OUTPUT, '={{ JSON.stringify({ id: $("Webhook").item.json.body.id }) }}'),
			],
			connections: { 'Get Token': { main: [link('Charge')] }, Charge: { main: [[], []] } },
			heads: ['Get Token'],
		};
		const refusal = await refusedAtPublish(step);
		const { answers, runs } = await provide(events([{ id: 'tk_a' }, { id: 'tk_b' }]), step);
		const outcome = {
			refusal,
			answers,
			charges: [effectsAt('charge', 'tk_a'), effectsAt('charge', 'tk_b')],
			keys: await statuses(['tk_a', 'tk_b']),
			errors: errorsOf(runs),
		};
		dump('tk', outcome);
		expect(refusal !== false || (outcome.charges[0] === 1 && outcome.charges[1] === 1)).toBe(true);
	});

	it('trigger, Events [A, B]: Charge (error output) → Compare Datasets (Stop Workflow, by customer; the answers have none) ← Known (Execute Once) → Notify: refused at publish, else charged once each', async () => {
		useTrigger('wf-rt37-compare-run', EVENTS);
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', ERROR_OUTPUT, CHARGE_BODY),
				node('Known', 'set', 3.4, { mode: 'raw', jsonOutput: '{ "customer": "cus_known" }', options: {} }, { executeOnce: true }),
				node('Check', 'compareDatasets', 2.3, { mergeByFields: { values: [{ field1: 'customer', field2: 'customer' }] }, options: {} }),
				httpCall('Notify', 'notify', ERROR_OUTPUT, '={{ JSON.stringify({ id: $json.id }) }}'),
			],
			connections: {
				Charge: { main: [link('Check'), []] },
				Known: { main: [toInput('Check', 1)] },
				Check: { main: [link('Notify'), [], [], []] },
				Notify: { main: [[], []] },
			} as IConnections,
			heads: ['Charge', 'Known'],
		};
		const refusal = await refusedAtPublish(step);
		const { answers, runs } = await provide(events([{ id: 'cr_a' }, { id: 'cr_b' }]), step, 3);
		const outcome = {
			refusal: refusal === false ? false : refusal.slice(0, 200),
			answers,
			charges: [effectsAt('charge', 'cr_a'), effectsAt('charge', 'cr_b')],
			keys: await statuses(['cr_a', 'cr_b']),
			errors: errorsOf(runs),
		};
		dump('cr', outcome);
		expect(refusal !== false || (outcome.charges[0] === 1 && outcome.charges[1] === 1)).toBe(true);
	});

	// Row (1) again with Tag keeping only `body` (no idempotency field on the joined item).
	it('node path: Reserve → Tag (Edit Fields body only, Execute Once) → Merge (by position) ← Rates → Ship (Continue regular, fails once) → Edit Fields → Complete: never completed unshipped', async () => {
		const id = 'jb_once';
		useNodePath('wf-rt37-join-bodyonly');
		failNext(`ship:${id}`);
		const step = joinedStep(true);
		step.nodes = step.nodes.map((n) =>
			n.name === 'Tag'
				? node(
						'Tag',
						'set',
						3.4,
						{
							mode: 'manual',
							assignments: { assignments: [{ id: 'b', name: 'body', value: '={{ $json.body }}', type: 'object' }] },
							options: {},
						},
						{ executeOnce: true },
					)
				: n,
		);
		const { answers, runs } = await provideNodePath({ id }, () => nodeTemplate(step));
		const outcome = { answers, ships: effectsAt('ship', id), key: await nodeKey(`evt:${id}`), errors: errorsOf(runs) };
		dump(id, outcome);
		expect({ ships: outcome.ships, key: outcome.key }).toEqual({ ships: 1, key: 'completed' });
	});
});
