#!/usr/bin/env node
// The whole check, as CI runs it: lint, types, build, unit + integration + conformance tests (real
// Postgres, and the embedded store on a Node with node:sqlite), and the end-to-end suite (real n8n).
// Every step runs even when an earlier one fails, so one run shows everything that is wrong; the exit
// code is non-zero if anything failed. Jest's results are kept in .test-results/ and summed into one
// closing line "N passed, N failed". Queue mode's redis-server is checked first: installed with apt
// when missing and we run as root, else nothing runs.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const resultsDir = path.join(root, '.test-results');
fs.rmSync(resultsDir, { recursive: true, force: true });
fs.mkdirSync(resultsDir, { recursive: true });

const skipE2e = process.argv.includes('--skip-e2e');
// `--n8n-version=1.123.81` (or N8N_VERSION) picks the n8n the end-to-end suite runs; jest takes no unknown flags.
const { selectedN8nVersion, PROVEN_N8N_VERSIONS } = require('../test/support/stack/n8nVersion');
const { sqliteNode } = require('../test/support/stack/sqliteNode');
const n8nVersion = selectedN8nVersion();
// Every other proven n8n line (test/support/stack/n8nVersion.js) runs the suite in both topologies too, with
// the short soak (same assertions, 1,000 deliveries instead of 5,000); --skip-other-n8n skips them.
const otherVersions = process.argv.includes('--skip-other-n8n') ? [] : PROVEN_N8N_VERSIONS.filter((version) => version !== n8nVersion);
const topologies = (process.env.E2E_TOPOLOGIES ?? 'single,queue').split(',').map((t) => t.trim());
const steps = [
	{ name: 'lint', command: ['npx', 'n8n-node', 'lint'] },
	{ name: 'types', command: ['npx', 'tsc', '-p', 'tsconfig.test.json', '--noEmit'] },
	{ name: 'build', command: ['npm', 'run', 'build'] },
	{
		// The conformance suite runs every store test on the embedded store too, which needs node:sqlite:
		// jest runs under a Node that has it (test/support/stack/sqliteNode.js; installed once when missing).
		name: 'unit + integration + conformance',
		command: () => [sqliteNode({ log: (line) => process.stdout.write(`${line}\n`) }), path.join('node_modules', '.bin', 'jest'), '--json', `--outputFile=${path.join(resultsDir, 'fast.json')}`],
		results: 'fast.json',
	},
	// Benchmarks are not timed tests: this smoke run only proves they still run and count right (uses dist/).
	{ name: 'benchmarks (smoke)', command: ['node', 'bench/quick.js', ...(skipE2e ? ['--skip-n8n'] : [])] },
	...(skipE2e
		? []
		: [
				{
					// Both n8n topologies (one process; queue mode with Redis and two workers): scripts/test-e2e.js.
					name: `end to end (n8n ${n8nVersion})`,
					env: { N8N_VERSION: n8nVersion },
					command: ['node', 'scripts/test-e2e.js', '--results-dir', resultsDir],
					results: topologies.map((t) => `e2e-${t}.json`),
				},
				...otherVersions.map((version) => ({
					name: `end to end (n8n ${version}, short soak)`,
					env: { N8N_VERSION: version, E2E_SHORT_SOAK: '1' },
					command: ['node', 'scripts/test-e2e.js', '--results-dir', path.join(resultsDir, `n8n-${version}`)],
					results: topologies.map((t) => `n8n-${version}/e2e-${t}.json`),
				})),
			]),
];

// Queue mode needs redis-server: get it (or say how to) now, before anything runs, not at the
// queue-mode suites' global setup an hour in.
if (!skipE2e && topologies.includes('queue')) {
	const { ensureRedisServer, redisServerVersion } = require('../test/support/stack/redisServer');
	const redis = ensureRedisServer({ log: (line) => process.stdout.write(`${line}\n`) });
	if (!redis.ok) {
		process.stdout.write(`\n${redis.message}\n\nNothing was run.\n`);
		fs.writeFileSync(path.join(resultsDir, 'summary.json'), JSON.stringify({ passed: 0, failed: 1, ok: false }));
		process.stdout.write('0 passed, 1 failed\n');
		process.exit(1);
	}
	process.stdout.write(`redis-server for queue mode: ${redis.bin} (${redisServerVersion(redis.bin)})\n`);
}

const report = [];
for (const step of steps) {
	const started = Date.now();
	let command;
	try {
		command = typeof step.command === 'function' ? step.command() : step.command;
	} catch (error) {
		process.stdout.write(`\n=== ${step.name}: could not start: ${error.message}\n`);
		report.push({ ...step, ok: false, seconds: ((Date.now() - started) / 1000).toFixed(0) });
		continue;
	}
	process.stdout.write(`\n=== ${step.name}: ${command.join(' ')}\n`);
	const run = spawnSync(command[0], command.slice(1), { cwd: root, stdio: 'inherit', env: { ...process.env, ...step.env } });
	const seconds = ((Date.now() - started) / 1000).toFixed(0);
	report.push({ ...step, ok: run.status === 0, seconds });
}

let passed = 0;
let failed = 0;
process.stdout.write('\n=== summary\n');
for (const step of report) {
	let counts = '';
	for (const results of [step.results ?? []].flat()) {
		const file = path.join(resultsDir, results);
		if (fs.existsSync(file)) {
			const result = JSON.parse(fs.readFileSync(file, 'utf8'));
			passed += result.numPassedTests;
			// A suite that could not run (e.g. a setup error) has no test results: count it as a failure.
			failed += result.numFailedTests + result.numRuntimeErrorTestSuites;
			counts += ` (${results}: ${result.numPassedTests} passed, ${result.numFailedTests} failed, ${result.numRuntimeErrorTestSuites} suites errored)`;
		} else if (!step.ok) {
			failed += 1;
			counts += ` (${results}: no results, the runner did not finish)`;
		}
	}
	process.stdout.write(`${step.ok ? 'ok  ' : 'FAIL'} ${step.name} ${step.seconds}s${counts}\n`);
}
const allOk = report.every((step) => step.ok);
fs.writeFileSync(path.join(resultsDir, 'summary.json'), JSON.stringify({ passed, failed, ok: allOk }));
process.stdout.write(`${passed} passed, ${failed} failed\n`);
process.exit(allOk && failed === 0 ? 0 : 1);
