import { chmodSync, mkdirSync, mkdtempSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { closeEmbeddedStores, EmbeddedStoreReplacedError, openEmbeddedKeyStore } from '../../lib/store/embedded';
import { connectionFor } from '../../lib/store/embedded/connection';
import { loadSqlite } from '../../lib/store/embedded/sqlite';
import { DatabaseUnavailableError, DatabaseUnreachableError } from '../../lib/errors';
import type { ReserveOptions } from '../../lib/types';
import type { StoreWorkerArgs, StoreWorkerReport } from '../support/storeWorker';
import { raceWorkers } from '../support/workers';

/*
 * The embedded store's file is private to n8n's user, and a running process never answers from a
 * file other than the one at its path. Real files, real SQLite, a second real OS process.
 */

const lease: ReserveOptions = {
	mode: 'lease',
	leaseSeconds: 60,
	retentionSeconds: 86_400,
	executionId: 'exec-a',
	workflowId: 'wf-1',
	instanceId: 'instance-a',
};
const reserve = (file: string, key: string) =>
	openEmbeddedKeyStore({ file }).reserve([{ key, keySource: 'custom', payloadHash: null }], lease);
const modeOf = (file: string) => statSync(file).mode & 0o777;
const modes = (file: string) => ({
	folder: modeOf(path.dirname(file)),
	file: modeOf(file),
	wal: modeOf(`${file}-wal`),
	shm: modeOf(`${file}-shm`),
});
const PRIVATE = { folder: 0o700, file: 0o600, wal: 0o600, shm: 0o600 };

let root: string;
let umask: number;
beforeAll(() => {
	root = mkdtempSync(path.join(tmpdir(), 'embedded-safety-'));
	umask = process.umask();
});
afterEach(() => {
	process.umask(umask);
	closeEmbeddedStores();
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('the store folder and files are private to their owner, whatever the umask', () => {
	it.each([
		['022', 0o022],
		['000', 0o000],
	])('umask %s: the folder 0700, keys.sqlite, -wal and -shm 0600, after writes, a checkpoint and a reopen', async (label, mask) => {
		process.umask(mask);
		const file = path.join(root, `umask-${label}`, 'n8n-nodes-idempotency', 'keys.sqlite');
		expect((await reserve(file, 'k1'))[0].outcome).toBe('new');
		expect(modes(file)).toEqual(PRIVATE);
		connectionFor(file).db.exec('pragma wal_checkpoint(truncate)');
		expect(modes(file)).toEqual(PRIVATE);
		// Closing the last connection deletes the WAL; SQLite makes new ones at the next open.
		closeEmbeddedStores();
		expect((await reserve(file, 'k2'))[0].outcome).toBe('new');
		expect(modes(file)).toEqual(PRIVATE);
	});

	it('files and a folder an older version left open (0644, 0755) are tightened when the store opens them', async () => {
		process.umask(0o022);
		const folder = path.join(root, 'older');
		const file = path.join(folder, 'keys.sqlite');
		mkdirSync(folder, { mode: 0o755 });
		const raw = new (loadSqlite().DatabaseSync)(file);
		raw.exec('pragma journal_mode = wal; create table t (x); insert into t values (1)');
		// The raw connection stays open: its -wal and -shm exist, made by SQLite under umask 022.
		expect(modes(file)).toEqual({ folder: 0o755, file: 0o644, wal: 0o644, shm: 0o644 });
		expect((await reserve(file, 'k'))[0].outcome).toBe('new');
		raw.close();
		expect(modes(file)).toEqual(PRIVATE);
	});

	it('a shared folder with the sticky bit (like /tmp) is left as it is; the file in it is still 0600', async () => {
		process.umask(0o000);
		const folder = path.join(root, 'shared');
		mkdirSync(folder);
		chmodSync(folder, 0o1777);
		const file = path.join(folder, 'keys.sqlite');
		await reserve(file, 'k');
		expect(statSync(folder).mode & 0o7777).toBe(0o1777);
		expect(modes(file)).toEqual({ ...PRIVATE, folder: 0o777 });
	});
});

describe('the store file replaced while this process has it open', () => {
	it('a backup moved over the live file: the next call refuses, never answers New from the old file for a key another process reserved in the new one, and then uses the new file', async () => {
		const file = path.join(root, 'replaced', 'keys.sqlite');
		expect((await reserve(file, 'before-backup'))[0].outcome).toBe('new');
		const before = statSync(file);
		// The backup: a consistent copy of the file as it is now.
		const backup = path.join(root, 'replaced', 'backup.sqlite');
		connectionFor(file).db.exec(`vacuum into '${backup}'`);
		expect((await reserve(file, 'after-backup'))[0].outcome).toBe('new');

		// Restored over the live file, without the old file's WAL (a restore removes -wal and -shm with it).
		rmSync(`${file}-wal`, { force: true });
		rmSync(`${file}-shm`, { force: true });
		renameSync(backup, file);
		expect(statSync(file).ino).not.toBe(before.ino);

		// Another process (a worker, or n8n restarted) opens the path: the restored file. It reserves evt-1.
		const args: StoreWorkerArgs = {
			target: { backend: 'embedded', file, table: 'processed_events' },
			job: { kind: 'reserve', batches: [['evt-1']], mode: 'lease' },
		};
		const [other] = await raceWorkers<StoreWorkerReport>('storeWorker.ts', () => args, 1);
		expect(other.results).toEqual([{ key: 'evt-1', outcome: 'new' }]);

		// This process still holds the old file open. Its next call must not answer New for evt-1.
		const refused = reserve(file, 'evt-1');
		await expect(refused).rejects.toBeInstanceOf(EmbeddedStoreReplacedError);
		await expect(reserve(file, 'evt-1')).resolves.toEqual([expect.objectContaining({ key: 'evt-1', outcome: 'in_progress' })]);
	});

	it('the refusal is a store error that is not let through, says what happened and names the file; the next call opens the file now at the path', async () => {
		const file = path.join(root, 'replaced-message', 'keys.sqlite');
		const store = openEmbeddedKeyStore({ file });
		await store.reserve([{ key: 'old-only', keySource: 'custom', payloadHash: null }], lease);
		const replacement = path.join(root, 'replaced-message', 'other.sqlite');
		const raw = new (loadSqlite().DatabaseSync)(replacement);
		raw.exec('create table t (x)');
		raw.close();
		const before = statSync(file).ino;
		rmSync(`${file}-wal`, { force: true });
		rmSync(`${file}-shm`, { force: true });
		renameSync(replacement, file);
		expect(statSync(file).ino).not.toBe(before);

		const error = await store.getKeys(['old-only']).then(
			() => undefined,
			(caught: unknown) => caught,
		);
		expect(error).toBeInstanceOf(DatabaseUnavailableError);
		expect(error).not.toBeInstanceOf(DatabaseUnreachableError);
		expect((error as Error).message).toContain(file);
		expect((error as Error).message).toMatch(/was replaced by another file/);
		// The same store object, a later call: the new file (its table created), where old-only was never reserved.
		expect((await store.getKeys(['old-only'])).size).toBe(0);
		expect((await store.listKeys({ limit: 10 })).keys).toEqual([]);
	});

	it("a file moved over the live one: a reservation of 1,000 keys (run on the store's background thread) refuses too, and writes nothing to either file", async () => {
		const file = path.join(root, 'replaced-big', 'keys.sqlite');
		const store = openEmbeddedKeyStore({ file });
		const batch = (prefix: string) =>
			Array.from({ length: 1_000 }, (_, i) => ({ key: `${prefix}-${i}`, keySource: 'custom', payloadHash: null }));
		expect((await store.reserve(batch('before'), lease)).every((result) => result.outcome === 'new')).toBe(true);
		const old = connectionFor(file).db;
		// Another file at the path: a copy of this one, as a backup restored over it would be.
		const backup = path.join(root, 'replaced-big', 'backup.sqlite');
		old.exec(`vacuum into '${backup}'`);
		rmSync(`${file}-wal`, { force: true });
		rmSync(`${file}-shm`, { force: true });
		renameSync(backup, file);

		await expect(store.reserve(batch('after'), lease)).rejects.toBeInstanceOf(EmbeddedStoreReplacedError);
		// Neither the old file (still open here) nor the new one holds any of them.
		expect(old.prepare("select count(*) as n from processed_events where key like 'after-%'").get()).toEqual({ n: 0 });
		const raw = new (loadSqlite().DatabaseSync)(file);
		expect(raw.prepare("select count(*) as n from processed_events where key like 'after-%'").get()).toEqual({ n: 0 });
		expect(raw.prepare("select count(*) as n from processed_events where key like 'before-%'").get()).toEqual({ n: 1_000 });
		raw.close();
		// The next call uses the file now at the path.
		expect((await store.reserve(batch('after'), lease)).every((result) => result.outcome === 'new')).toBe(true);
	});

	it('a file deleted under the process: refused, then a new file at the path', async () => {
		const file = path.join(root, 'deleted', 'keys.sqlite');
		const store = openEmbeddedKeyStore({ file });
		await store.reserve([{ key: 'k', keySource: 'custom', payloadHash: null }], lease);
		for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
		await expect(store.reserve([{ key: 'k', keySource: 'custom', payloadHash: null }], lease)).rejects.toThrow(/was deleted or moved away/);
		expect((await store.reserve([{ key: 'k', keySource: 'custom', payloadHash: null }], lease))[0].outcome).toBe('new');
	});
});
