import { type IConnections, type INode, type IRun, type IRunExecutionData } from 'n8n-workflow';

import { WebhookSignatureVerify } from '../../nodes/WebhookSignatureVerify/WebhookSignatureVerify.node';
import { describeWithN8n } from '../support/n8nBaseNodes';
import { PACKAGE, packageNode, resumeInProcess } from '../support/n8nEngine';
import { link } from '../support/settleWorkflows';
import { baseNode as node, events, SPLIT_OUT_EVENTS, triggerRedTeam, type Step } from '../support/triggerRedTeam';

/*
 * Thirty-third red-team pass, the node path with Idempotency Key → Complete (not Settle): n8n's Webhook (Raw Body) →
 * Webhook Signature Verify → Idempotency Reserve (lease, 1 s) → the user's step → Complete (Key From: Item) / Mark
 * Failed. Shapes: Merge (combine by position at its defaults, combine by matching fields "Enrich Input 1") between the
 * effect and Complete, Edit Fields after an effect at Continue, If → effect → Merge (append) → Complete, Switch fallback
 * output, Loop Over Items with Complete inside and a failure on a later batch, Retry On Fail succeeding on the 2nd try,
 * and n8n's Retry of a failed execution (the saved run data, from the failed node) before the provider's retry. n8n 2.41.1's request path, engine and nodes; the embedded store; the effect is n8n's HTTP Request
 * calling a local API that counts what it committed per event. The provider re-delivers the same signed bytes until
 * answered 2xx. A row that fails breaks a promise.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const payments = new Map<string, number>();

describeWithN8n('red team 33: the node path with Complete — Merge, Edit Fields, Switch, loops, Retry On Fail, n8n Retry', () => {
	const { effectsAt, engine, failNext, httpCall, nextExecutionId, nodePath } = triggerRedTeam({
		tag: 'rt33',
		nodeLeaseSeconds: 1,
		providerPauseMs: 1200,
		// The lookup API answers `error: null` on success for the ids starting `nl_` (as many APIs do).
		route: (route, _body, id) => {
			if (route === 'lookup') return { id, tier: 'gold', ...(id.startsWith('nl_') ? { error: null } : {}) };
			if (route !== 'pay') return undefined;
			// The payment API commits a payment per call and answers with an `error` field that says there is none.
			payments.set(id, (payments.get(id) ?? 0) + 1);
			return { id, status: 'paid', error: 'none' };
		},
		baseNodeFiles: {
			'n8n-nodes-base.webhook': 'Webhook/Webhook.node.js',
			'n8n-nodes-base.splitOut': 'Transform/SplitOut/SplitOut.node.js',
			'n8n-nodes-base.set': 'Set/Set.node.js',
			'n8n-nodes-base.switch': 'Switch/Switch.node.js',
		},
		nodeTypes: { [`${PACKAGE}.webhookSignatureVerify`]: new WebhookSignatureVerify() },
	});

	const { completeNode: complete, deliverNodePath, nodeKey, nodeTemplate, provideNodePath, reserveNode, useNodePath } = nodePath;
	const fieldReserve = () => reserveNode({ keySource: 'field', keyField: 'body.id', keyPrefix: 'evt:' });
	const completeNode = (name = 'Mark Complete', extra: Partial<INode> = {}): INode => ({ ...complete(extra), name, id: name });
	const markFailedNode = (name = 'Mark Failed'): INode =>
		packageNode(
			name,
			'idempotencyKey',
			{ operation: 'fail', store: 'embedded', source: 'item', options: {} },
			{ typeVersion: 3, position: [900, 300] },
		);
	const splitOut = SPLIT_OUT_EVENTS;
	type NodeStep = Step;

	const charge = (extra: Partial<INode> = {}) => httpCall('Charge', 'charge', extra, '={{ JSON.stringify({ id: $json.body.id }) }}');
	const lookup = () => httpCall('Lookup Customer', 'lookup', {}, '={{ JSON.stringify({ id: $json.body.id }) }}');
	const CONTINUE_REGULAR: Partial<INode> = { onError: 'continueRegularOutput' };

	/* Merge between the effect and Complete ----------------------------------------------------------------------- */

	/** Reserve New → [Charge (Continue regular) → input 1, Lookup Customer → input 2] → Merge (Combine by Position, `options`) → Complete. */
	const chargeBesideLookup = (options: Record<string, unknown>): NodeStep => ({
		nodes: [
			charge(CONTINUE_REGULAR),
			lookup(),
			node('Join', 'merge', 3.2, { mode: 'combine', combineBy: 'combineByPosition', options } as never),
			completeNode(),
		],
		connections: {
			Charge: { main: [[{ node: 'Join', type: 'main', index: 0 }]] },
			'Lookup Customer': { main: [[{ node: 'Join', type: 'main', index: 1 }]] },
			Join: { main: [link('Mark Complete')] },
			'Mark Complete': { main: [link('Respond 200'), []] },
		} as IConnections,
		heads: ['Charge', 'Lookup Customer'],
	});
	const joinedFields = (run: IRun | undefined) =>
		Object.keys(run?.data.resultData.runData.Join?.[0]?.data?.main[0]?.[0]?.json ?? {}).sort();

	// Merge (Combine by Position), options as n8n leaves them (none added: lodash merge, the last input wins): the charge's
	// `error` survives the join (the lookup has none) and Complete refuses it. Held.
	it('node path: [Charge (Continue regular) failing once, Lookup] → Merge (combine by position, no options) → Complete: charged once, completed', async () => {
		useNodePath('wf-rt33-merge-position');
		failNext('charge:mp_a');
		const { answers, runs } = await provideNodePath({ id: 'mp_a' }, () => nodeTemplate(chargeBesideLookup({})));
		expect({ answers, charges: effectsAt('charge', 'mp_a'), key: await nodeKey('evt:mp_a'), joined: joinedFields(runs[0]) }).toEqual({
			answers: [500, 200],
			charges: 1,
			key: 'completed',
			joined: ['error', 'id', 'tier'],
		});
	});

	// The same Merge with Options → Clash Handling → "Add Input Number Suffix" (the option Combine by Position offers
	// first): every field is renamed, `error` → `error_1`. Complete reads the failure from n8n's record of the run, not
	// from the item; read from the item, the key would be completed and the event lost.
	it('node path: [Charge (Continue regular) failing once, Lookup] → Merge (combine by position, Add Input Number Suffix) → Complete: charged once', async () => {
		useNodePath('wf-rt33-merge-suffix');
		failNext('charge:ms_a');
		const { answers, runs } = await provideNodePath({ id: 'ms_a' }, () =>
			nodeTemplate(chargeBesideLookup({ clashHandling: { values: { resolveClash: 'addSuffix' } } })),
		);
		expect({ answers, charges: effectsAt('charge', 'ms_a'), key: await nodeKey('evt:ms_a'), joined: joinedFields(runs[0]) }).toEqual({
			answers: [500, 200],
			charges: 1,
			key: 'completed',
			joined: expect.anything(),
		});
	});

	// No option, but the lookup API answers `{ id, tier, error: null }` on success (docs/nodes.md: "`false` and `null`
	// are an API's success"): the last input wins the clash, so the joined item's `error` is null.
	// Read from the item, the key would be completed and the event lost.
	it('node path: [Charge (Continue regular) failing once, Lookup answering error: null] → Merge (combine by position) → Complete: charged once', async () => {
		useNodePath('wf-rt33-merge-null');
		failNext('charge:nl_a');
		const { answers, runs } = await provideNodePath({ id: 'nl_a' }, () => nodeTemplate(chargeBesideLookup({})));
		const joinedError = runs[0]?.data.resultData.runData.Join?.[0]?.data?.main[0]?.[0]?.json.error;
		expect({ answers, charges: effectsAt('charge', 'nl_a'), key: await nodeKey('evt:nl_a'), joinedError }).toEqual({
			answers: [500, 200],
			charges: 1,
			key: 'completed',
			joinedError: null,
		});
	});

	// Reserve New → [Lookup Customer → input 1, Charge (Continue regular) → input 2] → Merge (Combine by Matching Fields
	// `id`, Enrich Input 1) → Complete. The failed charge's error item has no `id`: unmatched, Enrich Input 1 drops it and
	// passes the lookup's item alone, which n8n pairs to the Reserve item. Complete must not complete that key.
	// The failed charge's item never reaches Complete; n8n's record of the run still holds the failure.
	it('node path: [Lookup → in 1, Charge (Continue regular) failing once → in 2] → Merge (match `id`, Enrich Input 1) → Complete: charged once', async () => {
		useNodePath('wf-rt33-merge-enrich');
		failNext('charge:me_a');
		const build = () =>
			nodeTemplate({
				nodes: [
					lookup(),
					charge(CONTINUE_REGULAR),
					node('Join', 'merge', 3.2, {
						mode: 'combine',
						combineBy: 'combineByFields',
						fieldsToMatchString: 'id',
						joinMode: 'enrichInput1',
						options: {},
					}),
					completeNode(),
				],
				connections: {
					'Lookup Customer': { main: [[{ node: 'Join', type: 'main', index: 0 }]] },
					Charge: { main: [[{ node: 'Join', type: 'main', index: 1 }]] },
					Join: { main: [link('Mark Complete')] },
					'Mark Complete': { main: [link('Respond 200'), []] },
				} as IConnections,
				heads: ['Lookup Customer', 'Charge'],
			});
		const { answers } = await provideNodePath({ id: 'me_a' }, build);
		expect({ answers, charges: effectsAt('charge', 'me_a'), key: await nodeKey('evt:me_a') }).toEqual({
			answers: [500, 200],
			charges: 1,
			key: 'completed',
		});
	});

	/* Edit Fields after an effect at Continue --------------------------------------------------------------------- */

	// Charge (Continue regular) → Edit Fields 3.4 at its defaults ("Include Other Input Fields" off: sets
	// `status: "charged"` only) → Complete (Key From: Item, falls back to the paired Reserve item). The charge fails once.
	// Edit Fields drops `error`; n8n's record of the run still holds the failure.
	it('node path: Charge (Continue regular) failing once → Edit Fields (defaults: only `status`) → Complete: charged once, completed', async () => {
		useNodePath('wf-rt33-editfields-only');
		failNext('charge:ef_a');
		const status = node('Status', 'set', 3.4, {
			mode: 'manual',
			assignments: { assignments: [{ id: 's', name: 'status', value: 'charged', type: 'string' }] },
			options: {},
		});
		const build = () =>
			nodeTemplate({
				nodes: [charge(CONTINUE_REGULAR), status, completeNode()],
				connections: {
					Charge: { main: [link('Status')] },
					Status: { main: [link('Mark Complete')] },
					'Mark Complete': { main: [link('Respond 200'), []] },
				},
				heads: ['Charge'],
			});
		const { answers } = await provideNodePath({ id: 'ef_a' }, build);
		expect({ answers, charges: effectsAt('charge', 'ef_a'), key: await nodeKey('evt:ef_a') }).toEqual({
			answers: [500, 200],
			charges: 1,
			key: 'completed',
		});
	});

	// A recovery the user built: Charge (Continue using error output) → error output → Backup Charge (another provider)
	// → Complete. The first charge fails, the backup charges: the event's effect is done, and Complete completes it (a
	// failure recovered through a node that may act is the recovery's outcome); the provider's resend is a duplicate.
	it('node path: Charge (error output) failing → Backup Charge → Complete: completed by the backup, the resend a duplicate', async () => {
		useNodePath('wf-rt33-backup');
		failNext('charge:bk_a');
		const step: NodeStep = {
			nodes: [
				charge({ onError: 'continueErrorOutput' }),
				httpCall('Backup Charge', 'refund', {}, '={{ JSON.stringify({ id: $("Reserve").item.json.body.id }) }}'),
				completeNode(),
			],
			connections: {
				Charge: { main: [link('Mark Complete'), link('Backup Charge')] },
				'Backup Charge': { main: [link('Mark Complete')] },
				'Mark Complete': { main: [link('Respond 200'), []] },
			},
			heads: ['Charge'],
		};
		const { answers } = await provideNodePath({ id: 'bk_a' }, () => nodeTemplate(step));
		const resend = await deliverNodePath({ id: 'bk_a' }, () => nodeTemplate(step));
		expect({
			answers,
			resend: resend.answer,
			charges: effectsAt('charge', 'bk_a'),
			backups: effectsAt('refund', 'bk_a'),
			key: await nodeKey('evt:bk_a'),
		}).toEqual({ answers: [200], resend: 200, charges: 0, backups: 1, key: 'completed' });
	});

	// Settle beside the step: Pay at Continue (using error output) answers `{ id, status, error: "none" }` on its success
	// output. n8n sends a failure through the error output, so that `error` is the answer's: completed, paid once. Read
	// as a failure, every retry would pay again.
	it('node path, Settle beside: Pay (error output) answers { error: "none" } on its success output: paid once, completed', async () => {
		useNodePath('wf-rt33-settle-none');
		const step: NodeStep = {
			nodes: [httpCall('Pay', 'pay', { onError: 'continueErrorOutput' }, '={{ JSON.stringify({ id: $json.body.id }) }}')],
			connections: { Pay: { main: [[], []] } },
			heads: ['Pay'],
		};
		const { answers } = await provideNodePath({ id: 'sn_a' }, () => nodeTemplate(step, { settle: true }));
		expect({ answers, payments: payments.get('sn_a') ?? 0, key: await nodeKey('evt:sn_a') }).toEqual({
			answers: [200],
			payments: 1,
			key: 'completed',
		});
	});

	/* Complete in another branch than the effect ----------------------------------------------------------------- */

	const ifPaid = () =>
		node('Needs Charge?', 'if', 2.2, {
			conditions: {
				options: { caseSensitive: true, leftValue: '', typeValidation: 'strict', version: 2 },
				conditions: [
					{ id: 'c', leftValue: '={{ $json.body.kind }}', rightValue: 'paid', operator: { type: 'string', operation: 'equals' } },
				],
				combinator: 'and',
			},
			options: {},
		});

	// If (kind = paid) → true: Charge (Continue regular) → Merge (append) input 1; false → Merge input 2; Merge →
	// Complete. A paid event whose charge fails once, and a free event (no charge).
	it('node path: If → Charge (Continue regular) on true / nothing on false → Merge (append) → Complete: paid charged once, free completed', async () => {
		useNodePath('wf-rt33-if-merge');
		failNext('charge:im_paid');
		const build = () =>
			nodeTemplate({
				nodes: [ifPaid(), charge(CONTINUE_REGULAR), node('Join', 'merge', 3.2, {}), completeNode()],
				connections: {
					'Needs Charge?': { main: [link('Charge'), [{ node: 'Join', type: 'main', index: 1 }]] },
					Charge: { main: [[{ node: 'Join', type: 'main', index: 0 }]] },
					Join: { main: [link('Mark Complete')] },
					'Mark Complete': { main: [link('Respond 200'), []] },
				} as IConnections,
				heads: ['Needs Charge?'],
			});
		const paid = await provideNodePath({ id: 'im_paid', kind: 'paid' }, build);
		const free = await provideNodePath({ id: 'im_free', kind: 'free' }, build);
		expect({
			answers: [paid.answers, free.answers],
			charges: [effectsAt('charge', 'im_paid'), effectsAt('charge', 'im_free')],
			keys: [await nodeKey('evt:im_paid'), await nodeKey('evt:im_free')],
		}).toEqual({ answers: [[500, 200], [200]], charges: [1, 0], keys: ['completed', 'completed'] });
	});

	// Switch (rules: type = charge → output 0; Fallback Output: Extra Output) → output 0: Charge (Continue using error
	// output) → success: Complete, error: Mark Failed → Respond 500; fallback: the same Complete.
	it('node path: Switch → Charge (error output → Mark Failed) / fallback → Complete: the charge fails once, charged once; fallback completed', async () => {
		useNodePath('wf-rt33-switch');
		failNext('charge:sw_charge');
		const route = node('Route', 'switch', 3.2, {
			mode: 'rules',
			rules: {
				values: [
					{
						conditions: {
							options: { caseSensitive: true, leftValue: '', typeValidation: 'strict', version: 2 },
							conditions: [
								{ id: 'r', leftValue: '={{ $json.body.type }}', rightValue: 'charge', operator: { type: 'string', operation: 'equals' } },
							],
							combinator: 'and',
						},
					},
				],
			},
			options: { fallbackOutput: 'extra' },
		});
		const build = () =>
			nodeTemplate({
				nodes: [route, charge({ onError: 'continueErrorOutput' }), completeNode(), markFailedNode()],
				connections: {
					Route: { main: [link('Charge'), link('Mark Complete')] },
					Charge: { main: [link('Mark Complete'), link('Mark Failed')] },
					'Mark Complete': { main: [link('Respond 200'), []] },
					'Mark Failed': { main: [link('Respond 500 (provider retries)'), []] },
				},
				heads: ['Route'],
			});
		const charged = await provideNodePath({ id: 'sw_charge', type: 'charge' }, build);
		const other = await provideNodePath({ id: 'sw_other', type: 'refund' }, build);
		expect({
			answers: [charged.answers, other.answers],
			charges: [effectsAt('charge', 'sw_charge'), effectsAt('charge', 'sw_other')],
			keys: [await nodeKey('evt:sw_charge'), await nodeKey('evt:sw_other')],
		}).toEqual({ answers: [[500, 200], [200]], charges: [1, 0], keys: ['completed', 'completed'] });
	});

	/* Loop Over Items with Complete inside ---------------------------------------------------------------------- */

	// Events [A, B, C] → Split Out → Reserve (Field) → Loop Over Items (batch 1) → Charge (Stop Workflow) → Complete →
	// back to the loop; Done → Respond 200. The charge fails once for B (the 2nd batch): A is completed, B and C are
	// left to their lease, and the retry charges them.
	it('node path: Loop Over Items (1) → Charge (Stop) → Complete inside the loop, B failing once: one charge each, all completed', async () => {
		useNodePath('wf-rt33-loop');
		failNext('charge:lp_b');
		const build = () =>
			nodeTemplate(
				{
					nodes: [node('Each Event', 'splitInBatches', 3, { batchSize: 1, options: {} }), charge(), completeNode()],
					connections: {
						'Each Event': { main: [link('Respond 200'), link('Charge')] },
						Charge: { main: [link('Mark Complete')] },
						'Mark Complete': { main: [link('Each Event'), []] },
					},
					heads: ['Each Event'],
					duplicates: [],
				},
				{ reserve: fieldReserve(), before: splitOut },
			);
		const { answers } = await provideNodePath(events([{ id: 'lp_a' }, { id: 'lp_b' }, { id: 'lp_c' }]), build);
		expect({
			answers,
			charges: ['lp_a', 'lp_b', 'lp_c'].map((id) => effectsAt('charge', id)),
			keys: await Promise.all(['lp_a', 'lp_b', 'lp_c'].map(async (id) => await nodeKey(`evt:${id}`))),
		}).toEqual({ answers: [500, 200], charges: [1, 1, 1], keys: ['completed', 'completed', 'completed'] });
	});

	/* Retry On Fail on the effect ------------------------------------------------------------------------------- */

	it('node path: Charge (Retry On Fail, 3 tries) failing on the 1st try → Complete: charged once, 200, completed', async () => {
		useNodePath('wf-rt33-retry-on-fail');
		failNext('charge:rf_a');
		const build = () =>
			nodeTemplate({
				nodes: [charge({ retryOnFail: true, maxTries: 3, waitBetweenTries: 0 }), completeNode()],
				connections: { Charge: { main: [link('Mark Complete')] }, 'Mark Complete': { main: [link('Respond 200'), []] } },
				heads: ['Charge'],
			});
		const { answers } = await provideNodePath({ id: 'rf_a' }, build);
		expect({ answers, charges: effectsAt('charge', 'rf_a'), key: await nodeKey('evt:rf_a') }).toEqual({
			answers: [200],
			charges: 1,
			key: 'completed',
		});
	});

	/* n8n's Retry of a failed execution --------------------------------------------------------------------------- */

	/** What n8n's ExecutionService.retry does with a failed execution's saved data: drops the error and the failed node's run. */
	function retryData(run: IRun): IRunExecutionData {
		const data = JSON.parse(JSON.stringify(run.data)) as IRunExecutionData;
		const last = data.resultData.lastNodeExecuted;
		if (last) {
			delete data.resultData.error;
			const runs = data.resultData.runData[last];
			if (runs && runs.length > 0 && runs[runs.length - 1].error !== undefined) runs.pop();
		}
		return data;
	}
	const chargeThenComplete = (): NodeStep => ({
		nodes: [charge(), completeNode()],
		connections: {
			Charge: { main: [link('Mark Complete')] },
			'Mark Complete': { main: [link('Respond 200'), link('Respond 200 (duplicate)')] },
		},
		heads: ['Charge'],
	});

	// The operator's Retry comes first, while nobody else holds the key: it charges and completes with the saved owner
	// token; the provider's later retry is a duplicate. (A Retry after the provider's retry completed the key charges
	// again: no node of the package runs before the effect there; docs/idempotent-webhook.md, n8n's Retry button.)
	it('n8n Retry of the failed execution before any provider retry: charged once, then the provider retry is a duplicate', async () => {
		useNodePath('wf-rt33-n8n-retry-first');
		failNext('charge:nf_a');
		const first = await deliverNodePath({ id: 'nf_a' }, () => nodeTemplate(chargeThenComplete()));
		const retried = await resumeInProcess(
			nodeTemplate(chargeThenComplete()),
			nextExecutionId('retry'),
			retryData(first.run as IRun),
			engine(),
			'retry',
		);
		const done = retried.data.resultData.runData['Mark Complete']?.[0]?.data?.main[0]?.length ?? 0;
		await sleep(1200);
		const later = await deliverNodePath({ id: 'nf_a' }, () => nodeTemplate(chargeThenComplete()));
		expect({
			first: first.answer,
			done,
			later: later.answer,
			charges: effectsAt('charge', 'nf_a'),
			key: await nodeKey('evt:nf_a'),
		}).toEqual({
			first: 500,
			done: 1,
			later: 200,
			charges: 1,
			key: 'completed',
		});
	});
});
