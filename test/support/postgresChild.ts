// Runs one Postgres server (test/support/stack/postgresServer.ts) in a process of its own, for tests that
// stop and restart it, outside jest's module sandbox. Prints
// {"url","port"} once ready; stops the server when its stdin closes (so it never outlives the test).
import { startPostgres } from './stack/postgresServer';

const options = JSON.parse(process.argv[2]) as { baseDir?: string; port?: number };
startPostgres({ baseDir: options.baseDir, port: options.port, persistent: true }).then(
	(server) => {
		process.stdout.write(`${JSON.stringify({ url: server.url, port: server.port })}\n`);
		const stop = () =>
			server.stop().then(
				() => process.exit(0),
				() => process.exit(1),
			);
		process.stdin.on('end', stop);
		process.stdin.resume();
		process.on('SIGTERM', stop);
	},
	(error: unknown) => {
		process.stderr.write(`${error instanceof Error ? (error.stack ?? error) : error}\n`);
		process.exit(1);
	},
);
