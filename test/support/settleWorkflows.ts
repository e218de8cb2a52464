import {
	NodeConnectionTypes,
	type IDataObject,
	type IConnections,
	type INode,
	type INodeParameters,
	type IRun,
	type IRunExecutionData,
	type IWorkflowBase,
} from 'n8n-workflow';
import type { Pool } from 'pg';

import { webhookItem } from './fakeExecuteFunctions';
import {
	CREDENTIAL_UP,
	executeInProcess,
	inProcessWorkflow,
	packageNode,
	resumeInProcess,
	webhookAnswer,
	type EngineBase,
} from './n8nEngine';

/*
 * The webhook template's shape around a business step, for n8n-core's own engine: Webhook →
 * Idempotency Reserve → the step, Settle After Business Step beside it (or after it), and a stand-in
 * Respond node on every output. The nodes sit where templates/idempotent-webhook.json puts them: the
 * step and Settle above Reserve's other outputs' answers, so that n8n's v1 order runs them first.
 */

export const link = (...names: string[]) => names.map((name) => ({ node: name, type: NodeConnectionTypes.Main, index: 0 }));
export const toInput = (name: string, index: number) => [{ node: name, type: NodeConnectionTypes.Main, index }];

/**
 * One of n8n-nodes-base's nodes. Routing nodes continue on error (regular output), a wiring a
 * position-based Settle accepted: each row shows what happens to the key, not a refusal.
 */
export function baseNode(
	name: string,
	type: string,
	typeVersion: number,
	parameters: INodeParameters,
	y: number,
	extra: Partial<INode> = {},
): INode {
	return {
		id: name,
		name,
		type: `n8n-nodes-base.${type}`,
		typeVersion,
		position: [400, y],
		parameters,
		onError: 'continueRegularOutput',
		...extra,
	};
}

/** The test's business effect (test/support/n8nBaseNodes.ts), one per item. */
export function effect(name: string, parameters: INodeParameters, y: number, extra: Partial<INode> = {}): INode {
	return packageNode(name, 'testEffect', parameters, { position: [400, y], ...extra });
}

/** If: true when the event's body has `skip: true` (or another field set to true). */
/** A business effect per item (TestEffectOnce) that fails once for the events named in `failOnce` (comma-separated). */
export const once = (name: string, failOnce: string, y: number, extra: Partial<INode> = {}) =>
	packageNode(name, 'testEffectOnce', { failOnce }, { position: [400, y], ...extra });
/** The same without an effect (a lookup, an enrichment). */
export const lookup = (name: string, failOnce: string, y: number, extra: Partial<INode> = {}) =>
	packageNode(name, 'testEffectOnce', { failOnce, noEffect: true }, { position: [400, y], ...extra });

/** n8n's Switch in Expression mode: the output is the event's `route` field (0, 1, 2). */
export const routeSwitch = (name: string, y: number, outputs = 3, extra: Partial<INode> = {}) =>
	baseNode(name, 'switch', 3.2, { mode: 'expression', numberOutputs: outputs, output: '={{ $json.body.route ?? 0 }}' }, y, {
		onError: undefined,
		...extra,
	});

/** A delivery's events, one body per id. */
export const eventBodies = (ids: string[]) => ids.map((id) => ({ id }));

/** Edit Fields (3.4) keeping the other fields and setting one. */
export const setField = (name: string, field: string, value: string, y: number, extra: Partial<INode> = {}) =>
	baseNode(
		name,
		'set',
		3.4,
		{
			mode: 'manual',
			assignments: { assignments: [{ id: 'f', name: field, value, type: 'string' }] },
			includeOtherFields: true,
			options: {},
		},
		y,
		{ onError: undefined, ...extra },
	);

/** Edit Fields (3.4) at its defaults: only `body` kept, the `idempotency` field dropped. */
export const keepOnlyBody = (name: string, y = 0) =>
	baseNode(
		name,
		'set',
		3.4,
		{ mode: 'manual', assignments: { assignments: [{ id: 'b', name: 'body', value: '={{ $json.body }}', type: 'object' }] }, options: {} },
		y,
		{ onError: undefined },
	);

/** A sub-workflow for Execute Workflow's Source "Define Below": `start` (a trigger stand-in named Webhook unless given), then `nodes`. */
export const inlineSubWorkflow = (
	nodes: INode[],
	connections: Shape['connections'],
	start: INode = packageNode('Webhook', 'testWebhook'),
) => JSON.stringify({ nodes: [start, ...nodes], connections });

/** Execute Workflow (1.3) running a sub-workflow defined in the node, waiting for it. */
export const executeInline = (json: string, onError: INode['onError'], mode: 'once' | 'each' = 'once', name = 'Run Sub-workflow') =>
	baseNode(name, 'executeWorkflow', 1.3, { source: 'parameter', workflowJson: json, mode, options: { waitForSubWorkflow: true } }, 0, {
		onError,
	});

/** Execute Workflow (1.3) loading a saved sub-workflow by id (Source "Database"; deliveries.saveSubWorkflow), waiting for it. */
export const executeSaved = (id: string, onError: INode['onError'], mode: 'once' | 'each' = 'once') =>
	baseNode(
		'Run Sub-workflow',
		'executeWorkflow',
		1.3,
		{ source: 'database', workflowId: { __rl: true, mode: 'id', value: id }, mode, options: { waitForSubWorkflow: true } },
		0,
		{ onError },
	);

/** n8n's own "When Executed by Another Workflow" trigger (1.1), named Webhook, its inputs defined (n8n's default for a new one): only `body`. */
export const definedInputsTrigger = (): INode => ({
	id: 'Webhook',
	name: 'Webhook',
	type: 'n8n-nodes-base.executeWorkflowTrigger',
	typeVersion: 1.1,
	position: [0, 0],
	parameters: { inputSource: 'workflowInputs', workflowInputs: { values: [{ name: 'body', type: 'any' }] } },
});

/**
 * The events joined with a lookup by Merge's SQL Query mode (Merge `version`), then a charge at
 * Continue (using error output) that fails once for `failOnce`: Tag gives each event an `eid`
 * (keeping its other fields, the key among them), Plans a row per event with only `eid` and `tier`.
 */
export function mergeSqlShape(tag: string, version: number, failOnce: string, query: string): Shape {
	const fields = (name: string, assignments: Array<[string, string]>, includeOtherFields: boolean, y: number) =>
		baseNode(
			name,
			'set',
			3.4,
			{
				mode: 'manual',
				assignments: { assignments: assignments.map(([field, value], index) => ({ id: `f${index}`, name: field, value, type: 'string' })) },
				includeOtherFields,
				options: {},
			},
			y,
			{ onError: undefined },
		);
	return {
		nodes: [
			fields('Tag', [['eid', '={{ $json.body.id }}']], true, 0),
			fields(
				'Plans',
				[
					['eid', '={{ $json.body.id }}'],
					['tier', 'gold'],
				],
				false,
				100,
			),
			baseNode('Join', 'merge', version, { mode: 'combineBySql', query, options: {} }, 0, { onError: undefined }),
			once(`Charge ${tag}`, failOnce, 0, { onError: 'continueErrorOutput' }),
		],
		connections: {
			Tag: { main: [toInput('Join', 0)] },
			Plans: { main: [toInput('Join', 1)] },
			Join: { main: [link(`Charge ${tag}`)] },
		},
		heads: ['Tag', 'Plans'],
	};
}

export function skipIf(name: string, y: number, field = 'skip'): INode {
	return baseNode(
		name,
		'if',
		2,
		{
			conditions: {
				options: { caseSensitive: true, leftValue: '', typeValidation: 'loose' },
				conditions: [
					{
						id: 'c1',
						leftValue: `={{ $json.body.${field} }}`,
						rightValue: '',
						operator: { type: 'boolean', operation: 'true', singleValue: true },
					},
				],
				combinator: 'and',
			},
			looseTypeValidation: true,
		},
		y,
		// n8n's default: at Continue an If takes a condition it cannot evaluate as false, and that is refused.
		{ onError: undefined },
	);
}

const ANSWER_NODES = [
	{ name: 'Respond 200 (completed)', status: 200 },
	{ name: 'Respond 500 (failed)', status: 500 },
	{ name: 'Respond 200 (completion refused)', status: 200 },
	{ name: 'Respond 503 (not settled)', status: 503 },
];

export interface Shape {
	/** The business step's nodes and their connections (from "New" to their first nodes, via `heads`). */
	nodes: INode[];
	connections: IConnections;
	heads: string[];
	/** Beside the step on Reserve's New output (the template's wiring), or after the named node (its first output). */
	settleAfter?: string;
	/** Settle's canvas position (y): the templates place it below the step (240). */
	settleY?: number;
	/** Nodes on Reserve's Duplicate output. */
	duplicateHeads?: string[];
}

/** The workflow around `shape`, its keys in `schema`.processed_events. */
export function settleWorkflow(schema: string, id: string, shape: Shape): IWorkflowBase {
	const table = { schemaName: schema, tableName: 'processed_events' };
	const credentials = { idempotencyPostgresApi: { id: CREDENTIAL_UP, name: 'Idempotency Postgres' } };
	const nodes: INode[] = [
		packageNode('Webhook', 'testWebhook'),
		packageNode(
			'Reserve',
			'idempotencyReserve',
			{ keySource: 'auto', mode: 'lease', leaseSeconds: 300, options: { ...table, storePayload: true } },
			{ credentials, onError: 'continueRegularOutput' },
		),
		packageNode(
			'Settle',
			'idempotencyKey',
			{ operation: 'settle', responseJson: '={{ JSON.stringify({ stored: true }) }}', options: table },
			{ credentials, position: [700, shape.settleY ?? 240] },
		),
		// Completed's answer uppermost: n8n runs a node's children top to bottom.
		...ANSWER_NODES.map(({ name, status }, index) => packageNode(name, 'testStep', { status }, { position: [980, 120 + index * 160] })),
		packageNode('Respond 200 (duplicate)', 'testStep', { status: 200 }, { position: [700, 560] }),
		packageNode('Respond 409 (in progress)', 'testStep', { status: 409 }, { position: [700, 720] }),
		packageNode('Respond 503 (not reserved)', 'testStep', { status: 503 }, { position: [700, 880] }),
		...shape.nodes,
	];
	const beside = shape.settleAfter === undefined;
	const connections: IConnections = {
		Webhook: { main: [link('Reserve')] },
		Reserve: {
			main: [
				link(...shape.heads, ...(beside ? ['Settle'] : [])),
				link(...(shape.duplicateHeads ?? []), 'Respond 200 (duplicate)'),
				link('Respond 409 (in progress)'),
				link('Respond 503 (not reserved)'),
			],
		},
		Settle: { main: ANSWER_NODES.map(({ name }) => link(name)) },
		...shape.connections,
	};
	if (!beside) {
		const after = shape.settleAfter as string;
		connections[after] = {
			main: [[...(connections[after]?.main?.[0] ?? []), ...link('Settle')], ...(connections[after]?.main?.slice(1) ?? [])],
		};
	}
	return inProcessWorkflow(id, nodes, connections);
}

export interface Delivery {
	executionId: string;
	run: IRun;
	/** What the sender got: the first answer sent (n8n keeps the first), else n8n's own. */
	answer: number | undefined;
}

export const is2xx = (answer: number | undefined) => answer !== undefined && answer >= 200 && answer < 300;

/** Runs `run` as a queue-mode process would (EXECUTIONS_MODE=queue), then puts the mode back. */
export async function withQueueMode<T>(run: () => Promise<T>): Promise<T> {
	const mode = process.env.EXECUTIONS_MODE;
	process.env.EXECUTIONS_MODE = 'queue';
	try {
		return await run();
	} finally {
		if (mode === undefined) delete process.env.EXECUTIONS_MODE;
		else process.env.EXECUTIONS_MODE = mode;
	}
}

/** Each key's status in the test schema's processed_events (undefined: no row), by event id; `db` is read when asked. */
export function keyStatesIn(db: { readonly pool: Pool; readonly schema: string }) {
	const keyState = async (id: string): Promise<{ status: string; last_error: string | null } | undefined> =>
		(await db.pool.query(`select status, last_error from ${db.schema}.processed_events where key = $1`, [`evt:${id}`])).rows[0];
	const statuses = async (ids: string[]): Promise<Array<string | undefined>> =>
		await Promise.all(ids.map(async (id) => (await keyState(id))?.status));
	return { keyState, statuses };
}

/** Deliveries run in-process on `engine()`, their execution ids prefixed with `prefix`. */
export function inProcessDeliveries(prefix: string, engine: () => EngineBase) {
	let executions = 0;
	// Sub-workflows an Execute Workflow node loads by id (Source: Database), as n8n loads them from its database.
	const savedSubWorkflows = new Map<string, { nodes: INode[]; connections: IConnections }>();
	const deliveries = {
		/** Saves a sub-workflow for Execute Workflow's Source "Database" (runSubWorkflowsInProcess runs it). */
		saveSubWorkflow(id: string, nodes: INode[], connections: IConnections): void {
			savedSubWorkflows.set(id, { nodes, connections });
		},
		/** One delivery of `bodies`, each an item of n8n's Webhook node with the request's `headers`. */
		async deliver(data: IWorkflowBase, bodies: unknown[], headers: IDataObject = {}): Promise<Delivery> {
			executions += 1;
			const executionId = `${prefix}-${executions}`;
			const { run } = await executeInProcess(
				data,
				executionId,
				bodies.map((body) => webhookItem(body, headers)),
				engine(),
			);
			return { executionId, run, answer: webhookAnswer(executionId, run) };
		},
		/** The resumed execution, as n8n's wait tracker starts it once the Wait's time has come. */
		async resume(data: IWorkflowBase, waiting: Delivery): Promise<Delivery> {
			expect(waiting.run.status).toBe('waiting');
			const run = await resumeInProcess(data, waiting.executionId, waiting.run.data, engine());
			return { executionId: waiting.executionId, run, answer: webhookAnswer(waiting.executionId, run) };
		},
		/** Resumes while the execution waits; the delivery's answer is the first one sent. */
		async runToEnd(data: IWorkflowBase, delivery: Delivery): Promise<Delivery> {
			let current = delivery;
			for (let i = 0; i < 5 && current.run.status === 'waiting'; i++) current = await deliveries.resume(data, current);
			return current;
		},
		/**
		 * The provider: delivers, lets the wait tracker resume what waits, and redelivers the whole delivery
		 * while the answer is not 2xx. Records every 2xx given while one of the delivery's keys was not
		 * completed (the provider stops retrying: that event is lost).
		 */
		async provider(
			data: IWorkflowBase,
			bodies: Array<{ id: string } & Record<string, unknown>>,
			statuses: (ids: string[]) => Promise<Array<string | undefined>>,
			maxDeliveries = 6,
		): Promise<{ answers: Array<number | undefined>; lost: string[] }> {
			const answers: Array<number | undefined> = [];
			const lost: string[] = [];
			for (let attempt = 0; attempt < maxDeliveries; attempt++) {
				const ended = await deliveries.runToEnd(data, await deliveries.deliver(data, bodies));
				answers.push(ended.answer);
				if (is2xx(ended.answer)) {
					const states = await statuses(bodies.map((body) => body.id));
					bodies.forEach((body, index) => {
						if (states[index] !== 'completed')
							lost.push(`${body.id} (${states[index]}) after answer ${ended.answer} on delivery ${attempt + 1}`);
					});
					break;
				}
			}
			return { answers, lost };
		},
		/**
		 * Execute Workflow's sub-workflows (source: Parameter) run in-process on the engine, as n8n runs
		 * them; their records are kept, as n8n keeps them in its database, for Execute Workflow's "once"
		 * mode (it reads the sub-execution back to pair the items it returns) and the settlement.
		 */
		runSubWorkflowsInProcess(): void {
			// n8n saves each sub-execution's record and gives it back by id (getRunExecutionData, from its database: a copy).
			const records = new Map<string, IRunExecutionData>();
			const keep = (executionId: string, run: IRun) => records.set(executionId, JSON.parse(JSON.stringify(run.data)) as IRunExecutionData);
			engine().getRunExecutionData = async (executionId) => records.get(executionId);
			engine().executeWorkflow = async (workflowInfo, _additionalData, options) => {
				const code = (workflowInfo.code ?? savedSubWorkflows.get(String(workflowInfo.id))) as { nodes: INode[]; connections: IConnections };
				if (!code) throw new Error(`No sub-workflow ${String(workflowInfo.id)} saved`);
				executions += 1;
				const executionId = `${prefix}-sub-${executions}`;
				const child = executeInProcess(
					inProcessWorkflow(executionId, code.nodes, code.connections),
					executionId,
					options.inputData ?? [],
					engine(),
					{ parentExecution: options.parentExecution },
				);
				if (options.doNotWaitToFinish) {
					void child.then(({ run }) => keep(executionId, run)).catch(() => undefined);
					return { executionId, data: [null] };
				}
				const { run } = await child;
				keep(executionId, run);
				if (run.data.resultData.error) throw new Error(run.data.resultData.error.message);
				const last = run.data.resultData.lastNodeExecuted as string;
				return { executionId, data: run.data.resultData.runData[last]?.[0]?.data?.main ?? [null] };
			};
		},
	};
	return deliveries;
}
