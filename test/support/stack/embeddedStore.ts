// Reads the embedded key store that n8n's nodes wrote, from outside n8n: the demo prints its keys,
// the end-to-end tests check them. The file is read through the installed package's own store
// (dist/lib/store/embedded) in a child process on n8n's Node.js: node:sqlite needs Node 22.13+, and the
// process calling this may run an older one. Node 20 compatible.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** The package's key file under an n8n user folder (where the nodes put it: n8n folder/storage/n8n-nodes-idempotency/keys.sqlite). */
export function embeddedStoreFile(userFolder: string): string {
	return path.join(userFolder, '.n8n', 'storage', 'n8n-nodes-idempotency', 'keys.sqlite');
}

const READER = `
	const [pkgDir, file, op, arg, table] = process.argv.slice(1);
	const embedded = require(require('node:path').join(pkgDir, 'dist', 'lib', 'store', 'embedded'));
	(async () => {
		const store = embedded.openEmbeddedKeyStore({ file, table: table || undefined });
		let result;
		if (op === 'getKeys') result = [...(await store.getKeys(JSON.parse(arg))).values()];
		else if (op === 'stats') result = await store.stats(Number(arg));
		else if (op === 'listKeys') result = await store.listKeys({ limit: Number(arg) });
		else throw new Error('unknown operation ' + op);
		process.stdout.write(JSON.stringify(result));
		embedded.closeEmbeddedStores?.();
	})().catch((error) => { process.stderr.write(String(error.stack ?? error)); process.exit(1); });
`;

/** One read of readEmbeddedStore: `op` and its `arg` (a string is passed as it is, anything else as JSON). */
export interface EmbeddedRead {
	/** The folder of n8n's `node`; the current Node when not given. */
	nodeBin?: string | null;
	packageDir: string;
	file: string;
	op: 'getKeys' | 'stats' | 'listKeys';
	arg: unknown;
	/** The key table in the file (Options → Table Name); the package's default when not given. */
	table?: string;
}

/**
 * Runs one read on an existing store file: op 'getKeys' (arg: key list) → records, 'stats' (arg:
 * window hours) → counts, 'listKeys' (arg: page size) → { keys, nextAfterKey }. `nodeBin` is the
 * folder of n8n's `node`; `packageDir` the installed package. Never creates a file: returns null
 * when there is none yet (a file made here would carry a store id of its own).
 */
export function readEmbeddedStore<T = unknown>({ nodeBin, packageDir, file, op, arg, table = '' }: EmbeddedRead): Promise<T | null> {
	if (!fs.existsSync(file)) return Promise.resolve(null);
	return new Promise((resolve, reject) => {
		const node = nodeBin ? path.join(nodeBin, 'node') : process.execPath;
		const child = spawn(node, ['-e', READER, packageDir, file, op, typeof arg === 'string' ? arg : JSON.stringify(arg), table], {
			stdio: ['ignore', 'pipe', 'pipe'],
		});
		let stdout = '';
		let stderr = '';
		child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
		child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
		child.on('error', reject);
		child.on('close', (code) =>
			code === 0 ? resolve(JSON.parse(stdout) as T) : reject(new Error(`reading ${file} failed (exit ${code}): ${stderr.slice(-2000)}`)),
		);
	});
}

/** Runs `script` to completion on n8n's Node (`nodeBin`) with the installed package's folder and `args` as its arguments; its stdout. */
function runWithPackage({
	nodeBin,
	packageDir,
	script,
	args = [],
}: {
	nodeBin?: string | null;
	packageDir: string;
	script: string;
	args?: string[];
}): string {
	const node = nodeBin ? path.join(nodeBin, 'node') : process.execPath;
	return execFileSync(node, ['-e', script, packageDir, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/**
 * Creates the key file (when missing) through the installed package on n8n's Node and returns its
 * store id: what a user running queue mode on one host sets as IDEMPOTENCY_EMBEDDED_STORE_ID on
 * main and every worker (the nodes' refusal names the same id).
 */
export function createEmbeddedStore({ nodeBin, packageDir, file }: { nodeBin?: string | null; packageDir: string; file: string }): string {
	const script = `const e = require(require('node:path').join(process.argv[1], 'dist', 'lib', 'store', 'embedded')); process.stdout.write(e.embeddedStoreId(process.argv[2])); e.closeEmbeddedStores();`;
	return runWithPackage({ nodeBin, packageDir, script, args: [file] }).trim();
}

/**
 * Writes completed keys straight into the key table of `file` (created through the installed
 * package first), as SQL backdating does on Postgres: `rows` are [key, firstSeenMs, expiresAtMs].
 */
export function insertCompletedKeys({
	nodeBin,
	packageDir,
	file,
	rows,
}: {
	nodeBin?: string | null;
	packageDir: string;
	file: string;
	rows: Array<[key: string, firstSeenMs: number, expiresAtMs: number]>;
}): void {
	const script = `
		const [pkgDir, file, rows] = process.argv.slice(1);
		const embedded = require(require('node:path').join(pkgDir, 'dist', 'lib', 'store', 'embedded'));
		(async () => {
			await embedded.openEmbeddedKeyStore({ file }).createTable();
			embedded.closeEmbeddedStores();
			const { DatabaseSync } = require('node:sqlite');
			const db = new DatabaseSync(file, { timeout: 10000 });
			const insert = db.prepare("insert into processed_events (key, first_seen, last_seen, status, expires_at) values (?, ?, ?, 'completed', ?)");
			db.exec('begin immediate');
			for (const [key, firstSeen, expiresAt] of JSON.parse(rows)) insert.run(key, firstSeen, firstSeen, expiresAt);
			db.exec('commit');
			db.close();
		})().catch((error) => { process.stderr.write(String(error.stack ?? error)); process.exit(1); });
	`;
	runWithPackage({ nodeBin, packageDir, script, args: [file, JSON.stringify(rows)] });
}
