#!/usr/bin/env node
// The whole check, as CI runs it: lint, types, build, unit + integration + conformance tests (real
// Postgres 18, and the embedded store on a Node with node:sqlite), the conformance suite's Postgres
// half on PostgreSQL 14 and 16, a benchmark smoke run, and the end-to-end suite in a real n8n: the
// full tier on the newest proven line, the compatibility tier on every other one, each in both
// topologies (test/support/e2e/tags.js). Every step runs even when an earlier one fails, so one run
// shows everything that is wrong; the exit code is non-zero if anything failed.
//
// Fast by design: the n8n installs (minutes of download, little CPU) start in the background at
// once, one at a time, beside the fast suites; the benchmark and end-to-end steps wait for them.
// The run ends with a table of where the time went (every step, the installs, Postgres/Redis/n8n starts, the slowest tests),
// kept in .test-results/timings.txt and timings.json, then the line "N passed, N failed" summing
// every jest suite that ran. Queue mode's redis-server is checked first: installed with apt when
// missing and we run as root, else nothing runs.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { selectedN8nVersion, PROVEN_N8N_VERSIONS } from '../test/support/stack/n8nVersion';
import { sqliteNode } from '../test/support/stack/sqliteNode';
import { POSTGRES_LINES } from '../test/support/stack/postgresServer';
import { killGroup } from '../test/support/stack/childProcesses';
import { ensureRedisServer, redisServerVersion } from '../test/support/stack/redisServer';
import { growthWarnings, readPhases } from '../test/support/stack/timings';

const root = path.join(__dirname, '..');
// The scripts this runs are TypeScript run from source: each `node` child gets the hook first.
const REGISTER_TS = path.join(root, 'test', 'support', 'register-ts.js');
const resultsDir = path.join(root, '.test-results');
fs.rmSync(resultsDir, { recursive: true, force: true });
fs.mkdirSync(path.join(resultsDir, 'logs'), { recursive: true });
const timingsFile = path.join(resultsDir, 'timings.jsonl');

const skipE2e = process.argv.includes('--skip-e2e');
// --skip-bench leaves out the benchmark smoke run (the pull-request workflow's fast job).
const skipBench = process.argv.includes('--skip-bench');
// `--n8n-version=1.123.81` (or N8N_VERSION) picks the line that runs the full tier; jest takes no unknown flags.
const n8nVersion = selectedN8nVersion();
// Every other proven line runs the compatibility tier; --skip-other-n8n skips them.
const otherVersions = process.argv.includes('--skip-other-n8n') ? [] : PROVEN_N8N_VERSIONS.filter((version) => version !== n8nVersion);
// The n8n lines this run installs: the construct matrix needs the default line's own nodes even without the end-to-end suite.
const installedLines = skipE2e ? [n8nVersion] : [n8nVersion, ...otherVersions];
const topologies = (process.env.E2E_TOPOLOGIES ?? 'single,queue').split(',').map((t) => t.trim());
const runStarted = Date.now();
const sinceStart = () => (Date.now() - runStarted) / 1000;
// CI stops a run at 90 minutes and then prints nothing of it: at this deadline (from .ci/run's own
// start when it passes it) whatever still runs is stopped, and the summary names it.
const RUN_BUDGET_SECONDS = budgetSeconds(process.env.TEST_ALL_BUDGET_SECONDS);
const runDeadline = (Number(process.env.CI_RUN_STARTED_AT ?? 0) * 1000 || runStarted) + RUN_BUDGET_SECONDS * 1000;
const pastDeadline = () => Date.now() >= runDeadline;

/** TEST_ALL_BUDGET_SECONDS read: a whole number of seconds from 1 to a week, 86 minutes when unset. */
function budgetSeconds(value: string | undefined): number {
	if (value === undefined) return 86 * 60;
	const seconds = Number(value);
	if (!Number.isInteger(seconds) || seconds < 1 || seconds > 7 * 86400) {
		process.stdout.write(
			`TEST_ALL_BUDGET_SECONDS must be a whole number of seconds from 1 to 604800, not ${JSON.stringify(value)}\n0 passed, 1 failed\n`,
		);
		process.exit(1);
	}
	return seconds;
}
const say = (line: string): void => {
	process.stdout.write(`${line}\n`);
};

/** The end of a command: whether it exited 0, after how long, and whether the run's deadline stopped it. */
interface RunResult {
	ok: boolean;
	seconds: number;
	stopped?: boolean;
}

/** An n8n install in the background: when it started (seconds into the run), how long it took, whether it worked. */
interface BackgroundJob {
	name: string;
	startedAt: number | null;
	seconds: number | null;
	ok: boolean | null;
}

/** One step of the run: its command (or commands, side by side), what it waits for, its jest result files. */
interface Step {
	name: string;
	command?: () => string[];
	commands?: () => string[][];
	needs?: () => boolean | Promise<boolean>;
	env?: NodeJS.ProcessEnv;
	results?: string | string[];
}

/** A step as it ran, or a failed background install. */
interface ReportEntry {
	name: string;
	results?: string | string[];
	startedAt?: number;
	waited?: number;
	ok?: boolean;
	seconds?: number;
	/** The run's deadline stopped it, or came before it started. */
	stopped?: boolean;
}

/** One test's time, for the slowest-tests table. */
interface TestTime {
	step: string;
	file: string;
	title: string;
	seconds: number;
}

/** Jest's --json results: what this script reads of them. */
interface JestResults {
	numPassedTests: number;
	numFailedTests: number;
	numRuntimeErrorTestSuites: number;
	testResults: Array<{
		name: string;
		message?: string;
		assertionResults: Array<{
			title: string;
			fullName?: string;
			duration?: number | null;
			status?: string;
			failureMessages?: string[];
			retryReasons?: string[];
		}>;
	}>;
}

/** The first lines of a failure, without colour codes: enough to name the cause in the run's last lines. */
function failureHead(message: string, lines = 8): string {
	// eslint-disable-next-line no-control-regex
	const plain = message.replace(/\u001b\[[0-9;]*m/g, '');
	return plain
		.split('\n')
		.filter((line) => line.trim() !== '')
		.slice(0, lines)
		.map((line) => `      ${line.trimEnd()}`)
		.join('\n');
}

// Each command runs in a process group of its own (so that the deadline stops all of it): an
// interrupt of this run is passed on to them.
const runningGroups = new Set<number>();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
	process.once(signal, () => {
		for (const pid of runningGroups) killGroup(pid, signal);
		process.exit(1);
	});
}

/**
 * Runs a command to its end, or to the run's deadline: then SIGTERM to its process group (the
 * end-to-end harness stops its n8n, Redis and Postgres on it), and SIGKILL to the group 5 s after
 * the leader ended, or 30 s after the SIGTERM if it has not. `logFile` takes its output instead of
 * the console. Resolves { ok, seconds, stopped }.
 */
function run(command: string[], { env = {}, logFile }: { env?: NodeJS.ProcessEnv; logFile?: string } = {}): Promise<RunResult> {
	const started = Date.now();
	return new Promise((resolve) => {
		const out = logFile ? fs.openSync(logFile, 'a') : 'inherit';
		const child = spawn(command[0], command.slice(1), {
			cwd: root,
			stdio: ['ignore', out, out],
			env: { ...process.env, ...env },
			detached: true,
		});
		if (child.pid) runningGroups.add(child.pid);
		let stopped = false;
		const signalGroup = (signal: NodeJS.Signals) => child.pid && killGroup(child.pid, signal);
		let killTimer: NodeJS.Timeout | undefined;
		const deadlineTimer = setTimeout(
			() => {
				stopped = true;
				say(`\n[deadline] ${command.join(' ')}: still running at the run's deadline (${RUN_BUDGET_SECONDS} s), stopped`);
				signalGroup('SIGTERM');
				killTimer = setTimeout(() => signalGroup('SIGKILL'), 30000); // a leader that does not end on SIGTERM
			},
			Math.max(0, runDeadline - Date.now()),
		);
		const done = async (ok: boolean) => {
			clearTimeout(deadlineTimer);
			clearTimeout(killTimer);
			// Stopped: the leader may end at once on SIGTERM while the rest of its group goes on; their
			// handlers get a few seconds, then the whole group is killed.
			if (stopped) {
				await new Promise((settle) => setTimeout(settle, 5000));
				signalGroup('SIGKILL');
			}
			if (child.pid) runningGroups.delete(child.pid);
			if (typeof out === 'number') fs.closeSync(out);
			resolve({ ok: ok && !stopped, seconds: (Date.now() - started) / 1000, stopped });
		};
		child.once('error', () => void done(false));
		child.once('exit', (code) => void done(code === 0));
	});
}

// The n8n installs, in the background from the start, one at a time. A cached line answers in a second.
const installs = new Map<string, Promise<RunResult>>();
const background: BackgroundJob[] = [];
{
	let previous: Promise<unknown> = Promise.resolve();
	for (const version of installedLines) {
		const name = `install n8n ${version} (background)`;
		const job: BackgroundJob = { name, startedAt: null, seconds: null, ok: null };
		background.push(job);
		const promise = previous.then(async (): Promise<RunResult> => {
			if (pastDeadline()) {
				say(`[background] ${name}: not started, the run's deadline has passed`);
				Object.assign(job, { ok: false, seconds: 0 });
				return { ok: false, seconds: 0, stopped: true };
			}
			job.startedAt = sinceStart();
			// The default line gates every step that needs n8n: it gets the CPU it asks for. The other
			// lines are needed later: nice, so that the tests running meanwhile come first on 2 cores.
			const niceness = version === n8nVersion ? [] : ['nice', '-n', '10'];
			const result = await run([...niceness, 'bash', 'scripts/ensure-n8n.sh', version], {
				logFile: path.join(resultsDir, 'logs', `install-n8n-${version}.log`),
			});
			Object.assign(job, result);
			say(
				`[background] ${name}: ${result.ok ? 'done' : 'FAILED'} in ${result.seconds.toFixed(0)} s (log: .test-results/logs/install-n8n-${version}.log)`,
			);
			return result;
		});
		installs.set(version, promise);
		previous = promise;
	}
}

/**
 * Waits for the n8n installs of `versions`: each step uses only its own line (an end-to-end tier
 * installs the package by hand with its line's Node and npm), so it need not wait for the others.
 * False (with the reason printed) when one failed.
 */
async function n8nInstalled(versions: string[]): Promise<boolean> {
	let ok = true;
	for (const version of versions) {
		const promise = installs.get(version);
		if (!promise || (await promise).ok) continue;
		say(`n8n ${version} could not be installed: see .test-results/logs/install-n8n-${version}.log`);
		ok = false;
	}
	return ok;
}

// The suites that need n8n installed (n8n-core's engine with the default line's n8n-nodes-base
// nodes, each line's own database schema) run in the construct matrix's step, once the installs
// are done, where a missing install fails them: in the fast suites they would skip whenever those
// end first.
const NEEDS_N8N = 'test/(integration/settle(Constructs|Shapes\\w*|EventsPerDelivery)|unit/store/n8n(Database|TableNames))\\.test\\.ts';
// Three jest workers on two cores: the suites wait on Postgres, files and child processes far more
// than they compute (the fast suites took 287 s in one worker, about 185 s in three).
const jest = ({ workers = 3 }: { workers?: number } = {}): string[] => [
	sqliteNode({ log: say }),
	path.join('node_modules', '.bin', 'jest'),
	`--maxWorkers=${workers}`,
];
// One topology of one tier: a stack of its own (its own work folder, Postgres, ports), so that two run side by side.
const e2eStep = (version: string, tier: string, topology: string): Step => ({
	name: `end to end (n8n ${version}, ${tier} tier, ${topology})`,
	needs: () => n8nInstalled([version]),
	env: {
		N8N_VERSION: version,
		E2E_TIER: tier,
		E2E_TOPOLOGIES: topology,
		E2E_WORK_ROOT: path.join(root, '.e2e', `${version}-${topology}`),
	},
	command: () => ['node', '-r', REGISTER_TS, 'scripts/test-e2e', '--results-dir', path.join(resultsDir, `n8n-${version}`)],
	results: `n8n-${version}/e2e-${topology}.json`,
});

const steps: Step[] = [
	{ name: 'build', command: () => ['npm', 'run', 'build'] },
	{ name: 'lint', command: () => ['npm', 'run', 'lint'] },
	{ name: 'types', command: () => ['npx', 'tsc', '-p', 'tsconfig.test.json', '--noEmit'] },
	{
		// The conformance suite runs every store test on the embedded store too, which needs node:sqlite:
		// jest runs under a Node that has it (test/support/stack/sqliteNode.ts; installed once when missing).
		// The construct matrix and the other suites that need n8n installed (NEEDS_N8N) run in their own step, once it is.
		name: 'unit + integration + conformance (PostgreSQL 18, embedded)',
		command: () => [...jest(), '--testPathIgnorePatterns', NEEDS_N8N, '--json', `--outputFile=${path.join(resultsDir, 'fast.json')}`],
		results: 'fast.json',
	},
	// The versions users run: the conformance suite's Postgres half on each other PostgreSQL line,
	// the lines side by side (each its own server; the suite mostly waits on it).
	{
		name: `conformance, Postgres half (PostgreSQL ${Object.keys(POSTGRES_LINES).join(' and ')}, side by side)`,
		commands: () =>
			Object.keys(POSTGRES_LINES).map((line) => [
				'node',
				'-r',
				REGISTER_TS,
				'scripts/with-postgres',
				line,
				'--',
				...jest({ workers: 2 }),
				'--selectProjects',
				'conformance',
				'--testNamePattern',
				'\\[postgres\\]',
				'--json',
				`--outputFile=${path.join(resultsDir, `conformance-pg${line}.json`)}`,
			]),
		results: Object.keys(POSTGRES_LINES).map((line) => `conformance-pg${line}.json`),
	},
	{
		// The shapes n8n users build (If, Merge, Wait, Loop Over Items, sub-workflows) in n8n-core's engine
		// with the default line's own n8n-nodes-base nodes: it fails, never skips, when they are missing.
		name: `construct matrix (n8n ${n8nVersion}'s own nodes, in-process)`,
		// n8nDatabase and n8nTableNames read every line this run installs: it waits for them all.
		needs: () => n8nInstalled(installedLines),
		env: { IDEMPOTENCY_REQUIRE_N8N: installedLines.join(','), N8N_VERSION: n8nVersion },
		command: () => [
			...jest(),
			'--selectProjects',
			'integration',
			'unit',
			'--testPathPattern',
			NEEDS_N8N,
			'--json',
			`--outputFile=${path.join(resultsDir, 'constructs.json')}`,
		],
		results: 'constructs.json',
	},
	// Benchmarks are not timed tests: this smoke run only proves they still run and count right (uses dist/).
	...(skipBench
		? []
		: [
				{
					name: 'benchmarks (smoke)',
					needs: () => (skipE2e ? true : n8nInstalled([n8nVersion])),
					command: () => ['node', '-r', REGISTER_TS, 'bench/quick', ...(skipE2e ? ['--skip-n8n'] : [])],
				},
			]),
];

/**
 * After the fast suites, the other PostgreSQL lines and the steps that need n8n run side by side,
 * SIDE_BY_SIDE at a time, each taking the next one in this order when a slot frees: the longest
 * first, so that the two slots end close together. Their output goes to a log each, printed whole
 * when the step ends.
 */
const SIDE_BY_SIDE = Math.max(1, Number(process.env.TEST_ALL_SIDE_BY_SIDE ?? 2));
// Queue mode first in each tier: its soak makes it the longest step.
const queueFirst = [...topologies].sort((a, b) => Number(b === 'queue') - Number(a === 'queue'));
const [fullLongest, ...fullOthers] = skipE2e ? [] : queueFirst.map((topology) => e2eStep(n8nVersion, 'full', topology));
// The compatibility tier in one process, then in queue mode: placed after the full tier in one process,
// so that its queue-mode stack starts once the full tier's queue-mode faults and soak are (nearly) over.
const compatibilitySteps = skipE2e
	? []
	: otherVersions.flatMap((version) =>
			[...topologies]
				.sort((a, b) => Number(a === 'queue') - Number(b === 'queue'))
				.map((topology) => e2eStep(version, 'compatibility', topology)),
		);
/** Takes the step whose name starts with `prefix` out of the steps that run one after another. */
function takeStep(prefix: string): Step[] {
	const index = steps.findIndex((step) => step.name.startsWith(prefix));
	return index < 0 ? [] : steps.splice(index, 1);
}
// Only the build runs before the slots (the end-to-end tiers pack dist/). The run is bound by the CPU,
// so neither slot may idle: one slot starts with the fast suites, the other checks the code and runs
// the other PostgreSQL lines (none needs n8n) while the default line installs, then takes the longest
// step, queue mode's full tier, as soon as that install ends. The rest fill the first slot to free,
// longer before shorter.
const sideBySide: Step[] = [
	...takeStep('unit + integration + conformance'),
	...takeStep('lint'),
	...takeStep('types'),
	...takeStep('conformance, Postgres half'),
	...(fullLongest ? [fullLongest] : []),
	...fullOthers,
	...compatibilitySteps,
	...takeStep('construct matrix'),
	...takeStep('benchmarks (smoke)'),
];

async function main(): Promise<void> {
	// Queue mode needs redis-server: get it (or say how to) now, before anything runs, not at the
	// queue-mode suites' global setup an hour in.
	if (!skipE2e && topologies.includes('queue')) {
		const started = Date.now();
		const redis = ensureRedisServer({ log: say });
		if (!redis.ok) {
			say(`\n${redis.message}\n\nNothing was run.`);
			fs.writeFileSync(path.join(resultsDir, 'summary.json'), JSON.stringify({ passed: 0, failed: 1, ok: false }));
			say('0 passed, 1 failed');
			process.exit(1);
		}
		background.unshift({ name: 'redis-server check or install', startedAt: 0, seconds: (Date.now() - started) / 1000, ok: true });
		say(`redis-server for queue mode: ${redis.bin} (${redisServerVersion(redis.bin)})`);
	}

	const report: ReportEntry[] = [];
	for (const step of steps) await runStep(step, report);
	const queue = [...sideBySide];
	say(`\n=== side by side, ${SIDE_BY_SIDE} at a time: ${queue.map((step) => step.name).join('; ')}`);
	await Promise.all(
		Array.from({ length: SIDE_BY_SIDE }, async () => {
			for (let step = queue.shift(); step; step = queue.shift()) await runStep(step, report, { ownLog: SIDE_BY_SIDE > 1 });
		}),
	);
	// A background install no step waited for still counts (a skipped step, or one that failed to start).
	for (const promise of installs.values()) await promise;
	for (const job of background) if (!job.ok) report.push({ name: job.name, ok: false, seconds: job.seconds ?? 0 });

	let passed = 0;
	let failed = 0;
	const tests: TestTime[] = [];
	// Repeated after the summary, as the last lines of the run, where a log cut to its head and tail still shows them.
	const failures: string[] = [];
	const retried: string[] = [];
	say('\n=== summary');
	for (const step of report) {
		let counts = '';
		for (const results of [step.results ?? []].flat()) {
			const file = path.join(resultsDir, results);
			if (fs.existsSync(file)) {
				const result = JSON.parse(fs.readFileSync(file, 'utf8')) as JestResults;
				passed += result.numPassedTests;
				// A suite that could not run (e.g. a setup error) has no test results: count it as a failure.
				failed += result.numFailedTests + result.numRuntimeErrorTestSuites;
				counts += ` (${results}: ${result.numPassedTests} passed, ${result.numFailedTests} failed, ${result.numRuntimeErrorTestSuites} suites errored)`;
				for (const suite of result.testResults) {
					const file = path.relative(root, suite.name);
					if (suite.assertionResults.length === 0 && suite.message)
						failures.push(`${step.name} ${file}: the suite did not run\n${failureHead(suite.message)}`);
					for (const test of suite.assertionResults) {
						if (test.status === 'passed' && test.retryReasons?.length) {
							retried.push(`${step.name} ${file} › ${test.fullName ?? test.title}\n${failureHead(test.retryReasons.join('\n'))}`);
						}
						if (test.status === 'failed') {
							// After a second try the first failure names the cause; the second can be its consequence.
							const first = test.retryReasons?.length
								? `\n    first try:\n${failureHead(test.retryReasons.join('\n'))}\n    second try:`
								: '';
							failures.push(
								`${step.name} ${file} › ${test.fullName ?? test.title}${first}\n${failureHead((test.failureMessages ?? []).join('\n'))}`,
							);
						}
						tests.push({
							step: step.name,
							file,
							title: test.fullName ?? test.title,
							seconds: (test.duration ?? 0) / 1000,
						});
					}
				}
			} else if (!step.ok) {
				failed += 1;
				counts += ` (${results}: no results, the runner did not finish)`;
			}
		}
		// lint, types, build, the benchmark smoke run and the installs have no jest results: each counts as one.
		if (!step.ok && !step.results) failed += 1;
		const cut = step.stopped ? " (stopped by the run's deadline)" : '';
		say(`${step.ok ? 'ok  ' : 'FAIL'} ${step.name} ${(step.seconds ?? 0).toFixed(0)}s${counts}${cut}`);
		if (step.stopped) failures.push(`${step.name}: stopped by the run's deadline (${RUN_BUDGET_SECONDS} s)`);
	}
	writeTimings({ report, tests });
	if (retried.length > 0) say(`\n=== passed on their second try (the first failure below each)\n${retried.join('\n')}`);
	if (failures.length > 0) say(`\n=== failed tests\n${failures.join('\n')}`);
	const allOk = report.every((step) => step.ok);
	fs.writeFileSync(path.join(resultsDir, 'summary.json'), JSON.stringify({ passed, failed, ok: allOk }));
	say(`${passed} passed, ${failed} failed`);
	process.exit(allOk && failed === 0 ? 0 : 1);
}

/**
 * Runs one step once what it needs is there, and adds it to the report. With `ownLog` its output
 * goes to .test-results/logs/<step>.log, printed whole when it ends (steps side by side would
 * interleave their lines).
 */
async function runStep(step: Step, report: ReportEntry[], { ownLog = false }: { ownLog?: boolean } = {}): Promise<void> {
	const started = Date.now();
	const entry: ReportEntry = { name: step.name, results: step.results, startedAt: sinceStart(), waited: 0 };
	report.push(entry);
	// What a step needs ends by the deadline too (the installs are stopped then).
	const ready = step.needs ? await step.needs() : true;
	entry.waited = (Date.now() - started) / 1000;
	if (pastDeadline()) {
		say(`\n=== ${step.name}: not run, the run's deadline (${RUN_BUDGET_SECONDS} s) has passed`);
		Object.assign(entry, { ok: false, seconds: entry.waited, stopped: true });
		return;
	}
	if (!ready) {
		say(`\n=== ${step.name}: not run, what it needs is missing`);
		Object.assign(entry, { ok: false, seconds: entry.waited });
		return;
	}
	let commands: string[][];
	try {
		commands = step.commands ? step.commands() : [(step.command as () => string[])()];
	} catch (error) {
		say(`\n=== ${step.name}: could not start: ${error instanceof Error ? error.message : String(error)}`);
		Object.assign(entry, { ok: false, seconds: (Date.now() - started) / 1000 });
		return;
	}
	const logFile = ownLog ? path.join(resultsDir, 'logs', `${step.name.replace(/[^\w.-]+/g, '-')}.log`) : undefined;
	for (const command of commands) say(`\n=== ${step.name}${logFile ? ' (started)' : ''}: ${command.join(' ')}`);
	// A failing end-to-end test gets a second try (test/support/retry.ts).
	const env = { ...step.env, TEST_RETRY_TIMES: '1', IDEMPOTENCY_TIMINGS_FILE: timingsFile, IDEMPOTENCY_TIMINGS_STEP: step.name };
	// Several commands of one step run side by side; the step passes when every one does.
	const results = await Promise.all(commands.map((command) => run(command, { env, logFile })));
	Object.assign(entry, {
		ok: results.every((result) => result.ok),
		seconds: (Date.now() - started) / 1000,
		stopped: results.some((result) => result.stopped),
	});
	if (logFile) {
		say(`\n=== ${step.name}: ${entry.ok ? 'passed' : 'FAILED'} in ${(entry.seconds ?? 0).toFixed(0)} s; its output:`);
		say(fs.readFileSync(logFile, 'utf8'));
	}
}

const WHOLE_RUN = 'the whole run (after npm ci)';
const RECORDED_TIMES = path.join(root, 'docs', 'testing.md');

/** The table of where the time went, printed and kept in .test-results/timings.{txt,json}. */
function writeTimings({ report, tests }: { report: ReportEntry[]; tests: TestTime[] }): void {
	const phases = readPhases(timingsFile);
	const slowest = [...tests].sort((a, b) => b.seconds - a.seconds).slice(0, 15);
	const lines = ['', '=== where the time went (seconds)', ''];
	const row = (seconds: number, label: string) => `${seconds.toFixed(0).padStart(6)}  ${label}`;
	lines.push('steps, one after another (started at; waited for its install):');
	for (const step of report) {
		const waited = (step.waited ?? 0) >= 1 ? `, waited ${(step.waited ?? 0).toFixed(0)} s` : '';
		lines.push(row(step.seconds ?? 0, `${step.name} (at ${(step.startedAt ?? 0).toFixed(0)} s${waited})${step.ok ? '' : ' FAILED'}`));
	}
	lines.push('', 'in the background, beside the steps:');
	for (const job of background) lines.push(row(job.seconds ?? 0, `${job.name} (at ${(job.startedAt ?? 0).toFixed(0)} s)`));
	lines.push('', 'inside the steps (installs, Postgres, Redis and n8n starts):');
	for (const phase of phases) lines.push(row(phase.seconds, `${phase.phase} — ${phase.step ?? ''}`));
	lines.push('', 'the slowest tests:');
	for (const test of slowest) lines.push(row(test.seconds, `${test.file} › ${test.title} — ${test.step}`));
	lines.push('', row(sinceStart(), 'the whole run (after npm ci)'));
	lines.push(
		...growthWarnings(fs.existsSync(RECORDED_TIMES) ? fs.readFileSync(RECORDED_TIMES, 'utf8') : '', [
			...report.map((step) => ({ name: step.name, seconds: step.seconds ?? 0 })),
			{ name: WHOLE_RUN, seconds: sinceStart() },
		]),
	);
	const text = `${lines.join('\n')}\n`;
	process.stdout.write(text);
	fs.writeFileSync(path.join(resultsDir, 'timings.txt'), text);
	fs.writeFileSync(
		path.join(resultsDir, 'timings.json'),
		JSON.stringify(
			{
				totalSeconds: sinceStart(),
				steps: report.map(({ name, ok, seconds, startedAt, waited }) => ({ name, ok, seconds, startedAt, waited })),
				background,
				phases,
				slowest,
			},
			null,
			2,
		),
	);
}

main().catch((error: unknown) => {
	say(`test-all: ${error instanceof Error ? (error.stack ?? error) : error}`);
	say('0 passed, 1 failed');
	process.exit(1);
});
