// Starts a real n8n (2.x, Node 24 from the cache that scripts/ensure-n8n.sh fills) on a real Postgres,
// with this package installed by hand into the nodes folder (npm pack → npm install --ignore-scripts
// <tgz> inside $N8N_USER_FOLDER/.n8n/nodes; n8n's own installer is tested by
// test/e2e/community-installer.e2e.test.js). Two topologies: one n8n process ('single'), or n8n's
// queue mode ('queue': Redis, a main instance receiving webhooks, N `n8n worker` processes, each
// with its own user folder — what separate hosts look like — or all sharing main's user folder, as
// processes on one host that share the n8n folder do; see `workerFolders`). Shared by the end-to-end suite and
// `npm run demo`. Node 20 compatible; every process it spawns is stopped by stop(),
// and killed on process exit as a last resort (childProcesses.ts).
//
// The steps live beside it: stackSteps.ts (folders and package, databases, Redis, serving),
// n8nEnv.ts, n8nCli.ts (CLI and import), n8nProcesses.ts (main and workers). This module also
// gathers what callers use with a stack: n8nRest.ts, templateSetup.ts, stripeDelivery.ts,
// n8nInstall.ts and n8nDatabase.ts.
import fs from 'node:fs';
import path from 'node:path';
import type { ClientBase } from 'pg';
import { freePort, postmasterPid, type RestartOptions } from './postgresServer';
import { installExitHook, killEverythingNow, sleep, type ServiceHandle } from './childProcesses';
import { REPO_ROOT, PACKAGE_NAME, defaultLog, ensureN8n, buildAndPack, distIsStale, installPackage } from './n8nInstall';
import * as n8nDb from './n8nDatabase';
import * as n8nVersions from './n8nVersion';
import {
	stopList,
	userFolders,
	installThisPackage,
	startDatabases,
	startQueueRedis,
	waitUntilServing,
	type StackContext,
} from './stackSteps';
import { stackEnvs, cliEnv } from './n8nEnv';
import { cliRunner, readWorkflows, importIntoN8n, type Cli, type CredentialEntry, type WorkflowEntry } from './n8nCli';
import { n8nProcesses, checkFolderMode, type FolderMode, type N8nProcesses } from './n8nProcesses';
import { restClient } from './n8nRest';
import { TEST_WEBHOOK_SECRET, stripeSignature, deliver } from './stripeDelivery';
import { timed } from './timings';

export * from './templateSetup'; // TEMPLATES, TEMPLATE_CREDENTIALS, templateCredentials, prepareTemplateTables, …
export * from './n8nDatabase'; // listExecutions, waitForExecutions, maxExecutionId, withClient, …
export {
	TEST_WEBHOOK_SECRET,
	deliver,
	stripeSignature,
	REPO_ROOT,
	PACKAGE_NAME,
	ensureN8n,
	buildAndPack,
	distIsStale,
	installPackage,
	restClient,
	killEverythingNow,
	sleep,
};
export type { StackContext } from './stackSteps';
export type { CredentialEntry, WorkflowEntry, WorkflowJson, Cli, CliResult } from './n8nCli';
export type { FolderMode, ProcessList, ProcessInfo } from './n8nProcesses';
export type { ServiceHandle, ServiceExit } from './childProcesses';
export type { RestClient, RestResponse } from './n8nRest';
export type { Delivery, DeliverOptions } from './stripeDelivery';

/** One n8n process ('single') or n8n's queue mode ('queue': Redis, main and workers). */
export type Topology = 'single' | 'queue';

/** The options of startStack (see there). */
export interface StackOptions {
	workDir: string;
	topology?: Topology;
	workers?: number;
	workerConcurrency?: number;
	webhookProcess?: boolean;
	workerFolders?: FolderMode;
	pgDir?: string;
	pgPort?: number;
	postgresUrl?: string;
	persistentPg?: boolean;
	dbNames?: { n8n?: string; app?: string };
	recreateDbs?: boolean;
	build?: 'auto' | boolean;
	installPackage?: boolean;
	nodesCacheDir?: string;
	extraPackages?: string[];
	setupSql?: (client: ClientBase, ctx: StackContext) => unknown;
	credentials?: (ctx: StackContext) => CredentialEntry[];
	workflows?: WorkflowEntry[];
	readyWebhooks?: string[];
	readyLines?: string[];
	port?: number;
	n8nVersion?: string;
	encryptionKey?: string;
	logLevel?: string;
	env?: Record<string, string>;
	mainEnv?: Record<string, string>;
	workerEnv?: Record<string, string>;
	startTimeoutMs?: number;
	handleSignals?: boolean;
	log?: (line: string) => void;
}

/** A running stack, as startStack returns it. */
export interface Stack {
	n8nVersion: string;
	topology: Topology;
	baseUrl: string;
	port: number;
	webhookUrl: (path: string) => string;
	appUrl: string;
	n8nDbUrl: string;
	pgUrl: string;
	app: n8nDb.DatabaseSettings;
	userFolder: string;
	workDir: string;
	logFile: string;
	n8nDir: string;
	tarball: string | null;
	packageDir: string | null;
	redis: { host: string; port: number; pid: number } | null;
	cli: Cli;
	readonly main: ServiceHandle;
	workers: ServiceHandle[];
	nodeBin: string;
	/** 'own' or 'shared': where the workers run now (see the workerFolders option). */
	readonly workerFolders: FolderMode;
	/** The n8n user folder a worker runs in now. */
	workerUserFolder: N8nProcesses['workerUserFolder'];
	processes: N8nProcesses['list'];
	restartWorkers: N8nProcesses['restartWorkers'];
	restartMain: N8nProcesses['restartMain'];
	ensureWebhookProcess: N8nProcesses['ensureWebhookProcess'];
	restartWebhookProcess: N8nProcesses['restartWebhookProcess'];
	startWorker: N8nProcesses['startWorker'];
	restartWorker: N8nProcesses['restartWorker'];
	restartPostgres: (options?: RestartOptions) => Promise<{ before: number | null; after: number | null; ms: number }>;
	/** What another process needs to run the n8n CLI against this stack. */
	cliSpec: { n8nBin: string; cwd: string; env: NodeJS.ProcessEnv };
	output: () => string;
	stop: () => Promise<void>;
}

/**
 * Starts Postgres (+ Redis) + n8n. Options:
 *  workDir        directory for n8n's user folders, logs and imports (created)
 *  topology       'single' (default) | 'queue' (Redis + main + workers)
 *  workers        number of `n8n worker` processes in queue mode (default 2)
 *  workerConcurrency  --concurrency of each worker (default 5)
 *  webhookProcess true to start an `n8n webhook` process too (queue mode; main's user folder, its
 *                 own port); ensureWebhookProcess() starts one on a running stack
 *  workerFolders  'own' (default: each worker has its own n8n user folder, as on separate hosts) or
 *                 'shared' (every worker runs in main's user folder, as processes on one host can);
 *                 restartWorkers({ folders }) changes it on a running stack
 *  pgDir          embedded Postgres data dir (persistent when given), default workDir/pg
 *  postgresUrl    use this running Postgres server (an admin connection URL) instead of starting one
 *  persistentPg   keep the Postgres data dir between runs (demo)
 *  dbNames        { n8n, app } database names (default n8n / idempotency)
 *  recreateDbs    drop and recreate both databases first (e2e)
 *  build          'auto' | true | false — see buildAndPack
 *  installPackage false to skip packing/installing this package (stock-node harness)
 *  nodesCacheDir  install the package once per tarball there and link it (e2e reruns)
 *  extraPackages  folders of other node packages to pack and install beside this one (benchmarks)
 *  setupSql       async (appClient, ctx) => void, run on the app database before n8n starts
 *  credentials    (ctx) => array of credential objects for `n8n import:credentials`
 *  workflows      array of { file | json, publish: boolean }
 *  port           n8n (main) port (default: free port)
 *  env            extra environment for every n8n process
 *  mainEnv        extra environment for main and the CLI runs only, applied last
 *  workerEnv      extra environment for the workers only (queue mode), applied last
 *  log            (line) => void
 * Returns { baseUrl, webhookUrl(path), appUrl, n8nDbUrl, cli(args), main, workers, processes(),
 * restartMain(), startWorker(i), restartWorkers({ folders }), restartPostgres(), stop(), ... }.
 */
export async function startStack(options: StackOptions): Promise<Stack> {
	const log = options.log ?? defaultLog;
	const topology: Topology = options.topology ?? 'single';
	if (!['single', 'queue'].includes(topology)) throw new Error(`unknown topology: ${topology}`);
	const workerCount = topology === 'queue' ? (options.workers ?? 2) : 0;
	const folderMode = checkFolderMode(options.workerFolders ?? 'own');
	const workDir = path.resolve(options.workDir);
	fs.mkdirSync(workDir, { recursive: true });
	// As root, embedded Postgres runs as the 'postgres' user, which must be able to reach its data dir.
	if (process.getuid?.() === 0) fs.chmodSync(workDir, 0o755);
	installExitHook({ handleSignals: options.handleSignals !== false });

	const stoppers = stopList(log);
	try {
		const n8nVersion = options.n8nVersion ?? n8nVersions.selectedN8nVersion();
		const {
			nodeBin,
			n8nBin,
			dir: n8nDir,
		} = timed(`n8n ${n8nVersion} install or cache check`, () => ensureN8n({ log, version: n8nVersion }));
		const { userFolder, workerFolders } = userFolders(workDir, workerCount);
		const { tarball, packageDir } = timed('package pack and install', () =>
			installThisPackage({ workDir, userFolder, workerFolders, options, log }),
		);
		const { pg, n8nDbUrl, appUrl, app, ctx } = await timed('Postgres start and databases', () =>
			startDatabases({ workDir, packageDir, options, stoppers, log }),
		);
		const redis = await timed(`Redis start (${topology})`, () => startQueueRedis({ topology, workDir, stoppers, log }));

		const port = options.port ?? (await freePort());
		const envs = await stackEnvs({ nodeBin, n8nDbUrl, parseUrl: n8nDb.parseUrl, redis, options, topology, userFolder, packageDir, port });
		const logFile = path.join(workDir, 'n8n.log');
		const cli = cliRunner({ n8nBin, workDir, env: envs.main, logFile });
		const workflows = readWorkflows(options.workflows);
		await timed('n8n import of credentials and workflows', () =>
			importIntoN8n({
				cli,
				workDir,
				credentials: options.credentials ? options.credentials(ctx) : [],
				workflows,
				n8nVersion,
				n8nDbUrl,
				log,
			}),
		);

		const baseUrl = `http://127.0.0.1:${port}`;
		const startTimeoutMs = options.startTimeoutMs ?? 180000;
		const processes = n8nProcesses({
			n8nBin,
			workDir,
			envs,
			userFolder,
			workerFolders,
			folderMode,
			workerConcurrency: options.workerConcurrency ?? 5,
			workerEnv: options.workerEnv,
			baseUrl,
			logFile,
			readyLines: options.readyLines ?? n8nVersions.readyLogLines(n8nVersion),
			startTimeoutMs,
			topology,
			webhookProcess: options.webhookProcess === true,
			log,
		});
		stoppers.push(processes.stop);
		const deadline = Date.now() + startTimeoutMs;
		await timed(`n8n start until serving (${topology})`, async () => {
			await processes.startAll();
			await waitUntilServing({
				n8nDbUrl,
				readyWebhooks: options.readyWebhooks,
				workflows,
				n8nVersion,
				processes,
				startTimeoutMs,
				deadline,
				logFile,
				log,
			});
		});
		log(`n8n is ready at ${baseUrl}`);

		return {
			n8nVersion,
			topology,
			baseUrl,
			port,
			webhookUrl: (p: string) => `${baseUrl}/webhook/${p}`,
			appUrl,
			n8nDbUrl,
			pgUrl: pg.url,
			app,
			userFolder,
			workDir,
			logFile,
			n8nDir,
			tarball,
			packageDir,
			redis: redis && { host: redis.host, port: redis.port, pid: redis.pid },
			cli,
			get main() {
				return processes.main;
			},
			workers: processes.workers,
			nodeBin,
			/** 'own' or 'shared': where the workers run now (see the workerFolders option). */
			get workerFolders() {
				return processes.folderMode;
			},
			/** The n8n user folder a worker runs in now. */
			workerUserFolder: processes.workerUserFolder,
			processes: processes.list,
			restartWorkers: processes.restartWorkers,
			restartMain: processes.restartMain,
			ensureWebhookProcess: processes.ensureWebhookProcess,
			restartWebhookProcess: processes.restartWebhookProcess,
			startWorker: processes.startWorker,
			restartWorker: processes.restartWorker,
			/** Restarts the Postgres server (n8n's and the app's database): new postmaster, same data and port. */
			/** Fast shutdown and a new postmaster; `downMs` keeps the server stopped that long in between. */
			restartPostgres: async ({ downMs = 0 }: RestartOptions = {}) => {
				if (!pg.restart) throw new Error('Postgres from DATABASE_URL cannot be restarted by the harness');
				const before = postmasterPid(pg.databaseDir);
				const started = Date.now();
				await pg.restart({ downMs });
				return { before, after: postmasterPid(pg.databaseDir), ms: Date.now() - started };
			},
			/** What another process needs to run the n8n CLI against this stack. */
			cliSpec: { n8nBin, cwd: workDir, env: cliEnv(envs.main) },
			output: () => processes.main.output(),
			stop: stoppers.stop,
		};
	} catch (error) {
		await stoppers.stop();
		throw error;
	}
}
