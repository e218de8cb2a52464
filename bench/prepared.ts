// `npm run bench -- --only single`: the cost of one reservation (one key, what a webhook execution
// sends) with the statements sent unnamed — Postgres parses and plans the large reserve statement on
// every call — and named (prepared once per connection, the package's default).
// Four sides, each on its own pool and table, in rotating order every round: the core both ways
// and plain pg both ways (the same statement text, to separate the server's saving from the core's).
// Also Postgres's own planning time for one key (EXPLAIN ANALYZE), and a 1,000-key batch, so a
// generic plan that would hurt batches shows up.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Pool } from 'pg';

import type { TableRef } from '../lib/identifiers';
import type { OwnedKey, ReserveOptions } from '../lib/types';
import { timed, freshKeys, requestsFor, PERMANENT, type Row, type ScaleGroup } from './scale';
import { median, percentile, fmt, fmtRatio, fmtMs, printTable, rotate } from './stats';

const ROOT = path.join(__dirname, '..');
const LEASE: ReserveOptions = { ...PERMANENT, mode: 'lease' };

/** A reserved key and its owner token (null for a key that was not new). */
interface Reserved {
	key: string;
	ownerToken: string | null;
}

/** One of the four ways to send the statements: the core or plain pg, unnamed or named. */
interface Side {
	name: string;
	named: boolean;
	ref: TableRef;
	pool: Pool;
	reserve: (keys: string[], options?: ReserveOptions) => Promise<Reserved[]>;
	complete: (owned: OwnedKey[]) => Promise<unknown>;
}

/** A scenario: `calls` inputs (each `size` fresh keys), made ready untimed by `prepare`, then timed through `run`. */
interface Scenario {
	name: string;
	callers: number;
	calls: number;
	size?: number;
	prepare?: (side: Side, inputs: string[][]) => Promise<OwnedKey[][]>;
	// A method, so each scenario's run may take the one kind of input it is given.
	run(side: Side, input: string[] | OwnedKey[]): Promise<unknown>;
}

/** The owner token of a key reserved new (a lease on a fresh key always has one). */
function ownerTokenOf(reserved: Reserved): string {
	if (reserved.ownerToken === null) throw new Error(`${reserved.key}: a fresh key came back without an owner token`);
	return reserved.ownerToken;
}

// The reserve statement's parameters as the core builds them (no replay evidence: off by default).
const reserveValues = (keys: string[], options: ReserveOptions): unknown[] => [
	keys,
	keys.map(() => 'header'),
	keys.map(() => null),
	keys.map(() => randomUUID()),
	options.mode,
	options.leaseSeconds,
	options.retentionSeconds,
	options.executionId,
	options.workflowId,
	keys.map(() => null),
	keys.map(() => null),
	keys.map(() => null),
	keys.map(() => null),
	options.instanceId,
	// No inbox (the Idempotent Webhook's At Once only).
	null,
	null,
	null,
	null,
	null,
];

export const single: ScaleGroup = async (ctx, { rounds }) => {
	const { table, createTable, renderStatement } = ctx;
	/* eslint-disable @typescript-eslint/no-require-imports -- the built package (dist/), what users run; the types are its sources' */
	const { PostgresKeyStore } = require(
		path.join(ROOT, 'dist', 'lib', 'store', 'postgres', 'stores'),
	) as typeof import('../lib/store/postgres/stores');
	const { sendUnnamed, statementName } = require(
		path.join(ROOT, 'dist', 'lib', 'store', 'postgres', 'preparedStatements'),
	) as typeof import('../lib/store/postgres/preparedStatements');
	/* eslint-enable @typescript-eslint/no-require-imports */
	const schema = 'idem_bench_single';
	const pools: Pool[] = [];
	const newPool = () => {
		const pool = new ctx.Pool({ connectionString: ctx.url, max: 8 });
		pool.on('error', () => {});
		pools.push(pool);
		return pool;
	};
	// Output: Compact (the node's default) for the reserve statement.
	const compact = (ref: TableRef) => renderStatement('reserve', ref, 'full-record');
	const makeSide = async (name: string, tableName: string, { core, named }: { core: boolean; named: boolean }): Promise<Side> => {
		const ref = table(schema, tableName);
		await createTable(ref);
		const pool = newPool();
		if (core) {
			if (!named) sendUnnamed(pool);
			const store = new PostgresKeyStore(pool, { schema, table: tableName, createTable: false });
			return {
				name,
				named,
				ref,
				pool,
				reserve: (keys, options = PERMANENT) => store.reserve(requestsFor(keys), { ...options, detail: 'compact' }),
				complete: (owned) => store.complete(owned),
			};
		}
		const send = (text: string, values: unknown[]) =>
			pool.query<Row>(named ? { name: statementName(text), text, values } : { text, values });
		const reserveSql = compact(ref);
		const completeSql = renderStatement('complete', ref);
		return {
			name,
			named,
			ref,
			pool,
			reserve: async (keys, options = PERMANENT) => {
				const { rows } = await send(reserveSql, reserveValues(keys, options));
				return rows.map((row) => ({ key: row.key as string, ownerToken: row.owner_token as string }));
			},
			complete: async (owned) =>
				(await send(completeSql, [owned.map((o) => o.key), owned.map((o) => o.ownerToken), owned.map(() => null)])).rows,
		};
	};
	const sides = [
		await makeSide('core, statements unnamed (before)', 'core_unnamed', { core: true, named: false }),
		await makeSide('core, named prepared statements (now)', 'core_named', { core: true, named: true }),
		await makeSide('plain pg, unnamed', 'plain_unnamed', { core: false, named: false }),
		await makeSide('plain pg, named', 'plain_named', { core: false, named: true }),
	];
	try {
		// Postgres's own parse-to-plan cost for one key, from the unnamed statement (EXPLAIN ANALYZE runs it).
		const explain = async (sql: string, values: unknown[]) =>
			(
				await ctx.q<{ 'QUERY PLAN': Array<Record<'Planning Time' | 'Execution Time', number>> }>(
					`explain (analyze, summary, format json) ${sql}`,
					values,
				)
			).rows[0]['QUERY PLAN'][0];
		const planning = { reserve: [] as number[], complete: [] as number[] };
		const execution = { reserve: [] as number[], complete: [] as number[] };
		const probe = sides[2].ref;
		for (let i = 0; i < (ctx.quick ? 3 : 30); i++) {
			const [key] = freshKeys(1);
			const values = reserveValues([key], LEASE);
			const reserved = await explain(compact(probe), values);
			planning.reserve.push(reserved['Planning Time']);
			execution.reserve.push(reserved['Execution Time']);
			const completed = await explain(renderStatement('complete', probe), [[key], [(values[3] as string[])[0]], [null]]);
			planning.complete.push(completed['Planning Time']);
			execution.complete.push(completed['Execution Time']);
		}
		console.log('\n## Prepared statements: one key per call, statements unnamed vs named\n');
		console.log(
			`Postgres, unnamed, 1 key (EXPLAIN ANALYZE, median of ${planning.reserve.length}): reserve planning ${fmtMs(median(planning.reserve), 3)} ms, execution ${fmtMs(median(execution.reserve), 3)} ms; complete planning ${fmtMs(median(planning.complete), 3)} ms, execution ${fmtMs(median(execution.complete), 3)} ms (parse and analysis come on top of planning and are not in EXPLAIN).\n`,
		);

		const calls = ctx.quick ? 20 : 300;
		const scenarios: Scenario[] = [
			{ name: 'reserve, 1 key, 1 caller', callers: 1, calls, run: (side, keys: string[]) => side.reserve(keys) },
			{ name: 'reserve, 1 key, 8 callers', callers: 8, calls: calls * 2, run: (side, keys: string[]) => side.reserve(keys) },
			{
				name: 'complete, 1 key, 1 caller (lease reserved untimed first)',
				callers: 1,
				calls,
				prepare: async (side, inputs) =>
					Promise.all(
						inputs.map(async (keys) => (await side.reserve(keys, LEASE)).map((r) => ({ key: r.key, ownerToken: ownerTokenOf(r) }))),
					),
				run: (side, owned: OwnedKey[]) => side.complete(owned),
			},
			{
				name: 'reserve, 1,000 keys/call, 1 caller (batch check)',
				callers: 1,
				calls: ctx.quick ? 2 : 15,
				size: 1000,
				run: (side, keys: string[]) => side.reserve(keys),
			},
		];
		const rows: string[][] = [];
		for (const scenario of scenarios) {
			const perSide = new Map(sides.map((side) => [side, { throughput: [] as number[], latencies: [] as number[] }]));
			const of = (side: Side) => perSide.get(side) ?? { throughput: [], latencies: [] };
			const ratios = { core: [] as number[], plain: [] as number[] };
			// A warm-up round: connections opened, statements prepared, JIT; not counted.
			for (let round = -1; round < rounds; round++) {
				const perRound = new Map<Side, number>();
				for (const side of rotate(sides, Math.max(round, 0))) {
					const keys = Array.from({ length: round < 0 ? Math.min(scenario.calls, 16) : scenario.calls }, () =>
						freshKeys(scenario.size ?? 1),
					);
					const inputs: Array<string[] | OwnedKey[]> = scenario.prepare ? await scenario.prepare(side, keys) : keys;
					const result = await timed(inputs, scenario.callers, (input) => scenario.run(side, input));
					if (round < 0) continue;
					perRound.set(side, inputs.length / result.seconds);
					of(side).throughput.push(inputs.length / result.seconds);
					of(side).latencies.push(...result.latencies);
				}
				if (round < 0) continue;
				const perSecond = (side: Side) => perRound.get(side) ?? NaN;
				ratios.core.push(perSecond(sides[1]) / perSecond(sides[0]));
				ratios.plain.push(perSecond(sides[3]) / perSecond(sides[2]));
			}
			const unnamedP50 = { core: percentile(of(sides[0]).latencies, 50), plain: percentile(of(sides[2]).latencies, 50) };
			for (const side of sides) {
				const { throughput, latencies } = of(side);
				const kind = side === sides[0] || side === sides[1] ? 'core' : 'plain';
				const p50 = percentile(latencies, 50);
				rows.push([
					scenario.name,
					side.name,
					fmt(median(throughput)),
					side.named ? fmtRatio(median(ratios[kind])) : '1',
					side.named ? `${fmtRatio(Math.min(...ratios[kind]), 2)}–${fmtRatio(Math.max(...ratios[kind]), 2)}` : '–',
					fmtMs(p50, 2),
					side.named ? fmtMs(p50 - unnamedP50[kind], 2) : '–',
					fmtMs(percentile(latencies, 99), 2),
				]);
			}
		}
		printTable(
			['scenario', 'side', 'calls/s (median)', 'ratio named/unnamed', 'ratio min–max', 'p50 ms', 'p50 named − unnamed ms', 'p99 ms'],
			rows,
			{
				textColumns: 2,
			},
		);
		console.log(
			`\n${rounds} rounds after one warm-up; each round runs every side once, the order rotating; ratio: median of per-round throughput ratios, named over unnamed of the same kind.`,
		);
	} finally {
		await Promise.all(pools.map((pool) => pool.end().catch(() => {})));
	}
};
