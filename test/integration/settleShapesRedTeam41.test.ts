import { type IConnections, type INode } from 'n8n-workflow';

import { describeWithN8n } from '../support/n8nBaseNodes';
import { link } from '../support/settleWorkflows';
import { baseNode as node, EVENTS, events, triggerRedTeam, type Step } from '../support/triggerRedTeam';

/*
 * Forty-first red-team pass: the Idempotent Webhook trigger (Events Path) in front of a shared "enrich" sub-workflow
 * called by Execute Workflow "Run Once With All Items" (Define Below) that re-orders or drops the events before it
 * returns the API's answers, the charge in the parent after it, at Continue (using error output). n8n's Execute
 * Workflow node (1.3) re-pairs the returned items to its own input through the sub-execution's record
 * (getExecutionDataById → findPairedItemThroughWorkflowData); when that record is not there, as when the sub-workflow
 * (or the instance, EXECUTIONS_DATA_SAVE_ON_SUCCESS=none) does not save successful executions (n8n's
 * hookFunctionsSave deletes the sub-execution in its workflowExecuteAfter hook, before the parent node reads it), the
 * node keeps the sub-workflow's last node's own pairedItem, which indexes the sub-workflow's node, not the parent's
 * input. Also: the trigger's own signing secret echoed by the last node's API answer (the stored, replayed answer).
 * n8n 2.41.1's request path, publish check, engine and nodes in-process; the embedded store; the effect is n8n's HTTP
 * Request calling a local API that counts what it committed per event. The provider re-delivers the same signed
 * request until answered 2xx. A row that fails breaks a promise.
 */

/** Whether the sub-executions' records are there for getExecutionDataById (false: "Do not save" successful executions). */
let subRecordsSaved = true;

describeWithN8n('red team 41: Execute Workflow (once) re-pairing through a sub-execution record, the signing secret in the answer', () => {
	const { effectsAt, failNext, httpCall, keyRows, postStripe, provide, refusedAtPublish, statuses, useTrigger } = triggerRedTeam({
		tag: 'rt41',
		route: (route, body, id) => {
			if (route === 'lookup') return { id, customer: `cus_${id}`, amount: body.amount };
			// A provisioning API answering the endpoint it configured, with its signing secret (as Stripe's
			// "create webhook endpoint" answers `secret`): here the very secret the trigger verifies with.
			if (route === 'endpoint') return { id: 'we_rt41', url: 'https://example.test/hook', secret: 'whsec_rt41', status: 'enabled' };
			return undefined;
		},
		engine: (engine) => {
			const reader = engine as unknown as { getRunExecutionData: (id: string) => Promise<unknown> };
			const read = reader.getRunExecutionData.bind(reader);
			reader.getRunExecutionData = async (id: string) => (subRecordsSaved ? await read(id) : undefined);
			return engine;
		},
		baseNodeFiles: {
			'n8n-nodes-base.sort': 'Transform/Sort/Sort.node.js',
			'n8n-nodes-base.filter': 'Filter/Filter.node.js',
			'n8n-nodes-base.executeWorkflowTrigger': 'ExecuteWorkflow/ExecuteWorkflowTrigger/ExecuteWorkflowTrigger.node.js',
		},
	});

	afterEach(() => {
		subRecordsSaved = true;
	});

	const dump = (label: string, runs: Array<{ data: { resultData: { error?: unknown; runData: Record<string, unknown> } } }>) => {
		if (process.env.RT41_DUMP)
			process.stderr.write(
				`RT41 ${label}: ${JSON.stringify(
					runs.map((run) => ({ error: run.data.resultData.error, runData: run.data.resultData.runData })),
					null,
					1,
				).slice(0, 6000)}\n`,
			);
	};
	const ERROR_OUTPUT: Partial<INode> = { onError: 'continueErrorOutput' };
	const LOOKUP_BODY = '={{ JSON.stringify({ id: $json.body.id, amount: $json.body.amount }) }}';
	const CHARGE_FROM_ANSWER = '={{ JSON.stringify({ id: $json.id }) }}';

	/** The "enrich" sub-workflow: Execute Workflow Trigger (all input data; named Webhook, where the harness starts a run) → [shape] → Lookup (HTTP, one call per event). */
	const enrichSub = (shape: 'sort' | 'filter' | 'plain', saveSuccess: 'all' | 'none', lookup = true) => {
		const shaping: INode[] =
			shape === 'sort'
				? [node('By Amount', 'sort', 1, { sortFieldsUi: { sortField: [{ fieldName: 'body.amount', order: 'ascending' }] }, options: {} })]
				: shape === 'filter'
					? [
							node('Valid Only', 'filter', 2.2, {
								conditions: {
									options: { caseSensitive: true, leftValue: '', typeValidation: 'loose', version: 2 },
									conditions: [
										{
											id: 'v',
											leftValue: '={{ $json.body.valid }}',
											rightValue: '',
											operator: { type: 'boolean', operation: 'true', singleValue: true },
										},
									],
									combinator: 'and',
								},
								looseTypeValidation: true,
								options: {},
							}),
						]
					: [];
		const first = shaping[0]?.name ?? 'Lookup';
		return JSON.stringify({
			nodes: [
				node('Webhook', 'executeWorkflowTrigger', 1.1, { inputSource: 'passthrough' }),
				...shaping,
				...(lookup ? [httpCall('Lookup', 'lookup', ERROR_OUTPUT, LOOKUP_BODY)] : []),
			],
			connections: {
				Webhook: { main: [link(first)] },
				...(shaping[0] && lookup ? { [shaping[0].name]: { main: [link('Lookup')] } } : {}),
				...(lookup ? { Lookup: { main: [[], []] } } : {}),
			},
			settings: { saveDataSuccessExecution: saveSuccess },
		});
	};

	/** Events → Enrich (Execute Workflow, once, waits, at Continue (regular output) as the publish check asks) → Charge (error output, unconnected) with the id of the API's answer. */
	const enrichThenCharge = (sub: string): Step => ({
		nodes: [
			node(
				'Enrich',
				'executeWorkflow',
				1.3,
				{ source: 'parameter', workflowJson: sub, mode: 'once', options: { waitForSubWorkflow: true } },
				{
					onError: 'continueRegularOutput',
				},
			),
			httpCall('Charge', 'charge', ERROR_OUTPUT, CHARGE_FROM_ANSWER),
		],
		connections: { Enrich: { main: [link('Charge')] }, Charge: { main: [[], []] } } as IConnections,
		heads: ['Enrich'],
	});

	/* (1) The sub-workflow sorts the events (by amount) before its lookup ------------------------------------------------ */

	// Control: the sub-execution's record is there; Execute Workflow follows the returned items back to its own input.
	it('Events [A 300, B 100] → Enrich (once; sub: Sort by amount → Lookup) → Charge (error output) failing once for B: one charge each', async () => {
		useTrigger('wf-rt41-sort-saved', EVENTS);
		const step = enrichThenCharge(enrichSub('sort', 'all'));
		const refusal = await refusedAtPublish(step);
		failNext('charge:ss_b');
		const { answers, runs } = await provide(
			events([
				{ id: 'ss_a', amount: 300 },
				{ id: 'ss_b', amount: 100 },
			]),
			step,
		);
		dump('ss', runs);
		expect({
			refusal,
			answers,
			charges: [effectsAt('charge', 'ss_a'), effectsAt('charge', 'ss_b')],
			keys: await statuses(['ss_a', 'ss_b']),
		}).toEqual({ refusal: false, answers: [500, 200], charges: [1, 1], keys: ['completed', 'completed'] });
	});

	// The same, the sub-workflow saving no successful execution (its record gone when Execute Workflow reads it). n8n's
	// Execute Workflow then leaves the Lookup's pairedItem ({ item: 0 } for B's answer, B sorted first) as the parent
	// item's own: read in the parent, B's answer is paired to A.
	// The package asked for the sub-execution's record and got none: the answers' pairing is unknown (trace.ts
	// subWorkflowPairingUnknown), so B's failed charge fails every key of the delivery and the retry runs both: none lost.
	it('the same, the sub-workflow saving no successful executions: every key failed and retried, none lost', async () => {
		useTrigger('wf-rt41-sort-unsaved', EVENTS);
		const step = enrichThenCharge(enrichSub('sort', 'none'));
		const refusal = await refusedAtPublish(step);
		subRecordsSaved = false;
		failNext('charge:su_b');
		const { answers } = await provide(
			events([
				{ id: 'su_a', amount: 300 },
				{ id: 'su_b', amount: 100 },
			]),
			step,
		);
		expect({
			refusal,
			answers,
			charges: [effectsAt('charge', 'su_a'), effectsAt('charge', 'su_b')],
			keys: await statuses(['su_a', 'su_b']),
			// The documented limit (docs/templates.md): A's charge, done before B's failed, runs again with the retry.
		}).toEqual({ refusal: false, answers: [500, 200], charges: [2, 1], keys: ['completed', 'completed'] });
	});

	// Control for the row above: no re-ordering in the sub-workflow, its record gone. The positions happen to agree, but
	// without the record the package cannot tell that from the row above: the same rule, every key failed and retried.
	it('control: sub without Sort (Lookup only), saving no successful executions, B failing once: every key retried, none lost', async () => {
		useTrigger('wf-rt41-plain-unsaved', EVENTS);
		const step = enrichThenCharge(enrichSub('plain', 'none'));
		const refusal = await refusedAtPublish(step);
		subRecordsSaved = false;
		failNext('charge:pu_b');
		const { answers } = await provide(
			events([
				{ id: 'pu_a', amount: 300 },
				{ id: 'pu_b', amount: 100 },
			]),
			step,
		);
		expect({
			refusal,
			answers,
			charges: [effectsAt('charge', 'pu_a'), effectsAt('charge', 'pu_b')],
			keys: await statuses(['pu_a', 'pu_b']),
			// The documented limit (docs/templates.md): A's charge, done before B's failed, runs again with the retry.
		}).toEqual({ refusal: false, answers: [500, 200], charges: [2, 1], keys: ['completed', 'completed'] });
	});

	// The sub-workflow returns the events themselves (Sort only), each still carrying its `idempotency` object: the key
	// each carries names its event whatever the pairing says (trace.ts contradictedBy), record or not.
	it('Events [A 300, B 100] → Enrich (once; sub: Sort by amount, returns the events) → Charge failing once for B, no record: one charge each', async () => {
		useTrigger('wf-rt41-sort-only-unsaved', EVENTS);
		const step: Step = {
			nodes: [
				node(
					'Enrich',
					'executeWorkflow',
					1.3,
					{ source: 'parameter', workflowJson: enrichSub('sort', 'none', false), mode: 'once', options: { waitForSubWorkflow: true } },
					{ onError: 'continueRegularOutput' },
				),
				httpCall('Charge', 'charge', ERROR_OUTPUT, '={{ JSON.stringify({ id: $json.body.id }) }}'),
			],
			connections: { Enrich: { main: [link('Charge')] }, Charge: { main: [[], []] } } as IConnections,
			heads: ['Enrich'],
		};
		const refusal = await refusedAtPublish(step);
		subRecordsSaved = false;
		failNext('charge:so_b');
		const { answers } = await provide(
			events([
				{ id: 'so_a', amount: 300 },
				{ id: 'so_b', amount: 100 },
			]),
			step,
		);
		expect({
			refusal,
			answers,
			charges: [effectsAt('charge', 'so_a'), effectsAt('charge', 'so_b')],
			keys: await statuses(['so_a', 'so_b']),
		}).toEqual({ refusal: false, answers: [500, 200], charges: [1, 1], keys: ['completed', 'completed'] });
	});

	// The failure inside the sub-workflow: its Lookup (error output, unconnected) fails once for B; A's answer comes back
	// and A is charged in the parent. Record there: B failed (read from the sub-execution), retried alone.
	for (const saved of [true, false]) {
		it(`Events [A 300, B 100] → Enrich (once; sub: Sort → Lookup failing once for B) → Charge, ${saved ? 'record kept' : 'no record'}: one lookup-and-charge each`, async () => {
			const tag = saved ? 'ls' : 'lu';
			useTrigger(`wf-rt41-lookup-fail-${tag}`, EVENTS);
			const step = enrichThenCharge(enrichSub('sort', saved ? 'all' : 'none'));
			const refusal = await refusedAtPublish(step);
			subRecordsSaved = saved;
			failNext(`lookup:${tag}_b`);
			const { answers } = await provide(
				events([
					{ id: `${tag}_a`, amount: 300 },
					{ id: `${tag}_b`, amount: 100 },
				]),
				step,
			);
			expect({
				refusal,
				answers,
				charges: [effectsAt('charge', `${tag}_a`), effectsAt('charge', `${tag}_b`)],
				keys: await statuses([`${tag}_a`, `${tag}_b`]),
			}).toEqual({ refusal: false, answers: [500, 200], charges: [1, 1], keys: ['completed', 'completed'] });
		});
	}

	/* (2) The sub-workflow drops invalid events (Filter) before its lookup ----------------------------------------------- */

	// A is invalid (dropped inside the sub-workflow: completed without a charge, the workflow's rule); B is charged and
	// fails once. Record there: B failed, retried alone, charged once.
	it('Events [A invalid, B valid] → Enrich (once; sub: Filter valid → Lookup) → Charge failing once for B: B charged once, A never', async () => {
		useTrigger('wf-rt41-filter-saved', EVENTS);
		const step = enrichThenCharge(enrichSub('filter', 'all'));
		const refusal = await refusedAtPublish(step);
		failNext('charge:fs_b');
		const { answers } = await provide(
			events([
				{ id: 'fs_a', amount: 300, valid: false },
				{ id: 'fs_b', amount: 100, valid: true },
			]),
			step,
		);
		expect({
			refusal,
			answers,
			charges: [effectsAt('charge', 'fs_a'), effectsAt('charge', 'fs_b')],
			keys: await statuses(['fs_a', 'fs_b']),
		}).toEqual({ refusal: false, answers: [500, 200], charges: [0, 1], keys: ['completed', 'completed'] });
	});

	// The same without the record: B's answer comes back paired { item: 0 } (the Filter's first output), read in the
	// parent as A. B's failed charge must not complete B.
	// Its pairing unknown without the record (trace.ts subWorkflowPairingUnknown), B's failure fails both keys; the retry
	// runs both: A filtered again, B charged.
	it('the same, the sub-workflow saving no successful executions: B charged once (not lost), A never', async () => {
		useTrigger('wf-rt41-filter-unsaved', EVENTS);
		const step = enrichThenCharge(enrichSub('filter', 'none'));
		const refusal = await refusedAtPublish(step);
		subRecordsSaved = false;
		failNext('charge:fu_b');
		const { answers } = await provide(
			events([
				{ id: 'fu_a', amount: 300, valid: false },
				{ id: 'fu_b', amount: 100, valid: true },
			]),
			step,
		);
		expect({
			refusal,
			answers,
			charges: [effectsAt('charge', 'fu_a'), effectsAt('charge', 'fu_b')],
			keys: await statuses(['fu_a', 'fu_b']),
		}).toEqual({ refusal: false, answers: [500, 200], charges: [0, 1], keys: ['completed', 'completed'] });
	});

	/* (3) The trigger's own signing secret in the last node's answer ----------------------------------------------------- */

	// The trigger's own secrets (signing secret, Header Auth value, Basic Auth password) are kept out of the stored
	// answer like the request's credentials (storedAnswer.ts secretsOf, ownSecrets).
	// Charge → Get Endpoint (the provisioning API answers the endpoint with its `secret`, the trigger's signing secret) as
	// the last node: the answer is stored with the key and replayed to every copy for the retention period.
	it('one event: Charge → Get Endpoint (answer carries the signing secret) as the last node: the secret neither stored nor replayed', async () => {
		useTrigger('wf-rt41-secret');
		const step: Step = {
			nodes: [httpCall('Charge', 'charge'), httpCall('Get Endpoint', 'endpoint', {}, '={{ JSON.stringify({ id: "we_rt41" }) }}')],
			connections: { Charge: { main: [link('Get Endpoint')] } },
			heads: ['Charge'],
		};
		const refusal = await refusedAtPublish(step);
		const body = { id: 'sec_a' };
		const { answers } = await provide(body, step);
		const copy = await postStripe(JSON.stringify(body));
		const replayed = await copy.text();
		const stored = keyRows()
			.map((row) => row.response ?? '')
			.join('\n');
		expect({
			refusal,
			answers,
			charges: effectsAt('charge', 'sec_a'),
			keys: await statuses(['sec_a']),
			storedHasAnswer: stored.includes('we_rt41'),
			storedHasSecret: stored.includes('whsec_rt41'),
			replayStatus: copy.status,
			replayedHasSecret: replayed.includes('whsec_rt41'),
		}).toEqual({
			refusal: false,
			answers: [200],
			charges: 1,
			keys: ['completed'],
			storedHasAnswer: true,
			storedHasSecret: false,
			replayStatus: 200,
			replayedHasSecret: false,
		});
	});
});
