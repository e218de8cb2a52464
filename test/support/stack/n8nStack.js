// Starts a real n8n (2.x, Node 24 from the cache that scripts/ensure-n8n.sh fills) on a real Postgres,
// with this package installed by hand into the nodes folder (npm pack → npm install --ignore-scripts
// <tgz> inside $N8N_USER_FOLDER/.n8n/nodes; n8n's own installer is tested by
// test/e2e/community-installer.e2e.test.js). Two topologies: one n8n process ('single'), or n8n's
// queue mode ('queue': Redis, a main instance receiving webhooks, N `n8n worker` processes, each
// with its own user folder — what separate hosts look like — or all sharing main's user folder, as
// processes on one host that share the n8n folder do; see `workerFolders`). Shared by the end-to-end suite and
// `npm run demo`. Plain CommonJS, Node 20 compatible; every process it spawns is stopped by stop(),
// and killed on process exit as a last resort (processes.js).
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startPostgres, freePort, postmasterPid } = require('./postgresServer');
const { startRedis } = require('./redisServer');
const { spawnService, installExitHook, livePostgresDirs, killEverythingNow, pidAlive, sleep } = require('./childProcesses');
const { REPO_ROOT, PACKAGE_NAME, defaultLog, ensureN8n, buildAndPack, distIsStale, installPackage } = require('./n8nInstall');
const n8nDb = require('./n8nDatabase');
const n8nVersions = require('./n8nVersion');

const { parseUrl, withClient, ensureDatabase, webhookRegistered, waitForPublishedVersions } = n8nDb;

// ---------------------------------------------------------------------------------------------
// the stack

/** Settings every n8n process of the stack shares (same database, encryption key and queue). */
function sharedEnv({ nodeBin, n8nDb, redis, options }) {
	const env = {
		...process.env,
		PATH: `${nodeBin}${path.delimiter}${process.env.PATH}`,
		N8N_ENCRYPTION_KEY: options.encryptionKey ?? 'n8n-nodes-idempotency-e2e-key',
		N8N_LISTEN_ADDRESS: '127.0.0.1',
		N8N_HOST: '127.0.0.1',
		N8N_PROTOCOL: 'http',
		N8N_DIAGNOSTICS_ENABLED: 'false',
		N8N_VERSION_NOTIFICATIONS_ENABLED: 'false',
		N8N_PERSONALIZATION_ENABLED: 'false',
		N8N_TEMPLATES_ENABLED: 'false',
		N8N_HIRING_BANNER_ENABLED: 'false',
		N8N_SECURE_COOKIE: 'false',
		N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS: 'false',
		N8N_COMMUNITY_PACKAGES_ENABLED: 'true',
		NODE_FUNCTION_ALLOW_BUILTIN: 'crypto',
		EXECUTIONS_DATA_SAVE_ON_SUCCESS: 'all',
		EXECUTIONS_DATA_SAVE_ON_ERROR: 'all',
		// Published workflows are activated by n8n 2.x's publication outbox after start; poll it often.
		N8N_WORKFLOW_PUBLICATION_OUTBOX_POLL_INTERVAL_MS: '1000',
		// …and repairs a published version that diverged from the active one on this interval (default 10 s);
		// see waitForPublishedVersions.
		N8N_WORKFLOW_PUBLICATION_RECONCILE_INTERVAL_SECONDS: '2',
		N8N_UNVERIFIED_PACKAGES_ENABLED: 'true',
		N8N_LOG_LEVEL: options.logLevel ?? 'info',
		N8N_LOG_OUTPUT: 'console',
		DB_TYPE: 'postgresdb',
		DB_POSTGRESDB_HOST: n8nDb.host,
		DB_POSTGRESDB_PORT: String(n8nDb.port),
		DB_POSTGRESDB_DATABASE: n8nDb.database,
		DB_POSTGRESDB_USER: n8nDb.user,
		DB_POSTGRESDB_PASSWORD: n8nDb.password,
		...(redis
			? {
					EXECUTIONS_MODE: 'queue',
					QUEUE_BULL_REDIS_HOST: redis.host,
					QUEUE_BULL_REDIS_PORT: String(redis.port),
					// Workers answer /healthz/readiness on their own port (QUEUE_HEALTH_CHECK_PORT, per process).
					QUEUE_HEALTH_CHECK_ACTIVE: 'true',
				}
			: {}),
		...(options.env ?? {}),
	};
	// Jest sets NODE_ENV=test and JEST_WORKER_ID; n8n then refuses to load nodes ("Not available in tests").
	env.NODE_ENV = 'production';
	delete env.JEST_WORKER_ID;
	delete env.NODE_OPTIONS; // jest/ts-node flags must not leak into n8n
	return env;
}

/**
 * Starts Postgres (+ Redis) + n8n. Options:
 *  workDir        directory for n8n's user folders, logs and imports (created)
 *  topology       'single' (default) | 'queue' (Redis + main + workers)
 *  workers        number of `n8n worker` processes in queue mode (default 2)
 *  workerConcurrency  --concurrency of each worker (default 5)
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
async function startStack(options) {
	const log = options.log ?? defaultLog;
	const topology = options.topology ?? 'single';
	if (!['single', 'queue'].includes(topology)) throw new Error(`unknown topology: ${topology}`);
	const workerCount = topology === 'queue' ? (options.workers ?? 2) : 0;
	const workerConcurrency = options.workerConcurrency ?? 5;
	let workerFolderMode = options.workerFolders ?? 'own';
	if (!['own', 'shared'].includes(workerFolderMode)) throw new Error(`unknown workerFolders: ${workerFolderMode}`);
	const workDir = path.resolve(options.workDir);
	fs.mkdirSync(workDir, { recursive: true });
	// As root, embedded Postgres runs as the 'postgres' user, which must be able to reach its data dir.
	if (process.getuid?.() === 0) fs.chmodSync(workDir, 0o755);
	installExitHook({ handleSignals: options.handleSignals !== false });

	const stoppers = [];
	const stop = async () => {
		while (stoppers.length) {
			const fn = stoppers.pop();
			try {
				await fn();
			} catch (error) {
				log(`cleanup step failed: ${error.message}`);
			}
		}
	};

	try {
		const n8nVersion = options.n8nVersion ?? n8nVersions.selectedN8nVersion();
		const { nodeBin, n8nBin, dir: n8nDir } = ensureN8n({ log, version: n8nVersion });
		// One user folder per n8n process, as on separate hosts; the package is installed once (below).
		const userFolder = path.join(workDir, 'n8n-user');
		const workerFolders = Array.from({ length: workerCount }, (_, i) => path.join(workDir, `n8n-worker-${i + 1}`));
		for (const folder of [userFolder, ...workerFolders]) fs.mkdirSync(folder, { recursive: true });

		let tarball = null;
		if (options.installPackage !== false) {
			tarball = buildAndPack({ outDir: path.join(workDir, 'pack'), build: options.build ?? 'auto', log });
			if (options.nodesCacheDir) {
				// The nodes folder is installed once per tarball in the cache and linked from this run's user
				// folder: a rerun (or the other topology) with the same package skips the npm install.
				const digest = crypto.createHash('sha256').update(fs.readFileSync(tarball)).digest('hex').slice(0, 16);
				fs.mkdirSync(options.nodesCacheDir, { recursive: true });
				for (const stale of fs.readdirSync(options.nodesCacheDir).filter((name) => name !== digest)) {
					fs.rmSync(path.join(options.nodesCacheDir, stale), { recursive: true, force: true });
				}
				const cached = path.join(options.nodesCacheDir, digest);
				installPackage({ userFolder: cached, tarball, log });
				fs.mkdirSync(path.join(userFolder, '.n8n'), { recursive: true });
				fs.symlinkSync(path.join(cached, '.n8n', 'nodes'), path.join(userFolder, '.n8n', 'nodes'), 'dir');
			} else {
				installPackage({ userFolder, tarball, log });
			}
			// Each worker sees main's nodes folder through a symlink, as containers share one mounted
			// nodes volume: the same installed files, without a second install (and its removal) per worker.
			for (const folder of workerFolders) {
				const nodesDir = path.join(folder, '.n8n', 'nodes');
				fs.mkdirSync(path.dirname(nodesDir), { recursive: true });
				fs.rmSync(nodesDir, { recursive: true, force: true });
				fs.symlinkSync(path.join(userFolder, '.n8n', 'nodes'), nodesDir, 'dir');
			}
		}

		log('starting Postgres…');
		const pgDir = options.pgDir ?? path.join(workDir, 'pg');
		fs.mkdirSync(path.dirname(pgDir), { recursive: true });
		const pg = options.postgresUrl
			? { url: options.postgresUrl, external: true, stop: async () => {} }
			: await startPostgres({ baseDir: pgDir, persistent: options.persistentPg ?? false, port: options.pgPort });
		if (!pg.external) {
			livePostgresDirs.add(pg.databaseDir);
			stoppers.push(async () => {
				await pg.stop();
				livePostgresDirs.delete(pg.databaseDir);
			});
		}
		const dbNames = { n8n: 'n8n', app: 'idempotency', ...(options.dbNames ?? {}) };
		const n8nDbUrl = await ensureDatabase(pg.url, dbNames.n8n, { recreate: options.recreateDbs });
		const appUrl = await ensureDatabase(pg.url, dbNames.app, { recreate: options.recreateDbs });
		const app = parseUrl(appUrl);
		const packageDir = tarball ? path.join(userFolder, '.n8n', 'nodes', 'node_modules', PACKAGE_NAME) : null;
		const ctx = { appUrl, app, pgUrl: pg.url, n8nDbUrl, workDir, packageDir };
		if (options.setupSql) await withClient(appUrl, (client) => options.setupSql(client, ctx));

		let redis = null;
		if (topology === 'queue') {
			log('starting Redis…');
			redis = await startRedis({ dir: path.join(workDir, 'redis'), log });
			stoppers.push(() => redis.stop());
		}

		const port = options.port ?? (await freePort());
		const base = sharedEnv({ nodeBin, n8nDb: parseUrl(n8nDbUrl), redis, options });
		if (topology === 'queue' && packageDir) {
			// Queue mode on one host, as a user sets it up: the key file in main's n8n folder, its store id
			// given to main and every worker. A worker in a folder of its own opens another file and is refused.
			const { createEmbeddedStore, embeddedStoreFile } = require('./embeddedStore');
			base.IDEMPOTENCY_EMBEDDED_STORE_ID = createEmbeddedStore({ nodeBin, packageDir, file: embeddedStoreFile(userFolder) });
		}
		const env = { ...base, N8N_USER_FOLDER: userFolder, N8N_PORT: String(port), N8N_RUNNERS_BROKER_PORT: String(await freePort()), ...(options.mainEnv ?? {}) };
		const logFile = path.join(workDir, 'n8n.log');

		/** Runs an n8n CLI command to completion (Node 24); returns stdout. */
		const cli = (args, { allowFailure = false } = {}) =>
			new Promise((resolve, reject) => {
				const service = spawnService({ name: `n8n ${args[0]}`, command: n8nBin, args, cwd: workDir, env, logFile });
				service.exitPromise.then(({ code }) => {
					service.kill('SIGKILL'); // task runner children, if any are left
					const output = service.output();
					if (code !== 0 && !allowFailure) reject(new Error(`n8n ${args.join(' ')} failed (exit ${code}):\n${output.slice(-3000)}`));
					else resolve({ code, stdout: output, stderr: '' });
				});
			});

		const importDir = path.join(workDir, 'import');
		fs.rmSync(importDir, { recursive: true, force: true });
		fs.mkdirSync(path.join(importDir, 'workflows'), { recursive: true });
		const credentials = options.credentials ? options.credentials(ctx) : [];
		const importCredentials = async () => {
			if (!credentials.length) return;
			const file = path.join(importDir, 'credentials.json');
			fs.writeFileSync(file, JSON.stringify(credentials), { mode: 0o600 });
			log(`importing ${credentials.length} credential(s)…`);
			try {
				await cli(['import:credentials', `--input=${file}`]);
			} finally {
				fs.rmSync(file, { force: true }); // plain-text secrets do not stay on disk
			}
		};
		const workflows = (options.workflows ?? []).map((entry) => {
			const json = entry.json ?? JSON.parse(fs.readFileSync(entry.file, 'utf8'));
			return { ...entry, json };
		});
		const importWorkflows = async () => {
			if (!workflows.length) return;
			for (const { json } of workflows) {
				fs.writeFileSync(path.join(importDir, 'workflows', `${json.id}.json`), JSON.stringify(json, null, '\t'));
			}
			log(`importing ${workflows.length} workflow(s)…`);
			await cli(['import:workflow', '--separate', `--input=${path.join(importDir, 'workflows')}`]);
			// Each CLI run boots n8n (several seconds): the publications run side by side.
			const activations = workflows
				.filter((entry) => entry.publish)
				.map((entry) => n8nVersions.activateWorkflowArgs(n8nVersion, entry.json))
				.filter(Boolean);
			log(`activating ${activations.length} workflow(s)…`);
			await Promise.all(activations.map((args) => cli(args)));
		};
		// One after the other: the first CLI run migrates n8n's fresh database, and two at once race on
		// it (n8n 1.x fails with "column … already exists"); later runs find it migrated.
		await importCredentials();
		await importWorkflows();

		const baseUrl = `http://127.0.0.1:${port}`;
		const startTimeoutMs = options.startTimeoutMs ?? 180000;
		const readyLines = options.readyLines ?? n8nVersions.readyLogLines(n8nVersion);
		let main = null;
		const startMain = async () => {
			log(`starting n8n${topology === 'queue' ? ' main (queue mode)' : ''} on ${baseUrl} (log: ${logFile})…`);
			const service = spawnService({ name: 'n8n main', command: n8nBin, args: ['start'], cwd: workDir, env, logFile });
			main = service;
			await service.waitReady({ lines: readyLines, url: `${baseUrl}/healthz/readiness`, timeoutMs: startTimeoutMs });
			return service;
		};

		const workers = [];
		const startWorker = async (index) => {
			const shared = workerFolderMode === 'shared';
			const workerEnv = {
				...base,
				N8N_USER_FOLDER: shared ? userFolder : workerFolders[index],
				// In one folder each process keeps an event log of its own (n8n names it per process type only).
				...(shared ? { N8N_EVENTBUS_LOGWRITER_LOGBASENAME: `n8nEventLog-${index + 1}` } : {}),
				N8N_RUNNERS_BROKER_PORT: String(await freePort()),
				QUEUE_HEALTH_CHECK_PORT: String(await freePort()),
				...(options.workerEnv ?? {}),
			};
			const file = path.join(workDir, `n8n-worker-${index + 1}.log`);
			const service = spawnService({
				name: `n8n worker ${index + 1}`,
				command: n8nBin,
				args: ['worker', `--concurrency=${workerConcurrency}`],
				cwd: workDir,
				env: workerEnv,
				logFile: file,
			});
			service.index = index;
			workers[index] = service;
			await service.waitReady({
				lines: ['n8n worker is now ready'],
				url: `http://127.0.0.1:${workerEnv.QUEUE_HEALTH_CHECK_PORT}/healthz/readiness`,
				timeoutMs: startTimeoutMs,
			});
			log(`n8n worker ${index + 1} ready (pid ${service.pid}, --concurrency=${workerConcurrency}, ${shared ? "main's user folder" : 'its own user folder'})`);
			return service;
		};
		stoppers.push(async () => {
			// Main first (no new jobs), then the workers finish theirs.
			if (main) await main.stop();
			await Promise.all(workers.filter(Boolean).map((worker) => worker.stop()));
		});

		const deadline = Date.now() + startTimeoutMs;
		// Workers start alongside main: both load every node type, which takes most of the start time.
		await Promise.all([startMain(), ...workerFolders.map((_, i) => startWorker(i))]);

		const waitUntilServing = async () => {
			const until = Date.now() + startTimeoutMs;
			// n8n 2.x activates published workflows through its publication outbox a few seconds after
			// start; a production webhook exists once its row is in webhook_entity.
			for (const probe of options.readyWebhooks ?? []) {
				while (!(await webhookRegistered(n8nDbUrl, probe))) {
					if (main.exited) throw new Error(`n8n exited during start; see ${logFile}`);
					if (Date.now() > until) throw new Error(`webhook ${probe} was never registered; see ${logFile}`);
					await sleep(250);
				}
			}
			const published = workflows.filter((entry) => entry.publish).map((entry) => entry.json.id);
			if (published.length && n8nVersions.activatesThroughPublication(n8nVersion)) {
				await waitForPublishedVersions(n8nDbUrl, published, { deadline: Math.max(until, deadline), isExited: () => main.exited, log });
			}
		};
		await waitUntilServing();
		log(`n8n is ready at ${baseUrl}`);

		return {
			n8nVersion,
			topology,
			baseUrl,
			port,
			webhookUrl: (p) => `${baseUrl}/webhook/${p}`,
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
				return main;
			},
			workers,
			nodeBin,
			/** 'own' or 'shared': where the workers run now (see the workerFolders option). */
			get workerFolders() {
				return workerFolderMode;
			},
			/** The n8n user folder a worker runs in now. */
			workerUserFolder: (index) => (workerFolderMode === 'shared' ? userFolder : workerFolders[index]),
			/** Every n8n process with its pid and whether it still runs (for fault tests). */
			processes: () => ({
				main: { pid: main.pid, alive: !main.exited && pidAlive(main.pid), exited: main.exited, userFolder },
				workerFolders: workerFolderMode,
				workers: workers.map((w) => ({
					index: w.index,
					pid: w.pid,
					alive: !w.exited && pidAlive(w.pid),
					exited: w.exited,
					logFile: w.logFile,
					userFolder: workerFolderMode === 'shared' ? userFolder : workerFolders[w.index],
				})),
			}),
			/**
			 * Stops every worker (gracefully: running jobs finish) and starts them again in `folders`
			 * ('own' | 'shared'); a no-op when they already run so.
			 */
			restartWorkers: async ({ folders }) => {
				if (!['own', 'shared'].includes(folders)) throw new Error(`unknown workerFolders: ${folders}`);
				if (folders === workerFolderMode && workers.every((w) => w && !w.exited)) return { folders, restarted: false };
				const started = Date.now();
				await Promise.all(workers.filter(Boolean).map((w) => w.stop()));
				workerFolderMode = folders;
				await Promise.all(workerFolders.map((_, i) => startWorker(i)));
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
			/** Restarts the Postgres server (n8n's and the app's database): new postmaster, same data and port. */
			restartPostgres: async () => {
				if (!pg.restart) throw new Error('Postgres from DATABASE_URL cannot be restarted by the harness');
				const before = postmasterPid(pg.databaseDir);
				const started = Date.now();
				await pg.restart();
				return { before, after: postmasterPid(pg.databaseDir), ms: Date.now() - started };
			},
			/** What another process needs to run the n8n CLI against this stack (only n8n/DB settings). */
			cliSpec: {
				n8nBin,
				cwd: workDir,
				env: Object.fromEntries(Object.entries(env).filter(([key]) => /^(N8N_|DB_|EXECUTIONS_|QUEUE_|NODE_FUNCTION_|NODE_ENV$|PATH$)/.test(key))),
			},
			output: () => main.output(),
			stop,
		};
	} catch (error) {
		await stop();
		throw error;
	}
}

// ---------------------------------------------------------------------------------------------
// talking to n8n

/** A tiny cookie-keeping REST client for n8n's internal API (/rest). */
/** n8n answers JSON on its REST API and Respond nodes may not: both callers keep the raw text too. */
function parseJsonOrUndefined(text) {
	try {
		return JSON.parse(text);
	} catch {
		return undefined;
	}
}

function restClient(baseUrl) {
	let cookie = '';
	const call = async (method, route, body) => request(method, `/rest${route}`, body);
	const request = async (method, pathname, body) => {
		const res = await fetch(`${baseUrl}${pathname}`, {
			method,
			headers: { 'content-type': 'application/json', 'browser-id': 'n8n-nodes-idempotency', ...(cookie ? { cookie } : {}) },
			body: body === undefined ? undefined : JSON.stringify(body),
		});
		const setCookie = res.headers.getSetCookie?.() ?? [];
		const auth = setCookie.map((c) => c.split(';')[0]).find((c) => c.startsWith('n8n-auth='));
		if (auth) cookie = auth;
		const text = await res.text();
		return { status: res.status, json: parseJsonOrUndefined(text), text };
	};
	return {
		call,
		/** Any path of the server, with the login cookie (e.g. the editor's /types/nodes.json). */
		request,
		/**
		 * Creates the owner on a fresh instance, else logs in with the same account. n8n allows 5
		 * logins per account per minute, and every e2e file needs a session: the session cookie is
		 * kept in a file per instance and reused while n8n still accepts it.
		 */
		async ownerLogin({ email, password, firstName = 'Demo', lastName = 'Owner' }) {
			const sessionFile = path.join(os.tmpdir(), `n8n-idempotency-session-${crypto.createHash('sha256').update(`${baseUrl} ${email}`).digest('hex').slice(0, 16)}`);
			const saved = fs.existsSync(sessionFile) ? fs.readFileSync(sessionFile, 'utf8') : '';
			if (saved) {
				cookie = saved;
				const current = await call('GET', '/login');
				if (current.status === 200 && current.json?.data?.email === email) return current.json;
				cookie = '';
			}
			const setup = await call('POST', '/owner/setup', { email, password, firstName, lastName });
			const login = setup.status === 200 ? setup : await call('POST', '/login', { emailOrLdapLoginId: email, password });
			if (login.status !== 200) throw new Error(`n8n owner setup (${setup.status}) and login (${login.status}) failed: ${login.text.slice(0, 300)}`);
			if (cookie) fs.writeFileSync(sessionFile, cookie, { mode: 0o600 });
			return login.json;
		},
		async testCredential(credential) {
			return call('POST', '/credentials/test', { credentials: credential });
		},
	};
}

// ---------------------------------------------------------------------------------------------
// the shipped templates, wired to the stack's databases (shared by the e2e suite and the demo)

const TEMPLATE_DIR = path.join(REPO_ROOT, 'templates');
const TEMPLATES = {
	webhook: path.join(TEMPLATE_DIR, 'idempotent-webhook.json'),
	cleanup: path.join(TEMPLATE_DIR, 'scheduled-cleanup.json'),
	error: path.join(TEMPLATE_DIR, 'error-workflow.json'),
	replay: path.join(TEMPLATE_DIR, 'replay-failed-events.json'),
	// The zero-setup twins (Store: Embedded, no Postgres credential).
	webhookEmbedded: path.join(TEMPLATE_DIR, 'idempotent-webhook-embedded.json'),
	cleanupEmbedded: path.join(TEMPLATE_DIR, 'scheduled-cleanup-embedded.json'),
	errorEmbedded: path.join(TEMPLATE_DIR, 'error-workflow-embedded.json'),
};
/** The credential ids and names the templates reference. */
const TEMPLATE_CREDENTIALS = {
	idempotency: { id: 'idempotencyPg01', name: 'Idempotency Postgres', type: 'idempotencyPostgresApi' },
	business: { id: 'businessPg01', name: 'Business Postgres', type: 'postgres' },
	signature: { id: 'webhookSig01', name: 'Webhook Signature Secret', type: 'webhookSignatureApi' },
};

/**
 * The Stripe endpoint signing secret of the test/demo credential "Webhook Signature Secret". A fixed
 * test value, not a real secret: the e2e suite and the demo act as Stripe and sign with it.
 */
const TEST_WEBHOOK_SECRET = 'whsec_test_secret_for_e2e';

function idempotencyCredentialData(app) {
	return { host: app.host, port: app.port, database: app.database, user: app.user, password: app.password, ssl: 'disable', maxConnections: 10 };
}
function businessCredentialData(app) {
	return { host: app.host, port: app.port, database: app.database, user: app.user, password: app.password, ssl: 'disable' };
}

/** The one credential the embedded webhook template needs: the signing secret. */
function signatureCredentials() {
	return [{ ...TEMPLATE_CREDENTIALS.signature, data: { secret: TEST_WEBHOOK_SECRET } }];
}

/** The credentials the webhook template uses: both Postgres ones (the app database) and the signing secret. */
function templateCredentials(ctx) {
	return [
		{ ...TEMPLATE_CREDENTIALS.idempotency, data: idempotencyCredentialData(ctx.app) },
		{ ...TEMPLATE_CREDENTIALS.business, data: businessCredentialData(ctx.app) },
		{ ...TEMPLATE_CREDENTIALS.signature, data: { secret: TEST_WEBHOOK_SECRET } },
	];
}

const BUSINESS_LOG_DDL = `CREATE TABLE IF NOT EXISTS business_log (
	id bigserial PRIMARY KEY,
	event_key text NOT NULL,
	event_type text,
	created_at timestamptz NOT NULL DEFAULT now()
)`;

/** Creates the package's table with the migrations the installed package ships (in file order), and the example business table. */
async function prepareTemplateTables(client, ctx, { reset = false } = {}) {
	const shipped = ctx.packageDir && path.join(ctx.packageDir, 'dist', 'sql', 'migrations', 'keys');
	const ddlDir = shipped && fs.existsSync(shipped) ? shipped : path.join(REPO_ROOT, 'sql', 'migrations', 'keys');
	const ddlFiles = fs.readdirSync(ddlDir).filter((name) => name.endsWith('.sql')).sort();
	for (const name of ddlFiles) await client.query(fs.readFileSync(path.join(ddlDir, name), 'utf8'));
	await client.query(BUSINESS_LOG_DDL);
	if (reset) await client.query('TRUNCATE business_log, processed_events RESTART IDENTITY');
	return ddlDir;
}

/**
 * A `Stripe-Signature` header value, computed the way Stripe does:
 * `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body bytes>")>`. The secret is used as
 * text, `whsec_` prefix included. For the test client acting as Stripe.
 */
function stripeSignature(raw, { secret = TEST_WEBHOOK_SECRET, timestamp = Math.floor(Date.now() / 1000) } = {}) {
	const bytes = Buffer.isBuffer(raw) ? raw : Buffer.from(raw, 'utf8');
	const signed = Buffer.concat([Buffer.from(`${timestamp}.`, 'utf8'), bytes]);
	const v1 = crypto.createHmac('sha256', secret).update(signed).digest('hex');
	return `t=${timestamp},v1=${v1}`;
}

/**
 * One HTTP delivery; returns status, the template's x-idempotency-outcome header, the body and the
 * Stripe-Signature header sent. Signed like Stripe with the test secret unless `sign: false`;
 * `secret` and `timestamp` change the signature; a `stripe-signature` in `headers` replaces it.
 */
async function deliver(url, body, headers = {}, { sign = true, secret, timestamp } = {}) {
	const raw = typeof body === 'string' ? body : JSON.stringify(body);
	const sent = new Headers({ 'content-type': 'application/json' });
	if (sign) sent.set('stripe-signature', stripeSignature(raw, { secret, timestamp }));
	for (const [name, value] of Object.entries(headers)) sent.set(name, value);
	const started = Date.now();
	const res = await fetch(url, { method: 'POST', headers: sent, body: raw });
	const text = await res.text();
	const json = parseJsonOrUndefined(text);
	return {
		status: res.status,
		outcome: res.headers.get('x-idempotency-outcome'),
		json,
		text,
		ms: Date.now() - started,
		raw,
		signature: sent.get('stripe-signature'),
	};
}

module.exports = {
	TEMPLATES,
	TEMPLATE_CREDENTIALS,
	TEST_WEBHOOK_SECRET,
	templateCredentials,
	signatureCredentials,
	idempotencyCredentialData,
	businessCredentialData,
	prepareTemplateTables,
	deliver,
	stripeSignature,
	REPO_ROOT,
	PACKAGE_NAME,
	ensureN8n,
	buildAndPack,
	distIsStale,
	installPackage,
	startStack,
	restClient,
	...n8nDb, // listExecutions, waitForExecutions, maxExecutionId, withClient, …
	killEverythingNow,
	sleep,
};
