import { type IConnections, type INode, type IWorkflowBase } from 'n8n-workflow';

import { WebhookSignatureVerify } from '../../nodes/WebhookSignatureVerify/WebhookSignatureVerify.node';
import { describeWithN8n } from '../support/n8nBaseNodes';
import { PACKAGE } from '../support/n8nEngine';
import { link } from '../support/settleWorkflows';
import { baseNode as node, events, SPLIT_OUT_EVENTS, triggerRedTeam, type Step } from '../support/triggerRedTeam';

/*
 * Forty-second red-team pass: Complete refusing a key while another event's item still waits (Stale wired to a 500,
 * to nothing, to a 200, Complete at Continue (using error output); Respond to Webhook order, v0 order, two Complete nodes, Loop Over Items), recoveredBefore's
 * retry-loop rule (a backup inside the loop that also leads out), and succeededItemsOf (a backup's success answer with
 * an `error` field). n8n 2.41.1's engine in-process; the embedded store. The effect routes echo the body they were
 * sent. A row that fails breaks a promise; rows marked not guaranteed assert the documented outcome.
 */

describeWithN8n('red team 42: refusals routed to Stale, loops that lead out, success answers that name an error', () => {
	const { effectsAt, failNext, httpCall, nodePath } = triggerRedTeam({
		tag: 'rt42',
		nodeLeaseSeconds: 1,
		providerPauseMs: 1200,
		echoBody: true,
		baseNodeFiles: {
			'n8n-nodes-base.webhook': 'Webhook/Webhook.node.js',
			'n8n-nodes-base.splitOut': 'Transform/SplitOut/SplitOut.node.js',
			'n8n-nodes-base.set': 'Set/Set.node.js',
		},
		nodeTypes: { [`${PACKAGE}.webhookSignatureVerify`]: new WebhookSignatureVerify() },
	});
	const { completeNode: complete, nodeKey, nodeTemplate, provideNodePath, reserveNode, useNodePath } = nodePath;
	const completeNode = (name = 'Mark Complete', extra: Partial<INode> = {}): INode => ({ ...complete(extra), name, id: name });
	const RESERVED_ID = '={{ JSON.stringify({ id: $("Reserve").item.json.body.id }) }}';
	const ERROR_OUTPUT: Partial<INode> = { onError: 'continueErrorOutput' };
	const REGULAR: Partial<INode> = { onError: 'continueRegularOutput' };
	const FIELD_RESERVE = () => reserveNode({ keySource: 'field', keyField: 'body.id', keyPrefix: 'evt:' });
	const errorsOf = (runs: Array<{ data: { resultData: { error?: { message?: string } } } }>) =>
		runs.map((run) => run.data.resultData.error?.message?.slice(0, 240) ?? null);
	const dump = (label: string, value: unknown) => {
		if (process.env.RT42_DUMP) process.stderr.write(`RT42 ${label}: ${JSON.stringify(value)}\n`);
	};
	const dumpRuns = (
		label: string,
		runs: Array<{
			data: {
				resultData: { runData: Record<string, Array<{ error?: { message?: string }; data?: { main: unknown[][] } }>> };
			};
		}>,
	) => {
		if (!process.env.RT42_RUNS) return;
		runs.forEach((run, index) => {
			for (const [name, tasks] of Object.entries(run.data.resultData.runData))
				process.stderr.write(
					`RT42 ${label}#${index} ${name}: ${JSON.stringify(
						tasks.map((task) =>
							task.error
								? { error: task.error.message?.slice(0, 200) }
								: task.data?.main.map((items) =>
										(items ?? []).map((item) => {
											const json = (item as { json: Record<string, unknown> }).json;
											return {
												id: (json.body as { id?: string } | undefined)?.id ?? json.id,
												idem: (json.idempotency as { key?: string } | undefined)?.key,
												err: json.error ? String(json.error).slice(0, 120) : 0,
											};
										}),
									),
						),
					)}\n`,
				);
		});
	};
	const only = (name: string, field: string, value: string, y = 0, x = 400) => ({
		...node(name, 'set', 3.4, {
			mode: 'manual',
			assignments: { assignments: [{ id: field, name: field, value, type: 'string' }] },
			options: {},
		}),
		position: [x, y] as [number, number],
	});
	const ifCondition = (name: string, left: string, operation: string, right: unknown, type = 'number', extra: Partial<INode> = {}) =>
		node(
			name,
			'if',
			2.2,
			{
				conditions: {
					options: { caseSensitive: true, leftValue: '', typeValidation: 'strict', version: 2 },
					conditions: [
						{
							id: 'c',
							leftValue: left,
							rightValue: right,
							operator: { type, operation, singleValue: type === 'object' || type === 'boolean' },
						},
					],
					combinator: 'and',
				},
				options: {},
			} as never,
			extra,
		);
	const two = (tag: string) => events([{ id: `${tag}_a` }, { id: `${tag}_b` }]);
	const keysOf = async (tag: string) => [await nodeKey(`evt:${tag}_a`), await nodeKey(`evt:${tag}_b`)];
	const charges = (tag: string, route = 'charge') => [effectsAt(route, `${tag}_a`), effectsAt(route, `${tag}_b`)];
	const v0 = (workflow: IWorkflowBase): IWorkflowBase => ({ ...workflow, settings: { ...workflow.settings, executionOrder: 'v0' } });

	/* (1) A key refused while another event waits: where Stale leads, who answers first ------------------------------ */

	// Split [A, B] → Reserve → Charge (error output): success → Mark Complete; error → Gave Up (Edit Fields) → Mark
	// Complete (or a second Complete node). B's charge fails once. Complete refuses B (a continued failure) and fails,
	// ending the execution: A's item, still waiting for a Complete node, is left to its lease, and the retry charges A
	// again (not guaranteed, docs/nodes.md); Complete at Continue (using error output), its error output answered 500,
	// settles both. Where A's Complete runs first and its Respond 200 answers the delivery (Gave Up below Complete, or
	// n8n's v0 order), B is lost: not guaranteed (docs/templates.md, a Respond after Complete with several events).
	const giveUp = (gaveUpY: number, staleTo: string[], secondComplete = false, errorOutput = false): Step => {
		const gaveUpTarget = secondComplete ? 'Complete Gave Up' : 'Mark Complete';
		const extraNodes: INode[] = secondComplete ? [{ ...completeNode('Complete Gave Up'), position: [900, 500] as [number, number] }] : [];
		const noop = staleTo.includes('Ignore') ? [{ ...node('Ignore', 'noOp', 1, {}), position: [1200, 600] as [number, number] }] : [];
		return {
			nodes: [
				httpCall('Charge', 'charge', ERROR_OUTPUT, RESERVED_ID),
				only('Gave Up', 'status', 'gave up', gaveUpY, 600),
				completeNode('Mark Complete', errorOutput ? ERROR_OUTPUT : {}),
				...extraNodes,
				...noop,
			],
			connections: {
				Charge: { main: [link('Mark Complete'), link('Gave Up')] },
				'Gave Up': { main: [link(gaveUpTarget)] },
				'Mark Complete': {
					main: [link('Respond 200'), link(...staleTo), ...(errorOutput ? [link('Respond 500 (provider retries)')] : [])],
				},
				...(secondComplete ? { 'Complete Gave Up': { main: [link('Respond 200'), link(...staleTo)] } } : {}),
			} as IConnections,
			heads: ['Charge'],
		};
	};
	const rows: Array<[string, string, number, string[], { v0?: boolean; second?: boolean; errorOutput?: boolean }]> = [
		['og', 'Gave Up above Complete (runs first), Stale → Respond 500', -200, ['Respond 500 (provider retries)'], {}],
		['oa', 'Gave Up below Complete (A completes and answers 200 first), Stale → Respond 500', 300, ['Respond 500 (provider retries)'], {}],
		['on', 'Gave Up above Complete (runs first), Stale → No Operation', -200, ['Ignore'], {}],
		['oz', 'Gave Up above, Stale → Respond 200 (completion refused)', -200, ['Respond 200 (completion refused)'], {}],
		['ov', 'v0 order, Gave Up above, Stale → Respond 500', -200, ['Respond 500 (provider retries)'], { v0: true }],
		[
			'ot',
			'two Complete nodes (Gave Up → its own Complete), Stale → Respond 500',
			-200,
			['Respond 500 (provider retries)'],
			{ second: true },
		],
		[
			'oe',
			'Complete at Continue (error output): Stale → Respond 200 (completion refused), Error → Respond 500',
			-200,
			['Respond 200 (completion refused)'],
			{ errorOutput: true },
		],
	];
	for (const [tag, label, gaveUpY, staleTo, { v0: legacy, second, errorOutput }] of rows)
		it(`node path: Split [A, B] → Reserve → Charge (error output → Gave Up → Complete) → Complete; ${label}; B fails once: ${tag === 'oa' || tag === 'ov' ? "A's Respond 200 answers first, B lost (not guaranteed)" : errorOutput ? 'each charged once, both completed' : 'the run ends on B, A charged again (not guaranteed)'}`, async () => {
			useNodePath(`wf-rt42-${tag}`);
			failNext(`charge:${tag}_b`, 1);
			const step = giveUp(gaveUpY, staleTo, second, errorOutput);
			const { answers, runs } = await provideNodePath(two(tag), () => {
				const workflow = nodeTemplate(step, { reserve: FIELD_RESERVE(), before: SPLIT_OUT_EVENTS });
				return legacy ? v0(workflow) : workflow;
			});
			const result = { answers, charges: charges(tag), keys: await keysOf(tag), errors: errorsOf(runs) };
			dump(tag, result);
			dumpRuns(tag, runs as never);
			const answeredFirstByA = tag === 'oa' || tag === 'ov';
			expect({ charges: result.charges, keys: result.keys }).toEqual(
				answeredFirstByA
					? { charges: [1, 0], keys: ['completed', 'processing'] }
					: { charges: errorOutput ? [1, 1] : [2, 1], keys: ['completed', 'completed'] },
			);
		});

	/* (2) A backup inside a retry loop that also leads out ----------------------------------------------------------- */

	// Charge (error output) → Backup Charge (refund route) → Backup Paid? (If ok): true → Complete; false → back into
	// Charge. The backup succeeds on its first try and the If leads out to Complete: the event is paid (by the backup).
	// Backup Charge's success leads back into Charge (via the false branch): a lap of a retry loop (recoveredBefore),
	// which a token refreshed before each try is too (rt40). Not guaranteed (docs/nodes.md): the retry pays again.
	it('node path: Charge (error output) → Backup Charge → If ok: true → Complete; false → back into Charge; Charge fails once, backup succeeds: a lap of the loop, paid again (not guaranteed), completed', async () => {
		const id = 'bl_a';
		useNodePath('wf-rt42-backup-loop');
		failNext(`charge:${id}`, 1);
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', ERROR_OUTPUT, RESERVED_ID),
				httpCall('Backup Charge', 'refund', {}, RESERVED_ID),
				ifCondition('Backup Paid?', '={{ $json.ok }}', 'true', '', 'boolean'),
				completeNode(),
			],
			connections: {
				Charge: { main: [link('Mark Complete'), link('Backup Charge')] },
				'Backup Charge': { main: [link('Backup Paid?')] },
				'Backup Paid?': { main: [link('Mark Complete'), link('Charge')] },
				'Mark Complete': { main: [link('Respond 200'), link('Respond 500 (provider retries)')] },
			} as IConnections,
			heads: ['Charge'],
		};
		const { answers, runs } = await provideNodePath({ id }, () => nodeTemplate(step));
		const paid = effectsAt('charge', id) + effectsAt('refund', id);
		const result = {
			answers,
			charge: effectsAt('charge', id),
			backup: effectsAt('refund', id),
			key: await nodeKey(`evt:${id}`),
			errors: errorsOf(runs),
		};
		dump(id, result);
		dumpRuns(id, runs as never);
		expect({ paid, key: result.key }).toEqual({ paid: 2, key: 'completed' });
	});

	// The common "primary, then backup; if the backup fails too, wait and start over" shape: Charge (error output) →
	// Backup Charge (error output): success → Complete; error → Pause (Wait 1 s) → back into Charge. The backup
	// succeeds on its first try, and its item leaves the loop through its success output to Complete: a recovery. Only
	// its error output leads back into Charge.
	it('node path: Charge (error output) → Backup Charge (error output → Wait → back into Charge) → Complete; Charge fails once, backup succeeds: paid once, completed', async () => {
		const id = 'bx_a';
		useNodePath('wf-rt42-backup-error-loop');
		failNext(`charge:${id}`, 1);
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', ERROR_OUTPUT, RESERVED_ID),
				httpCall('Backup Charge', 'refund', ERROR_OUTPUT, RESERVED_ID),
				node('Pause', 'wait', 1.1, { resume: 'timeInterval', amount: 1, unit: 'seconds' }),
				completeNode(),
			],
			connections: {
				Charge: { main: [link('Mark Complete'), link('Backup Charge')] },
				'Backup Charge': { main: [link('Mark Complete'), link('Pause')] },
				Pause: { main: [link('Charge')] },
				'Mark Complete': { main: [link('Respond 200'), link('Respond 500 (provider retries)')] },
			} as IConnections,
			heads: ['Charge'],
		};
		const { answers, runs } = await provideNodePath({ id }, () => nodeTemplate(step));
		const paid = effectsAt('charge', id) + effectsAt('refund', id);
		const result = {
			answers,
			charge: effectsAt('charge', id),
			backup: effectsAt('refund', id),
			key: await nodeKey(`evt:${id}`),
			errors: errorsOf(runs),
		};
		dump(id, result);
		dumpRuns(id, runs as never);
		expect({ paid, key: result.key }).toEqual({ paid: 1, key: 'completed' });
	});

	// Control: the same shape where the backup fails too on the first lap and the second lap's Charge succeeds.
	it('node path: the same primary/backup loop, Charge and backup fail once: the second lap charges: paid once, 200, completed', async () => {
		const id = 'bx_c';
		useNodePath('wf-rt42-backup-error-loop-ok');
		failNext(`charge:${id}`, 1);
		failNext(`refund:${id}`, 1);
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', ERROR_OUTPUT, RESERVED_ID),
				httpCall('Backup Charge', 'refund', ERROR_OUTPUT, RESERVED_ID),
				node('Pause', 'wait', 1.1, { resume: 'timeInterval', amount: 1, unit: 'seconds' }),
				completeNode(),
			],
			connections: {
				Charge: { main: [link('Mark Complete'), link('Backup Charge')] },
				'Backup Charge': { main: [link('Mark Complete'), link('Pause')] },
				Pause: { main: [link('Charge')] },
				'Mark Complete': { main: [link('Respond 200'), link('Respond 500 (provider retries)')] },
			} as IConnections,
			heads: ['Charge'],
		};
		const { answers, runs } = await provideNodePath({ id }, () => nodeTemplate(step));
		const paid = effectsAt('charge', id) + effectsAt('refund', id);
		const result = {
			answers,
			charge: effectsAt('charge', id),
			backup: effectsAt('refund', id),
			key: await nodeKey(`evt:${id}`),
			errors: errorsOf(runs),
		};
		dump(id, result);
		dumpRuns(id, runs as never);
		expect({ answers, paid, key: result.key }).toEqual({ answers: [200], paid: 1, key: 'completed' });
	});

	// Control: two nested loops. Charge (error output) → Refresh Token → Try Again? (If tries < 2): true → back into
	// Charge; false → Backup Charge (outside the loop) → Complete. Charge fails on every lap; the backup pays.
	it('node path: Charge (error output) → Refresh Token → If tries < 2: back into Charge; else Backup Charge → Complete; Charge fails 2 times, backup pays: paid once, 200, completed', async () => {
		const id = 'nl_a';
		useNodePath('wf-rt42-nested-backup');
		failNext(`charge:${id}`, 2);
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', ERROR_OUTPUT, RESERVED_ID),
				httpCall('Refresh Token', 'notify', {}, '={{ JSON.stringify({ id: "refresh" }) }}'),
				ifCondition('Try Again?', '={{ $runIndex }}', 'lt', 1),
				httpCall('Backup Charge', 'refund', {}, RESERVED_ID),
				completeNode(),
			],
			connections: {
				Charge: { main: [link('Mark Complete'), link('Refresh Token')] },
				'Refresh Token': { main: [link('Try Again?')] },
				'Try Again?': { main: [link('Charge'), link('Backup Charge')] },
				'Backup Charge': { main: [link('Mark Complete')] },
				'Mark Complete': { main: [link('Respond 200'), link('Respond 500 (provider retries)')] },
			} as IConnections,
			heads: ['Charge'],
		};
		const { answers, runs } = await provideNodePath({ id }, () => nodeTemplate(step));
		const paid = effectsAt('charge', id) + effectsAt('refund', id);
		const result = {
			answers,
			charge: effectsAt('charge', id),
			backup: effectsAt('refund', id),
			key: await nodeKey(`evt:${id}`),
			errors: errorsOf(runs),
		};
		dump(id, result);
		dumpRuns(id, runs as never);
		expect({ answers, paid, key: result.key }).toEqual({ answers: [200], paid: 1, key: 'completed' });
	});

	/* (2b) The refused key's Stale path is longer than the other event's Done path --------------------------------- */

	// Split [A, B] → Reserve → Charge (error output): success → Log (Edit Fields) → Complete; error → Complete directly.
	// Complete's Stale → Alert (Edit Fields) → Respond 500. B's charge fails once: Complete refuses B while A's item waits
	// (Stale): Log sits below Complete, so n8n's v1 order runs B's Complete first and its Stale path (depth-first) answers
	// 500 first; in v0 order (breadth-first) A's Done answer (Respond 200) runs before the Alert's Respond 500.
	// Complete refuses B and fails while A's item still waits (at Log, or at Complete in v0 order): A is left to its
	// lease, and the retry charges it again (not guaranteed, docs/nodes.md).
	for (const legacy of [false, true])
		it(`node path: Split [A, B] → Reserve → Charge (error output → Complete; success → Log → Complete), Stale → Alert → Respond 500, ${legacy ? 'v0' : 'v1'} order; B fails once: A charged again (not guaranteed), both completed`, async () => {
			const tag = legacy ? 'c0' : 'c1';
			useNodePath(`wf-rt42-chain-${tag}`);
			failNext(`charge:${tag}_b`, 1);
			const step: Step = {
				nodes: [
					httpCall('Charge', 'charge', ERROR_OUTPUT, RESERVED_ID),
					only('Log', 'logged', 'yes', 300, 600),
					only('Alert', 'alert', 'refused', 500, 1100),
					completeNode(),
				],
				connections: {
					Charge: { main: [link('Log'), link('Mark Complete')] },
					Log: { main: [link('Mark Complete')] },
					'Mark Complete': { main: [link('Respond 200'), link('Alert')] },
					Alert: { main: [link('Respond 500 (provider retries)')] },
				} as IConnections,
				heads: ['Charge'],
			};
			const { answers, runs } = await provideNodePath(two(tag), () => {
				const workflow = nodeTemplate(step, { reserve: FIELD_RESERVE(), before: SPLIT_OUT_EVENTS });
				return legacy ? v0(workflow) : workflow;
			});
			const result = { answers, charges: charges(tag), keys: await keysOf(tag), errors: errorsOf(runs) };
			dump(tag, result);
			dumpRuns(tag, runs as never);
			expect({ charges: result.charges, keys: result.keys }).toEqual({
				charges: [2, 1],
				keys: ['completed', 'completed'],
			});
		});

	/* (2c) Loop Over Items feeding Complete per batch ---------------------------------------------------------------- */

	// Split [B, A] → Reserve → Loop Over Items (batch 1) → Charge (error output → Gave Up → Complete) → Complete → back to
	// the loop; the loop's done → Respond 200; Stale → Respond 500. B (first) fails once: A waits inside the loop node
	// (not on n8n's stack) when B is refused.
	it('node path: Split [B, A] → Reserve → Loop Over Items (1) → Charge (error output → Gave Up → Complete) → Complete → loop; done → Respond 200; B fails once: each charged once, both completed', async () => {
		const tag = 'lo';
		useNodePath('wf-rt42-loop-items');
		failNext(`charge:${tag}_b`, 1);
		const step: Step = {
			nodes: [
				node('Loop', 'splitInBatches', 3, { batchSize: 1, options: {} }),
				httpCall('Charge', 'charge', ERROR_OUTPUT, RESERVED_ID),
				only('Gave Up', 'status', 'gave up', -200, 600),
				completeNode(),
			],
			connections: {
				Loop: { main: [link('Respond 200'), link('Charge')] },
				Charge: { main: [link('Mark Complete'), link('Gave Up')] },
				'Gave Up': { main: [link('Mark Complete')] },
				'Mark Complete': { main: [link('Loop'), link('Respond 500 (provider retries)')] },
			} as IConnections,
			heads: ['Loop'],
		};
		const { answers, runs } = await provideNodePath(events([{ id: `${tag}_b` }, { id: `${tag}_a` }]), () =>
			nodeTemplate(step, { reserve: FIELD_RESERVE(), before: SPLIT_OUT_EVENTS }),
		);
		const result = { answers, charges: charges(tag), keys: await keysOf(tag), errors: errorsOf(runs) };
		dump(tag, result);
		dumpRuns(tag, runs as never);
		expect({ charges: result.charges, keys: result.keys }).toEqual({ charges: [1, 1], keys: ['completed', 'completed'] });
	});

	// Split [A, B] → Reserve → Loop Over Items (batch 1) → Charge (error output → Backup Charge → Complete) → Complete →
	// back to the loop. B's charge fails once; the backup pays. The backup's way back to Charge passes Complete and the
	// loop (the next event, not a retry): a recovery, B paid once by the backup.
	it('node path: Split [A, B] → Reserve → Loop Over Items (1) → Charge (error output → Backup Charge → Complete) → Complete → loop; B fails once: each paid once, both completed', async () => {
		const tag = 'lb';
		useNodePath('wf-rt42-loop-backup');
		failNext(`charge:${tag}_b`, 1);
		const step: Step = {
			nodes: [
				node('Loop', 'splitInBatches', 3, { batchSize: 1, options: {} }),
				httpCall('Charge', 'charge', ERROR_OUTPUT, RESERVED_ID),
				httpCall('Backup Charge', 'refund', {}, RESERVED_ID),
				completeNode(),
			],
			connections: {
				Loop: { main: [link('Respond 200'), link('Charge')] },
				Charge: { main: [link('Mark Complete'), link('Backup Charge')] },
				'Backup Charge': { main: [link('Mark Complete')] },
				'Mark Complete': { main: [link('Loop'), link('Respond 500 (provider retries)')] },
			} as IConnections,
			heads: ['Loop'],
		};
		const { answers, runs } = await provideNodePath(two(tag), () =>
			nodeTemplate(step, { reserve: FIELD_RESERVE(), before: SPLIT_OUT_EVENTS }),
		);
		const paid = [
			effectsAt('charge', `${tag}_a`) + effectsAt('refund', `${tag}_a`),
			effectsAt('charge', `${tag}_b`) + effectsAt('refund', `${tag}_b`),
		];
		const result = { answers, paid, keys: await keysOf(tag), errors: errorsOf(runs) };
		dump(tag, result);
		dumpRuns(tag, runs as never);
		expect({ paid, keys: result.keys }).toEqual({ paid: [1, 1], keys: ['completed', 'completed'] });
	});

	/* (3) A backup whose success answer has an `error` field, at Continue (regular output) -------------------------- */

	// Charge (error output) → Backup Charge (Continue regular output; the API answers the body it was sent, so the
	// success answer carries `error`) → Complete. Charge fails once; the backup pays. `null` is documented as an API's
	// success; "none" is a text the package reads as an error (docs/nodes.md): Complete refuses, and the retry pays again.
	for (const [id, errorField] of [
		['en_a', 'null'],
		['es_a', '"none"'],
	] as const)
		it(`node path: Charge (error output) → Backup Charge (Continue regular, answers {error: ${errorField}}) → Complete; Charge fails once: ${id === 'en_a' ? 'paid once' : 'read as a failure, paid again (not guaranteed)'}, completed`, async () => {
			useNodePath(`wf-rt42-backup-error-${id}`);
			failNext(`charge:${id}`, 1);
			const step: Step = {
				nodes: [
					httpCall('Charge', 'charge', ERROR_OUTPUT, RESERVED_ID),
					httpCall(
						'Backup Charge',
						'refund',
						REGULAR,
						`={{ JSON.stringify({ id: $("Reserve").item.json.body.id, error: ${errorField} }) }}`,
					),
					completeNode(),
				],
				connections: {
					Charge: { main: [link('Mark Complete'), link('Backup Charge')] },
					'Backup Charge': { main: [link('Mark Complete')] },
					'Mark Complete': { main: [link('Respond 200'), link('Respond 500 (provider retries)')] },
				} as IConnections,
				heads: ['Charge'],
			};
			const { answers, runs } = await provideNodePath({ id }, () => nodeTemplate(step));
			const paid = effectsAt('charge', id) + effectsAt('refund', id);
			const result = {
				answers,
				charge: effectsAt('charge', id),
				backup: effectsAt('refund', id),
				key: await nodeKey(`evt:${id}`),
				errors: errorsOf(runs),
			};
			dump(id, result);
			dumpRuns(id, runs as never);
			expect({ paid, key: result.key }).toEqual({ paid: id === 'en_a' ? 1 : 2, key: 'completed' });
		});
	// Charge (error output) → Backup Charge (On Error: Stop Workflow; its success answer carries `error: "none"`) → Complete:
	// read as the continued failure (docs/nodes.md), refused, and the retry pays again.
	it('node path: Charge (error output) → Backup Charge (Stop Workflow, answers {error: "none"}) → Complete; Charge fails once: read as a failure, paid again (not guaranteed), completed', async () => {
		const id = 'ss_a';
		useNodePath('wf-rt42-backup-stop-error-field');
		failNext(`charge:${id}`, 1);
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', ERROR_OUTPUT, RESERVED_ID),
				httpCall('Backup Charge', 'refund', {}, '={{ JSON.stringify({ id: $("Reserve").item.json.body.id, error: "none" }) }}'),
				completeNode(),
			],
			connections: {
				Charge: { main: [link('Mark Complete'), link('Backup Charge')] },
				'Backup Charge': { main: [link('Mark Complete')] },
				'Mark Complete': { main: [link('Respond 200'), link('Respond 500 (provider retries)')] },
			} as IConnections,
			heads: ['Charge'],
		};
		const { answers, runs } = await provideNodePath({ id }, () => nodeTemplate(step));
		const paid = effectsAt('charge', id) + effectsAt('refund', id);
		const result = {
			answers,
			charge: effectsAt('charge', id),
			backup: effectsAt('refund', id),
			key: await nodeKey(`evt:${id}`),
			errors: errorsOf(runs),
		};
		dump(id, result);
		dumpRuns(id, runs as never);
		expect({ paid, key: result.key }).toEqual({ paid: 2, key: 'completed' });
	});
});
