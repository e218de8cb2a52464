// Bounded waiting for what n8n or the templates finish after a test has seen its answer: n8n saves an
// execution's status before its custom data, the error workflow completes or releases keys after
// the failed run, a killed client's database session ends after the kill. Never unbounded.
const { sleep } = require('../stack/childProcesses');

/** Re-runs `read` until `done(result)` or `timeoutMs` have passed; returns the last result either way. */
async function eventually(read, done, { timeoutMs = 15000, everyMs = 250 } = {}) {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const result = await read();
		if (done(result) || Date.now() > deadline) return result;
		await sleep(everyMs);
	}
}

module.exports = { eventually };
