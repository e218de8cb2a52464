import { randomBytes, randomUUID } from 'node:crypto';
import { Pool } from 'pg';

import { tableRef } from '../../lib/identifiers';
import { PostgresKeyStore } from '../../lib/store/postgres/stores';
import { renderStatement } from '../../lib/store/postgres/statements';
import { adminPool, databaseUrl } from '../support/database';
import { reserveOrClaimRace, shuffled } from '../support/workers';

/*
 * Lock order. Reserve (DO UPDATE on existing keys) and Claim for Replay lock many rows in one
 * statement; two of them over the same keys only avoid a deadlock when both take the locks in the
 * same total order. Both sort by the keys' bytes (collate "C"), whatever the database's collation:
 * this runs in a database whose default collation (ICU en-US) orders the keys differently, with
 * real parallel connections. Postgres only (the collation and the plans are Postgres's); the same
 * races on both stores, in the test database's collation: test/conformance/lockOrder.test.ts.
 */

const TABLE = 'processed_events';
let admin: Pool;
let pool: Pool;
let database: string;

beforeAll(async () => {
	admin = adminPool(2);
	database = `lock_order_${randomBytes(5).toString('hex')}`;
	await admin.query(
		`create database ${database} template template0 encoding 'UTF8' locale_provider icu icu_locale 'en-US' locale 'C.UTF-8'`,
	);
	pool = new Pool({ connectionString: urlOf(database), max: 4 });
	pool.on('error', () => {});
	await new PostgresKeyStore(pool, { schema: 'public', table: TABLE, createTable: true }).createTable();
});

afterAll(async () => {
	await pool?.end();
	await admin.query(`drop database if exists ${database} with (force)`);
	await admin.end();
});

function urlOf(name: string): string {
	const url = new URL(databaseUrl());
	url.pathname = `/${name}`;
	return url.toString();
}

// Case and punctuation: en-US compares letters first, bytes put every capital before every small letter.
const PREFIXES = ['a', 'A', 'b', 'B', '_a', '-b', 'Z', 'z', 'é', 'E'];
const keysOf = (round: number) =>
	Array.from({ length: 120 }, (_, i) => `${PREFIXES[i % PREFIXES.length]}${i % 7 === 0 ? '-' : ''}k${round}.${i}`);

/** One store per caller, each on a connection of its own. */
function callers(count: number) {
	return Array.from({ length: count }, () => {
		const own = new Pool({ connectionString: urlOf(database), max: 1 });
		own.on('error', () => {});
		return { own, store: new PostgresKeyStore(own, { schema: 'public', table: TABLE, createTable: false }) };
	});
}

const LEASE = { mode: 'lease' as const, leaseSeconds: 120, retentionSeconds: 86_400 };

it('the database orders these keys differently from their bytes (the case the lock order must survive)', async () => {
	const { rows } = await pool.query(
		`select array_agg(k order by k) = array_agg(k order by k collate "C") as same from unnest($1::text[]) as k`,
		[keysOf(0)],
	);
	expect(rows[0].same).toBe(false);
});

it("both statements sort by the keys' bytes, the reserve statement once for its repeats and its insert", async () => {
	const sortKeys = async (text: string, values: unknown[]) =>
		(await pool.query(`explain (costs off) ${text}`, values)).rows
			.map((row) => row['QUERY PLAN'] as string)
			.filter((line) => line.includes('Sort Key'));
	const table = tableRef('public', TABLE);
	const keys = ['b', 'A', 'a'];
	const tokens = keys.map(() => randomUUID());
	const reserve = [
		keys,
		keys.map(() => 'test'),
		null,
		tokens,
		'permanent',
		60,
		86_400,
		null,
		null,
		null,
		null,
		null,
		null,
		null,
		null,
		null,
		null,
		null,
		null,
	];
	for (const text of [renderStatement('reserve', table), renderStatement('reserve', table, 'full-record')]) {
		expect((await sortKeys(text, reserve)).map((line) => line.trim())).toEqual(['Sort Key: b.key COLLATE "C", b."position"']);
	}
	const claimSorts = await sortKeys(renderStatement('claimForReplay', table), [keys, tokens, 60, 86_400, null, null, null]);
	expect(claimSorts.some((line) => line.includes('Sort Key: e.key COLLATE "C"'))).toBe(true);
});

it('reservations and replay claims of the same failed keys, in different orders on 6 connections at once, never deadlock; each key gets one owner', async () => {
	const all = callers(6);
	try {
		await Promise.all(all.map(({ store }) => store.ready()));
		for (let round = 1; round <= 6; round++) {
			const keys = keysOf(round);
			await pool.query(
				`insert into ${TABLE} (key, status, attempts, owner_token, last_error, expires_at) select k, 'failed', 1, gen_random_uuid(), 'boom', now() + interval '1 hour' from unnest($1::text[]) as k`,
				[keys],
			);
			const { owned, failures } = await reserveOrClaimRace(
				all.map(({ store }) => store),
				keys,
				round,
			);
			expect(failures).toEqual([]);
			expect(owned.slice().sort()).toEqual(keys.slice().sort());
		}
	} finally {
		await Promise.all(all.map(({ own }) => own.end()));
	}
});

it('duplicate batches of the same completed keys, in different orders on 6 connections at once, never deadlock; every count is kept', async () => {
	const all = callers(6);
	try {
		await Promise.all(all.map(({ store }) => store.ready()));
		const keys = keysOf(100);
		const permanent = { ...LEASE, mode: 'permanent' as const };
		await all[0].store.reserve(
			keys.map((key) => ({ key, keySource: 'test', payloadHash: null })),
			permanent,
		);
		for (let round = 1; round <= 4; round++) {
			const settled = await Promise.allSettled(
				all.map(({ store }, index) =>
					store.reserve(
						shuffled(keys, round * 10 + index).map((key) => ({ key, keySource: 'test', payloadHash: null })),
						permanent,
					),
				),
			);
			expect(settled.flatMap((result) => (result.status === 'rejected' ? [String(result.reason)] : []))).toEqual([]);
		}
		const { rows } = await pool.query(
			`select min(duplicate_count)::int as low, max(duplicate_count)::int as high from ${TABLE} where key = any($1::text[])`,
			[keys],
		);
		expect(rows[0]).toEqual({ low: 24, high: 24 });
	} finally {
		await Promise.all(all.map(({ own }) => own.end()));
	}
});

it.each(['complete', 'fail', 'release'] as const)(
	'%s of a 300-key batch while two redeliveries of the same keys reserve them, in other orders, never deadlocks',
	async (settle) => {
		const all = callers(3);
		try {
			await Promise.all(all.map(({ store }) => store.ready()));
			const failures: string[] = [];
			for (let round = 1; round <= 8; round++) {
				const keys = Array.from({ length: 300 }, (_, i) => `${PREFIXES[i % PREFIXES.length]}${settle}${round}.${(i * 7919) % 1000}`);
				const owned = await all[0].store.reserve(
					keys.map((key) => ({ key, keySource: 'test', payloadHash: null })),
					LEASE,
				);
				const items = shuffled(owned, round).map((result) => ({ key: result.key, ownerToken: result.ownerToken as string }));
				const settling = {
					complete: () => all[0].store.complete(items.map((item) => ({ ...item, response: { ok: true } }))),
					fail: () => all[0].store.fail(items.map((item) => ({ ...item, error: 'boom' }))),
					release: () => all[0].store.release(items),
				}[settle];
				const settled = await Promise.allSettled([
					settling(),
					...[1, 2].map((caller) =>
						all[caller].store.reserve(
							shuffled(keys, round * 10 + caller).map((key) => ({ key, keySource: 'test', payloadHash: null })),
							LEASE,
						),
					),
				]);
				failures.push(...settled.flatMap((result) => (result.status === 'rejected' ? [String(result.reason)] : [])));
				// Every key the first run owned was settled by it (a redelivery saw it in progress until then).
				if (settled[0].status === 'rejected') throw settled[0].reason;
				const reports = settled[0].value;
				expect(reports.filter((report) => report.applied)).toHaveLength(300);
			}
			expect(failures).toEqual([]);
		} finally {
			await Promise.all(all.map(({ own }) => own.end()));
		}
	},
);
