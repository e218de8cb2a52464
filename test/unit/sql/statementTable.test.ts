import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';

import { EMBEDDED_SQL_DIR, EMBEDDED_STATEMENTS } from '../../../lib/store/embedded/statements';
import { POSTGRES_SQL_DIR, QUERY_FILES } from '../../../lib/store/postgres/statements';

/**
 * docs/schema-and-migrations.md lists every statement in one table (name, file, what it does,
 * which operation sends it): it must agree with the statement map and with sql/postgres/queries/.
 */

const DOC = path.join(__dirname, '..', '..', '..', 'docs', 'schema-and-migrations.md');

interface DocRow {
	name: string;
	file: string;
	does: string;
	sentBy: string;
}

/** The rows of the table under the section `heading`. */
function documentedStatements(heading = '## Every statement'): DocRow[] {
	const text = readFileSync(DOC, 'utf8');
	const start = text.indexOf(`\n${heading}\n`);
	if (start < 0) throw new Error(`docs/schema-and-migrations.md has no "${heading}" section.`);
	const end = text.indexOf('\n## ', start + 1);
	const section = text.slice(start, end < 0 ? undefined : end);
	return section
		.split('\n')
		.filter((line) => line.startsWith('| `'))
		.map((line) => {
			const cells = line
				.split(/(?<!\\)\|/)
				.slice(1, -1)
				.map((cell) => cell.trim());
			const code = (cell: string) => /^`([^`]+)`$/.exec(cell)?.[1] ?? `(not one code span: ${cell})`;
			return { name: code(cells[0]), file: code(cells[1]), does: cells[2] ?? '', sentBy: cells[3] ?? '' };
		});
}

describe('the table of every statement in docs/schema-and-migrations.md', () => {
	const rows = documentedStatements();

	it('names each statement of the map once, with its file', () => {
		const documented = rows.map((row) => `${row.name} → ${row.file}`).sort();
		const mapped = Object.entries(QUERY_FILES)
			.map(([name, file]) => `${name} → sql/postgres/${file}`)
			.sort();
		expect(documented).toEqual(mapped);
	});

	it('lists exactly the files in sql/postgres/queries/', () => {
		const onDisk = readdirSync(path.join(POSTGRES_SQL_DIR, 'queries'))
			.filter((file) => file.endsWith('.sql'))
			.map((file) => `sql/postgres/queries/${file}`);
		expect(rows.map((row) => row.file).sort()).toEqual(onDisk.sort());
	});

	it('says what each statement does and which operation sends it', () => {
		for (const row of rows) {
			expect(row.does.length).toBeGreaterThan(10);
			expect(row.sentBy.length).toBeGreaterThan(5);
		}
	});
});

describe('the table of every embedded statement in docs/schema-and-migrations.md', () => {
	const rows = documentedStatements('## Every statement of the embedded store');

	it('names each statement of lib/store/embedded/statements.ts once, with its file, and exactly the files in sql/embedded/queries/', () => {
		const documented = rows.map((row) => `${row.name} → ${row.file}`).sort();
		const listed = EMBEDDED_STATEMENTS.map((name) => `${name} → sql/embedded/queries/${name}.sql`).sort();
		expect(documented).toEqual(listed);
		const onDisk = readdirSync(path.join(EMBEDDED_SQL_DIR, 'queries')).filter((file) => file.endsWith('.sql'));
		expect(onDisk.map((file) => `sql/embedded/queries/${file}`).sort()).toEqual(rows.map((row) => row.file).sort());
	});

	it('says what each statement does and which operation sends it', () => {
		for (const row of rows) {
			expect(row.does.length).toBeGreaterThan(10);
			expect(row.sentBy.length).toBeGreaterThan(5);
		}
	});
});
