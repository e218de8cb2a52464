// The folder outside the clone where the harness keeps what it installs once (n8n and its Node,
// a Node with node:sqlite, npm releases, verdaccio): N8N_IDEMPOTENCY_CACHE, else
// ~/.cache/n8n-nodes-idempotency, as scripts/ensure-n8n.sh. Plain CommonJS, Node 20 compatible.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const CACHE_DIR = process.env.N8N_IDEMPOTENCY_CACHE ?? path.join(os.homedir(), '.cache', 'n8n-nodes-idempotency');

/**
 * `npm install <spec>` into `dir` once: skipped when `dir/.complete` and `entry` (a file the install
 * leaves) exist. `packageJson` is the folder's manifest, `flags` extra npm flags, `env` npm's environment.
 */
function installIntoCache({ dir, spec, entry, packageJson = { private: true }, flags = [], env = process.env, log = () => {} }) {
	if (fs.existsSync(path.join(dir, '.complete')) && fs.existsSync(entry)) return;
	fs.mkdirSync(dir, { recursive: true });
	fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(packageJson, null, 2));
	log(`installing ${spec} into ${dir} (first time only)…`);
	const result = spawnSync('npm', ['install', '--no-audit', '--no-fund', ...flags, '--loglevel=error', spec], { cwd: dir, encoding: 'utf8', env, maxBuffer: 64 * 1024 * 1024 });
	if (result.status !== 0) throw new Error(`installing ${spec} failed (exit ${result.status}):\n${`${result.stdout}${result.stderr}`.slice(-3000)}`);
	if (!fs.existsSync(entry)) throw new Error(`${spec} installed, but ${entry} is missing`);
	fs.writeFileSync(path.join(dir, '.complete'), '');
}

module.exports = { CACHE_DIR, installIntoCache };
