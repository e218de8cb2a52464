import { spawnSync } from 'node:child_process';
import path from 'node:path';

// `npx jest` as a contributor types it, with the Node on PATH (the README's 20.15+, which may have no
// node:sqlite): the embedded store's tests still run, under a Node that has the module.
const ROOT = path.join(__dirname, '..', '..');

describe('jest on a Node without node:sqlite', () => {
	it('runs an embedded-store test file to a pass with the Node on PATH', () => {
		const pathNode = spawnSync(
			'node',
			['-p', "(() => { try { return typeof require('node:sqlite').DatabaseSync } catch { return 'missing' } })()"],
			{ encoding: 'utf8' },
		);
		const hasSqlite = pathNode.stdout.trim() === 'function';
		const env = { ...process.env };
		delete env.IDEMPOTENCY_JEST_ON_SQLITE_NODE;
		const run = spawnSync(
			'node',
			[
				path.join(ROOT, 'node_modules', '.bin', 'jest'),
				'test/unit/nodes/embeddedStoreInEngine.test.ts',
				'-t',
				'reserve and complete',
				'--selectProjects',
				'unit',
			],
			{ cwd: ROOT, encoding: 'utf8', env, timeout: 120_000 },
		);
		expect({ status: run.status, tail: run.stderr.slice(-1500) }).toMatchObject({ status: 0 });
		expect(run.stderr).toMatch(/Test Suites: (\d+ skipped, )?1 passed, 1 total/);
		expect(run.stderr).toMatch(/Tests: .*\b1 passed/);
		// Where the PATH's Node lacks the module (this machine's Node 20), the run says which Node took over.
		if (!hasSqlite) expect(run.stderr).toMatch(/has no node:sqlite: running jest under \S+/);
	}, 150_000);
});
