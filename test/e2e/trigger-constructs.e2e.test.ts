// The construct matrix behind the Idempotent Webhook trigger, in a real n8n: the trigger template
// (Store: Postgres) with its example step replaced by the shapes users build (If, Merge after an If,
// Wait, Execute Workflow, Retry On Fail, Code, Always Output Data, zero items, Respond to Webhook, a
// disabled node, n8n's default error settings, several events in one delivery, Execute Once, a Code
// node that re-orders items without pairedItem, Aggregate → Split Out), and the trigger's own
// settings (version 1's modes, version 2's keys per workflow, no signature, Basic Auth), with n8n's
// Stop, a workflow timeout and n8n's Retry. The effect is a call to the test's API, which fails or
// holds a call on demand; a provider retries every non-2xx. Each row: the effects per event (one),
// no event lost (every delivery ends 2xx, every key completed), the answers in order, and what is
// stored and replayed. What the trigger cannot settle (a Wait, a Form, Send and Wait, a sub-workflow
// that waits or is not waited for, a Respond to Webhook node) is refused when the workflow is
// published, before any delivery.
// Every row's workflow is published once (two for the rows of one event to two workflows), and the
// rows run side by side.
// e2e-tags: single queue compatibility
import { harness, eventId, type Harness } from '../support/e2e/harness';
import { startSink } from '../support/e2e/sink';
import * as c from '../support/e2e/constructs';
import { createCredential, executionCustomData, retryExecution, stopExecution } from '../support/e2e/restWorkflows';
import { deliverUntilAccepted } from '../support/e2e/trigger';
import { eventually } from '../support/e2e/eventually';
import { timeoutCancelsRunningNode } from '../support/stack/n8nVersion';

/** A row's deliveries, retried like a provider: each event's answers in order, the events given up, every attempt. */
interface Delivered {
	answers: Record<string, number[]>;
	gaveUp: string[];
	attempts: Array<{ outcome: string | null }>;
}
/** What a row's checks get: deliveries retried like a provider, the API's effects, the keys' states. */
type RowContext = Omit<ReturnType<typeof c.rowContext>, 'deliver'> & { deliver: (bodies: unknown[]) => Promise<Delivered> };
/** Each row's published workflow. */
type Published = Record<string, { url: string; workflowId: string }>;
/** A refusal as rowContext expects it: the answer's status and outcome, the key's state. */
type Refusal = Parameters<typeof c.rowContext>[3];

/** A row's published workflows: the first (the context's), then any others (`workflows` > 1). */
interface RowWorkflows {
	workflowId: string;
	others: Array<{ url: string; workflowId: string }>;
}

/** One row of the matrix: the user's step after the trigger (calling the API at `api`), and what it checks. */
interface Row {
	shape: (api: string) => c.RowShape;
	run: (ctx: RowContext, workflows: RowWorkflows) => Promise<void>;
	/** Workflows published with this shape (default one): one event delivered to each. */
	workflows?: number;
	/**
	 * A confirmed break, not fixed yet: the row states what must happen and runs as `test.failing`
	 * (the file stays green; a fix turns it red until this is removed). Why, above the row.
	 */
	knownBreak?: boolean;
}

const FAILS_ONCE = 'fails once';
/** The trigger's lease in the rows that hold a key (Lease Seconds): long enough for a held call, short for the test. */
const LEASE_SECONDS = 10;
/** The workflow timeout of its row (Settings → Timeout Workflow), in seconds. */
const WORKFLOW_TIMEOUT_SECONDS = 3;
/** The caller's Basic Auth credential: none of it may be stored or replayed. */
const BASIC_AUTH = { user: 'e2e-caller', password: 'e2e-basic-password-never-stored' };
const BASIC_AUTH_HEADER = `Basic ${Buffer.from(`${BASIC_AUTH.user}:${BASIC_AUTH.password}`).toString('base64')}`;
/** Credentials the rows' nodes use, created before the rows are published. */
const credentials: Record<'slack' | 'basicAuth', { id: string; name: string }> = {
	slack: { id: '', name: '' },
	basicAuth: { id: '', name: '' },
};

/** The trigger's refusal: its first step marks the key failed and answers 500 before it fails. */
const REFUSED = { status: 500, outcome: 'failed', state: 'failed' } as Refusal;

const ROWS: Record<string, Row> = {
	'If with a branch that ends without the effect': {
		shape: (api) => ({
			nodes: [c.ifFlag('Skip?', 'skip'), c.callApi('Call your API', api)],
			connections: { 'Skip?': { main: [[], c.link('Call your API')] } },
			heads: ['Skip?'],
		}),
		run: async (ctx) => {
			const skipped = { id: eventId('mxt_if_skip'), type: 'e2e.if', skip: true };
			const charged = { id: eventId('mxt_if_charge'), type: 'e2e.if' };
			const { answers, gaveUp } = await ctx.deliver([skipped, charged]);
			expect(gaveUp).toEqual([]);
			expect([answers[skipped.id], answers[charged.id]]).toEqual([[200], [200]]);
			expect(ctx.effects([skipped, charged])).toEqual([0, 1]);
			expect(await ctx.states([skipped, charged])).toEqual(['completed', 'completed']);
		},
	},
	...Object.fromEntries(
		(Object.keys(c.MERGE_MODES) as Array<keyof typeof c.MERGE_MODES>).map((mode) => [
			`Merge (${mode}) after an If, the write after it ${FAILS_ONCE}`,
			{
				shape: (api) =>
					mode === 'append'
						? {
								nodes: [
									c.ifFlag('VIP?', 'vip'),
									c.noOp('VIP'),
									c.noOp('Standard'),
									c.merge('Merge', c.MERGE_MODES[mode]),
									c.callApi('Write', api),
								],
								connections: {
									'VIP?': { main: [c.link('VIP'), c.link('Standard')] },
									VIP: { main: [c.toInput('Merge', 0)] },
									Standard: { main: [c.toInput('Merge', 1)] },
									Merge: { main: [c.link('Write')] },
								},
								heads: ['VIP?'],
							}
						: {
								nodes: [
									c.ifFlag('Paid?', 'paid'),
									c.noOp('Look Up Customer'),
									c.merge('Merge', c.MERGE_MODES[mode]),
									c.callApi('Write', api),
								],
								connections: {
									'Paid?': { main: [c.toInput('Merge', 0), []] },
									'Look Up Customer': { main: [c.toInput('Merge', 1)] },
									Merge: { main: [c.link('Write')] },
								},
								heads: ['Paid?', 'Look Up Customer'],
							},
				run: async (ctx) => {
					const event = { id: eventId(`mxt_merge_${mode.replace(/\W/g, '')}`), type: 'e2e.merge', paid: true };
					ctx.api.failNext(`evt:${event.id}`, 500, 1);
					await ctx.expectFailedOnceThenOneEffect(event);
				},
			},
		]),
	),
	'a Wait (1 s) before the effect: refused before any effect': {
		shape: (api) => ({
			nodes: [c.waitSeconds('Wait', 1), c.callApi('Call your API', api)],
			connections: { Wait: { main: [c.link('Call your API')] } },
			heads: ['Wait'],
		}),
		run: async (ctx) => ctx.expectRefused({ id: eventId('mxt_wait_before'), type: 'e2e.wait' }, { reason: /makes the execution wait/ }),
	},
	'a Wait (1 s) after the effect: refused before any effect': {
		shape: (api) => ({
			nodes: [c.callApi('Call your API', api), c.waitSeconds('Wait', 1)],
			connections: { 'Call your API': { main: [c.link('Wait')] } },
			heads: ['Call your API'],
		}),
		run: async (ctx) => ctx.expectRefused({ id: eventId('mxt_wait_after'), type: 'e2e.wait' }, { reason: /makes the execution wait/ }),
	},
	[`Execute Workflow waiting for the sub-workflow, whose call ${FAILS_ONCE}`]: {
		shape: (api) => ({ nodes: [c.executeSubWorkflow('Run Sub-workflow', api, { wait: true })], heads: ['Run Sub-workflow'] }),
		run: async (ctx) => {
			const event = { id: eventId('mxt_sub_wait'), type: 'e2e.sub' };
			ctx.api.failNext(`evt:${event.id}`, 500, 1);
			await ctx.expectFailedOnceThenOneEffect(event);
		},
	},
	'Execute Workflow not waiting for the sub-workflow: refused before any effect': {
		shape: (api) => ({ nodes: [c.executeSubWorkflow('Run Sub-workflow', api, { wait: false })], heads: ['Run Sub-workflow'] }),
		run: async (ctx) => ctx.expectRefused({ id: eventId('mxt_sub_nowait'), type: 'e2e.sub' }, { reason: /without waiting/ }),
	},
	'Retry On Fail (the call fails twice, then succeeds)': {
		shape: (api) => ({
			nodes: [c.callApi('Call your API', api, { retryOnFail: true, maxTries: 3, waitBetweenTries: 100 })],
			heads: ['Call your API'],
		}),
		run: async (ctx) => {
			const event = { id: eventId('mxt_retry'), type: 'e2e.retry' };
			ctx.api.failNext(`evt:${event.id}`, 500, 2);
			await ctx.expectOneEffect(event);
		},
	},
	// The events reach each node together, so the nodes continue on error (at Stop Workflow Reserve refuses:
	// n8n would not record which events a failed node had done): the failed event's key alone fails.
	'several events in one delivery, a key each (Split Out → Idempotency Reserve), a Code node throwing for one of them (Continue (using error output))':
		{
			shape: (api) => ({
				batch: true,
				nodes: [
					c.codeFailingUntil('Check', { onError: 'continueErrorOutput' }),
					c.callApi('Call your API', api, { onError: 'continueErrorOutput' }),
				],
				connections: { Check: { main: [c.link('Call your API')] } },
				heads: ['Check'],
			}),
			run: async (ctx) => ctx.expectBatchFailedOnceThenOneEffectEach('mxt_code_items', () => {}, { failUntilForSecond: 5000 }),
		},
	[`several events in one delivery, a key each, Loop Over Items, the write for one ${FAILS_ONCE}`]: {
		shape: (api) => ({
			batch: true,
			nodes: [c.loop('Loop Over Items'), c.callApi('Write', api)],
			connections: { 'Loop Over Items': { main: [[], c.link('Write')] }, Write: { main: [c.link('Loop Over Items')] } },
			heads: ['Loop Over Items'],
		}),
		run: async (ctx) =>
			ctx.expectBatchFailedOnceThenOneEffectEach('mxt_loop', (events: Array<{ id: string }>) =>
				ctx.api.failNext(`evt:${events[1].id}`, 500, 1),
			),
	},
	'Always Output Data on a step that returns nothing, after the call': {
		shape: (api) => ({
			nodes: [c.callApi('Call your API', api), c.codeReturningNothing('Nothing Back', { alwaysOutputData: true }), c.noOp('After')],
			connections: { 'Call your API': { main: [c.link('Nothing Back')] }, 'Nothing Back': { main: [c.link('After')] } },
			heads: ['Call your API'],
		}),
		run: async (ctx) => ctx.expectOneEffect({ id: eventId('mxt_always'), type: 'e2e.always' }),
	},
	// The last node gives no item: the key is completed (the call ran) and the event is answered 200 with an empty body.
	'a step that returns zero items, after the call: 200, completed, one effect': {
		shape: (api) => ({
			nodes: [c.callApi('Call your API', api), c.codeReturningNothing('Nothing Back')],
			connections: { 'Call your API': { main: [c.link('Nothing Back')] } },
			heads: ['Call your API'],
		}),
		run: async (ctx) => {
			const event = { id: eventId('mxt_zero'), type: 'e2e.zero' };
			const { answers, gaveUp, attempts } = await ctx.deliver([event]);
			expect(gaveUp).toEqual([]);
			expect(answers[event.id]).toEqual([200]);
			expect(attempts.map((attempt) => attempt.outcome)).toEqual(['new']);
			expect(ctx.effects([event])).toEqual([1]);
			expect(await ctx.states([event])).toEqual(['completed']);
		},
	},
	'a Respond to Webhook before the effect: refused before any effect': {
		shape: (api) => ({
			nodes: [c.respondToWebhook('Answer Early'), c.callApi('Call your API', api)],
			connections: { 'Answer Early': { main: [c.link('Call your API')] } },
			heads: ['Answer Early'],
		}),
		run: async (ctx) => ctx.expectRefused({ id: eventId('mxt_respond_before'), type: 'e2e.respond' }, { reason: /answers the webhook/ }),
	},
	'a Respond to Webhook after the effect: refused before any effect': {
		shape: (api) => ({
			nodes: [c.callApi('Call your API', api), c.respondToWebhook('Answer')],
			connections: { 'Call your API': { main: [c.link('Answer')] } },
			heads: ['Call your API'],
		}),
		run: async (ctx) => ctx.expectRefused({ id: eventId('mxt_respond_after'), type: 'e2e.respond' }, { reason: /answers the webhook/ }),
	},
	'a disabled node in the step': {
		shape: (api) => ({
			nodes: [c.noOp('Off', { disabled: true }), c.callApi('Call your API', api)],
			connections: { Off: { main: [c.link('Call your API')] } },
			heads: ['Off'],
		}),
		run: async (ctx) => ctx.expectOneEffect({ id: eventId('mxt_disabled'), type: 'e2e.disabled' }),
	},
	[`an HTTP Request at n8n's default error settings that ${FAILS_ONCE}`]: {
		shape: (api) => ({ nodes: [c.callApi('Call your API', api)], heads: ['Call your API'] }),
		run: async (ctx) => {
			const event = { id: eventId('mxt_http_default'), type: 'e2e.default' };
			ctx.api.failNext(`evt:${event.id}`, 500, 1);
			await ctx.expectFailedOnceThenOneEffect(event);
		},
	},
	[`a Code node at n8n's default error settings that ${FAILS_ONCE}, then the call`]: {
		shape: (api) => ({
			nodes: [c.codeFailingUntil('Check'), c.callApi('Call your API', api)],
			connections: { Check: { main: [c.link('Call your API')] } },
			heads: ['Check'],
		}),
		run: async (ctx) =>
			ctx.expectFailingUntilThenOneEffect({ id: eventId('mxt_code_default'), type: 'e2e.default', failUntil: Date.now() + 5000 }),
	},
	'Slack, Send and Wait for Response before the effect: refused before any effect': {
		shape: (api) => ({
			nodes: [c.slackSendAndWait('Ask for Approval', credentials.slack), c.callApi('Call your API', api)],
			connections: { 'Ask for Approval': { main: [c.link('Call your API')] } },
			heads: ['Ask for Approval'],
		}),
		run: async (ctx) =>
			ctx.expectRefused(
				{ id: eventId('mxt_send_and_wait'), type: 'e2e.approval' },
				{ reason: /"Ask for Approval" makes the execution wait/ },
			),
	},
	'a Form page before the effect: refused before any effect': {
		shape: (api) => ({
			nodes: [c.formPage('Confirm'), c.callApi('Call your API', api)],
			connections: { Confirm: { main: [c.link('Call your API')] } },
			heads: ['Confirm'],
		}),
		run: async (ctx) => ctx.expectRefused({ id: eventId('mxt_form'), type: 'e2e.form' }, { reason: /"Confirm" makes the execution wait/ }),
	},
	'Execute Workflow waiting for a sub-workflow (defined below) that waits before its call: refused before any effect': {
		shape: (api) => ({
			nodes: [c.executeSubWorkflow('Run Sub-workflow', api, { wait: true, waitInside: true })],
			heads: ['Run Sub-workflow'],
		}),
		run: async (ctx) =>
			ctx.expectRefused(
				{ id: eventId('mxt_sub_waits'), type: 'e2e.sub' },
				{ reason: /"Run Sub-workflow" runs a sub-workflow whose node "Sub-workflow: wait" makes the execution wait/ },
			),
	},
	// One call for all the events of the delivery: its failure is every event's, and the retry makes it once more.
	[`several events in one delivery, one call for all of them (Execute Once, Continue (using error output)) that ${FAILS_ONCE}`]: {
		shape: (api) => ({
			batch: true,
			nodes: [c.callApiForAll('Notify All', api, { onError: 'continueErrorOutput' })],
			heads: ['Notify All'],
		}),
		run: async (ctx) => {
			const events = twoEvents('mxt_once');
			const call = c.batchKey(events.map((event) => `evt:${event.id}`));
			ctx.api.failNext(call, 500, 1);
			const first = await ctx.h.deliver(ctx.url, events);
			expect({ status: first.status, states: await ctx.states(events), calls: ctx.api.calls(call) }).toEqual({
				status: 500,
				states: ['failed', 'failed'],
				calls: 0,
			});
			const { answers, gaveUp } = await ctx.deliver([events]);
			expect({ answers: Object.values(answers), gaveUp }).toEqual({ answers: [[200]], gaveUp: [] });
			expect({ calls: ctx.api.calls(call), arrivals: ctx.api.arrivals(call) }).toEqual({ calls: 1, arrivals: 2 });
			expect(await ctx.states(events)).toEqual(['completed', 'completed']);
		},
	},
	// n8n pairs the re-ordered items by position (its guess); each still carries its event's key, which is what counts.
	[`several events in one delivery, a Code node reversing them without pairedItem, the call for the first ${FAILS_ONCE} (Continue (using error output))`]:
		{
			shape: (api) => ({
				batch: true,
				nodes: [
					c.codeReversingItems('Sort', { onError: 'continueRegularOutput' }),
					c.callApi('Call your API', api, { onError: 'continueErrorOutput' }),
				],
				connections: { Sort: { main: [c.link('Call your API')] } },
				heads: ['Sort'],
			}),
			run: async (ctx) => {
				const events = twoEvents('mxt_sort');
				ctx.api.failNext(`evt:${events[0].id}`, 500, 1);
				const first = await ctx.h.deliver(ctx.url, events);
				expect({ status: first.status, states: await ctx.states(events), effects: ctx.effects(events) }).toEqual({
					status: 500,
					states: ['failed', 'completed'],
					effects: [0, 1],
				});
				const { answers, gaveUp } = await ctx.deliver([events]);
				expect({ answers: Object.values(answers), gaveUp }).toEqual({ answers: [[200]], gaveUp: [] });
				expect(ctx.effects(events)).toEqual([1, 1]);
				expect(await ctx.states(events)).toEqual(['completed', 'completed']);
			},
		},
	// Reserve refuses this shape for several events when it runs (each split item would trace to every key);
	// its refusal must reach the provider as a non-2xx, as the webhook template's 503 does.
	'several events in one delivery, Aggregate (Individual Fields) → Split Out → the call (Continue (using error output)): refused, never 2xx':
		{
			knownBreak: true,
			shape: (api) => ({
				batch: true,
				nodes: [
					c.aggregateField('Aggregate', 'id'),
					c.splitOutField('Split Out', 'id'),
					c.callApi('Call your API', api, { onError: 'continueErrorOutput' }, "'evt:' + $json.id"),
				],
				connections: { Aggregate: { main: [c.link('Split Out')] }, 'Split Out': { main: [c.link('Call your API')] } },
				heads: ['Aggregate'],
			}),
			run: async (ctx) => expectRefusedWhenReserveRuns(ctx, twoEvents('mxt_aggregate')),
		},
	"several events in one delivery, a Code node at n8n's default error settings (Stop Workflow) before the call: refused, never 2xx": {
		knownBreak: true,
		shape: (api) => ({
			batch: true,
			nodes: [c.codeFailingUntil('Check'), c.callApi('Call your API', api, { onError: 'continueErrorOutput' })],
			connections: { Check: { main: [c.link('Call your API')] } },
			heads: ['Check'],
		}),
		run: async (ctx) => expectRefusedWhenReserveRuns(ctx, twoEvents('mxt_code_stop')),
	},
	// The same refusal with Reserve at n8n's default On Error: it stops the execution, and the trigger answers 500.
	'several events in one delivery, Reserve at Stop Workflow, Aggregate (Individual Fields) → Split Out → the call: refused, 500': {
		shape: (api) => ({
			batch: true,
			reserveStopsOnError: true,
			nodes: [
				c.aggregateField('Aggregate', 'id'),
				c.splitOutField('Split Out', 'id'),
				c.callApi('Call your API', api, { onError: 'continueErrorOutput' }, "'evt:' + $json.id"),
			],
			connections: { Aggregate: { main: [c.link('Split Out')] }, 'Split Out': { main: [c.link('Call your API')] } },
			heads: ['Aggregate'],
		}),
		run: async (ctx) => {
			const events = twoEvents('mxt_aggregate_stop');
			const first = await ctx.h.deliver(ctx.url, events);
			expect({ answer: [first.status, first.outcome], states: await ctx.states(events), effects: ctx.effects(events) }).toEqual({
				answer: [500, 'failed'],
				states: [null, null],
				effects: [0, 0],
			});
		},
	},
	"n8n's Stop while the call hangs: the key held for its lease (409, no second call beside it), then the event runs once": {
		shape: (api) => ({
			trigger: { parameters: { leaseSeconds: LEASE_SECONDS } },
			nodes: [c.callApi('Call your API', api)],
			heads: ['Call your API'],
		}),
		run: async (ctx, { workflowId }) =>
			expectHeldThroughCancel(
				ctx,
				workflowId,
				{ id: eventId('mxt_stop'), type: 'e2e.stop' },
				{
					cancel: async (executionId) => {
						const stopped = await stopExecution(ctx.h, executionId);
						expect(stopped.status).toBe(200);
					},
					// The process that answers the delivery cancels it, and n8n answers it 500 itself.
					firstAnswer: 500,
				},
			),
	},
	// Held for the lease where the timeout cancels the running call; n8n 1.x's queue workers let the call run to its own timeout.
	[`the workflow's timeout (${WORKFLOW_TIMEOUT_SECONDS} s) while the call hangs: no second call beside it, then the event runs once`]: {
		shape: (api) => ({
			trigger: { parameters: { leaseSeconds: LEASE_SECONDS } },
			settings: { executionTimeout: WORKFLOW_TIMEOUT_SECONDS },
			nodes: [c.callApi('Call your API', api)],
			heads: ['Call your API'],
		}),
		run: async (ctx, { workflowId }) => {
			const event = { id: eventId('mxt_timeout'), type: 'e2e.timeout' };
			if (!timeoutCancelsRunningNode(ctx.h.state.n8nVersion, ctx.h.topology)) {
				await expectCallEndsByItsOwnTimeout(ctx, workflowId, event);
				return;
			}
			await expectHeldThroughCancel(ctx, workflowId, event, {
				// n8n stops the execution by itself when its time is up.
				cancel: async () => {},
				// One process: n8n answers the delivery it cancels 500 itself. Queue mode: the worker cancels it,
				// and the package's 409 reaches the delivery.
				firstAnswer: ctx.h.topology === 'queue' ? 409 : 500,
			});
		},
	},
	[`n8n's Retry on the failed execution, after the provider's retry completed the event: the execution says not to; the Retry calls again outside the key`]:
		{
			shape: (api) => ({ nodes: [c.callApi('Call your API', api)], heads: ['Call your API'] }),
			run: async (ctx, { workflowId }) => {
				const event = { id: eventId('mxt_n8n_retry'), type: 'e2e.retry' };
				ctx.api.failNext(`evt:${event.id}`, 500, 1);
				// The provider's path: 500, its retry runs the event, one effect.
				await ctx.expectFailedOnceThenOneEffect(event);
				const failed = (await ctx.h.executions(workflowId, 0)).filter((execution) => execution.status === 'error');
				expect(failed).toHaveLength(1);
				const customData = await eventually(
					() => executionCustomData(ctx.h, failed[0].id),
					(data) => 'idempotency_retry' in data,
				);
				expect(customData.idempotency_retry).toMatch(/^Don't use n8n's Retry on this execution: the provider retries the event itself/);
				// What the warning is for: n8n's Retry runs the failed call again from the saved data, with no node of
				// the package before it, so nothing can refuse it (docs/idempotent-webhook.md, "n8n's Retry button").
				const retried = await retryExecution(ctx.h, String(failed[0].id));
				expect(retried.status).toBe(200);
				expect({ effects: ctx.effects([event]), states: await ctx.states([event]), attempts: await ctx.attempts([event]) }).toEqual({
					effects: [2],
					states: ['completed'],
					attempts: [2],
				});
			},
		},
	'one event to two workflows, trigger version 2 at its defaults: each workflow runs it once': {
		workflows: 2,
		shape: (api) => ({ trigger: { typeVersion: 2 }, nodes: [c.callApi('Call your API', api)], heads: ['Call your API'] }),
		run: async (ctx, { workflowId, others: [second] }) => {
			const event = { id: eventId('mxt_two_workflows'), type: 'e2e.two' };
			const [billing, analytics] = await Promise.all([ctx.deliver([event]), c.deliverRetried(second.url, [event])]);
			expect(
				[billing, analytics].map(({ answers, gaveUp, attempts }) => ({ answers, gaveUp, outcomes: attempts.map((a) => a.outcome) })),
			).toEqual([billing, analytics].map(() => ({ answers: { [event.id]: [200] }, gaveUp: [], outcomes: ['new'] })));
			const keys = [workflowId, second.workflowId].map((id) => `wf:${id}:evt:${event.id}`);
			expect(keys.map((key) => ctx.api.calls(key))).toEqual([1, 1]);
			expect(Object.values(await c.keyRows(ctx.h, keys)).map((row) => row?.status)).toEqual(['completed', 'completed']);
		},
	},
	'one event to two workflows, trigger version 2 with Share Keys Across Workflows: the second is answered as a copy': {
		workflows: 2,
		shape: (api) => ({
			trigger: { typeVersion: 2, parameters: { options: { shareKeysAcrossWorkflows: true } } },
			nodes: [c.callApi('Call your API', api)],
			heads: ['Call your API'],
		}),
		run: async (ctx, { others: [second] }) => {
			const event = { id: eventId('mxt_shared_keys'), type: 'e2e.shared' };
			const first = await deliverUntilAccepted(ctx.h, ctx.url, event);
			const copy = await ctx.h.deliver(second.url, event);
			expect({ first: first.map((a) => [a.status, a.outcome]), copy: [copy.status, copy.outcome], body: copy.json }).toEqual({
				first: [[200, 'new']],
				copy: [200, 'duplicate'],
				body: first[0].json,
			});
			expect(ctx.effects([event])).toEqual([1]);
			expect(await ctx.h.executions(second.workflowId, 0)).toEqual([]);
		},
	},
	'trigger version 1 at its default Mode (Lease): a copy during the run is answered 409, after it the stored answer': {
		shape: (api) => ({ nodes: [c.callApi('Call your API', api)], heads: ['Call your API'] }),
		run: async (ctx) => expectCopyDuringRunInProgress(ctx, { id: eventId('mxt_mode_lease'), type: 'e2e.mode' }),
	},
	'trigger version 1, Mode Permanent (No Retry After a Crash): a copy during the run is answered 409, after it the stored answer': {
		shape: (api) => ({
			trigger: { parameters: { mode: 'permanent' } },
			nodes: [c.callApi('Call your API', api)],
			heads: ['Call your API'],
		}),
		run: async (ctx) => expectCopyDuringRunInProgress(ctx, { id: eventId('mxt_mode_permanent'), type: 'e2e.mode' }),
	},
	'an unsigned trigger (Signature Scheme None, no authentication): a copy is answered duplicate, never with the stored answer': {
		shape: (api) => ({
			trigger: { parameters: { scheme: 'none' }, credentials: { webhookSignatureApi: null } },
			nodes: [c.callApi('Call your API', api)],
			heads: ['Call your API'],
		}),
		run: async (ctx) => {
			const event = { id: eventId('mxt_unsigned'), type: 'e2e.unsigned' };
			const key = `evt:${event.id}`;
			const first = await deliverUntilAccepted(ctx.h, ctx.url, event, { sign: false });
			const copy = await ctx.h.deliver(ctx.url, event, {}, { sign: false });
			const [stored] = Object.values(await c.keyRows(ctx.h, [key]));
			expect({
				first: first.map((a) => [a.status, a.outcome, a.json]),
				stored: stored?.response,
				copy: [copy.status, copy.outcome, copy.json, copy.firstExecution],
			}).toEqual({
				first: [[200, 'new', { ok: true, eventKey: key, call: 1 }]],
				// Kept with the key, but only a verified caller is sent it.
				stored: { ok: true, eventKey: key, call: 1 },
				copy: [200, 'duplicate', { status: 'duplicate' }, null],
			});
			expect(ctx.effects([event])).toEqual([1]);
		},
	},
	"Basic Auth on, the last node passing the trigger's item on (No Operation): no header or credential stored or replayed": {
		shape: (api) => ({
			trigger: {
				parameters: { authentication: 'basicAuth' },
				credentials: { idempotentWebhookBasicAuthApi: credentials.basicAuth },
			},
			// Both after the trigger; n8n runs the upper-left first, so No Operation is the last node.
			nodes: [c.callApi('Call your API', api), c.noOp('Pass On')],
			heads: ['Call your API', 'Pass On'],
		}),
		run: async (ctx) => {
			const event = { id: eventId('mxt_basic_auth'), type: 'e2e.basic' };
			const caller = { authorization: BASIC_AUTH_HEADER };
			const first = await deliverUntilAccepted(ctx.h, ctx.url, event, { headers: caller });
			const copy = await ctx.h.deliver(ctx.url, event, caller);
			const [stored] = Object.values(await c.keyRows(ctx.h, [`evt:${event.id}`]));
			// The trigger's item, less its headers and its reservation.
			expect(stored?.response).toEqual({ query: {}, body: event });
			expect({ first: first.map((a) => [a.status, a.outcome, a.json]), copy: [copy.status, copy.outcome, copy.json] }).toEqual({
				first: [[200, 'new', stored?.response]],
				copy: [200, 'duplicate', stored?.response],
			});
			for (const kept of [JSON.stringify(stored?.response), first[0].text, copy.text]) {
				for (const secret of [BASIC_AUTH.password, BASIC_AUTH_HEADER.slice('Basic '.length), 'authorization', 'stripe-signature']) {
					expect(kept).not.toContain(secret);
				}
			}
			expect(ctx.effects([event])).toEqual([1]);
		},
	},
};

/** Two events for one delivery, in order. */
function twoEvents(label: string): c.RowEvent[] {
	return [0, 1].map((i) => ({ id: eventId(`${label}_${i}`), type: 'e2e.batch' }));
}

/** Rejects after `ms` with what never came: a hold that no call reached. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
	let timer: NodeJS.Timeout | undefined;
	try {
		return await Promise.race([
			promise,
			new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms))),
		]);
	} finally {
		clearTimeout(timer);
	}
}

/**
 * Several events in one delivery that Idempotency Reserve refuses when it runs (the refusal depends on
 * how many events the run carries, so it is not refused at publish): nothing reserved, no effect, and
 * the delivery is not answered 2xx, so the provider keeps the events.
 */
async function expectRefusedWhenReserveRuns(ctx: RowContext, events: c.RowEvent[]): Promise<void> {
	const first = await ctx.h.deliver(ctx.url, events);
	expect({
		accepted: first.status >= 200 && first.status < 300,
		states: await ctx.states(events),
		effects: ctx.effects(events),
	}).toEqual({ accepted: false, states: events.map(() => null), effects: events.map(() => 0) });
}

/**
 * The event's call hangs at the API while n8n cancels its execution (`cancel(executionId)`: Stop; or
 * nothing, for the workflow's timeout): the delivery is answered `firstAnswer` (never 2xx), a copy
 * meanwhile 409, and no second call starts beside the one in flight. The API then drops the call (no
 * effect), and the provider's retries get 409 until the lease ends, then run the event once.
 */
async function expectHeldThroughCancel(
	ctx: RowContext,
	workflowId: string,
	event: c.RowEvent,
	{ cancel, firstAnswer }: { cancel: (executionId: string) => Promise<void>; firstAnswer: number },
): Promise<void> {
	const key = `evt:${event.id}`;
	const held = ctx.api.holdNext(key);
	const first = ctx.h.deliver(ctx.url, event);
	await within(held, 60000, 'the call never reached the API');
	const row = await eventually(
		async () => (await c.keyRows(ctx.h, [key]))[key],
		(found) => Boolean(found?.executionId),
	);
	await cancel(String(row?.executionId));
	const answer = await first;
	const [cancelled] = await ctx.h.waitForExecutions(workflowId, 0, 1);
	// The call is still in flight: a copy must not run the step beside it.
	const copy = await ctx.h.deliver(ctx.url, event);
	const whileHeld = { state: await ctx.states([event]), calls: ctx.api.arrivals(key) };
	ctx.api.dropHeld(key); // the API never finished the call: no effect
	const { answers, gaveUp } = await ctx.deliver([event]);
	expect({
		first: answer.status,
		execution: cancelled?.status,
		copy: [copy.status, copy.outcome],
		whileHeld,
		retries: { gaveUp, last: answers[event.id].at(-1), before: [...new Set(answers[event.id].slice(0, -1))] },
		effects: ctx.effects([event]),
		states: await ctx.states([event]),
		attempts: await ctx.attempts([event]),
	}).toEqual({
		first: firstAnswer,
		execution: 'canceled',
		copy: [409, 'in_progress'],
		whileHeld: { state: ['processing'], calls: 1 },
		retries: { gaveUp: [], last: 200, before: answers[event.id].length > 1 ? [409] : [] },
		effects: [1],
		states: ['completed'],
		attempts: [2],
	});
}

/**
 * Where the workflow's timeout does not cancel a running node (n8n 1.x's queue-mode workers): the
 * hanging call ends at the HTTP Request's own timeout (its caller gone, no effect), the execution
 * fails and the key with it (500), and the provider's retry runs the event once.
 */
async function expectCallEndsByItsOwnTimeout(ctx: RowContext, workflowId: string, event: c.RowEvent): Promise<void> {
	const key = `evt:${event.id}`;
	const held = ctx.api.holdNext(key);
	const first = ctx.h.deliver(ctx.url, event);
	await within(held, 60000, 'the call never reached the API');
	const answer = await first;
	const [failed] = await ctx.h.waitForExecutions(workflowId, 0, 1);
	const whenAnswered = { state: await ctx.states([event]), calls: ctx.api.arrivals(key) };
	ctx.api.dropHeld(key); // n8n left the call at its timeout: no effect
	const { answers, gaveUp } = await ctx.deliver([event]);
	expect({
		first: answer.status,
		execution: failed?.status,
		whenAnswered,
		retries: { gaveUp, answers: answers[event.id] },
		effects: ctx.effects([event]),
		states: await ctx.states([event]),
		attempts: await ctx.attempts([event]),
	}).toEqual({
		first: 500,
		execution: 'error',
		whenAnswered: { state: ['failed'], calls: 1 },
		retries: { gaveUp: [], answers: [200] },
		effects: [1],
		states: ['completed'],
		attempts: [2],
	});
}

/** A copy delivered while the event's call hangs is answered 409; once the call ends, the event is answered and copies get its stored answer. */
async function expectCopyDuringRunInProgress(ctx: RowContext, event: c.RowEvent): Promise<void> {
	const key = `evt:${event.id}`;
	const held = ctx.api.holdNext(key);
	const first = ctx.h.deliver(ctx.url, event);
	await within(held, 60000, 'the call never reached the API');
	const during = await ctx.h.deliver(ctx.url, event);
	ctx.api.answerHeld(key);
	const answer = await first;
	const after = await ctx.h.deliver(ctx.url, event);
	expect({
		during: [during.status, during.outcome],
		first: [answer.status, answer.outcome],
		after: [after.status, after.outcome, after.json],
	}).toEqual({
		during: [409, 'in_progress'],
		first: [200, 'new'],
		after: [200, 'duplicate', answer.json],
	});
	expect(ctx.effects([event])).toEqual([1]);
	expect(await ctx.states([event])).toEqual(['completed']);
}

describe('the construct matrix behind the Idempotent Webhook trigger, in a real n8n', () => {
	const h = harness();
	let api: Awaited<ReturnType<typeof startSink>>;
	let published: Published;
	let ready: Promise<void> | undefined;
	const started = Date.now();

	const publishAll = () =>
		(ready ??= (async () => {
			api = await startSink();
			await createRowCredentials(h);
			published = (await c.publishRows(h, withOtherWorkflows(ROWS), api.url, 'trigger')) as Published;
		})());
	beforeAll(publishAll);
	afterAll(async () => {
		process.stderr.write(`[e2e figures] construct matrix, trigger rows (${h.topology}): ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
		await api?.close();
	});

	const runRow = async (row: string) => {
		await publishAll();
		const others = Array.from({ length: (ROWS[row].workflows ?? 1) - 1 }, (_, i) => published[otherWorkflow(row, i)]);
		await ROWS[row].run(c.rowContext(h, api, published[row], REFUSED) as RowContext, { workflowId: published[row].workflowId, others });
	};
	const names = Object.keys(ROWS);
	test.concurrent.each(names.filter((row) => !ROWS[row].knownBreak))('%s', runRow);
	// REDTEAM_SHOW=1 runs the known breaks as plain tests, to print what was observed.
	const knownBreaks = process.env.REDTEAM_SHOW === '1' ? test.concurrent.each : test.concurrent.failing.each;
	knownBreaks(names.filter((row) => ROWS[row].knownBreak))('known break: %s', runRow);
});

/** The name under which a row's further workflow is published (`index` from 0, for its second workflow). */
const otherWorkflow = (row: string, index: number) => `${row} (workflow ${index + 2})`;

/** The rows, and a further entry for each further workflow a row publishes with its shape. */
function withOtherWorkflows(rows: Record<string, Row>): Record<string, Row> {
	const all: Record<string, Row> = { ...rows };
	for (const [name, row] of Object.entries(rows)) {
		for (let i = 0; i < (row.workflows ?? 1) - 1; i++) all[otherWorkflow(name, i)] = row;
	}
	return all;
}

async function createRowCredentials(h: Harness): Promise<void> {
	// Never called: the Slack node only has to be configured as a user would.
	credentials.slack = await createCredential(h, 'slackApi', { accessToken: 'xoxb-e2e-never-called' });
	credentials.basicAuth = await createCredential(h, 'idempotentWebhookBasicAuthApi', BASIC_AUTH);
}
