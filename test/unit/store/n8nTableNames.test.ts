import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { DEFAULT_ORDER_TABLE, DEFAULT_TABLE } from '../../../lib/store/rules';
import { CACHE_DIR } from '../../support/stack/cache';
import { n8nRequired, PROVEN_N8N_VERSIONS } from '../../support/stack/n8nVersion';

// Store: Automatic puts the package's tables in n8n's own database, in n8n's schema: none of their
// names (the tables, their companion table and indexes all start with the table's name) may be one
// n8n uses. Held against the code of every proven n8n line: its entities, migrations and modules.

function installedN8n(version: string): string | undefined {
	if (!existsSync(CACHE_DIR)) return undefined;
	const folderName = readdirSync(CACHE_DIR).find((name) => name.startsWith(`n8n-${version}-node-`) && !name.endsWith('.lock'));
	const directory = folderName && path.join(CACHE_DIR, folderName);
	return directory && existsSync(path.join(directory, '.complete')) ? directory : undefined;
}

/** The JavaScript n8n runs: n8n's own package and its @n8n/* packages (entities, migrations, modules). */
function n8nCode(directory: string): string[] {
	const modules = path.join(directory, 'node_modules');
	const roots = [
		path.join(modules, 'n8n', 'dist'),
		...readdirSync(path.join(modules, '@n8n')).map((name) => path.join(modules, '@n8n', name, 'dist')),
	];
	const files: string[] = [];
	const walk = (folder: string) => {
		if (!existsSync(folder)) return;
		for (const entry of readdirSync(folder, { withFileTypes: true })) {
			const full = path.join(folder, entry.name);
			if (entry.isDirectory()) walk(full);
			else if (entry.name.endsWith('.js')) files.push(full);
		}
	};
	roots.forEach(walk);
	return files;
}

describe.each(PROVEN_N8N_VERSIONS)('n8n %s', (version) => {
	const directory = installedN8n(version);
	const itWithN8n = directory || n8nRequired(version) ? it : it.skip;

	itWithN8n("names no table or index of its own after the package's tables", () => {
		const texts = n8nCode(directory!).map((file) => readFileSync(file, 'utf8'));
		// The scan reads n8n's schema: its own tables are found there.
		for (const n8nTable of ['execution_entity', 'workflow_entity', 'processed_data']) {
			expect([n8nTable, texts.some((text) => text.includes(n8nTable))]).toEqual([n8nTable, true]);
		}
		for (const packageTable of [DEFAULT_TABLE, DEFAULT_ORDER_TABLE]) {
			expect([packageTable, texts.filter((text) => text.includes(packageTable)).length]).toEqual([packageTable, 0]);
		}
	});
});
