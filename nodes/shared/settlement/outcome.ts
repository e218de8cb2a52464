import type { IRun } from 'n8n-workflow';

import { executionView, type ExecutionView, type RunExecutionDataFields, type WorkflowFields } from './executionRecord';
import type { SubExecutionRecords } from './subExecution';
import { judgeExecution, keysSettledByNodes, type Judgement, type Reservation } from './trace';

/*
 * What becomes of each key an execution reserved: the one rule, used by Settle while the execution
 * runs and by the execution-end handler when it ends (executionEnd.ts).
 *
 * - failed, with the error, when an item descending from its reservation failed anywhere, or a
 *   failure could not be traced to its reservation (no key is completed on a guess);
 * - while the execution runs, deferred to its end when work of the key is still to run;
 * - at the end, failed when work of the key never ran (the execution stopped, or a loop ended with
 *   items still in it), or when the execution ended otherwise than by success without a node failing;
 * - else completed.
 *
 * An execution that waits holds its keys until it resumes; one stopped while a node still ran (Stop,
 * a workflow timeout) holds them for their lease: the node's call may still be in flight.
 */

/** How an execution ended, for the keys it still holds. */
export interface ExecutionEnd {
	succeeded: boolean;
	/** The node the execution stopped at on an error. */
	failedAt?: string;
	/** The execution's error, or its status in words. */
	message: string;
	status: string;
}

export type KeyOutcome = { settle: 'complete' } | { settle: 'fail'; error: string } | { settle: 'defer' };

/** The outcome of one key; `end` undefined while the execution still runs. */
export function keyOutcome(judgement: Judgement, reservation: Reservation, end?: ExecutionEnd): KeyOutcome {
	const failure = judgement.failed.get(reservation.id) ?? judgement.untracedFailure;
	if (failure !== undefined) return { settle: 'fail', error: failure };
	if (judgement.pending.has(reservation.id) || judgement.untracedPending) {
		if (!end) return { settle: 'defer' };
		// Work still to run when the execution has ended never runs: a loop that stopped with items left in
		// it (a branch not wired back) ends the execution as a success.
		return {
			settle: 'fail',
			error: end.succeeded
				? "The execution ended before this key's step finished: its items were left unprocessed (a loop that stopped, a branch not wired back)."
				: `The execution stopped (${end.failedAt ? `${end.failedAt}: ` : ''}${end.message}) before this key's step finished.`,
		};
	}
	if (end && !end.succeeded && !end.failedAt)
		return { settle: 'fail', error: `The execution ended with status "${end.status}" (${end.message}).` };
	return { settle: 'complete' };
}

export interface EndOutcomes {
	complete: Reservation[];
	fail: Array<{ reservation: Reservation; error: string }>;
	/**
	 * Keys held while the execution waits, until `waitTill`, settled when the resumed execution ends;
	 * or, for an execution stopped while a node still ran (`stopped`), held for their lease.
	 */
	hold: Reservation[];
	waitTill?: Date;
	stopped?: boolean;
	/**
	 * The node the execution waits at when that node does not itself wait by what n8n declares: an
	 * Execute Workflow node whose sub-workflow waits (n8n parks the execution until the sub-workflow ends).
	 */
	waitsThroughSubWorkflow?: string;
}

/**
 * What the run's end means for each key it still holds: completed, failed with a reason, or held while
 * it waits. `subExecutions`: the records of the sub-executions the judgement needs (trace.ts).
 */
export function endOutcomes(run: IRun, workflow: WorkflowFields, subExecutions?: SubExecutionRecords): EndOutcomes {
	const data = run.data as unknown as RunExecutionDataFields & {
		resultData: { error?: { message?: string; node?: { name?: string } }; lastNodeExecuted?: string };
	};
	const status = run.status ?? (data.resultData.error ? 'error' : run.waitTill ? 'waiting' : 'success');
	const view = executionView(data, workflow);
	if (status === 'waiting' || run.waitTill) {
		if (!view) return { complete: [], fail: [], hold: [], waitTill: run.waitTill ?? undefined };
		const waitingAt = data.resultData.lastNodeExecuted ? view.node(data.resultData.lastNodeExecuted) : undefined;
		return {
			complete: [],
			fail: [],
			hold: unsettledReservations(view),
			waitTill: run.waitTill ?? undefined,
			waitsThroughSubWorkflow: waitingAt && view.waits && !view.waits(waitingAt) ? waitingAt.name : undefined,
		};
	}
	if (!view) return { complete: [], fail: [], hold: [] };
	if (status === 'canceled') {
		// n8n's Stop button and a workflow timeout end the run here at once, while the node that was
		// running may still be acting (its call in flight): failing the key now would let the provider's
		// retry run the step beside it. Held for the lease instead, as after a crash.
		return { complete: [], fail: [], hold: unsettledReservations(view), stopped: true };
	}
	const error = data.resultData.error;
	const failedAt = error ? (error.node?.name ?? data.resultData.lastNodeExecuted) : undefined;
	const message = error?.message ?? `the execution ended with status "${status}"`;
	const end: ExecutionEnd = { succeeded: status === 'success' && !error, failedAt, message, status };
	const judgement = judgeExecution(view, failedAt ? { name: failedAt, message } : undefined, subExecutions);
	const settled = keysSettledByNodes(view.runData, view);
	const outcomes: EndOutcomes = { complete: [], fail: [], hold: [] };
	for (const reservation of judgement.reservations.values()) {
		if (settled.has(reservation.key)) continue;
		const outcome = keyOutcome(judgement, reservation, end);
		if (outcome.settle === 'fail') outcomes.fail.push({ reservation, error: outcome.error });
		else outcomes.complete.push(reservation);
	}
	return outcomes;
}

/** Every key the execution reserved that no node of the package has settled yet. */
function unsettledReservations(view: ExecutionView): Reservation[] {
	const settledKeys = keysSettledByNodes(view.runData, view);
	return [...judgeExecution(view).reservations.values()].filter((reservation) => !settledKeys.has(reservation.key));
}
