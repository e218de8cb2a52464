import { readFileSync } from 'node:fs';
import path from 'node:path';

import { KEYS_MIGRATIONS, MIGRATION_SETS, pendingMigrations, versionStamp } from '../../../lib/store/postgres/migrations';
import { DEFAULT_TABLES, POSTGRES_SQL_DIR } from '../../../lib/store/postgres/statements';

describe('migration sets', () => {
	it.each(MIGRATION_SETS.flatMap((set) => set.files.map((file, index) => [file, set.family, index + 1] as const)))(
		'%s ends by stamping its table with its own version',
		(file, family, version) => {
			const statements = readFileSync(path.join(POSTGRES_SQL_DIR, file), 'utf8')
				.split('\n')
				.filter((line) => line.trim() && !line.trimStart().startsWith('--'));
			expect(statements.at(-1)).toBe(`comment on table ${DEFAULT_TABLES[family]} is '${versionStamp(family, version)}';`);
		},
	);

	it('changes the schema only idempotently, so a replay after a too-low stamp is harmless', () => {
		for (const file of MIGRATION_SETS.flatMap((set) => set.files)) {
			const text = readFileSync(path.join(POSTGRES_SQL_DIR, file), 'utf8').replace(/^\s*--.*$/gm, '');
			for (const statement of text
				.split(';')
				.map((part) => part.trim())
				.filter(Boolean)) {
				expect(statement).toMatch(/^(create (table|index) if not exists|alter table \S+ add column if not exists|comment on table)\b/);
			}
		}
	});

	it('lists the files after a version, in order', () => {
		expect(pendingMigrations(KEYS_MIGRATIONS, 0)).toEqual(KEYS_MIGRATIONS.files);
		expect(pendingMigrations(KEYS_MIGRATIONS, 1)).toEqual([
			'migrations/keys/002_migrate_from_seed.sql',
			'migrations/keys/003_replay_evidence.sql',
			'migrations/keys/004_settle_scope.sql',
			'migrations/keys/005_answer_counts.sql',
			'migrations/keys/006_inbox.sql',
		]);
		expect(pendingMigrations(KEYS_MIGRATIONS, 2)).toEqual([
			'migrations/keys/003_replay_evidence.sql',
			'migrations/keys/004_settle_scope.sql',
			'migrations/keys/005_answer_counts.sql',
			'migrations/keys/006_inbox.sql',
		]);
		expect(pendingMigrations(KEYS_MIGRATIONS, 3)).toEqual([
			'migrations/keys/004_settle_scope.sql',
			'migrations/keys/005_answer_counts.sql',
			'migrations/keys/006_inbox.sql',
		]);
		expect(pendingMigrations(KEYS_MIGRATIONS, 4)).toEqual(['migrations/keys/005_answer_counts.sql', 'migrations/keys/006_inbox.sql']);
		expect(pendingMigrations(KEYS_MIGRATIONS, 5)).toEqual(['migrations/keys/006_inbox.sql']);
		expect(pendingMigrations(KEYS_MIGRATIONS, KEYS_MIGRATIONS.files.length)).toEqual([]);
	});
});
