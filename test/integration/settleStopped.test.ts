import {
	NodeConnectionTypes,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
} from 'n8n-workflow';

import { webhookItem } from '../support/fakeExecuteFunctions';
import { connectionSettings, postgresSchemaFixture } from '../support/database';
import {
	addNodeTypes,
	engineWithUpAndDownCredentials,
	executeInProcess,
	PACKAGE,
	packageNode,
	webhookAnswer,
	type EngineBase,
} from '../support/n8nEngine';
import { keyStatesIn, settleWorkflow } from '../support/settleWorkflows';

/*
 * n8n's Stop button, and a workflow timeout, cancel an execution while a node is still running (a
 * call in flight): n8n-core runs the execution's end handlers at once, and the node goes on. A key
 * failed at that moment would let the provider's retry run the step beside the call still in flight:
 * two effects. The key is held for its lease instead, as after a crash, and the sender is told to
 * retry later (409).
 */

const db = postgresSchemaFixture('stopped', { keyTables: ['processed_events'] });
const { keyState } = keyStatesIn(db);
let base: EngineBase;

/** A business step that starts its effect and finishes it only when the test lets it: a call in flight. */
const inFlight: { started: () => void; finish: () => void; effects: string[] } = {
	started: () => {},
	finish: () => {},
	effects: [],
};

class TestCallInFlight implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Test Call In Flight',
		name: 'testCallInFlight',
		group: ['transform'],
		version: 1,
		description: 'A call that ends when the test says',
		defaults: { name: 'Call' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		properties: [],
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const items = this.getInputData();
		await new Promise<void>((resolve) => {
			inFlight.finish = resolve;
			inFlight.started();
		});
		for (const item of items) inFlight.effects.push(String((item.json.body as { id: string }).id));
		return [items.map((item, index) => ({ json: { done: true }, pairedItem: { item: index } }))];
	}
}

beforeAll(() => {
	addNodeTypes({ [`${PACKAGE}.testCallInFlight`]: new TestCallInFlight() });
	base = engineWithUpAndDownCredentials(connectionSettings());
});

describe('an execution stopped while its business step is still running (Stop, or a workflow timeout)', () => {
	it('holds the key for its lease (copies meanwhile are in progress) and answers 409, never failing it under the call', async () => {
		const data = settleWorkflow(db.schema, 'wf-stopped', {
			nodes: [packageNode('Call', 'testCallInFlight', {}, { position: [700, 0] })],
			connections: {},
			heads: ['Call'],
		});
		const started = new Promise<void>((resolve) => (inFlight.started = resolve));
		let cancel: () => void = () => {};
		const execution = executeInProcess(data, 'stopped-1', [webhookItem({ id: 'evt_stopped' })], base, {
			onStart: (stop) => (cancel = stop),
		});
		await started;
		cancel();
		// n8n-core runs the end handlers on cancel without waiting for the node: give them time to settle.
		for (let i = 0; i < 30 && (await keyState('evt_stopped'))?.status === 'processing'; i++) {
			await new Promise((resolve) => setTimeout(resolve, 100));
		}
		expect(await keyState('evt_stopped')).toMatchObject({ status: 'processing' });

		inFlight.finish();
		const { run } = await execution;
		expect(run.status).toBe('canceled');
		expect(inFlight.effects).toEqual(['evt_stopped']);
		// Still held once the call ended: n8n ran nothing after it, so nothing says the event was handled.
		expect(await keyState('evt_stopped')).toMatchObject({ status: 'processing' });
		expect(webhookAnswer('stopped-1', run)).toBe(409);
	});
});
