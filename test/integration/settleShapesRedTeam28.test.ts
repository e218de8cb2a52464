import { type INode, type INodeParameters, type IRun } from 'n8n-workflow';

import { WebhookSignatureVerify } from '../../nodes/WebhookSignatureVerify/WebhookSignatureVerify.node';
import { describeWithN8n } from '../support/n8nBaseNodes';
import { PACKAGE, packageNode } from '../support/n8nEngine';
import { link } from '../support/settleWorkflows';
import {
	baseNode as node,
	CHARGE_BODY,
	EVENTS,
	events,
	triggerRedTeam,
	type NodeTemplateOptions,
	type Step,
} from '../support/triggerRedTeam';

/*
 * Twenty-eighth red-team pass: what this session changed. (1) The key body (lib/keys/deriveKey.ts keyBody /
 * parsedAsSent): a genuine, signed copy re-sent with a Content-Type whose charset n8n's own parser
 * (@n8n/backend-network parseContentType: the LAST charset parameter wins, white space around "=" trimmed) reads
 * otherwise than the package; a UTF-16 JSON body. (2) The publish check for two Idempotent Webhooks sharing keys
 * (secondTriggerSharingKeys) against Table Names that name the same embedded table. (3) Nodes still counted as unable
 * to fail on the events' data (NEVER_FAILING_TYPES) with a parameter set by an expression, after the effect, several
 * events. (4) Complete (Key From: Item) with several events, one of them n8n's error item. n8n 2.41.1's request path,
 * publish check and engine; the embedded store in the file's n8n folder; the effect is n8n's HTTP Request calling a
 * local API that counts what it committed per event. The provider re-delivers the same signed bytes until answered
 * 2xx. A row marked failing breaks a promise: its comment says what happens and how to reproduce it.
 */

const NOTIFY_BODY = '={{ JSON.stringify({ id: $json.id }) }}';

describeWithN8n(
	'red team 28: key body charsets, two triggers on one table, expressions in "cannot fail" nodes, Complete with error items',
	() => {
		const { effectsAt, failNext, httpCall, nodePath, postStripe, provide, refusedAtPublish, startedItems, useTrigger, sendAs } =
			triggerRedTeam({
				tag: 'rt28',
				echoBody: true,
				baseNodeFiles: {
					'n8n-nodes-base.webhook': 'Webhook/Webhook.node.js',
					'n8n-nodes-base.splitOut': 'Transform/SplitOut/SplitOut.node.js',
					'n8n-nodes-base.limit': 'Transform/Limit/Limit.node.js',
					'n8n-nodes-base.aggregate': 'Transform/Aggregate/Aggregate.node.js',
				},
				nodeTypes: { [`${PACKAGE}.webhookSignatureVerify`]: new WebhookSignatureVerify() },
			});

		/* The node template path: n8n's Webhook (Raw Body) → Verify → Reserve (Event ID) → Charge, Settle beside it ------- */

		const { deliverNodePath, nodeKey, provideNodePath, reserveNode, useNodePath } = nodePath;
		/** The template around `step`, Settle beside it unless `settle` is false. */
		const nodeTemplate = (step: Step, options: NodeTemplateOptions = {}) => nodePath.nodeTemplate(step, { settle: true, ...options });

		const outputOf = (run: IRun | undefined, name: string, index: number) =>
			run?.data.resultData.runData[name]?.[0]?.data?.main[index]?.length ?? 0;
		const reservedKey = (run: IRun | undefined) =>
			(run?.data.resultData.runData.Reserve?.[0]?.data?.main[0]?.[0]?.json.idempotency as { key?: string } | undefined)?.key ?? null;

		/** The charge names its effect by a fixed ASCII id per row: what n8n made of a non-ASCII id does not matter. */
		const chargeStep = (effectId: string): Step => ({
			nodes: [httpCall('Charge', 'charge', {}, `={{ JSON.stringify({ id: "${effectId}" }) }}`)],
			heads: ['Charge'],
		});

		/* (1) The charset n8n decodes by vs the one the package reads --------------------------------------------------- */

		// A genuine delivery (`application/json`), then the same signed bytes re-sent with another Content-Type: docs/keys.md
		// promises "a copy re-sent ... with another charset keeps its key". n8n's parseContentType keeps the LAST charset
		// parameter, and so does parsedAsSent (deriveKey.ts): `application/json; charset=utf-8; charset=latin1` is read as
		// latin1, so the key comes from the signed bytes. (Seen when parsedAsSent took the first one: the key was read from
		// n8n's latin1 parse, `évt_rt28_ü` → `Ã©vt_rt28_Ã¼`, New, 2 charges for one event.)
		it('node path: a copy re-sent as application/json; charset=utf-8; charset=latin1 (two charsets, n8n uses the last) keeps its key: Duplicate, charged once', async () => {
			useNodePath('wf-rt28-two-charsets');
			const body = { id: 'évt_rt28_dup_ü', amount: 100 };
			const build = () => nodeTemplate(chargeStep('cs_dup'));
			const first = await deliverNodePath(body, build);
			sendAs({ contentType: 'application/json; charset=utf-8; charset=latin1' });
			const copy = await deliverNodePath(body, build);
			expect({
				first: [first.answer, reservedKey(first.run)],
				copy: [copy.answer, outputOf(copy.run, 'Reserve', 0), outputOf(copy.run, 'Reserve', 1)],
				charges: effectsAt('charge', 'cs_dup'),
			}).toEqual({ first: [200, 'evt:évt_rt28_dup_ü'], copy: [200, 0, 1], charges: 1 });
		});

		// The same with white space around "=": `charset = latin1`. n8n trims the parameter's name and value (latin1), and
		// so does parsedAsSent. (Seen when it looked for a parameter starting "charset=": copy New, 2 charges.)
		it('node path: a copy re-sent as application/json; charset = latin1 (spaces around "=") keeps its key: Duplicate, charged once', async () => {
			useNodePath('wf-rt28-spaced-charset');
			const body = { id: 'évt_rt28_sp_ü', amount: 100 };
			const build = () => nodeTemplate(chargeStep('cs_sp'));
			const first = await deliverNodePath(body, build);
			sendAs({ contentType: 'application/json; charset = latin1' });
			const copy = await deliverNodePath(body, build);
			expect({
				first: [first.answer, reservedKey(first.run)],
				copy: [copy.answer, outputOf(copy.run, 'Reserve', 0), outputOf(copy.run, 'Reserve', 1)],
				charges: effectsAt('charge', 'cs_sp'),
			}).toEqual({ first: [200, 'evt:évt_rt28_sp_ü'], copy: [200, 0, 1], charges: 1 });
		});

		// Spellings of UTF-8 both read as UTF-8: `charset="UTF-8"` (quoted, upper case) and `charset=utf8`.
		it('node path: copies re-sent as charset="UTF-8" and charset=utf8 keep their key: Duplicates, charged once', async () => {
			useNodePath('wf-rt28-utf8-spellings');
			const body = { id: 'évt_rt28_u8_ü', amount: 100 };
			const build = () => nodeTemplate(chargeStep('cs_u8'));
			const first = await deliverNodePath(body, build);
			sendAs({ contentType: 'application/json; charset="UTF-8"' });
			const quoted = await deliverNodePath(body, build);
			sendAs({ contentType: 'application/json;charset=utf8' });
			const bare = await deliverNodePath(body, build);
			expect({
				first: [first.answer, reservedKey(first.run)],
				copies: [outputOf(quoted.run, 'Reserve', 1), outputOf(bare.run, 'Reserve', 1)],
				charges: effectsAt('charge', 'cs_u8'),
			}).toEqual({ first: [200, 'evt:évt_rt28_u8_ü'], copies: [1, 1], charges: 1 });
		});

		// A sender posting JSON in UTF-16LE with a byte order mark, labelled `application/json; charset=utf-16le` (n8n decodes
		// it: the key is evt:<id>), then the same signed bytes re-sent as `text/plain`: n8n's body is the bytes read as
		// UTF-8 text. The raw bytes begin with UTF-16's byte order mark, so rawJson reads them as UTF-16: the id is found
		// and the copy keeps its key. (Seen when rawJson read every body as UTF-8: the copy was keyed by its body hash,
		// New, 2 charges.)
		it('node path: a UTF-16LE JSON body (BOM, charset=utf-16le), then its copy re-sent as text/plain: Duplicate, charged once', async () => {
			useNodePath('wf-rt28-utf16');
			const body = { id: 'evt_rt28_u16', amount: 100 };
			const utf16 = (text: string) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
			const build = () => nodeTemplate(chargeStep('cs_u16'));
			sendAs({ contentType: 'application/json; charset=utf-16le', bytes: utf16 });
			const first = await deliverNodePath(body, build);
			sendAs({ contentType: 'text/plain', bytes: utf16 });
			const copy = await deliverNodePath(body, build);
			expect({
				first: [first.answer, reservedKey(first.run)],
				copy: [copy.answer, outputOf(copy.run, 'Reserve', 0), outputOf(copy.run, 'Reserve', 1), reservedKey(copy.run)?.slice(0, 7) ?? null],
				charges: effectsAt('charge', 'cs_u16'),
			}).toEqual({ first: [200, 'evt:evt_rt28_u16'], copy: [200, 0, 1, null], charges: 1 });
		});

		// Control on the trigger: it parses the bytes as UTF-8 whatever the charset: the two-charset copy is a copy.
		it('trigger: a copy re-sent as application/json; charset=utf-8; charset=latin1 is 200 duplicate, charged once', async () => {
			useTrigger('wf-rt28-trigger-charsets');
			const step = chargeStep('tc_dup');
			const first = await provide({ id: 'évt_rt28_tc_ü' }, step, 1);
			sendAs({ contentType: 'application/json; charset=utf-8; charset=latin1' });
			const response = await postStripe(JSON.stringify({ id: 'évt_rt28_tc_ü' }));
			const copy = { status: response.status, outcome: response.headers.get('x-idempotency-outcome'), started: startedItems().length };
			await response.text();
			expect({ first: first.answers, copy: [copy.status, copy.started], charges: effectsAt('charge', 'tc_dup') }).toEqual({
				first: [200],
				copy: [200, 0],
				charges: 1,
			});
		});

		/* (2) Two Idempotent Webhooks in one workflow, Table Names naming one embedded table ---------------------------- */

		const otherTrigger = (parameters: Record<string, unknown>, extra: Partial<INode> = {}): INode =>
			packageNode(
				'Webhook Back Office',
				'idempotentWebhook',
				{ path: 'rt28-office', scheme: 'stripe', store: 'embedded', keySource: 'auto', ...parameters },
				{ typeVersion: 3, position: [0, 300], credentials: { webhookSignatureApi: { id: 'signing', name: 'Signing' } }, ...extra },
			);
		const twoTriggerStep = (other: INode): Step => ({
			nodes: [other, httpCall('Charge', 'charge', {}, '={{ JSON.stringify({ id: $json.body.source + ":" + $json.body.id }) }}')],
			connections: { [other.name]: { main: [link('Charge')] } },
			heads: ['Charge'],
		});

		/** Publishes shop + office (no Scope on either), then delivers order 1001 from each: the refusal and the charges. */
		async function twoTriggers(id: string, tag: string, shopOptions: INodeParameters, officeOptions: INodeParameters) {
			useTrigger(id, { path: 'rt28-shop', options: shopOptions });
			const shopSide = twoTriggerStep(otherTrigger({ options: officeOptions }));
			const refusal = await refusedAtPublish(shopSide);
			const shop = await provide({ id: '1001', source: `shop-${tag}` }, shopSide);
			useTrigger(id, { path: 'rt28-office', options: officeOptions });
			const officeSide = twoTriggerStep({ ...otherTrigger({ options: shopOptions }), name: 'Webhook Shop', id: 'Webhook Shop' });
			const office = await provide({ id: '1001', source: `office-${tag}` }, officeSide);
			return {
				refused: refusal !== false,
				answers: [shop.answers, office.answers],
				charges: [effectsAt('charge', `shop-${tag}:1001`), effectsAt('charge', `office-${tag}:1001`)],
			};
		}

		// The embedded store opens `tableName || 'processed_events'` (nodes/shared/store.ts): a Table Name left empty and one
		// set to `processed_events` (the default, typed in) are one table. secondTriggerSharingKeys compares the texts ('' vs
		// 'processed_events') as the store opens them: one table, refused at publish. (Seen when the texts were compared:
		// published, and the back office's order 1001 answered as a copy of the shop's and never charged.)
		it("two triggers, no Scope, Table Name '' and 'processed_events' (the same embedded table): refused at publish, or each order 1001 charged once", async () => {
			const outcome = await twoTriggers('wf-rt28-default-table', 'dt', {}, { tableName: 'processed_events' });
			expect(outcome.refused).toBe(true);
		});

		// SQLite table names are case-insensitive: `shop_keys` and `SHOP_KEYS` are one table in the embedded file. Published
		// (the check compares the texts); the office trigger's store then fails on every delivery (the embedded store's
		// migration of `SHOP_KEYS` over the existing `shop_keys`: "duplicate column name: inbox_owner"), answered 503
		// key_store_unavailable: no collision, but no office event ever runs while the workflow stays published.
		// Compared in any case on the embedded store: refused at publish. (Seen when compared as texts: published, the
		// office answered 503 on every delivery.)
		it("two triggers, no Scope, Table Names 'shop_keys' and 'SHOP_KEYS' (one SQLite table): refused at publish, or each order 1001 charged once", async () => {
			const outcome = await twoTriggers('wf-rt28-case-table', 'ct', { tableName: 'shop_keys' }, { tableName: 'SHOP_KEYS' });
			expect(outcome.refused).toBe(true);
		});

		// Holds: the second trigger disabled (it receives nothing) is published; one at version 1 (keys `evt:…`, the
		// workflow's v3 keys `wf:<id>:evt:…`) is published; two enabled v3 triggers with different Table Names are published.
		it('two triggers: the other disabled, the other at version 1, or on another table: published', async () => {
			useTrigger('wf-rt28-variants', { path: 'rt28-shop' });
			const disabled = await refusedAtPublish(twoTriggerStep(otherTrigger({}, { disabled: true })));
			const versionOne = await refusedAtPublish(twoTriggerStep(otherTrigger({ mode: 'lease' }, { typeVersion: 1 })));
			const otherTable = await refusedAtPublish(twoTriggerStep(otherTrigger({ options: { tableName: 'office_keys' } })));
			const sameTable = await refusedAtPublish(twoTriggerStep(otherTrigger({})));
			expect({ disabled, versionOne, otherTable, sameTableRefused: typeof sameTable === 'string' }).toEqual({
				disabled: false,
				versionOne: false,
				otherTable: false,
				sameTableRefused: true,
			});
		});

		/* (3) "Cannot fail" nodes with a parameter set by an expression, after the effect, several events --------------- */

		// "Charge each order, then notify at most N customers": Charge (Continue, error output) → Limit, Max Items
		// `{{ $json.customer.length }}` → Notify. n8n reads Max Items from item 0 only: Events [B guest (no customer), A].
		// Seen holding: published, n8n's expression gives no number and Limit passes every item (no failure), [200], one
		// charge each.
		it('trigger: Events [B guest, A] → Charge (error output) → Limit (Max Items {{ $json.customer.length }}) → Notify: refused before any charge, or one charge each', async () => {
			useTrigger('wf-rt28-limit-expr', EVENTS);
			const step: Step = {
				nodes: [
					httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_BODY),
					node('Limit', 'limit', 1, { maxItems: '={{ $json.customer.length }}' }),
					httpCall('Notify', 'notify', { onError: 'continueErrorOutput' }, NOTIFY_BODY),
				],
				connections: { Charge: { main: [link('Limit'), []] }, Limit: { main: [link('Notify')] }, Notify: { main: [[], []] } },
				heads: ['Charge'],
			};
			const refusal = await refusedAtPublish(step);
			const { answers } = await provide(events([{ id: 'le_b' }, { id: 'le_a', customer: 'cus_1' }]), step, 3);
			const charges = [effectsAt('charge', 'le_b'), effectsAt('charge', 'le_a')];
			expect({ refusal: typeof refusal === 'string' ? 'refused' : refusal, answers, charges }).toEqual(
				typeof refusal === 'string'
					? { refusal: 'refused', answers, charges: charges.every((count) => count <= 1) ? charges : 'at most one each' }
					: { refusal: false, answers: [200], charges: [1, 1] },
			);
		});

		// The same with Aggregate: Fields To Aggregate `{{ $json.customer.toLowerCase() }}` (read from item 0). Seen holding:
		// refused at run time before any charge (Notify gets the one item Aggregate makes of the events).
		it('trigger: Events [B guest, A] → Charge (error output) → Aggregate (field {{ $json.customer.toLowerCase() }}) → Notify: refused before any charge, or one charge each', async () => {
			useTrigger('wf-rt28-aggregate-expr', EVENTS);
			const step: Step = {
				nodes: [
					httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_BODY),
					node('Aggregate', 'aggregate', 1, {
						fieldsToAggregate: { fieldToAggregate: [{ fieldToAggregate: '={{ $json.customer.toLowerCase() }}' }] },
						options: {},
					}),
					httpCall('Notify', 'notify', { onError: 'continueErrorOutput' }, '={{ JSON.stringify({ id: "agg" }) }}'),
				],
				connections: { Charge: { main: [link('Aggregate'), []] }, Aggregate: { main: [link('Notify')] }, Notify: { main: [[], []] } },
				heads: ['Charge'],
			};
			const refusal = await refusedAtPublish(step);
			const { answers } = await provide(events([{ id: 'ag_b' }, { id: 'ag_a', customer: 'cus_1' }]), step, 3);
			const charges = [effectsAt('charge', 'ag_b'), effectsAt('charge', 'ag_a')];
			expect({ refusal: typeof refusal === 'string' ? 'refused' : refusal, answers, charges }).toEqual(
				typeof refusal === 'string'
					? { refusal: 'refused', answers, charges: charges.every((count) => count <= 1) ? charges : 'at most one each' }
					: { refusal: false, answers: [200], charges: [1, 1] },
			);
		});

		/* (4) Complete (Key From: Item) reached by several events, one of them n8n's error item --------------------------- */

		// Node path with a batch: Webhook → Verify → Split Out (body.events) → Reserve (Field body.id, Lease 1 s) → Charge
		// (Continue, regular output) → Complete (Key From: Item) → Respond 200. B's charge fails once: Complete gets [A's
		// answer, B's error item]. B's item is refused (isErrorItem) after A's key is completed, so the run answers 500 and
		// the provider's retry finds A a duplicate and charges B once its lease ends. (Seen when the refusal came before the
		// one statement: A's key was left too, and the retry charged A a second time.)
		it('node path: Events [A, B] → Charge (Continue regular) failing once for B → Complete (Key From: Item), Lease 1 s: one charge each, both completed', async () => {
			useNodePath('wf-rt28-complete-mixed');
			const build = () =>
				nodeTemplate(
					{
						nodes: [
							httpCall('Charge', 'charge', { onError: 'continueRegularOutput' }, CHARGE_BODY),
							packageNode(
								'Mark Complete',
								'idempotencyKey',
								{ operation: 'complete', store: 'embedded', source: 'item', options: {} },
								{ typeVersion: 3, position: [900, 0] },
							),
						],
						connections: { Charge: { main: [link('Mark Complete')] }, 'Mark Complete': { main: [link('Respond 200'), []] } },
						heads: ['Charge'],
					},
					{
						settle: false,
						reserve: reserveNode({ keySource: 'field', keyField: 'body.id', keyPrefix: 'evt:', leaseSeconds: 1 }),
						before: {
							nodes: [
								node('Split Out Events', 'splitOut', 1, {
									fieldToSplitOut: 'body.events',
									include: 'noOtherFields',
									options: { destinationFieldName: 'body' },
								}),
							],
							head: 'Split Out Events',
							tail: 'Split Out Events',
						},
					},
				);
			failNext('charge:cm_b');
			const { answers, runs } = await provideNodePath(events([{ id: 'cm_a' }, { id: 'cm_b' }]), build, 4, 1200);
			const refusal = JSON.stringify(runs[0]?.data.resultData.runData.Reserve?.[0]?.data?.main[3]?.map((item) => item.json) ?? []);
			expect({
				refusal: refusal === '[]' ? 'none' : 'refused',
				answers,
				charges: [effectsAt('charge', 'cm_a'), effectsAt('charge', 'cm_b')],
				keys: [await nodeKey('evt:cm_a'), await nodeKey('evt:cm_b')],
			}).toEqual(
				refusal === '[]'
					? { refusal: 'none', answers: answers, charges: [1, 1], keys: ['completed', 'completed'] }
					: { refusal: 'refused', answers, charges: [0, 0], keys: [null, null] },
			);
		});
	},
);
