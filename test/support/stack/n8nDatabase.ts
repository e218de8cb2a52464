// Databases of the harness, and n8n's internals read from n8n's own database — in this one place.
// n8n has no public API for what the tests must see (every execution's status and the nodes it ran,
// whether a production webhook is registered, whether the published version is the one served), so
// these read n8n 2.40's tables (execution_entity, execution_data, webhook_entity, workflow_entity,
// workflow_published_version, workflow_publication_*). A change of n8n's schema breaks only this file.
import path from 'node:path';
import type { IRunData } from 'n8n-workflow';
import { Client, type QueryResultRow } from 'pg';
import { defaultLog } from './n8nInstall';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A database's connection settings, as the templates' credentials take them. */
export interface DatabaseSettings {
	host: string;
	port: number;
	user: string;
	password: string;
	database: string;
}

export function parseUrl(url: string): DatabaseSettings {
	const u = new URL(url);
	return {
		host: u.hostname,
		port: Number(u.port || 5432),
		user: decodeURIComponent(u.username),
		password: decodeURIComponent(u.password),
		database: u.pathname.replace(/^\//, '') || 'postgres',
	};
}

export function withDatabase(url: string, database: string): string {
	const u = new URL(url);
	u.pathname = `/${database}`;
	return u.toString();
}

export async function withClient<T>(url: string, fn: (client: Client) => Promise<T> | T): Promise<T> {
	const client = new Client({ connectionString: url });
	await client.connect();
	try {
		return await fn(client);
	} finally {
		await client.end();
	}
}

export async function ensureDatabase(adminUrl: string, name: string, { recreate = false }: { recreate?: boolean } = {}): Promise<string> {
	if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`unsafe database name: ${name}`);
	await withClient(adminUrl, async (client) => {
		if (recreate) await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
		const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
		if (rowCount === 0) await client.query(`CREATE DATABASE "${name}"`);
	});
	return withDatabase(adminUrl, name);
}

/** Which executions listExecutions reads: a workflow's, after `sinceId`, in n8n's database. */
export interface ExecutionQuery {
	n8nDbUrl: string;
	/** The n8n install (its flatted module reads the stored run data). */
	n8nDir: string;
	workflowId: string;
	sinceId?: number;
}

/** Each node's runs, as n8n stores them in an execution's run data. */
export type RunData = IRunData;

/** An execution as the tests read it: id, status, the nodes that ran and their run data. */
export interface Execution {
	id: number;
	status: string;
	finished: boolean;
	mode: string;
	nodesRun: string[];
	runData: RunData;
}

interface StoredExecutionData {
	resultData?: { runData?: RunData };
}

interface ExecutionRow extends QueryResultRow {
	id: string | number;
	status: string;
	finished: boolean;
	mode: string;
	data: string;
}

interface PublicationRow extends QueryResultRow {
	id: string;
	active: string | null;
	published: string | null;
	pending: number;
	stale_triggers: number;
}

/** Executions of a workflow from n8n's own database, with the names of the nodes that ran. */
export async function listExecutions({ n8nDbUrl, n8nDir, workflowId, sinceId = 0 }: ExecutionQuery): Promise<Execution[]> {
	// n8n's own flatted (the format of execution_data), from the n8n install, not a dependency of ours.
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	const { parse } = require(path.join(n8nDir, 'node_modules', 'flatted')) as { parse: (text: string) => StoredExecutionData };
	return withClient(n8nDbUrl, async (client) => {
		const { rows } = await client.query<ExecutionRow>(
			`SELECT e.id, e.status, e.finished, e.mode, e."startedAt", e."stoppedAt", d.data
			   FROM execution_entity e LEFT JOIN execution_data d ON d."executionId" = e.id
			  WHERE e."workflowId" = $1 AND e.id > $2 ORDER BY e.id`,
			[workflowId, sinceId],
		);
		return rows.map((row) => {
			let nodesRun: string[] = [];
			let runData: RunData = {};
			try {
				runData = parse(row.data).resultData?.runData ?? {};
				nodesRun = Object.keys(runData);
			} catch {
				// No run data stored (yet): no nodes listed.
			}
			return { id: Number(row.id), status: row.status, finished: row.finished, mode: row.mode, nodesRun, runData };
		});
	});
}

/** Waits until n8n has stored `count` finished executions of the workflow (after sinceId). */
export async function waitForExecutions(
	args: ExecutionQuery,
	count: number,
	{ timeoutMs = 60000 }: { timeoutMs?: number } = {},
): Promise<Execution[]> {
	const deadline = Date.now() + timeoutMs;
	let executions: Execution[] = [];
	while (Date.now() < deadline) {
		executions = await listExecutions(args);
		const done = executions.filter((e) => e.status !== 'running' && e.status !== 'new' && e.status !== 'waiting');
		if (done.length >= count && done.length === executions.length) return executions;
		await sleep(250);
	}
	return executions;
}

export async function webhookRegistered(n8nDbUrl: string, webhookPath: string): Promise<boolean> {
	return withClient(n8nDbUrl, async (client) => {
		const { rowCount } = await client.query('SELECT 1 FROM webhook_entity WHERE "webhookPath" = $1', [webhookPath]);
		return (rowCount ?? 0) > 0;
	}).catch(() => false);
}

/**
 * Waits until n8n really runs the version of each workflow that `publish:workflow` made active.
 * Re-importing a published workflow (the demo's persistent database) makes `import:workflow`
 * unpublish it through n8n's publication outbox with the OLD version id; at the next start n8n
 * applies that outbox row and serves the old graph (workflow_published_version and the trigger
 * status rows name the old version, while workflow_entity.activeVersionId names the new one) until
 * its reconciler notices the skew. Executions in that window run the old nodes — with an older
 * template, e.g. without the signature check.
 */
export async function waitForPublishedVersions(
	n8nDbUrl: string,
	workflowIds: string[],
	{ deadline, isExited = () => null, log = defaultLog }: { deadline: number; isExited?: () => unknown; log?: (line: string) => void },
): Promise<void> {
	const query = `SELECT w.id, w."activeVersionId" AS active, pv."publishedVersionId" AS published,
	        (SELECT count(*)::int FROM workflow_publication_outbox o
	          WHERE o."workflowId" = w.id AND o.status IN ('pending', 'in_progress')) AS pending,
	        (SELECT count(*)::int FROM workflow_publication_trigger_status ts
	          WHERE ts."workflowId" = w.id AND ts."versionId" IS DISTINCT FROM w."activeVersionId") AS stale_triggers
	   FROM workflow_entity w LEFT JOIN workflow_published_version pv ON pv."workflowId" = w.id
	  WHERE w.id = ANY($1)`;
	let logged = false;
	for (;;) {
		const { rows } = await withClient(n8nDbUrl, (client) => client.query<PublicationRow>(query, [workflowIds]));
		const behind = rows.filter((r) => !r.active || r.published !== r.active || r.pending > 0 || r.stale_triggers > 0);
		if (rows.length === workflowIds.length && behind.length === 0) return;
		if (!logged) {
			logged = true;
			log(`waiting for n8n to serve the published version of ${behind.map((r) => r.id).join(', ') || 'the workflows'}…`);
		}
		if (isExited()) throw new Error('n8n exited while activating the published workflows');
		if (Date.now() > deadline) {
			throw new Error(`n8n never served the published versions: ${JSON.stringify(behind)}`);
		}
		await sleep(250);
	}
}

export async function maxExecutionId(n8nDbUrl: string): Promise<number> {
	return withClient(n8nDbUrl, async (client) => {
		const { rows } = await client.query<{ id: number }>('SELECT coalesce(max(id), 0)::int AS id FROM execution_entity');
		return rows[0].id;
	});
}
