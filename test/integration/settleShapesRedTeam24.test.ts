// Red team, pass 24: the Postgres store's table names and first use, concurrent reservations on
// Postgres, the Idempotency Key node's reads and settles with hostile input, and the Order Guard's
// version spellings (strings vs numbers, negatives, 100 digits, out-of-order delivery) on Postgres
// and the embedded store. The nodes run with n8n's IExecuteFunctions as test/support/nodes.ts fakes
// it; the database is the jest global setup's embedded Postgres.
// A plain `it` is a row where the package holds (asserting the real outcome); `it.failing` is a
// confirmed break, with what happens and how to reproduce it in the comment above it.
import path from 'node:path';

import type { INodeExecutionData } from 'n8n-workflow';

import { closeEmbeddedStores } from '../../lib/store/embedded';
import { connectionSettings, postgresSchemaFixture } from '../support/database';
import { IdempotencyOrderGuard } from '../../nodes/IdempotencyOrderGuard/IdempotencyOrderGuard.node';
import { fakeExecuteFunctions, webhookItem } from '../support/fakeExecuteFunctions';
import { idempotencyOf, runKeyNode, runReserve } from '../support/nodes';
import { n8nFolderForTheFile } from '../support/triggerWebhookCall';

const db = postgresSchemaFixture('rt24', { keyTables: ['processed_events'] });
const n8nFolder = n8nFolderForTheFile('rt24-n8n-');

afterAll(() => closeEmbeddedStores());

const keyOptions = (tableName = 'processed_events') => ({ schemaName: db.schema, tableName, createTable: true });
const count = async (sql: string, values: unknown[] = []) => Number((await db.pool.query(sql, values)).rows[0].count);
const regclass = async (name: string) => (await db.pool.query(`select to_regclass($1)::text as t`, [name])).rows[0].t as string | null;
const outputsShape = (outputs: INodeExecutionData[][]) => outputs.map((output) => output.length);

const reserve = (id: string, extra: Record<string, unknown> = {}, run: { executionId?: string; credential?: unknown } = {}) =>
	runReserve({ mode: 'lease', leaseSeconds: 60, options: keyOptions(), ...extra }, {
		items: [webhookItem({ id })],
		executionId: run.executionId ?? 'exec-1',
		...(run.credential ? { credential: run.credential } : {}),
	} as never);

// ---------------------------------------------------------------------------------------------
// Postgres: table names and first use
// ---------------------------------------------------------------------------------------------

describe('Postgres store: table names', () => {
	it('a table name of 41 or 64 bytes is refused before anything is created; a 40-byte name works with unabridged companions', async () => {
		for (const tableName of ['t'.repeat(41), 'k'.repeat(64)]) {
			await expect(reserve('rt24_long', { options: keyOptions(tableName) })).rejects.toThrow(/Invalid table name .*1–40/);
			expect(await regclass(`"${db.schema}"."${tableName.slice(0, 63)}"`)).toBeNull();
		}
		const forty = 'k'.repeat(40);
		const [fresh] = await reserve('rt24_forty', { options: keyOptions(forty) });
		const [, , inProgress] = await reserve('rt24_forty', { options: keyOptions(forty) }, { executionId: 'exec-2' });
		expect({
			fresh: fresh.length,
			lease: (await db.pool.query(`select status from "${db.schema}"."${forty}" where key = 'evt:rt24_forty'`)).rows[0]?.status,
			inProgress: inProgress.length,
			companion: await regclass(`"${db.schema}"."${forty}_answer_counts"`),
			indexes: await count(`select count(*) from pg_indexes where schemaname = $1 and tablename = $2 and indexname like $3`, [
				db.schema,
				forty,
				`${forty}_%_idx`,
			]),
		}).toEqual({ fresh: 1, lease: 'processing', inProgress: 1, companion: `${db.schema}.${forty}_answer_counts`, indexes: 4 });
	});

	// The key table pointed at another key table's companion (processed_events_answer_counts: no stamp of its own, so
	// it reads as an unstamped seed table at version 1). The migration must not turn the answer counts into a key
	// table, nor leave half a migration behind.
	it("a key table named as another key table's companion (<table>_answer_counts) is refused; the companion is left as it was", async () => {
		const companion = 'processed_events_answer_counts';
		await db.pool.query(`insert into ${db.schema}.${companion} (hour, answer, count) values (date_trunc('hour', now()), 'new', 7)`);
		const columnsBefore = await count(`select count(*) from information_schema.columns where table_schema = $1 and table_name = $2`, [
			db.schema,
			companion,
		]);
		const outcome = await reserve('rt24_companion', { options: keyOptions(companion) }).then(
			(outputs) => `ran: ${JSON.stringify(outputsShape(outputs))}`,
			(error: Error) => `refused: ${error.message}`,
		);
		// The refusal names the fix for a table that is not a key table first: another table name.
		expect(outcome).toMatch(/missing columns of an idempotency table\. If it is another table of yours .*choose another Table Name/);
		expect({
			refused: outcome.startsWith('refused'),
			columnsAfter: await count(`select count(*) from information_schema.columns where table_schema = $1 and table_name = $2`, [
				db.schema,
				companion,
			]),
			rows: (await db.pool.query(`select answer, count::int from ${db.schema}.${companion}`)).rows,
			comment: (await db.pool.query(`select obj_description($1::regclass, 'pg_class') as c`, [`${db.schema}.${companion}`])).rows[0].c,
		}).toEqual({ refused: true, columnsAfter: columnsBefore, rows: [{ answer: 'new', count: 7 }], comment: null });
	});

	// A user's own table (a settings table with a text primary key named key) chosen as the key table by mistake.
	it("a key table named as the user's own table (key text primary key, value) is refused; the table keeps its columns, rows and comment", async () => {
		await db.pool.query(`create table ${db.schema}.app_settings (key text primary key, value text)`);
		await db.pool.query(`insert into ${db.schema}.app_settings values ('evt:rt24_settings', 'dark-mode')`);
		await db.pool.query(`comment on table ${db.schema}.app_settings is 'our settings'`);
		const outcome = await reserve('rt24_settings', { options: keyOptions('app_settings') }).then(
			(outputs) => `ran: ${JSON.stringify(outputsShape(outputs))}`,
			(error: Error) => `refused: ${error.message}`,
		);
		// The same refusal as the row above: another table name.
		expect(outcome).toMatch(/missing columns of an idempotency table\. If it is another table of yours .*choose another Table Name/);
		expect({
			refused: outcome.startsWith('refused'),
			columns: (
				await db.pool.query(
					`select column_name from information_schema.columns where table_schema = $1 and table_name = 'app_settings' order by 1`,
					[db.schema],
				)
			).rows.map((row) => row.column_name),
			rows: (await db.pool.query(`select * from ${db.schema}.app_settings`)).rows,
			comment: (await db.pool.query(`select obj_description($1::regclass, 'pg_class') as c`, [`${db.schema}.app_settings`])).rows[0].c,
		}).toEqual({
			refused: true,
			columns: ['key', 'value'],
			rows: [{ key: 'evt:rt24_settings', value: 'dark-mode' }],
			comment: 'our settings',
		});
	});

	it('first use of a new table by 6 executions at once on 3 separate pools: one table at the current version, exactly one New', async () => {
		const table = 'rt24_first_use';
		const credentials = [
			connectionSettings({ maxConnections: 3 }),
			connectionSettings({ maxConnections: 4 }),
			connectionSettings({ maxConnections: 5 }),
		];
		const results = await Promise.all(
			Array.from({ length: 6 }, (_, index) =>
				reserve('rt24_first_use', { options: keyOptions(table) }, { executionId: `first-${index}`, credential: credentials[index % 3] }),
			),
		);
		expect({
			news: results.reduce((sum, outputs) => sum + outputs[0].length, 0),
			inProgress: results.reduce((sum, outputs) => sum + outputs[2].length, 0),
			rows: await count(`select count(*) from ${db.schema}.${table}`),
			stamp: (await db.pool.query(`select obj_description($1::regclass, 'pg_class') as c`, [`${db.schema}.${table}`])).rows[0].c,
		}).toEqual({ news: 1, inProgress: 5, rows: 1, stamp: 'n8n-nodes-idempotency keys schema version 6' });
	});
});

// ---------------------------------------------------------------------------------------------
// Postgres: concurrent reservations of one key
// ---------------------------------------------------------------------------------------------

describe('Postgres store: one key reserved by many executions at once', () => {
	it('12 executions (lease) at once: one New, 11 In Progress; the owner completes; 12 more at once are all Duplicate', async () => {
		const results = await Promise.all(Array.from({ length: 12 }, (_, index) => reserve('rt24_conc', {}, { executionId: `conc-${index}` })));
		const winner = results.find((outputs) => outputs[0].length === 1)?.[0][0];
		const [completed] = await runKeyNode(
			{ operation: 'complete', source: 'item', responseJson: '', options: keyOptions() },
			{ items: winner ? [winner] : [] },
		);
		const after = await Promise.all(Array.from({ length: 12 }, (_, index) => reserve('rt24_conc', {}, { executionId: `after-${index}` })));
		const row = await db.row('evt:rt24_conc');
		expect({
			shapes: results
				.map(outputsShape)
				.map((shape) => shape.slice(0, 3).join(''))
				.sort(),
			completed: completed.length,
			after: after.map((outputs) => outputs[1].length).reduce((a, b) => a + b, 0),
			row: [row?.status, row?.attempts, row?.duplicate_count],
		}).toEqual({
			shapes: ['001', '001', '001', '001', '001', '001', '001', '001', '001', '001', '001', '100'],
			completed: 1,
			after: 12,
			row: ['completed', 1, 23],
		});
	});

	it('12 executions (permanent) at once: one New, 11 Duplicate, one row', async () => {
		const results = await Promise.all(
			Array.from({ length: 12 }, (_, index) => reserve('rt24_conc_perm', { mode: 'permanent' }, { executionId: `perm-${index}` })),
		);
		expect({
			news: results.reduce((sum, outputs) => sum + outputs[0].length, 0),
			duplicates: results.reduce((sum, outputs) => sum + outputs[1].length, 0),
			rows: await count(`select count(*) from ${db.schema}.processed_events where key = 'evt:rt24_conc_perm'`),
		}).toEqual({ news: 1, duplicates: 11, rows: 1 });
	});
});

// ---------------------------------------------------------------------------------------------
// Idempotency Key: hostile input
// ---------------------------------------------------------------------------------------------

const keyNode = (parameters: Record<string, unknown>, continueOnFail = true, items: INodeExecutionData[] = [{ json: {} }]) =>
	runKeyNode({ options: keyOptions(), ...parameters }, { items, continueOnFail });

describe('Idempotency Key: hostile input', () => {
	it('List Keys with a limit of 0, -1, 2.5, NaN, 1e9: refused with the bound named or kept within 1000, never a SQL error', async () => {
		for (let index = 0; index < 3; index++) await reserve(`rt24_list_${index}`, { mode: 'permanent' }, { executionId: `list-${index}` });
		const outcomes: Record<string, string> = {};
		for (const limit of [0, -1, 2.5, Number.NaN, 1e9, 1001]) {
			outcomes[String(limit)] = await keyNode({ operation: 'listKeys', limit, listFilters: { keyPrefix: 'evt:rt24_list_' } }, false).then(
				(outputs) => `listed ${outputs[0].length}`,
				(error: Error) => (/SQLSTATE|syntax|invalid input/i.test(error.message) ? `sql error: ${error.message}` : 'refused'),
			);
		}
		const listed = await keyNode({ operation: 'listKeys', limit: 2, listFilters: { keyPrefix: 'evt:rt24_list_' } }, false);
		expect({ outcomes, two: listed[0].map((item) => item.json.key) }).toEqual({
			outcomes: { '0': 'refused', '-1': 'refused', '2.5': 'refused', NaN: 'refused', '1000000000': 'refused', '1001': 'refused' },
			two: ['evt:rt24_list_0', 'evt:rt24_list_1'],
		});
	});

	// Keys over 512 bytes are stored as <scope:>long-key-sha256:<hex> (docs/keys.md "Long keys"): Get Key reads them by
	// the key Reserve output. NUL / lone surrogate lookups can match no stored key (the store refuses such keys).
	it('Get Key with a NUL, a lone surrogate, a LIKE pattern, another case: found:false; a 10 KB id is read back by its hashed key', async () => {
		const longId = `rt24_${'x'.repeat(10 * 1024)}`;
		const [fresh] = await reserve(longId, { mode: 'permanent' });
		const hashed = String(idempotencyOf(fresh[0])?.key);
		const lookups = [
			'evt:rt24_conc\u0000',
			'evt:rt24_conc\ud800',
			hashed,
			`evt:${longId}`,
			'evt:rt24_conc%',
			'EVT:RT24_CONC',
			'evt:rt24_con_',
		];
		const outcomes: unknown[] = [];
		for (const lookupKey of lookups) {
			const outputs = await keyNode({ operation: 'getKey', lookupKey }).catch((error: Error) => error);
			if (outputs instanceof Error) outcomes.push('refused');
			else {
				const json = outputs[0][0]?.json ?? {};
				outcomes.push(json.error ? 'refused' : json.found === false ? 'not found' : `found ${String(json.key)}`);
			}
		}
		expect({
			fresh: fresh.length,
			hashed: /^evt:long-key-sha256:[0-9a-f]{64}$|^long-key-sha256:[0-9a-f]{64}$/.test(hashed),
			outcomes,
		}).toEqual({
			fresh: 1,
			hashed: true,
			outcomes: ['not found', 'not found', `found ${hashed}`, 'not found', 'not found', 'not found', 'not found'],
		});
	});

	it('Release / Mark Failed / Complete (Key From Custom) with a NUL in the key or a LIKE pattern: nothing settled, the real key untouched', async () => {
		const [fresh] = await reserve('rt24_custom_hostile', {}, { executionId: 'hostile-1' });
		const { key, ownerToken } = idempotencyOf(fresh[0]) as { key: string; ownerToken: string };
		const before = await db.row(key);
		const settled: Record<string, number[]> = {};
		for (const operation of ['release', 'fail', 'complete'] as const) {
			for (const hostile of [`${key}\u0000`, 'evt:rt24_custom_%', `${key} `]) {
				const outputs = await keyNode({ operation, source: 'custom', key: hostile, ownerToken, responseJson: '', errorMessage: 'x' });
				settled[`${operation} ${JSON.stringify(hostile)}`] = outputsShape(outputs);
			}
		}
		const after = await db.row(key);
		expect(Object.values(settled).every((shape) => shape[0] === 0)).toBe(true);
		expect([after?.status, after?.owner_token, after?.locked_until?.getTime()]).toEqual([
			before?.status,
			before?.owner_token,
			before?.locked_until?.getTime(),
		]);
	});
});

// ---------------------------------------------------------------------------------------------
// Order Guard: version spellings on both stores
// ---------------------------------------------------------------------------------------------

interface Versioned {
	object: string;
	version: unknown;
	event: string;
}

for (const store of ['postgres', 'embedded'] as const) {
	describe(`Order Guard (${store}): version spellings`, () => {
		const prefix = `${store}:`;
		/** One execution deciding these events; returns per event newer/stale/unchecked. */
		async function decide(events: Versioned[]): Promise<string[]> {
			const context = fakeExecuteFunctions({
				credential: connectionSettings(),
				parameters: {
					equalVersion: 'stale',
					store,
					objectKey: (index: number) => prefix + events[index].object,
					version: (index: number) => events[index].version,
					eventKey: (index: number) => events[index].event,
					options: { schemaName: db.schema, tableName: 'object_versions', createTable: true },
				},
				items: events.map((event) => ({ json: { event: event.event } })),
				continueOnFail: true,
			});
			// The embedded store's file: n8n's storage folder for the node (what getStoragePath gives in an execution).
			(context.helpers as unknown as Record<string, unknown>).getStoragePath = () =>
				path.join(n8nFolder(), '.n8n', 'storage', 'n8n-nodes-idempotency.test');
			const outputs = await new IdempotencyOrderGuard().execute.call(context);
			return events.map((_event, index) => {
				const where = outputs.findIndex((output) => output.some((item) => (item.pairedItem as { item: number }).item === index));
				const error = outputs[2].find((item) => (item.pairedItem as { item: number }).item === index)?.json.error;
				if (error && !/neither a number nor an ISO 8601|NUL character|lone UTF-16 surrogate/.test(String(error)))
					return `other: ${String(error)}`;
				return ['newer', 'stale', 'unchecked'][where] ?? 'missing';
			});
		}
		const one = async (object: string, version: unknown, event: string) => (await decide([{ object, version, event }]))[0];

		it('strings vs numbers: 9 then "10" newer, "9" and 9.5 stale, "010" and "10.0" equal (stale), "1e1" unchecked', async () => {
			const sequence: Array<[unknown, string]> = [
				[9, 'a'],
				['10', 'b'],
				['9', 'c'],
				[9.5, 'd'],
				['010', 'e'],
				['10.0', 'f'],
				['1e1', 'g'],
				['10.000000000000000000000000000001', 'h'],
			];
			const seen: string[] = [];
			for (const [version, event] of sequence) seen.push(await one('mix', version, event));
			expect(seen).toEqual(['newer', 'newer', 'stale', 'stale', 'stale', 'stale', 'unchecked', 'newer']);
		});

		it('negatives: -10, -2 newer, -5 stale, "-0" and 0 newer once then equal, -0.5 stale', async () => {
			const seen: string[] = [];
			for (const [version, event] of [
				[-10, 'a'],
				[-2, 'b'],
				[-5, 'c'],
				['-0', 'd'],
				[0, 'e'],
				[-0.5, 'f'],
			] as Array<[unknown, string]>)
				seen.push(await one('neg', version, event));
			expect(seen).toEqual(['newer', 'newer', 'stale', 'newer', 'stale', 'stale']);
		});

		it('100-digit versions differing in the last digit compare exactly; 101 digits are unchecked, never recorded', async () => {
			const base = '9'.repeat(99);
			const seen = [
				await one('huge', `${base}8`, 'a'),
				await one('huge', `${base}9`, 'b'),
				await one('huge', `${base}8`, 'c'),
				await one('huge', `1${'0'.repeat(100)}`, 'd'),
				await one('huge', `${base}9.000000000000000000000000000001`, 'e'),
				await one('huge', `${base}9`, 'f'),
			];
			expect(seen).toEqual(['newer', 'newer', 'stale', 'unchecked', 'newer', 'stale']);
		});

		it('three events delivered 3, 1, 2 (one per execution): only 3 passes; 3 retried passes again, 1 and 2 re-sent stay stale; 4 passes', async () => {
			const seen = [
				await one('ooo', 3, 'evt:3'),
				await one('ooo', 1, 'evt:1'),
				await one('ooo', 2, 'evt:2'),
				await one('ooo', 3, 'evt:3'),
				await one('ooo', 1, 'evt:1'),
				await one('ooo', 2, 'evt:2'),
				await one('ooo', 4, 'evt:4'),
				await one('ooo', 3, 'evt:3'),
			];
			expect(seen).toEqual(['newer', 'stale', 'stale', 'newer', 'stale', 'stale', 'newer', 'stale']);
		});

		it('object keys: two 10 KB keys differing in the last character keep separate marks; NUL or lone surrogate: unchecked, nothing recorded', async () => {
			const long = 'o'.repeat(10 * 1024);
			const seen = [
				await one(`${long}a`, 5, 'a5'),
				await one(`${long}b`, 3, 'b3'),
				await one(`${long}a`, 4, 'a4'),
				await one(`${long}b`, 4, 'b4'),
				await one('nul\u0000', 1, 'n1'),
				await one('lone\ud800', 1, 's1'),
			];
			expect(seen).toEqual(['newer', 'newer', 'stale', 'newer', 'unchecked', 'unchecked']);
		});

		it('10 executions at once, versions 1–10 of one object: exactly one Newer for 10, the mark ends at 10 (a later 9 is stale)', async () => {
			const results = await Promise.all(Array.from({ length: 10 }, (_, index) => one('conc', index + 1, `c${index + 1}`)));
			const newer = results.map((outcome, index) => (outcome === 'newer' ? index + 1 : 0)).filter(Boolean);
			expect({ has10: newer.includes(10), unique: new Set(newer).size === newer.length, late9: await one('conc', 9, 'late9') }).toEqual({
				has10: true,
				unique: true,
				late9: 'stale',
			});
		});

		it('ISO dates vs epoch numbers for one object: an earlier epoch after a later ISO date is stale, a later one newer', async () => {
			const seen = [
				await one('dates', '2026-01-01T00:00:00Z', 'a'), // 1767225600
				await one('dates', 1767225599, 'b'),
				await one('dates', '1767225600.5', 'c'),
				await one('dates', '2026-01-01T00:00:00.4Z', 'd'),
				await one('dates', '2025-12-31T23:59:59.999999999-00:01', 'e'), // 00:00:59.99… UTC
			];
			expect(seen).toEqual(['newer', 'stale', 'newer', 'stale', 'newer']);
		});
	});
}
