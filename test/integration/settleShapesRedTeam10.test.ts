import {
	NodeConnectionTypes,
	type IExecuteFunctions,
	type INode,
	type INodeExecutionData,
	type INodeParameters,
	type INodeType,
} from 'n8n-workflow';

import { baseNodesInstalled, effectsFor, loadBaseNodeFiles } from '../support/n8nBaseNodes';
import { addNodeTypes, packageNode } from '../support/n8nEngine';
import { describeWithN8n, shapeHarness } from '../support/settleShapes';
import { baseNode, eventBodies, executeInline, inlineSubWorkflow, link, lookup, once, setField, skipIf } from '../support/settleWorkflows';
import { inProcessTriggerShapes } from '../support/triggerProvider';

import { n8nFolderForTheFile } from '../support/triggerWebhookCall';

/*
 * Tenth red-team pass on the settlement rules (nodes/shared/settlement/): the several-events rules judged on a
 * node's ancestors only, while n8n's v1 order runs a branch beside it (higher on the canvas) to its end first;
 * the start of a sub-workflow defined in Execute Workflow as the rules find it and as n8n finds it; and what the
 * Idempotent Webhook trigger keeps in its key table (stored answer, last error) with Basic and Header Auth.
 * n8n-core's own engine with n8n-nodes-base's nodes; the provider redelivers the whole delivery until it gets a
 * 2xx. A row marked failing breaks a promise: its comment says what happens.
 */

// Before anything else: n8n-core keeps the n8n folder it first reads for the rest of the file.
const n8nFolder = n8nFolderForTheFile('rt10-n8n-');

/** A Code node stand-in ("Run Once for All Items") returning `$('Webhook').all()`: the trigger's items, as they left it. */
class TestCodeTriggerItems implements INodeType {
	description: INodeType['description'] = {
		displayName: 'Test Code Trigger Items',
		name: 'testCodeTriggerItems',
		group: ['transform'],
		version: 1,
		description: "Code node returning $('Webhook').all()",
		defaults: { name: 'Code' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		properties: [],
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const proxy = this.getWorkflowDataProxy(0) as unknown as { $: (name: string) => { all: () => INodeExecutionData[] } };
		return [
			proxy
				.$('Webhook')
				.all()
				.map((item) => ({ json: item.json })),
		];
	}
}

const { workflow, deliveries, provider, oneEffectEachOrRefused } = shapeHarness('shapesrt10', {
	baseNodes: ['n8n-nodes-base.set', 'n8n-nodes-base.stopAndError'],
	testNodes: { testCodeTriggerItems: new TestCodeTriggerItems() },
	subWorkflows: true,
});
const { deliver } = deliveries;

beforeAll(() => {
	if (!baseNodesInstalled()) return;
	addNodeTypes(
		loadBaseNodeFiles({
			'n8n-nodes-base.dateTime': 'DateTime/DateTime.node.js',
			'n8n-nodes-base.executeWorkflowTrigger': 'ExecuteWorkflow/ExecuteWorkflowTrigger/ExecuteWorkflowTrigger.node.js',
			'n8n-nodes-base.manualTrigger': 'ManualTrigger/ManualTrigger.node.js',
		}),
	);
});

/* Nodes ------------------------------------------------------------------------------------------------------ */

/** If (2.2) at n8n's default On Error, strict type validation: `amount > 100` cannot be evaluated for a non-number amount. */
const strictAmountIf = (name: string, y: number) =>
	baseNode(
		name,
		'if',
		2.2,
		{
			conditions: {
				options: { caseSensitive: true, leftValue: '', typeValidation: 'strict', version: 2 },
				conditions: [{ id: 'c1', leftValue: '={{ $json.body.amount }}', rightValue: 100, operator: { type: 'number', operation: 'gt' } }],
				combinator: 'and',
			},
			looseTypeValidation: false,
			options: {},
		},
		y,
		{ onError: undefined },
	);

/** Date & Time (2) formatting the event's `body.created`, at n8n's default On Error. */
const formatDate = (name: string, y: number) =>
	baseNode(
		name,
		'dateTime',
		2,
		{
			operation: 'formatDate',
			date: '={{ $json.body.created }}',
			format: 'yyyy-MM-dd',
			outputFieldName: 'day',
			options: { includeInputFields: true },
		} as INodeParameters,
		y,
		{ onError: undefined },
	);

const loopOne = (name: string, y: number) => baseNode(name, 'splitInBatches', 3, { batchSize: 1, options: {} }, y, { onError: undefined });

type Bodies = Array<{ id: string } & Record<string, unknown>>;

/**
 * What a trustworthy package does with a delivery one event of which fails on every attempt: refuses it before
 * anything is reserved (503, no effect), or acts at most once for each event of `once` through `attempts` deliveries.
 */
async function refusedOrAtMostOnce(data: Parameters<typeof deliver>[0], bodies: Bodies, once: string[], attempts = 3): Promise<void> {
	const first = await deliver(data, bodies);
	if (first.answer === 503 && bodies.every((body) => effectsFor(body.id) === 0)) return;
	await provider(data, bodies, attempts - 1);
	expect(once.map(effectsFor)).toEqual(once.map(() => 1));
}

/* (a) A routing node, Stop and Error or a loop on a branch beside the effect ---------------------------------- */

describeWithN8n('several events: a node beside the effect, run after it (n8n runs the higher branch first)', () => {
	// Reserve's New output feeds the charge (top of the canvas, Continue (error output)) and, below it, an If at Stop
	// Workflow routing big orders to a notification. n8n would run the charge's branch first, for both events; the If
	// failing on B's amount would stop the run, fail both keys, and every redelivery would charge A again. The charge
	// on a branch of the same output counts as an effect beside the If (wiring.ts effectNotAfter, sameEventsBeside).
	it('charge (top) beside an If (Stop Workflow) below it, B unreadable: refused, or A charged once', async () => {
		const data = workflow('wfr10-beside-if', {
			nodes: [
				once('Charge bi', '', 0, { onError: 'continueErrorOutput' }),
				strictAmountIf('Big Order?', 100),
				lookup('Notify Sales', '', 100, { onError: 'continueErrorOutput' }),
			],
			connections: { 'Big Order?': { main: [link('Notify Sales'), []] } },
			heads: ['Charge bi', 'Big Order?'],
		});
		await refusedOrAtMostOnce(
			data,
			[
				{ id: 'bi_a', amount: 50 },
				{ id: 'bi_b', amount: 'fifty' },
			],
			['bi_a'],
		);
	});

	// The same with a Date & Time at Stop Workflow below the charge, stamping the order date for a report: it would fail
	// on B's unreadable date after the charge's branch ran for both.
	it('charge (top) beside a Date & Time (Stop Workflow) below it, B unreadable: refused, or A charged once', async () => {
		const data = workflow('wfr10-beside-date', {
			nodes: [
				once('Charge bd', '', 0, { onError: 'continueErrorOutput' }),
				formatDate('Stamp', 100),
				lookup('Report', '', 100, { onError: 'continueErrorOutput' }),
			],
			connections: { Stamp: { main: [link('Report')] } },
			heads: ['Charge bd', 'Stamp'],
		});
		await refusedOrAtMostOnce(
			data,
			[
				{ id: 'bd_a', created: '2024-05-01T10:00:00Z' },
				{ id: 'bd_b', created: 'not a date' },
			],
			['bd_a'],
		);
	});

	// The If placed above the charge would run first and stop the run before anything was charged; the rules do not
	// read the canvas (a node moved would change the order), so it is refused as the same If below the charge is.
	it('If (Stop Workflow) above the charge, B unreadable: refused before anything is reserved, nothing charged', async () => {
		const data = workflow('wfr10-if-above', {
			nodes: [
				once('Charge ia', '', 100, { onError: 'continueErrorOutput' }),
				strictAmountIf('Big Order?', 0),
				lookup('Notify Sales', '', 0, { onError: 'continueErrorOutput' }),
			],
			connections: { 'Big Order?': { main: [link('Notify Sales'), []] } },
			heads: ['Charge ia', 'Big Order?'],
		});
		const first = await deliver(data, [
			{ id: 'ia_a', amount: 50 },
			{ id: 'ia_b', amount: 'fifty' },
		]);
		expect({ answer: first.answer, effects: ['ia_a', 'ia_b'].map(effectsFor) }).toEqual({ answer: 503, effects: [0, 0] });
	});

	// Charge every event on the top branch, ship each one by one below (Loop Over Items, batch size 1, Done
	// unconnected), the shipping check failing once for A, the first in the loop: the run would stop before the loop
	// reached B, and the retry would charge B again. Refused, as the chained form (charge → loop) is
	// (stopsInLoopAfterEffect): an effect beside the loop counts as one before it.
	it('charge all (top) beside Loop Over Items (1) → ship check (Stop Workflow) failing once for the first: refused, or B charged once', async () => {
		const ids = ['bl_a', 'bl_b'];
		const data = workflow('wfr10-beside-loop', {
			nodes: [
				once('Charge bl', '', 0, { onError: 'continueErrorOutput' }),
				loopOne('Each', 100),
				lookup('Ship Check', 'bl_a', 100, { onError: undefined }),
			],
			connections: { Each: { main: [[], link('Ship Check')] }, 'Ship Check': { main: [link('Each')] } },
			heads: ['Charge bl', 'Each'],
		});
		const first = await deliver(data, eventBodies(ids));
		if (first.answer === 503 && ids.every((id) => effectsFor(id) === 0)) return;
		const { lost } = await provider(data, eventBodies(ids));
		// A's own step failed after its charge (the documented class of a step that fails after its effect): B is the event the rule keeps.
		expect({ lost, b: effectsFor('bl_b') }).toEqual({ lost: [], b: 1 });
	});

	// The control: the chained form is refused before anything is reserved.
	it('charge all → Loop Over Items (1) → ship check (Stop Workflow): refused before anything is reserved', async () => {
		const ids = ['cl_a', 'cl_b'];
		const data = workflow('wfr10-chained-loop', {
			nodes: [
				once('Charge cl', '', 0, { onError: 'continueErrorOutput' }),
				loopOne('Each', 0),
				lookup('Ship Check', 'cl_a', 0, { onError: undefined }),
			],
			connections: {
				'Charge cl': { main: [link('Each')] },
				Each: { main: [[], link('Ship Check')] },
				'Ship Check': { main: [link('Each')] },
			},
			heads: ['Charge cl'],
		});
		const first = await deliver(data, eventBodies(ids));
		expect({ answer: first.answer, effects: ids.map(effectsFor) }).toEqual({ answer: 503, effects: [0, 0] });
	});
});

/* (b) A sub-workflow defined in the node: where it starts ---------------------------------------------------- */

describeWithN8n('a sub-workflow defined in Execute Workflow, a disconnected Manual Trigger listed first', () => {
	const manualTrigger = (): INode => ({
		id: 'manual',
		name: "When clicking 'Execute workflow'",
		type: 'n8n-nodes-base.manualTrigger',
		typeVersion: 1,
		position: [0, 200],
		parameters: {},
	});
	const subTrigger = (): INode => ({
		id: 'Webhook',
		name: 'Webhook',
		type: 'n8n-nodes-base.executeWorkflowTrigger',
		typeVersion: 1.1,
		position: [0, 0],
		parameters: { inputSource: 'passthrough' },
	});

	// The sub-workflow was built and tested on its own: its Manual Trigger, unlinked, keeps the `"main": [[]]` entry
	// n8n leaves in the connections when a link is deleted, and comes first in the nodes. n8n starts the sub-workflow at
	// its Execute Workflow Trigger (findSubworkflowStart), and so does executionRecord.ts inlineSubWorkflowRecord: the
	// charge inside, at Stop Workflow, getting both events, is refused.
	it('Execute Workflow (Continue) → sub [Manual Trigger (unlinked), trigger → charge (Stop Workflow)], B failing once: refused, or one charge each', async () => {
		const ids = ['sm_a', 'sm_b'];
		const json = inlineSubWorkflow(
			[subTrigger(), once('Sub Charge sm', 'sm_b', 0)],
			{ "When clicking 'Execute workflow'": { main: [[]] }, Webhook: { main: [link('Sub Charge sm')] } },
			manualTrigger(),
		);
		const data = workflow('wfr10-sub-manual', {
			nodes: [executeInline(json, 'continueRegularOutput')],
			connections: {},
			heads: ['Run Sub-workflow'],
		});
		await oneEffectEachOrRefused(data, eventBodies(ids));
	});

	// The control: the same sub-workflow with its Execute Workflow Trigger first is refused before anything is reserved.
	it('the same with the sub-workflow trigger listed first: refused before anything is reserved', async () => {
		const ids = ['st_a', 'st_b'];
		const json = inlineSubWorkflow(
			[manualTrigger(), once('Sub Charge st', 'st_b', 0)],
			{ "When clicking 'Execute workflow'": { main: [[]] }, Webhook: { main: [link('Sub Charge st')] } },
			subTrigger(),
		);
		const data = workflow('wfr10-sub-trigger-first', {
			nodes: [executeInline(json, 'continueRegularOutput')],
			connections: {},
			heads: ['Run Sub-workflow'],
		});
		const first = await deliver(data, eventBodies(ids));
		expect({ answer: first.answer, effects: ids.map(effectsFor) }).toEqual({ answer: 503, effects: [0, 0] });
	});
});

/* (c) The Idempotent Webhook trigger: what it keeps ---------------------------------------------------------- */

const BASIC = { user: 'stripe-hooks', password: 'pw-s3cret-4417' };
const BASIC_HEADER = `Basic ${Buffer.from(`${BASIC.user}:${BASIC.password}`).toString('base64')}`;
const HEADER_AUTH = { name: 'X-Webhook-Key', value: 'hook-key-9f8e7d6c' };

/** Every form the Basic credential can take in text: the header, its base64 part, user:password, the password. */
const BASIC_FORMS = [BASIC_HEADER, BASIC_HEADER.slice('Basic '.length), `${BASIC.user}:${BASIC.password}`, BASIC.password];
const leaked = (texts: unknown[], forms: string[]) =>
	forms.filter((form) => texts.some((text) => (typeof text === 'string' ? text : JSON.stringify(text ?? null)).includes(form)));

describeWithN8n('the trigger behind Basic Auth: what its key table and its copies get', () => {
	const { provide, record } = inProcessTriggerShapes(
		'basic',
		n8nFolder,
		{},
		{ authentication: 'basicAuth', basic: BASIC, header: HEADER_AUTH },
	);

	it('No Operation as the last node (the trigger item passed on): the answer, the stored answer and the copy carry no credential', async () => {
		const id = 'ba_noop';
		const shape = { nodes: [baseNode('Done', 'noOp', 1, {}, 0)], connections: {}, heads: ['Done'] };
		const first = await provide({ id, note: 'hello' }, shape, 1);
		const copy = await provide({ id, note: 'hello' }, shape, 1);
		const stored = await record(id);
		expect({
			answers: [...first.answers, ...copy.answers],
			status: stored?.status,
			leaked: leaked([...first.bodies, ...copy.bodies, stored?.response], BASIC_FORMS),
			note: (stored?.response as { body?: { note?: string } } | undefined)?.body?.note,
		}).toEqual({ answers: [200, 200], status: 'completed', leaked: [], note: 'hello' });
	});

	it('Edit Fields copying the Authorization header into `caller` and a greeting around it: neither is stored', async () => {
		const id = 'ba_copy';
		const shape = {
			nodes: [
				setField('Caller', 'caller', '={{ $json.headers.authorization }}', 0),
				setField('Greeting', 'greeting', '={{ "Called with " + $json.headers.authorization }}', 0),
			],
			connections: { Caller: { main: [link('Greeting')] } },
			heads: ['Caller'],
		};
		await provide({ id }, shape, 1);
		const copy = await provide({ id }, shape, 1);
		const stored = await record(id);
		expect({ status: stored?.status, leaked: leaked([...copy.bodies, stored?.response], BASIC_FORMS) }).toEqual({
			status: 'completed',
			leaked: [],
		});
	});

	it("Code returning $('Webhook').all() after the charge as the last node: no credential in the stored answer", async () => {
		const id = 'ba_all';
		const shape = {
			nodes: [
				once('Charge ba', '', 0, { onError: undefined }),
				packageNode('All Events', 'testCodeTriggerItems', {}, { position: [400, 0] }),
			],
			connections: { 'Charge ba': { main: [link('All Events')] } },
			heads: ['Charge ba'],
		};
		const first = await provide({ id }, shape, 1);
		const stored = await record(id);
		expect({ answers: first.answers, charges: effectsFor(id), leaked: leaked([...first.bodies, stored?.response], BASIC_FORMS) }).toEqual({
			answers: [200],
			charges: 1,
			leaked: [],
		});
	});

	// A Stop and Error whose message quotes the event ("Unsupported event: {{ JSON.stringify($json) }}") fails the key
	// with that message, and the trigger's item carries the request's headers: the message is stored with the
	// credentials it quotes redacted (lib/store/storableValues.ts storableErrorMessage, lib/evidence/redactedText.ts).
	it('If → Stop and Error quoting $json for an unsupported event: the key table keeps no credential', async () => {
		const id = 'ba_stop';
		const shape = {
			nodes: [
				skipIf('Unsupported?', 0, 'unsupported'),
				baseNode(
					'Reject',
					'stopAndError',
					1,
					{ errorType: 'errorMessage', errorMessage: '={{ "Unsupported event: " + JSON.stringify($json) }}' },
					0,
					{ onError: undefined },
				),
			],
			connections: { 'Unsupported?': { main: [link('Reject'), []] } },
			heads: ['Unsupported?'],
		};
		const first = await provide({ id, unsupported: true }, shape, 1);
		const stored = await record(id);
		expect({ answers: first.answers, status: stored?.status, leaked: leaked([stored?.lastError, stored?.response], BASIC_FORMS) }).toEqual({
			answers: [500],
			status: 'failed',
			leaked: [],
		});
	});

	it('a 10 MB answer from the last node: kept and replayed as {"status":"completed"}', async () => {
		const id = 'ba_big';
		const shape = {
			nodes: [setField('Blob', 'blob', '={{ "x".repeat(10 * 1024 * 1024) }}', 0)],
			connections: {},
			heads: ['Blob'],
		};
		const first = await provide({ id }, shape, 1);
		const copy = await provide({ id }, shape, 1);
		const stored = await record(id);
		expect({
			answers: [...first.answers, ...copy.answers],
			stored: stored?.response,
			copy: JSON.parse(copy.bodies[0]) as unknown,
			copyBytes: copy.bodies[0].length < 1000,
		}).toEqual({ answers: [200, 200], stored: { status: 'completed' }, copy: { status: 'completed' }, copyBytes: true });
	});
});

const HEADER_FORMS = [HEADER_AUTH.value];

describeWithN8n('the trigger behind Header Auth (X-Webhook-Key), the header given twice', () => {
	const { provide, record } = inProcessTriggerShapes(
		'header',
		n8nFolder,
		{},
		{ authentication: 'headerAuth', basic: BASIC, header: HEADER_AUTH },
	);

	it('the header sent twice, its value copied into `caller` by the last node: accepted once, nothing of it stored or replayed', async () => {
		const id = 'ha_twice';
		const shape = {
			nodes: [setField('Caller', 'caller', "={{ $json.headers['x-webhook-key'] }}", 0)],
			connections: {},
			heads: ['Caller'],
		};
		const first = await provide({ id }, shape, 1, { twice: true });
		const copy = await provide({ id }, shape, 1, { twice: true });
		const stored = await record(id);
		expect({
			answers: [...first.answers, ...copy.answers],
			status: stored?.status,
			leaked: leaked([...first.bodies, ...copy.bodies, stored?.response], HEADER_FORMS),
		}).toEqual({ answers: [200, 200], status: 'completed', leaked: [] });
	});
});

describeWithN8n('the trigger with an Events Path: an If beside the charge, below it', () => {
	const { provide, record } = inProcessTriggerShapes('events', n8nFolder, { eventsPath: 'body.events' });

	// The trigger's rule for the events of one delivery (eventsTogetherAfterTrigger) is checkEventsApart's: the If at
	// Stop Workflow below the charge, on a branch of the same output, is refused at publish.
	it('two events, charge (top) beside an If (Stop Workflow), B unreadable: refused, or A charged once', async () => {
		const events = [
			{ id: 'te_a', amount: 50 },
			{ id: 'te_b', amount: 'fifty' },
		];
		await provide(
			{ events },
			{
				nodes: [
					once('Charge te', '', 0, { onError: 'continueErrorOutput' }),
					strictAmountIf('Big Order?', 100),
					lookup('Notify Sales', '', 100, { onError: 'continueErrorOutput' }),
				],
				connections: { 'Big Order?': { main: [link('Notify Sales'), []] } },
				heads: ['Charge te', 'Big Order?'],
			},
			3,
		);
		// Refused at the trigger's first step: nothing charged. Accepted: A charged once, its key completed.
		if (effectsFor('te_a') === 0 && effectsFor('te_b') === 0) return;
		expect({ a: effectsFor('te_a'), key: (await record('te_a'))?.status }).toEqual({ a: 1, key: 'completed' });
	});
});
