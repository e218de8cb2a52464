// One OS process of the concurrency tests: opens `connections` connections, says "ready", waits for
// "go" on stdin so every process starts at once, fires `calls` single-key reservations in parallel
// and prints the outcomes as JSON.
import { Pool } from 'pg';

import { IdempotencyStore } from '../../lib/postgres/store';
import type { ReservationMode } from '../../lib/types';

interface WorkerArgs {
	url: string;
	schema: string;
	key: string;
	calls: number;
	connections: number;
	mode: ReservationMode;
}

async function main(): Promise<void> {
	const args = JSON.parse(process.argv[2]) as WorkerArgs;
	const pool = new Pool({ connectionString: args.url, max: args.connections });
	// Open every connection before the start signal, so the race is between queries, not connects.
	const clients = await Promise.all(Array.from({ length: args.connections }, () => pool.connect()));
	clients.forEach((client) => client.release());
	const store = new IdempotencyStore(pool, { schema: args.schema, table: 'processed_events', createTable: false });
	process.stdout.write('ready\n');
	await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));
	process.stdin.destroy();
	const outcomes = await Promise.all(
		Array.from({ length: args.calls }, async () => {
			const [result] = await store.reserve([{ key: args.key, keySource: 'custom', payloadHash: null }], {
				mode: args.mode,
				leaseSeconds: 60,
				retentionSeconds: 3600,
				executionId: String(process.pid),
			});
			return result.outcome;
		}),
	);
	process.stdout.write(`${JSON.stringify({ pid: process.pid, outcomes })}\n`);
	await pool.end();
}

main().catch((error) => {
	process.stderr.write(`${(error as Error).message}\n`);
	process.exit(1);
});
