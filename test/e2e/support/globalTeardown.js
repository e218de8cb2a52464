// Stops n8n and Postgres; the work dir is removed unless E2E_KEEP=1. n8n's log is kept as .e2e/last-n8n.log.
const fs = require('node:fs');
const path = require('node:path');
const { STATE_FILE, E2E_ROOT } = require('./paths');

module.exports = async function globalTeardown() {
	const running = globalThis.__IDEMPOTENCY_E2E_STACK__;
	globalThis.__IDEMPOTENCY_E2E_STACK__ = undefined;
	if (running) await running.stop();
	if (fs.existsSync(STATE_FILE)) {
		const state = JSON.parse(fs.readFileSync(STATE_FILE, 'utf8'));
		fs.rmSync(STATE_FILE, { force: true });
		if (state.logFile && fs.existsSync(state.logFile)) fs.copyFileSync(state.logFile, path.join(E2E_ROOT, 'last-n8n.log'));
		if (process.env.E2E_KEEP !== '1' && state.workDir) fs.rmSync(state.workDir, { recursive: true, force: true });
		else process.stderr.write(`[e2e] kept ${state.workDir} (n8n log: ${state.logFile})\n`);
	}
};
