import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { closeEmbeddedStores, openEmbeddedKeyStore } from '../../lib/store/embedded';
import { moveKeysToPostgres } from '../../lib/store/embedded/moveToPostgres';
import { loadSqlite } from '../../lib/store/embedded/sqlite';
import { PostgresKeyStore } from '../../lib/store/postgres/stores';
import type { KeyStore } from '../../lib/store/contract';
import type { ReserveOptions } from '../../lib/types';
import { databaseUrl, freshSchema, postgresPoolFixture } from '../support/database';

// Moving up: keys reserved and settled on the real embedded store (a node:sqlite file), moved into
// a real Postgres, then answered by the Postgres store. Runs on a Node with node:sqlite.
const ROOT = path.join(__dirname, '..', '..');
const SCRIPT = path.join(ROOT, 'scripts', 'move-keys-to-postgres.ts');
const REGISTER_TS = path.join(ROOT, 'test', 'support', 'register-ts.js');

const db = postgresPoolFixture({ max: 6 });
let dir: string;

const lease: ReserveOptions = {
	mode: 'lease',
	leaseSeconds: 300,
	retentionSeconds: 86_400,
	executionId: 'exec-1',
	workflowId: 'wf-1',
	instanceId: 'inst-1',
};
const permanent: ReserveOptions = { ...lease, mode: 'permanent' };
const request = (key: string) => ({ key, keySource: 'header', payloadHash: null });

beforeAll(() => {
	dir = mkdtempSync(path.join(tmpdir(), 'move-keys-'));
});

afterAll(() => {
	closeEmbeddedStores();
	rmSync(dir, { recursive: true, force: true });
});

/** An embedded file holding one key in each state: completed with a response, processing, failed, permanent. */
async function fileWithEveryState(name: string) {
	const file = path.join(dir, `${name}.sqlite`);
	const embedded: KeyStore = openEmbeddedKeyStore({ file, createTable: true });
	const [done, busy, failed] = await embedded.reserve([request('k-done'), request('k-busy'), request('k-failed')], lease);
	await embedded.complete([{ key: 'k-done', ownerToken: done.ownerToken!, response: { status: 201, body: { id: 'ord_1' } } }]);
	await embedded.fail([{ key: 'k-failed', ownerToken: failed.ownerToken!, error: 'the API said 503' }]);
	await embedded.reserve([request('k-permanent')], permanent);
	return { file, embedded, busyToken: busy.ownerToken! };
}

async function postgresStore(prefix: string) {
	const schema = await freshSchema(db.pool, prefix);
	return { schema, store: new PostgresKeyStore(db.pool, { schema, table: 'processed_events', createTable: false }) };
}

describe('moveKeysToPostgres', () => {
	it('after the move, retries of the moved keys are answered by Postgres as the file answered them', async () => {
		const { file, busyToken } = await fileWithEveryState('states');
		const { schema, store } = await postgresStore('move');

		const report = await moveKeysToPostgres({ file, pool: db.pool, schema });
		expect(report).toMatchObject({
			read: 4,
			batches: 1,
			counts: { inserted: 4, updated: 0, unchanged: 0, replaced: 0, kept: 0 },
			conflicts: [],
			fileChanged: false,
		});

		const [done, busy, failed, kept] = await store.reserve(
			[request('k-done'), request('k-busy'), request('k-failed'), request('k-permanent')],
			lease,
		);
		expect(done).toMatchObject({
			outcome: 'duplicate',
			ownerToken: null,
			record: { status: 'completed', response: { status: 201, body: { id: 'ord_1' } } },
		});
		expect(busy).toMatchObject({ outcome: 'in_progress', ownerToken: null });
		// A failed key stays reclaimable: this delivery takes it over as its second attempt.
		expect(failed).toMatchObject({ outcome: 'new', reclaimed: true, record: { attempts: 2 } });
		expect(kept).toMatchObject({ outcome: 'duplicate' });
		// The run that held k-busy on the embedded store completes it on Postgres with the token it got there.
		expect(await store.complete([{ key: 'k-busy', ownerToken: busyToken, response: { ok: true } }])).toEqual([
			{ key: 'k-busy', applied: true },
		]);
		expect((await store.reserve([request('k-busy')], lease))[0]).toMatchObject({
			outcome: 'duplicate',
			record: { response: { ok: true } },
		});
	});

	it('an inbox event moves with its item and retry state: a redelivery is a duplicate, and its due retry is claimed from Postgres', async () => {
		const file = path.join(dir, 'inbox.sqlite');
		const embedded = openEmbeddedKeyStore({ file, createTable: true });
		const item = '{"json":{"body":{"id":"evt_1","amount":123456789012345678901234567890}},"rawBody":"e30="}';
		const inbox = { owner: 'wf-1/trigger', item, maxAttempts: 5, firstRetryMs: 1000, retryForMs: 3_600_000 };
		const [accepted] = await embedded.reserve([{ ...request('k-inbox'), inbox }], lease);
		await embedded.fail([{ key: 'k-inbox', ownerToken: accepted.ownerToken!, error: 'the API said 503' }]);
		const [before] = (await embedded.getKeys(['k-inbox'])).values();
		const { schema, store } = await postgresStore('move_inbox');

		expect((await moveKeysToPostgres({ file, pool: db.pool, schema })).counts.inserted).toBe(1);
		const [moved] = (await store.getKeys(['k-inbox'], { inboxItem: true })).values();
		expect(moved).toMatchObject({
			status: 'failed',
			inboxOwner: 'wf-1/trigger',
			inboxItem: item,
			maxAttempts: 5,
			retryUntil: before.retryUntil,
			nextAttemptAt: before.nextAttemptAt,
			deadLetteredAt: null,
		});
		expect((await store.reserve([request('k-inbox')], lease))[0]).toMatchObject({ outcome: 'duplicate' });
		await db.pool.query(`update ${schema}.processed_events set next_attempt_at = now() - interval '1 second' where key = 'k-inbox'`);
		expect(await store.claimDueInbox({ owner: 'wf-1/trigger', limit: 10, leaseMs: 60_000 })).toMatchObject([
			{ key: 'k-inbox', item, attempt: 2 },
		]);
	});

	it('a file whose key table predates the inbox (keys version 2) moves as it did', async () => {
		const { file } = await fileWithEveryState('before_inbox');
		closeEmbeddedStores();
		const raw = new (loadSqlite().DatabaseSync)(file);
		raw.exec('drop index processed_events_inbox_idx');
		for (const column of [
			'inbox_owner',
			'inbox_item',
			'first_retry_ms',
			'max_attempts',
			'retry_until',
			'next_attempt_at',
			'dead_lettered_at',
		])
			raw.exec(`alter table processed_events drop column ${column}`);
		raw.exec("update n8n_idempotency_schema set version = 2 where object = 'processed_events'");
		raw.close();
		const { schema, store } = await postgresStore('move_v2');
		expect(await moveKeysToPostgres({ file, pool: db.pool, schema })).toMatchObject({ read: 4, counts: { inserted: 4 } });
		const found = await store.getKeys(['k-done', 'k-failed']);
		expect(found.get('k-done')).toMatchObject({ status: 'completed', inboxOwner: null });
		expect(found.get('k-failed')).toMatchObject({ status: 'failed', inboxOwner: null, nextAttemptAt: null });
	});

	it('running the move twice changes nothing the second time', async () => {
		const { file } = await fileWithEveryState('twice');
		const { schema } = await postgresStore('twice');
		await moveKeysToPostgres({ file, pool: db.pool, schema, batchSize: 3 });
		const rows = async () => (await db.pool.query(`select *, xmin::text as version from ${schema}.processed_events order by key`)).rows;
		const before = await rows();
		const again = await moveKeysToPostgres({ file, pool: db.pool, schema, batchSize: 3 });
		expect(again).toMatchObject({
			read: 4,
			batches: 2,
			counts: { inserted: 0, updated: 0, unchanged: 4, replaced: 0, kept: 0 },
			conflicts: [],
		});
		expect(await rows()).toEqual(before);
	});

	it('a key Postgres already holds further along is kept there and reported', async () => {
		const { file } = await fileWithEveryState('conflict');
		const { schema, store } = await postgresStore('conflict');
		await store.createTable();
		// k-busy is processing in the file; on Postgres another run reserved and completed it.
		const [other] = await store.reserve([request('k-busy')], lease);
		await store.complete([{ key: 'k-busy', ownerToken: other.ownerToken!, response: { from: 'postgres' } }]);
		const report = await moveKeysToPostgres({ file, pool: db.pool, schema });
		expect(report.counts).toMatchObject({ inserted: 3, kept: 1 });
		expect(report.conflicts).toEqual([
			expect.objectContaining({
				key: 'k-busy',
				kept: 'postgres',
				copied: expect.objectContaining({ status: 'processing' }),
				postgres: expect.objectContaining({ status: 'completed' }),
			}),
		]);
		expect((await store.reserve([request('k-busy')], lease))[0]).toMatchObject({
			outcome: 'duplicate',
			record: { response: { from: 'postgres' } },
		});
	});

	it('moves a file of 12,000 keys in batches without losing one', async () => {
		const file = path.join(dir, 'many.sqlite');
		const embedded = openEmbeddedKeyStore({ file, createTable: true });
		const keys = Array.from({ length: 12_000 }, (_, i) => `evt_${i.toString(36)}_\u00e9\u{1F600}`);
		for (let i = 0; i < keys.length; i += 5000) await embedded.reserve(keys.slice(i, i + 5000).map(request), permanent);
		const { schema } = await postgresStore('many');
		const report = await moveKeysToPostgres({ file, pool: db.pool, schema, batchSize: 5000 });
		expect(report).toMatchObject({ read: 12_000, batches: 3, counts: { inserted: 12_000 } });
		const { rows } = await db.pool.query(`select key from ${schema}.processed_events`);
		expect(new Set(rows.map((row) => row.key))).toEqual(new Set(keys));
	});
});

describe('the move-keys-to-postgres command', () => {
	const run = (nodeBinary: string, args: string[]) =>
		spawnSync(nodeBinary, ['-r', REGISTER_TS, SCRIPT, ...args], {
			encoding: 'utf8',
			env: { ...process.env, DATABASE_URL: '' },
			timeout: 60_000,
		});

	it('moves the keys and prints what it did; a second run reports every key unchanged', async () => {
		const { file } = await fileWithEveryState('command');
		const schema = await freshSchema(db.pool, 'cmd');
		const first = run(process.execPath, ['--file', file, '--database-url', databaseUrl(), '--schema', schema]);
		expect(first.stderr).not.toContain('stopped');
		expect(first.status).toBe(0);
		expect(first.stdout).toContain('read 4 keys from the file in 1 batches');
		expect(first.stdout).toMatch(/inserted +4/);
		const second = run(process.execPath, ['--file', file, '--database-url', databaseUrl(), '--schema', schema, '--json']);
		expect(second.status).toBe(0);
		expect(JSON.parse(second.stdout)).toMatchObject({ read: 4, counts: { unchanged: 4, inserted: 0 } });
	});

	it('refuses missing arguments with the usage, and a missing file by name', () => {
		const missing = run(process.execPath, ['--file', path.join(dir, 'x.sqlite')]);
		expect(missing.status).toBe(2);
		expect(missing.stderr).toContain('--database-url (or DATABASE_URL) is required');
		const noFile = run(process.execPath, ['--file', path.join(dir, 'absent.sqlite'), '--database-url', databaseUrl()]);
		expect(noFile.status).toBe(1);
		expect(noFile.stderr).toContain(`No embedded store file at ${path.join(dir, 'absent.sqlite')}`);
	});

	it('on a Node without node:sqlite it says which Node it needs', async () => {
		const node20 = spawnSync('bash', ['-lc', 'command -v node'], { encoding: 'utf8' }).stdout.trim();
		const version = spawnSync(node20, ['-e', "try { require('node:sqlite'); console.log('has') } catch { console.log('none') }"], {
			encoding: 'utf8',
		}).stdout.trim();
		if (version !== 'none') return; // this machine's default Node has node:sqlite: nothing to refuse
		const { file } = await fileWithEveryState('old-node');
		const result = run(node20, ['--file', file, '--database-url', databaseUrl()]);
		expect(result.status).toBe(1);
		expect(result.stderr).toContain('needs Node');
		expect(result.stderr).toContain('node:sqlite');
	});
});
