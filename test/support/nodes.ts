import type { INodeExecutionData } from 'n8n-workflow';

import { IdempotencyExecuteQuery } from '../../nodes/IdempotencyExecuteQuery/IdempotencyExecuteQuery.node';
import { IdempotencyKey } from '../../nodes/IdempotencyKey/IdempotencyKey.node';
import { IdempotencyOrderGuard } from '../../nodes/IdempotencyOrderGuard/IdempotencyOrderGuard.node';
import { IdempotencyReserve } from '../../nodes/IdempotencyReserve/IdempotencyReserve.node';
import { connectionSettings } from './database';
import { fakeExecuteFunctions, type FakeContextOptions, type FakeParameter } from './fakeExecuteFunctions';

type RunOptions = Partial<Omit<FakeContextOptions, 'parameters' | 'items'>> & { items: INodeExecutionData[] };

/** Runs Idempotency Reserve once, against the real test database. */
export function runReserve(parameters: Record<string, FakeParameter>, run: RunOptions): Promise<INodeExecutionData[][]> {
	const context = fakeExecuteFunctions({
		credential: connectionSettings(),
		...run,
		parameters: { keySource: 'auto', mode: 'permanent', ...parameters },
	});
	return new IdempotencyReserve().execute.call(context);
}

/** Runs Idempotency Key once, against the real test database. */
export function runKeyNode(parameters: Record<string, FakeParameter>, run: RunOptions): Promise<INodeExecutionData[][]> {
	const context = fakeExecuteFunctions({ credential: connectionSettings(), ...run, parameters });
	return new IdempotencyKey().execute.call(context);
}

export function idempotencyOf(item: INodeExecutionData): Record<string, unknown> {
	return item.json.idempotency as Record<string, unknown>;
}

/** Runs Idempotency Order Guard once, against the real test database. */
export function runOrderGuard(parameters: Record<string, FakeParameter>, run: RunOptions): Promise<INodeExecutionData[][]> {
	const context = fakeExecuteFunctions({ credential: connectionSettings(), ...run, parameters: { equalVersion: 'stale', ...parameters } });
	return new IdempotencyOrderGuard().execute.call(context);
}

/** Runs Idempotency Execute Query once, against the real test database. */
export function runExecuteQuery(parameters: Record<string, FakeParameter>, run: RunOptions): Promise<INodeExecutionData[][]> {
	const context = fakeExecuteFunctions({
		credential: connectionSettings(),
		...run,
		parameters: { keySource: 'auto', mode: 'permanent', ...parameters },
	});
	return new IdempotencyExecuteQuery().execute.call(context);
}
