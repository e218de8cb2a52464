// The construct matrix behind the Idempotent Webhook trigger, in a real n8n: the trigger template
// (Store: Postgres) with its example step replaced by the shapes users build (If, Merge after an If,
// Wait, Execute Workflow, Retry On Fail, Code, Always Output Data, zero items, Respond to Webhook, a
// disabled node, n8n's default error settings, several events in one delivery). The effect is a call
// to the test's API, which fails a call on demand; a provider retries every non-2xx. Each row: the
// effects per event (one), no event lost (every delivery ends 2xx, every key completed), and the
// answers in order. What the trigger cannot settle (a Wait, a Respond to Webhook node, a sub-workflow
// not waited for) is refused when the workflow is published, before any delivery.
// Every row's workflow is published once, and the rows run side by side.
// e2e-tags: single queue compatibility
import { harness, eventId } from '../support/e2e/harness';
import { startSink } from '../support/e2e/sink';
import * as c from '../support/e2e/constructs';

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

/** One row of the matrix: the user's step after the trigger (calling the API at `api`), and what it checks. */
interface Row {
	shape: (api: string) => c.RowShape;
	run: (ctx: RowContext) => Promise<void>;
}

const FAILS_ONCE = 'fails once';
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
};

describe('the construct matrix behind the Idempotent Webhook trigger, in a real n8n', () => {
	const h = harness();
	let api: Awaited<ReturnType<typeof startSink>>;
	let published: Published;
	let ready: Promise<void> | undefined;
	const started = Date.now();

	const publishAll = () =>
		(ready ??= (async () => {
			api = await startSink();
			published = (await c.publishRows(h, ROWS, api.url, 'trigger')) as Published;
		})());
	beforeAll(publishAll);
	afterAll(async () => {
		process.stderr.write(`[e2e figures] construct matrix, trigger rows (${h.topology}): ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
		await api?.close();
	});

	test.concurrent.each(Object.keys(ROWS))('%s', async (row) => {
		await publishAll();
		await ROWS[row].run(c.rowContext(h, api, published[row], REFUSED) as RowContext);
	});
});
