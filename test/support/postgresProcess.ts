import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const CHILD = path.join(__dirname, 'postgresChild.ts');
// The child is TypeScript run from source: the hook that transpiles it.
const REGISTER = path.join(__dirname, 'register-ts.js');

/** A Postgres server of one test file's own, which the test can stop and start again (same data, same port). */
export interface OwnPostgres {
	url: string;
	port: number;
	/** Fast shutdown (SIGINT: sessions are terminated), waiting until the server is gone. */
	stop(): Promise<void>;
}

export async function startOwnPostgres(baseDir: string, port?: number): Promise<OwnPostgres> {
	const child: ChildProcess = spawn(process.execPath, ['-r', REGISTER, CHILD, JSON.stringify({ baseDir, port })], {
		stdio: ['pipe', 'pipe', 'pipe'],
	});
	let stderr = '';
	child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
	const ready = await new Promise<{ url: string; port: number }>((resolve, reject) => {
		let stdout = '';
		child.stdout!.on('data', (chunk: Buffer) => {
			stdout += chunk.toString();
			if (stdout.includes('\n')) resolve(JSON.parse(stdout.split('\n')[0]));
		});
		child.once('exit', (code) => reject(new Error(`Postgres did not start (${code}): ${stderr.slice(-800)}`)));
	});
	const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
	return {
		...ready,
		stop: async () => {
			child.stdin!.end();
			await exited;
		},
	};
}
