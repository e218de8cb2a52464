// Starts one real Postgres for the integration suite (embedded, or DATABASE_URL when set).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startPostgres } = require('../../scripts/lib/postgres-server');

export default async function globalSetup(): Promise<void> {
	const server = await startPostgres();
	process.env.IDEMPOTENCY_TEST_DATABASE_URL = server.url;
	(globalThis as Record<string, unknown>).__IDEMPOTENCY_PG__ = server;
}
