// Long-running child processes of the harness (n8n main, n8n workers, Redis) and the last-resort
// cleanup that kills them if the caller never reaches stop(). Each n8n process runs in its own
// process group (detached) so that a terminal's Ctrl-C does not reach it half-way through a
// shutdown, and so that killing the group also kills its task-runner children.
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const livePids = new Set(); // process groups we spawned
const livePostgresDirs = new Set(); // embedded Postgres data dirs (postmaster.pid)

function killGroup(pid, signal) {
	try {
		process.kill(-pid, signal);
		return true;
	} catch {
		return false;
	}
}

function killEverythingNow() {
	for (const pid of livePids) killGroup(pid, 'SIGKILL');
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
 * Kills what we spawned when this process exits or is interrupted. Callers with their own graceful
 * Ctrl-C handling (the demo) pass handleSignals: false.
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

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** True while a process with this id exists (signal 0 only checks). */
function pidAlive(pid) {
	try {
		process.kill(pid, 0);
		return true;
	} catch (error) {
		return error.code === 'EPERM';
	}
}

/** 200 from an HTTP readiness endpoint (n8n: /healthz/readiness answers 200 once its database and Redis are up). */
async function httpReady(url) {
	try {
		const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
		await res.arrayBuffer();
		return res.ok;
	} catch {
		return false;
	}
}

/**
 * Spawns a long-running process in its own group, its output appended to logFile and kept in memory
 * (up to 2 MB) for readiness checks. Returns a handle: pid, output(), exited (null while running),
 * waitReady({ url, lines, timeoutMs }), kill(signal) (the whole group), stop({ graceMs }).
 */
function spawnService({ name, command, args, cwd, env, logFile }) {
	const logStream = fs.createWriteStream(logFile, { flags: 'a' });
	logStream.write(`\n==== ${new Date().toISOString()} ${name}: ${path.basename(command)} ${args.join(' ')}\n`);
	const child = spawn(command, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
	livePids.add(child.pid);
	let output = '';
	const onData = (chunk) => {
		logStream.write(chunk);
		if (output.length < 2_000_000) output += chunk.toString();
	};
	child.stdout.on('data', onData);
	child.stderr.on('data', onData);
	const handle = {
		name,
		pid: child.pid,
		exited: null,
		output: () => output,
		logFile,
	};
	handle.exitPromise = new Promise((resolve) =>
		child.on('exit', (code, signal) => {
			handle.exited = { code, signal, at: Date.now() };
			livePids.delete(child.pid);
			resolve(handle.exited);
		}),
	);
	child.on('close', () => logStream.end());

	handle.kill = (signal = 'SIGKILL') => killGroup(child.pid, signal);

	/** Waits until every line appeared in the output and `url` (if any) answers 200. */
	handle.waitReady = async ({ url, lines = [], timeoutMs = 180000 } = {}) => {
		const deadline = Date.now() + timeoutMs;
		for (;;) {
			if (handle.exited) throw new Error(`${name} exited during start (${JSON.stringify(handle.exited)}); see ${logFile}:\n${output.slice(-3000)}`);
			if (lines.every((line) => output.includes(line)) && (!url || (await httpReady(url)))) return;
			if (Date.now() > deadline) throw new Error(`${name} did not become ready in time; see ${logFile}:\n${output.slice(-3000)}`);
			await sleep(250);
		}
	};

	/** SIGTERM to the group, SIGKILL after graceMs; then the stragglers of the group (task runners). */
	handle.stop = async ({ graceMs = 15000 } = {}) => {
		if (!handle.exited) {
			killGroup(child.pid, 'SIGTERM');
			const timer = setTimeout(() => killGroup(child.pid, 'SIGKILL'), graceMs);
			await handle.exitPromise;
			clearTimeout(timer);
		}
		killGroup(child.pid, 'SIGKILL');
	};
	return handle;
}

module.exports = { livePids, livePostgresDirs, killEverythingNow, installExitHook, spawnService, pidAlive, httpReady, killGroup, sleep };
