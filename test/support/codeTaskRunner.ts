import type { INodeExecutionData } from 'n8n-workflow';

import type { EngineBase } from './n8nEngine';

/*
 * n8n's Code node without n8n's task runner process: additionalData.startRunnerTask runs the node's JavaScript
 * in-process and answers what @n8n/task-runner 2.41.1 (js-task-runner.js) answers, for tests of what the settlement
 * reads of a Code node's output and failures.
 */

type RunnerSettings = { code: string; nodeMode: string; continueOnFail: boolean; chunk?: { startIndex: number; count: number } };
const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor as new (
	...args: string[]
) => (...values: unknown[]) => Promise<unknown>;

/**
 * additionalData.startRunnerTask as n8n gives it to the Code node (n8n-core base-execute-context startJob), running the
 * node's JavaScript in-process and answering what @n8n/task-runner 2.41.1 js-task-runner.js answers: runForAllItems
 * returns the code's result (null: []), at Continue a failure is `[{ json: { error: message } }]`; runForEachItem
 * pairs each result to its item, at Continue a failure is `{ json: { error }, pairedItem: { item } }`.
 */
async function startRunnerTask(...args: unknown[]): Promise<unknown> {
	const settings = args[2] as RunnerSettings;
	const items = args[11] as INodeExecutionData[];
	const code = new AsyncFunction('$input', 'items', '$json', 'item', settings.code);
	const input = (item?: INodeExecutionData) => ({ all: () => items, first: () => items[0], last: () => items[items.length - 1], item });
	const failure = (error: unknown) => ({ ok: false, error: { message: (error as Error).message, stack: (error as Error).stack } });
	if (settings.nodeMode === 'runOnceForAllItems') {
		try {
			const result = await code(input(), items, undefined, undefined);
			return { ok: true, result: result === null ? [] : result };
		} catch (error) {
			if (settings.continueOnFail) return { ok: true, result: [{ json: { error: (error as Error).message } }] };
			return failure(error);
		}
	}
	const start = settings.chunk?.startIndex ?? 0;
	const end = start + (settings.chunk?.count ?? items.length);
	const result: INodeExecutionData[] = [];
	for (let index = start; index < end; index++) {
		try {
			const value = (await code(input(items[index]), items, items[index].json, items[index])) as { json?: object } | null;
			if (value === null || value === undefined) continue;
			result.push({ json: (value.json ?? value) as INodeExecutionData['json'], pairedItem: { item: index } });
		} catch (error) {
			if (!settings.continueOnFail) return failure(error);
			result.push({ json: { error: (error as Error).message }, pairedItem: { item: index } });
		}
	}
	return { ok: true, result };
}

/** n8n's engine with the Code node's task runner stood in for (startRunnerTask). */
export function withCodeRunner<T extends EngineBase>(engine: T): T {
	(engine as unknown as { startRunnerTask: typeof startRunnerTask }).startRunnerTask = startRunnerTask;
	return engine;
}
