// A throwaway Redis for n8n's queue mode: Debian's redis-server on a free port of 127.0.0.1, its own
// data dir, no persistence (a test queue need not survive), stopped by stop().
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { freePort } from './postgresServer';
import { spawnService, sleep } from './childProcesses';

/** The redis-server binary to run (REDIS_SERVER_BIN, the usual places, then PATH), or null. */
export function findRedisServer({ env = process.env }: { env?: NodeJS.ProcessEnv } = {}): string | null {
	const candidates = [env.REDIS_SERVER_BIN, '/usr/bin/redis-server', '/usr/local/bin/redis-server'].filter((file): file is string =>
		Boolean(file),
	);
	const found = candidates.find((file) => fs.existsSync(file));
	if (found) return found;
	return commandPath('redis-server', env);
}

export function commandPath(name: string, env: NodeJS.ProcessEnv = process.env): string | null {
	const which = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8', env });
	return which.status === 0 && which.stdout.trim() ? which.stdout.trim() : null;
}

/** What is known of the machine: the redis-server found (or null), root, apt and sudo. */
export interface MachineFacts {
	found: string | null;
	isRoot: boolean;
	hasApt: boolean;
	hasSudo: boolean;
}

export type RedisServerPlan = { action: 'use'; bin: string } | { action: 'install' } | { action: 'stop'; message: string };

export type RedisServerCheck = { ok: true; bin: string } | { ok: false; message: string };

/**
 * What to do so that queue mode has a redis-server, decided from facts alone (so it can be tested):
 * use the one found; install it with apt when we are root and apt is there (as .ci/run's clean
 * machine is); otherwise stop, naming the one command the person has to type.
 */
export function redisServerPlan({ found, isRoot, hasApt, hasSudo }: MachineFacts): RedisServerPlan {
	if (found) return { action: 'use', bin: found };
	if (isRoot && hasApt) return { action: 'install' };
	let command: string;
	if (hasApt)
		command = hasSudo
			? 'sudo apt-get update && sudo apt-get install -y redis-server'
			: 'apt-get update && apt-get install -y redis-server   (as root)';
	else command = 'REDIS_SERVER_BIN=/path/to/redis-server npm run test:all   (after installing Redis 6 or newer)';
	return {
		action: 'stop',
		message: `redis-server is not installed; the queue-mode end-to-end tests need it. Type:\n\n    ${command}\n\nor run without queue mode: E2E_TOPOLOGIES=single npm run test:all`,
	};
}

export function machineFacts(): MachineFacts {
	return {
		found: findRedisServer(),
		isRoot: process.getuid?.() === 0,
		hasApt: commandPath('apt-get') !== null,
		hasSudo: commandPath('sudo') !== null,
	};
}

/**
 * apt-get update, then apt-get install of one Debian package, quietly; returns null on success,
 * else what failed with the tail of its output. A failed update does not stop the install: the
 * lists already there may do.
 */
export function aptInstall(debianPackage: string, { log = () => {} }: { log?: (line: string) => void } = {}): string | null {
	const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
	const options = { encoding: 'utf8' as const, env, maxBuffer: 64 * 1024 * 1024 };
	const install = ['install', '-y', '-qq', '--no-install-recommends', debianPackage];
	log(`installing ${debianPackage}: apt-get update && apt-get ${install.join(' ')}`);
	const failures: string[] = [];
	for (const args of [['update', '-qq'], install]) {
		const run = spawnSync('apt-get', args, options);
		if (run.status !== 0)
			failures.push(
				`apt-get ${args.join(' ')} failed (${run.error?.message ?? `exit ${run.status}`}):\n${`${run.stdout ?? ''}${run.stderr ?? ''}`.slice(-2000)}`,
			);
	}
	const installFailed = failures.some((failure) => failure.startsWith('apt-get install'));
	return installFailed ? failures.join('\n') : null;
}

const aptInstallRedis = ({ log }: { log?: (line: string) => void } = {}) => aptInstall('redis-server', { log });

/**
 * Makes sure redis-server exists before anything runs. Returns { ok: true, bin } or
 * { ok: false, message } with what to type; never throws for a missing Redis. `facts` and
 * `install` are the machine's unless a test passes its own.
 */
export function ensureRedisServer({
	log = () => {},
	facts = machineFacts,
	install = aptInstallRedis,
}: {
	log?: (line: string) => void;
	facts?: () => MachineFacts;
	install?: (options: { log: (line: string) => void }) => string | null;
} = {}): RedisServerCheck {
	const plan = redisServerPlan(facts());
	if (plan.action === 'use') return { ok: true, bin: plan.bin };
	if (plan.action === 'stop') return { ok: false, message: plan.message };
	const failure = install({ log });
	const bin = facts().found;
	if (bin) return { ok: true, bin };
	return {
		ok: false,
		message: `could not install redis-server with apt${failure ? `: ${failure}` : ' (it installed, but no redis-server is on PATH)'}\nFix apt, then type: apt-get update && apt-get install -y redis-server`,
	};
}

export function redisServerVersion(bin: string): string {
	const run = spawnSync(bin, ['--version'], { encoding: 'utf8' });
	return run.status === 0 ? run.stdout.trim() : `unknown version (${bin} --version failed)`;
}

/** PING over a plain socket: true once Redis answers +PONG. */
function ping(port: number): Promise<boolean> {
	return new Promise((resolve) => {
		const socket = net.connect({ host: '127.0.0.1', port });
		const done = (ok: boolean) => {
			socket.destroy();
			resolve(ok);
		};
		socket.setTimeout(1000, () => done(false));
		socket.on('error', () => done(false));
		socket.on('connect', () => socket.write('PING\r\n'));
		socket.on('data', (data) => done(data.toString().startsWith('+PONG')));
	});
}

/** A running redis-server of the harness. */
export interface RedisServer {
	host: string;
	port: number;
	pid: number;
	stop: () => Promise<void>;
}

/** Starts redis-server; returns { host, port, pid, stop() }. */
export async function startRedis({ dir, log = () => {} }: { dir: string; log?: (line: string) => void }): Promise<RedisServer> {
	fs.mkdirSync(dir, { recursive: true });
	const port = await freePort();
	const bin = findRedisServer();
	if (!bin) {
		const plan = redisServerPlan(machineFacts());
		throw new Error(
			plan.action === 'stop' ? plan.message : 'redis-server is not installed; npm run test:all installs it with apt (it runs as root here)',
		);
	}
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
