import { type IConnections, type INode } from 'n8n-workflow';

import { describeWithN8n } from '../support/n8nBaseNodes';
import { webhookResponses } from '../support/n8nEngine';
import { link } from '../support/settleWorkflows';
import { baseNode as node, EVENTS, events, triggerRedTeam, type Step } from '../support/triggerRedTeam';

/*
 * Forty-third red-team pass, against commit 1c16d55: (1) the trigger's own signing secret kept out of the stored and
 * replayed answer and out of a failure message (storedAnswer.ts ownSecrets; IdempotentWebhook triggerCredentials;
 * decide.ts ownSecretsOf); (2) a sub-workflow run once for all the events (Execute Workflow, Define Below) whose
 * sub-execution record n8n did not save: its pairing unknown (trace.ts subWorkflowPairingUnknown), a failure after it
 * fails every key. n8n 2.41.1's request path, publish check, engine and nodes in-process; the embedded store; the
 * effect is n8n's HTTP Request calling a local API that counts what it committed per event. The provider re-delivers
 * the same signed request until answered 2xx. A row that fails breaks a promise.
 */

const SECRET = 'whsec_rt43';

/** Which sub-executions' records are gone when Execute Workflow (or the package) reads them, by the nodes they ran. */
let dropRecord: (nodes: string[]) => boolean = () => false;

describeWithN8n('red team 43: own secrets in answers and messages; sub-workflow records missing', () => {
	const { effectsAt, failNext, httpCall, keyRows, postStripe, provide, refusedAtPublish, statuses, useTrigger } = triggerRedTeam({
		tag: 'rt43',
		route: (route, body, id) => {
			if (route === 'lookup') return { id, customer: `cus_${id}`, amount: body.amount };
			// A provisioning API answering the endpoint it configured, with its signing secret in several written forms.
			if (route === 'endpoint')
				return {
					id: 'we_rt43',
					status: 'enabled',
					form: String(body.form ?? ''),
					...(body.form === 'raw' ? { secret: SECRET } : {}),
					...(body.form === 'name' ? { secrets: { [SECRET]: 'active' } } : {}),
					...(body.form === 'nested' ? { log: JSON.stringify({ body: JSON.stringify({ secret: SECRET }) }) } : {}),
					...(body.form === 'url' ? { url: `https://example.test/hook?secret=${SECRET}` } : {}),
					...(body.form === 'base64' ? { secretBase64: Buffer.from(SECRET).toString('base64') } : {}),
					...(body.form === 'upper' ? { secretShown: SECRET.toUpperCase() } : {}),
				};
			return undefined;
		},
		engine: (engine) => {
			const reader = engine as unknown as { getRunExecutionData: (id: string) => Promise<unknown> };
			const read = reader.getRunExecutionData.bind(reader);
			reader.getRunExecutionData = async (id: string) => {
				const record = (await read(id)) as { resultData?: { runData?: Record<string, unknown> } } | undefined;
				return record && dropRecord(Object.keys(record.resultData?.runData ?? {})) ? undefined : record;
			};
			return engine;
		},
		baseNodeFiles: {
			'n8n-nodes-base.sort': 'Transform/Sort/Sort.node.js',
			'n8n-nodes-base.filter': 'Filter/Filter.node.js',
			'n8n-nodes-base.stopAndError': 'StopAndError/StopAndError.node.js',
			'n8n-nodes-base.executeWorkflowTrigger': 'ExecuteWorkflow/ExecuteWorkflowTrigger/ExecuteWorkflowTrigger.node.js',
		},
	});

	afterEach(() => {
		dropRecord = () => false;
	});

	const ERROR_OUTPUT: Partial<INode> = { onError: 'continueErrorOutput' };
	const LOOKUP_BODY = '={{ JSON.stringify({ id: $json.body.id, amount: $json.body.amount }) }}';
	const CHARGE_FROM_ANSWER = '={{ JSON.stringify({ id: $json.id }) }}';

	/* (1) The trigger's own signing secret ---------------------------------------------------------------------------- */

	/** Charge → Get Endpoint (the API answers with the signing secret in `form`) as the last node. */
	const endpointLast = (form: string): Step => ({
		nodes: [
			httpCall('Charge', 'charge'),
			httpCall('Get Endpoint', 'endpoint', {}, `={{ JSON.stringify({ id: "we_rt43", form: "${form}" }) }}`),
		],
		connections: { Charge: { main: [link('Get Endpoint')] } },
		heads: ['Charge'],
	});

	/** Stores the answer, replays it to a copy: whether the stored text and the replayed body carry `forms`. */
	const storedAndReplayed = async (id: string, step: Step, forms: string[]) => {
		const refusal = await refusedAtPublish(step);
		const before = new Set(webhookResponses.keys());
		const { answers } = await provide({ id }, step);
		const sent = [...webhookResponses.entries()]
			.filter(([execution]) => !before.has(execution))
			.map(([, responses]) => JSON.stringify(responses))
			.join('\n');
		const copy = await postStripe(JSON.stringify({ id }));
		const replayed = await copy.text();
		const stored = keyRows()
			.map((row) => `${row.response ?? ''}\n${row.last_error ?? ''}`)
			.join('\n');
		return {
			refusal,
			answers,
			charges: effectsAt('charge', id),
			keys: await statuses([id]),
			storedHasAnswer: stored.includes('we_rt43'),
			sentHasAnswer: sent.includes('we_rt43'),
			sentForms: forms.filter((form) => sent.includes(form)),
			storedForms: forms.filter((form) => stored.includes(form)),
			replayStatus: copy.status,
			replayedForms: forms.filter((form) => replayed.includes(form)),
		};
	};
	const KEPT_CLEAN = {
		refusal: false,
		answers: [200],
		charges: 1,
		keys: ['completed'],
		storedHasAnswer: true,
		sentHasAnswer: true,
		sentForms: [],
		storedForms: [],
		replayStatus: 200,
		replayedForms: [],
	};

	for (const form of ['raw', 'name', 'nested', 'url']) {
		it(`control: the signing secret in the last node's answer (${form}): neither stored nor replayed`, async () => {
			useTrigger(`wf-rt43-secret-${form}`);
			expect(await storedAndReplayed(`sec_${form}`, endpointLast(form), [SECRET])).toEqual(KEPT_CLEAN);
		});
	}

	it("the signing secret base64-encoded in the last node's answer: neither stored nor replayed", async () => {
		useTrigger('wf-rt43-secret-base64');
		const encoded = Buffer.from(SECRET).toString('base64');
		expect(await storedAndReplayed('sec_base64', endpointLast('base64'), [encoded])).toEqual(KEPT_CLEAN);
	});

	it("the signing secret upper-cased in the last node's answer: neither stored nor replayed", async () => {
		useTrigger('wf-rt43-secret-upper');
		expect(await storedAndReplayed('sec_upper', endpointLast('upper'), [SECRET.toUpperCase()])).toEqual(KEPT_CLEAN);
	});

	// A failure message (kept with the failed key, answered to the caller) built from the API's answer: Stop and Error
	// quoting the endpoint it read, the signing secret with it.
	it('Get Endpoint → Stop and Error quoting the answer (signing secret): not in the stored error nor in any answer sent', async () => {
		useTrigger('wf-rt43-secret-error');
		const step: Step = {
			nodes: [
				httpCall('Get Endpoint', 'endpoint', {}, '={{ JSON.stringify({ id: "we_rt43", form: "raw" }) }}'),
				node('Refuse', 'stopAndError', 1, {
					errorType: 'errorMessage',
					errorMessage: '={{ "endpoint misconfigured: " + JSON.stringify($json) }}',
				}),
			],
			connections: { 'Get Endpoint': { main: [link('Refuse')] } },
			heads: ['Get Endpoint'],
		};
		const refusal = await refusedAtPublish(step);
		const { answers } = await provide({ id: 'sec_err' }, step, 2);
		const rows = keyRows();
		const sent = [...webhookResponses.entries()]
			.filter(([id]) => id.startsWith('rt43-'))
			.map(([, responses]) => JSON.stringify(responses))
			.join('\n');
		expect({
			refusal,
			answers,
			keys: await statuses(['sec_err']),
			errorKept: rows.some((row) => (row.last_error ?? '').includes('endpoint misconfigured')),
			errorHasSecret: rows.some((row) => `${row.last_error ?? ''}${row.response ?? ''}`.includes(SECRET)),
			sentHasSecret: sent.includes(SECRET),
		}).toEqual({ refusal: false, answers: [500, 500], keys: ['failed'], errorKept: true, errorHasSecret: false, sentHasSecret: false });
	});

	/* (2) Sub-workflows run once for all the events, their records missing --------------------------------------------- */

	const sortThenLookup = (saveSuccess: 'all' | 'none') =>
		JSON.stringify({
			nodes: [
				node('Webhook', 'executeWorkflowTrigger', 1.1, { inputSource: 'passthrough' }),
				node('By Amount', 'sort', 1, { sortFieldsUi: { sortField: [{ fieldName: 'body.amount', order: 'ascending' }] }, options: {} }),
				httpCall('Lookup', 'lookup', ERROR_OUTPUT, LOOKUP_BODY),
			],
			connections: { Webhook: { main: [link('By Amount')] }, 'By Amount': { main: [link('Lookup')] }, Lookup: { main: [[], []] } },
			settings: { saveDataSuccessExecution: saveSuccess },
		});
	const filterThenLookup = () =>
		JSON.stringify({
			nodes: [
				node('Webhook', 'executeWorkflowTrigger', 1.1, { inputSource: 'passthrough' }),
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
				httpCall('Lookup', 'lookup', ERROR_OUTPUT, LOOKUP_BODY),
			],
			connections: { Webhook: { main: [link('Valid Only')] }, 'Valid Only': { main: [link('Lookup')] }, Lookup: { main: [[], []] } },
			settings: { saveDataSuccessExecution: 'none' },
		});
	/** An Execute Workflow node (1.3, Define Below) running `sub`. */
	const executeWorkflow = (name: string, sub: string, mode: 'once' | 'each' = 'once', wait = true): INode =>
		node(
			name,
			'executeWorkflow',
			1.3,
			{ source: 'parameter', workflowJson: sub, mode, options: { waitForSubWorkflow: wait } },
			{ onError: 'continueRegularOutput' },
		);
	/** Events → Enrich → Charge (error output, unconnected) with `chargeBody`. */
	const enrichThenCharge = (enrich: INode, chargeBody = CHARGE_FROM_ANSWER): Step => ({
		nodes: [enrich, httpCall('Charge', 'charge', ERROR_OUTPUT, chargeBody)],
		connections: { [enrich.name]: { main: [link('Charge')] }, Charge: { main: [[], []] } } as IConnections,
		heads: [enrich.name],
	});
	const dropAll = () => {
		dropRecord = () => true;
	};

	it('ONE event → Enrich (once; sub: Sort → Lookup; no record) → Charge failing once: charged once, completed', async () => {
		useTrigger('wf-rt43-one', EVENTS);
		const step = enrichThenCharge(executeWorkflow('Enrich', sortThenLookup('none')));
		const refusal = await refusedAtPublish(step);
		dropAll();
		failNext('charge:one_a');
		const { answers } = await provide(events([{ id: 'one_a', amount: 300 }]), step);
		expect({ refusal, answers, charges: effectsAt('charge', 'one_a'), keys: await statuses(['one_a']) }).toEqual({
			refusal: false,
			answers: [500, 200],
			charges: 1,
			keys: ['completed'],
		});
	});

	it('[A 300, B 100] → Enrich (once; sub: Sort → Lookup; no record) → Charge, NOTHING failing: one charge each, both completed, one run', async () => {
		useTrigger('wf-rt43-clean', EVENTS);
		const step = enrichThenCharge(executeWorkflow('Enrich', sortThenLookup('none')));
		const refusal = await refusedAtPublish(step);
		dropAll();
		const { answers } = await provide(
			events([
				{ id: 'cl_a', amount: 300 },
				{ id: 'cl_b', amount: 100 },
			]),
			step,
		);
		expect({
			refusal,
			answers,
			charges: [effectsAt('charge', 'cl_a'), effectsAt('charge', 'cl_b')],
			keys: await statuses(['cl_a', 'cl_b']),
		}).toEqual({ refusal: false, answers: [200], charges: [1, 1], keys: ['completed', 'completed'] });
	});

	it('[A invalid, B valid] → Enrich (once; sub: Filter → Lookup; no record) → Charge, NOTHING failing: B charged, A never, both completed', async () => {
		useTrigger('wf-rt43-clean-filter', EVENTS);
		const step = enrichThenCharge(executeWorkflow('Enrich', filterThenLookup()));
		const refusal = await refusedAtPublish(step);
		dropAll();
		const { answers } = await provide(
			events([
				{ id: 'cf_a', amount: 300, valid: false },
				{ id: 'cf_b', amount: 100, valid: true },
			]),
			step,
		);
		expect({
			refusal,
			answers,
			charges: [effectsAt('charge', 'cf_a'), effectsAt('charge', 'cf_b')],
			keys: await statuses(['cf_a', 'cf_b']),
		}).toEqual({ refusal: false, answers: [200], charges: [0, 1], keys: ['completed', 'completed'] });
	});

	// Nested: the parent's Enrich runs an outer sub-workflow (record kept) whose own Execute Workflow runs the inner
	// Sort → Lookup (record not saved). Inside the outer sub-execution n8n leaves the inner Lookup's pairedItem ({ item: 0 }
	// for B's answer, B sorted first), read there as the outer trigger's item 0 (A); the parent's Enrich re-pairs through
	// the outer record, which is there: B's answer paired to A in the parent.
	for (const [label, drop] of [
		['control: both records kept', () => false],
		['inner record missing, outer kept', (nodes: string[]) => nodes.includes('By Amount')],
		['both records missing', () => true],
	] as const) {
		it(`[A 300, B 100] → Enrich (once; outer sub → Inner (once; sub: Sort → Lookup)) → Charge failing once for B, ${label}: one charge each, none lost`, async () => {
			const tag = label.startsWith('inner') ? 'ni' : label.startsWith('control') ? 'nk' : 'nb';
			useTrigger(`wf-rt43-nested-${tag}`, EVENTS);
			const outer = JSON.stringify({
				nodes: [
					node('Webhook', 'executeWorkflowTrigger', 1.1, { inputSource: 'passthrough' }),
					executeWorkflow('Inner', sortThenLookup('none')),
				],
				connections: { Webhook: { main: [link('Inner')] } },
				settings: { saveDataSuccessExecution: 'all' },
			});
			const step = enrichThenCharge(executeWorkflow('Enrich', outer));
			const refusal = await refusedAtPublish(step);
			dropRecord = drop;
			failNext(`charge:${tag}_b`);
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
				// The documented limit (docs/templates.md) where the pairing is unknown: A's charge, done before B's failed,
				// runs again with the retry ([2, 1]); with the pairing known, [1, 1]. B's charge is never lost.
			}).toEqual({
				refusal: false,
				answers: [500, 200],
				charges: tag === 'nk' ? [1, 1] : [2, 1],
				keys: ['completed', 'completed'],
			});
		});
	}

	it('[A 300, B 100] → Enrich (EACH item; sub: Sort → Lookup; no record) → Charge failing once for B: one charge each', async () => {
		useTrigger('wf-rt43-each', EVENTS);
		const step = enrichThenCharge(executeWorkflow('Enrich', sortThenLookup('none'), 'each'));
		const refusal = await refusedAtPublish(step);
		dropAll();
		failNext('charge:ea_b');
		const { answers } = await provide(
			events([
				{ id: 'ea_a', amount: 300 },
				{ id: 'ea_b', amount: 100 },
			]),
			step,
		);
		expect({
			refusal,
			answers,
			charges: [effectsAt('charge', 'ea_a'), effectsAt('charge', 'ea_b')],
			keys: await statuses(['ea_a', 'ea_b']),
		}).toEqual({ refusal: false, answers: [500, 200], charges: [1, 1], keys: ['completed', 'completed'] });
	});

	// A sub-workflow not waited for: its failure never reaches the execution; the publish check refuses the shape.
	it('Enrich (once, NOT waiting; sub: Sort → Lookup) → Charge: refused at publish', async () => {
		useTrigger('wf-rt43-nowait', EVENTS);
		const step = enrichThenCharge(
			executeWorkflow('Enrich', sortThenLookup('none'), 'once', false),
			'={{ JSON.stringify({ id: $json.body.id }) }}',
		);
		expect(await refusedAtPublish(step)).toMatch(/"Enrich" may start a sub-workflow without waiting for it/);
	});

	// Nested, the inner record missing, nothing failing: both events completed (none failed or held), one charge each.
	it('[A 300, B 100] → Enrich (once; outer sub → Inner (once; Sort → Lookup), inner record missing) → Charge, NOTHING failing: both completed', async () => {
		useTrigger('wf-rt43-nested-clean', EVENTS);
		const outer = JSON.stringify({
			nodes: [
				node('Webhook', 'executeWorkflowTrigger', 1.1, { inputSource: 'passthrough' }),
				executeWorkflow('Inner', sortThenLookup('none')),
			],
			connections: { Webhook: { main: [link('Inner')] } },
			settings: { saveDataSuccessExecution: 'all' },
		});
		const step = enrichThenCharge(executeWorkflow('Enrich', outer));
		const refusal = await refusedAtPublish(step);
		dropRecord = (nodes) => nodes.includes('By Amount');
		const { answers } = await provide(
			events([
				{ id: 'nc_a', amount: 300 },
				{ id: 'nc_b', amount: 100 },
			]),
			step,
		);
		expect({
			refusal,
			answers,
			charges: [effectsAt('charge', 'nc_a'), effectsAt('charge', 'nc_b')],
			keys: await statuses(['nc_a', 'nc_b']),
		}).toEqual({ refusal: false, answers: [200], charges: [1, 1], keys: ['completed', 'completed'] });
	});

	// Nested, the charge INSIDE the outer sub-workflow after the inner one (error output, unconnected), failing once for B:
	// the failure is read through the outer sub-execution's record, whose Inner node carries the inner Lookup's guessed
	// pairing: unknown, so every key fails (the documented limit: A's charge runs again with the retry), none lost.
	it('[A 300, B 100] → Enrich (once; outer sub: Inner (once; Sort → Lookup, record missing) → Charge failing once for B): none lost, A charged again', async () => {
		useTrigger('wf-rt43-nested-inside', EVENTS);
		const outer = JSON.stringify({
			nodes: [
				node('Webhook', 'executeWorkflowTrigger', 1.1, { inputSource: 'passthrough' }),
				executeWorkflow('Inner', sortThenLookup('none')),
				httpCall('Charge', 'charge', ERROR_OUTPUT, CHARGE_FROM_ANSWER),
			],
			connections: { Webhook: { main: [link('Inner')] }, Inner: { main: [link('Charge')] }, Charge: { main: [[], []] } },
			settings: { saveDataSuccessExecution: 'all' },
		});
		const step: Step = { nodes: [executeWorkflow('Enrich', outer)], heads: ['Enrich'] };
		const refusal = await refusedAtPublish(step);
		dropRecord = (nodes) => nodes.includes('By Amount');
		failNext('charge:ns_b');
		const { answers } = await provide(
			events([
				{ id: 'ns_a', amount: 300 },
				{ id: 'ns_b', amount: 100 },
			]),
			step,
		);
		expect({
			refusal,
			answers,
			charges: [effectsAt('charge', 'ns_a'), effectsAt('charge', 'ns_b')],
			keys: await statuses(['ns_a', 'ns_b']),
		}).toEqual({ refusal: false, answers: [500, 200], charges: [2, 1], keys: ['completed', 'completed'] });
	});
});
