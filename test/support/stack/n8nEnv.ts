// The environment of a stack's n8n processes: what every process shares (database, encryption key,
// queue) and what main and the CLI runs add. Node 20 compatible.
import path from 'node:path';
import { createEmbeddedStore, embeddedStoreFile } from './embeddedStore';
import type { DatabaseSettings } from './n8nDatabase';
import type { StackOptions, Topology } from './n8nStack';
import { freePort } from './postgresServer';

/** Settings every n8n process of the stack shares (same database, encryption key and queue). */
export function sharedEnv({
	nodeBin,
	n8nDb,
	redis,
	options,
}: {
	nodeBin: string;
	n8nDb: DatabaseSettings;
	redis: { host: string; port: number } | null;
	options: Pick<StackOptions, 'encryptionKey' | 'logLevel' | 'env'>;
}): NodeJS.ProcessEnv {
	const env: NodeJS.ProcessEnv = {
		...process.env,
		PATH: `${nodeBin}${path.delimiter}${process.env.PATH}`,
		N8N_ENCRYPTION_KEY: options.encryptionKey ?? 'n8n-nodes-idempotency-e2e-key',
		N8N_LISTEN_ADDRESS: '127.0.0.1',
		N8N_HOST: '127.0.0.1',
		N8N_PROTOCOL: 'http',
		N8N_DIAGNOSTICS_ENABLED: 'false',
		N8N_VERSION_NOTIFICATIONS_ENABLED: 'false',
		N8N_PERSONALIZATION_ENABLED: 'false',
		N8N_TEMPLATES_ENABLED: 'false',
		N8N_HIRING_BANNER_ENABLED: 'false',
		N8N_SECURE_COOKIE: 'false',
		N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS: 'false',
		N8N_COMMUNITY_PACKAGES_ENABLED: 'true',
		NODE_FUNCTION_ALLOW_BUILTIN: 'crypto',
		EXECUTIONS_DATA_SAVE_ON_SUCCESS: 'all',
		EXECUTIONS_DATA_SAVE_ON_ERROR: 'all',
		// Published workflows are activated by n8n 2.x's publication outbox after start; poll it often.
		N8N_WORKFLOW_PUBLICATION_OUTBOX_POLL_INTERVAL_MS: '1000',
		// …and repairs a published version that diverged from the active one on this interval (default 10 s);
		// see waitForPublishedVersions.
		N8N_WORKFLOW_PUBLICATION_RECONCILE_INTERVAL_SECONDS: '2',
		N8N_UNVERIFIED_PACKAGES_ENABLED: 'true',
		N8N_LOG_LEVEL: options.logLevel ?? 'info',
		N8N_LOG_OUTPUT: 'console',
		DB_TYPE: 'postgresdb',
		DB_POSTGRESDB_HOST: n8nDb.host,
		DB_POSTGRESDB_PORT: String(n8nDb.port),
		DB_POSTGRESDB_DATABASE: n8nDb.database,
		DB_POSTGRESDB_USER: n8nDb.user,
		DB_POSTGRESDB_PASSWORD: n8nDb.password,
		...(redis
			? {
					EXECUTIONS_MODE: 'queue',
					QUEUE_BULL_REDIS_HOST: redis.host,
					QUEUE_BULL_REDIS_PORT: String(redis.port),
					// Workers answer /healthz/readiness on their own port (QUEUE_HEALTH_CHECK_PORT, per process).
					QUEUE_HEALTH_CHECK_ACTIVE: 'true',
				}
			: {}),
		...(options.env ?? {}),
	};
	// Jest sets NODE_ENV=test and JEST_WORKER_ID; n8n then refuses to load nodes ("Not available in tests").
	env.NODE_ENV = 'production';
	delete env.JEST_WORKER_ID;
	delete env.NODE_OPTIONS; // jest/ts-node flags must not leak into n8n
	return env;
}

/** The environments of a stack's n8n processes: the shared one (the workers') and main's (also the CLI runs'). */
export interface StackEnvs {
	base: NodeJS.ProcessEnv;
	main: NodeJS.ProcessEnv;
}

/**
 * The shared environment (`base`, for the workers) and main's (`main`, also the CLI runs'): main's
 * user folder, port and task-broker port, then `options.mainEnv`.
 */
export async function stackEnvs({
	nodeBin,
	n8nDbUrl,
	parseUrl,
	redis,
	options,
	topology,
	userFolder,
	packageDir,
	port,
}: {
	nodeBin: string;
	n8nDbUrl: string;
	parseUrl: (url: string) => DatabaseSettings;
	redis: { host: string; port: number } | null;
	options: Pick<StackOptions, 'encryptionKey' | 'logLevel' | 'env' | 'mainEnv'>;
	topology: Topology;
	userFolder: string;
	packageDir: string | null;
	port: number;
}): Promise<StackEnvs> {
	const base = sharedEnv({ nodeBin, n8nDb: parseUrl(n8nDbUrl), redis, options });
	if (topology === 'queue' && packageDir) {
		// Queue mode on one host, as a user sets it up: the key file in main's n8n folder, its store id
		// given to main and every worker. A worker in a folder of its own opens another file and is refused.
		base.IDEMPOTENCY_EMBEDDED_STORE_ID = createEmbeddedStore({ nodeBin, packageDir, file: embeddedStoreFile(userFolder) });
	}
	const main = {
		...base,
		N8N_USER_FOLDER: userFolder,
		N8N_PORT: String(port),
		N8N_RUNNERS_BROKER_PORT: String(await freePort()),
		...(options.mainEnv ?? {}),
	};
	return { base, main };
}

/** The part of main's environment another process needs to run the n8n CLI against the stack (only n8n/DB settings). */
export function cliEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
	return Object.fromEntries(
		Object.entries(env).filter(([key]) => /^(N8N_|DB_|EXECUTIONS_|QUEUE_|NODE_FUNCTION_|NODE_ENV$|PATH$)/.test(key)),
	);
}
