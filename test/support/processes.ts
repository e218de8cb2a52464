import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

import type { ReservationMode } from '../../lib/types';
import { databaseUrl } from './database';

const WORKER = path.join(__dirname, 'reserveWorker.ts');
const REGISTER = path.join(__dirname, 'register-ts.js');

export interface RaceOptions {
	schema: string;
	key: string;
	processes: number;
	connectionsPerProcess: number;
	callsPerProcess: number;
	mode: ReservationMode;
}

/**
 * Reserves one key from several OS processes at once. Each process opens its connections, reports
 * ready, and all of them get the start signal together. Returns every outcome with its process id.
 */
export async function raceFromProcesses(options: RaceOptions): Promise<Array<{ pid: number; outcome: string }>> {
	const children: ChildProcess[] = [];
	const outputs: Array<Promise<string>> = [];
	const ready: Array<Promise<void>> = [];
	for (let i = 0; i < options.processes; i++) {
		const args = {
			url: databaseUrl(),
			schema: options.schema,
			key: options.key,
			calls: options.callsPerProcess,
			connections: options.connectionsPerProcess,
			mode: options.mode,
		};
		const child = spawn(process.execPath, ['-r', REGISTER, WORKER, JSON.stringify(args)], { stdio: ['pipe', 'pipe', 'pipe'] });
		children.push(child);
		let stdout = '';
		let stderr = '';
		ready.push(
			new Promise((resolve, reject) => {
				child.stdout!.on('data', (chunk: Buffer) => {
					stdout += chunk.toString();
					if (stdout.startsWith('ready\n')) resolve();
				});
				child.on('exit', (code) => reject(new Error(`worker exited early (${code}): ${stderr}`)));
			}),
		);
		child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
		outputs.push(
			new Promise((resolve, reject) =>
				child.on('exit', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`worker failed (${code}): ${stderr}`)))),
			),
		);
	}
	try {
		await Promise.all(ready);
		for (const child of children) child.stdin!.end('go\n');
		const lines = await Promise.all(outputs);
		return lines.flatMap((text) => {
			const report = JSON.parse(text.split('\n')[1]) as { pid: number; outcomes: string[] };
			return report.outcomes.map((outcome) => ({ pid: report.pid, outcome }));
		});
	} finally {
		for (const child of children) if (child.exitCode === null) child.kill();
	}
}
