// The steps startStack (n8nStack.js) takes before and after the n8n processes run: the user
// folders with this package installed, the databases, Redis, and the wait until n8n serves the
// published workflows. Each step that starts something pushes its stop onto `stoppers`.
// Node 20 compatible.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { startPostgres, type PostgresServer } from './postgresServer';
import { startRedis, type RedisServer } from './redisServer';
import { livePostgresDirs, sleep } from './childProcesses';
import { PACKAGE_NAME, buildAndPack, installPackage, installExtraPackage } from './n8nInstall';
import { withClient, ensureDatabase, parseUrl, webhookRegistered, waitForPublishedVersions, type DatabaseSettings } from './n8nDatabase';
import type { ReadWorkflow } from './n8nCli';
import type { N8nProcesses } from './n8nProcesses';
import type { StackOptions, Topology } from './n8nStack';
import * as n8nVersions from './n8nVersion';

type Log = (line: string) => void;

/** What a stack's setupSql and credentials options receive. */
export interface StackContext {
	appUrl: string;
	app: DatabaseSettings;
	pgUrl: string;
	n8nDbUrl: string;
	workDir: string;
	packageDir: string | null;
}

/** The stop functions of what a stack started, run last first by stop(). */
export interface StopList {
	push: (fn: () => unknown) => number;
	stop: () => Promise<void>;
}

/** Runs the pushed stop functions last first; a failing one is logged and the rest still run. */
export function stopList(log: Log): StopList {
	const stoppers: Array<() => unknown> = [];
	const stop = async () => {
		while (stoppers.length) {
			const fn = stoppers.pop() as () => unknown;
			try {
				await fn();
			} catch (error) {
				// Not `instanceof Error`: in a jest sandbox, errors of Node's own modules come from another realm.
				log(
					`cleanup step failed: ${typeof error === 'object' && error !== null && 'message' in error ? String(error.message) : String(error)}`,
				);
			}
		}
	};
	return { push: (fn) => stoppers.push(fn), stop };
}

/** One user folder per n8n process, as on separate hosts: main's and one per worker (created). */
export function userFolders(workDir: string, workerCount: number): { userFolder: string; workerFolders: string[] } {
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
export function installThisPackage({
	workDir,
	userFolder,
	workerFolders,
	options,
	log,
}: {
	workDir: string;
	userFolder: string;
	workerFolders: string[];
	options: Pick<StackOptions, 'installPackage' | 'build' | 'nodesCacheDir' | 'extraPackages'>;
	log: Log;
}): { tarball: string | null; packageDir: string | null } {
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
	for (const packageDir of options.extraPackages ?? [])
		installExtraPackage({ userFolder, packageDir, outDir: path.join(workDir, 'pack'), log });
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
export async function startDatabases({
	workDir,
	packageDir,
	options,
	stoppers,
	log,
}: {
	workDir: string;
	packageDir: string | null;
	options: Pick<StackOptions, 'pgDir' | 'postgresUrl' | 'persistentPg' | 'pgPort' | 'dbNames' | 'recreateDbs' | 'setupSql'>;
	stoppers: StopList;
	log: Log;
}): Promise<{ pg: PostgresServer; n8nDbUrl: string; appUrl: string; app: DatabaseSettings; ctx: StackContext }> {
	log('starting Postgres…');
	const pgDir = options.pgDir ?? path.join(workDir, 'pg');
	fs.mkdirSync(path.dirname(pgDir), { recursive: true });
	const pg: PostgresServer = options.postgresUrl
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
	const ctx: StackContext = { appUrl, app, pgUrl: pg.url, n8nDbUrl, workDir, packageDir };
	const { setupSql } = options;
	if (setupSql) await withClient(appUrl, (client) => setupSql(client, ctx));
	return { pg, n8nDbUrl, appUrl, app, ctx };
}

/** Redis for queue mode (null otherwise). */
export async function startQueueRedis({
	topology,
	workDir,
	stoppers,
	log,
}: {
	topology: Topology;
	workDir: string;
	stoppers: StopList;
	log: Log;
}): Promise<RedisServer | null> {
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
export async function waitUntilServing({
	n8nDbUrl,
	readyWebhooks = [],
	workflows,
	n8nVersion,
	processes,
	startTimeoutMs,
	deadline,
	logFile,
	log,
}: {
	n8nDbUrl: string;
	readyWebhooks?: string[];
	workflows: ReadWorkflow[];
	n8nVersion: string;
	processes: Pick<N8nProcesses, 'main'>;
	startTimeoutMs: number;
	deadline: number;
	logFile: string;
	log: Log;
}): Promise<void> {
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
		await waitForPublishedVersions(n8nDbUrl, published, {
			deadline: Math.max(until, deadline),
			isExited: () => processes.main.exited,
			log,
		});
	}
}
