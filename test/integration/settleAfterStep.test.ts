import {
	ExpressionError,
	NodeConnectionTypes,
	UserError,
	type INode,
	type INodeExecutionData,
	type INodeParameters,
	type IRun,
	type IWorkflowBase,
} from 'n8n-workflow';

import { connectionSettings, postgresSchemaFixture } from '../support/database';
import { webhookItem } from '../support/fakeExecuteFunctions';
import {
	CREDENTIAL_DOWN,
	CREDENTIAL_UP,
	databaseShuttingDown,
	engineWithUpAndDownCredentials,
	inProcessWorkflow,
	n8nDatabase,
	packageNode,
	runWorkflowExecution,
	type EngineBase,
	type OnErrorSetting,
} from '../support/n8nEngine';

/*
 * "Settle After Business Step" through n8n-core's own engine and a real Postgres: the business step
 * is replaced the ways a user replaces it, and the key ends completed exactly when n8n ran the step
 * without error — whatever the step returned — and failed otherwise, with the answer true for it.
 */

const db = postgresSchemaFixture('settlestep', { keyTables: ['processed_events', 'other_events'] });

let base: EngineBase;

beforeAll(() => {
	base = engineWithUpAndDownCredentials(connectionSettings());
});

const ANSWERS = [
	{ name: 'Respond 200 (completed)', status: 200 },
	{ name: 'Respond 500 (failed)', status: 500 },
	{ name: 'Respond 200 (completion refused)', status: 200 },
	{ name: 'Not Settled', status: 0 },
];

interface StepNode {
	name: string;
	type: string;
	parameters?: INodeParameters;
	onError?: OnErrorSetting;
	/** Nodes after this one, in the business branch. */
	next?: StepNode[];
}

interface Options {
	steps: StepNode[];
	/** Where Settle sits: below the business step (the safe wiring) unless moved. */
	settleY?: number;
	settleCredential?: string;
	settleTable?: string;
	executionOrder?: 'v0' | 'v1';
}

const node = packageNode;

const link = (...names: string[]) => names.map((name) => ({ node: name, type: NodeConnectionTypes.Main, index: 0 }));

function workflow(options: Options): IWorkflowBase {
	const credentials = (id: string) => ({ idempotencyPostgresApi: { id, name: 'Idempotency Postgres' } });
	const table = (tableName = 'processed_events') => ({ schemaName: db.schema, tableName });
	const nodes: INode[] = [
		node('Webhook', 'testWebhook'),
		node(
			'Reserve',
			'idempotencyReserve',
			{ keySource: 'auto', mode: 'lease', leaseSeconds: 300, options: table() },
			{ credentials: credentials(CREDENTIAL_UP), onError: 'continueRegularOutput' },
		),
		node(
			'Settle',
			'idempotencyKey',
			{
				operation: 'settle',
				responseJson: '={{ JSON.stringify({ stored: $json.idempotency.key }) }}',
				options: table(options.settleTable),
			},
			{ credentials: credentials(options.settleCredential ?? CREDENTIAL_UP), position: [200, options.settleY ?? 300] },
		),
		...ANSWERS.map(({ name, status }) => node(name, 'testStep', { status: status || 1 })),
		node('Not Reserved', 'testStep', { status: 503 }),
	];
	const connections: IWorkflowBase['connections'] = {
		Webhook: { main: [link('Reserve')] },
		Reserve: { main: [link(...options.steps.map((step) => step.name), 'Settle'), [], [], link('Not Reserved')] },
		Settle: { main: ANSWERS.map(({ name }) => link(name)) },
	};
	const add = (step: StepNode, y: number): void => {
		nodes.push(node(step.name, step.type, step.parameters ?? {}, { position: [200, y], onError: step.onError ?? 'continueErrorOutput' }));
		if (step.next) {
			connections[step.name] = { main: [link(...step.next.map((next) => next.name))] };
			for (const next of step.next) add(next, y);
		}
	};
	options.steps.forEach((step, index) => add(step, index * 10));
	const workflowData = inProcessWorkflow('wf-settle', nodes, connections);
	return { ...workflowData, settings: { executionOrder: options.executionOrder ?? 'v1' } };
}

let executions = 0;
async function deliver(options: Options, bodies: unknown[]): Promise<IRun> {
	executions += 1;
	return await runWorkflowExecution(
		workflow(options),
		`settle-${executions}`,
		bodies.map((body) => webhookItem(body)),
		base,
	);
}

function outputOf(run: IRun, name: string): INodeExecutionData[] {
	return run.data.resultData.runData[name]?.[0]?.data?.main[0] ?? [];
}

/** Which answer node received each event id, keyed by id. */
function answers(run: IRun): Record<string, string> {
	const byId: Record<string, string> = {};
	for (const { name } of [...ANSWERS, { name: 'Not Reserved' }]) {
		for (const item of outputOf(run, name)) {
			const idempotency = item.json.idempotency as { key?: string } | undefined;
			const body = item.json.body as { id?: string } | undefined;
			byId[String(idempotency?.key ?? body?.id)] = name;
		}
	}
	return byId;
}

async function stored(key: string): Promise<{ status: string; last_error: string | null; response: unknown } | undefined> {
	return (await db.pool.query(`select status, last_error, response from ${db.schema}.processed_events where key = $1`, [key])).rows[0];
}

const SUCCEEDING_STEPS: Array<[string, StepNode]> = [
	['returns arbitrary JSON (no id field)', { name: 'HTTP-like Step', type: 'testStep', parameters: { replaceItems: true } }],
	['keeps the input fields (a Set node)', { name: 'Set-like Step', type: 'testStep' }],
	['returns zero items', { name: 'Empty Step', type: 'testStep', parameters: { keepOnlyItem: 7 } }],
	[
		'returns several items without pairing (a Code node)',
		{ name: 'Code-like Step', type: 'testStep', parameters: { splitWithoutPairing: true } },
	],
];

describe('Settle After Business Step completes the key whenever n8n ran the step without error', () => {
	it.each(SUCCEEDING_STEPS)('a step that %s: Completed, the key completed with the stored response', async (_label, step) => {
		const id = `evt_ok_${step.name.replace(/\W/g, '')}`;
		const run = await deliver({ steps: [step] }, [{ id }]);
		expect(run.data.resultData.error).toBeUndefined();
		expect(answers(run)).toEqual({ [`evt:${id}`]: 'Respond 200 (completed)' });
		expect(outputOf(run, 'Respond 200 (completed)')[0].json.idempotency).toMatchObject({
			operation: 'settle',
			stepSucceeded: true,
			applied: true,
			settledAs: 'completed',
		});
		expect(await stored(`evt:${id}`)).toMatchObject({ status: 'completed', last_error: null, response: { stored: `evt:${id}` } });
	});
});

describe('Settle After Business Step marks the key failed whenever the step failed, and the retry runs it again', () => {
	it.each<[string, StepNode, RegExp]>([
		[
			'fails through its error output',
			{ name: 'Failing Step', type: 'testFailingStep', parameters: { shape: 'code', message: 'constraint refused' } },
			/Failing Step: .*constraint refused/,
		],
		[
			'fails like the Postgres node (its text in `message`, beside an error object without one; no paired item)',
			{ name: 'Postgres Step', type: 'testFailingStep', parameters: { shape: 'postgres', message: 'violates check constraint' } },
			/Postgres Step: violates check constraint/,
		],
		[
			'fails as a whole before it runs (its input passed on through the success output)',
			{ name: 'Throwing Step', type: 'testThrowingStep' },
			/Throwing Step: Credential could not be decrypted/,
		],
		[
			'fails as a whole with On Error: Continue (regular output)',
			{ name: 'Throwing Regular', type: 'testThrowingStep', onError: 'continueRegularOutput' },
			/Throwing Regular: Credential could not be decrypted/,
		],
		[
			'fails in a later node of the step (a chain)',
			{
				name: 'First Node',
				type: 'testStep',
				parameters: { replaceItems: true },
				next: [{ name: 'Second Node', type: 'testFailingStep', parameters: { shape: 'code', message: 'second refused' } }],
			},
			/Second Node: .*second refused/,
		],
	])('a step that %s: Failed (500), the key failed with the error; the fixed retry completes it', async (_label, step, message) => {
		const id = `evt_fail_${step.name.replace(/\W/g, '')}`;
		const failed = await deliver({ steps: [step] }, [{ id }]);
		expect(answers(failed)).toEqual({ [`evt:${id}`]: 'Respond 500 (failed)' });
		expect(outputOf(failed, 'Respond 500 (failed)')[0].json.idempotency).toMatchObject({
			stepSucceeded: false,
			stepError: expect.stringMatching(message),
			applied: true,
			settledAs: 'failed',
		});
		expect(await stored(`evt:${id}`)).toMatchObject({ status: 'failed', last_error: expect.stringMatching(message) });

		const retried = await deliver({ steps: [{ name: 'Fixed Step', type: 'testStep' }] }, [{ id }]);
		expect(answers(retried)).toEqual({ [`evt:${id}`]: 'Respond 200 (completed)' });
		expect(await stored(`evt:${id}`)).toMatchObject({ status: 'completed' });
	});

	it('a batch where the step fails for one item: only that key is marked failed', async () => {
		const ids = ['evt_batch_a', 'evt_batch_b', 'evt_batch_c'];
		const run = await deliver(
			{ steps: [{ name: 'Partly Failing', type: 'testPartlyFailingStep', parameters: { failingItem: 1 } }] },
			ids.map((id) => ({ id })),
		);
		expect(answers(run)).toEqual({
			'evt:evt_batch_a': 'Respond 200 (completed)',
			'evt:evt_batch_b': 'Respond 500 (failed)',
			'evt:evt_batch_c': 'Respond 200 (completed)',
		});
		expect((await stored('evt:evt_batch_b'))?.last_error).toMatch(/item 1 refused/);
		expect((await stored('evt:evt_batch_a'))?.status).toBe('completed');
	});
});

describe('Settle After Business Step answers when the key cannot be settled', () => {
	it('the key is gone after a successful step: Completion Refused (200: the effect happened), with the reason', async () => {
		const id = 'evt_refused';
		const run = await deliver({ steps: [{ name: 'Step', type: 'testStep' }], settleTable: 'other_events' }, [{ id }]);
		expect(answers(run)).toEqual({ [`evt:${id}`]: 'Respond 200 (completion refused)' });
		expect(outputOf(run, 'Respond 200 (completion refused)')[0].json.idempotency).toMatchObject({
			stepSucceeded: true,
			applied: false,
			staleReason: 'not_found',
		});
	});

	it.each([
		['succeeded', { name: 'Step', type: 'testStep' }, true],
		['failed', { name: 'Failing', type: 'testFailingStep', parameters: { shape: 'code' } }, false],
	] as Array<[string, StepNode, boolean]>)(
		'the store is unreachable after a step that %s: Not Settled, saying so, never a throw',
		async (_label, step, succeeded) => {
			const id = `evt_down_${String(succeeded)}`;
			const run = await deliver({ steps: [step], settleCredential: CREDENTIAL_DOWN }, [{ id }]);
			expect(run.data.resultData.error).toBeUndefined();
			expect(answers(run)).toEqual({ [`evt:${id}`]: 'Not Settled' });
			const item = outputOf(run, 'Not Settled')[0].json;
			expect(item.idempotency).toMatchObject({ stepSucceeded: succeeded, key: `evt:${id}`, ownerToken: expect.any(String) });
			expect(item.error).toEqual(expect.any(String));
			expect(await stored(`evt:${id}`)).toMatchObject({ status: 'processing' });
		},
		60_000,
	);
});

describe('Idempotency Reserve refuses a wiring that Settle could not judge, before anything is reserved', () => {
	it.each<[string, Options, RegExp]>([
		['the legacy execution order', { steps: [{ name: 'Step', type: 'testStep' }], executionOrder: 'v0' }, /Execution Order "v1/],
		['no business step beside Settle', { steps: [] }, /No business step is connected beside "Settle"/],
	])('%s: Not Reserved with the fix named, no key stored, the step never ran', async (_label, options, message) => {
		const id = `evt_wiring_${executions}`;
		const run = await deliver(options, [{ id }]);
		// Not Reserved items carry the error alone (the recording step adds what it answered).
		expect(outputOf(run, 'Not Reserved').map((item) => item.json)).toEqual([{ error: expect.stringMatching(message), respondedWith: 503 }]);
		expect(ANSWERS.flatMap(({ name }) => outputOf(run, name))).toEqual([]);
		expect(await stored(`evt:${id}`)).toBeUndefined();
		for (const step of options.steps) expect(run.data.resultData.runData[step.name]).toBeUndefined();
	});
});

describe('Settle After Business Step settles by what happened, wherever the step sits and whatever its On Error says', () => {
	it.each<[string, Options]>([
		['a business step that stops the workflow on error', { steps: [{ name: 'Stopping Step', type: 'testStep', onError: 'stopWorkflow' }] }],
		[
			'a later node of the step that stops the workflow',
			{ steps: [{ name: 'A', type: 'testStep', next: [{ name: 'B', type: 'testStep', onError: 'stopWorkflow' }] }] },
		],
	])('%s, succeeding: Completed, the key completed', async (_label, options) => {
		const id = `evt_stop_ok_${executions}`;
		const run = await deliver(options, [{ id }]);
		expect(run.data.resultData.error).toBeUndefined();
		expect(answers(run)).toEqual({ [`evt:${id}`]: 'Respond 200 (completed)' });
		expect(await stored(`evt:${id}`)).toMatchObject({ status: 'completed' });
	});

	it('a business step that stops the workflow and fails: the execution fails, the key is marked failed with the error when it ends', async () => {
		const id = 'evt_stop_fails';
		const run = await deliver(
			{
				steps: [
					{ name: 'Stopping Failure', type: 'testFailingStep', parameters: { shape: 'code', message: 'refused' }, onError: 'stopWorkflow' },
				],
			},
			[{ id }],
		);
		expect(run.data.resultData.error?.message).toMatch(/refused/);
		expect(answers(run)).toEqual({});
		expect(await stored(`evt:${id}`)).toMatchObject({ status: 'failed', last_error: expect.stringMatching(/Stopping Failure: .*refused/) });
	});

	it('a business step below Settle: Settle leaves the key to the end of the execution, which completes it after the step ran', async () => {
		const id = 'evt_low_step';
		const run = await deliver({ steps: [{ name: 'Low Step', type: 'testStep' }], settleY: -100 }, [{ id }]);
		expect(run.data.resultData.error).toBeUndefined();
		expect(run.data.resultData.runData['Low Step']).toHaveLength(1);
		expect(answers(run)).toEqual({});
		expect(await stored(`evt:${id}`)).toMatchObject({ status: 'completed' });
	});
});

describe("Settle After Business Step when n8n's own database goes down after the business step", () => {
	afterEach(() => {
		n8nDatabase.down = false;
		n8nDatabase.failure = databaseShuttingDown;
	});

	it('the credential cannot be read (n8n reads it from its database at every call): Settle uses the settings this process read for Reserve, and completes the key', async () => {
		const id = 'evt_n8n_database_down';
		const lookups = (base.credentialsHelper as unknown as { lookups: string[] }).lookups;
		const before = lookups.length;
		const run = await deliver({ steps: [{ name: 'Step', type: 'testStepN8nDatabaseDown' }] }, [{ id }]);
		// The fault happened: the step ran after Reserve, took n8n's database down, and Settle's read of the credential came after.
		expect(n8nDatabase.down).toBe(true);
		expect(lookups.length - before).toBe(2);
		expect(run.data.resultData.error).toBeUndefined();
		expect(answers(run)).toEqual({ [`evt:${id}`]: 'Respond 200 (completed)' });
		expect(await stored(`evt:${id}`)).toMatchObject({ status: 'completed' });
	});

	it.each<[string, () => Error, RegExp]>([
		[
			'the credential deleted during the run',
			() => new UserError(`Credential with ID "${CREDENTIAL_UP}" does not exist for type "idempotencyPostgresApi".`),
			/does not exist for type/,
		],
		[
			'a policy violation',
			() => new UserError('Blocked by policy: credential type not allowed', { level: 'warning' }),
			/Blocked by policy/,
		],
		['external secrets access denied', () => new ExpressionError('Could not load secrets'), /Could not load secrets/],
	])(
		"n8n refuses the credential after the business step (%s): the settings read for Reserve are not used; Not Settled with n8n's error, the key untouched",
		async (_label, refusal, message) => {
			const id = `evt_refused_${executions}`;
			n8nDatabase.failure = async () => refusal();
			const run = await deliver({ steps: [{ name: 'Step', type: 'testStepN8nDatabaseDown' }] }, [{ id }]);
			expect(n8nDatabase.down).toBe(true);
			expect(answers(run)).toEqual({ [`evt:${id}`]: 'Not Settled' });
			expect(outputOf(run, 'Not Settled')[0].json).toMatchObject({ error: expect.stringMatching(message) });
			expect(await stored(`evt:${id}`)).toMatchObject({ status: 'processing' });
		},
	);

	it("a credential this process never read is not made up: Not Settled, with n8n's error", async () => {
		const run = await deliver({ steps: [{ name: 'Step', type: 'testStepN8nDatabaseDown' }], settleCredential: 'cred-never-read' }, [
			{ id: 'evt_never_read' },
		]);
		expect(answers(run)).toEqual({ 'evt:evt_never_read': 'Not Settled' });
		expect(outputOf(run, 'Not Settled')[0].json).toMatchObject({ error: expect.stringMatching(/the database system is shutting down/) });
	});
});
