// The longest event-loop stall: a 1 ms interval timer running from before the work starts; the
// longest gap between two of its runs is the longest any timer, I/O callback or HTTP request of
// this process would have waited. (perf_hooks' monitorEventLoopDelay misses a stall that begins
// before its first tick.) On a shared machine a gap also holds time the main thread sat ready but
// waited for a CPU (other jobs' load); Linux counts that time per thread (schedstat), so each gap
// is also given without it: the stall the work itself caused (running or waiting for I/O).
import fs from 'node:fs';

const SCHEDSTAT = `/proc/self/task/${process.pid}/schedstat`;
function runQueueWaitMs(): number {
	try {
		return Number(fs.readFileSync(SCHEDSTAT, 'utf8').split(' ')[1]) / 1e6;
	} catch {
		return 0;
	}
}

export interface Stall {
	/** The longest gap between two runs of the 1 ms timer, ms. */
	stallMs: number;
	/** The same without the time the thread waited for a CPU. */
	ownStallMs: number;
}

/** Starts the probe; the function it returns stops it and gives the longest stall since the start. */
export function stallProbe(): () => Stall {
	let last = performance.now();
	let lastWait = runQueueWaitMs();
	let longest = 0;
	let longestOwn = 0;
	const sample = () => {
		const now = performance.now();
		const wait = runQueueWaitMs();
		longest = Math.max(longest, now - last);
		longestOwn = Math.max(longestOwn, now - last - (wait - lastWait));
		last = now;
		lastWait = wait;
	};
	const timer = setInterval(sample, 1);
	return () => {
		clearInterval(timer);
		sample();
		return { stallMs: longest, ownStallMs: longestOwn };
	};
}
