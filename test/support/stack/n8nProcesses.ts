// The long-running n8n processes of a stack: main and, in queue mode, `n8n worker` processes, each
// in its own user folder (separate hosts) or all in main's (one host), and optionally one `n8n
// webhook` process (main's user folder: one host) that receives production webhooks on a port of its
// own and queues their executions for the workers. Started, listed, restarted and stopped here.
// Node 20 compatible.
import path from 'node:path';
import { freePort } from './postgresServer';
import { spawnService, pidAlive, type ServiceExit, type ServiceHandle } from './childProcesses';
import type { StackEnvs } from './n8nEnv';
import type { Topology } from './n8nStack';

const FOLDER_MODES = ['own', 'shared'] as const;

/** Where the workers run: each in its own user folder ('own', separate hosts) or all in main's ('shared', one host). */
export type FolderMode = (typeof FOLDER_MODES)[number];

export function checkFolderMode(mode: string): FolderMode {
	if (!(FOLDER_MODES as readonly string[]).includes(mode)) throw new Error(`unknown workerFolders: ${mode}`);
	return mode as FolderMode;
}

/** One n8n process as processes() lists it. */
export interface ProcessInfo {
	pid: number;
	alive: boolean;
	exited: ServiceExit | null;
	userFolder: string;
	logFile?: string;
}

/** Every n8n process of a stack with its pid and whether it still runs. */
export interface ProcessList {
	main: ProcessInfo;
	workerFolders: FolderMode;
	workers: Array<ProcessInfo & { index: number | undefined; logFile: string }>;
	webhook: (ProcessInfo & { url: string; logFile: string }) | null;
}

export interface N8nProcessesOptions {
	n8nBin: string;
	workDir: string;
	envs: StackEnvs;
	userFolder: string;
	workerFolders: string[];
	folderMode: FolderMode;
	workerConcurrency: number;
	workerEnv?: NodeJS.ProcessEnv;
	baseUrl: string;
	logFile: string;
	readyLines: string[];
	startTimeoutMs: number;
	topology: Topology;
	webhookProcess: boolean;
	log: (line: string) => void;
}

/** main's, the workers' and the webhook process's restarts, as the stack hands them to tests. */
export interface N8nProcesses {
	readonly main: ServiceHandle;
	workers: ServiceHandle[];
	readonly folderMode: FolderMode;
	workerUserFolder: (index: number) => string;
	startAll: () => Promise<unknown>;
	list: () => ProcessList;
	ensureWebhookProcess: () => Promise<{ pid: number; url: string; started: boolean }>;
	restartWebhookProcess: (options?: {
		signal?: NodeJS.Signals;
	}) => Promise<{ oldPid: number; oldExit: ServiceExit | null; newPid: number; url: string; startMs: number }>;
	restartWorkers: (options: { folders: FolderMode }) => Promise<{ folders: FolderMode; restarted: boolean; ms?: number; pids?: number[] }>;
	restartMain: (options?: {
		signal?: NodeJS.Signals;
		downMs?: number;
	}) => Promise<{ oldPid: number; oldExit: ServiceExit | null; newPid: number; startMs: number }>;
	startWorker: (index: number) => Promise<{ pid: number }>;
	restartWorker: (index: number) => Promise<{ oldPid: number; newPid: number; ms: number }>;
	stop: () => Promise<void>;
}

/**
 * main's and the workers' processes. `envs` = { base, main } (n8nEnv.stackEnvs); `folderMode` is
 * where the workers start ('own' | 'shared'), changed by restartWorkers.
 */
export function n8nProcesses({
	n8nBin,
	workDir,
	envs,
	userFolder,
	workerFolders,
	folderMode,
	workerConcurrency,
	workerEnv,
	baseUrl,
	logFile,
	readyLines,
	startTimeoutMs,
	topology,
	webhookProcess,
	log,
}: N8nProcessesOptions): N8nProcesses {
	let mode = checkFolderMode(folderMode);
	let main: ServiceHandle | null = null;
	const workers: ServiceHandle[] = [];
	let webhook: { service: ServiceHandle; port: number; url: string } | null = null;
	const workerUserFolder = (index: number) => (mode === 'shared' ? userFolder : workerFolders[index]);

	const startMain = async () => {
		log(`starting n8n${topology === 'queue' ? ' main (queue mode)' : ''} on ${baseUrl} (log: ${logFile})…`);
		const service = spawnService({ name: 'n8n main', command: n8nBin, args: ['start'], cwd: workDir, env: envs.main, logFile });
		main = service;
		await service.waitReady({ lines: readyLines, url: `${baseUrl}/healthz/readiness`, timeoutMs: startTimeoutMs });
		return service;
	};

	const startWorker = async (index: number) => {
		const shared = mode === 'shared';
		const env: NodeJS.ProcessEnv = {
			...envs.base,
			N8N_USER_FOLDER: workerUserFolder(index),
			// In one folder each process keeps an event log of its own (n8n names it per process type only).
			...(shared ? { N8N_EVENTBUS_LOGWRITER_LOGBASENAME: `n8nEventLog-${index + 1}` } : {}),
			N8N_RUNNERS_BROKER_PORT: String(await freePort()),
			QUEUE_HEALTH_CHECK_PORT: String(await freePort()),
			...(workerEnv ?? {}),
		};
		const service = spawnService({
			name: `n8n worker ${index + 1}`,
			command: n8nBin,
			args: ['worker', `--concurrency=${workerConcurrency}`],
			cwd: workDir,
			env,
			logFile: path.join(workDir, `n8n-worker-${index + 1}.log`),
		});
		service.index = index;
		workers[index] = service;
		await service.waitReady({
			lines: ['n8n worker is now ready'],
			url: `http://127.0.0.1:${env.QUEUE_HEALTH_CHECK_PORT}/healthz/readiness`,
			timeoutMs: startTimeoutMs,
		});
		log(
			`n8n worker ${index + 1} ready (pid ${service.pid}, --concurrency=${workerConcurrency}, ${shared ? "main's user folder" : 'its own user folder'})`,
		);
		return service;
	};
	const startWorkers = () => Promise.all(workerFolders.map((_, i) => startWorker(i)));

	/**
	 * The `n8n webhook` process, in main's user folder (one host: the embedded key file and its store
	 * id are main's), on its own port; a restart keeps the port, as a load balancer's target does.
	 */
	const startWebhook = async () => {
		if (topology !== 'queue') throw new Error('an n8n webhook process runs in queue mode only');
		if (webhook && !webhook.service.exited) throw new Error(`the webhook process still runs (pid ${webhook.service.pid})`);
		const port = webhook?.port ?? (await freePort());
		const env = {
			...envs.base,
			N8N_USER_FOLDER: userFolder,
			N8N_PORT: String(port),
			N8N_RUNNERS_BROKER_PORT: String(await freePort()),
		};
		const service = spawnService({
			name: 'n8n webhook',
			command: n8nBin,
			args: ['webhook'],
			cwd: workDir,
			env,
			logFile: path.join(workDir, 'n8n-webhook.log'),
		});
		webhook = { service, port, url: `http://127.0.0.1:${port}` };
		await service.waitReady({
			lines: ['Webhook listener waiting for requests'],
			url: `${webhook.url}/healthz/readiness`,
			timeoutMs: startTimeoutMs,
		});
		log(`n8n webhook process ready on ${webhook.url} (pid ${service.pid}, main's user folder)`);
		return { pid: service.pid, url: webhook.url };
	};
	const webhookInfo = () =>
		webhook && {
			pid: webhook.service.pid,
			url: webhook.url,
			alive: !webhook.service.exited && pidAlive(webhook.service.pid),
			exited: webhook.service.exited,
			logFile: webhook.service.logFile,
			userFolder,
		};

	return {
		/** Set once startAll (or restartMain) started it. */
		get main() {
			return main as ServiceHandle;
		},
		workers,
		get folderMode() {
			return mode;
		},
		workerUserFolder,
		/** Workers start alongside main: both load every node type, which takes most of the start time. */
		startAll: () => Promise.all([startMain(), startWorkers(), ...(webhookProcess ? [startWebhook()] : [])]),
		/** Every n8n process with its pid and whether it still runs (for fault tests). */
		list: () => {
			const running = main as ServiceHandle;
			return {
				main: { pid: running.pid, alive: !running.exited && pidAlive(running.pid), exited: running.exited, userFolder },
				workerFolders: mode,
				workers: workers.map((w) => ({
					index: w.index,
					pid: w.pid,
					alive: !w.exited && pidAlive(w.pid),
					exited: w.exited,
					logFile: w.logFile,
					userFolder: workerUserFolder(w.index as number),
				})),
				webhook: webhookInfo(),
			};
		},
		/** Starts the `n8n webhook` process when it does not run (queue mode): { pid, url, started }. */
		ensureWebhookProcess: async () => {
			if (webhook && !webhook.service.exited) return { pid: webhook.service.pid, url: webhook.url, started: false };
			webhook?.service.kill('SIGKILL'); // its task runner, orphaned in the group
			return { ...(await startWebhook()), started: true };
		},
		/** Kills the webhook process (SIGKILL unless `signal` says otherwise) and starts it again on its port. */
		restartWebhookProcess: async ({ signal = 'SIGKILL' } = {}) => {
			if (!webhook) throw new Error('no webhook process was started');
			const old = webhook.service;
			old.kill(signal);
			await old.exitPromise;
			old.kill('SIGKILL');
			const started = Date.now();
			const next = await startWebhook();
			return { oldPid: old.pid, oldExit: old.exited, newPid: next.pid, url: next.url, startMs: Date.now() - started };
		},
		/**
		 * Stops every worker (gracefully: running jobs finish) and starts them again in `folders`
		 * ('own' | 'shared'); a no-op when they already run so.
		 */
		restartWorkers: async ({ folders }) => {
			checkFolderMode(folders);
			if (folders === mode && workers.every((w) => w && !w.exited)) return { folders, restarted: false };
			const started = Date.now();
			await Promise.all(workers.filter(Boolean).map((w) => w.stop()));
			mode = folders;
			await startWorkers();
			return { folders, restarted: true, ms: Date.now() - started, pids: workers.map((w) => w.pid) };
		},
		/**
		 * Stops main (SIGKILL unless `signal` says otherwise), leaves it down `downMs` (an outage), then
		 * starts a new main on the same port.
		 */
		restartMain: async ({ signal = 'SIGKILL', downMs = 0 } = {}) => {
			const old = main as ServiceHandle;
			old.kill(signal);
			await old.exitPromise;
			old.kill('SIGKILL'); // its task runner
			if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
			const started = Date.now();
			const next = await startMain(); // ready: its HTTP server answers and its database and Redis are up
			return { oldPid: old.pid, oldExit: old.exited, newPid: next.pid, startMs: Date.now() - started };
		},
		/** Starts worker `index` again (after a test killed it). */
		startWorker: async (index) => {
			const old = workers[index];
			if (old && !old.exited) throw new Error(`worker ${index + 1} still runs (pid ${old.pid})`);
			old?.kill('SIGKILL'); // its task runner, orphaned in the group
			const started = await startWorker(index);
			return { pid: started.pid };
		},
		/** Stops worker `index` gracefully (its running jobs finish) and starts it again in the same folder. */
		restartWorker: async (index) => {
			const old = workers[index];
			const started = Date.now();
			await old.stop();
			const next = await startWorker(index);
			return { oldPid: old.pid, newPid: next.pid, ms: Date.now() - started };
		},
		/** The webhook process and main first (no new jobs), then the workers finish theirs. */
		stop: async () => {
			if (webhook) await webhook.service.stop();
			if (main) await main.stop();
			await Promise.all(workers.filter(Boolean).map((worker) => worker.stop()));
		},
	};
}
