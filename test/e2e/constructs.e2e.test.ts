// The construct matrix of docs/templates.md ("What you build, what you get") in a real n8n: the
// Postgres webhook template with its example business step replaced by the shapes users build
// (If, Merge after an If, Wait, Loop Over Items, Execute Workflow, Retry On Fail, Code, Always Output
// Data, zero items, Respond to Webhook, a disabled node, n8n's default error settings, several events
// in one delivery), Settle beside the step as the template wires it. The effect is a call to the
// test's API, which fails a call on demand; a provider retries every non-2xx. Each row: the effects
// per event (one), no event lost (every delivery ends 2xx, every key completed), and the answers in
// order; a shape the package cannot guarantee is refused before any effect (503, nothing reserved).
// Every row's workflow is published once, and the rows run side by side.
// e2e-tags: single queue compatibility
import { harness, eventId } from '../support/e2e/harness';
import { startSink } from '../support/e2e/sink';
import * as c from '../support/e2e/constructs';

const FAILS_ONCE = 'fails once';

type Sink = Awaited<ReturnType<typeof startSink>>;
type RowContext = ReturnType<typeof c.rowContext>;
/**
 * What ctx.deliver resolves to (its JavaScript leaves `answers` untyped): each event's answers in
 * order, the events the provider gave up on, every attempt.
 */
interface Delivered {
	answers: Record<string, number[]>;
	gaveUp: string[];
	attempts: unknown[];
}
/** A row of the matrix: the step's shape (given the API's URL), and what it delivers and checks. */
interface Row {
	shape: (api: string) => object;
	run: (ctx: RowContext) => Promise<void>;
}

const ROWS: Record<string, Row> = {
	'If with a branch that ends without the effect': {
		shape: (api) => ({
			nodes: [c.ifFlag('Skip?', 'skip'), c.callApi('Call your API', api)],
			connections: { 'Skip?': { main: [[], c.link('Call your API')] } },
			heads: ['Skip?'],
		}),
		run: async (ctx) => {
			const skipped = { id: eventId('mx_if_skip'), type: 'e2e.if', skip: true };
			const charged = { id: eventId('mx_if_charge'), type: 'e2e.if' };
			const { answers, gaveUp } = (await ctx.deliver([skipped, charged])) as Delivered;
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
				shape: (api: string) =>
					mode === 'append'
						? {
								// Only one branch of the If has data: n8n runs the Merge after Settle.
								nodes: [
									c.ifFlag('VIP?', 'vip'),
									c.noOp('VIP'),
									c.noOp('Standard'),
									c.merge('Merge', c.MERGE_MODES[mode]),
									c.callApi('Write', api, { onError: 'continueErrorOutput' }),
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
								// Both inputs have data: the If's true branch and a lookup beside it.
								nodes: [
									c.ifFlag('Paid?', 'paid'),
									c.noOp('Look Up Customer'),
									c.merge('Merge', c.MERGE_MODES[mode]),
									c.callApi('Write', api, { onError: 'continueErrorOutput' }),
								],
								connections: {
									'Paid?': { main: [c.toInput('Merge', 0), []] },
									'Look Up Customer': { main: [c.toInput('Merge', 1)] },
									Merge: { main: [c.link('Write')] },
								},
								heads: ['Paid?', 'Look Up Customer'],
							},
				run: async (ctx: RowContext) => {
					const event = { id: eventId(`mx_merge_${mode.replace(/\W/g, '')}`), type: 'e2e.merge', paid: true };
					ctx.api.failNext(`evt:${event.id}`, 500, 1);
					await ctx.expectFailedOnceThenOneEffect(event);
				},
			},
		]),
	),
	'a Wait (1 s) before the effect': {
		shape: (api) => ({
			nodes: [c.waitSeconds('Wait', 1), c.callApi('Call your API', api, { onError: 'continueErrorOutput' })],
			connections: { Wait: { main: [c.link('Call your API')] } },
			heads: ['Wait'],
		}),
		run: async (ctx) => ctx.expectOneEffect({ id: eventId('mx_wait_before'), type: 'e2e.wait' }),
	},
	'a Wait (1 s) after the effect': {
		shape: (api) => ({
			nodes: [c.callApi('Call your API', api), c.waitSeconds('Wait', 1)],
			connections: { 'Call your API': { main: [c.link('Wait')] } },
			heads: ['Call your API'],
		}),
		run: async (ctx) => ctx.expectOneEffect({ id: eventId('mx_wait_after'), type: 'e2e.wait' }),
	},
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
	[`Loop Over Items over 3 keys from one delivery, the write for one ${FAILS_ONCE}`]: {
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
				ctx.api.failNext(`evt:${events[1].id}`, 500, 1),
			),
	},
	[`Execute Workflow waiting for the sub-workflow, whose call ${FAILS_ONCE}`]: {
		shape: (api) => ({ nodes: [c.executeSubWorkflow('Run Sub-workflow', api, { wait: true })], heads: ['Run Sub-workflow'] }),
		run: async (ctx) => {
			const event = { id: eventId('mx_sub_wait'), type: 'e2e.sub' };
			ctx.api.failNext(`evt:${event.id}`, 500, 1);
			await ctx.expectFailedOnceThenOneEffect(event);
		},
	},
	'Execute Workflow not waiting for the sub-workflow: refused before any effect': {
		shape: (api) => ({ nodes: [c.executeSubWorkflow('Run Sub-workflow', api, { wait: false })], heads: ['Run Sub-workflow'] }),
		run: async (ctx) => ctx.expectRefused({ id: eventId('mx_sub_nowait'), type: 'e2e.sub' }, { reason: /without waiting/ }),
	},
	'Retry On Fail (the call fails twice, then succeeds)': {
		shape: (api) => ({
			nodes: [c.callApi('Call your API', api, { retryOnFail: true, maxTries: 3, waitBetweenTries: 100 })],
			heads: ['Call your API'],
		}),
		run: async (ctx) => {
			const event = { id: eventId('mx_retry'), type: 'e2e.retry' };
			ctx.api.failNext(`evt:${event.id}`, 500, 2);
			await ctx.expectOneEffect(event);
		},
	},
	'a Code node throwing for one of several items (Continue (using error output)), then the call': {
		shape: (api) => ({
			batch: true,
			nodes: [
				c.codeFailingUntil('Check', { onError: 'continueErrorOutput' }),
				c.callApi('Call your API', api, { onError: 'continueErrorOutput' }),
			],
			connections: { Check: { main: [c.link('Call your API')] } },
			heads: ['Check'],
		}),
		run: async (ctx) => ctx.expectBatchFailedOnceThenOneEffectEach('mx_code_items', () => {}, { failUntilForSecond: 5000 }),
	},
	'Always Output Data on a step that returns nothing, after the call': {
		shape: (api) => ({
			nodes: [c.callApi('Call your API', api), c.codeReturningNothing('Nothing Back', { alwaysOutputData: true }), c.noOp('After')],
			connections: { 'Call your API': { main: [c.link('Nothing Back')] }, 'Nothing Back': { main: [c.link('After')] } },
			heads: ['Call your API'],
		}),
		run: async (ctx) => ctx.expectOneEffect({ id: eventId('mx_always'), type: 'e2e.always' }),
	},
	'a step that returns zero items, after the call': {
		shape: (api) => ({
			nodes: [c.callApi('Call your API', api), c.codeReturningNothing('Nothing Back')],
			connections: { 'Call your API': { main: [c.link('Nothing Back')] } },
			heads: ['Call your API'],
		}),
		run: async (ctx) => ctx.expectOneEffect({ id: eventId('mx_zero'), type: 'e2e.zero' }),
	},
	'a Respond to Webhook before the effect: refused before any effect': {
		shape: (api) => ({
			nodes: [c.respondToWebhook('Answer Early'), c.callApi('Call your API', api)],
			connections: { 'Answer Early': { main: [c.link('Call your API')] } },
			heads: ['Answer Early'],
		}),
		run: async (ctx) => ctx.expectRefused({ id: eventId('mx_respond_before'), type: 'e2e.respond' }, { reason: /answers the webhook/ }),
	},
	'a Respond to Webhook after the effect: refused before any effect': {
		shape: (api) => ({
			nodes: [c.callApi('Call your API', api), c.respondToWebhook('Answer')],
			connections: { 'Call your API': { main: [c.link('Answer')] } },
			heads: ['Call your API'],
		}),
		run: async (ctx) => ctx.expectRefused({ id: eventId('mx_respond_after'), type: 'e2e.respond' }, { reason: /answers the webhook/ }),
	},
	'a disabled node in the step': {
		shape: (api) => ({
			nodes: [c.noOp('Off', { disabled: true }), c.callApi('Call your API', api)],
			connections: { Off: { main: [c.link('Call your API')] } },
			heads: ['Off'],
		}),
		run: async (ctx) => ctx.expectOneEffect({ id: eventId('mx_disabled'), type: 'e2e.disabled' }),
	},
	[`an HTTP Request at n8n's default error settings that ${FAILS_ONCE}`]: {
		shape: (api) => ({ nodes: [c.callApi('Call your API', api)], heads: ['Call your API'] }),
		run: async (ctx) => {
			const event = { id: eventId('mx_http_default'), type: 'e2e.default' };
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
			ctx.expectFailingUntilThenOneEffect({ id: eventId('mx_code_default'), type: 'e2e.default', failUntil: Date.now() + 5000 }),
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
				const { answers, gaveUp } = (await ctx.deliver([event], {
					onAttempt: (attempt: { status: number }) => {
						if (attempt.status === 500 && !fixed) fixed = h.appQuery(`ALTER TABLE business_log DROP CONSTRAINT ${constraint}`);
					},
				})) as Delivered;
				await fixed;
				expect(gaveUp).toEqual([]);
				expect(answers[event.id]).toEqual(c.FAILED_THEN_ACCEPTED);
				const rows = await h.appQuery('SELECT count(*)::int AS n FROM business_log WHERE event_key = $1', [`evt:${event.id}`]);
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
				ctx.api.failNext(`evt:${events[1].id}`, 500, 1),
			),
	},
};

describe('the construct matrix: the webhook template with the step users build, in a real n8n', () => {
	const h = harness();
	let api: Sink;
	let published: Record<string, { url: string; workflowId: string }>;
	let ready: Promise<void> | undefined;
	const started = Date.now();

	/** Every row's workflow, published once (the rows wait for it: concurrent tests start on their own). */
	const publishAll = () =>
		(ready ??= (async () => {
			api = await startSink();
			published = (await c.publishRows(h, ROWS, api.url, 'template')) as Record<string, { url: string; workflowId: string }>;
		})());
	beforeAll(publishAll);
	afterAll(async () => {
		process.stderr.write(
			`[e2e figures] construct matrix, template rows (${h.topology}): ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
		);
		await api?.close();
	});

	const context = (row: string) => c.rowContext(h, api, published[row]);

	test.concurrent.each(Object.keys(ROWS))('%s', async (row) => {
		await publishAll();
		await ROWS[row].run(context(row));
	});
});
