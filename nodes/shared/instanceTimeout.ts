import { readFileSync } from 'node:fs';

/**
 * The instance's default workflow timeout in seconds, as n8n reads it for a workflow without its own
 * (EXECUTIONS_TIMEOUT, or the file EXECUTIONS_TIMEOUT_FILE names, else n8n 1.x's N8N_CONFIG_FILES
 * `{ "executions": { "timeout": … } }`); undefined when none is set or it is not a number.
 */
export function instanceTimeoutSeconds(env: NodeJS.ProcessEnv = process.env): number | undefined {
	const fromEnv = env.EXECUTIONS_TIMEOUT ?? readText(env.EXECUTIONS_TIMEOUT_FILE);
	if (fromEnv !== undefined) return seconds(fromEnv.trim());
	for (const file of (env.N8N_CONFIG_FILES ?? '').split(',').filter(Boolean)) {
		const text = readText(file);
		if (text === undefined) continue;
		try {
			const timeout = (JSON.parse(text) as { executions?: { timeout?: unknown } }).executions?.timeout;
			if (timeout !== undefined) return seconds(timeout);
		} catch {
			// n8n skips a config file it cannot parse.
		}
	}
	return undefined;
}

function seconds(value: unknown): number | undefined {
	const parsed = typeof value === 'number' ? value : typeof value === 'string' && value !== '' ? Number(value) : NaN;
	return Number.isFinite(parsed) ? parsed : undefined;
}

function readText(file: string | undefined): string | undefined {
	if (!file) return undefined;
	try {
		return readFileSync(file, 'utf8');
	} catch {
		return undefined;
	}
}
