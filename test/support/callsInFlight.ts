import {
	NodeConnectionTypes,
	NodeOperationError,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
} from 'n8n-workflow';

import { effects } from './n8nBaseNodes';

/*
 * A business call the test holds in flight, then lets commit or cuts: a charge per item (the event's `body.id`,
 * recorded in n8nBaseNodes' `effects` when it commits). Register `TestCallInFlight` as a node type and hold a call
 * with `holdCall` before it is made.
 */

const gates = new Map<string, { started: () => void; wait: Promise<boolean> }>();
const calls = new Map<string, number>();

/** Holds call `n` of event `id` in flight: `started` resolves when it is, `release(true)` commits it, `release(false)` cuts it. */
export function holdCall(id: string, n: number): { started: Promise<void>; release: (commit: boolean) => void } {
	let release: (commit: boolean) => void = () => {};
	let started: () => void = () => {};
	const startedPromise = new Promise<void>((resolve) => (started = resolve));
	const wait = new Promise<boolean>((resolve) => (release = resolve));
	gates.set(`${id}#${n}`, { started, wait });
	return { started: startedPromise, release };
}

export class TestCallInFlight implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Test Call In Flight',
		name: 'testCallInFlight',
		group: ['transform'],
		version: 1,
		description: 'A charge per item; a call the test holds stays in flight until it is released',
		defaults: { name: 'Charge' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		properties: [],
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const output: INodeExecutionData[] = [];
		for (const [index, item] of this.getInputData().entries()) {
			const id = String((item.json.body as { id?: unknown } | undefined)?.id ?? '');
			const n = (calls.get(id) ?? 0) + 1;
			calls.set(id, n);
			const gate = gates.get(`${id}#${n}`);
			if (gate) {
				gate.started();
				// A cut call (the process or the connection died) commits nothing.
				if (!(await gate.wait)) throw new NodeOperationError(this.getNode(), `call cut for ${id}`);
			}
			effects.push(id);
			output.push({ json: { charged: id }, pairedItem: { item: index } });
		}
		return [output];
	}
}
