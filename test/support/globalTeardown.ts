export default async function globalTeardown(): Promise<void> {
	const global = globalThis as Record<string, unknown>;
	const server = global.__IDEMPOTENCY_PG__ as { stop: () => Promise<void> } | undefined;
	// Both projects run this; the server stops once.
	delete global.__IDEMPOTENCY_PG__;
	await server?.stop();
}
