// The rows of a Postgres key table, read and written directly (see stores.ts).
import type { Pool } from 'pg';

import { ROW_COLUMNS as COLUMNS, type RowAccess, type RowValues, type SeedRow, type StoredRow } from './stores';

/** Column names and SQL value expressions for the given values, parameters numbered from `first`. */
function assignments(values: RowValues, first: number): { columns: string[]; expressions: string[]; parameters: unknown[] } {
	const columns: string[] = [];
	const expressions: string[] = [];
	const parameters: unknown[] = [];
	for (const [name, value] of Object.entries(values) as Array<[keyof RowValues, unknown]>) {
		if (value === undefined) continue;
		const { column, kind } = COLUMNS[name];
		columns.push(column);
		const placeholder = `$${first + parameters.length}`;
		if (kind === 'uuid' && value === 'random') {
			expressions.push('gen_random_uuid()');
			continue;
		}
		// null is SQL NULL, except in a JSON column, where it is the stored JSON value null.
		if (value === null && kind !== 'json') {
			expressions.push('null');
			continue;
		}
		parameters.push(kind === 'json' ? JSON.stringify(value) : value);
		expressions.push(
			kind === 'time'
				? `now() + make_interval(secs => ${placeholder}::float8)`
				: kind === 'json'
					? `${placeholder}::jsonb`
					: kind === 'uuid'
						? `${placeholder}::uuid`
						: placeholder,
		);
	}
	return { columns, expressions, parameters };
}

export function postgresRows(pool: Pool, schema: string, table: string): RowAccess {
	const name = `${schema}.${table}`;
	const prefixed = (prefix: string | undefined) =>
		prefix === undefined ? { where: '', values: [] } : { where: 'where starts_with(key, $1)', values: [prefix] };
	return {
		row: async (key) => (await pool.query(`select * from ${name} where key = $1`, [key])).rows[0] as StoredRow | undefined,
		keys: async (prefix) => {
			const { where, values } = prefixed(prefix);
			return (await pool.query(`select key from ${name} ${where} order by key collate "C"`, values)).rows.map((row) => row.key as string);
		},
		count: async (prefix) => {
			const { where, values } = prefixed(prefix);
			return (await pool.query(`select count(*)::int as n from ${name} ${where}`, values)).rows[0].n as number;
		},
		seed: async (rows: SeedRow[]) => {
			for (const { key, ...values } of rows) {
				const { columns, expressions, parameters } = assignments(values, 2);
				await pool.query(
					`insert into ${name} (key${columns.map((c) => `, ${c}`).join('')}) values ($1${expressions.map((e) => `, ${e}`).join('')})`,
					[key, ...parameters],
				);
			}
		},
		seedMany: async (prefix, count, values) => {
			const { columns, expressions, parameters } = assignments(values, 3);
			await pool.query(
				`insert into ${name} (key${columns.map((c) => `, ${c}`).join('')}) select $1 || i${expressions.map((e) => `, ${e}`).join('')} from generate_series(1, $2::int) i`,
				[prefix, count, ...parameters],
			);
		},
		update: async (keys, values) => {
			const { columns, expressions, parameters } = assignments(values, 2);
			const set = columns.map((column, index) => `${column} = ${expressions[index]}`).join(', ');
			await pool.query(`update ${name} set ${set} where key = any($1::text[])`, [[keys].flat(), ...parameters]);
		},
		clear: async () => {
			await pool.query(`truncate ${name}`);
		},
		now: async () => (await pool.query('select now() as now')).rows[0].now as Date,
		skipInsertOf: async (key) => {
			const trigger = `skip_${Math.random().toString(16).slice(2, 10)}`;
			await pool.query(`create function ${schema}.${trigger}() returns trigger language plpgsql as $$ begin return null; end $$`);
			await pool.query(
				`create trigger ${trigger} before insert on ${name} for each row when (new.key = '${key.replace(/'/g, "''")}') execute function ${schema}.${trigger}()`,
			);
			return async () => {
				await pool.query(`drop trigger ${trigger} on ${name}`);
			};
		},
		seedAnswerCount: async (answer, count, hoursAgo) => {
			await pool.query(
				`insert into ${schema}.${table}_answer_counts (hour, answer, count)
				 values (to_timestamp((floor(extract(epoch from now()) / 3600) - $3::int) * 3600), $1, $2)
				 on conflict (hour, answer) do update set count = ${schema}.${table}_answer_counts.count + excluded.count`,
				[answer, count, hoursAgo],
			);
		},
		close: async () => {},
	};
}
