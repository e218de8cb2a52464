#!/usr/bin/env node
// Runs a command against a PostgreSQL line other than the dev dependency's:
//   node scripts/with-postgres.js 14 -- <command> [args…]
// starts that line's server (binaries installed into the cache once), runs the command with
// DATABASE_URL pointing at it, stops the server, and exits with the command's code.
const { spawn } = require('node:child_process');
const { startPostgres, POSTGRES_LINES } = require('../test/support/stack/postgresServer');
const { timed } = require('../test/support/stack/timings');

const [line, separator, ...command] = process.argv.slice(2);
if (!POSTGRES_LINES[line] || separator !== '--' || command.length === 0) {
	process.stderr.write(`usage: node scripts/with-postgres.js <${Object.keys(POSTGRES_LINES).join('|')}> -- <command> [args…]\n`);
	process.exit(2);
}

(async () => {
	const server = await timed(`PostgreSQL ${line} install or cache check, and start`, () => startPostgres({ line: Number(line), log: () => {} }));
	let code = 1;
	try {
		const child = spawn(command[0], command.slice(1), { stdio: 'inherit', env: { ...process.env, DATABASE_URL: server.url } });
		code = await new Promise((resolve) => child.once('exit', (status, signal) => resolve(status ?? (signal ? 1 : 0))));
	} finally {
		await server.stop();
	}
	process.exit(code);
})().catch((error) => {
	process.stderr.write(`with-postgres: ${error.stack ?? error}\n`);
	process.exit(1);
});
