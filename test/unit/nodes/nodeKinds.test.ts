import type { INodeParameters } from 'n8n-workflow';

import {
	continuingLosesTheEvent,
	failsForNoEvent,
	hidesConditionFailures,
	isRouting,
	sendsFailuresDownFirstBranch,
	hidesStatementFailures,
	joinsItems,
	joinsAndSplitsWithoutKeys,
	loopOutputsOf,
	pairsKeptItemsByPlace,
	queriesForFirstItemOnly,
	runsOnceForAllItems,
	sendsStatementsAsOne,
	writesAllOrNone,
} from '../../../nodes/shared/settlement/nodeKinds';

// The database nodes whose one failure undoes the writes they report done, and the Merge SQL joins whose
// rows stand for every event: what the settlement reads from their parameters (n8n saves no parameter
// equal to its default).

const postgres = (typeVersion: number, parameters: INodeParameters = {}) => ({
	name: 'Insert',
	type: 'n8n-nodes-base.postgres',
	typeVersion,
	parameters,
});
const mySql = (typeVersion: number, queryBatching?: string) => ({
	name: 'Insert',
	type: 'n8n-nodes-base.mySql',
	typeVersion,
	parameters: queryBatching === undefined ? {} : { options: { queryBatching } },
});
const merge = (typeVersion: number, parameters: INodeParameters) => ({
	name: 'Join',
	type: 'n8n-nodes-base.merge',
	typeVersion,
	parameters,
});

describe('sendsStatementsAsOne: MySQL statements joined into one query, outside a transaction', () => {
	const withOperation = (operation: string | undefined, queryBatching?: string) => ({
		...mySql(2.5, queryBatching),
		parameters: {
			...(operation === undefined ? {} : { operation }),
			...(queryBatching === undefined ? {} : { options: { queryBatching } }),
		},
	});
	it('a statement per item at Single Query (the default): Execute Query, Update, Upsert, Delete', () => {
		for (const operation of ['executeQuery', 'update', 'upsert', 'deleteTable']) {
			expect(sendsStatementsAsOne(withOperation(operation))).toBe(true);
			expect(sendsStatementsAsOne(withOperation(operation, 'single'))).toBe(true);
		}
	});
	it('not an Insert (its default operation: one statement), a Select, another batching, version 1 or another node', () => {
		expect(sendsStatementsAsOne(withOperation(undefined))).toBe(false);
		expect(sendsStatementsAsOne(withOperation('insert'))).toBe(false);
		expect(sendsStatementsAsOne(withOperation('select'))).toBe(false);
		expect(sendsStatementsAsOne(withOperation('executeQuery', 'transaction'))).toBe(false);
		expect(sendsStatementsAsOne(withOperation('executeQuery', 'independently'))).toBe(false);
		expect(sendsStatementsAsOne({ ...withOperation('executeQuery'), typeVersion: 1 })).toBe(false);
		expect(sendsStatementsAsOne(postgres(2.5, { operation: 'executeQuery' }))).toBe(false);
	});
});

describe('If, Filter and Switch at Continue: failures n8n records for no event, or not at all', () => {
	const routing = (type: string, typeVersion: number, onError?: 'continueRegularOutput' | 'continueErrorOutput' | 'stopWorkflow') => ({
		name: 'Check',
		type: `n8n-nodes-base.${type}`,
		typeVersion,
		...(onError === undefined ? {} : { onError }),
	});
	it('If and Filter take a failed condition as an answer at either Continue (version 1: the whole input on to the true branch)', () => {
		for (const type of ['if', 'filter']) {
			expect(hidesConditionFailures(routing(type, 2.2, 'continueRegularOutput'))).toBe(true);
			expect(hidesConditionFailures(routing(type, 2, 'continueErrorOutput'))).toBe(true);
			expect(hidesConditionFailures({ ...routing(type, 2), continueOnFail: true })).toBe(true);
			expect(hidesConditionFailures(routing(type, 2.2))).toBe(false);
			expect(hidesConditionFailures(routing(type, 2.2, 'stopWorkflow'))).toBe(false);
			expect(hidesConditionFailures(routing(type, 1, 'continueRegularOutput'))).toBe(true);
			expect(hidesConditionFailures(routing(type, 1))).toBe(false);
			expect(continuingLosesTheEvent(routing(type, 2))).toBe(true);
		}
	});
	it('Switch at Continue puts an error item paired to no event', () => {
		expect(failsForNoEvent(routing('switch', 3.2, 'continueRegularOutput'))).toBe(true);
		expect(failsForNoEvent(routing('switch', 3.2))).toBe(false);
		expect(hidesConditionFailures(routing('switch', 3.2, 'continueRegularOutput'))).toBe(false);
		expect(continuingLosesTheEvent(routing('switch', 1))).toBe(true);
		expect(continuingLosesTheEvent(routing('set', 3.4))).toBe(false);
	});
});

describe('writesAllOrNone: one failure undoes every write of the run', () => {
	it('Postgres in one query (its default) or one transaction; not one query per item', () => {
		expect(writesAllOrNone(postgres(2.5))).toBe(true);
		expect(writesAllOrNone(postgres(2.5, { options: { queryBatching: 'transaction' } }))).toBe(true);
		expect(writesAllOrNone(postgres(2.5, { options: { queryBatching: 'independently' } }))).toBe(false);
		expect(writesAllOrNone(postgres(1, { additionalFields: { mode: 'transaction' } }))).toBe(true);
		expect(writesAllOrNone(postgres(1, { additionalFields: { mode: 'independently' } }))).toBe(false);
	});

	it("TimescaleDB (the Postgres node 1's code) in one query (its default) or one transaction; not QuestDB or CrateDB", () => {
		const on = (type: string, parameters: INodeParameters = {}) => ({
			name: 'Insert',
			type: `n8n-nodes-base.${type}`,
			typeVersion: 1.1,
			parameters,
		});
		expect(writesAllOrNone(on('timescaleDb'))).toBe(true);
		expect(writesAllOrNone(on('timescaleDb', { additionalFields: { mode: 'transaction' } }))).toBe(true);
		expect(writesAllOrNone(on('timescaleDb', { additionalFields: { mode: 'independently' } }))).toBe(false);
		expect(writesAllOrNone(on('questDb'))).toBe(false);
		expect(writesAllOrNone(on('crateDb'))).toBe(false);
	});

	it('MySQL (version 2) in Transaction mode only: its Single Query mode sends several statements that are not undone together', () => {
		expect(writesAllOrNone(mySql(2.5, 'transaction'))).toBe(true);
		expect(writesAllOrNone(mySql(2.5))).toBe(false);
		expect(writesAllOrNone(mySql(2.5, 'single'))).toBe(false);
		expect(writesAllOrNone(mySql(2.5, 'independently'))).toBe(false);
		expect(writesAllOrNone(mySql(1, 'transaction'))).toBe(false);
	});

	it('no other node', () => {
		expect(writesAllOrNone({ name: 'Call', type: 'n8n-nodes-base.httpRequest', typeVersion: 4.2, parameters: {} })).toBe(false);
	});
});

describe("hidesStatementFailures: SQL nodes on the Postgres node's version-1 helpers, at Continue, reporting a failed statement as done", () => {
	const legacy = (
		type: string,
		typeVersion: number,
		parameters: INodeParameters,
		onError?: 'continueRegularOutput' | 'continueErrorOutput',
	) => ({
		name: 'Insert',
		type: `n8n-nodes-base.${type}`,
		typeVersion,
		parameters,
		...(onError ? { onError } : {}),
	});
	it('one by one or in a transaction at either Continue: TimescaleDB, CrateDB, the Postgres node 1', () => {
		for (const type of ['timescaleDb', 'crateDb', 'postgres'])
			for (const mode of ['independently', 'transaction'])
				for (const onError of ['continueRegularOutput', 'continueErrorOutput'] as const)
					expect({ type, mode, onError, hides: hidesStatementFailures(legacy(type, 1, { additionalFields: { mode } }, onError)) }).toEqual({
						type,
						mode,
						onError,
						hides: true,
					});
		// The older Continue On Fail setting is Continue (regular output).
		expect(
			hidesStatementFailures({ ...legacy('timescaleDb', 1.1, { additionalFields: { mode: 'independently' } }), continueOnFail: true }),
		).toBe(true);
	});
	it('not in Multiple Queries mode (their default: one query, which fails as a whole), nor at Stop Workflow', () => {
		expect(hidesStatementFailures(legacy('timescaleDb', 1.1, {}, 'continueErrorOutput'))).toBe(false);
		expect(hidesStatementFailures(legacy('postgres', 1, { additionalFields: { mode: 'multiple' } }, 'continueErrorOutput'))).toBe(false);
		expect(hidesStatementFailures(legacy('timescaleDb', 1.1, { additionalFields: { mode: 'independently' } }))).toBe(false);
	});
	it('QuestDB always (no Multiple Queries; its inserts one by one), CrateDB updates in either mode', () => {
		expect(hidesStatementFailures(legacy('questDb', 1.1, {}, 'continueErrorOutput'))).toBe(true);
		expect(hidesStatementFailures(legacy('questDb', 1.1, { operation: 'insert' }, 'continueRegularOutput'))).toBe(true);
		expect(hidesStatementFailures(legacy('crateDb', 1.1, { operation: 'update' }, 'continueErrorOutput'))).toBe(true);
		expect(hidesStatementFailures(legacy('crateDb', 1.1, { operation: 'insert' }, 'continueErrorOutput'))).toBe(false);
	});
	it("not the Postgres node's current versions, which fail or pair an error item per statement", () => {
		expect(hidesStatementFailures(legacy('postgres', 2.5, { options: { queryBatching: 'independently' } }, 'continueErrorOutput'))).toBe(
			false,
		);
		expect(hidesStatementFailures(legacy('mySql', 2.4, { options: { queryBatching: 'independently' } }, 'continueErrorOutput'))).toBe(
			false,
		);
	});
});

describe('Microsoft SQL and MySQL 1: failures n8n is not told of, or told of for no event', () => {
	const sql = (
		type: string,
		typeVersion: number,
		parameters: INodeParameters,
		onError?: 'continueRegularOutput' | 'continueErrorOutput',
	) => ({
		name: 'Write',
		type: `n8n-nodes-base.${type}`,
		typeVersion,
		parameters,
		...(onError ? { onError } : {}),
	});
	it("Microsoft SQL's Insert (its default), Update and Delete at Continue return no item and no error for a failed statement", () => {
		for (const operation of [undefined, 'insert', 'update', 'delete'])
			expect(hidesStatementFailures(sql('microsoftSql', 1.2, operation ? { operation } : {}, 'continueErrorOutput'))).toBe(true);
		expect(hidesStatementFailures(sql('microsoftSql', 1.2, { operation: 'executeQuery' }, 'continueErrorOutput'))).toBe(false);
		expect(hidesStatementFailures(sql('microsoftSql', 1.2, { operation: 'insert' }))).toBe(false);
	});
	it("Microsoft SQL 1's Execute Query runs the first item's query only; 1.1 and later run one per item", () => {
		expect(queriesForFirstItemOnly(sql('microsoftSql', 1, { operation: 'executeQuery' }))).toBe(true);
		expect(queriesForFirstItemOnly(sql('microsoftSql', 1.1, { operation: 'executeQuery' }))).toBe(false);
		expect(queriesForFirstItemOnly(sql('microsoftSql', 1, { operation: 'insert' }))).toBe(false);
	});
	it("MySQL 1's Execute Query and Update at Continue answer any failure with one error item for no event; its Insert is one statement", () => {
		expect(failsForNoEvent(sql('mySql', 1, { operation: 'executeQuery' }, 'continueErrorOutput'))).toBe(true);
		expect(failsForNoEvent(sql('mySql', 1, { operation: 'update' }, 'continueRegularOutput'))).toBe(true);
		expect(failsForNoEvent(sql('mySql', 1, {}, 'continueErrorOutput'))).toBe(false);
		expect(failsForNoEvent(sql('mySql', 1, { operation: 'executeQuery' }))).toBe(false);
		expect(failsForNoEvent(sql('mySql', 2.4, { operation: 'executeQuery' }, 'continueErrorOutput'))).toBe(false);
	});
});

describe('joinsAndSplitsWithoutKeys: Merge SQL Query rows paired to every event, carrying no key', () => {
	const query = 'SELECT input1.eid, input2.tier FROM input1 LEFT JOIN input2 ON input1.eid = input2.eid';
	it('version 3 pairs every row to every input item; 3.1 and later only for a query not starting with SELECT', () => {
		expect(joinsAndSplitsWithoutKeys(merge(3, { mode: 'combineBySql', query }))).toBe(true);
		expect(joinsAndSplitsWithoutKeys(merge(3.1, { mode: 'combineBySql', query }))).toBe(false);
		expect(joinsAndSplitsWithoutKeys(merge(3.2, { mode: 'combineBySql', query }))).toBe(false);
		expect(joinsAndSplitsWithoutKeys(merge(3.2, { mode: 'combineBySql', query: ` ${query}` }))).toBe(true);
		expect(joinsAndSplitsWithoutKeys(merge(3.2, { mode: 'combineBySql', query: `WITH x AS (${query}) SELECT eid FROM x` }))).toBe(true);
	});

	it('also for a SELECT whose column list is on several lines (n8n pairs none of its rows), or that groups or combines rows', () => {
		const lines = 'SELECT input1.eid,\n  input2.tier\nFROM input1\nLEFT JOIN input2 ON input1.eid = input2.eid';
		expect(joinsAndSplitsWithoutKeys(merge(3.2, { mode: 'combineBySql', query: lines }))).toBe(true);
		expect(
			joinsAndSplitsWithoutKeys(
				merge(3.2, { mode: 'combineBySql', query: 'SELECT input1.eid, COUNT(*) AS n FROM input1 GROUP BY input1.eid' }),
			),
		).toBe(true);
		expect(joinsAndSplitsWithoutKeys(merge(3.2, { mode: 'combineBySql', query: 'SELECT DISTINCT input1.eid FROM input1' }))).toBe(true);
	});

	it('not when each row carries the key: every column selected, or idempotency under its own name, on one line or several', () => {
		const withKey = (query: string) => joinsAndSplitsWithoutKeys(merge(3, { mode: 'combineBySql', query }));
		expect(withKey('SELECT input1.eid, input1.idempotency FROM input1')).toBe(false);
		expect(withKey('SELECT input1.eid,\n  input1.idempotency AS idempotency\nFROM input1')).toBe(false);
		expect(withKey('SELECT * FROM input1 LEFT JOIN input2 ON input1.eid = input2.eid')).toBe(false);
		// The mode's default query selects every column.
		expect(joinsAndSplitsWithoutKeys(merge(3, { mode: 'combineBySql' }))).toBe(false);
	});

	it("but when the key is only named (WHERE, another name) or one input's columns are selected (which input holds the key is not read)", () => {
		const withKey = (query: string) => joinsAndSplitsWithoutKeys(merge(3, { mode: 'combineBySql', query }));
		expect(withKey('SELECT input1.eid FROM input1 WHERE input1.idempotency IS NOT NULL')).toBe(true);
		expect(withKey('SELECT input1.eid, input1.idempotency AS meta FROM input1')).toBe(true);
		expect(withKey('SELECT input1.*, input2.tier FROM input1 JOIN input2')).toBe(true);
	});

	it('no other Merge mode', () => {
		expect(joinsAndSplitsWithoutKeys(merge(3, { mode: 'combineByPosition' }))).toBe(false);
		expect(joinsAndSplitsWithoutKeys(merge(3, {}))).toBe(false);
	});
});

describe('joinsItems and runsOnceForAllItems: nodes whose one item, or one failure, stands for every event', () => {
	const convertToFile = (parameters: INodeParameters) => ({
		name: 'To File',
		type: 'n8n-nodes-base.convertToFile',
		typeVersion: 1.1,
		parameters,
	});
	it('Convert to File makes one item of all: a spreadsheet (CSV at its defaults), HTML, JSON All Items to One File; not one file per item', () => {
		expect(
			[
				{},
				{ operation: 'xlsx' },
				{ operation: 'html' },
				{ operation: 'toJson' },
				{ operation: 'toJson', mode: 'each' },
				{ operation: 'toText' },
			].map((parameters) => joinsItems(convertToFile(parameters))),
		).toEqual([true, true, true, true, false, false]);
		const spreadsheetFile = (operation?: string) => ({
			name: 'Sheet',
			type: 'n8n-nodes-base.spreadsheetFile',
			typeVersion: 2,
			parameters: operation ? { operation } : {},
		});
		expect([joinsItems(spreadsheetFile('toFile')), joinsItems(spreadsheetFile())]).toEqual([true, false]);
	});

	it("the HTML node's Convert to HTML Table makes one item of all; its default operation (a template per item) does not", () => {
		const html = (parameters: INodeParameters) => ({ name: 'Table', type: 'n8n-nodes-base.html', typeVersion: 1.2, parameters });
		expect([joinsItems(html({ operation: 'convertToHtmlTable' })), joinsItems(html({}))]).toEqual([true, false]);
	});

	it('Code at its default mode, the Function node and AI Transform run once for all items; Code run for each item does not', () => {
		const node = (type: string, parameters: INodeParameters = {}) => ({
			name: 'N',
			type: `n8n-nodes-base.${type}`,
			typeVersion: 1,
			parameters,
		});
		expect(
			[node('code'), node('code', { mode: 'runOnceForEachItem' }), node('function'), node('aiTransform'), node('set')].map(
				runsOnceForAllItems,
			),
		).toEqual([true, false, true, true, false]);
	});
});

describe('loopOutputsOf: which output of a loop node gives the items it is done with, as n8n names them', () => {
	const loop = (typeVersion: number) => ({ name: 'Loop', type: 'n8n-nodes-base.splitInBatches', typeVersion, parameters: {} });
	const named = (outputNames: string[] | undefined) => () => ({ properties: [], outputNames });
	it('Split In Batches 2 names its outputs loop, done; 3 done, loop; read from the description', () => {
		expect(loopOutputsOf(loop(2), named(['loop', 'done']))).toEqual({ done: 1, loop: 0 });
		expect(loopOutputsOf(loop(3), named(['done', 'loop']))).toEqual({ done: 0, loop: 1 });
	});
	it("Loop Over Items 3's outputs when n8n names none (version 1's one output, or no description to read)", () => {
		expect(loopOutputsOf(loop(1), named(undefined))).toEqual({ done: 0, loop: 1 });
		expect(loopOutputsOf(loop(2), undefined)).toEqual({ done: 0, loop: 1 });
	});
});

describe('pairsKeptItemsByPlace: Remove Duplicates within its input with Remove Other Fields, whose kept items n8n pairs by place', () => {
	const node = (type: string, typeVersion: number, parameters: INodeParameters) => ({
		name: 'Dedupe',
		type: `n8n-nodes-base.${type}`,
		typeVersion,
		parameters,
	});
	const removeOtherFields = { compare: 'selectedFields', fieldsToCompare: 'body.order', options: { removeOtherFields: true } };
	it('Remove Duplicates 1.1 and 2 (its default operation), Item Lists Remove Duplicates; an expression counts', () => {
		expect(
			[
				node('removeDuplicates', 1.1, removeOtherFields),
				node('removeDuplicates', 2, removeOtherFields),
				node('removeDuplicates', 2, { ...removeOtherFields, operation: 'removeDuplicateInputItems' }),
				node('itemLists', 3.1, { ...removeOtherFields, operation: 'removeDuplicates' }),
				node('removeDuplicates', 2, { ...removeOtherFields, options: { removeOtherFields: '={{ true }}' } }),
			].map(pairsKeptItemsByPlace),
		).toEqual([true, true, true, true, true]);
	});
	it('not without Remove Other Fields, nor for the other operations', () => {
		expect(
			[
				node('removeDuplicates', 2, { compare: 'selectedFields', fieldsToCompare: 'body.order' }),
				node('removeDuplicates', 2, { ...removeOtherFields, operation: 'removeItemsSeenInPreviousExecutions' }),
				node('itemLists', 3.1, { ...removeOtherFields, operation: 'sort' }),
				node('set', 3.4, removeOtherFields),
			].map(pairsKeptItemsByPlace),
		).toEqual([false, false, false, false]);
	});
});

describe("n8n's AI classifiers route items, and at Continue (regular output) send a failure down a branch", () => {
	const ai = (type: string, onError?: 'stopWorkflow' | 'continueRegularOutput' | 'continueErrorOutput') => ({
		name: 'Node',
		type,
		typeVersion: 1.1,
		parameters: {},
		...(onError ? { onError } : {}),
	});
	const classifiers = ['@n8n/n8n-nodes-langchain.textClassifier', '@n8n/n8n-nodes-langchain.sentimentAnalysis'];

	it('Text Classifier and Sentiment Analysis route items (no business effect) and, at Continue (regular output) only, send a failure down the first branch', () => {
		for (const type of classifiers) {
			expect(isRouting(ai(type))).toBe(true);
			expect(
				['stopWorkflow', 'continueRegularOutput', 'continueErrorOutput', undefined].map((onError) =>
					sendsFailuresDownFirstBranch(ai(type, onError as never)),
				),
			).toEqual([false, true, false, false]);
		}
		expect(sendsFailuresDownFirstBranch(ai('n8n-nodes-base.switch', 'continueRegularOutput'))).toBe(false);
	});
});
