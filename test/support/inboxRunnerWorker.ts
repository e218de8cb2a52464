// One OS process running the Idempotent Webhook trigger's retry runner (runInbox, as n8n's leader
// main runs it from the trigger's trigger()) on a store target, as a second main that briefly takes
// the lead would: opens the store, says "ready", starts the runner on "go", and plays each emitted
// run (settles its key as the run would: failed on the attempts listed in `failOnAttempt`, else
// completed). On "stop" it closes the runner, waits for its settles and prints one JSON line: every
// run it started, with its settle's outcome.
import type { ITriggerFunctions, INodeExecutionData } from 'n8n-workflow';

import { runInbox } from '../../nodes/IdempotentWebhook/inboxRunner';
import { openKeyStore, type StoreTarget } from './storeTargets';

export interface InboxRunnerWorkerArgs {
	target: StoreTarget;
	owner: string;
	leaseMs: number;
	pollMs: number;
	/** The attempts (2: the first retry) whose run fails, per key; the others complete. */
	failOnAttempt: Record<string, number[]>;
}

/** A run the runner started in this process, and whether its settle was taken (fenced by its owner token). */
export interface StartedRun {
	key: string;
	attempt: number;
	ownerToken: string;
	settled: 'completed' | 'failed';
	taken: boolean;
}

export interface InboxRunnerWorkerReport {
	pid: number;
	runs: StartedRun[];
}

async function main(): Promise<void> {
	const args = JSON.parse(process.argv[2]) as InboxRunnerWorkerArgs;
	const opened = openKeyStore(args.target, 2);
	await opened.warmUp();
	const { store } = opened;
	const runs: StartedRun[] = [];
	const settles: Array<Promise<unknown>> = [];
	// What n8n hands the trigger: emit starts a run of each item; the logger takes the runner's warnings.
	const context = {
		emit: (data: INodeExecutionData[][]) => {
			for (const item of data[0]) {
				const { key, ownerToken, attempts } = item.json.idempotency as { key: string; ownerToken: string; attempts: number };
				const fails = (args.failOnAttempt[key] ?? []).includes(attempts);
				const settle = fails
					? store.fail([{ key, ownerToken, error: 'the step failed' }])
					: store.complete([{ key, ownerToken, response: { ok: true } }]);
				settles.push(
					settle.then(([report]) => {
						runs.push({ key, attempt: attempts, ownerToken, settled: fails ? 'failed' : 'completed', taken: report?.applied === true });
					}),
				);
			}
		},
		logger: { warn: (message: string) => process.stderr.write(`${message}\n`) },
	} as unknown as ITriggerFunctions;
	const lines = readLines();
	process.stdout.write('ready\n');
	await lines.next('go');
	const runner = runInbox(context, { openStore: async () => store, owner: args.owner, leaseMs: args.leaseMs, pollMs: args.pollMs });
	await lines.next('stop');
	await runner.closeFunction?.();
	await Promise.all(settles);
	process.stdout.write(`${JSON.stringify({ pid: process.pid, runs } satisfies InboxRunnerWorkerReport)}\n`);
	await opened.close();
}

/** stdin's lines: next(line) resolves when that line arrives. */
function readLines(): { next: (line: string) => Promise<void> } {
	const waiting = new Map<string, () => void>();
	const seen = new Set<string>();
	let buffered = '';
	process.stdin.setEncoding('utf8');
	process.stdin.on('data', (chunk: string) => {
		buffered += chunk;
		const lines = buffered.split('\n');
		buffered = lines.pop() ?? '';
		for (const line of lines) {
			seen.add(line);
			waiting.get(line)?.();
		}
	});
	return {
		next: (line) => (seen.has(line) ? Promise.resolve() : new Promise<void>((resolve) => waiting.set(line, resolve))),
	};
}

main().catch((error) => {
	process.stderr.write(`${(error as Error).stack ?? error}\n`);
	process.exit(1);
});
