import { IdempotencyReserve } from '../../nodes/IdempotencyReserve/IdempotencyReserve.node';
import { connectionSettings, postgresSchemaFixture } from '../support/database';
import { fakeExecuteFunctions, webhookItem } from '../support/fakeExecuteFunctions';

/*
 * With "Settle After Business Step" downstream, a key is settled when the execution ends, through
 * n8n's execution lifecycle hooks (an n8n internal). Where a context does not carry them, Reserve
 * refuses before it reserves anything: the step never runs with a key nothing would settle.
 */

const db = postgresSchemaFixture('executionend', { keyTables: ['processed_events'] });

const SETTLE = {
	id: 'settle',
	name: 'Settle',
	type: 'n8n-nodes-idempotency.idempotencyKey',
	typeVersion: 1,
	position: [0, 300],
	parameters: { operation: 'settle' },
};
const STEP = {
	id: 'step',
	name: 'Step',
	type: 'n8n-nodes-base.httpRequest',
	typeVersion: 4,
	position: [0, 0],
	parameters: {},
	onError: 'continueErrorOutput',
};
const main = (...names: string[]) => names.map((node) => ({ node, type: 'main', index: 0 }));
// What n8n-core's execute context carries besides the hooks: the execution's record and the workflow (Step and Settle beside it).
const RECORD = {
	runExecutionData: { resultData: { runData: {} }, executionData: {} },
	workflow: {
		nodes: { Step: STEP, Settle: SETTLE },
		connectionsBySourceNode: { 'Node Under Test': { main: [main('Step', 'Settle')] } },
		settings: { executionOrder: 'v1' },
	},
};

function reserveContext(fields: { additionalData?: unknown; continueOnFail?: boolean }) {
	const context = fakeExecuteFunctions({
		credential: connectionSettings(),
		items: [webhookItem({ id: 'evt_no_hooks' })],
		parameters: { keySource: 'auto', mode: 'lease', leaseSeconds: 60, options: { schemaName: db.schema, tableName: 'processed_events' } },
		continueOnFail: fields.continueOnFail,
	});
	return Object.assign(context, RECORD, { additionalData: fields.additionalData, getChildNodes: () => [STEP, SETTLE] });
}

const stored = async () => (await db.pool.query(`select key from ${db.schema}.processed_events where key = 'evt:evt_no_hooks'`)).rows;

describe('Idempotency Reserve with Settle After Business Step downstream, in an n8n without lifecycle hooks', () => {
	it.each([
		['no additional data', undefined],
		['additional data without hooks', {}],
		['hooks that cannot answer the webhook (no runHook)', { hooks: { addHandler: () => {} } }],
	])('%s: refused before anything is reserved, saying why', async (_label, additionalData) => {
		await expect(new IdempotencyReserve().execute.call(reserveContext({ additionalData }))).rejects.toThrow(
			/does not let the node learn how the execution ends.*Nothing was reserved/,
		);
		expect(await stored()).toEqual([]);
	});

	it('under On Error: Continue the item leaves through Not Reserved, never New', async () => {
		const outputs = await new IdempotencyReserve().execute.call(reserveContext({ additionalData: {}, continueOnFail: true }));
		expect(outputs[0]).toEqual([]);
		expect(outputs[outputs.length - 1].map((item) => item.json.error)).toEqual([expect.stringMatching(/learn how the execution ends/)]);
		expect(await stored()).toEqual([]);
	});
});
