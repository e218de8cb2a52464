// Linux /proc readings of the n8n process the stack started: CPU time and resident memory.
// The stack does not expose the pid, so it is found by what only that process has: the stack's
// work folder as its cwd and `n8n start` on its command line.
import fs from 'node:fs';
import path from 'node:path';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

export function findN8nPid(workDir: string): number | null {
	const want = path.resolve(workDir);
	for (const entry of fs.readdirSync('/proc')) {
		if (!/^\d+$/.test(entry)) continue;
		try {
			if (fs.readlinkSync(`/proc/${entry}/cwd`) !== want) continue;
			const argv = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
			if (argv.some((arg) => /(^|\/)n8n$/.test(arg)) && argv.includes('start')) return Number(entry);
		} catch {
			// the process ended while we looked, or is not ours to read
		}
	}
	return null;
}

/** User + system CPU seconds the process has used so far. */
export function cpuSeconds(pid: number): number {
	const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
	// Fields after the command name (which may contain spaces) start at the last ')'.
	const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
	return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/** Resident memory now and at its peak since the process started, in MB. */
export function memoryMb(pid: number): { rss: number; peak: number } {
	const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
	const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
	return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

/** Samples RSS every `everyMs` until stopped; returns the highest value seen. */
export function sampleRss(pid: number, everyMs = 50): () => number {
	let max = memoryMb(pid).rss;
	const timer = setInterval(() => {
		try {
			max = Math.max(max, memoryMb(pid).rss);
		} catch {
			// the process ended between two samples: the highest value so far stands
		}
	}, everyMs);
	return () => {
		clearInterval(timer);
		try {
			max = Math.max(max, memoryMb(pid).rss);
		} catch {
			// the process has ended: the highest value sampled stands
		}
		return max;
	};
}
