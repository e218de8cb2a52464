import { type IConnections, type INode } from 'n8n-workflow';

import { WebhookSignatureVerify } from '../../nodes/WebhookSignatureVerify/WebhookSignatureVerify.node';
import { describeWithN8n } from '../support/n8nBaseNodes';
import { PACKAGE } from '../support/n8nEngine';
import { link, toInput } from '../support/settleWorkflows';
import { baseNode as node, EVENTS, events, SPLIT_OUT_EVENTS, triggerRedTeam, type Step } from '../support/triggerRedTeam';

/*
 * Fortieth red-team pass: Complete's failedInThisRun / recoveredBefore (a retry loop that gives up with a node that
 * acts inside the loop; one event's two items, only one of them recovered; a regular-output retry whose failure looks
 * like the one it came after), the firstEventOnly rule with Execute Once inside a sub-workflow run once for all items
 * and with the Execute Once node as the effect joined with the events, and a retry loop with two events.
 * n8n 2.41.1's engine in-process; the embedded store. A row that fails breaks a promise.
 */

describeWithN8n('red team 40: recoveries that are none, Execute Once out of sight, retry loops with two events', () => {
	const { effectsAt, failNext, httpCall, nodePath, refusedAtPublish, useTrigger } = triggerRedTeam({
		tag: 'rt40',
		nodeLeaseSeconds: 1,
		providerPauseMs: 1200,
		route: (route, _body, id) => (route === 'token' ? { token: `tok_${id || 'x'}` } : undefined),
		baseNodeFiles: {
			'n8n-nodes-base.webhook': 'Webhook/Webhook.node.js',
			'n8n-nodes-base.splitOut': 'Transform/SplitOut/SplitOut.node.js',
			'n8n-nodes-base.set': 'Set/Set.node.js',
			'n8n-nodes-base.executeWorkflowTrigger': 'ExecuteWorkflow/ExecuteWorkflowTrigger/ExecuteWorkflowTrigger.node.js',
		},
		nodeTypes: { [`${PACKAGE}.webhookSignatureVerify`]: new WebhookSignatureVerify() },
	});
	const { completeNode: complete, nodeKey, nodeTemplate, provideNodePath, reserveNode, useNodePath } = nodePath;
	const completeNode = (name = 'Mark Complete', extra: Partial<INode> = {}): INode => ({ ...complete(extra), name, id: name });
	const RESERVED_ID = '={{ JSON.stringify({ id: $("Reserve").item.json.body.id }) }}';
	const ERROR_OUTPUT: Partial<INode> = { onError: 'continueErrorOutput' };
	const REGULAR: Partial<INode> = { onError: 'continueRegularOutput' };
	const completeAnswers = { 'Mark Complete': { main: [link('Respond 200'), link('Respond 500 (provider retries)')] } };
	const FIELD_RESERVE = () => reserveNode({ keySource: 'field', keyField: 'body.id', keyPrefix: 'evt:' });
	const errorsOf = (runs: Array<{ data: { resultData: { error?: { message?: string } } } }>) =>
		runs.map((run) => run.data.resultData.error?.message?.slice(0, 240) ?? null);
	const reserveRefusal = (runs: Array<{ data: { resultData: { runData: Record<string, unknown> } } }>) => {
		const task = (runs[0]?.data.resultData.runData.Reserve as Array<{ data?: { main: unknown[][] } }> | undefined)?.[0];
		const refused = JSON.stringify(task?.data?.main[3] ?? []);
		return refused === '[]' ? false : refused.slice(0, 900);
	};
	const dump = (label: string, value: unknown) => {
		if (process.env.RT40_DUMP) process.stderr.write(`RT40 ${label}: ${JSON.stringify(value)}\n`);
	};
	const dumpRuns = (
		label: string,
		runs: Array<{
			data: {
				resultData: { runData: Record<string, Array<{ error?: { message?: string; stack?: string }; data?: { main: unknown[][] } }>> };
			};
		}>,
	) => {
		if (!process.env.RT40_RUNS) return;
		runs.forEach((run, index) => {
			for (const [name, tasks] of Object.entries(run.data.resultData.runData))
				process.stderr.write(
					`RT40 ${label}#${index} ${name}: ${JSON.stringify(
						tasks.map((task) =>
							task.error
								? { error: task.error.message, stack: task.error.stack?.slice(0, 600) }
								: task.data?.main.map((items) =>
										(items ?? []).map((item) => {
											const json = (item as { json: Record<string, unknown> }).json;
											return {
												id: (json.body as { id?: string } | undefined)?.id ?? json.id,
												idem: (json.idempotency as { key?: string; outcome?: string; operation?: string } | undefined)?.key,
												err: json.error ? 1 : 0,
											};
										}),
									),
						),
					)}\n`,
				);
		});
	};
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
					conditions: [{ id: 'c', leftValue: left, rightValue: right, operator: { type, operation, singleValue: type === 'object' } }],
					combinator: 'and',
				},
				options: {},
			} as never,
			extra,
		);
	const two = (tag: string) => events([{ id: `${tag}_a` }, { id: `${tag}_b` }]);
	const keysOf = async (tag: string) => [await nodeKey(`evt:${tag}_a`), await nodeKey(`evt:${tag}_b`)];
	const charges = (tag: string, route = 'charge') => [effectsAt(route, `${tag}_a`), effectsAt(route, `${tag}_b`)];

	/* (1) A retry loop that gives up, with a node that acts inside the loop ----------------------------------------- */

	// rt37's give-up row refuses Charge (error) → If (tries < 3) → Charge | Gave Up → Complete. The same loop with a
	// "Refresh Token" call inside it (a 401 → refresh → retry loop, common in n8n): the token call succeeds for the event
	// on every lap, but a node that leads back into the failed node is a lap of the loop, not a recovery
	// (recoveredBefore): only the charge's own later success would be.
	it('node path: Charge (error output) → Refresh Token (HTTP) → If (tries < 3): true → back into Charge; false → Gave Up → Complete; 3 failures: charged once after the retry, never completed uncharged', async () => {
		const id = 'rt_a';
		useNodePath('wf-rt40-give-up-token');
		failNext(`charge:${id}`, 3);
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', ERROR_OUTPUT, RESERVED_ID),
				httpCall('Refresh Token', 'token', {}, '={{ JSON.stringify({ id: "refresh" }) }}'),
				ifCondition('Try Again?', '={{ $runIndex }}', 'lt', 2),
				only('Gave Up', 'status', 'gave up'),
				completeNode(),
			],
			connections: {
				Charge: { main: [link('Mark Complete'), link('Refresh Token')] },
				'Refresh Token': { main: [link('Try Again?')] },
				'Try Again?': { main: [link('Charge'), link('Gave Up')] },
				'Gave Up': { main: [link('Mark Complete')] },
				...completeAnswers,
			} as IConnections,
			heads: ['Charge'],
		};
		const { answers, runs } = await provideNodePath({ id }, () => nodeTemplate(step));
		const result = { answers, charges: effectsAt('charge', id), key: await nodeKey(`evt:${id}`), errors: errorsOf(runs) };
		dump(id, result);
		dumpRuns(id, runs as never);
		expect({ charges: result.charges, key: result.key }).toEqual({ charges: 1, key: 'completed' });
	});

	// Control: the same loop, charge failing once: the loop's second try charges. Must be completed, charged once.
	it('node path: the same Refresh Token retry loop, 1 failure: charged once, 200, completed', async () => {
		const id = 'rt_c';
		useNodePath('wf-rt40-token-loop-ok');
		failNext(`charge:${id}`, 1);
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', ERROR_OUTPUT, RESERVED_ID),
				httpCall('Refresh Token', 'token', {}, '={{ JSON.stringify({ id: "refresh" }) }}'),
				ifCondition('Try Again?', '={{ $runIndex }}', 'lt', 2),
				only('Gave Up', 'status', 'gave up'),
				completeNode(),
			],
			connections: {
				Charge: { main: [link('Mark Complete'), link('Refresh Token')] },
				'Refresh Token': { main: [link('Try Again?')] },
				'Try Again?': { main: [link('Charge'), link('Gave Up')] },
				'Gave Up': { main: [link('Mark Complete')] },
				...completeAnswers,
			} as IConnections,
			heads: ['Charge'],
		};
		const { answers, runs } = await provideNodePath({ id }, () => nodeTemplate(step));
		const result = { answers, charges: effectsAt('charge', id), key: await nodeKey(`evt:${id}`), errors: errorsOf(runs) };
		dump(id, result);
		dumpRuns(id, runs as never);
		expect({ answers: result.answers, charges: result.charges, key: result.key }).toEqual({ answers: [200], charges: 1, key: 'completed' });
	});

	/* (2) One event, two items: one recovered, the other took the branch without a recovery ------------------------ */

	// rt37's "branch not taken" row with two line items per event: Reserve → Split Lines → Charge (error output) →
	// Card? (If): true → Backup Charge → Complete; false → Note (Edit Fields) → Complete. Both lines' charges fail;
	// the card line is recovered by the backup, the bank line is not. A recovery is judged per event (recoveredBefore),
	// not per item. n8n's v1 order runs the branch higher on the canvas first: with Note first, Complete refuses at the
	// bank line (nothing else of another event waits) and the run ends before the backup; with Backup Charge above
	// Note, Complete runs first for the card line and completes the event.
	for (const [label, backupY, noteY] of [
		['Note runs first', 0, 0],
		['Backup Charge above Note, runs first', -200, 200],
	] as const)
		it(`node path: Reserve → Split Lines [card, bank] → Charge (error output) → If card: Backup → Complete; else Note → Complete (${label}); both charges fail: each line paid once after the retry`, async () => {
			const id = backupY === 0 ? 'li_a' : 'li_b';
			const [card, bank] = [`${id}_card`, `${id}_bank`];
			useNodePath(`wf-rt40-lines-${id}`);
			failNext(`charge:${card}`, 1);
			failNext(`charge:${bank}`, 1);
			const lineId = '={{ JSON.stringify({ id: $("Split Lines").item.json.line.id }) }}';
			const step: Step = {
				nodes: [
					node('Split Lines', 'splitOut', 1, {
						fieldToSplitOut: 'body.lines',
						include: 'allOtherFields',
						options: { destinationFieldName: 'line' },
					}),
					httpCall('Charge', 'charge', ERROR_OUTPUT, lineId),
					ifCondition('Card?', '={{ $("Split Lines").item.json.line.kind }}', 'equals', 'card', 'string'),
					httpCall('Backup Charge', 'refund', {}, lineId, {}, backupY),
					{ ...only('Note', 'note', 'charge failed'), position: [400, noteY] },
					completeNode(),
				],
				connections: {
					'Split Lines': { main: [link('Charge')] },
					Charge: { main: [link('Mark Complete'), link('Card?')] },
					'Card?': { main: [link('Backup Charge'), link('Note')] },
					'Backup Charge': { main: [link('Mark Complete')] },
					Note: { main: [link('Mark Complete')] },
					...completeAnswers,
				} as IConnections,
				heads: ['Split Lines'],
			};
			const body = {
				id,
				lines: [
					{ id: card, kind: 'card' },
					{ id: bank, kind: 'bank' },
				],
			};
			const { answers, runs } = await provideNodePath(body, () => nodeTemplate(step));
			const paid = (line: string) => effectsAt('charge', line) + effectsAt('refund', line);
			const result = {
				answers,
				paid: [paid(card), paid(bank)],
				charges: [effectsAt('charge', card), effectsAt('charge', bank)],
				key: await nodeKey(`evt:${id}`),
				errors: errorsOf(runs),
			};
			dump(id, result);
			dumpRuns(id, runs as never);
			// Note first: Complete refuses the bank line and the run ends before the backup; the retry pays each line once.
			// Backup first: a recovery is judged per event, not per item (docs/templates.md, not guaranteed): the card
			// line's backup completes the event, and the bank line is never paid.
			expect({ paid: result.paid, key: result.key }).toEqual({ paid: backupY === 0 ? [1, 1] : [1, 0], key: 'completed' });
		});

	/* (3) A regular-output retry whose own failure looks like the one it retried ----------------------------------- */

	// Charge (Continue, regular output) → Failed? (If error exists): true → Charge Again (the same call, Continue regular)
	// → Result (Edit Fields, drops `error`) → Complete; false → Result. Both tries fail with the same 500: Charge
	// Again's main output holds the event's item with that error, which is no success (succeededItemsOf).
	it('node path: Charge (Continue regular) → If error → Charge Again (same call, Continue regular) → Edit Fields → Complete; both tries fail: charged once after the retry, never completed uncharged', async () => {
		const id = 'ca_a';
		useNodePath('wf-rt40-charge-again');
		failNext(`charge:${id}`, 2);
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', REGULAR, RESERVED_ID),
				ifCondition('Failed?', '={{ $json.error }}', 'exists', '', 'object'),
				httpCall('Charge Again', 'charge', REGULAR, RESERVED_ID),
				only('Result', 'status', 'done'),
				completeNode(),
			],
			connections: {
				Charge: { main: [link('Failed?')] },
				'Failed?': { main: [link('Charge Again'), link('Result')] },
				'Charge Again': { main: [link('Result')] },
				Result: { main: [link('Mark Complete')] },
				...completeAnswers,
			} as IConnections,
			heads: ['Charge'],
		};
		const { answers, runs } = await provideNodePath({ id }, () => nodeTemplate(step));
		const result = { answers, charges: effectsAt('charge', id), key: await nodeKey(`evt:${id}`), errors: errorsOf(runs) };
		// Whether Charge Again's `error` is the very one it was given (what errorCameIn compares).
		const errorOf = (name: string) => {
			const task = (runs[0]?.data.resultData.runData[name] as Array<{ data?: { main: Array<Array<{ json: { error?: unknown } }>> } }>)?.[0];
			return JSON.stringify(task?.data?.main[0]?.[0]?.json.error);
		};
		dump(id, { ...result, sameError: errorOf('Charge') === errorOf('Charge Again') });
		dumpRuns(id, runs as never);
		expect({ charges: result.charges, key: result.key }).toEqual({ charges: 1, key: 'completed' });
	});

	/* (4) Execute Once inside a sub-workflow run once for all the events ------------------------------------------- */

	const tokenSub = () =>
		JSON.stringify({
			nodes: [
				// The harness starts a sub-execution at the node named Webhook.
				node('Webhook', 'executeWorkflowTrigger', 1.1, { inputSource: 'passthrough' }),
				httpCall('Get Token', 'token', { executeOnce: true }, '={{ JSON.stringify({ id: "t" }) }}'),
				httpCall('Charge', 'charge', {}, '={{ JSON.stringify({ id: $("Webhook").item.json.body.id }) }}'),
			],
			connections: { Webhook: { main: [link('Get Token')] }, 'Get Token': { main: [link('Charge')] } },
		});
	// Outside a sub-workflow, Get Token (Execute Once) → Charge → Complete with two events is refused before anything is
	// reserved (firstEventOnly). Inside a sub-workflow (Define Below) that Execute Workflow runs once for all the items,
	// the same nodes would charge A only: firstEventOnly applies inside such a sub-workflow too.
	it('node path: Split [A, B] → Reserve → Billing (Execute Workflow, once for all; inside: Get Token (Execute Once) → Charge) → Complete: refused before anything is reserved, nothing charged', async () => {
		const tag = 'sw';
		useNodePath('wf-rt40-sub-once');
		const step: Step = {
			nodes: [
				node('Billing', 'executeWorkflow', 1.3, {
					source: 'parameter',
					workflowJson: tokenSub(),
					mode: 'once',
					options: { waitForSubWorkflow: true },
				}),
				completeNode(),
			],
			connections: { Billing: { main: [link('Mark Complete')] }, ...completeAnswers },
			heads: ['Billing'],
		};
		const { answers, runs } = await provideNodePath(
			two(tag),
			() => nodeTemplate(step, { reserve: FIELD_RESERVE(), before: SPLIT_OUT_EVENTS }),
			1,
		);
		const result = { refused: reserveRefusal(runs), answers, charges: charges(tag), keys: await keysOf(tag), errors: errorsOf(runs) };
		dump(tag, result);
		dumpRuns(tag, runs as never);
		expect({
			refused: /Get Token.{0,3} is set to Execute Once.*Turn off its Execute Once setting/.test(String(result.refused)),
			answers,
			charges: result.charges,
			keys: result.keys,
		}).toEqual({ refused: true, answers: [503], charges: [0, 0], keys: [null, null] });
	});

	// Over-refusal control: the same sub-workflow run once for each item (mode "each"): each sub-execution gets one
	// event, so Execute Once inside it is harmless. Not refused, each charged once, both completed.
	it('node path: Split [A, B] → Reserve → Billing (Execute Workflow, once for each item; inside: Get Token (Execute Once) → Charge) → Complete: each charged once, 200, both completed', async () => {
		const tag = 'se';
		useNodePath('wf-rt40-sub-each');
		const step: Step = {
			nodes: [
				node('Billing', 'executeWorkflow', 1.3, {
					source: 'parameter',
					workflowJson: tokenSub(),
					mode: 'each',
					options: { waitForSubWorkflow: true },
				}),
				completeNode(),
			],
			connections: { Billing: { main: [link('Mark Complete')] }, ...completeAnswers },
			heads: ['Billing'],
		};
		const { answers, runs } = await provideNodePath(two(tag), () =>
			nodeTemplate(step, { reserve: FIELD_RESERVE(), before: SPLIT_OUT_EVENTS }),
		);
		const result = { refused: reserveRefusal(runs), answers, charges: charges(tag), keys: await keysOf(tag), errors: errorsOf(runs) };
		dump(tag, result);
		dumpRuns(tag, runs as never);
		expect({ refused: result.refused, answers, charges: result.charges, keys: result.keys }).toEqual({
			refused: false,
			answers: [200],
			charges: [1, 1],
			keys: ['completed', 'completed'],
		});
	});

	// The trigger: the same sub-workflow with Continue (regular output) on the Execute Workflow node (Stop Workflow is
	// refused as events together; the error output is refused for a sub-workflow's returned failures).
	it('trigger, Events [A, B]: Billing (Execute Workflow once for all, Continue regular; inside: Get Token (Execute Once) → Charge (Continue)): refused at publish naming Get Token', async () => {
		useTrigger('wf-rt40-sub-once-trigger', EVENTS);
		const sub = JSON.parse(tokenSub()) as { nodes: INode[]; connections: IConnections };
		sub.nodes = sub.nodes.map((inner) => (inner.name === 'Charge' ? { ...inner, onError: 'continueRegularOutput' } : inner));
		const refusal = await refusedAtPublish({
			nodes: [
				node(
					'Billing',
					'executeWorkflow',
					1.3,
					{ source: 'parameter', workflowJson: JSON.stringify(sub), mode: 'once', options: { waitForSubWorkflow: true } },
					REGULAR,
				),
			],
			heads: ['Billing'],
		});
		dump('sw trigger', refusal);
		expect(typeof refusal === 'string' && refusal.includes('Get Token')).toBe(true);
	});

	/* (5) The Execute Once node is the effect, joined with the events by a Merge ----------------------------------- */

	// Charge (Execute Once) → Complete is refused (rt39). Joined with the events first (Merge, combine all: each event
	// with "the charge"), firstEventOnly stops at the Merge and Tracer.ofLinks drops the Execute Once link as shared
	// data: B's merged item is traced to B alone, and Complete completes B, which nothing charged.
	it('node path: Split [A, B] → Reserve → Charge (HTTP, Execute Once) → Merge (combine all) ← Reserve → Complete: accepted as a token fetched once, so the charge acts for A alone (not guaranteed)', async () => {
		const tag = 'cm';
		useNodePath('wf-rt40-charge-once-merge');
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', { executeOnce: true }, RESERVED_ID),
				node('With Charge', 'merge', 3.2, { mode: 'combine', combineBy: 'combineAll', options: {} }),
				completeNode(),
			],
			connections: {
				Charge: { main: [toInput('With Charge', 1)] },
				'With Charge': { main: [link('Mark Complete')] },
				...completeAnswers,
			} as IConnections,
			heads: ['With Charge', 'Charge'],
		};
		const { answers, runs } = await provideNodePath(
			two(tag),
			() => nodeTemplate(step, { reserve: FIELD_RESERVE(), before: SPLIT_OUT_EVENTS }),
			1,
		);
		const result = { refused: reserveRefusal(runs), answers, charges: charges(tag), keys: await keysOf(tag), errors: errorsOf(runs) };
		dump(tag, result);
		dumpRuns(tag, runs as never);
		// The package cannot tell this charge from a token fetched once and joined with the events (accepted, rt39):
		// documented as not guaranteed in docs/templates.md.
		expect({ refused: result.refused, charges: result.charges, keys: result.keys }).toEqual({
			refused: false,
			charges: [1, 0],
			keys: ['completed', 'completed'],
		});
	});

	/* (6) A retry loop with two events, one of them failing once --------------------------------------------------- */

	it('node path: Split [A, B] → Reserve → Charge (error output → Wait 1 s → back into Charge) → Complete; B fails once: each charged once, 200, both completed', async () => {
		const tag = 'wl';
		useNodePath('wf-rt40-wait-loop-two');
		failNext(`charge:${tag}_b`, 1);
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', ERROR_OUTPUT, RESERVED_ID),
				node('Pause', 'wait', 1.1, { resume: 'timeInterval', amount: 1, unit: 'seconds' }),
				completeNode(),
			],
			connections: {
				Charge: { main: [link('Mark Complete'), link('Pause')] },
				Pause: { main: [link('Charge')] },
				...completeAnswers,
			} as IConnections,
			heads: ['Charge'],
		};
		const { answers, runs } = await provideNodePath(two(tag), () =>
			nodeTemplate(step, { reserve: FIELD_RESERVE(), before: SPLIT_OUT_EVENTS }),
		);
		const result = { refused: reserveRefusal(runs), answers, charges: charges(tag), keys: await keysOf(tag), errors: errorsOf(runs) };
		dump(tag, result);
		dumpRuns(tag, runs as never);
		expect({ refused: result.refused, answers, charges: result.charges, keys: result.keys }).toEqual({
			refused: false,
			answers: [200],
			charges: [1, 1],
			keys: ['completed', 'completed'],
		});
	});

	// The same loop where B's charge fails on every try and the loop gives up after 3 (If $runIndex < 2 → Pause; else
	// Gave Up → Complete). A was charged and its item still waits for Complete when B's is refused: the run ends (500),
	// A is left to its lease and charged again on the retry (not guaranteed, docs/nodes.md); B is charged once.
	it('node path: Split [A, B] → Reserve → Charge (error output → If (tries < 3) → Wait → Charge; else Gave Up → Complete); B fails 3 times: B charged once after retries, A again (not guaranteed)', async () => {
		const tag = 'wg';
		useNodePath('wf-rt40-wait-giveup-two');
		failNext(`charge:${tag}_b`, 3);
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', ERROR_OUTPUT, RESERVED_ID),
				ifCondition('Try Again?', '={{ $runIndex }}', 'lt', 2),
				node('Pause', 'wait', 1.1, { resume: 'timeInterval', amount: 1, unit: 'seconds' }),
				only('Gave Up', 'status', 'gave up'),
				completeNode(),
			],
			connections: {
				Charge: { main: [link('Mark Complete'), link('Try Again?')] },
				'Try Again?': { main: [link('Pause'), link('Gave Up')] },
				Pause: { main: [link('Charge')] },
				'Gave Up': { main: [link('Mark Complete')] },
				...completeAnswers,
			} as IConnections,
			heads: ['Charge'],
		};
		const { answers, runs } = await provideNodePath(two(tag), () =>
			nodeTemplate(step, { reserve: FIELD_RESERVE(), before: SPLIT_OUT_EVENTS }),
		);
		const result = { refused: reserveRefusal(runs), answers, charges: charges(tag), keys: await keysOf(tag), errors: errorsOf(runs) };
		dump(tag, result);
		dumpRuns(tag, runs as never);
		expect({ refused: result.refused, charges: result.charges, keys: result.keys }).toEqual({
			refused: false,
			charges: [2, 1],
			keys: ['completed', 'completed'],
		});
	});
});
