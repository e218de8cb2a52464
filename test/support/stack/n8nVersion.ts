// Which n8n the harness runs, and everything that differs between the n8n lines the package is
// proven on (2.x on Node 24, the maintained 1.x line on Node 22), in one place. The Node major for
// each line is chosen by scripts/ensure-n8n.sh, which installs it.
// Select with `--n8n-version=1.123.81` on a script's command line or N8N_VERSION=1.123.81 in the
// environment (jest takes no unknown flags: use the variable there). Node 20 compatible.

/**
 * The versions the README's Compatibility table names: what CI proves. The first is the default and
 * runs the full end-to-end tier (full soak); scripts/test-all.ts runs every other one in the
 * compatibility tier (test/support/e2e/tags.js: the files tagged `compatibility`, short soak).
 * Proving the next n8n is one edit here: add its version (newest 2.x first, replacing the 2.x it
 * supersedes), then run CI and update the README's table with what it proved.
 * scripts/ensure-n8n.sh installs 1.x on Node 22, 2.x on Node 24; each major line's differences are below.
 * Not 2.41.3 (the registry's newest 2.x): it does not install, its dependency @n8n/agents@0.26.2
 * is not on the npm registry (2.41.1 depends on 0.26.1, which is). Not 2.40.7: 2.41.1 supersedes
 * it on the 2.x line.
 */
export const PROVEN_N8N_VERSIONS: string[] = ['2.41.1', '1.123.81'];
export const DEFAULT_N8N_VERSION: string = PROVEN_N8N_VERSIONS[0];

/** A workflow as n8n exports it: what the differences below read of it. */
export interface WorkflowJson {
	id: string;
	nodes: Array<{ type: string }>;
}

export function selectedN8nVersion({
	argv = process.argv,
	env = process.env,
}: { argv?: readonly string[]; env?: NodeJS.ProcessEnv } = {}): string {
	let version = env.N8N_VERSION || DEFAULT_N8N_VERSION;
	argv.forEach((arg, i) => {
		if (arg.startsWith('--n8n-version=')) version = arg.slice('--n8n-version='.length);
		else if (arg === '--n8n-version' && argv[i + 1]) version = argv[i + 1];
	});
	// It becomes a path and an npm spec: an exact version only.
	if (!/^\d+\.\d+\.\d+$/.test(version)) throw new Error(`n8n version must be exact, like 1.123.81 (got "${version}")`);
	return version;
}

const majorOf = (version: string): number => Number(version.split('.')[0]);

/**
 * The CLI arguments that make a workflow live, or null when this line must not activate it.
 * n8n 2.x publishes a version (`publish:workflow`, applied by its publication outbox after start)
 * and runs only published error workflows; 1.x sets the workflow active (`update:workflow
 * --active=true`, applied at start), runs error workflows without that, and refuses to activate a
 * workflow whose only trigger is the Error Trigger ("has no node to start the workflow").
 */
export function activateWorkflowArgs(version: string, workflow: WorkflowJson): string[] | null {
	if (majorOf(version) >= 2) return ['publish:workflow', `--id=${workflow.id}`];
	const starts = workflow.nodes.filter((node) => /Trigger$/.test(node.type) || node.type === 'n8n-nodes-base.webhook');
	if (starts.length > 0 && starts.every((node) => node.type === 'n8n-nodes-base.errorTrigger')) return null;
	return ['update:workflow', `--id=${workflow.id}`, '--active=true'];
}

/**
 * The statement that `activateWorkflowArgs`' command runs ($1 = the workflow ids; returns the ids it
 * made live), read in n8n's WorkflowRepository: 2.x `publishVersion` publishes the current version
 * when its workflow_history row exists, 1.x `updateActiveState` sets it active; both through
 * TypeORM, which also stamps updatedAt. One statement for the stack instead of an n8n boot per
 * workflow; the templates' own test still runs the commands users run.
 */
export function activateWorkflowsSql(version: string): string {
	const published =
		majorOf(version) >= 2
			? ' AND EXISTS (SELECT 1 FROM workflow_history h WHERE h."workflowId" = w.id AND h."versionId" = w."versionId")'
			: '';
	return `UPDATE workflow_entity w SET active = true, "activeVersionId" = w."versionId", "updatedAt" = CURRENT_TIMESTAMP
	         WHERE w.id = ANY($1::text[])${published} RETURNING w.id`;
}

/**
 * Whether a test that needs n8n `version` installed must fail, not skip, without it:
 * IDEMPOTENCY_REQUIRE_N8N names the lines the run installed, comma-separated (npm run test:all
 * waits for them first), or is 1 for every line.
 */
export function n8nRequired(version: string): boolean {
	const lines = (process.env.IDEMPOTENCY_REQUIRE_N8N ?? '').split(',').map((line) => line.trim());
	return lines.includes('1') || lines.includes(version);
}

/** Log lines n8n prints once it serves requests (2.x also builds its workflow index; 1.x leaves indexing off). */
export function readyLogLines(version: string): string[] {
	return majorOf(version) >= 2 ? ['Editor is now accessible', 'Finished building workflow dependency index'] : ['Editor is now accessible'];
}

/** True when n8n activates through the publication outbox (2.x): callers wait for its tables. */
export function activatesThroughPublication(version: string): boolean {
	return majorOf(version) >= 2;
}

/**
 * SQL ($1 = workflow id) for the node list n8n actually runs for a live workflow (internal tables:
 * no API tells). 2.x: the published version from workflow_history; 1.x: the active workflow's own row.
 */
export function servedWorkflowNodesSql(version: string): string {
	return majorOf(version) >= 2
		? `SELECT h.nodes FROM workflow_entity w
		     JOIN workflow_published_version pv ON pv."workflowId" = w.id AND pv."publishedVersionId" = w."activeVersionId"
		     JOIN workflow_history h ON h."versionId" = pv."publishedVersionId"
		    WHERE w.id = $1`
		: 'SELECT nodes FROM workflow_entity WHERE id = $1 AND active';
}

/**
 * The body of `POST /rest/workflows/:id/run` that starts a saved workflow from one trigger, as the
 * editor's "Execute workflow" does. 2.x reads the saved workflow itself; 1.x runs the workflow the
 * editor sends (`workflowData`, with its id) and refuses a body without it.
 */
export function manualRunBody<W>(
	version: string,
	{ triggerName, workflow }: { triggerName: string; workflow: W },
): { triggerToStartFrom: { name: string }; workflowData?: W } {
	const body = { triggerToStartFrom: { name: triggerName } };
	return majorOf(version) >= 2 ? body : { ...body, workflowData: workflow };
}

/**
 * Queue-mode end-to-end files (jest path patterns) this line does not run, because n8n itself fails
 * them before the package's nodes run. n8n 1.x main answers part of a burst of 200 simultaneous
 * deliveries with 5xx: it reads every finished execution back from its database (2.x takes the
 * worker's job result), so its pool (DB_POSTGRESDB_POOL_SIZE, default 2) runs dry ("timeout exceeded
 * when trying to connect", 500) and, with a larger pool, its health ping (a fixed 5 s timeout) fails
 * and main answers 503 "Database is not ready!" to everything until the next ping passes.
 * docs/installing.md#compatibility has the figures.
 */
export function queueFilesNotRun(version: string): string[] {
	return majorOf(version) >= 2 ? [] : ['/test/e2e/queue/burst\\.e2e\\.test\\.[jt]s$'];
}

/**
 * Whether every n8n process gets its own database connections back after the Postgres server
 * restarts. 2.x rebuilds its pool after failed pings; a 1.x worker can keep dead connections checked
 * out for good and fail every job it takes ("timeout exceeded when trying to connect") until it is
 * restarted.
 */
export function recoversFromDatabaseRestart(version: string): boolean {
	return majorOf(version) >= 2;
}

/**
 * Whether a workflow's timeout cancels the node still running (a call in flight). n8n's main process
 * cancels the execution when its time is up, and 2.x's queue-mode workers do too; a 1.x worker checks
 * the timeout only between nodes (n8n-core's WorkflowExecute, `executionTimeoutTimestamp`), so the
 * running node ends by itself (an HTTP Request at its own timeout) and the execution fails.
 */
export function timeoutCancelsRunningNode(version: string, topology: 'single' | 'queue'): boolean {
	return majorOf(version) >= 2 || topology === 'single';
}
