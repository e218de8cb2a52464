import path from 'node:path';
import { readdirSync, readFileSync } from 'node:fs';

// The harness's one place for what differs between n8n 1.x and 2.x (scripts/lib/n8n-version.js).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const versions = require('../../scripts/lib/n8n-version.js');

const template = (name: string) => JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'templates', `${name}.json`), 'utf8'));

describe('n8n version selection and differences', () => {
	it('takes --n8n-version (both spellings) over N8N_VERSION over the default, and accepts exact versions only', () => {
		expect(versions.selectedN8nVersion({ argv: [], env: {} })).toBe(versions.DEFAULT_N8N_VERSION);
		expect(versions.selectedN8nVersion({ argv: [], env: { N8N_VERSION: '1.123.81' } })).toBe('1.123.81');
		expect(versions.selectedN8nVersion({ argv: ['--n8n-version=1.123.81'], env: { N8N_VERSION: '2.40.7' } })).toBe('1.123.81');
		expect(versions.selectedN8nVersion({ argv: ['--n8n-version', '1.123.81'], env: {} })).toBe('1.123.81');
		for (const bad of ['latest', '1.123', '1.123.81; rm -rf /', '../2.40.7']) {
			expect(() => versions.selectedN8nVersion({ argv: [`--n8n-version=${bad}`], env: {} })).toThrow(/exact/);
		}
	});

	it('publishes on 2.x; sets active on 1.x, except an error workflow, which 1.x runs without and refuses to activate', () => {
		const webhook = template('idempotent-webhook');
		const cleanup = template('scheduled-cleanup');
		const error = template('error-workflow');
		expect(versions.activateWorkflowArgs('2.40.7', webhook)).toEqual(['publish:workflow', `--id=${webhook.id}`]);
		expect(versions.activateWorkflowArgs('2.40.7', error)).toEqual(['publish:workflow', `--id=${error.id}`]);
		expect(versions.activateWorkflowArgs('1.123.81', webhook)).toEqual(['update:workflow', `--id=${webhook.id}`, '--active=true']);
		expect(versions.activateWorkflowArgs('1.123.81', cleanup)).toEqual(['update:workflow', `--id=${cleanup.id}`, '--active=true']);
		expect(versions.activateWorkflowArgs('1.123.81', error)).toBeNull();
		expect(versions.activatesThroughPublication('2.40.7')).toBe(true);
		expect(versions.activatesThroughPublication('1.123.81')).toBe(false);
	});

	it('waits for the workflow index only where n8n builds one (2.x)', () => {
		expect(versions.readyLogLines('2.40.7')).toContain('Finished building workflow dependency index');
		expect(versions.readyLogLines('1.123.81')).toEqual(['Editor is now accessible']);
	});

	it('runs every queue-mode file on 2.x; on 1.x all but the 200-delivery burst, and restarts 1.x workers after a database restart', () => {
		const queueDir = path.join(__dirname, '..', 'e2e', 'queue');
		const files = readdirSync(queueDir).map((name) => path.join(queueDir, name));
		const skipped = (version: string) => {
			const patterns = versions.queueFilesNotRun(version).map((pattern: string) => new RegExp(pattern));
			return files.filter((file) => patterns.some((pattern: RegExp) => pattern.test(file))).map((file) => path.basename(file));
		};
		expect(skipped('2.40.7')).toEqual([]);
		expect(skipped('1.123.81')).toEqual(['burst.e2e.test.js']);
		expect(versions.recoversFromDatabaseRestart('2.40.7')).toBe(true);
		expect(versions.recoversFromDatabaseRestart('1.123.81')).toBe(false);
	});
});
