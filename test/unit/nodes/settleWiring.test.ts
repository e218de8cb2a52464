import type { IConnections, IExecuteFunctions, INode, IWebhookDescription } from 'n8n-workflow';

import type { ExecutionRecord } from '../../../nodes/shared/settlement/executionRecord';
import type { DescribeNode, NodeTypeFacts } from '../../../nodes/shared/settlement/nodeKinds';
import {
	assertSafeSettleWiring,
	checkEventsApart,
	checkOutcomeVisible,
	checkSettleWiring,
	unsettleableAfterTrigger,
} from '../../../nodes/shared/settlement/wiring';

// The wiring rules Reserve, Order Guard and Claim for Replay check before they reserve or claim
// anything, for the cases the in-process engine cannot run (n8n-nodes-base's nodes are not here).

const node = (name: string, type: string, y: number, extra: Partial<INode> = {}): INode => ({
	id: name,
	name,
	type,
	typeVersion: 1,
	position: [0, y],
	parameters: {},
	onError: 'continueErrorOutput',
	...extra,
});
const link = (...names: string[]) => names.map((name) => ({ node: name, type: 'main' as const, index: 0 }));

function record(nodes: INode[], connections: IConnections, executionOrder = 'v1'): ExecutionRecord {
	const byName = Object.fromEntries(nodes.map((n) => [n.name, n]));
	return { runData: {}, connectionsBySourceNode: connections, executionOrder, node: (name) => byName[name] };
}

const reserve = node('Reserve', 'n8n-nodes-idempotency.idempotencyReserve', 0);
const settle = node('Settle', 'n8n-nodes-idempotency.idempotencyKey', 300, { parameters: { operation: 'settle' }, onError: undefined });
const step = node('Step', 'n8n-nodes-base.httpRequest', 0);

describe('checkSettleWiring', () => {
	it('accepts the template wiring: the step above Settle, continuing on error', () => {
		expect(() =>
			checkSettleWiring(record([reserve, settle, step], { Reserve: { main: [link('Step', 'Settle')] } }), 'Reserve', 0),
		).not.toThrow();
	});

	it('has nothing to check without a Settle node on that output', () => {
		const stopping = { ...step, onError: 'stopWorkflow' as const };
		expect(() => checkSettleWiring(record([reserve, stopping], { Reserve: { main: [link('Step')] } }), 'Reserve', 0)).not.toThrow();
	});

	it('refuses a Respond to Webhook node inside the business step: it would answer before Settle knows the outcome', () => {
		const respond = node('Respond Early', 'n8n-nodes-base.respondToWebhook', 0);
		const wiring = record([reserve, settle, step, respond], {
			Reserve: { main: [link('Step', 'Settle')] },
			Step: { main: [link('Respond Early')] },
		});
		expect(() => checkSettleWiring(wiring, 'Reserve', 0)).toThrow(/"Respond Early" answers the webhook from inside the business step/);
	});

	it('refuses two Settle nodes on one output', () => {
		const second = { ...settle, name: 'Settle 2', position: [0, 400] as [number, number] };
		const wiring = record([reserve, settle, second, step], { Reserve: { main: [link('Step', 'Settle', 'Settle 2')] } });
		expect(() => checkSettleWiring(wiring, 'Reserve', 0)).toThrow(/Several Settle nodes/);
	});

	it('accepts a step at any height and at any On Error: Settle waits for what the step still has to run', () => {
		const level = { ...step, position: [-200, 300] as [number, number], onError: 'stopWorkflow' as const };
		expect(() =>
			checkSettleWiring(record([reserve, settle, level], { Reserve: { main: [link('Step', 'Settle')] } }), 'Reserve', 0),
		).not.toThrow();
	});

	it('ends on a loop back to the feeding node (a replay loop) and ignores disabled nodes', () => {
		const disabled = node('Off', 'n8n-nodes-base.noOp', 0, { disabled: true, onError: undefined });
		const wiring = record([reserve, settle, step, disabled], {
			Reserve: { main: [link('Step', 'Settle')] },
			Step: { main: [link('Off', 'Reserve')] },
		});
		expect(() => checkSettleWiring(wiring, 'Reserve', 0)).not.toThrow();
	});
});

describe('checkOutcomeVisible: a step that waits', () => {
	const wait = (name: string, extra: Partial<INode> = {}) =>
		node(name, 'n8n-nodes-base.wait', 0, { onError: 'continueRegularOutput', ...extra });
	const loop = node('Loop', 'n8n-nodes-base.splitInBatches', 0);

	it('accepts one Wait with Settle below the step', () => {
		const wiring = record([reserve, settle, wait('Wait'), step], {
			Reserve: { main: [link('Wait', 'Settle')] },
			Wait: { main: [link('Step')] },
		});
		expect(() => checkOutcomeVisible(wiring, 'Reserve', 0)).not.toThrow();
	});

	it('refuses two Waits, one after the other or side by side: only the first wait holds the key', () => {
		const serial = record([reserve, settle, wait('Wait 1'), wait('Wait 2'), step], {
			Reserve: { main: [link('Wait 1', 'Settle')] },
			'Wait 1': { main: [link('Wait 2')] },
			'Wait 2': { main: [link('Step')] },
		});
		expect(() => checkOutcomeVisible(serial, 'Reserve', 0)).toThrow(/both make the execution wait.*Keep one Wait/);
		const sideBySide = record([reserve, settle, wait('Wait 1'), wait('Wait 2', { position: [0, 100] })], {
			Reserve: { main: [link('Wait 1', 'Wait 2', 'Settle')] },
		});
		expect(() => checkOutcomeVisible(sideBySide, 'Reserve', 0)).toThrow(/both make the execution wait/);
	});

	it('refuses a Wait inside a loop (Loop Over Items), accepts one after the loop is done', () => {
		const inside = record([reserve, settle, loop, wait('Wait'), step], {
			Reserve: { main: [link('Loop', 'Settle')] },
			Loop: { main: [[], link('Wait')] },
			Wait: { main: [link('Step')] },
			Step: { main: [link('Loop')] },
		});
		expect(() => checkOutcomeVisible(inside, 'Reserve', 0)).toThrow(/"Wait" is inside a loop.*Move the Wait out of the loop/);
		const after = record([reserve, settle, loop, wait('Wait'), step], {
			Reserve: { main: [link('Loop', 'Settle')] },
			Loop: { main: [link('Wait'), link('Step')] },
			Step: { main: [link('Loop')] },
		});
		expect(() => checkOutcomeVisible(after, 'Reserve', 0)).not.toThrow();
	});

	it('refuses Settle that n8n would run before the step (above it, or level with it and not to its right)', () => {
		const connections = { Reserve: { main: [link('Wait', 'Settle')] }, Wait: { main: [link('Step')] } };
		const above = { ...settle, position: [0, -100] as [number, number] };
		expect(() => checkOutcomeVisible(record([reserve, above, wait('Wait'), step], connections), 'Reserve', 0)).toThrow(
			/"Settle" sits above "Wait".*Move "Settle" below/,
		);
		const level = { ...settle, position: [0, 0] as [number, number] };
		expect(() => checkOutcomeVisible(record([reserve, level, wait('Wait'), step], connections), 'Reserve', 0)).toThrow(/sits above "Wait"/);
		const levelRight = { ...settle, position: [200, 0] as [number, number] };
		expect(() => checkOutcomeVisible(record([reserve, levelRight, wait('Wait'), step], connections), 'Reserve', 0)).not.toThrow();
	});

	it('refuses a Wait fed by two connections (it would wait once per connection)', () => {
		const route = node('Route', 'n8n-nodes-base.if', 0);
		const twice = record([reserve, settle, route, wait('Wait'), step], {
			Reserve: { main: [link('Route', 'Settle')] },
			Route: { main: [link('Wait'), link('Wait')] },
			Wait: { main: [link('Step')] },
		});
		expect(() => checkOutcomeVisible(twice, 'Reserve', 0)).toThrow(/"Wait" is fed by 2 connections/);
	});

	it('refuses a Wait after a Merge (n8n may run the Merge after Settle), accepts one before it', () => {
		const route = node('Route', 'n8n-nodes-base.if', 0, { onError: undefined });
		const merge = node('Merge', 'n8n-nodes-base.merge', 0);
		const toMerge = (index: number) => [{ node: 'Merge', type: 'main' as const, index }];
		const after = record([reserve, settle, route, merge, wait('Wait'), step], {
			Reserve: { main: [link('Route', 'Settle')] },
			Route: { main: [toMerge(0), toMerge(1)] },
			Merge: { main: [link('Wait')] },
			Wait: { main: [link('Step')] },
		});
		expect(() => checkOutcomeVisible(after, 'Reserve', 0)).toThrow(/"Wait" comes after "Merge", which has several inputs/);
		const before = record([reserve, settle, wait('Wait'), route, merge, step], {
			Reserve: { main: [link('Wait', 'Settle')] },
			Wait: { main: [link('Route')] },
			Route: { main: [toMerge(0), toMerge(1)] },
			Merge: { main: [link('Step')] },
		});
		expect(() => checkOutcomeVisible(before, 'Reserve', 0)).not.toThrow();
	});

	it("refuses Execute Workflow at Continue (using error output), any version and mode: n8n overwrites the sub-workflow's failures", () => {
		const execute = (typeVersion: number, mode: string, onError: INode['onError']) => ({
			...node('Run Sub-workflow', 'n8n-nodes-base.executeWorkflow', 0, { onError }),
			typeVersion,
			parameters: { mode },
		});
		const wiring = (typeVersion: number, mode: string, onError: INode['onError']) =>
			record([reserve, settle, execute(typeVersion, mode, onError)], { Reserve: { main: [link('Run Sub-workflow', 'Settle')] } });
		for (const [typeVersion, mode] of [
			[1.1, 'each'],
			[1.3, 'each'],
			[1.3, 'once'],
			[1.4, 'once'],
		] as const) {
			expect(() => checkOutcomeVisible(wiring(typeVersion, mode, 'continueErrorOutput'), 'Reserve', 0)).toThrow(
				/"Run Sub-workflow" is set to On Error "Continue \(using error output\)".*"Continue \(regular output\)"/,
			);
			expect(() => checkOutcomeVisible(wiring(typeVersion, mode, 'continueRegularOutput'), 'Reserve', 0)).not.toThrow();
			expect(() => checkOutcomeVisible(wiring(typeVersion, mode, 'stopWorkflow'), 'Reserve', 0)).not.toThrow();
		}
	});

	it('accepts Settle above the step when nothing in it waits', () => {
		const above = { ...settle, position: [0, -100] as [number, number] };
		expect(() =>
			checkOutcomeVisible(record([reserve, above, step], { Reserve: { main: [link('Step', 'Settle')] } }), 'Reserve', 0),
		).not.toThrow();
	});
});

describe('checkEventsApart: several events reaching a node that stops the workflow on error', () => {
	const atStop = (name: string, type: string, extra: Partial<INode> = {}) => node(name, type, 0, { onError: undefined, ...extra });
	const beside = (heads: string[], nodes: INode[], more: IConnections = {}) =>
		record([reserve, settle, ...nodes], { Reserve: { main: [link(...heads, 'Settle')] }, ...more });
	const refused = /gets the 3 events of this run together and stops the workflow when it fails/;

	it('refuses an HTTP Request at the default On Error, naming it and the fix', () => {
		const wiring = beside(['Call'], [atStop('Call', 'n8n-nodes-base.httpRequest')]);
		expect(() => checkEventsApart(wiring, 'Reserve', 0, 3)).toThrow(
			/"Call" gets the 3 events .*"Continue \(using error output\)".*Loop Over Items \(batch size 1\)/,
		);
	});

	it('refuses it after a node that continues on error, and with Settle chained after the step', () => {
		const after = beside(['Look Up'], [node('Look Up', 'n8n-nodes-base.httpRequest', 0), atStop('Write', 'n8n-nodes-base.httpRequest')], {
			'Look Up': { main: [link('Write')] },
		});
		expect(() => checkEventsApart(after, 'Reserve', 0, 3)).toThrow(refused);
		const chained = record([reserve, settle, atStop('Call', 'n8n-nodes-base.code')], {
			Reserve: { main: [link('Call')] },
			Call: { main: [link('Settle')] },
		});
		expect(() => checkEventsApart(chained, 'Reserve', 0, 3)).toThrow(refused);
	});

	it('accepts one event, nodes that continue on error, and a step that no Settle settles', () => {
		const wiring = beside(['Call'], [atStop('Call', 'n8n-nodes-base.httpRequest')]);
		expect(() => checkEventsApart(wiring, 'Reserve', 0, 1)).not.toThrow();
		expect(() => checkEventsApart(beside(['Call'], [node('Call', 'n8n-nodes-base.httpRequest', 0)]), 'Reserve', 0, 3)).not.toThrow();
		expect(() =>
			checkEventsApart(
				beside(['Call'], [atStop('Call', 'n8n-nodes-base.httpRequest', { onError: 'continueRegularOutput' })]),
				'Reserve',
				0,
				3,
			),
		).not.toThrow();
		expect(() =>
			checkEventsApart(beside(['Call'], [atStop('Call', 'n8n-nodes-base.httpRequest', { continueOnFail: true })]), 'Reserve', 0, 3),
		).not.toThrow();
		const unsettled = record([reserve, atStop('Call', 'n8n-nodes-base.httpRequest')], { Reserve: { main: [link('Call')] } });
		expect(() => checkEventsApart(unsettled, 'Reserve', 0, 3)).not.toThrow();
	});

	it("accepts nodes that only route or reshape items, Stop and Error, and the package's own nodes", () => {
		const types = [
			'if',
			'switch',
			'merge',
			'noOp',
			'filter',
			'splitOut',
			'aggregate',
			'sort',
			'limit',
			'removeDuplicates',
			'set',
			'stopAndError',
		];
		for (const type of types)
			expect(() => checkEventsApart(beside(['Flow'], [atStop('Flow', `n8n-nodes-base.${type}`)]), 'Reserve', 0, 3)).not.toThrow();
		expect(() =>
			checkEventsApart(beside(['Query'], [atStop('Query', 'n8n-nodes-idempotency.idempotencyExecuteQuery')]), 'Reserve', 0, 3),
		).not.toThrow();
	});

	it('accepts a Postgres node sending its items as one query or one transaction, refuses one query per item', () => {
		const postgres = (queryBatching?: string) =>
			beside(
				['Insert'],
				[
					atStop('Insert', 'n8n-nodes-base.postgres', {
						typeVersion: 2.5,
						parameters: { options: queryBatching ? { queryBatching } : {} },
					}),
				],
			);
		expect(() => checkEventsApart(postgres(), 'Reserve', 0, 3)).not.toThrow();
		expect(() => checkEventsApart(postgres('single'), 'Reserve', 0, 3)).not.toThrow();
		expect(() => checkEventsApart(postgres('transaction'), 'Reserve', 0, 3)).not.toThrow();
		expect(() => checkEventsApart(postgres('independently'), 'Reserve', 0, 3)).toThrow(refused);
	});

	it("accepts a node inside Loop Over Items with batch size 1, refuses it with batch size 2 and when the loop's Done output leads on", () => {
		const loop = (batchSize: number | undefined, doneTo: string[] = []) =>
			beside(
				['Loop'],
				[
					atStop('Loop', 'n8n-nodes-base.splitInBatches', { typeVersion: 3, parameters: batchSize === undefined ? {} : { batchSize } }),
					atStop('Call', 'n8n-nodes-base.httpRequest'),
					atStop('After', 'n8n-nodes-base.httpRequest'),
				],
				{ Loop: { main: [link(...doneTo), link('Call')] }, Call: { main: [link('Loop')] } },
			);
		expect(() => checkEventsApart(loop(undefined), 'Reserve', 0, 3)).not.toThrow();
		expect(() => checkEventsApart(loop(1), 'Reserve', 0, 3)).not.toThrow();
		expect(() => checkEventsApart(loop(2), 'Reserve', 0, 3)).toThrow(/"Call" gets/);
		// Its failure would end the loop with the earlier events waiting for the Done output, their calls done.
		expect(() => checkEventsApart(loop(1, ['After']), 'Reserve', 0, 3)).toThrow(/When "Call" fails, it ends "Loop"/);
	});

	it('refuses Execute Workflow at Stop Workflow, for each item or for all at once, with or without a node after it', () => {
		const execute = (mode: string, after: boolean) =>
			beside(
				['Run'],
				[atStop('Run', 'n8n-nodes-base.executeWorkflow', { parameters: { mode } }), node('After', 'n8n-nodes-base.noOp', 0)],
				after ? { Run: { main: [link('After')] } } : {},
			);
		expect(() => checkEventsApart(execute('each', false), 'Reserve', 0, 3)).toThrow(/"Run" gets/);
		expect(() => checkEventsApart(execute('each', true), 'Reserve', 0, 3)).toThrow(/"Run" gets/);
		expect(() => checkEventsApart(execute('once', false), 'Reserve', 0, 3)).toThrow(/"Run" gets/);
		// Its fix is the regular output: at the error output n8n would lose the sub-workflow's failures.
		expect(() => checkEventsApart(execute('once', false), 'Reserve', 0, 3)).toThrow(/"Continue \(regular output\)" \(each event/);
		expect(() => checkEventsApart(execute('once', false), 'Reserve', 0, 3)).not.toThrow(/using error output/);
	});

	it('refuses a routing node at Stop Workflow after a node that may have an effect, naming both', () => {
		const wiring = beside(
			['Charge'],
			[node('Charge', 'n8n-nodes-base.httpRequest', 0), atStop('Route', 'n8n-nodes-base.switch'), atStop('Done', 'n8n-nodes-base.noOp')],
			{
				Charge: { main: [link('Route')] },
				Route: { main: [link('Done')] },
			},
		);
		expect(() => checkEventsApart(wiring, 'Reserve', 0, 3)).toThrow(/"Route" gets the 3 events of this run together after "Charge"/);
		const before = beside(['Route'], [atStop('Route', 'n8n-nodes-base.if'), node('Charge', 'n8n-nodes-base.httpRequest', 0)], {
			Route: { main: [link('Charge')] },
		});
		expect(() => checkEventsApart(before, 'Reserve', 0, 3)).not.toThrow();
	});

	it('refuses a Code node run once for all items (its default) after an effect at Continue; each item, or before any effect, accepted', () => {
		const code = (mode: string | undefined, first: 'Charge' | 'Totals' = 'Charge') =>
			beside(
				[first],
				[
					node('Charge', 'n8n-nodes-base.httpRequest', 0, { onError: 'continueErrorOutput' }),
					node('Totals', 'n8n-nodes-base.code', 0, { onError: 'continueErrorOutput', parameters: mode ? { mode } : {} }),
				],
				first === 'Charge' ? { Charge: { main: [link('Totals')] } } : { Totals: { main: [link('Charge')] } },
			);
		expect(() => checkEventsApart(code(undefined), 'Reserve', 0, 3)).toThrow(
			/"Totals" runs once for all the items it gets.*after "Charge"/,
		);
		expect(() => checkEventsApart(code('runOnceForAllItems'), 'Reserve', 0, 3)).toThrow(/Run Once for Each Item/);
		expect(() => checkEventsApart(code('runOnceForEachItem'), 'Reserve', 0, 3)).not.toThrow();
		expect(() => checkEventsApart(code(undefined, 'Totals'), 'Reserve', 0, 3)).not.toThrow();
	});

	it('refuses a node after an effect that gets the one empty item an Always Output Data node gives for all the events', () => {
		const wiring = (always: boolean) =>
			beside(
				['Charge'],
				[
					node('Charge', 'n8n-nodes-base.httpRequest', 0, { onError: 'continueErrorOutput' }),
					node('Find Coupon', 'n8n-nodes-base.noOp', 0, { alwaysOutputData: always }),
					node('Notify', 'n8n-nodes-base.slack', 0, { onError: 'continueErrorOutput' }),
				],
				{ Charge: { main: [link('Find Coupon')] }, 'Find Coupon': { main: [link('Notify')] } },
			);
		expect(() => checkEventsApart(wiring(true), 'Reserve', 0, 3)).toThrow(
			/"Notify" comes after "Find Coupon", which is set to Always Output Data/,
		);
		expect(() => checkEventsApart(wiring(false), 'Reserve', 0, 3)).not.toThrow();
	});

	it('refuses a node after an effect that is itself set to Always Output Data (an API answering each call with an empty list)', () => {
		const wiring = (always: boolean) =>
			beside(
				['Charge'],
				[
					node('Charge', 'n8n-nodes-base.httpRequest', 0, { onError: 'continueErrorOutput', alwaysOutputData: always }),
					node('Notify', 'n8n-nodes-base.slack', 0, { onError: 'continueErrorOutput' }),
				],
				{ Charge: { main: [link('Notify')] } },
			);
		expect(() => checkEventsApart(wiring(true), 'Reserve', 0, 3)).toThrow(
			/"Notify" comes after "Charge", which is set to Always Output Data, and "Charge" may have done its work for the 3 events of this run/,
		);
		expect(() => checkEventsApart(wiring(false), 'Reserve', 0, 3)).not.toThrow();
		expect(() => checkEventsApart(wiring(true), 'Reserve', 0, 1)).not.toThrow();
	});

	it('refuses Sort with a code comparator, Merge by SQL, Remove Duplicates and a Wait set by an expression after an effect for several events (they fail on the events together); accepts simple Sort and a fixed Wait', () => {
		const after = (name: string, type: string, parameters: INode['parameters']) =>
			beside(
				['Charge'],
				[
					node('Charge', 'n8n-nodes-base.httpRequest', 0, { onError: 'continueErrorOutput' }),
					node(name, type, 0, { parameters, onError: 'stopWorkflow' }),
				],
				{ Charge: { main: [link(name)] } },
			);
		expect(() => checkEventsApart(after('Sort', 'n8n-nodes-base.sort', { type: 'code', code: 'return 0;' }), 'Reserve', 0, 3)).toThrow(
			/"Sort"/,
		);
		expect(() => checkEventsApart(after('Join', 'n8n-nodes-base.merge', { mode: 'combineBySql' }), 'Reserve', 0, 3)).toThrow(/"Join"/);
		expect(() => checkEventsApart(after('Once', 'n8n-nodes-base.removeDuplicates', {}), 'Reserve', 0, 3)).toThrow(/"Once"/);
		const until = { resume: 'specificTime', dateTime: '={{ $json.ship_at }}' };
		expect(() => checkEventsApart(after('Until', 'n8n-nodes-base.wait', until), 'Reserve', 0, 3)).toThrow(/"Until"/);
		expect(() => checkEventsApart(after('Pause', 'n8n-nodes-base.wait', { amount: 2, unit: 'seconds' }), 'Reserve', 0, 3)).not.toThrow();
		expect(() => checkEventsApart(after('Sort', 'n8n-nodes-base.sort', { sortFieldsUi: {} }), 'Reserve', 0, 3)).not.toThrow();
		expect(() =>
			checkEventsApart(after('Sort', 'n8n-nodes-base.sort', { type: 'code', code: 'return 0;' }), 'Reserve', 0, 1),
		).not.toThrow();
	});

	it('refuses a node set to Execute Once after a node that may have an effect, whatever its On Error, and before one unless joined with the events again', () => {
		const once = (onError: INode['onError']) =>
			beside(
				['Charge'],
				[node('Charge', 'n8n-nodes-base.httpRequest', 0), node('Notify', 'n8n-nodes-base.slack', 0, { onError, executeOnce: true })],
				{
					Charge: { main: [link('Notify')] },
				},
			);
		for (const onError of ['continueErrorOutput', 'continueRegularOutput'] as const)
			expect(() => checkEventsApart(once(onError), 'Reserve', 0, 3)).toThrow(/"Notify" is set to Execute Once and comes after "Charge"/);
		const first = beside(
			['Notify'],
			[node('Notify', 'n8n-nodes-base.slack', 0, { executeOnce: true }), node('Charge', 'n8n-nodes-base.httpRequest', 0)],
			{ Notify: { main: [link('Charge')] } },
		);
		expect(() => checkEventsApart(first, 'Reserve', 0, 3)).toThrow(
			/"Notify" is set to Execute Once and gets the 3 events of this run: it runs for the first of them only, and "Charge" after it would act or settle for that one alone/,
		);
		expect(() => checkEventsApart(first, 'Reserve', 0, 1)).not.toThrow();
		const joined = beside(
			['Notify', 'With Token'],
			[
				node('Notify', 'n8n-nodes-base.slack', 0, { executeOnce: true }),
				node('With Token', 'n8n-nodes-base.merge', 0, { parameters: { mode: 'combine', combineBy: 'combineAll' } }),
				node('Charge', 'n8n-nodes-base.httpRequest', 0, { onError: 'continueErrorOutput' }),
			],
			{ Notify: { main: [[{ node: 'With Token', type: 'main', index: 1 }]] }, 'With Token': { main: [link('Charge')] } },
		);
		expect(() => checkEventsApart(joined, 'Reserve', 0, 3)).not.toThrow();
	});

	it('refuses a node that continues on error fed by Split Out of an Aggregate or Summarize that keeps no key, accepts one that keeps it', () => {
		const joined = (join: INode, head = 'Join') =>
			beside([head], [join, node('Split', 'n8n-nodes-base.splitOut', 0), node('Charge', 'n8n-nodes-base.httpRequest', 0)], {
				Join: { main: [link('Split')] },
				Split: { main: [link('Charge')] },
			});
		const aggregate = (parameters: INode['parameters']) => node('Join', 'n8n-nodes-base.aggregate', 0, { parameters });
		const split = /"Charge" gets the items "Split" splits out of "Join", which joins the 3 events of this run without their keys/;
		expect(() => checkEventsApart(joined(aggregate({})), 'Reserve', 0, 3)).toThrow(split);
		expect(() => checkEventsApart(joined(node('Join', 'n8n-nodes-base.summarize', 0)), 'Reserve', 0, 3)).toThrow(split);
		expect(() =>
			checkEventsApart(
				joined(aggregate({ aggregate: 'aggregateAllItemData', include: 'specifiedFields', fieldsToInclude: 'body' })),
				'Reserve',
				0,
				3,
			),
		).toThrow(split);
		expect(() =>
			checkEventsApart(
				joined(aggregate({ aggregate: 'aggregateAllItemData', include: 'allFieldsExcept', fieldsToExclude: 'headers, idempotency' })),
				'Reserve',
				0,
				3,
			),
		).toThrow(split);
		expect(() => checkEventsApart(joined(aggregate({ aggregate: 'aggregateAllItemData' })), 'Reserve', 0, 3)).not.toThrow();
		expect(() =>
			checkEventsApart(
				joined(aggregate({ aggregate: 'aggregateAllItemData', include: 'specifiedFields', fieldsToInclude: 'body, idempotency' })),
				'Reserve',
				0,
				3,
			),
		).not.toThrow();
		// At Stop Workflow, or one item at a time, each split item is still paired to every event.
		const atStopAfterSplit = joined(aggregate({}));
		(atStopAfterSplit.node('Charge') as INode).onError = undefined;
		expect(() => checkEventsApart(atStopAfterSplit, 'Reserve', 0, 3)).toThrow(split);
		const looped = beside(
			['Join'],
			[
				aggregate({}),
				node('Split', 'n8n-nodes-base.splitOut', 0),
				atStop('Loop', 'n8n-nodes-base.splitInBatches', { typeVersion: 3, parameters: { batchSize: 1 } }),
				node('Charge', 'n8n-nodes-base.httpRequest', 0),
			],
			{
				Join: { main: [link('Split')] },
				Split: { main: [link('Loop')] },
				Loop: { main: [[], link('Charge')] },
				Charge: { main: [link('Loop')] },
			},
		);
		expect(() => checkEventsApart(looped, 'Reserve', 0, 3)).toThrow(split);
		// Without Split Out the aggregated item is one call for all events: all or nothing.
		const batch = beside(['Join'], [aggregate({}), node('Charge', 'n8n-nodes-base.httpRequest', 0)], { Join: { main: [link('Charge')] } });
		expect(() => checkEventsApart(batch, 'Reserve', 0, 3)).not.toThrow();
	});

	it('reads On Error before the legacy Continue On Fail, as n8n does', () => {
		const legacy = (extra: Partial<INode>) => beside(['Call'], [atStop('Call', 'n8n-nodes-base.httpRequest', extra)]);
		expect(() => checkEventsApart(legacy({ continueOnFail: true, onError: 'stopWorkflow' }), 'Reserve', 0, 3)).toThrow(refused);
		expect(() => checkEventsApart(legacy({ continueOnFail: true }), 'Reserve', 0, 3)).not.toThrow();
	});

	it("reads Postgres node 1's batching from its mode: one query or a transaction accepted, one query per item refused", () => {
		const postgres1 = (mode?: string) =>
			beside(
				['Insert'],
				[atStop('Insert', 'n8n-nodes-base.postgres', { typeVersion: 1, parameters: { additionalFields: mode ? { mode } : {} } })],
			);
		expect(() => checkEventsApart(postgres1(), 'Reserve', 0, 3)).not.toThrow();
		expect(() => checkEventsApart(postgres1('multiple'), 'Reserve', 0, 3)).not.toThrow();
		expect(() => checkEventsApart(postgres1('transaction'), 'Reserve', 0, 3)).not.toThrow();
		expect(() => checkEventsApart(postgres1('independently'), 'Reserve', 0, 3)).toThrow(refused);
	});

	it('refuses a node inside a batch-1 loop that is also fed from outside the loop', () => {
		const wiring = beside(
			['Fast?'],
			[
				atStop('Fast?', 'n8n-nodes-base.if'),
				atStop('Loop', 'n8n-nodes-base.splitInBatches', { typeVersion: 3, parameters: { batchSize: 1 } }),
				atStop('Call', 'n8n-nodes-base.httpRequest'),
			],
			{ 'Fast?': { main: [link('Loop'), link('Call')] }, Loop: { main: [[], link('Call')] }, Call: { main: [link('Loop')] } },
		);
		expect(() => checkEventsApart(wiring, 'Reserve', 0, 3)).toThrow(/"Call" gets/);
	});
});

describe('checkOutcomeVisible: a node that drops items seen in previous executions', () => {
	const seenBefore = node('Seen Before?', 'n8n-nodes-base.removeDuplicates', 0, {
		typeVersion: 2,
		parameters: { operation: 'removeItemsSeenInPreviousExecutions' },
	});
	const webhook = node('Webhook', 'n8n-nodes-base.webhook', 0);

	it('refuses it in the step: the retry of an event whose step failed would be dropped there', () => {
		const wiring = record([reserve, seenBefore, step], {
			Reserve: { main: [link('Seen Before?')] },
			'Seen Before?': { main: [link('Step')] },
		});
		expect(() => checkOutcomeVisible(wiring, 'Reserve', 0)).toThrow(/"Seen Before\?" removes items processed in previous executions/);
	});

	it('refuses it before the reserving node: the retry would never reach it', () => {
		const wiring = record([webhook, seenBefore, reserve, step], {
			Webhook: { main: [link('Seen Before?')] },
			'Seen Before?': { main: [link('Reserve')] },
			Reserve: { main: [link('Step')] },
		});
		expect(() => checkOutcomeVisible(wiring, 'Reserve', 0)).toThrow(/removes items processed in previous executions/);
	});

	it('accepts Remove Duplicates within the current input, and a disabled one across executions', () => {
		const within = { ...seenBefore, parameters: { operation: 'removeDuplicateInputItems' } };
		const off = { ...seenBefore, name: 'Off', disabled: true };
		const wiring = record([reserve, within, off, step], {
			Reserve: { main: [link('Seen Before?')] },
			'Seen Before?': { main: [link('Off')] },
			Off: { main: [link('Step')] },
		});
		expect(() => checkOutcomeVisible(wiring, 'Reserve', 0)).not.toThrow();
	});
});

describe("assertSafeSettleWiring without n8n's execution record", () => {
	// What a context without n8n-core's fields gives: only the public helpers.
	const contextWith = (downstream: Array<Partial<INode>>) =>
		({ getNode: () => reserve, getChildNodes: () => downstream }) as unknown as IExecuteFunctions;

	it('refuses when a Settle node is downstream: it could not judge the step', () => {
		expect(() =>
			assertSafeSettleWiring(contextWith([{ name: 'Settle', type: settle.type, parameters: { operation: 'settle' } }]), 0),
		).toThrow(/cannot tell whether the business step succeeded/);
	});

	it('lets every other workflow run', () => {
		expect(() =>
			assertSafeSettleWiring(contextWith([{ name: 'Complete', type: settle.type, parameters: { operation: 'complete' } }]), 0),
		).not.toThrow();
	});
});

describe('unsettleableAfterTrigger (the Idempotent Webhook trigger, before any node of the user runs)', () => {
	const child = (name: string, type: string, extra: { disabled?: boolean; parameters?: INode['parameters'] } = {}) => ({
		name,
		type,
		parameters: {},
		...extra,
	});
	const call = child('Call your API', 'n8n-nodes-base.httpRequest');

	it.each([
		['a Wait', child('Wait', 'n8n-nodes-base.wait'), /"Wait" makes the execution wait/],
		['a Form', child('Form', 'n8n-nodes-base.form'), /"Form" makes the execution wait/],
		[
			'a Respond to Webhook node (after the effect it would fail, and the retry repeat the effect)',
			child('Answer', 'n8n-nodes-base.respondToWebhook'),
			/"Answer" answers the webhook/,
		],
		[
			'a sub-workflow not waited for',
			child('Run Sub-workflow', 'n8n-nodes-base.executeWorkflow', { parameters: { options: { waitForSubWorkflow: false } } }),
			/without waiting/,
		],
		[
			'a sub-workflow whose waiting is an expression',
			child('Run Sub-workflow', 'n8n-nodes-base.executeWorkflow', { parameters: { options: { waitForSubWorkflow: '={{ $json.wait }}' } } }),
			/without waiting/,
		],
		[
			'Remove Duplicates across executions (the retry of a failed event would be dropped there)',
			child('Seen Before?', 'n8n-nodes-base.removeDuplicates', { parameters: { operation: 'removeItemsSeenInPreviousExecutions' } }),
			/"Seen Before\?" removes items processed in previous executions/,
		],
	])('refuses %s', (_label, node, reason) => {
		expect(unsettleableAfterTrigger([call, node], undefined)).toMatch(reason);
	});

	it("refuses Execute Workflow at Continue (using error output), read from the workflow's nodes (n8n's summaries carry no On Error)", () => {
		const execute = (onError: INode['onError']) => node('Run Sub-workflow', 'n8n-nodes-base.executeWorkflow', 0, { onError });
		const summary = child('Run Sub-workflow', 'n8n-nodes-base.executeWorkflow', { parameters: { options: {} } });
		const nodes = (onError: INode['onError']) => record([execute(onError)], {});
		expect(unsettleableAfterTrigger([call, summary], undefined, nodes('continueErrorOutput'))).toMatch(
			/"Run Sub-workflow" is set to On Error "Continue \(using error output\)"/,
		);
		expect(unsettleableAfterTrigger([call, summary], undefined, nodes('continueRegularOutput'))).toBeUndefined();
		expect(unsettleableAfterTrigger([call, summary], undefined, nodes(undefined))).toBeUndefined();
	});

	it('lets Remove Duplicates within the current input run (it keeps nothing across executions)', () => {
		expect(unsettleableAfterTrigger([call, child('Unique', 'n8n-nodes-base.removeDuplicates')], undefined)).toBeUndefined();
	});

	it('lets the rest run: a sub-workflow waited for, a disabled Wait or Respond to Webhook, plain steps', () => {
		expect(
			unsettleableAfterTrigger(
				[
					call,
					child('Run Sub-workflow', 'n8n-nodes-base.executeWorkflow', { parameters: { options: {} } }),
					child('Wait', 'n8n-nodes-base.wait', { disabled: true }),
					child('Answer', 'n8n-nodes-base.respondToWebhook', { disabled: true }),
				],
				undefined,
			),
		).toBeUndefined();
	});

	// Descriptions shaped as n8n declares them: a webhook that resumes the execution (restartWebhook),
	// and for Send and Wait, an operation among others.
	const resumes: IWebhookDescription[] = [{ name: 'default', httpMethod: 'POST', path: '={{ $nodeId }}', restartWebhook: true }];
	const described: Record<string, NodeTypeFacts> = {
		'n8n-nodes-base.slack': {
			webhooks: resumes,
			properties: [
				{
					displayName: 'Operation',
					name: 'operation',
					type: 'options',
					default: 'post',
					options: [
						{ name: 'Send', value: 'post' },
						{ name: 'Send and Wait for Response', value: 'sendAndWait' },
					],
				},
			],
		},
		'community.approvalGate': { webhooks: resumes, properties: [] },
		'n8n-nodes-base.httpRequest': { properties: [] },
	};
	const describe: DescribeNode = (node) => described[node.type];

	it.each([
		['Slack Send and Wait for Response', child('Ask', 'n8n-nodes-base.slack', { parameters: { operation: 'sendAndWait' } })],
		['an operation n8n computes per run', child('Ask', 'n8n-nodes-base.slack', { parameters: { operation: '={{ $json.op }}' } })],
		['a community node declaring a resuming webhook', child('Gate', 'community.approvalGate')],
	])('refuses what n8n declares may wait: %s', (_label, node) => {
		expect(unsettleableAfterTrigger([call, node], describe)).toMatch(/makes the execution wait/);
	});

	it('lets through a node of a waiting kind doing an operation that does not wait, and nodes that declare no wait', () => {
		expect(
			unsettleableAfterTrigger(
				[call, child('Tell', 'n8n-nodes-base.slack', { parameters: { operation: 'post' } }), child('Call', 'n8n-nodes-base.httpRequest')],
				describe,
			),
		).toBeUndefined();
	});
});

describe('checkEventsApart: MySQL statements sent as one query', () => {
	const mySql = (parameters: INode['parameters']) =>
		record([reserve, settle, node('Write', 'n8n-nodes-base.mySql', 0, { typeVersion: 2.5, parameters })], {
			Reserve: { main: [link('Write', 'Settle')] },
		});
	it('refuses an Execute Query at Single Query (the default) given several events, naming the batching to set', () => {
		expect(() => checkEventsApart(mySql({ operation: 'executeQuery' }), 'Reserve', 0, 2)).toThrow(/Query Batching to "Transaction"/);
	});
	it('accepts it for one event, in a transaction, one query per event, or an Insert', () => {
		expect(() => checkEventsApart(mySql({ operation: 'executeQuery' }), 'Reserve', 0, 1)).not.toThrow();
		expect(() =>
			checkEventsApart(mySql({ operation: 'executeQuery', options: { queryBatching: 'transaction' } }), 'Reserve', 0, 2),
		).not.toThrow();
		expect(() =>
			checkEventsApart(mySql({ operation: 'update', options: { queryBatching: 'independently' } }), 'Reserve', 0, 2),
		).not.toThrow();
		expect(() => checkEventsApart(mySql({}), 'Reserve', 0, 2)).not.toThrow();
	});
});
