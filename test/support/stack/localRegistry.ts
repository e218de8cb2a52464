// A private npm registry on 127.0.0.1 (verdaccio) for tests that install the package the way users
// do: through n8n's own community-package installer, which runs `npm pack <name>@<version>` and
// `npm install` against the registry n8n is configured with. The package is published to it; every
// other package (the package's dependency `pg`) is proxied from the registry npm is configured with.
// verdaccio is installed from npm once into the cache beside n8n (like scripts/ensure-n8n.sh) and
// runs on the Node that runs n8n (verdaccio 6 needs Node >= 22; the host may have 20).
// Node 20 compatible.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './postgresServer';
import { spawnService } from './childProcesses';
import { CACHE_DIR, installIntoCache } from './cache';

export const VERDACCIO_VERSION = '6.10.4';

/** The registry npm itself uses here: verdaccio proxies everything but the package under test from it. */
export function upstreamRegistry(): string {
	const result = spawnSync('npm', ['config', 'get', 'registry'], { encoding: 'utf8', cwd: os.tmpdir() });
	const url = (result.stdout ?? '').trim();
	return /^https?:\/\//.test(url) ? url : 'https://registry.npmjs.org/';
}

/**
 * Installs verdaccio once into the cache (with the given Node on PATH) and returns its entry script.
 * verdaccio's dependency tree asks for a node-fetch 2 pre-release that the registry does not
 * serve; the override pins the released 2.7.0 (same API).
 */
export function ensureVerdaccio({ nodeBin, log = () => {} }: { nodeBin: string; log?: (line: string) => void }): string {
	const dir = path.join(CACHE_DIR, `verdaccio-${VERDACCIO_VERSION}`);
	const entry = path.join(dir, 'node_modules', 'verdaccio', 'bin', 'verdaccio');
	installIntoCache({
		dir,
		spec: `verdaccio@${VERDACCIO_VERSION}`,
		entry,
		packageJson: { name: 'verdaccio-runtime', private: true, overrides: { 'node-fetch': '2.7.0' } },
		flags: ['--ignore-scripts'],
		env: { ...process.env, PATH: `${nodeBin}${path.delimiter}${process.env.PATH}` },
		log,
	});
	return entry;
}

function registryConfig({
	dir,
	port,
	packageName,
	upstream,
}: {
	dir: string;
	port: number;
	packageName: string;
	upstream: string;
}): string {
	// JSON is YAML: no YAML writer needed.
	return JSON.stringify(
		{
			storage: path.join(dir, 'storage'),
			auth: { htpasswd: { file: path.join(dir, 'htpasswd'), max_users: 10 } },
			uplinks: { upstream: { url: upstream, timeout: '60s', max_fails: 5 } },
			packages: {
				// Only ever what the test publishes: never looked up upstream.
				[packageName]: { access: '$all', publish: '$authenticated', unpublish: '$authenticated' },
				'**': { access: '$all', publish: '$authenticated', proxy: 'upstream' },
			},
			listen: `127.0.0.1:${port}`,
			web: { enable: false },
			log: { type: 'stdout', format: 'pretty', level: 'warn' },
			publish: { allow_offline: true },
		},
		null,
		2,
	);
}

/** A running local registry: its URL and port, publish(tarballOrDir, { tag }), its log and stop(). */
export interface LocalRegistry {
	url: string;
	port: number;
	publish: (target: string, options?: { tag?: string }) => void;
	logFile: string;
	stop: () => Promise<void>;
}

/**
 * Starts verdaccio with its storage in `dir`. Returns { url, publish(tarballOrDir, { tag }), stop() }.
 * Publishing runs the host's npm with a throw-away user config holding the token of a user created
 * on this registry (nothing is written to the user's ~/.npmrc).
 */
export async function startLocalRegistry({
	dir,
	nodeBin,
	packageName,
	log = () => {},
	startTimeoutMs = 60000,
}: {
	dir: string;
	nodeBin: string;
	packageName: string;
	log?: (line: string) => void;
	startTimeoutMs?: number;
}): Promise<LocalRegistry> {
	const entry = ensureVerdaccio({ nodeBin, log });
	fs.mkdirSync(dir, { recursive: true });
	const port = await freePort();
	const url = `http://127.0.0.1:${port}`;
	const configFile = path.join(dir, 'config.yaml');
	fs.writeFileSync(configFile, registryConfig({ dir, port, packageName, upstream: upstreamRegistry() }));
	const service = spawnService({
		name: 'verdaccio',
		command: path.join(nodeBin, 'node'),
		args: [entry, '--config', configFile, '--listen', `127.0.0.1:${port}`],
		cwd: dir,
		env: { ...process.env, PATH: `${nodeBin}${path.delimiter}${process.env.PATH}`, NODE_OPTIONS: '' },
		logFile: path.join(dir, 'verdaccio.log'),
	});
	await service.waitReady({ url: `${url}/-/ping`, timeoutMs: startTimeoutMs });

	// A user to publish as (verdaccio's htpasswd plugin registers on first login).
	const user = { name: 'e2e-publisher', password: `pw-${process.pid}-${Date.now()}` };
	const created = await fetch(`${url}/-/user/org.couchdb.user:${user.name}`, {
		method: 'PUT',
		headers: { 'content-type': 'application/json' },
		body: JSON.stringify({ _id: `org.couchdb.user:${user.name}`, name: user.name, password: user.password, type: 'user', roles: [] }),
	});
	const { token } = (await created.json()) as { token?: string };
	if (!created.ok || !token) throw new Error(`creating a publisher on the local registry failed (${created.status})`);
	const userConfig = path.join(dir, 'publisher.npmrc');
	fs.writeFileSync(userConfig, `registry=${url}/\n//127.0.0.1:${port}/:_authToken=${token}\n`, { mode: 0o600 });

	/** `npm publish` of a tarball or package folder; scripts never run (the tarball is already built). */
	const publish = (target: string, { tag = 'latest' }: { tag?: string } = {}) => {
		const result = spawnSync(
			'npm',
			[
				'publish',
				target,
				'--registry',
				`${url}/`,
				'--userconfig',
				userConfig,
				'--tag',
				tag,
				'--ignore-scripts',
				'--no-provenance',
				'--loglevel=error',
			],
			{ cwd: dir, encoding: 'utf8', env: Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_config_/i.test(key))) },
		);
		if (result.status !== 0)
			throw new Error(`npm publish ${target} failed (exit ${result.status}):\n${`${result.stdout}${result.stderr}`.slice(-3000)}`);
	};

	return { url, port, publish, logFile: service.logFile, stop: () => service.stop({ graceMs: 5000 }) };
}

/**
 * A copy of a packed tarball's package with another version, ready for `publish` (a folder): the
 * same files, as a maintainer's next release of the same build would be.
 */
export function repackWithVersion({ tarball, version, dir }: { tarball: string; version: string; dir: string }): string {
	fs.rmSync(dir, { recursive: true, force: true });
	fs.mkdirSync(dir, { recursive: true });
	const untar = spawnSync('tar', ['-xzf', tarball, '-C', dir, '--strip-components=1'], { encoding: 'utf8' });
	if (untar.status !== 0) throw new Error(`extracting ${tarball} failed: ${untar.stderr}`);
	const manifestFile = path.join(dir, 'package.json');
	const manifest = JSON.parse(fs.readFileSync(manifestFile, 'utf8')) as Record<string, unknown>;
	fs.writeFileSync(manifestFile, `${JSON.stringify({ ...manifest, version }, null, 2)}\n`);
	return dir;
}
