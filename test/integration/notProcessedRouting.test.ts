import {
	NodeConnectionTypes,
	type INode,
	type INodeExecutionData,
	type INodeParameters,
	type IRun,
	type IWorkflowBase,
	type WorkflowExecuteMode,
} from 'n8n-workflow';

import { PostgresKeyStore } from '../../lib/store/postgres/stores';
import { connectionSettings, postgresSchemaFixture } from '../support/database';
import { webhookItem } from '../support/fakeExecuteFunctions';
import {
	CREDENTIAL_DOWN,
	CREDENTIAL_UP,
	engineWithUpAndDownCredentials,
	itemsAt,
	ON_ERROR_SETTINGS,
	packageNode,
	runWorkflowExecution,
	type EngineBase,
	type OnErrorSetting,
} from '../support/n8nEngine';

/*
 * For Idempotency Execute Query and Idempotency Order Guard, through n8n-core's own
 * engine: an item the node could not process never reaches an output that runs the business step
 * or acknowledges the event, under every "On Error" setting. The webhook's answer is decided as
 * n8n's webhook helper does with responseMode "responseNode": an execution error answers 500,
 * else the Respond node that ran answers, else 200 with no body (an acknowledged, lost event).
 */

const db = postgresSchemaFixture('notprocessed', { keyTables: ['processed_events'] });

let base: EngineBase;

beforeAll(async () => {
	await db.pool.query(
		`create table ${db.schema}.payments (id serial primary key, event_key text not null, amount integer check (amount > 0))`,
	);
	base = engineWithUpAndDownCredentials(connectionSettings());
});

/** Which node answers for each output of the node under test, in output order. */
type Wiring = Array<{ name: string; status: number }>;

/**
 * Webhook → the node under test → one recording step per output (status 0: the business step),
 * plus n8n's Error output → 503 with Continue (using error output).
 */
function workflow(
	type: string,
	parameters: INodeParameters,
	onError: OnErrorSetting,
	wiring: Wiring,
	credentialId = CREDENTIAL_UP,
): IWorkflowBase {
	const node = packageNode;
	const underTest: INode = {
		...node('Under Test', type, parameters),
		credentials: { idempotencyPostgresApi: { id: credentialId, name: 'Idempotency Postgres' } },
		onError,
	};
	const targets = [...wiring, ...(onError === 'continueErrorOutput' ? [{ name: 'Respond 503 (error output)', status: 503 }] : [])];
	return {
		id: 'wf-not-processed',
		name: 'Routing of items that were not processed',
		active: false,
		activeVersionId: null,
		isArchived: false,
		createdAt: new Date(),
		updatedAt: new Date(),
		nodes: [node('Webhook', 'testWebhook'), underTest, ...targets.map(({ name, status }) => node(name, 'testStep', { status }))],
		connections: {
			Webhook: { main: [[{ node: 'Under Test', type: NodeConnectionTypes.Main, index: 0 }]] },
			'Under Test': { main: targets.map(({ name }) => [{ node: name, type: NodeConnectionTypes.Main, index: 0 }]) },
		},
		settings: { executionOrder: 'v1' },
	};
}

/** What the webhook answers: the first Respond step that received an item, 500 for an execution error. */
function webhookAnswer(run: IRun, wiring: Wiring): number | 'acknowledged without a response' {
	if (run.data.resultData.error) return 500;
	for (const { name, status } of [...wiring, { name: 'Respond 503 (error output)', status: 503 }]) {
		if (status && itemsAt(run, name).length > 0) return status;
	}
	return 'acknowledged without a response';
}

async function run(
	workflowData: IWorkflowBase,
	executionId: string,
	items: INodeExecutionData[],
	mode: WorkflowExecuteMode = 'webhook',
): Promise<IRun> {
	return await runWorkflowExecution(workflowData, executionId, items, base, mode);
}

/** The answer an item that was not processed gets: 500 from the failed execution, else 503. */
const expectedAnswer = (onError: OnErrorSetting) => (onError === 'stopWorkflow' ? 500 : 503);

/** The failed items' error texts, from Not Run/Not Checked or, with the error output, from there. */
function errorsOf(run: IRun, onError: OnErrorSetting, notProcessed: string): unknown[] {
	if (onError === 'continueErrorOutput') expect(itemsAt(run, notProcessed)).toHaveLength(0);
	return itemsAt(run, onError === 'continueErrorOutput' ? 'Respond 503 (error output)' : notProcessed).map((item) => item.json.error);
}

describe('Idempotency Execute Query: an item whose query did not commit never answers 2xx', () => {
	// New → 200 (the effect is stored), Duplicate → 200, Not Run → 503.
	const wiring: Wiring = [
		{ name: 'Respond 200 (new)', status: 200 },
		{ name: 'Respond 200 (duplicate)', status: 200 },
		{ name: 'Respond 503 (not run)', status: 503 },
	];
	const insertPayment = (extra: INodeParameters = {}): INodeParameters => ({
		keySource: 'auto',
		query: `insert into ${db.schema}.payments (event_key, amount) values ($1, $2) returning id`,
		queryParameters: '={{ ["evt:" + $json.body.id, $json.body.amount] }}',
		options: { schemaName: db.schema, tableName: 'processed_events' },
		...extra,
	});
	const stored = async (eventId: string) => ({
		keys: (await db.pool.query(`select 1 from ${db.schema}.processed_events where key = $1`, [`evt:${eventId}`])).rowCount,
		payments: (await db.pool.query(`select 1 from ${db.schema}.payments where event_key = $1`, [`evt:${eventId}`])).rowCount,
	});

	it.each(ON_ERROR_SETTINGS)('a failed query (nothing stored), %s: 5xx, and the retry after the fix runs it once', async (onError) => {
		const eventId = `evt_fail_${onError}`;
		const failed = await run(workflow('idempotencyExecuteQuery', insertPayment(), onError, wiring), `eq-fail-${onError}`, [
			webhookItem({ id: eventId, amount: -1 }),
		]);
		expect(webhookAnswer(failed, wiring)).toBe(expectedAnswer(onError));
		expect(itemsAt(failed, 'Respond 200 (new)')).toHaveLength(0);
		if (onError !== 'stopWorkflow')
			expect(errorsOf(failed, onError, 'Respond 503 (not run)')).toEqual([expect.stringMatching(/Your query failed/)]);
		expect(await stored(eventId)).toEqual({ keys: 0, payments: 0 });

		const retried = await run(workflow('idempotencyExecuteQuery', insertPayment(), onError, wiring), `eq-retry-${onError}`, [
			webhookItem({ id: eventId, amount: 5 }),
		]);
		expect(webhookAnswer(retried, wiring)).toBe(200);
		expect(itemsAt(retried, 'Respond 200 (new)')).toHaveLength(1);
		expect(await stored(eventId)).toEqual({ keys: 1, payments: 1 });
	});

	it.each(ON_ERROR_SETTINGS)('database down, %s: 5xx, never New', async (onError) => {
		const down = await run(workflow('idempotencyExecuteQuery', insertPayment(), onError, wiring, CREDENTIAL_DOWN), `eq-down-${onError}`, [
			webhookItem({ id: `evt_down_${onError}`, amount: 5 }),
		]);
		expect(webhookAnswer(down, wiring)).toBe(expectedAnswer(onError));
		expect(itemsAt(down, 'Respond 200 (new)')).toHaveLength(0);
		if (onError !== 'stopWorkflow')
			expect(errorsOf(down, onError, 'Respond 503 (not run)')).toEqual([expect.stringMatching(/could not be reached/)]);
	});

	// Configuration errors fail every item they apply to, never pass it out of New. The parameters
	// are made when the test runs: the file's schema exists only from beforeAll on.
	const configurationErrors: Array<[string, () => INodeParameters, RegExp]> = [
		['a refused key source', () => ({ keySource: 'header', headerName: 'paypal-transmission-sig' }), /cannot be an idempotency key/],
		[
			'transaction control in the query',
			() => ({ query: `commit; insert into ${db.schema}.payments (event_key, amount) values ($1, $2)` }),
			/./,
		],
	];
	describe.each(configurationErrors)('%s', (_what, parameters, message) => {
		it.each(ON_ERROR_SETTINGS)('%s: 5xx for every item, nothing stored', async (onError) => {
			const ids = [`evt_cfg_${onError}_${_what.length}_1`, `evt_cfg_${onError}_${_what.length}_2`];
			const result = await run(
				workflow('idempotencyExecuteQuery', insertPayment(parameters()), onError, wiring),
				`eq-config-${onError}-${_what.length}`,
				ids.map((id) => webhookItem({ id, amount: 5 }, { 'paypal-transmission-sig': 'sig' })),
			);
			expect(webhookAnswer(result, wiring)).toBe(expectedAnswer(onError));
			expect(itemsAt(result, 'Respond 200 (new)')).toHaveLength(0);
			if (onError !== 'stopWorkflow')
				expect(errorsOf(result, onError, 'Respond 503 (not run)')).toEqual([
					expect.stringMatching(message),
					expect.stringMatching(message),
				]);
			for (const id of ids) expect(await stored(id)).toEqual({ keys: 0, payments: 0 });
		});
	});

	it('reads its options per item: a Scope expression makes one event id of two tenants two keys and two effects', async () => {
		const scoped = insertPayment({
			queryParameters: '={{ [$json.body.tenant + ":evt:" + $json.body.id, $json.body.amount] }}',
			options: { schemaName: db.schema, tableName: 'processed_events', scope: '={{ $json.body.tenant }}' },
		});
		const items = () => [
			webhookItem({ id: 'evt_tenants', tenant: 'acme', amount: 5 }),
			webhookItem({ id: 'evt_tenants', tenant: 'globex', amount: 7 }),
		];
		const first = await run(workflow('idempotencyExecuteQuery', scoped, 'stopWorkflow', wiring), 'eq-per-item-scope', items());
		expect(itemsAt(first, 'Respond 200 (new)').map((item) => (item.json.idempotency as { key: string }).key)).toEqual([
			'acme:evt:evt_tenants',
			'globex:evt:evt_tenants',
		]);
		const again = await run(workflow('idempotencyExecuteQuery', scoped, 'stopWorkflow', wiring), 'eq-per-item-scope-again', items());
		expect(itemsAt(again, 'Respond 200 (duplicate)')).toHaveLength(2);
		const { rows } = await db.pool.query(
			`select event_key, amount from ${db.schema}.payments where event_key like '%:evt:evt_tenants' order by event_key`,
		);
		expect(rows).toEqual([
			{ event_key: 'acme:evt:evt_tenants', amount: 5 },
			{ event_key: 'globex:evt:evt_tenants', amount: 7 },
		]);
	});

	it('a Scope expression that fails for one item fails that item only; a Table Name that differs per item is a clear error for the run', async () => {
		const scoped = insertPayment({
			queryParameters: '={{ [$json.body.tenant.name + ":evt:" + $json.body.id, $json.body.amount] }}',
			options: { schemaName: db.schema, tableName: 'processed_events', scope: '={{ $json.body.tenant.name }}' },
		});
		const items = [webhookItem({ id: 'evt_s_ok', tenant: { name: 'acme' }, amount: 5 }), webhookItem({ id: 'evt_s_bad', amount: 5 })];
		const result = await run(workflow('idempotencyExecuteQuery', scoped, 'continueRegularOutput', wiring), 'eq-scope-fails', items);
		expect(itemsAt(result, 'Respond 200 (new)').map((item) => (item.json.idempotency as { key: string }).key)).toEqual([
			'acme:evt:evt_s_ok',
		]);
		expect(itemsAt(result, 'Respond 503 (not run)')).toHaveLength(1);

		const tables = insertPayment({ options: { schemaName: db.schema, tableName: '={{ $json.body.table }}' } });
		const split = await run(workflow('idempotencyExecuteQuery', tables, 'continueRegularOutput', wiring), 'eq-table-differs', [
			webhookItem({ id: 'evt_t_1', table: 'processed_events', amount: 5 }),
			webhookItem({ id: 'evt_t_2', table: 'other_events', amount: 5 }),
		]);
		expect(itemsAt(split, 'Respond 200 (new)')).toHaveLength(0);
		expect(errorsOf(split, 'continueRegularOutput', 'Respond 503 (not run)')).toEqual([
			expect.stringMatching(
				/Table Name must be the same for every item of one run .* item 0 has "processed_events", item 1 has "other_events"/,
			),
			expect.stringMatching(/Table Name must be the same for every item/),
		]);
		expect(await stored('evt_t_1')).toEqual({ keys: 0, payments: 0 });
	});

	it('in an editor (manual) run reserves the real key: the production delivery is then Duplicate and the effect ran once', async () => {
		const eventId = 'evt_manual_real';
		const manual = await run(
			workflow('idempotencyExecuteQuery', insertPayment(), 'stopWorkflow', wiring),
			'eq-manual',
			[webhookItem({ id: eventId, amount: 5 })],
			'manual',
		);
		const [fresh] = itemsAt(manual, 'Respond 200 (new)');
		expect(fresh.json.idempotency).toMatchObject({ key: `evt:${eventId}`, outcome: 'new' });
		expect((fresh.json.idempotency as { manualTest?: boolean }).manualTest).toBeUndefined(); // the real key: no test scope

		const fullOutput = { options: { schemaName: db.schema, tableName: 'processed_events', output: 'full' } };
		const delivery = await run(workflow('idempotencyExecuteQuery', insertPayment(fullOutput), 'stopWorkflow', wiring), 'eq-after-manual', [
			webhookItem({ id: eventId, amount: 5 }),
		]);
		expect(itemsAt(delivery, 'Respond 200 (new)')).toHaveLength(0);
		expect(itemsAt(delivery, 'Respond 200 (duplicate)')[0].json.idempotency).toMatchObject({
			key: `evt:${eventId}`,
			reservedByExecutionId: 'eq-manual',
		});
		expect(await stored(eventId)).toEqual({ keys: 1, payments: 1 });
	});
});

describe('Idempotency Order Guard: an item whose version was not checked never reaches the business step nor a 2xx', () => {
	// Newer → the business step, Stale → 200 (handled), Not Checked → 503.
	const wiring: Wiring = [
		{ name: 'Business Step', status: 0 },
		{ name: 'Respond 200 (stale)', status: 200 },
		{ name: 'Respond 503 (not checked)', status: 503 },
	];
	const guard = (): INodeParameters => ({
		objectKey: '=customer:{{ $json.body.customer }}',
		version: '={{ $json.body.created }}',
		eventKey: '={{ "evt:" + $json.body.id }}',
		options: { schemaName: db.schema, tableName: 'object_versions', createTable: true },
	});
	const mark = async (customer: string) => {
		// The table is created by the guard's first statement: a run that stopped before it has none.
		const {
			rows: [table],
		} = await db.pool.query('select to_regclass($1) as name', [`${db.schema}.object_versions`]);
		if (!table.name) return [];
		return (
			await db.pool.query(`select version::text as version from ${db.schema}.object_versions where object_key = $1`, [
				`customer:${customer}`,
			])
		).rows;
	};

	it.each(ON_ERROR_SETTINGS)('database down, %s: 5xx, the business step never runs', async (onError) => {
		const down = await run(workflow('idempotencyOrderGuard', guard(), onError, wiring, CREDENTIAL_DOWN), `og-down-${onError}`, [
			webhookItem({ id: `evt_og_down_${onError}`, customer: 'down', created: 10 }),
		]);
		expect(itemsAt(down, 'Business Step')).toHaveLength(0);
		expect(webhookAnswer(down, wiring)).toBe(expectedAnswer(onError));
		if (onError !== 'stopWorkflow')
			expect(errorsOf(down, onError, 'Respond 503 (not checked)')).toEqual([expect.stringMatching(/could not be reached/)]);
	});

	it.each(ON_ERROR_SETTINGS)(
		'a batch with a bad version, %s: the bad item answers 5xx, the good one is applied only if the run goes on',
		async (onError) => {
			const customer = `batch_${onError}`;
			const result = await run(workflow('idempotencyOrderGuard', guard(), onError, wiring), `og-batch-${onError}`, [
				webhookItem({ id: `evt_og_good_${onError}`, customer, created: 20 }),
				webhookItem({ id: `evt_og_bad_${onError}`, customer: `${customer}_other`, created: 'soon' }),
			]);
			if (onError === 'stopWorkflow') {
				expect(result.data.resultData.error?.message).toMatch(/neither a number nor an ISO 8601/);
				expect(itemsAt(result, 'Business Step')).toHaveLength(0);
				expect(await mark(customer)).toEqual([]);
				return;
			}
			expect(itemsAt(result, 'Business Step').map((item) => item.json.body)).toEqual([
				{ id: `evt_og_good_${onError}`, customer, created: 20 },
			]);
			expect(errorsOf(result, onError, 'Respond 503 (not checked)')).toEqual([expect.stringMatching(/neither a number nor an ISO 8601/)]);
			expect(itemsAt(result, 'Respond 200 (stale)')).toHaveLength(0);
			expect(await mark(customer)).toEqual([{ version: '20' }]);
		},
	);

	it('a stale version still goes to Stale (the routing of decided items is unchanged)', async () => {
		const customer = 'stale_check';
		await run(workflow('idempotencyOrderGuard', guard(), 'continueRegularOutput', wiring), 'og-newer', [
			webhookItem({ id: 'evt_og_v2', customer, created: 2 }),
		]);
		const late = await run(workflow('idempotencyOrderGuard', guard(), 'continueRegularOutput', wiring), 'og-stale', [
			webhookItem({ id: 'evt_og_v1', customer, created: 1 }),
		]);
		expect(itemsAt(late, 'Business Step')).toHaveLength(0);
		expect(webhookAnswer(late, wiring)).toBe(200);
		expect(itemsAt(late, 'Respond 200 (stale)')[0].json.orderGuard).toMatchObject({ outcome: 'stale', currentVersion: '2' });
	});
});

describe('Idempotency Key: an item it could not read never leaves through Done', () => {
	// Done → the step after a settled key (200), Stale → the step for keys this run has lost.
	const wiring: Wiring = [
		{ name: 'Respond 200 (done)', status: 200 },
		{ name: 'Stale Step', status: 0 },
	];
	const complete = (): INodeParameters => ({
		operation: 'complete',
		source: 'item',
		options: { schemaName: db.schema, tableName: 'processed_events' },
	});
	const reservedItem = async (key: string): Promise<INodeExecutionData> => {
		const store = new PostgresKeyStore(db.pool, { schema: db.schema, table: 'processed_events', createTable: false });
		const [reserved] = await store.reserve([{ key, keySource: 'custom', payloadHash: null }], {
			mode: 'lease',
			leaseSeconds: 60,
			retentionSeconds: 86_400,
		});
		return { json: { idempotency: { key, ownerToken: reserved.ownerToken, outcome: 'new' } } };
	};
	const statusOf = async (key: string) => (await db.row(key))?.status;

	it.each(ON_ERROR_SETTINGS)('an item without an idempotency object beside a settled one, %s', async (onError) => {
		const key = `key-unreadable-${onError}`;
		const items = [await reservedItem(key), { json: { id: 'no idempotency object here' } }];
		const result = await run(workflow('idempotencyKey', complete(), onError, wiring), `key-unreadable-${onError}`, items);
		if (onError === 'stopWorkflow') {
			expect(result.data.resultData.error?.message).toMatch(/no idempotency object/);
			expect(itemsAt(result, 'Respond 200 (done)')).toHaveLength(0);
			// The readable item's key is settled before the node stops: its effect is done, a retry must not repeat it.
			expect(await statusOf(key)).toBe('completed');
			return;
		}
		// The readable item is completed and goes on through Done; the unreadable one never does.
		expect(itemsAt(result, 'Respond 200 (done)').map((item) => (item.json.idempotency as { key: string }).key)).toEqual([key]);
		expect(await statusOf(key)).toBe('completed');
		expect(errorsOf(result, onError, 'Stale Step')).toEqual([expect.stringMatching(/no idempotency object/)]);
	});
});
