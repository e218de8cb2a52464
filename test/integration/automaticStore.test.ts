import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { NodeOperationError, type IDataObject, type INode, type IRun, type IWorkflowBase } from 'n8n-workflow';

import { closeEmbeddedStores, openEmbeddedKeyStore } from '../../lib/store/embedded';
import { keyStoreOn, type StoreContext } from '../../nodes/shared/store';
import { databaseUrl, postgresPoolFixture } from '../support/database';
import { webhookItem } from '../support/fakeExecuteFunctions';
import { runOrderGuard } from '../support/nodes';
import {
	credentialsHelper,
	engineBase,
	executeInProcess,
	inProcessWorkflow,
	itemsAt,
	packageNode,
	type EngineBase,
} from '../support/n8nEngine';

/*
 * Store: Automatic run by n8n's own engine, in-process, with no credential at all (the credentials
 * helper knows none: asking for one fails the run). In queue mode the keys go to n8n's own Postgres,
 * found through n8n's DB_POSTGRESDB_* settings (here: the test database), in the package's table in
 * n8n's schema, created on first use; on one process they go to the embedded file in n8n's folder.
 */

const database = postgresPoolFixture();
let userFolder: string;
let keyFile: string;
let base: EngineBase;
const savedEnv = { ...process.env };
const N8N_SETTINGS = [
	'EXECUTIONS_MODE',
	'DB_TYPE',
	'DB_TABLE_PREFIX',
	'DB_POSTGRESDB_HOST',
	'DB_POSTGRESDB_PORT',
	'DB_POSTGRESDB_DATABASE',
	'DB_POSTGRESDB_USER',
	'DB_POSTGRESDB_PASSWORD',
	'DB_POSTGRESDB_PASSWORD_FILE',
	'DB_POSTGRESDB_SCHEMA',
	'DB_POSTGRESDB_POOL_SIZE',
];

beforeAll(() => {
	userFolder = mkdtempSync(path.join(tmpdir(), 'automatic-store-'));
	// n8n's folder is <N8N_USER_FOLDER>/.n8n; n8n-core reads it when a node first asks for its storage path.
	process.env.N8N_USER_FOLDER = userFolder;
	keyFile = path.join(userFolder, '.n8n', 'storage', 'n8n-nodes-idempotency', 'keys.sqlite');
	base = engineBase(credentialsHelper({}));
});

afterEach(() => {
	for (const name of N8N_SETTINGS) {
		if (savedEnv[name] === undefined) delete process.env[name];
		else process.env[name] = savedEnv[name];
	}
});

afterAll(() => {
	closeEmbeddedStores();
	rmSync(userFolder, { recursive: true, force: true });
});

/** n8n in queue mode on the test database, its password in a file (a mounted secret), in `schema`. */
function n8nInQueueModeOnTestDatabase(schema: string, extra: Record<string, string> = {}): void {
	const url = new URL(databaseUrl());
	const passwordFile = path.join(userFolder, `password-${schema}`);
	writeFileSync(passwordFile, `${decodeURIComponent(url.password)}\n`);
	Object.assign(process.env, {
		EXECUTIONS_MODE: 'queue',
		DB_TYPE: 'postgresdb',
		DB_POSTGRESDB_HOST: url.hostname,
		DB_POSTGRESDB_PORT: url.port || '5432',
		DB_POSTGRESDB_DATABASE: decodeURIComponent(url.pathname.slice(1)),
		DB_POSTGRESDB_USER: decodeURIComponent(url.username),
		DB_POSTGRESDB_PASSWORD_FILE: passwordFile,
		DB_POSTGRESDB_SCHEMA: schema,
		...extra,
	});
	delete process.env.DB_POSTGRESDB_PASSWORD;
}

/** n8n's schema, as n8n's migrations made it: the package finds it there and adds its own table. */
async function n8nSchema(): Promise<string> {
	const schema = `n8n_${Math.random().toString(16).slice(2, 10)}`;
	await database.pool.query(`create schema ${schema}`);
	return schema;
}

/** Webhook → Reserve (a new node: version 3, no store parameter, no credential) → New: Complete; Duplicate: 200; Not Reserved: 503. */
function workflow(id: string, reserveExtra: Partial<INode> = {}): IWorkflowBase {
	const node = packageNode;
	return inProcessWorkflow(
		id,
		[
			node('Webhook', 'testWebhook', {}),
			node('Idempotency Reserve', 'idempotencyReserve', { options: {} }, { typeVersion: 3, ...reserveExtra }),
			node('Complete', 'idempotencyKey', { operation: 'complete', source: 'item' }, { typeVersion: 3 }),
			node('Respond 200', 'testStep', { status: 200 }),
			node('Respond 503', 'testStep', { status: 503 }),
		],
		{
			Webhook: { main: [[{ node: 'Idempotency Reserve', type: 'main', index: 0 }]] },
			'Idempotency Reserve': {
				main: [
					[{ node: 'Complete', type: 'main', index: 0 }],
					[{ node: 'Respond 200', type: 'main', index: 0 }],
					[{ node: 'Respond 503', type: 'main', index: 0 }],
				],
			},
		},
	);
}

let executions = 0;
async function execute(workflowData: IWorkflowBase, body: IDataObject): Promise<IRun> {
	const { run } = await executeInProcess(workflowData, `exec-${++executions}`, [webhookItem(body)], base);
	return run;
}

function respondedWith(run: IRun): number | 'complete' | undefined {
	if (itemsAt(run, 'Complete').length > 0) return 'complete';
	for (const name of ['Respond 200', 'Respond 503']) {
		if (itemsAt(run, name).length > 0) return itemsAt(run, name)[0].json.respondedWith as number;
	}
	return undefined;
}

async function tableRow(schema: string, table: string, key: string): Promise<Record<string, unknown> | undefined> {
	return (await database.pool.query(`select status from ${schema}.${table} where key = $1`, [key])).rows[0];
}

describe("Store: Automatic in queue mode: n8n's own Postgres", () => {
	it("reserves and completes in the package's table in n8n's schema, created on first use, with no credential", async () => {
		const schema = await n8nSchema();
		n8nInQueueModeOnTestDatabase(schema);
		const flow = workflow('wf-automatic-queue', { onError: 'continueRegularOutput' });

		const first = await execute(flow, { id: 'evt_auto_queue' });
		expect(first.data.resultData.error).toBeUndefined();
		expect(respondedWith(first)).toBe('complete');
		// Reserve reserved it and Complete (a Key node, also Automatic) completed it: both in n8n's database.
		expect(await tableRow(schema, 'processed_events', 'evt:evt_auto_queue')).toEqual({ status: 'completed' });
		const retry = await execute(flow, { id: 'evt_auto_queue' });
		expect(respondedWith(retry)).toBe(200);

		const tables = await database.pool.query<{ tablename: string }>('select tablename from pg_tables where schemaname = $1 order by 1', [
			schema,
		]);
		expect(tables.rows.map((row) => row.tablename)).toEqual(['processed_events', 'processed_events_answer_counts']);
		expect(existsSync(keyFile)).toBe(false);
	});

	it("keeps the Order Guard's marks there too (object_versions)", async () => {
		const schema = await n8nSchema();
		n8nInQueueModeOnTestDatabase(schema);
		const item = webhookItem({ id: 'evt_order', object: 'customer', created: 7 });
		const [newer] = await runOrderGuard(
			{ store: 'automatic', objectKey: 'customer:cus_auto', version: 7, eventKey: '', options: {} },
			{ items: [item], credential: {} },
		);
		expect(newer).toHaveLength(1);
		const { rows } = await database.pool.query(`select version::text as version from ${schema}.object_versions where object_key = $1`, [
			'customer:cus_auto',
		]);
		expect(rows).toEqual([{ version: '7' }]);
	});

	it("names its tables with n8n's table prefix, so two n8n instances sharing a schema keep their keys apart", async () => {
		const schema = await n8nSchema();
		n8nInQueueModeOnTestDatabase(schema, { DB_TABLE_PREFIX: 'staging_' });
		const run = await execute(workflow('wf-automatic-prefix', { onError: 'continueRegularOutput' }), { id: 'evt_auto_prefix' });
		expect(respondedWith(run)).toBe('complete');
		expect(await tableRow(schema, 'staging_processed_events', 'evt:evt_auto_prefix')).toEqual({ status: 'completed' });
	});

	it("refuses, nothing reserved, where n8n's database is not Postgres: the item leaves through Not Reserved with the fix", async () => {
		process.env.EXECUTIONS_MODE = 'queue';
		process.env.DB_TYPE = 'sqlite';
		const run = await execute(workflow('wf-automatic-sqlite', { onError: 'continueRegularOutput' }), { id: 'evt_auto_sqlite' });
		expect(respondedWith(run)).toBe(503);
		expect(String(itemsAt(run, 'Respond 503')[0].json.error)).toMatch(
			/n8n's database here is sqlite \(DB_TYPE\), not Postgres.*Nothing was reserved\. Run n8n on Postgres/,
		);
		expect(existsSync(keyFile)).toBe(false);
	});

	it('stops the workflow with a NodeOperationError under On Error: Stop Workflow', async () => {
		process.env.EXECUTIONS_MODE = 'queue';
		process.env.DB_TYPE = 'sqlite';
		const run = await execute(workflow('wf-automatic-stop'), { id: 'evt_auto_stop' });
		expect(run.data.resultData.error).toMatchObject({
			name: 'NodeOperationError',
			description: 'AutomaticStoreRefusedError',
			message: expect.stringMatching(/Store: Automatic keeps the keys in n8n's own Postgres when n8n runs in queue mode/),
		});
	});

	it("is what the trigger opens too, and its refusal goes to n8n's log with the fix (the sender gets only 503)", async () => {
		process.env.EXECUTIONS_MODE = 'queue';
		process.env.DB_TYPE = 'sqlite';
		const warnings: string[] = [];
		const context = {
			getNode: () => ({ name: 'Idempotent Webhook' }),
			getCredentials: async () => {
				throw new Error('Automatic asks for no credential');
			},
			logger: { warn: (message: string) => warnings.push(message) },
		} as unknown as StoreContext;
		const open = keyStoreOn('automatic', context, () => keyFile, {});
		await expect(open).rejects.toThrow(NodeOperationError);
		expect(warnings).toEqual([expect.stringMatching(/Run n8n on Postgres \(DB_TYPE=postgresdb/)]);

		const schema = await n8nSchema();
		n8nInQueueModeOnTestDatabase(schema);
		const store = await keyStoreOn('automatic', context, () => keyFile, { tableName: 'trigger_events' });
		expect(store.backend).toBe('postgres');
		await store.reserve([{ key: 'evt:from_trigger', keySource: 'test', payloadHash: null }], {
			mode: 'lease',
			leaseSeconds: 60,
			retentionSeconds: 3600,
		});
		expect(await tableRow(schema, 'trigger_events', 'evt:from_trigger')).toEqual({ status: 'processing' });
	});
});

describe('Store: Automatic on one process: the embedded file', () => {
	it("reserves and completes in the file in n8n's folder and never touches n8n's database", async () => {
		const schema = await n8nSchema();
		// n8n's settings point at a server that is not there: one process must not need them.
		Object.assign(process.env, { DB_TYPE: 'postgresdb', DB_POSTGRESDB_HOST: '192.0.2.1', DB_POSTGRESDB_SCHEMA: schema });
		delete process.env.EXECUTIONS_MODE;
		const flow = workflow('wf-automatic-single', { onError: 'continueRegularOutput' });

		const first = await execute(flow, { id: 'evt_auto_single' });
		expect(respondedWith(first)).toBe('complete');
		const stored = await openEmbeddedKeyStore({ file: keyFile }).getKeys(['evt:evt_auto_single']);
		expect(stored.get('evt:evt_auto_single')).toMatchObject({ status: 'completed' });
		expect(respondedWith(await execute(flow, { id: 'evt_auto_single' }))).toBe(200);

		const tables = await database.pool.query('select 1 from pg_tables where schemaname = $1', [schema]);
		expect(tables.rowCount).toBe(0);
	});
});
