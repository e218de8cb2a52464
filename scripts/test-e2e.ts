#!/usr/bin/env node
// The end-to-end suite in both n8n topologies, one after the other: 'single' (one n8n process) and
// 'queue' (n8n's queue mode: Redis, main, two workers). E2E_TOPOLOGIES=queue (or single) runs one;
// extra arguments go to jest (e.g. a test file). With --results-dir DIR, each topology's jest
// results are written to DIR/e2e-<topology>.json. Prints each test's time and each topology's total.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Jest's --json results: what this script reads of them. */
interface JestResults {
	testResults: Array<{ name: string; assertionResults: Array<{ title: string; status: string; duration?: number | null }> }>;
}

const root = path.join(__dirname, '..');
const args = process.argv.slice(2);
const resultsAt = args.indexOf('--results-dir');
const resultsDir = resultsAt >= 0 ? path.resolve(args[resultsAt + 1]) : null;
if (resultsDir) fs.mkdirSync(resultsDir, { recursive: true });
const jestArgs = resultsAt >= 0 ? args.filter((_, i) => i !== resultsAt && i !== resultsAt + 1) : args;
const topologies = (process.env.E2E_TOPOLOGIES ?? 'single,queue')
	.split(',')
	.map((t) => t.trim())
	.filter(Boolean);

let failed = false;
const totals: Array<{ topology: string; seconds: number; ok: boolean }> = [];
for (const topology of topologies) {
	const started = Date.now();
	const outputFile = path.join(resultsDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'e2e-')), `e2e-${topology}.json`);
	process.stdout.write(`\n=== end to end, topology ${topology}\n`);
	const run = spawnSync(
		'npx',
		// --forceExit: a test cut by its timeout can leave a socket or a timer open, and jest would then
		// wait for it forever after the last test (its results are written by then).
		['jest', '--config', 'jest.e2e.config.js', '--verbose', '--forceExit', '--json', `--outputFile=${outputFile}`, ...jestArgs],
		{
			cwd: root,
			stdio: 'inherit',
			env: { ...process.env, E2E_TOPOLOGY: topology },
		},
	);
	const seconds = (Date.now() - started) / 1000;
	if (run.status !== 0) failed = true;
	totals.push({ topology, seconds, ok: run.status === 0 });
	if (fs.existsSync(outputFile)) {
		const result = JSON.parse(fs.readFileSync(outputFile, 'utf8')) as JestResults;
		process.stdout.write(`\n--- ${topology}: time per test\n`);
		for (const file of result.testResults) {
			for (const test of file.assertionResults) {
				process.stdout.write(
					`${String(((test.duration ?? 0) / 1000).toFixed(1)).padStart(7)} s  ${test.status.padEnd(7)} ${path.relative(root, file.name)} › ${test.title}\n`,
				);
			}
		}
	}
}
process.stdout.write('\n--- end to end totals (stack start, tests, stop)\n');
for (const t of totals) process.stdout.write(`${t.ok ? 'ok  ' : 'FAIL'} ${t.topology} ${t.seconds.toFixed(0)} s\n`);
process.stdout.write(`all topologies: ${totals.reduce((sum, t) => sum + t.seconds, 0).toFixed(0)} s\n`);
process.exit(failed ? 1 : 0);
