import { type IConnections, type INode } from 'n8n-workflow';

import { WebhookSignatureVerify } from '../../nodes/WebhookSignatureVerify/WebhookSignatureVerify.node';
import { describeWithN8n } from '../support/n8nBaseNodes';
import { PACKAGE, packageNode } from '../support/n8nEngine';
import { link } from '../support/settleWorkflows';
import { baseNode as node, CHARGE_BODY, EVENTS, events, SPLIT_OUT_EVENTS, triggerRedTeam, type Step } from '../support/triggerRedTeam';

/*
 * Thirty-fourth red-team pass: Complete's new "failed earlier in this run" refusal with its "recovered" exception
 * (recoveredBefore), judgeExecution at Continue (using error output), and the new wiring refusals (Execute Once /
 * Merge Empty Item after the effect, Always Output Data + error output with an acting node after the success
 * output). n8n 2.41.1's request path, engine and nodes; the embedded store; the effect is n8n's HTTP Request calling a
 * local API that counts what it committed per event. The provider re-delivers the same signed bytes until answered
 * 2xx. A row that fails breaks a promise.
 */

describeWithN8n('red team 34: Complete after recovered failures, Execute Once, Always Output Data + error output', () => {
	const { effectsAt, failNext, httpCall, nodePath, provide, refusedAtPublish, statuses, useTrigger } = triggerRedTeam({
		tag: 'rt34',
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
	const { completeNode: complete, deliverNodePath, nodeKey, nodeTemplate, provideNodePath, reserveNode, useNodePath } = nodePath;
	const completeNode = (name = 'Mark Complete', extra: Partial<INode> = {}): INode => ({ ...complete(extra), name, id: name });
	const markFailedNode = (name = 'Mark Failed'): INode =>
		packageNode(
			name,
			'idempotencyKey',
			{ operation: 'fail', store: 'embedded', source: 'item', options: {} },
			{ typeVersion: 3, position: [900, 300] },
		);
	const RESERVED_ID = '={{ JSON.stringify({ id: $("Reserve").item.json.body.id }) }}';
	const charge = (extra: Partial<INode> = {}) => httpCall('Charge', 'charge', extra, '={{ JSON.stringify({ id: $json.body.id }) }}');
	const backup = (extra: Partial<INode> = {}) => httpCall('Backup Charge', 'refund', extra, RESERVED_ID);
	const alert = (extra: Partial<INode> = {}) => httpCall('Alert', 'notify', extra, RESERVED_ID);
	const ERROR_OUTPUT: Partial<INode> = { onError: 'continueErrorOutput' };
	const completeAnswers = { 'Mark Complete': { main: [link('Respond 200'), []] } };
	const errorExists = () =>
		node('Failed?', 'if', 2.2, {
			conditions: {
				options: { caseSensitive: true, leftValue: '', typeValidation: 'loose', version: 2 },
				conditions: [
					{
						id: 'e',
						leftValue: '={{ $json.error }}',
						rightValue: '',
						operator: { type: 'object', operation: 'exists', singleValue: true },
					},
				],
				combinator: 'and',
			},
			options: {},
		});
	const names = (refusal: string | false, name: string) => typeof refusal === 'string' && refusal.includes(name);

	/* (1) Complete after a failure recovered in the run ------------------------------------------------------------ */

	// The usual n8n "retry loop": Charge (Continue using error output) → error output → Wait 1 s → back into Charge;
	// success → Complete. The charge fails once, the loop's second try charges: the effect is done, once. The recovery is
	// the failed node itself, run again.
	it('node path: Charge (error output → Wait 1 s → back into Charge) failing once → Complete: charged once, 200, completed', async () => {
		useNodePath('wf-rt34-retry-loop');
		failNext('charge:rl_a');
		const build = () =>
			nodeTemplate({
				nodes: [charge(ERROR_OUTPUT), node('Pause', 'wait', 1.1, { resume: 'timeInterval', amount: 1, unit: 'seconds' }), completeNode()],
				connections: { Charge: { main: [link('Mark Complete'), link('Pause')] }, Pause: { main: [link('Charge')] }, ...completeAnswers },
				heads: ['Charge'],
			});
		const { answers, runs } = await provideNodePath({ id: 'rl_a' }, build);
		const refusedBy = runs.map((run) => run.data.resultData.error?.message?.slice(0, 160) ?? null);
		expect({ answers, charges: effectsAt('charge', 'rl_a'), key: await nodeKey('evt:rl_a'), refusedBy }).toEqual({
			answers: [200],
			charges: 1,
			key: 'completed',
			refusedBy: [null],
		});
	});

	// The same retry loop with a No Operation in place of the Wait.
	it('node path: Charge (error output → No Operation → back into Charge) failing once → Complete: charged once, 200, completed', async () => {
		useNodePath('wf-rt34-retry-loop-noop');
		failNext('charge:rn_a');
		const build = () =>
			nodeTemplate({
				nodes: [charge(ERROR_OUTPUT), node('Again', 'noOp', 1, {}), completeNode()],
				connections: { Charge: { main: [link('Mark Complete'), link('Again')] }, Again: { main: [link('Charge')] }, ...completeAnswers },
				heads: ['Charge'],
			});
		const { answers } = await provideNodePath({ id: 'rn_a' }, build);
		expect({ answers, charges: effectsAt('charge', 'rn_a'), key: await nodeKey('evt:rn_a') }).toEqual({
			answers: [200],
			charges: 1,
			key: 'completed',
		});
	});

	// A fallback that reshapes first: Charge (error output) → Edit Fields (only `reason`) → Backup Charge → Complete.
	it('node path: Charge (error output) failing → Edit Fields → Backup Charge → Complete: completed by the backup, the resend a duplicate', async () => {
		useNodePath('wf-rt34-edit-backup');
		failNext('charge:eb_a');
		const reason = node('Reason', 'set', 3.4, {
			mode: 'manual',
			assignments: { assignments: [{ id: 'r', name: 'reason', value: '={{ $json.error.message ?? "failed" }}', type: 'string' }] },
			options: {},
		});
		const step: Step = {
			nodes: [charge(ERROR_OUTPUT), reason, backup(), completeNode()],
			connections: {
				Charge: { main: [link('Mark Complete'), link('Reason')] },
				Reason: { main: [link('Backup Charge')] },
				'Backup Charge': { main: [link('Mark Complete')] },
				...completeAnswers,
			},
			heads: ['Charge'],
		};
		const { answers } = await provideNodePath({ id: 'eb_a' }, () => nodeTemplate(step));
		const resend = await deliverNodePath({ id: 'eb_a' }, () => nodeTemplate(step));
		expect({
			answers,
			resend: resend.answer,
			charges: effectsAt('charge', 'eb_a'),
			backups: effectsAt('refund', 'eb_a'),
			key: await nodeKey('evt:eb_a'),
		}).toEqual({ answers: [200], resend: 200, charges: 0, backups: 1, key: 'completed' });
	});

	// The older idiom: Charge at Continue (regular output) → If ($json.error exists) → true: Backup Charge → Complete;
	// false → Complete. The charge fails once, the backup charges. A recovery through the regular output is no
	// recovery for recoveredBefore: if Complete refuses here, it refuses after the backup charged, and the retry charges.
	it('node path: Charge (Continue regular) failing → If (error exists) → Backup Charge → Complete: one effect in all, completed', async () => {
		useNodePath('wf-rt34-regular-if-backup');
		failNext('charge:ri_a');
		const step: Step = {
			nodes: [charge({ onError: 'continueRegularOutput' }), errorExists(), backup(), completeNode()],
			connections: {
				Charge: { main: [link('Failed?')] },
				'Failed?': { main: [link('Backup Charge'), link('Mark Complete')] },
				'Backup Charge': { main: [link('Mark Complete')] },
				...completeAnswers,
			},
			heads: ['Charge'],
		};
		const { answers, runs } = await provideNodePath({ id: 'ri_a' }, () => nodeTemplate(step));
		const refusedBy = runs.map((run) => run.data.resultData.error?.message?.slice(0, 200) ?? null);
		expect({
			answers,
			effects: effectsAt('charge', 'ri_a') + effectsAt('refund', 'ri_a'),
			key: await nodeKey('evt:ri_a'),
			refusedBy,
		}).toEqual({ answers: [200], effects: 1, key: 'completed', refusedBy: [null] });
	});

	// Complete reached from the success output and, through a fallback, from the error output; two events, one failing.
	it('node path: Charge (error output): success → Complete, error → Backup Charge → Complete: each event one effect, both completed', async () => {
		useNodePath('wf-rt34-both-outputs');
		failNext('charge:bo_fail');
		const build = () =>
			nodeTemplate({
				nodes: [charge(ERROR_OUTPUT), backup(), completeNode()],
				connections: {
					Charge: { main: [link('Mark Complete'), link('Backup Charge')] },
					'Backup Charge': { main: [link('Mark Complete')] },
					...completeAnswers,
				},
				heads: ['Charge'],
			});
		const failing = await provideNodePath({ id: 'bo_fail' }, build);
		const passing = await provideNodePath({ id: 'bo_ok' }, build);
		expect({
			answers: [failing.answers, passing.answers],
			effects: [
				effectsAt('charge', 'bo_fail') + effectsAt('refund', 'bo_fail'),
				effectsAt('charge', 'bo_ok') + effectsAt('refund', 'bo_ok'),
			],
			keys: [await nodeKey('evt:bo_fail'), await nodeKey('evt:bo_ok')],
		}).toEqual({ answers: [[200], [200]], effects: [1, 1], keys: ['completed', 'completed'] });
	});

	// The backup fails too: Charge (error output) → Backup Charge (error output) → success: Complete; the backup's
	// error output → Alert (a Slack-like notify) → Complete. Nothing was charged: completing loses the event.
	it('node path: Charge (error) → Backup (error output → Alert → Complete), both failing: completed with nothing charged (the Alert reads as a recovery; recorded)', async () => {
		useNodePath('wf-rt34-backup-fails');
		failNext('charge:bf_a');
		failNext('refund:bf_a');
		const build = () =>
			nodeTemplate({
				nodes: [charge(ERROR_OUTPUT), backup(ERROR_OUTPUT), alert(), completeNode()],
				connections: {
					Charge: { main: [link('Mark Complete'), link('Backup Charge')] },
					'Backup Charge': { main: [link('Mark Complete'), link('Alert')] },
					Alert: { main: [link('Mark Complete')] },
					...completeAnswers,
				},
				heads: ['Charge'],
			});
		const { answers } = await provideNodePath({ id: 'bf_a' }, build);
		expect({
			answers,
			effects: effectsAt('charge', 'bf_a') + effectsAt('refund', 'bf_a'),
			key: await nodeKey('evt:bf_a'),
		}).toEqual({ answers: [200], effects: 0, key: 'completed' });
	});

	// A loop in which an earlier batch's event failed: Events [A, B] → Split Out → Reserve (Field) → Loop Over Items (1)
	// → Charge (error output): success → Complete → loop; error → Mark Failed → Respond 500 and the loop. A fails once.
	it('node path: Loop Over Items (1) → Charge (error output → Mark Failed), A failing in batch 1: B completed in the same run, A charged once later', async () => {
		useNodePath('wf-rt34-loop');
		failNext('charge:lo_a');
		const build = () =>
			nodeTemplate(
				{
					nodes: [
						node('Each Event', 'splitInBatches', 3, { batchSize: 1, options: {} }),
						charge(ERROR_OUTPUT),
						completeNode(),
						markFailedNode(),
					],
					connections: {
						'Each Event': { main: [link('Respond 200'), link('Charge')] },
						Charge: { main: [link('Mark Complete'), link('Mark Failed')] },
						'Mark Complete': { main: [link('Each Event'), []] },
						'Mark Failed': { main: [link('Respond 500 (provider retries)', 'Each Event'), []] },
					},
					heads: ['Each Event'],
					duplicates: [],
				},
				{ reserve: reserveNode({ keySource: 'field', keyField: 'body.id', keyPrefix: 'evt:' }), before: SPLIT_OUT_EVENTS },
			);
		const first = await deliverNodePath(events([{ id: 'lo_a' }, { id: 'lo_b' }]), build);
		const keyBAfterFirst = await nodeKey('evt:lo_b');
		const { answers } = await provideNodePath(events([{ id: 'lo_a' }, { id: 'lo_b' }]), build);
		expect({
			first: first.answer,
			keyBAfterFirst,
			answers,
			charges: [effectsAt('charge', 'lo_a'), effectsAt('charge', 'lo_b')],
			keys: [await nodeKey('evt:lo_a'), await nodeKey('evt:lo_b')],
		}).toEqual({ first: 200, keyBAfterFirst: 'completed', answers: [200], charges: [1, 1], keys: ['completed', 'completed'] });
	});

	// The user gives up on purpose: Charge (error output) → Alert (Slack-like notify) → Complete. The alert "may act",
	// so recoveredBefore reads it as a recovery: the key is completed while no charge committed. Recorded for the report.
	it('node path: Charge (error output) failing → Alert → Complete (deliberate give-up): what happens', async () => {
		useNodePath('wf-rt34-alert-giveup');
		failNext('charge:ag_a');
		const build = () =>
			nodeTemplate({
				nodes: [charge(ERROR_OUTPUT), alert(), completeNode()],
				connections: {
					Charge: { main: [link('Mark Complete'), link('Alert')] },
					Alert: { main: [link('Mark Complete')] },
					...completeAnswers,
				},
				heads: ['Charge'],
			});
		const { answers } = await provideNodePath({ id: 'ag_a' }, build);
		expect({ answers, charges: effectsAt('charge', 'ag_a'), alerts: effectsAt('notify', 'ag_a'), key: await nodeKey('evt:ag_a') }).toEqual({
			answers: [200],
			charges: 0,
			alerts: 1,
			key: 'completed',
		});
	});

	/* (2) Execute Once: before the effect, or after it with one event ---------------------------------------------- */

	// "Get token (Execute Once)" BEFORE the per-event charge, one event per delivery: must not be refused.
	it('node path: Reserve → Get Token (HTTP, Execute Once) → Charge → Complete, one event: charged once, completed', async () => {
		useNodePath('wf-rt34-token-before');
		const build = () =>
			nodeTemplate({
				nodes: [
					httpCall('Get Token', 'token', { executeOnce: true }, '={{ JSON.stringify({ id: "t" }) }}'),
					httpCall('Charge', 'charge', {}, RESERVED_ID),
					completeNode(),
				],
				connections: { 'Get Token': { main: [link('Charge')] }, Charge: { main: [link('Mark Complete')] }, ...completeAnswers },
				heads: ['Get Token'],
			});
		const { answers, runs } = await provideNodePath({ id: 'tb_a' }, build);
		const refusedBy = runs.map((run) => run.data.resultData.error?.message?.slice(0, 160) ?? null);
		expect({ answers, charges: effectsAt('charge', 'tb_a'), key: await nodeKey('evt:tb_a'), refusedBy }).toEqual({
			answers: [200],
			charges: 1,
			key: 'completed',
			refusedBy: [null],
		});
	});

	// An Execute Once node after the effect with one event per delivery (no Split Out): nothing to join.
	it('node path: Reserve → Charge → No Operation (Execute Once) → Notify (Execute Once) → Complete, one event: charged once, completed', async () => {
		useNodePath('wf-rt34-once-after-one');
		const build = () =>
			nodeTemplate({
				nodes: [
					charge(),
					node('Once', 'noOp', 1, {}, { executeOnce: true }),
					httpCall('Notify', 'notify', { executeOnce: true }, RESERVED_ID),
					completeNode(),
				],
				connections: {
					Charge: { main: [link('Once')] },
					Once: { main: [link('Notify')] },
					Notify: { main: [link('Mark Complete')] },
					...completeAnswers,
				},
				heads: ['Charge'],
			});
		const { answers, runs } = await provideNodePath({ id: 'oa_a' }, build);
		const refusedBy = runs.map((run) => run.data.resultData.error?.message?.slice(0, 160) ?? null);
		expect({ answers, charges: effectsAt('charge', 'oa_a'), key: await nodeKey('evt:oa_a'), refusedBy }).toEqual({
			answers: [200],
			charges: 1,
			key: 'completed',
			refusedBy: [null],
		});
	});

	// Trigger, one event (no Events Path): Charge → Notify (Execute Once). Must publish and charge once.
	it('trigger, one event: Charge → Notify (Execute Once): published, charged once', async () => {
		useTrigger('wf-rt34-trigger-once-one');
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', {}, CHARGE_BODY),
				httpCall('Notify', 'notify', { executeOnce: true }, '={{ JSON.stringify({ id: $("Webhook").item.json.body.id }) }}'),
			],
			connections: { Charge: { main: [link('Notify')] } },
			heads: ['Charge'],
		};
		const refusal = await refusedAtPublish(step);
		const { answers } = await provide({ id: 'to_a' }, step);
		expect({ refusal, answers, charges: effectsAt('charge', 'to_a'), keys: await statuses(['to_a']) }).toEqual({
			refusal: false,
			answers: [200],
			charges: 1,
			keys: ['completed'],
		});
	});

	// Trigger, Events Path [A, B]: Get Token (Execute Once) beside the events → Merge (combine: all combinations) →
	// Charge (error output). The token call comes before every charge: must publish, one charge each.
	it('trigger, Events [A, B]: [Get Token (Execute Once), events] → Merge (all combinations) → Charge (error output): published, one charge each', async () => {
		useTrigger('wf-rt34-trigger-token', EVENTS);
		const step: Step = {
			nodes: [
				httpCall('Get Token', 'token', { executeOnce: true, onError: 'continueErrorOutput' }, '={{ JSON.stringify({ id: "t" }) }}'),
				node('With Token', 'merge', 3.2, { mode: 'combine', combineBy: 'combineAll', options: {} }),
				httpCall('Charge', 'charge', ERROR_OUTPUT, CHARGE_BODY),
			],
			connections: {
				Webhook: {
					main: [
						[
							{ node: 'With Token', type: 'main', index: 0 },
							{ node: 'Get Token', type: 'main', index: 0 },
						],
					],
				},
				'Get Token': { main: [[{ node: 'With Token', type: 'main', index: 1 }], []] },
				'With Token': { main: [link('Charge')] },
				Charge: { main: [[], []] },
			} as IConnections,
			heads: [],
		};
		const refusal = await refusedAtPublish(step);
		const { answers } = await provide(events([{ id: 'tt_a' }, { id: 'tt_b' }]), step);
		expect({ refusal, answers, charges: [effectsAt('charge', 'tt_a'), effectsAt('charge', 'tt_b')] }).toEqual({
			refusal: false,
			answers: [200],
			charges: [1, 1],
		});
	});

	/* (3) Always Output Data + Continue (using error output) -------------------------------------------------------- */

	// The effect itself at Always Output Data + error output, its success output leading only to Complete (no node that
	// may act): must not be refused; a failure goes to Mark Failed, the retry charges once.
	it('node path: Charge (Always Output Data, error output → Mark Failed) → Complete, failing once: charged once, completed', async () => {
		useNodePath('wf-rt34-aod-complete');
		failNext('charge:ac_a');
		const build = () =>
			nodeTemplate({
				nodes: [charge({ ...ERROR_OUTPUT, alwaysOutputData: true }), completeNode(), markFailedNode()],
				connections: {
					Charge: { main: [link('Mark Complete'), link('Mark Failed')] },
					'Mark Failed': { main: [link('Respond 500 (provider retries)'), []] },
					...completeAnswers,
				},
				heads: ['Charge'],
			});
		const { answers, runs } = await provideNodePath({ id: 'ac_a' }, build);
		const refusedBy = runs.map((run) => run.data.resultData.error?.message?.slice(0, 160) ?? null);
		expect({ answers, charges: effectsAt('charge', 'ac_a'), key: await nodeKey('evt:ac_a'), refusedBy }).toEqual({
			answers: [500, 200],
			charges: 1,
			key: 'completed',
			refusedBy: [expect.stringContaining('failed for this event earlier in this execution'), null],
		});
	});

	// Trigger: Lookup (Always Output Data, error output unconnected) → success → Edit Fields only (nothing that may act).
	it('trigger: Lookup (Always Output Data, error output) → Edit Fields, no effect after: published', async () => {
		useTrigger('wf-rt34-aod-trigger');
		const step: Step = {
			nodes: [
				httpCall('Lookup', 'lookup', { ...ERROR_OUTPUT, alwaysOutputData: true }, CHARGE_BODY),
				node('Shape', 'set', 3.4, { mode: 'manual', assignments: { assignments: [] }, options: {} }),
			],
			connections: { Lookup: { main: [link('Shape'), []] } },
			heads: ['Lookup'],
		};
		expect(await refusedAtPublish(step)).toBe(false);
	});

	// Trigger: the same Lookup inside a sub-workflow defined in Execute Workflow (Define Below), Charge after its
	// success output. When the lookup fails, n8n gives the success output one empty item and Charge runs as if it had
	// succeeded. Refused at publish outside a sub-workflow; inside one?
	it('trigger: sub-workflow (Define Below): Lookup (Always Output Data, error output) → Charge: refused at publish as outside', async () => {
		useTrigger('wf-rt34-aod-sub');
		const sub = JSON.stringify({
			nodes: [
				node('Webhook', 'executeWorkflowTrigger', 1.1, { inputSource: 'passthrough' }),
				httpCall('Lookup', 'lookup', { ...ERROR_OUTPUT, alwaysOutputData: true }, CHARGE_BODY),
				httpCall('Charge', 'charge', {}, CHARGE_BODY),
			],
			connections: { Webhook: { main: [link('Lookup')] }, Lookup: { main: [link('Charge'), []] } },
		});
		const step: Step = {
			nodes: [node('Billing', 'executeWorkflow', 1.3, { source: 'parameter', workflowJson: sub, options: { waitForSubWorkflow: true } })],
			heads: ['Billing'],
		};
		const outside: Step = {
			nodes: [
				httpCall('Lookup', 'lookup', { ...ERROR_OUTPUT, alwaysOutputData: true }, CHARGE_BODY),
				httpCall('Charge', 'charge', {}, CHARGE_BODY),
			],
			connections: { Lookup: { main: [link('Charge'), []] } },
			heads: ['Lookup'],
		};
		const refusedOutside = await refusedAtPublish(outside);
		const refusedInside = await refusedAtPublish(step);
		expect({
			outside: names(refusedOutside, 'Always Output Data'),
			inside: names(refusedInside, 'Always Output Data') || refusedInside,
		}).toEqual({
			outside: true,
			inside: true,
		});
	});

	// The same sub-workflow at run time (a workflow published before the check): the trigger's first step refuses it
	// before the sub-workflow runs. Run, the lookup failing once would give Lookup's success output one empty item,
	// Charge would charge with it, the key would fail, and the retry would charge again.
	it('trigger: sub-workflow (Define Below): Lookup (Always Output Data, error output) → Charge, run: refused before the step, nothing charged', async () => {
		useTrigger('wf-rt34-aod-sub-run');
		const sub = JSON.stringify({
			nodes: [
				node('Webhook', 'executeWorkflowTrigger', 1.1, { inputSource: 'passthrough' }),
				httpCall('Lookup', 'lookup', { ...ERROR_OUTPUT, alwaysOutputData: true }, CHARGE_BODY),
				httpCall('Charge', 'charge', {}, '={{ JSON.stringify({ id: $("Webhook").item.json.body.id }) }}'),
			],
			connections: { Webhook: { main: [link('Lookup')] }, Lookup: { main: [link('Charge')] } },
		});
		const step: Step = {
			nodes: [node('Billing', 'executeWorkflow', 1.3, { source: 'parameter', workflowJson: sub, options: { waitForSubWorkflow: true } })],
			heads: ['Billing'],
		};
		failNext('lookup:sr_a');
		const { answers, runs } = await provide({ id: 'sr_a' }, step);
		expect({
			refused: /"Billing" → "Lookup" is set to Always Output Data/.test(runs[0]?.data.resultData.error?.message ?? ''),
			answers,
			charges: effectsAt('charge', 'sr_a'),
			keys: await statuses(['sr_a']),
		}).toEqual({ refused: true, answers: [500, 500, 500, 500], charges: 0, keys: ['failed'] });
	});
});
