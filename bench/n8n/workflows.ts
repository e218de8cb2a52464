// The workflows `npm run bench:n8n` imports into a real n8n. Every flow of one comparison differs
// only in the node under test, so a difference in time is that node's cost.
import fs from 'node:fs';
import path from 'node:path';

import { TEMPLATE_CREDENTIALS } from '../../test/support/stack/n8nStack';

/** A credential reference of a workflow node: its type → id and name. */
type CredentialRefs = Record<string, { id: string; name: string }>;

/** A node of a workflow as n8n imports it. */
export interface WorkflowNode {
	id: string;
	name: string;
	type: string;
	typeVersion: number;
	position: [number, number];
	parameters: Record<string, unknown>;
	credentials?: CredentialRefs;
	webhookId?: string;
	onError?: string;
}

type Link = { node: string; type: 'main'; index: number };
type Connections = Record<string, { main: Link[][] }>;

/** A workflow as n8n imports it. */
export type Workflow = {
	id: string;
	name: string;
	nodes: WorkflowNode[];
	connections: Connections;
	settings: Record<string, unknown>;
	pinData: Record<string, unknown>;
	active: boolean;
};

/** A flow of the overhead part: one workflow behind one webhook path. */
export interface OverheadFlow {
	id: string;
	path: string;
	label: string;
	/** The body each delivery carries: a small event, or a Stripe-sized one. */
	body?: 'stripe';
}

/** A flow of the batch part: one branch (its own webhook) of the batch workflow. */
export interface BatchFlow {
	id: string;
	path: string;
	label: string;
	kind: string;
	nodeName: string;
}

/** A flow of the cleanup part: one branch of the cleanup workflow, per store. */
export interface CleanupFlow {
	id: string;
	path: string;
	label: string;
	store: 'embedded' | 'postgres';
	nodeName: string;
}

/** What a trigger-part flow is: the Idempotent Webhook trigger, the webhook template it replaces, a bare webhook flow, or the floor. */
export type TriggerRole = 'trigger' | 'template' | 'bare' | 'floor';

interface FlowBase {
	id: string;
	path: string;
	label: string;
	key: string;
	store: 'embedded' | 'postgres' | null;
}
/** A shipped template, its trigger pointed at `path`. */
type TemplateFlow<Role extends string> = FlowBase & { role: Role; template: string; triggerType: string };
/** A flow of the trigger part: a shipped template, a bare Webhook → step → Respond flow, or the floor trigger. */
export type TriggerFlow = TemplateFlow<'trigger' | 'template'> | (FlowBase & { role: 'bare' }) | (FlowBase & { role: 'floor' });
/** A flow of the At Once part: the trigger template answering At Once, n8n's Webhook node answering Immediately, or the floor trigger. */
export type AtOnceFlow = TemplateFlow<'atOnce'> | (FlowBase & { role: 'immediately' }) | (FlowBase & { role: 'floor' });

const PKG = 'n8n-nodes-idempotency';
const IDEMPOTENCY_CREDENTIAL: CredentialRefs = {
	idempotencyPostgresApi: {
		id: TEMPLATE_CREDENTIALS.idempotency.id,
		name: TEMPLATE_CREDENTIALS.idempotency.name,
	},
};
// The same database and settings with Prepared Statements off: the statements go unnamed, to compare
// with named prepared statements (bench/n8n/run.ts imports it beside the template credentials).
export const UNNAMED_CREDENTIAL_DEF = {
	id: 'idempotencyPgU01',
	name: 'Idempotency Postgres (unnamed statements)',
	type: 'idempotencyPostgresApi',
};
const UNNAMED_CREDENTIAL: CredentialRefs = { idempotencyPostgresApi: { id: UNNAMED_CREDENTIAL_DEF.id, name: UNNAMED_CREDENTIAL_DEF.name } };
const BUSINESS_CREDENTIAL: CredentialRefs = {
	postgres: {
		id: TEMPLATE_CREDENTIALS.business.id,
		name: TEMPLATE_CREDENTIALS.business.name,
	},
};

/** The table of the per-item recipe (the hand-built seed: key + first_seen, ON CONFLICT DO NOTHING). */
export const RECIPE_TABLE_DDL = `CREATE TABLE IF NOT EXISTS bench_recipe_events (
	key text PRIMARY KEY,
	first_seen timestamptz NOT NULL DEFAULT now()
)`;

let counter = 0;
// Stable, valid UUIDs per build, so node ids and webhook ids never collide between flows.
function uuid(prefix: string): string {
	counter += 1;
	return `${prefix}-0000-4000-8000-${counter.toString(16).padStart(12, '0')}`;
}

/** One workflow node; every node of these flows is built here. */
function node({
	name,
	type,
	typeVersion = 1,
	x = 0,
	parameters,
	credentials,
}: {
	name: string;
	type: string;
	typeVersion?: number;
	x?: number;
	parameters: Record<string, unknown>;
	credentials?: CredentialRefs;
}): WorkflowNode {
	return {
		id: uuid('b0000001'),
		name,
		type,
		typeVersion,
		position: [x, 0],
		parameters,
		...(credentials ? { credentials } : {}),
	};
}

function webhook(pathName: string, { responseMode, responseData }: { responseMode: string; responseData?: string }): WorkflowNode {
	return {
		id: uuid('b0000001'),
		name: 'Webhook',
		type: 'n8n-nodes-base.webhook',
		typeVersion: 2.1,
		position: [0, 0],
		webhookId: uuid('b000a001'),
		parameters: {
			httpMethod: 'POST',
			path: pathName,
			responseMode,
			...(responseData ? { responseData } : {}),
			options: {},
		},
	};
}

// The Embedded store is the Store parameter of the nodes' version 2 (no credential); version 1,
// what the Postgres flows use, keeps Postgres without a Store parameter.
const EMBEDDED_VERSION = 2;

function reserveNode({
	mode,
	keySource = 'header',
	customKey,
	keyField,
	output,
	storePayload,
	credentials = IDEMPOTENCY_CREDENTIAL,
	store,
}: {
	mode: 'permanent' | 'lease';
	keySource?: string;
	customKey?: string;
	keyField?: string;
	output?: 'full';
	storePayload?: boolean;
	credentials?: CredentialRefs;
	store?: 'embedded';
}): WorkflowNode {
	const embedded = store === 'embedded';
	return node({
		name: 'Idempotency Reserve',
		type: `${PKG}.idempotencyReserve`,
		x: 220,
		...(embedded ? { typeVersion: EMBEDDED_VERSION } : {}),
		parameters: {
			...(embedded ? { store: 'embedded' } : {}),
			keySource,
			...(keySource === 'header' ? { headerName: 'idempotency-key' } : {}),
			...(keySource === 'custom' ? { customKey } : {}),
			...(keySource === 'field' ? { keyField } : {}),
			mode,
			...(mode === 'lease' ? { leaseSeconds: 300 } : {}),
			// No output option: Compact, the default; 'full' is the whole object.
			options: { ...(output ? { output } : {}), ...(storePayload ? { storePayload: true } : {}) },
		},
		...(embedded ? {} : { credentials }),
	});
}

// The template's business step: one INSERT per delivery into business_log.
function businessInsert(): WorkflowNode {
	return postgresQuery(
		'Postgres insert',
		440,
		'INSERT INTO business_log (event_key, event_type) VALUES ($1, $2) RETURNING id',
		"={{ [$('Webhook').item.json.headers['idempotency-key'], 'bench'] }}",
	);
}

// The stock Postgres node running one query per item.
function postgresQuery(name: string, x: number, query: string, queryReplacement: string): WorkflowNode {
	return node({
		name,
		type: 'n8n-nodes-base.postgres',
		typeVersion: 2.6,
		x,
		parameters: {
			operation: 'executeQuery',
			query,
			options: { queryReplacement, queryBatching: 'independently' },
		},
		credentials: BUSINESS_CREDENTIAL,
	});
}

// Key From Custom: the two expressions the templates used before 'Idempotency Reserve (Paired Item)'.
function complete({ pairedItem = false, store }: { pairedItem?: boolean; store?: 'embedded' } = {}): WorkflowNode {
	if (store === 'embedded') {
		return node({
			name: 'Mark Complete',
			type: `${PKG}.idempotencyKey`,
			typeVersion: EMBEDDED_VERSION,
			x: 660,
			parameters: { store: 'embedded', operation: 'complete', source: 'reserveNode', options: {} },
		});
	}
	return node({
		name: 'Mark Complete',
		type: `${PKG}.idempotencyKey`,
		x: 660,
		parameters: pairedItem
			? { operation: 'complete', source: 'reserveNode', options: {} }
			: {
					operation: 'complete',
					source: 'custom',
					key: "={{ $('Idempotency Reserve').item.json.idempotency.key }}",
					ownerToken: "={{ $('Idempotency Reserve').item.json.idempotency.ownerToken }}",
					options: {},
				},
		credentials: IDEMPOTENCY_CREDENTIAL,
	});
}

function respond(): WorkflowNode {
	return node({
		name: 'Respond',
		type: 'n8n-nodes-base.respondToWebhook',
		typeVersion: 1.5,
		x: 880,
		parameters: {
			respondWith: 'json',
			responseBody: '{"ok":true}',
			options: { responseCode: 200 },
		},
	});
}

const link = (node: string, index = 0): Link => ({ node, type: 'main', index });

function workflow(id: string, name: string, nodes: WorkflowNode[], connections: Connections): Workflow {
	return {
		id,
		name,
		nodes,
		connections,
		settings: { executionOrder: 'v1' },
		pinData: {},
		active: false,
	};
}

/**
 * Per-execution overhead: Webhook → Postgres insert → Respond, and the same with Reserve in front
 * (permanent; lease + Mark Complete). Every delivery carries a fresh Idempotency-Key header.
 */
export const OVERHEAD_FLOWS: OverheadFlow[] = [
	{
		id: 'BenchFlowBase001',
		path: 'bench-base',
		label: 'Webhook → Postgres insert → Respond (baseline)',
	},
	{
		id: 'BenchFlowPerm001',
		path: 'bench-permanent',
		label: '+ Reserve (permanent) in front',
	},
	{
		id: 'BenchFlowLease01',
		path: 'bench-lease',
		label: '+ Reserve (lease) and Mark Complete (Key From: Custom expressions)',
	},
	{
		id: 'BenchFlowLeaseP1',
		path: 'bench-lease-paired',
		label: '+ Reserve (lease) and Mark Complete (Key From: paired item)',
	},
	// The webhook template's settings (lease, paired item, Store Payload on) with a Stripe-sized
	// body, beside the same flow with Store Payload off: what storing the payload costs.
	{
		id: 'BenchFlowTmplOff',
		path: 'bench-template-nopayload',
		label: 'template-like (lease, paired item), Stripe-sized body, Store Payload off',
		body: 'stripe',
	},
	{
		id: 'BenchFlowTmplOn1',
		path: 'bench-template-payload',
		label: 'template-like (lease, paired item), Stripe-sized body, Store Payload on',
		body: 'stripe',
	},
	// What any one more database node costs: the hand-built recipe's reserve step (the stock
	// Postgres node, INSERT … ON CONFLICT DO NOTHING, its key from an expression) in front instead.
	{
		id: 'BenchFlowRecipe1',
		path: 'bench-recipe-insert',
		label: "reference: + the recipe's reserve step (stock Postgres node, ON CONFLICT DO NOTHING) in front",
	},
	// What one more node costs when it does nothing: n8n's own per-node floor (run data, saving,
	// scheduling), the part of any node's cost no node can remove.
	{
		id: 'BenchFlowNoOp001',
		path: 'bench-noop-node',
		label: "reference: + a No Operation node in front (n8n's per-node floor)",
	},
	// The templates' wiring: Settle After Business Step beside the insert, below it, in place of Mark Complete after it.
	{
		id: 'BenchFlowSettle1',
		path: 'bench-lease-settle',
		label: "+ Reserve (lease) and Settle After Business Step (the templates' wiring)",
	},
];

export function overheadWorkflows(): Workflow[] {
	const [base, permanent, lease, leasePaired, templateOff, templateOn, recipe, noOp, settle] = OVERHEAD_FLOWS;
	const baseNodes = [webhook(base.path, { responseMode: 'responseNode' }), businessInsert(), respond()];
	const permNodes = [
		webhook(permanent.path, { responseMode: 'responseNode' }),
		reserveNode({ mode: 'permanent' }),
		businessInsert(),
		respond(),
	];
	const permUnnamedNodes = [
		webhook(PERMANENT_UNNAMED_FLOW.path, { responseMode: 'responseNode' }),
		reserveNode({ mode: 'permanent', credentials: UNNAMED_CREDENTIAL }),
		businessInsert(),
		respond(),
	];
	const permConnections: Connections = {
		Webhook: { main: [[link('Idempotency Reserve')]] },
		// Duplicates are answered too (no delivery repeats a key, but no request may hang).
		'Idempotency Reserve': {
			main: [[link('Postgres insert')], [link('Respond')]],
		},
		'Postgres insert': { main: [[link('Respond')]] },
	};
	const leaseNodes = [
		webhook(lease.path, { responseMode: 'responseNode' }),
		reserveNode({ mode: 'lease' }),
		businessInsert(),
		complete(),
		respond(),
	];
	const leasePairedNodes = [
		webhook(leasePaired.path, { responseMode: 'responseNode' }),
		reserveNode({ mode: 'lease' }),
		businessInsert(),
		complete({ pairedItem: true }),
		respond(),
	];
	const templateNodes = (flow: OverheadFlow, storePayload: boolean) => [
		webhook(flow.path, { responseMode: 'responseNode' }),
		reserveNode({ mode: 'lease', storePayload }),
		businessInsert(),
		complete({ pairedItem: true }),
		respond(),
	];
	const leaseConnections: Connections = {
		Webhook: { main: [[link('Idempotency Reserve')]] },
		'Idempotency Reserve': {
			main: [[link('Postgres insert')], [link('Respond')], [link('Respond')]],
		},
		'Postgres insert': { main: [[link('Mark Complete')]] },
		'Mark Complete': { main: [[link('Respond')]] },
	};
	return [
		workflow(base.id, 'bench: baseline', baseNodes, {
			Webhook: { main: [[link('Postgres insert')]] },
			'Postgres insert': { main: [[link('Respond')]] },
		}),
		workflow(permanent.id, 'bench: Reserve (permanent)', permNodes, permConnections),
		workflow(PERMANENT_UNNAMED_FLOW.id, 'bench: Reserve (permanent), Prepared Statements off', permUnnamedNodes, permConnections),
		workflow(lease.id, 'bench: Reserve (lease) + Mark Complete (Custom)', leaseNodes, leaseConnections),
		workflow(leasePaired.id, 'bench: Reserve (lease) + Mark Complete (paired item)', leasePairedNodes, leaseConnections),
		workflow(templateOff.id, 'bench: template-like, Store Payload off', templateNodes(templateOff, false), leaseConnections),
		workflow(templateOn.id, 'bench: template-like, Store Payload on', templateNodes(templateOn, true), leaseConnections),
		workflow(
			recipe.id,
			"bench: the recipe's reserve step in front",
			[
				webhook(recipe.path, { responseMode: 'responseNode' }),
				postgresQuery(
					'Recipe reserve',
					220,
					'INSERT INTO bench_recipe_events (key) VALUES ($1) ON CONFLICT (key) DO NOTHING RETURNING key',
					"={{ [$('Webhook').item.json.headers['idempotency-key']] }}",
				),
				businessInsert(),
				respond(),
			],
			{
				Webhook: { main: [[link('Recipe reserve')]] },
				'Recipe reserve': { main: [[link('Postgres insert')]] },
				'Postgres insert': { main: [[link('Respond')]] },
			},
		),
		workflow(
			settle.id,
			'bench: Reserve (lease) + Settle After Business Step',
			[
				webhook(settle.path, { responseMode: 'responseNode' }),
				reserveNode({ mode: 'lease' }),
				{ ...businessInsert(), onError: 'continueErrorOutput' },
				{
					...node({
						name: 'Settle',
						type: `${PKG}.idempotencyKey`,
						x: 440,
						parameters: { operation: 'settle', options: {} },
						credentials: IDEMPOTENCY_CREDENTIAL,
					}),
					position: [440, 200],
				},
				respond(),
			],
			{
				Webhook: { main: [[link('Idempotency Reserve')]] },
				'Idempotency Reserve': { main: [[link('Postgres insert'), link('Settle')].flat(), [link('Respond')], [link('Respond')]] },
				Settle: { main: [[link('Respond')], [link('Respond')], [link('Respond')], [link('Respond')]] },
			},
		),
		workflow(
			noOp.id,
			'bench: a No Operation node in front',
			[
				webhook(noOp.path, { responseMode: 'responseNode' }),
				node({ name: 'No Operation', type: 'n8n-nodes-base.noOp', x: 220, parameters: {} }),
				businessInsert(),
				respond(),
			],
			{
				Webhook: { main: [[link('No Operation')]] },
				'No Operation': { main: [[link('Postgres insert')]] },
				'Postgres insert': { main: [[link('Respond')]] },
			},
		),
	];
}

/**
 * Batch: the body's `events` array becomes one item per event (Split Out, in n8n's main process),
 * then the node under test sees them all in one execution. The no-op flow is the baseline. All
 * batch flows live in one workflow (one webhook each; a call runs only its own branch), which
 * saves n8n a publish per flow at start.
 */
const BATCH_WORKFLOW_ID = 'BenchBatchFlows1';
export const BATCH_FLOWS: BatchFlow[] = [
	{ path: 'bench-batch-noop', label: 'no-op (baseline)', kind: 'noop' },
	{
		path: 'bench-batch-reserve',
		label: 'Idempotency Reserve (custom key {{ $json.id }})',
		kind: 'reserve',
	},
	{
		path: 'bench-batch-reserve-auto',
		label: 'Idempotency Reserve (key source: event id)',
		kind: 'reserveAuto',
	},
	{
		path: 'bench-batch-reserve-auto-full',
		label: 'Idempotency Reserve (key source: event id, Output: Full)',
		kind: 'reserveAutoFull',
	},
	{
		path: 'bench-batch-reserve-field',
		label: 'Idempotency Reserve (key source: field id)',
		kind: 'reserveField',
	},
	{
		path: 'bench-batch-postgres',
		label: 'stock Postgres node, INSERT … ON CONFLICT DO NOTHING per item',
		kind: 'postgres',
	},
	{
		path: 'bench-batch-embedded-field',
		label: 'Idempotency Reserve, Embedded (key source: field id)',
		kind: 'embeddedField',
	},
	{
		path: 'bench-batch-embedded-auto',
		label: 'Idempotency Reserve, Embedded (key source: event id)',
		kind: 'embeddedAuto',
	},
	{
		path: 'bench-batch-remove-dups',
		label: 'Remove Duplicates (seen in previous executions)',
		kind: 'removeDuplicates',
	},
].map((flow) => ({
	...flow,
	id: BATCH_WORKFLOW_ID,
	nodeName: `Under test (${flow.kind})`,
}));

function nodeUnderTest(kind: string): WorkflowNode {
	switch (kind) {
		case 'noop':
			return node({
				name: 'Under test',
				type: 'n8n-nodes-base.noOp',
				parameters: {},
			});
		case 'reserve':
			return reserveNode({
				mode: 'permanent',
				keySource: 'custom',
				customKey: '={{ $json.id }}',
			});
		case 'reserveAuto':
			return reserveNode({ mode: 'permanent', keySource: 'auto' });
		case 'reserveAutoFull':
			return reserveNode({ mode: 'permanent', keySource: 'auto', output: 'full' });
		case 'reserveField':
			return reserveNode({ mode: 'permanent', keySource: 'field', keyField: 'id' });
		case 'embeddedField':
			return reserveNode({ mode: 'permanent', keySource: 'field', keyField: 'id', store: 'embedded' });
		case 'embeddedAuto':
			return reserveNode({ mode: 'permanent', keySource: 'auto', store: 'embedded' });
		case 'postgres':
			return postgresQuery(
				'Under test',
				440,
				'INSERT INTO bench_recipe_events (key) VALUES ($1) ON CONFLICT (key) DO NOTHING RETURNING key',
				'={{ [$json.id] }}',
			);
		case 'removeDuplicates':
			return node({
				name: 'Under test',
				type: 'n8n-nodes-base.removeDuplicates',
				typeVersion: 2,
				parameters: {
					operation: 'removeItemsSeenInPreviousExecutions',
					logic: 'removeItemsWithAlreadySeenKeyValues',
					dedupeValue: '={{ $json.id }}',
					// The default history (10,000) makes a 10,000-item execution fail ("exceeds the maximum history size").
					options: { historySize: 1000000 },
				},
			});
		default:
			throw new Error(`unknown batch flow ${kind}`);
	}
}

export function batchWorkflows(): Workflow[] {
	const nodes: WorkflowNode[] = [];
	const connections: Connections = {};
	BATCH_FLOWS.forEach((flow, row) => {
		const y = row * 200;
		const trigger: WorkflowNode = {
			...webhook(flow.path, {
				responseMode: 'lastNode',
				responseData: 'noData',
			}),
			name: `Webhook (${flow.kind})`,
			position: [0, y],
		};
		const split: WorkflowNode = {
			id: uuid('b0000009'),
			name: `Split Out (${flow.kind})`,
			type: 'n8n-nodes-base.splitOut',
			typeVersion: 1,
			position: [220, y],
			parameters: { fieldToSplitOut: 'body.events', options: {} },
		};
		const underTest: WorkflowNode = {
			...nodeUnderTest(flow.kind),
			name: flow.nodeName,
			position: [440, y],
		};
		nodes.push(trigger, split, underTest);
		connections[trigger.name] = { main: [[link(split.name)]] };
		connections[split.name] = { main: [[link(underTest.name)]] };
	});
	return [workflow(BATCH_WORKFLOW_ID, 'bench: batch flows', nodes, connections)];
}

// The permanent flow again, its credential with Prepared Statements off: what naming the statements
// saves. Appended, so the flows above keep their places.
const PERMANENT_UNNAMED_FLOW: OverheadFlow = {
	id: 'BenchFlowPermU01',
	path: 'bench-permanent-unnamed',
	label: '+ Reserve (permanent) in front, Prepared Statements off (unnamed, as before)',
};
OVERHEAD_FLOWS.push(PERMANENT_UNNAMED_FLOW);

// The same flows on the Embedded store (a node:sqlite file in n8n's folder, no credential).
const EMBEDDED_PERMANENT_FLOW: OverheadFlow = {
	id: 'BenchFlowEmbP001',
	path: 'bench-embedded-permanent',
	label: '+ Reserve (Embedded, permanent) in front',
};
const EMBEDDED_LEASE_FLOW: OverheadFlow = {
	id: 'BenchFlowEmbL001',
	path: 'bench-embedded-lease',
	label: '+ Reserve (Embedded, lease) and Mark Complete (Key From: paired item)',
};
OVERHEAD_FLOWS.push(EMBEDDED_PERMANENT_FLOW, EMBEDDED_LEASE_FLOW);

export function embeddedOverheadWorkflows(): Workflow[] {
	const permanentConnections: Connections = {
		Webhook: { main: [[link('Idempotency Reserve')]] },
		'Idempotency Reserve': { main: [[link('Postgres insert')], [link('Respond')]] },
		'Postgres insert': { main: [[link('Respond')]] },
	};
	const leaseConnections: Connections = {
		Webhook: { main: [[link('Idempotency Reserve')]] },
		'Idempotency Reserve': { main: [[link('Postgres insert')], [link('Respond')], [link('Respond')]] },
		'Postgres insert': { main: [[link('Mark Complete')]] },
		'Mark Complete': { main: [[link('Respond')]] },
	};
	return [
		workflow(
			EMBEDDED_PERMANENT_FLOW.id,
			'bench: Reserve (Embedded, permanent)',
			[
				webhook(EMBEDDED_PERMANENT_FLOW.path, { responseMode: 'responseNode' }),
				reserveNode({ mode: 'permanent', store: 'embedded' }),
				businessInsert(),
				respond(),
			],
			permanentConnections,
		),
		workflow(
			EMBEDDED_LEASE_FLOW.id,
			'bench: Reserve (Embedded, lease) + Mark Complete (paired item)',
			[
				webhook(EMBEDDED_LEASE_FLOW.path, { responseMode: 'responseNode' }),
				reserveNode({ mode: 'lease', store: 'embedded' }),
				businessInsert(),
				complete({ pairedItem: true, store: 'embedded' }),
				respond(),
			],
			leaseConnections,
		),
	];
}

/**
 * Delete Expired Keys (the node's defaults: 30 days, batches of 10,000; a time budget that lets it
 * finish) behind a webhook, one flow per store: what a scheduled cleanup does to n8n's event loop.
 */
const CLEANUP_WORKFLOW_ID = 'BenchCleanupFlow';
export const CLEANUP_FLOWS: CleanupFlow[] = (
	[
		{ path: 'bench-cleanup-embedded', label: 'Delete Expired Keys (Embedded)', store: 'embedded' },
		{ path: 'bench-cleanup-postgres', label: 'Delete Expired Keys (Postgres)', store: 'postgres' },
	] as const
).map((flow) => ({ ...flow, id: CLEANUP_WORKFLOW_ID, nodeName: `Delete Expired Keys (${flow.store})` }));

export function cleanupWorkflows(): Workflow[] {
	const nodes: WorkflowNode[] = [];
	const connections: Connections = {};
	CLEANUP_FLOWS.forEach((flow, row) => {
		const trigger: WorkflowNode = {
			...webhook(flow.path, { responseMode: 'lastNode', responseData: 'allEntries' }),
			name: `Webhook (${flow.store})`,
			position: [0, row * 200],
		};
		const embedded = flow.store === 'embedded';
		const cleanup: WorkflowNode = {
			...node({
				name: flow.nodeName,
				type: `${PKG}.idempotencyKey`,
				...(embedded ? { typeVersion: EMBEDDED_VERSION } : {}),
				x: 220,
				parameters: {
					...(embedded ? { store: 'embedded' } : {}),
					operation: 'cleanup',
					retentionDays: 30,
					batchSize: 10000,
					timeBudgetSeconds: 600,
				},
				...(embedded ? {} : { credentials: IDEMPOTENCY_CREDENTIAL }),
			}),
			position: [220, row * 200],
		};
		nodes.push(trigger, cleanup);
		connections[trigger.name] = { main: [[link(cleanup.name)]] };
	});
	return [workflow(CLEANUP_WORKFLOW_ID, 'bench: Delete Expired Keys', nodes, connections)];
}

/**
 * The Idempotent Webhook trigger beside what it replaces, on each store and the same business step
 * (an HTTP call to the benchmark's API): the shipped templates as a user imports them, only the
 * path, the webhook id and the API's URL changed (the webhook template on Postgres is the embedded
 * one with Store: Postgres on Reserve and Settle); a bare Webhook → step → Respond to Webhook flow
 * that checks nothing (what the same step costs with no idempotency at all, new events only); and
 * the floor, a trigger of its own package (bench/n8n/floor-trigger/) that answers `{}` in webhook()
 * and starts no execution.
 */
export const FLOOR_PACKAGE_DIR = path.join(__dirname, 'floor-trigger');
const FLOOR_FLOW: FlowBase & { role: 'floor' } = {
	key: 'floor',
	role: 'floor',
	store: null,
	id: 'BenchFloor000001',
	path: 'bench-floor',
	label: 'floor: a trigger that answers {} in webhook()',
};
export const TRIGGER_FLOWS: TriggerFlow[] = [
	{
		key: 'trigger',
		role: 'trigger',
		store: 'embedded',
		id: 'BenchTrigger0001',
		path: 'bench-trigger',
		label: 'Idempotent Webhook trigger, Embedded (idempotent-webhook-trigger.json)',
		template: 'idempotent-webhook-trigger.json',
		triggerType: `${PKG}.idempotentWebhook`,
	},
	{
		key: 'template',
		role: 'template',
		store: 'embedded',
		id: 'BenchTemplate001',
		path: 'bench-template',
		label: 'webhook template, Embedded: Webhook → Verify → Reserve → Settle (idempotent-webhook-embedded.json)',
		template: 'idempotent-webhook-embedded.json',
		triggerType: 'n8n-nodes-base.webhook',
	},
	{
		key: 'triggerPostgres',
		role: 'trigger',
		store: 'postgres',
		id: 'BenchTriggerPg01',
		path: 'bench-trigger-postgres',
		label: 'Idempotent Webhook trigger, Postgres (idempotent-webhook-trigger-postgres.json)',
		template: 'idempotent-webhook-trigger-postgres.json',
		triggerType: `${PKG}.idempotentWebhook`,
	},
	{
		key: 'templatePostgres',
		role: 'template',
		store: 'postgres',
		id: 'BenchTemplatePg1',
		path: 'bench-template-postgres',
		label: 'webhook template, Postgres: the same with Store: Postgres on Reserve and Settle',
		template: 'idempotent-webhook-embedded.json',
		triggerType: 'n8n-nodes-base.webhook',
	},
	{
		key: 'bare',
		role: 'bare',
		store: null,
		id: 'BenchBareHook001',
		path: 'bench-bare',
		label: 'bare: Webhook → the same step → Respond to Webhook (no check, no key)',
	},
	FLOOR_FLOW,
];

/**
 * The At Once part: the trigger template answering At Once (the trigger's newest version, Respond:
 * At Once, its business step given 30 s, as a user sets it for an API that takes 10 s), beside
 * n8n's own answer at once (its Webhook node, Respond: Immediately, then the same step: what users
 * build today, which loses a failed run) and the floor.
 */
export const AT_ONCE_FLOWS: AtOnceFlow[] = [
	{
		key: 'atOnce',
		role: 'atOnce',
		store: 'embedded',
		id: 'BenchAtOnce00001',
		path: 'bench-at-once',
		label: 'Idempotent Webhook trigger, Respond: At Once (idempotent-webhook-trigger.json)',
		template: 'idempotent-webhook-trigger.json',
		triggerType: `${PKG}.idempotentWebhook`,
	},
	{
		key: 'immediately',
		role: 'immediately',
		store: null,
		id: 'BenchImmediate01',
		path: 'bench-immediately',
		label: "n8n's Webhook node, Respond: Immediately, then the same step",
	},
	FLOOR_FLOW,
];
/** The key the Immediately flow's step sends the API (it has no idempotency key of its own). */
export const IMMEDIATELY_KEY_PREFIX = 'immediately:';
const AT_ONCE_TRIGGER_VERSION = 3;
/** The At Once part's step timeout: what a user sets for an API that takes 10 s. */
const AT_ONCE_STEP_TIMEOUT_MS = 30_000;
/**
 * The trigger part's step timeout. The copies-in-progress kind holds each first delivery's call until
 * all its copies are answered: on a busy machine that outlasts the template's 10 s, so the step waits
 * up to two minutes (in every flow of the part alike).
 */
const TRIGGER_STEP_TIMEOUT_MS = 120_000;

/** The business step of the trigger flows: the templates' HTTP call to "your API". */
const BUSINESS_STEP = 'Business Step (call your API)';

/** The workflows of `flows` (the trigger part's unless given), each published on its flow's path. */
export function triggerWorkflows({
	apiUrl,
	flows = TRIGGER_FLOWS,
}: {
	apiUrl: string;
	flows?: ReadonlyArray<TriggerFlow | AtOnceFlow>;
}): Workflow[] {
	return flows.map((flow) => {
		if (flow.role === 'floor') {
			const floor = {
				...node({ name: 'Bench Floor Trigger', type: 'n8n-nodes-bench-floor.benchFloorTrigger', parameters: { path: flow.path } }),
				webhookId: uuid('b000a001'),
			};
			return workflow(flow.id, `bench: ${flow.label}`, [floor], {});
		}
		if (flow.role === 'bare') return bareWorkflow(flow, apiUrl);
		if (flow.role === 'immediately') return immediatelyWorkflow(flow, apiUrl);
		const template = readTemplate(flow.template);
		const atOnce = flow.role === 'atOnce';
		const timeoutMs = atOnce ? AT_ONCE_STEP_TIMEOUT_MS : TRIGGER_STEP_TIMEOUT_MS;
		const toPostgres = flow.role === 'template' && flow.store === 'postgres';
		const nodes = template.nodes.map((n) => {
			if (n.type === flow.triggerType) {
				const parameters: Record<string, unknown> = { ...n.parameters, path: flow.path };
				if (!atOnce) return { ...n, webhookId: uuid('b000a001'), parameters };
				// Version 2 on has no Mode (a lease always).
				delete parameters.mode;
				return {
					...n,
					typeVersion: AT_ONCE_TRIGGER_VERSION,
					webhookId: uuid('b000a001'),
					parameters: { ...parameters, respond: 'atOnce' },
				};
			}
			if (n.name === BUSINESS_STEP) return { ...n, parameters: stepParameters(n, apiUrl, timeoutMs) };
			if (toPostgres && n.parameters.store === 'embedded')
				return { ...n, parameters: { ...n.parameters, store: 'postgres' }, credentials: { ...n.credentials, ...IDEMPOTENCY_CREDENTIAL } };
			return n;
		});
		if (!nodes.some((n) => n.parameters.path === flow.path))
			throw new Error(`${flow.template}: no ${flow.triggerType} node to point at ${flow.path}`);
		if (toPostgres && !nodes.some((n) => n.parameters.store === 'postgres'))
			throw new Error(`${flow.template}: no node to move to Postgres`);
		return {
			...workflow(flow.id, `bench: ${flow.label}`, nodes, template.connections),
			settings: template.settings ?? { executionOrder: 'v1' },
		};
	});
}

/** The step's parameters, pointed at the benchmark's API, waiting up to `timeoutMs` for its answer. */
function stepParameters(step: WorkflowNode, apiUrl: string, timeoutMs: number): WorkflowNode['parameters'] {
	const options = (step.parameters.options ?? {}) as Record<string, unknown>;
	return { ...step.parameters, url: apiUrl, options: { ...options, timeout: timeoutMs } };
}

function readTemplate(file: string): { nodes: WorkflowNode[]; connections: Connections; settings?: Record<string, unknown> } {
	return JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'templates', file), 'utf8')) as {
		nodes: WorkflowNode[];
		connections: Connections;
		settings?: Record<string, unknown>;
	};
}

/** Webhook (Respond: Using Respond to Webhook Node) → the templates' step, keyed by the event's id → Respond 200. */
function bareWorkflow(flow: TriggerFlow, apiUrl: string): Workflow {
	const step = readTemplate('idempotent-webhook-embedded.json').nodes.find((n) => n.name === BUSINESS_STEP);
	if (!step) throw new Error(`the webhook template has no node named ${BUSINESS_STEP}`);
	const hook: WorkflowNode = { ...webhook(flow.path, { responseMode: 'responseNode' }), name: 'Webhook' };
	const call: WorkflowNode = {
		...step,
		id: uuid('b0000001'),
		position: [220, 0],
		parameters: {
			...stepParameters(step, apiUrl, TRIGGER_STEP_TIMEOUT_MS),
			headerParameters: { parameters: [{ name: 'Idempotency-Key', value: '={{ $json.body.id }}' }] },
			jsonBody: '={{ JSON.stringify({ eventKey: $json.body.id, type: $json.body.type ?? null }) }}',
		},
	};
	const answer = node({
		name: 'Respond 200',
		type: 'n8n-nodes-base.respondToWebhook',
		typeVersion: 1.5,
		x: 440,
		parameters: { respondWith: 'json', responseBody: '{"received":true}', options: { responseCode: 200 } },
	});
	return workflow(flow.id, `bench: ${flow.label}`, [hook, call, answer], {
		Webhook: { main: [[link(BUSINESS_STEP)]] },
		[BUSINESS_STEP]: { main: [[link('Respond 200')]] },
	});
}

/** The batch flows that reserve keys in Postgres (their reserved keys are counted after each run). */
export const RESERVE_KINDS = ['reserve', 'reserveAuto', 'reserveAutoFull', 'reserveField'];
/** The batch flows that reserve keys in the embedded file (their New output is counted after each run). */
export const EMBEDDED_KINDS = ['embeddedField', 'embeddedAuto'];

/** n8n's Webhook node answering Immediately, then the trigger template's business step (30 s timeout), keyed by the event id. */
function immediatelyWorkflow(flow: AtOnceFlow, apiUrl: string): Workflow {
	const business = readTemplate('idempotent-webhook-trigger.json').nodes.find((n) => n.name === BUSINESS_STEP);
	if (!business) throw new Error('idempotent-webhook-trigger.json: no business step');
	const key = `={{ '${IMMEDIATELY_KEY_PREFIX}' + $json.body.id }}`;
	const step: WorkflowNode = {
		...business,
		position: [220, 0],
		parameters: {
			...stepParameters(business, apiUrl, AT_ONCE_STEP_TIMEOUT_MS),
			headerParameters: { parameters: [{ name: 'Idempotency-Key', value: key }] },
			jsonBody: `={{ JSON.stringify({ eventKey: '${IMMEDIATELY_KEY_PREFIX}' + $json.body.id, type: $json.body.type ?? null }) }}`,
		},
	};
	return workflow(flow.id, `bench: ${flow.label}`, [webhook(flow.path, { responseMode: 'onReceived' }), step], {
		Webhook: { main: [[link(step.name)]] },
	});
}
