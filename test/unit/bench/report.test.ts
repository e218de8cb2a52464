import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

// BENCHMARKS.md's figures and plots are generated from the recorded runs in bench/results by
// bench/report.ts; these tests keep the page, the plots and the data from drifting apart.
const ROOT = path.join(__dirname, '..', '..', '..');
const REPORT = path.join(ROOT, 'bench', 'report.ts');
// The report is TypeScript: its process loads the hook that transpiles it.
const REGISTER_TS = path.join(ROOT, 'test', 'support', 'register-ts.js');
const PLOTS = ['bench-throughput-per-flow.svg', 'bench-keys-per-second.svg', 'bench-latency-vs-table-size.svg'];

function report(...args: string[]) {
	const result = spawnSync(process.execPath, ['-r', REGISTER_TS, REPORT, '--check', ...args], { encoding: 'utf8' });
	return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

/** A copy of the page, its plots and the data, to change one of them without touching the tree. */
function copyOfTheTree(): { root: string; results: string } {
	const root = mkdtempSync(path.join(tmpdir(), 'bench-report-'));
	cpSync(path.join(ROOT, 'BENCHMARKS.md'), path.join(root, 'BENCHMARKS.md'));
	for (const plot of PLOTS) cpSync(path.join(ROOT, 'docs', 'images', plot), path.join(root, 'docs', 'images', plot));
	cpSync(path.join(ROOT, 'bench', 'results'), path.join(root, 'results'), { recursive: true });
	return { root, results: path.join(root, 'results') };
}

describe('BENCHMARKS.md from bench/results', () => {
	let copy: { root: string; results: string };
	beforeEach(() => {
		copy = copyOfTheTree();
	});
	afterEach(() => rmSync(copy.root, { recursive: true, force: true }));

	it('the page and its plots are what the recorded runs give', () => {
		expect(report()).toEqual({ status: 0, output: 'up to date\n' });
	});

	it('a figure edited by hand on the page fails the check', () => {
		const page = path.join(copy.root, 'BENCHMARKS.md');
		const text = readFileSync(page, 'utf8');
		expect(text).toContain('| 54,469 |');
		writeFileSync(page, text.replace('| 54,469 |', '| 60,000 |'));
		const result = report('--root', copy.root, '--results', copy.results);
		expect(result.status).toBe(1);
		expect(result.output).toContain('out of date with bench/results: BENCHMARKS.md');
	});

	it('a recorded figure the page and plots do not show fails the check', () => {
		const file = path.join(copy.results, '2026-11-30-batch.json');
		const run = JSON.parse(readFileSync(file, 'utf8')) as { rows: Array<{ node: string; keysPerS: number | null }> };
		const field = run.rows.find((row) => row.node.includes('Field'));
		expect(field?.keysPerS).toBe(54469);
		field!.keysPerS = 60000;
		writeFileSync(file, JSON.stringify(run));
		const result = report('--root', copy.root, '--results', copy.results);
		expect(result.status).toBe(1);
		expect(result.output).toContain('BENCHMARKS.md, docs/images/bench-keys-per-second.svg');
	});

	it('a recorded run without a table on the page fails', () => {
		const run = JSON.parse(readFileSync(path.join(copy.results, '2026-11-30-bloat.json'), 'utf8')) as { id: string };
		writeFileSync(path.join(copy.results, '2026-12-01-bloat-again.json'), JSON.stringify({ ...run, id: 'bloat-again' }));
		const result = report('--root', copy.root, '--results', copy.results);
		expect(result.status).toBe(1);
		expect(result.output).toContain('BENCHMARKS.md shows no table for bloat-again');
	});
});
