import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { EMBEDDED_MIGRATIONS, EMBEDDED_STATEMENTS } from '../../../lib/store/embedded/statements';

import { tableRef } from '../../../lib/identifiers';
import type { StoreBackend } from '../../../lib/store/contract';
import { MIGRATION_SETS } from '../../../lib/store/postgres/migrations';
import {
	CATALOG_STATEMENTS,
	DEFAULT_TABLES,
	KEY_STATEMENTS,
	ORDER_STATEMENTS,
	POSTGRES_SQL_DIR,
	QUERY_FILES,
	STATEMENTS,
	catalogStatement,
	renderSqlFile,
	renderStatement,
	type CatalogStatement,
	type SqlFile,
	type TableFamily,
	type TableStatement,
} from '../../../lib/store/postgres/statements';
import { SQL_ROOT } from '../../../lib/store/sqlText';

/** Every .sql file under `dir`, relative to it. */
function sqlFilesOnDisk(dir: string, prefix = ''): string[] {
	return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
		entry.isDirectory()
			? sqlFilesOnDisk(path.join(dir, entry.name), `${prefix}${entry.name}/`)
			: entry.name.endsWith('.sql')
				? [`${prefix}${entry.name}`]
				: [],
	);
}

const migrationFiles = MIGRATION_SETS.flatMap((set) => set.files);
/** The files each backend runs, relative to its folder `sql/<backend>/`; a backend with no entry does not compile. */
const filesOfBackend: Record<StoreBackend, SqlFile[]> = {
	postgres: [...Object.values(QUERY_FILES), ...migrationFiles],
	embedded: [...EMBEDDED_STATEMENTS.map((name) => `queries/${name}.sql`), ...Object.values(EMBEDDED_MIGRATIONS).flat()],
};
/** Every file any backend runs, relative to `sql/`. */
const allFiles = Object.entries(filesOfBackend).flatMap(([backend, files]) => files.map((file) => `${backend}/${file}`));
/** Every file written for a table, with the family of that table. */
const familyOf = new Map<SqlFile, TableFamily>([
	...STATEMENTS.flatMap((statement) => (statement.family ? [[statement.file, statement.family] as const] : [])),
	...MIGRATION_SETS.flatMap((set) => set.files.map((file) => [file, set.family] as const)),
]);
const tableFiles = [...familyOf.keys()];
const withoutComments = (file: SqlFile) =>
	readFileSync(path.join(POSTGRES_SQL_DIR, file), 'utf8')
		.split('\n')
		.filter((line) => !line.trimStart().startsWith('--'))
		.join('\n')
		.trim();
const render = (file: SqlFile, table: string, schema = 'public') => renderSqlFile(file, familyOf.get(file)!, tableRef(schema, table));
const camelCase = (file: SqlFile) => path.basename(file, '.sql').replace(/_([a-z])/g, (_match, letter: string) => letter.toUpperCase());

describe('the sql/ folder', () => {
	it("holds exactly the queries and migrations the code runs, each in its backend's folder, with nothing else", () => {
		expect(allFiles.slice().sort()).toEqual(sqlFilesOnDisk(SQL_ROOT).sort());
		for (const files of Object.values(filesOfBackend))
			expect(files.every((file) => /^(queries|migrations\/\w+)\/\w+\.sql$/.test(file))).toBe(true);
	});

	it("numbers each family's migrations 001, 002, … in the order they run", () => {
		for (const set of MIGRATION_SETS) {
			expect(set.files.map((file) => path.basename(file).slice(0, 3))).toEqual(
				set.files.map((_file, index) => String(index + 1).padStart(3, '0')),
			);
			expect(set.files.every((file) => file.startsWith(`migrations/${set.family}/`))).toBe(true);
		}
	});
});

describe('the statement map', () => {
	it("knows each statement by its file's name (claim_for_replay.sql is claimForReplay), each file once", () => {
		for (const { name, file } of STATEMENTS) expect(name).toBe(camelCase(file));
		expect(new Set(STATEMENTS.map((statement) => statement.file)).size).toBe(STATEMENTS.length);
		expect(Object.keys(QUERY_FILES).sort()).toEqual(STATEMENTS.map((statement) => statement.name).sort());
	});

	it("keeps the Order Guard's statements apart from the key statements, and their files say so (order_*)", () => {
		expect(Object.values(ORDER_STATEMENTS).every((file) => file.startsWith('queries/order_'))).toBe(true);
		expect(Object.values(KEY_STATEMENTS).some((file) => file.startsWith('queries/order_'))).toBe(false);
		expect(STATEMENTS.filter((statement) => statement.family === 'order').map((statement) => statement.name)).toEqual(
			Object.keys(ORDER_STATEMENTS),
		);
	});

	it('refuses a statement name it does not know, instead of rendering for the wrong table', () => {
		expect(() => renderStatement('advanceOrder' as TableStatement, tableRef('public', 'object_versions'))).toThrow(
			/No statement on a table is named "advanceOrder"/,
		);
	});
});

describe('catalogStatement', () => {
	it.each(Object.keys(CATALOG_STATEMENTS) as CatalogStatement[])('%s is its file without comments, naming no table', (name) => {
		expect(catalogStatement(name)).toBe(withoutComments(CATALOG_STATEMENTS[name]));
		expect(catalogStatement(name)).not.toMatch(/processed_events|object_versions/);
	});

	it('and renderStatement refuse a statement of the other kind', () => {
		expect(() => catalogStatement('reserve' as CatalogStatement)).toThrow(/No statement without a table is named "reserve"/);
		expect(() => renderStatement('schemaState' as TableStatement, tableRef('public', 'processed_events'))).toThrow(
			/No statement on a table is named "schemaState"/,
		);
	});
});

describe('renderSqlFile', () => {
	it.each(tableFiles)('%s is the file without comments, for the default table', (file) => {
		const table = DEFAULT_TABLES[familyOf.get(file)!];
		expect(render(file, table)).toBe(
			withoutComments(file)
				.replace(new RegExp(`\\b${table}_([a-z_]+_idx)\\b`, 'g'), `"${table}_$1"`)
				// A companion table (the key table's answer counts) is qualified like the table.
				.replace(new RegExp(`\\b${table}_(answer_counts)\\b`, 'g'), `"public"."${table}_$1"`)
				.replace(new RegExp(`\\b${table}\\b(?!_)`, 'g'), `"public"."${table}"`),
		);
	});

	it.each(tableFiles)('%s names only the configured table', (file) => {
		const rendered = render(file, 'stripe_keys', 'billing');
		expect(rendered).not.toMatch(/processed_events|object_versions/);
		// The answer count statements name only the key table's companion (the migration names both).
		expect(rendered).toContain(
			/count_answer|answer_counts/.test(file) && file.startsWith('queries/')
				? '"billing"."stripe_keys_answer_counts"'
				: '"billing"."stripe_keys"',
		);
	});

	it('uses bind parameters for every value', () => {
		const reserve = render(QUERY_FILES.reserve, 'processed_events');
		expect(reserve).toMatch(
			/unnest\(\$1::text\[\] collate "C", \$2::text\[\], \$3::text\[\], \$4::uuid\[\], \$10::text\[\], \$11::integer\[\], \$12::text\[\], \$13::text\[\],\s+\$15::text\[\], \$16::text\[\], \$17::integer\[\], \$18::bigint\[\], \$19::integer\[\]\)/,
		);
	});
});

describe('the reserve statement for Output: Compact', () => {
	const table = tableRef('public', 'processed_events');
	const returned = (text: string) =>
		text
			.slice(text.lastIndexOf('returning') + 'returning'.length)
			.replace(/;\s*$/, '')
			.split(/,\s*(?![^(]*\))/)
			.map((column) =>
				column
					.trim()
					.replace(/^e\./, '')
					.replace(/^.* as /, ''),
			);

	it('is the same file without its full-record section: only the RETURNING list differs', () => {
		const full = renderStatement('reserve', table);
		const compact = renderStatement('reserve', table, 'full-record');
		expect(full.slice(0, full.lastIndexOf('returning'))).toBe(compact.slice(0, compact.lastIndexOf('returning')));
		expect(returned(compact)).toEqual([
			'key',
			'status',
			'attempts',
			'owner_token',
			'payload_hash',
			'response',
			'locked_until',
			'lease_active',
			'inbox',
		]);
		expect(returned(full).sort()).toEqual(
			[
				...returned(compact),
				'duplicate_count',
				'first_seen',
				'last_seen',
				'expires_at',
				'execution_id',
				'workflow_id',
				'key_source',
				'completed_at',
				'last_error',
				// Whether the owner completed it: a Permanent key's status cannot say (the trigger's copies).
				'effect_completed',
			].sort(),
		);
	});

	it('refuses to leave out a section a file does not have', () => {
		expect(() => renderStatement('complete', table, 'full-record')).toThrow(/no single "-- <full-record>"/);
	});
});

describe('the retention rule', () => {
	// The expression that decides a key's retention ended, with its retention parameter's number masked.
	const rule = (file: string) =>
		render(file, 'processed_events')
			.match(/greatest\(coalesce\(e\.expires_at, .*?\), e\.locked_until\) <= now\(\)/g)
			?.map((text) => text.replace(/\$\d+/g, '$retention'));

	it('is one expression, the same in the reserve statement and in cleanup', () => {
		const reserve = rule(QUERY_FILES.reserve);
		const cleanup = rule(QUERY_FILES.cleanup);
		expect(reserve).toHaveLength(1);
		expect(cleanup).toHaveLength(1);
		expect(cleanup).toEqual(reserve);
		// The cron one-liner in cleanup.sql's comment states the same rule.
		expect(readFileSync(path.join(POSTGRES_SQL_DIR, QUERY_FILES.cleanup), 'utf8')).toContain(
			"greatest(coalesce(e.expires_at, e.first_seen + interval '30 days'), e.locked_until) <= now()",
		);
	});
});

describe('the replayable rule (failed, or processing after the lease ran out)', () => {
	// List Keys' "replayable" filter must show exactly the keys Claim for Replay takes over.
	const RULE = /\b(?:e\.)?status = 'failed' or \((?:e\.)?status = 'processing' and (?:e\.)?locked_until <= now\(\)\)/g;
	const occurrences = (file: string) => (render(file, 'processed_events').match(RULE) ?? []).map((text) => text.replace(/\be\./g, ''));

	it('is the same expression in list_keys.sql and claim_for_replay.sql (where the claim judges it once, on the row it locked)', () => {
		const listed = occurrences(QUERY_FILES.listKeys);
		const claimed = occurrences(QUERY_FILES.claimForReplay);
		expect(listed).toHaveLength(1);
		// A second check, on the row being updated, would judge the statement's older snapshot (integration/replayClaim.test.ts).
		expect(claimed).toHaveLength(1);
		expect(new Set([...listed, ...claimed]).size).toBe(1);
	});

	it('claims with bind parameters only', () => {
		const claim = render(QUERY_FILES.claimForReplay, 'processed_events');
		expect(claim).toMatch(/unnest\(\$1::text\[\], \$2::uuid\[\]\)/);
		expect(claim.match(/\$\d+/g)?.sort()).toEqual(['$1', '$2', '$3', '$4', '$5', '$6', '$7']);
	});
});
