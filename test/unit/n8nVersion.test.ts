import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';

// The harness's one place for what differs between n8n 1.x and 2.x (test/support/stack/n8nVersion.ts).
import * as versions from '../support/stack/n8nVersion';

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

	it('proves the newest installable 2.x first (the default, full tier), then the 1.x line; neither 2.41.3 nor the superseded 2.40.7', () => {
		expect(versions.PROVEN_N8N_VERSIONS).toEqual(['2.41.1', '1.123.81']);
		// 2.41.1 supersedes 2.40.7 on the 2.x line.
		expect(versions.PROVEN_N8N_VERSIONS).not.toContain('2.40.7');
		expect(versions.DEFAULT_N8N_VERSION).toBe('2.41.1');
		// 2.41.3 does not install: its dependency @n8n/agents@0.26.2 is not on the npm registry.
		expect(versions.PROVEN_N8N_VERSIONS).not.toContain('2.41.3');
		for (const version of versions.PROVEN_N8N_VERSIONS)
			expect(versions.selectedN8nVersion({ argv: [], env: { N8N_VERSION: version } })).toBe(version);
	});

	it('installs every proven line on its Node major: 2.x on Node 24, 1.x on Node 22 (scripts/ensure-n8n.sh)', () => {
		// A cache holding a finished install of each line on both Node majors: the script picks one and
		// prints its directory without installing anything.
		const cache = mkdtempSync(path.join(os.tmpdir(), 'ensure-n8n-'));
		try {
			for (const version of versions.PROVEN_N8N_VERSIONS) {
				for (const node of ['24.22.3', '22.23.5']) {
					const dir = path.join(cache, `n8n-${version}-node-${node}`);
					mkdirSync(path.join(dir, 'node_modules', '.bin'), { recursive: true });
					writeFileSync(path.join(dir, 'node_modules', '.bin', 'n8n'), '#!/bin/sh\n');
					chmodSync(path.join(dir, 'node_modules', '.bin', 'n8n'), 0o755);
					writeFileSync(path.join(dir, '.complete'), '');
				}
			}
			const script = path.join(__dirname, '..', '..', 'scripts', 'ensure-n8n.sh');
			const chosen = (version: string) => {
				const env = { PATH: process.env.PATH, HOME: process.env.HOME, N8N_IDEMPOTENCY_CACHE: cache };
				return path.basename(execFileSync('bash', [script, version], { env, encoding: 'utf8' }).trim());
			};
			expect(versions.PROVEN_N8N_VERSIONS.map(chosen)).toEqual(['n8n-2.41.1-node-24.22.3', 'n8n-1.123.81-node-22.23.5']);
		} finally {
			rmSync(cache, { recursive: true, force: true });
		}
	});

	it('treats every proven 2.x line alike (publication, index, every queue file, database restart) and 1.x as 1.x', () => {
		const twos = versions.PROVEN_N8N_VERSIONS.filter((version: string) => version.startsWith('2.'));
		expect(twos).toEqual(['2.41.1']);
		// Any 2.x the harness is pointed at (N8N_VERSION=2.40.7 still runs) is treated as 2.x.
		for (const version of [...twos, '2.40.7']) {
			expect(versions.activatesThroughPublication(version)).toBe(true);
			expect(versions.readyLogLines(version)).toContain('Finished building workflow dependency index');
			expect(versions.queueFilesNotRun(version)).toEqual([]);
			expect(versions.recoversFromDatabaseRestart(version)).toBe(true);
		}
		expect(versions.activatesThroughPublication('1.123.81')).toBe(false);
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
		// The stack runs those commands' UPDATE itself: 2.x only where the version was saved to history.
		expect(versions.activateWorkflowsSql('2.40.7')).toContain('workflow_history');
		expect(versions.activateWorkflowsSql('1.123.81')).not.toContain('workflow_history');
		for (const version of ['2.40.7', '1.123.81'])
			expect(versions.activateWorkflowsSql(version)).toMatch(/"activeVersionId" = w."versionId"/);
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
		expect(skipped('1.123.81')).toEqual([expect.stringMatching(/^burst\.e2e\.test\.[jt]s$/)]);
		expect(versions.recoversFromDatabaseRestart('2.40.7')).toBe(true);
		expect(versions.recoversFromDatabaseRestart('1.123.81')).toBe(false);
	});
});
