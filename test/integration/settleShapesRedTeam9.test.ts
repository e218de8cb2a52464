import {
	NodeConnectionTypes,
	type IExecuteFunctions,
	type INode,
	type INodeExecutionData,
	type INodeParameters,
	type INodeType,
} from 'n8n-workflow';

import { baseNodesInstalled, effectsFor, loadBaseNodeFiles, useInMemoryDeduplication } from '../support/n8nBaseNodes';
import { addNodeTypes, packageNode } from '../support/n8nEngine';
import { describeWithN8n, shapeHarness } from '../support/settleShapes';
import { baseNode, executeSaved, link, lookup, once, setField, toInput } from '../support/settleWorkflows';
import { inProcessTriggerShapes } from '../support/triggerProvider';

import { n8nFolderForTheFile } from '../support/triggerWebhookCall';

/*
 * Ninth red-team pass on the settlement rules (nodes/shared/settlement/): the Idempotent Webhook trigger with one
 * event per delivery and with an Events Path, behind it n8n's own transform nodes (Split Out, Merge, Date & Time,
 * Crypto, XML, Markdown, Rename Keys, Limit, Sort, Compare Datasets) and Code-node stand-ins; Reserve with one event
 * whose lines are acted on one by one; sub-workflows from the database. n8n-core's own engine with
 * n8n-nodes-base's nodes; the provider redelivers the whole delivery until it gets a 2xx. A row marked failing breaks
 * a promise: its comment says what happens.
 */

// Before anything else: n8n-core keeps the n8n folder it first reads for the rest of the file.
const n8nFolder = n8nFolderForTheFile('rt9-n8n-');

/**
 * A Code node stand-in ("Run Once for All Items"): `zero` returns no item; `lines` returns one item per line of
 * every event, built anew (`{ id, amount }`), without pairedItem, as `$input.all().flatMap(…)` does.
 */
class TestCodeAll implements INodeType {
	description: INodeType['description'] = {
		displayName: 'Test Code All Items',
		name: 'testCodeAll',
		group: ['transform'],
		version: 1,
		description: 'Code node in Run Once for All Items',
		defaults: { name: 'Code' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		properties: [{ displayName: 'Mode', name: 'mode', type: 'string', default: 'zero' }],
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const mode = this.getNodeParameter('mode', 0, 'zero') as string;
		if (mode === 'zero') return [[]];
		const items = this.getInputData();
		return [
			items.flatMap((item) =>
				((item.json.body as { lines?: Array<{ id: string }> }).lines ?? []).map((line) => ({ json: { id: line.id, amount: 1 } })),
			),
		];
	}
}

const { workflow, deliveries, provider } = shapeHarness('shapesrt9', {
	baseNodes: ['n8n-nodes-base.set', 'n8n-nodes-base.splitOut', 'n8n-nodes-base.removeDuplicates', 'n8n-nodes-base.stopAndError'],
	testNodes: { testCodeAll: new TestCodeAll() },
	subWorkflows: true,
});
const { deliver } = deliveries;

beforeAll(async () => {
	if (!baseNodesInstalled()) return;
	addNodeTypes(
		loadBaseNodeFiles({
			'n8n-nodes-base.dateTime': 'DateTime/DateTime.node.js',
			'n8n-nodes-base.crypto': 'Crypto/Crypto.node.js',
			'n8n-nodes-base.xml': 'Xml/Xml.node.js',
			'n8n-nodes-base.markdown': 'Markdown/Markdown.node.js',
			'n8n-nodes-base.renameKeys': 'RenameKeys/RenameKeys.node.js',
			'n8n-nodes-base.limit': 'Transform/Limit/Limit.node.js',
			'n8n-nodes-base.sort': 'Transform/Sort/Sort.node.js',
			'n8n-nodes-base.compareDatasets': 'CompareDatasets/CompareDatasets.node.js',
			'n8n-nodes-base.itemLists': 'ItemLists/ItemLists.node.js',
		}),
	);
	await useInMemoryDeduplication();
});

/* Nodes ------------------------------------------------------------------------------------------------------ */

/** Split Out (1) of the event's `body.lines`: one item per line, each `{ id }` of its own. */
const linesOut = (name = 'Lines', y = 0) =>
	baseNode(name, 'splitOut', 1, { fieldToSplitOut: 'body.lines', include: 'noOtherFields', options: {} }, y, { onError: undefined });

/** Date & Time (2) formatting the event's `body.created`, at n8n's default On Error unless told. */
const formatDate = (name: string, extra: Partial<INode> = {}) =>
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
		0,
		{ onError: undefined, ...extra },
	);

/**
 * n8n's pure transforms (no call out of n8n) at their default On Error, each a node users put before a charge. XML
 * (JSON to XML) is not among them here: it replaces the item with its text, and the test's charge then finds no event.
 */
const transforms: Array<[string, () => INode]> = [
	['Date & Time (format a date)', () => formatDate('Transform')],
	[
		'Crypto (SHA-256 of the event id)',
		() =>
			baseNode(
				'Transform',
				'crypto',
				2,
				{ action: 'hash', type: 'SHA256', value: '={{ $json.body.id }}', dataPropertyName: 'digest', encoding: 'hex' },
				0,
				{ onError: undefined },
			),
	],
	[
		'Markdown (to HTML)',
		() =>
			baseNode(
				'Transform',
				'markdown',
				1,
				{ mode: 'markdownToHtml', markdown: '={{ $json.body.note ?? "" }}', destinationKey: 'noteHtml', options: {} },
				0,
				{ onError: undefined },
			),
	],
];

type Bodies = Array<{ id: string } & Record<string, unknown>>;

/* (a) Reserve, one event whose lines are charged one by one -------------------------------------------------- */

describeWithN8n('Reserve, one event, Split Out of its lines → a charge per line', () => {
	// One event, two lines: Split Out gives two items, both paired to the one reservation. The charge (Continue, error
	// output) charges line 1 and fails for line 2; the key is failed (wiring.ts checkEventsApart counts events, not
	// items: one event is never refused) and the provider's retry runs the step again, charging line 1 a second time.
	it.failing(
		'Split Out lines → charge per line (Continue, error output) failing once for line 2: refused, or one charge per line',
		async () => {
			const body = { id: 'ln_a', lines: [{ id: 'ln_a:1' }, { id: 'ln_a:2' }] };
			const data = workflow('wfr9-lines', {
				nodes: [linesOut(), once('Charge Line', 'ln_a:2', 0, { onError: 'continueErrorOutput' })],
				connections: { Lines: { main: [link('Charge Line')] } },
				heads: ['Lines'],
			});
			const first = await deliver(data, [body]);
			if (first.answer === 503 && effectsFor('ln_a:1') === 0) return;
			const { lost } = await provider(data, [body]);
			expect({ lost, lines: ['ln_a:1', 'ln_a:2'].map(effectsFor) }).toEqual({ lost: [], lines: [1, 1] });
		},
	);

	// The same inside Loop Over Items (batch size 1), the charge at n8n's default On Error: line 2's failure stops the
	// run after line 1 was charged, the key fails, and the retry charges line 1 again.
	it.failing(
		'Split Out lines → Loop Over Items (1) → charge per line (Stop Workflow) failing once for line 2: refused, or one charge per line',
		async () => {
			const body = { id: 'll_a', lines: [{ id: 'll_a:1' }, { id: 'll_a:2' }] };
			const data = workflow('wfr9-lines-loop', {
				nodes: [
					linesOut(),
					baseNode('Each Line', 'splitInBatches', 3, { batchSize: 1, options: {} }, 0, { onError: undefined }),
					once('Charge Line', 'll_a:2', 100, { onError: undefined }),
				],
				connections: {
					Lines: { main: [link('Each Line')] },
					'Each Line': { main: [[], link('Charge Line')] },
					'Charge Line': { main: [link('Each Line')] },
				},
				heads: ['Lines'],
			});
			const first = await deliver(data, [body]);
			if (first.answer === 503 && effectsFor('ll_a:1') === 0) return;
			const { lost } = await provider(data, [body]);
			expect({ lost, lines: ['ll_a:1', 'll_a:2'].map(effectsFor) }).toEqual({ lost: [], lines: [1, 1] });
		},
	);

	it('Split Out lines → charge per line (Continue, error output), nothing failing: completed, 200, one charge per line', async () => {
		const body = { id: 'lo_a', lines: [{ id: 'lo_a:1' }, { id: 'lo_a:2' }] };
		const data = workflow('wfr9-lines-ok', {
			nodes: [linesOut(), once('Charge Line', '', 0, { onError: 'continueErrorOutput' })],
			connections: { Lines: { main: [link('Charge Line')] } },
			heads: ['Lines'],
		});
		const { answers, lost } = await provider(data, [body]);
		expect({ answers, lost, lines: ['lo_a:1', 'lo_a:2'].map(effectsFor) }).toEqual({ answers: [200], lost: [], lines: [1, 1] });
	});
});

/* (b) Reserve, several events: n8n's pure transforms at their default On Error before the charge ------------- */

describeWithN8n('several events: a pure transform node at Stop Workflow before any effect', () => {
	// The control: Edit Fields (a node that reshapes items) at Stop Workflow before the charge is accepted.
	it('Edit Fields (Stop Workflow) → charge (Continue, error output) failing once for the 2nd of two: accepted, one charge each', async () => {
		const ids = ['ef_a', 'ef_b'];
		const data = workflow('wfr9-editfields', {
			nodes: [setField('Transform', 'tier', 'gold', 0), once('Charge ef', 'ef_b', 0, { onError: 'continueErrorOutput' })],
			connections: { Transform: { main: [link('Charge ef')] } },
			heads: ['Transform'],
		});
		const { answers, lost } = await provider(
			data,
			ids.map((id) => ({ id, created: '2024-05-01T10:00:00Z' })),
		);
		expect({ answers, lost, effects: ids.map(effectsFor) }).toEqual({ answers: [500, 200], lost: [], effects: [1, 1] });
	});

	// Date & Time, Crypto and Markdown act on nothing outside n8n, and before any effect their failure for one event
	// stops a run in which nothing was done: every key fails and the retry runs each event once. nodeKinds.ts counts
	// them among the nodes that reshape items (ROUTING_TYPES), so they are accepted at Stop Workflow before any effect.
	it.each(transforms)(
		'%s (Stop Workflow) → charge (Continue, error output) failing once for the 2nd of two: accepted, one charge each',
		async (_label, transform) => {
			const node = transform();
			const tag = node.type.split('.')[1];
			const ids = [`tf_${tag}_a`, `tf_${tag}_b`];
			const data = workflow(`wfr9-transform-${tag}`, {
				nodes: [node, once(`Charge ${tag}`, ids[1], 0, { onError: 'continueErrorOutput' })],
				connections: { Transform: { main: [link(`Charge ${tag}`)] } },
				heads: ['Transform'],
			});
			const bodies: Bodies = ids.map((id) => ({ id, created: '2024-05-01T10:00:00Z', note: '*paid*' }));
			const first = await deliver(data, bodies);
			expect(first.answer).not.toBe(503);
			const { lost } = await provider(data, bodies);
			expect({ lost, effects: ids.map(effectsFor) }).toEqual({ lost: [], effects: [1, 1] });
		},
	);

	it('Rename Keys, Limit, Sort (Stop Workflow) before the charge, two events, the 2nd failing once: accepted, one charge each', async () => {
		const ids = ['rk_a', 'rk_b'];
		const data = workflow('wfr9-rename-limit-sort', {
			nodes: [
				baseNode(
					'Rename',
					'renameKeys',
					1,
					{ keys: { key: [{ currentKey: 'body.note', newKey: 'body.memo' }] }, additionalOptions: {} },
					0,
					{
						onError: undefined,
					},
				),
				baseNode('First Ten', 'limit', 1, { maxItems: 10 }, 0, { onError: undefined }),
				baseNode(
					'By Id',
					'sort',
					1,
					{ type: 'simple', sortFieldsUi: { sortField: [{ fieldName: 'body.id', order: 'descending' }] }, options: {} },
					0,
					{
						onError: undefined,
					},
				),
				once('Charge rk', 'rk_b', 0, { onError: 'continueErrorOutput' }),
			],
			connections: {
				Rename: { main: [link('First Ten')] },
				'First Ten': { main: [link('By Id')] },
				'By Id': { main: [link('Charge rk')] },
			},
			heads: ['Rename'],
		});
		const { answers, lost } = await provider(
			data,
			ids.map((id) => ({ id, note: 'x' })),
		);
		expect({ answers, lost, effects: ids.map(effectsFor) }).toEqual({ answers: [500, 200], lost: [], effects: [1, 1] });
	});

	// A Code node (Run Once for All Items) that flattens every event's lines into new items (three from two events:
	// n8n-core pairs none of them), carrying no key, at Continue (regular output) as the refusal of a Code node at Stop
	// Workflow asks: line B:1's charge fails, the failure cannot be traced (trace.ts untracedFailure), and every key
	// fails. The retry charges A's two lines again.
	it.failing(
		'Code (All Items) flattening the lines of two events, no key kept → charge per line (Continue, error output) failing once for B:1: one charge per line',
		async () => {
			const bodies: Bodies = [
				{ id: 'fl_a', lines: [{ id: 'fl_a:1' }, { id: 'fl_a:2' }] },
				{ id: 'fl_b', lines: [{ id: 'fl_b:1' }] },
			];
			const data = workflow('wfr9-flatten', {
				nodes: [
					packageNode('Flatten', 'testCodeAll', { mode: 'lines' }, { onError: 'continueRegularOutput' }),
					once('Charge fl', 'fl_b:1', 0, { onError: 'continueErrorOutput' }),
				],
				connections: { Flatten: { main: [link('Charge fl')] } },
				heads: ['Flatten'],
			});
			const first = await deliver(data, bodies);
			if (first.answer === 503 && effectsFor('fl_a:1') === 0) return;
			const { lost } = await provider(data, bodies);
			expect({ lost, lines: ['fl_a:1', 'fl_a:2', 'fl_b:1'].map(effectsFor) }).toEqual({ lost: [], lines: [1, 1, 1] });
		},
	);
});

/* (c) Reserve → a sub-workflow from the database ------------------------------------------------------------ */

describeWithN8n('a sub-workflow from the database', () => {
	// Remove Duplicates across executions inside a sub-workflow from the database: wiring.ts dropsRetries reads the
	// step's nodes and the sub-workflows defined in them (firstIncludingInline), not one loaded by id. The first
	// delivery records the event as seen and its charge fails: key failed, 500. The retry's sub-execution drops the
	// event at Remove Duplicates, returns nothing, nothing failed: the key is completed and the provider gets 200,
	// never charged (lost). docs/templates.md names this only for a sub-workflow defined in the node.
	it.failing(
		'one event, sub (database): Remove Duplicates (previous executions, by event id) → charge failing once: refused, or charged once',
		async () => {
			const id = 'dbrd_a';
			deliveries.saveSubWorkflow(
				'sub-rt9-dedupe',
				[
					packageNode('Webhook', 'testWebhook'),
					baseNode(
						'Seen Before?',
						'removeDuplicates',
						2,
						{
							operation: 'removeItemsSeenInPreviousExecutions',
							logic: 'removeItemsWithAlreadySeenKeyValues',
							dedupeValue: '={{ $json.body.id }}',
							options: {},
						},
						0,
						{ onError: undefined },
					),
					once('Sub Charge rd', id, 0, { onError: undefined }),
				],
				{ Webhook: { main: [link('Seen Before?')] }, 'Seen Before?': { main: [link('Sub Charge rd')] } },
			);
			const data = workflow('wfr9-db-dedupe', {
				nodes: [executeSaved('sub-rt9-dedupe', 'continueRegularOutput')],
				connections: {},
				heads: ['Run Sub-workflow'],
			});
			const first = await deliver(data, [{ id }]);
			if (first.answer === 503 && effectsFor(id) === 0) return;
			const { lost } = await provider(data, [{ id }]);
			expect({ lost, effects: effectsFor(id) }).toEqual({ lost: [], effects: 1 });
		},
	);

	it('one event, sub (database): charge (Stop Workflow) failing once, then Date & Time: 500, the retry charges once', async () => {
		const id = 'dbdt_a';
		deliveries.saveSubWorkflow(
			'sub-rt9-date',
			[packageNode('Webhook', 'testWebhook'), once('Sub Charge dt', id, 0, { onError: undefined }), formatDate('Stamp')],
			{ Webhook: { main: [link('Sub Charge dt')] }, 'Sub Charge dt': { main: [link('Stamp')] } },
		);
		const data = workflow('wfr9-db-date', {
			nodes: [executeSaved('sub-rt9-date', 'continueRegularOutput')],
			connections: {},
			heads: ['Run Sub-workflow'],
		});
		const { answers, lost } = await provider(data, [{ id, created: '2024-05-01T10:00:00Z' }]);
		expect({ answers, lost, effects: effectsFor(id) }).toEqual({ answers: [500, 200], lost: [], effects: 1 });
	});
});

/* (d) The Idempotent Webhook trigger, one event per delivery, and with an Events Path -------------------------- */

describeWithN8n('the Idempotent Webhook trigger, one event per delivery', () => {
	const { provide, statuses: triggerStatuses } = inProcessTriggerShapes('one', n8nFolder);

	// As with Reserve: one event, its lines charged one by one, line 2 failing once. The key fails (the trigger's
	// Events Path is empty: eventsTogetherAfterTrigger is not asked) and the retry charges line 1 again.
	it.failing('Split Out lines → charge per line (Continue, error output) failing once for line 2: one charge per line', async () => {
		const body = { id: 'tl_a', lines: [{ id: 'tl_a:1' }, { id: 'tl_a:2' }] };
		const { answers } = await provide(body, {
			nodes: [linesOut(), once('Charge Line', 'tl_a:2', 0, { onError: 'continueErrorOutput' })],
			connections: { Lines: { main: [link('Charge Line')] } },
			heads: ['Lines'],
		});
		expect({
			last: answers[answers.length - 1],
			key: (await triggerStatuses(['tl_a']))[0],
			lines: ['tl_a:1', 'tl_a:2'].map(effectsFor),
		}).toEqual({
			last: 200,
			key: 'completed',
			lines: [1, 1],
		});
	});

	// A node after the charge at Stop Workflow fails (Date & Time given an unreadable date): the key fails, 500, and
	// every redelivery charges again, the date being as unreadable each time: four deliveries, four charges. Nothing
	// refuses a node that may fail after an effect with one event per run (wiring.ts checkEventsApart returns for
	// fewer than two events; the trigger asks eventsTogetherAfterTrigger only with an Events Path); docs/templates.md
	// accepts it "as any step that fails after its effect", the charge's own idempotency keeping it single.
	it.failing('charge → Date & Time (Stop Workflow) failing after it, the date unreadable: one charge', async () => {
		const id = 'td_a';
		const { answers } = await provide(
			{ id, created: 'not a date' },
			{
				nodes: [once('Charge td', '', 0, { onError: undefined }), formatDate('Stamp')],
				connections: { 'Charge td': { main: [link('Stamp')] } },
				heads: ['Charge td'],
			},
		);
		expect({ answers, charges: effectsFor(id) }).toEqual({ answers: [500, 200], charges: 1 });
	});

	it('Merge (combine by position): charge (Continue, error output unconnected) beside Edit Fields, failing once: 500, the retry charges once', async () => {
		const id = 'tm_a';
		const { answers } = await provide(
			{ id },
			{
				nodes: [
					once('Charge tm', id, 0, { onError: 'continueErrorOutput' }),
					setField('Tag', 'tier', 'gold', 100),
					baseNode('Join', 'merge', 3, { mode: 'combine', combineBy: 'combineByPosition', options: {} }, 0, { onError: undefined }),
				],
				connections: { 'Charge tm': { main: [toInput('Join', 0)] }, Tag: { main: [toInput('Join', 1)] } },
				heads: ['Charge tm', 'Tag'],
			},
		);
		expect({ answers, key: (await triggerStatuses([id]))[0], charges: effectsFor(id) }).toEqual({
			answers: [500, 200],
			key: 'completed',
			charges: 1,
		});
	});

	it('Merge (choose branch: input 2) after a charge at Continue (regular output) failing once: 500, the retry charges once', async () => {
		const id = 'tc_a';
		const { answers } = await provide(
			{ id },
			{
				nodes: [
					once('Charge tc', id, 0, { onError: 'continueRegularOutput' }),
					setField('Tag', 'tier', 'gold', 100),
					baseNode('Pick', 'merge', 3, { mode: 'chooseBranch', useDataOfInput: 2, options: {} }, 0, { onError: undefined }),
				],
				connections: { 'Charge tc': { main: [toInput('Pick', 0)] }, Tag: { main: [toInput('Pick', 1)] } },
				heads: ['Charge tc', 'Tag'],
			},
		);
		expect({ answers, key: (await triggerStatuses([id]))[0], charges: effectsFor(id) }).toEqual({
			answers: [500, 200],
			key: 'completed',
			charges: 1,
		});
	});

	it('Merge (append): charge (Stop Workflow) on one branch failing once, Edit Fields on the other: 500, the retry charges once', async () => {
		const id = 'ta_a';
		const { answers } = await provide(
			{ id },
			{
				nodes: [
					once('Charge ta', id, 0, { onError: undefined }),
					setField('Tag', 'tier', 'gold', 100),
					baseNode('Both', 'merge', 3, { mode: 'append' }, 0, { onError: undefined }),
				],
				connections: { 'Charge ta': { main: [toInput('Both', 0)] }, Tag: { main: [toInput('Both', 1)] } },
				heads: ['Charge ta', 'Tag'],
			},
		);
		expect({ answers, key: (await triggerStatuses([id]))[0], charges: effectsFor(id) }).toEqual({
			answers: [500, 200],
			key: 'completed',
			charges: 1,
		});
	});

	it('Compare Datasets (event vs. a lookup) → charge on "In A only" (Continue, error output) failing once: 500, the retry charges once', async () => {
		const id = 'tcd_a';
		const { answers } = await provide(
			{ id },
			{
				nodes: [
					setField('Event', 'eid', '={{ $json.body.id }}', 0),
					lookup('Known', '', 100, { onError: undefined }),
					setField('Known Ids', 'eid', 'someone-else', 100),
					baseNode('Compare', 'compareDatasets', 2.3, { mergeByFields: { values: [{ field1: 'eid', field2: 'eid' }] }, options: {} }, 0, {
						onError: undefined,
					}),
					once('Charge cd', id, 0, { onError: 'continueErrorOutput' }),
				],
				connections: {
					Event: { main: [toInput('Compare', 0)] },
					Known: { main: [link('Known Ids')] },
					'Known Ids': { main: [toInput('Compare', 1)] },
					Compare: { main: [link('Charge cd')] },
				},
				heads: ['Event', 'Known'],
			},
		);
		expect({ answers, key: (await triggerStatuses([id]))[0], charges: effectsFor(id) }).toEqual({
			answers: [500, 200],
			key: 'completed',
			charges: 1,
		});
	});

	it('charge → Code (All Items) returning no item: completed, 200, one charge', async () => {
		const id = 'tz_a';
		const { answers } = await provide(
			{ id },
			{
				nodes: [once('Charge tz', '', 0, { onError: undefined }), packageNode('Nothing', 'testCodeAll', { mode: 'zero' })],
				connections: { 'Charge tz': { main: [link('Nothing')] } },
				heads: ['Charge tz'],
			},
		);
		expect({ answers, key: (await triggerStatuses([id]))[0], charges: effectsFor(id) }).toEqual({
			answers: [200],
			key: 'completed',
			charges: 1,
		});
	});

	it('charge at Continue (error output) with Always Output Data, failing once: 500, the retry charges once', async () => {
		const id = 'tao_a';
		const { answers } = await provide(
			{ id },
			{
				nodes: [once('Charge tao', id, 0, { onError: 'continueErrorOutput', alwaysOutputData: true }), baseNode('After', 'noOp', 1, {}, 0)],
				connections: { 'Charge tao': { main: [link('After')] } },
				heads: ['Charge tao'],
			},
		);
		expect({ answers, key: (await triggerStatuses([id]))[0], charges: effectsFor(id) }).toEqual({
			answers: [500, 200],
			key: 'completed',
			charges: 1,
		});
	});

	it('a disabled Date & Time (an unreadable date) before the charge: passed through, completed, one charge', async () => {
		const id = 'tdis_a';
		const { answers } = await provide(
			{ id, created: 'not a date' },
			{
				nodes: [formatDate('Stamp', { disabled: true }), once('Charge tdis', '', 0, { onError: undefined })],
				connections: { Stamp: { main: [link('Charge tdis')] } },
				heads: ['Stamp'],
			},
		);
		expect({ answers, key: (await triggerStatuses([id]))[0], charges: effectsFor(id) }).toEqual({
			answers: [200],
			key: 'completed',
			charges: 1,
		});
	});
});

describeWithN8n('the Idempotent Webhook trigger with an Events Path', () => {
	const { provide, statuses: triggerStatuses } = inProcessTriggerShapes('events', n8nFolder, { eventsPath: 'body.events' });

	// Each line is paired to its event: B's key alone fails, A's line is charged once. B's first line was charged before
	// its second failed, and the retry, which runs B's whole step, charges it again (B:1 twice).
	it.failing(
		'two events, Split Out lines → charge per line (Continue, error output) failing once for B:2: each line charged once',
		async () => {
			const events = [
				{ id: 'te_a', lines: [{ id: 'te_a:1' }] },
				{ id: 'te_b', lines: [{ id: 'te_b:1' }, { id: 'te_b:2' }] },
			];
			const { answers } = await provide(
				{ events },
				{
					nodes: [linesOut(), once('Charge Line', 'te_b:2', 0, { onError: 'continueErrorOutput' })],
					connections: { Lines: { main: [link('Charge Line')] } },
					heads: ['Lines'],
				},
			);
			expect({
				last: answers[answers.length - 1],
				keys: await triggerStatuses(['te_a', 'te_b']),
				lines: ['te_a:1', 'te_b:1', 'te_b:2'].map(effectsFor),
			}).toEqual({ last: 200, keys: ['completed', 'completed'], lines: [1, 1, 1] });
		},
	);

	// The Events Path's step judged at the trigger's first step (eventsTogetherAfterTrigger): a Date & Time at Stop
	// Workflow before any effect reshapes items and acts on nothing outside n8n (nodeKinds.ts ROUTING_TYPES): accepted.
	it('two events, Date & Time (Stop Workflow) → charge (Continue, error output): accepted, one charge each', async () => {
		const events = [
			{ id: 'tdt_a', created: '2024-05-01T10:00:00Z' },
			{ id: 'tdt_b', created: '2024-05-01T11:00:00Z' },
		];
		const { answers } = await provide(
			{ events },
			{
				nodes: [formatDate('Stamp'), once('Charge tdt', '', 0, { onError: 'continueErrorOutput' })],
				connections: { Stamp: { main: [link('Charge tdt')] } },
				heads: ['Stamp'],
			},
		);
		expect({ answers, charges: ['tdt_a', 'tdt_b'].map(effectsFor) }).toEqual({ answers: [200], charges: [1, 1] });
	});

	// Edit Fields at Stop Workflow on a branch beside the charge, the same events on both: were it to fail for one event
	// after the charge ran for both, the run would stop and the retry charge the other again. Refused at the trigger's
	// first step (a real n8n refuses it at publish): 500, nothing charged.
	it('two events, Merge (combine by position) of the charge (Continue, error output) and Edit Fields (Stop Workflow): refused, nothing charged', async () => {
		const events = [{ id: 'tem_a' }, { id: 'tem_b' }];
		const { answers } = await provide(
			{ events },
			{
				nodes: [
					once('Charge tem', 'tem_b', 0, { onError: 'continueErrorOutput' }),
					setField('Tag', 'tier', 'gold', 100),
					baseNode('Join', 'merge', 3, { mode: 'combine', combineBy: 'combineByPosition', options: {} }, 0, { onError: undefined }),
				],
				connections: { 'Charge tem': { main: [toInput('Join', 0)] }, Tag: { main: [toInput('Join', 1)] } },
				heads: ['Charge tem', 'Tag'],
			},
		);
		expect({ refused: answers.every((answer) => answer === 500), charges: ['tem_a', 'tem_b'].map(effectsFor) }).toEqual({
			refused: true,
			charges: [0, 0],
		});
	});
});
