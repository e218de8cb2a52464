// The README's manual install, run as a user runs it: `npm install <package>` in a fresh n8n nodes
// folder, no flags, with the Node and npm of each proven n8n line (Node 22 + npm 10 for 1.x,
// Node 24 + npm 11 for 2.x). The package is not on the registry yet, so <package> is the packed
// tarball. npm >= 7 installs peer dependencies: a required peer n8n-workflow would bring a second
// n8n-workflow (the latest 2.x) and with it isolated-vm, a native addon that needs Node 24 and a
// compiler. So: the install exits 0, installs neither, and every node and credential loads against
// the n8n-workflow of the n8n it targets, found the way n8n offers it to packages (NODE_PATH).
// Not through test/support/e2e/harness.js: that talks to the suite's running n8n, and this test
// needs none — it installs into a fresh nodes folder of its own with the line's own Node and npm.
// Each tier runs it for its own line: the full tier for the newest, the compatibility tier for the others.
// e2e-tags: single compatibility:single
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as stack from '../support/stack/n8nStack';
import { selectedN8nVersion } from '../support/stack/n8nVersion';
import { CACHE_DIR, installIntoCache } from '../support/stack/cache';

// The options of these JavaScript helpers, typed from their parameters (which name only the options
// with a default, and type `log` from a default that returns a boolean).
type PackOptions = Parameters<typeof stack.buildAndPack>[0];
type N8nOptions = Parameters<typeof stack.ensureN8n>[0];
/** What LOAD_SCRIPT prints. */
interface Loaded {
	nodes: string[];
	credentials: string[];
	workflowDir: string;
	workflowVersion: string;
}

/** The npm a user has with each Node major: the one that Node release line ships. */
const NPM_FOR_NODE_MAJOR: Record<number, string> = { 22: '10.9.9', 24: '11.21.2' };

/** A user's shell: none of the npm_* settings that `npm run`/npx export (the repo's ignore-scripts among them). */
function userEnv(nodeBin: string): NodeJS.ProcessEnv {
	const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key)));
	delete env.NODE_OPTIONS;
	delete env.NODE_PATH;
	return { ...env, PATH: `${nodeBin}${path.delimiter}${process.env.PATH}` };
}

/** npm-cli.js of the given npm version, installed once into the cache. */
function ensureNpm(version: string): string {
	const dir = path.join(CACHE_DIR, `npm-${version}`);
	const cli = path.join(dir, 'node_modules', 'npm', 'bin', 'npm-cli.js');
	installIntoCache({ dir, spec: `npm@${version}`, entry: cli });
	return cli;
}

/** Requires every file of the package's `n8n` manifest with n8n's node_modules on NODE_PATH; returns what loaded. */
const LOAD_SCRIPT = `
const path = require('node:path');
const pkgDir = process.argv[1];
const manifest = require(path.join(pkgDir, 'package.json')).n8n;
const load = (file) => Object.values(require(path.join(pkgDir, file))).find((v) => typeof v === 'function');
const nodes = manifest.nodes.map((file) => new (load(file))().description.name);
const credentials = manifest.credentials.map((file) => new (load(file))().name);
// Which n8n-workflow the node files loaded: the copy in require's cache.
const workflowMain = Object.keys(require.cache).find((file) => file.includes('/node_modules/n8n-workflow/'));
const workflowDir = workflowMain.slice(0, workflowMain.indexOf('/node_modules/n8n-workflow/') + '/node_modules/n8n-workflow'.length);
console.log(JSON.stringify({ nodes, credentials, workflowDir, workflowVersion: require(path.join(workflowDir, 'package.json')).version }));
`;

describe('the README manual install (cd ~/.n8n/nodes && npm install n8n-nodes-idempotency)', () => {
	let tarball: string;
	let workRoot: string;
	beforeAll(() => {
		workRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'idem-manual-install-'));
		tarball = stack.buildAndPack({ outDir: path.join(workRoot, 'pack'), log: () => {} } as unknown as PackOptions);
	});
	afterAll(() => fs.rmSync(workRoot, { recursive: true, force: true }));

	test.each([selectedN8nVersion()])(
		'for n8n %s: exits 0, no second n8n-workflow, no isolated-vm, every node and credential loads',
		(version) => {
			const { dir: n8nDir, nodeBin } = stack.ensureN8n({ version, log: () => {} } as N8nOptions);
			const node = path.join(nodeBin, 'node');
			const nodeMajor = Number(spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim().slice(1).split('.')[0]);
			const npmCli = ensureNpm(NPM_FOR_NODE_MAJOR[nodeMajor]);
			const env = userEnv(nodeBin);

			// A fresh nodes folder, as the README's `cd ~/.n8n/nodes` finds it on a new install.
			const nodesDir = path.join(workRoot, `home-${version}`, '.n8n', 'nodes');
			fs.mkdirSync(nodesDir, { recursive: true });
			const install = spawnSync(node, [npmCli, 'install', tarball], { cwd: nodesDir, env, encoding: 'utf8', timeout: 120000 });
			const output = `${install.stdout}${install.stderr}`;
			expect({ exit: install.status, output }).toEqual({ exit: 0, output: expect.any(String) });

			const installed = fs.readdirSync(path.join(nodesDir, 'node_modules'));
			expect(installed).toContain(stack.PACKAGE_NAME);
			expect(installed).not.toContain('n8n-workflow');
			expect(installed).not.toContain('isolated-vm');

			const packageDir = path.join(nodesDir, 'node_modules', stack.PACKAGE_NAME);
			const manifest: { nodes: string[]; credentials: string[] } = JSON.parse(
				fs.readFileSync(path.join(packageDir, 'package.json'), 'utf8'),
			).n8n;
			const load = spawnSync(node, ['-e', LOAD_SCRIPT, packageDir], {
				cwd: nodesDir,
				env: { ...env, NODE_PATH: path.join(n8nDir!, 'node_modules') },
				encoding: 'utf8',
			});
			expect({ exit: load.status, stderr: load.stderr }).toEqual({ exit: 0, stderr: '' });
			const loaded: Loaded = JSON.parse(load.stdout);
			expect(loaded.nodes).toHaveLength(manifest.nodes.length);
			expect(loaded.credentials).toHaveLength(manifest.credentials.length);
			expect(loaded.nodes.every((name) => typeof name === 'string' && name.length > 0)).toBe(true);
			// n8n's own n8n-workflow, of the line under test.
			expect(loaded.workflowDir.startsWith(path.join(n8nDir!, 'node_modules'))).toBe(true);
			expect(Number(loaded.workflowVersion.split('.')[0])).toBe(Number(version.split('.')[0]));
		},
	);
});
