import {
	NodeConnectionTypes,
	type INode,
	type INodeExecutionData,
	type INodeParameters,
	type IRun,
	type IWorkflowBase,
} from 'n8n-workflow';

import { connectionSettings, postgresSchemaFixture } from '../support/database';
import { webhookItem } from '../support/fakeExecuteFunctions';
import { credentialsHelper, engineBase, PACKAGE, runWorkflowExecution, type EngineBase } from '../support/n8nEngine';

/*
 * Idempotency Key with Key From "Idempotency Reserve (Paired Item)", run by n8n-core's own engine:
 * the key and owner token come from the Reserve item each input item descends from (n8n's
 * paired-item rules), with no expression, after a business step that replaced the items.
 */

const db = postgresSchemaFixture('paired');

const CREDENTIAL_ID = 'cred-paired';
let base: EngineBase;

beforeAll(() => {
	const { host, port, database, user, password } = connectionSettings();
	base = engineBase(credentialsHelper({ [CREDENTIAL_ID]: { host, port, database, user, password } }));
});

const credentials = { idempotencyPostgresApi: { id: CREDENTIAL_ID, name: 'Idempotency Postgres' } };
const table = () => ({ schemaName: db.schema, tableName: 'processed_events' });
const to = (name: string) => [{ node: name, type: NodeConnectionTypes.Main, index: 0 }];

function node(name: string, type: string, parameters: INodeParameters, withCredentials = false): INode {
	return {
		id: name,
		name,
		type: `${PACKAGE}.${type}`,
		typeVersion: 1,
		position: [0, 0],
		parameters,
		...(withCredentials ? { credentials } : {}),
	};
}

function reserve(name: string, keyField: string, keyPrefix: string): INode {
	return node(
		name,
		'idempotencyReserve',
		{ keySource: 'field', keyField, keyPrefix, mode: 'lease', leaseSeconds: 120, options: { ...table(), createTable: true } },
		true,
	);
}

function settle(parameters: INodeParameters): INode {
	return node('Mark Complete', 'idempotencyKey', { operation: 'complete', source: 'reserveNode', ...parameters, options: table() }, true);
}

function workflow(nodes: INode[], connections: IWorkflowBase['connections']): IWorkflowBase {
	return {
		id: 'wf-paired',
		name: 'Paired reservation',
		active: false,
		activeVersionId: null,
		isArchived: false,
		createdAt: new Date(),
		updatedAt: new Date(),
		nodes: [node('Webhook', 'testWebhook', {}), ...nodes],
		connections,
		settings: { executionOrder: 'v1' },
	};
}

const status = async (key: string) => (await db.row(key))?.status;
const outputOf = (run: IRun, name: string, index = 0): INodeExecutionData[] =>
	run.data.resultData.runData[name]?.[0]?.data?.main[index] ?? [];

describe('Key From: Idempotency Reserve (Paired Item), in n8n-core', () => {
	it('settles the key of the Reserve item each item came from: two items, the business step keeps only the second', async () => {
		const wf = workflow(
			[
				reserve('Idempotency Reserve', 'body.id', 'ev:'),
				node('Business Step', 'testStep', { replaceItems: true, keepOnlyItem: 1 }),
				settle({ responseJson: '{"stored": true}' }),
			],
			{
				Webhook: { main: [to('Idempotency Reserve')] },
				'Idempotency Reserve': { main: [to('Business Step'), [], []] },
				'Business Step': { main: [to('Mark Complete')] },
			},
		);
		const run = await runWorkflowExecution(
			wf,
			'exec-two-items',
			[webhookItem({ id: 'pair_first' }), webhookItem({ id: 'pair_second' })],
			base,
		);
		expect(run.data.resultData.error).toBeUndefined();
		// The business step replaced the items: Mark Complete saw no idempotency object on its input.
		expect(run.data.resultData.runData['Business Step'][0].data?.main[0]?.[0].json).toEqual({ businessStepRan: true, inputPosition: 1 });
		const [done] = outputOf(run, 'Mark Complete').map((item) => item.json.idempotency as Record<string, unknown>);
		// The settled item carries the reservation it was read from (outcome, owner token), plus the settlement.
		expect(done).toMatchObject({ key: 'ev:pair_second', operation: 'complete', applied: true, outcome: 'new' });
		expect(outputOf(run, 'Mark Complete', 1)).toHaveLength(0);
		expect(await status('ev:pair_second')).toBe('completed');
		// The first item's reservation was not the paired one: it is still running, untouched.
		expect(await status('ev:pair_first')).toBe('processing');
	});

	it('settles each of two items with its own key when both reach it', async () => {
		const wf = workflow(
			[
				reserve('Idempotency Reserve', 'body.id', 'both:'),
				node('Business Step', 'testStep', { replaceItems: true }),
				settle({ operation: 'release' }),
			],
			{
				Webhook: { main: [to('Idempotency Reserve')] },
				'Idempotency Reserve': { main: [to('Business Step'), [], []] },
				'Business Step': { main: [to('Mark Complete')] },
			},
		);
		const run = await runWorkflowExecution(wf, 'exec-both', [webhookItem({ id: 'b1' }), webhookItem({ id: 'b2' })], base);
		expect(run.data.resultData.error).toBeUndefined();
		expect(outputOf(run, 'Mark Complete').map((item) => (item.json.idempotency as Record<string, unknown>).key)).toEqual([
			'both:b1',
			'both:b2',
		]);
		expect([await status('both:b1'), await status('both:b2')]).toEqual([undefined, undefined]);
	});

	describe('two Reserve nodes upstream', () => {
		const twoReserves = (settleParameters: INodeParameters) =>
			workflow(
				[
					reserve('Reserve Event', 'body.id', 'event:'),
					reserve('Reserve Order', 'body.order', 'order:'),
					node('Business Step', 'testStep', { replaceItems: true }),
					settle(settleParameters),
				],
				{
					Webhook: { main: [to('Reserve Event')] },
					'Reserve Event': { main: [to('Reserve Order'), [], []] },
					'Reserve Order': { main: [to('Business Step'), [], []] },
					'Business Step': { main: [to('Mark Complete')] },
				},
			);

		it('refuses to guess between them', async () => {
			const run = await runWorkflowExecution(twoReserves({}), 'exec-two-reserves', [webhookItem({ id: 'two_a', order: 'o_a' })], base);
			expect(run.data.resultData.error?.message).toMatch(
				/Several Idempotency Reserve nodes.*"Reserve Event".*"Reserve Order".*set "Reserve Node"/,
			);
			expect([await status('event:two_a'), await status('order:o_a')]).toEqual(['processing', 'processing']);
		});

		it('settles the named one only', async () => {
			const run = await runWorkflowExecution(
				twoReserves({ reserveNodeName: 'Reserve Event' }),
				'exec-named',
				[webhookItem({ id: 'two_b', order: 'o_b' })],
				base,
			);
			expect(run.data.resultData.error).toBeUndefined();
			expect([await status('event:two_b'), await status('order:o_b')]).toEqual(['completed', 'processing']);
		});

		it('refuses a name that is not an upstream Reserve node', async () => {
			const run = await runWorkflowExecution(
				twoReserves({ reserveNodeName: 'Business Step' }),
				'exec-misnamed',
				[webhookItem({ id: 'two_c', order: 'o_c' })],
				base,
			);
			expect(run.data.resultData.error?.message).toMatch(/no enabled Idempotency Reserve node of that name/);
		});
	});

	it('says which item cannot be traced back when a step dropped the pairing (n8n cannot infer it), and settles nothing', async () => {
		const wf = workflow(
			[
				reserve('Idempotency Reserve', 'body.id', 'lost:'),
				node('Business Step', 'testStep', { replaceItems: true, splitWithoutPairing: true }),
				settle({}),
			],
			{
				Webhook: { main: [to('Idempotency Reserve')] },
				'Idempotency Reserve': { main: [to('Business Step'), [], []] },
				'Business Step': { main: [to('Mark Complete')] },
			},
		);
		const run = await runWorkflowExecution(wf, 'exec-unpaired', [webhookItem({ id: 'l1' }), webhookItem({ id: 'l2' })], base);
		const error = run.data.resultData.error as (Error & { context?: { itemIndex?: number } }) | undefined;
		expect(error?.message).toMatch(/Item 0 cannot be traced back to its item from "Idempotency Reserve"/);
		expect(error?.context?.itemIndex).toBe(0);
		expect([await status('lost:l1'), await status('lost:l2')]).toEqual(['processing', 'processing']);
	});

	it('keeps Key From = Item the default: a node saved without "source" (n8n stores no default values) in a sub-workflow without Reserve still settles', async () => {
		// The parent workflow reserves; a sub-workflow gets its items, idempotency objects included.
		const parent = workflow([reserve('Idempotency Reserve', 'body.id', 'sub:')], { Webhook: { main: [to('Idempotency Reserve')] } });
		const reserved = outputOf(await runWorkflowExecution(parent, 'exec-parent', [webhookItem({ id: 's1' })], base), 'Idempotency Reserve');
		const savedWithDefaults = node('Mark Complete', 'idempotencyKey', { operation: 'complete', options: table() }, true);
		const child = workflow([savedWithDefaults], { Webhook: { main: [to('Mark Complete')] } });
		const run = await runWorkflowExecution(child, 'exec-child', reserved, base);
		expect(run.data.resultData.error).toBeUndefined();
		expect(await status('sub:s1')).toBe('completed');
	});

	it('says so when no Reserve node is upstream', async () => {
		const wf = workflow([node('Business Step', 'testStep', {}), settle({})], {
			Webhook: { main: [to('Business Step')] },
			'Business Step': { main: [to('Mark Complete')] },
		});
		const run = await runWorkflowExecution(wf, 'exec-no-reserve', [webhookItem({ id: 'none' })], base);
		expect(run.data.resultData.error?.message).toMatch(/no Idempotency Reserve node is connected before this node/);
	});

	it("never settles a duplicate's key: the paired reservation has no owner token", async () => {
		const wf = workflow([reserve('Idempotency Reserve', 'body.id', 'dup:'), settle({})], {
			Webhook: { main: [to('Idempotency Reserve')] },
			'Idempotency Reserve': { main: [[], to('Mark Complete'), to('Mark Complete')] },
		});
		await runWorkflowExecution(wf, 'exec-dup-first', [webhookItem({ id: 'd1' })], base);
		const run = await runWorkflowExecution(wf, 'exec-dup-second', [webhookItem({ id: 'd1' })], base);
		const error = run.data.resultData.error as (Error & { context?: { itemIndex?: number } }) | undefined;
		expect(error?.message).toMatch(/no owner token/);
		expect(error?.context?.itemIndex).toBe(0);
		expect(await status('dup:d1')).toBe('processing');
	});
});
