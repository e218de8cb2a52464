/**
 * Whether n8n's readiness check at `origin` answers 200 within `withinMs`. n8n answers every request
 * 503 ("Database is not ready!") while its database ping fails: after a burst that timed the ping
 * out, or a database restart n8n 1.x's main process may not recover from.
 */
export async function n8nReadyWithin(origin: string, withinMs: number): Promise<boolean> {
	const until = Date.now() + withinMs;
	while (Date.now() < until) {
		const status = await fetch(`${origin}/healthz/readiness`).then(
			(answer) => answer.status,
			() => 0,
		);
		if (status === 200) return true;
		await new Promise((resolve) => setTimeout(resolve, 250));
	}
	return false;
}
