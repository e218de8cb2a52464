// The race harness: real OS processes running test/support's TypeScript workers (storeWorker for
// the key stores of both backends, orderWorker, effectWorker), started together by one signal.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

import type { KeyStore } from '../../lib/store/contract';
import type { StoreJob, StoreWorkerReport } from './storeWorker';
import type { StoreTarget } from './storeTargets';

const REGISTER = path.join(__dirname, 'register-ts.js');

/** A real OS process running one of test/support's TypeScript workers. */
export interface WorkerProcess {
	child: ChildProcess;
	pid: number;
	/** Resolves with the first stdout line that satisfies `test` (e.g. "ready", "paused"). */
	waitForLine: (test: (line: string) => boolean) => Promise<string>;
	/** Resolves with the exit code and signal (a SIGKILLed worker has signal 'SIGKILL'). */
	exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

/** Starts `worker` (a file in test/support) with its arguments as one JSON string. */
export function startWorker(worker: string, args: unknown): WorkerProcess {
	const child = spawn(process.execPath, ['-r', REGISTER, path.join(__dirname, worker), JSON.stringify(args)], {
		stdio: ['pipe', 'pipe', 'pipe'],
	});
	let stdout = '';
	let stderr = '';
	const waiters: Array<{ test: (line: string) => boolean; resolve: (line: string) => void }> = [];
	child.stdout!.on('data', (chunk: Buffer) => {
		stdout += chunk.toString();
		for (const line of stdout.split('\n').slice(0, -1)) {
			for (const waiter of [...waiters]) {
				if (waiter.test(line)) {
					waiters.splice(waiters.indexOf(waiter), 1);
					waiter.resolve(line);
				}
			}
		}
	});
	child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
	const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve) =>
		// 'close', not 'exit': 'exit' can come before the last of the child's output has been read.
		child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
	);
	return {
		child,
		pid: child.pid!,
		waitForLine: (test) => {
			const already = stdout.split('\n').slice(0, -1).find(test);
			if (already !== undefined) return Promise.resolve(already);
			return Promise.race([
				new Promise<string>((resolve) => waiters.push({ test, resolve })),
				exited.then(({ code, signal }) => {
					throw new Error(`worker ${worker} exited (${code ?? signal}) before the expected line: ${stderr}`);
				}),
			]);
		},
		exited,
	};
}

/**
 * Runs `count` workers that each open their connections, print "ready", wait for "go" on stdin so
 * all start at once, and print one JSON result line. Returns the parsed results.
 */
export async function raceWorkers<T>(worker: string, argsFor: (index: number) => unknown, count: number): Promise<T[]> {
	const workers = Array.from({ length: count }, (_unused, index) => startWorker(worker, argsFor(index)));
	try {
		await Promise.all(workers.map((entry) => entry.waitForLine((line) => line === 'ready')));
		for (const entry of workers) entry.child.stdin!.end('go\n');
		const ends = await Promise.all(workers.map((entry) => entry.exited));
		return ends.map(({ code, stdout, stderr }) => {
			if (code !== 0) throw new Error(`worker ${worker} failed (${code}): ${stderr}`);
			return JSON.parse(stdout.split('\n')[1]) as T;
		});
	} finally {
		for (const entry of workers) if (entry.child.exitCode === null && entry.child.signalCode === null) entry.child.kill();
	}
}

/** Waits for "go" on stdin (the race's start signal). */
export function startSignal(): Promise<void> {
	return new Promise<void>((resolve) =>
		process.stdin.once('data', () => {
			process.stdin.destroy();
			resolve();
		}),
	);
}

/**
 * Runs one storeWorker process per job on the same store, all started at once. Returns each
 * process's results (one per key of each call), with its process id.
 */
export async function raceStore(target: StoreTarget, jobs: StoreJob[], connectionsPerProcess = 1): Promise<StoreWorkerReport[]> {
	return await raceWorkers<StoreWorkerReport>(
		'storeWorker.ts',
		(index) => ({ target, connections: connectionsPerProcess, job: jobs[index] }),
		jobs.length,
	);
}

/** `processes` processes each reserving one key `callsPerProcess` times at once: every outcome with its process. */
export async function raceOneKey(
	target: StoreTarget,
	options: { key: string; processes: number; connectionsPerProcess: number; callsPerProcess: number; mode: 'lease' | 'permanent' },
): Promise<Array<{ pid: number; outcome: string }>> {
	const job: StoreJob = {
		kind: 'reserve',
		batches: Array.from({ length: options.callsPerProcess }, () => [options.key]),
		mode: options.mode,
	};
	const reports = await raceStore(
		target,
		Array.from({ length: options.processes }, () => job),
		options.connectionsPerProcess,
	);
	return reports.flatMap((report) => report.results.map(({ outcome }) => ({ pid: report.pid, outcome })));
}

/** The same items in another order per caller (a small deterministic shuffle): racing callers lock rows in different orders. */
export function shuffled<T>(items: T[], seed: number): T[] {
	const out = [...items];
	let state = seed * 2654435761;
	for (let i = out.length - 1; i > 0; i--) {
		state = (state * 1103515245 + 12345) >>> 0;
		const j = state % (i + 1);
		[out[i], out[j]] = [out[j], out[i]];
	}
	return out;
}

/**
 * One round of callers at once over the same failed keys, each in its own order (shuffled by round
 * and caller): even callers reserve them (lease), odd ones claim them for replay. The keys the
 * callers won, and what any caller threw.
 */
export async function reserveOrClaimRace(
	stores: KeyStore[],
	keys: string[],
	round: number,
): Promise<{ owned: string[]; failures: string[] }> {
	const lease = { mode: 'lease' as const, leaseSeconds: 120, retentionSeconds: 86_400 };
	const settled = await Promise.allSettled(
		stores.map(async (store, index) => {
			const order = shuffled(keys, round * 10 + index);
			if (index % 2 === 0) {
				const results = await store.reserve(
					order.map((key) => ({ key, keySource: 'test', payloadHash: null })),
					lease,
				);
				return results.filter((result) => result.outcome === 'new').map((result) => result.key);
			}
			const claims = await store.claimForReplay(order, { leaseSeconds: 120, retentionSeconds: 86_400 });
			return claims.filter((claim) => claim.claimed).map((claim) => claim.key);
		}),
	);
	return {
		owned: settled.flatMap((result) => (result.status === 'fulfilled' ? result.value : [])),
		failures: settled.flatMap((result) => (result.status === 'rejected' ? [String(result.reason)] : [])),
	};
}
