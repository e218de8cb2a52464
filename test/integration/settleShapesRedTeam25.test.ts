import { withCodeRunner } from '../support/codeTaskRunner';
import { describeWithN8n } from '../support/n8nBaseNodes';
import { link, toInput } from '../support/settleWorkflows';
import { baseNode as node, CHARGE_BODY, EVENTS, events, triggerRedTeam, type Step } from '../support/triggerRedTeam';

/*
 * Twenty-fifth red-team pass: the Idempotent Webhook trigger (Events Path: several events per delivery) behind
 * n8n-nodes-base 2.41.1 nodes the earlier passes did not put after or around the effect: Sort in its "Code" type (a
 * comparator the user writes, run by n8n's task runner), HTTP Request's Batching with more than one item per batch,
 * Merge "Combine by Matching Fields" joining each event to a per-event lookup, Edit Fields in JSON mode rebuilding the
 * items after the charge, Summarize / Compare Datasets / HTML before the charge. n8n 2.41.1's request path (raw body
 * reader, parseBody, webhook() in n8n-core's WebhookContext), its publish check (checkExists/create on n8n-core's
 * HookContext), its engine (WorkflowExecute), the embedded store in the file's n8n folder. The effect is n8n's HTTP
 * Request calling a local test API that counts what it committed per event. The provider re-delivers the same signed
 * request until it is answered 2xx (at most 4 times). n8n's task runner (Code node, Sort's Code type) is stood in for
 * in-process: test/support/codeTaskRunner.ts, plus its "runCode" mode (what Sort uses) as js-task-runner.js runCode
 * runs it: the code in a fresh context with `items` (sent through the broker, so a copy), its error a task failure.
 * A row marked failing breaks a promise: its comment says what happens and how to reproduce it.
 */

const NOTIFY_BODY = '={{ JSON.stringify({ id: $json.id }) }}';

/*
 * n8n's task runner's "runCode" mode (js-task-runner.js runCode): what Sort's Code type and similar nodes send. The code
 * runs with `additionalProperties` as its globals (sent through the task broker: a JSON copy); a throw is the task's
 * failure ({ ok: false }), which the node turns into its own error (throwExecutionError).
 */
type RunnerTask = (...args: unknown[]) => Promise<unknown>;
const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor as new (
	...args: string[]
) => (...values: unknown[]) => Promise<unknown>;
function withRunCode<T extends object>(engine: T): T {
	const withRunner = withCodeRunner(engine as never) as unknown as { startRunnerTask: RunnerTask };
	const inner = withRunner.startRunnerTask;
	withRunner.startRunnerTask = async (...args: unknown[]) => {
		const settings = args[2] as { code: string; nodeMode: string; additionalProperties?: Record<string, unknown> };
		if (settings.nodeMode !== 'runCode') return await inner(...args);
		const globals = JSON.parse(JSON.stringify(settings.additionalProperties ?? {})) as Record<string, unknown>;
		const names = Object.keys(globals);
		try {
			const result = await new AsyncFunction(...names, settings.code)(...names.map((name) => globals[name]));
			return { ok: true, result };
		} catch (error) {
			return { ok: false, error: { message: (error as Error).message, stack: (error as Error).stack } };
		}
	};
	return engine;
}

/** Sort (1), Type Code: the comparator as a user writes it for "by customer" (localeCompare on the field). */
const sortByCustomerCode = (name = 'Sort By Customer') =>
	node(name, 'sort', 1, { type: 'code', code: 'return a.json.customer.localeCompare(b.json.customer);' });

describeWithN8n('red team 25: Sort (Code), Batching, Merge by fields, Edit Fields (JSON) around the effect, several events', () => {
	const { effectsAt, failNext, httpCall, provide, refusedAtPublish, statuses, useTrigger } = triggerRedTeam({
		tag: 'rt25',
		route: (route, body, id) =>
			route === 'lookup' ? { customer: body.customer, tier: body.customer === 'cus_gold' ? 'gold' : 'basic', lookedUpFor: id } : undefined,
		engine: withRunCode,
		baseNodeFiles: {
			'n8n-nodes-base.set': 'Set/Set.node.js',
			'n8n-nodes-base.sort': 'Transform/Sort/Sort.node.js',
			'n8n-nodes-base.code': 'Code/Code.node.js',
			'n8n-nodes-base.summarize': 'Transform/Summarize/Summarize.node.js',
			'n8n-nodes-base.splitOut': 'Transform/SplitOut/SplitOut.node.js',
			'n8n-nodes-base.aggregate': 'Transform/Aggregate/Aggregate.node.js',
			'n8n-nodes-base.compareDatasets': 'CompareDatasets/CompareDatasets.node.js',
			'n8n-nodes-base.filter': 'Filter/Filter.node.js',
			'n8n-nodes-base.limit': 'Transform/Limit/Limit.node.js',
		},
	});

	/* (1) Sort, Type Code, after the charge ------------------------------------------------------------------------- */

	const sortAfterCharge = (): Step => ({
		nodes: [
			httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_BODY),
			sortByCustomerCode(),
			httpCall('Notify', 'notify', { onError: 'continueErrorOutput' }, NOTIFY_BODY),
		],
		connections: {
			Charge: { main: [link('Sort By Customer'), []] },
			'Sort By Customer': { main: [link('Notify')] },
			Notify: { main: [[], []] },
		},
		heads: ['Charge'],
	});

	// "Charge each order, then notify customers in customer order": Charge (Continue, error output) → Sort, Type Code
	// (`return a.json.customer.localeCompare(b.json.customer);`) → Notify (Continue, error output). The Code type runs
	// the user's comparator, which n8n calls only with two items or more. Events [A with a customer, B a guest
	// checkout]: both charged, then the comparator throws (B has no customer) and Sort fails as a whole at Stop Workflow,
	// for both events, after both charges (seen while Sort counted as a node that cannot fail, whatever its Type:
	// accepted at publish, answers [500, 500, 500, 500], charges [4, 4]). Refused at publish naming Sort; a workflow
	// published before the check is refused at its first delivery, nothing charged.
	it('Events [A with customer, B guest] → Charge (error output) → Sort (Type: Code comparator) → Notify: refused at publish and at run time, nothing charged', async () => {
		useTrigger('wf-rt25-sort-code', EVENTS);
		const step = sortAfterCharge();
		const refusal = await refusedAtPublish(step);
		const { answers } = await provide(events([{ id: 'sc_a', customer: 'cus_1' }, { id: 'sc_b' }]), step, 2);
		expect({
			refused: typeof refusal === 'string' && refusal.includes('"Sort'),
			answers,
			charges: [effectsAt('charge', 'sc_a'), effectsAt('charge', 'sc_b')],
		}).toEqual({ refused: true, answers: [500, 500], charges: [0, 0] });
	});

	// Sort (Code) BEFORE the charge, reversing the events' order (by customer: B's sorts first). The runner sends back the
	// items without pairedItem; n8n pairs a node's output to its input by position when the counts match, so B's item
	// is paired to A's input. The items still carry their `idempotency` field. The charge failing once for B must fail
	// B's key only: one charge each.
	it('Events [A cus_z, B cus_a] → Sort (Code, reorders) → Charge (error output) failing once for B: one charge each', async () => {
		useTrigger('wf-rt25-sort-before', EVENTS);
		const step: Step = {
			nodes: [
				node('Sort By Customer', 'sort', 1, { type: 'code', code: 'return a.json.body.customer.localeCompare(b.json.body.customer);' }),
				httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_BODY),
			],
			connections: { 'Sort By Customer': { main: [link('Charge')] }, Charge: { main: [[], []] } },
			heads: ['Sort By Customer'],
		};
		const refusal = await refusedAtPublish(step);
		failNext('charge:sb_b');
		const { answers } = await provide(
			events([
				{ id: 'sb_a', customer: 'cus_z' },
				{ id: 'sb_b', customer: 'cus_a' },
			]),
			step,
		);
		expect({
			refusal,
			answers,
			charges: [effectsAt('charge', 'sb_a'), effectsAt('charge', 'sb_b')],
			keys: await statuses(['sb_a', 'sb_b']),
		}).toEqual({ refusal: false, answers: [500, 200], charges: [1, 1], keys: ['completed', 'completed'] });
	});

	/* (2) HTTP Request Batching with two items per batch ---------------------------------------------------------------- */

	// Options → Batching: 2 items per batch, 50 ms between batches (n8n sends a batch's requests together). Three events,
	// the charge at Continue (error output), B (in the first batch, beside A) failing once: one charge each.
	it('Events [A, B, C] → Charge (Batching 2 per batch, 50 ms; error output) failing once for B: one charge each', async () => {
		useTrigger('wf-rt25-batching', EVENTS);
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_BODY, {
					batching: { batch: { batchSize: 2, batchInterval: 50 } },
				}),
			],
			connections: { Charge: { main: [[], []] } },
			heads: ['Charge'],
		};
		const refusal = await refusedAtPublish(step);
		failNext('charge:bt_b');
		const { answers } = await provide(events([{ id: 'bt_a' }, { id: 'bt_b' }, { id: 'bt_c' }]), step);
		expect({
			refusal,
			answers,
			charges: [effectsAt('charge', 'bt_a'), effectsAt('charge', 'bt_b'), effectsAt('charge', 'bt_c')],
			keys: await statuses(['bt_a', 'bt_b', 'bt_c']),
		}).toEqual({ refusal: false, answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] });
	});

	/* (3) Merge "Combine by Matching Fields" joining each event to its lookup --------------------------------------- */

	// Events → Lookup (HTTP POST /lookup per event, Continue (error output)) → Merge input 2; events → Merge input 1;
	// Merge 3.2 Combine by Matching Fields (body.customer = customer, Keep Matches, Both Inputs, Include First Match Only)
	// → Charge (error output). A and B have the same customer: both events match the FIRST lookup (A's), so B's merged
	// item is paired to B (input 1) and to A's lookup (input 2). The charge failing once for B must fail B's key only.
	it('Events [A, B same customer] → per-event Lookup + events → Merge (by fields, first match) → Charge failing once for B: one charge each', async () => {
		useTrigger('wf-rt25-merge-fields', EVENTS);
		const step: Step = {
			nodes: [
				httpCall(
					'Lookup',
					'lookup',
					{ onError: 'continueErrorOutput' },
					'={{ JSON.stringify({ id: $json.body.id, customer: $json.body.customer }) }}',
					{},
					200,
				),
				node('Join Lookup', 'merge', 3.2, {
					mode: 'combine',
					fieldsToMatchString: 'body.customer',
					advanced: true,
					mergeByFields: { values: [{ field1: 'body.customer', field2: 'customer' }] },
					joinMode: 'keepMatches',
					outputDataFrom: 'both',
					options: { multipleMatches: 'first' },
				}),
				httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, '={{ JSON.stringify({ id: $json.body.id, tier: $json.tier }) }}'),
			],
			connections: {
				Webhook: { main: [[...link('Join Lookup'), ...link('Lookup')]] },
				Lookup: { main: [toInput('Join Lookup', 1), []] },
				'Join Lookup': { main: [link('Charge')] },
				Charge: { main: [[], []] },
			},
			heads: [],
		};
		const refusal = await refusedAtPublish(step);
		failNext('charge:mf_b');
		const { answers, runs } = await provide(
			events([
				{ id: 'mf_a', customer: 'cus_gold' },
				{ id: 'mf_b', customer: 'cus_gold' },
			]),
			step,
		);
		const firstCharge = runs[0]?.data.resultData.runData.Charge?.[0]?.data?.main ?? [];
		expect({
			refusal,
			answers,
			chargedInFirstRun: [(firstCharge[0] ?? []).length, (firstCharge[1] ?? []).length],
			charges: [effectsAt('charge', 'mf_a'), effectsAt('charge', 'mf_b')],
			keys: await statuses(['mf_a', 'mf_b']),
		}).toEqual({
			refusal: false,
			answers: [500, 200],
			chargedInFirstRun: [1, 1],
			charges: [1, 1],
			keys: ['completed', 'completed'],
		});
	});

	/* (4) Edit Fields in JSON mode rebuilding the items after the charge ------------------------------------------------ */

	// Charge (error output) → Edit Fields 3.4, Mode JSON, `{ "receipt": "{{ $json.id }}" }` (the items rebuilt: no
	// `idempotency`, no body) at Continue (error output) → Notify (error output) failing once for B. Each rebuilt item is
	// paired by n8n to its input: B's notice failing fails B's key only; A is charged and notified once. B is charged
	// twice: its own step (charge, then notice) failed after its charge and the retry runs it again — the documented
	// bound of one event's step with several effects (docs/templates.md "not guaranteed"), not counted as a break.
	it('Events [A, B] → Charge → Edit Fields (JSON mode, drops idempotency; error output) → Notify failing once for B: A once; B re-run as its own step (documented)', async () => {
		useTrigger('wf-rt25-set-json', EVENTS);
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_BODY),
				node(
					'Receipt',
					'set',
					3.4,
					{ mode: 'raw', jsonOutput: '={\n  "receipt": "{{ $json.id }}"\n}\n', options: {} },
					{ onError: 'continueErrorOutput' },
				),
				httpCall('Notify', 'notify', { onError: 'continueErrorOutput' }, '={{ JSON.stringify({ id: $json.receipt }) }}'),
			],
			connections: { Charge: { main: [link('Receipt'), []] }, Receipt: { main: [link('Notify'), []] }, Notify: { main: [[], []] } },
			heads: ['Charge'],
		};
		const refusal = await refusedAtPublish(step);
		failNext('notify:sj_b');
		const { answers } = await provide(events([{ id: 'sj_a' }, { id: 'sj_b' }]), step);
		const seen = {
			refusal: typeof refusal === 'string' ? 'refused' : false,
			answers,
			charges: [effectsAt('charge', 'sj_a'), effectsAt('charge', 'sj_b')],
			notices: [effectsAt('notify', 'sj_a'), effectsAt('notify', 'sj_b')],
			keys: await statuses(['sj_a', 'sj_b']),
		};
		expect(seen).toEqual({
			refusal: false,
			answers: [500, 200],
			charges: [1, 2],
			notices: [1, 1],
			keys: ['completed', 'completed'],
		});
	});

	/* (5) Code (Run Once for Each Item) rebuilding the items before the charge ----------------------------------------- */

	// Code (Each Item) returning a new object `{ orderId, amount }` (no `idempotency`, no pairedItem: n8n's runner pairs
	// each result to its item) → Charge (error output) failing once for B. At Stop Workflow the Code node is refused at
	// publish (a Code node may act, documented: the refusal names the node and the fix); set, as the refusal says, to
	// Continue (using error output): one charge each.
	it('Events [A, B] → Code (Each Item, new object without idempotency; error output) → Charge (error output) failing once for B: one charge each', async () => {
		useTrigger('wf-rt25-code-each', EVENTS);
		const step: Step = {
			nodes: [
				node(
					'Shape Order',
					'code',
					2,
					{
						mode: 'runOnceForEachItem',
						language: 'javaScript',
						jsCode: 'return { json: { orderId: $json.body.id, amount: $json.body.amount ?? 1 } };',
					},
					{ onError: 'continueErrorOutput' },
				),
				httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, '={{ JSON.stringify({ id: $json.orderId }) }}'),
			],
			connections: { 'Shape Order': { main: [link('Charge'), []] }, Charge: { main: [[], []] } },
			heads: ['Shape Order'],
		};
		const refusal = await refusedAtPublish(step);
		failNext('charge:ce_b');
		const { answers } = await provide(events([{ id: 'ce_a' }, { id: 'ce_b' }]), step);
		expect({
			refusal,
			answers,
			charges: [effectsAt('charge', 'ce_a'), effectsAt('charge', 'ce_b')],
			keys: await statuses(['ce_a', 'ce_b']),
		}).toEqual({ refusal: false, answers: [500, 200], charges: [1, 1], keys: ['completed', 'completed'] });
	});
});
