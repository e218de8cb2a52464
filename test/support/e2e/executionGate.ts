// Holds back the start of one workflow's executions in n8n's own database, so that a test can kill
// an n8n process between its answer to a delivery (or its claim of a retry) and the execution's
// start, and prove that nothing had started: n8n inserts an execution's row before it runs anything,
// and a row trigger on execution_entity makes that insert wait for an advisory lock the test holds.
// Once let go, a held insert fails (its process is dead by then): no execution of a killed process
// ever appears. Executions of other workflows, and of this one before close() and after open(), pass.
import { Client } from 'pg';
import type { Harness } from './harness';

/** What executionGate returns. */
export interface ExecutionGate {
	/** From now on, the inserts of `workflowId`'s executions wait. */
	close: (workflowId: string) => Promise<void>;
	/** Inserts waiting at the gate now (each is an execution that has not started). */
	held: () => Promise<number>;
	/** Later inserts pass; the held ones fail. */
	open: () => Promise<void>;
	/** Removes the trigger, its function and table, and ends the session holding the lock. */
	drop: () => Promise<void>;
}

/** `name` names the trigger, its function and its table; `lock` is the advisory lock's key (kept below 2^31). */
export async function executionGate(h: Harness, { name, lock }: { name: string; lock: number }): Promise<ExecutionGate> {
	// The lock belongs to a session: this client holds it while the gate is closed.
	const session = new Client({ connectionString: h.state.n8nDbUrl });
	await session.connect();
	await session.query(`CREATE TABLE IF NOT EXISTS ${name} (workflow_id text PRIMARY KEY)`);
	await session.query(`CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF EXISTS (SELECT 1 FROM ${name} g WHERE g.workflow_id = NEW."workflowId") THEN
				PERFORM pg_advisory_xact_lock_shared(${lock});
				RAISE EXCEPTION 'e2e: this execution was held at the gate and never started';
			END IF;
			RETURN NEW;
		END $$`);
	await session.query(`DROP TRIGGER IF EXISTS ${name} ON execution_entity`);
	await session.query(`CREATE TRIGGER ${name} BEFORE INSERT ON execution_entity FOR EACH ROW EXECUTE FUNCTION ${name}()`);
	let closed = false;
	const open = async () => {
		await session.query(`DELETE FROM ${name}`);
		if (closed) await session.query('SELECT pg_advisory_unlock($1)', [lock]);
		closed = false;
	};
	return {
		close: async (workflowId) => {
			if (!closed) await session.query('SELECT pg_advisory_lock($1)', [lock]);
			closed = true;
			await session.query(`INSERT INTO ${name} (workflow_id) VALUES ($1) ON CONFLICT DO NOTHING`, [workflowId]);
		},
		held: async () => {
			// A bigint advisory key below 2^31 shows as classid 0, objid the key, objsubid 1.
			const { rows } = await session.query(
				`SELECT count(*)::int AS held FROM pg_locks WHERE locktype = 'advisory' AND classid = 0 AND objid = $1 AND objsubid = 1 AND NOT granted`,
				[lock],
			);
			return rows[0].held as number;
		},
		open,
		drop: async () => {
			await open();
			await session.query(`DROP TRIGGER IF EXISTS ${name} ON execution_entity`);
			await session.query(`DROP FUNCTION IF EXISTS ${name}()`);
			await session.query(`DROP TABLE IF EXISTS ${name}`);
			await session.end();
		},
	};
}
