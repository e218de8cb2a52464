import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { connectionFor } from '../../lib/store/embedded/connection';
import { closeEmbeddedStores, embeddedStoreId, openEmbeddedKeyStore, openEmbeddedOrderStore } from '../../lib/store/embedded';
import { loadSqlite } from '../../lib/store/embedded/sqlite';
import { InvalidConfigurationError, SchemaNewerThanPackageError, TableMissingError, UnusableKeyError } from '../../lib/errors';
import type { ReserveOptions } from '../../lib/types';
import { walFrames } from '../support/walIndex';

/*
 * What only the embedded store has: the file itself (journal, durability, store id, schema
 * versions), its table names, and its own limits. The behaviour it shares with Postgres is in the
 * conformance suite.
 */

const lease: ReserveOptions = {
	mode: 'lease',
	leaseSeconds: 60,
	retentionSeconds: 86_400,
	executionId: 'exec-1',
	workflowId: 'wf-1',
	instanceId: 'instance-a',
};
let folder: string;
const fileIn = (name: string) => path.join(folder, name);
// closeEmbeddedStores ends the store's background thread without waiting for it: the file's own
// connection waits for the lock that thread may still hold.
const openRaw = (file: string) => new (loadSqlite().DatabaseSync)(file, { timeout: 5000 });

beforeAll(() => {
	folder = mkdtempSync(path.join(tmpdir(), 'embedded-store-'));
});
afterEach(() => closeEmbeddedStores());
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('the store file', () => {
	it('is created on first use (with its folder) in WAL mode, synchronous = FULL and a busy wait of a few milliseconds', async () => {
		const file = path.join(folder, 'new-folder', 'keys.sqlite');
		const store = openEmbeddedKeyStore({ file });
		expect((await store.reserve([{ key: 'k', keySource: 'custom', payloadHash: null }], lease))[0].outcome).toBe('new');
		const { db } = connectionFor(file);
		expect(db.prepare('pragma journal_mode').get()).toEqual({ journal_mode: 'wal' });
		// 2 is FULL: each commit is on the disk before the call returns.
		expect(db.prepare('pragma synchronous').get()).toEqual({ synchronous: 2 });
		expect(Number(db.prepare('pragma busy_timeout').get()?.timeout)).toBeLessThanOrEqual(10);
		// The journal mode is kept in the file: another connection sees it too.
		const raw = openRaw(file);
		expect(raw.prepare('pragma journal_mode').get()).toEqual({ journal_mode: 'wal' });
		raw.close();
	});

	it("copies its WAL back into the file on the store's background thread after writes, leaving SQLite's own checkpoint in a commit as a backstop", async () => {
		const file = fileIn('checkpoint.sqlite');
		const store = openEmbeddedKeyStore({ file });
		// 50 commits of one key: a couple of hundred WAL pages, far below SQLite's own 1,000-page checkpoint.
		for (let i = 0; i < 50; i++) await store.reserve([{ key: `k-${i}`, keySource: 'custom', payloadHash: null }], lease);
		expect(connectionFor(file).db.prepare('pragma wal_autocheckpoint').get()).toEqual({ wal_autocheckpoint: 10_000 });
		const frames = () => walFrames(file);
		// The commits went to the WAL. Its length is not a count of them: once the background thread has copied every frame,
		// the next commit starts the WAL again from its first frame (how often depends on the machine's load).
		expect(frames().last).toBeGreaterThan(0);
		const deadline = Date.now() + 5_000;
		while (frames().copied < frames().last && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
		expect(frames().copied).toBe(frames().last);
		// What the checkpoint copied is the committed state: another connection reads every key.
		const raw = openRaw(file);
		expect(raw.prepare('select count(*) as n from processed_events').get()).toEqual({ n: 50 });
		raw.close();
	});

	it('gets a random store id when it is created, and keeps it: the same id after closing and reopening, a new one for another file', () => {
		const file = fileIn('id.sqlite');
		const id = embeddedStoreId(file);
		expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
		expect(embeddedStoreId(file)).toBe(id);
		closeEmbeddedStores();
		expect(embeddedStoreId(file)).toBe(id);
		const raw = openRaw(file);
		expect(raw.prepare("select value from n8n_idempotency_meta where name = 'store_id'").get()).toEqual({ value: id });
		raw.close();
		expect(embeddedStoreId(fileIn('other.sqlite'))).not.toBe(id);
	});

	it('is found through a symlink as the same file: one connection, one store id', () => {
		const file = fileIn('linked.sqlite');
		const id = embeddedStoreId(file);
		const link = fileIn('link-folder');
		symlinkSync(folder, link);
		expect(embeddedStoreId(path.join(link, 'linked.sqlite'))).toBe(id);
		expect(connectionFor(path.join(link, 'linked.sqlite'))).toBe(connectionFor(file));
	});

	it('refuses a file made by a newer package (file schema version above what it knows), and changes nothing', () => {
		const file = fileIn('newer.sqlite');
		const id = embeddedStoreId(file);
		closeEmbeddedStores();
		const raw = openRaw(file);
		raw.exec("update n8n_idempotency_schema set version = 99 where object = ''");
		raw.close();
		expect(() => embeddedStoreId(file)).toThrow(SchemaNewerThanPackageError);
		expect(() => embeddedStoreId(file)).toThrow(
			/file schema version 99, newer than this n8n-nodes-idempotency knows \(1\).*Update the package/,
		);
		const after = openRaw(file);
		expect(after.prepare("select value from n8n_idempotency_meta where name = 'store_id'").get()).toEqual({ value: id });
		after.close();
	});

	it('refuses a table made by a newer package', async () => {
		const file = fileIn('newer-table.sqlite');
		await openEmbeddedKeyStore({ file }).createTable();
		closeEmbeddedStores();
		const raw = openRaw(file);
		raw.exec("update n8n_idempotency_schema set version = 7 where object = 'processed_events'");
		raw.close();
		await expect(openEmbeddedKeyStore({ file }).getKeys(['k'])).rejects.toThrow(SchemaNewerThanPackageError);
	});

	it('refuses a file that is not SQLite, naming it', () => {
		const file = fileIn('not-sqlite.sqlite');
		writeFileSync(file, 'this is not a database, just text that is long enough to fill a header '.repeat(20));
		expect(() => embeddedStoreId(file)).toThrow(/not a readable SQLite file|not a database/);
	});
});

/** The key table of `file` as an earlier package left it: at `version`, without what the later versions added. */
function asKeysVersion(file: string, version: 1 | 2): void {
	const raw = openRaw(file);
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
	if (version < 2) raw.exec('drop table processed_events_answer_counts');
	raw.prepare("update n8n_idempotency_schema set version = ? where object = 'processed_events'").run(version);
	raw.close();
}

describe('tables', () => {
	it('a key table made before the answer counts (keys version 1) is upgraded on first use: its keys are kept, and deliveries are counted', async () => {
		const file = fileIn('keys-version-1.sqlite');
		const before = openEmbeddedKeyStore({ file });
		const [kept] = await before.reserve([{ key: 'evt:kept', keySource: 'custom', payloadHash: null }], lease);
		await before.complete([{ key: 'evt:kept', ownerToken: kept.ownerToken! }]);
		closeEmbeddedStores();
		// The file as the package before the answer counts left it: version 1, no counts table.
		asKeysVersion(file, 1);

		await expect(openEmbeddedKeyStore({ file, createTable: false }).answerCounts(24)).rejects.toThrow(
			/is at schema version 1, this package needs 3; the node option "Create or Upgrade Table" is off.*Existing keys are kept/,
		);
		const after = openEmbeddedKeyStore({ file });
		expect((await after.reserve([{ key: 'evt:kept', keySource: 'custom', payloadHash: null }], lease))[0]).toMatchObject({
			outcome: 'duplicate',
		});
		await after.countAnswer('duplicate');
		expect((await after.answerCounts(1)).duplicate).toBe(1);
		closeEmbeddedStores();
		const check = openRaw(file);
		expect(check.prepare("select version from n8n_idempotency_schema where object = 'processed_events'").get()).toEqual({ version: 3 });
		check.close();
	});

	it('a key table made before the inbox (keys version 2) with keys in every state is upgraded in place on first use: each key keeps its answer, none is an inbox event, and it accepts inbox events', async () => {
		const file = fileIn('keys-version-2.sqlite');
		const before = openEmbeddedKeyStore({ file });
		const reserved = await before.reserve(
			['evt:done', 'evt:running', 'evt:failed'].map((key) => ({ key, keySource: 'custom', payloadHash: null })),
			lease,
		);
		await before.complete([{ key: 'evt:done', ownerToken: reserved[0].ownerToken! }]);
		await before.fail([{ key: 'evt:failed', ownerToken: reserved[2].ownerToken!, error: 'boom' }]);
		closeEmbeddedStores();
		// The file as the package before the inbox left it: keys version 2, no inbox columns.
		asKeysVersion(file, 2);

		await expect(openEmbeddedKeyStore({ file, createTable: false }).getKeys(['evt:done'])).rejects.toThrow(
			/is at schema version 2, this package needs 3; the node option "Create or Upgrade Table" is off.*Existing keys are kept/,
		);
		const after = openEmbeddedKeyStore({ file });
		const inbox = { owner: 'wf/node', item: '{"json":{}}', maxAttempts: 3, firstRetryMs: 1000, retryForMs: 60_000 };
		const results = await after.reserve(
			[
				...['evt:done', 'evt:running', 'evt:failed'].map((key) => ({ key, keySource: 'custom', payloadHash: null })),
				{ key: 'evt:accepted', keySource: 'custom', payloadHash: null, inbox },
			],
			lease,
		);
		expect(results.map((result) => result.outcome)).toEqual(['duplicate', 'in_progress', 'new', 'new']);
		const stored = await after.getKeys(['evt:done', 'evt:accepted'], { inboxItem: true });
		expect(stored.get('evt:done')).toMatchObject({ status: 'completed', inboxOwner: null, hasInboxItem: false });
		expect(stored.get('evt:accepted')).toMatchObject({ inboxOwner: 'wf/node', inboxItem: '{"json":{}}' });
		closeEmbeddedStores();
		const check = openRaw(file);
		expect(check.prepare("select version from n8n_idempotency_schema where object = 'processed_events'").get()).toEqual({ version: 3 });
		check.close();
	});

	it('Create or Upgrade Table off: a missing table is an error that says so, and nothing is created', async () => {
		const file = fileIn('no-create.sqlite');
		const store = openEmbeddedKeyStore({ file, createTable: false });
		await expect(store.reserve([{ key: 'k', keySource: 'custom', payloadHash: null }], lease)).rejects.toThrow(TableMissingError);
		const raw = openRaw(file);
		expect(raw.prepare("select count(*) as n from sqlite_schema where name = 'processed_events'").get()).toEqual({ n: 0 });
		raw.close();
	});

	it('keys and order tables of any valid name live side by side in one file; names are validated and quoted', async () => {
		const file = fileIn('names.sqlite');
		const keys = openEmbeddedKeyStore({ file, table: 'Select' });
		expect((await keys.reserve([{ key: 'k', keySource: 'custom', payloadHash: null }], lease))[0].outcome).toBe('new');
		const order = openEmbeddedOrderStore({ file, table: 'order_marks' });
		expect((await order.advance([{ objectKey: 'o', version: '2', eventKey: null }], { equalVersion: 'stale' }))[0].outcome).toBe('newer');
		expect(() => openEmbeddedKeyStore({ file, table: 'x"; drop table y; --' })).toThrow(InvalidConfigurationError);
		expect(() => openEmbeddedKeyStore({ file, table: 'n8n_idempotency_meta' })).toThrow(/belong to the store file itself/);
		// A keys table's name cannot be taken by the Order Guard, nor a table the package did not make.
		await expect(
			openEmbeddedOrderStore({ file, table: 'Select' }).advance([{ objectKey: 'o', version: '1', eventKey: null }], {
				equalVersion: 'stale',
			}),
		).rejects.toThrow(/belongs to another part of n8n-nodes-idempotency \(keys\)/);
		const raw = openRaw(file);
		raw.exec('create table foreign_things (a int)');
		raw.close();
		await expect(openEmbeddedKeyStore({ file, table: 'foreign_things' }).createTable()).rejects.toThrow(/did not create/);
	});
});

describe('keys that are not exact text', () => {
	it('a key with a NUL or a lone surrogate refuses the whole batch before anything is stored', async () => {
		const store = openEmbeddedKeyStore({ file: fileIn('inexact.sqlite') });
		for (const bad of ['nul\u0000key', 'lone\uD800']) {
			await expect(
				store.reserve(
					[
						{ key: 'fine', keySource: 'custom', payloadHash: null },
						{ key: bad, keySource: 'custom', payloadHash: null },
					],
					lease,
				),
			).rejects.toThrow(UnusableKeyError);
		}
		expect((await store.getKeys(['fine'])).size).toBe(0);
	});
});

describe('times', () => {
	it('come back as Date objects in whole milliseconds of the host clock, read inside the statement', async () => {
		const store = openEmbeddedKeyStore({ file: fileIn('times.sqlite') });
		const before = Date.now();
		const [result] = await store.reserve([{ key: 't', keySource: 'custom', payloadHash: null }], { ...lease, leaseSeconds: 1.5 });
		const after = Date.now();
		const record = result.record;
		expect(record.firstSeen).toBeInstanceOf(Date);
		expect(record.firstSeen.getTime()).toBeGreaterThanOrEqual(before);
		expect(record.firstSeen.getTime()).toBeLessThanOrEqual(after);
		// One clock reading per statement: first seen, last seen and the lease start are the same instant.
		expect(record.lastSeen.getTime()).toBe(record.firstSeen.getTime());
		expect(record.lockedUntil!.getTime() - record.firstSeen.getTime()).toBe(1500);
		expect(record.expiresAt!.getTime() - record.firstSeen.getTime()).toBe(86_400_000);
	});
});

describe('cleanup', () => {
	it('deletes a large expired backlog in chunks of a few thousand rows, reporting the batches it was asked for', async () => {
		const file = fileIn('cleanup.sqlite');
		const store = openEmbeddedKeyStore({ file });
		await store.createTable();
		const raw = openRaw(file);
		raw.exec(`insert into processed_events (key, first_seen, last_seen, status, expires_at)
			select 'old-' || value, 0, 0, 'completed', 1 from json_each((with recursive n(i) as (select 1 union all select i + 1 from n where i < 25000) select json_group_array(i) from n))`);
		raw.exec(`insert into processed_events (key, first_seen, last_seen, status, expires_at) values ('fresh', 0, 0, 'completed', 9e15)`);
		raw.close();
		const result = await store.cleanup({ retentionSeconds: 86_400, batchSize: 10_000, timeBudgetSeconds: 60 });
		expect(result).toMatchObject({ deleted: 25_000, batches: 3, finished: true });
		expect([...(await store.getKeys(['fresh', 'old-1'])).keys()]).toEqual(['fresh']);
	});
});
