import { createHash } from 'node:crypto';
import type { Pool } from 'pg';

/**
 * Named prepared statements: Postgres parses and plans a statement once per connection instead of
 * on every call. A statement's name is a hash of its text, so each table and variant gets its own
 * name, a changed statement (a new package version) never reuses an old one, and two connections
 * that meet on one server session (a transaction pooler) can only ever mean the same statement.
 *
 * A pooler that does not keep them (PgBouncer in transaction mode before 1.21, or without
 * max_prepared_statements) answers a later call with 26000 or 42P05; a migration that changes a
 * returned column's type makes Postgres refuse the old plan with 0A000. Each is an error before
 * anything ran, so the statement is sent again unnamed on a new connection; after a pooler's
 * error the pool stops naming statements for good.
 */
const unnamedPools = new WeakSet<Pool>();

/** From now on this pool's statements go unnamed (the credential's Prepared Statements off, or a pooler that lost one). */
export function sendUnnamed(pool: Pool): void {
	unnamedPools.add(pool);
}

export function namesStatements(pool: Pool): boolean {
	return !unnamedPools.has(pool);
}

const names = new Map<string, string>();
// Statement texts are a few per table; the bound only guards against an unbounded number of tables.
const MAX_NAMES = 1000;

/** The statement's name on the server: `idem_` and 128 bits of the text's SHA-256 (well within Postgres's 63 bytes). */
export function statementName(text: string): string {
	let name = names.get(text);
	if (name === undefined) {
		if (names.size >= MAX_NAMES) names.clear();
		name = `idem_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
		names.set(text, name);
	}
	return name;
}

/**
 * Why a named statement failed where an unnamed one would not: `pooler` (the server session does
 * not hold what this connection prepared), `stale` (the table changed under a cached plan), or
 * undefined for any other error. Postgres rolled the statement back in every case.
 */
export function preparedStatementFailure(error: unknown): 'pooler' | 'stale' | undefined {
	const code = (error as { code?: unknown } | null)?.code;
	// 26000 invalid_sql_statement_name: "prepared statement … does not exist"; 42P05 duplicate_prepared_statement.
	if (code === '26000' || code === '42P05') return 'pooler';
	// 0A000: "cached plan must not change result type". Any other 0A000 fails again unnamed and is reported then.
	if (code === '0A000') return 'stale';
	return undefined;
}
