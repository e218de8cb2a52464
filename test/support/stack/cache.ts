// The folder outside the clone where the harness keeps what it installs once (n8n and its Node,
// a Node with node:sqlite, npm releases, verdaccio): N8N_IDEMPOTENCY_CACHE, else
// ~/.cache/n8n-nodes-idempotency, as scripts/ensure-n8n.sh. Node 20 compatible.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const CACHE_DIR = process.env.N8N_IDEMPOTENCY_CACHE ?? path.join(os.homedir(), '.cache', 'n8n-nodes-idempotency');

export interface InstallIntoCacheOptions {
	dir: string;
	spec: string;
	entry: string;
	packageJson?: Record<string, unknown>;
	flags?: string[];
	env?: NodeJS.ProcessEnv;
	log?: (line: string) => void;
}

/**
 * `npm install <spec>` into `dir` once: skipped when `dir/.complete` and `entry` (a file the install
 * leaves) exist. `packageJson` is the folder's manifest, `flags` extra npm flags, `env` npm's environment.
 */
export function installIntoCache({
	dir,
	spec,
	entry,
	packageJson = { private: true },
	flags = [],
	env = process.env,
	log = () => {},
}: InstallIntoCacheOptions): void {
	const installed = () => fs.existsSync(path.join(dir, '.complete')) && fs.existsSync(entry);
	if (installed()) return;
	// CI runs several suites side by side: one installs, the others wait for it instead of racing it.
	const release = lockDir(`${dir}.lock`, log);
	try {
		if (!installed()) install({ dir, spec, entry, packageJson, flags, env, log });
	} finally {
		release();
	}
}

function install({ dir, spec, entry, packageJson, flags, env, log }: Required<InstallIntoCacheOptions>): void {
	fs.mkdirSync(dir, { recursive: true });
	fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(packageJson, null, 2));
	log(`installing ${spec} into ${dir} (first time only)…`);
	const result = spawnSync('npm', ['install', '--no-audit', '--no-fund', ...flags, '--loglevel=error', spec], {
		cwd: dir,
		encoding: 'utf8',
		env,
		maxBuffer: 64 * 1024 * 1024,
	});
	if (result.status !== 0)
		throw new Error(`installing ${spec} failed (exit ${result.status}):\n${`${result.stdout}${result.stderr}`.slice(-3000)}`);
	if (!fs.existsSync(entry)) throw new Error(`${spec} installed, but ${entry} is missing`);
	fs.writeFileSync(path.join(dir, '.complete'), '');
}

/** A lock held by one process at a time (a directory: mkdir is atomic); a holder gone for 15 minutes is taken over. */
function lockDir(lock: string, log: (line: string) => void): () => void {
	fs.mkdirSync(path.dirname(lock), { recursive: true });
	const sleeper = new Int32Array(new SharedArrayBuffer(4));
	for (let said = false; ; ) {
		try {
			fs.mkdirSync(lock);
			return () => fs.rmSync(lock, { recursive: true, force: true });
		} catch (error) {
			if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
		}
		const held = fs.statSync(lock, { throwIfNoEntry: false });
		if (held && Date.now() - held.mtimeMs > 15 * 60_000) fs.rmSync(lock, { recursive: true, force: true });
		if (!said) log(`waiting for another process installing into ${lock.slice(0, -'.lock'.length)}…`);
		said = true;
		Atomics.wait(sleeper, 0, 0, 500);
	}
}
