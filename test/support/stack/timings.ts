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

/** A step's time in a run: its name as the run's table prints it, and its seconds. */
export interface StepTime {
	name: string;
	seconds: number;
}

/**
 * A warning for each step that took over 20 % longer than the figure recorded for it in `recordedText`
 * (docs/testing.md: the table between the `ci-step-seconds` markers), so that growth is seen before
 * it breaks CI's budget; one warning when nothing is recorded. The run still passes.
 */
export function growthWarnings(recordedText: string, measured: StepTime[]): string[] {
	const table = /<!-- ci-step-seconds:start -->([\s\S]*?)<!-- ci-step-seconds:end -->/.exec(recordedText)?.[1] ?? '';
	const recorded = new Map<string, number>();
	for (const match of table.matchAll(/^\|\s*([^|]+?)\s*\|\s*(\d+)\s*\|/gm)) recorded.set(match[1], Number(match[2]));
	if (recorded.size === 0) return ['', 'warning: no step times recorded in docs/testing.md: growth not checked'];
	const warnings = measured.flatMap(({ name, seconds }) => {
		const figure = recorded.get(name);
		return figure && seconds > figure * 1.2
			? [
					`warning: ${name} took ${seconds.toFixed(0)} s, ${((seconds / figure - 1) * 100).toFixed(0)} % over the ${figure} s recorded in docs/testing.md`,
				]
			: [];
	});
	return warnings.length > 0 ? ['', ...warnings] : [];
}
