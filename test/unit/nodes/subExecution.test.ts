import type { INode, IRunData } from 'n8n-workflow';

import { isSubWorkflowErrorOutput, readSubExecutions, type SubExecutionRecords } from '../../../nodes/shared/settlement/subExecution';

// The rule that reads a sub-execution's record for an item an Execute Workflow node returned beyond
// its first output; the in-process rows are in test/integration/settleShapesEventsTogether.test.ts.

const inner = (name: string, type: string, extra: Partial<INode> = {}) => ({ name, type, ...extra });

/** An Execute Workflow node running the sub-workflow `nodes`, defined in its parameters (or from the database). */
const executeWorkflow = (nodes: object[], source = 'parameter'): INode => ({
	id: 'run',
	name: 'Run Sub-workflow',
	type: 'n8n-nodes-base.executeWorkflow',
	typeVersion: 1.3,
	position: [0, 0],
	parameters: { source, workflowJson: JSON.stringify({ nodes, connections: {} }), mode: 'each' },
	onError: 'continueRegularOutput',
});

/** A record where each named node ran once, the last with `outputs` outputs. */
const record = (ran: string[], outputs: number): SubExecutionRecords => {
	const runData: IRunData = {};
	for (const name of ran) {
		runData[name] = [
			{
				startTime: 0,
				executionTime: 0,
				executionIndex: 0,
				source: [],
				data: { main: Array.from({ length: name === ran.at(-1) ? outputs : 1 }, () => []) },
			},
		];
	}
	return new Map([['sub-1', { resultData: { runData, lastNodeExecuted: ran.at(-1) } }]]);
};

const trigger = inner('Start', 'n8n-nodes-base.executeWorkflowTrigger');

describe('isSubWorkflowErrorOutput', () => {
	it("an If's false branch, no node continuing on error: a regular output (not a failure)", () => {
		const node = executeWorkflow([trigger, inner('Approved?', 'n8n-nodes-base.if')]);
		expect(isSubWorkflowErrorOutput(node, 'sub-1', 1, record(['Start', 'Approved?'], 2))).toBe(false);
	});

	it('the last output of a last node at Continue (using error output): its error output', () => {
		const node = executeWorkflow([trigger, inner('Charge', 'n8n-nodes-base.httpRequest', { onError: 'continueErrorOutput' })]);
		expect(isSubWorkflowErrorOutput(node, 'sub-1', 1, record(['Start', 'Charge'], 2))).toBe(true);
	});

	it('cannot tell (read as a failure): no record, no id, a sub-workflow from the database, a node continuing on error before the If, a nested sub-workflow', () => {
		const ifNode = inner('Approved?', 'n8n-nodes-base.if');
		const ran = record(['Start', 'Approved?'], 2);
		expect(isSubWorkflowErrorOutput(executeWorkflow([trigger, ifNode]), 'sub-2', 1, ran)).toBeUndefined();
		expect(isSubWorkflowErrorOutput(executeWorkflow([trigger, ifNode]), undefined, 1, ran)).toBeUndefined();
		expect(isSubWorkflowErrorOutput(executeWorkflow([trigger, ifNode]), 'sub-1', 1, new Map([['sub-1', undefined]]))).toBeUndefined();
		expect(isSubWorkflowErrorOutput(executeWorkflow([trigger, ifNode], 'database'), 'sub-1', 1, ran)).toBeUndefined();
		const charge = inner('Charge', 'n8n-nodes-base.httpRequest', { onError: 'continueRegularOutput' });
		expect(
			isSubWorkflowErrorOutput(executeWorkflow([trigger, charge, ifNode]), 'sub-1', 1, record(['Start', 'Charge', 'Approved?'], 2)),
		).toBeUndefined();
		const nested = inner('Nested', 'n8n-nodes-base.executeWorkflow');
		expect(
			isSubWorkflowErrorOutput(executeWorkflow([trigger, nested, ifNode]), 'sub-1', 1, record(['Start', 'Nested', 'Approved?'], 2)),
		).toBeUndefined();
	});
});

describe('readSubExecutions', () => {
	it('reads each id once; a read that throws or an n8n without the method leaves no record', async () => {
		const reads: string[] = [];
		const records = await readSubExecutions(['a', 'b', 'a'], async (id) => {
			reads.push(id);
			if (id === 'b') throw new Error('not found');
			return { resultData: { runData: {} } };
		});
		expect({ reads: reads.sort(), a: records.get('a'), b: records.get('b'), hasB: records.has('b') }).toEqual({
			reads: ['a', 'b'],
			a: { resultData: { runData: {} } },
			b: undefined,
			hasB: true,
		});
		expect((await readSubExecutions(['a'], undefined)).size).toBe(0);
	});
});
