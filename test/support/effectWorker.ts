// One OS process of the one-transaction tests. Two modes:
// - race: opens its connections, says "ready", waits for "go", runs `calls` deliveries of one key
//   in parallel (reservation + an insert into the effects table, one transaction each), prints outcomes.
// - pause: runs one delivery, but stops right before `pauseBefore` (the user's query, or the
//   commit), prints "paused <backend pid>" and hangs there until it is killed.
import { Pool, type PoolClient } from 'pg';

import { OneTransactionEffect } from '../../lib/effect/oneTransaction';
import { startSignal } from './workers';

interface WorkerArgs {
	url: string;
	schema: string;
	key: string;
	mode: 'race' | 'pause';
	calls?: number;
	connections?: number;
	pauseBefore?: 'effect' | 'commit';
}

const effectSql = (schema: string) => `insert into ${schema}.effects (event_key, pid) values ($1, $2) returning id`;

async function main(): Promise<void> {
	const args = JSON.parse(process.argv[2]) as WorkerArgs;
	const pool = new Pool({ connectionString: args.url, max: args.connections ?? 1 });
	const sql = effectSql(args.schema);
	const effect = new OneTransactionEffect(args.mode === 'pause' ? pausing(pool, args.pauseBefore ?? 'commit', sql) : pool, {
		schema: args.schema,
		table: 'processed_events',
		createTable: false,
	});
	const deliver = () =>
		effect.run(
			{ key: args.key, keySource: 'custom', payloadHash: null },
			{ text: sql, values: [args.key, process.pid] },
			{ retentionSeconds: 3600 },
		);

	if (args.mode === 'pause') {
		await deliver();
		process.stdout.write('not paused\n');
		return;
	}
	const clients = await Promise.all(Array.from({ length: args.connections ?? 1 }, () => pool.connect()));
	clients.forEach((client) => client.release());
	process.stdout.write('ready\n');
	await startSignal();
	const outcomes = await Promise.all(Array.from({ length: args.calls ?? 1 }, async () => (await deliver()).outcome));
	process.stdout.write(`${JSON.stringify({ pid: process.pid, outcomes })}\n`);
	await pool.end();
}

/** The same pool, whose connections stop forever right before the chosen statement. */
function pausing(pool: Pool, pauseBefore: 'effect' | 'commit', sql: string): Pool {
	const connect = pool.connect.bind(pool) as (callback?: unknown) => Promise<PoolClient>;
	(pool as unknown as { connect: (callback?: unknown) => Promise<PoolClient> | void }).connect = (callback?: unknown) =>
		// pool.query (the table check before the transaction) connects with a callback: not paused.
		callback ? connect(callback) : pausedClient();
	const pausedClient = async () => {
		const client = await connect();
		const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
		(client as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = async (...args: unknown[]) => {
			const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text: string }).text;
			if ((pauseBefore === 'commit' && text === 'commit') || (pauseBefore === 'effect' && text === sql)) {
				const { rows } = (await query('select pg_backend_pid() as pid')) as { rows: Array<{ pid: number }> };
				process.stdout.write(`paused ${rows[0].pid}\n`);
				await new Promise(() => {});
			}
			return query(...args);
		};
		return client;
	};
	return pool;
}

main().catch((error) => {
	process.stderr.write(`${(error as Error).message}\n`);
	process.exit(1);
});
