import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';

import { closeEmbeddedStores, EmbeddedStoreBusyError, openEmbeddedKeyStore } from '../../lib/store/embedded';
import { connectionFor } from '../../lib/store/embedded/connection';
import { CLEANUP_CHUNK_ROWS } from '../../lib/store/embedded/stores';
import { DatabaseError, DatabaseUnreachableError, LockTimeoutError } from '../../lib/errors';
import type { ReserveOptions } from '../../lib/types';
import { walFrames } from '../support/walIndex';

/*
 * Another OS process holds the store file's write lock (BEGIN IMMEDIATE). The store must wait for
 * it without freezing the event loop (n8n runs every other execution on it), and give up after its
 * bound with nothing reserved.
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
 * A second Node process (plain node:sqlite) that takes the write lock, says "locked", and holds it
 * until `release()` is called. `release()` resolves with the holder's clock reading taken while it
 * still held the lock, just before its commit: process.hrtime is the system-wide monotonic clock, so
 * it compares with this process's readings.
 */
function holdWriteLock(file: string): Promise<{ child: ChildProcess; release: () => Promise<bigint> }> {
	const script = `
		const { DatabaseSync } = require('node:sqlite');
		const db = new DatabaseSync(process.argv[1]);
		db.exec('begin immediate');
		db.exec("insert into n8n_idempotency_meta (name, value) values ('holder', 'x') on conflict (name) do nothing");
		process.stdout.write('locked\\n');
		process.stdin.once('data', () => {
			const heldUntil = process.hrtime.bigint();
			db.exec('commit');
			process.stdout.write('released ' + heldUntil + '\\n');
			db.close();
		});
	`;
	const child = spawn(process.execPath, ['-e', script, file], { stdio: ['pipe', 'pipe', 'inherit'] });
	children.push(child);
	let heldUntil: (at: bigint) => void;
	const released = new Promise<bigint>((resolve) => (heldUntil = resolve));
	const release = () => {
		child.stdin!.write('release\n');
		return released;
	};
	return new Promise((resolve, reject) => {
		child.on('error', reject);
		child.on('exit', (code) => reject(new Error(`the lock holder exited (${code}) before taking the lock`)));
		let output = '';
		child.stdout!.on('data', (chunk: Buffer) => {
			output += chunk.toString();
			if (output.includes('locked\n')) resolve({ child, release });
			const match = /released (\d+)\n/.exec(output);
			if (match) heldUntil(BigInt(match[1]));
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
	const { release } = await holdWriteLock(file);
	const started = process.hrtime.bigint();
	let heldUntil: Promise<bigint> | undefined;
	const askRelease = setTimeout(() => (heldUntil = release()), 300);
	const { result, longestGapMs, ticks } = await measureStalls(() =>
		store.reserve([{ key: 'waited', keySource: 'custom', payloadHash: null }], lease),
	);
	const finished = process.hrtime.bigint();
	clearTimeout(askRelease);
	expect(result[0].outcome).toBe('new');
	// A synchronous wait would hold the loop until the lock bound (the release below is asked for by
	// a timer on this loop): no ticks meanwhile and one gap of seconds. The gap's bound leaves room
	// for a loaded machine's scheduling, where a 5 ms timer may tick only every 30–40 ms.
	expect(ticks).toBeGreaterThanOrEqual(3);
	expect(longestGapMs).toBeLessThan(250);
	// The fault happened: the release was asked for only after the reservation had started, and the
	// holder still held the lock at its reading; the reservation finished after that reading.
	expect(heldUntil).toBeDefined();
	const lastHeld = await heldUntil!;
	expect(lastHeld).toBeGreaterThan(started);
	expect(finished).toBeGreaterThan(lastHeld);
	expect(Number(finished - started) / 1e6).toBeGreaterThanOrEqual(300);
});

it('a lock held forever: after its bound the reservation fails with a lock timeout (not "unreachable"), nothing reserved, the loop never blocked', async () => {
	const file = path.join(folder, 'forever.sqlite');
	const store = openEmbeddedKeyStore({ file, lockWaitMs: 1_000 });
	await store.ready();
	const { child } = await holdWriteLock(file);
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
	// A synchronous wait would be one gap of the whole second.
	expect(longestGapMs).toBeLessThan(500);
	child.kill('SIGKILL');
	await new Promise((resolve) => child.once('exit', resolve));
	// The killed holder's transaction is rolled back by SQLite; the key was never written.
	expect((await store.getKeys(['never'])).size).toBe(0);
	expect((await store.reserve([{ key: 'never', keySource: 'custom', payloadHash: null }], lease))[0].outcome).toBe('new');
});

/**
 * A store file with `rows` completed keys inserted directly, their retention ending at `expiresAt`
 * (ms since 1970; default far in the future). The inserts' WAL is copied into the file before the
 * test: what it measures is its own call, not that one-off copy.
 */
async function storeWithRows(name: string, rows: number, { expiresAt = 4102444800000 }: { expiresAt?: number } = {}) {
	const file = path.join(folder, name);
	const store = openEmbeddedKeyStore({ file });
	await store.createTable();
	const { loadSqlite } = await import('../../lib/store/embedded/sqlite');
	const raw = new (loadSqlite().DatabaseSync)(file);
	raw.exec(`insert into processed_events (key, first_seen, last_seen, status, expires_at, execution_id)
		select 'key-' || value, 0, 0, 'completed', ${expiresAt}, 'exec-' || value from json_each((with recursive n(i) as (select 1 union all select i + 1 from n where i < ${rows}) select json_group_array(i) from n))`);
	raw.exec('pragma wal_checkpoint(truncate)');
	raw.close();
	return { file, store };
}

it('cleanup of 60,000 expired rows deletes them in chunks and yields between them: the event loop is never held for the whole delete', async () => {
	const { store } = await storeWithRows('cleanup.sqlite', 60_000, { expiresAt: 1 });
	// Counts the event loop's turns during the cleanup: a callback that runs once per turn.
	let turns = 0;
	let counting = true;
	const countTurn = () => {
		if (!counting) return;
		turns += 1;
		setImmediate(countTurn);
	};
	setImmediate(countTurn);
	const { result, ticks } = await measureStalls(() =>
		store.cleanup({ retentionSeconds: 86_400, batchSize: 100_000, timeBudgetSeconds: 60 }),
	);
	counting = false;
	expect(result).toMatchObject({ deleted: 60_000, batches: 1, finished: true });
	expect(ticks).toBeGreaterThan(5);
	// One statement for all 60,000 rows would hold the loop for the whole delete (no turn until it
	// ends); chunks of CLEANUP_CHUNK_ROWS give the loop a turn after each (while the chunk's
	// checkpoint runs on the background thread). Counted, not timed: a
	// time bound here measured the machine's load as much as the store.
	expect(turns).toBeGreaterThanOrEqual(result.deleted / CLEANUP_CHUNK_ROWS);
});

it('cleanup commits its chunks without an fsync on the event loop, and every chunk is synced and copied into the file (the WAL checkpointed) before the next: when it returns, the WAL holds nothing the file lacks', async () => {
	const { file, store } = await storeWithRows('cleanup-synced.sqlite', 10_000, { expiresAt: 1 });
	await store.reserve([{ key: 'live', keySource: 'custom', payloadHash: null }], lease);
	const result = await store.cleanup({ retentionSeconds: 86_400, batchSize: 100_000, timeBudgetSeconds: 60 });
	expect(result).toMatchObject({ deleted: 10_000, finished: true });
	const frames = walFrames(file);
	expect(frames.last).toBeGreaterThan(0);
	expect(frames.copied).toBe(frames.last);
	// The main connection's commits are FULL again after the cleanup (2): a reservation is on the disk when it returns.
	expect(connectionFor(file).db.prepare('pragma synchronous').get()).toEqual({ synchronous: 2 });
	// The file alone (its WAL set aside) holds the cleanup's result.
	const copy = path.join(folder, 'cleanup-synced-copy.sqlite');
	copyFileSync(file, copy);
	const { loadSqlite } = await import('../../lib/store/embedded/sqlite');
	const raw = new (loadSqlite().DatabaseSync)(copy);
	expect(raw.prepare('select count(*) as n from processed_events').get()).toEqual({ n: 1 });
	raw.close();
});

// A copy's reservation only counts it: waiting for an fsync on n8n's event loop for that slowed every
// duplicate and copy in progress by the disk's latency. A reservation is on the disk before it answers.
it('commits a reservation batch of copies without an fsync; a batch that reserved a key is synced before it answers', async () => {
	const file = path.join(folder, 'reserve-synced-when.sqlite');
	const store = openEmbeddedKeyStore({ file });
	await store.reserve([{ key: 'warm-up', keySource: 'custom', payloadHash: null }], lease);
	const { db } = connectionFor(file);
	const syncPoint = () =>
		(db.prepare("select value from n8n_idempotency_meta where name = 'sync_point'").get() as { value: string } | undefined)?.value;
	const exec = jest.spyOn(db, 'exec');
	const commits = () => {
		// Each commit, and whether it waited for its fsync (no "pragma synchronous = normal" before its begin).
		const kinds: string[] = [];
		let unsynced = false;
		for (const [sql] of exec.mock.calls) {
			if (sql === 'pragma synchronous = normal') unsynced = true;
			if (sql === 'commit') kinds.push(unsynced ? 'unsynced' : 'synced');
			if (sql === 'pragma synchronous = full') unsynced = false;
		}
		exec.mockClear();
		return kinds;
	};
	try {
		const before = syncPoint();
		const [fresh] = await store.reserve([{ key: 'evt:synced-when', keySource: 'custom', payloadHash: null }], lease);
		expect(fresh.outcome).toBe('new');
		expect(commits()).toEqual(['unsynced', 'synced']);
		expect(syncPoint()).not.toBe(before);

		const [copy] = await store.reserve([{ key: 'evt:synced-when', keySource: 'custom', payloadHash: null }], lease);
		expect(copy.outcome).toBe('in_progress');
		expect(commits()).toEqual(['unsynced']);
		const [another, again] = await store.reserve(
			[
				{ key: 'evt:synced-when-2', keySource: 'custom', payloadHash: null },
				{ key: 'evt:synced-when', keySource: 'custom', payloadHash: null },
			],
			lease,
		);
		expect([another.outcome, again.outcome]).toEqual(['new', 'in_progress']);
		expect(commits()).toEqual(['unsynced', 'synced']);
	} finally {
		exec.mockRestore();
	}
	expect(db.prepare('pragma synchronous').get()).toEqual({ synchronous: 2 });
	expect((await store.getKeys(['evt:synced-when'])).get('evt:synced-when')).toMatchObject({ status: 'processing', duplicateCount: 2 });
});

// A synced commit holds n8n's event loop for the fsync (milliseconds on a busy disk): the trigger's
// reservation before the record and its settlement after it are synced, and so is every later commit's WAL.
it("records a key's execution without an fsync on the event loop, only while the key is its owner's; the settlement after it is synced", async () => {
	const file = path.join(folder, 'record-execution.sqlite');
	const store = openEmbeddedKeyStore({ file });
	const [reserved] = await store.reserve([{ key: 'evt:recorded', keySource: 'custom', payloadHash: null }], lease);
	const ownerToken = reserved.ownerToken as string;
	const { db } = connectionFor(file);
	const exec = jest.spyOn(db, 'exec');
	const unsyncedCommits = () => exec.mock.calls.filter(([sql]) => sql === 'pragma synchronous = normal').length;
	try {
		expect(await store.recordExecution({ key: 'evt:recorded', ownerToken }, 'exec-7')).toBe(true);
		expect(unsyncedCommits()).toBe(1);
		expect(await store.recordExecution({ key: 'evt:recorded', ownerToken: '00000000-0000-4000-8000-000000000000' }, 'exec-8')).toBe(false);
		exec.mockClear();
		await store.complete([{ key: 'evt:recorded', ownerToken }]);
		expect(unsyncedCommits()).toBe(0);
	} finally {
		exec.mockRestore();
	}
	expect(db.prepare('pragma synchronous').get()).toEqual({ synchronous: 2 });
	expect((await store.getKeys(['evt:recorded'])).get('evt:recorded')).toMatchObject({ status: 'completed', executionId: 'exec-7' });
});

it('Get Stats and List Keys scan 200,000 keys on a thread of their own: the event loop runs while they read', async () => {
	const { store } = await storeWithRows('scan.sqlite', 200_000);
	for (const read of [() => store.stats(24), () => store.listKeys({ limit: 10, stuckLeasesOnly: true })]) {
		// setImmediate runs once the loop turns: a scan on this thread would finish (and settle) first.
		let settled = false;
		let turnedWhileReading = false;
		const reading = read().finally(() => (settled = true));
		setImmediate(() => (turnedWhileReading = !settled));
		await reading;
		expect(turnedWhileReading).toBe(true);
	}
	expect(await store.stats(24)).toMatchObject({ total: 200_000, completed: 200_000 });
	// Every key is completed: the filtered page scanned them all and found none.
	expect(await store.listKeys({ limit: 10, stuckLeasesOnly: true })).toEqual({ keys: [], nextAfterKey: null });
});

it('sees every write this process committed before the read: a reservation, then Get Stats and List Keys at once', async () => {
	const { store } = await storeWithRows('fresh-reads.sqlite', 10);
	for (let round = 0; round < 20; round++) {
		await store.reserve([{ key: `new-${round}`, keySource: 'custom', payloadHash: null }], lease);
		expect((await store.stats(24)).processing).toBe(round + 1);
		expect((await store.listKeys({ limit: 100, status: 'processing' })).keys.map((key) => key.key)).toContain(`new-${round}`);
	}
});

it('a read whose thread is stopped mid-scan fails with an error naming the file, and the next read starts a new thread', async () => {
	const { file, store } = await storeWithRows('stopped.sqlite', 200_000);
	const reading = store.stats(24).then(
		() => undefined,
		(caught: unknown) => caught,
	);
	// The loop has turned: the read was sent to its thread.
	await new Promise((resolve) => setImmediate(resolve));
	closeEmbeddedStores();
	const error = await reading;
	expect(error).toBeInstanceOf(DatabaseError);
	expect((error as Error).message).toContain(file);
	expect((error as Error).message).toMatch(/background thread stopped/);
	expect((await store.stats(24)).total).toBe(200_000);
});

/**
 * A second Node process (plain node:sqlite) that answers each line on its stdin with what it sees
 * of the file at that moment: how many keys start with `prefix`, and whether it could take the
 * write lock (without waiting for it).
 */
function watchFile(file: string, prefix: string): Promise<{ ask: () => Promise<{ count: number; locked: boolean }>; child: ChildProcess }> {
	const script = `
		const { DatabaseSync } = require('node:sqlite');
		const db = new DatabaseSync(process.argv[1]);
		db.exec('pragma busy_timeout = 0');
		const count = db.prepare('select count(*) as n from processed_events where key like ?');
		process.stdout.write('ready\\n');
		require('node:readline').createInterface({ input: process.stdin }).on('line', () => {
			let locked = false;
			try {
				db.exec('begin immediate');
				db.exec('rollback');
			} catch {
				locked = true;
			}
			process.stdout.write(JSON.stringify({ count: count.get(process.argv[2] + '%').n, locked }) + '\\n');
		});
	`;
	const child = spawn(process.execPath, ['-e', script, file, prefix], { stdio: ['pipe', 'pipe', 'inherit'] });
	children.push(child);
	const waiting: Array<(answer: { count: number; locked: boolean }) => void> = [];
	let buffered = '';
	return new Promise((resolve, reject) => {
		child.on('error', reject);
		child.stdout!.on('data', (chunk: Buffer) => {
			buffered += chunk.toString();
			let newline: number;
			while ((newline = buffered.indexOf('\n')) >= 0) {
				const line = buffered.slice(0, newline);
				buffered = buffered.slice(newline + 1);
				if (line === 'ready') resolve({ child, ask });
				else waiting.shift()?.(JSON.parse(line));
			}
		});
	});
	function ask(): Promise<{ count: number; locked: boolean }> {
		return new Promise((resolve) => {
			waiting.push(resolve);
			child.stdin!.write('?\n');
		});
	}
}

it('a reservation of 10,000 keys runs off the event loop and stays one transaction: meanwhile the loop runs, another process sees none of its keys and cannot write, and this process waits for it', async () => {
	// The other process must look while the write runs; on a loaded machine it may not be scheduled in
	// time, so the whole case runs again (a fresh file) until it has looked then, at most three times.
	// Every other assertion holds on every run.
	let lookedWhileRunning = false;
	for (let run = 0; run < 3 && !lookedWhileRunning; run++) lookedWhileRunning = await reserveTenThousand(`big-batch-${run}.sqlite`);
	expect(lookedWhileRunning).toBe(true);
});

/** One run of the case above; whether the other process looked while the write ran, with the lock held. */
async function reserveTenThousand(fileName: string): Promise<boolean> {
	const file = path.join(folder, fileName);
	const store = openEmbeddedKeyStore({ file });
	await store.ready();
	const { ask } = await watchFile(file, 'atomic-');
	const main = connectionFor(file).db;
	const changesBefore = main.prepare('select total_changes() as n').get();
	const keys = Array.from({ length: 10_000 }, (_, index) => `atomic-${index}`);
	const permanent: ReserveOptions = { ...lease, mode: 'permanent' };

	let pending = true;
	const seen: Array<{ count: number; locked: boolean; pending: boolean }> = [];
	const reserving = store.reserve(
		keys.map((key) => ({ key, keySource: 'custom', payloadHash: null })),
		permanent,
	);
	void reserving.finally(() => (pending = false));
	// Asked again and again from this event loop while the reservation runs (they are answered only if it turns).
	const watching = (async () => {
		while (pending) seen.push({ ...(await ask()), pending });
	})();
	// This process's own calls meanwhile: a reservation of one of its keys, and Get Key of two.
	await new Promise((resolve) => setImmediate(resolve));
	const single = pending ? store.reserve([{ key: 'atomic-5000', keySource: 'custom', payloadHash: null }], permanent) : undefined;
	const found = pending ? store.getKeys(['atomic-0', 'atomic-9999']) : undefined;

	const results = await reserving;
	await watching;
	expect(results.filter((result) => result.outcome === 'new')).toHaveLength(10_000);
	// All or nothing, whenever the other process looked.
	expect(seen.every(({ count }) => count === 0 || count === 10_000)).toBe(true);
	expect(await ask()).toEqual({ count: 10_000, locked: false });
	// This process's own calls made meanwhile: one of them had the key (the batch), the other read Duplicate.
	expect(single).toBeDefined();
	expect((await single!)[0].outcome).toBe('duplicate');
	expect([0, 2]).toContain((await found!).size);
	// None of the 10,000 was written on the event loop's connection: one row was, the single-key duplicate (its count + 1).
	expect(main.prepare('select total_changes() as n').get()).toEqual({ n: Number(changesBefore?.n) + 1 });
	// It looked while the reservation was running, and the write lock was held then (not only at the end).
	return seen.some(({ pending: running, count, locked }) => running && count === 0 && locked);
}

it("Delete Expired Keys deletes on the store's background thread, never on the event loop's connection", async () => {
	const { file, store } = await storeWithRows('cleanup-off-thread.sqlite', 5_000, { expiresAt: 1 });
	const main = connectionFor(file).db;
	const changesBefore = main.prepare('select total_changes() as n').get();
	expect(await store.cleanup({ retentionSeconds: 86_400, batchSize: 100_000, timeBudgetSeconds: 60 })).toMatchObject({
		deleted: 5_000,
		finished: true,
	});
	expect(main.prepare('select total_changes() as n').get()).toEqual(changesBefore);
	expect((await store.stats(24)).total).toBe(0);
});

it("a lock held for 1 s: a 1,000-key reservation (on the store's background thread) waits for it there and succeeds, the event loop running meanwhile", async () => {
	const file = path.join(folder, 'held-big.sqlite');
	const store = openEmbeddedKeyStore({ file });
	await store.ready();
	const { release } = await holdWriteLock(file);
	const started = process.hrtime.bigint();
	let heldUntil: Promise<bigint> | undefined;
	const askRelease = setTimeout(() => (heldUntil = release()), 1_000);
	const keys = Array.from({ length: 1_000 }, (_, index) => ({ key: `waited-${index}`, keySource: 'custom' as const, payloadHash: null }));
	const { result, longestGapMs, ticks } = await measureStalls(() => store.reserve(keys, lease));
	const finished = process.hrtime.bigint();
	clearTimeout(askRelease);
	expect(result.filter((entry) => entry.outcome === 'new')).toHaveLength(1_000);
	expect(ticks).toBeGreaterThanOrEqual(10);
	// Waiting on the event loop would stall it for the whole hold (and longer: the release is asked
	// from this loop); a loaded machine's own stalls stay under 700 ms (407 seen beside two suites).
	expect(longestGapMs).toBeLessThan(700);
	expect(heldUntil).toBeDefined();
	const lastHeld = await heldUntil!;
	expect(lastHeld).toBeGreaterThan(started);
	expect(finished).toBeGreaterThan(lastHeld);
});

it('a lock held forever: after its bound a 1,000-key reservation fails with a lock timeout (not "unreachable"), nothing reserved, the loop never blocked', async () => {
	const file = path.join(folder, 'forever-big.sqlite');
	const store = openEmbeddedKeyStore({ file, lockWaitMs: 1_000 });
	await store.ready();
	const { child } = await holdWriteLock(file);
	const keys = Array.from({ length: 1_000 }, (_, index) => ({ key: `never-${index}`, keySource: 'custom' as const, payloadHash: null }));
	const started = performance.now();
	const { result: error, longestGapMs } = await measureStalls(() =>
		store.reserve(keys, lease).then(
			() => undefined,
			(caught: unknown) => caught,
		),
	);
	const waited = performance.now() - started;
	expect(error).toBeInstanceOf(EmbeddedStoreBusyError);
	expect(error).toBeInstanceOf(LockTimeoutError);
	expect(error).not.toBeInstanceOf(DatabaseUnreachableError);
	expect((error as Error).message).toMatch(/locked for more than 1 s.*Nothing was reserved/);
	expect(waited).toBeGreaterThanOrEqual(900);
	expect(waited).toBeLessThan(5_000);
	expect(longestGapMs).toBeLessThan(500);
	child.kill('SIGKILL');
	await new Promise((resolve) => child.once('exit', resolve));
	expect((await store.getKeys(keys.map((entry) => entry.key))).size).toBe(0);
	expect((await store.reserve(keys, lease)).filter((entry) => entry.outcome === 'new')).toHaveLength(1_000);
});

it('a large write does not wait behind a scan: a 1,000-key reservation answers while Get Stats still reads 200,000 keys', async () => {
	const { store } = await storeWithRows('write-beside-scan.sqlite', 200_000);
	// Both threads started and warm: a first scan and a first large write.
	await store.stats(24);
	await store.reserve(
		Array.from({ length: 1_000 }, (_, index) => ({ key: `warm-${index}`, keySource: 'custom' as const, payloadHash: null })),
		lease,
	);
	// A write queued behind the scan could never answer first; one race it wins proves it did not
	// wait. On a loaded machine the threads may get the CPUs in any order, so up to 5 races are run.
	const orders: string[][] = [];
	for (let race = 0; race < 5 && orders.at(-1)?.[0] !== 'reservation'; race++) {
		const order: string[] = [];
		const scanning = store.stats(24).then(() => order.push('scan'));
		await new Promise((resolve) => setImmediate(resolve));
		const reserving = store
			.reserve(
				Array.from({ length: 1_000 }, (_, index) => ({ key: `beside-${race}-${index}`, keySource: 'custom' as const, payloadHash: null })),
				lease,
			)
			.then((results) => {
				order.push('reservation');
				return results;
			});
		expect((await reserving).filter((result) => result.outcome === 'new')).toHaveLength(1_000);
		await scanning;
		orders.push(order);
	}
	expect(orders.at(-1)).toEqual(['reservation', 'scan']);
});
