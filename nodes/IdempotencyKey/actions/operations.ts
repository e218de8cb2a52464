import type { KeyOperation } from './keyOperation';
import * as claimForReplay from './claimForReplay.operation';
import * as cleanup from './cleanup.operation';
import * as complete from './complete.operation';
import * as fail from './fail.operation';
import * as getKey from './getKey.operation';
import * as listKeys from './listKeys.operation';
import * as release from './release.operation';
import * as settle from './settle.operation';
import * as stats from './stats.operation';

/**
 * Every Idempotency Key operation: the Operation list, the parameters, the outputs expression, the
 * subtitle and the dispatch are made from this list. Its order is the order of the parameters in
 * the node's description (a parameter shared by several operations comes with the first of them),
 * which saved workflows do not depend on but the editor shows: a new operation goes at the end.
 */
export const OPERATIONS: readonly KeyOperation[] = [release, settle, complete, fail, cleanup, getKey, claimForReplay, stats, listKeys];

export function operationNamed(value: unknown): KeyOperation | undefined {
	return OPERATIONS.find((operation) => operation.value === value);
}
