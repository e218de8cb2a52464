// What the end-to-end tests use to talk to the running stack (started by globalSetup).
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const stack = require('../stack/n8nStack');
const { freePort } = require('../stack/postgresServer');
const { STATE_FILE } = require('./paths');
const { IDS, WEBHOOK_PATH, CRASH_PATH } = require('./workflows');
const { controlClient } = require('./control');

function withoutJest(env) {
	delete env.JEST_WORKER_ID;
	delete env.NODE_OPTIONS;
	return env;
}

function loadState() {
	if (!fs.existsSync(STATE_FILE)) throw new Error(`no e2e stack state at ${STATE_FILE}: run through jest.e2e.config.js`);
	return JSON.parse(fs.readFileSync(STATE_FILE, 'utf8'));
}

function harness() {
	const state = loadState();
	const executionArgs = (workflowId, sinceId) => ({ n8nDbUrl: state.n8nDbUrl, n8nDir: state.n8nDir, workflowId, sinceId });
	return {
		state,
		topology: state.topology,
		/** Fault injection in the stack's owner process (see control.js): control('POST /kill-worker', { index }). */
		control: controlClient(state.controlUrl),
		IDS,
		webhookUrl: `${state.baseUrl}/webhook/${WEBHOOK_PATH}`,
		crashUrl: `${state.baseUrl}/webhook/${CRASH_PATH}`,
		/** A delivery signed like Stripe with the test secret (see stack.deliver for the options). */
		deliver: stack.deliver,
		/** A Stripe-Signature header value for raw bytes: (raw, { secret, timestamp }). */
		stripeSignature: stack.stripeSignature,
		secret: stack.TEST_WEBHOOK_SECRET,
		/** Runs a query on the app database (business_log, processed_events). */
		appQuery: (sql, params) => stack.withClient(state.appUrl, (client) => client.query(sql, params)),
		/** Runs a query on n8n's own database (execution_entity); see test/support/stack/n8nDatabase.js for what is read where. */
		n8nQuery: (sql, params) => stack.withClient(state.n8nDbUrl, (client) => client.query(sql, params)),
		/** The highest execution id so far: executions after it belong to the current test. */
		executionMark: () => stack.maxExecutionId(state.n8nDbUrl),
		executions: (workflowId, sinceId) => stack.listExecutions(executionArgs(workflowId, sinceId)),
		waitForExecutions: (workflowId, sinceId, count, options) =>
			stack.waitForExecutions(executionArgs(workflowId, sinceId), count, options),
		rest: () => stack.restClient(state.baseUrl),
		/** Runs the n8n CLI (Node 24) against the stack's database, e.g. ['execute', '--id=…', '--rawOutput']. */
		cli: async (args) => {
			// Its own task-broker port: the running n8n holds the stack's one.
			const brokerPort = String(await freePort());
			return new Promise((resolve, reject) => {
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
						process.kill(-child.pid, 'SIGKILL');
					} catch {}
				}, 180000);
				child.on('error', reject);
				child.on('close', (code) => {
					clearTimeout(timer);
					try {
						process.kill(-child.pid, 'SIGKILL'); // its task runner, if left behind
					} catch {}
					resolve({ code, stdout, stderr });
				});
			});
		},
	};
}

/** Index of the output of `nodeName` that carried items in an execution (e.g. Reserve: 0 new, 1 duplicate, 2 in progress). */
function outputTaken(execution, nodeName) {
	const run = execution.runData[nodeName]?.[0];
	const main = run?.data?.main ?? [];
	return main.findIndex((items) => Array.isArray(items) && items.length > 0);
}

/** The first item a node emitted on a given output. */
function outputItem(execution, nodeName, outputIndex = 0) {
	return execution.runData[nodeName]?.[0]?.data?.main?.[outputIndex]?.[0]?.json;
}

/** A fresh event id per test run, so reruns against a kept database never collide. */
function eventId(label) {
	return `evt_e2e_${label}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
}

/** The n8n owner account the suite creates (first caller) or logs in with (every later caller). */
const OWNER = { email: 'e2e-owner@example.com', password: 'E2eOwnerPassw0rd', firstName: 'E2E', lastName: 'Owner' };

module.exports = { harness, outputTaken, outputItem, eventId, OWNER, NODE: {
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
} };
