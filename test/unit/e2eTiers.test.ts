import { readFileSync } from 'node:fs';
import path from 'node:path';

// The end-to-end tiers come from a tag line in each file (test/support/e2e/tags.ts).
import * as tags from '../support/e2e/tags';
import { sharedFoldersLast, usesSharedWorkerFolders } from '../support/e2e/sequencer';

const ROOT = path.join(__dirname, '..', '..');
const text = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

describe("end-to-end tiers chosen by each file's tag line", () => {
	const files: string[] = tags.e2eFiles();

	it('finds every end-to-end file, each with a tag line naming at least one topology', () => {
		expect(files.length).toBeGreaterThan(20);
		for (const file of files) expect(tags.tagsOf(file).topologies.length).toBeGreaterThan(0);
	});

	it('runs every file of a topology in the full tier, and a subset in the compatibility tier', () => {
		for (const topology of tags.TOPOLOGIES) {
			const full: string[] = tags.selectE2eFiles({ topology, tier: 'full' });
			const compatibility: string[] = tags.selectE2eFiles({ topology, tier: 'compatibility' });
			expect(full).toEqual(files.filter((file) => tags.tagsOf(file).topologies.includes(topology)));
			expect(compatibility.length).toBeGreaterThan(0);
			expect(compatibility.length).toBeLessThan(full.length);
			for (const file of compatibility) expect(full).toContain(file);
		}
		expect(tags.selectE2eFiles({ topology: 'queue', tier: 'full' })).toContain('test/e2e/queue/soak.e2e.test.ts');
		expect(tags.selectE2eFiles({ topology: 'single', tier: 'full' })).not.toContain('test/e2e/queue/soak.e2e.test.ts');
	});

	it('covers in the compatibility tier every behaviour that differs between n8n lines (the helpers of n8nVersion.js the tests call)', () => {
		// Each helper answers differently on 1.x and 2.x; some file of the compatibility tier must exercise it.
		const lineDependent = ['activateWorkflowArgs', 'servedWorkflowNodesSql', 'recoversFromDatabaseRestart', 'runFromManualTrigger'];
		const compatibility = new Set([
			...tags.selectE2eFiles({ topology: 'single', tier: 'compatibility' }),
			...tags.selectE2eFiles({ topology: 'queue', tier: 'compatibility' }),
		]);
		for (const helper of lineDependent) {
			const users = files.filter((file) => text(file).includes(helper));
			expect(users.length).toBeGreaterThan(0);
			expect({ helper, inCompatibilityTier: users.some((file) => compatibility.has(file)) }).toEqual({ helper, inCompatibilityTier: true });
		}
		// The answers table, the seed experiment, the installer and the user's own step, as the tier promises.
		for (const file of [
			'answers.e2e.test.ts',
			'seed-experiment.e2e.test.ts',
			'community-installer.e2e.test.ts',
			'user-business-step.e2e.test.ts',
			'queue/soak.e2e.test.ts',
		]) {
			expect(compatibility).toContain(`test/e2e/${file}`);
		}
	});

	it('refuses a file without a tag line, an unknown tag, or an unknown tier', () => {
		expect(() => tags.parseTags('a.e2e.test.js', '// no tag line\n')).toThrow(/no "\/\/ e2e-tags:" line/);
		expect(() => tags.parseTags('a.e2e.test.js', '// e2e-tags: single sometimes\n')).toThrow(/unknown e2e tag\(s\) sometimes/);
		expect(() => tags.parseTags('a.e2e.test.js', '// e2e-tags: compatibility\n')).toThrow(/no topology/);
		expect(tags.parseTags('a.e2e.test.js', '// about it\n// e2e-tags: queue compatibility\n')).toEqual({
			topologies: ['queue'],
			compatibility: true,
			compatibleIn: ['queue'],
		});
		expect(tags.parseTags('a.e2e.test.js', '// e2e-tags: single queue compatibility:single\n')).toEqual({
			topologies: ['single', 'queue'],
			compatibility: true,
			compatibleIn: ['single'],
		});
		expect(tags.parseTags('a.e2e.test.js', '// e2e-tags: single queue\n')).toEqual({
			topologies: ['single', 'queue'],
			compatibility: false,
			compatibleIn: [],
		});
		expect(() => tags.selectedTier({ E2E_TIER: 'smoke' })).toThrow(/E2E_TIER must be/);
		expect(tags.selectedTier({})).toBe('full');
	});

	it("runs the queue-mode files that share main's folder with the workers together, after the others, each group in jest's order", () => {
		const queueFiles: string[] = tags.selectE2eFiles({ topology: 'queue', tier: 'full' });
		const shared = queueFiles.filter((file) => usesSharedWorkerFolders(text(file)));
		// The embedded store's files and At Once; the trigger's files run the workers in folders of their own.
		expect(shared).toEqual(
			expect.arrayContaining(['test/e2e/idempotent-webhook-at-once.e2e.test.ts', 'test/e2e/embedded-checklist.e2e.test.ts']),
		);
		expect(shared).not.toContain('test/e2e/idempotent-webhook-trigger.e2e.test.ts');
		expect(shared).not.toContain('test/e2e/queue/embedded-separate-folders.e2e.test.ts');
		const ordered = sharedFoldersLast(queueFiles, (file) => shared.includes(file));
		// Every file still runs, and the workers switch to main's folder once: no file after the first shared one runs on folders of its own.
		expect([...ordered].sort()).toEqual([...queueFiles].sort());
		expect(ordered.slice(ordered.findIndex((file) => shared.includes(file))).filter((file) => !shared.includes(file))).toEqual([]);
		expect(sharedFoldersLast(['a', 'S1', 'b', 'S2', 'c'], (file) => file.startsWith('S'))).toEqual(['a', 'b', 'c', 'S1', 'S2']);
	});
});
