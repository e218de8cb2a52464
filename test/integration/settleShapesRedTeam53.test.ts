import { join } from 'node:path';

import { type IConnections, type INode, type INodeParameters, type INodeType } from 'n8n-workflow';

import { withCodeRunner } from '../support/codeTaskRunner';
import { baseNodesInstalled, describeWithN8n, n8nInstallDirectory } from '../support/n8nBaseNodes';
import { link } from '../support/settleWorkflows';
import {
	baseNode as node,
	events,
	LOOKUP_BODY,
	SPLIT_OUT_EVENTS,
	subWorkflowRedTeam,
	threeEvents,
	type Step,
} from '../support/triggerRedTeam';

/*
 * Red team 53: not sub-workflows. Node settings and stock nodes behind the Idempotent Webhook trigger with several events
 * in one delivery (Events Path), a provider that retries until 2xx:
 *  A. Remove Duplicates "Remove Items Repeated Within Current Input" with its option Remove Other Fields (n8n's own node,
 *     versions 1.1 and 2, and the hidden Item Lists 1 / 3.1 that older workflows still hold): a Shopify-style provider
 *     sends two events for one order, the workflow charges each order once;
 *  B. HTTP Request's own Batching (at Continue (regular output)) and Pagination (next URL) with a page failing mid-way;
 *  C. Retry On Fail with Wait Between Tries on a lookup and on the charge; a lookup at n8n's default On Error;
 *  D. Summarize (split by customer) before a charge per customer; Wait (in-run, 1 s) between lookup and charge;
 *  E. the old Split In Batches (versions 1 and 2) with the charge at Continue (using error output), the loop stopping;
 *  F. older node versions users still have in saved workflows: If 1, Edit Fields (Set) 2, Code 1, Merge 1 (Merge By Key),
 *     Merge 2.1 (Combine by fields), Item Lists 1 (Sort);
 *  G. binary data on the items (HTTP Request answering a file), and a user field named `idempotency` set by Edit Fields.
 *
 * Each row asserts what a demanding user expects: per event (or per order / customer / page where the workflow acts per
 * those) one effect after the provider's retries, every key completed, a workflow that works in n8n not refused.
 * RT53_DUMP=1 prints every run's node outputs and pairing.
 *
 * What the pass found (each row seen failing). The rows of F4 assert the right outcome and are marked `it.failing`
 * until the rules answer them: each passes only while the break is still there, so its fix shows here. F1 is answered by
 * a refusal at publish (wiring.ts checkKeptItemsPairedByPlace; Reserve refuses it before reserving), F2 by
 * loopOutputsOf reading the loop's outputs as n8n names them, F3 by joinsItems counting the HTML node's table.
 *  F1 (A1, A5, A6 ×2, A7, A8) LOST + DOUBLED: Remove Duplicates "within current input" with Options → Remove Other
 *     Fields (n8n-nodes-base RemoveDuplicates 1.1 / 2 utils.removeDuplicateInputItems, Item Lists 1-3.1 the same code)
 *     sets `pairedItem: { item: index }` with the index in the list it KEPT, not in its input, and drops the
 *     `idempotency` field (it keeps only the compared fields). Once an earlier event is removed, every later kept item is
 *     paired to the wrong event. trace.ts follows n8n's pairing (nothing contradicts it: no held key on the item,
 *     pairingLost false): o2's failed charge fails B (the removed duplicate) and completes C. The retry runs B alone,
 *     which charges o1 again: orders [o1, o2] charged [2, 0], every key completed, 500 then 200. Also on the node path
 *     with Settle beside (same trace). Controls hold: without Remove Other Fields (A3), or with the duplicate last (A4).
 *  F2 (E2, E6) DOUBLED: the old Split In Batches version 2 (outputs: loop = 0, done = 1), done output unconnected, the
 *     charge at Continue (using error output) failing once for B: graph.ts loopDoneLeadsOn reads output 0 as the Done
 *     output whatever the version (now the output n8n names "done"), so the events already looped (A, in the node context's processedItems) are judged as
 *     still waiting for Done and failed ("its items were left unprocessed"); the retry charges A again: [2, 1, 1].
 *     Version 1 (one output, no processedItems) holds (E1); version 2 with nothing failing holds (E5, E3).
 *  F3 (H3) DOUBLED: n8n's HTML node, Convert to HTML Table (one item for all the items, paired to each) after the
 *     charge, then an email of the table failing once: every key fails and the retry charges each again [2, 2, 2].
 *     nodeKinds.ts joinsItems knew Aggregate, Summarize, Item Lists, Convert to File (HTML among its formats) but not
 *     this node, so wiring.ts checkJoinedAfterEffect did not refuse it at publish (now it does) (with the Table at Continue; at Stop
 *     Workflow it is refused as a routing node after an effect).
 *  F4 (C1, C2) REFUSED, KEPT BY DESIGN: an HTTP Request lookup before the charge is refused at publish with several
 *     events when set to Retry On Fail (retriedTogether) or left at n8n's default Stop Workflow (eventsTogether): the
 *     rules treat every HTTP Request as a node that may have an effect, whatever its method. Both workflows would work
 *     (a failed or retried lookup repeats no effect), but a GET (HTTP Request's default method) is also how a workflow
 *     calls another workflow's webhook, which acts: the rows assert the refusal and that it names the fix.
 */

/** A node of n8n-nodes-base by its exported class's name (Node's own require, as loadBaseNodeFiles does). */
function namedBaseNode(file: string, className: string): INodeType {
	const directory = join(n8nInstallDirectory(), 'node_modules', 'n8n-nodes-base', 'dist', 'nodes');
	const { createRequire } = (process as unknown as { getBuiltinModule(id: string): typeof import('node:module') }).getBuiltinModule(
		'node:module',
	);
	const module = createRequire(join(directory, 'package.json'))(join(directory, file)) as Record<string, new () => INodeType>;
	return new module[className]();
}

describeWithN8n('red team 53: node settings and stock nodes with several events', () => {
	let apiUrl = () => '';
	const rt = subWorkflowRedTeam({
		tag: 'rt53',
		route: (route, body) => {
			if (route === 'lookup') return { ...body };
			// Pagination by next URL: page 1 names page 2, page 2 ends it.
			if (route === 'pages') return { id: body.id, page: 1, next: `${apiUrl()}/pages2` };
			if (route === 'pages2') return { id: body.id, page: 2 };
			return undefined;
		},
		engine: (engine) => withCodeRunner(engine as never) as typeof engine,
		// Html.node.js exports a helper function before its class: loaded here by the class's name.
		nodeTypes: baseNodesInstalled() ? { 'n8n-nodes-base.html': namedBaseNode('Html/Html.node.js', 'Html') } : {},
		baseNodeFiles: {
			'n8n-nodes-base.set': 'Set/Set.node.js',
			'n8n-nodes-base.code': 'Code/Code.node.js',
			'n8n-nodes-base.removeDuplicates': 'Transform/RemoveDuplicates/RemoveDuplicates.node.js',
			'n8n-nodes-base.itemLists': 'ItemLists/ItemLists.node.js',
			'n8n-nodes-base.summarize': 'Transform/Summarize/Summarize.node.js',
			'n8n-nodes-base.switch': 'Switch/Switch.node.js',
			'n8n-nodes-base.limit': 'Transform/Limit/Limit.node.js',
		},
	});
	apiUrl = rt.apiUrl;
	const { charges, dump, effectsAt, failNext, httpCall, provideNodePath, record, runTrigger, nodeStatuses } = {
		...rt,
		provideNodePath: rt.nodePath.provideNodePath,
	};
	const { nodeTemplate, useNodePath } = rt.nodePath;

	/* Builders -------------------------------------------------------------------------------------------------------- */
	const EVENT_ID = '={{ JSON.stringify({ id: $json.body.id }) }}';
	const CHARGE_ID = '={{ JSON.stringify({ id: $json.id }) }}';
	const ORDER_ID = '={{ JSON.stringify({ id: $json.body.order }) }}';
	const at = (inner: INode, y: number, x = inner.position[0]): INode => ({ ...inner, position: [x, y] });
	/** The charge at Continue (using error output), that output left unconnected (the step's failures its keys'). */
	const charge = (body = EVENT_ID, extra: Partial<INode> = {}, options: INodeParameters = {}, name = 'Charge', route = 'charge') =>
		httpCall(name, route, { onError: 'continueErrorOutput', ...extra }, body, options);
	const lookup = (extra: Partial<INode> = {}, options: INodeParameters = {}, name = 'Lookup') =>
		httpCall(name, 'lookup', { onError: 'continueErrorOutput', ...extra }, LOOKUP_BODY, options);
	const chain = (nodes: INode[], ends: Record<string, 'error'> = {}): Step => {
		const connections: IConnections = {};
		nodes.forEach((current, index) => {
			const next = nodes[index + 1];
			const errorOutput = current.onError === 'continueErrorOutput' || ends[current.name] === 'error';
			connections[current.name] = { main: next ? [link(next.name), ...(errorOutput ? [[]] : [])] : errorOutput ? [[], []] : [[]] };
		});
		return { nodes: nodes.map((each, index) => at(each, 0, 400 + index * 220)), connections, heads: [nodes[0].name] };
	};

	/** Two events for order 1 (A, B: the provider's duplicate under a new event id), one for order 2 (C). */
	const orders = (p: string, layout: 'dupFirst' | 'dupLast' = 'dupFirst') =>
		layout === 'dupFirst'
			? [
					{ id: `${p}_a`, order: `${p}_o1`, amount: 300 },
					{ id: `${p}_b`, order: `${p}_o1`, amount: 300 },
					{ id: `${p}_c`, order: `${p}_o2`, amount: 200 },
				]
			: [
					{ id: `${p}_a`, order: `${p}_o1`, amount: 300 },
					{ id: `${p}_b`, order: `${p}_o2`, amount: 200 },
					{ id: `${p}_c`, order: `${p}_o1`, amount: 300 },
				];
	const orderIds = (p: string) => [`${p}_o1`, `${p}_o2`];
	/** Remove Duplicates "within current input" on the order number (n8n's own node, version 1.1 or 2). */
	const dedupeOrders = (version: number, removeOtherFields: boolean) =>
		node('Dedupe Orders', 'removeDuplicates', version, {
			...(version >= 2 ? { operation: 'removeDuplicateInputItems' } : {}),
			compare: 'selectedFields',
			fieldsToCompare: 'body.order',
			options: removeOtherFields ? { removeOtherFields: true } : {},
		});
	/** The same as Item Lists (the node Remove Duplicates replaced), version 3.1 or 1. */
	const itemListsDedupe = (version: number) =>
		node('Dedupe Orders', 'itemLists', version, {
			resource: 'itemList',
			operation: 'removeDuplicates',
			compare: 'selectedFields',
			fieldsToCompare: version >= 3 ? 'body.order' : { fields: [{ fieldName: 'body.order' }] },
			options: { removeOtherFields: true },
		});

	const ALL_COMPLETED = ['completed', 'completed', 'completed'];
	/**
	 * Remove Duplicates with Remove Other Fields before the charge, several events: refused at publish (wiring.ts
	 * checkKeptItemsPairedByPlace), whatever fails and in whichever order the events come (with the duplicate last, or
	 * nothing failing, n8n's pairing happens to be right; another delivery's order would not be).
	 */
	const REFUSED_AT_PUBLISH = { refusal: expect.stringContaining('"Dedupe Orders" removes repeats'), orderCharges: [0, 0] };
	const ONE_EACH = { refusal: false, charges: [1, 1, 1], keys: ALL_COMPLETED };

	/** A row on the trigger path charged per order: the order charges and the events' keys. */
	const runOrders = async (p: string, step: Step, fail: string | undefined, layout: 'dupFirst' | 'dupLast' = 'dupFirst') => {
		const r = await runTrigger(p, step, fail, orders(p, layout), orderIds(p));
		return { refusal: r.refusal, answers: r.answers, orderCharges: r.charges, keys: r.keys };
	};

	/* A. Remove Duplicates with Remove Other Fields ------------------------------------------------------------------- */
	describe('A. Remove Duplicates (within current input) with Remove Other Fields, a charge per order', () => {
		it("v2: orders [o1, o1, o2] → Dedupe Orders (Remove Other Fields) → Charge per order, o2's charge failing once: refused at publish, nothing charged", async () => {
			const p = 'a1';
			const r = await runOrders(p, chain([dedupeOrders(2, true), charge(ORDER_ID)]), `charge:${p}_o2`);
			record('A1 rd2 rof o2 fails', { ...r, lastErrors: rt.keyRows().map((row) => row.last_error?.slice(0, 80) ?? null) });
			// Before the refusal: o1 charged twice, o2 never (B failed for C's charge, C completed; the retry ran B alone).
			expect(r).toMatchObject(REFUSED_AT_PUBLISH);
		});
		it('v2: the same, nothing failing: refused at publish all the same (another order of the events would break it)', async () => {
			const p = 'a2';
			const r = record('A2 rd2 rof nothing fails', await runOrders(p, chain([dedupeOrders(2, true), charge(ORDER_ID)]), undefined));
			expect(r).toMatchObject(REFUSED_AT_PUBLISH);
		});
		it("v2 without Remove Other Fields, o2's charge failing once: each order charged once (control)", async () => {
			const p = 'a3';
			const r = record(
				'A3 rd2 keep fields o2 fails',
				await runOrders(p, chain([dedupeOrders(2, false), charge(ORDER_ID)]), `charge:${p}_o2`),
			);
			expect(r).toMatchObject({ refusal: false, answers: [500, 200], orderCharges: [1, 1], keys: ALL_COMPLETED });
		});
		it("v2 Remove Other Fields, the duplicate last (orders [o1, o2, o1]), o2's charge failing once: refused at publish, nothing charged", async () => {
			const p = 'a4';
			const r = record(
				'A4 rd2 rof dup last o2 fails',
				await runOrders(p, chain([dedupeOrders(2, true), charge(ORDER_ID)]), `charge:${p}_o2`, 'dupLast'),
			);
			expect(r).toMatchObject(REFUSED_AT_PUBLISH);
		});
		it("v1.1 (Remove Other Fields), o2's charge failing once: refused at publish, nothing charged", async () => {
			const p = 'a5';
			const r = record('A5 rd1.1 rof o2 fails', await runOrders(p, chain([dedupeOrders(1.1, true), charge(ORDER_ID)]), `charge:${p}_o2`));
			expect(r).toMatchObject(REFUSED_AT_PUBLISH);
		});
		for (const version of [3.1, 1]) {
			it(`Item Lists ${version} Remove Duplicates (Remove Other Fields), o2's charge failing once: refused at publish, nothing charged`, async () => {
				const p = `a6${String(version).replace('.', '')}`;
				const r = record(
					`A6 itemLists ${version} rof o2 fails`,
					await runOrders(p, chain([itemListsDedupe(version), charge(ORDER_ID)]), `charge:${p}_o2`),
				);
				expect(r).toMatchObject(REFUSED_AT_PUBLISH);
			});
		}
		it("v2 Remove Other Fields → Order Lookup (error output) → Charge, o2's lookup failing once: refused at publish, nothing charged", async () => {
			const p = 'a7';
			const orderLookup = httpCall(
				'Order Lookup',
				'lookup',
				{ onError: 'continueErrorOutput' },
				'={{ JSON.stringify({ id: $json.body.order }) }}',
			);
			const r = record(
				'A7 rd2 rof lookup o2 fails',
				await runOrders(p, chain([dedupeOrders(2, true), orderLookup, charge(CHARGE_ID)]), `lookup:${p}_o2`),
			);
			expect(r).toMatchObject(REFUSED_AT_PUBLISH);
		});
		it("node path, Settle beside: Split Out → Reserve (Field) → Dedupe Orders (v2, Remove Other Fields) → Charge, o2's charge failing once: Reserve refuses it, nothing reserved", async () => {
			const p = 'a8';
			const list = orders(p);
			useNodePath(`wf-rt53-${p}`);
			failNext(`charge:${p}_o2`);
			const step = chain([dedupeOrders(2, true), charge(ORDER_ID)]);
			const { answers, runs } = await provideNodePath(events(list), () =>
				nodeTemplate(step, { reserve: rt.fieldReserve(), before: SPLIT_OUT_EVENTS, settle: true }),
			);
			dump(p, runs);
			const r = record('A8 node path settle rd2 rof', {
				answers,
				orderCharges: charges(orderIds(p)),
				keys: await nodeStatuses(list.map((event) => event.id)),
			});
			// Reserve refuses the wiring before anything is reserved: 503 to every delivery, nothing charged, no key.
			expect(r).toEqual({ answers: [503, 503, 503, 503], orderCharges: [0, 0], keys: [null, null, null] });
		});
	});

	/* B. HTTP Request Batching and Pagination ------------------------------------------------------------------------- */
	describe("B. HTTP Request's Batching and Pagination", () => {
		it("Charge with Batching (2 per batch, 50 ms) at Continue (regular output), B's charge failing once: one charge each", async () => {
			const p = 'b1';
			const step = chain([
				httpCall('Charge', 'charge', { onError: 'continueRegularOutput' }, EVENT_ID, {
					batching: { batch: { batchSize: 2, batchInterval: 50 } },
				}),
			]);
			const r = record('B1 batching regular output', await runTrigger(p, step, `charge:${p}_b`));
			expect(r).toMatchObject({ ...ONE_EACH, answers: [500, 200] });
		});
		it("Pages (HTTP, Pagination by next URL, error output) → Import per page (error output), B's page 2 failing once: each page imported once", async () => {
			const p = 'b2';
			const pages = httpCall('Pages', 'pages', { onError: 'continueErrorOutput' }, EVENT_ID, {
				pagination: {
					pagination: {
						paginationMode: 'responseContainsNextURL',
						nextURL: '={{ $response.body.next }}',
						paginationCompleteWhen: 'other',
						completeExpression: '={{ !$response.body.next }}',
						limitPagesFetched: true,
						maxRequests: 5,
					},
				},
			});
			const importPage = charge("={{ JSON.stringify({ id: $json.id + ':' + $json.page }) }}", {}, {}, 'Import', 'ship');
			const list = threeEvents(p);
			const pageIds = list.flatMap((event) => [`${event.id}:1`, `${event.id}:2`]);
			const r = await runTrigger(p, chain([pages, importPage]), `pages2:${p}_b`, list);
			const imports = pageIds.map((id) => effectsAt('ship', id));
			record('B2 pagination page 2 fails', { ...r, imports });
			expect({ refusal: r.refusal, answers: r.answers, keys: r.keys, imports }).toEqual({
				refusal: false,
				answers: [500, 200],
				keys: ALL_COMPLETED,
				imports: [1, 1, 1, 1, 1, 1],
			});
		});
	});

	/* C. Retry On Fail, Wait Between Tries; a lookup at the default On Error ------------------------------------------ */
	describe('C. Retry On Fail with Wait Between Tries; a lookup at Stop Workflow', () => {
		// An HTTP Request counts as a node that may act whatever its method: its default, GET, is also how a workflow calls
		// another workflow's webhook, which acts. A lookup before the charge is therefore refused where a node that acts
		// would double, and the refusal names the fix that keeps the workflow (Continue, or Loop Over Items).
		it('Lookup (Retry On Fail, 3 tries, 100 ms between, error output) → Charge: refused at publish naming Lookup and the fix, nothing charged', async () => {
			const p = 'c1';
			failNext(`lookup:${p}_a`, 2);
			const step = chain([lookup({ retryOnFail: true, maxTries: 3, waitBetweenTries: 100 }), charge(CHARGE_ID)]);
			const r = record('C1 lookup retry on fail', await runTrigger(p, step, undefined));
			expect({ refusal: r.refusal, charges: r.charges }).toEqual({
				refusal: expect.stringMatching(/"Lookup" gets the events of one delivery together and is set to Retry On Fail/),
				charges: [0, 0, 0],
			});
		});
		it("Lookup at n8n's default On Error (Stop Workflow) → Charge (error output): refused at publish naming Lookup and the fix, nothing charged", async () => {
			const p = 'c2';
			const step = chain([httpCall('Lookup', 'lookup', {}, LOOKUP_BODY), charge(CHARGE_ID)]);
			const r = record('C2 lookup stop workflow', await runTrigger(p, step, `lookup:${p}_b`));
			expect({ refusal: r.refusal, charges: r.charges }).toEqual({
				refusal: expect.stringMatching(/"Lookup" gets the events of one delivery together and stops the workflow when it fails/),
				charges: [0, 0, 0],
			});
		});
		it('Charge (Retry On Fail, 1 s between tries, error output), three events: refused at publish naming Charge', async () => {
			const p = 'c3';
			const step = chain([charge(EVENT_ID, { retryOnFail: true, maxTries: 3, waitBetweenTries: 1000 })]);
			const r = record('C3 charge retry on fail', await runTrigger(p, step, undefined));
			expect({ refusal: r.refusal, charges: r.charges }).toEqual({
				refusal: expect.stringContaining('"Charge" gets the events of one delivery together and is set to Retry On Fail'),
				charges: [0, 0, 0],
			});
		});
		it('one event: Charge (Retry On Fail, 3 tries, 200 ms between, Stop Workflow) failing twice: retried by n8n in the run, 200, one charge', async () => {
			const p = 'c4';
			const id = `${p}_a`;
			rt.useTrigger(`wf-rt53-${p}`);
			const step = chain([httpCall('Charge', 'charge', { retryOnFail: true, maxTries: 3, waitBetweenTries: 200 }, EVENT_ID)]);
			const refusal = await rt.refusedAtPublish(step);
			failNext(`charge:${id}`, 2);
			const { answers } = await rt.provide({ id, amount: 300 }, step);
			const r = record('C4 one event retry wait', { refusal, answers, charges: charges([id]), keys: await rt.statuses([id]) });
			expect(r).toEqual({ refusal: false, answers: [200], charges: [1], keys: ['completed'] });
		});
	});

	/* D. Summarize, an in-run Wait ------------------------------------------------------------------------------------ */
	describe('D. Summarize by customer; a short Wait', () => {
		it("Summarize (sum of amount, split by customer) → Charge per customer (error output), c2's charge failing once: each customer charged once", async () => {
			const p = 'd1';
			const summarize = node('Totals', 'summarize', 1.1, {
				fieldsToSummarize: { values: [{ aggregation: 'sum', field: 'body.amount' }] },
				fieldsToSplitBy: 'body.customer',
				options: {},
			});
			const customerCharge = charge("={{ JSON.stringify({ id: $json['body.customer'] ?? $json.body_customer ?? $json.body?.customer }) }}");
			const list = threeEvents(p, [{ customer: `${p}_c1` }, { customer: `${p}_c1` }, { customer: `${p}_c2` }]);
			const r = await runTrigger(p, chain([summarize, customerCharge]), `charge:${p}_c2`, list, [`${p}_c1`, `${p}_c2`]);
			record('D1 summarize by customer', r);
			// c1's total (A + B) charged once; C retried alone, c2 charged once.
			expect({ refusal: r.refusal, answers: r.answers, customerCharges: r.charges, keys: r.keys }).toEqual({
				refusal: false,
				answers: [500, 200],
				customerCharges: [1, 1],
				keys: ALL_COMPLETED,
			});
		});
		it("Lookup (error output) → Wait 1 s (in the run) → Charge (error output), B's charge failing once: published, one charge each", async () => {
			const p = 'd2';
			const wait = node('Pause', 'wait', 1.1, { resume: 'timeInterval', amount: 1, unit: 'seconds' });
			const r = record('D2 short wait', await runTrigger(p, chain([lookup(), wait, charge(CHARGE_ID)]), `charge:${p}_b`));
			expect(r).toMatchObject({ ...ONE_EACH, answers: [500, 200] });
		});
	});

	/* E. Split In Batches 1 and 2 ------------------------------------------------------------------------------------- */
	describe('E. the old Split In Batches (1, 2), the charge at Continue (using error output)', () => {
		for (const version of [1, 2]) {
			it(`Split In Batches ${version} (batch 1) → Charge → back; its error output unconnected, B failing once: C left in the loop, retried; one charge each`, async () => {
				const p = `e${version}`;
				const loop = node('Loop', 'splitInBatches', version, { batchSize: 1, options: {} });
				const step: Step = {
					nodes: [loop, at(charge(EVENT_ID), 0, 700)],
					// Version 2's outputs: loop (0), done (1, left unconnected); version 1 has one.
					connections: { Loop: { main: [link('Charge')] }, Charge: { main: [link('Loop'), []] } } as IConnections,
					heads: ['Loop'],
				};
				const r = await runTrigger(p, step, `charge:${p}_b`);
				record(`E${version} split in batches ${version}`, {
					...r,
					lastErrors: rt.keyRows().map((row) => row.last_error?.slice(0, 140) ?? null),
				});
				expect(r).toMatchObject({ ...ONE_EACH, answers: [500, 200] });
			});
		}
		/** Loop (Split In Batches 2, batch 1) → Charge (error output unconnected) → back to Loop; its done output (1) unconnected. */
		const loopV2 = (): Step => ({
			nodes: [node('Loop', 'splitInBatches', 2, { batchSize: 1, options: {} }), at(charge(EVENT_ID), 0, 700)],
			connections: { Loop: { main: [link('Charge')] }, Charge: { main: [link('Loop'), []] } } as IConnections,
			heads: ['Loop'],
		});
		it('Split In Batches 2 (batch 1) → Charge → back, done unconnected, nothing failing: 200, one charge each (control)', async () => {
			const p = 'e5';
			const r = record('E5 split in batches 2 nothing fails', await runTrigger(p, loopV2(), undefined));
			expect(r).toMatchObject({ ...ONE_EACH, answers: [200] });
		});
		it("node path, Settle beside: Split Out → Reserve (Field) → Split In Batches 2 (batch 1) → Charge → back, B's charge failing once: one charge each", async () => {
			const p = 'e6';
			const list = threeEvents(p);
			useNodePath(`wf-rt53-${p}`);
			failNext(`charge:${p}_b`);
			const { answers, runs } = await provideNodePath(events(list), () =>
				nodeTemplate(loopV2(), { reserve: rt.fieldReserve(), before: SPLIT_OUT_EVENTS, settle: true }),
			);
			dump(p, runs);
			const r = record('E6 node path settle split in batches 2', {
				answers,
				charges: charges(list.map((event) => event.id)),
				keys: await nodeStatuses(list.map((event) => event.id)),
			});
			expect({ charges: r.charges, keys: r.keys, last: answers[answers.length - 1] }).toEqual({
				charges: [1, 1, 1],
				keys: ALL_COMPLETED,
				last: 200,
			});
		});
		it('Split In Batches 2 (batch 1) → Charge → back; done → Notify (error output), nothing failing: one charge and one notice each', async () => {
			const p = 'e3';
			const loop = node('Loop', 'splitInBatches', 2, { batchSize: 1, options: {} });
			// The done output gives the Charge's answers back (the event's id as `id`).
			const notify = httpCall('Notify', 'notify', { onError: 'continueErrorOutput' }, CHARGE_ID);
			const step: Step = {
				nodes: [loop, at(charge(EVENT_ID), 0, 700), at(notify, 200, 700)],
				connections: {
					Loop: { main: [link('Charge'), link('Notify')] },
					Charge: { main: [link('Loop'), []] },
					Notify: { main: [[], []] },
				} as IConnections,
				heads: ['Loop'],
			};
			const r = await runTrigger(p, step, undefined);
			const notices = threeEvents(p).map((event) => effectsAt('notify', event.id));
			record('E3 split in batches 2 done notify', { ...r, notices });
			expect({ ...r, notices }).toMatchObject({ ...ONE_EACH, answers: [200], notices: [1, 1, 1] });
		});
	});

	/* F. Older node versions ------------------------------------------------------------------------------------------ */
	describe('F. older node versions', () => {
		it("If 1 (VIP?) → Charge (true) / Ship (false), B's ship failing once: A charged, B and C shipped once", async () => {
			const p = 'f1';
			const vip = node('VIP?', 'if', 1, { conditions: { boolean: [{ value1: '={{ $json.body.vip === true }}', value2: true }] } });
			const step: Step = {
				nodes: [vip, at(charge(EVENT_ID), -200, 700), at(charge(EVENT_ID, {}, {}, 'Ship', 'ship'), 200, 700)],
				connections: {
					'VIP?': { main: [link('Charge'), link('Ship')] },
					Charge: { main: [[], []] },
					Ship: { main: [[], []] },
				} as IConnections,
				heads: ['VIP?'],
			};
			const r = await runTrigger(p, step, `ship:${p}_b`);
			const ships = threeEvents(p).map((event) => effectsAt('ship', event.id));
			record('F1 if 1', { ...r, ships });
			expect({ refusal: r.refusal, answers: r.answers, charges: r.charges, ships, keys: r.keys }).toEqual({
				refusal: false,
				answers: [500, 200],
				charges: [1, 0, 0],
				ships: [0, 1, 1],
				keys: ALL_COMPLETED,
			});
		});
		it("Set 2 (Keep Only Set: cid) → Charge by cid, B's charge failing once: one charge each", async () => {
			const p = 'f2';
			const set = node('Fields', 'set', 2, {
				keepOnlySet: true,
				values: { string: [{ name: 'cid', value: '={{ $json.body.id }}' }] },
				options: {},
			});
			const r = record('F2 set 2', await runTrigger(p, chain([set, charge('={{ JSON.stringify({ id: $json.cid }) }}')]), `charge:${p}_b`));
			expect(r).toMatchObject({ ...ONE_EACH, answers: [500, 200] });
		});
		it("Code 1 (all items, Continue regular output) re-ordering new items without pairedItem (keys kept) → Charge, B's charge failing once: one charge each", async () => {
			const p = 'f3';
			// At Continue (regular output): at Stop Workflow a Code node given the events together is refused (it may act).
			const code = node(
				'Reorder',
				'code',
				1,
				{
					mode: 'runOnceForAllItems',
					jsCode: 'return items.map((i) => ({ json: i.json })).sort((x, y) => x.json.body.amount - y.json.body.amount);',
				},
				{ onError: 'continueRegularOutput' },
			);
			const r = record('F3 code 1', await runTrigger(p, chain([code, charge(EVENT_ID)]), `charge:${p}_b`));
			expect(r).toMatchObject({ ...ONE_EACH, answers: [500, 200] });
		});
		/** Events → Join (input 0) and → Lookup (error output) → Join (input 1), `merge`, then the charge. */
		const joined = (merge: INode, chargeBody: string): Step => ({
			nodes: [at(lookup(), 200), at(merge, 0, 700), at(charge(chargeBody), 0, 950)],
			connections: {
				Lookup: { main: [[{ node: 'Join', type: 'main', index: 1 }], []] },
				Join: { main: [link('Charge')] },
				Charge: { main: [[], []] },
			} as IConnections,
			heads: ['Join', 'Lookup'],
		});
		it("Merge 1 (Merge By Key: body.id = id) of the events and their lookups → Charge, B's charge failing once: one charge each", async () => {
			const p = 'f4';
			const merge = node('Join', 'merge', 1, { mode: 'mergeByKey', propertyName1: 'body.id', propertyName2: 'id', overwrite: 'always' });
			const r = record('F4 merge 1 by key', await runTrigger(p, joined(merge, EVENT_ID), `charge:${p}_b`));
			expect(r).toMatchObject({ ...ONE_EACH, answers: [500, 200] });
		});
		it("Merge 2.1 (Combine, Merge By Fields body.id = id, both) → Charge, B's charge failing once: one charge each", async () => {
			const p = 'f5';
			const merge = node('Join', 'merge', 2.1, {
				mode: 'combine',
				combinationMode: 'mergeByFields',
				mergeByFields: { values: [{ field1: 'body.id', field2: 'id' }] },
				joinMode: 'keepMatches',
				outputDataFrom: 'both',
				options: {},
			});
			const r = record('F5 merge 2.1 by fields', await runTrigger(p, joined(merge, EVENT_ID), `charge:${p}_b`));
			expect(r).toMatchObject({ ...ONE_EACH, answers: [500, 200] });
		});
		it("Item Lists 1 (Sort by amount, descending) → Charge, B's charge failing once: one charge each", async () => {
			const p = 'f6';
			const sort = node('By Amount', 'itemLists', 1, {
				resource: 'itemList',
				operation: 'sort',
				type: 'simple',
				sortFieldsUi: { sortField: [{ fieldName: 'body.amount', order: 'descending' }] },
				options: {},
			});
			const r = record('F6 item lists 1 sort', await runTrigger(p, chain([sort, charge(EVENT_ID)]), `charge:${p}_b`));
			expect(r).toMatchObject({ ...ONE_EACH, answers: [500, 200] });
		});
	});

	/* G. Binary data; a user field named idempotency ------------------------------------------------------------------ */
	describe('G. binary data on the items; a field named idempotency', () => {
		it("Receipt (HTTP Request answering a file, error output) → Charge by the event, B's receipt failing once: one charge each", async () => {
			const p = 'g1';
			const receipt = lookup({}, { response: { response: { responseFormat: 'file', outputPropertyName: 'receipt' } } }, 'Receipt');
			const r = record('G1 binary receipt', await runTrigger(p, chain([receipt, charge(EVENT_ID)]), `lookup:${p}_b`));
			expect(r).toMatchObject({ ...ONE_EACH, answers: [500, 200] });
		});
		it("Edit Fields sets the user's own field `idempotency` (the event id, for the API) → Charge, B's charge failing once: one charge each", async () => {
			const p = 'g2';
			const own = node('Own Key', 'set', 3.4, {
				mode: 'manual',
				assignments: { assignments: [{ id: 'i', name: 'idempotency', value: '={{ "stripe-" + $json.body.id }}', type: 'string' }] },
				includeOtherFields: true,
				options: {},
			});
			const r = record('G2 own idempotency field', await runTrigger(p, chain([own, charge(EVENT_ID)]), `charge:${p}_b`));
			expect(r).toMatchObject({ ...ONE_EACH, answers: [500, 200] });
		});
	});

	/* H. Switch's fallback to an output of its own rules; Limit keeping the last items --------------------------------- */
	describe('H. Switch fallback to output 0; an HTML table of the events; Limit (last items)', () => {
		it('Switch (rules: vip → 0, amount ≥ 200 → 1; Fallback: output 0) → Charge / Ship, B (fallback) charge failing once: A, B charged, C shipped', async () => {
			const p = 'h1';
			const condition = (id: string, left: string, operator: Record<string, string | boolean>, right: string | number = '') => ({
				options: { caseSensitive: true, leftValue: '', typeValidation: 'loose', version: 2 },
				conditions: [{ id, leftValue: left, rightValue: right, operator }],
				combinator: 'and',
			});
			const route = node('Route', 'switch', 3.2, {
				rules: {
					values: [
						{ conditions: condition('v', '={{ $json.body.vip === true }}', { type: 'boolean', operation: 'true', singleValue: true }) },
						{ conditions: condition('n', '={{ $json.body.amount }}', { type: 'number', operation: 'gte' }, 200) },
					],
				},
				looseTypeValidation: true,
				options: { fallbackOutput: 0 },
			});
			const step: Step = {
				nodes: [route, at(charge(EVENT_ID), -200, 700), at(charge(EVENT_ID, {}, {}, 'Ship', 'ship'), 200, 700)],
				connections: {
					Route: { main: [link('Charge'), link('Ship')] },
					Charge: { main: [[], []] },
					Ship: { main: [[], []] },
				} as IConnections,
				heads: ['Route'],
			};
			const r = await runTrigger(p, step, `charge:${p}_b`);
			const ships = threeEvents(p).map((event) => effectsAt('ship', event.id));
			record('H1 switch fallback 0', { ...r, ships });
			expect({ refusal: r.refusal, answers: r.answers, charges: r.charges, ships, keys: r.keys }).toEqual({
				refusal: false,
				answers: [500, 200],
				charges: [1, 1, 0],
				ships: [0, 0, 1],
				keys: ALL_COMPLETED,
			});
		});
		it('Charge (error output) → Table (HTML, Convert to HTML Table, error output) → Email Summary (error output) failing once: refused at publish, or one charge each', async () => {
			const p = 'h3';
			const table = node('Table', 'html', 1.2, { operation: 'convertToHtmlTable', options: {} }, { onError: 'continueErrorOutput' });
			const summary = httpCall(
				'Email Summary',
				'notify',
				{ onError: 'continueErrorOutput' },
				`={{ JSON.stringify({ id: '${p}_summary', table: $json.table }) }}`,
			);
			const r = await runTrigger(p, chain([charge(EVENT_ID), table, summary]), `notify:${p}_summary`);
			const summaries = effectsAt('notify', `${p}_summary`);
			record('H3 html table after charge', {
				...r,
				summaries,
				lastErrors: rt.keyRows().map((row) => row.last_error?.slice(0, 80) ?? null),
			});
			// The same join made by Aggregate, Summarize or Convert to File (HTML) is refused at publish (joinedAfterEffect):
			// the summary's failure is every event's, and the retry would charge each again.
			expect({ refusal: r.refusal, charges: r.charges }).toEqual({ refusal: expect.stringContaining('Table'), charges: [0, 0, 0] });
		});
		it("Limit (2, Last Items) → Charge, B's charge failing once: A completed uncharged (the workflow's rule), B and C charged once", async () => {
			const p = 'h2';
			const limit = node('Last Two', 'limit', 1, { maxItems: 2, keep: 'lastItems' });
			const r = record('H2 limit last items', await runTrigger(p, chain([limit, charge(EVENT_ID)]), `charge:${p}_b`));
			expect(r).toMatchObject({ refusal: false, answers: [500, 200], charges: [0, 1, 1], keys: ALL_COMPLETED });
		});
	});

	/* I. Error outputs leading to a log and an alert ------------------------------------------------------------------- */
	describe('I. error outputs wired to a log and an alert', () => {
		it("Lookup (error output → Log Failure) → Charge (error output → Alert Ops), B's lookup and C's charge failing once: one charge each, one log, one alert", async () => {
			const p = 'i1';
			const logFailure = httpCall('Log Failure', 'notify', { onError: 'continueErrorOutput' }, EVENT_ID);
			// Counted on the test API's refund route; the Charge's error item carries the Lookup's answer (`id`).
			const alertOps = httpCall('Alert Ops', 'refund', { onError: 'continueErrorOutput' }, CHARGE_ID);
			const step: Step = {
				nodes: [lookup(), at(charge(CHARGE_ID), 0, 700), at(logFailure, 200, 700), at(alertOps, 200, 950)],
				connections: {
					Lookup: { main: [link('Charge'), link('Log Failure')] },
					Charge: { main: [[], link('Alert Ops')] },
					'Log Failure': { main: [[], []] },
					'Alert Ops': { main: [[], []] },
				} as IConnections,
				heads: ['Lookup'],
			};
			failNext(`charge:${p}_c`);
			const r = await runTrigger(p, step, `lookup:${p}_b`);
			const ids = threeEvents(p).map((event) => event.id);
			const logs = ids.map((id) => effectsAt('notify', id));
			const alerts = ids.map((id) => effectsAt('refund', id));
			record('I1 error outputs to log and alert', { ...r, logs, alerts });
			expect({ ...r, logs, alerts }).toMatchObject({ ...ONE_EACH, answers: [500, 200], logs: [0, 1, 0], alerts: [0, 0, 1] });
		});
	});
});
