// How long n8n's event loop stalls while a workload runs, seen from outside: GET /healthz every few
// milliseconds, one at a time. n8n answers it on its main event loop, so a request that arrives
// while the loop is blocked waits for it: the slowest answer minus a typical one is (about) the
// longest stall. The node:sqlite store is synchronous, so this is where its cost would show.
import { percentile } from '../stats';

export interface Lag {
	/** The slowest answer, ms. */
	maxMs: number;
	/** A typical answer (p50), ms. */
	p50Ms: number;
	/** Their difference: the longest stall, ms. */
	stallMs: number;
	/** How many answers came back. */
	samples: number;
}

export function lagProbe(baseUrl: string, { everyMs = 5 } = {}): () => Promise<Lag> {
	let running = true;
	const samples: number[] = [];
	const loop = (async () => {
		while (running) {
			const started = performance.now();
			try {
				const res = await fetch(`${baseUrl}/healthz`);
				await res.arrayBuffer();
				samples.push(performance.now() - started);
			} catch {
				// a refused connection is not a stall measurement
			}
			await new Promise<void>((resolve) => setTimeout(resolve, everyMs));
		}
	})();
	/** Stops probing: the slowest answer, a typical one (p50), and their difference (the longest stall). */
	return async () => {
		running = false;
		await loop;
		const maxMs = samples.length ? Math.max(...samples) : NaN;
		const p50Ms = percentile(samples, 50);
		return { maxMs, p50Ms, stallMs: maxMs - p50Ms, samples: samples.length };
	};
}
