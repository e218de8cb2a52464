// Starts one real Postgres for the integration and conformance suites (embedded, or DATABASE_URL
// when set). Jest runs each project's global setup in its own parent process: the second project
// finds the first one's server and shares it.
import { startPostgres } from './stack/postgresServer';
import { timed } from './stack/timings';

export default async function globalSetup(): Promise<void> {
	const global = globalThis as Record<string, unknown>;
	if (global.__IDEMPOTENCY_PG__) return;
	const server = await timed('Postgres start (fast suites)', () => startPostgres());
	process.env.IDEMPOTENCY_TEST_DATABASE_URL = server.url;
	global.__IDEMPOTENCY_PG__ = server;
}
