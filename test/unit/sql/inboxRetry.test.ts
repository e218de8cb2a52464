import { readFileSync } from 'node:fs';
import path from 'node:path';

import { SQL_ROOT } from '../../../lib/store/sqlText';

/*
 * The inbox's retry rule (lib/store/rules.ts inboxRetryDelayMs) is written once per backend in SQL,
 * in every statement that fails a run: fail, fail by execution, and the two releases. Each file
 * marks it `-- <inbox-retry>` … `-- </inbox-retry>`; the conformance suite checks the rule itself, this
 * that no statement drifts from the others.
 */

const STATEMENTS: Record<string, string[]> = {
	postgres: ['fail.sql', 'fail_execution.sql', 'release.sql', 'release_execution.sql'],
	embedded: ['fail.sql', 'fail_execution.sql', 'release_inbox.sql', 'release_execution_inbox.sql'],
};

function retryBlock(backend: string, file: string): string {
	const lines = readFileSync(path.join(SQL_ROOT, backend, 'queries', file), 'utf8').split('\n');
	const start = lines.findIndex((line) => line.trim() === '-- <inbox-retry>');
	const end = lines.findIndex((line) => line.trim() === '-- </inbox-retry>');
	expect(start).toBeGreaterThanOrEqual(0);
	expect(end).toBeGreaterThan(start + 1);
	return lines.slice(start + 1, end).join('\n');
}

describe.each(Object.entries(STATEMENTS))('the inbox retry rule in sql/%s', (backend, files) => {
	it('is the same text in every statement that fails a run', () => {
		const [first, ...others] = files.map((file) => retryBlock(backend, file));
		for (const other of others) expect(other).toBe(first);
	});
});
