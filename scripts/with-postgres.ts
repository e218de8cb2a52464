#!/usr/bin/env node
// Runs a command against a PostgreSQL line other than the dev dependency's:
//   node -r ./test/support/register-ts.js scripts/with-postgres 14 -- <command> [args…]
// starts that line's server (binaries installed into the cache once), runs the command with
// DATABASE_URL pointing at it, stops the server, and exits with the command's code.
import { spawn } from 'node:child_process';
import { Client } from 'pg';
import { startPostgres, POSTGRES_LINES } from '../test/support/stack/postgresServer';
import { timed } from '../test/support/stack/timings';

const [line, separator, ...command] = process.argv.slice(2);
if (!POSTGRES_LINES[line] || separator !== '--' || command.length === 0) {
	process.stderr.write(
		`usage: node -r ./test/support/register-ts.js scripts/with-postgres <${Object.keys(POSTGRES_LINES).join('|')}> -- <command> [args…]\n`,
	);
	process.exit(2);
}

(async () => {
	const server = await timed(`PostgreSQL ${line} install or cache check, and start`, () =>
		startPostgres({ line: Number(line), log: () => {} }),
	);
	let code = 1;
	try {
		// The command runs against the line asked for, or not at all.
		const client = new Client({ connectionString: server.url });
		await client.connect();
		const { rows } = await client.query<{ server_version: string }>('show server_version');
		await client.end();
		if (rows[0].server_version.split('.')[0] !== line)
			throw new Error(`asked for PostgreSQL ${line}, the server is ${rows[0].server_version}`);
		process.stdout.write(`PostgreSQL ${rows[0].server_version} at 127.0.0.1:${new URL(server.url).port}\n`);
		const child = spawn(command[0], command.slice(1), { stdio: 'inherit', env: { ...process.env, DATABASE_URL: server.url } });
		code = await new Promise<number>((resolve) => child.once('exit', (status, signal) => resolve(status ?? (signal ? 1 : 0))));
	} finally {
		await server.stop();
	}
	process.exit(code);
})().catch((error: unknown) => {
	process.stderr.write(`with-postgres: ${error instanceof Error ? (error.stack ?? error) : error}\n`);
	process.exit(1);
});
