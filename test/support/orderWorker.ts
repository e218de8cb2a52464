// One OS process of the Order Guard race, on either backend: opens its store, says "ready", waits
// for "go", then sends each of its versions of one object as its own single-item batch, all in parallel.
import { openOrderStore, type StoreTarget } from './storeTargets';
import { startSignal } from './workers';

interface WorkerArgs {
	target: StoreTarget;
	objectKey: string;
	versions: string[];
	connections: number;
}

async function main(): Promise<void> {
	const args = JSON.parse(process.argv[2]) as WorkerArgs;
	const opened = openOrderStore(args.target, args.connections);
	await opened.warmUp();
	process.stdout.write('ready\n');
	await startSignal();
	const decisions = await Promise.all(
		args.versions.map(async (version) => {
			const [decision] = await opened.store.advance([{ objectKey: args.objectKey, version, eventKey: null }], {
				equalVersion: 'stale',
				executionId: String(process.pid),
			});
			return { version, outcome: decision.outcome };
		}),
	);
	process.stdout.write(`${JSON.stringify({ pid: process.pid, decisions })}\n`);
	await opened.close();
}

main().catch((error) => {
	process.stderr.write(`${(error as Error).message}\n`);
	process.exit(1);
});
