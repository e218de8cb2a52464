// What "exactly once" means after a run with retries: every event has exactly one business row, no
// key is left 'processing' or 'failed', and no execution of the webhook workflow is left running in n8n.
import { eventually } from './eventually';
import { outputItem, type Execution, type Harness } from './harness';

/** Business rows per event key: { rows, doubled: [...keys], missing: [...keys] }. */
export async function businessRows(h: Harness, eventIds: string[]): Promise<{ rows: number; doubled: string[]; missing: string[] }> {
	const keys = eventIds.map((id) => `evt:${id}`);
	const { rows } = await h.appQuery('SELECT event_key, count(*)::int AS n FROM business_log WHERE event_key = ANY($1) GROUP BY event_key', [
		keys,
	]);
	const counts = new Map<string, number>(rows.map((row) => [row.event_key, row.n]));
	return {
		rows: rows.reduce((sum: number, row) => sum + row.n, 0),
		doubled: keys.filter((key) => (counts.get(key) ?? 0) > 1),
		missing: keys.filter((key) => !counts.has(key)),
	};
}

/** Keys of these events not completed (status other than 'completed', or no row). */
export async function keysNotCompleted(h: Harness, eventIds: string[]): Promise<string[]> {
	const keys = eventIds.map((id) => `evt:${id}`);
	const { rows } = await h.appQuery("SELECT key, status FROM processed_events WHERE key = ANY($1) AND status = 'completed'", [keys]);
	const done = new Set<string>(rows.map((row) => row.key));
	return keys.filter((key) => !done.has(key));
}

/**
 * keysNotCompleted, read again (bounded) until it is empty: a delivery answered 200 "completion
 * pending" has its key completed afterwards by the error workflow, so right after the provider's
 * last 2xx a key may still be settling. Returns the keys still not completed at the deadline.
 */
export async function keysNotCompletedAfterSettling(
	h: Harness,
	eventIds: string[],
	{ timeoutMs = 60000 }: { timeoutMs?: number } = {},
): Promise<string[]> {
	return eventually(
		() => keysNotCompleted(h, eventIds),
		(open) => open.length === 0,
		{ timeoutMs, everyMs: 500 },
	);
}

/** Executions of a workflow after `mark` still 'new' or 'running' after waiting up to timeoutMs for them to finish. */
export async function stuckExecutions(
	h: Harness,
	workflowId: string,
	mark: number,
	{ timeoutMs = 60000 }: { timeoutMs?: number } = {},
): Promise<Array<{ id: number; status: string }>> {
	const open = async (): Promise<Array<{ id: number; status: string }>> =>
		(
			await h.n8nQuery(`SELECT id, status FROM execution_entity WHERE "workflowId" = $1 AND id > $2 AND status IN ('new', 'running')`, [
				workflowId,
				mark,
			])
		).rows;
	return eventually(open, (rows) => rows.length === 0, { timeoutMs, everyMs: 1000 });
}

/**
 * The finished runs of the error-workflow template that handled one failed execution (its Error
 * Trigger names it), waiting up to timeoutMs for at least one. Not "every error run after a mark":
 * in queue mode a crash from an earlier test (a killed worker's job, failed once it stalls) can
 * start an error run at any time.
 */
export async function errorRunsFor(
	h: Harness,
	failedExecutionId: number | string,
	mark: number,
	{ timeoutMs = 60000 }: { timeoutMs?: number } = {},
): Promise<Execution[]> {
	const handled = async () =>
		(await h.executions(h.IDS.error, mark)).filter(
			(run) =>
				!['new', 'running', 'waiting'].includes(run.status) &&
				String(outputItem(run, 'Error Trigger')?.execution?.id) === String(failedExecutionId),
		);
	return eventually(handled, (runs) => runs.length > 0, { timeoutMs, everyMs: 500 });
}

/**
 * The error-workflow template's run for an execution that failed in Completion Failed (the effect
 * happened, Mark Complete did not): exactly one, successful, and it COMPLETED the key, never marked
 * it failed (a redelivery or a replay would then run the effect again). Returns that run.
 */
export async function expectErrorWorkflowCompletedKey(h: Harness, failedExecutionId: number | string, mark: number): Promise<Execution> {
	const errorRuns = await errorRunsFor(h, failedExecutionId, mark, { timeoutMs: 120000 });
	expect(errorRuns).toHaveLength(1);
	expect(errorRuns[0].status).toBe('success');
	expect(errorRuns[0].nodesRun).toContain('Complete Key (effect already happened)');
	expect(errorRuns[0].nodesRun).not.toContain('Mark Keys of Failed Execution as Failed');
	return errorRuns[0];
}
