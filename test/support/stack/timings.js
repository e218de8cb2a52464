// Where the time of a test run goes: each phase worth naming (a Postgres or Redis start, an n8n
// install, n8n's start) is recorded as one JSON line in IDEMPOTENCY_TIMINGS_FILE when it is set
// (scripts/test-all.js sets it, and IDEMPOTENCY_TIMINGS_STEP to the step that runs), and read back
// into the run's closing table. Without the variable nothing is written. Plain CommonJS, Node 20.
const fs = require('node:fs');

/** Appends one finished phase: its name and seconds, under the step that ran it. */
function recordPhase(name, seconds) {
	const file = process.env.IDEMPOTENCY_TIMINGS_FILE;
	if (!file) return;
	const line = { step: process.env.IDEMPOTENCY_TIMINGS_STEP ?? null, phase: name, seconds: Math.round(seconds * 10) / 10 };
	fs.appendFileSync(file, `${JSON.stringify(line)}\n`);
}

/** Runs `fn` (sync or async) and records its time under `name`, also when it throws. */
function timed(name, fn) {
	const started = process.hrtime.bigint();
	const done = () => recordPhase(name, Number(process.hrtime.bigint() - started) / 1e9);
	let result;
	try {
		result = fn();
	} catch (error) {
		done();
		throw error;
	}
	if (result && typeof result.then === 'function') return result.finally(done);
	done();
	return result;
}

/** Every recorded phase of a timings file ([] when there is none). */
function readPhases(file) {
	if (!fs.existsSync(file)) return [];
	return fs
		.readFileSync(file, 'utf8')
		.split('\n')
		.filter(Boolean)
		.map((line) => JSON.parse(line));
}

module.exports = { recordPhase, timed, readPhases };
