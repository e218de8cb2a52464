import {
	NodeConnectionTypes,
	type INode,
	type INodeExecutionData,
	type INodeParameters,
	type IRun,
	type IWorkflowBase,
	type IWorkflowExecuteAdditionalData,
	type WorkflowExecuteMode,
} from 'n8n-workflow';

import { randomUUID } from 'node:crypto';

import { PostgresKeyStore } from '../../lib/store/postgres/stores';
import { decideWebhook } from '../../lib/webhook/decide';
import { connectionSettings, postgresSchemaFixture } from '../support/database';
import { webhookItem } from '../support/fakeExecuteFunctions';
import {
	credentialsHelper,
	engineBase,
	itemsAt,
	PACKAGE,
	packageNode,
	inProcessWorkflow,
	runWorkflowExecution,
	type OnErrorSetting,
} from '../support/n8nEngine';

const db = postgresSchemaFixture('inprocess');

const CREDENTIAL_ID = 'cred-idempotency-pg';

let lookups: string[];
let additionalBase: Omit<IWorkflowExecuteAdditionalData, 'hooks' | 'executionId'>;

function templateWorkflow(): IWorkflowBase {
	const credentials = { idempotencyPostgresApi: { id: CREDENTIAL_ID, name: 'Idempotency Postgres' } };
	const nodes: INode[] = [
		{ id: 'n1', name: 'Webhook', type: `${PACKAGE}.testWebhook`, typeVersion: 1, position: [0, 0], parameters: {} },
		{
			id: 'n2',
			name: 'Idempotency Reserve',
			type: `${PACKAGE}.idempotencyReserve`,
			typeVersion: 1,
			position: [200, 0],
			credentials,
			parameters: {
				keySource: 'custom',
				customKey: "={{ 'order:' + $json.body.order.id }}",
				mode: 'lease',
				leaseSeconds: 120,
				options: { schemaName: db.schema, tableName: 'processed_events', createTable: true },
			},
		},
		{
			id: 'n3',
			name: 'Complete',
			type: `${PACKAGE}.idempotencyKey`,
			typeVersion: 1,
			position: [400, 0],
			credentials,
			parameters: {
				operation: 'complete',
				source: 'item',
				responseJson:
					'={{ JSON.stringify({ received: true, order: $json.body.order.id, by: $(\'Webhook\').item.json.headers["x-source"] }) }}',
				options: { schemaName: db.schema, tableName: 'processed_events' },
			},
		},
	];
	return {
		id: 'wf-in-process',
		name: 'Idempotent webhook (in-process)',
		active: false,
		activeVersionId: null,
		isArchived: false,
		createdAt: new Date(),
		updatedAt: new Date(),
		nodes,
		// New → Complete; Duplicate and In Progress lead nowhere.
		connections: {
			Webhook: { main: [[{ node: 'Idempotency Reserve', type: 'main', index: 0 }]] },
			'Idempotency Reserve': { main: [[{ node: 'Complete', type: 'main', index: 0 }], [], []] },
		},
		settings: { executionOrder: 'v1' },
	};
}

/** One webhook execution as n8n runs it: the request item starts at the Webhook node. */
async function runWebhookExecution(executionId: string, item: INodeExecutionData): Promise<IRun> {
	return await runWorkflowExecution(templateWorkflow(), executionId, [item], additionalBase);
}

/** The items on one output of one node's (only) run. */
function output(run: IRun, nodeName: string, outputIndex: number): INodeExecutionData[] {
	const taskData = run.data.resultData.runData[nodeName];
	expect(taskData).toHaveLength(1);
	return taskData[0].data?.main[outputIndex] ?? [];
}

function idempotency(item: INodeExecutionData): Record<string, unknown> {
	return item.json.idempotency as Record<string, unknown>;
}

beforeAll(() => {
	const { host, port, database, user, password } = connectionSettings();
	const helper = credentialsHelper({ [CREDENTIAL_ID]: { host, port, database, user, password } });
	lookups = (helper as unknown as { lookups: string[] }).lookups;
	additionalBase = engineBase(helper);
});

describe('a lease-mode workflow run by n8n-core WorkflowExecute, in-process', () => {
	it('routes the first delivery to New → Complete and the retry to Duplicate with the stored response', async () => {
		const delivery = () => webhookItem({ order: { id: 'ord_4711' }, amount: 12 }, { 'x-source': 'shop' });

		const first = await runWebhookExecution('exec-first', delivery());
		expect(first.data.resultData.error).toBeUndefined();
		expect(first.status).toBe('success');
		const [fresh, duplicate, inProgress] = [0, 1, 2].map((index) => output(first, 'Idempotency Reserve', index));
		expect([fresh.length, duplicate.length, inProgress.length]).toEqual([1, 0, 0]);
		// The custom key is the expression's value: n8n's expression engine ran in-process.
		// Output: Compact (the default): what routing and settling read, and the lease end in Lease mode.
		expect(idempotency(fresh[0])).toEqual({
			key: 'order:ord_4711',
			isNew: true,
			outcome: 'new',
			ownerToken: expect.stringMatching(/^[0-9a-f-]{36}$/),
			attempts: 1,
			lockedUntil: expect.any(String),
		});
		expect(Date.parse(String(idempotency(fresh[0]).lockedUntil))).toBeGreaterThan(Date.now());
		const [done, stale] = [0, 1].map((index) => output(first, 'Complete', index));
		expect(stale).toHaveLength(0);
		expect(done).toHaveLength(1);
		expect(idempotency(done[0])).toMatchObject({ key: 'order:ord_4711', operation: 'complete', applied: true, staleReason: null });

		const second = await runWebhookExecution('exec-retry', delivery());
		expect(second.data.resultData.error).toBeUndefined();
		expect(second.status).toBe('success');
		const [freshAgain, duplicateAgain, inProgressAgain] = [0, 1, 2].map((index) => output(second, 'Idempotency Reserve', index));
		expect([freshAgain.length, duplicateAgain.length, inProgressAgain.length]).toEqual([0, 1, 0]);
		expect(idempotency(duplicateAgain[0])).toMatchObject({
			key: 'order:ord_4711',
			outcome: 'duplicate',
			ownerToken: null,
			response: { received: true, order: 'ord_4711', by: 'shop' },
		});
		// Nothing is connected to Duplicate: Complete did not run the second time.
		expect(second.data.resultData.runData.Complete).toBeUndefined();

		// Every node that ran (Reserve, Complete; then Reserve) got its credential through the helper, by ID.
		expect(lookups).toEqual(Array(3).fill(`idempotencyPostgresApi:${CREDENTIAL_ID}`));
		const rows = await db.pool.query(`select key, status, response from ${db.schema}.processed_events`);
		expect(rows.rows).toEqual([
			{ key: 'order:ord_4711', status: 'completed', response: { received: true, order: 'ord_4711', by: 'shop' } },
		]);
	});
});

describe('the Idempotent Webhook trigger on Postgres, its execution run by n8n-core WorkflowExecute', () => {
	// The trigger's webhook() reserves in the default schema: a table of this test's own there.
	const table = `trigger_reads_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
	afterAll(async () => {
		await db.pool.query(`drop table if exists public.${table}`);
	});

	// Each credential read is a query to n8n's database (and, outside an execution, an expression isolate).
	it('reads the store credential once in the execution: its record at the start and the key completed at the end', async () => {
		const store = new PostgresKeyStore(db.pool, { table, schema: 'public', createTable: true });
		const body = '{"id":"evt_trigger_reads"}';
		const decision = await decideWebhook({
			request: { method: 'POST', headers: { 'content-type': 'application/json' }, rawBody: Buffer.from(body), query: {} },
			verification: { scheme: 'none' },
			keySettings: {
				key: { strategy: 'preset', preset: 'stripe', onMissingKey: 'error' },
				mode: 'lease',
				leaseSeconds: 300,
				retentionSeconds: 86_400,
			},
			store: () => store,
			clock: () => new Date(),
			workflowId: 'wf-trigger-reads',
		});
		if (!('start' in decision)) throw new Error(`expected a start, got ${JSON.stringify(decision.answer)}`);
		const trigger = packageNode(
			'Webhook',
			'idempotentWebhook',
			{
				path: 'orders',
				scheme: 'none',
				store: 'postgres',
				keySource: 'preset',
				preset: 'stripe',
				mode: 'lease',
				options: { tableName: table },
			},
			{ credentials: { idempotencyPostgresApi: { id: CREDENTIAL_ID, name: 'Idempotency Postgres' } } },
		);
		const before = lookups.length;

		const run = await runWorkflowExecution(
			inProcessWorkflow('wf-trigger-reads', [trigger], {}),
			'exec-trigger-reads',
			[{ json: decision.start.events[0].item }],
			additionalBase,
		);

		expect(run.data.resultData.error).toBeUndefined();
		expect(lookups.slice(before)).toEqual([`idempotencyPostgresApi:${CREDENTIAL_ID}`]);
		expect(
			(await db.pool.query(`select status, execution_id from public.${table} where key = $1`, ['evt:evt_trigger_reads'])).rows,
		).toEqual([{ status: 'completed', execution_id: 'exec-trigger-reads' }]);
	});
});

/*
 * Routing of items that were not reserved, for each "On Error" setting, through n8n's own engine.
 * The webhook's answer is read the way n8n's webhook helper (n8n 2.40.7, webhook-helpers.js)
 * decides it with responseMode "responseNode": an execution error answers 500, else the Respond
 * node that ran answers, else 200 with no body (an acknowledged, lost event).
 */

const CREDENTIAL_DOWN = 'cred-idempotency-down';

/**
 * The webhook template's shape: Reserve → New → Business Step; Duplicate → 200; In Progress → 409;
 * Not Reserved → 503; with Continue (using error output), n8n's Error output (after Not Reserved) → 503.
 */
function routingWorkflow(onError: OnErrorSetting, reserveParameters: INodeParameters, credentialId = CREDENTIAL_ID): IWorkflowBase {
	const node = packageNode;
	const reserve: INode = {
		...node('Idempotency Reserve', 'idempotencyReserve', {
			keySource: 'auto',
			mode: 'lease',
			leaseSeconds: 120,
			...reserveParameters,
			options: { schemaName: db.schema, tableName: 'routing_events', createTable: true, ...(reserveParameters.options as object) },
		}),
		credentials: { idempotencyPostgresApi: { id: credentialId, name: 'Idempotency Postgres' } },
		onError,
	};
	const to = (name: string) => [{ node: name, type: NodeConnectionTypes.Main, index: 0 }];
	const lease = (reserve.parameters.mode ?? 'lease') === 'lease';
	const reserveOutputs = lease
		? [to('Business Step'), to('Respond 200'), to('Respond 409'), to('Respond 503')]
		: [to('Business Step'), to('Respond 200'), to('Respond 503')];
	if (onError === 'continueErrorOutput') reserveOutputs.push(to('Respond 503 (error output)'));
	return {
		id: 'wf-routing',
		name: 'Routing of items that were not reserved',
		active: false,
		activeVersionId: null,
		isArchived: false,
		createdAt: new Date(),
		updatedAt: new Date(),
		nodes: [
			node('Webhook', 'testWebhook'),
			reserve,
			node('Business Step', 'testStep'),
			node('Respond 200', 'testStep', { status: 200 }),
			node('Respond 409', 'testStep', { status: 409 }),
			node('Respond 503', 'testStep', { status: 503 }),
			node('Respond 503 (error output)', 'testStep', { status: 503 }),
		],
		connections: {
			Webhook: { main: [to('Idempotency Reserve')] },
			'Idempotency Reserve': { main: reserveOutputs },
		},
		settings: { executionOrder: 'v1' },
	};
}

let routingAdditional: Omit<IWorkflowExecuteAdditionalData, 'hooks' | 'executionId'>;

async function runRouting(
	workflowData: IWorkflowBase,
	executionId: string,
	items: INodeExecutionData[],
	mode: WorkflowExecuteMode = 'webhook',
): Promise<IRun> {
	return await runWorkflowExecution(workflowData, executionId, items, routingAdditional, mode);
}

/** What the webhook answers, decided as n8n's webhook helper does for responseMode "responseNode". */
function webhookAnswer(run: IRun): number | 'acknowledged without a response' {
	if (run.data.resultData.error) return 500;
	for (const name of ['Respond 200', 'Respond 409', 'Respond 503', 'Respond 503 (error output)']) {
		if (itemsAt(run, name).length > 0) return itemsAt(run, name)[0].json.respondedWith as number;
	}
	return 'acknowledged without a response';
}

describe('items that were not reserved, routed by n8n-core for every On Error setting', () => {
	beforeAll(async () => {
		await new PostgresKeyStore(db.pool, { schema: db.schema, table: 'routing_events', createTable: true }).createTable();
		const { host, port, database, user, password } = connectionSettings();
		routingAdditional = {
			...additionalBase,
			credentialsHelper: credentialsHelper({
				[CREDENTIAL_ID]: { host, port, database, user, password },
				// Nothing listens on port 1: "Postgres could not be reached, nothing was reserved".
				[CREDENTIAL_DOWN]: { host, port: 1, database, user, password },
			}),
		};
	});

	const settings: OnErrorSetting[] = ['stopWorkflow', 'continueRegularOutput', 'continueErrorOutput'];

	it.each(settings)('database down, %s: the business step never runs and the webhook answers 5xx', async (onError) => {
		const run = await runRouting(routingWorkflow(onError, {}, CREDENTIAL_DOWN), `down-${onError}`, [
			webhookItem({ id: `evt_down_${onError}` }),
		]);
		expect(itemsAt(run, 'Business Step')).toHaveLength(0);
		expect(webhookAnswer(run)).toBe(onError === 'stopWorkflow' ? 500 : 503);
		if (onError === 'continueErrorOutput') {
			// n8n moved the item to its Error output, merged with the request item.
			const [errorItem] = itemsAt(run, 'Respond 503 (error output)');
			expect(errorItem.json).toMatchObject({
				error: expect.stringMatching(/could not be reached/),
				body: { id: 'evt_down_continueErrorOutput' },
			});
			expect(itemsAt(run, 'Respond 503')).toHaveLength(0);
		}
		if (onError === 'continueRegularOutput') {
			expect(itemsAt(run, 'Respond 503')[0].json.error).toMatch(/could not be reached/);
		}
	});

	it.each(settings)('a refused key source (configuration), %s: the input never passes out of New', async (onError) => {
		const run = await runRouting(
			routingWorkflow(onError, { keySource: 'header', headerName: 'paypal-transmission-sig' }),
			`config-${onError}`,
			[webhookItem({ id: `evt_config_${onError}` }, { 'paypal-transmission-sig': 'abc' })],
		);
		expect(itemsAt(run, 'Business Step')).toHaveLength(0);
		expect(webhookAnswer(run)).toBe(onError === 'stopWorkflow' ? 500 : 503);
	});

	it.each(settings)(
		'a batch with a NUL id, %s: the bad item answers 5xx, the good one is reserved only if the run goes on',
		async (onError) => {
			const good = `evt_batch_${onError}`;
			const run = await runRouting(routingWorkflow(onError, {}), `nul-${onError}`, [
				webhookItem({ id: good }),
				webhookItem({ id: 'evt_\u0000' }),
			]);
			const rows = await db.pool.query(`select key from ${db.schema}.routing_events where key = $1`, [`evt:${good}`]);
			if (onError === 'stopWorkflow') {
				expect(run.data.resultData.error?.message).toMatch(/NUL character/);
				expect(itemsAt(run, 'Business Step')).toHaveLength(0);
				expect(rows.rowCount).toBe(0);
			} else {
				expect(itemsAt(run, 'Business Step').map((item) => item.json.body)).toEqual([{ id: good }]);
				expect(rows.rowCount).toBe(1);
				const respondedBy = onError === 'continueErrorOutput' ? 'Respond 503 (error output)' : 'Respond 503';
				expect(itemsAt(run, respondedBy)).toHaveLength(1);
				expect(itemsAt(run, respondedBy)[0].json.error).toMatch(/NUL character/);
			}
		},
	);

	it('Let Through: with the database down, the item reaches the business step flagged unverified', async () => {
		const run = await runRouting(
			routingWorkflow('stopWorkflow', { options: { onStoreUnavailable: 'letThrough' } }, CREDENTIAL_DOWN),
			'let-through',
			[webhookItem({ id: 'evt_let_through' })],
		);
		expect(run.data.resultData.error).toBeUndefined();
		const [reached] = itemsAt(run, 'Business Step');
		expect(idempotency(reached)).toMatchObject({ key: 'evt:evt_let_through', unverified: true, ownerToken: null });
	});

	it('evaluates an expression scope per item: two tenants with the same event id are two events', async () => {
		const run = await runRouting(routingWorkflow('stopWorkflow', { options: { scope: '={{ $json.body.tenant }}' } }), 'per-item-scope', [
			webhookItem({ id: 'evt_same', tenant: 'acme' }),
			webhookItem({ id: 'evt_same', tenant: 'globex' }),
		]);
		expect(run.data.resultData.error).toBeUndefined();
		expect(itemsAt(run, 'Business Step').map((item) => idempotency(item).key)).toEqual(['acme:evt:evt_same', 'globex:evt:evt_same']);
		expect(itemsAt(run, 'Respond 200')).toHaveLength(0);
	});

	it('refuses a lease that differs between items (one statement takes one lease), naming both values', async () => {
		const run = await runRouting(routingWorkflow('continueErrorOutput', { leaseSeconds: '={{ $json.body.lease }}' }), 'per-item-lease', [
			webhookItem({ id: 'evt_lease_1', lease: 60 }),
			webhookItem({ id: 'evt_lease_2', lease: 90 }),
		]);
		const errors = itemsAt(run, 'Respond 503 (error output)');
		expect(errors).toHaveLength(2);
		expect(errors[0].json.error).toMatch(/Lease \(Seconds\) must be the same for every item.*item 0 has 60, item 1 has 90/);
		expect(itemsAt(run, 'Business Step')).toHaveLength(0);
	});

	it("refuses an Output that differs between items (it picks the statement's RETURNING list)", async () => {
		const run = await runRouting(
			routingWorkflow('continueErrorOutput', { options: { output: '={{ $json.body.output }}' } }),
			'per-item-output',
			[webhookItem({ id: 'evt_output_1', output: 'compact' }), webhookItem({ id: 'evt_output_2', output: 'full' })],
		);
		const errors = itemsAt(run, 'Respond 503 (error output)');
		expect(errors).toHaveLength(2);
		expect(errors[0].json.error).toMatch(/Output must be the same for every item.*item 0 has "compact", item 1 has "full"/);
		expect(itemsAt(run, 'Business Step')).toHaveLength(0);
	});
});

describe('manual runs in the editor (n8n execution mode "manual")', () => {
	it('reserve under a test scope by default, say so, and leave the real delivery New', async () => {
		const event = () => [webhookItem({ id: 'evt_pinned_test' })];
		const manual = await runRouting(routingWorkflow('stopWorkflow', {}), 'manual-1', event(), 'manual');
		const [tested] = itemsAt(manual, 'Business Step');
		expect(idempotency(tested)).toMatchObject({ key: 'n8n-manual-test:evt:evt_pinned_test', manualTest: true, outcome: 'new' });

		const real = await runRouting(routingWorkflow('stopWorkflow', {}), 'webhook-after-manual', event());
		const [delivered] = itemsAt(real, 'Business Step');
		expect(idempotency(delivered)).toMatchObject({ key: 'evt:evt_pinned_test', outcome: 'new' });
		expect(idempotency(delivered).manualTest).toBeUndefined(); // Compact: only set when true
	});

	it('reserve the real key with "Reserve for Real"; the delivery is then a Duplicate naming the execution that reserved it', async () => {
		const event = () => [webhookItem({ id: 'evt_pinned_real' })];
		const manual = await runRouting(
			routingWorkflow('stopWorkflow', { mode: 'permanent', options: { manualRuns: 'real' } }),
			'manual-real',
			event(),
			'manual',
		);
		expect(idempotency(itemsAt(manual, 'Business Step')[0])).toMatchObject({ key: 'evt:evt_pinned_real' });
		expect(idempotency(itemsAt(manual, 'Business Step')[0]).manualTest).toBeUndefined();

		const real = await runRouting(
			routingWorkflow('stopWorkflow', { mode: 'permanent', options: { output: 'full' } }),
			'webhook-after-real',
			event(),
		);
		expect(itemsAt(real, 'Business Step')).toHaveLength(0);
		const [duplicate] = itemsAt(real, 'Respond 200');
		expect(idempotency(duplicate)).toMatchObject({
			key: 'evt:evt_pinned_real',
			outcome: 'duplicate',
			reservedByExecutionId: 'manual-real',
			reservedByWorkflowId: 'wf-routing',
		});
	});
});
