// Starts the whole stack once for the end-to-end suite: n8n 2.x (Node 24, cached install), an
// embedded Postgres (n8n's own database and the app database), this package packed and installed as
// a community package, the templates imported and published. State for the tests goes to a file;
// the stop function stays in this (parent) process for globalTeardown.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as stack from '../stack/n8nStack';
import { checkFolderMode } from '../stack/n8nProcesses';
import { allWorkflows, WEBHOOK_PATH, CRASH_PATH, type StackWorkflow } from './workflows';
import { STATE_FILE, E2E_ROOT, type E2eState } from './paths';
import { TOPOLOGY, QUEUE } from './topology';
import { serveControl, type RunningStack } from './control';

declare global {
	// The running stack and its control endpoint, kept in jest's parent process for globalTeardown.
	var __IDEMPOTENCY_E2E_STACK__: RunningStack | undefined;
	var __IDEMPOTENCY_E2E_CONTROL__: Awaited<ReturnType<typeof serveControl>> | undefined;
}

/** A workflow of the suite as the stack imports it: by its id, which every one of them has. */
function stackEntry(entry: StackWorkflow): stack.WorkflowEntry {
	if (!('json' in entry)) return entry;
	const { id } = entry.json;
	if (!id) throw new Error(`the e2e workflow "${entry.json.name}" has no id: the stack imports workflows by id`);
	return { ...entry, json: { ...entry.json, id } };
}

/** The variables of an environment that are set (what the state file keeps of it). */
function setVariables(env: NodeJS.ProcessEnv): Record<string, string> {
	return Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
}

export default async function globalSetup(): Promise<void> {
	const started = Date.now();
	const log = (line: string) => process.stderr.write(`[e2e ${((Date.now() - started) / 1000).toFixed(1)}s] ${line}\n`);
	fs.mkdirSync(E2E_ROOT, { recursive: true });
	const workDir = fs.mkdtempSync(path.join(E2E_ROOT, 'run-'));
	log(`work dir ${workDir} (${os.cpus().length} cores, topology ${TOPOLOGY})`);
	const queue = TOPOLOGY === 'queue';
	const workerFolders = queue ? checkFolderMode(QUEUE.workerFolders) : undefined;
	const running = await stack.startStack({
		workDir,
		topology: TOPOLOGY,
		...(queue ? { workers: QUEUE.workers, workerConcurrency: QUEUE.workerConcurrency, workerFolders, env: QUEUE.env } : {}),
		recreateDbs: true,
		dbNames: { n8n: 'n8n_e2e', app: 'idempotency_e2e' },
		build: process.env.E2E_BUILD === 'always' ? true : 'auto',
		nodesCacheDir: path.join(E2E_ROOT, 'nodes-cache'),
		setupSql: (client: Parameters<typeof stack.prepareTemplateTables>[0], ctx: Parameters<typeof stack.prepareTemplateTables>[1]) =>
			stack.prepareTemplateTables(client, ctx),
		credentials: stack.templateCredentials,
		workflows: allWorkflows(TOPOLOGY).map(stackEntry),
		readyWebhooks: [WEBHOOK_PATH, CRASH_PATH],
		log,
	});
	globalThis.__IDEMPOTENCY_E2E_STACK__ = running;
	if (!running.packageDir) throw new Error('the e2e stack installed no package: the tests need its folder');
	const control = await serveControl(running);
	globalThis.__IDEMPOTENCY_E2E_CONTROL__ = control;
	const state: E2eState = {
		topology: TOPOLOGY,
		controlUrl: control.url,
		redis: running.redis,
		baseUrl: running.baseUrl,
		appUrl: running.appUrl,
		n8nDbUrl: running.n8nDbUrl,
		n8nDir: running.n8nDir,
		n8nVersion: running.n8nVersion,
		workDir,
		logFile: running.logFile,
		packageDir: running.packageDir,
		userFolder: running.userFolder,
		nodeBin: running.nodeBin,
		cliSpec: { ...running.cliSpec, env: setVariables(running.cliSpec.env) },
		app: running.app,
		setupSeconds: (Date.now() - started) / 1000,
	};
	fs.writeFileSync(STATE_FILE, JSON.stringify(state, null, 2), { mode: 0o600 });
	log(`stack ready in ${state.setupSeconds.toFixed(1)} s`);
}
