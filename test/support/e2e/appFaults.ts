// Faults made in the app database for one test file: triggers that hold, slow or refuse a statement
// of the package or of the business step, as a database that is slow or down for that statement
// would. Each file creates its own in beforeAll and drops it in afterAll.
import type { QueryResult } from 'pg';
import type { Harness } from './harness';

/** A row trigger: its name (also its function's), table, timing ('BEFORE UPDATE', …), optional WHEN condition and PL/pgSQL body. */
export interface TriggerSpec {
	name: string;
	table: string;
	timing: string;
	when?: string;
	body: string;
}

/** Creates (or replaces) the trigger function `name`() with `body` and the row trigger `name` on `table`. */
export async function createTrigger(h: Harness, { name, table, timing, when, body }: TriggerSpec): Promise<void> {
	await h.appQuery(`CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN
${body}
			END $$`);
	await h.appQuery(`DROP TRIGGER IF EXISTS ${name} ON ${table}`);
	await h.appQuery(`CREATE TRIGGER ${name} ${timing} ON ${table} FOR EACH ROW${when ? ` WHEN (${when})` : ''} EXECUTE FUNCTION ${name}()`);
}

/** Drops what createTrigger made. */
export async function dropTrigger(h: Harness, { name, table }: Pick<TriggerSpec, 'name' | 'table'>): Promise<void> {
	await h.appQuery(`DROP TRIGGER IF EXISTS ${name} ON ${table}`);
	await h.appQuery(`DROP FUNCTION IF EXISTS ${name}()`);
}

/** What settleBlocker returns. */
export interface SettleBlocker {
	create: () => Promise<void>;
	block: (key: string, status?: string) => Promise<QueryResult>;
	unblock: (key: string) => Promise<QueryResult>;
	/** Refusals so far (a sequence: the refused statement's rollback does not undo the count). */
	refusals: () => Promise<number>;
	drop: () => Promise<void>;
}

/**
 * Refuses settling the keys listed in the table `name` (the UPDATE of processed_events to the listed
 * status), as a database that is down for that statement would, and counts each refusal:
 * { create(), block(key, status = 'completed'), unblock(key), refusals(), drop() }.
 */
export function settleBlocker(h: Harness, name: string): SettleBlocker {
	const trigger: TriggerSpec = {
		name,
		table: 'processed_events',
		timing: 'BEFORE UPDATE',
		body: `				IF EXISTS (SELECT 1 FROM ${name} b WHERE b.key = NEW.key AND b.status = NEW.status) THEN
					PERFORM nextval('${name}_refusals');
					RAISE EXCEPTION 'e2e: settling % as % refused', NEW.key, NEW.status;
				END IF;
				RETURN NEW;`,
	};
	return {
		create: async () => {
			await h.appQuery(`CREATE TABLE IF NOT EXISTS ${name} (key text PRIMARY KEY, status text NOT NULL)`);
			await h.appQuery(`CREATE SEQUENCE IF NOT EXISTS ${name}_refusals`);
			await createTrigger(h, trigger);
		},
		block: (key, status = 'completed') => h.appQuery(`INSERT INTO ${name} (key, status) VALUES ($1, $2)`, [key, status]),
		unblock: (key) => h.appQuery(`DELETE FROM ${name} WHERE key = $1`, [key]),
		refusals: async () => {
			const { rows } = await h.appQuery(`SELECT last_value, is_called FROM ${name}_refusals`);
			return rows[0].is_called ? Number(rows[0].last_value) : 0;
		},
		drop: async () => {
			await dropTrigger(h, trigger);
			await h.appQuery(`DROP TABLE IF EXISTS ${name}`);
			await h.appQuery(`DROP SEQUENCE IF EXISTS ${name}_refusals`);
		},
	};
}
