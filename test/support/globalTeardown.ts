export default async function globalTeardown(): Promise<void> {
	const server = (globalThis as Record<string, unknown>).__IDEMPOTENCY_PG__ as { stop: () => Promise<void> } | undefined;
	await server?.stop();
}
