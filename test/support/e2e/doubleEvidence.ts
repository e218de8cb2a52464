// The record of a doubled event, for a soak that found one: its business rows, its key row, every
// execution of the webhook workflow that reserved it (owner token, lease end, what the business step
// and Settle did, when), the error-workflow runs for those executions, and the provider's attempts.
// Printed by the test so that a failing run explains itself.
import { outputItem, type Execution, type Harness } from './harness';
import type { Json } from './workflows';
import type { SoakResult } from './soak';

const RESERVE = 'Idempotency Reserve';
const BUSINESS = 'Business Step (insert business_log)';
const SETTLE = 'Settle (complete or mark failed)';

const iso = (ms: unknown) => (typeof ms === 'number' ? new Date(ms).toISOString() : ms);

/** One run of a node as n8n records it (the part read here). */
interface TaskRun {
	startTime?: number;
	executionTime?: number;
	error?: { message?: string };
	data?: { main?: Array<Array<{ json: Json }> | null> };
}

/** Every item a node emitted, on every output: [{ output, json }]. */
function emitted(task: TaskRun | undefined): Array<{ output: number; json: Json }> {
	return (task?.data?.main ?? []).flatMap((items, output) => (items ?? []).map((item) => ({ output, json: item.json })));
}

function nodeRun(
	execution: Execution,
	name: string,
): { startedAt: unknown; ms: number | undefined; error: string | null; items: Array<{ output: number; json: Json }> } | null {
	const task: TaskRun | undefined = execution.runData[name]?.[0];
	if (!task) return null;
	return { startedAt: iso(task.startTime), ms: task.executionTime, error: task.error?.message ?? null, items: emitted(task) };
}

async function executionTimes(
	h: Harness,
	ids: number[],
): Promise<Map<number, { id: string; startedAt: Date; stoppedAt: Date | null; status: string }>> {
	if (ids.length === 0) return new Map();
	const { rows } = await h.n8nQuery('SELECT id, "startedAt", "stoppedAt", status FROM execution_entity WHERE id = ANY($1::int[])', [ids]);
	return new Map(rows.map((row) => [Number(row.id), row]));
}

/** The evidence for each doubled key of a soak (`result` is what soak() returned). */
export async function doubleEvidence(h: Harness, result: Pick<SoakResult, 'rows' | 'mark' | 'run'>): Promise<Json[]> {
	const keys = result.rows.doubled;
	if (keys.length === 0) return [];
	const executions = await h.executions(h.IDS.webhook, result.mark);
	const errorRuns = await h.executions(h.IDS.error, result.mark);
	const out: Json[] = [];
	for (const key of keys) {
		const { rows: business } = await h.appQuery('SELECT id, created_at FROM business_log WHERE event_key = $1 ORDER BY id', [key]);
		const { rows: keyRows } = await h.appQuery(
			`SELECT status, attempts, duplicate_count, owner_token, execution_id, first_seen, last_seen, locked_until, completed_at,
			        effect_completed_at, last_error FROM processed_events WHERE key = $1`,
			[key],
		);
		const mine = executions.filter((execution) =>
			emitted(execution.runData[RESERVE]?.[0]).some((item) => item.json?.idempotency?.key === key),
		);
		const times = await executionTimes(
			h,
			mine.map((execution) => execution.id),
		);
		const runs = mine.map((execution) => {
			// Found: `mine` holds only the executions whose Reserve emitted this key.
			const reserved = emitted(execution.runData[RESERVE][0]).find((item) => item.json?.idempotency?.key === key)!;
			const settle = nodeRun(execution, SETTLE);
			const business = nodeRun(execution, BUSINESS);
			return {
				execution: execution.id,
				status: execution.status,
				startedAt: times.get(execution.id)?.startedAt,
				stoppedAt: times.get(execution.id)?.stoppedAt,
				reserveOutput: reserved.output,
				reservedAt: nodeRun(execution, RESERVE)!.startedAt,
				ownerToken: reserved.json.idempotency.ownerToken,
				attempts: reserved.json.idempotency.attempts,
				lockedUntil: reserved.json.idempotency.lockedUntil,
				business: business && {
					startedAt: business.startedAt,
					ms: business.ms,
					error: business.error,
					outputs: business.items.map((item) => item.output),
				},
				settle: settle && {
					startedAt: settle.startedAt,
					ms: settle.ms,
					error: settle.error,
					outputs: settle.items.map((item) => ({
						output: item.output,
						settledAs: item.json.idempotency?.settledAs,
						applied: item.json.idempotency?.applied,
						staleReason: item.json.idempotency?.staleReason,
						error: item.json.error,
					})),
				},
				nodesRun: execution.nodesRun,
			};
		});
		const ids = new Set(runs.map((run) => String(run.execution)));
		const errors = errorRuns
			.filter((run) => ids.has(String(outputItem(run, 'Error Trigger')?.execution?.id)))
			.map((run) => ({
				execution: run.id,
				status: run.status,
				for: outputItem(run, 'Error Trigger')?.execution?.id,
				nodesRun: run.nodesRun,
			}));
		const eventId = key.replace(/^evt:/, '');
		const attempts = result.run.attempts
			.filter((a) => a.eventId === eventId)
			.sort((a, b) => a.at - b.at)
			.map((a) => ({ at: iso(a.at), ms: a.ms, status: a.status, outcome: a.outcome ?? a.error }));
		out.push({ key, business, keyRow: keyRows[0] ?? null, runs, errorRuns: errors, attempts });
	}
	return out;
}
