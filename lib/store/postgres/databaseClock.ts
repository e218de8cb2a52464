import { performance } from 'node:perf_hooks';

/**
 * The database's clock, as this process last saw it. Lease ends are database times; the n8n host's
 * wall clock may be off by any amount (or jump), so it is never compared with them. A sample is a
 * database time read in a round trip the store makes anyway (the schema check, a Complete's answer),
 * paired with the host's monotonic clock at that moment; the database's time now is the sample
 * plus the monotonic time since.
 */
interface Sample {
	databaseMs: number;
	monotonicMs: number;
}

const samples = new WeakMap<object, Sample>();

/** Milliseconds on the host's monotonic clock: for durations and deadlines, unaffected by wall-clock changes. */
export function monotonicNow(): number {
	return performance.now();
}

/** Records a database time read from `source` (a pool) in a round trip that just answered. */
export function recordDatabaseTime(source: object, databaseTime: unknown, monotonicMs = monotonicNow()): void {
	if (!(databaseTime instanceof Date) || Number.isNaN(databaseTime.getTime())) return;
	samples.set(source, { databaseMs: databaseTime.getTime(), monotonicMs });
}

/**
 * The monotonic time at which the database's clock reads `databaseTime`; undefined when no round
 * trip of `source` has reported the database's time yet.
 */
export function monotonicAt(source: object, databaseTime: Date): number | undefined {
	const sample = samples.get(source);
	if (!sample) return undefined;
	return sample.monotonicMs + (databaseTime.getTime() - sample.databaseMs);
}
