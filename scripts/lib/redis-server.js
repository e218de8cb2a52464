// A throwaway Redis for n8n's queue mode: Debian's redis-server on a free port of 127.0.0.1, its own
// data dir, no persistence (a test queue need not survive), stopped by stop().
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { freePort } = require('./postgres-server');
const { spawnService, sleep } = require('./processes');

function findRedisServer() {
	const candidates = [process.env.REDIS_SERVER_BIN, '/usr/bin/redis-server', '/usr/local/bin/redis-server'].filter(Boolean);
	const found = candidates.find((file) => fs.existsSync(file));
	if (found) return found;
	const which = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' });
	if (which.status === 0 && which.stdout.trim()) return which.stdout.trim();
	throw new Error('redis-server is not installed (Debian/Ubuntu: apt-get install -y redis-server; .ci/run does this)');
}

/** PING over a plain socket: true once Redis answers +PONG. */
function ping(port) {
	return new Promise((resolve) => {
		const socket = net.connect({ host: '127.0.0.1', port });
		const done = (ok) => {
			socket.destroy();
			resolve(ok);
		};
		socket.setTimeout(1000, () => done(false));
		socket.on('error', () => done(false));
		socket.on('connect', () => socket.write('PING\r\n'));
		socket.on('data', (data) => done(data.toString().startsWith('+PONG')));
	});
}

/** Starts redis-server; returns { host, port, pid, stop() }. */
async function startRedis({ dir, log = () => {} }) {
	fs.mkdirSync(dir, { recursive: true });
	const port = await freePort();
	const bin = findRedisServer();
	const service = spawnService({
		name: 'redis',
		command: bin,
		args: ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--daemonize', 'no'],
		cwd: dir,
		env: process.env,
		logFile: path.join(dir, 'redis.log'),
	});
	const deadline = Date.now() + 20000;
	while (!(await ping(port))) {
		if (service.exited) throw new Error(`redis-server exited during start: ${service.output().slice(-1000)}`);
		if (Date.now() > deadline) throw new Error(`redis-server did not answer PING: ${service.output().slice(-1000)}`);
		await sleep(100);
	}
	log(`Redis ${bin} on 127.0.0.1:${port} (pid ${service.pid})`);
	return { host: '127.0.0.1', port, pid: service.pid, stop: () => service.stop({ graceMs: 5000 }) };
}

module.exports = { startRedis };
