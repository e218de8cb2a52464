import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';

/*
 * Each Reserve run writes what it decided into n8n's execution custom data, so the
 * executions list can be filtered by outcome or key (otherwise every execution reads
 * "Succeeded", new or duplicate alike). n8n's rules (n8n-core execution-metadata.ts): keys
 * hold only letters, digits and underscores (a dot is refused, and in manual runs it throws),
 * at most 10 keys per execution (later keys are dropped silently), values cut at 512
 * characters with an error logged above 255. So: six keys and values of 255 characters or fewer
 * (the correlation id only with Reserve's Correlation ID option; it is stored cut to 255 already).
 */

export const CUSTOM_DATA_KEYS = {
	outcome: 'idempotency_outcome',
	key: 'idempotency_key',
	attempt: 'idempotency_attempt',
	counts: 'idempotency_counts',
	correlationId: 'idempotency_correlation_id',
	retry: 'idempotency_retry',
} as const;

/**
 * On every execution whose keys the package settles: n8n's Retry button reruns the failed node with
 * the saved data, without any node of the package, so nothing can refuse it, and the provider
 * retries the event itself. Said where the execution is looked at.
 */
export const RETRY_WARNING =
	"Don't use n8n's Retry on this execution: the provider retries the event itself, and a Retry runs the steps again outside the event's key, even after the event was completed. Replay a failed event with the replay template instead.";

const MAX_VALUE_LENGTH = 255;
const OUTCOME_ORDER = ['new', 'duplicate', 'in_progress', 'unverified', 'not_reserved'] as const;
type Outcome = (typeof OUTCOME_ORDER)[number];

/** The custom data of one run: one outcome ("mixed" when the batch had several), counts, first key. */
export function outcomeCustomData(outputs: INodeExecutionData[][]): Record<string, string> {
	const notReservedOutput = outputs.length - 1;
	const counts = new Map<Outcome, number>();
	let first: IDataObject | undefined;
	for (const [outputIndex, items] of outputs.entries()) {
		for (const item of items) {
			const idempotency = item.json.idempotency as IDataObject | undefined;
			const outcome = outputIndex === notReservedOutput ? 'not_reserved' : outcomeOf(idempotency, outputIndex);
			counts.set(outcome, (counts.get(outcome) ?? 0) + 1);
			if (!first && idempotency && typeof idempotency.key === 'string') first = idempotency;
		}
	}
	return summary(counts, first);
}

/** The custom data of a run that threw (Stop Workflow): none of its items was processed. */
export function failedRunCustomData(itemCount: number): Record<string, string> {
	return summary(new Map([['not_reserved', itemCount]]), undefined);
}

/**
 * Writes the custom data; never fails the node. Visibility is not worth a lost event: a context
 * without custom data (an older n8n, a sub-context) or a refused value only costs the label.
 */
export function recordCustomData(context: IExecuteFunctions, data: Record<string, string>): void {
	try {
		if (context.customData) context.customData.setAll(data);
		// n8n 1.x offers custom data to expressions only ($execution.customData), not on the context.
		else
			(
				context.getWorkflowDataProxy(0) as { $execution?: { customData?: { setAll(values: Record<string, string>): void } } }
			).$execution?.customData?.setAll(data);
	} catch {
		// Deliberately ignored: see above.
	}
}

function outcomeOf(idempotency: IDataObject | undefined, outputIndex: number): Outcome {
	const outcome = idempotency?.outcome;
	if (typeof outcome === 'string' && (OUTCOME_ORDER as readonly string[]).includes(outcome)) return outcome as Outcome;
	// Fallback when the output item carries no outcome: the output it left through.
	return outputIndex === 0 ? 'new' : outputIndex === 1 ? 'duplicate' : 'in_progress';
}

function summary(counts: Map<Outcome, number>, first: IDataObject | undefined): Record<string, string> {
	const present = OUTCOME_ORDER.filter((outcome) => (counts.get(outcome) ?? 0) > 0);
	const data: Record<string, string> = {
		[CUSTOM_DATA_KEYS.outcome]: present.length === 1 ? present[0] : present.length === 0 ? 'none' : 'mixed',
		[CUSTOM_DATA_KEYS.counts]: present.map((outcome) => `${outcome}=${counts.get(outcome)}`).join(' ') || 'none',
	};
	// A run that reserved keys ran steps the provider retries through their keys.
	if ((counts.get('new') ?? 0) > 0) data[CUSTOM_DATA_KEYS.retry] = RETRY_WARNING;
	if (first) {
		data[CUSTOM_DATA_KEYS.key] = String(first.key).slice(0, MAX_VALUE_LENGTH);
		if (typeof first.attempts === 'number') data[CUSTOM_DATA_KEYS.attempt] = String(first.attempts);
		if (typeof first.correlationId === 'string') data[CUSTOM_DATA_KEYS.correlationId] = first.correlationId.slice(0, MAX_VALUE_LENGTH);
	}
	return data;
}

type Execute = (this: IExecuteFunctions) => Promise<INodeExecutionData[][]>;

/** Runs the node and records the run's outcome, whether it returned or threw. */
export function withOutcomeCustomData(execute: Execute): Execute {
	return async function (this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const itemCount = this.getInputData().length;
		let outputs: INodeExecutionData[][] | undefined;
		try {
			outputs = await execute.call(this);
			return outputs;
		} finally {
			// No outputs: the node threw (Stop Workflow), so none of its items was processed.
			if (itemCount > 0) recordCustomData(this, outputs ? outcomeCustomData(outputs) : failedRunCustomData(itemCount));
		}
	};
}
