// The rows of an embedded store's key table, read and written directly through a connection of
// the test's own to the file (see stores.ts). Times there are milliseconds since 1970 taken from
// unixepoch('subsec'), the store's clock; JSON columns hold text.
import { randomUUID } from 'node:crypto';

import { ROW_COLUMNS as COLUMNS, type RowAccess, type RowValues, type SeedRow, type StoredRow } from './stores';
import { requireSqlite } from './storeTargets';

const NOW_MS = "cast(unixepoch('subsec') * 1000 as integer)";
const TIME_COLUMNS = [
	'first_seen',
	'last_seen',
	'locked_until',
	'expires_at',
	'completed_at',
	'effect_completed_at',
	'retry_until',
	'next_attempt_at',
	'dead_lettered_at',
] as const;
const JSON_COLUMNS = ['response', 'payload'] as const;

type SqlValue = string | number | null;

/** The part of node:sqlite's DatabaseSync used here (this project's @types/node predates the module). */
interface DatabaseSync {
	readonly isOpen: boolean;
	exec(sql: string): void;
	prepare(sql: string): { get(...values: SqlValue[]): unknown; all(...values: SqlValue[]): unknown[]; run(...values: SqlValue[]): unknown };
	function(name: string, options: { deterministic: boolean }, body: () => SqlValue): void;
	close(): void;
}

/** Column names and SQL value expressions; `random` tokens are drawn per row by `randomToken`. */
function assignments(values: RowValues): { columns: string[]; expressions: string[]; parameters: SqlValue[] } {
	const columns: string[] = [];
	const expressions: string[] = [];
	const parameters: SqlValue[] = [];
	for (const [name, value] of Object.entries(values) as Array<[keyof RowValues, unknown]>) {
		if (value === undefined) continue;
		const { column, kind } = COLUMNS[name];
		columns.push(column);
		if (kind === 'uuid' && value === 'random') {
			expressions.push('random_token()');
		} else if (value === null && kind !== 'json') {
			// null is SQL NULL, except in a JSON column, where it is the stored JSON value null.
			expressions.push('null');
		} else if (kind === 'time') {
			expressions.push(`${NOW_MS} + cast(round(? * 1000) as integer)`);
			parameters.push(value as number);
		} else {
			expressions.push('?');
			parameters.push(kind === 'json' ? JSON.stringify(value) : (value as SqlValue));
		}
	}
	return { columns, expressions, parameters };
}

/** A new row's required columns the caller left out: completed, first and last seen now. */
function withDefaults(values: RowValues): RowValues {
	return { status: 'completed', firstSeen: 0, lastSeen: 0, ...values };
}

function open(file: string): DatabaseSync {
	requireSqlite();
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	const { DatabaseSync: Database } = require('node:sqlite') as { DatabaseSync: new (file: string) => DatabaseSync };
	const db = new Database(file);
	// The store's own statements hold the write lock only briefly; wait for them rather than fail.
	db.exec('pragma busy_timeout = 10000');
	db.function('random_token', { deterministic: false }, () => randomUUID());
	return db;
}

function toRow(raw: Record<string, unknown> | undefined): StoredRow | undefined {
	if (!raw) return undefined;
	const row: Record<string, unknown> = { ...raw };
	for (const column of TIME_COLUMNS) if (typeof row[column] === 'number') row[column] = new Date(row[column] as number);
	for (const column of JSON_COLUMNS) if (typeof row[column] === 'string') row[column] = JSON.parse(row[column] as string);
	return row as unknown as StoredRow;
}

export function embeddedRows(
	file: string,
	table: string,
): RowAccess & { orderMark(objectKey: string): Promise<{ version: string; stale_count: number } | undefined> } {
	const db = open(file);
	const name = `"${table}"`;
	const prefixed = (prefix: string | undefined) =>
		prefix === undefined
			? { where: '', values: [] as SqlValue[] }
			: { where: 'where substr(key, 1, length(?)) = ?', values: [prefix, prefix] };
	return {
		row: async (key) => toRow(db.prepare(`select * from ${name} where key = ?`).get(key) as Record<string, unknown> | undefined),
		keys: async (prefix) => {
			const { where, values } = prefixed(prefix);
			return (db.prepare(`select key from ${name} ${where} order by key`).all(...values) as Array<{ key: string }>).map((row) => row.key);
		},
		count: async (prefix) => {
			const { where, values } = prefixed(prefix);
			return (db.prepare(`select count(*) as n from ${name} ${where}`).get(...values) as { n: number }).n;
		},
		seed: async (rows: SeedRow[]) => {
			db.exec('begin immediate');
			try {
				for (const { key, ...values } of rows) {
					const { columns, expressions, parameters } = assignments(withDefaults(values));
					db.prepare(`insert into ${name} (key, ${columns.join(', ')}) values (?, ${expressions.join(', ')})`).run(key, ...parameters);
				}
				db.exec('commit');
			} catch (error) {
				db.exec('rollback');
				throw error;
			}
		},
		seedMany: async (prefix, count, values) => {
			const { columns, expressions, parameters } = assignments(withDefaults(values));
			db.prepare(
				`with recursive i(n) as (select 1 union all select n + 1 from i where n < ?)
				 insert into ${name} (key, ${columns.join(', ')}) select ? || n, ${expressions.join(', ')} from i`,
			).run(count, prefix, ...parameters);
		},
		update: async (keys, values) => {
			const { columns, expressions, parameters } = assignments(values);
			const list = [keys].flat();
			const set = columns.map((column, index) => `${column} = ${expressions[index]}`).join(', ');
			db.prepare(`update ${name} set ${set} where key in (select value from json_each(?))`).run(...parameters, JSON.stringify(list));
		},
		clear: async () => {
			db.exec(`delete from ${name}`);
		},
		now: async () => new Date((db.prepare(`select ${NOW_MS} as now`).get() as { now: number }).now),
		skipInsertOf: async (key) => {
			const trigger = `skip_${Math.random().toString(16).slice(2, 10)}`;
			db.exec(
				`create trigger ${trigger} before insert on ${name} when new.key = '${key.replace(/'/g, "''")}' begin select raise(ignore); end`,
			);
			return async () => {
				db.exec(`drop trigger ${trigger}`);
			};
		},
		orderMark: async (objectKey) =>
			db.prepare(`select version, stale_count from ${name} where object_key = ?`).get(objectKey) as
				| { version: string; stale_count: number }
				| undefined,
		seedAnswerCount: async (answer, count, hoursAgo) => {
			db.prepare(
				`insert into "${table}_answer_counts" (hour, answer, count) values ((${NOW_MS} / 3600000 - ?) * 3600000, ?, ?)
				 on conflict (hour, answer) do update set count = count + excluded.count`,
			).run(hoursAgo, answer, count);
		},
		close: async () => {
			if (db.isOpen) db.close();
		},
	};
}
