#!/usr/bin/env node
/*
 * Moves the idempotency keys of the embedded store (one file on the n8n host) into a Postgres keys
 * table, so retries that span the switch to the Postgres store stay duplicates. Shipped in the
 * package (dist/scripts/), run with the Node that runs n8n (it needs node:sqlite):
 *
 *   node ~/.n8n/nodes/node_modules/n8n-nodes-idempotency/dist/scripts/move-keys-to-postgres.js \
 *     --file ~/.n8n/<the store file> --database-url postgres://user:password@host:5432/db
 *
 * The steps around it (pause the workflows, move, switch the nodes' Store, resume):
 * docs/moving-to-postgres.md. Exit codes: 0 moved; 1 failed (nothing is lost: run it again);
 * 2 wrong arguments; 3 moved, but the file changed meanwhile (a workflow still ran): run it again.
 */
import { Pool } from 'pg';

import { moveKeysToPostgres, type MoveReport } from '../lib/store/embedded/moveToPostgres';

const USAGE = `usage: move-keys-to-postgres --file <store file> --database-url <postgres://…> [options]

  --file FILE             the embedded store file (read only)
  --database-url URL      the Postgres database (or set DATABASE_URL); sslmode=… in the URL as usual
  --schema NAME           the Postgres schema of the keys table (default public)
  --table NAME            the Postgres keys table (default processed_events): the nodes' Table Name
  --embedded-table NAME   the keys table in the file (default processed_events)
  --batch-size N          keys per statement, 1–10000 (default 1000)
  --no-create-table       do not create or upgrade the Postgres table; fail if it is not ready
  --json                  print the report as JSON`;

interface Arguments {
	file?: string;
	databaseUrl?: string;
	schema?: string;
	table?: string;
	embeddedTable?: string;
	batchSize?: number;
	createTable: boolean;
	json: boolean;
}

class UsageError extends Error {}

function parseArguments(argv: string[]): Arguments | 'help' {
	const args: Arguments = { createTable: true, json: false, databaseUrl: process.env.DATABASE_URL };
	const value = (index: number, flag: string): string => {
		const next = argv[index + 1];
		if (next === undefined || next.startsWith('--')) throw new UsageError(`${flag} needs a value`);
		return next;
	};
	for (let i = 0; i < argv.length; i++) {
		const flag = argv[i];
		if (flag === '--help' || flag === '-h') return 'help';
		else if (flag === '--file') args.file = value(i++, flag);
		else if (flag === '--database-url') args.databaseUrl = value(i++, flag);
		else if (flag === '--schema') args.schema = value(i++, flag);
		else if (flag === '--table') args.table = value(i++, flag);
		else if (flag === '--embedded-table') args.embeddedTable = value(i++, flag);
		else if (flag === '--batch-size') args.batchSize = Number(value(i++, flag));
		else if (flag === '--no-create-table') args.createTable = false;
		else if (flag === '--json') args.json = true;
		else throw new UsageError(`unknown argument ${flag}`);
	}
	if (!args.file) throw new UsageError('--file is required');
	if (!args.databaseUrl) throw new UsageError('--database-url (or DATABASE_URL) is required');
	return args;
}

function summary(report: MoveReport): string {
	const { counts } = report;
	const lines = [
		`read ${report.read} keys from the file in ${report.batches} batches`,
		`  inserted   ${counts.inserted}  (new in Postgres)`,
		`  updated    ${counts.updated}  (the same reservation, further along in the file)`,
		`  unchanged  ${counts.unchanged}  (already in Postgres as they are)`,
		`  replaced   ${counts.replaced}  (Postgres held another reservation of the key, less far along)`,
		`  kept       ${counts.kept}  (Postgres holds another reservation of the key, further along: left as it is)`,
	];
	if (report.conflicts.length > 0) {
		lines.push(`conflicts: ${report.conflicts.length} keys were held by both stores as different reservations:`);
		for (const conflict of report.conflicts.slice(0, 20)) {
			const side = (s: { status: string; attempts: number } | null) => (s ? `${s.status}, attempt ${s.attempts}` : 'none');
			lines.push(
				`  ${JSON.stringify(conflict.key)}: file ${side(conflict.copied)}, Postgres ${side(conflict.postgres)} → kept the ${conflict.kept === 'copied' ? "file's" : "Postgres's"}`,
			);
		}
		if (report.conflicts.length > 20) lines.push(`  … and ${report.conflicts.length - 20} more (--json lists them all)`);
	}
	for (const warning of report.warnings) lines.push(`warning: ${warning}`);
	if (report.fileChanged) {
		lines.push(
			'The file changed while it was read: a workflow still used the embedded store. Pause it, then run this again (keys already moved stay as they are).',
		);
	}
	return lines.join('\n');
}

export async function main(argv: string[]): Promise<number> {
	let args: Arguments | 'help';
	try {
		args = parseArguments(argv);
	} catch (error) {
		if (!(error instanceof UsageError)) throw error;
		process.stderr.write(`${error.message}\n\n${USAGE}\n`);
		return 2;
	}
	if (args === 'help') {
		process.stdout.write(`${USAGE}\n`);
		return 0;
	}
	const pool = new Pool({ connectionString: args.databaseUrl, max: 2 });
	// An idle connection dropped by the server must not crash the command; queries still reject.
	pool.on('error', () => {});
	try {
		const report = await moveKeysToPostgres({
			file: args.file!,
			pool,
			schema: args.schema,
			table: args.table,
			embeddedTable: args.embeddedTable,
			batchSize: args.batchSize,
			createTable: args.createTable,
			onBatch: ({ read }) => {
				if (!args.json) process.stderr.write(`\r${read} keys moved…`);
			},
		});
		if (!args.json && report.read > 0) process.stderr.write('\n');
		process.stdout.write(`${args.json ? JSON.stringify(report, null, 2) : summary(report)}\n`);
		return report.fileChanged ? 3 : 0;
	} catch (error) {
		// The message only: an error from pg can carry connection details in its properties.
		process.stderr.write(
			`\nThe move stopped: ${error instanceof Error ? error.message : String(error)}\nKeys moved so far stay in Postgres; running the command again continues safely.\n`,
		);
		return 1;
	} finally {
		await pool.end().catch(() => {});
	}
}

if (require.main === module) {
	main(process.argv.slice(2)).then((code) => {
		process.exitCode = code;
	});
}
