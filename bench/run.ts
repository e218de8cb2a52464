// Reservation throughput of the built core (PostgresKeyStore.reserve) side by side with the identical
// SQL sent through plain `pg`, in the same run against the same server. Absolute keys/s depend on the
// machine and its disk; the ratio core / plain pg is what this benchmark is for.
//
// The other groups (bench/scale.ts) compare the reserve statement with the recipe's minimal insert,
// and measure table growth to 10 M rows, cleanup under load, bloat from duplicates and output size.
//
//   npm run bench                          everything (about 15–25 minutes on 2 busy cores)
//   npm run bench -- --only core           the core-vs-pg scenarios alone (about 2–3 minutes)
//   npm run bench -- --only single         one key per call, statements unnamed vs named (bench/prepared.ts)
//   npm run bench -- --only embedded       the embedded store (node:sqlite) beside Postgres (bench/embedded.ts,
//                                          run by a Node with node:sqlite; BENCH_EMBEDDED_JSON=FILE saves its figures)
//   npm run bench -- --quick               smoke run of every group (tiny sizes, about a minute)
//   npm run bench -- --rounds 8 --seconds 30 --assert
//
// Flags (or env): --quick, --only core,statement,growth,cleanup,cleanupplan,bloat,output,single,embedded, --rounds N
// (BENCH_ROUNDS), --seconds S per core scenario (BENCH_SECONDS), --assert (exit 1 when any core
// scenario is below the target ratio), --icu (the scale groups' database collates en-US with ICU,
// as production databases usually sort text, instead of the embedded server's C.UTF-8). DATABASE_URL uses that server instead of an embedded one;
// the scale groups then work in a temporary database that is dropped at the end.
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Pool } from 'pg';

import type { TableRef } from '../lib/identifiers';
import type { ReservationRequest, ReserveOptions } from '../lib/types';
import { single } from './prepared';
import { GROUPS as SCALE_GROUPS, context as scaleContext, type Row, type ScaleGroup } from './scale';
import { sqliteNode } from './sqliteNode';
import { median, fmt, fmtRatio, printTable, loadAverage } from './stats';

// The embedded store beside Postgres (bench/embedded.ts), run by a Node with node:sqlite on the
// Postgres this run started; its report goes to this run's output.
async function embedded(
	ctx: { log: (line: string) => void },
	{ quick, rounds, url }: { quick: boolean; rounds: number; url: string },
): Promise<void> {
	const bin = sqliteNode({ log: ctx.log });
	const args = ['-r', REGISTER_TS, path.join(__dirname, 'embedded.ts'), ...(quick ? ['--quick'] : ['--rounds', String(rounds)])];
	if (process.env.BENCH_EMBEDDED_JSON) args.push('--json', process.env.BENCH_EMBEDDED_JSON);
	const result = spawnSync(bin, args, { cwd: ROOT, stdio: 'inherit', env: { ...process.env, DATABASE_URL: url } });
	if (result.status !== 0) throw new Error(`bench/embedded.ts exited with ${result.status ?? result.signal}`);
}

// The groups that run on the scale groups' database (bench/prepared.ts's too), then the embedded one.
const DATABASE_GROUPS: Record<string, ScaleGroup> = { ...SCALE_GROUPS, single };
const GROUPS = { ...DATABASE_GROUPS, embedded };

const ROOT = path.join(__dirname, '..');
// The benchmarks are TypeScript: the embedded one's Node loads the hook that transpiles them.
const REGISTER_TS = path.join(ROOT, 'test', 'support', 'register-ts.js');
const TARGET_RATIO = 0.8;
const ALL_GROUPS = ['core', ...Object.keys(GROUPS)];
const SCALE_DATABASE = 'idem_bench_scale';

interface Args {
	quick: boolean;
	assert: boolean;
	icu?: boolean;
	rounds: number;
	seconds: number;
	warmSeconds: number;
	only: string[];
}

function parseArgs(argv: string[]): Args {
	const args: Omit<Args, 'rounds' | 'seconds' | 'warmSeconds'> & { rounds?: number; seconds?: number } = {
		quick: false,
		assert: false,
		rounds: process.env.BENCH_ROUNDS ? Number(process.env.BENCH_ROUNDS) : undefined,
		seconds: process.env.BENCH_SECONDS ? Number(process.env.BENCH_SECONDS) : undefined,
		only: ALL_GROUPS,
	};
	for (let i = 0; i < argv.length; i++) {
		const arg = argv[i];
		if (arg === '--quick') args.quick = true;
		else if (arg === '--assert') args.assert = true;
		else if (arg === '--icu') args.icu = true;
		else if (arg === '--rounds') args.rounds = Number(argv[++i]);
		else if (arg === '--seconds') args.seconds = Number(argv[++i]);
		else if (arg === '--only') args.only = argv[++i].split(',');
		else if (arg === '--help' || arg === '-h') {
			console.log(`usage: npm run bench -- [--quick] [--only ${ALL_GROUPS.join(',')}] [--rounds N] [--seconds S] [--assert] [--icu]`);
			process.exit(0);
		} else {
			console.error(`unknown argument ${arg} (try --help)`);
			process.exit(2);
		}
	}
	const rounds = args.rounds ?? (args.quick ? 2 : 8);
	// Seconds of timed work per scenario, both sides together; six scenarios plus setup fit ~3 min.
	const seconds = args.seconds ?? (args.quick ? 2 : 20);
	const warmSeconds = args.quick ? 0.25 : 1.5;
	for (const group of args.only) if (!ALL_GROUPS.includes(group)) throw new Error(`--only takes ${ALL_GROUPS.join(', ')}`);
	if (!(Number.isInteger(rounds) && rounds >= 1)) throw new Error('--rounds must be a whole number >= 1');
	if (!(seconds > 0)) throw new Error('--seconds must be more than 0');
	return { ...args, rounds, seconds, warmSeconds };
}

// The benchmark measures what users run: the compiled package, not ts-jest.
function ensureBuilt(): void {
	const built = path.join(ROOT, 'dist', 'lib', 'store', 'keyStore.js');
	if (!fs.existsSync(built)) {
		console.log('dist/lib/store/keyStore.js is missing: running npm run build first');
		const result = spawnSync('npm', ['run', 'build'], {
			cwd: ROOT,
			stdio: 'inherit',
			shell: process.platform === 'win32',
		});
		if (result.status !== 0) throw new Error('npm run build failed');
	} else if (fs.statSync(path.join(ROOT, 'lib', 'store', 'keyStore.ts')).mtimeMs > fs.statSync(built).mtimeMs) {
		// Not rebuilt automatically: rimraf dist would pull the rug from anything else using it.
		console.log('note: lib/store/keyStore.ts is newer than dist/lib/store/keyStore.js; run npm run build to bench the latest code');
	}
}

interface Scenario {
	name: string;
	keysPerCall: number;
	callers: number;
	/** Every key is reserved (untimed) before the timed calls: all duplicates. */
	existing: boolean;
}

const SCENARIOS: Scenario[] = [
	{ name: '1 key/call, 1 caller', keysPerCall: 1, callers: 1, existing: false },
	{
		name: '1 key/call, 8 callers',
		keysPerCall: 1,
		callers: 8,
		existing: false,
	},
	{ name: '1,000 keys/call', keysPerCall: 1000, callers: 1, existing: false },
	{ name: '10,000 keys/call', keysPerCall: 10000, callers: 1, existing: false },
	{
		name: 'duplicates, 1 key/call, 8 callers',
		keysPerCall: 1,
		callers: 8,
		existing: true,
	},
	{
		name: 'duplicates, 1,000 keys/call',
		keysPerCall: 1000,
		callers: 1,
		existing: true,
	},
];

// The node's defaults: permanent mode, 30 days retention, no payload fingerprint.
const RESERVE_OPTIONS: ReserveOptions = {
	mode: 'permanent',
	leaseSeconds: 300,
	retentionSeconds: 30 * 24 * 3600,
	executionId: 'bench-execution',
	workflowId: 'bench-workflow',
	instanceId: 'bench-instance',
};

let keyCounter = 0;
let signalled = 0;
// Stripe-like event ids; the same list goes to both sides (separate tables), so key shape is no variable.
function makeCalls(callCount: number, keysPerCall: number): ReservationRequest[][] {
	const calls: ReservationRequest[][] = [];
	for (let c = 0; c < callCount; c++) {
		const requests = new Array<ReservationRequest>(keysPerCall);
		for (let k = 0; k < keysPerCall; k++) {
			requests[k] = {
				key: `evt_${(keyCounter++).toString(36).padStart(10, '0')}_${randomUUID().slice(0, 8)}`,
				keySource: 'header',
				payloadHash: null,
			};
		}
		calls.push(requests);
	}
	return calls;
}

/** One side of the comparison: its pool and table, the timed reserve and the untimed seeding. */
interface Side {
	name: 'core' | 'plain pg';
	pool: Pool;
	table: TableRef;
	reserve: (requests: ReservationRequest[]) => Promise<unknown[]>;
	seed: (requests: ReservationRequest[]) => Promise<unknown[]>;
}

interface Sides {
	core: Side;
	plain: Side;
}

function makeSides({
	Pool,
	PostgresKeyStore,
	renderStatement,
	tableRef,
	url,
	schemas,
}: {
	Pool: typeof import('pg').Pool;
	PostgresKeyStore: typeof import('../lib/store/postgres/stores').PostgresKeyStore;
	renderStatement: typeof import('../lib/store/postgres/statements').renderStatement;
	tableRef: typeof import('../lib/identifiers').tableRef;
	url: string;
	schemas: { core: string; plain: string };
}): Sides {
	const coreTable = tableRef(schemas.core, 'processed_events');
	const plainTable = tableRef(schemas.plain, 'processed_events');
	const corePool = new Pool({ connectionString: url, max: 8 });
	const plainPool = new Pool({ connectionString: url, max: 8 });
	// Idle connections get a FATAL when Postgres stops at the end; without a listener that would crash
	// the process before the data directory is removed. Query errors still reject their own promises.
	for (const pool of [corePool, plainPool]) pool.on('error', () => {});
	// The tables are created up front for both sides alike; the store only checks the schema version.
	const store = new PostgresKeyStore(corePool, {
		schema: schemas.core,
		table: 'processed_events',
		createTable: false,
	});
	const plainSql = renderStatement('reserve', plainTable);
	const o = RESERVE_OPTIONS;
	const plainReserve = (pool: Pool, sql: string) => async (requests: ReservationRequest[]) =>
		(
			await pool.query<Row>(sql, [
				requests.map((r) => r.key),
				requests.map((r) => r.keySource),
				// No fingerprints: one null, as the core sends a column no request fills.
				requests.some((r) => r.payloadHash !== null) ? requests.map((r) => r.payloadHash) : null,
				requests.map(() => randomUUID()),
				o.mode,
				o.leaseSeconds,
				o.retentionSeconds,
				o.executionId,
				o.workflowId,
				// No replay evidence (Store Payload, Source, Correlation ID are off by default).
				null,
				null,
				null,
				null,
				o.instanceId,
				// No inbox (the Idempotent Webhook's At Once only).
				null,
				null,
				null,
				null,
				null,
			])
		).rows;
	return {
		core: {
			name: 'core',
			pool: corePool,
			table: coreTable,
			reserve: (requests) => store.reserve(requests, o),
			seed: plainReserve(corePool, renderStatement('reserve', coreTable)),
		},
		plain: {
			name: 'plain pg',
			pool: plainPool,
			table: plainTable,
			// Same arrays and one fresh owner token per key, as the core builds them; no row mapping.
			reserve: plainReserve(plainPool, plainSql),
			seed: plainReserve(plainPool, plainSql),
		},
	};
}

// Runs the calls with `callers` workers pulling from one queue; returns wall time and client CPU.
async function runCalls(side: Side, calls: ReservationRequest[][], callers: number): Promise<{ seconds: number; cpuSeconds: number }> {
	let next = 0;
	const worker = async () => {
		while (next < calls.length) {
			const requests = calls[next++];
			const result = await side.reserve(requests);
			if (result.length !== requests.length) throw new Error(`${side.name}: expected ${requests.length} rows, got ${result.length}`);
		}
	};
	const cpuBefore = process.cpuUsage();
	const started = process.hrtime.bigint();
	await Promise.all(Array.from({ length: Math.min(callers, calls.length) }, worker));
	const seconds = Number(process.hrtime.bigint() - started) / 1e9;
	const cpu = process.cpuUsage(cpuBefore);
	return { seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6 };
}

// Keys for the duplicates scenario are inserted untimed, in big batches of the same SQL on each side's table.
async function seed(sideList: Side[], calls: ReservationRequest[][]): Promise<void> {
	const requests = calls.flat();
	for (const side of sideList) {
		for (let i = 0; i < requests.length; i += 5000) await side.seed(requests.slice(i, i + 5000));
	}
}

// Warm-up: connections, plan cache and JIT of both code paths; its timing calibrates the call count.
async function warmUp(side: Side, scenario: Scenario, seconds: number): Promise<number> {
	const { keysPerCall, callers, existing } = scenario;
	const chunk = Math.max(callers * 4, 2);
	let calls = 0;
	let elapsed = 0;
	while (elapsed < seconds || calls < chunk) {
		const batch = makeCalls(chunk, keysPerCall);
		if (existing) await seed([side], batch);
		elapsed += (await runCalls(side, batch, callers)).seconds;
		calls += chunk;
	}
	return elapsed / calls;
}

interface ScenarioResult {
	scenario: Scenario;
	callsPerRound: number;
	core: number;
	plain: number;
	ratio: number;
	minRatio: number;
	maxRatio: number;
	coreCpuUs: number;
	plainCpuUs: number;
}

async function runScenario(sides: Sides, scenario: Scenario, args: Args, log: (line: string) => void): Promise<ScenarioResult> {
	const { keysPerCall, callers, existing } = scenario;
	const secondsPerCall =
		((await warmUp(sides.core, scenario, args.warmSeconds)) + (await warmUp(sides.plain, scenario, args.warmSeconds))) / 2;
	const budgetPerSideRound = args.seconds / (2 * args.rounds);
	const callsPerRound = Math.max(callers, Math.min(200000, Math.round(budgetPerSideRound / secondsPerCall)));

	const rounds: Array<{ core: number; plain: number; ratio: number; coreCpuPerKey: number; plainCpuPerKey: number }> = [];
	for (let round = 0; round < args.rounds; round++) {
		const calls = makeCalls(callsPerRound, keysPerCall);
		if (existing) await seed([sides.core, sides.plain], calls);
		// A checkpoint between rounds keeps one from landing inside a single side's timing more often.
		await sides.plain.pool.query('checkpoint').catch(() => {});
		// Alternate who goes first (ABBA) so drift and noise hit both sides equally.
		const order = round % 2 === 0 ? [sides.core, sides.plain] : [sides.plain, sides.core];
		const result: Partial<Record<Side['name'], { seconds: number; cpuSeconds: number }>> = {};
		for (const side of order) result[side.name] = await runCalls(side, calls, callers);
		const keys = callsPerRound * keysPerCall;
		const core = result.core ?? { seconds: NaN, cpuSeconds: NaN };
		const plain = result['plain pg'] ?? { seconds: NaN, cpuSeconds: NaN };
		const last = {
			core: keys / core.seconds,
			plain: keys / plain.seconds,
			ratio: plain.seconds / core.seconds,
			coreCpuPerKey: core.cpuSeconds / keys,
			plainCpuPerKey: plain.cpuSeconds / keys,
		};
		rounds.push(last);
		log(
			`  round ${round + 1}/${args.rounds}: ${callsPerRound} calls, core ${fmt(last.core)} keys/s, plain ${fmt(last.plain)} keys/s, ratio ${fmtRatio(last.ratio)}`,
		);
	}
	return {
		scenario,
		callsPerRound,
		core: median(rounds.map((r) => r.core)),
		plain: median(rounds.map((r) => r.plain)),
		// Each round pairs both sides close in time, so the median of per-round ratios is the robust figure.
		ratio: median(rounds.map((r) => r.ratio)),
		minRatio: Math.min(...rounds.map((r) => r.ratio)),
		maxRatio: Math.max(...rounds.map((r) => r.ratio)),
		coreCpuUs: median(rounds.map((r) => r.coreCpuPerKey)) * 1e6,
		plainCpuUs: median(rounds.map((r) => r.plainCpuPerKey)) * 1e6,
	};
}

function printCoreTable(results: ScenarioResult[]): void {
	const header = [
		'scenario',
		'calls/round',
		'core keys/s',
		'plain pg keys/s',
		'ratio core/pg',
		'ratio min–max',
		'client CPU µs/key core / pg',
	];
	const rows = results.map((r) => [
		r.scenario.name,
		String(r.callsPerRound),
		fmt(r.core),
		fmt(r.plain),
		fmtRatio(r.ratio),
		`${fmtRatio(r.minRatio, 2)}–${fmtRatio(r.maxRatio, 2)}`,
		`${r.coreCpuUs.toFixed(1)} / ${r.plainCpuUs.toFixed(1)}`,
	]);
	printTable(header, rows);
}

/** What this run uses of test/support/stack/postgresServer's server: an embedded one, or DATABASE_URL's. */
type PostgresServer = { url: string; stop: () => Promise<void> } & ({ external: true } | { external: false; databaseDir: string });

async function main(): Promise<number> {
	const args = parseArgs(process.argv.slice(2));
	ensureBuilt();
	/* eslint-disable @typescript-eslint/no-require-imports -- the built package (dist/), what users run, once it is built; the types are its sources' */
	const { PostgresKeyStore } = require(
		path.join(ROOT, 'dist', 'lib', 'store', 'postgres', 'stores'),
	) as typeof import('../lib/store/postgres/stores');
	const { renderStatement } = require(
		path.join(ROOT, 'dist', 'lib', 'store', 'postgres', 'statements'),
	) as typeof import('../lib/store/postgres/statements');
	const { tableRef } = require(path.join(ROOT, 'dist', 'lib', 'identifiers')) as typeof import('../lib/identifiers');
	const { startPostgres } = require(path.join(ROOT, 'test', 'support', 'stack', 'postgresServer')) as {
		startPostgres: () => Promise<PostgresServer>;
	};
	/* eslint-enable @typescript-eslint/no-require-imports */

	const log = (line: string) => console.log(line);
	const started = Date.now();
	let server: PostgresServer | undefined;
	let sides: Sides | undefined;
	const schemas = { core: 'idem_bench_core', plain: 'idem_bench_plain' };
	let stopping: Promise<void> | undefined;
	let scaleDatabaseCreated = false;
	// Memoised: a signal and main's finally may both ask for it, and the second must wait for the first.
	const stop = () =>
		(stopping ??= (async () => {
			if (sides) {
				// Only on an external server is there anything worth cleaning; the embedded one is thrown away.
				if (server?.external) {
					for (const schema of Object.values(schemas))
						await sides.plain.pool.query(`drop schema if exists "${schema}" cascade`).catch(() => {});
				}
				if (scaleDatabaseCreated) await sides.plain.pool.query(`drop database if exists "${SCALE_DATABASE}" with (force)`).catch(() => {});
				await Promise.all([sides.core.pool.end(), sides.plain.pool.end()]).catch(() => {});
			}
			if (server && !server.external) {
				await server.stop();
				// Its data directory goes too, even when the server had stopped before (exiting right after
				// must never leave it behind).
				fs.rmSync(server.databaseDir, { recursive: true, force: true });
			}
		})());
	// Ctrl-C must not leave an embedded Postgres (or its data directory) behind.
	const onSignal = (signal: NodeJS.Signals) => {
		signalled = 128 + (os.constants.signals[signal] ?? 2);
		console.error(`\n${signal}: stopping Postgres`);
		stop().finally(() => process.exit(signalled));
	};
	process.once('SIGINT', onSignal);
	process.once('SIGTERM', onSignal);

	let exitCode = 0;
	try {
		server = await startPostgres();
		sides = makeSides({
			Pool,
			PostgresKeyStore,
			renderStatement,
			tableRef,
			url: server.url,
			schemas,
		});
		const admin = sides.plain.pool;
		const version = (await admin.query<{ version: string }>('select version()')).rows[0].version;
		const settings = (
			await admin.query<{ name: string; setting: string }>(
				`select name, setting from pg_settings where name in ('fsync', 'synchronous_commit', 'shared_buffers', 'wal_level') order by name`,
			)
		).rows;
		console.log('Idempotency reserve throughput: built core vs identical SQL via plain pg');
		console.log(
			`node ${process.version}, ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown cpu'}), ${os.platform()}-${os.arch()}`,
		);
		console.log(`postgres: ${version} (${server.external ? 'DATABASE_URL' : 'embedded'})`);
		console.log(`settings: ${settings.map((s) => `${s.name}=${s.setting}`).join(', ')}`);
		console.log(
			`rounds: ${args.rounds}, ~${args.seconds}s timed per scenario${args.quick ? ' (quick)' : ''}, target: core >= ${TARGET_RATIO} × plain pg`,
		);

		console.log(`groups: ${args.only.join(', ')}; load average at start ${loadAverage()}`);

		if (args.only.includes('core')) {
			for (const side of [sides.core, sides.plain]) {
				await admin.query(`drop schema if exists "${side.table.schema}" cascade`);
				await admin.query(`create schema "${side.table.schema}"`);
				await new PostgresKeyStore(admin, { schema: side.table.schema, table: side.table.table, createTable: true }).createTable();
			}
			const results: ScenarioResult[] = [];
			for (const scenario of SCENARIOS) {
				log(`\n${scenario.name}${scenario.existing ? ' (all keys already reserved)' : ' (fresh keys: every reservation inserts)'}`);
				results.push(await runScenario(sides, scenario, args, log));
			}

			console.log('');
			printCoreTable(results);
			console.log('\nkeys/s: median of rounds; ratio: median of per-round core/pg throughput (1.0 = no overhead).');
			console.log("client CPU: CPU time of this Node process per key (median of rounds); the core's own work shows here.");
			const below = results.filter((r) => r.ratio < TARGET_RATIO);
			console.log(
				below.length === 0
					? `TARGET HOLDS: core reaches at least ${TARGET_RATIO} of plain pg in every scenario (lowest ${fmtRatio(Math.min(...results.map((r) => r.ratio)))}).`
					: `TARGET MISSED: core is below ${TARGET_RATIO} of plain pg in: ${below.map((r) => `${r.scenario.name} (${fmtRatio(r.ratio)})`).join(', ')}.`,
			);
			if (below.length > 0 && args.assert) exitCode = 1;
		}

		const scaleGroups = args.only.filter((group) => group !== 'core' && group !== 'embedded');
		if (scaleGroups.length) {
			// One temporary database for the big tables: dropped at the end, also on an external server.
			await admin.query(`drop database if exists "${SCALE_DATABASE}" with (force)`);
			// --icu: the scale groups' database sorts text as production databases usually do (en-US), not C.UTF-8.
			await admin.query(
				`create database "${SCALE_DATABASE}"${args.icu ? ` template template0 encoding 'UTF8' locale_provider icu icu_locale 'en-US' locale 'C.UTF-8'` : ''}`,
			);
			if (args.icu) console.log('scale groups: database with ICU collation en-US');
			scaleDatabaseCreated = true;
			const scaleUrl = new URL(server.url);
			scaleUrl.pathname = `/${SCALE_DATABASE}`;
			const ctx = scaleContext({
				Pool,
				url: scaleUrl.toString(),
				log,
				quick: args.quick,
			});
			try {
				for (const group of scaleGroups) {
					const groupStarted = Date.now();
					log(`\n# ${group} (load ${loadAverage()})`);
					await DATABASE_GROUPS[group](ctx, { rounds: args.rounds });
					log(`# ${group} took ${((Date.now() - groupStarted) / 1000).toFixed(0)} s (load ${loadAverage()})`);
				}
			} finally {
				await ctx.pool.end().catch(() => {});
			}
		}
		if (args.only.includes('embedded')) {
			log(`\n# embedded (load ${loadAverage()})`);
			await embedded({ log }, { quick: args.quick, rounds: args.rounds, url: server.url });
		}
		console.log(`\nload average at end ${loadAverage()}`);
		console.log(`total ${((Date.now() - started) / 1000).toFixed(1)}s`);
	} catch (error) {
		exitCode = 1;
		// The message only: errors from pg can carry connection details in their properties.
		if (!signalled) console.error(`bench failed: ${error instanceof Error ? error.message : String(error)}`);
	} finally {
		await stop().catch((error: unknown) =>
			console.error(`could not stop Postgres: ${error instanceof Error ? error.message : String(error)}`),
		);
		process.removeListener('SIGINT', onSignal);
		process.removeListener('SIGTERM', onSignal);
	}
	return exitCode;
}

// Explicit exit: the exit code (and with it --assert) whatever handles are left open.
main().then((code) => process.exit(signalled || code));
