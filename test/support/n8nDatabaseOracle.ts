// n8n's own reading of its database settings, for the tests that hold the package's reader to it.
// Run in a child process against an installed n8n (its folder is the first argument): each
// environment on stdin (a JSON list) becomes process.env, n8n's DatabaseConfig is built afresh from
// it (@n8n/config), and the Postgres connection options n8n would open with (@n8n/db's
// DbConnectionOptions) are printed, one per environment, as JSON on stdout.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

export interface OracleAnswer {
	/** What n8n's reading threw (a `_FILE` it cannot read), instead of settings. */
	error?: string;
	type?: string;
	tablePrefix?: string;
	postgres?: {
		host: string;
		port: number;
		database: string;
		username: string;
		password: string;
		schema: string;
		poolSize: number;
		connectTimeoutMS: number;
		ssl: unknown;
	};
}

interface DatabaseConfigLike {
	type: string;
	tablePrefix: string;
}

function main(): void {
	const installDirectory = process.argv[2];
	const requireN8n = createRequire(path.join(installDirectory, 'package.json'));
	requireN8n('reflect-metadata');
	const { Container } = requireN8n('@n8n/di') as { Container: { reset(): void; get<T>(type: unknown): T } };
	const { DatabaseConfig } = requireN8n('@n8n/config') as { DatabaseConfig: unknown };
	const { DbConnectionOptions } = requireN8n('@n8n/db/dist/connection/db-connection-options.js') as {
		DbConnectionOptions: new (
			config: unknown,
			instance: unknown,
			modules: unknown,
		) => { getPostgresConnectionOptions(): OracleAnswer['postgres'] };
	};
	const environments = JSON.parse(readFileSync(0, 'utf8')) as Array<Record<string, string>>;
	const answers: OracleAnswer[] = environments.map((environment) => {
		process.env = { ...environment };
		Container.reset();
		try {
			const config = Container.get<DatabaseConfigLike>(DatabaseConfig);
			const options = new DbConnectionOptions(config, { n8nFolder: '/nowhere' }, { entities: [] }).getPostgresConnectionOptions()!;
			const { host, port, database, username, password, schema, poolSize, connectTimeoutMS, ssl } = options;
			return {
				type: config.type,
				tablePrefix: config.tablePrefix,
				postgres: { host, port, database, username, password, schema, poolSize, connectTimeoutMS, ssl },
			};
		} catch (error) {
			return { error: (error as Error).message };
		}
	});
	process.stdout.write(JSON.stringify(answers));
}

if (require.main === module) main();
