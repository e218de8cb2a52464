// The load of the trigger benchmark, in a process of its own (forked by bench/n8n/run.ts): it only
// sends the requests it is given to 127.0.0.1 and times them, so neither the driver's bookkeeping
// nor the API the workflows call shares its event loop. One job at a time over IPC:
//   { url, requests: [{ body, headers }], concurrency } → { latencies, statuses, outcomes, seconds }

export interface LoadJob {
	url: string;
	requests: Array<{ body: string; headers: Record<string, string> }>;
	concurrency: number;
}

export interface LoadResult {
	latencies: number[];
	statuses: number[];
	/** Each answer's x-idempotency-outcome header (null when it had none). */
	outcomes: Array<string | null>;
	seconds: number;
}

/** To the process that forked this one, over IPC. */
const reply = (message: LoadResult | { error: string }) => process.send?.(message);

process.on('message', async (job: LoadJob) => {
	if (!job.url.startsWith('http://127.0.0.1:')) {
		reply({ error: `load goes to 127.0.0.1 only, not ${job.url}` });
		return;
	}
	try {
		reply(await run(job));
	} catch (error) {
		reply({ error: error instanceof Error ? error.message : String(error) });
	}
});

async function run({ url, requests, concurrency }: LoadJob): Promise<LoadResult> {
	const latencies = new Array<number>(requests.length);
	const statuses = new Array<number>(requests.length);
	const outcomes = new Array<string | null>(requests.length);
	let next = 0;
	const worker = async () => {
		while (next < requests.length) {
			const i = next++;
			const started = performance.now();
			const res = await fetch(url, { method: 'POST', headers: requests[i].headers, body: requests[i].body });
			await res.arrayBuffer();
			latencies[i] = performance.now() - started;
			statuses[i] = res.status;
			outcomes[i] = res.headers.get('x-idempotency-outcome');
		}
	};
	const started = performance.now();
	await Promise.all(Array.from({ length: concurrency }, worker));
	return { latencies, statuses, outcomes, seconds: (performance.now() - started) / 1000 };
}
