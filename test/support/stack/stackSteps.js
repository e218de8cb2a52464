// The steps startStack (n8nStack.js) takes before and after the n8n processes run: the user
// folders with this package installed, the databases, Redis, and the wait until n8n serves the
// published workflows. Each step that starts something pushes its stop onto `stoppers`.
// Plain CommonJS, Node 20 compatible.
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { startPostgres } = require('./postgresServer');
const { startRedis } = require('./redisServer');
const { livePostgresDirs, sleep } = require('./childProcesses');
const { PACKAGE_NAME, buildAndPack, installPackage, installExtraPackage } = require('./n8nInstall');
const { withClient, ensureDatabase, parseUrl, webhookRegistered, waitForPublishedVersions } = require('./n8nDatabase');
const n8nVersions = require('./n8nVersion');

/** Runs the pushed stop functions last first; a failing one is logged and the rest still run. */
function stopList(log) {
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
	return { push: (fn) => stoppers.push(fn), stop };
}

/** One user folder per n8n process, as on separate hosts: main's and one per worker (created). */
function userFolders(workDir, workerCount) {
	const userFolder = path.join(workDir, 'n8n-user');
	const workerFolders = Array.from({ length: workerCount }, (_, i) => path.join(workDir, `n8n-worker-${i + 1}`));
	for (const folder of [userFolder, ...workerFolders]) fs.mkdirSync(folder, { recursive: true });
	return { userFolder, workerFolders };
}

/**
 * Builds and packs this package and installs it into main's nodes folder (through `nodesCacheDir`
 * when given), each worker's nodes folder a link to it. Returns { tarball, packageDir }, both null
 * when `installPackage` is false.
 */
function installThisPackage({ workDir, userFolder, workerFolders, options, log }) {
	if (options.installPackage === false) return { tarball: null, packageDir: null };
	const tarball = buildAndPack({ outDir: path.join(workDir, 'pack'), build: options.build ?? 'auto', log });
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
	// Other packages beside this one (a benchmark's floor node): into this run's folder, never the cache.
	if (options.extraPackages?.length && options.nodesCacheDir) throw new Error('extraPackages cannot go into a shared nodesCacheDir');
	for (const packageDir of options.extraPackages ?? []) installExtraPackage({ userFolder, packageDir, outDir: path.join(workDir, 'pack'), log });
	// Each worker sees main's nodes folder through a symlink, as containers share one mounted
	// nodes volume: the same installed files, without a second install (and its removal) per worker.
	for (const folder of workerFolders) {
		const nodesDir = path.join(folder, '.n8n', 'nodes');
		fs.mkdirSync(path.dirname(nodesDir), { recursive: true });
		fs.rmSync(nodesDir, { recursive: true, force: true });
		fs.symlinkSync(path.join(userFolder, '.n8n', 'nodes'), nodesDir, 'dir');
	}
	return { tarball, packageDir: path.join(userFolder, '.n8n', 'nodes', 'node_modules', PACKAGE_NAME) };
}

/**
 * Postgres (started, or the running server of `postgresUrl`), n8n's database and the app database
 * (created; recreated with `recreateDbs`), then `setupSql` on the app database. Returns { pg,
 * n8nDbUrl, appUrl, app, ctx } — `ctx` is what setupSql and the credentials option receive.
 */
async function startDatabases({ workDir, packageDir, options, stoppers, log }) {
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
	const ctx = { appUrl, app, pgUrl: pg.url, n8nDbUrl, workDir, packageDir };
	if (options.setupSql) await withClient(appUrl, (client) => options.setupSql(client, ctx));
	return { pg, n8nDbUrl, appUrl, app, ctx };
}

/** Redis for queue mode (null otherwise). */
async function startQueueRedis({ topology, workDir, stoppers, log }) {
	if (topology !== 'queue') return null;
	log('starting Redis…');
	const redis = await startRedis({ dir: path.join(workDir, 'redis'), log });
	stoppers.push(() => redis.stop());
	return redis;
}

/**
 * Waits until n8n serves what the stack published: each `readyWebhooks` path registered (n8n 2.x
 * activates published workflows through its publication outbox a few seconds after start; a
 * production webhook exists once its row is in webhook_entity), then the published versions active.
 */
async function waitUntilServing({ n8nDbUrl, readyWebhooks = [], workflows, n8nVersion, processes, startTimeoutMs, deadline, logFile, log }) {
	const until = Date.now() + startTimeoutMs;
	for (const probe of readyWebhooks) {
		while (!(await webhookRegistered(n8nDbUrl, probe))) {
			if (processes.main.exited) throw new Error(`n8n exited during start; see ${logFile}`);
			if (Date.now() > until) throw new Error(`webhook ${probe} was never registered; see ${logFile}`);
			await sleep(250);
		}
	}
	const published = workflows.filter((entry) => entry.publish).map((entry) => entry.json.id);
	if (published.length && n8nVersions.activatesThroughPublication(n8nVersion)) {
		await waitForPublishedVersions(n8nDbUrl, published, { deadline: Math.max(until, deadline), isExited: () => processes.main.exited, log });
	}
}

module.exports = { stopList, userFolders, installThisPackage, startDatabases, startQueueRedis, waitUntilServing };
