// Long-running child processes of the harness (n8n main, n8n workers, Redis) and the last-resort
// cleanup that kills them if the caller never reaches stop(). Each n8n process runs in its own
// process group (detached) so that a terminal's Ctrl-C does not reach it half-way through a
// shutdown, and so that killing the group also kills its task-runner children.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export const livePids = new Set<number>(); // process groups we spawned
export const livePostgresDirs = new Set<string>(); // embedded Postgres data dirs (postmaster.pid)

export function killGroup(pid: number, signal: NodeJS.Signals): boolean {
	try {
		process.kill(-pid, signal);
		return true;
	} catch {
		return false;
	}
}

export function killEverythingNow(): void {
	for (const pid of livePids) killGroup(pid, 'SIGKILL');
	livePids.clear();
	for (const dir of livePostgresDirs) {
		try {
			const pid = Number(fs.readFileSync(path.join(dir, 'postmaster.pid'), 'utf8').split('\n')[0]);
			if (pid > 0) process.kill(pid, 'SIGQUIT'); // immediate shutdown
		} catch {
			// No postmaster.pid, or no such process: that server is not running.
		}
	}
	livePostgresDirs.clear();
}

let exitHookInstalled = false;
let signalHooksInstalled = false;
/**
 * Kills what we spawned when this process exits or is interrupted. Callers with their own graceful
 * Ctrl-C handling (the demo) pass handleSignals: false.
 */
export function installExitHook({ handleSignals = true }: { handleSignals?: boolean } = {}): void {
	if (!exitHookInstalled) {
		exitHookInstalled = true;
		process.on('exit', killEverythingNow);
	}
	if (handleSignals && !signalHooksInstalled) {
		signalHooksInstalled = true;
		for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
			const onSignal = () => {
				killEverythingNow();
				process.removeListener(signal, onSignal);
				process.kill(process.pid, signal); // then the default behaviour (or other listeners)
			};
			process.on(signal, onSignal);
		}
	}
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** True while a process with this id exists (signal 0 only checks). */
export function pidAlive(pid: number): boolean {
	try {
		process.kill(pid, 0);
		return true;
	} catch (error) {
		return (error as NodeJS.ErrnoException).code === 'EPERM';
	}
}

/** 200 from an HTTP readiness endpoint (n8n: /healthz/readiness answers 200 once its database and Redis are up). */
export async function httpReady(url: string): Promise<boolean> {
	try {
		const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
		await res.arrayBuffer();
		return res.ok;
	} catch {
		return false;
	}
}

/** How a service's process ended, and when (ms since the epoch). */
export interface ServiceExit {
	code: number | null;
	signal: NodeJS.Signals | null;
	at: number;
}

export interface WaitReadyOptions {
	url?: string;
	lines?: string[];
	timeoutMs?: number;
}

/** A long-running process started by spawnService. */
export interface ServiceHandle {
	name: string;
	pid: number;
	/** null while it runs. */
	exited: ServiceExit | null;
	output: () => string;
	logFile: string;
	exitPromise: Promise<ServiceExit>;
	/** Worker services: their index among the stack's workers. */
	index?: number;
	kill: (signal?: NodeJS.Signals) => boolean;
	waitReady: (options?: WaitReadyOptions) => Promise<void>;
	stop: (options?: { graceMs?: number }) => Promise<void>;
}

export interface SpawnServiceOptions {
	name: string;
	command: string;
	args: string[];
	cwd: string;
	env: NodeJS.ProcessEnv;
	logFile: string;
}

/**
 * Spawns a long-running process in its own group, its output appended to logFile and kept in memory
 * (up to 2 MB) for readiness checks. Returns a handle: pid, output(), exited (null while running),
 * waitReady({ url, lines, timeoutMs }), kill(signal) (the whole group), stop({ graceMs }).
 */
export function spawnService({ name, command, args, cwd, env, logFile }: SpawnServiceOptions): ServiceHandle {
	const logStream = fs.createWriteStream(logFile, { flags: 'a' });
	logStream.write(`\n==== ${new Date().toISOString()} ${name}: ${path.basename(command)} ${args.join(' ')}\n`);
	const child = spawn(command, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
	const pid = child.pid as number;
	livePids.add(pid);
	let output = '';
	const onData = (chunk: Buffer) => {
		logStream.write(chunk);
		if (output.length < 2_000_000) output += chunk.toString();
	};
	child.stdout.on('data', onData);
	child.stderr.on('data', onData);
	const handle = {
		name,
		pid,
		exited: null,
		output: () => output,
		logFile,
	} as ServiceHandle;
	handle.exitPromise = new Promise((resolve) =>
		child.on('exit', (code, signal) => {
			const exited: ServiceExit = { code, signal, at: Date.now() };
			handle.exited = exited;
			livePids.delete(pid);
			resolve(exited);
		}),
	);
	child.on('close', () => logStream.end());

	handle.kill = (signal = 'SIGKILL') => killGroup(pid, signal);

	/** Waits until every line appeared in the output and `url` (if any) answers 200. */
	handle.waitReady = async ({ url, lines = [], timeoutMs = 180000 } = {}) => {
		const deadline = Date.now() + timeoutMs;
		for (;;) {
			if (handle.exited)
				throw new Error(`${name} exited during start (${JSON.stringify(handle.exited)}); see ${logFile}:\n${output.slice(-3000)}`);
			if (lines.every((line) => output.includes(line)) && (!url || (await httpReady(url)))) return;
			if (Date.now() > deadline) throw new Error(`${name} did not become ready in time; see ${logFile}:\n${output.slice(-3000)}`);
			await sleep(250);
		}
	};

	/** SIGTERM to the group, SIGKILL after graceMs; then the stragglers of the group (task runners). */
	handle.stop = async ({ graceMs = 15000 } = {}) => {
		if (!handle.exited) {
			killGroup(pid, 'SIGTERM');
			const timer = setTimeout(() => killGroup(pid, 'SIGKILL'), graceMs);
			await handle.exitPromise;
			clearTimeout(timer);
		}
		killGroup(pid, 'SIGKILL');
	};
	return handle;
}
