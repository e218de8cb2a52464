import { readFileSync } from 'node:fs';
import path from 'node:path';

import type { IExecuteFunctions } from 'n8n-workflow';

import { embeddedStoreId } from '../../lib/store/embedded';
import { STORE_ID_ENV, isQueueMode, sharedFileVerdict } from '../../lib/store/embedded/sharedFile';

/** The package's folder in n8n's storage folder, and its one key file: the same for every node of the package. */
export const EMBEDDED_FOLDER = 'n8n-nodes-idempotency';
export const EMBEDDED_FILE = 'keys.sqlite';

/**
 * The key file for a node whose n8n storage path is `storagePath`. n8n gives each node type its
 * own storage folder (`<n8n folder>/storage/<node type>`), so the file goes one level up, in the
 * package's own folder: every node of the package opens the same file. Never n8n's own database.
 */
export function embeddedStoreFile(storagePath: string, nodeType: string): string {
	const normalized = path.normalize(storagePath);
	const typeFolder = path.normalize(nodeType);
	// A scoped node type (@scope/package.node) is two folders deep; strip it whole.
	const storageRoot = normalized.endsWith(path.sep + typeFolder)
		? normalized.slice(0, normalized.length - typeFolder.length - 1)
		: path.dirname(normalized);
	return path.join(storageRoot, EMBEDDED_FOLDER, EMBEDDED_FILE);
}

/**
 * The key file this node opens, once it is safe to open: in queue mode, only when every process
 * provably uses the same file (lib/store/embedded/sharedFile.ts). Throws the refusal otherwise; the caller
 * routes it as it routes any store failure (nothing was reserved).
 */
export function embeddedFileFor(context: IExecuteFunctions): string {
	return embeddedFileAt(context.helpers.getStoragePath(), context.getNode().type);
}

/**
 * n8n's storage folder for a node type, where n8n gives a node no `getStoragePath` (a trigger's
 * `webhook()`): `<n8n folder>/storage/<node type>`, the n8n folder found as n8n finds it
 * (N8N_USER_FOLDER, else the home folder, then `.n8n`).
 */
export function storagePathOutsideExecution(nodeType: string): string {
	const homeVariable = process.platform === 'win32' ? 'USERPROFILE' : 'HOME';
	const userHome = process.env.N8N_USER_FOLDER ?? process.env[homeVariable] ?? process.cwd();
	return path.join(userHome, '.n8n', 'storage', nodeType);
}

/** The key file for a node with this storage path, once it is safe to open (see embeddedFileFor). */
export function embeddedFileAt(storagePath: string, nodeType: string): string {
	const file = embeddedStoreFile(storagePath, nodeType);
	if (!runsInQueueMode()) return file;
	const verdict = sharedFileVerdict({ configuredId: process.env[STORE_ID_ENV], storeId: embeddedStoreId(file), file });
	if (!verdict.proceed) throw verdict.error;
	return file;
}

/**
 * Queue mode as n8n reads it: EXECUTIONS_MODE (or the file EXECUTIONS_MODE_FILE names), n8n 1.x's
 * N8N_CONFIG_FILES (`{ "executions": { "mode": "queue" } }`), or an n8n worker/webhook process.
 * Any of them saying queue counts: a check where none is needed costs one refused delivery.
 */
export function runsInQueueMode(): boolean {
	const modes = [process.env.EXECUTIONS_MODE ?? executionsModeFromFile(), ...executionsModesFromConfigFiles()];
	return modes.some((mode) => isQueueMode(mode, [])) || isQueueMode(undefined, process.argv);
}

function executionsModeFromFile(): string | undefined {
	const file = process.env.EXECUTIONS_MODE_FILE;
	if (!file) return undefined;
	try {
		return readFileSync(file, 'utf8');
	} catch {
		// n8n itself would not start with an unreadable file; treat it as queue mode, the safe side.
		return 'queue';
	}
}

function executionsModesFromConfigFiles(): string[] {
	const files = (process.env.N8N_CONFIG_FILES ?? '').split(',').filter(Boolean);
	return files.flatMap((file) => {
		try {
			const mode = (JSON.parse(readFileSync(file, 'utf8')) as { executions?: { mode?: unknown } }).executions?.mode;
			return typeof mode === 'string' ? [mode] : [];
		} catch {
			// n8n skips a file it cannot read (it logs an error): it sets nothing.
			return [];
		}
	});
}
