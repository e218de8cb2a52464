// One OS process of the store races, on either backend: opens its store on the target (its
// connections too), says "ready", waits for "go" on stdin so every process starts at once, runs its
// job and prints one JSON line of results. The crash job instead reserves batches in a loop, saying
// "batch <n>" before each, until it is killed.
import type { DeliveryAnswer, ReservationMode } from '../../lib/types';
import { openKeyStore, type StoreTarget } from './storeTargets';
import { startSignal } from './workers';

export type StoreJob =
	/** Each batch is one reserve call; all calls run at once. */
	| { kind: 'reserve'; batches: string[][]; mode: ReservationMode }
	/** Each batch is one claimForReplay call; all calls run at once. */
	| { kind: 'claim'; batches: string[][] }
	/** Reserves `${prefix}<n>-0 … ${prefix}<n>-<size - 1>` for n = 0, 1, … until killed. */
	| { kind: 'reserveLoop'; prefix: string; size: number }
	/** Counts each answer (Idempotent Webhook's bookkeeping); all calls run at once. */
	| { kind: 'count'; answers: DeliveryAnswer[] }
	/** `calls` claimDueInbox calls of `owner`'s due events, `limit` each, all at once; each claimed event is reported `claimed`. */
	| { kind: 'claimInbox'; owner: string; calls: number; limit: number };

export interface StoreWorkerArgs {
	target: StoreTarget;
	connections?: number;
	job: StoreJob;
}

/** One call's outcome per key: new / duplicate / in_progress, or for a claim: claimed / its reason. */
export interface StoreWorkerReport {
	pid: number;
	results: Array<{ key: string; outcome: string }>;
}

const LEASE = { leaseSeconds: 60, retentionSeconds: 3600 };

async function main(): Promise<void> {
	const args = JSON.parse(process.argv[2]) as StoreWorkerArgs;
	const connections = args.connections ?? 1;
	const opened = openKeyStore(args.target, connections);
	await opened.warmUp();
	const { store } = opened;
	const { job } = args;
	process.stdout.write('ready\n');
	await startSignal();
	const executionId = String(process.pid);
	if (job.kind === 'reserveLoop') {
		for (let batch = 0; ; batch++) {
			process.stdout.write(`batch ${batch}\n`);
			const keys = Array.from({ length: job.size }, (_, index) => `${job.prefix}${batch}-${index}`);
			await store.reserve(
				keys.map((key) => ({ key, keySource: 'custom', payloadHash: null })),
				{ mode: 'permanent', ...LEASE, executionId },
			);
		}
	}
	if (job.kind === 'count') {
		await Promise.all(job.answers.map((answer) => store.countAnswer(answer)));
		process.stdout.write(
			`${JSON.stringify({ pid: process.pid, results: job.answers.map((answer) => ({ key: answer, outcome: 'counted' })) } satisfies StoreWorkerReport)}\n`,
		);
		await opened.close();
		return;
	}
	if (job.kind === 'claimInbox') {
		const claims = await Promise.all(
			Array.from({ length: job.calls }, () =>
				store.claimDueInbox({ owner: job.owner, limit: job.limit, leaseMs: LEASE.leaseSeconds * 1000 }),
			),
		);
		const results = claims.flat().map((claim) => ({ key: claim.key, outcome: 'claimed' }));
		process.stdout.write(`${JSON.stringify({ pid: process.pid, results } satisfies StoreWorkerReport)}\n`);
		await opened.close();
		return;
	}
	const calls =
		job.kind === 'reserve'
			? job.batches.map(async (keys) =>
					(
						await store.reserve(
							keys.map((key) => ({ key, keySource: 'custom', payloadHash: null })),
							{ mode: job.mode, ...LEASE, executionId },
						)
					).map((result) => ({ key: result.key, outcome: result.outcome as string })),
				)
			: job.batches.map(async (keys) =>
					(await store.claimForReplay(keys, { ...LEASE, executionId })).map((claim) => ({
						key: claim.key,
						outcome: claim.claimed ? 'claimed' : claim.reason,
					})),
				);
	const results = (await Promise.all(calls)).flat();
	process.stdout.write(`${JSON.stringify({ pid: process.pid, results } satisfies StoreWorkerReport)}\n`);
	await opened.close();
}

main().catch((error) => {
	process.stderr.write(`${(error as Error).stack ?? error}\n`);
	process.exit(1);
});
