// Smoke run of every benchmark at tiny sizes, so they cannot rot: `npm run bench:quick`.
// Not a timed test: a missed performance target does not fail it; a crash, a wrong count (the
// benchmarks check what they reserved) or a missing section of the report does. Exit code 0 when
// everything ran, 1 otherwise. --skip-n8n leaves out the n8n benchmark (it needs the cached n8n
// install from scripts/ensure-n8n.sh and takes a few minutes, mostly n8n's own start).
import { spawn } from 'node:child_process';
import path from 'node:path';

const ROOT = path.join(__dirname, '..');
// The benchmarks are TypeScript: each child loads the hook that transpiles them as they are required.
const REGISTER_TS = path.join(ROOT, 'test', 'support', 'register-ts.js');

interface QuickRun {
	name: string;
	/** Needs the cached n8n install: left out by --skip-n8n. */
	n8n?: boolean;
	args: string[];
	/** Text the run's output must contain: a missing section is a failure. */
	sections: string[];
}

interface QuickResult {
	name: string;
	ok: boolean;
	code: number | null;
	signal: NodeJS.Signals | null;
	missing: string[];
	seconds: string;
}

const RUNS: QuickRun[] = [
	{
		name: 'bench/run.ts --quick',
		args: ['-r', REGISTER_TS, path.join(__dirname, 'run.ts'), '--quick'],
		sections: [
			'TARGET', // the core-vs-pg verdict line
			"## The reserve statement vs the recipe's minimal insert",
			'## Table growth',
			'## Cleanup under load',
			'## Cleanup statement',
			'## Bloat after',
			'## Output size',
			'## Prepared statements',
			// The embedded store beside Postgres, run by a Node with node:sqlite (bench/sqliteNode.ts).
			'## Embedded vs Postgres: reserve',
			'## Single store calls on a table of',
			'## Delete Expired Keys:',
		],
	},
	{
		name: 'bench/n8n/run.ts --quick',
		n8n: true,
		args: ['-r', REGISTER_TS, path.join(__dirname, 'n8n', 'run.ts'), '--quick'],
		sections: [
			'## Per-execution overhead',
			'Store Payload on vs off',
			'Reserve (Embedded, permanent) vs a No Operation node',
			'## Batch:',
			'Idempotency Reserve, Embedded (key source: field id)',
			'## One 2,000-item execution',
			'## Delete Expired Keys inside n8n',
		],
	},
];

function runOne(run: QuickRun): Promise<QuickResult> {
	return new Promise((resolve) => {
		const started = Date.now();
		const child = spawn(process.execPath, run.args, {
			cwd: ROOT,
			stdio: ['ignore', 'pipe', 'inherit'],
		});
		let stdout = '';
		child.stdout.on('data', (chunk: Buffer) => {
			stdout += chunk;
			process.stdout.write(chunk);
		});
		child.on('close', (code, signal) => {
			const missing = run.sections.filter((section) => !stdout.includes(section));
			const seconds = ((Date.now() - started) / 1000).toFixed(0);
			resolve({
				name: run.name,
				ok: code === 0 && missing.length === 0,
				code,
				signal,
				missing,
				seconds,
			});
		});
	});
}

async function main(): Promise<number> {
	const skipN8n = process.argv.includes('--skip-n8n');
	const results: QuickResult[] = [];
	for (const run of RUNS) {
		if (run.n8n && skipN8n) continue;
		process.stdout.write(`\n=== ${run.name}\n`);
		results.push(await runOne(run));
	}
	process.stdout.write('\n=== bench:quick summary\n');
	for (const r of results) {
		const why = r.ok ? '' : ` (exit ${r.code ?? r.signal}${r.missing.length ? `; missing: ${r.missing.join(' | ')}` : ''})`;
		process.stdout.write(`${r.ok ? 'ok  ' : 'FAIL'} ${r.name} ${r.seconds}s${why}\n`);
	}
	return results.every((r) => r.ok) ? 0 : 1;
}

main().then((code) => process.exit(code));
