import { type IConnections, type INode, type IWorkflowBase } from 'n8n-workflow';

import { WebhookSignatureVerify } from '../../nodes/WebhookSignatureVerify/WebhookSignatureVerify.node';
import { describeWithN8n } from '../support/n8nBaseNodes';
import { PACKAGE } from '../support/n8nEngine';
import { link } from '../support/settleWorkflows';
import { baseNode as node, events, SPLIT_OUT_EVENTS, triggerRedTeam, type Step } from '../support/triggerRedTeam';

/*
 * Forty-fourth red-team pass: Complete's `beforeFailing` (commit 4284d92): when Complete refuses a key at Stop
 * Workflow, it first completes the keys of the items waiting on n8n's stack for a Complete node. Rows assert the
 * promise strictly (one effect per event after the provider's retries, every key completed). n8n 2.41.1's engine
 * in-process; the embedded store; the effect routes echo the body they were sent. A failing row is a finding.
 */

describeWithN8n('red team 44: Complete failing on a refused key while other events wait', () => {
	const { effectsAt, failNext, httpCall, nodePath } = triggerRedTeam({
		tag: 'rt44',
		nodeLeaseSeconds: 1,
		providerPauseMs: 1200,
		echoBody: true,
		baseNodeFiles: {
			'n8n-nodes-base.webhook': 'Webhook/Webhook.node.js',
			'n8n-nodes-base.splitOut': 'Transform/SplitOut/SplitOut.node.js',
			'n8n-nodes-base.set': 'Set/Set.node.js',
			'n8n-nodes-base.executeWorkflowTrigger': 'ExecuteWorkflow/ExecuteWorkflowTrigger/ExecuteWorkflowTrigger.node.js',
		},
		nodeTypes: { [`${PACKAGE}.webhookSignatureVerify`]: new WebhookSignatureVerify() },
	});
	const { completeNode: complete, nodeKey, nodeTemplate, provideNodePath, reserveNode, useNodePath } = nodePath;
	const completeNode = (name = 'Mark Complete', extra: Partial<INode> = {}, parameters: Record<string, unknown> = {}): INode => ({
		...complete(extra, parameters),
		name,
		id: name,
	});
	const RESERVED_ID = '={{ JSON.stringify({ id: $("Reserve").item.json.body.id }) }}';
	const ERROR_OUTPUT: Partial<INode> = { onError: 'continueErrorOutput' };
	const FIELD_RESERVE = () => reserveNode({ keySource: 'field', keyField: 'body.id', keyPrefix: 'evt:' });
	const errorsOf = (runs: Array<{ data: { resultData: { error?: { message?: string } } } }>) =>
		runs.map((run) => run.data.resultData.error?.message?.slice(0, 240) ?? null);
	const dump = (label: string, value: unknown) => {
		if (process.env.RT44_DUMP) process.stderr.write(`RT44 ${label}: ${JSON.stringify(value)}\n`);
	};
	const dumpRuns = (
		label: string,
		runs: Array<{
			data: {
				resultData: { runData: Record<string, Array<{ error?: { message?: string }; data?: { main: unknown[][] } }>> };
			};
		}>,
	) => {
		if (!process.env.RT44_RUNS) return;
		runs.forEach((run, index) => {
			for (const [name, tasks] of Object.entries(run.data.resultData.runData))
				process.stderr.write(
					`RT44 ${label}#${index} ${name}: ${JSON.stringify(
						tasks.map((task) =>
							task.error
								? { error: task.error.message?.slice(0, 200) }
								: task.data?.main.map((items) =>
										(items ?? []).map((item) => {
											const json = (item as { json: Record<string, unknown> }).json;
											return {
												id: (json.body as { id?: string } | undefined)?.id ?? json.id,
												line: json.line,
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
	const at = (item: INode, x: number, y: number): INode => ({ ...item, position: [x, y] });
	const v0 = (workflow: IWorkflowBase): IWorkflowBase => ({ ...workflow, settings: { ...workflow.settings, executionOrder: 'v0' } });
	const keysOf = async (ids: string[]) => await Promise.all(ids.map(async (id) => await nodeKey(`evt:${id}`)));

	/* (1) One event split into lines: a line waits at Complete, another has not had its effect yet ------------------ */

	// Split [E, B] → Reserve → Split Lines (charge, ship) → Is Charge? (If): true → Charge (error output): success →
	// Complete; error → Gave Up → Complete; false → Ship → Complete. B's charge fails once. v1 order: the charge branch
	// (above) runs first; Gave Up (above Complete) runs B to Complete, which refuses B and fails. E's charge line waits
	// at Complete, E's ship line still waits at Ship. When Complete refuses one event's key and fails, the execution ends: another event's items not yet settled are left
	// to their lease, and the retry runs them again (not guaranteed, docs/nodes.md): E is charged again.
	it('node path: Split [E, B] → Reserve → Split Lines (charge, ship) → If charge: Charge (error output → Gave Up → Complete) → Complete; else Ship → Complete; B charge fails once: each charged once and shipped once, both completed', async () => {
		const [e, b] = ['ln_e', 'ln_b'];
		useNodePath('wf-rt44-lines');
		failNext(`charge:${b}`, 1);
		const step: Step = {
			nodes: [
				at(
					node('Split Lines', 'splitOut', 1, {
						fieldToSplitOut: 'body.lines',
						include: 'allOtherFields',
						options: { destinationFieldName: 'line' },
					}),
					500,
					0,
				),
				at(ifCondition('Is Charge?', '={{ $json.line }}', 'equals', 'charge', 'string'), 600, 0),
				at(httpCall('Charge', 'charge', ERROR_OUTPUT, RESERVED_ID), 700, -300),
				at(httpCall('Ship', 'ship', {}, RESERVED_ID), 700, 400),
				only('Gave Up', 'status', 'gave up', -400, 800),
				at(completeNode(), 900, 0),
			],
			connections: {
				'Split Lines': { main: [link('Is Charge?')] },
				'Is Charge?': { main: [link('Charge'), link('Ship')] },
				Charge: { main: [link('Mark Complete'), link('Gave Up')] },
				'Gave Up': { main: [link('Mark Complete')] },
				Ship: { main: [link('Mark Complete')] },
				'Mark Complete': { main: [link('Respond 200'), link('Respond 500 (provider retries)')] },
			} as IConnections,
			heads: ['Split Lines'],
		};
		const { answers, runs } = await provideNodePath(
			events([
				{ id: e, lines: ['charge', 'ship'] },
				{ id: b, lines: ['charge', 'ship'] },
			]),
			() => nodeTemplate(step, { reserve: FIELD_RESERVE(), before: SPLIT_OUT_EVENTS }),
		);
		const result = {
			answers,
			charges: [effectsAt('charge', e), effectsAt('charge', b)],
			ships: [effectsAt('ship', e), effectsAt('ship', b)],
			keys: await keysOf([e, b]),
			errors: errorsOf(runs),
		};
		dump('lines', result);
		dumpRuns('lines', runs as never);
		expect({ charges: result.charges, ships: result.ships, keys: result.keys }).toEqual({
			charges: [2, 1],
			ships: [1, 1],
			keys: ['completed', 'completed'],
		});
	});

	/* (2) Complete in the middle of the step: Charge → Complete → Ship ---------------------------------------------- */

	// Split [E, B] → Reserve → Charge (error output): success → Complete → Ship → Respond 200; error → Gave Up (above) →
	// Complete. B fails once: Complete refuses B while E waits at Complete. When Complete refuses one event's key and fails, the execution ends: another event's items not yet settled are left
	// to their lease, and the retry runs them again (not guaranteed, docs/nodes.md): E is charged again.
	it('node path: Split [E, B] → Reserve → Charge (error output → Gave Up → Complete) → Complete → Ship → Respond 200; B fails once: each charged once and shipped once, both completed', async () => {
		const [e, b] = ['mc_e', 'mc_b'];
		useNodePath('wf-rt44-mid-complete');
		failNext(`charge:${b}`, 1);
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', ERROR_OUTPUT, RESERVED_ID),
				only('Gave Up', 'status', 'gave up', -200, 600),
				at(completeNode(), 900, 0),
				at(httpCall('Ship', 'ship', {}, RESERVED_ID), 1100, 0),
			],
			connections: {
				Charge: { main: [link('Mark Complete'), link('Gave Up')] },
				'Gave Up': { main: [link('Mark Complete')] },
				'Mark Complete': { main: [link('Ship'), link('Respond 500 (provider retries)')] },
				Ship: { main: [link('Respond 200')] },
			} as IConnections,
			heads: ['Charge'],
		};
		const { answers, runs } = await provideNodePath(events([{ id: e }, { id: b }]), () =>
			nodeTemplate(step, { reserve: FIELD_RESERVE(), before: SPLIT_OUT_EVENTS }),
		);
		const result = {
			answers,
			charges: [effectsAt('charge', e), effectsAt('charge', b)],
			ships: [effectsAt('ship', e), effectsAt('ship', b)],
			keys: await keysOf([e, b]),
			errors: errorsOf(runs),
		};
		dump('mid', result);
		dumpRuns('mid', runs as never);
		expect({ charges: result.charges, ships: result.ships, keys: result.keys }).toEqual({
			charges: [2, 1],
			ships: [1, 1],
			keys: ['completed', 'completed'],
		});
	});

	/* (3) A recovery judged from the refusing Complete, not from the Complete the waiting item is at ---------------- */

	// Split [A, B] → Reserve → Charge (error output): success → Mark Complete; error → Is B? (If): true → Gave Up →
	// Mark Complete; false → Backup Charge → Complete Backup. Both charges fail once. A is paid by the backup and waits at
	// Complete Backup when Mark Complete refuses B; Backup Charge does not lead to Mark Complete, so recoveredBefore
	// (judged for Mark Complete) reads A's failure as unrecovered. v0: A waits at Complete Backup when Mark Complete refuses
	// B and fails; another event's items not yet settled are left
	// to their lease, and the retry runs them again (not guaranteed, docs/nodes.md): A, paid by the backup, is charged again.
	for (const legacy of [true, false])
		it(`node path: Split [A, B] → Reserve → Charge (error output → If B: Gave Up → Mark Complete; else Backup Charge → Complete Backup) → Mark Complete, ${legacy ? 'v0' : 'v1'} order; both fail once: each paid once, both completed`, async () => {
			const tag = legacy ? 'r0' : 'r1';
			const [a, b] = [`${tag}_a`, `${tag}_b`];
			useNodePath(`wf-rt44-recovery-${tag}`);
			failNext(`charge:${a}`, 1);
			failNext(`charge:${b}`, 1);
			const step: Step = {
				nodes: [
					httpCall('Charge', 'charge', ERROR_OUTPUT, RESERVED_ID),
					at(ifCondition('Is B?', '={{ $("Reserve").item.json.body.id }}', 'equals', b, 'string'), 600, 200),
					only('Gave Up', 'status', 'gave up', 100, 800),
					at(httpCall('Backup Charge', 'refund', {}, RESERVED_ID), 800, 400),
					at(completeNode(), 1000, 0),
					at(completeNode('Complete Backup'), 1000, 400),
				],
				connections: {
					Charge: { main: [link('Mark Complete'), link('Is B?')] },
					'Is B?': { main: [link('Gave Up'), link('Backup Charge')] },
					'Gave Up': { main: [link('Mark Complete')] },
					'Backup Charge': { main: [link('Complete Backup')] },
					'Mark Complete': { main: [link('Respond 200'), link('Respond 500 (provider retries)')] },
					'Complete Backup': { main: [link('Respond 200'), link('Respond 500 (provider retries)')] },
				} as IConnections,
				heads: ['Charge'],
			};
			const { answers, runs } = await provideNodePath(events([{ id: a }, { id: b }]), () => {
				const workflow = nodeTemplate(step, { reserve: FIELD_RESERVE(), before: SPLIT_OUT_EVENTS });
				return legacy ? v0(workflow) : workflow;
			});
			const paid = [effectsAt('charge', a) + effectsAt('refund', a), effectsAt('charge', b) + effectsAt('refund', b)];
			const result = {
				answers,
				charges: [effectsAt('charge', a), effectsAt('charge', b)],
				backups: [effectsAt('refund', a), effectsAt('refund', b)],
				keys: await keysOf([a, b]),
				errors: errorsOf(runs),
			};
			dump(tag, result);
			dumpRuns(tag, runs as never);
			expect({ paid, keys: result.keys }).toEqual({ paid: legacy ? [2, 1] : [1, 1], keys: ['completed', 'completed'] });
		});
	/* (4) The retry-loop rule: a backup whose error output loops back, succeeding on the second lap ------------------ */

	// Charge (error output) → Backup Charge (error output): success → Complete; error → Pause (Wait 1 s) → back into
	// Charge. Lap 1: Charge and the backup fail; lap 2: Charge fails again, the backup pays. Its success leaves the loop
	// (a recovery where it succeeded): paid once, completed.
	it('node path: Charge (error output) → Backup Charge (error output → Wait → back into Charge) → Complete; Charge fails twice, backup fails once: the backup pays on lap 2: paid once, 200, completed', async () => {
		const id = 'lp_a';
		useNodePath('wf-rt44-backup-second-lap');
		failNext(`charge:${id}`, 2);
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

	// Two events on the same loop: A's backup pays on lap 1, B's fails and loops (Wait) and B's Charge fails again on lap
	// 2, its backup paying then. Each paid once, both completed.
	it('node path: Split [A, B] → Reserve → Charge (error output) → Backup Charge (error output → Wait → back into Charge) → Complete; A: charge fails once, backup pays; B: charge fails twice, backup fails once: each paid once, both completed', async () => {
		const [a, b] = ['l2_a', 'l2_b'];
		useNodePath('wf-rt44-backup-loop-two');
		failNext(`charge:${a}`, 1);
		failNext(`charge:${b}`, 2);
		failNext(`refund:${b}`, 1);
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
		const { answers, runs } = await provideNodePath(events([{ id: a }, { id: b }]), () =>
			nodeTemplate(step, { reserve: FIELD_RESERVE(), before: SPLIT_OUT_EVENTS }),
		);
		const paid = [effectsAt('charge', a) + effectsAt('refund', a), effectsAt('charge', b) + effectsAt('refund', b)];
		const result = { answers, paid, keys: await keysOf([a, b]), errors: errorsOf(runs) };
		dump('l2', result);
		dumpRuns('l2', runs as never);
		expect({ paid, keys: result.keys }).toEqual({ paid: [1, 1], keys: ['completed', 'completed'] });
	});
	/* (5) Complete inside a sub-workflow on the error path ----------------------------------------------------------- */

	// Split [E, B] → Reserve → Charge (error output): success → Mark Complete; error → Handle Failure (Execute Workflow,
	// Define Below, once, wait; sub: Execute Workflow Trigger (passthrough) → Complete In Sub). B's charge fails once:
	// its error item (carrying `error` and its `idempotency`) reaches a Complete that cannot see the parent's failure.
	// Handle Failure sits above Mark Complete (runs first), so its Respond 500 answers the first delivery. In a
	// sub-execution an item that carries an error may be a failure the caller continued past: refused, not completed.
	// When Complete refuses one event's key and fails, the execution ends: another event's items not yet settled are left
	// to their lease, and the retry runs them again (not guaranteed, docs/nodes.md): E is charged again.
	it('node path: Split [E, B] → Reserve → Charge (error output → Handle Failure: sub-workflow Trigger → Complete) → Mark Complete; B fails once: each charged once, both completed', async () => {
		const [e, b] = ['sw_e', 'sw_b'];
		useNodePath('wf-rt44-sub-complete');
		failNext(`charge:${b}`, 1);
		const sub = JSON.stringify({
			nodes: [
				node('Webhook', 'executeWorkflowTrigger', 1.1, { inputSource: 'passthrough' }),
				{ ...completeNode('Complete In Sub'), position: [400, 0] },
			],
			connections: { Webhook: { main: [link('Complete In Sub')] } },
		});
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', ERROR_OUTPUT, RESERVED_ID),
				at(
					node('Handle Failure', 'executeWorkflow', 1.3, {
						source: 'parameter',
						workflowJson: sub,
						mode: 'once',
						options: { waitForSubWorkflow: true },
					}),
					700,
					-300,
				),
				at(completeNode(), 900, 0),
			],
			connections: {
				Charge: { main: [link('Mark Complete'), link('Handle Failure')] },
				'Handle Failure': { main: [link('Respond 500 (provider retries)')] },
				'Mark Complete': { main: [link('Respond 200'), link('Respond 500 (provider retries)')] },
			} as IConnections,
			heads: ['Charge'],
		};
		const { answers, runs } = await provideNodePath(events([{ id: e }, { id: b }]), () =>
			nodeTemplate(step, { reserve: FIELD_RESERVE(), before: SPLIT_OUT_EVENTS }),
		);
		const result = {
			answers,
			charges: [effectsAt('charge', e), effectsAt('charge', b)],
			keys: await keysOf([e, b]),
			errors: errorsOf(runs),
		};
		dump('sub', result);
		dumpRuns('sub', runs as never);
		expect({ charges: result.charges, keys: result.keys }).toEqual({ charges: [2, 1], keys: ['completed', 'completed'] });
	});
});
