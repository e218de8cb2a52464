// Where the time of a test run goes: each phase worth naming (a Postgres or Redis start, an n8n
// install, n8n's start) is recorded as one JSON line in IDEMPOTENCY_TIMINGS_FILE when it is set
// (scripts/test-all.ts sets it, and IDEMPOTENCY_TIMINGS_STEP to the step that runs), and read back
// into the run's closing table. Without the variable nothing is written. Node 20 compatible.
import fs from 'node:fs';

/** One recorded phase: the step that ran it (null outside test:all), its name and seconds. */
export interface Phase {
	step: string | null;
	phase: string;
	seconds: number;
}

/** Appends one finished phase: its name and seconds, under the step that ran it. */
export function recordPhase(name: string, seconds: number): void {
	const file = process.env.IDEMPOTENCY_TIMINGS_FILE;
	if (!file) return;
	const line: Phase = { step: process.env.IDEMPOTENCY_TIMINGS_STEP ?? null, phase: name, seconds: Math.round(seconds * 10) / 10 };
	fs.appendFileSync(file, `${JSON.stringify(line)}\n`);
}

function isPromise(value: unknown): value is Promise<unknown> {
	return Boolean(value) && typeof (value as { then?: unknown }).then === 'function';
}

/** Runs `fn` (sync or async) and records its time under `name`, also when it throws. */
export function timed<T>(name: string, fn: () => T): T {
	const started = process.hrtime.bigint();
	const done = () => recordPhase(name, Number(process.hrtime.bigint() - started) / 1e9);
	let result: T;
	try {
		result = fn();
	} catch (error) {
		done();
		throw error;
	}
	if (isPromise(result)) return result.finally(done) as T;
	done();
	return result;
}

/** Every recorded phase of a timings file ([] when there is none). */
export function readPhases(file: string): Phase[] {
	if (!fs.existsSync(file)) return [];
	return fs
		.readFileSync(file, 'utf8')
		.split('\n')
		.filter(Boolean)
		.map((line) => JSON.parse(line) as Phase);
}
