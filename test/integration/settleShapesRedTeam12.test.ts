import { createHmac } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

import {
	type ICredentialDataDecryptedObject,
	type IConnections,
	type INode,
	type INodeExecutionData,
	type INodeParameters,
	type ITriggerFunctions,
	type IWebhookResponseData,
	type WorkflowExecuteMode,
} from 'n8n-workflow';

import { OUTCOME_HEADER } from '../../lib/webhook/answers';
import { inboxItemOf, inboxOwner } from '../../lib/webhook/inbox';
import { runInbox } from '../../nodes/IdempotentWebhook/inboxRunner';
import { forgetKeptSigningSecrets } from '../../nodes/shared/signingSecret';
import { describeWithN8n, effectsFor, loadBaseNodeFiles, loadBaseNodes, TestEffect, TestEffectOnce } from '../support/n8nBaseNodes';
import {
	addNodeTypes,
	credentialsHelperReading,
	engineBase,
	executeInProcess,
	inProcessWorkflow,
	PACKAGE,
	packageNode,
	webhookResponses,
} from '../support/n8nEngine';
import { holdCall, TestCallInFlight } from '../support/callsInFlight';
import { baseNode, executeInline, inlineSubWorkflow, link, skipIf } from '../support/settleWorkflows';
import { embeddedModule } from '../support/storeTargets';
import { callTriggerWebhook, n8nFolderForTheFile } from '../support/triggerWebhookCall';
import { withSubWorkflowsInProcess } from '../support/triggerProvider';

/*
 * Twelfth red-team pass: the Idempotent Webhook trigger's own paths, which the eleven earlier passes (mostly on the
 * settlement's graph rules) touched least. Respond "At Once" (the durable inbox: 200 at once, the package owns the
 * retries) driven end to end: webhook() in n8n-core's WebhookContext over a real HTTP exchange, each execution run by
 * n8n-core's WorkflowExecute (the trigger's execute() and the execution-end settlement), and the retry runner itself
 * (nodes/IdempotentWebhook/inboxRunner.ts runInbox, as the trigger's trigger() starts it on n8n's leader main), whose
 * emits start executions here as n8n's would; a step failing once, twice, always (dead letter), a copy during the
 * retries, Stop while the step's call is in flight, an execution n8n starts late (a backlog) but within its lease,
 * several events per delivery (a key repeated inside it; one held by another workflow's run), a 10 MB body, a Wait
 * refused at run time; Stop under When the Workflow Ends. Then version 1's Permanent mode, Scope and Share Keys, key
 * extraction edge cases (ids beyond 2^53 inside an Events Path array, NUL and lone surrogates in one event of
 * several), and what the key table keeps of the trigger's own Header Auth credential when a failure message quotes
 * the item (as JSON, through a sub-workflow, and a signature quoted as text). The store is the embedded one, in the
 * file's n8n folder. A row marked failing breaks a promise: its comment says what happens and where.
 */

const SECRET = 'whsec_rt12';
/** The trigger's Header Auth credential: a header name that says nothing of a credential (any name is allowed). */
const HEADER_AUTH = { name: 'X-Webhook-Key', value: 'hk_rt12_0123456789abcdef_never_stored' };

const credentialsHelper = () =>
	credentialsHelperReading(async (_details, type): Promise<ICredentialDataDecryptedObject> => {
		if (type === 'webhookSignatureApi') return { secret: SECRET };
		if (type === 'idempotentWebhookHeaderAuthApi') return { ...HEADER_AUTH };
		throw new Error(`No credential of type ${type}`);
	});

const EXTRA_NODES: Record<string, string> = {
	'n8n-nodes-base.set': 'Set/Set.node.js',
	'n8n-nodes-base.stopAndError': 'StopAndError/StopAndError.node.js',
};

/* The trigger's webhook() as n8n calls it ---------------------------------------------------------------------------- */

let activeWorkflowId = 'wf-rt12';
let activeTrigger: INode;
let lastResult: IWebhookResponseData | Error | undefined;
/** The handling of the last request: webhook() may end the answer (At Once) before it returns what it started. */
let handling: Promise<void> = Promise.resolve();

async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
	lastResult = undefined;
	lastResult = await callTriggerWebhook(request, response, {
		trigger: activeTrigger,
		workflowId: activeWorkflowId,
		credentials: credentialsHelper(),
	});
	// n8n answers what the trigger did not (the execution's answer is read from webhookResponses).
	if (!response.writableEnded) response.writeHead(200).end('{"started":true}');
}

let server: http.Server;
let baseUrl: string;
// Before anything else: n8n-core keeps the n8n folder it first reads for the rest of the file.
const n8nFolder = n8nFolderForTheFile('rt12-n8n-');
const keyFile = () => path.join(n8nFolder(), '.n8n', 'storage', 'n8n-nodes-idempotency', 'keys.sqlite');
const keyStore = () => embeddedModule().openEmbeddedKeyStore({ file: keyFile() });
const stored = async (key: string) => (await keyStore().getKeys([key], { inboxItem: true })).get(key);
const keyOf = (id: string | number) => `wf:${activeWorkflowId}:evt:${id}`;
const sleep = async (ms: number) => await new Promise((resolve) => setTimeout(resolve, ms));

/** Posts a Stripe-signed body (text, exactly), with extra headers. */
async function postStripe(body: string, extraHeaders: Record<string, string> = {}): Promise<Response> {
	const timestamp = Math.floor(Date.now() / 1000);
	const signature = createHmac('sha256', SECRET).update(`${timestamp}.${body}`).digest('hex');
	const response = await fetch(`${baseUrl}/webhook/rt12`, {
		method: 'POST',
		headers: { 'content-type': 'application/json', 'stripe-signature': `t=${timestamp},v1=${signature}`, ...extraHeaders },
		body,
	});
	await handling;
	return response;
}

async function postWithHeaderAuth(body: string): Promise<Response> {
	const response = await fetch(`${baseUrl}/webhook/rt12`, {
		method: 'POST',
		headers: { 'content-type': 'application/json', [HEADER_AUTH.name]: HEADER_AUTH.value },
		body,
	});
	await handling;
	return response;
}

/** The items of the execution the last delivery started; none when it started none. */
const startedItems = (): INodeExecutionData[] =>
	lastResult && !(lastResult instanceof Error) ? ((lastResult.workflowData?.[0] as INodeExecutionData[] | undefined) ?? []) : [];

const stripeTrigger = (typeVersion: number, parameters: Record<string, unknown> = {}) =>
	packageNode(
		'Idempotent Webhook',
		'idempotentWebhook',
		{ path: 'rt12', scheme: 'stripe', store: 'embedded', keySource: 'auto', ...parameters },
		{ typeVersion, credentials: { webhookSignatureApi: { id: 'signing', name: 'Signing' } } },
	);

const headerAuthTrigger = (typeVersion: number, parameters: Record<string, unknown> = {}) =>
	packageNode(
		'Idempotent Webhook',
		'idempotentWebhook',
		{ path: 'rt12', scheme: 'none', authentication: 'headerAuth', store: 'embedded', keySource: 'auto', ...parameters },
		{ typeVersion, credentials: { idempotentWebhookHeaderAuthApi: { id: 'header', name: 'Header' } } },
	);

interface Step {
	nodes: INode[];
	connections?: IConnections;
	heads: string[];
}

/** Runs an execution of the active workflow (the trigger renamed Webhook, then `step`) from `items`, as n8n does. */
async function runExecution(
	executionId: string,
	items: INodeExecutionData[],
	step: Step,
	{
		mode = 'webhook',
		onStart,
		base = engineBase(credentialsHelper()),
		timeoutSeconds,
	}: {
		mode?: WorkflowExecuteMode;
		onStart?: (cancel: () => void) => void;
		base?: ReturnType<typeof engineBase>;
		/** Workflow Settings → Timeout Workflow. */
		timeoutSeconds?: number;
	} = {},
) {
	const started = { ...activeTrigger, name: 'Webhook' };
	const workflow = inProcessWorkflow(activeWorkflowId, [started, ...step.nodes], {
		Webhook: { main: [link(...step.heads)] },
		...(step.connections ?? {}),
	});
	if (timeoutSeconds !== undefined) workflow.settings = { ...workflow.settings, executionTimeout: timeoutSeconds };
	const { run } = await executeInProcess(workflow, executionId, items, base, { mode, onStart });
	const [answer] = webhookResponses.get(executionId) ?? [];
	return { run, answer };
}

/**
 * The package's retry runner, as the trigger's trigger() starts it on n8n's leader main (runInbox), polling every
 * 50 ms: each emit starts an execution of the active workflow from the emitted item, as n8n's would.
 */
function startRunner(label: string, step: Step) {
	const runs: Array<Promise<unknown>> = [];
	const attempts: number[] = [];
	const context = {
		emit: (data: INodeExecutionData[][]) => {
			const items = data[0];
			attempts.push(...items.map((item) => Number((item.json.idempotency as { attempts?: number }).attempts)));
			runs.push(runExecution(`${label}-retry-${runs.length + 1}`, items, step, { mode: 'trigger' }).catch(() => undefined));
		},
		logger: { warn: () => {}, info: () => {}, debug: () => {}, error: () => {} },
	} as unknown as ITriggerFunctions;
	const runner = runInbox(context, {
		openStore: async () => keyStore(),
		owner: inboxOwner(activeWorkflowId),
		leaseMs: 300_000,
		pollMs: 50,
	});
	return {
		/** The attempts the runner started, in order (2: the first retry). */
		attempts,
		async stop() {
			await runner.closeFunction?.();
			await Promise.all(runs);
		},
	};
}

/** n8n's engine running Execute Workflow's sub-workflows as executions of their own, their records kept (as n8n keeps them). */
function engineWithSubWorkflows(label: string) {
	let count = 0;
	return withSubWorkflowsInProcess(engineBase(credentialsHelper()), () => `${label}-sub-${++count}`);
}

/** Polls `read` until `done` says so, at most `ms`. */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, ms = 10_000): Promise<T> {
	const end = Date.now() + ms;
	let value = await read();
	while (!done(value) && Date.now() < end) {
		await sleep(50);
		value = await read();
	}
	return value;
}

const charge = (name: string, failOnce = '', onError: INode['onError'] = 'continueErrorOutput'): INode =>
	packageNode(name, 'testEffectOnce', { failOnce }, { position: [400, 0], onError });
const failingCharge = (name: string, parameters: INodeParameters): INode =>
	packageNode(name, 'testEffect', parameters, { position: [400, 0], onError: 'continueErrorOutput' });
const callInFlight = (): INode => packageNode('Charge', 'testCallInFlight', {}, { position: [400, 0] });
/** A Stop and Error at n8n's defaults whose message is `message` (an expression that may quote the item). */
const rejectWith = (message: string): INode =>
	baseNode('Reject', 'stopAndError', 1, { errorType: 'errorMessage', errorMessage: message }, 0, { onError: undefined });
/** A common guard: an If on `unsupported`, its true output to a Stop and Error whose message is `message`. */
const rejectUnsupported = (message: string): Step => ({
	nodes: [skipIf('Unsupported?', 0, 'unsupported'), rejectWith(message)],
	connections: { 'Unsupported?': { main: [link('Reject'), []] } },
	heads: ['Unsupported?'],
});

describeWithN8n('red team 12: the Idempotent Webhook trigger, its own paths (At Once, modes, keys, what it keeps)', () => {
	beforeAll(async () => {
		embeddedModule();
		addNodeTypes({
			...loadBaseNodes(),
			...loadBaseNodeFiles(EXTRA_NODES),
			[`${PACKAGE}.testEffect`]: new TestEffect(),
			[`${PACKAGE}.testEffectOnce`]: new TestEffectOnce(),
			[`${PACKAGE}.testCallInFlight`]: new TestCallInFlight(),
		});
		server = http.createServer((request, response) => {
			handling = handle(request, response);
		});
		await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
		baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
	});
	afterAll(async () => {
		await new Promise((resolve) => server.close(resolve));
		embeddedModule().closeEmbeddedStores();
	});
	afterEach(() => {
		forgetKeptSigningSecrets();
		activeWorkflowId = 'wf-rt12';
	});

	/* (1) Respond: At Once — the package's own retries --------------------------------------------------------------- */

	// The step fails on its first two runs (the API is down), then succeeds. A copy of the event arrives while its retry
	// is pending. docs: "every copy of it 200 duplicate"; the package runs the event again from the kept item until it
	// succeeds: one effect, the key completed, the kept item deleted.
	it('At Once: the step fails twice then succeeds, a copy arrives while the retry is pending: one charge, completed, item deleted', async () => {
		activeWorkflowId = 'wf-rt12-twice';
		activeTrigger = stripeTrigger(3, { respond: 'atOnce', firstRetrySeconds: 0.05 });
		const step: Step = { nodes: [failingCharge('Charge Twice', { failTimes: 2 })], heads: ['Charge Twice'] };
		const body = '{"id":"evt_twice","amount":100}';
		const accepted = await postStripe(body);
		expect([accepted.status, await accepted.json(), accepted.headers.get(OUTCOME_HEADER)]).toEqual([200, { received: true }, 'new']);
		const first = await runExecution('rt12-twice-1', startedItems(), step);
		// The sender has its answer: the end only settles.
		expect({ answer: first.answer, status: (await stored(keyOf('evt_twice')))?.status }).toEqual({ answer: undefined, status: 'failed' });

		const copy = await postStripe(body);
		expect({ status: copy.status, outcome: copy.headers.get(OUTCOME_HEADER), started: startedItems().length }).toEqual({
			status: 200,
			outcome: 'duplicate',
			started: 0,
		});

		const runner = startRunner('rt12-twice', step);
		const done = await until(
			async () => await stored(keyOf('evt_twice')),
			(record) => record?.status === 'completed',
		);
		await sleep(300);
		await runner.stop();
		expect({
			status: done?.status,
			attempts: done?.attempts,
			retries: runner.attempts,
			charges: effectsFor('evt_twice'),
			kept: done?.hasInboxItem,
			deadLettered: done?.deadLetteredAt,
		}).toEqual({ status: 'completed', attempts: 3, retries: [2, 3], charges: 1, kept: false, deadLettered: null });
	});

	// The step fails on every run, Run Attempts 3: three runs, then the event is dead-lettered (kept failed, with its
	// item, no retry due) and no fourth run starts; a copy meanwhile is answered 200 duplicate and starts nothing.
	it('At Once: the step always fails, Run Attempts 3: three runs, then dead-lettered with its item, no fourth run, copies 200 duplicate', async () => {
		activeWorkflowId = 'wf-rt12-dead';
		activeTrigger = stripeTrigger(3, { respond: 'atOnce', firstRetrySeconds: 0.05, maxAttempts: 3 });
		const step: Step = { nodes: [failingCharge('Charge Never', { failFor: 'evt_dead' })], heads: ['Charge Never'] };
		const body = '{"id":"evt_dead","amount":100}';
		expect((await postStripe(body)).status).toBe(200);
		await runExecution('rt12-dead-1', startedItems(), step);
		const runner = startRunner('rt12-dead', step);
		const dead = await until(
			async () => await stored(keyOf('evt_dead')),
			(record) => record?.deadLetteredAt != null,
		);
		// Time for a fourth run, were one to start.
		await sleep(800);
		await runner.stop();
		const copy = await postStripe(body);
		expect({
			status: dead?.status,
			attempts: dead?.attempts,
			retries: runner.attempts,
			kept: dead?.hasInboxItem,
			nextAttemptAt: dead?.nextAttemptAt,
			lastError: dead?.lastError,
			copy: [copy.status, copy.headers.get(OUTCOME_HEADER), startedItems().length],
			charges: effectsFor('evt_dead'),
		}).toEqual({
			status: 'failed',
			attempts: 3,
			retries: [2, 3],
			kept: true,
			nextAttemptAt: null,
			lastError: expect.stringContaining('effect refused for evt_dead'),
			copy: [200, 'duplicate', 0],
			charges: 0,
		});
	});

	// n8n's Stop (or the workflow's timeout) while the step's call is in flight; the call is then cut (commits nothing).
	// docs: the key is held for its lease (the call may still be running), then the package runs the event again.
	// Expected: no retry before the lease ends, one after it, one charge.
	it('At Once: Stop while the call is in flight (the call cut): held for the lease, then run again by the package: one charge', async () => {
		activeWorkflowId = 'wf-rt12-stop';
		activeTrigger = stripeTrigger(3, { respond: 'atOnce', leaseSeconds: 2 });
		const step: Step = { nodes: [callInFlight()], heads: ['Charge'] };
		expect((await postStripe('{"id":"evt_stop","amount":100}')).status).toBe(200);
		const held = holdCall('evt_stop', 1);
		let cancel: () => void = () => {};
		const execution = runExecution('rt12-stop-1', startedItems(), step, { onStart: (stop) => (cancel = stop) });
		await held.started;
		cancel();
		const runner = startRunner('rt12-stop', step);
		await sleep(1000);
		const duringLease = { status: (await stored(keyOf('evt_stop')))?.status, retries: [...runner.attempts] };
		held.release(false);
		await execution.catch(() => undefined);
		const done = await until(
			async () => await stored(keyOf('evt_stop')),
			(record) => record?.status === 'completed',
		);
		await sleep(300);
		await runner.stop();
		expect({ duringLease, status: done?.status, retries: runner.attempts, charges: effectsFor('evt_stop') }).toEqual({
			duringLease: { status: 'processing', retries: [] },
			status: 'completed',
			retries: [2],
			charges: 1,
		});
	});

	// A copy of the event while its first run is still going (the sender retries after its short timeout): docs:
	// "A copy of an accepted event is answered 200 duplicate whatever its state (running, …)"; nothing else starts.
	it('At Once: a copy while the first run is in flight: 200 duplicate, no second run, one charge', async () => {
		activeWorkflowId = 'wf-rt12-inflight-copy';
		activeTrigger = stripeTrigger(3, { respond: 'atOnce' });
		const step: Step = { nodes: [callInFlight()], heads: ['Charge'] };
		const body = '{"id":"evt_inflight_copy","amount":100}';
		expect((await postStripe(body)).status).toBe(200);
		const held = holdCall('evt_inflight_copy', 1);
		const first = runExecution('rt12-inflight-copy-1', startedItems(), step);
		await held.started;
		const copy = await postStripe(body);
		const copyAnswer = [copy.status, copy.headers.get(OUTCOME_HEADER), await copy.json(), startedItems().length];
		held.release(true);
		await first;
		expect({ copyAnswer, key: (await stored(keyOf('evt_inflight_copy')))?.status, charges: effectsFor('evt_inflight_copy') }).toEqual({
			copyAnswer: [200, 'duplicate', { status: 'duplicate' }, 0],
			key: 'completed',
			charges: 1,
		});
	});

	// Control for the row below: the same long call with the execution started at once: the beat holds the key past its
	// lease (6 s), and the runner, looking at 7 s and at 9 s, finds nothing due.
	it('At Once: an execution started at once whose call outlasts its lease: the beat holds it, the runner claims nothing, one charge', async () => {
		activeWorkflowId = 'wf-rt12-ontime';
		activeTrigger = stripeTrigger(3, { respond: 'atOnce', leaseSeconds: 6 });
		const step: Step = { nodes: [callInFlight()], heads: ['Charge'] };
		const t0 = Date.now();
		expect((await postStripe('{"id":"evt_ontime","amount":100}')).status).toBe(200);
		const held = holdCall('evt_ontime', 1);
		const first = runExecution('rt12-ontime-1', startedItems(), step);
		await held.started;
		const claimed: number[] = [];
		for (const at of [7000, 9000]) {
			await sleep(at - (Date.now() - t0));
			claimed.push((await keyStore().claimDueInbox({ owner: inboxOwner(activeWorkflowId), limit: 20, leaseMs: 300_000 })).length);
		}
		held.release(true);
		await first;
		expect({ claimed, key: (await stored(keyOf('evt_ontime')))?.status, charges: effectsFor('evt_ontime') }).toEqual({
			claimed: [0, 0],
			key: 'completed',
			charges: 1,
		});
	});

	// An execution n8n starts late but still inside its key's lease — queue mode with a backlog, or
	// N8N_CONCURRENCY_PRODUCTION_LIMIT holding executions in its queue: here 4.8 s into a 6 s lease (the default lease is
	// 300 s: a start 240 s after the delivery) — passes recordExecution (the lease has not ended) and runs its step. The
	// trigger's execute() holds the key a full lease before the step runs (settlement/executionEnd.ts holdWhileRunning),
	// then every third of a lease: the runner's look just after the first lease's end finds the key held.
	it('At Once: an execution that starts late but within its lease and runs past it: the runner does not run it again, one charge', async () => {
		activeWorkflowId = 'wf-rt12-late';
		activeTrigger = stripeTrigger(3, { respond: 'atOnce', leaseSeconds: 6 });
		const step: Step = { nodes: [callInFlight()], heads: ['Charge'] };
		const t0 = Date.now();
		expect((await postStripe('{"id":"evt_late","amount":100}')).status).toBe(200);
		const queued = startedItems();
		await sleep(4800 - (Date.now() - t0));
		const held = holdCall('evt_late', 1);
		const first = runExecution('rt12-late-1', queued, step);
		await held.started;
		// The runner looks (it polls every 2 s) just after the lease's end.
		await sleep(6300 - (Date.now() - t0));
		const claims = await keyStore().claimDueInbox({ owner: inboxOwner(activeWorkflowId), limit: 20, leaseMs: 300_000 });
		for (const claim of claims) {
			// As the runner emits it (nodes/IdempotentWebhook/inboxRunner.ts startRetry).
			const item = inboxItemOf(claim.item, {
				key: claim.key,
				isNew: true,
				outcome: 'new',
				ownerToken: claim.ownerToken,
				attempts: claim.attempt,
				lockedUntil: claim.leaseEndsAt?.toISOString() ?? null,
				answeredAtOnce: true,
			})!;
			await runExecution('rt12-late-retry', [{ json: item.json as INodeExecutionData['json'] }], step, { mode: 'trigger' });
		}
		held.release(true);
		await first;
		expect({ claimed: claims.length, charges: effectsFor('evt_late') }).toEqual({ claimed: 0, charges: 1 });
	});

	// The beat that keeps an At Once run's key held while it runs (settlement/executionEnd.ts holdWhileRunning) stops
	// after six hours, or after the workflow's timeout when that is longer: a run still going then is taken as hung, its
	// lease ends, and the package runs the event again (docs/idempotent-webhook.md, When a process dies). Here n8n's clock
	// (Date.now, which the beat reads) jumps 7 hours once the step is in flight, with a 3 s lease standing for the
	// default 300 s. With a workflow timeout of 8 hours, or none and an instance default (EXECUTIONS_TIMEOUT) of 8 hours,
	// the run keeps its key; with neither, the documented limit: the running event is run again.
	it.each([
		{
			timeoutSeconds: 8 * 3600,
			instance: undefined,
			claimed: 0,
			charges: 1,
			label: 'a workflow timeout of 8 hours: held while it runs, one charge',
		},
		{
			timeoutSeconds: undefined,
			instance: String(8 * 3600),
			claimed: 0,
			charges: 1,
			label: "no workflow timeout, the instance's EXECUTIONS_TIMEOUT 8 hours: held while it runs, one charge",
		},
		{
			timeoutSeconds: undefined,
			instance: undefined,
			claimed: 1,
			charges: 2,
			label: 'no timeout at all: taken as hung and run again, as documented',
		},
	])('At Once: a run still going after 6 hours, $label', async ({ timeoutSeconds, instance, claimed, charges }) => {
		const label = `${timeoutSeconds ?? 'none'}-${instance ?? 'none'}`;
		activeWorkflowId = `wf-rt12-long-${label}`;
		const event = `evt_long_${label}`;
		const instanceBefore = process.env.EXECUTIONS_TIMEOUT;
		if (instance === undefined) delete process.env.EXECUTIONS_TIMEOUT;
		else process.env.EXECUTIONS_TIMEOUT = instance;
		try {
			await runLongAtOnce(event, timeoutSeconds, { claimed, charges });
		} finally {
			if (instanceBefore === undefined) delete process.env.EXECUTIONS_TIMEOUT;
			else process.env.EXECUTIONS_TIMEOUT = instanceBefore;
		}
	});

	async function runLongAtOnce(event: string, timeoutSeconds: number | undefined, expected: { claimed: number; charges: number }) {
		activeTrigger = stripeTrigger(3, { respond: 'atOnce', leaseSeconds: 3 });
		const step: Step = { nodes: [callInFlight()], heads: ['Charge'] };
		expect((await postStripe(`{"id":"${event}","amount":100}`)).status).toBe(200);
		const held = holdCall(event, 1);
		const first = runExecution(`rt12-long-1-${event}`, startedItems(), step, { timeoutSeconds });
		await held.started;
		const realNow = Date.now.bind(Date);
		const later = jest.spyOn(Date, 'now').mockImplementation(() => realNow() + 7 * 3_600_000);
		await sleep(1500);
		later.mockRestore();
		await sleep(3500);
		const claims = await keyStore().claimDueInbox({ owner: inboxOwner(activeWorkflowId), limit: 20, leaseMs: 300_000 });
		for (const claim of claims) {
			const item = inboxItemOf(claim.item, {
				key: claim.key,
				isNew: true,
				outcome: 'new',
				ownerToken: claim.ownerToken,
				attempts: claim.attempt,
				lockedUntil: claim.leaseEndsAt?.toISOString() ?? null,
				answeredAtOnce: true,
			})!;
			await runExecution(`rt12-long-retry-${event}`, [{ json: item.json as INodeExecutionData['json'] }], step, {
				mode: 'trigger',
				timeoutSeconds,
			});
		}
		held.release(true);
		await first;
		expect({ claimed: claims.length, charges: effectsFor(event) }).toEqual(expected);
	}

	// Several events per delivery under At Once, one of them repeated inside the delivery, its step failing once:
	// docs: "a key repeated inside the delivery runs once"; each failed event is retried by the package on its own,
	// from its own kept item. Expected: A and B charged once each, both completed.
	it('At Once + Events Path, [A, A, B], A failing once: one item for A, A retried alone from its kept item, one charge each', async () => {
		activeWorkflowId = 'wf-rt12-batch';
		activeTrigger = stripeTrigger(3, { respond: 'atOnce', firstRetrySeconds: 0.05, options: { eventsPath: 'body.events' } });
		const step: Step = { nodes: [charge('Charge Batch', 'evb_a')], heads: ['Charge Batch'] };
		const accepted = await postStripe('{"events":[{"id":"evb_a","n":1},{"id":"evb_a","n":1},{"id":"evb_b","n":2}]}');
		expect([accepted.status, await accepted.json()]).toEqual([200, { received: true }]);
		const items = startedItems();
		expect(items.map((item) => (item.json.body as { id: string }).id)).toEqual(['evb_a', 'evb_b']);
		await runExecution('rt12-batch-1', items, step);
		expect([(await stored(keyOf('evb_a')))?.status, (await stored(keyOf('evb_b')))?.status]).toEqual(['failed', 'completed']);
		const runner = startRunner('rt12-batch', step);
		const done = await until(
			async () => await stored(keyOf('evb_a')),
			(record) => record?.status === 'completed',
		);
		await sleep(300);
		await runner.stop();
		expect({ a: done?.status, retries: runner.attempts, charges: [effectsFor('evb_a'), effectsFor('evb_b')] }).toEqual({
			a: 'completed',
			retries: [2],
			charges: [1, 1],
		});
	});

	// Several events per delivery under At Once, one of them held by a run still going elsewhere (workflow B, When the
	// Workflow Ends, sharing keys with Scope "s12"): docs: "the new events are kept and run; 409, so the sender retries
	// the held one (accepted events are copies, never 409)". B's run then fails (its call cut): the sender's retry runs
	// the held event in A, and the kept one is a copy. Expected: 409 then 200, one charge each, both keys completed.
	it("At Once + Events Path, [X held by another workflow's run, Y new]: Y kept and run, 409; X run on the retry after the other run failed", async () => {
		const shared = { scope: 's12', shareKeysAcrossWorkflows: true };
		const triggerA = stripeTrigger(3, { respond: 'atOnce', firstRetrySeconds: 0.05, options: { ...shared, eventsPath: 'body.events' } });
		const triggerB = stripeTrigger(3, { options: shared });
		activeWorkflowId = 'wf-rt12-held-b';
		activeTrigger = triggerB;
		expect((await postStripe('{"id":"evh_x"}')).headers.get(OUTCOME_HEADER)).toBe('new');
		const held = holdCall('evh_x', 1);
		const runB = runExecution('rt12-held-b-1', startedItems(), { nodes: [callInFlight()], heads: ['Charge'] });
		await held.started;

		activeWorkflowId = 'wf-rt12-held-a';
		activeTrigger = triggerA;
		const stepA: Step = { nodes: [charge('Charge Held')], heads: ['Charge Held'] };
		const body = '{"events":[{"id":"evh_x"},{"id":"evh_y"}]}';
		const first = await postStripe(body);
		const firstAnswer = [first.status, first.headers.get(OUTCOME_HEADER)];
		const firstItems = startedItems().map((item) => (item.json.body as { id: string }).id);
		await runExecution('rt12-held-a-1', startedItems(), stepA);

		held.release(false);
		const b = await runB;
		const retry = await postStripe(body);
		const retryAnswer = [retry.status, retry.headers.get(OUTCOME_HEADER)];
		const retryItems = startedItems().map((item) => (item.json.body as { id: string }).id);
		await runExecution('rt12-held-a-2', startedItems(), stepA);
		const keys = await keyStore().getKeys(['s12:evt:evh_x', 's12:evt:evh_y']);
		expect({
			firstAnswer,
			firstItems,
			b: b.answer?.statusCode,
			retryAnswer,
			retryItems,
			keys: [keys.get('s12:evt:evh_x')?.status, keys.get('s12:evt:evh_y')?.status],
			charges: [effectsFor('evh_x'), effectsFor('evh_y')],
		}).toEqual({
			firstAnswer: [409, 'in_progress'],
			firstItems: ['evh_y'],
			b: 500,
			retryAnswer: [200, 'new'],
			retryItems: ['evh_x'],
			keys: ['completed', 'completed'],
			charges: [1, 1],
		});
	});

	// A 10 MB delivery cannot be kept (1 MB cap): docs: "A larger delivery is not accepted at once: it runs as When the
	// Workflow Ends runs it, and the sender retries it if it fails". Its step fails once: 500, the sender's retry runs it,
	// one charge; the key is no inbox event (the runner never touches it).
	it('At Once, a 10 MB body: answered when the run ends (500, then 200 on the retry), not kept, one charge', async () => {
		activeWorkflowId = 'wf-rt12-big';
		activeTrigger = stripeTrigger(3, { respond: 'atOnce', firstRetrySeconds: 0.05 });
		const step: Step = { nodes: [charge('Charge Big', 'evt_big')], heads: ['Charge Big'] };
		const body = JSON.stringify({ id: 'evt_big', pad: 'x'.repeat(10 * 1024 * 1024) });
		const answers: Array<number | undefined> = [];
		for (let attempt = 1; attempt <= 3; attempt++) {
			const response = await postStripe(body);
			const items = startedItems();
			if (items.length === 0) {
				answers.push(response.status);
				break;
			}
			const { answer } = await runExecution(`rt12-big-${attempt}`, items, step);
			answers.push(Number(answer?.statusCode));
			if (Number(answer?.statusCode) < 300) break;
		}
		const record = await stored(keyOf('evt_big'));
		expect({ answers, status: record?.status, inbox: record?.inboxOwner, charges: effectsFor('evt_big') }).toEqual({
			answers: [500, 200],
			status: 'completed',
			inbox: null,
			charges: 1,
		});
	});

	// A Wait after an At Once trigger in a workflow published before the publish check existed: refused at the
	// trigger's first step, before any node ran; the sender already has its 200, so the key is failed and kept for the
	// package's retry (then a dead letter), never completed: nothing charged, nothing lost.
	it('At Once, a Wait before the charge (published before the check): refused at run time, nothing charged, key failed with a retry due', async () => {
		activeWorkflowId = 'wf-rt12-wait';
		activeTrigger = stripeTrigger(3, { respond: 'atOnce' });
		const wait = baseNode('Wait', 'wait', 1.1, { amount: 2, unit: 'hours' }, 0, { onError: undefined });
		const step: Step = { nodes: [wait, charge('Charge Wait')], connections: { Wait: { main: [link('Charge Wait')] } }, heads: ['Wait'] };
		expect((await postStripe('{"id":"evt_wait","amount":100}')).status).toBe(200);
		const { run } = await runExecution('rt12-wait-1', startedItems(), step);
		const record = await stored(keyOf('evt_wait'));
		expect({
			error: (run.data.resultData.error as { node?: { name?: string } } | undefined)?.node?.name,
			waited: run.waitTill ?? null,
			status: record?.status,
			retryDue: record?.nextAttemptAt instanceof Date,
			kept: record?.hasInboxItem,
			charges: effectsFor('evt_wait'),
		}).toEqual({ error: 'Webhook', waited: null, status: 'failed', retryDue: true, kept: true, charges: 0 });
	});

	// When the Workflow Ends (version 3, Lease 2 s standing for 300 s), Stop while the call is in flight, the call cut:
	// docs: "held for its lease …; copies get 409 until the lease ends, then a retry runs the event again".
	it('When the Workflow Ends, Stop while the call is in flight (cut): copies 409 during the lease, then the retry runs it: one charge', async () => {
		activeWorkflowId = 'wf-rt12-wwe-stop';
		activeTrigger = stripeTrigger(3, { leaseSeconds: 2 });
		const step: Step = { nodes: [callInFlight()], heads: ['Charge'] };
		const body = '{"id":"evt_wwe_stop","amount":100}';
		expect((await postStripe(body)).headers.get(OUTCOME_HEADER)).toBe('new');
		const held = holdCall('evt_wwe_stop', 1);
		let cancel: () => void = () => {};
		const execution = runExecution('rt12-wwe-stop-1', startedItems(), step, { onStart: (stop) => (cancel = stop) });
		await held.started;
		cancel();
		await sleep(200);
		const during = (await postStripe(body)).headers.get(OUTCOME_HEADER);
		held.release(false);
		await execution.catch(() => undefined);
		await sleep(2200);
		const after = (await postStripe(body)).headers.get(OUTCOME_HEADER);
		const { answer } = await runExecution('rt12-wwe-stop-2', startedItems(), step);
		expect({
			during,
			after,
			answer: answer?.statusCode,
			key: (await stored(keyOf('evt_wwe_stop')))?.status,
			charges: effectsFor('evt_wwe_stop'),
		}).toEqual({
			during: 'in_progress',
			after: 'new',
			answer: 200,
			key: 'completed',
			charges: 1,
		});
	});

	/* (2) Modes, versions, keys ---------------------------------------------------------------------------------------- */

	// Version 1, Mode Permanent: "a run that failed is marked failed and the provider's retry runs it again".
	it('version 1, Permanent: the step fails once: 500, the retry runs it, 200; a copy then 200 duplicate: one charge', async () => {
		activeWorkflowId = 'wf-rt12-perm';
		activeTrigger = stripeTrigger(1, { mode: 'permanent' });
		const step: Step = { nodes: [charge('Charge Perm', 'evt_perm')], heads: ['Charge Perm'] };
		const body = '{"id":"evt_perm","amount":100}';
		expect((await postStripe(body)).status).toBe(200);
		const first = await runExecution('rt12-perm-1', startedItems(), step);
		const retry = await postStripe(body);
		const second = await runExecution('rt12-perm-2', startedItems(), step);
		const copy = await postStripe(body);
		expect({
			first: first.answer?.statusCode,
			retry: retry.headers.get(OUTCOME_HEADER),
			second: second.answer?.statusCode,
			copy: [copy.status, copy.headers.get(OUTCOME_HEADER)],
			key: (await stored('evt:evt_perm'))?.status,
			charges: effectsFor('evt_perm'),
		}).toEqual({ first: 500, retry: 'new', second: 200, copy: [200, 'duplicate'], key: 'completed', charges: 1 });
	});

	// Version 1, Mode Permanent, Stop while the call is in flight, the call cut: what the docs say of Permanent after a
	// crash ("every copy is answered 409 until the key's retention ends: the event is never run again") holds for a
	// Stop too: the key is "completed" from its reservation, with no lease to hold, and the settlement's hold does
	// nothing to it. The event is never run (the provider gives up on 409s). Documented for Permanent (a crash); kept
	// here as what a Stop does, not as a break.
	it('version 1, Permanent, Stop while the call is in flight (cut): copies 409, the event never runs again (as documented after a crash)', async () => {
		activeWorkflowId = 'wf-rt12-perm-stop';
		activeTrigger = stripeTrigger(1, { mode: 'permanent' });
		const step: Step = { nodes: [callInFlight()], heads: ['Charge'] };
		const body = '{"id":"evt_perm_stop","amount":100}';
		expect((await postStripe(body)).status).toBe(200);
		const held = holdCall('evt_perm_stop', 1);
		let cancel: () => void = () => {};
		const execution = runExecution('rt12-perm-stop-1', startedItems(), step, { onStart: (stop) => (cancel = stop) });
		await held.started;
		cancel();
		await sleep(300);
		held.release(false);
		await execution.catch(() => undefined);
		await sleep(300);
		const copies: Array<string | null> = [];
		for (let i = 0; i < 2; i++) {
			copies.push((await postStripe(body)).headers.get(OUTCOME_HEADER));
			await sleep(1100);
		}
		expect({ copies, started: startedItems().length, charges: effectsFor('evt_perm_stop') }).toEqual({
			copies: ['in_progress', 'in_progress'],
			started: 0,
			charges: 0,
		});
	});

	// Scope between two workflows (versions 2 and 3): without Share Keys Across Workflows each workflow runs the event
	// once, whatever their Scope; with it and the same Scope they run it once between them. Workflow A answers At Once and
	// its first run fails (retry pending); workflow B (When the Workflow Ends) then receives the same event: answered as a
	// copy, nothing run there; A's package retry runs it.
	it('Scope "stripe" on two workflows: apart, one charge each; shared (A At Once failing once, B When the Workflow Ends), one charge in all', async () => {
		const step: Step = { nodes: [charge('Charge Scope', 'evs_shared')], heads: ['Charge Scope'] };
		// Apart.
		for (const workflowId of ['wf-rt12-scope-a', 'wf-rt12-scope-b']) {
			activeWorkflowId = workflowId;
			activeTrigger = stripeTrigger(3, { options: { scope: 'stripe' } });
			expect((await postStripe('{"id":"evs_apart"}')).headers.get(OUTCOME_HEADER)).toBe('new');
			await runExecution(`rt12-${workflowId}-apart`, startedItems(), step);
		}
		const apart = effectsFor('evs_apart');
		// Shared.
		const triggerA = stripeTrigger(3, {
			respond: 'atOnce',
			firstRetrySeconds: 0.05,
			options: { scope: 'stripe', shareKeysAcrossWorkflows: true },
		});
		const triggerB = stripeTrigger(3, { options: { scope: 'stripe', shareKeysAcrossWorkflows: true } });
		activeWorkflowId = 'wf-rt12-share-a';
		activeTrigger = triggerA;
		expect((await postStripe('{"id":"evs_shared"}')).status).toBe(200);
		await runExecution('rt12-share-a-1', startedItems(), step);
		activeWorkflowId = 'wf-rt12-share-b';
		activeTrigger = triggerB;
		const atB = await postStripe('{"id":"evs_shared"}');
		const answeredB = [atB.status, atB.headers.get(OUTCOME_HEADER), startedItems().length];
		activeWorkflowId = 'wf-rt12-share-a';
		activeTrigger = triggerA;
		const runner = startRunner('rt12-share', step);
		const done = await until(
			async () => (await keyStore().getKeys(['stripe:evt:evs_shared'])).get('stripe:evt:evs_shared'),
			(record) => record?.status === 'completed',
		);
		await sleep(300);
		await runner.stop();
		expect({ apart, answeredB, shared: done?.status, charges: effectsFor('evs_shared') }).toEqual({
			apart: 2,
			answeredB: [200, 'duplicate', 0],
			shared: 'completed',
			charges: 1,
		});
	});

	// Events Path, two events whose numeric ids differ only beyond 2^53 (JavaScript reads both as 9007199254740992):
	// docs: "ids beyond 2^53 are read with their exact digits from the bytes". Two events, two keys, two charges; the
	// redelivery is a copy of both.
	it('Events Path, two ids that differ only beyond 2^53: two keys, two charges; the redelivery a copy of both', async () => {
		activeWorkflowId = 'wf-rt12-bigint';
		activeTrigger = stripeTrigger(3, { options: { eventsPath: 'body.events' } });
		const step: Step = { nodes: [charge('Charge Exact')], heads: ['Charge Exact'] };
		const body = '{"events":[{"id":9007199254740993,"n":1},{"id":9007199254740992,"n":2}]}';
		expect((await postStripe(body)).status).toBe(200);
		const items = startedItems();
		const { answer } = await runExecution('rt12-bigint-1', items, step);
		const copy = await postStripe(body);
		expect({
			items: items.length,
			answer: answer?.statusCode,
			keys: [(await stored(keyOf('9007199254740993')))?.status, (await stored(keyOf('9007199254740992')))?.status],
			charges: effectsFor('9007199254740992'),
			copy: [copy.status, await copy.json(), startedItems().length],
		}).toEqual({
			items: 2,
			answer: 200,
			keys: ['completed', 'completed'],
			charges: 2,
			copy: [200, { status: 'duplicate' }, 0],
		});
	});

	// Events Path under At Once, one event's id carrying a NUL, then a lone surrogate: docs: an event whose key is
	// refused refuses the whole delivery (503 key_refused, nothing reserved), before anything is kept.
	it('At Once + Events Path, one event with a NUL (then a lone surrogate) in its id: 503 key_refused, nothing kept or reserved', async () => {
		activeWorkflowId = 'wf-rt12-nul';
		activeTrigger = stripeTrigger(3, { respond: 'atOnce', options: { eventsPath: 'body.events' } });
		const results: Array<[number, string | null, unknown, number]> = [];
		for (const bad of ['evn_bad\\u0000x', 'evn_bad\\ud800x']) {
			const response = await postStripe(`{"events":[{"id":"evn_ok"},{"id":"${bad}"}]}`);
			results.push([
				response.status,
				response.headers.get(OUTCOME_HEADER),
				((await response.json()) as { error?: string }).error,
				startedItems().length,
			]);
		}
		expect({ results, ok: await stored(keyOf('evn_ok')) }).toEqual({
			results: [
				[503, 'not_reserved', 'key_refused', 0],
				[503, 'not_reserved', 'key_refused', 0],
			],
			ok: undefined,
		});
	});

	/* (3) What the key table keeps ----------------------------------------------------------------------------------- */

	// The trigger behind Header Auth, its header named X-Webhook-Key (any name is allowed). A common guard: If
	// "unsupported event" → Stop and Error "Unsupported event: {{ JSON.stringify($json) }}". The key is failed with that
	// message, which quotes the trigger's item, request headers included. Every credential of the request the stored
	// answer withholds (the Header Auth header's value whatever its name, Basic's, a signature's) is taken out of the
	// failure before it is stored or answered (settlement/executionEnd.ts, lib/webhook/storedAnswer.ts
	// withoutRequestSecrets).
	it("Header Auth (X-Webhook-Key), Stop and Error quoting $json: the key's last error keeps no credential", async () => {
		activeWorkflowId = 'wf-rt12-leak';
		activeTrigger = headerAuthTrigger(3);
		const step = rejectUnsupported('={{ "Unsupported event: " + JSON.stringify($json) }}');
		expect((await postWithHeaderAuth('{"id":"evt_leak","unsupported":true}')).status).toBe(200);
		const { answer } = await runExecution('rt12-leak-1', startedItems(), step);
		const record = await stored(keyOf('evt_leak'));
		expect({ answer: answer?.statusCode, status: record?.status, quoted: record?.lastError?.includes('Unsupported event') }).toEqual({
			answer: 500,
			status: 'failed',
			quoted: true,
		});
		expect(record?.lastError).not.toContain(HEADER_AUTH.value);
	});

	// The same through a sub-workflow's error: Execute Workflow (defined below, at Stop Workflow) whose sub-workflow
	// rejects with "Could not sync: {{ JSON.stringify($json) }}" — its input is the trigger's item, headers included. The
	// parent fails with the sub-workflow's message and the key is failed with it, without the Header Auth value.
	it("Header Auth (X-Webhook-Key), a sub-workflow's Stop and Error quoting $json: the key's last error keeps no credential", async () => {
		activeWorkflowId = 'wf-rt12-leak-sub';
		activeTrigger = headerAuthTrigger(3);
		const reject = rejectWith('={{ "Could not sync: " + JSON.stringify($json) }}');
		const sync = executeInline(inlineSubWorkflow([reject], { Webhook: { main: [link('Reject')] } }), undefined, 'once', 'Sync');
		const step: Step = { nodes: [sync], heads: ['Sync'] };
		expect((await postWithHeaderAuth('{"id":"evt_leak_sub"}')).status).toBe(200);
		const { answer } = await runExecution('rt12-leak-sub-1', startedItems(), step, { base: engineWithSubWorkflows('rt12-leak-sub') });
		const record = await stored(keyOf('evt_leak_sub'));
		expect({ answer: answer?.statusCode, status: record?.status, quoted: record?.lastError?.includes('Could not sync') }).toEqual({
			answer: 500,
			status: 'failed',
			quoted: true,
		});
		expect(record?.lastError).not.toContain(HEADER_AUTH.value);
	});

	// Control: the same Stop and Error quoting $json behind a Stripe signature: the signature header's value is
	// redacted by its name ("stripe-signature"), and the key table keeps no signature.
	it('Stripe-signed, Stop and Error quoting $json: the last error keeps no stripe-signature value', async () => {
		activeWorkflowId = 'wf-rt12-leak-sig';
		activeTrigger = stripeTrigger(3);
		const step = rejectUnsupported('={{ "Unsupported event: " + JSON.stringify($json) }}');
		const body = '{"id":"evt_leak_sig","unsupported":true}';
		expect((await postStripe(body)).status).toBe(200);
		const signature = String((startedItems()[0].json.headers as Record<string, string>)['stripe-signature']);
		await runExecution('rt12-leak-sig-1', startedItems(), step);
		const record = await stored(keyOf('evt_leak_sig'));
		const v1 = /v1=([0-9a-f]+)/.exec(signature)?.[1] ?? 'missing';
		expect({
			status: record?.status,
			quoted: record?.lastError?.includes('Unsupported event'),
			leaked: record?.lastError?.includes(v1),
		}).toEqual({
			status: 'failed',
			quoted: true,
			leaked: false,
		});
	});

	// The signature quoted as text rather than as JSON ("Bad signature: t=…,v1=…"): the stored answer's rule counts a
	// signature header's value, and each signature in it, as a credential of the request; the failure is kept without
	// them.
	it('Stripe-signed, Stop and Error quoting the stripe-signature header as text: the last error keeps no signature', async () => {
		activeWorkflowId = 'wf-rt12-leak-sig-text';
		activeTrigger = stripeTrigger(3);
		const step = rejectUnsupported('={{ "Bad signature: " + $json.headers["stripe-signature"] }}');
		expect((await postStripe('{"id":"evt_leak_sig_text","unsupported":true}')).status).toBe(200);
		const signature = String((startedItems()[0].json.headers as Record<string, string>)['stripe-signature']);
		await runExecution('rt12-leak-sig-text-1', startedItems(), step);
		const record = await stored(keyOf('evt_leak_sig_text'));
		const v1 = /v1=([0-9a-f]+)/.exec(signature)?.[1] ?? 'missing';
		expect({
			status: record?.status,
			quoted: record?.lastError?.includes('Bad signature'),
			leaked: record?.lastError?.includes(v1),
		}).toEqual({
			status: 'failed',
			quoted: true,
			leaked: false,
		});
	});
});
