// Red team, pass 20: the package's other nodes — Idempotency Order Guard, Idempotency Execute
// Query and the Idempotency Key operations (Complete / Release / Mark Failed / Cleanup / reads).
// A plain `it` is a row where the package holds (asserting the real outcome); `it.failing` is a
// confirmed break, with what happens and how to reproduce it in the comment above it.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { DateTime } from 'luxon';
import type { INodeExecutionData } from 'n8n-workflow';

import { closeEmbeddedStores, openEmbeddedOrderStore } from '../../lib/store/embedded';
import { connectionSettings, postgresSchemaFixture } from '../support/database';
import { webhookItem } from '../support/fakeExecuteFunctions';
import { idempotencyOf, runExecuteQuery, runKeyNode, runOrderGuard, runReserve } from '../support/nodes';
import { TcpProxy } from '../support/tcpProxy';

const db = postgresSchemaFixture('rt20', { keyTables: ['processed_events'] });

// ---------------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------------

const keyOptions = () => ({ schemaName: db.schema, tableName: 'processed_events', createTable: true });
const orderOptions = () => ({ schemaName: db.schema, tableName: 'object_versions', createTable: true });
const count = async (sql: string, values: unknown[] = []) => Number((await db.pool.query(sql, values)).rows[0].count);
const keyRows = (key: string) => count(`select count(*) from ${db.schema}.processed_events where key = $1`, [key]);
const guardOf = (item: INodeExecutionData) => item.json.orderGuard as Record<string, unknown>;
const markOf = async (objectKey: string) =>
	(
		await db.pool.query(`select version::text as version, event_key, stale_count from ${db.schema}.object_versions where object_key = $1`, [
			objectKey,
		])
	).rows[0] as { version: string; event_key: string | null; stale_count: number } | undefined;

/** One delivery for the guard: the object, its version, its event key (Reserve's key). */
interface Versioned {
	object: string;
	version: unknown;
	event?: string;
}
const guardItems = (events: Versioned[]): INodeExecutionData[] =>
	events.map((event) => ({ json: { object: event.object, event: event.event ?? null } }));
function guard(events: Versioned[], extra: Record<string, unknown> = {}, run: { continueOnFail?: boolean; executionId?: string } = {}) {
	return runOrderGuard(
		{
			objectKey: (index: number) => events[index].object,
			version: (index: number) => events[index].version,
			eventKey: (index: number) => events[index].event ?? '',
			options: orderOptions(),
			...extra,
		},
		{ items: guardItems(events), ...run },
	);
}

const leaseReserve = (items: INodeExecutionData[], executionId = 'exec-1', workflowId = 'wf-1') =>
	runReserve({ mode: 'lease', leaseSeconds: 60, options: keyOptions() }, { items, executionId, workflowId });
const endLease = (key: string) =>
	db.pool.query(`update ${db.schema}.processed_events set locked_until = now() - interval '1 second' where key = $1`, [key]);
const settle = (
	operation: 'complete' | 'release' | 'fail',
	items: INodeExecutionData[],
	extra: Record<string, unknown> = {},
	continueOnFail = false,
) =>
	runKeyNode(
		{ operation, source: 'item', responseJson: '', errorMessage: 'step failed', options: keyOptions(), ...extra },
		{ items, continueOnFail },
	);

beforeAll(async () => {
	await db.pool.query(`create table ${db.schema}.effects (id serial primary key, event_key text not null, note text, amount integer)`);
	await db.pool.query(`create table ${db.schema}.sentinel (id int)`);
	await db.pool.query(`insert into ${db.schema}.sentinel values (1)`);
});

// ---------------------------------------------------------------------------------------------
// Idempotency Order Guard
// ---------------------------------------------------------------------------------------------

describe('Order Guard: versions and equal versions', () => {
	it('equal version (Stale default): another event at the mark is Stale, the event that set it passes again when retried', async () => {
		const [first] = await guard([{ object: 'eq:1', version: 5, event: 'evt:A' }]);
		expect(first).toHaveLength(1);
		const [newerB, staleB] = await guard([{ object: 'eq:1', version: '5', event: 'evt:B' }]);
		expect(newerB).toHaveLength(0);
		expect(guardOf(staleB[0])).toMatchObject({ outcome: 'stale', currentVersion: '5' });
		const [retryA] = await guard([{ object: 'eq:1', version: '5.000', event: 'evt:A' }]);
		expect(guardOf(retryA[0])).toMatchObject({ outcome: 'newer', currentVersion: '5' });
		expect(await markOf('eq:1')).toMatchObject({ version: '5', event_key: 'evt:A', stale_count: 1 });
	});

	it('numbers, numeric text, ISO date-times in different zones, JS Dates and Luxon DateTimes compare as exact seconds', async () => {
		// 2026-11-30T10:15:00Z = 1796033700
		await guard([{ object: 'tz:1', version: '2026-11-30T11:15:00+01:00', event: 'e1' }]);
		expect(await markOf('tz:1')).toMatchObject({ version: '1796033700' });
		// The same instant in other spellings is not newer.
		for (const same of [
			1796033700,
			'2026-11-30T10:15:00Z',
			'2026-11-30T05:15:00-05:00',
			new Date(Date.UTC(2026, 10, 30, 10, 15)),
			DateTime.fromISO('2026-11-30T19:15:00+09:00', { setZone: true }),
		]) {
			const [newer, stale] = await guard([{ object: 'tz:1', version: same, event: 'other' }]);
			expect([newer.length, stale.length]).toEqual([0, 1]);
		}
		// A nanosecond later is newer; a nanosecond earlier (in another zone) is stale.
		const [later] = await guard([{ object: 'tz:1', version: '2026-11-30T10:15:00.000000001Z', event: 'e2' }]);
		expect(guardOf(later[0])).toMatchObject({ outcome: 'newer', version: '1796033700.000000001' });
		const [, earlier] = await guard([{ object: 'tz:1', version: '2026-11-30T11:15:00,000000000+01:00', event: 'e3' }]);
		expect(earlier).toHaveLength(1);
		expect(await markOf('tz:1')).toMatchObject({ version: '1796033700.000000001', event_key: 'e2' });
	});

	it('integers beyond 2^53: as text they compare exactly; as JS numbers (possibly rounded) they are refused per item, never recorded', async () => {
		const [first] = await guard([{ object: 'big:1', version: '9007199254740993', event: 'b1' }]);
		expect(first).toHaveLength(1);
		// 2^53 + 1 vs 2^53: JS numbers would make them equal, the guard does not.
		const [newer, stale] = await guard([{ object: 'big:1', version: '9007199254740992', event: 'b0' }]);
		expect([newer.length, stale.length]).toEqual([0, 1]);
		const [newer2] = await guard([{ object: 'big:1', version: '123456789012345678901234567890', event: 'b2' }]);
		expect(newer2).toHaveLength(1);
		// A JS number above 2^53 in a batch: Not Checked under Continue; the other item is decided.
		const outputs = await guard(
			[
				{ object: 'big:2', version: 2 ** 53 + 2, event: 'x' },
				{ object: 'big:3', version: 7, event: 'y' },
			],
			{},
			{ continueOnFail: true },
		);
		expect(outputs[0].map((item) => guardOf(item).objectKey)).toEqual(['big:3']);
		expect(outputs[2]).toHaveLength(1);
		expect(String(outputs[2][0].json.error)).toMatch(/beyond 2\^53/);
		expect(await markOf('big:2')).toBeUndefined();
		expect(await markOf('big:1')).toMatchObject({ version: '123456789012345678901234567890' });
	});

	it('missing, empty, zone-less, impossible or non-numeric versions: Not Checked (Continue) or the whole batch unrecorded (Stop)', async () => {
		const bad: unknown[] = [undefined, '', '2026-11-30T10:15:00', '2026-02-30T10:15:00Z', 'latest', true, Number.NaN, { v: 1 }, '1e5'];
		const events = bad.map((version, index) => ({ object: `bad:${index}`, version, event: `e${index}` }));
		const outputs = await guard([...events, { object: 'bad:ok', version: 1, event: 'ok' }], {}, { continueOnFail: true });
		expect(outputs[0].map((item) => guardOf(item).objectKey)).toEqual(['bad:ok']);
		expect(outputs[1]).toHaveLength(0);
		expect(outputs[2]).toHaveLength(bad.length);
		expect(await count(`select count(*) from ${db.schema}.object_versions where object_key like 'bad:%' and object_key <> 'bad:ok'`)).toBe(
			0,
		);
		// Stop Workflow: one bad item, and nothing of the batch is recorded.
		await expect(
			guard([
				{ object: 'bad:stop1', version: 1, event: 's1' },
				{ object: 'bad:stop2', version: 'latest', event: 's2' },
			]),
		).rejects.toThrow(/neither a number nor an ISO 8601/);
		expect(await markOf('bad:stop1')).toBeUndefined();
	});
});

describe('Order Guard: batches, concurrency, failures after the guard', () => {
	it('several versions of one object in one batch: only the highest passes, the rest are Stale (superseded)', async () => {
		const [newer, stale] = await guard([
			{ object: 'batch:1', version: 1, event: 'v1' },
			{ object: 'batch:1', version: 3, event: 'v3' },
			{ object: 'batch:1', version: '2', event: 'v2' },
			{ object: 'batch:1', version: 3, event: 'v3-copy' },
		]);
		expect(newer.map((item) => item.json.event)).toEqual(['v3']);
		expect(stale.map((item) => [item.json.event, guardOf(item).supersededInBatch])).toEqual([
			['v1', true],
			['v2', true],
			['v3-copy', false],
		]);
		expect(await markOf('batch:1')).toMatchObject({ version: '3', event_key: 'v3' });
	});

	it('concurrent executions (20 runs, versions 1–10 each twice): the mark ends at 10, at most one Newer per version, exactly one for 10', async () => {
		const runs = Array.from({ length: 20 }, (_, index) => ({ object: 'conc:1', version: (index % 10) + 1, event: `c${index}` }));
		const results = await Promise.all(runs.map((event, index) => guard([event], {}, { executionId: `conc-${index}` })));
		const newerVersions = results.flatMap(([newer]) => newer.map((item) => Number(guardOf(item).version)));
		expect(new Set(newerVersions).size).toBe(newerVersions.length);
		expect(newerVersions.filter((version) => version === 10)).toHaveLength(1);
		expect(await markOf('conc:1')).toMatchObject({ version: '10' });
	});

	it('a step failing after the guard: an older event stays Stale, the failed newer event passes on its retry, a later version closes it', async () => {
		// v2 passes; its business step fails (nothing written). The mark is already 2.
		const [accepted] = await guard([{ object: 'fail:1', version: 2, event: 'evt:v2' }]);
		expect(accepted).toHaveLength(1);
		// An older event cannot slip in meanwhile.
		const [olderNewer, olderStale] = await guard([{ object: 'fail:1', version: 1, event: 'evt:v1' }]);
		expect([olderNewer.length, olderStale.length]).toEqual([0, 1]);
		// The provider's retry of v2 is not blocked by its own mark.
		const [retried] = await guard([{ object: 'fail:1', version: 2, event: 'evt:v2' }]);
		expect(retried).toHaveLength(1);
		// Once v3 is applied, another retry of v2 is Stale (correctly).
		await guard([{ object: 'fail:1', version: 3, event: 'evt:v3' }]);
		const [lateRetry, lateStale] = await guard([{ object: 'fail:1', version: 2, event: 'evt:v2' }]);
		expect([lateRetry.length, lateStale.length]).toEqual([0, 1]);
		expect(await markOf('fail:1')).toMatchObject({ version: '3', event_key: 'evt:v3', stale_count: 2 });
	});

	// The docs (order-guard.md "Failures after the guard") promise that the event that set a version passes again when it
	// is retried, also when the retry shares a batch with another event of the same object at the same version placed
	// before it: orderCandidates (lib/store/rules.ts) sends the store the first item holding the batch maximum, the store
	// compares it with the mark, finds another event and decides Stale, and orderDecisions lets the item whose event
	// set the mark pass at the mark's version. Deciding by the candidate alone, the retried event B (its write never
	// happened) would go to Stale, the template would complete it, and its state would never be written. Realistic path:
	// a replay batch (List Keys → Claim for Replay → Order Guard) with two failed events of one object at one second.
	it('the retried event that set the mark passes again when a different event at the same version comes first in its batch', async () => {
		const [first] = await guard([{ object: 'retry-batch:1', version: 5, event: 'evt:B' }]);
		expect(first).toHaveLength(1); // B set the mark; its business step then failed.
		const [newer, stale] = await guard([
			{ object: 'retry-batch:1', version: 5, event: 'evt:A' },
			{ object: 'retry-batch:1', version: 5, event: 'evt:B' },
		]);
		// Expected: B (the event that set the mark) passes again; A (another event, equal version) is Stale.
		expect(newer.map((item) => item.json.event)).toEqual(['evt:B']);
		expect(stale.map((item) => item.json.event)).toEqual(['evt:A']);
	});

	// The same on the embedded store (the decision rule is shared: lib/store/rules.ts orderDecisions).
	it('embedded store: the same batch lets the retried event pass', async () => {
		const folder = mkdtempSync(path.join(tmpdir(), 'rt20-order-'));
		try {
			const store = openEmbeddedOrderStore({ file: path.join(folder, 'order.sqlite'), table: 'object_versions' });
			const first = await store.advance([{ objectKey: 'o', version: '5', eventKey: 'evt:B' }], { equalVersion: 'stale' });
			expect(first[0].outcome).toBe('newer');
			const batch = await store.advance(
				[
					{ objectKey: 'o', version: '5', eventKey: 'evt:A' },
					{ objectKey: 'o', version: '5', eventKey: 'evt:B' },
				],
				{ equalVersion: 'stale' },
			);
			expect(batch.map((decision) => decision.outcome)).toEqual(['stale', 'newer']);
		} finally {
			closeEmbeddedStores();
			rmSync(folder, { recursive: true, force: true });
		}
	});

	it("an Order Guard pointed at the keys table is refused and leaves the keys' rows untouched", async () => {
		await leaseReserve([webhookItem({ id: 'og_keys_table' })]);
		const before = await db.row('evt:og_keys_table');
		const outputs = await guard(
			[{ object: 'x', version: 1, event: 'e' }],
			{ options: { ...orderOptions(), tableName: 'processed_events' } },
			{ continueOnFail: true },
		);
		expect(outputs[0]).toHaveLength(0);
		expect(outputs[2]).toHaveLength(1);
		expect(await db.row('evt:og_keys_table')).toEqual(before);
	});
});

// ---------------------------------------------------------------------------------------------
// Idempotency Execute Query
// ---------------------------------------------------------------------------------------------

const effectCount = (key: string) => count(`select count(*) from ${db.schema}.effects where event_key = $1`, [key]);
function execute(key: string, query: string, queryParameters: unknown, extra: Record<string, unknown> = {}, continueOnFail = false) {
	return runExecuteQuery(
		{ keySource: 'custom', customKey: key, query, queryParameters, options: keyOptions(), ...extra },
		{ items: [{ json: {} }], continueOnFail },
	);
}

describe('Execute Query: SQL that tries to escape the transaction', () => {
	it('a statement that fails after inserting some rows stores neither rows nor key; the retry runs once', async () => {
		// Rows 1 and 2 insert, row 3 divides by zero: one statement, all or nothing.
		const query = `insert into ${db.schema}.effects (event_key, amount) select $idempotency_key, 10 / ($1::int - g) from generate_series(1, 3) g`;
		await expect(execute('eq:partial', query, [3])).rejects.toThrow(/Your query failed \(SQLSTATE 22012\)/);
		expect([await keyRows('eq:partial'), await effectCount('eq:partial')]).toEqual([0, 0]);
		const [fresh] = await execute('eq:partial', query, [4]);
		expect(fresh).toHaveLength(1);
		const [, duplicate] = await execute('eq:partial', query, [4]);
		expect(duplicate).toHaveLength(1);
		expect([await keyRows('eq:partial'), await effectCount('eq:partial')]).toEqual([1, 3]);
	});

	it('a procedure that COMMITs, a DO block, COMMIT hidden behind a comment, several statements: nothing committed early', async () => {
		await db.pool.query(
			`create or replace procedure ${db.schema}.sneaky(k text) language plpgsql as $$ begin insert into ${db.schema}.effects (event_key, note) values (k, 'early'); commit; end $$`,
		);
		await expect(execute('eq:call', `call ${db.schema}.sneaky($idempotency_key)`, [])).rejects.toThrow(
			/2D000|invalid transaction termination/,
		);
		await expect(
			execute('eq:do', `do $$ begin insert into ${db.schema}.effects (event_key, note) values ('eq:do', 'early'); commit; end $$`, []),
		).rejects.toThrow(/2D000|invalid transaction termination/);
		await expect(execute('eq:hidden', `/* /* */ select 1 */ commit`, [])).rejects.toThrow(/COMMIT/);
		await expect(
			execute('eq:multi', `insert into ${db.schema}.effects (event_key) values ($idempotency_key); select 1`, []),
		).rejects.toThrow(/multiple commands/);
		for (const key of ['eq:call', 'eq:do', 'eq:hidden', 'eq:multi']) expect([await keyRows(key), await effectCount(key)]).toEqual([0, 0]);
	});

	it('the query killing its own session mid-transaction stores nothing; the retry is New and runs once', async () => {
		const query = `insert into ${db.schema}.effects (event_key, note) select $idempotency_key, 'k' from (select pg_terminate_backend(pg_backend_pid())) t`;
		const outputs = await execute('eq:kill', query, [], {}, true);
		expect(outputs[0]).toHaveLength(0);
		expect(outputs[2]).toHaveLength(1);
		expect([await keyRows('eq:kill'), await effectCount('eq:kill')]).toEqual([0, 0]);
		const [fresh] = await execute('eq:kill', `insert into ${db.schema}.effects (event_key, note) values ($idempotency_key, 'ok')`, []);
		expect(fresh).toHaveLength(1);
		expect(await effectCount('eq:kill')).toBe(1);
	});
});

describe('Execute Query: parameters and identifiers', () => {
	it('a NUL in a parameter fails the item with nothing stored; 8 MB of text is stored intact', async () => {
		const insert = `insert into ${db.schema}.effects (event_key, note) values ($idempotency_key, $1) returning length(note) as n`;
		const outputs = await execute('eq:nul', insert, ['before\u0000after'], {}, true);
		expect(outputs[0]).toHaveLength(0);
		expect(outputs[2]).toHaveLength(1);
		expect([await keyRows('eq:nul'), await effectCount('eq:nul')]).toEqual([0, 0]);
		const huge = 'é'.repeat(4 * 1024 * 1024) + "'); drop table sentinel; --";
		const [fresh] = await execute('eq:huge', insert, [huge]);
		expect((fresh[0].json.sqlResult as { rows: Array<{ n: number }> }).rows[0].n).toBe(huge.length);
		const stored = (await db.pool.query(`select note from ${db.schema}.effects where event_key = 'eq:huge'`)).rows[0].note as string;
		expect(stored === huge).toBe(true);
		expect(await count(`select count(*) from ${db.schema}.sentinel`)).toBe(1);
	});

	it('schema or table names carrying SQL are refused before anything runs', async () => {
		const hostile = [
			{ schemaName: db.schema, tableName: 'processed_events"; drop table sentinel; --' },
			{ schemaName: `${db.schema}"; drop table ${db.schema}.sentinel; --`, tableName: 'processed_events' },
			{ schemaName: db.schema, tableName: 'processed_events; drop table sentinel' },
			{ schemaName: db.schema, tableName: 'a'.repeat(41) },
		];
		for (const options of hostile) {
			const outputs = await execute(
				'eq:ident',
				`insert into ${db.schema}.effects (event_key) values ($idempotency_key)`,
				[],
				{ options: { ...options, createTable: true } },
				true,
			);
			expect(outputs[0]).toHaveLength(0);
			expect(String(outputs[2][0].json.error)).toMatch(/Invalid (table|schema) name/);
		}
		expect(await count(`select count(*) from ${db.schema}.sentinel`)).toBe(1);
		expect([await keyRows('eq:ident'), await effectCount('eq:ident')]).toEqual([0, 0]);
	});

	it('the connection cut after COMMIT reached the server: "outcome unknown", both key and effect stored, the retry is Duplicate', async () => {
		const server = connectionSettings();
		const proxy = await TcpProxy.start(server.host, server.port);
		try {
			const credential = connectionSettings({ port: proxy.port, host: '127.0.0.1' });
			proxy.cutReplyAfter('commit\u0000');
			const insert = `insert into ${db.schema}.effects (event_key, note) values ($idempotency_key, 'cut')`;
			const outputs = await runExecuteQuery(
				{ keySource: 'custom', customKey: 'eq:cut', query: insert, queryParameters: [], options: keyOptions() },
				{ items: [{ json: {} }], credential, continueOnFail: true },
			);
			expect(proxy.cuts).toHaveLength(1);
			expect(outputs[0]).toHaveLength(0);
			expect(String(outputs[2][0].json.error)).toMatch(/outcome is unknown/);
			expect([await keyRows('eq:cut'), await effectCount('eq:cut')]).toEqual([1, 1]);
			const [, duplicate] = await execute('eq:cut', insert, []);
			expect(duplicate).toHaveLength(1);
			expect(await effectCount('eq:cut')).toBe(1);
		} finally {
			await proxy.close();
		}
	});
});

// ---------------------------------------------------------------------------------------------
// Idempotency Key: Complete / Release / Mark Failed, Cleanup, reads
// ---------------------------------------------------------------------------------------------

describe('Key operations: owner tokens and order of settles', () => {
	it('a stale owner token (the key taken over) is Stale not_owner for Complete, Release and Mark Failed; the new owner is untouched', async () => {
		const [first] = await leaseReserve([webhookItem({ id: 'k_stale' })], 'exec-1');
		await endLease('evt:k_stale');
		const [second] = await leaseReserve([webhookItem({ id: 'k_stale' })], 'exec-2');
		expect(idempotencyOf(second[0]).outcome).toMatch(/new|reclaimed/);
		for (const operation of ['complete', 'release', 'fail'] as const) {
			const [done, stale] = await settle(operation, first);
			expect(done).toHaveLength(0);
			expect(idempotencyOf(stale[0])).toMatchObject({ applied: false, staleReason: 'not_owner' });
		}
		expect(await db.row('evt:k_stale')).toMatchObject({
			status: 'processing',
			execution_id: 'exec-2',
			owner_token: idempotencyOf(second[0]).ownerToken,
		});
		const [done] = await settle('complete', second);
		expect(done).toHaveLength(1);
	});

	it('Release or Mark Failed after Complete: Stale "completed", the key stays completed and the redelivery is a Duplicate', async () => {
		const [fresh] = await leaseReserve([webhookItem({ id: 'k_done' })]);
		await settle('complete', fresh);
		for (const operation of ['release', 'fail'] as const) {
			const [done, stale] = await settle(operation, fresh);
			expect(done).toHaveLength(0);
			expect(idempotencyOf(stale[0])).toMatchObject({ staleReason: 'completed' });
		}
		expect(await db.row('evt:k_done')).toMatchObject({ status: 'completed' });
		const [newer, duplicate] = await leaseReserve([webhookItem({ id: 'k_done' })]);
		expect([newer.length, duplicate.length]).toEqual([0, 1]);
	});

	it('Complete after Release is Stale not_found; Complete after Mark Failed is Stale failed (the retry runs the step again)', async () => {
		const [released] = await leaseReserve([webhookItem({ id: 'k_rel' })]);
		await settle('release', released);
		const [, staleRel] = await settle('complete', released);
		expect(idempotencyOf(staleRel[0])).toMatchObject({ staleReason: 'not_found' });
		expect(await db.row('evt:k_rel')).toBeUndefined();
		const [failed] = await leaseReserve([webhookItem({ id: 'k_fail' })]);
		await settle('fail', failed);
		const [, staleFail] = await settle('complete', failed);
		expect(idempotencyOf(staleFail[0])).toMatchObject({ staleReason: 'failed' });
		expect(await db.row('evt:k_fail')).toMatchObject({ status: 'failed', last_error: 'step failed' });
	});

	it('Key From Custom: a foreign (random) owner token is Stale not_owner; a completed key of another run is not touched', async () => {
		const [fresh] = await leaseReserve([webhookItem({ id: 'k_custom' })]);
		const key = idempotencyOf(fresh[0]).key as string;
		for (const operation of ['release', 'fail', 'complete'] as const) {
			const [done, stale] = await settle(operation, [{ json: {} }], { source: 'custom', key, ownerToken: randomUUID() });
			expect(done).toHaveLength(0);
			expect(idempotencyOf(stale[0])).toMatchObject({ staleReason: 'not_owner' });
		}
		expect(await db.row(key)).toMatchObject({ status: 'processing', owner_token: idempotencyOf(fresh[0]).ownerToken });
	});

	// docs/nodes.md ("Errors", Idempotency Key): per-item problems — "a missing owner token" among them — leave
	// through Stale under Continue, "never through Done, and the other items are settled". With Key From = Custom the
	// owner token is checked item by item (nodes/IdempotencyKey/ownedKeys.ts readOwnedKey, lib/store/rules.ts
	// settleItemProblem): the item without one goes to Stale and the good key is completed. Checked only for the whole
	// statement, one bad item would send every item to Done as an error and leave the good key processing, so a
	// redelivery after its lease would run the effect again.
	it('Key From Custom: one item without a valid owner token goes to Stale alone; the good key is completed', async () => {
		const [fresh] = await leaseReserve([webhookItem({ id: 'k_batch_good' })]);
		const good = idempotencyOf(fresh[0]);
		const tokens = [good.ownerToken, null];
		const keys = [good.key, 'evt:k_batch_duplicate'];
		const outputs = await runKeyNode(
			{
				operation: 'complete',
				source: 'custom',
				key: (index: number) => keys[index],
				ownerToken: (index: number) => tokens[index],
				responseJson: '',
				options: keyOptions(),
			},
			{ items: [{ json: { n: 0 } }, { json: { n: 1 } }], continueOnFail: true },
		);
		// What happens now, for the report: every item on Done, as an error, and the good key untouched.
		const [done, stale] = outputs;
		expect(await db.row(good.key as string)).toMatchObject({ status: 'completed' });
		expect(done.map((item) => item.json.n)).toEqual([0]);
		expect(stale.map((item) => Boolean(item.json.error))).toEqual([true]);
	});

	it("Key From Failed Execution: releases only that execution's live keys of that workflow; Complete refuses it", async () => {
		const [a] = await leaseReserve([webhookItem({ id: 'k_exec_live' })], 'exec-fx', 'wf-fx');
		const [b] = await leaseReserve([webhookItem({ id: 'k_exec_done' })], 'exec-fx', 'wf-fx');
		await leaseReserve([webhookItem({ id: 'k_exec_otherwf' })], 'exec-fx', 'wf-other');
		await settle('complete', b);
		const [done] = await settle('release', [{ json: {} }], { source: 'execution', executionId: 'exec-fx', workflowId: 'wf-fx' });
		expect((done[0].json.idempotency as { releasedKeys: string[] }).releasedKeys).toEqual([idempotencyOf(a[0]).key]);
		expect(await db.row('evt:k_exec_live')).toBeUndefined();
		expect(await db.row('evt:k_exec_done')).toMatchObject({ status: 'completed' });
		expect(await db.row('evt:k_exec_otherwf')).toMatchObject({ status: 'processing' });
		await expect(
			settle('complete', [{ json: {} }], { source: 'execution', executionId: 'exec-fx', workflowId: 'wf-other' }),
		).rejects.toThrow(/Release and Mark Failed operations only/);
		expect(await db.row('evt:k_exec_otherwf')).toMatchObject({ status: 'processing' });
	});
});

describe('Key operations: cleanup and reads', () => {
	it('Delete Expired Keys never deletes a key under a running lease nor one another session holds; its owner then completes it', async () => {
		const [inUse] = await leaseReserve([webhookItem({ id: 'k_clean_live' })]);
		const [locked] = await leaseReserve([webhookItem({ id: 'k_clean_locked' })]);
		await settle('complete', locked);
		// Both past their retention; the first still under its lease.
		await db.pool.query(
			`update ${db.schema}.processed_events set expires_at = now() - interval '1 hour', first_seen = now() - interval '400 days' where key in ('evt:k_clean_live', 'evt:k_clean_locked')`,
		);
		const holder = await db.pool.connect();
		try {
			await holder.query('begin');
			await holder.query(`select 1 from ${db.schema}.processed_events where key = 'evt:k_clean_locked' for update`);
			const [[summary]] = await runKeyNode(
				{ operation: 'cleanup', retentionDays: 0.0001, batchSize: 1, timeBudgetSeconds: 5, options: keyOptions() },
				{ items: [{ json: {} }] },
			);
			expect(summary.json).toMatchObject({ finished: true });
			expect(await db.row('evt:k_clean_live')).toMatchObject({ status: 'processing' });
			expect(await db.row('evt:k_clean_locked')).toMatchObject({ status: 'completed' });
		} finally {
			await holder.query('rollback');
			holder.release();
		}
		const [done] = await settle('complete', inUse);
		expect(done).toHaveLength(1);
		// The completed, unlocked, expired key goes on the next run.
		await runKeyNode(
			{ operation: 'cleanup', retentionDays: 30, batchSize: 100, timeBudgetSeconds: 5, options: keyOptions() },
			{ items: [{ json: {} }] },
		);
		expect(await db.row('evt:k_clean_locked')).toBeUndefined();
	});

	it('Get Key, List Keys and Get Stats work on mixed-case schema and table names, and refuse names carrying SQL', async () => {
		const schema = `Odd_${db.schema}`;
		await db.pool.query(`create schema "${schema}"`);
		const odd = { schemaName: schema, tableName: 'Keys_2', createTable: true };
		await runReserve({ mode: 'lease', leaseSeconds: 60, options: odd }, { items: [webhookItem({ id: 'k_odd' })] });
		const [[got]] = await runKeyNode({ operation: 'getKey', lookupKey: 'evt:k_odd', options: odd }, { items: [{ json: {} }] });
		expect(got.json).toMatchObject({ key: 'evt:k_odd', status: 'processing' });
		const [listed] = await runKeyNode({ operation: 'listKeys', limit: 10, listFilters: {}, options: odd }, { items: [{ json: {} }] });
		expect(listed.map((item) => item.json.key)).toEqual(['evt:k_odd']);
		const [[stats]] = await runKeyNode({ operation: 'stats', windowHours: 24, options: odd }, { items: [{ json: {} }] });
		expect(stats.json).toMatchObject({ total: 1, processing: 1 });
		// The names are quoted everywhere: no lower-cased twin was created beside the mixed-case table.
		expect(await count(`select count(*) from "${schema}"."Keys_2"`)).toBe(1);
		expect((await db.pool.query(`select to_regclass($1) as t`, [`"${schema.toLowerCase()}".keys_2`])).rows[0].t).toBeNull();
		for (const tableName of ['Keys_2"; drop table sentinel; --', 'keys 2']) {
			await expect(
				runKeyNode({ operation: 'stats', windowHours: 24, options: { ...odd, tableName } }, { items: [{ json: {} }] }),
			).rejects.toThrow(/Invalid table name/);
		}
		expect(await count(`select count(*) from ${db.schema}.sentinel`)).toBe(1);
	});
});
