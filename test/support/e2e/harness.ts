// What the end-to-end tests use to talk to the running stack (started by globalSetup).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import type { Client, QueryResult } from 'pg';
import * as stack from '../stack/n8nStack';
import { freePort } from '../stack/postgresServer';
import { STATE_FILE, type E2eState } from './paths';
import { IDS, WEBHOOK_PATH, CRASH_PATH, type Json } from './workflows';
import { controlClient, type ControlClient } from './control';
import type { Topology } from './tags';

/** One execution of a workflow as n8n stored it: id, status, the nodes that ran, their run data. */
export type Execution = Awaited<ReturnType<typeof stack.listExecutions>>[number];
/** What a delivery got back (see stack.deliver): status, outcome header, body, the signature sent. */
export type DeliveryAnswer = Awaited<ReturnType<typeof stack.deliver>>;
/**
 * How a delivery is signed and sent (stack.deliver): unsigned with `sign: false`; `secret` and
 * `timestamp` change the signature; the sender gives up after `timeoutMs`.
 */
export interface DeliverOptions {
	sign?: boolean;
	secret?: string;
	timestamp?: number;
	timeoutMs?: number;
}

/** What the n8n CLI did: exit code and output. */
export interface CliResult {
	code: number | null;
	stdout: string;
	stderr: string;
}

/** The running stack as a test file sees it (harness()). */
export interface Harness {
	state: E2eState;
	topology: Topology;
	/** Fault injection in the stack's owner process (see control.ts): control('POST /kill-worker', { index }). */
	control: ControlClient;
	IDS: typeof IDS;
	webhookUrl: string;
	crashUrl: string;
	/** A delivery signed like Stripe with the test secret (see stack.deliver for the options). */
	deliver: (url: string, body: unknown, headers?: Record<string, string>, options?: DeliverOptions) => Promise<DeliveryAnswer>;
	/** A Stripe-Signature header value for raw bytes: (raw, { secret, timestamp }). */
	stripeSignature: typeof stack.stripeSignature;
	secret: string;
	/** Runs a query on the app database (business_log, processed_events). */
	appQuery: (sql: string, params?: unknown[]) => Promise<QueryResult>;
	/** Runs a query on n8n's own database (execution_entity); see test/support/stack/n8nDatabase.js for what is read where. */
	n8nQuery: (sql: string, params?: unknown[]) => Promise<QueryResult>;
	/** The highest execution id so far: executions after it belong to the current test. */
	executionMark: () => Promise<number>;
	executions: (workflowId: string, sinceId: number) => Promise<Execution[]>;
	waitForExecutions: (workflowId: string, sinceId: number, count: number, options?: { timeoutMs?: number }) => Promise<Execution[]>;
	rest: () => ReturnType<typeof stack.restClient>;
	/** Runs the n8n CLI (Node 24) against the stack's database, e.g. ['execute', '--id=…', '--rawOutput']. */
	cli: (args: string[]) => Promise<CliResult>;
}

function withoutJest(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
	delete env.JEST_WORKER_ID;
	delete env.NODE_OPTIONS;
	return env;
}

function loadState(): E2eState {
	if (!fs.existsSync(STATE_FILE)) throw new Error(`no e2e stack state at ${STATE_FILE}: run through jest.e2e.config.js`);
	return JSON.parse(fs.readFileSync(STATE_FILE, 'utf8'));
}

export function harness(): Harness {
	const state = loadState();
	const executionArgs = (workflowId: string, sinceId: number) => ({ n8nDbUrl: state.n8nDbUrl, n8nDir: state.n8nDir, workflowId, sinceId });
	return {
		state,
		topology: state.topology,
		control: controlClient(state.controlUrl),
		IDS,
		webhookUrl: `${state.baseUrl}/webhook/${WEBHOOK_PATH}`,
		crashUrl: `${state.baseUrl}/webhook/${CRASH_PATH}`,
		deliver: stack.deliver,
		stripeSignature: stack.stripeSignature,
		secret: stack.TEST_WEBHOOK_SECRET,
		appQuery: (sql, params) => stack.withClient(state.appUrl, (client: Client) => client.query(sql, params)),
		n8nQuery: (sql, params) => stack.withClient(state.n8nDbUrl, (client: Client) => client.query(sql, params)),
		executionMark: () => stack.maxExecutionId(state.n8nDbUrl),
		executions: (workflowId, sinceId) => stack.listExecutions(executionArgs(workflowId, sinceId)),
		waitForExecutions: (workflowId, sinceId, count, options) => stack.waitForExecutions(executionArgs(workflowId, sinceId), count, options),
		rest: () => stack.restClient(state.baseUrl),
		cli: async (args) => {
			// Its own task-broker port: the running n8n holds the stack's one.
			const brokerPort = String(await freePort());
			return new Promise<CliResult>((resolve, reject) => {
				const child = spawn(state.cliSpec.n8nBin, args, {
					cwd: state.cliSpec.cwd,
					env: withoutJest({ ...process.env, ...state.cliSpec.env, N8N_RUNNERS_BROKER_PORT: brokerPort }),
					detached: true,
					stdio: ['ignore', 'pipe', 'pipe'],
				});
				let stdout = '';
				let stderr = '';
				child.stdout.on('data', (chunk) => (stdout += chunk));
				child.stderr.on('data', (chunk) => (stderr += chunk));
				const timer = setTimeout(() => {
					try {
						process.kill(-child.pid!, 'SIGKILL');
					} catch {
						// the group is gone already
					}
				}, 180000);
				child.on('error', reject);
				child.on('close', (code) => {
					clearTimeout(timer);
					try {
						process.kill(-child.pid!, 'SIGKILL'); // its task runner, if left behind
					} catch {
						// the group is gone already
					}
					resolve({ code, stdout, stderr });
				});
			});
		},
	};
}

/** Index of the output of `nodeName` that carried items in an execution (e.g. Reserve: 0 new, 1 duplicate, 2 in progress). */
export function outputTaken(execution: Execution, nodeName: string): number {
	const run = execution.runData[nodeName]?.[0];
	const main: unknown[] = run?.data?.main ?? [];
	return main.findIndex((items) => Array.isArray(items) && items.length > 0);
}

/** The first item a node emitted on a given output. */
export function outputItem(execution: Execution, nodeName: string, outputIndex = 0): Json {
	return execution.runData[nodeName]?.[0]?.data?.main?.[outputIndex]?.[0]?.json;
}

/** A fresh event id per test run, so reruns against a kept database never collide. */
export function eventId(label: string): string {
	return `evt_e2e_${label}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
}

/** The n8n owner account the suite creates (first caller) or logs in with (every later caller). */
export const OWNER = { email: 'e2e-owner@example.com', password: 'E2eOwnerPassw0rd', firstName: 'E2E', lastName: 'Owner' };

/** The webhook template's node names. */
export const NODE = {
	verify: 'Webhook Signature Verify',
	respond401: 'Respond 401 (invalid signature)',
	couldNotVerify: 'Could Not Verify?',
	reserve: 'Idempotency Reserve',
	business: 'Business Step (insert business_log)',
	settle: 'Settle (complete or mark failed)',
	respond200: 'Respond 200',
	respondDuplicate: 'Respond 200 (duplicate, replay)',
	respond409: 'Respond 409 (in progress)',
	respond500: 'Respond 500 (provider retries)',
};
