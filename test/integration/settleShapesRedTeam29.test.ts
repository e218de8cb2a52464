import { type IRun } from 'n8n-workflow';

import { WebhookSignatureVerify } from '../../nodes/WebhookSignatureVerify/WebhookSignatureVerify.node';
import { withCodeRunner } from '../support/codeTaskRunner';
import { describeWithN8n } from '../support/n8nBaseNodes';
import { PACKAGE } from '../support/n8nEngine';
import { link } from '../support/settleWorkflows';
import { baseNode as node, CHARGE_BODY, events, SPLIT_OUT_EVENTS, triggerRedTeam, type Step } from '../support/triggerRedTeam';

/*
 * Twenty-ninth red-team pass: (1) Complete's refusal of n8n's error items (isErrorItem) meeting a business step's
 * answer that is no failure but has an `error` field (`{ error: false, message }`, `{ error: null }`), (2) Complete /
 * Key From: Item falling back to the paired Reserve item behind a node that re-pairs items (a Code node returning the
 * events in another order without pairedItem) and inside Loop Over Items, (3) a UTF-16 JSON body without a byte order
 * mark, labelled by its charset, then its copy re-sent as text/plain. n8n 2.41.1's request path, engine and nodes; the
 * embedded store in the file's n8n folder; the effect is n8n's HTTP Request calling a local API that counts what it
 * committed per event. The provider re-delivers the same signed bytes until answered 2xx. A row marked failing breaks
 * a promise: its comment says what happens and how to reproduce it.
 */

/** The payment API of rows (1): it commits a payment per call and answers `replies[id]` (a JSON body with an `error` field). */
const payments = new Map<string, number>();
const replies = new Map<string, unknown>();

describeWithN8n('red team 29: Complete and error-shaped answers, Key From: Item fallback re-paired, UTF-16 without BOM', () => {
	const { effectsAt, failNext, httpCall, nodePath, provide, statuses, useTrigger, apiUrl, sendAs } = triggerRedTeam({
		tag: 'rt29',
		nodeLeaseSeconds: 1,
		providerPauseMs: 1200,
		engine: (engine) => withCodeRunner(engine as never),
		route: (route, _body, id) => {
			if (route !== 'pay') return undefined;
			payments.set(id, (payments.get(id) ?? 0) + 1);
			return replies.get(id) ?? { ok: true };
		},
		baseNodeFiles: {
			'n8n-nodes-base.webhook': 'Webhook/Webhook.node.js',
			'n8n-nodes-base.splitOut': 'Transform/SplitOut/SplitOut.node.js',
			'n8n-nodes-base.code': 'Code/Code.node.js',
			'n8n-nodes-base.splitInBatches': 'SplitInBatches/SplitInBatches.node.js',
		},
		nodeTypes: { [`${PACKAGE}.webhookSignatureVerify`]: new WebhookSignatureVerify() },
	});

	/* The node path: n8n's Webhook (Raw Body) → Verify → [before] → Reserve (lease 1 s) → the step → Complete (Key From: Item) */

	const { completeNode, deliverNodePath, nodeKey, nodeTemplate, provideNodePath, reserveNode, useNodePath } = nodePath;
	const splitOut = SPLIT_OUT_EVENTS;

	const outputOf = (run: IRun | undefined, name: string, index: number) =>
		run?.data.resultData.runData[name]?.[0]?.data?.main[index]?.length ?? 0;
	const reservedKey = (run: IRun | undefined) =>
		(run?.data.resultData.runData.Reserve?.[0]?.data?.main[0]?.[0]?.json.idempotency as { key?: string } | undefined)?.key ?? null;

	/* (1) Complete meets a business answer with an `error` field that is no failure ---------------------------------- */

	/** Webhook → Verify → Reserve (Event ID, Lease 1 s) → Pay (HTTP Request, default On Error) → Complete (Key From: Item) → 200. */
	const payStep = (): Step => ({
		nodes: [
			{
				...httpCall('Pay', 'pay', {}, '={{ JSON.stringify({ id: $json.body.id }) }}'),
				parameters: {
					method: 'POST',
					url: `${apiUrl()}/pay`,
					sendBody: true,
					specifyBody: 'json',
					jsonBody: '={{ JSON.stringify({ id: $json.body.id }) }}',
					options: {},
				},
			},
			completeNode(),
		],
		connections: { Pay: { main: [link('Mark Complete')] }, 'Mark Complete': { main: [link('Respond 200'), []] } },
		heads: ['Pay'],
	});

	// The payment API answers its success as `{ "error": false, "message": "Payment created" }` (a common API shape: a
	// boolean `error` flag beside a message). Pay is at n8n's default On Error (Stop Workflow): n8n recorded no failure.
	// Complete refuses only an item that carries an error (text or an object) behind a node that continues on error:
	// this success is completed. (Seen when Complete read any `{ error, message }` as n8n's error item: answers
	// [500, 500, 500, 500], 4 payments for one event.)
	it('node path: Pay answers { error: false, message: "Payment created" } (a success) → Complete (Key From: Item): paid once, completed', async () => {
		useNodePath('wf-rt29-error-false');
		replies.set('evt_rt29_false', { error: false, message: 'Payment created' });
		const { answers } = await provideNodePath({ id: 'evt_rt29_false', amount: 100 }, () => nodeTemplate(payStep()));
		expect({ answers, payments: payments.get('evt_rt29_false') ?? 0, key: await nodeKey('evt:evt_rt29_false') }).toEqual({
			answers: [200],
			payments: 1,
			key: 'completed',
		});
	});

	// The same with `{ "error": null }` (a JSON-RPC-style "no error" answer, nothing else).
	it('node path: Pay answers { error: null } (a success) → Complete (Key From: Item): paid once, completed', async () => {
		useNodePath('wf-rt29-error-null');
		replies.set('evt_rt29_null', { error: null });
		const { answers } = await provideNodePath({ id: 'evt_rt29_null', amount: 100 }, () => nodeTemplate(payStep()));
		expect({ answers, payments: payments.get('evt_rt29_null') ?? 0, key: await nodeKey('evt:evt_rt29_null') }).toEqual({
			answers: [200],
			payments: 1,
			key: 'completed',
		});
	});

	// Pay at Continue (using error output), its success a row with an `error` column (`{ id, error: "none" }`: n8n moves
	// to the error output only items whose keys are all error, message, details): a failure would leave through the
	// error output, so the item Complete gets on the success path is a success.
	it('node path: Pay at Continue (error output) answers { id, error: "none" } on its success output → Complete: paid once, completed', async () => {
		useNodePath('wf-rt29-error-output');
		replies.set('evt_rt29_eo', { id: 'pay_2', error: 'none' });
		const step = payStep();
		step.nodes[0] = { ...step.nodes[0], onError: 'continueErrorOutput' };
		step.connections = { ...step.connections, Pay: { main: [link('Mark Complete'), []] } };
		const { answers } = await provideNodePath({ id: 'evt_rt29_eo', amount: 100 }, () => nodeTemplate(step));
		expect({ answers, payments: payments.get('evt_rt29_eo') ?? 0, key: await nodeKey('evt:evt_rt29_eo') }).toEqual({
			answers: [200],
			payments: 1,
			key: 'completed',
		});
	});

	// Control: the same answer with a field beside it (`{ error: false, message, id }`) is not read as an error item.
	it('node path: Pay answers { error: false, message, id } → Complete (Key From: Item): paid once, completed', async () => {
		useNodePath('wf-rt29-error-false-id');
		replies.set('evt_rt29_fid', { error: false, message: 'Payment created', id: 'pay_1' });
		const { answers } = await provideNodePath({ id: 'evt_rt29_fid', amount: 100 }, () => nodeTemplate(payStep()));
		expect({ answers, payments: payments.get('evt_rt29_fid') ?? 0, key: await nodeKey('evt:evt_rt29_fid') }).toEqual({
			answers: [200],
			payments: 1,
			key: 'completed',
		});
	});

	// Control for (1): the trigger's own end-of-execution settlement (no Complete) with the same answer: Pay at Stop
	// Workflow answering { error: false, message } is no failure there (carriesError ignores false): paid once, 200.
	it('trigger: Pay answers { error: false, message: "Payment created" }: paid once, 200, completed', async () => {
		useTrigger('wf-rt29-trigger-error-false');
		replies.set('evt_rt29_tfalse', { error: false, message: 'Payment created' });
		const { answers } = await provide({ id: 'evt_rt29_tfalse' }, { nodes: [httpCall('Pay', 'pay')], heads: ['Pay'] });
		expect({ answers, payments: payments.get('evt_rt29_tfalse') ?? 0, keys: await statuses(['evt_rt29_tfalse']) }).toEqual({
			answers: [200],
			payments: 1,
			keys: ['completed'],
		});
	});

	/* (2) Key From: Item falling back to the paired Reserve item ------------------------------------------------------ */

	const fieldReserve = () => reserveNode({ keySource: 'field', keyField: 'body.id', keyPrefix: 'evt:' });

	// Split Out → Reserve (Field body.id) → Code (Run Once for All Items: the events newest first, as new objects
	// `{ id }`, no pairedItem; n8n-core pairs them by position) → Charge (Continue, regular output) failing once for B →
	// Complete (Key From: Item). Complete gets [B's error item, A's answer]; A's answer has no idempotency object, so
	// Complete reads "the Reserve item it descends from": n8n's pairing by position names B's reservation.
	// Seen when Complete followed any pairing: A's answer completed B's key, B never charged (lost), A charged twice.
	// Complete reads the Reserve item only through pairing the nodes set (pairingIsKnown: no node run once for all
	// items between), so A's item, without a key, is refused on every delivery: nothing is settled and the effects
	// repeat. Documented, not guaranteed (docs/nodes.md, Key From = Item: keep the `idempotency` field in such a Code
	// node, or use Settle After Business Step, which traces each item by the key it carries).
	const reversedByCode = () =>
		nodeTemplate(
			{
				nodes: [
					node('Newest First', 'code', 2, {
						mode: 'runOnceForAllItems',
						language: 'javaScript',
						jsCode: 'return $input.all().reverse().map((item) => ({ json: { id: item.json.body.id } }));',
					}),
					httpCall('Charge', 'charge', { onError: 'continueRegularOutput' }, '={{ JSON.stringify({ id: $json.id }) }}'),
					completeNode(),
				],
				connections: {
					'Newest First': { main: [link('Charge')] },
					Charge: { main: [link('Mark Complete')] },
					'Mark Complete': { main: [link('Respond 200'), []] },
				},
				heads: ['Newest First'],
			},
			{ reserve: fieldReserve(), before: splitOut },
		);

	it.failing(
		'node path: Events [A, B] → Code (all items, reversed, new objects) → Charge (Continue regular) failing once for B → Complete (Key From: Item): one charge each',
		async () => {
			useNodePath('wf-rt29-code-reversed');
			const build = reversedByCode;
			failNext('charge:cr_b');
			const { answers } = await provideNodePath(events([{ id: 'cr_a' }, { id: 'cr_b' }]), build);
			expect({
				answers,
				charges: [effectsAt('charge', 'cr_a'), effectsAt('charge', 'cr_b')],
				keys: [await nodeKey('evt:cr_a'), await nodeKey('evt:cr_b')],
			}).toEqual({ answers, charges: [1, 1], keys: ['completed', 'completed'] });
		},
	);

	// Split Out → Reserve (Field) → Loop Over Items (batch 1) → Charge (Continue regular) → back to the loop; Done →
	// Complete (Key From: Item). The Done items are the charges' answers (no idempotency), traced by n8n's
	// sourceOverwrite to their Reserve items. B's charge fails once.
	it('node path: Events [A, B] → Loop Over Items (1) → Charge (Continue regular) failing once for B; Done → Complete (Key From: Item): one charge each', async () => {
		useNodePath('wf-rt29-loop');
		const build = () =>
			nodeTemplate(
				{
					nodes: [
						node('Each Event', 'splitInBatches', 3, { batchSize: 1, options: {} }),
						httpCall('Charge', 'charge', { onError: 'continueRegularOutput' }, CHARGE_BODY),
						completeNode(),
					],
					connections: {
						'Each Event': { main: [link('Mark Complete'), link('Charge')] },
						Charge: { main: [link('Each Event')] },
						'Mark Complete': { main: [link('Respond 200'), []] },
					},
					heads: ['Each Event'],
				},
				{ reserve: fieldReserve(), before: splitOut },
			);
		failNext('charge:lp_b');
		const { answers } = await provideNodePath(events([{ id: 'lp_a' }, { id: 'lp_b' }]), build);
		expect({
			answers,
			charges: [effectsAt('charge', 'lp_a'), effectsAt('charge', 'lp_b')],
			keys: [await nodeKey('evt:lp_a'), await nodeKey('evt:lp_b')],
		}).toEqual({ answers, charges: [1, 1], keys: ['completed', 'completed'] });
	});

	/* (3) A UTF-16 body without a byte order mark ---------------------------------------------------------------------- */

	// A sender posting JSON in UTF-16LE without a byte order mark, labelled `application/json; charset=utf-16le` (n8n's
	// body parser decodes it: Buffer#toString('utf-16le'), the key is evt:<id>), then the same signed bytes re-sent as
	// `text/plain`: n8n's body is the bytes read as UTF-8 text, the raw bytes are no UTF-8 JSON and carry no BOM.
	// Seen: first keyed evt:evt_rt29_u16n (read from n8n's parse, since rawJson gives nothing for these bytes); the copy
	// has no id anywhere the package reads (rawJson: UTF-8 text with NULs, not JSON; n8n's body a string), so it falls
	// back to the body hash `sha256:984bdee0…`: New, charged again: 2 charges for one event. JSON's UTF-16 without a BOM
	// is told by its NUL pattern (RFC 4627, section 3). docs/keys.md names UTF-16 only "when they begin with its byte order mark".
	// Repro: post {"id":…} as UTF-16LE bytes (no BOM), `application/json; charset=utf-16le`, signed; re-send the same
	// bytes and signature as `text/plain` → Reserve (Event ID): New twice. Documented, not guaranteed (docs/keys.md:
	// UTF-16 is read as such when the bytes begin with its byte order mark).
	it.failing(
		'node path: a UTF-16LE JSON body without BOM (charset=utf-16le), then its copy re-sent as text/plain: Duplicate, charged once',
		async () => {
			useNodePath('wf-rt29-utf16-nobom');
			const body = { id: 'evt_rt29_u16n', amount: 100 };
			const utf16 = (text: string) => Buffer.from(text, 'utf16le');
			const build = () =>
				nodeTemplate({
					nodes: [httpCall('Charge', 'charge', {}, '={{ JSON.stringify({ id: "cs_u16n" }) }}')],
					connections: { Charge: { main: [link('Respond 200')] } },
					heads: ['Charge'],
				});
			sendAs({ contentType: 'application/json; charset=utf-16le', bytes: utf16 });
			const first = await deliverNodePath(body, build);
			sendAs({ contentType: 'text/plain', bytes: utf16 });
			const copy = await deliverNodePath(body, build);
			expect({
				first: [first.answer, reservedKey(first.run)],
				copy: [copy.answer, outputOf(copy.run, 'Reserve', 0), outputOf(copy.run, 'Reserve', 1), reservedKey(copy.run)],
				charges: effectsAt('charge', 'cs_u16n'),
			}).toEqual({ first: [200, 'evt:evt_rt29_u16n'], copy: [200, 0, 1, null], charges: 1 });
		},
	);
});
