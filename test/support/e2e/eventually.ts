// Bounded waiting for what n8n or the templates finish after a test has seen its answer: n8n saves an
// execution's status before its custom data, the error workflow completes or releases keys after
// the failed run, a killed client's database session ends after the kill. Never unbounded.
import { sleep } from '../stack/childProcesses';

/** Re-runs `read` until `done(result)` or `timeoutMs` have passed; returns the last result either way. */
export async function eventually<T>(
	read: () => T | Promise<T>,
	done: (result: T) => boolean,
	{ timeoutMs = 15000, everyMs = 250 }: { timeoutMs?: number; everyMs?: number } = {},
): Promise<T> {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const result = await read();
		if (done(result) || Date.now() > deadline) return result;
		await sleep(everyMs);
	}
}

/** `promise`, or a rejection naming what never came once `ms` have passed. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
	let timer: NodeJS.Timeout | undefined;
	try {
		return await Promise.race([
			promise,
			new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms))),
		]);
	} finally {
		clearTimeout(timer);
	}
}
