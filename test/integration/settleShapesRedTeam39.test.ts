import { type IConnections, type INode } from 'n8n-workflow';

import { WebhookSignatureVerify } from '../../nodes/WebhookSignatureVerify/WebhookSignatureVerify.node';
import { describeWithN8n } from '../support/n8nBaseNodes';
import { PACKAGE } from '../support/n8nEngine';
import { link } from '../support/settleWorkflows';
import { baseNode as node, CHARGE_BODY, EVENTS, events, SPLIT_OUT_EVENTS, triggerRedTeam, type Step } from '../support/triggerRedTeam';

/*
 * Thirty-ninth red-team pass: over-refusal of common shapes by the firstEventOnly rule (Execute Once into a Merge with
 * the events, inside Loop Over Items, on Reserve's Duplicate output, one event per delivery, a branch ending in Respond
 * to Webhook, a summary at the end), recoveredBefore with several events whose recoveries differ, and the Execute Once
 * link drop with two events. n8n's engine in-process; the embedded store. A row that fails breaks a promise.
 */

describeWithN8n('red team 39: firstEventOnly over-refusal, per-event recoveries, Execute Once link drop', () => {
	const { effectsAt, failNext, httpCall, nodePath, provide, refusedAtPublish, statuses, useTrigger } = triggerRedTeam({
		tag: 'rt39',
		nodeLeaseSeconds: 1,
		providerPauseMs: 1200,
		route: (route, _body, id) => (route === 'token' ? { token: `tok_${id || 'x'}` } : undefined),
		baseNodeFiles: {
			'n8n-nodes-base.webhook': 'Webhook/Webhook.node.js',
			'n8n-nodes-base.splitOut': 'Transform/SplitOut/SplitOut.node.js',
			'n8n-nodes-base.set': 'Set/Set.node.js',
			'n8n-nodes-base.respondToWebhook': 'RespondToWebhook/RespondToWebhook.node.js',
		},
		nodeTypes: { [`${PACKAGE}.webhookSignatureVerify`]: new WebhookSignatureVerify() },
	});
	const { completeNode: complete, nodeKey, nodeTemplate, provideNodePath, reserveNode, useNodePath } = nodePath;
	const completeNode = (name = 'Mark Complete', extra: Partial<INode> = {}): INode => ({ ...complete(extra), name, id: name });
	const RESERVED_ID = '={{ JSON.stringify({ id: $("Reserve").item.json.body.id }) }}';
	const ERROR_OUTPUT: Partial<INode> = { onError: 'continueErrorOutput' };
	const REGULAR: Partial<INode> = { onError: 'continueRegularOutput' };
	const completeAnswers = { 'Mark Complete': { main: [link('Respond 200'), link('Respond 500 (provider retries)')] } };
	const FIELD_RESERVE = () => reserveNode({ keySource: 'field', keyField: 'body.id', keyPrefix: 'evt:' });
	const errorsOf = (runs: Array<{ data: { resultData: { error?: { message?: string } } } }>) =>
		runs.map((run) => run.data.resultData.error?.message?.slice(0, 200) ?? null);
	const reserveRefusal = (runs: Array<{ data: { resultData: { runData: Record<string, unknown> } } }>) => {
		const task = (runs[0]?.data.resultData.runData.Reserve as Array<{ data?: { main: unknown[][] } }> | undefined)?.[0];
		const refused = JSON.stringify(task?.data?.main[3] ?? []);
		return refused === '[]' ? false : refused.slice(0, 900);
	};
	const dump = (label: string, value: unknown) => {
		if (process.env.RT39_DUMP) process.stderr.write(`RT39 ${label}: ${JSON.stringify(value)}\n`);
	};
	const only = (name: string, field: string, value: string, extra: Partial<INode> = {}) =>
		node(
			name,
			'set',
			3.4,
			{ mode: 'manual', assignments: { assignments: [{ id: field, name: field, value, type: 'string' }] }, options: {} },
			extra,
		);
	const two = (tag: string) => events([{ id: `${tag}_a` }, { id: `${tag}_b` }]);
	const keysOf = async (tag: string) => [await nodeKey(`evt:${tag}_a`), await nodeKey(`evt:${tag}_b`)];
	const charges = (tag: string, route = 'charge') => [effectsAt(route, `${tag}_a`), effectsAt(route, `${tag}_b`)];

	/* (1) Execute Once whose output goes only into a Merge (combine all) with the events ---------------------------- */

	// A token fetched once, joined with each event (Merge, combine all), then the charge and Complete (Key From: Item,
	// reading the Reserve item the charge's answer descends from). n8n pairs the token's item to the first event, so
	// its own pairing finds two Reserve items for B's; the package's trace leaves the token out and finds B's alone.
	// Read through n8n's pairing only, Complete failed for B after its charge, and the retry charged B again.
	it('node path: Split [A, B] → Reserve → Get Token (Execute Once) → Merge (combine all) ← Reserve → Charge → Complete: each charged once', async () => {
		const tag = 'tm';
		useNodePath(`wf-rt39-${tag}`);
		const step: Step = {
			nodes: [
				httpCall('Get Token', 'token', { executeOnce: true }, '={{ JSON.stringify({ id: "once" }) }}'),
				node('With Token', 'merge', 3.2, { mode: 'combine', combineBy: 'combineAll', options: {} }),
				httpCall('Charge', 'charge', {}, CHARGE_BODY),
				completeNode(),
			],
			connections: {
				'Get Token': { main: [[{ node: 'With Token', type: 'main', index: 1 }]] },
				'With Token': { main: [link('Charge')] },
				Charge: { main: [link('Mark Complete')] },
				...completeAnswers,
			} as IConnections,
			heads: ['With Token', 'Get Token'],
		};
		const { answers } = await provideNodePath(two(tag), () => nodeTemplate(step, { reserve: FIELD_RESERVE(), before: SPLIT_OUT_EVENTS }));
		expect({ answers, charges: charges(tag), keys: await keysOf(tag) }).toEqual({
			answers: [200],
			charges: [1, 1],
			keys: ['completed', 'completed'],
		});
	});

	/* (2) Execute Once inside Loop Over Items (batch size 1) -------------------------------------------------------- */

	it('node path: Split [A, B] → Reserve → Loop (1) → Get Token (Execute Once) → Charge → Complete → Loop; done → Respond 200: not refused', async () => {
		const tag = 'lp';
		useNodePath('wf-rt39-loop');
		const step: Step = {
			nodes: [
				node('Loop', 'splitInBatches', 3, { batchSize: 1, options: {} }),
				httpCall('Get Token', 'token', { executeOnce: true }, '={{ JSON.stringify({ id: "t" }) }}'),
				httpCall('Charge', 'charge', {}, '={{ JSON.stringify({ id: $("Loop").item.json.body.id }) }}'),
				completeNode(),
			],
			connections: {
				Loop: { main: [link('Respond 200'), link('Get Token')] },
				'Get Token': { main: [link('Charge')] },
				Charge: { main: [link('Mark Complete')] },
				'Mark Complete': { main: [link('Loop'), link('Respond 500 (provider retries)')] },
			} as IConnections,
			heads: ['Loop'],
		};
		const { answers, runs } = await provideNodePath(two(tag), () =>
			nodeTemplate(step, { reserve: FIELD_RESERVE(), before: SPLIT_OUT_EVENTS }),
		);
		const result = { refused: reserveRefusal(runs), answers, charges: charges(tag), keys: await keysOf(tag), errors: errorsOf(runs) };
		dump(tag, result);
		expect(result).toMatchObject({ refused: false, answers: [200], charges: [1, 1], keys: ['completed', 'completed'] });
	});

	/* (3) Execute Once on a node after Reserve's Duplicate output --------------------------------------------------- */

	it("node path: Reserve's Duplicate → Log Duplicate (HTTP, Execute Once) → Respond 200 (duplicate): the first delivery is not refused, a resend is a duplicate", async () => {
		const tag = 'dp';
		useNodePath('wf-rt39-dup');
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', {}, RESERVED_ID),
				completeNode(),
				httpCall('Log Duplicate', 'notify', { executeOnce: true }, RESERVED_ID),
			],
			connections: {
				Charge: { main: [link('Mark Complete')] },
				'Log Duplicate': { main: [link('Respond 200 (duplicate)')] },
				...completeAnswers,
			} as IConnections,
			heads: ['Charge'],
			duplicates: ['Log Duplicate'],
		};
		const build = () => nodeTemplate(step, { reserve: FIELD_RESERVE(), before: SPLIT_OUT_EVENTS });
		const first = await provideNodePath(two(tag), build);
		const second = await provideNodePath(two(tag), build);
		const result = {
			refused: reserveRefusal(first.runs),
			answers: [first.answers, second.answers],
			charges: charges(tag),
			keys: await keysOf(tag),
			errors: errorsOf([...first.runs, ...second.runs]),
		};
		dump(tag, result);
		expect(result).toMatchObject({ refused: false, answers: [[200], [200]], charges: [1, 1], keys: ['completed', 'completed'] });
	});

	/* (4) One event per delivery ------------------------------------------------------------------------------------ */

	const tokenThenCharge = (): Step => ({
		nodes: [
			httpCall('Get Token', 'token', { executeOnce: true }, '={{ JSON.stringify({ id: "t" }) }}'),
			httpCall('Charge', 'charge', {}, '={{ JSON.stringify({ id: $("Webhook").item.json.body.id }) }}'),
		],
		connections: { 'Get Token': { main: [link('Charge')] } },
		heads: ['Get Token'],
	});
	it('trigger, no Events Path (one event a delivery): Get Token (Execute Once) → Charge: not refused at publish, charged once', async () => {
		useTrigger('wf-rt39-one-event');
		const step = tokenThenCharge();
		const refusal = await refusedAtPublish(step);
		const { answers } = await provide({ id: 'oe_a' }, step);
		expect({ refusal, answers, charges: effectsAt('charge', 'oe_a'), keys: await statuses(['oe_a']) }).toEqual({
			refusal: false,
			answers: [200],
			charges: 1,
			keys: ['completed'],
		});
	});
	it('node path, one event a delivery: Reserve (Event ID) → Get Token (Execute Once) → Charge → Complete: not refused, charged once', async () => {
		useNodePath('wf-rt39-one-event-np');
		const step: Step = {
			nodes: [
				httpCall('Get Token', 'token', { executeOnce: true }, '={{ JSON.stringify({ id: "t" }) }}'),
				httpCall('Charge', 'charge', {}, RESERVED_ID),
				completeNode(),
			],
			connections: { 'Get Token': { main: [link('Charge')] }, Charge: { main: [link('Mark Complete')] }, ...completeAnswers },
			heads: ['Get Token'],
		};
		const { answers, runs } = await provideNodePath({ id: 'on_a' }, () => nodeTemplate(step));
		const result = { refused: reserveRefusal(runs), answers, charges: effectsAt('charge', 'on_a'), key: await nodeKey('evt:on_a') };
		dump('on', { ...result, errors: errorsOf(runs) });
		expect(result).toEqual({ refused: false, answers: [200], charges: 1, key: 'completed' });
	});

	/* (5) An Execute Once node on a branch that ends in Respond to Webhook ------------------------------------------ */

	it('node path: Split [A, B] → Reserve → Charge → Complete → Summary (Edit Fields, Execute Once) → Respond to Webhook: not refused (the branch ends in Respond only)', async () => {
		const tag = 'rs';
		useNodePath('wf-rt39-respond');
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', {}, RESERVED_ID),
				completeNode(),
				only('Reply', 'received', 'true', { executeOnce: true }),
				node('Answer', 'respondToWebhook', 1.1, { respondWith: 'firstIncomingItem', options: {} }),
			],
			connections: {
				Charge: { main: [link('Mark Complete')] },
				'Mark Complete': { main: [link('Reply'), link('Respond 500 (provider retries)')] },
				Reply: { main: [link('Answer')] },
			} as IConnections,
			heads: ['Charge'],
		};
		const { answers, runs } = await provideNodePath(two(tag), () =>
			nodeTemplate(step, { reserve: FIELD_RESERVE(), before: SPLIT_OUT_EVENTS }),
		);
		const result = { refused: reserveRefusal(runs), charges: charges(tag), keys: await keysOf(tag) };
		dump(tag, { ...result, answers, errors: errorsOf(runs) });
		expect(result).toMatchObject({ refused: false, charges: [1, 1], keys: ['completed', 'completed'] });
	});
	// The same with the Execute Once reply beside the step (Reserve New → Reply (Execute Once) → Respond to Webhook), the
	// step Charge → Complete: the reply acts for nothing but the answer.
	it('node path: Split [A, B] → Reserve New → [Charge → Complete] and [Reply (Edit Fields, Execute Once) → Respond to Webhook]: refused before anything is reserved', async () => {
		const tag = 'rb';
		useNodePath('wf-rt39-respond-beside');
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', {}, RESERVED_ID),
				completeNode(),
				only('Reply', 'received', 'true', { executeOnce: true }),
				node('Answer', 'respondToWebhook', 1.1, { respondWith: 'firstIncomingItem', options: {} }),
			],
			connections: {
				Charge: { main: [link('Mark Complete')] },
				'Mark Complete': { main: [[], link('Respond 500 (provider retries)')] },
				Reply: { main: [link('Answer')] },
			} as IConnections,
			heads: ['Charge', 'Reply'],
		};
		const { answers, runs } = await provideNodePath(
			two(tag),
			() => nodeTemplate(step, { reserve: FIELD_RESERVE(), before: SPLIT_OUT_EVENTS }),
			1,
		);
		const result = { refused: reserveRefusal(runs), answers, charges: charges(tag), keys: await keysOf(tag), errors: errorsOf(runs) };
		dump(tag, result);
		// Refused before anything is reserved: the reply would answer for the first event while the others' steps run on.
		expect({ refused: /Reply.{0,3} is set to Execute Once/.test(String(result.refused)), answers, charges: result.charges }).toEqual({
			refused: true,
			answers: [503],
			charges: [0, 0],
		});
	});

	/* (6) "Send summary (Execute Once)" at the end after per-event effects ----------------------------------------- */

	const summaryStep = (summary: Partial<INode>): Step => ({
		nodes: [
			httpCall('Charge', 'charge', ERROR_OUTPUT, CHARGE_BODY),
			httpCall('Send Summary', 'notify', { executeOnce: true, ...summary }, '={{ JSON.stringify({ id: "summary" }) }}'),
		],
		connections: {
			Charge: { main: [link('Send Summary'), []] },
			'Send Summary': { main: summary.onError === 'continueErrorOutput' ? [[], []] : [[]] },
		},
		heads: ['Charge'],
	});
	for (const [label, summary] of [
		['Continue (regular)', REGULAR],
		['Continue (error output)', ERROR_OUTPUT],
		['Stop Workflow', {}],
	] as Array<[string, Partial<INode>]>)
		it(`trigger, Events [A, B]: Charge (error output) → Send Summary (Execute Once, ${label}) at the end: refused at publish naming Send Summary (not as firstEventOnly)`, async () => {
			useTrigger(`wf-rt39-summary-${label.replace(/\W+/g, '')}`, EVENTS);
			const refusal = await refusedAtPublish(summaryStep(summary));
			dump(`summary ${label}`, refusal);
			expect({
				refused: typeof refusal === 'string',
				namesSummary: typeof refusal === 'string' && refusal.includes('"Send Summary"'),
				notFirstEventOnly: typeof refusal === 'string' && !refusal.includes('first of them only'),
			}).toEqual({ refused: true, namesSummary: true, notFirstEventOnly: true });
		});

	// Node path with Complete: Charge → Send Summary (Execute Once) → Complete. Send Summary gives Complete one item (A's):
	// B's charge committed, its key is left held after the 200.
	it('node path: Split [A, B] → Reserve → Charge → Send Summary (HTTP, Execute Once) → Complete → Respond 200: refused, or both completed', async () => {
		const tag = 'sc';
		useNodePath('wf-rt39-summary-complete');
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', {}, RESERVED_ID),
				httpCall('Send Summary', 'notify', { executeOnce: true }, '={{ JSON.stringify({ id: "summary_sc" }) }}'),
				completeNode(),
			],
			connections: { Charge: { main: [link('Send Summary')] }, 'Send Summary': { main: [link('Mark Complete')] }, ...completeAnswers },
			heads: ['Charge'],
		};
		const { answers, runs } = await provideNodePath(two(tag), () =>
			nodeTemplate(step, { reserve: FIELD_RESERVE(), before: SPLIT_OUT_EVENTS }),
		);
		const refused = reserveRefusal(runs);
		const result = { refused, answers, charges: charges(tag), keys: await keysOf(tag), errors: errorsOf(runs) };
		dump(tag, result);
		expect(refused !== false || (result.keys[0] === 'completed' && result.keys[1] === 'completed')).toBe(true);
	});

	// The Execute Once node is the effect itself, straight into Complete: it charges A only, B never charged.
	it('node path: Split [A, B] → Reserve → Charge (Execute Once) → Complete → Respond 200: refused before anything is reserved (B never charged)', async () => {
		const tag = 'ce';
		useNodePath('wf-rt39-charge-once');
		const step: Step = {
			nodes: [httpCall('Charge', 'charge', { executeOnce: true }, RESERVED_ID), completeNode()],
			connections: { Charge: { main: [link('Mark Complete')] }, ...completeAnswers },
			heads: ['Charge'],
		};
		const { answers, runs } = await provideNodePath(two(tag), () =>
			nodeTemplate(step, { reserve: FIELD_RESERVE(), before: SPLIT_OUT_EVENTS }),
		);
		const result = { refused: reserveRefusal(runs), answers, charges: charges(tag), keys: await keysOf(tag), errors: errorsOf(runs) };
		dump(tag, result);
		expect({ refused: result.refused !== false, charges: result.charges, keys: result.keys }).toEqual({
			refused: true,
			charges: [0, 0],
			keys: [null, null],
		});
	});

	/* (7) recoveredBefore with two events: A's backup succeeded, B's failed ----------------------------------------- */

	for (const backupOnError of ['continueRegularOutput', 'continueErrorOutput'] as const)
		it(`node path: Split [A, B] → Reserve → Charge (error output) → Backup (${backupOnError}) → Complete; both charges fail, B's backup fails too: A completed, B never completed unpaid`, async () => {
			const tag = backupOnError === 'continueRegularOutput' ? 'br' : 'be';
			useNodePath(`wf-rt39-backup-${tag}`);
			failNext(`charge:${tag}_a`);
			failNext(`charge:${tag}_b`, 10);
			failNext(`refund:${tag}_b`);
			const step: Step = {
				nodes: [
					httpCall('Charge', 'charge', ERROR_OUTPUT, RESERVED_ID),
					httpCall('Backup', 'refund', { onError: backupOnError }, RESERVED_ID),
					completeNode(),
				],
				connections: {
					Charge: { main: [link('Mark Complete'), link('Backup')] },
					Backup: { main: backupOnError === 'continueErrorOutput' ? [link('Mark Complete'), []] : [link('Mark Complete')] },
					...completeAnswers,
				} as IConnections,
				heads: ['Charge'],
			};
			const { answers, runs } = await provideNodePath(
				two(tag),
				() => nodeTemplate(step, { reserve: FIELD_RESERVE(), before: SPLIT_OUT_EVENTS }),
				1,
			);
			const result = {
				refused: reserveRefusal(runs),
				answers,
				charges: charges(tag),
				backups: charges(tag, 'refund'),
				keys: await keysOf(tag),
				errors: errorsOf(runs),
			};
			dump(tag, result);
			expect({ refused: result.refused, backups: result.backups, a: result.keys[0], bCompleted: result.keys[1] === 'completed' }).toEqual({
				refused: false,
				backups: [1, 0],
				a: 'completed',
				bCompleted: false,
			});
		});

	/* (8) The Execute Once link drop with two events --------------------------------------------------------------- */
});
