import { createHmac } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

import {
	NodeConnectionTypes,
	type ICredentialDataDecryptedObject,
	type INode,
	type INodeExecutionData,
	type IWebhookResponseData,
} from 'n8n-workflow';

import { forgetKeptSigningSecrets } from '../../nodes/shared/signingSecret';
import { embeddedModule } from '../support/storeTargets';
import {
	addNodeTypes,
	credentialsHelperReading,
	engineBase,
	executeInProcess,
	inProcessWorkflow,
	packageNode,
	webhookResponses,
} from '../support/n8nEngine';
import { baseNodesInstalled, effectsFor, loadBaseNodeFiles } from '../support/n8nBaseNodes';
import { describeWithN8n, shapeHarness } from '../support/settleShapes';
import { baseNode, link, lookup, once, routeSwitch, toInput } from '../support/settleWorkflows';
import { callTriggerWebhook, n8nFolderForTheFile } from '../support/triggerWebhookCall';

/*
 * Second red-team pass on the settlement rules (nodes/shared/settlement/), in n8n-core's own engine
 * with n8n-nodes-base's nodes, on shapes the other settleShapes* files do not cover: a node retried
 * by n8n (Retry On Fail) that gets several events, Item Lists joining and splitting events, Filter and
 * an unconnected Switch output dropping events, Compare Datasets. The harness is
 * test/support/settleShapes.ts; the provider redelivers the whole delivery until it gets a 2xx.
 * Rows marked `it.failing` break a rule (an effect doubled, or an event lost); the comment above each
 * names the root cause in the package.
 */

// Before anything else: n8n-core keeps the n8n folder it first reads for the rest of the file (see the helper).
const n8nFolder = n8nFolderForTheFile('rt2-n8n-');

const { workflow, deliveries, statuses, provider } = shapeHarness('shapesrt2', {
	baseNodes: ['n8n-nodes-base.switch', 'n8n-nodes-base.aggregate', 'n8n-nodes-base.splitOut'],
});
const { deliver } = deliveries;

beforeAll(() => {
	if (!baseNodesInstalled()) return;
	addNodeTypes(
		loadBaseNodeFiles({
			'n8n-nodes-base.itemLists': 'ItemLists/ItemLists.node.js',
			'n8n-nodes-base.filter': 'Filter/Filter.node.js',
			'n8n-nodes-base.compareDatasets': 'CompareDatasets/CompareDatasets.node.js',
		}),
	);
});

const bodies = (ids: string[]) => ids.map((id) => ({ id }));

/* Retry On Fail ---------------------------------------------------------------------------------- */

describeWithN8n('a node set to Retry On Fail gets several events', () => {
	// n8n-core retries a node that continues on error whenever the first item it output carries `error`
	// (workflow-execute.js checkFailure), running it again for every item, the ones it already did too:
	// such a node is refused where it gets several events, before anything is reserved.
	it.each([
		['regular output', 'continueRegularOutput'],
		['error output', 'continueErrorOutput'],
	] as const)(
		'charge at Continue (%s) with Retry On Fail gets two events: refused before anything is reserved; no effect, no key',
		async (_name, onError) => {
			const ids = [`rf_${onError}_a`, `rf_${onError}_b`];
			const data = workflow(`wfr2-retry-${onError}`, {
				nodes: [once('Charge', ids[0], 0, { onError, retryOnFail: true, maxTries: 3, waitBetweenTries: 10 })],
				connections: {},
				heads: ['Charge'],
			});
			const refused = await deliver(data, bodies(ids));
			expect({ answer: refused.answer, effects: ids.map(effectsFor), states: await statuses(ids) }).toEqual({
				answer: 503,
				effects: [0, 0],
				states: [undefined, undefined],
			});
		},
	);

	it('charge at the default On Error with Retry On Fail gets two events: refused before anything is reserved; no effect, no key', async () => {
		const ids = ['rs_a', 'rs_b'];
		const data = workflow('wfr2-retry-stop', {
			nodes: [once('Charge', 'rs_a', 0, { retryOnFail: true, maxTries: 3, waitBetweenTries: 10 })],
			connections: {},
			heads: ['Charge'],
		});
		const refused = await deliver(data, bodies(ids));
		expect({ answer: refused.answer, effects: ids.map(effectsFor), states: await statuses(ids) }).toEqual({
			answer: 503,
			effects: [0, 0],
			states: [undefined, undefined],
		});
	});

	it('one event, charge at Continue (error output) with Retry On Fail failing once: retried by n8n in the run, one effect, completed, 200', async () => {
		const data = workflow('wfr2-retry-one', {
			nodes: [once('Charge', 'r1_a', 0, { onError: 'continueErrorOutput', retryOnFail: true, maxTries: 3, waitBetweenTries: 10 })],
			connections: {},
			heads: ['Charge'],
		});
		const { answers, lost } = await provider(data, [{ id: 'r1_a' }]);
		expect({ answers, lost, effects: effectsFor('r1_a'), states: await statuses(['r1_a']) }).toEqual({
			answers: [200],
			lost: [],
			effects: 1,
			states: ['completed'],
		});
	});
});

/* The Idempotent Webhook trigger with an Events Path ------------------------------------------------ */

// As test/integration/settleEventsPerDelivery.test.ts: the trigger's webhook() in n8n-core's WebhookContext over a
// real HTTP exchange, the execution it starts run by n8n-core, its keys in the embedded store in the file's n8n folder.
const SECRET = 'whsec_redteam2';
const TRIGGER_WORKFLOW = 'wf-rt2-events';
const triggerCredentials = () =>
	credentialsHelperReading(async (_details, type): Promise<ICredentialDataDecryptedObject> => {
		if (type === 'webhookSignatureApi') return { secret: SECRET };
		throw new Error(`No credential of type ${type}`);
	});
const batchTrigger = packageNode(
	'Idempotent Webhook',
	'idempotentWebhook',
	{ path: 'rt2', scheme: 'stripe', store: 'embedded', options: { eventsPath: 'body.events' } },
	{ typeVersion: 3, credentials: { webhookSignatureApi: { id: 'signing', name: 'Signing' } } },
);
let started: IWebhookResponseData | Error | undefined;

async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
	started = await callTriggerWebhook(request, response, {
		trigger: batchTrigger,
		workflowId: TRIGGER_WORKFLOW,
		credentials: triggerCredentials(),
	});
	// n8n answers what the trigger did not (the execution's answer is read from webhookResponses).
	if (!response.writableEnded) response.writeHead(200).end('{"started":true}');
}

describeWithN8n('the Idempotent Webhook trigger (Events Path) → a charge with Retry On Fail', () => {
	let server: http.Server;
	let baseUrl: string;
	let executions = 0;
	const keyOf = (id: string) => `wf:${TRIGGER_WORKFLOW}:evt:${id}`;
	const triggerStatuses = async (ids: string[]) => {
		const store = embeddedModule().openEmbeddedKeyStore({
			file: path.join(n8nFolder(), '.n8n', 'storage', 'n8n-nodes-idempotency', 'keys.sqlite'),
		});
		const records = await store.getKeys(ids.map(keyOf));
		return ids.map((id) => records.get(keyOf(id))?.status);
	};

	beforeAll(async () => {
		embeddedModule();
		server = http.createServer((request, response) => void handle(request, response));
		await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
		baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
	});
	afterAll(async () => {
		await new Promise((resolve) => server.close(resolve));
		embeddedModule().closeEmbeddedStores();
	});
	afterEach(() => forgetKeptSigningSecrets());

	/** The provider: posts the delivery, runs the execution it started, and posts it again while the answer is not 2xx. */
	async function provide(events: Array<{ id: string }>, step: INode): Promise<number[]> {
		const answers: number[] = [];
		for (let attempt = 0; attempt < 6; attempt++) {
			const body = JSON.stringify({ events });
			const timestamp = Math.floor(Date.now() / 1000);
			const signature = createHmac('sha256', SECRET).update(`${timestamp}.${body}`).digest('hex');
			const response = await fetch(`${baseUrl}/webhook/rt2`, {
				method: 'POST',
				headers: { 'content-type': 'application/json', 'stripe-signature': `t=${timestamp},v1=${signature}` },
				body,
			});
			const items = (started as IWebhookResponseData).workflowData?.[0] as INodeExecutionData[] | undefined;
			let status = response.status;
			if (items && items.length > 0) {
				executions += 1;
				const executionId = `rt2-trigger-${executions}`;
				await executeInProcess(
					inProcessWorkflow(TRIGGER_WORKFLOW, [{ ...batchTrigger, name: 'Webhook' }, step], {
						Webhook: { main: [[{ node: step.name, type: NodeConnectionTypes.Main, index: 0 }]] },
					}),
					executionId,
					items,
					engineBase(triggerCredentials()),
				);
				status = Number((webhookResponses.get(executionId) ?? [])[0]?.statusCode ?? 200);
			}
			answers.push(status);
			if (status >= 200 && status < 300) break;
		}
		return answers;
	}

	// n8n-core retries a node that continues on error for every event when the first one's item carries
	// `error`: the trigger refuses such a step (its publish check, and again at run time), nothing charged.
	it('charge at Continue (error output) with Retry On Fail gets the events together: refused at run time, nothing charged', async () => {
		const ids = ['tr_1', 'tr_2'];
		const answers = await provide(
			ids.map((id) => ({ id })),
			once('Charge', 'tr_1', 0, { onError: 'continueErrorOutput', retryOnFail: true, maxTries: 3, waitBetweenTries: 10 }),
		);
		expect({ refused: answers.every((status) => status >= 500), states: await triggerStatuses(ids), effects: ids.map(effectsFor) }).toEqual(
			{
				refused: true,
				states: ['failed', 'failed'],
				effects: [0, 0],
			},
		);
	});

	it('the same charge without Retry On Fail: 500, the retry runs only the failed event; one effect each', async () => {
		const ids = ['tn_1', 'tn_2'];
		const answers = await provide(
			ids.map((id) => ({ id })),
			once('Charge', 'tn_1', 0, { onError: 'continueErrorOutput' }),
		);
		expect({ answers, states: await triggerStatuses(ids), effects: ids.map(effectsFor) }).toEqual({
			answers: [500, 200],
			states: ['completed', 'completed'],
			effects: [1, 1],
		});
	});
});

/* Item Lists: a keyless join split again --------------------------------------------------------- */

const itemListsConcatenate = (name: string) =>
	baseNode(
		name,
		'itemLists',
		3.1,
		{
			resource: 'itemList',
			operation: 'concatenateItems',
			aggregate: 'aggregateIndividualFields',
			fieldsToAggregate: { fieldToAggregate: [{ fieldToAggregate: 'body', renameField: false }] },
			options: {},
		},
		0,
	);
const itemListsSplit = (name: string) =>
	baseNode(
		name,
		'itemLists',
		3.1,
		{ resource: 'itemList', operation: 'splitOutItems', fieldToSplitOut: 'body', include: 'noOtherFields', options: {} },
		0,
	);

describeWithN8n('Item Lists joining the events without their keys, then splitting them again', () => {
	// Each item split out of a keyless join is paired by n8n to every event: one charge failure would fail every
	// key, and the retry would charge the others again. Item Lists makes the same join and split as Aggregate and
	// Split Out, and is refused the same way, before anything is reserved.
	it.each([
		['Item Lists Concatenate (body) → Item Lists Split Out Items', 'il', () => itemListsConcatenate('Join')],
		[
			'Aggregate (Individual Fields: body) → Item Lists Split Out Items',
			'ai',
			() => baseNode('Join', 'aggregate', 1, { fieldsToAggregate: { fieldToAggregate: [{ fieldToAggregate: 'body' }] }, options: {} }, 0),
		],
	] as const)('%s → charge (Continue, error output): refused before anything is reserved; no effect', async (_name, prefix, join) => {
		const ids = [`${prefix}_a`, `${prefix}_b`, `${prefix}_c`];
		const data = workflow(`wfr2-${prefix}-split`, {
			nodes: [join(), itemListsSplit('Split'), once('Charge', ids[1], 0, { onError: 'continueErrorOutput' })],
			connections: { Join: { main: [link('Split')] }, Split: { main: [link('Charge')] } },
			heads: ['Join'],
		});
		const refused = await deliver(data, bodies(ids));
		expect({ answer: refused.answer, effects: ids.map(effectsFor), states: await statuses(ids) }).toEqual({
			answer: 503,
			effects: [0, 0, 0],
			states: [undefined, undefined, undefined],
		});
	});

	it('Item Lists Concatenate keeping All Item Data (the keys kept) → Split Out Items → charge failing once for one of three: one effect each', async () => {
		const ids = ['ik_a', 'ik_b', 'ik_c'];
		const data = workflow('wfr2-itemlists-all', {
			nodes: [
				baseNode(
					'Join',
					'itemLists',
					3.1,
					{ resource: 'itemList', operation: 'concatenateItems', aggregate: 'aggregateAllItemData', options: {} },
					0,
				),
				baseNode(
					'Split',
					'itemLists',
					3.1,
					{ resource: 'itemList', operation: 'splitOutItems', fieldToSplitOut: 'data', include: 'noOtherFields', options: {} },
					0,
				),
				once('Charge', 'ik_b', 0, { onError: 'continueErrorOutput' }),
			],
			connections: { Join: { main: [link('Split')] }, Split: { main: [link('Charge')] } },
			heads: ['Join'],
		});
		const { answers, lost } = await provider(data, bodies(ids));
		expect({ answers, lost, effects: ids.map(effectsFor) }).toEqual({ answers: [500, 200], lost: [], effects: [1, 1, 1] });
	});

	it('the same with the refused pair (Aggregate → Split Out): refused before anything is reserved; no effect', async () => {
		const ids = ['as_a', 'as_b'];
		const data = workflow('wfr2-aggregate-splitout', {
			nodes: [
				baseNode('Join', 'aggregate', 1, { fieldsToAggregate: { fieldToAggregate: [{ fieldToAggregate: 'body' }] }, options: {} }, 0),
				baseNode('Split', 'splitOut', 1, { fieldToSplitOut: 'body', include: 'noOtherFields', options: {} }, 0),
				once('Charge', 'as_b', 0, { onError: 'continueErrorOutput' }),
			],
			connections: { Join: { main: [link('Split')] }, Split: { main: [link('Charge')] } },
			heads: ['Join'],
		});
		const refused = await deliver(data, bodies(ids));
		expect({ answer: refused.answer, effects: ids.map(effectsFor) }).toEqual({ answer: 503, effects: [0, 0] });
	});
});

/* Items dropped on purpose ----------------------------------------------------------------------- */

const skipFilter = (name: string) =>
	baseNode(
		name,
		'filter',
		2.2,
		{
			conditions: {
				options: { caseSensitive: true, leftValue: '', typeValidation: 'loose', version: 2 },
				conditions: [
					{
						id: 'f1',
						leftValue: '={{ $json.body.skip === true }}',
						rightValue: '',
						operator: { type: 'boolean', operation: 'false', singleValue: true },
					},
				],
				combinator: 'and',
			},
			looseTypeValidation: true,
			options: {},
		},
		0,
		{ onError: undefined },
	);

describeWithN8n('events dropped by the workflow on purpose', () => {
	it("Filter drops a skip event, the charge fails once for another: the dropped key completed without effect (the user's rule), 500, one effect each after the retry", async () => {
		const ids = ['fl_a', 'fl_skip', 'fl_c'];
		const data = workflow('wfr2-filter', {
			nodes: [skipFilter('Keep'), once('Charge', 'fl_c', 0, { onError: 'continueErrorOutput' })],
			connections: { Keep: { main: [link('Charge')] } },
			heads: ['Keep'],
		});
		const first = await deliver(data, [{ id: 'fl_a' }, { id: 'fl_skip', skip: true }, { id: 'fl_c' }]);
		expect({ answer: first.answer, states: await statuses(ids) }).toEqual({ answer: 500, states: ['completed', 'completed', 'failed'] });
		const { answers, lost } = await provider(data, [{ id: 'fl_a' }, { id: 'fl_skip', skip: true }, { id: 'fl_c' }]);
		expect({ answers, lost, effects: ids.map(effectsFor) }).toEqual({ answers: [200], lost: [], effects: [1, 0, 1] });
	});

	it('Switch (3 outputs, output 2 not connected), the charge on output 0 fails once: the unrouted key completed without effect, one effect each', async () => {
		const ids = ['su_pay', 'su_drop', 'su_ref'];
		const data = workflow('wfr2-switch-unwired', {
			nodes: [
				routeSwitch('Route', 0),
				once('Charge', 'su_pay', 0, { onError: 'continueErrorOutput' }),
				once('Refund', '', 100, { onError: 'continueErrorOutput' }),
			],
			connections: { Route: { main: [link('Charge'), link('Refund')] } },
			heads: ['Route'],
		});
		const delivery = [
			{ id: 'su_pay', route: 0 },
			{ id: 'su_drop', route: 2 },
			{ id: 'su_ref', route: 1 },
		];
		const { answers, lost } = await provider(data, delivery);
		expect({ answers, lost, effects: ids.map(effectsFor), states: await statuses(ids) }).toEqual({
			answers: [500, 200],
			lost: [],
			effects: [1, 0, 1],
			states: ['completed', 'completed', 'completed'],
		});
	});
});

/* Retry On Fail one event at a time; a failure the workflow tolerates --------------------------------- */

describeWithN8n('Retry On Fail inside Loop Over Items (batch size 1)', () => {
	it('charge at Continue (error output) with Retry On Fail inside a batch-1 loop, failing once for the 1st of two: one effect each, 200', async () => {
		const ids = ['rl_a', 'rl_b'];
		const data = workflow('wfr2-retry-loop', {
			nodes: [
				baseNode('Loop', 'splitInBatches', 3, { batchSize: 1, options: {} }, 0),
				once('Charge', 'rl_a', 100, { onError: 'continueErrorOutput', retryOnFail: true, maxTries: 3, waitBetweenTries: 10 }),
			],
			connections: { Loop: { main: [[], link('Charge')] }, Charge: { main: [link('Loop'), link('Loop')] } },
			heads: ['Loop'],
		});
		const { answers, lost } = await provider(data, bodies(ids));
		expect({ answers, lost, effects: ids.map(effectsFor), states: await statuses(ids) }).toEqual({
			answers: [200],
			lost: [],
			effects: [1, 1],
			states: ['completed', 'completed'],
		});
	});
});

describeWithN8n('a lookup failure the workflow tolerates (Merge: Enrich Input 1 keeps the event), then the charge', () => {
	// Root cause: settlement/trace.ts judgeExecution() fails a key when any item descending from its reservation
	// failed anywhere, also where the workflow tolerated the failure and went on to the effect (Merge "Enrich
	// Input 1" keeps the event without the lookup's data): the charge was done, the key is failed, and the
	// provider's retry charges again. (Failing is the package's chosen side: it cannot tell a tolerated failure.)
	it.failing(
		'[events → Merge in 1] + [lookup (Continue, regular output) failing once for one → Merge in 2], Enrich Input 1 by body.id → charge: one effect each',
		async () => {
			const ids = ['me_a', 'me_b'];
			const data = workflow('wfr2-merge-enrich', {
				nodes: [
					lookup('Lookup', 'me_b', 0, { onError: 'continueRegularOutput' }),
					baseNode(
						'Merge',
						'merge',
						3,
						{ mode: 'combine', combineBy: 'combineByFields', fieldsToMatchString: 'body.id', joinMode: 'enrichInput1', options: {} },
						100,
					),
					once('Charge', '', 100, { onError: 'continueErrorOutput' }),
				],
				connections: { Lookup: { main: [toInput('Merge', 1)] }, Merge: { main: [link('Charge')] } },
				heads: ['Lookup', 'Merge'],
			});
			const first = await deliver(data, bodies(ids));
			expect({ answer: first.answer, effects: ids.map(effectsFor) }).toEqual({ answer: 500, effects: [1, 1] });
			const { answers, lost } = await provider(data, bodies(ids));
			expect({ answers, lost, effects: ids.map(effectsFor) }).toEqual({ answers: [200], lost: [], effects: [1, 1] });
		},
	);
});
