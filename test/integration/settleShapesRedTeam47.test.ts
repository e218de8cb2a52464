import { createHmac } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

import { WebhookContext } from 'n8n-core';
import {
	Workflow,
	type INode,
	type INodeExecutionData,
	type INodeParameters,
	type IRun,
	type ITriggerFunctions,
	type IWebhookData,
	type IWebhookResponseData,
	type IWorkflowExecuteAdditionalData,
} from 'n8n-workflow';

import { inboxOwner } from '../../lib/webhook/inbox';
import { runInbox } from '../../nodes/IdempotentWebhook/inboxRunner';
import { describeWithN8n } from '../support/n8nBaseNodes';
import { engineBase, executeInProcess, inProcessWorkflow, nodeTypes, packageNode, webhookResponses } from '../support/n8nEngine';
import { asN8nReceives } from '../support/n8nRequestPath';
import { link } from '../support/settleWorkflows';
import { baseNode as node, CHARGE_BODY, EVENTS, events, jsonBodyOf, triggerRedTeam, type Step } from '../support/triggerRedTeam';

/*
 * Forty-seventh red-team pass: Respond: At Once and the package's own retries (the inbox runner), in n8n 2.41.1's
 * request path and engine in-process, on the embedded store. Several events in one delivery with one retried while the
 * provider re-sends the delivery; a copy while the retry's call is in flight; a step that partly succeeded; a dead
 * letter re-sent by the provider; a run longer than its lease; an execution starting after the runner took its event;
 * a process restart (the runner started anew); Stop during an At Once run; two workflows on the same events; what is
 * kept (Generic HMAC's own signature header) and what a copy gets back. A row that fails breaks a promise.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const TAG = 'rt47';
const SECRET = `whsec_${TAG}`;

/* A slow API: commits its effect only after `delayMs`, and only while its caller is still connected. ------------- */
const slow = { url: '', delayMs: 600, effects: new Map<string, number>(), failing: new Map<string, number>(), started: [] as string[] };
const slowAt = (route: string, id: string) => slow.effects.get(`${route}:${id}`) ?? 0;
const startedAt = (route: string, id: string) => slow.started.filter((target) => target === `${route}:${id}`).length;
let slowServer: http.Server | undefined;
async function slowApi(request: IncomingMessage, response: ServerResponse): Promise<void> {
	const body = await jsonBodyOf(request);
	const [route, query] = (request.url ?? '/').slice(1).split('?');
	const delay = /ms=(\d+)/.exec(query ?? '')?.[1];
	const target = `${route}:${String(body.id ?? '')}`;
	slow.started.push(target);
	let gone = false;
	response.on('close', () => (gone = !response.writableEnded));
	await sleep(delay ? Number(delay) : slow.delayMs);
	if (gone || response.destroyed) return;
	const left = slow.failing.get(target) ?? 0;
	if (left > 0) {
		slow.failing.set(target, left - 1);
		response.writeHead(500, { 'content-type': 'application/json' }).end('{"message":"upstream unavailable"}');
		return;
	}
	slow.effects.set(target, (slow.effects.get(target) ?? 0) + 1);
	response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, id: body.id }));
}
const slowCall = (name: string, route: string, extra: Partial<INode> = {}, jsonBody = CHARGE_BODY, delayMs?: number): INode =>
	node(
		name,
		'httpRequest',
		4.2,
		{
			method: 'POST',
			url: `${slow.url}/${route}${delayMs === undefined ? '' : `?ms=${delayMs}`}`,
			sendBody: true,
			specifyBody: 'json',
			jsonBody,
			options: {},
		},
		extra,
	);

const quietLogger = { warn: () => {}, info: () => {}, debug: () => {}, error: () => {} };

describeWithN8n('red team 47: Respond At Once and the package-owned retries', () => {
	const h = triggerRedTeam({
		tag: TAG,
		baseNodeFiles: {
			'n8n-nodes-base.set': 'Set/Set.node.js',
			'n8n-nodes-base.splitOut': 'Transform/SplitOut/SplitOut.node.js',
		},
	});
	const { effectsAt, failNext, httpCall, keyRows, postStripe, refusedAtPublish, startedItems, statuses, useTrigger, sendAs } = h;

	beforeAll(async () => {
		slowServer = http.createServer((request, response) => void slowApi(request, response));
		await new Promise<void>((resolve) => slowServer!.listen(0, '127.0.0.1', resolve));
		slow.url = `http://127.0.0.1:${(slowServer.address() as AddressInfo).port}`;
	});
	afterAll(async () => {
		if (slowServer) await new Promise((resolve) => slowServer!.close(resolve));
	});

	/** Each workflow's trigger parameters, by workflow id (the execution's workflow holds the same node). */
	const paramsOf = new Map<string, INodeParameters>();
	const use = (id: string, parameters: INodeParameters = {}) => {
		paramsOf.set(id, parameters);
		useTrigger(id, parameters);
	};
	const triggerNode = (workflowId: string) =>
		packageNode(
			'Webhook',
			'idempotentWebhook',
			{ path: TAG, scheme: 'stripe', store: 'embedded', keySource: 'auto', ...paramsOf.get(workflowId) },
			{ typeVersion: 3, credentials: { webhookSignatureApi: { id: 'signing', name: 'Signing' } } },
		);

	/** Runs one execution of a trigger's workflow with `items` (the trigger's items), optionally stopped. */
	async function runOwn(
		items: INodeExecutionData[],
		step: Step,
		{
			cancelAfterMs,
			mode,
			workflowId = h.workflowId(),
		}: { cancelAfterMs?: number; mode?: 'webhook' | 'trigger'; workflowId?: string } = {},
	): Promise<IRun> {
		const workflow = inProcessWorkflow(workflowId, [triggerNode(workflowId), ...step.nodes], {
			Webhook: { main: [link(...step.heads)] },
			...(step.connections ?? {}),
		});
		const { run } = await executeInProcess(workflow, h.nextExecutionId('own'), items, h.engine(), {
			mode: mode ?? 'webhook',
			onStart: (cancel) => {
				if (cancelAfterMs !== undefined) setTimeout(cancel, cancelAfterMs);
			},
		});
		// n8n-core runs the end handlers of a canceled run without awaiting them
		if (cancelAfterMs !== undefined) await sleep(150);
		return run;
	}

	/** The package's retry runner for a workflow (as n8n's leader main runs it from trigger()), each emitted run played. */
	function startRunner(step: Step, { workflowId = h.workflowId(), leaseMs = 300_000 }: { workflowId?: string; leaseMs?: number } = {}) {
		const emitted: Array<{ attempt: number; ids: string[]; headers: string[] }> = [];
		const runs: Array<Promise<IRun | undefined>> = [];
		const context = {
			emit: (data: INodeExecutionData[][]) => {
				emitted.push({
					attempt: Number((data[0][0].json.idempotency as { attempts: number }).attempts),
					ids: data[0].map((item) => String((item.json.body as { id?: string }).id)),
					headers: Object.keys((data[0][0].json.headers ?? {}) as object),
				});
				runs.push(runOwn(data[0], step, { mode: 'trigger', workflowId }).catch(() => undefined));
			},
			logger: quietLogger,
		} as unknown as ITriggerFunctions;
		const runner = runInbox(context, { openStore: async () => h.keyStore(), owner: inboxOwner(workflowId), leaseMs, pollMs: 50 });
		return {
			emitted,
			runs,
			stop: async () => {
				await runner.closeFunction?.();
				return await Promise.all(runs);
			},
		};
	}

	/** Waits until `done()` or `ms` passed. */
	async function until(done: () => boolean | Promise<boolean>, ms: number): Promise<void> {
		const end = Date.now() + ms;
		while (Date.now() < end && !(await done())) await sleep(50);
	}

	/** Posts a delivery; its status, outcome header, body, first-execution header and how many items it started. */
	async function deliver(body: unknown) {
		const response = await postStripe(JSON.stringify(body));
		const text = await response.text();
		return {
			status: response.status,
			outcome: response.headers.get('x-idempotency-outcome'),
			firstExecution: response.headers.get('x-idempotency-first-execution'),
			body: text,
			started: startedItems().length,
			items: startedItems(),
		};
	}

	/* (1) Events Path, one event failing and retried by the package while the provider re-sends the delivery --------- */

	it('At Once, Events [A, B, C] → Charge (error output), B failing once; the provider re-sends the delivery while the retry of B is in flight, then with a new D: 200s, copies duplicate, each charged once, all completed', async () => {
		const wf = 'wf-rt47-batch';
		use(wf, { respond: 'atOnce', firstRetrySeconds: 0.05, ...EVENTS });
		const step: Step = {
			nodes: [slowCall('Charge', 'charge', { onError: 'continueErrorOutput' })],
			connections: { Charge: { main: [[], []] } },
			heads: ['Charge'],
		};
		const refusal = await refusedAtPublish(step);
		const delivery = events([{ id: 'eb_a' }, { id: 'eb_b' }, { id: 'eb_c' }]);
		slow.failing.set('charge:eb_b', 1);
		const accepted = await deliver(delivery);
		const runner = startRunner(step);
		const first = await runOwn(accepted.items, step);
		// The retry of B is claimed and its call is in flight: the provider re-sends the whole delivery meanwhile.
		await until(() => startedAt('charge', 'eb_b') >= 2, 5000);
		const resends = [];
		for (let i = 0; i < 3; i++) {
			const copy = await deliver(delivery);
			resends.push([copy.status, copy.outcome, copy.started, copy.body]);
			await sleep(100);
		}
		const withNew = await deliver(events([{ id: 'eb_a' }, { id: 'eb_b' }, { id: 'eb_c' }, { id: 'eb_d' }]));
		const newRun = withNew.items.length > 0 ? await runOwn(withNew.items, step) : undefined;
		await until(async () => (await statuses(['eb_b']))[0] === 'completed', 5000);
		await sleep(300);
		await runner.stop();
		expect({
			refusal,
			accepted: [accepted.status, accepted.started],
			firstRunError: first.data.resultData.error?.message ?? null,
			resends,
			withNew: [withNew.status, withNew.items.map((item) => (item.json.body as { id: string }).id)],
			newRunError: newRun?.data.resultData.error?.message ?? null,
			retries: runner.emitted.map(({ attempt, ids }) => [attempt, ids]),
			charges: ['eb_a', 'eb_b', 'eb_c', 'eb_d'].map((id) => slowAt('charge', id)),
			keys: await statuses(['eb_a', 'eb_b', 'eb_c', 'eb_d']),
		}).toEqual({
			refusal: false,
			accepted: [200, 3],
			firstRunError: null,
			resends: Array.from({ length: 3 }, () => [200, 'duplicate', 0, '{"status":"duplicate"}']),
			withNew: [200, ['eb_d']],
			newRunError: null,
			retries: [[2, ['eb_b']]],
			charges: [1, 1, 1, 1],
			keys: ['completed', 'completed', 'completed', 'completed'],
		});
	}, 30_000);

	/* (2) What is stored, and what a copy of an At Once event gets back --------------------------------------------- */

	it('At Once, Events [A, B] → Charge (error output) → Edit Fields echoing the event and its signature: each key stores no other event’s data, no signature or secret; copies get {"status":"duplicate"} only', async () => {
		const wf = 'wf-rt47-stored';
		use(wf, { respond: 'atOnce', firstRetrySeconds: 0.05, ...EVENTS });
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_BODY),
				node(
					'Answer',
					'set',
					3.4,
					{
						mode: 'manual',
						assignments: {
							assignments: [
								{ id: 'a1', name: 'charged', value: "={{ $('Webhook').item.json.body.id }}", type: 'string' },
								{ id: 'a2', name: 'card', value: "={{ $('Webhook').item.json.body.card }}", type: 'string' },
								{ id: 'a3', name: 'proof', value: "={{ $('Webhook').item.json.headers['stripe-signature'] }}", type: 'string' },
							],
						},
						includeOtherFields: false,
						options: {},
					},
					{ onError: 'continueErrorOutput' },
				),
			],
			connections: { Charge: { main: [link('Answer'), []] }, Answer: { main: [[], []] } },
			heads: ['Charge'],
		};
		const refusal = await refusedAtPublish(step);
		const delivery = events([
			{ id: 'sa_a', card: 'card-of-A-4242' },
			{ id: 'sa_b', card: 'card-of-B-1881' },
		]);
		const accepted = await deliver(delivery);
		const keptBeforeRun = keyRows().map((row) => String((row as unknown as { inbox_item: string | null }).inbox_item ?? ''));
		const run = await runOwn(accepted.items, step);
		const rows = keyRows();
		const copyBatch = await deliver(delivery);
		// The provider re-sends B alone (same Events Path, one element).
		const copyOne = await deliver(events([{ id: 'sa_b', card: 'card-of-B-1881' }]));
		const responseOf = (id: string) => rows.find((row) => row.key.endsWith(`evt:${id}`))?.response ?? null;
		// The workflow later answers When the Workflow Ends, one event per delivery (Respond and Events Path changed back):
		// a copy of B is replayed the answer stored with B's key.
		use(wf, {});
		const replayedB = await deliver({ id: 'sa_b', card: 'card-of-B-1881' });
		const everything = JSON.stringify(rows);
		expect({
			refusal,
			accepted: accepted.status,
			runError: run.data.resultData.error?.message ?? null,
			keys: rows.map((row) => row.status),
			keptSignature: keptBeforeRun.some((text) => text.includes('stripe-signature') || text.includes('v1=')),
			storedOfB: { mentionsA: /sa_a|card-of-A/.test(String(responseOf('sa_b'))), replayedToCopyOfB: replayedB.body },
			storedOfA: { mentionsB: /sa_b|card-of-B/.test(String(responseOf('sa_a'))) },
			secretsStored: everything.includes(SECRET) || everything.includes('v1='),
			copies: [copyBatch, copyOne].map((copy) => [copy.status, copy.body, copy.firstExecution, copy.started]),
		}).toEqual({
			refusal: false,
			accepted: 200,
			runError: null,
			keys: ['completed', 'completed'],
			keptSignature: false,
			storedOfB: { mentionsA: false, replayedToCopyOfB: expect.not.stringMatching(/sa_a|card-of-A/) },
			storedOfA: { mentionsB: false },
			secretsStored: false,
			copies: [
				[200, '{"status":"duplicate"}', null, 0],
				[200, '{"status":"duplicate"}', null, 0],
			],
		});
	});

	/* (3) A step that partly succeeded (charge done, notify failed) at Continue ------------------------------------- */

	// Documented limit (docs/templates.md, "not guaranteed" row): "one event's step with several effects (a charge per
	// line of an order, a charge then a shipment) that fails after some of them | the key is failed and the provider's
	// retry runs the whole step again: the effects done before the failure happen again." With At Once the retry is the
	// package's, from the kept item: the same outcome.
	it('At Once, Charge → Notify (error output), Notify failing once: the package retries the whole step, the charge happens again (documented "not guaranteed")', async () => {
		const wf = 'wf-rt47-partly';
		use(wf, { respond: 'atOnce', firstRetrySeconds: 0.05 });
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge'),
				httpCall('Notify', 'notify', { onError: 'continueErrorOutput' }, '={{ JSON.stringify({ id: $json.id }) }}'),
			],
			connections: { Charge: { main: [link('Notify')] }, Notify: { main: [[], []] } },
			heads: ['Charge'],
		};
		const refusal = await refusedAtPublish(step);
		failNext('notify:pp_a');
		const accepted = await deliver({ id: 'pp_a' });
		const runner = startRunner(step);
		const first = await runOwn(accepted.items, step);
		await until(async () => (await statuses(['pp_a']))[0] === 'completed', 5000);
		await runner.stop();
		expect({
			refusal,
			accepted: accepted.status,
			firstRunStatus: first.status,
			retries: runner.emitted.map(({ attempt }) => attempt),
			charges: effectsAt('charge', 'pp_a'),
			notices: effectsAt('notify', 'pp_a'),
			key: (await statuses(['pp_a']))[0],
		}).toEqual({ refusal: false, accepted: 200, firstRunStatus: 'success', retries: [2], charges: 2, notices: 1, key: 'completed' });
	});

	/* (4) Dead letter, then the provider re-sends the event ------------------------------------------------------------ */

	// docs/idempotent-webhook.md (At Once): "After the last run the event is dead-lettered: the key stays failed, with the
	// event's item and its last error ... List Keys and Get Stats show it ... A resend from the provider is answered as a
	// duplicate and runs nothing".
	it('At Once, Max Attempts 2, the charge always failing: dead-lettered after 2 runs (failed, item and error kept, counted); a re-send is 200 duplicate and runs nothing', async () => {
		const wf = 'wf-rt47-dead';
		use(wf, { respond: 'atOnce', firstRetrySeconds: 0.05, maxAttempts: 2 });
		const step: Step = { nodes: [httpCall('Charge', 'charge')], heads: ['Charge'] };
		failNext('charge:dl_a', 50);
		const accepted = await deliver({ id: 'dl_a' });
		const runner = startRunner(step);
		await runOwn(accepted.items, step);
		await until(() => runner.emitted.length >= 1, 3000);
		await until(async () => (keyRows()[0] as unknown as { dead_lettered_at: number | null }).dead_lettered_at !== null, 3000);
		const resend = await deliver({ id: 'dl_a' });
		await sleep(500);
		await runner.stop();
		const [row] = keyRows() as unknown as Array<{
			status: string;
			dead_lettered_at: number | null;
			inbox_item: string | null;
			last_error: string | null;
		}>;
		const stats = await h.keyStore().stats(24);
		expect({
			accepted: accepted.status,
			retries: runner.emitted.map(({ attempt }) => attempt),
			resend: [resend.status, resend.outcome, resend.started, resend.body],
			callsMade: h.received.filter((target) => target === 'charge:dl_a').length,
			row: {
				status: row.status,
				deadLettered: row.dead_lettered_at !== null,
				itemKept: row.inbox_item !== null,
				error: row.last_error !== null,
			},
			deadLetteredCounted: stats.deadLettered >= 1,
		}).toEqual({
			accepted: 200,
			retries: [2],
			resend: [200, 'duplicate', 0, '{"status":"duplicate"}'],
			callsMade: 2,
			row: { status: 'failed', deadLettered: true, itemKept: true, error: true },
			deadLetteredCounted: true,
		});
	});

	/* (5) A run longer than its lease; an execution that starts after the runner took its event ---------------------- */

	it('At Once, Lease 1 s, the charge taking 3.5 s, the runner looking every 50 ms: the run holds its key, no retry starts beside it, charged once', async () => {
		const wf = 'wf-rt47-long';
		use(wf, { respond: 'atOnce', firstRetrySeconds: 0.05, leaseSeconds: 1 });
		const step: Step = { nodes: [slowCall('Charge', 'charge', {}, undefined, 3500)], heads: ['Charge'] };
		const accepted = await deliver({ id: 'lg_a' });
		const runner = startRunner(step, { leaseMs: 1000 });
		const run = await runOwn(accepted.items, step);
		const copy = await deliver({ id: 'lg_a' });
		await sleep(1500);
		await runner.stop();
		expect({
			accepted: accepted.status,
			runError: run.data.resultData.error?.message ?? null,
			retries: runner.emitted.length,
			callsStarted: startedAt('charge', 'lg_a'),
			charges: slowAt('charge', 'lg_a'),
			copy: [copy.status, copy.started],
			key: (await statuses(['lg_a']))[0],
		}).toEqual({ accepted: 200, runError: null, retries: 0, callsStarted: 1, charges: 1, copy: [200, 0], key: 'completed' });
	}, 20_000);

	it('At Once, Lease 1 s, the execution starting 1.5 s late (n8n backlog) after the runner ran the event: the late run charges nothing; charged once', async () => {
		const wf = 'wf-rt47-late';
		use(wf, { respond: 'atOnce', firstRetrySeconds: 0.05, leaseSeconds: 1 });
		const step: Step = { nodes: [httpCall('Charge', 'charge')], heads: ['Charge'] };
		const accepted = await deliver({ id: 'lt_a' });
		await sleep(1200);
		const runner = startRunner(step, { leaseMs: 1000 });
		await until(async () => (await statuses(['lt_a']))[0] === 'completed', 5000);
		const late = await runOwn(accepted.items, step);
		await sleep(300);
		await runner.stop();
		expect({
			accepted: accepted.status,
			retries: runner.emitted.map(({ attempt }) => attempt),
			lateRunRefused: /took the key over|Nothing ran here/.test(late.data.resultData.error?.message ?? ''),
			charges: effectsAt('charge', 'lt_a'),
			key: (await statuses(['lt_a']))[0],
		}).toEqual({ accepted: 200, retries: [2], lateRunRefused: true, charges: 1, key: 'completed' });
	});

	/* (6) A restart: the runner started anew picks up kept events ---------------------------------------------------- */

	it('At Once, a restart: an event accepted whose execution never started, and one failed once whose retry fell due while down, both run once by the new runner', async () => {
		const wf = 'wf-rt47-restart';
		use(wf, { respond: 'atOnce', firstRetrySeconds: 0.05, leaseSeconds: 1 });
		const step: Step = { nodes: [httpCall('Charge', 'charge')], heads: ['Charge'] };
		// Event 1: answered 200, then the process died before its execution started.
		const unstarted = await deliver({ id: 'rs_a' });
		// Event 2: ran and failed once while the old runner was up (its retry not yet due), then the process died.
		failNext('charge:rs_b');
		const failing = await deliver({ id: 'rs_b' });
		const oldRunner = startRunner(step, { leaseMs: 1000 });
		await oldRunner.stop(); // the process dies: nothing claimed yet (no retry due)
		await runOwn(failing.items, step);
		await sleep(1300); // down past the lease and the retry's due time
		const newRunner = startRunner(step, { leaseMs: 1000 });
		await until(async () => (await statuses(['rs_a', 'rs_b'])).every((status) => status === 'completed'), 5000);
		await sleep(300);
		await newRunner.stop();
		expect({
			answers: [unstarted.status, failing.status],
			oldRetries: oldRunner.emitted.length,
			newRetries: newRunner.emitted.map(({ attempt, ids }) => [attempt, ids[0]]).sort(),
			charges: [effectsAt('charge', 'rs_a'), effectsAt('charge', 'rs_b')],
			keys: await statuses(['rs_a', 'rs_b']),
		}).toEqual({
			answers: [200, 200],
			oldRetries: 0,
			newRetries: [
				[2, 'rs_a'],
				[2, 'rs_b'],
			],
			charges: [1, 1],
			keys: ['completed', 'completed'],
		});
	});

	/* (7) Stop during an At Once run ----------------------------------------------------------------------------------- */

	// Documented (docs/idempotent-webhook.md, "How the key of a new event is settled"): "A Stop or a timeout does not cut
	// the call: n8n's HTTP Request goes on after the execution ended and may commit. Nothing records that it did, so the
	// retry after the lease runs the step again: a second effect unless the API drops the repeat by the
	// Idempotency-Key every call of the event carries." Copies meanwhile: "A copy of an accepted event is answered 200
	// duplicate whatever its state".
	it('At Once, Stop while the charge’s call is in flight, Lease 2 s, the runner up: held (copies 200 duplicate), the retry after the lease charges again (documented)', async () => {
		const wf = 'wf-rt47-stop';
		use(wf, { respond: 'atOnce', firstRetrySeconds: 0.05, leaseSeconds: 2 });
		const step: Step = { nodes: [slowCall('Charge', 'charge')], heads: ['Charge'] };
		const accepted = await deliver({ id: 'sp_a' });
		const runner = startRunner(step, { leaseMs: 2000 });
		const run = await runOwn(accepted.items, step, { cancelAfterMs: 150 });
		const keyAfterStop = (await statuses(['sp_a']))[0];
		const copy = await deliver({ id: 'sp_a' });
		const retriesBeforeLease = runner.emitted.length;
		await until(async () => (await statuses(['sp_a']))[0] === 'completed', 6000);
		await runner.stop();
		expect({
			accepted: accepted.status,
			runStatus: run.status,
			keyAfterStop,
			copy: [copy.status, copy.outcome, copy.started],
			retriesBeforeLease,
			retries: runner.emitted.map(({ attempt }) => attempt),
			charges: slowAt('charge', 'sp_a'),
			key: (await statuses(['sp_a']))[0],
		}).toEqual({
			accepted: 200,
			runStatus: 'canceled',
			keyAfterStop: 'processing',
			copy: [200, 'duplicate', 0],
			retriesBeforeLease: 0,
			retries: [2],
			charges: 2,
			key: 'completed',
		});
	}, 20_000);

	/* (8) Two workflows subscribed to the same events, both At Once ------------------------------------------------- */

	it('two At Once workflows on the same event (Charge in one, Ship in the other), the charge failing once: each runner retries only its own; one charge, one shipment', async () => {
		const stepOne: Step = { nodes: [httpCall('Charge', 'charge')], heads: ['Charge'] };
		const stepTwo: Step = { nodes: [httpCall('Ship', 'ship')], heads: ['Ship'] };
		failNext('charge:tw_a');
		use('wf-rt47-two-1', { respond: 'atOnce', firstRetrySeconds: 0.05 });
		const one = await deliver({ id: 'tw_a' });
		use('wf-rt47-two-2', { respond: 'atOnce', firstRetrySeconds: 0.05 });
		const two = await deliver({ id: 'tw_a' });
		const runnerOne = startRunner(stepOne, { workflowId: 'wf-rt47-two-1' });
		const runnerTwo = startRunner(stepTwo, { workflowId: 'wf-rt47-two-2' });
		await runOwn(one.items, stepOne, { workflowId: 'wf-rt47-two-1' });
		await runOwn(two.items, stepTwo, { workflowId: 'wf-rt47-two-2' });
		await until(() => effectsAt('charge', 'tw_a') >= 1, 3000);
		await sleep(300);
		await runnerOne.stop();
		await runnerTwo.stop();
		const statusOf = async (workflowId: string) => {
			const key = `wf:${workflowId}:evt:tw_a`;
			return (await h.keyStore().getKeys([key])).get(key)?.status;
		};
		expect({
			answers: [one.status, two.status],
			retries: [runnerOne.emitted.map(({ attempt }) => attempt), runnerTwo.emitted.length],
			effects: [effectsAt('charge', 'tw_a'), effectsAt('ship', 'tw_a')],
			keys: [await statusOf('wf-rt47-two-1'), await statusOf('wf-rt47-two-2')],
		}).toEqual({ answers: [200, 200], retries: [[2], 0], effects: [1, 1], keys: ['completed', 'completed'] });
	});

	/* (9) What is kept: Generic HMAC's own signature header ---------------------------------------------------------- */

	// docs/idempotent-webhook.md (At Once): "What is kept ... the request's body, query and headers, **without** any
	// header that may carry a credential or a signature (authorization, cookie, the Header Auth header whatever its name,
	// stripe-signature, …)". The trigger knows which header carries the signature: the one its Generic HMAC reads.
	for (const header of ['X-Payload-Digest', 'X-Sign']) {
		it(`At Once, Generic HMAC with Signature Header ${header}: the kept item (and the retry's item) holds no signature`, async () => {
			const wf = `wf-rt47-generic-${header.toLowerCase()}`;
			use(wf, {
				respond: 'atOnce',
				firstRetrySeconds: 0.05,
				scheme: 'generic',
				signatureHeader: header,
				algorithm: 'sha256',
				encoding: 'hex',
				signedContent: 'body',
			});
			const id = `gh_${header.length}`;
			const body = JSON.stringify({ id });
			const digest = createHmac('sha256', SECRET).update(body).digest('hex');
			const firstBody = JSON.stringify({ id: `${id}_first` });
			const firstDigest = createHmac('sha256', SECRET).update(firstBody).digest('hex');
			sendAs({ headers: { [header.toLowerCase()]: firstDigest } });
			const step: Step = {
				nodes: [
					httpCall('Charge', 'charge'),
					node('Answer', 'set', 3.4, {
						mode: 'manual',
						assignments: {
							assignments: [
								{ id: 'a1', name: 'charged', value: "={{ $('Webhook').item.json.body.id }}", type: 'string' },
								{
									id: 'a2',
									name: 'proof',
									value: `={{ $('Webhook').item.json.headers['${header.toLowerCase()}'] ?? 'none' }}`,
									type: 'string',
								},
							],
						},
						includeOtherFields: false,
						options: {},
					}),
				],
				connections: { Charge: { main: [link('Answer')] } },
				heads: ['Charge'],
			};
			const refusal = await refusedAtPublish(step);
			const first = await deliver({ id: `${id}_first` });
			await runOwn(first.items, step);
			const storedFirst = String(keyRows().find((row) => row.key.endsWith(`evt:${id}_first`))?.response ?? '');
			sendAs({ headers: { [header.toLowerCase()]: createHmac('sha256', SECRET).update(body).digest('hex') } });
			failNext(`charge:${id}`);
			const accepted = await deliver({ id });
			const kept = String(
				(keyRows().find((row) => row.key.endsWith(`evt:${id}`)) as unknown as { inbox_item: string | null } | undefined)?.inbox_item ?? '',
			);
			const runner = startRunner(step);
			await runOwn(accepted.items, step);
			await until(async () => (await statuses([id]))[0] === 'completed', 3000);
			await runner.stop();
			expect({
				refusal,
				accepted: [first.status, accepted.status],
				storedAnswerHoldsSignature: storedFirst.includes(firstDigest),
				keptHoldsSignature: kept.includes(digest),
				retryItemHeaders: runner.emitted.map((run) => run.headers.includes(header.toLowerCase())),
				charges: effectsAt('charge', id),
			}).toEqual({
				refusal: false,
				accepted: [200, 200],
				storedAnswerHoldsSignature: false,
				keptHoldsSignature: false,
				retryItemHeaders: [false],
				charges: 1,
			});
		});
	}
	/* (10) The editor's test URL (manual mode) on an At Once trigger ------------------------------------------------- */

	// The trigger's panel: "Test deliveries are keyed apart from real ones: testing never makes a real delivery a
	// duplicate"; inboxSettings(): "An editor test delivery is answered when its run ends: no runner retries test runs."
	it('At Once, a delivery to the test URL (manual mode) failing once: answered when its run ends (500), not kept, not retried by the runner; the real delivery after it is new and accepted', async () => {
		const wf = 'wf-rt47-manual';
		use(wf, { respond: 'atOnce', firstRetrySeconds: 0.05 });
		const step: Step = { nodes: [httpCall('Charge', 'charge')], heads: ['Charge'] };
		let started: IWebhookResponseData | Error | undefined;
		let writtenByTrigger = false;
		const server = http.createServer((request, response) => {
			void (async () => {
				const n8nRequest = await asN8nReceives(request, response);
				if (!n8nRequest) return;
				const node = triggerNode(wf);
				const nodeType = nodeTypes.getByNameAndVersion(node.type, node.typeVersion);
				const additionalData = {
					...engineBase(h.credentials()),
					httpRequest: n8nRequest,
					httpResponse: response,
				} as unknown as IWorkflowExecuteAdditionalData;
				const webhookData = {
					webhookDescription: nodeType.description.webhooks![0],
					workflowId: wf,
					node: node.name,
				} as unknown as IWebhookData;
				const workflow = new Workflow({ id: wf, nodes: [node], connections: {}, active: false, nodeTypes });
				const context = new WebhookContext(workflow, node, additionalData, 'manual', webhookData, [], null);
				try {
					started = await (nodeType.webhook as unknown as (this: unknown) => Promise<IWebhookResponseData>).call(context);
				} catch (error) {
					started = error as Error;
				}
				writtenByTrigger = response.writableEnded;
				if (!response.writableEnded) response.writeHead(200).end('{"started":true}');
			})();
		});
		await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
		try {
			const body = JSON.stringify({ id: 'mt_a' });
			const timestamp = Math.floor(Date.now() / 1000);
			const signature = createHmac('sha256', SECRET).update(`${timestamp}.${body}`).digest('hex');
			const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/webhook-test/${TAG}`, {
				method: 'POST',
				headers: { 'content-type': 'application/json', 'stripe-signature': `t=${timestamp},v1=${signature}` },
				body,
			});
			await response.text();
			const items = started && !(started instanceof Error) ? ((started.workflowData?.[0] as INodeExecutionData[] | undefined) ?? []) : [];
			failNext('charge:mt_a');
			const runner = startRunner(step);
			const executionId = h.nextExecutionId('manual');
			const workflow = inProcessWorkflow(wf, [triggerNode(wf), ...step.nodes], { Webhook: { main: [link('Charge')] } });
			const { run } = await executeInProcess(workflow, executionId, items, h.engine(), { mode: 'manual' });
			const testAnswer = Number(webhookResponses.get(executionId)?.[0]?.statusCode ?? (run.data.resultData.error ? 500 : 200));
			await sleep(400);
			const rowsAfterTest = (await h.keyStore().listKeys({ limit: 500 })).keys.filter((row) => row.key.includes('mt_a'));
			const real = await deliver({ id: 'mt_a' });
			if (real.items.length > 0) await runOwn(real.items, step);
			await sleep(200);
			await runner.stop();
			expect({
				testWrittenByTrigger: writtenByTrigger,
				testItems: items.length,
				testAnswer,
				testKeys: rowsAfterTest.map((row) => [row.status, row.inboxOwner]),
				retries: runner.emitted.length,
				real: [real.status, real.outcome, real.started],
				charges: effectsAt('charge', 'mt_a'),
				realKey: (await statuses(['mt_a']))[0],
			}).toEqual({
				testWrittenByTrigger: false,
				testItems: 1,
				testAnswer: 500,
				testKeys: [['failed', null]],
				retries: 0,
				real: [200, 'new', 1],
				charges: 1,
				realKey: 'completed',
			});
		} finally {
			await new Promise((resolve) => server.close(resolve));
		}
	});
});
