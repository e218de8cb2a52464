// The scenarios of `bench/run.ts` beyond core-vs-pg overhead: the statement against the recipe's
// minimal insert, table growth to 10 M rows, cleanup under load, bloat from duplicates and the size
// of the node's output. Each compares sides within one run (interleaved rounds where the sides can
// run alternately), so ratios hold on a busy machine. Everything lives in one temporary database
// that the caller drops at the end.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Pool, QueryResult, QueryResultRow } from 'pg';

import type { TableRef } from '../lib/identifiers';
import type { PostgresKeyStore } from '../lib/store/postgres/stores';
import type { renderStatement } from '../lib/store/postgres/statements';
import type { CompactRecord, ReservationDetail, ReservationRequest, ReservationResult, ReserveOptions } from '../lib/types';
import { median, percentile, fmt, fmtRatio, fmtMs, printTable, rotate, loadAverage } from './stats';

const ROOT = path.join(__dirname, '..');
const DAY = 86400;
export const PERMANENT: ReserveOptions = {
	mode: 'permanent',
	leaseSeconds: 300,
	retentionSeconds: 30 * DAY,
	executionId: 'bench-execution',
	workflowId: 'bench-workflow',
	instanceId: 'bench-instance',
};
const TARGETS = { statementRatio: 0.7, growthP99: 1.5, cleanupP99: 2 };

let keyCounter = 0;
// Stripe-like event keys as the Reserve node stores them (evt: + the event id).
export function freshKeys(count: number): string[] {
	const keys = new Array<string>(count);
	for (let i = 0; i < count; i++)
		keys[i] = `evt:evt_${(keyCounter++).toString(36).padStart(8, '0')}${randomUUID().replace(/-/g, '').slice(0, 16)}`;
	return keys;
}
export const requestsFor = (keys: string[]): ReservationRequest[] => keys.map((key) => ({ key, keySource: 'header', payloadHash: null }));

// The same shape for keys made inside Postgres by generate_series (md5 spreads them like real ids).
const SQL_KEY = `'evt:evt_' || substr(md5(g::text || $1::text), 1, 24)`;

/** Times `fn` once per element of `inputs` with `callers` workers; returns latencies (ms) and seconds. */
export async function timed<T>(
	inputs: T[],
	callers: number,
	fn: (input: T) => Promise<unknown>,
): Promise<{ latencies: number[]; seconds: number }> {
	const latencies: number[] = [];
	let next = 0;
	const worker = async () => {
		while (next < inputs.length) {
			const input = inputs[next++];
			const started = performance.now();
			await fn(input);
			latencies.push(performance.now() - started);
		}
	};
	const started = performance.now();
	await Promise.all(Array.from({ length: Math.min(callers, inputs.length) }, worker));
	return { latencies, seconds: (performance.now() - started) / 1000 };
}

function chunk<T>(list: T[], size: number): T[][] {
	const out: T[][] = [];
	for (let i = 0; i < list.length; i += size) out.push(list.slice(i, i + size));
	return out;
}

/** A row of the keys table as the reserve statement returns it. */
export type Row = Record<string, unknown>;
/** Reserves `keys` with the reserve statement sent through plain pg; the rows it returned. */
export type PlainReserve = (keys: string[]) => Promise<Row[]>;
/** The sizes of a table: heap and indexes in bytes, and its row count (bigint: strings). */
export interface TableSizes {
	heap: string;
	indexes: string;
	rows: string;
}

/** What every group of this file (and bench/prepared.ts) is given: the built package's libraries and helpers bound to one database. */
export interface ScaleContext {
	Pool: typeof Pool;
	url: string;
	pool: Pool;
	q: <R extends QueryResultRow = Row>(text: string, values?: unknown[]) => Promise<QueryResult<R>>;
	table: (schema: string, name: string) => TableRef;
	store: (schema: string, name: string) => PostgresKeyStore;
	plainReserve: (ref: TableRef, via?: Pool, sql?: string, options?: { evidence?: boolean; nullArrays?: boolean }) => PlainReserve;
	createTable: (ref: TableRef, options?: { fillfactor?: number }) => Promise<void>;
	secondaryIndexes: (ref: TableRef) => Promise<Array<{ name: string; ddl: string }>>;
	sizes: (ref: TableRef) => Promise<TableSizes>;
	renderStatement: typeof renderStatement;
	log: (line: string) => void;
	quick: boolean;
}

/** A group of scenarios run on the scale groups' database. */
export type ScaleGroup = (ctx: ScaleContext, options: { rounds: number }) => Promise<void>;

/** Libraries from the built package and helpers bound to one database. */
export function context({
	Pool,
	url,
	log,
	quick,
}: {
	Pool: typeof import('pg').Pool;
	url: string;
	log: (line: string) => void;
	quick: boolean;
}): ScaleContext {
	/* eslint-disable @typescript-eslint/no-require-imports -- the built package (dist/), what users run; the types are its sources' */
	const { PostgresKeyStore } = require(
		path.join(ROOT, 'dist', 'lib', 'store', 'postgres', 'stores'),
	) as typeof import('../lib/store/postgres/stores');
	const { renderStatement } = require(
		path.join(ROOT, 'dist', 'lib', 'store', 'postgres', 'statements'),
	) as typeof import('../lib/store/postgres/statements');
	const { tableRef } = require(path.join(ROOT, 'dist', 'lib', 'identifiers')) as typeof import('../lib/identifiers');
	/* eslint-enable @typescript-eslint/no-require-imports */
	const pool = new Pool({ connectionString: url, max: 10 });
	pool.on('error', () => {});
	const q = <R extends QueryResultRow = Row>(text: string, values?: unknown[]) => pool.query<R>(text, values);
	const table = (schema: string, name: string) => tableRef(schema, name);
	const store = (schema: string, name: string) => new PostgresKeyStore(pool, { schema, table: name, createTable: false });
	// `evidence: false` for a prototype statement written before the replay-evidence parameters ($10–$13);
	// `nullArrays: true` sends the columns no key fills as arrays of nulls (the prototype's way),
	// otherwise as one null each, as the core sends them.
	const plainReserve = (
		ref: TableRef,
		via = pool,
		sql = renderStatement('reserve', ref),
		{ evidence = true, nullArrays = false } = {},
	): PlainReserve => {
		const o = PERMANENT;
		return async (keys) => {
			const none = () => (nullArrays ? keys.map(() => null) : null);
			return (
				await via.query<Row>(sql, [
					keys,
					keys.map(() => 'header'),
					none(),
					keys.map(() => randomUUID()),
					o.mode,
					o.leaseSeconds,
					o.retentionSeconds,
					o.executionId,
					o.workflowId,
					// No replay evidence (Store Payload, Source, Correlation ID are off by default).
					// …and the n8n instance, after them in the reserve statement.
					// …and the inbox (the Idempotent Webhook's At Once only), after it.
					...(evidence ? [none(), none(), none(), none(), o.instanceId, none(), none(), none(), none(), none()] : []),
				])
			).rows;
		};
	};
	// The store creates the table the way the nodes do (whatever DDL or migrations the package has).
	const createTable = async (ref: TableRef, { fillfactor }: { fillfactor?: number } = {}) => {
		await q(`create schema if not exists "${ref.schema}"`);
		await q(`drop table if exists ${ref.qualified}`);
		await new PostgresKeyStore(pool, { schema: ref.schema, table: ref.table, createTable: true }).createTable();
		if (fillfactor) await q(`alter table ${ref.qualified} set (fillfactor = ${Number(fillfactor)})`);
	};
	/** The table's indexes other than its primary key, as `create index` statements. */
	const secondaryIndexes = async (ref: TableRef) =>
		(
			await q<{ name: string; ddl: string }>(
				`select i.indexrelid::regclass::text as name, pg_get_indexdef(i.indexrelid) as ddl
				   from pg_index i where i.indrelid = $1::regclass and not i.indisprimary`,
				[ref.qualified],
			)
		).rows;
	const sizes = async (ref: TableRef) =>
		(
			await q<TableSizes>(
				`select pg_table_size(c.oid)::bigint as heap, pg_indexes_size(c.oid)::bigint as indexes, (select count(*) from ${ref.qualified})::bigint as rows
				   from pg_class c where c.oid = $1::regclass`,
				[ref.qualified],
			)
		).rows[0];
	return {
		Pool,
		url,
		pool,
		q,
		table,
		store,
		plainReserve,
		createTable,
		secondaryIndexes,
		sizes,
		renderStatement,
		log,
		quick,
	};
}

/**
 * Bulk-loads `count` completed rows with realistic keys and spread timestamps. `ageDays` shifts
 * first_seen into the past (expired rows for cleanup); indexes stay in place unless `rebuild`
 * (dropping them first and building them after is ~5× faster for 10 M rows, and packs them tighter).
 */
async function bulkLoad(
	ctx: ScaleContext,
	ref: TableRef,
	count: number,
	{ ageDays = 0, salt = randomUUID(), rebuild = false } = {},
): Promise<void> {
	const { q } = ctx;
	const indexes = rebuild ? await ctx.secondaryIndexes(ref) : [];
	if (rebuild) {
		await q(`alter table ${ref.qualified} drop constraint if exists "${ref.table}_pkey"`);
		for (const index of indexes) await q(`drop index if exists ${index.name}`);
	}
	const step = 1000000;
	for (let from = 1; from <= count; from += step) {
		const to = Math.min(count, from + step - 1);
		await q(
			`insert into ${ref.qualified} (key, first_seen, status, attempts, duplicate_count, last_seen, expires_at, owner_token, execution_id, workflow_id, key_source, completed_at)
			 select k, t, 'completed', 1, 0, t, t + interval '30 days', md5(k)::uuid, (g % 100000)::text, 'bench-workflow', 'header', t
			   from (select g, ${SQL_KEY} as k, now() - make_interval(days => $2::int) - (g % 2592000) * interval '1 second' as t
			           from generate_series($3::bigint, $4::bigint) g) s
			 ${rebuild ? '' : 'on conflict (key) do nothing'}`,
			[salt, ageDays, from, to],
		);
	}
	if (rebuild) {
		await q(`alter table ${ref.qualified} add constraint "${ref.table}_pkey" primary key (key)`);
		for (const index of indexes) await q(index.ddl);
	}
	await q(`analyze ${ref.qualified}`);
}

// ---------------------------------------------------------------------------------------------
// 1. the reserve statement vs the recipe's minimal insert

const RETURNED = `key, status, attempts, duplicate_count, first_seen, last_seen, locked_until, expires_at, owner_token, execution_id,
  workflow_id, key_source, payload_hash, response, completed_at, last_error, coalesce(locked_until > now(), false) as lease_active`;

/**
 * A prototype, for measurement only: the same insert with DO NOTHING, and the rows that already
 * existed read back in the same statement. It writes nothing for a duplicate (no duplicate_count,
 * no last_seen, no reclaim of expired, failed or abandoned rows, which would need a second UPDATE
 * for just those rows), and a key inserted by a concurrent transaction after this statement's
 * snapshot comes back without a row (the caller would retry those keys).
 */
function doNothingPrototype(qualified: string): string {
	return `with batch as (
  select distinct on (key) key, key_source, payload_hash, owner_token
  from unnest($1::text[], $2::text[], $3::text[], $4::uuid[]) with ordinality as b(key, key_source, payload_hash, owner_token, position)
  order by key, position
), inserted as (
  insert into ${qualified} (key, first_seen, status, attempts, duplicate_count, last_seen, locked_until, expires_at,
    owner_token, execution_id, workflow_id, key_source, payload_hash, completed_at)
  select key, now(), case when $5 = 'lease' then 'processing' else 'completed' end, 1, 0, now(),
    case when $5 = 'lease' then now() + make_interval(secs => $6::double precision) end,
    now() + make_interval(secs => $7::double precision), owner_token, $8::text, $9::text, key_source, payload_hash,
    case when $5 = 'lease' then null else now() end
  from batch order by key
  on conflict (key) do nothing
  returning ${RETURNED}
)
select * from inserted
union all
select ${RETURNED.replace(/\b(key|status|attempts|duplicate_count|first_seen|last_seen|locked_until|expires_at|owner_token|execution_id|workflow_id|key_source|payload_hash|response|completed_at|last_error)\b/g, 'e.$1')}
from ${qualified} e join batch b on b.key = e.key
where not exists (select 1 from inserted i where i.key = b.key)`;
}

const statement: ScaleGroup = async (ctx, { rounds }) => {
	const { q, table, store, plainReserve, createTable } = ctx;
	const schema = 'idem_bench_statement';
	const refs = {
		core: table(schema, 'reserve_core'),
		coreCompact: table(schema, 'reserve_core_compact'),
		plain: table(schema, 'reserve_plain'),
		plainCompact: table(schema, 'reserve_plain_compact'),
		pkOnly: table(schema, 'reserve_pk_only'),
		doNothing: table(schema, 'reserve_do_nothing'),
		previous: table(schema, 'reserve_previous'),
		minimal: table(schema, 'recipe_minimal'),
	};
	for (const key of ['core', 'coreCompact', 'plain', 'plainCompact', 'pkOnly', 'doNothing', 'previous'] as const)
		await createTable(refs[key]);
	for (const index of await ctx.secondaryIndexes(refs.pkOnly)) await q(`drop index ${index.name}`);
	await q(`create table ${refs.minimal.qualified} (key text primary key, first_seen timestamptz not null default now())`);
	const minimalSql = `insert into ${refs.minimal.qualified} (key) select unnest($1::text[]) on conflict (key) do nothing returning key`;
	const coreStore = store(schema, 'reserve_core');
	const coreCompactStore = store(schema, 'reserve_core_compact');
	// Output: Compact's statement (sql/postgres/queries/reserve.sql without its full-record section).
	const compactSql = (ref: TableRef) => ctx.renderStatement('reserve', ref, 'full-record');
	const sides: Array<{ name: string; run: (keys: string[]) => Promise<unknown>; baseline?: boolean; target?: boolean }> = [
		{
			name: 'recipe: INSERT … ON CONFLICT DO NOTHING RETURNING key (2 columns)',
			run: async (keys: string[]) => (await q(minimalSql, [keys])).rows,
			baseline: true,
		},
		{
			name: 'reserve via the core, Output: Full (17 columns back, as before)',
			run: (keys: string[]) => coreStore.reserve(requestsFor(keys), PERMANENT),
			target: true,
		},
		{
			name: 'reserve via the core, Output: Compact (8 columns back, the default)',
			run: (keys: string[]) => coreCompactStore.reserve(requestsFor(keys), { ...PERMANENT, detail: 'compact' }),
			target: true,
		},
		{ name: 'reserve statement via plain pg, Full', run: plainReserve(refs.plain), target: true },
		{
			name: 'reserve statement via plain pg, Compact',
			run: plainReserve(refs.plainCompact, ctx.pool, compactSql(refs.plainCompact)),
			target: true,
		},
		{
			// The core sorts and locks in byte order (collate "C") and sends unfilled columns as one null; this prototype does neither.
			name: 'prototype: Compact as before session 4 (database collation, arrays of nulls), plain pg',
			run: plainReserve(refs.previous, ctx.pool, compactSql(refs.previous).replace(' collate "C"', ''), { nullArrays: true }),
		},
		{
			name: 'reserve statement, table without the 3 secondary indexes (prototype)',
			run: plainReserve(refs.pkOnly),
		},
		{
			name: 'DO NOTHING + read existing rows, full table (prototype)',
			run: plainReserve(refs.doNothing, ctx.pool, doNothingPrototype(refs.doNothing.qualified), { evidence: false }),
		},
	];
	const scenarios = ctx.quick
		? [
				{ name: '1,000 keys/call', size: 1000, calls: 2, duplicates: false },
				{
					name: 'duplicates, 1,000 keys/call',
					size: 1000,
					calls: 2,
					duplicates: true,
				},
			]
		: [
				{ name: '1,000 keys/call', size: 1000, calls: 10, duplicates: false },
				{ name: '10,000 keys/call', size: 10000, calls: 2, duplicates: false },
				{
					name: 'duplicates, 1,000 keys/call',
					size: 1000,
					calls: 10,
					duplicates: true,
				},
				{
					name: 'duplicates, 10,000 keys/call',
					size: 10000,
					calls: 2,
					duplicates: true,
				},
			];
	const rows: string[][] = [];
	const verdicts: string[] = [];
	for (const scenario of scenarios) {
		const perSide = sides.map(() => ({ keysPerSecond: [] as number[], ratio: [] as number[] }));
		// Warm-up: plans and connections on every side.
		for (const side of sides) await side.run(freshKeys(scenario.size));
		for (let round = 0; round < rounds; round++) {
			const calls = Array.from({ length: scenario.calls }, () => freshKeys(scenario.size));
			if (scenario.duplicates) for (const side of sides) for (const keys of calls) await side.run(keys);
			await q('checkpoint').catch(() => {});
			const seconds = new Map<(typeof sides)[number], number>();
			for (const side of rotate(sides, round)) seconds.set(side, (await timed(calls, 1, side.run)).seconds);
			const secondsOf = (side: (typeof sides)[number]) => seconds.get(side) ?? NaN;
			const base = secondsOf(sides[0]);
			sides.forEach((side, i) => {
				perSide[i].keysPerSecond.push((scenario.size * scenario.calls) / secondsOf(side));
				perSide[i].ratio.push(base / secondsOf(side));
			});
		}
		sides.forEach((side, i) => {
			const ratio = median(perSide[i].ratio);
			rows.push([
				scenario.name,
				side.name,
				fmt(median(perSide[i].keysPerSecond)),
				side.baseline ? '1' : fmtRatio(ratio),
				side.baseline ? '–' : `${fmtRatio(Math.min(...perSide[i].ratio), 2)}–${fmtRatio(Math.max(...perSide[i].ratio), 2)}`,
			]);
			if (side.target) {
				verdicts.push(
					`${ratio >= TARGETS.statementRatio ? 'TARGET HOLDS' : 'TARGET MISSED'}: ${scenario.name}, ${side.name}: ${fmtRatio(ratio)} × the recipe (target ≥ ${TARGETS.statementRatio})`,
				);
			}
		});
		ctx.log(`  statement: ${scenario.name} done (load ${loadAverage()})`);
	}
	console.log(`\n## The reserve statement vs the recipe's minimal insert (${rounds} interleaved rounds)\n`);
	printTable(['scenario', 'side', 'keys/s (median)', 'ratio to recipe', 'ratio min–max'], rows, { textColumns: 2 });
	for (const line of verdicts) console.log(line);
};

// ---------------------------------------------------------------------------------------------
// 2. table growth

const growth: ScaleGroup = async (ctx, { rounds }) => {
	const { table, store, createTable, sizes } = ctx;
	const schema = 'idem_bench_growth';
	const steps = ctx.quick ? [0, 2000, 20000] : [0, 1000000, 10000000];
	const tables = steps.map((rows) => ({
		rows,
		ref: table(schema, `keys_${rows}`),
		store: store(schema, `keys_${rows}`),
		single: [] as number[],
		batch: [] as number[],
	}));
	for (const t of tables) {
		await createTable(t.ref);
		const started = Date.now();
		if (t.rows > 0) await bulkLoad(ctx, t.ref, t.rows, { rebuild: t === tables.at(-1) });
		if (t.rows > 0)
			ctx.log(`  growth: loaded ${fmt(t.rows)} rows in ${((Date.now() - started) / 1000).toFixed(0)} s (load ${loadAverage()})`);
	}
	const singles = ctx.quick ? 40 : 400;
	const batches = ctx.quick ? 2 : 16;
	// Round 0 warms every table up and is not counted.
	for (let round = 0; round <= rounds; round++) {
		for (const t of rotate(tables, round)) {
			const single = await timed(
				freshKeys(singles).map((k) => [k]),
				8,
				(keys) => t.store.reserve(requestsFor(keys), PERMANENT),
			);
			const batch = await timed(
				Array.from({ length: batches }, () => freshKeys(1000)),
				1,
				(keys) => t.store.reserve(requestsFor(keys), PERMANENT),
			);
			if (round > 0) {
				t.single.push(...single.latencies);
				t.batch.push(...batch.latencies);
			}
		}
	}
	const [empty] = tables;
	const rows: string[][] = [];
	for (const t of tables) {
		const size = await sizes(t.ref);
		const perMillion = (bytes: string) => (Number(bytes) / 1024 / 1024 / (Number(size.rows) / 1e6)).toFixed(0);
		rows.push([
			fmt(t.rows),
			fmtMs(percentile(t.single, 50), 2),
			fmtMs(percentile(t.single, 99), 2),
			`${(percentile(t.single, 99) / percentile(empty.single, 99)).toFixed(2)}×`,
			fmtMs(percentile(t.batch, 50)),
			fmtMs(percentile(t.batch, 99)),
			`${(percentile(t.batch, 99) / percentile(empty.batch, 99)).toFixed(2)}×`,
			t.rows >= 1000 ? `${perMillion(size.heap)} + ${perMillion(size.indexes)}` : '–',
		]);
	}
	console.log(
		`\n## Table growth (${rounds} interleaved rounds after a warm-up round; each: ${singles} single-key reserves by 8 callers, ${batches} batches of 1,000)\n`,
	);
	printTable(
		[
			'rows in table',
			'single p50 ms',
			'single p99 ms',
			'p99 vs empty',
			'1,000-key p50 ms',
			'1,000-key p99 ms',
			'p99 vs empty',
			'MB per million keys (table + indexes)',
		],
		rows,
	);
	console.log(
		'The largest table is loaded without indexes and indexed afterwards (packed B-trees); the others are loaded with the indexes in place (random key order, like real traffic).',
	);
	const last = tables[tables.length - 1];
	for (const [label, kind] of [
		['single key, 8 callers', 'single'],
		['1,000-key batches', 'batch'],
	] as const) {
		const ratio = percentile(last[kind], 99) / percentile(empty[kind], 99);
		console.log(
			`${ratio <= TARGETS.growthP99 ? 'TARGET HOLDS' : 'TARGET MISSED'}: ${label}: p99 at ${fmt(last.rows)} rows is ${ratio.toFixed(2)}× p99 on an empty table (target ≤ ${TARGETS.growthP99}×)`,
		);
	}
};

// ---------------------------------------------------------------------------------------------
// 3. cleanup under load

const cleanupUnderLoad: ScaleGroup = async (ctx) => {
	const { table, store, createTable, q } = ctx;
	const schema = 'idem_bench_cleanup';
	const ref = table(schema, 'keys');
	const expired = ctx.quick ? 20000 : 1000000;
	const live = ctx.quick ? 5000 : 200000;
	await createTable(ref);
	// Oldest first, as a real table fills: the expired rows sit before the live ones in the heap.
	await bulkLoad(ctx, ref, expired, { ageDays: 31 }); // past retention
	await bulkLoad(ctx, ref, live); // kept: first seen within the last 30 days
	await q(`vacuum analyze ${ref.qualified}`);
	const keyStore = store(schema, 'keys');
	const phases: Record<'before' | 'during' | 'after', number[]> = { before: [], during: [], after: [] };
	let phase: keyof typeof phases = 'before';
	let stop = false;
	const reserver = async () => {
		while (!stop) {
			const keys = requestsFor(freshKeys(1));
			const started = performance.now();
			await keyStore.reserve(keys, PERMANENT);
			phases[phase].push(performance.now() - started);
		}
	};
	const workers = Array.from({ length: 8 }, reserver);
	const quiet = ctx.quick ? 1000 : 8000;
	await new Promise((resolve) => setTimeout(resolve, quiet));
	phase = 'during';
	// The node's defaults: 30 days, batches of 10,000, and here no time limit.
	const result = await keyStore.cleanup({
		retentionSeconds: 30 * DAY,
		batchSize: 10000,
		timeBudgetSeconds: 3600,
	});
	phase = 'after';
	await new Promise((resolve) => setTimeout(resolve, quiet));
	stop = true;
	await Promise.all(workers);
	const without = [...phases.before, ...phases.after];
	const rowsPerSecond = (result.deleted / result.durationMs) * 1000;
	console.log(
		`\n## Cleanup under load: ${fmt(expired)} expired rows (of ${fmt(expired + live)}) deleted by PostgresKeyStore.cleanup while 8 clients reserve single keys\n`,
	);
	printTable(
		['phase', 'reserves', 'p50 ms', 'p99 ms', 'max ms'],
		[
			[
				'without cleanup (before + after)',
				fmt(without.length),
				fmtMs(percentile(without, 50), 2),
				fmtMs(percentile(without, 99), 2),
				fmtMs(percentile(without, 100)),
			],
			[
				'during cleanup',
				fmt(phases.during.length),
				fmtMs(percentile(phases.during, 50), 2),
				fmtMs(percentile(phases.during, 99), 2),
				fmtMs(percentile(phases.during, 100)),
			],
		],
	);
	const ratio = percentile(phases.during, 99) / percentile(without, 99);
	console.log(
		`\ncleanup: ${fmt(result.deleted)} rows in ${fmt(result.durationMs)} ms, ${result.batches} batches of 10,000, ${fmt(rowsPerSecond)} rows/s under load; a daily run at 1 M expired rows/day takes ~${(1e6 / rowsPerSecond).toFixed(0)} s.`,
	);
	console.log(
		`${ratio <= TARGETS.cleanupP99 ? 'TARGET HOLDS' : 'TARGET MISSED'}: reserve p99 during cleanup is ${ratio.toFixed(2)}× p99 without it (target ≤ ${TARGETS.cleanupP99}×)`,
	);
	if (result.deleted < expired) throw new Error(`cleanup deleted ${result.deleted} of ${expired} expired rows`);
};

/**
 * The cleanup statement (its DELETE finds the doomed rows by primary key, `key = any(array(…))`)
 * against the previous one with the same rule (a DELETE … USING a CTE, which hash-joined over the
 * whole table), on a table of 1 M live + 200,000 expired rows, no other load. Per-batch times show
 * how each scales.
 */
const cleanupPlan: ScaleGroup = async (ctx) => {
	const { table, createTable, q, renderStatement } = ctx;
	const schema = 'idem_bench_cleanup_plan';
	const live = ctx.quick ? 20000 : 1000000;
	const expired = ctx.quick ? 20000 : 200000;
	const sides = [
		{ name: 'previous: WITH doomed AS (SELECT … FOR UPDATE SKIP LOCKED) DELETE … USING doomed', ref: table(schema, 'previous'), sql: '' },
		{
			name: 'sql/postgres/queries/cleanup.sql: DELETE … WHERE key = any(array(SELECT … LIMIT … FOR UPDATE SKIP LOCKED))',
			ref: table(schema, 'current'),
			sql: '',
		},
	];
	for (const side of sides) {
		await createTable(side.ref);
		await bulkLoad(ctx, side.ref, expired, { ageDays: 31 });
		await bulkLoad(ctx, side.ref, live);
		await q(`vacuum analyze ${side.ref.qualified}`);
	}
	sides[0].sql = hashJoinCleanup(renderStatement('cleanup', sides[0].ref));
	sides[1].sql = renderStatement('cleanup', sides[1].ref);
	const rows: string[][] = [];
	for (const side of sides) {
		const batches: number[] = [];
		let deleted = 0;
		for (;;) {
			const started = performance.now();
			const count = (await q(side.sql, [30 * DAY, 10000])).rowCount ?? 0;
			batches.push(performance.now() - started);
			deleted += count;
			if (count < 10000) break;
		}
		const ms = batches.reduce((a, b) => a + b, 0);
		rows.push([
			side.name,
			fmt(deleted),
			fmt(ms),
			fmt((deleted / ms) * 1000),
			fmtMs(median(batches), 0),
			fmtMs(percentile(batches, 100), 0),
		]);
	}
	console.log(
		`\n## Cleanup statement: ${fmt(expired)} expired rows in a table of ${fmt(expired + live)}, batches of 10,000, no other load\n`,
	);
	printTable(['statement', 'deleted', 'ms', 'rows/s', 'median batch ms', 'slowest batch ms'], rows);
};

/** cleanup.sql rewritten back to the previous shape: the DELETE joins the doomed keys' CTE. */
function hashJoinCleanup(cleanupSql: string): string {
	const match = /^delete from (\S+)\s+where key = any\(array\(([\s\S]*?)\)\);?\s*$/.exec(cleanupSql);
	if (!match) throw new Error('cleanup.sql no longer has the shape this comparison rewrites');
	return `with doomed as (${match[2]}) delete from ${match[1]} as e using doomed where e.key = doomed.key`;
}

// ---------------------------------------------------------------------------------------------
// 4. bloat from duplicate-heavy traffic

const bloat: ScaleGroup = async (ctx) => {
	const { table, plainReserve, createTable, sizes, q } = ctx;
	const schema = 'idem_bench_bloat';
	const count = ctx.quick ? 10000 : 1000000;
	const variants: Array<{ name: string; ref: TableRef; fillfactor?: number; reserve?: PlainReserve; before?: TableSizes }> = [
		{ name: 'default table (fillfactor 100)', ref: table(schema, 'ff100') },
		{
			name: 'fillfactor 90 (prototype)',
			ref: table(schema, 'ff90'),
			fillfactor: 90,
		},
	];
	const salt = randomUUID();
	// Its own connections, closed before the statistics are read: a backend reports its row counts
	// to pg_stat_user_tables when it goes idle for a while or exits.
	const trafficPool = new ctx.Pool({ connectionString: ctx.url, max: 2 });
	trafficPool.on('error', () => {});
	for (const v of variants) {
		await createTable(v.ref, { fillfactor: v.fillfactor });
		await bulkLoad(ctx, v.ref, count, { salt });
		await q(`vacuum analyze ${v.ref.qualified}`);
		v.reserve = plainReserve(v.ref, trafficPool);
		v.before = await sizes(v.ref);
	}
	// 1 M duplicate deliveries of keys that exist, in random order, 1,000 per call, the variants alternating.
	const { rows } = await q<{ k: string }>(`select ${SQL_KEY} as k from generate_series(1, $2::bigint) g order by random()`, [salt, count]);
	const batches = chunk(
		rows.map((r) => r.k),
		1000,
	);
	const started = Date.now();
	for (const [i, keys] of batches.entries()) for (const v of rotate(variants, i)) await v.reserve?.(keys);
	const seconds = (Date.now() - started) / 1000;
	await trafficPool.end();
	const statsSql = `select n_live_tup, n_dead_tup, n_tup_upd, n_tup_hot_upd, autovacuum_count from pg_stat_user_tables where relid = $1::regclass`;
	await new Promise((resolve) => setTimeout(resolve, 1500));
	const out: string[][] = [];
	for (const v of variants) {
		const stat = (
			await q<Record<'n_live_tup' | 'n_dead_tup' | 'n_tup_upd' | 'n_tup_hot_upd' | 'autovacuum_count', string>>(statsSql, [v.ref.qualified])
		).rows[0];
		const after = await sizes(v.ref);
		await q(`vacuum ${v.ref.qualified}`);
		const vacuumed = await sizes(v.ref);
		const mb = (x: string | undefined) => (Number(x) / 1024 / 1024).toFixed(0);
		out.push([
			v.name,
			`${mb(v.before?.heap)} + ${mb(v.before?.indexes)}`,
			`${mb(after.heap)} + ${mb(after.indexes)}`,
			`${((Number(after.heap) + Number(after.indexes)) / (Number(v.before?.heap) + Number(v.before?.indexes))).toFixed(2)}×`,
			fmt(Number(stat.n_tup_upd)),
			`${((Number(stat.n_tup_hot_upd) / Math.max(1, Number(stat.n_tup_upd))) * 100).toFixed(0)} %`,
			fmt(Number(stat.n_dead_tup)),
			String(stat.autovacuum_count),
			`${mb(vacuumed.heap)} + ${mb(vacuumed.indexes)}`,
		]);
	}
	const settings = (
		await q<{ name: string; setting: string }>(
			`select name, setting from pg_settings where name in ('autovacuum', 'autovacuum_vacuum_scale_factor', 'autovacuum_vacuum_threshold', 'autovacuum_naptime') order by name`,
		)
	).rows;
	console.log(
		`\n## Bloat after ${fmt(count)} duplicate reservations of ${fmt(count)} existing keys (${fmt((count * variants.length) / seconds)} duplicates/s over both tables)\n`,
	);
	printTable(
		[
			'table',
			'MB before (heap + indexes)',
			'MB after',
			'growth',
			'row updates',
			'HOT updates',
			'dead rows left',
			'autovacuum runs',
			'MB after VACUUM',
		],
		out,
	);
	console.log(`autovacuum settings: ${settings.map((s) => `${s.name}=${s.setting}`).join(', ')}`);
};

// ---------------------------------------------------------------------------------------------
// 5. output size of the node's `idempotency` object

const outputSize: ScaleGroup = async (ctx) => {
	const { table, store, createTable } = ctx;
	// eslint-disable-next-line @typescript-eslint/no-require-imports -- the built package (dist/), what users run
	const { idempotencyOutput } = require(
		path.join(ROOT, 'dist', 'lib', 'pipeline', 'idempotencyOutput'),
	) as typeof import('../lib/pipeline/idempotencyOutput');
	const schema = 'idem_bench_output';
	await createTable(table(schema, 'keys'));
	const items = ctx.quick ? 1000 : 10000;
	const distinct = freshKeys(items - items / 10);
	const keys = [...distinct, ...distinct.slice(0, items / 10)];
	const inputs = keys.map((key) => ({
		id: key.slice(4),
		type: 'invoice.paid',
		amount: 1200,
	}));
	// Each output is built from what its statement returns: Full from the 17-column rows, Compact from the 8-column ones.
	const fullResults: ReservationResult[] = await store(schema, 'keys').reserve(requestsFor(keys), PERMANENT);
	await ctx.q(`truncate ${table(schema, 'keys').qualified}`);
	const compactResults: Array<ReservationResult<CompactRecord>> = await store(schema, 'keys').reserve(requestsFor(keys), {
		...PERMANENT,
		detail: 'compact',
	});
	const derived = { key: '', keySource: 'custom', hashed: false } as const;
	const output = (detail: ReservationDetail) => (r: ReservationResult<CompactRecord>) =>
		idempotencyOutput(r, { ...derived, key: r.key }, { mode: 'permanent', detail, fingerprinting: false });
	const shapes: Array<{ name: string; results: Array<ReservationResult<CompactRecord>>; make: ReturnType<typeof output> }> = [
		{ name: 'Output: Full (as before)', results: fullResults, make: output('full') },
		{ name: 'Output: Compact (the default)', results: compactResults, make: output('compact') },
	];
	const measured = shapes.map((shape) => {
		const samples: number[] = [];
		let bytes = 0;
		let objectBytes = 0;
		for (let i = 0; i < 5; i++) {
			const started = performance.now();
			const out = shape.results.map((r, index) => ({
				json: { ...inputs[index], idempotency: shape.make(r) },
				pairedItem: { item: index },
			}));
			const text = JSON.stringify(out);
			samples.push(performance.now() - started);
			bytes = Buffer.byteLength(text);
			objectBytes = out.reduce((sum, item) => sum + Buffer.byteLength(JSON.stringify(item.json.idempotency)), 0);
		}
		return { ...shape, bytes, objectBytes, ms: median(samples) };
	});
	const full = measured[0];
	console.log(`\n## Output size: ${fmt(items)} items (${fmt(items / 10)} repeats), items as the node outputs them, serialised as JSON\n`);
	printTable(
		['idempotency object', 'bytes per item (object)', 'all items MB', 'vs full', 'build + JSON ms'],
		measured.map((m) => [
			m.name,
			fmt(m.objectBytes / items),
			(m.bytes / 1024 / 1024).toFixed(2),
			`${((m.bytes / full.bytes) * 100).toFixed(0)} %`,
			fmtMs(m.ms),
		]),
	);
	console.log(
		`compact = ${JSON.stringify(Object.keys(measured[1].make(compactResults[0])))} on New items in Permanent mode (response on duplicates, lockedUntil in Lease mode, payloadMismatch when fingerprinting, manualTest when true).`,
	);
};

export const GROUPS: Record<string, ScaleGroup> = {
	statement,
	growth,
	cleanup: cleanupUnderLoad,
	cleanupplan: cleanupPlan,
	bloat,
	output: outputSize,
};
