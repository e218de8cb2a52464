// The README's `npm run demo`, run as a newcomer runs it, to its end: what `npm run demo -- --once`
// runs (`node -r ./test/support/register-ts.js scripts/demo --once`), in a folder of its own (its own
// embedded Postgres, n8n from the cache the suite already uses, the packed package installed by
// hand), the Idempotent Webhook trigger template published, the demo acting as Stripe. Checks what
// the demo prints, the tables the README promises: each delivery's answer and the execution it
// started, and per event one execution and one call to the API — the copies, the burst and the
// forgery started none — and that it stopped n8n and Postgres on exit.
// Not through test/support/e2e/harness.js: the demo starts and stops a stack of its own. One
// topology, the newest n8n line: what a newcomer's first command runs.
// e2e-tags: single
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import * as stack from '../support/stack/n8nStack';
import { freePort } from '../support/stack/postgresServer';
import { E2E_ROOT } from '../support/e2e/paths';

/** test/support/register-ts.js: `npm run demo` runs the demo with it (node -r …), so the demo's TypeScript runs from source. */
const REGISTER_TS = path.join(stack.REPO_ROOT, 'test', 'support', 'register-ts.js');

/** Runs the demo to its exit: { code, output, seconds }. */
function runDemo(demoArgs: string[]): Promise<{ code: number | null; output: string; seconds: number }> {
	const started = Date.now();
	return new Promise((resolve, reject) => {
		const child = spawn(process.execPath, ['-r', REGISTER_TS, path.join(stack.REPO_ROOT, 'scripts', 'demo'), ...demoArgs], {
			cwd: stack.REPO_ROOT,
			stdio: ['ignore', 'pipe', 'pipe'],
		});
		let output = '';
		child.stdout.on('data', (chunk) => (output += chunk));
		child.stderr.on('data', (chunk) => (output += chunk));
		child.on('error', reject);
		child.on('close', (code) => resolve({ code, output, seconds: (Date.now() - started) / 1000 }));
	});
}

/** The rows of the printed table whose header row starts with `first` (cells trimmed), up to the first line that is not a row. */
function tableRows(output: string, first: string): string[][] {
	const lines = output.split('\n');
	const header = lines.findIndex((line) => line.trim().startsWith(`${first} `) && line.includes('│'));
	if (header < 0) return [];
	const rows: string[][] = [];
	for (const line of lines.slice(header + 2)) {
		if (!line.includes('│')) break;
		rows.push(line.split('│').map((cell) => cell.trim()));
	}
	return rows;
}

const connects = (port: number) =>
	new Promise<boolean>((resolve) => {
		const socket = net.connect(port, '127.0.0.1');
		socket.once('connect', () => socket.destroy() || resolve(true));
		socket.once('error', () => resolve(false));
	});

describe('npm run demo -- --once (the README command), as a newcomer runs it', () => {
	let dir: string | undefined;
	afterAll(() => dir && fs.rmSync(dir, { recursive: true, force: true }));

	test('the trigger answers the copies, the burst and the forgery without an execution: one execution and one API call per event', async () => {
		dir = path.join(E2E_ROOT, `demo-${Date.now().toString(36)}`);
		const port = await freePort();
		const run = await runDemo(['--once', '--dir', dir, '--port', String(port)]);
		process.stderr.write(`[demo] exit ${run.code} after ${run.seconds.toFixed(1)} s\n`);
		const context = `\n--- the demo's output ---\n${run.output.slice(-6000)}`;
		if (run.code !== 0) throw new Error(`the demo exited ${run.code}${context}`);
		expect(run.output).toContain('templates/idempotent-webhook-trigger.json');

		const answers = tableRows(run.output, 'delivery').map(([delivery, , answer, execution]) => [delivery, answer, execution]);
		expect(answers).toEqual([
			['1. event A', '200 new', expect.stringMatching(/^#\d+$/)],
			[expect.stringMatching(/^2\. A again/), '200 duplicate', expect.stringMatching(/^none/)],
			['3. event B', '200 new', expect.stringMatching(/^#\d+$/)],
			['4. event C, forged (wrong secret)', expect.stringMatching(/^401 invalid_signature/), 'none'],
			['5. event C, genuine', '200 new', expect.stringMatching(/^#\d+$/)],
			['6. a body without id', '200 new', expect.stringMatching(/^#\d+$/)],
			['7. the same body without id again', '200 duplicate', expect.stringMatching(/^none/)],
			[
				'8. event D, 20 copies at once',
				expect.stringMatching(/^1× 200 new(, \d+× 409 in_progress)?(, \d+× 200 duplicate)?$/),
				expect.stringMatching(/^#\d+$/),
			],
			// The copies answered 409 while D ran, retried like Stripe (absent when none was answered 409).
			...answers
				.slice(8)
				.map(() => [expect.stringMatching(/^9\. the \d+ answered 409, retried$/), expect.stringMatching(/^\d+× 200 duplicate$/), 'none']),
		]);

		// event, requests, n8n executions, API calls, key status (attempts, duplicates)
		const events = tableRows(run.output, 'event').map(
			([event, , requests, executions, calls, key]): [string, number, number, number, string] => [
				event,
				Number(requests),
				Number(executions),
				Number(calls),
				key,
			],
		);
		const burstRequests = events.find(([event]) => event === 'D')?.[1];
		expect(burstRequests).toBeGreaterThanOrEqual(20);
		expect(events).toEqual([
			['A', 2, 1, 1, 'completed (1, 1)'],
			['B', 1, 1, 1, 'completed (1, 0)'],
			['C forged', 1, 0, 0, 'nothing stored'],
			['C', 1, 1, 1, 'completed (1, 0)'],
			['no id', 2, 1, 1, 'completed (1, 1)'],
			['D', burstRequests, 1, 1, `completed (1, ${burstRequests! - 1})`],
		]);
		expect(run.output).toContain(`${burstRequests! + 7} requests → 5 n8n executions, 5 calls to your API`);

		// It stopped what it started: n8n's port is closed, Postgres's data dir has no live postmaster.
		expect(await connects(port)).toBe(false);
		expect(fs.existsSync(path.join(dir, 'pg', 'postmaster.pid'))).toBe(false);
	});
});
