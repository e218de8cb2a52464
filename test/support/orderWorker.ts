// One OS process of the Order Guard race: opens its connections, says "ready", waits for "go",
// then sends each of its versions of one object as its own single-item batch, all in parallel.
import { Pool } from 'pg';

import { OrderGuard } from '../../lib/order/orderGuard';
import { startSignal } from './workerProcesses';

interface WorkerArgs {
	url: string;
	schema: string;
	objectKey: string;
	versions: string[];
	connections: number;
}

async function main(): Promise<void> {
	const args = JSON.parse(process.argv[2]) as WorkerArgs;
	const pool = new Pool({ connectionString: args.url, max: args.connections });
	const clients = await Promise.all(Array.from({ length: args.connections }, () => pool.connect()));
	clients.forEach((client) => client.release());
	const guard = new OrderGuard(pool, { schema: args.schema, table: 'object_versions', createTable: false });
	process.stdout.write('ready\n');
	await startSignal();
	const decisions = await Promise.all(
		args.versions.map(async (version) => {
			const [decision] = await guard.advance([{ objectKey: args.objectKey, version, eventKey: null }], {
				equalVersion: 'stale',
				executionId: String(process.pid),
			});
			return { version, outcome: decision.outcome };
		}),
	);
	process.stdout.write(`${JSON.stringify({ pid: process.pid, decisions })}\n`);
	await pool.end();
}

main().catch((error) => {
	process.stderr.write(`${(error as Error).message}\n`);
	process.exit(1);
});
