// The long-running n8n processes of a stack: main and, in queue mode, `n8n worker` processes, each
// in its own user folder (separate hosts) or all in main's (one host), and optionally one `n8n
// webhook` process (main's user folder: one host) that receives production webhooks on a port of its
// own and queues their executions for the workers. Started, listed, restarted and stopped here.
// Plain CommonJS, Node 20 compatible.
const path = require('node:path');
const { freePort } = require('./postgresServer');
const { spawnService, pidAlive } = require('./childProcesses');

const FOLDER_MODES = ['own', 'shared'];

function checkFolderMode(mode) {
	if (!FOLDER_MODES.includes(mode)) throw new Error(`unknown workerFolders: ${mode}`);
	return mode;
}

/**
 * main's and the workers' processes. `envs` = { base, main } (n8nEnv.stackEnvs); `folderMode` is
 * where the workers start ('own' | 'shared'), changed by restartWorkers.
 */
function n8nProcesses({ n8nBin, workDir, envs, userFolder, workerFolders, folderMode, workerConcurrency, workerEnv, baseUrl, logFile, readyLines, startTimeoutMs, topology, webhookProcess, log }) {
	let mode = checkFolderMode(folderMode);
	let main = null;
	const workers = [];
	let webhook = null; // { service, port, url }
	const workerUserFolder = (index) => (mode === 'shared' ? userFolder : workerFolders[index]);

	const startMain = async () => {
		log(`starting n8n${topology === 'queue' ? ' main (queue mode)' : ''} on ${baseUrl} (log: ${logFile})…`);
		const service = spawnService({ name: 'n8n main', command: n8nBin, args: ['start'], cwd: workDir, env: envs.main, logFile });
		main = service;
		await service.waitReady({ lines: readyLines, url: `${baseUrl}/healthz/readiness`, timeoutMs: startTimeoutMs });
		return service;
	};

	const startWorker = async (index) => {
		const shared = mode === 'shared';
		const env = {
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
		log(`n8n worker ${index + 1} ready (pid ${service.pid}, --concurrency=${workerConcurrency}, ${shared ? "main's user folder" : 'its own user folder'})`);
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
		const service = spawnService({ name: 'n8n webhook', command: n8nBin, args: ['webhook'], cwd: workDir, env, logFile: path.join(workDir, 'n8n-webhook.log') });
		webhook = { service, port, url: `http://127.0.0.1:${port}` };
		await service.waitReady({ lines: ['Webhook listener waiting for requests'], url: `${webhook.url}/healthz/readiness`, timeoutMs: startTimeoutMs });
		log(`n8n webhook process ready on ${webhook.url} (pid ${service.pid}, main's user folder)`);
		return { pid: service.pid, url: webhook.url };
	};
	const webhookInfo = () =>
		webhook && { pid: webhook.service.pid, url: webhook.url, alive: !webhook.service.exited && pidAlive(webhook.service.pid), exited: webhook.service.exited, logFile: webhook.service.logFile, userFolder };

	return {
		get main() {
			return main;
		},
		workers,
		get folderMode() {
			return mode;
		},
		workerUserFolder,
		/** Workers start alongside main: both load every node type, which takes most of the start time. */
		startAll: () => Promise.all([startMain(), startWorkers(), ...(webhookProcess ? [startWebhook()] : [])]),
		/** Every n8n process with its pid and whether it still runs (for fault tests). */
		list: () => ({
			main: { pid: main.pid, alive: !main.exited && pidAlive(main.pid), exited: main.exited, userFolder },
			workerFolders: mode,
			workers: workers.map((w) => ({
				index: w.index,
				pid: w.pid,
				alive: !w.exited && pidAlive(w.pid),
				exited: w.exited,
				logFile: w.logFile,
				userFolder: workerUserFolder(w.index),
			})),
			webhook: webhookInfo(),
		}),
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
		/** Stops main (SIGKILL unless `signal` says otherwise), then starts a new main on the same port. */
		restartMain: async ({ signal = 'SIGKILL' } = {}) => {
			const old = main;
			old.kill(signal);
			await old.exitPromise;
			old.kill('SIGKILL'); // its task runner
			const started = Date.now();
			await startMain(); // ready: its HTTP server answers and its database and Redis are up
			return { oldPid: old.pid, oldExit: old.exited, newPid: main.pid, startMs: Date.now() - started };
		},
		/** Starts worker `index` again (after a test killed it). */
		startWorker: async (index) => {
			const old = workers[index];
			if (old && !old.exited) throw new Error(`worker ${index + 1} still runs (pid ${old.pid})`);
			old?.kill('SIGKILL'); // its task runner, orphaned in the group
			const started = await startWorker(index);
			return { pid: started.pid };
		},
		/** The webhook process and main first (no new jobs), then the workers finish theirs. */
		stop: async () => {
			if (webhook) await webhook.service.stop();
			if (main) await main.stop();
			await Promise.all(workers.filter(Boolean).map((worker) => worker.stop()));
		},
	};
}

module.exports = { n8nProcesses, checkFolderMode };
