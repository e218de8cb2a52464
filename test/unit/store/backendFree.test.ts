import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';

/**
 * The store contract and the shared rules are what every backend builds on: nothing they load, even
 * for types only, may belong to one backend (pg, the Postgres runner and statements, the embedded
 * store's node:sqlite).
 */

const LIB = path.join(__dirname, '..', '..', '..', 'lib');
const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+'([^']+)'|\brequire\('([^']+)'\)|\bimport\('([^']+)'\)/g;

/** Every module `file` loads, directly or through other lib modules: lib files as paths relative to lib/, packages by name. */
function importsOf(file: string, seen = new Set<string>()): Set<string> {
	for (const match of readFileSync(path.join(LIB, file), 'utf8').matchAll(IMPORT)) {
		const specifier = match[1] ?? match[2] ?? match[3];
		if (!specifier.startsWith('.')) {
			seen.add(specifier);
			continue;
		}
		const resolved = [`${specifier}.ts`, path.join(specifier, 'index.ts')]
			.map((candidate) => path.normalize(path.join(path.dirname(file), candidate)))
			.find((candidate) => existsSync(path.join(LIB, candidate)));
		if (!resolved) throw new Error(`${file} imports ${specifier}, which is not a lib/ module`);
		if (!seen.has(resolved)) {
			seen.add(resolved);
			importsOf(resolved, seen);
		}
	}
	return seen;
}

const BACKEND_ONLY = /^(pg|pg-.*|node:sqlite|(store[/\\])?(postgres|embedded)[/\\].*|sql[/\\].*)$/;

describe('lib/store/', () => {
	const files = readdirSync(path.join(LIB, 'store')).filter((file) => file.endsWith('.ts'));

	it.each(files)('%s loads nothing of a backend', (file) => {
		const loaded = [...importsOf(path.join('store', file))];
		expect(loaded.filter((module) => BACKEND_ONLY.test(module))).toEqual([]);
	});
});
