// A soak through the webhook template: the retrying provider delivers a plan of events (each 3–7
// times, shuffled, some forged) while an optional fault is injected mid-run; then the outcome is
// checked the way a user would judge it (exactly one business row per event, nothing stuck).
import {
	plan,
	deliverAll,
	figures,
	recoveryMs,
	report,
	type Attempt,
	type DeliveryPlan,
	type ProviderRun,
	type RetryOptions,
} from './provider';
import { businessRows, keysNotCompletedAfterSettling, stuckExecutions } from './outcome';
import type { Harness } from './harness';

/** Soak sizes: each test names its own; E2E_SOAK_* env vars override them (smaller on a busy machine). */
export function soakSize({ events, deliveries }: { events: number; deliveries: number }): {
	events: number;
	deliveries: number;
	concurrency: number;
} {
	return {
		events: Number(process.env.E2E_SOAK_EVENTS ?? events),
		deliveries: Number(process.env.E2E_SOAK_DELIVERIES ?? deliveries),
		concurrency: Number(process.env.E2E_SOAK_CONCURRENCY ?? 16),
	};
}

/** What a soak ends with, as the user judges it. */
export interface SoakOutcome {
	events: number;
	rows: number;
	doubled: number;
	missing: number;
	keysNotCompleted: number;
	stuckExecutions: number;
}

/** Everything a soak did and found. */
export interface SoakResult<F = unknown> {
	thePlan: Required<DeliveryPlan>;
	run: ProviderRun;
	stats: ReturnType<typeof figures>;
	faultResult: F | null;
	faultAt: number | null;
	outcome: SoakOutcome;
	rows: Awaited<ReturnType<typeof businessRows>>;
	notCompleted: string[];
	stuck: Array<{ id: number; status: string }>;
	mark: number;
}

/**
 * Runs the plan; `fault` (optional) is started once `faultAfter` attempts were answered and must
 * return what proves it happened. stuckWaitMs: how long executions still 'running' may take to
 * finish before they count as stuck. Returns { thePlan, run, figures, faultResult, faultAt, outcome }.
 */
export async function soak<F = unknown>(
	h: Harness,
	{
		label,
		events,
		deliveries,
		concurrency = 16,
		forged = 0,
		fault,
		faultAfter = 0,
		retry,
		stuckWaitMs = 60000,
	}: {
		label: string;
		events: number;
		deliveries?: number;
		concurrency?: number;
		forged?: number;
		fault?: () => Promise<F>;
		faultAfter?: number;
		retry?: Partial<RetryOptions>;
		stuckWaitMs?: number;
	},
): Promise<SoakResult<F>> {
	const thePlan = plan({ label, events, deliveries, forged, seed: Number(process.env.E2E_SEED ?? Date.now()) });
	const mark = await h.executionMark();
	// Set by onAttempt, during deliverAll.
	let faultPromise = null as Promise<F> | null;
	let faultAt = null as number | null;
	let answered = 0;
	const run = await deliverAll({
		url: h.webhookUrl,
		plan: thePlan,
		concurrency,
		retry,
		onAttempt: () => {
			answered += 1;
			if (fault && !faultPromise && answered >= faultAfter) {
				faultAt = Date.now();
				faultPromise = fault();
				faultPromise.catch(() => {}); // awaited below
			}
		},
	});
	const faultResult = faultPromise ? await faultPromise : null;
	const stats = figures(run);
	// The provider's last 2xx is not the system's last write: executions may still be finishing and
	// the error workflow may still be completing keys. Read the outcome once they settled (bounded).
	const stuck = await stuckExecutions(h, h.IDS.webhook, mark, { timeoutMs: stuckWaitMs });
	const notCompleted = await keysNotCompletedAfterSettling(h, thePlan.eventIds);
	const rows = await businessRows(h, thePlan.eventIds);
	const outcome: SoakOutcome = {
		events: thePlan.eventIds.length,
		rows: rows.rows,
		doubled: rows.doubled.length,
		missing: rows.missing.length,
		keysNotCompleted: notCompleted.length,
		stuckExecutions: stuck.length,
	};
	const recovery = faultAt ? { recoveryMsAfterFault: recoveryMs(run, faultAt) } : {};
	report(label, { seed: thePlan.seed, ...stats, ...outcome, ...recovery });
	return { thePlan, run, stats, faultResult, faultAt, outcome, rows, notCompleted, stuck, mark };
}

/** The answers a soak may get: 200/409 for genuine deliveries (5xx/errors only during a fault), 401 for forged. */
export function unexpectedAnswers(run: ProviderRun, { allowFailures = false }: { allowFailures?: boolean } = {}): Attempt[] {
	return run.attempts.filter((a) => {
		if (a.forged) return a.status !== 401;
		if ([200, 409].includes(a.status)) return false;
		return !allowFailures;
	});
}
