import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';

import { SQL_ROOT } from '../../../lib/store/sqlText';

// What `npm pack` would publish, read from npm itself. Needs a build (npm test runs one first).
const root = path.join(__dirname, '..', '..', '..');
const packageJson = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));

function packedFiles(): string[] {
	if (!existsSync(path.join(root, 'dist'))) throw new Error('dist/ is missing: run `npm run build` first (npm test does).');
	const output = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8' });
	return (JSON.parse(output)[0].files as Array<{ path: string }>).map((file) => file.path);
}

describe('the published package', () => {
	const files = packedFiles();

	it('contains every node and credential named in package.json', () => {
		const declared = [...packageJson.n8n.nodes, ...packageJson.n8n.credentials] as string[];
		expect(declared.length).toBeGreaterThanOrEqual(5);
		for (const entry of declared) expect(files).toContain(entry);
	});

	it('ships the icons, codex files, templates and SQL the nodes need at run time', () => {
		for (const node of ['IdempotencyReserve', 'IdempotencyKey', 'WebhookSignatureVerify']) {
			expect(files).toContain(`dist/nodes/${node}/${node}.node.json`);
			const icons = files.filter((file) => file.startsWith(`dist/nodes/${node}/`) && file.endsWith('.svg'));
			expect(icons).toHaveLength(2);
		}
		// sql/ as it is, under dist/sql/ where the built dist/lib/store/ reads it (as lib/store/ reads
		// sql/): test/unit/sql/statements.test.ts checks that sql/ holds exactly the files each backend
		// runs, so this covers every backend's files without a list of them.
		const sqlFiles = (readdirSync(SQL_ROOT, { recursive: true }) as string[])
			.filter((file) => file.endsWith('.sql'))
			.map((file) => file.split(path.sep).join('/'));
		expect(sqlFiles.length).toBeGreaterThan(0);
		expect(files.filter((file) => file.startsWith('dist/sql/')).sort()).toEqual(sqlFiles.map((file) => `dist/sql/${file}`).sort());
		expect(files.filter((file) => /^dist\/templates\/.+\.json$/.test(file)).length).toBeGreaterThanOrEqual(3);
	});

	it('holds nothing a user does not need: no sources, tests, benchmarks or CI files', () => {
		const allowed = /^(dist\/.+|package\.json|README\.md|LICENSE(\.md)?)$/;
		expect(files.filter((file) => !allowed.test(file))).toEqual([]);
		expect(files.filter((file) => /\.ts$/.test(file) && !file.endsWith('.d.ts'))).toEqual([]);
		expect(files.filter((file) => /(^|\/)test\//.test(file))).toEqual([]);
	});

	it('holds the package.json, README and LICENSE, and exactly the shipped templates', () => {
		for (const file of ['package.json', 'README.md', 'LICENSE']) expect(files).toContain(file);
		const templates = readdirSync(path.join(root, 'templates')).filter((file) => file.endsWith('.json'));
		expect(files.filter((file) => file.startsWith('dist/templates/')).sort()).toEqual(
			templates.map((file) => `dist/templates/${file}`).sort(),
		);
	});

	it('every module the packed code requires is in the tarball, a Node built-in, a dependency, or n8n-workflow (from n8n)', () => {
		// n8n's installer strips peer dependencies and installs `dependencies` only: anything else a
		// packed file requires would be missing on a user's instance.
		const provided = new Set([...Object.keys(packageJson.dependencies ?? {}), ...Object.keys(packageJson.peerDependencies ?? {})]);
		// node:sqlite is a built-in from Node 22.13 (the embedded store loads it lazily and says so on an older Node).
		const builtins = new Set([...builtinModules.flatMap((name) => [name, `node:${name}`]), 'node:sqlite']);
		const packed = new Set(files);
		const missing: string[] = [];
		for (const file of files.filter((name) => name.endsWith('.js'))) {
			const code = readFileSync(path.join(root, file), 'utf8');
			for (const [, request] of code.matchAll(/\brequire\(\s*["']([^"']+)["']\s*\)/g)) {
				if (request.startsWith('.')) {
					const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), request));
					const candidates = [target, `${target}.js`, `${target}.json`, `${target}/index.js`];
					if (!candidates.some((candidate) => packed.has(candidate))) missing.push(`${file} → ${request}`);
					continue;
				}
				const bare = request.startsWith('@') ? request.split('/').slice(0, 2).join('/') : request.split('/')[0];
				if (!builtins.has(request) && !builtins.has(bare) && !provided.has(bare)) missing.push(`${file} → ${request}`);
			}
		}
		expect(missing).toEqual([]);
		expect(Object.keys(packageJson.peerDependencies ?? {})).toEqual(['n8n-workflow']);
	});

	it('has no install scripts (n8n installs community packages with --ignore-scripts)', () => {
		const scripts = Object.keys(packageJson.scripts ?? {});
		expect(scripts.filter((name) => ['preinstall', 'install', 'postinstall', 'prepare'].includes(name))).toEqual([]);
	});
});
