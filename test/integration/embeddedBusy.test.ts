import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';

import { closeEmbeddedStores, EmbeddedStoreBusyError, openEmbeddedKeyStore } from '../../lib/embedded';
import { DatabaseUnreachableError, LockTimeoutError } from '../../lib/errors';
import type { ReserveOptions } from '../../lib/types';

/*
 * Another OS process holds the store file's write lock (BEGIN IMMEDIATE). The store must wait for
 * it without freezing the event loop (n8n runs every other execution on it), and give up after its
 * bound with nothing reserved.
 */

const lease: ReserveOptions = { mode: 'lease', leaseSeconds: 60, retentionSeconds: 86_400, executionId: 'exec-1', workflowId: 'wf-1', instanceId: 'instance-a' };
let folder: string;
const children: ChildProcess[] = [];

beforeAll(() => {
	folder = mkdtempSync(path.join(tmpdir(), 'embedded-busy-'));
});
afterEach(() => {
	for (const child of children.splice(0)) child.kill('SIGKILL');
	closeEmbeddedStores();
});
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/**
 * A second Node process (plain node:sqlite) that takes the write lock, says "locked", and commits
 * after `holdMs` (never when null). Resolves once the lock is held.
 */
function holdWriteLock(file: string, holdMs: number | null): Promise<{ child: ChildProcess; released: Promise<number> }> {
	const script = `
		const { DatabaseSync } = require('node:sqlite');
		const db = new DatabaseSync(process.argv[1]);
		db.exec('begin immediate');
		db.exec("insert into n8n_idempotency_meta (name, value) values ('holder', 'x') on conflict (name) do nothing");
		process.stdout.write('locked\\n');
		const hold = ${holdMs === null ? 'null' : holdMs};
		if (hold !== null) setTimeout(() => { db.exec('commit'); process.stdout.write('released\\n'); db.close(); }, hold);
		else setInterval(() => {}, 1000);
	`;
	const child = spawn(process.execPath, ['-e', script, file], { stdio: ['ignore', 'pipe', 'inherit'] });
	children.push(child);
	let releasedAt: (at: number) => void;
	const released = new Promise<number>((resolve) => (releasedAt = resolve));
	return new Promise((resolve, reject) => {
		child.on('error', reject);
		child.on('exit', (code) => reject(new Error(`the lock holder exited (${code}) before taking the lock`)));
		child.stdout!.on('data', (chunk: Buffer) => {
			const text = chunk.toString();
			if (text.includes('locked')) resolve({ child, released });
			if (text.includes('released')) releasedAt(performance.now());
		});
	});
}

/** Timer ticks every 5 ms while `work` runs: the longest gap between two is the longest stall of the event loop. */
async function measureStalls<T>(work: () => Promise<T>): Promise<{ result: T; longestGapMs: number; ticks: number }> {
	let last = performance.now();
	let longestGapMs = 0;
	let ticks = 0;
	const timer = setInterval(() => {
		const now = performance.now();
		longestGapMs = Math.max(longestGapMs, now - last);
		last = now;
		ticks += 1;
	}, 5);
	try {
		const result = await work();
		longestGapMs = Math.max(longestGapMs, performance.now() - last);
		return { result, longestGapMs, ticks };
	} finally {
		clearInterval(timer);
	}
}

it('a lock held for 300 ms: the reservation waits for it asynchronously (the event loop keeps running) and succeeds', async () => {
	const file = path.join(folder, 'held.sqlite');
	const store = openEmbeddedKeyStore({ file });
	await store.ready();
	const { released } = await holdWriteLock(file, 300);
	const started = performance.now();
	const { result, longestGapMs, ticks } = await measureStalls(() => store.reserve([{ key: 'waited', keySource: 'custom', payloadHash: null }], lease));
	const finished = performance.now();
	expect(result[0].outcome).toBe('new');
	// A synchronous wait would show as one gap of about 300 ms and no ticks meanwhile.
	expect(ticks).toBeGreaterThanOrEqual(10);
	expect(longestGapMs).toBeLessThan(150);
	// The fault happened: the reservation could only finish after the other process let go.
	expect(finished - started).toBeGreaterThanOrEqual(250);
	expect(finished).toBeGreaterThanOrEqual(await released);
});

it('a lock held forever: after its bound the reservation fails with a lock timeout (not "unreachable"), nothing reserved, the loop never blocked', async () => {
	const file = path.join(folder, 'forever.sqlite');
	const store = openEmbeddedKeyStore({ file, lockWaitMs: 1_000 });
	await store.ready();
	const { child } = await holdWriteLock(file, null);
	const started = performance.now();
	const { result: error, longestGapMs } = await measureStalls(() =>
		store.reserve([{ key: 'never', keySource: 'custom', payloadHash: null }], lease).then(
			() => undefined,
			(caught: unknown) => caught,
		),
	);
	const waited = performance.now() - started;
	expect(error).toBeInstanceOf(EmbeddedStoreBusyError);
	// Let Through applies only to DatabaseUnreachableError: the lock holder may be reserving the same key.
	expect(error).toBeInstanceOf(LockTimeoutError);
	expect(error).not.toBeInstanceOf(DatabaseUnreachableError);
	expect((error as Error).message).toMatch(/locked for more than 1 s.*Nothing was reserved/);
	expect(waited).toBeGreaterThanOrEqual(900);
	expect(waited).toBeLessThan(5_000);
	expect(longestGapMs).toBeLessThan(150);
	child.kill('SIGKILL');
	await new Promise((resolve) => child.once('exit', resolve));
	// The killed holder's transaction is rolled back by SQLite; the key was never written.
	expect((await store.getKeys(['never'])).size).toBe(0);
	expect((await store.reserve([{ key: 'never', keySource: 'custom', payloadHash: null }], lease))[0].outcome).toBe('new');
});

it('cleanup of 60,000 expired rows deletes them in chunks and yields between them: the event loop is never held for the whole delete', async () => {
	const file = path.join(folder, 'cleanup.sqlite');
	const store = openEmbeddedKeyStore({ file });
	await store.createTable();
	const { loadSqlite } = await import('../../lib/embedded/sqlite');
	const raw = new (loadSqlite().DatabaseSync)(file);
	raw.exec(`insert into processed_events (key, first_seen, last_seen, status, expires_at, execution_id)
		select 'old-' || value, 0, 0, 'completed', 1, 'exec-' || value from json_each((with recursive n(i) as (select 1 union all select i + 1 from n where i < 60000) select json_group_array(i) from n))`);
	// The inserts' WAL is copied into the file now: measured below is the delete, not that one-off copy.
	raw.exec('pragma wal_checkpoint(truncate)');
	raw.close();
	const { result, longestGapMs, ticks } = await measureStalls(() => store.cleanup({ retentionSeconds: 86_400, batchSize: 100_000, timeBudgetSeconds: 60 }));
	expect(result).toMatchObject({ deleted: 60_000, batches: 1, finished: true });
	expect(ticks).toBeGreaterThan(5);
	// One statement for all 60,000 rows holds the loop for the whole delete; chunks of 2,000 a few ms each.
	expect(longestGapMs).toBeLessThan(result.durationMs / 3);
});
