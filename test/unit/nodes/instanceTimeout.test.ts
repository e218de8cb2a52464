import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { instanceTimeoutSeconds } from '../../../nodes/shared/instanceTimeout';

describe("the instance's default workflow timeout, as n8n reads it", () => {
	const folder = mkdtempSync(path.join(tmpdir(), 'instance-timeout-'));
	const file = (name: string, text: string) => {
		const written = path.join(folder, name);
		writeFileSync(written, text);
		return written;
	};

	it.each([
		{ label: 'EXECUTIONS_TIMEOUT', env: { EXECUTIONS_TIMEOUT: '28800' }, seconds: 28800 },
		{ label: 'EXECUTIONS_TIMEOUT with spaces', env: { EXECUTIONS_TIMEOUT: ' 600 ' }, seconds: 600 },
		{ label: 'n8n\'s "none" (-1)', env: { EXECUTIONS_TIMEOUT: '-1' }, seconds: -1 },
		{ label: 'not a number', env: { EXECUTIONS_TIMEOUT: 'eight hours' }, seconds: undefined },
		{ label: 'empty', env: { EXECUTIONS_TIMEOUT: '' }, seconds: undefined },
		{ label: 'nothing set', env: {}, seconds: undefined },
	])('$label', ({ env, seconds }) => {
		expect(instanceTimeoutSeconds(env)).toBe(seconds);
	});

	it('EXECUTIONS_TIMEOUT_FILE (a secret file with its newline), before the config files', () => {
		const env = {
			EXECUTIONS_TIMEOUT_FILE: file('timeout', '36000\n'),
			N8N_CONFIG_FILES: file('config.json', '{"executions":{"timeout":60}}'),
		};
		expect(instanceTimeoutSeconds(env)).toBe(36000);
	});

	it("n8n 1.x's N8N_CONFIG_FILES: the first that sets it; an unreadable or broken file is skipped", () => {
		const env = {
			N8N_CONFIG_FILES: [
				path.join(folder, 'missing.json'),
				file('broken.json', '{'),
				file('other.json', '{"executions":{"mode":"queue"}}'),
				file('set.json', '{"executions":{"timeout":7200}}'),
			].join(','),
		};
		expect(instanceTimeoutSeconds(env)).toBe(7200);
	});

	it('an unreadable EXECUTIONS_TIMEOUT_FILE sets nothing', () => {
		expect(instanceTimeoutSeconds({ EXECUTIONS_TIMEOUT_FILE: path.join(folder, 'missing') })).toBeUndefined();
	});
});
