// Builds the figures of BENCHMARKS.md and its plots from the recorded runs in bench/results/*.json,
// so the page cannot say something the data does not.
//
//   node -r ./test/support/register-ts.js bench/report            rewrite the generated parts of BENCHMARKS.md and docs/images/bench-*.svg
//   node -r ./test/support/register-ts.js bench/report --check    change nothing; exit 1 naming each file that differs from the data
//   --root DIR                      read and write BENCHMARKS.md and docs/images/ under DIR (tests use a copy)
//   --results DIR                   read the runs from DIR instead of bench/results
//
// The page is written by hand except between `<!-- generated: NAME -->` and `<!-- /generated -->`:
// NAME is a run's `id` (its table and where it comes from) or `summary` (the headline figures).
// To add a run: save what the benchmark printed as bench/results/<date>-<id>.json (command, date,
// time, commit, machine, load, rows), give it a table below, put its marker on the page, run this.
import fs from 'node:fs';
import path from 'node:path';

import type { CallRow as EmbeddedCallRow, ReserveRow as EmbeddedReserveRow } from './embedded';
import type { RandomKeysRow } from './embeddedRandomKeys';
import type { TriggerRow } from './n8n/trigger';
import type { AtOnceRow } from './n8n/atOnce';

const REPO = path.join(__dirname, '..');
const RESULTS = path.join(__dirname, 'results');
const PAGE = 'BENCHMARKS.md';
const IMAGES = path.join('docs', 'images');

// ---------------------------------------------------------------------------------------------
// Formatting

const NONE = '–';

/** A figure a run may leave out (null in its JSON). */
type Figure = number | null | undefined;

function number(value: Figure, digits = 0): string {
	if (value === null || value === undefined) return NONE;
	return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}
const ratio = (value: Figure, digits = 3) => (value === null || value === undefined ? NONE : `${number(value, digits)}×`);
const range = (min: Figure, max: Figure, digits = 2) =>
	min === null || min === undefined ? NONE : `${number(min, digits)}–${number(max, digits)}`;
const signed = (value: Figure, digits = 1) =>
	value === null || value === undefined ? NONE : `${value > 0 ? '+' : value < 0 ? '−' : ''}${number(Math.abs(value), digits)}`;
const clients = (n: number) => `c=${n}`;

/** A table column: its header, its cell of a row, and its alignment ('l', or right by default). */
type Column<R> = [string, (row: R) => string, 'l'?];

/** A Markdown table; `columns` are [header, cell(row), align] with align 'l' or 'r' (default). */
function table<R>(columns: Array<Column<R>>, rows: R[]): string {
	const header = `| ${columns.map(([title]) => title).join(' | ')} |`;
	const rule = `|${columns.map(([, , align]) => (align === 'l' ? '---' : '--:')).join('|')}|`;
	const body = rows.map((row) => `| ${columns.map(([, cell]) => cell(row)).join(' | ')} |`);
	return [header, rule, ...body].join('\n');
}

// ---------------------------------------------------------------------------------------------
// The runs and their tables

/** What every recorded run has (loadRuns checks the fields), and the file it came from. */
interface RunInfo {
	id: string;
	file: string;
	title: string;
	command: string;
	date: string;
	time: string;
	load: string;
	quiet: boolean;
	machine: string;
	commit?: string | null;
	code?: string;
}

/** A recorded run whose rows are `R`. */
interface Run<R> extends RunInfo {
	rows: R[];
}

/** A recorded run as read from its file, before its id says what its rows are. */
type AnyRun = Run<unknown> & Record<string, unknown>;
type Runs = Map<string, AnyRun>;

interface OverheadRow {
	flow: string;
	clients: number;
	reqPerS: number;
	ratio: number;
	ratioMin: Figure;
	ratioMax: Figure;
	p50Ms: number;
	addedP50Ms: Figure;
	p99Ms: number;
	cpuMsPerExec: number;
}
interface EmbeddedOverheadRun extends Run<OverheadRow> {
	vsNoOperation: Array<{ clients: number; addedMs: number; cpuMs: number; ratio: number }>;
	nodeTimes: Array<{ flow: string; node: string; executions: number; medianMs: number; p90Ms: number }>;
}
interface EmbeddedBatchRow {
	node: string;
	wallMs: number;
	netMs: Figure;
	netMinMs: Figure;
	netMaxMs: Figure;
	keysPerS: Figure;
	nodeMs: number;
	savedMb: number;
	stallMs: number;
}
interface EmbeddedCleanupRow {
	flow: string;
	deleted: number;
	batches: number;
	wallMs: number;
	rowsPerS: number;
	stallMs: number;
	probes: number;
}
interface BatchRow {
	node: string;
	wallMs: number;
	netMs: Figure;
	netMinMs: Figure;
	netMaxMs: Figure;
	keysPerS: Figure;
	nodeMs: number;
	savedMb: number;
}
interface BatchVsRecipeRow {
	node: string;
	netMs: Figure;
	keysPerS: Figure;
	vsRecipe: Figure;
	nodeMs: number;
	savedMb: number;
}
interface SingleRow {
	scenario: string;
	keysPerCall: number;
	callers: number;
	unnamedCallsPerS: number;
	namedCallsPerS: number;
	ratio: number;
	ratioMin: number;
	ratioMax: number;
	p50UnnamedMs: number;
	p50NamedMs: number;
	p99UnnamedMs: number;
	p99NamedMs: number;
	plainRatio: number;
}
interface StatementRow {
	scenario: string;
	recipeKeysPerS: number;
	coreCompact: number;
	coreCompactMin: number;
	coreCompactMax: number;
	plainCompact: number;
	coreFull: number;
}
interface CoreRow {
	scenario: string;
	coreKeysPerS: number;
	plainKeysPerS: number;
	ratio: number;
	ratioMin: number;
	ratioMax: number;
	coreCpuUs: number;
	plainCpuUs: number;
}
interface GrowthRow {
	rows: number;
	singleP50Ms: number;
	singleP99Ms: number;
	singleP99VsEmpty: number;
	batchP50Ms: number;
	batchP99Ms: number;
	batchP99VsEmpty: number;
	heapMbPerMillion: number | null;
	indexMbPerMillion: number | null;
}
interface CleanupRun extends Run<{ phase: string; reserves: number; p50Ms: number; p99Ms: number; maxMs: number }> {
	deleted: number;
	seconds: number;
	batches: number;
	rowsPerS: number;
}
interface BloatRow {
	table: string;
	heapMbBefore: number;
	indexMbBefore: number;
	heapMbAfter: number;
	indexMbAfter: number;
	growth: number;
	hotPercent: number;
	deadRows: number;
}
interface OutputRow {
	output: string;
	bytesPerItem: number;
	allItemsMb: number;
	vsFullPercent: number;
	buildJsonMs: number;
}
interface BigRow {
	run: string;
	flow: string;
	wallMs: number;
	nodeMs: number;
	rssBeforeMb: number;
	rssMaxMb: number;
	addedRssMb: number;
	savedMb: number;
}

/** Each run id with a table, and what its recorded run holds. */
interface RunsById {
	settle: Run<OverheadRow>;
	embedded: Run<EmbeddedReserveRow>;
	'embedded-calls': Run<EmbeddedCallRow>;
	'embedded-random-keys': Run<RandomKeysRow>;
	'embedded-n8n-overhead': EmbeddedOverheadRun;
	'embedded-n8n-batch': Run<EmbeddedBatchRow>;
	'embedded-n8n-cleanup': Run<EmbeddedCleanupRow>;
	'trigger-n8n': Run<TriggerRow>;
	'trigger-n8n-lazy-isolates': Run<TriggerRow>;
	'at-once-n8n': Run<AtOnceRow>;
	overhead: Run<OverheadRow>;
	batch: Run<BatchRow>;
	'batch-vs-recipe': Run<BatchVsRecipeRow>;
	single: Run<SingleRow>;
	statement: Run<StatementRow>;
	core: Run<CoreRow>;
	growth: Run<GrowthRow>;
	cleanup: CleanupRun;
	bloat: Run<BloatRow>;
	output: Run<OutputRow>;
	big: Run<BigRow>;
}
type RunId = keyof RunsById;

/** The run with this id, read as its id's table reads it (the recorded JSON is the shape its id has). */
function runOf<Id extends RunId>(runs: Runs, id: Id, where: string): RunsById[Id] {
	const run = runs.get(id);
	if (!run) throw new Error(`${where}: no run with id ${id}`);
	return run as unknown as RunsById[Id];
}

function loadRuns(dir: string): { machines: Map<string, { id: string }>; runs: Runs } {
	const machines = new Map<string, { id: string }>();
	const runs: Runs = new Map();
	for (const name of fs
		.readdirSync(dir)
		.filter((file) => file.endsWith('.json'))
		.sort()) {
		const data = JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8')) as AnyRun;
		if (name === 'machine.json') machines.set(data.id, data);
		else {
			if (runs.has(data.id)) throw new Error(`${name}: a second run with id ${data.id}`);
			runs.set(data.id, { ...data, file: name });
		}
	}
	for (const run of runs.values()) {
		if (!machines.has(run.machine)) throw new Error(`${run.file}: unknown machine ${run.machine}`);
		for (const field of ['title', 'command', 'date', 'time', 'load', 'quiet', 'rows'] as const) {
			if (run[field] === undefined) throw new Error(`${run.file}: no ${field}`);
		}
	}
	return { machines, runs };
}

/**
 * The command as it runs today: the benchmarks are TypeScript run from source through the register
 * hook, so a recorded `node bench/x.js …` is the same program and arguments as `node -r … bench/x …`.
 */
export function runnableCommand(command: string): string {
	return command.replace(/(^|\s)node (bench\/[\w/]+)\.js\b/, '$1node -r ./test/support/register-ts.js $2');
}

function provenance(run: RunInfo): string {
	const code = run.commit ? `commit \`${run.commit}\`` : run.code;
	const parts = [`\`${runnableCommand(run.command)}\``, `${run.date}, ${run.time}`, code, `load ${run.load}`];
	return `<sub>${parts.join('; ')}. Data: [${run.file}](bench/results/${run.file}).</sub>`;
}

const TRIGGER_KINDS: Record<TriggerRow['kind'], string> = {
	new: 'new',
	duplicate: 'duplicate',
	forgery: 'forgery',
	inProgress: 'in progress',
};
const TRIGGER_STORES: Record<NonNullable<TriggerRow['store']>, string> = { embedded: 'Embedded', postgres: 'Postgres' };
/** The At Once run's flows by the short names its section's prose gives them. */
const AT_ONCE_FLOW_NAMES: Array<[string, string]> = [
	['Idempotent Webhook trigger', 'At Once'],
	["n8n's Webhook node", 'Immediately'],
	['floor', 'floor'],
];
const atOnceFlowName = (flow: string) => AT_ONCE_FLOW_NAMES.find(([start]) => flow.startsWith(start))?.[1] ?? flow;
const stall = (wall: Figure, own: Figure) => (wall === null || wall === undefined ? NONE : `${number(wall, 1)} (${number(own, 1)})`);

const TABLES: { [Id in RunId]: (run: RunsById[Id]) => string } = {
	settle: (run) => TABLES.overhead(run),
	// The Embedded store beside Postgres: the store calls outside n8n (bench/embedded.ts) ...
	embedded: (run) =>
		table(
			[
				['scenario', (r) => r.scenario, 'l'],
				['Embedded keys/s', (r) => number(r.embeddedKeysPerS)],
				['Postgres keys/s', (r) => number(r.postgresKeysPerS)],
				['Embedded vs Postgres', (r) => ratio(r.ratio, 2)],
				['p50 ms, Embedded / Postgres', (r) => `${number(r.embeddedP50Ms, 2)} / ${number(r.postgresP50Ms, 2)}`],
				['longest stall ms, Embedded (without CPU wait)', (r) => stall(r.embeddedStallMs, r.embeddedOwnStallMs)],
				['longest stall ms, Postgres (without CPU wait)', (r) => stall(r.postgresStallMs, r.postgresOwnStallMs)],
			],
			run.rows,
		),
	'embedded-calls': (run) =>
		table(
			[
				['call', (r) => r.call, 'l'],
				['Embedded ms', (r) => number(r.embeddedMs, 1)],
				['longest stall ms (without CPU wait)', (r) => stall(r.embeddedStallMs, r.embeddedOwnStallMs)],
				['Postgres ms', (r) => number(r.postgresMs, 1)],
				['longest stall ms (without CPU wait)', (r) => stall(r.postgresStallMs, r.postgresOwnStallMs)],
			],
			run.rows,
		),
	'embedded-random-keys': (run) =>
		table(
			[
				['call', (r) => r.call, 'l'],
				['median ms', (r) => number(r.medianMs, 1)],
				['max ms', (r) => number(r.maxMs, 1)],
				['longest stall ms (without CPU wait)', (r) => stall(r.stallMs, r.ownStallMs)],
			],
			run.rows,
		),
	// ... and inside n8n (bench/n8n/run.ts).
	'embedded-n8n-overhead': (run) =>
		`${TABLES.overhead(run)}\n\n${table(
			[
				['Reserve (Embedded) vs a No Operation node', (r) => clients(r.clients), 'l'],
				['added ms per execution', (r) => signed(r.addedMs, 2)],
				['n8n CPU ms per execution', (r) => signed(r.cpuMs, 2)],
				['throughput ratio', (r) => ratio(r.ratio)],
			],
			run.vsNoOperation,
		)}\n\n${table(
			[
				['flow', (r) => r.flow, 'l'],
				["node (its own time: n8n's executionTime)", (r) => r.node, 'l'],
				['executions', (r) => number(r.executions)],
				['median ms', (r) => number(r.medianMs)],
				['p90 ms', (r) => number(r.p90Ms)],
			],
			run.nodeTimes,
		)}`,
	'embedded-n8n-batch': (run) =>
		table(
			[
				['node under test', (r) => r.node, 'l'],
				['wall ms', (r) => number(r.wallMs)],
				['net ms', (r) => number(r.netMs)],
				['net min–max', (r) => range(r.netMinMs, r.netMaxMs, 0)],
				['keys/s net', (r) => number(r.keysPerS)],
				['node ms', (r) => number(r.nodeMs)],
				['longest n8n stall ms', (r) => number(r.stallMs, 1)],
			],
			run.rows,
		),
	'embedded-n8n-cleanup': (run) =>
		table(
			[
				['flow', (r) => r.flow, 'l'],
				['deleted', (r) => number(r.deleted)],
				['wall ms', (r) => number(r.wallMs)],
				['rows/s', (r) => number(r.rowsPerS)],
				['longest n8n stall ms', (r) => number(r.stallMs, 1)],
			],
			run.rows,
		),
	// The Idempotent Webhook trigger beside the webhook template on each store, a bare flow and a floor trigger (bench/n8n/trigger.ts).
	'trigger-n8n': (run) =>
		table(
			[
				['delivery', (r) => TRIGGER_KINDS[r.kind], 'l'],
				['flow', (r) => r.role, 'l'],
				['store', (r) => (r.store === null ? NONE : TRIGGER_STORES[r.store]), 'l'],
				['clients', (r) => clients(r.clients)],
				[
					'vs floor (min–max)',
					(r) => (r.vsFloorMin === null ? ratio(r.vsFloor, 2) : `${ratio(r.vsFloor, 2)} (${range(r.vsFloorMin, r.vsFloorMax)})`),
				],
				[
					'vs template (min–max, new events)',
					(r) =>
						r.kind === 'new' && r.vsTemplateMin !== null
							? `${ratio(r.vsTemplate, 2)} (${range(r.vsTemplateMin, r.vsTemplateMax)})`
							: ratio(r.vsTemplate, 2),
				],
				['vs bare', (r) => ratio(r.vsBare, 2)],
				['n8n CPU ms', (r) => number(r.cpuMsPerRequest)],
			],
			run.rows,
		),
	// The same flows with n8n building an expression isolate only where an expression runs: new events only (the
	// floor trigger then pays an isolate the others do not, so ratios to it say nothing).
	'trigger-n8n-lazy-isolates': (run) =>
		table(
			[
				['flow', (r) => r.role, 'l'],
				['store', (r) => (r.store === null ? NONE : TRIGGER_STORES[r.store]), 'l'],
				['clients', (r) => clients(r.clients)],
				[
					'vs template (min–max)',
					(r) =>
						r.vsTemplateMin !== null ? `${ratio(r.vsTemplate, 2)} (${range(r.vsTemplateMin, r.vsTemplateMax)})` : ratio(r.vsTemplate, 2),
				],
				['vs bare', (r) => ratio(r.vsBare, 2)],
				['n8n CPU ms', (r) => number(r.cpuMsPerRequest)],
			],
			run.rows.filter((r) => r.kind === 'new' && r.role !== 'floor'),
		),
	// The trigger answering At Once with a 10 s step, beside the floor trigger (bench/n8n/atOnce.ts).
	'at-once-n8n': (run) =>
		table(
			[
				['flow', (r) => atOnceFlowName(r.flow), 'l'],
				['load', (r) => r.load, 'l'],
				['req/s', (r) => number(r.reqPerS, 1)],
				['p50 ms', (r) => number(r.p50Ms, 1)],
				['p99 ms', (r) => number(r.p99Ms, 1)],
				['p50 vs floor', (r) => ratio(r.p50VsFloor, 2)],
				['p99 vs floor', (r) => ratio(r.p99VsFloor, 2)],
				['p99 vs Immediately', (r) => ratio(r.p99VsImmediately, 2)],
				['n8n CPU ms', (r) => number(r.cpuMsPerRequest)],
				['effects per event', (r) => (r.effectsPerEvent === null ? NONE : number(r.effectsPerEvent, 2))],
			],
			run.rows,
		),
	overhead: (run) =>
		table(
			[
				['flow', (r) => r.flow, 'l'],
				['clients', (r) => clients(r.clients)],
				['req/s', (r) => number(r.reqPerS, 1)],
				['vs baseline', (r) => ratio(r.ratio)],
				['min–max', (r) => range(r.ratioMin, r.ratioMax)],
				['p50 ms', (r) => number(r.p50Ms, 1)],
				['added p50 ms', (r) => signed(r.addedP50Ms)],
				['p99 ms', (r) => number(r.p99Ms, 1)],
				['n8n CPU ms/execution', (r) => number(r.cpuMsPerExec, 1)],
			],
			run.rows,
		),
	batch: (run) =>
		table(
			[
				['node under test', (r) => r.node, 'l'],
				['wall ms', (r) => number(r.wallMs)],
				['net ms', (r) => number(r.netMs)],
				['net min–max', (r) => range(r.netMinMs, r.netMaxMs, 0)],
				['keys/s net', (r) => number(r.keysPerS)],
				['node ms', (r) => number(r.nodeMs)],
				['saved execution MB', (r) => number(r.savedMb, 2)],
			],
			run.rows,
		),
	'batch-vs-recipe': (run) =>
		table(
			[
				['node under test', (r) => r.node, 'l'],
				['net ms', (r) => number(r.netMs)],
				['keys/s net', (r) => number(r.keysPerS)],
				['vs the recipe', (r) => ratio(r.vsRecipe, 1)],
				['node ms', (r) => number(r.nodeMs)],
				['saved execution MB', (r) => number(r.savedMb, 2)],
			],
			run.rows,
		),
	single: (run) =>
		table(
			[
				['scenario', (r) => r.scenario, 'l'],
				['calls/s unnamed → named', (r) => `${number(r.unnamedCallsPerS)} → ${number(r.namedCallsPerS)}`],
				['named vs unnamed', (r) => ratio(r.ratio)],
				['min–max', (r) => range(r.ratioMin, r.ratioMax)],
				['p50 ms unnamed → named', (r) => `${number(r.p50UnnamedMs, 2)} → ${number(r.p50NamedMs, 2)}`],
				['p99 ms unnamed → named', (r) => `${number(r.p99UnnamedMs, 2)} → ${number(r.p99NamedMs, 2)}`],
				['plain pg named vs unnamed', (r) => ratio(r.plainRatio)],
			],
			run.rows,
		),
	statement: (run) =>
		table(
			[
				['scenario', (r) => r.scenario, 'l'],
				['recipe keys/s', (r) => number(r.recipeKeysPerS)],
				['core, Output: Compact', (r) => ratio(r.coreCompact)],
				['min–max', (r) => range(r.coreCompactMin, r.coreCompactMax)],
				['plain pg, Compact', (r) => ratio(r.plainCompact)],
				['core, Output: Full', (r) => ratio(r.coreFull)],
			],
			run.rows,
		),
	core: (run) =>
		table(
			[
				['scenario', (r) => r.scenario, 'l'],
				['core keys/s', (r) => number(r.coreKeysPerS)],
				['plain pg keys/s', (r) => number(r.plainKeysPerS)],
				['core vs plain pg', (r) => ratio(r.ratio)],
				['min–max', (r) => range(r.ratioMin, r.ratioMax)],
				['client CPU µs/key, core / pg', (r) => `${number(r.coreCpuUs, 1)} / ${number(r.plainCpuUs, 1)}`],
			],
			run.rows,
		),
	growth: (run) =>
		table(
			[
				['rows in table', (r) => number(r.rows), 'l'],
				['1 key p50 ms', (r) => number(r.singleP50Ms, 2)],
				['1 key p99 ms', (r) => number(r.singleP99Ms, 2)],
				['p99 vs empty', (r) => ratio(r.singleP99VsEmpty, 2)],
				['1,000 keys p50 ms', (r) => number(r.batchP50Ms, 1)],
				['1,000 keys p99 ms', (r) => number(r.batchP99Ms, 1)],
				['p99 vs empty', (r) => ratio(r.batchP99VsEmpty, 2)],
				[
					'MB per million keys, table + indexes',
					(r) => (r.heapMbPerMillion === null ? NONE : `${r.heapMbPerMillion} + ${r.indexMbPerMillion}`),
				],
			],
			run.rows,
		),
	cleanup: (run) =>
		`${table(
			[
				['phase', (r) => r.phase, 'l'],
				['reserves', (r) => number(r.reserves)],
				['p50 ms', (r) => number(r.p50Ms, 2)],
				['p99 ms', (r) => number(r.p99Ms, 2)],
				['max ms', (r) => number(r.maxMs, 1)],
			],
			run.rows,
		)}\n\nDeleted ${number(run.deleted)} rows in ${number(run.seconds, 1)} s (${number(run.batches)} batches, ${number(run.rowsPerS)} rows/s).`,
	bloat: (run) =>
		table(
			[
				['table', (r) => r.table, 'l'],
				['MB before, heap + indexes', (r) => `${r.heapMbBefore} + ${r.indexMbBefore}`],
				['MB after', (r) => `${r.heapMbAfter} + ${r.indexMbAfter}`],
				['growth', (r) => ratio(r.growth, 2)],
				['HOT updates', (r) => `${r.hotPercent} %`],
				['dead rows left', (r) => number(r.deadRows)],
			],
			run.rows,
		),
	output: (run) =>
		table(
			[
				['idempotency object', (r) => r.output, 'l'],
				['bytes per item (object)', (r) => number(r.bytesPerItem)],
				['all items MB', (r) => number(r.allItemsMb, 2)],
				['vs Full', (r) => `${r.vsFullPercent} %`],
				['build + JSON ms', (r) => number(r.buildJsonMs, 1)],
			],
			run.rows,
		),
	big: (run) =>
		table(
			[
				['n8n', (r) => r.run, 'l'],
				['flow', (r) => r.flow, 'l'],
				['wall ms', (r) => number(r.wallMs)],
				['node ms', (r) => number(r.nodeMs)],
				['RSS before MB', (r) => number(r.rssBeforeMb)],
				['RSS max MB', (r) => number(r.rssMaxMb)],
				['added MB', (r) => number(r.addedRssMb)],
				['saved execution MB', (r) => number(r.savedMb, 1)],
			],
			run.rows,
		),
};

// ---------------------------------------------------------------------------------------------
// Headline figures: each picked from a run by name, so a renamed row fails here instead of vanishing.

function pick<R>(run: { rows: R[]; file: string }, predicate: (row: R) => boolean, what: string): R {
	const row = run.rows.find(predicate);
	if (!row) throw new Error(`${run.file}: no row for ${what}`);
	return row;
}

function summary(runs: Runs): string {
	const get = <Id extends RunId>(id: Id) => runOf(runs, id, 'summary');
	const overhead = get('overhead');
	const reserve = (c: number) => pick(overhead, (r) => r.flow === '+ Reserve (Permanent)' && r.clients === c, `Reserve at c=${c}`);
	const recipeStep = pick(overhead, (r) => r.flow.startsWith("reference: the recipe's reserve step") && r.clients === 1, 'the recipe step');
	const lease = pick(overhead, (r) => r.flow.includes('Key From paired item') && r.clients === 1, 'lease + Mark Complete');
	const batch = get('batch');
	const field = pick(batch, (r) => r.node.includes('Field'), 'Field');
	const eventId = pick(batch, (r) => r.node.includes('Event ID') && r.node.includes('Compact'), 'Event ID');
	const vsRecipe = get('batch-vs-recipe');
	const fieldVsRecipe = pick(vsRecipe, (r) => r.node.includes('Field'), 'Field vs recipe');
	const customVsRecipe = pick(vsRecipe, (r) => r.node.includes('Custom'), 'Custom vs recipe');
	const single = get('single');
	const one = pick(single, (r) => r.scenario === 'reserve, 1 key, 1 caller', 'one key');
	const statement = get('statement');
	const fresh = pick(statement, (r) => r.scenario === '1,000 keys/call', 'fresh keys');
	const duplicates = pick(statement, (r) => r.scenario === 'duplicates, 1,000 keys/call', 'duplicates');
	const growth = get('growth');
	const tenMillion = pick(growth, (r) => r.rows === 10000000, '10 M rows');
	const oneMillion = pick(growth, (r) => r.rows === 1000000, '1 M rows');
	const cleanup = get('cleanup');
	const without = pick(cleanup, (r) => r.phase.startsWith('without'), 'without cleanup');
	const during = pick(cleanup, (r) => r.phase.startsWith('during'), 'during cleanup');
	const bloat = pick(get('bloat'), (r) => r.table.startsWith('default'), 'default table');
	const output = get('output');
	const compact = pick(output, (r) => r.output.includes('Compact'), 'Compact');
	const full = pick(output, (r) => r.output.includes('Full'), 'Full');
	const big = get('big').rows.filter((r) => r.flow.includes('Reserve'));
	const embeddedOverhead = get('embedded-n8n-overhead');
	const nodeTimes = { ...embeddedOverhead, rows: embeddedOverhead.nodeTimes };
	const embeddedNodeMs = pick(
		nodeTimes,
		(r) => r.flow.includes('Embedded, permanent') && r.node === 'Idempotency Reserve',
		'Embedded Reserve node time',
	);
	const noOpNodeMs = pick(nodeTimes, (r) => r.node === 'No Operation', 'No Operation node time');
	const postgresNodeMs = pick(
		nodeTimes,
		(r) => r.flow.includes('Reserve (permanent)') && r.node === 'Idempotency Reserve',
		'Postgres Reserve node time',
	);
	const embeddedBatch = get('embedded-n8n-batch');
	const embeddedField = pick(embeddedBatch, (r) => r.node.includes('Embedded') && r.node.includes('field'), 'Embedded Field');
	const postgresField = pick(embeddedBatch, (r) => !r.node.includes('Embedded') && r.node.includes('field'), 'Postgres Field');
	const embeddedCleanup = pick(get('embedded-n8n-cleanup'), (r) => r.flow.includes('Embedded'), 'Embedded cleanup');
	const postgresCleanup = pick(get('embedded-n8n-cleanup'), (r) => r.flow.includes('Postgres'), 'Postgres cleanup');
	const storeCalls = get('embedded-calls');
	const worstCall = storeCalls.rows.reduce((worst, r) => (r.embeddedOwnStallMs > worst.embeddedOwnStallMs ? r : worst));
	const markComplete = pick(get('embedded-random-keys'), (r) => r.call.startsWith('Mark Complete'), 'Mark Complete of random keys');
	const trigger = get('trigger-n8n');
	const lazyIsolates = get('trigger-n8n-lazy-isolates');
	const triggerRow = (kind: TriggerRow['kind'], role: TriggerRow['role'], store: TriggerRow['store'], c: number, run = trigger) =>
		pick(run, (r) => r.kind === kind && r.role === role && r.store === store && r.clients === c, `${role} (${store}), ${kind}, c=${c}`);
	const triggerExecutions = Math.max(
		...trigger.rows.filter((r) => r.role === 'trigger' && r.kind !== 'new').map((r) => r.executionsPerRequest),
	);
	/** A trigger figure at 1 and 8 clients on both stores: "Embedded a / b, Postgres c / d". */
	const bothStores = (figure: (store: 'embedded' | 'postgres', c: number) => string) =>
		(['embedded', 'postgres'] as const).map((store) => `${TRIGGER_STORES[store]} ${figure(store, 1)} / ${figure(store, 8)}`).join(', ');
	const kbPerItem = big.map((r) => (r.addedRssMb * 1000) / 100000);
	const atOnce = get('at-once-n8n');
	const atOnceP99 = (flow: string, load: string) =>
		number(pick(atOnce, (r) => r.flow.startsWith(flow) && r.load.startsWith(load), `${flow}, ${load}`).p99Ms);

	const rows: Array<[string, string, string, RunId]> = [
		[
			'what Reserve (Permanent) costs a webhook flow, 1 client',
			`${ratio(reserve(1).ratio)} the throughput, ${signed(reserve(1).addedP50Ms)} ms p50`,
			`the recipe's own reserve step (stock Postgres node): ${ratio(recipeStep.ratio)}`,
			'overhead',
		],
		['the same, 8 clients', `${ratio(reserve(8).ratio)} the throughput`, 'at 8 clients p50 is queueing', 'overhead'],
		[
			'Reserve (Lease) + Mark Complete, 1 client',
			`${ratio(lease.ratio)} the throughput, ${signed(lease.addedP50Ms)} ms p50`,
			'two nodes',
			'overhead',
		],
		[
			'one key reserved outside n8n, 1 caller',
			`${number(one.namedCallsPerS)} reserves/s, p50 ${number(one.p50NamedMs, 2)} ms`,
			`named prepared statements: ${ratio(one.ratio, 1)} unnamed`,
			'single',
		],
		[
			'10,000 items in one execution, net of n8n',
			`${number(field.keysPerS)} keys/s (Key Source Field), ${number(eventId.keysPerS)} (Event ID)`,
			'Output: Compact',
			'batch',
		],
		[
			'the same vs the per-item recipe',
			`${ratio(fieldVsRecipe.vsRecipe, 1)} (Field)`,
			`Key Source Custom: ${ratio(customVsRecipe.vsRecipe, 1)}, n8n's per-item expression`,
			'batch-vs-recipe',
		],
		[
			"the reserve statement vs the recipe's two-column insert",
			`${ratio(fresh.coreCompact)} on fresh keys, ${ratio(duplicates.coreCompact)} on duplicates`,
			"the recipe's row has no lease, retention, response or counts",
			'statement',
		],
		[
			'p99 at 10 M rows vs an empty table',
			`${ratio(tenMillion.singleP99VsEmpty, 2)} (1 key), ${ratio(tenMillion.batchP99VsEmpty, 2)} (1,000 keys)`,
			`${(oneMillion.heapMbPerMillion ?? 0) + (oneMillion.indexMbPerMillion ?? 0)} MB per million keys`,
			'growth',
		],
		[
			'cleanup while 8 clients reserve',
			`${number(cleanup.rowsPerS)} rows/s`,
			`reserve p99 during it ${ratio(during.p99Ms / without.p99Ms, 2)} of without`,
			'cleanup',
		],
		['1 M duplicate deliveries', `table + indexes ${ratio(bloat.growth, 2)}`, `${bloat.hotPercent} % HOT updates`, 'bloat'],
		[
			"Reserve's output per item",
			`${number(compact.bytesPerItem)} bytes (Compact) vs ${number(full.bytesPerItem)} (Full)`,
			'Compact is the default',
			'output',
		],
		[
			"n8n's memory for 100,000 items in one execution",
			`+${number(Math.min(...kbPerItem), 1)}–${number(Math.max(...kbPerItem), 1)} KB per item`,
			'measured with Output: Full',
			'big',
		],
		[
			'Reserve on the Embedded store, its own time per execution inside n8n',
			`median ${number(embeddedNodeMs.medianMs)} ms (p90 ${number(embeddedNodeMs.p90Ms)})`,
			`No Operation: ${number(noOpNodeMs.medianMs)} ms; Reserve on Postgres: ${number(postgresNodeMs.medianMs)} ms`,
			'embedded-n8n-overhead',
		],
		[
			'10,000 items in one execution on the Embedded store, net of n8n',
			`${number(embeddedField.keysPerS)} keys/s (Key Source Field)`,
			`Postgres in the same rounds: ${number(postgresField.keysPerS)}`,
			'embedded-n8n-batch',
		],
		[
			'Delete Expired Keys on 1 M expired keys inside n8n, Embedded',
			`longest n8n stall ${number(embeddedCleanup.stallMs)} ms, ${number(embeddedCleanup.rowsPerS)} rows/s`,
			`Postgres: ${number(postgresCleanup.stallMs)} ms, ${number(postgresCleanup.rowsPerS)} rows/s`,
			'embedded-n8n-cleanup',
		],
		[
			'executions the trigger starts for duplicates, forgeries, copies in progress',
			`${number(triggerExecutions)} (target 0)`,
			'the webhook template: 1 per request',
			'trigger-n8n',
		],
		[
			'duplicates through the trigger vs the floor trigger, 1 / 8 clients',
			bothStores((store, c) => ratio(triggerRow('duplicate', 'trigger', store, c).vsFloor, 2)),
			`forgeries: ${bothStores((store, c) => ratio(triggerRow('forgery', 'trigger', store, c).vsFloor, 2))}`,
			'trigger-n8n',
		],
		[
			'new events through the trigger vs the template on its store, 1 / 8 clients',
			bothStores((store, c) => ratio(triggerRow('new', 'trigger', store, c).vsTemplate, 2)),
			`n8n CPU per event, Embedded, 8 clients: ${number(triggerRow('new', 'trigger', 'embedded', 8).cpuMsPerRequest)} vs ${number(triggerRow('new', 'template', 'embedded', 8).cpuMsPerRequest)} ms`,
			'trigger-n8n',
		],
		[
			'the same, n8n with `N8N_EXPRESSION_ENGINE_LAZY_ACQUIRE=true`',
			bothStores((store, c) => ratio(triggerRow('new', 'trigger', store, c, lazyIsolates).vsTemplate, 2)),
			`CPU, Embedded, 8 clients: ${number(triggerRow('new', 'trigger', 'embedded', 8, lazyIsolates).cpuMsPerRequest)} vs ${number(triggerRow('new', 'template', 'embedded', 8, lazyIsolates).cpuMsPerRequest)} ms`,
			'trigger-n8n-lazy-isolates',
		],
		[
			'the trigger answering At Once before a 10 s step: p99, 8 clients / bursts of 8',
			`${atOnceP99('Idempotent Webhook', '8 clients')} / ${atOnceP99('Idempotent Webhook', 'bursts')} ms (target < 250)`,
			`n8n's Webhook node, Immediately: ${atOnceP99("n8n's Webhook", '8 clients')} / ${atOnceP99("n8n's Webhook", 'bursts')} ms; the floor: ${atOnceP99('floor', '8 clients')} / ${atOnceP99('floor', 'bursts')} ms`,
			'at-once-n8n',
		],
		[
			'the longest event-loop stall of one Embedded store call, outside n8n',
			`${number(worstCall.embeddedOwnStallMs)} ms without CPU wait (${worstCall.call.split(':')[0]})`,
			'target ≤ 50 ms',
			'embedded-calls',
		],
		[
			'the same for Mark Complete of 9,000 random keys in a table of 200,000',
			`${number(markComplete.ownStallMs)} ms without CPU wait (median call ${number(markComplete.medianMs)} ms)`,
			'target ≤ 50 ms',
			'embedded-random-keys',
		],
	];
	return table(
		[
			['what', (r) => r[0], 'l'],
			['measured', (r) => r[1], 'l'],
			['beside it', (r) => r[2], 'l'],
			['run', (r) => `[${get(r[3]).date}, ${get(r[3]).quiet ? 'quiet' : 'busy'}](#${sectionOf[r[3]]})`, 'l'],
		],
		rows,
	);
}

// The page's section for each run, for the summary's links (the docs test checks every anchor).
const sectionOf: Partial<Record<RunId, string>> = {
	overhead: 'per-execution-overhead-inside-n8n',
	settle: 'settle-after-business-step-vs-mark-complete',
	single: 'one-key-per-call-outside-n8n',
	batch: 'batches-inside-n8n',
	'batch-vs-recipe': 'batches-inside-n8n',
	statement: 'the-reserve-statement-vs-the-recipes-insert',
	growth: 'table-growth-to-10-m-rows',
	cleanup: 'cleanup-under-load',
	bloat: 'bloat-from-duplicates',
	output: 'output-size',
	big: 'one-100000-item-execution',
	embedded: 'the-embedded-store-beside-postgres',
	'embedded-calls': 'the-embedded-store-beside-postgres',
	'embedded-random-keys': 'the-embedded-store-beside-postgres',
	'embedded-n8n-overhead': 'the-embedded-store-beside-postgres',
	'embedded-n8n-batch': 'the-embedded-store-beside-postgres',
	'embedded-n8n-cleanup': 'the-embedded-store-beside-postgres',
	'trigger-n8n': 'the-idempotent-webhook-trigger-inside-n8n',
	'trigger-n8n-lazy-isolates': 'the-idempotent-webhook-trigger-inside-n8n',
	'at-once-n8n': 'the-trigger-answering-at-once',
};

// ---------------------------------------------------------------------------------------------
// Plots: plain SVG, no dependency. Text is measured roughly (a sans-serif digit or letter ~0.55 em).

const FONT = 'font-family="DejaVu Sans, Arial, Helvetica, sans-serif"';
const COLOURS = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759'];
const textWidth = (text: string, size: number) => Math.ceil(text.length * size * 0.56);
const escape = (text: string | number) => String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const fixed = (value: number) => Number(value.toFixed(1));

function svg(width: number, height: number, body: string[]): string {
	return [
		`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ${FONT} font-size="12">`,
		`<rect width="${width}" height="${height}" fill="#ffffff"/>`,
		...body,
		'</svg>',
		'',
	].join('\n');
}

function legend(series: string[], x: number, y: number): string[] {
	const parts: string[] = [];
	let at = x;
	series.forEach((name, i) => {
		parts.push(`<rect x="${at}" y="${y - 10}" width="12" height="12" fill="${COLOURS[i]}"/>`);
		parts.push(`<text x="${at + 17}" y="${y}">${escape(name)}</text>`);
		at += 17 + textWidth(name, 12) + 20;
	});
	return parts;
}

/**
 * Horizontal bars: `groups` are { label, values: [number|null per series] }. `log` draws a
 * logarithmic axis from `min`. Each bar carries its value.
 */
function barChart({
	title,
	subtitle,
	series,
	groups,
	unit,
	log = false,
	min = 1,
	format = (v) => number(v),
}: {
	title: string;
	subtitle: string;
	series: string[];
	groups: Array<{ label: string; values: Array<number | null> }>;
	unit: string;
	log?: boolean;
	min?: number;
	format?: (value: number) => string;
}): string {
	const labelWidth = Math.max(...groups.map((g) => textWidth(g.label, 12))) + 16;
	const plotWidth = 520;
	const barHeight = 14;
	const groupHeight = series.length * barHeight + 10;
	const top = 70;
	const left = labelWidth;
	const width = left + plotWidth + 90;
	const height = top + groups.length * groupHeight + 50;
	const max = Math.max(...groups.flatMap((g) => g.values.filter((v): v is number => v !== null)));
	const niceMax = log ? 10 ** Math.ceil(Math.log10(max)) : niceCeiling(max);
	const scale = (v: number) =>
		(log ? (Math.log10(v) - Math.log10(min)) / (Math.log10(niceMax) - Math.log10(min)) : v / niceMax) * plotWidth;
	const ticks = log ? powersOfTen(min, niceMax) : linearTicks(niceMax);
	const body = [
		`<text x="12" y="22" font-size="15" font-weight="bold">${escape(title)}</text>`,
		`<text x="12" y="40" fill="#555">${escape(subtitle)}</text>`,
		...legend(series, left, 60),
	];
	for (const tick of ticks) {
		const x = fixed(left + scale(tick));
		body.push(`<line x1="${x}" y1="${top - 4}" x2="${x}" y2="${height - 30}" stroke="#ddd"/>`);
		body.push(`<text x="${x}" y="${height - 16}" text-anchor="middle" fill="#555">${escape(number(tick))}</text>`);
	}
	body.push(`<text x="${left + plotWidth}" y="${height - 4}" text-anchor="end" fill="#555">${escape(unit)}</text>`);
	groups.forEach((group, g) => {
		const y0 = top + g * groupHeight;
		body.push(
			`<text x="${left - 8}" y="${fixed(y0 + (series.length * barHeight) / 2 + 4)}" text-anchor="end">${escape(group.label)}</text>`,
		);
		group.values.forEach((value, s) => {
			if (value === null) return;
			const y = y0 + s * barHeight;
			const w = fixed(Math.max(1, scale(value)));
			body.push(`<rect x="${left}" y="${y}" width="${w}" height="${barHeight - 2}" fill="${COLOURS[s]}"/>`);
			body.push(`<text x="${fixed(left + w + 4)}" y="${y + barHeight - 4}" font-size="11">${escape(format(value))}</text>`);
		});
	});
	body.push(`<line x1="${left}" y1="${top - 4}" x2="${left}" y2="${height - 30}" stroke="#333"/>`);
	return svg(width, height, body);
}

/** Lines over categorical x positions: `series` are { name, values } with one value per x label. */
function lineChart({
	title,
	subtitle,
	xLabels,
	xTitle,
	series,
	unit,
}: {
	title: string;
	subtitle: string;
	xLabels: string[];
	xTitle: string;
	series: Array<{ name: string; values: number[] }>;
	unit: string;
}): string {
	const left = 70;
	const top = 76;
	const plotWidth = 520;
	const plotHeight = 280;
	const width = left + plotWidth + 40;
	const height = top + plotHeight + 60;
	const niceMax = niceCeiling(Math.max(...series.flatMap((s) => s.values)));
	const x = (i: number) => fixed(left + 40 + (i * (plotWidth - 80)) / (xLabels.length - 1));
	const y = (v: number) => fixed(top + plotHeight - (v / niceMax) * plotHeight);
	const body = [
		`<text x="12" y="22" font-size="15" font-weight="bold">${escape(title)}</text>`,
		`<text x="12" y="40" fill="#555">${escape(subtitle)}</text>`,
		...legend(
			series.map((s) => s.name),
			left,
			62,
		),
	];
	// Value labels sit above their points; where two at one x would overlap, the lower one moves down.
	const labelY = series.map((s) => s.values.map((v) => y(v) - 6));
	xLabels.forEach((_, j) => {
		const order = series.map((_, i) => i).sort((a, b) => labelY[a][j] - labelY[b][j]);
		for (let k = 1; k < order.length; k++) {
			const above = labelY[order[k - 1]][j];
			if (labelY[order[k]][j] - above < 13) labelY[order[k]][j] = above + 13;
		}
	});
	for (const tick of linearTicks(niceMax)) {
		body.push(`<line x1="${left}" y1="${y(tick)}" x2="${left + plotWidth}" y2="${y(tick)}" stroke="#ddd"/>`);
		body.push(`<text x="${left - 6}" y="${fixed(y(tick) + 4)}" text-anchor="end" fill="#555">${escape(number(tick))}</text>`);
	}
	xLabels.forEach((label, i) => body.push(`<text x="${x(i)}" y="${top + plotHeight + 18}" text-anchor="middle">${escape(label)}</text>`));
	body.push(`<text x="${left + plotWidth / 2}" y="${top + plotHeight + 40}" text-anchor="middle" fill="#555">${escape(xTitle)}</text>`);
	body.push(
		`<text x="14" y="${top + plotHeight / 2}" transform="rotate(-90 14 ${top + plotHeight / 2})" text-anchor="middle" fill="#555">${escape(unit)}</text>`,
	);
	series.forEach((s, i) => {
		const points = s.values.map((v, j) => `${x(j)},${y(v)}`).join(' ');
		body.push(`<polyline points="${points}" fill="none" stroke="${COLOURS[i]}" stroke-width="2"/>`);
		s.values.forEach((v, j) => {
			body.push(`<circle cx="${x(j)}" cy="${y(v)}" r="3.5" fill="${COLOURS[i]}"/>`);
			body.push(
				`<text x="${fixed(x(j) + 7)}" y="${fixed(labelY[i][j])}" font-size="11" fill="${COLOURS[i]}">${escape(number(v, 1))}</text>`,
			);
		});
	});
	body.push(`<line x1="${left}" y1="${top + plotHeight}" x2="${left + plotWidth}" y2="${top + plotHeight}" stroke="#333"/>`);
	return svg(width, height, body);
}

function niceCeiling(value: number): number {
	const power = 10 ** Math.floor(Math.log10(value));
	for (const step of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (step * power >= value) return step * power;
	return 10 * power;
}
function linearTicks(max: number): number[] {
	const step = max / 5;
	return Array.from({ length: 6 }, (_, i) => Number((i * step).toPrecision(6)));
}
function powersOfTen(min: number, max: number): number[] {
	const ticks: number[] = [];
	for (let t = min; t <= max; t *= 10) ticks.push(t);
	return ticks;
}

function plots(runs: Runs): Record<string, string> {
	const overhead = runOf(runs, 'overhead', 'plots');
	const flows = [...new Set(overhead.rows.map((r) => r.flow))];
	const single = runOf(runs, 'single', 'plots');
	const batch = runOf(runs, 'batch', 'plots');
	const growth = runOf(runs, 'growth', 'plots');
	const source = (run: RunInfo) =>
		`${run.date} ${run.time}, ${run.commit ? `commit ${run.commit}` : 'see BENCHMARKS.md'}, load ${run.load.split(' (')[0]}`;
	const reserves = single.rows.filter((r) => r.scenario.startsWith('reserve'));
	const field = pick(batch, (r) => r.node.includes('Field'), 'Field');
	return {
		'bench-throughput-per-flow.svg': barChart({
			title: 'Webhook executions per second inside n8n, by flow',
			subtitle: source(overhead),
			series: ['1 client', '8 clients'],
			groups: flows.map((flow) => ({
				label: flow,
				values: [1, 8].map((c) => overhead.rows.find((r) => r.flow === flow && r.clients === c)?.reqPerS ?? null),
			})),
			unit: 'requests per second',
			format: (v) => number(v, 1),
		}),
		'bench-keys-per-second.svg': barChart({
			title: 'Keys reserved per second, by keys per call',
			subtitle: `${source(single)}; n8n batch: ${batch.time}`,
			series: ['unnamed statements', 'named prepared statements (default)'],
			groups: [
				...reserves.map((r) => ({
					label: `core, ${r.scenario.replace('reserve, ', '')}${r.keysPerCall > 1 ? ` (calls/s × ${number(r.keysPerCall)})` : ''}`,
					values: [r.unnamedCallsPerS * r.keysPerCall, r.namedCallsPerS * r.keysPerCall],
				})),
				{ label: 'n8n, 10,000 items in one execution (Field, net)', values: [null, field.keysPerS ?? null] },
			],
			unit: 'keys per second (log scale)',
			log: true,
			min: 100,
		}),
		'bench-latency-vs-table-size.svg': lineChart({
			title: 'Reserve latency as the table grows',
			subtitle: `${growth.date} ${growth.time}, load ${growth.load.split(' (')[0]}; 8 callers for 1 key`,
			xLabels: growth.rows.map((r) => (r.rows === 0 ? 'empty' : `${number(r.rows / 1e6)} M rows`)),
			xTitle: 'rows in the keys table',
			series: [
				{ name: '1 key p50', values: growth.rows.map((r) => r.singleP50Ms) },
				{ name: '1 key p99', values: growth.rows.map((r) => r.singleP99Ms) },
				{ name: '1,000 keys p50', values: growth.rows.map((r) => r.batchP50Ms) },
				{ name: '1,000 keys p99', values: growth.rows.map((r) => r.batchP99Ms) },
			],
			unit: 'milliseconds per call',
		}),
	};
}

// ---------------------------------------------------------------------------------------------

function renderPage(page: string, runs: Runs): string {
	const seen = new Set<string>();
	const rendered = page.replace(
		/(<!-- generated: ([a-z0-9-]+) -->\n)[\s\S]*?(<!-- \/generated -->)/g,
		(_, open: string, name: string, close: string) => {
			seen.add(name);
			if (name === 'summary') return `${open}${summary(runs)}\n${close}`;
			const run = runs.get(name);
			if (!run) throw new Error(`${PAGE}: a generated part names ${name}, but no run in bench/results has that id`);
			// The run's id says what its rows are: its table reads them so.
			const render = Object.hasOwn(TABLES, run.id) ? (TABLES[run.id as RunId] as (run: AnyRun) => string) : undefined;
			if (!render) throw new Error(`bench/report.ts has no table for run ${run.id}`);
			return `${open}${render(run)}\n\n${provenance(run)}\n${close}`;
		},
	);
	const missing = [...runs.keys()].filter((id) => !seen.has(id));
	if (missing.length > 0)
		throw new Error(`${PAGE} shows no table for ${missing.join(', ')}: add <!-- generated: ID --><!-- /generated --> markers`);
	return rendered;
}

export function build(root: string, resultsDir = RESULTS): Map<string, string> {
	const { runs } = loadRuns(resultsDir);
	const files = new Map<string, string>();
	files.set(PAGE, renderPage(fs.readFileSync(path.join(root, PAGE), 'utf8'), runs));
	for (const [name, content] of Object.entries(plots(runs))) files.set(path.join(IMAGES, name), content);
	return files;
}

function main(): void {
	const args = process.argv.slice(2);
	const check = args.includes('--check');
	const rootAt = args.indexOf('--root');
	const resultsAt = args.indexOf('--results');
	const root = rootAt >= 0 ? path.resolve(args[rootAt + 1]) : REPO;
	const files = build(root, resultsAt >= 0 ? path.resolve(args[resultsAt + 1]) : RESULTS);
	const stale: string[] = [];
	for (const [name, content] of files) {
		const file = path.join(root, name);
		const current = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : null;
		if (current === content) continue;
		stale.push(name);
		if (!check) {
			fs.mkdirSync(path.dirname(file), { recursive: true });
			fs.writeFileSync(file, content);
		}
	}
	if (check && stale.length > 0) {
		console.error(`out of date with bench/results: ${stale.join(', ')} (run node -r ./test/support/register-ts.js bench/report)`);
		process.exit(1);
	}
	console.log(stale.length === 0 ? 'up to date' : `wrote ${stale.join(', ')}`);
}

if (require.main === module) {
	try {
		main();
	} catch (error) {
		console.error(error instanceof Error ? error.message : error);
		process.exit(1);
	}
}
