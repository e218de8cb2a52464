// Databases of the harness, and n8n's internals read from n8n's own database — in this one place.
// n8n has no public API for what the tests must see (every execution's status and the nodes it ran,
// whether a production webhook is registered, whether the published version is the one served), so
// these read n8n 2.40's tables (execution_entity, execution_data, webhook_entity, workflow_entity,
// workflow_published_version, workflow_publication_*). A change of n8n's schema breaks only this file.
const path = require('node:path');
const { defaultLog } = require('./n8nInstall');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function parseUrl(url) {
	const u = new URL(url);
	return {
		host: u.hostname,
		port: Number(u.port || 5432),
		user: decodeURIComponent(u.username),
		password: decodeURIComponent(u.password),
		database: u.pathname.replace(/^\//, '') || 'postgres',
	};
}

function withDatabase(url, database) {
	const u = new URL(url);
	u.pathname = `/${database}`;
	return u.toString();
}

async function withClient(url, fn) {
	const { Client } = require('pg');
	const client = new Client({ connectionString: url });
	await client.connect();
	try {
		return await fn(client);
	} finally {
		await client.end();
	}
}

async function ensureDatabase(adminUrl, name, { recreate = false } = {}) {
	if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`unsafe database name: ${name}`);
	await withClient(adminUrl, async (client) => {
		if (recreate) await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
		const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
		if (rowCount === 0) await client.query(`CREATE DATABASE "${name}"`);
	});
	return withDatabase(adminUrl, name);
}

/** Executions of a workflow from n8n's own database, with the names of the nodes that ran. */
async function listExecutions({ n8nDbUrl, n8nDir, workflowId, sinceId = 0 }) {
	const { parse } = require(path.join(n8nDir, 'node_modules', 'flatted'));
	return withClient(n8nDbUrl, async (client) => {
		const { rows } = await client.query(
			`SELECT e.id, e.status, e.finished, e.mode, e."startedAt", e."stoppedAt", d.data
			   FROM execution_entity e LEFT JOIN execution_data d ON d."executionId" = e.id
			  WHERE e."workflowId" = $1 AND e.id > $2 ORDER BY e.id`,
			[workflowId, sinceId],
		);
		return rows.map((row) => {
			let nodesRun = [];
			let runData = {};
			try {
				runData = parse(row.data).resultData?.runData ?? {};
				nodesRun = Object.keys(runData);
			} catch {}
			return { id: Number(row.id), status: row.status, finished: row.finished, mode: row.mode, nodesRun, runData };
		});
	});
}

/** Waits until n8n has stored `count` finished executions of the workflow (after sinceId). */
async function waitForExecutions(args, count, { timeoutMs = 60000 } = {}) {
	const deadline = Date.now() + timeoutMs;
	let executions = [];
	while (Date.now() < deadline) {
		executions = await listExecutions(args);
		const done = executions.filter((e) => e.status !== 'running' && e.status !== 'new' && e.status !== 'waiting');
		if (done.length >= count && done.length === executions.length) return executions;
		await sleep(250);
	}
	return executions;
}

async function webhookRegistered(n8nDbUrl, webhookPath) {
	return withClient(n8nDbUrl, async (client) => {
		const { rowCount } = await client.query('SELECT 1 FROM webhook_entity WHERE "webhookPath" = $1', [webhookPath]);
		return rowCount > 0;
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
async function waitForPublishedVersions(n8nDbUrl, workflowIds, { deadline, isExited = () => null, log = defaultLog }) {
	const query = `SELECT w.id, w."activeVersionId" AS active, pv."publishedVersionId" AS published,
	        (SELECT count(*)::int FROM workflow_publication_outbox o
	          WHERE o."workflowId" = w.id AND o.status IN ('pending', 'in_progress')) AS pending,
	        (SELECT count(*)::int FROM workflow_publication_trigger_status ts
	          WHERE ts."workflowId" = w.id AND ts."versionId" IS DISTINCT FROM w."activeVersionId") AS stale_triggers
	   FROM workflow_entity w LEFT JOIN workflow_published_version pv ON pv."workflowId" = w.id
	  WHERE w.id = ANY($1)`;
	let logged = false;
	for (;;) {
		const { rows } = await withClient(n8nDbUrl, (client) => client.query(query, [workflowIds]));
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

async function maxExecutionId(n8nDbUrl) {
	return withClient(n8nDbUrl, async (client) => {
		const { rows } = await client.query('SELECT coalesce(max(id), 0)::int AS id FROM execution_entity');
		return rows[0].id;
	});
}

module.exports = {
	parseUrl,
	withDatabase,
	withClient,
	ensureDatabase,
	listExecutions,
	waitForExecutions,
	webhookRegistered,
	waitForPublishedVersions,
	maxExecutionId,
};
