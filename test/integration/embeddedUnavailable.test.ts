import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/*
 * Where node:sqlite cannot be loaded, the package still loads, and opening an embedded store
 * fails with EmbeddedStoreUnavailableError naming the Node version needed and the Postgres store.
 * Real Node processes: this Node started with --no-experimental-sqlite, and Node 20 (no node:sqlite).
 */

const REGISTER = path.join(__dirname, '..', 'support', 'register-ts.js');
const EMBEDDED = path.join(__dirname, '..', '..', 'lib', 'store', 'embedded', 'index.ts');
let folder: string;

beforeAll(() => {
	folder = mkdtempSync(path.join(tmpdir(), 'embedded-unavailable-'));
});
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** Loads the package's embedded module in `node` with `flags`, then tries to open a store; prints what happened. */
function tryOpen(
	node: string,
	flags: string[],
): { loaded: boolean; name?: string; message?: string; fileCreated: boolean; stderr: string } {
	const file = path.join(folder, `keys-${flags.length}-${path.basename(node)}-${Math.random().toString(36).slice(2)}.sqlite`);
	const script = `
		const embedded = require(${JSON.stringify(EMBEDDED)});
		const store = embedded.openEmbeddedKeyStore({ file: process.argv[1] });
		store.ready().then(
			() => console.log(JSON.stringify({ loaded: true })),
			(error) => console.log(JSON.stringify({ loaded: true, name: error.name, message: error.message, isUnavailable: error instanceof embedded.EmbeddedStoreUnavailableError })),
		);
	`;
	const run = spawnSync(node, [...flags, '-r', REGISTER, '-e', script, file], { encoding: 'utf8', timeout: 60_000 });
	const line = run.stdout.trim().split('\n').pop() ?? '';
	return { ...(line ? JSON.parse(line) : { loaded: false }), fileCreated: existsSync(file), stderr: run.stderr };
}

it('Node 24 started with --no-experimental-sqlite: the package loads; opening a store names the Node version needed and Postgres', () => {
	const result = tryOpen(process.execPath, ['--no-experimental-sqlite']);
	expect(result).toMatchObject({ loaded: true, name: 'EmbeddedStoreUnavailableError', isUnavailable: true, fileCreated: false });
	expect(result.message).toMatch(/node:sqlite/);
	expect(result.message).toMatch(/Node 22\.13 or later.*23\.4 or later/);
	expect(result.message).toMatch(/--no-experimental-sqlite/);
	expect(result.message).toMatch(/choose the Postgres store/);
});

// The machine's Node 20 (see the project's README on Node versions); skipped where there is none.
const NODE_20 = ['/usr/bin/node', '/usr/local/bin/node'].find((candidate) => {
	if (!existsSync(candidate)) return false;
	const version = spawnSync(candidate, ['--version'], { encoding: 'utf8' }).stdout.trim();
	return version.startsWith('v20.');
});

(NODE_20 ? it : it.skip)(
	'Node 20 (no node:sqlite at all): the package loads; opening a store names the Node version needed and Postgres',
	() => {
		const result = tryOpen(NODE_20!, []);
		expect(result).toMatchObject({ loaded: true, name: 'EmbeddedStoreUnavailableError', isUnavailable: true, fileCreated: false });
		expect(result.message).toMatch(/Node v20\.\d+\.\d+ does not provide/);
		expect(result.message).toMatch(/choose the Postgres store/);
	},
);
