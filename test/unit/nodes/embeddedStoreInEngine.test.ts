import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import type { IDataObject, INode, INodeParameters, IRun, IWorkflowBase, WorkflowExecuteMode } from 'n8n-workflow';

import { closeEmbeddedStores, embeddedStoreId, openEmbeddedKeyStore } from '../../../lib/store/embedded';
import { STORE_ID_ENV } from '../../../lib/store/embedded/sharedFile';
import { webhookItem } from '../../support/fakeExecuteFunctions';
import {
	credentialsHelper,
	engineBase,
	executeInProcess,
	inProcessWorkflow,
	itemsAt,
	packageNode,
	type EngineBase,
} from '../../support/n8nEngine';

/*
 * The Embedded store run by n8n's own engine (n8n-core's WorkflowExecute), in-process: n8n's real
 * getStoragePath, its parameter defaults per node version, its workflow static data, and no
 * credential at all (the credentials helper knows none, so asking for one would fail the run).
 * Needs node:sqlite (Node 22.13+).
 */

let userFolder: string;
let keyFile: string;
let base: EngineBase;
const savedEnv = { ...process.env };

beforeAll(() => {
	userFolder = mkdtempSync(path.join(tmpdir(), 'embedded-in-engine-'));
	// n8n's folder is <N8N_USER_FOLDER>/.n8n; n8n-core reads it when a node first asks for its storage path.
	process.env.N8N_USER_FOLDER = userFolder;
	keyFile = path.join(userFolder, '.n8n', 'storage', 'n8n-nodes-idempotency', 'keys.sqlite');
	base = engineBase(credentialsHelper({}));
});

afterEach(() => {
	for (const name of ['EXECUTIONS_MODE', 'EXECUTIONS_MODE_FILE', 'N8N_CONFIG_FILES']) {
		if (savedEnv[name] === undefined) delete process.env[name];
		else process.env[name] = savedEnv[name];
	}
	delete process.env[STORE_ID_ENV];
});

afterAll(() => {
	closeEmbeddedStores();
	rmSync(userFolder, { recursive: true, force: true });
});

/** Webhook → Reserve (a new node: version 2, no store parameter, no credential) → New: Complete; Duplicate: 200; Not Reserved: 503. */
function workflow(id: string, reserveExtra: Partial<INode> = {}, reserveOptions: INodeParameters = {}): IWorkflowBase {
	const node = packageNode;
	return inProcessWorkflow(
		id,
		[
			node('Webhook', 'testWebhook', {}),
			node('Idempotency Reserve', 'idempotencyReserve', { options: reserveOptions }, { typeVersion: 2, ...reserveExtra }),
			node('Complete', 'idempotencyKey', { operation: 'complete', source: 'item' }, { typeVersion: 2 }),
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

interface Execution {
	run: IRun;
	/** The workflow's static data as n8n would save it after this run (unchanged when the run changed nothing). */
	saved: IDataObject;
}

let executions = 0;

/** One execution as n8n runs it, with the workflow's static data as n8n loaded it; returns what n8n would save. */
async function execute(
	workflowData: IWorkflowBase,
	staticData: IDataObject,
	body: IDataObject,
	mode: WorkflowExecuteMode = 'webhook',
): Promise<Execution> {
	const { run, workflow: loaded } = await executeInProcess(workflowData, `exec-${++executions}`, [webhookItem(body)], base, {
		mode,
		staticData: structuredClone(staticData),
	});
	// n8n saves the static data when a run changed it (and the run is not a manual one).
	const changed = loaded.staticData.__dataChanged === true && mode !== 'manual';
	const saved = changed ? (JSON.parse(JSON.stringify(loaded.staticData)) as IDataObject) : staticData;
	delete saved.__dataChanged;
	return { run, saved };
}

function respondedWith(run: IRun): number | 'complete' | undefined {
	if (itemsAt(run, 'Complete').length > 0) return 'complete';
	for (const name of ['Respond 200', 'Respond 503']) {
		if (itemsAt(run, name).length > 0) return itemsAt(run, name)[0].json.respondedWith as number;
	}
	return undefined;
}

function notReservedError(run: IRun): string {
	return String(itemsAt(run, 'Respond 503')[0]?.json.error ?? run.data.resultData.error?.message);
}

async function storedKey(key: string): Promise<IDataObject | undefined> {
	const found = await openEmbeddedKeyStore({ file: keyFile }).getKeys([key]);
	return found.get(key) as IDataObject | undefined;
}

describe('a new Reserve and Key node (Store: Embedded by default), one n8n process', () => {
	it("reserve and complete in one file in the package's folder of n8n's storage, with no credential", async () => {
		const flow = workflow('wf-single', { onError: 'continueRegularOutput' });
		const first = await execute(flow, {}, { id: 'evt_single_1' });
		expect(first.run.data.resultData.error).toBeUndefined();
		expect(respondedWith(first.run)).toBe('complete');

		// One file for the package, never in a node type's own storage folder, never n8n's database.
		expect(existsSync(keyFile)).toBe(true);
		expect(readdirSync(path.join(userFolder, '.n8n', 'storage'))).toEqual(['n8n-nodes-idempotency']);
		// The Key node completed the key the Reserve node reserved: both opened this file.
		expect(await storedKey('evt:evt_single_1')).toMatchObject({ status: 'completed' });

		const retry = await execute(flow, first.saved, { id: 'evt_single_1' });
		expect(respondedWith(retry.run)).toBe(200);
		// Outside queue mode no record is kept in the workflow.
		expect(retry.saved).toEqual({});
	});
});

describe('a Reserve node and the Key node that settles its keys on different stores', () => {
	it('is refused before anything is reserved: a new Key node (Embedded) after a saved Reserve node (version 1: Postgres)', async () => {
		// The saved Reserve node is version 1 with no store parameter; the credential is never asked for.
		const flow = workflow('wf-mixed', { typeVersion: 1, onError: 'continueRegularOutput' });
		const run = await execute(flow, {}, { id: 'evt_mixed' });
		expect(respondedWith(run.run)).toBe(503);
		expect(notReservedError(run.run)).toMatch(
			/keeps its keys in Postgres, but "Complete" \(Embedded \(This n8n Host\)\).*Nothing was reserved/,
		);
	});

	it('works once both say Embedded', async () => {
		const flow = workflow('wf-mixed-fixed', { typeVersion: 1, onError: 'continueRegularOutput' });
		flow.nodes[1].parameters.store = 'embedded';
		const run = await execute(flow, {}, { id: 'evt_mixed_fixed' });
		expect(respondedWith(run.run)).toBe('complete');
	});
});

describe('queue mode, however n8n was told', () => {
	it.each([
		['EXECUTIONS_MODE_FILE', 'EXECUTIONS_MODE_FILE', 'queue\n'],
		['N8N_CONFIG_FILES (n8n 1.x)', 'N8N_CONFIG_FILES', JSON.stringify({ executions: { mode: 'queue' } })],
	])("%s: without the deployment's store id configured, refused", async (_name, variable, content) => {
		const file = path.join(userFolder, `mode-${executions}.txt`);
		writeFileSync(file, content);
		process.env[variable] = file;
		const run = await execute(
			workflow(`wf-mode-${executions}`, { onError: 'continueRegularOutput' }),
			{},
			{ id: `evt_mode_${executions}` },
		);
		expect(respondedWith(run.run)).toBe(503);
		expect(notReservedError(run.run)).toMatch(/queue mode/);
	});

	it('a config file that says regular leaves a single process alone', async () => {
		const file = path.join(userFolder, 'regular.json');
		writeFileSync(file, JSON.stringify({ executions: { mode: 'regular' } }));
		process.env.N8N_CONFIG_FILES = file;
		const run = await execute(workflow('wf-mode-regular', { onError: 'continueRegularOutput' }), {}, { id: 'evt_mode_regular' });
		expect(respondedWith(run.run)).toBe('complete');
	});
});

describe('queue mode (EXECUTIONS_MODE=queue)', () => {
	beforeEach(() => {
		process.env.EXECUTIONS_MODE = 'queue';
	});

	it("refuses through Not Reserved until the deployment names this file's store id, then proceeds", async () => {
		const flow = workflow('wf-queue', { onError: 'continueRegularOutput' });
		const first = await execute(flow, {}, { id: 'evt_queue_1' });
		expect(respondedWith(first.run)).toBe(503);
		// The message names the id to set, on every process.
		expect(notReservedError(first.run)).toMatch(
			new RegExp(
				`queue mode.*store id ${embeddedStoreId(keyFile)}.*Nothing was reserved.*${STORE_ID_ENV}=${embeddedStoreId(keyFile)}`,
				's',
			),
		);
		expect(await storedKey('evt:evt_queue_1')).toBeUndefined();

		process.env[STORE_ID_ENV] = embeddedStoreId(keyFile);
		const later = await execute(flow, first.saved, { id: 'evt_queue_1' });
		expect(later.run.data.resultData.error).toBeUndefined();
		expect(respondedWith(later.run)).toBe('complete');
		expect(await storedKey('evt:evt_queue_1')).toMatchObject({ status: 'completed' });
	});

	it('refuses a process whose file is not the one the deployment names (another host or n8n folder), and says to use Postgres', async () => {
		process.env[STORE_ID_ENV] = '0b7d2c8e-1f4a-4c3e-9d1b-7a6f5e4d3c2b';
		const flow = workflow('wf-two-files', { onError: 'continueRegularOutput' });
		const run = await execute(flow, {}, { id: 'evt_two_files' });
		expect(respondedWith(run.run)).toBe(503);
		expect(notReservedError(run.run)).toMatch(/different embedded key file.*Store: Postgres/s);
		expect(await storedKey('evt:evt_two_files')).toBeUndefined();
	});

	it('is not let through by On Store Unavailable: Let Through', async () => {
		const flow = workflow('wf-let-through', { onError: 'continueRegularOutput' }, { onStoreUnavailable: 'letThrough' });
		const run = await execute(flow, {}, { id: 'evt_let_through' });
		expect(respondedWith(run.run)).toBe(503);
		expect(itemsAt(run.run, 'Complete')).toHaveLength(0);
	});

	it('under Stop Workflow fails the execution (nothing reaches the business step)', async () => {
		const flow = workflow('wf-stop');
		const run = await execute(flow, {}, { id: 'evt_stop' });
		expect(run.run.status).toBe('error');
		expect(run.run.data.resultData.error?.message).toMatch(/queue mode/);
		expect(respondedWith(run.run)).toBeUndefined();
	});
});
