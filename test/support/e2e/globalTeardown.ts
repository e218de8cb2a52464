// Stops n8n, its workers, Redis and Postgres; the work dir is removed unless E2E_KEEP=1. Logs are kept in .e2e/ (last-n8n-<topology>.log, last-n8n-worker-N.log, last-n8n-webhook.log).
import fs from 'node:fs';
import path from 'node:path';
import { killEverythingNow } from '../stack/childProcesses';
import { within } from './eventually';
import { STATE_FILE, E2E_ROOT, type E2eState } from './paths';

/** How long the stack may take to stop before every process it started is killed. */
const STOP_BUDGET_MS = 120000;

// __IDEMPOTENCY_E2E_STACK__ and __IDEMPOTENCY_E2E_CONTROL__: set by globalSetup.ts (declared there), in this same process.
export default async function globalTeardown(): Promise<void> {
	const running = globalThis.__IDEMPOTENCY_E2E_STACK__;
	globalThis.__IDEMPOTENCY_E2E_STACK__ = undefined;
	const stopping = (async () => {
		await globalThis.__IDEMPOTENCY_E2E_CONTROL__?.close();
		if (running) await running.stop();
	})();
	await within(stopping, STOP_BUDGET_MS, 'not done').catch((error: Error) => {
		process.stderr.write(`[e2e] stopping the stack: ${error.message}; every process it started is killed\n`);
		killEverythingNow();
	});
	if (fs.existsSync(STATE_FILE)) {
		const state: E2eState = JSON.parse(fs.readFileSync(STATE_FILE, 'utf8'));
		fs.rmSync(STATE_FILE, { force: true });
		if (state.logFile && fs.existsSync(state.logFile))
			fs.copyFileSync(state.logFile, path.join(E2E_ROOT, `last-n8n-${state.topology}.log`));
		for (const file of fs.existsSync(state.workDir) ? fs.readdirSync(state.workDir) : []) {
			if (/^n8n-(worker-\d+|webhook)\.log$/.test(file))
				fs.copyFileSync(path.join(state.workDir, file), path.join(E2E_ROOT, `last-${file}`));
		}
		if (process.env.E2E_KEEP !== '1' && state.workDir) fs.rmSync(state.workDir, { recursive: true, force: true });
		else process.stderr.write(`[e2e] kept ${state.workDir} (n8n log: ${state.logFile})\n`);
	}
}
