// Every change of a key row, recorded by a trigger on the app database's key table for the length of
// one test file: who owned the key (owner token, execution id), its status and lease end, and when
// (clock_timestamp, the database's time). It is what tells one double from another: a second
// business row after the first run's lease had ended (a take-over), or after the key was marked
// failed with the step's own error (a step whose statement committed and whose answer was lost).
// Test-only: the shipped package never creates a trigger.

import type { Harness } from './harness';

const HISTORY = 'e2e_key_history';

/** One recorded change of a key row. */
export interface KeyChange {
	id: string;
	at: Date;
	op: 'INSERT' | 'UPDATE' | 'DELETE';
	key: string;
	status: string | null;
	owner_token: string | null;
	execution_id: string | null;
	attempts: number | null;
	locked_until: Date | null;
	last_error: string | null;
}

/** A business row of the app database. */
export interface BusinessRow {
	id: number;
	created_at: Date;
}

/** Starts recording (idempotent). */
export async function recordKeyHistory(h: Harness): Promise<void> {
	await h.appQuery(`CREATE TABLE IF NOT EXISTS ${HISTORY} (
		id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT clock_timestamp(), op text NOT NULL, key text NOT NULL,
		status text, owner_token uuid, execution_id text, attempts int, locked_until timestamptz, last_error text)`);
	await h.appQuery(`CREATE OR REPLACE FUNCTION ${HISTORY}_record() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF TG_OP = 'DELETE' THEN
				INSERT INTO ${HISTORY} (op, key, status, owner_token, execution_id) VALUES (TG_OP, OLD.key, OLD.status, OLD.owner_token, OLD.execution_id);
				RETURN OLD;
			END IF;
			IF TG_OP = 'INSERT' OR OLD.status IS DISTINCT FROM NEW.status OR OLD.owner_token IS DISTINCT FROM NEW.owner_token
				OR OLD.locked_until IS DISTINCT FROM NEW.locked_until OR OLD.last_error IS DISTINCT FROM NEW.last_error THEN
				INSERT INTO ${HISTORY} (op, key, status, owner_token, execution_id, attempts, locked_until, last_error)
				VALUES (TG_OP, NEW.key, NEW.status, NEW.owner_token, NEW.execution_id, NEW.attempts, NEW.locked_until, NEW.last_error);
			END IF;
			RETURN NEW;
		END $$`);
	await h.appQuery(`DROP TRIGGER IF EXISTS ${HISTORY}_trigger ON processed_events`);
	await h.appQuery(
		`CREATE TRIGGER ${HISTORY}_trigger AFTER INSERT OR UPDATE OR DELETE ON processed_events FOR EACH ROW EXECUTE FUNCTION ${HISTORY}_record()`,
	);
}

/** Stops recording and drops what recordKeyHistory created. */
export async function stopKeyHistory(h: Harness): Promise<void> {
	await h.appQuery(`DROP TRIGGER IF EXISTS ${HISTORY}_trigger ON processed_events`);
	await h.appQuery(`DROP FUNCTION IF EXISTS ${HISTORY}_record()`);
	await slowCompletes(h, 0);
	await h.appQuery(`DROP TABLE IF EXISTS ${HISTORY}`);
}

/** The recorded changes of one key, oldest first. */
export async function keyHistory(h: Harness, key: string): Promise<KeyChange[]> {
	const { rows } = await h.appQuery(`SELECT * FROM ${HISTORY} WHERE key = $1 ORDER BY id`, [key]);
	return rows;
}

const CUT_CONNECTION = /terminat|connection|ECONNRESET|57P0|shutting down|starting up/i;

/**
 * Why a key got a business row per owner: { key, explanation, rows, history }. explanation is
 * - 'lease ended': an owner's reservation was taken over by another run at or after its lease
 *   end, never marked failed in between (the first run had not completed the key in time);
 * - 'step cut after commit': the first owner marked it failed with the business step's own
 *   connection error (its INSERT had committed, its answer was lost), and a retry ran again;
 * - null: neither; the guard let a second run through while the first still held the key.
 * `stepName` names the business step as it appears in the failure message.
 */
export async function explainDouble(
	h: Harness,
	key: string,
	{ stepName }: { stepName: string },
): Promise<{ key: string; explanation: 'lease ended' | 'step cut after commit' | null; rows: BusinessRow[]; history: KeyChange[] }> {
	const history = await keyHistory(h, key);
	const { rows } = await h.appQuery('SELECT id, created_at FROM business_log WHERE event_key = $1 ORDER BY id', [key]);
	let explanation: 'lease ended' | 'step cut after commit' | null = null;
	if (rows.length === 2) {
		// The take-over that let a second run write: the first change of owner after the first row.
		const at = history.findIndex(
			(change, i) => i > 0 && change.op === 'UPDATE' && change.owner_token !== history[i - 1].owner_token && change.at > rows[0].created_at,
		);
		const before = history[at - 1];
		const change = history[at];
		if (at > 0 && before.status === 'processing' && before.locked_until && change.at >= before.locked_until) explanation = 'lease ended';
		else if (at > 0 && before.status === 'failed' && before.last_error?.includes(stepName) && CUT_CONNECTION.test(before.last_error))
			explanation = 'step cut after commit';
	}
	return { key, explanation, rows, history };
}

/**
 * Keys among `keys` that their owner completed after its lease had ended (no one had taken them
 * over): [{ key, executionId, leaseEnd, completedAt }]. A run that outlived its lease and still
 * kept the event single.
 */
export async function completedAfterLeaseEnd(
	h: Harness,
	keys: string[],
): Promise<Array<{ key: string; executionId: string | null; leaseEnd: Date; completedAt: Date }>> {
	const { rows } = await h.appQuery(
		`SELECT c.key, c.execution_id, r.locked_until AS lease_end, c.at AS completed_at
		   FROM ${HISTORY} c
		   JOIN LATERAL (SELECT * FROM ${HISTORY} r WHERE r.key = c.key AND r.id < c.id AND r.status = 'processing'
		                  AND r.owner_token = c.owner_token ORDER BY r.id DESC LIMIT 1) r ON true
		  WHERE c.key = ANY($1) AND c.status = 'completed' AND c.at > r.locked_until ORDER BY c.id`,
		[keys],
	);
	return rows.map((row) => ({ key: row.key, executionId: row.execution_id, leaseEnd: row.lease_end, completedAt: row.completed_at }));
}

/**
 * Makes every Complete (a key going from processing to completed) take `seconds` inside Postgres,
 * so that a fault can be aimed at a Complete in flight (see completeInFlight). Off with `seconds` 0.
 */
export async function slowCompletes(h: Harness, seconds: number): Promise<void> {
	await h.appQuery('DROP TRIGGER IF EXISTS e2e_slow_complete ON processed_events');
	await h.appQuery('DROP FUNCTION IF EXISTS e2e_slow_complete()');
	if (!seconds) return;
	await h.appQuery(`CREATE FUNCTION e2e_slow_complete() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF OLD.status = 'processing' AND NEW.status = 'completed' THEN PERFORM pg_sleep(${Number(seconds)}); END IF;
			RETURN NEW;
		END $$`);
	await h.appQuery('CREATE TRIGGER e2e_slow_complete BEFORE UPDATE ON processed_events FOR EACH ROW EXECUTE FUNCTION e2e_slow_complete()');
}

/** Waits (up to timeoutMs) until a Complete statement is running; true when one is. */
export async function completeInFlight(h: Harness, { timeoutMs = 30000 }: { timeoutMs?: number } = {}): Promise<boolean> {
	const deadline = Date.now() + timeoutMs;
	while (Date.now() < deadline) {
		const { rows } = await h.appQuery(
			"SELECT 1 FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%effect_completed_at = coalesce%' AND pid <> pg_backend_pid()",
		);
		if (rows.length > 0) return true;
		await new Promise((resolve) => setTimeout(resolve, 10));
	}
	return false;
}
