// The order of the end-to-end files: jest's own (known-slow or largest first), then the files that
// run queue mode's workers in main's n8n folder moved together after the others. The stack starts
// its workers in folders of their own; each switch restarts both workers (two n8n boots), and in
// jest's order alone the full tier's queue-mode files switch six times.
import fs from 'node:fs';
import Sequencer from '@jest/test-sequencer';

/** A test file as jest's sequencer sees it (its path is what this reads). */
type TestFile = Parameters<Sequencer['sort']>[0][number];

/**
 * Whether a test file's source puts the workers in main's folder: useWorkerFolders(h, 'shared'), or
 * the embedded template's start (useEmbeddedWebhook, startEmbeddedWebhook), which does so.
 */
export function usesSharedWorkerFolders(source: string): boolean {
	return /useWorkerFolders\(h, 'shared'\)|useEmbeddedWebhook\(|startEmbeddedWebhook\(/.test(source);
}

/** `files` in their order, those for which `shared` holds moved, still in their order, after the rest. */
export function sharedFoldersLast<T>(files: T[], shared: (file: T) => boolean): T[] {
	return [...files.filter((file) => !shared(file)), ...files.filter(shared)];
}

export default class WorkerFolderSequencer extends Sequencer {
	async sort(tests: TestFile[]): Promise<TestFile[]> {
		const ordered = await super.sort(tests);
		return sharedFoldersLast(ordered, (test) => usesSharedWorkerFolders(fs.readFileSync(test.path, 'utf8')));
	}
}
