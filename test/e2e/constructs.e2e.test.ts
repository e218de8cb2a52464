// The construct matrix in a real n8n: one table of the shapes users build in place of the example
// business step, run by both front ends of the package — the Postgres webhook template (Idempotency
// Reserve, the step, Settle beside it as the template wires it) and the Idempotent Webhook trigger
// (its Postgres template, the step after the trigger). The shapes: If, Merge after an If, Wait (with
// a resume), Loop Over Items, Execute Workflow, Retry On Fail, Code, Always Output Data, zero items,
// Respond to Webhook, a disabled node, n8n's default error settings, several events in one delivery;
// behind the trigger also Send and Wait, a Form, a sub-workflow that waits, Execute Once, a Code node
// that re-orders items without pairedItem, Aggregate → Split Out, the trigger's own settings
// (version 1's modes, keys per workflow or shared, no signature, Basic Auth), n8n's Stop, a
// workflow timeout and n8n's Retry. The effect is a call to the test's API, which fails or holds a
// call on demand; a provider retries every non-2xx. Each row, per front end: the effects per event
// (one), no event lost (every delivery ends 2xx, every key completed), the answers in order, and what
// is stored and replayed. A shape a front end cannot guarantee is refused before any effect: the
// template answers 503 with nothing reserved; the trigger refuses to be published (what it cannot
// settle: a Wait, a Form, Send and Wait, a sub-workflow that waits or is not waited for, a Respond
// to Webhook node).
// Every row's workflow is published once per front end (two for the rows of one event to two
// workflows), and the rows of both run side by side. In queue mode the template runs its own rows
// only: the shapes it shares with the trigger run in a worker on the same engine as in one process.
// e2e-tags: single queue compatibility:single
import { harness, eventId, type Harness } from '../support/e2e/harness';
import { startSink, type Sink } from '../support/e2e/sink';
import * as c from '../support/e2e/constructs';
import { createCredential, executionCustomData, retryExecution, stopExecution } from '../support/e2e/restWorkflows';
import { deliverUntilAccepted, triggerKey } from '../support/e2e/trigger';
import { eventually } from '../support/e2e/eventually';
import { TOPOLOGY } from '../support/e2e/topology';
import { setTimeout as sleep } from 'node:timers/promises';
import { timeoutCancelsRunningNode } from '../support/stack/n8nVersion';

/** The two ways the package takes a webhook: the webhook template's nodes, and the Idempotent Webhook trigger. */
type FrontEnd = 'template' | 'trigger';
// No second try here: jest-circus starts a concurrent test once and a retry would await the same run.
jest.retryTimes(0);

const FRONT_ENDS: Record<FrontEnd, string> = { template: 'webhook template', trigger: 'Idempotent Webhook trigger' };

/** A row's published workflows for one front end: the first (the context's), then any others (`workflows` > 1). */
interface RowWorkflows {
	workflowId: string;
	others: Array<{ url: string; workflowId: string }>;
}

/** What one front end does with a row: the step after Reserve's New output (or after the trigger), calling the API at `api`, and what it checks. */
interface Variant {
	/** What this front end does with the shape, when it is worth saying in the test's title. */
	outcome?: string;
	shape: (api: string) => c.RowShape;
	run: (ctx: c.RowContext, workflows: RowWorkflows) => Promise<void>;
	/** Workflows published with this shape (default one): one event delivered to each. */
	workflows?: number;
	/**
	 * A confirmed break, not fixed yet: the row states what must happen and runs as `test.failing`
	 * (the file stays green; a fix turns it red until this is removed). Why, above the row.
	 */
	knownBreak?: boolean;
}

/** One row of the matrix: the shape, run by each front end it is written for. */
type Row = Partial<Record<FrontEnd, Variant>>;

/** A row both front ends build and check the same way. */
const both = (variant: Variant): Row => ({ template: variant, trigger: variant });

/**
 * The retry of a delivery of several events: 200 in the end. Settle answers the first delivery 500
 * from inside its run, and the trigger's own key is failed only when that run ends: a retry racing
 * that end is told 409 (in progress) first, and retried.
 */
function expectAcceptedAfterTheRun(answers: number[][], gaveUp: string[]): void {
	const [sequence = []] = answers;
	expect({
		deliveries: answers.length,
		last: sequence.at(-1),
		before: sequence.slice(0, -1).filter((status) => status !== 409),
		gaveUp,
	}).toEqual({
		deliveries: 1,
		last: 200,
		before: [],
		gaveUp: [],
	});
}

const FAILS_ONCE = 'fails once';
const REFUSED_BEFORE_ANY_EFFECT = 'refused before any effect';
/**
 * The trigger's lease in the rows that hold a key (Lease Seconds): short for the test, long enough for
 * a held call, its cancel and the copy after it on a loaded machine (16 rows side by side beside
 * another n8n took over 10 s).
 */
const LEASE_SECONDS = 20;
/**
 * How long a Code node's step keeps failing (the event's `failUntil`, from its delivery): the first
 * attempt must reach the node within it, which took over 20 s on n8n 1.123.81 with the matrix's rows
 * side by side and the full run's queue-mode tier beside it (the row then answered 200 at once).
 */
const FAILING_FOR_MS = 35000;
/**
 * The workflow timeout of its row (Settings → Timeout Workflow), in seconds: the execution must reach
 * its call before it (3 s was missed under load: the run timed out first), and it ends within the lease.
 */
const WORKFLOW_TIMEOUT_SECONDS = 10;
// How long the Retry row waits for n8n's answer before it reads the effect from the API's side.
const RETRY_ANSWER_WAIT_MS = 90_000;
/** The caller's Basic Auth credential: none of it may be stored or replayed. */
const BASIC_AUTH = { user: 'e2e-caller', password: 'e2e-basic-password-never-stored' };
const BASIC_AUTH_HEADER = `Basic ${Buffer.from(`${BASIC_AUTH.user}:${BASIC_AUTH.password}`).toString('base64')}`;
/** Credentials the rows' nodes use, created before the rows are published. */
const credentials: Record<'slack' | 'basicAuth', { id: string; name: string }> = {
	slack: { id: '', name: '' },
	basicAuth: { id: '', name: '' },
};
/** How each front end refuses: the template answers 503 with nothing reserved; the trigger's first step marks the key failed and answers 500. */
const REFUSALS: Record<FrontEnd, c.Refusal> = {
	template: { status: 503, outcome: 'not_reserved', state: null },
	trigger: { status: 500, outcome: 'failed', state: 'failed' },
};

/** Merge after an If, as each front end's row wires it: `onError` is the write's (the template's rows continue on error). */
function mergeAfterIf(mode: keyof typeof c.MERGE_MODES, api: string, onError?: string): c.RowShape {
	const write = c.callApi('Write', api, onError ? { onError } : {});
	return mode === 'append'
		? {
				// Only one branch of the If has data: n8n runs the Merge after Settle.
				nodes: [c.ifFlag('VIP?', 'vip'), c.noOp('VIP'), c.noOp('Standard'), c.merge('Merge', c.MERGE_MODES[mode]), write],
				connections: {
					'VIP?': { main: [c.link('VIP'), c.link('Standard')] },
					VIP: { main: [c.toInput('Merge', 0)] },
					Standard: { main: [c.toInput('Merge', 1)] },
					Merge: { main: [c.link('Write')] },
				},
				heads: ['VIP?'],
			}
		: {
				// Both inputs have data: the If's true branch and a lookup beside it.
				nodes: [c.ifFlag('Paid?', 'paid'), c.noOp('Look Up Customer'), c.merge('Merge', c.MERGE_MODES[mode]), write],
				connections: {
					'Paid?': { main: [c.toInput('Merge', 0), []] },
					'Look Up Customer': { main: [c.toInput('Merge', 1)] },
					Merge: { main: [c.link('Write')] },
				},
				heads: ['Paid?', 'Look Up Customer'],
			};
}

/** Rows both front ends run. */
const SHARED: Record<string, Row> = {
	'If with a branch that ends without the effect': both({
		shape: (api) => ({
			nodes: [c.ifFlag('Skip?', 'skip'), c.callApi('Call your API', api)],
			connections: { 'Skip?': { main: [[], c.link('Call your API')] } },
			heads: ['Skip?'],
		}),
		run: async (ctx) => {
			const skipped = { id: eventId('mx_if_skip'), type: 'e2e.if', skip: true };
			const charged = { id: eventId('mx_if_charge'), type: 'e2e.if' };
			const { answers, gaveUp } = await ctx.deliver([skipped, charged]);
			expect(gaveUp).toEqual([]);
			expect([answers[skipped.id], answers[charged.id]]).toEqual([[200], [200]]);
			expect(ctx.effects([skipped, charged])).toEqual([0, 1]);
			expect(await ctx.states([skipped, charged])).toEqual(['completed', 'completed']);
		},
	}),
	...Object.fromEntries(
		(Object.keys(c.MERGE_MODES) as Array<keyof typeof c.MERGE_MODES>).map((mode): [string, Row] => {
			const run = async (ctx: c.RowContext) => {
				const event = { id: eventId(`mx_merge_${mode.replace(/\W/g, '')}`), type: 'e2e.merge', paid: true };
				ctx.api.failNext(ctx.keyOf(event), 500, 1);
				await ctx.expectFailedOnceThenOneEffect(event);
			};
			return [
				`Merge (${mode}) after an If, the write after it ${FAILS_ONCE}`,
				{
					template: { shape: (api) => mergeAfterIf(mode, api, 'continueErrorOutput'), run },
					trigger: { shape: (api) => mergeAfterIf(mode, api), run },
				},
			];
		}),
	),
	// n8n's Wait sleeps inside the run below 65 s: behind the trigger too, it is one more node of the run.
	'a Wait (1 s) before the effect': {
		template: {
			shape: (api) => ({
				nodes: [c.waitSeconds('Wait', 1), c.callApi('Call your API', api, { onError: 'continueErrorOutput' })],
				connections: { Wait: { main: [c.link('Call your API')] } },
				heads: ['Wait'],
			}),
			run: async (ctx) => ctx.expectOneEffect({ id: eventId('mx_wait_before'), type: 'e2e.wait' }),
		},
		trigger: {
			shape: (api) => ({
				nodes: [c.waitSeconds('Wait', 1), c.callApi('Call your API', api)],
				connections: { Wait: { main: [c.link('Call your API')] } },
				heads: ['Wait'],
			}),
			run: async (ctx) => ctx.expectOneEffect({ id: eventId('mxt_wait_before'), type: 'e2e.wait' }),
		},
	},
	'a Wait (1 s) after the effect': {
		template: {
			shape: (api) => ({
				nodes: [c.callApi('Call your API', api), c.waitSeconds('Wait', 1)],
				connections: { 'Call your API': { main: [c.link('Wait')] } },
				heads: ['Call your API'],
			}),
			run: async (ctx) => ctx.expectOneEffect({ id: eventId('mx_wait_after'), type: 'e2e.wait' }),
		},
		trigger: {
			shape: (api) => ({
				nodes: [c.callApi('Call your API', api), c.waitSeconds('Wait', 1)],
				connections: { 'Call your API': { main: [c.link('Wait')] } },
				heads: ['Call your API'],
			}),
			run: async (ctx) => ctx.expectOneEffect({ id: eventId('mxt_wait_after'), type: 'e2e.wait' }),
		},
	},
	[`Execute Workflow waiting for the sub-workflow, whose call ${FAILS_ONCE}`]: both({
		shape: (api) => ({ nodes: [c.executeSubWorkflow('Run Sub-workflow', api, { wait: true })], heads: ['Run Sub-workflow'] }),
		run: async (ctx) => {
			const event = { id: eventId('mx_sub_wait'), type: 'e2e.sub' };
			ctx.api.failNext(ctx.keyOf(event), 500, 1);
			await ctx.expectFailedOnceThenOneEffect(event);
		},
	}),
	// n8n returns a sub-workflow's last node's output: the failed call's item stays inside the sub-execution, read from its record.
	[`Execute Workflow waiting for a sub-workflow whose call (Continue (using error output), that output unconnected) ${FAILS_ONCE}, an audit node beside it running last`]:
		both({
			shape: (api) => ({
				nodes: [c.executeSubWorkflow('Run Sub-workflow', api, { wait: true, auditBeside: true })],
				heads: ['Run Sub-workflow'],
			}),
			run: async (ctx) => {
				const event = { id: eventId('mx_sub_beside'), type: 'e2e.sub' };
				ctx.api.failNext(ctx.keyOf(event), 500, 1);
				await ctx.expectFailedOnceThenOneEffect(event);
			},
		}),
	'Execute Workflow not waiting for the sub-workflow': both({
		outcome: REFUSED_BEFORE_ANY_EFFECT,
		shape: (api) => ({ nodes: [c.executeSubWorkflow('Run Sub-workflow', api, { wait: false })], heads: ['Run Sub-workflow'] }),
		run: async (ctx) => ctx.expectRefused({ id: eventId('mx_sub_nowait'), type: 'e2e.sub' }, { reason: /without waiting/ }),
	}),
	'Retry On Fail (the call fails twice, then succeeds)': both({
		shape: (api) => ({
			nodes: [c.callApi('Call your API', api, { retryOnFail: true, maxTries: 3, waitBetweenTries: 100 })],
			heads: ['Call your API'],
		}),
		run: async (ctx) => {
			const event = { id: eventId('mx_retry'), type: 'e2e.retry' };
			ctx.api.failNext(ctx.keyOf(event), 500, 2);
			await ctx.expectOneEffect(event);
		},
	}),
	// The events reach each node together, so the nodes continue on error (at Stop Workflow Reserve refuses:
	// n8n would not record which events a failed node had done): the failed event's key alone fails.
	'several events in one delivery, a key each, a Code node throwing for one of them (Continue (using error output)), then the call': both({
		shape: (api) => ({
			batch: true,
			nodes: [
				c.codeFailingUntil('Check', { onError: 'continueErrorOutput' }),
				c.callApi('Call your API', api, { onError: 'continueErrorOutput' }),
			],
			connections: { Check: { main: [c.link('Call your API')] } },
			heads: ['Check'],
		}),
		run: async (ctx) => ctx.expectBatchFailedOnceThenOneEffectEach('mx_code_items', () => {}, { failUntilForSecond: FAILING_FOR_MS }),
	}),
	[`several events in one delivery, a key each, Loop Over Items, the write for one ${FAILS_ONCE}`]: {
		template: {
			shape: (api) => ({
				batch: true,
				nodes: [c.loop('Loop Over Items'), c.callApi('Write', api, { onError: 'continueErrorOutput' })],
				connections: {
					'Loop Over Items': { main: [[], c.link('Write')] },
					Write: { main: [c.link('Loop Over Items'), c.link('Loop Over Items')] },
				},
				heads: ['Loop Over Items'],
			}),
			run: async (ctx) =>
				ctx.expectBatchFailedOnceThenOneEffectEach('mx_loop', (events: Array<{ id: string }>) =>
					ctx.api.failNext(ctx.keyOf(events[1]), 500, 1),
				),
		},
		trigger: {
			shape: (api) => ({
				batch: true,
				nodes: [c.loop('Loop Over Items'), c.callApi('Write', api)],
				connections: { 'Loop Over Items': { main: [[], c.link('Write')] }, Write: { main: [c.link('Loop Over Items')] } },
				heads: ['Loop Over Items'],
			}),
			run: async (ctx) =>
				ctx.expectBatchFailedOnceThenOneEffectEach('mxt_loop', (events: Array<{ id: string }>) =>
					ctx.api.failNext(ctx.keyOf(events[1]), 500, 1),
				),
		},
	},
	'Always Output Data on a step that returns nothing, after the call': both({
		shape: (api) => ({
			nodes: [c.callApi('Call your API', api), c.codeReturningNothing('Nothing Back', { alwaysOutputData: true }), c.noOp('After')],
			connections: { 'Call your API': { main: [c.link('Nothing Back')] }, 'Nothing Back': { main: [c.link('After')] } },
			heads: ['Call your API'],
		}),
		run: async (ctx) => ctx.expectOneEffect({ id: eventId('mx_always'), type: 'e2e.always' }),
	}),
	'a step that returns zero items, after the call': {
		template: {
			shape: (api) => ({
				nodes: [c.callApi('Call your API', api), c.codeReturningNothing('Nothing Back')],
				connections: { 'Call your API': { main: [c.link('Nothing Back')] } },
				heads: ['Call your API'],
			}),
			run: async (ctx) => ctx.expectOneEffect({ id: eventId('mx_zero'), type: 'e2e.zero' }),
		},
		// The last node gives no item: the key is completed (the call ran) and the event is answered 200 with an empty body.
		trigger: {
			outcome: '200, completed, one effect',
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
	},
	'a Respond to Webhook before the effect': both({
		outcome: REFUSED_BEFORE_ANY_EFFECT,
		shape: (api) => ({
			nodes: [c.respondToWebhook('Answer Early'), c.callApi('Call your API', api)],
			connections: { 'Answer Early': { main: [c.link('Call your API')] } },
			heads: ['Answer Early'],
		}),
		run: async (ctx) => ctx.expectRefused({ id: eventId('mx_respond_before'), type: 'e2e.respond' }, { reason: /answers the webhook/ }),
	}),
	'a Respond to Webhook after the effect': both({
		outcome: REFUSED_BEFORE_ANY_EFFECT,
		shape: (api) => ({
			nodes: [c.callApi('Call your API', api), c.respondToWebhook('Answer')],
			connections: { 'Call your API': { main: [c.link('Answer')] } },
			heads: ['Call your API'],
		}),
		run: async (ctx) => ctx.expectRefused({ id: eventId('mx_respond_after'), type: 'e2e.respond' }, { reason: /answers the webhook/ }),
	}),
	// n8n's If at Continue takes a condition it cannot evaluate (strict types meeting another type) as false and
	// records nothing: the key would complete without the call.
	'an If at Continue (regular output) before the effect': both({
		outcome: REFUSED_BEFORE_ANY_EFFECT,
		shape: (api) => ({
			nodes: [c.ifFlag('Paid?', 'paid', { onError: 'continueRegularOutput' }), c.callApi('Call your API', api)],
			connections: { 'Paid?': { main: [c.link('Call your API')] } },
			heads: ['Paid?'],
		}),
		run: async (ctx) =>
			ctx.expectRefused({ id: eventId('mx_if_continue'), type: 'e2e.if', paid: true }, { reason: /as if the condition had an answer/ }),
	}),
	'a disabled node in the step': both({
		shape: (api) => ({
			nodes: [c.noOp('Off', { disabled: true }), c.callApi('Call your API', api)],
			connections: { Off: { main: [c.link('Call your API')] } },
			heads: ['Off'],
		}),
		run: async (ctx) => ctx.expectOneEffect({ id: eventId('mx_disabled'), type: 'e2e.disabled' }),
	}),
	[`an HTTP Request at n8n's default error settings that ${FAILS_ONCE}`]: both({
		shape: (api) => ({ nodes: [c.callApi('Call your API', api)], heads: ['Call your API'] }),
		run: async (ctx) => {
			const event = { id: eventId('mx_http_default'), type: 'e2e.default' };
			ctx.api.failNext(ctx.keyOf(event), 500, 1);
			await ctx.expectFailedOnceThenOneEffect(event);
		},
	}),
	[`a Code node at n8n's default error settings that ${FAILS_ONCE}, then the call`]: both({
		shape: (api) => ({
			nodes: [c.codeFailingUntil('Check'), c.callApi('Call your API', api)],
			connections: { Check: { main: [c.link('Call your API')] } },
			heads: ['Check'],
		}),
		run: async (ctx) =>
			ctx.expectFailingUntilThenOneEffect({ id: eventId('mx_code_default'), type: 'e2e.default', failUntil: Date.now() + FAILING_FOR_MS }),
	}),
};

/**
 * Rows of the webhook template only: a Wait resumed by a call (the trigger refuses every Wait), the
 * template's own Postgres insert, several keys from one delivery without a Split Out (the template
 * reserves each array entry itself).
 */
const TEMPLATE_ONLY: Record<string, Variant> = {
	'a Wait for a call to its resume URL before the effect (the execution waits and is resumed)': {
		shape: (api) => ({
			nodes: [
				c.sendResumeLink('Send Approval Link', api),
				c.waitForCall('Wait for Approval'),
				c.callApi('Call your API', api, { onError: 'continueErrorOutput' }, c.KEY_AFTER_RESUME),
			],
			connections: {
				'Send Approval Link': { main: [c.link('Wait for Approval')] },
				'Wait for Approval': { main: [c.link('Call your API')] },
			},
			heads: ['Send Approval Link'],
		}),
		run: async (ctx) => ctx.expectResumedOnce({ id: eventId('mx_resume_before'), type: 'e2e.resume' }, { effectsWhileWaiting: 0 }),
	},
	'a Wait for a call to its resume URL after the effect': {
		shape: (api) => ({
			nodes: [
				c.callApi('Call your API', api),
				c.sendResumeLink('Send Receipt Link', api, '$json.eventKey'),
				c.waitForCall('Wait for Receipt'),
			],
			connections: {
				'Call your API': { main: [c.link('Send Receipt Link')] },
				'Send Receipt Link': { main: [c.link('Wait for Receipt')] },
			},
			heads: ['Call your API'],
		}),
		run: async (ctx) => ctx.expectResumedOnce({ id: eventId('mx_resume_after'), type: 'e2e.resume' }, { effectsWhileWaiting: 1 }),
	},
	[`the template's Postgres insert at n8n's default error settings, which ${FAILS_ONCE}`]: {
		shape: () => ({ keepExample: true }),
		run: async (ctx) => {
			const h = ctx.h;
			const type = `e2e.pgdefault.${Date.now().toString(36)}`;
			const constraint = `business_log_mx_refuses_${Date.now().toString(36)}`;
			await h.appQuery(`ALTER TABLE business_log ADD CONSTRAINT ${constraint} CHECK (event_type IS DISTINCT FROM '${type}')`);
			try {
				const event = { id: eventId('mx_pg_default'), type };
				let fixed: Promise<unknown> | null = null;
				const { answers, gaveUp } = await ctx.deliver([event], {
					// The fix lands before the provider's next attempt (ALTER TABLE can wait for other rows' transactions).
					onAttempt: async (attempt: { status: number }) => {
						if (attempt.status !== 500 || fixed) return;
						fixed = h.appQuery(`ALTER TABLE business_log DROP CONSTRAINT ${constraint}`);
						await fixed;
					},
				});
				await fixed;
				expect(gaveUp).toEqual([]);
				expect(answers[event.id]).toEqual(c.FAILED_THEN_ACCEPTED);
				const rows = await h.appQuery('SELECT count(*)::int AS n FROM business_log WHERE event_key = $1', [ctx.keyOf(event)]);
				expect(rows.rows[0].n).toBe(1);
				expect(await ctx.states([event])).toEqual(['completed']);
			} finally {
				await h.appQuery(`ALTER TABLE business_log DROP CONSTRAINT IF EXISTS ${constraint}`);
			}
		},
	},
	[`several keys from one delivery (an array of events, as SendGrid sends), the call for one ${FAILS_ONCE}`]: {
		shape: (api) => ({
			batch: true,
			nodes: [c.callApi('Call your API', api, { onError: 'continueErrorOutput' })],
			heads: ['Call your API'],
		}),
		run: async (ctx) =>
			ctx.expectBatchFailedOnceThenOneEffectEach('mx_batch', (events: Array<{ id: string }>) =>
				ctx.api.failNext(ctx.keyOf(events[1]), 500, 1),
			),
	},
};

/** Rows of the trigger only: what it refuses at publish, how it settles several events, its own settings, n8n's Stop, timeout and Retry. */
const TRIGGER_ONLY: Record<string, Variant> = {
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
	'a Wait (2 hours) before the effect: refused before any effect': {
		shape: (api) => ({
			nodes: [c.waitFor('Wait', 2, 'hours'), c.callApi('Call your API', api)],
			connections: { Wait: { main: [c.link('Call your API')] } },
			heads: ['Wait'],
		}),
		run: async (ctx) =>
			ctx.expectRefused({ id: eventId('mxt_wait_long'), type: 'e2e.wait' }, { reason: /"Wait" makes the execution wait/ }),
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
			const events = c.twoEvents('mxt_once');
			const call = c.batchKey(events.map(ctx.keyOf));
			ctx.api.failNext(call, 500, 1);
			const first = await ctx.h.deliver(ctx.url, events);
			expect({ status: first.status, states: await ctx.states(events), calls: ctx.api.calls(call) }).toEqual({
				status: 500,
				states: ['failed', 'failed'],
				calls: 0,
			});
			const { answers, gaveUp } = await ctx.deliver([events]);
			expectAcceptedAfterTheRun(Object.values(answers), gaveUp);
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
				const events = c.twoEvents('mxt_sort');
				ctx.api.failNext(ctx.keyOf(events[0]), 500, 1);
				const first = await ctx.h.deliver(ctx.url, events);
				expect({ status: first.status, states: await ctx.states(events), effects: ctx.effects(events) }).toEqual({
					status: 500,
					states: ['failed', 'completed'],
					effects: [0, 1],
				});
				const { answers, gaveUp } = await ctx.deliver([events]);
				expectAcceptedAfterTheRun(Object.values(answers), gaveUp);
				expect(ctx.effects(events)).toEqual([1, 1]);
				expect(await ctx.states(events)).toEqual(['completed', 'completed']);
			},
		},
	// Reserve refuses this shape for several events when it runs (each split item would trace to every key);
	// its refusal must reach the provider as a non-2xx, as the webhook template's 503 does.
	'several events in one delivery, Aggregate (Individual Fields) → Split Out → the call (Continue (using error output)): refused, never 2xx':
		{
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
			run: async (ctx) => c.expectRefusedWhenReserveRuns(ctx, c.twoEvents('mxt_aggregate')),
		},
	"several events in one delivery, a Code node at n8n's default error settings (Stop Workflow) before the call: refused, never 2xx": {
		shape: (api) => ({
			batch: true,
			nodes: [c.codeFailingUntil('Check'), c.callApi('Call your API', api, { onError: 'continueErrorOutput' })],
			connections: { Check: { main: [c.link('Call your API')] } },
			heads: ['Check'],
		}),
		run: async (ctx) => c.expectRefusedWhenReserveRuns(ctx, c.twoEvents('mxt_code_stop')),
	},
	// A failure of the call would end the loop with the events that went round waiting for the Done output, which leads
	// on: their keys would fail after their calls, and the retry would call again.
	'several events in one delivery, Loop Over Items (batch size 1) → the call (Stop Workflow) → back, its Done output → a summary: refused, never 2xx':
		{
			shape: (api) => ({
				batch: true,
				nodes: [c.loop('Each Event'), c.callApi('Call your API', api), c.noOp('Summary')],
				connections: {
					'Each Event': { main: [c.link('Summary'), c.link('Call your API')] },
					'Call your API': { main: [c.link('Each Event')] },
				},
				heads: ['Each Event'],
			}),
			run: async (ctx) => c.expectRefusedWhenReserveRuns(ctx, c.twoEvents('mxt_loop_done')),
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
			const events = c.twoEvents('mxt_aggregate_stop');
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
			c.expectHeldThroughCancel(
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
				await c.expectCallEndsByItsOwnTimeout(ctx, workflowId, event);
				return;
			}
			await c.expectHeldThroughCancel(ctx, workflowId, event, {
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
				ctx.api.failNext(ctx.keyOf(event), 500, 1);
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
				// n8n answers the Retry only when the retried execution has ended (1.x's queue mode: when Bull
				// reports the job finished, minutes later on a loaded machine): past that wait, the effect is
				// read from the API's side.
				const retried = retryExecution(ctx.h, String(failed[0].id));
				const waited = new AbortController();
				const answer = await Promise.race([
					retried.then((r) => r.status),
					sleep(RETRY_ANSWER_WAIT_MS, 'no answer yet', { signal: waited.signal }),
				]).finally(() => waited.abort());
				retried.catch(() => undefined);
				expect([200, 'no answer yet']).toContain(answer);
				await eventually(
					() => ctx.effects([event]),
					([effects]) => effects >= 2,
					{ timeoutMs: 60_000 },
				);
				expect({ effects: ctx.effects([event]), states: await ctx.states([event]), attempts: await ctx.attempts([event]) }).toEqual({
					effects: [2],
					states: ['completed'],
					attempts: [2],
				});
			},
		},
	// Billing and analytics both subscribed to one Stripe event: the template imported twice, as shipped.
	'one event to two workflows imported from the template: each workflow runs it once': {
		workflows: 2,
		shape: (api) => ({ nodes: [c.callApi('Call your API', api)], heads: ['Call your API'] }),
		run: async (ctx, { workflowId, others: [second] }) => {
			const event = { id: eventId('mxt_two_workflows'), type: 'e2e.two' };
			const [billing, analytics] = await Promise.all([ctx.deliver([event]), c.deliverRetried(second.url, [event])]);
			expect(
				[billing, analytics].map(({ answers, gaveUp, attempts }) => ({ answers, gaveUp, outcomes: attempts.map((a) => a.outcome) })),
			).toEqual([billing, analytics].map(() => ({ answers: { [event.id]: [200] }, gaveUp: [], outcomes: ['new'] })));
			const keys = [workflowId, second.workflowId].map((id) => triggerKey(id, event.id));
			expect(keys.map((key) => ctx.api.calls(key))).toEqual([1, 1]);
			expect(Object.values(await c.keyRows(ctx.h, keys)).map((row) => row?.status)).toEqual(['completed', 'completed']);
		},
	},
	'one event to two workflows imported from the template, Share Keys Across Workflows on: the second is answered as a copy': {
		workflows: 2,
		shape: (api) => ({
			trigger: { parameters: { options: { shareKeysAcrossWorkflows: true } } },
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
		shape: (api) => ({ trigger: { typeVersion: 1 }, nodes: [c.callApi('Call your API', api)], heads: ['Call your API'] }),
		run: async (ctx) => c.expectCopyDuringRunInProgress(ctx, { id: eventId('mxt_mode_lease'), type: 'e2e.mode' }),
	},
	'trigger version 1, Mode Permanent (No Retry After a Crash): a copy during the run is answered 409, after it the stored answer': {
		shape: (api) => ({
			trigger: { typeVersion: 1, parameters: { mode: 'permanent' } },
			nodes: [c.callApi('Call your API', api)],
			heads: ['Call your API'],
		}),
		run: async (ctx) => c.expectCopyDuringRunInProgress(ctx, { id: eventId('mxt_mode_permanent'), type: 'e2e.mode' }),
	},
	'an unsigned trigger (Signature Scheme None, no authentication): a copy is answered duplicate, never with the stored answer': {
		shape: (api) => ({
			trigger: { parameters: { scheme: 'none' }, credentials: { webhookSignatureApi: null } },
			nodes: [c.callApi('Call your API', api)],
			heads: ['Call your API'],
		}),
		run: async (ctx) => {
			const event = { id: eventId('mxt_unsigned'), type: 'e2e.unsigned' };
			const key = ctx.keyOf(event);
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
			const [stored] = Object.values(await c.keyRows(ctx.h, [ctx.keyOf(event)]));
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

/**
 * In queue mode the template's variants of the shared rows are left out: its step runs in a worker, the same engine
 * as one process (where they run, with every row in-process), and the trigger's variant of each still runs here.
 * The template's own rows stay (a Wait resumed through main, its Postgres insert, several keys from one delivery).
 */
const sharedInThisTopology = (row: Row): Row => (TOPOLOGY === 'queue' ? { trigger: row.trigger } : row);

const ROWS: Record<string, Row> = {
	...Object.fromEntries(Object.entries(SHARED).map(([name, row]) => [name, sharedInThisTopology(row)])),
	...Object.fromEntries(Object.entries(TEMPLATE_ONLY).map(([name, variant]) => [name, { template: variant }])),
	...Object.fromEntries(Object.entries(TRIGGER_ONLY).map(([name, variant]) => [name, { trigger: variant }])),
};

/** The name under which a row's further workflow is published (`index` from 0, for its second workflow). */
const otherWorkflow = (row: string, index: number) => `${row} (workflow ${index + 2})`;

/** One front end's variant of every row that has one, and a further entry for each further workflow a variant publishes. */
function variantsOf(frontEnd: FrontEnd): Record<string, Variant> {
	const all: Record<string, Variant> = {};
	for (const [name, row] of Object.entries(ROWS)) {
		const variant = row[frontEnd];
		if (!variant) continue;
		all[name] = variant;
		for (let i = 0; i < (variant.workflows ?? 1) - 1; i++) all[otherWorkflow(name, i)] = variant;
	}
	return all;
}

async function createRowCredentials(h: Harness): Promise<void> {
	// Never called: the Slack node only has to be configured as a user would.
	credentials.slack = await createCredential(h, 'slackApi', { accessToken: 'xoxb-e2e-never-called' });
	credentials.basicAuth = await createCredential(h, 'idempotentWebhookBasicAuthApi', BASIC_AUTH);
}

describe('the construct matrix: the shapes users build, behind the webhook template and the Idempotent Webhook trigger, in a real n8n', () => {
	const h = harness();
	let api: Sink;
	const published: Record<FrontEnd, Record<string, { url: string; workflowId: string; publishRefusal?: string }>> = {
		template: {},
		trigger: {},
	};
	let ready: Promise<void> | undefined;
	const started = Date.now();

	/** Every row's workflows, published once per front end (the rows wait for it: concurrent tests start on their own). */
	const publishAll = () =>
		(ready ??= (async () => {
			api = await startSink();
			await createRowCredentials(h);
			await Promise.all(
				(Object.keys(FRONT_ENDS) as FrontEnd[]).map(async (frontEnd) => {
					published[frontEnd] = await c.publishRows(h, variantsOf(frontEnd), api.url, frontEnd);
				}),
			);
		})());
	beforeAll(publishAll);
	afterAll(async () => {
		process.stderr.write(`[e2e figures] construct matrix (${h.topology}): ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
		await api?.close();
	});

	const runRow = async ([frontEnd, name]: [FrontEnd, string]) => {
		await publishAll();
		const variant = ROWS[name][frontEnd] as Variant;
		const own = published[frontEnd];
		const others = Array.from({ length: (variant.workflows ?? 1) - 1 }, (_, i) => own[otherWorkflow(name, i)]);
		const keyOf = c.rowKeyOf(frontEnd, variant.shape(api.url), own[name].workflowId);
		await variant.run(c.rowContext(h, api, own[name], keyOf, REFUSALS[frontEnd]), { workflowId: own[name].workflowId, others });
	};
	const cases = (knownBreak: boolean): Array<[string, FrontEnd, string]> =>
		(Object.keys(FRONT_ENDS) as FrontEnd[]).flatMap((frontEnd) =>
			Object.entries(ROWS)
				.filter(([, row]) => row[frontEnd] !== undefined && Boolean(row[frontEnd]?.knownBreak) === knownBreak)
				.map(([name, row]): [string, FrontEnd, string] => {
					const outcome = row[frontEnd]?.outcome;
					return [`${FRONT_ENDS[frontEnd]}: ${name}${outcome ? `: ${outcome}` : ''}`, frontEnd, name];
				}),
		);
	test.concurrent.each(cases(false))('%s', (_title, frontEnd, name) => runRow([frontEnd, name]));
	// REDTEAM_SHOW=1 runs the known breaks as plain tests, to print what was observed.
	const knownBreaks = process.env.REDTEAM_SHOW === '1' ? test.concurrent.each : test.concurrent.failing.each;
	// jest refuses an empty table: the known breaks run only while there are some.
	if (cases(true).length > 0) knownBreaks(cases(true))('known break, %s', (_title, frontEnd, name) => runRow([frontEnd, name]));
});
