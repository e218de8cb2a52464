import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';

import type { KeyStore } from '../../../lib/store/contract';

/** Opens the store the node's Store parameter names; an operation calls it when it needs the store. */
export type StoreOpener = () => Promise<KeyStore>;

/**
 * What one Idempotency Key operation module (`actions/<value>.operation.ts`) exports. The node's
 * Operation list, its parameters, its outputs expression, its subtitle and its dispatch are all made
 * from the one list of these modules in `operations.ts`.
 */
export interface KeyOperation {
	/** The value saved in workflows: never change one. */
	readonly value: string;
	/** Its entry in the Operation list (the list is shown sorted by name). */
	readonly option: { readonly name: string; readonly action: string; readonly description: string };
	/**
	 * Every parameter shown for it, in the order the panel shows them, each with displayOptions
	 * naming it. A parameter shown for several operations is one object, listed by each of them.
	 */
	readonly description: readonly INodeProperties[];
	/** Its output names, in order: saved connections refer to outputs by position. */
	readonly outputs: readonly string[];
	/** Its subtitle: an expression over `$parameter` (a quoted label, see `quoted`). */
	readonly subtitle: string;
	/**
	 * Under On Error: Continue, the output every input item leaves through, with its error, when the
	 * operation fails as a whole. Without it, the operation routes its own failures and what it
	 * throws stops the run whatever On Error says.
	 */
	readonly failedOutput?: number;
	execute(context: IExecuteFunctions, openStore: StoreOpener): Promise<INodeExecutionData[][]>;
}

/** A label as a subtitle expression. */
export function quoted(label: string): string {
	return JSON.stringify(label);
}
