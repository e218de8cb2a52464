import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';

import { tableRef } from '../../../lib/identifiers';
import { STATEMENT_FILES, defaultTableOf, renderStatement, type StatementName } from '../../../lib/sql/statements';

const SQL_DIR = path.join(__dirname, '..', '..', '..', 'sql');
const names = Object.keys(STATEMENT_FILES) as StatementName[];

describe('renderStatement', () => {
	it('knows every file in sql/ and every name maps to a file there', () => {
		expect(Object.values(STATEMENT_FILES).sort()).toEqual(readdirSync(SQL_DIR).filter((f) => f.endsWith('.sql')).sort());
	});

	it.each(names)('%s is the sql/ file without comments, for the default table', (name) => {
		const file = readFileSync(path.join(SQL_DIR, STATEMENT_FILES[name]), 'utf8');
		const withoutComments = file
			.split('\n')
			.filter((line) => !line.trimStart().startsWith('--'))
			.join('\n')
			.trim();
		const table = defaultTableOf(name);
		const rendered = renderStatement(name, tableRef('public', table));
		expect(rendered).toBe(
			withoutComments
				.replace(new RegExp(`\\b${table}_([a-z_]+_idx)\\b`, 'g'), `"${table}_$1"`)
				.replace(new RegExp(`\\b${table}\\b(?!_)`, 'g'), `"public"."${table}"`),
		);
	});

	it.each(names)('%s names only the configured table', (name) => {
		const rendered = renderStatement(name, tableRef('billing', 'stripe_keys'));
		expect(rendered).not.toMatch(/processed_events|object_versions/);
		expect(rendered).toContain('"billing"."stripe_keys"');
	});

	it('uses bind parameters for every value', () => {
		const reserve = renderStatement('reserve', tableRef('public', 'processed_events'));
		expect(reserve).toMatch(/unnest\(\$1::text\[\], \$2::text\[\], \$3::text\[\], \$4::uuid\[\]\)/);
	});
});
