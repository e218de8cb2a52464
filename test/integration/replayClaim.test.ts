import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';

import { tableRef } from '../../lib/identifiers';
import { renderStatement } from '../../lib/store/postgres/statements';
import { PostgresKeyStore } from '../../lib/store/postgres/stores';
import type { ReplayClaim } from '../../lib/types';
import { databaseUrl, postgresSchemaFixture } from '../support/database';
import { webhookItem } from '../support/fakeExecuteFunctions';
import { idempotencyOf, runKeyNode } from '../support/nodes';

/*
 * Claim for Replay on real Postgres: which stored states are claimed (failed, lease
 * ran out) and which are not (completed, live lease, gone), what a claim changes, races of
 * parallel claimers (one winner), a claim racing a redelivery, and bad keys per item.
 */

const TABLE = 'replay_keys';
const CLAIM = { leaseSeconds: 120, retentionSeconds: 86_400, executionId: 'exec-replay', workflowId: 'wf-replay' };
const db = postgresSchemaFixture('replay', { keyTables: [TABLE], max: 25 });

const table = () => `${db.schema}.${TABLE}`;

const NO_PAYLOAD = Symbol('no payload stored');

/** Inserts one key in a given state, with the evidence Reserve stores. */
async function seed(
	key: string,
	state: 'failed' | 'stuck' | 'live' | 'completed' | 'leaseless',
	payload: unknown = { id: key, type: 'test.event' },
) {
	const columns = {
		failed: `'failed', null, 'boom'`,
		stuck: `'processing', now() - interval '1 second', null`,
		live: `'processing', now() + interval '5 minutes', null`,
		completed: `'completed', null, null`,
		leaseless: `'processing', null, null`,
	}[state];
	await db.pool.query(
		`insert into ${table()} (key, status, locked_until, last_error, attempts, owner_token, execution_id, payload, source, correlation_id, expires_at)
		 values ($1, ${columns}, 2, gen_random_uuid(), 'exec-first', $2::jsonb, 'stripe', 'corr-1', now() + interval '1 hour')`,
		[key, payload === NO_PAYLOAD ? null : JSON.stringify(payload)],
	);
}

async function row(key: string) {
	const { rows } = await db.pool.query(
		`select status, attempts, owner_token::text, execution_id, workflow_id, locked_until > now() + interval '100 seconds' as lease_set,
		        expires_at > now() + interval '23 hours' as retention_set, payload, source, correlation_id, last_error
		 from ${table()} where key = $1`,
		[key],
	);
	return rows[0];
}

describe('the claim statement (Postgres)', () => {
	it('the same statement sent again with the same tokens (its answer was lost) finds the key its own, not in progress', async () => {
		await seed('resend', 'failed');
		const statement = renderStatement('claimForReplay', tableRef(db.schema, TABLE));
		const token = randomUUID();
		const parameters = [['resend'], [token], 60, 86_400, 'exec-resend', 'wf', 'instance-1'];
		const first = await db.pool.query(statement, parameters);
		const again = await db.pool.query(statement, parameters);
		expect(first.rows.map((r) => [r.claimed, r.owner_token])).toEqual([[true, token]]);
		expect(again.rows.map((r) => [r.claimed, r.owner_token])).toEqual([[true, token]]);
		expect((await row('resend')).attempts).toBe(3);
		// Another claimer's tokens: not claimed, and the owner's token is not returned.
		const other = await db.pool.query(statement, [['resend'], [randomUUID()], 60, 86_400, 'exec-other', 'wf', 'instance-1']);
		expect(other.rows.map((r) => [r.claimed, r.owner_token])).toEqual([[false, null]]);
	});
});

describe('parallel claimers', () => {
	/**
	 * Runs `calls` at once, each on a connection of its own, all released together: a lock held on
	 * the row makes every statement wait inside Postgres until the row becomes free.
	 */
	async function atOnce<T>(key: string, calls: Array<(store: PostgresKeyStore) => Promise<T>>): Promise<T[]> {
		const clients = calls.map(() => {
			const own = new Pool({ connectionString: databaseUrl(), max: 1 });
			own.on('error', () => {});
			return { own, store: new PostgresKeyStore(own, { schema: db.schema, table: TABLE, createTable: false }) };
		});
		const blocker = await db.pool.connect();
		try {
			await Promise.all(clients.map((client) => client.store.ready()));
			await blocker.query('begin');
			await blocker.query(`select 1 from ${table()} where key = $1 for update`, [key]);
			const running = clients.map((client, index) => calls[index](client.store));
			await waitForLockWaiters(calls.length);
			await blocker.query('commit');
			return await Promise.all(running);
		} finally {
			blocker.release();
			await Promise.all(clients.map((client) => client.own.end()));
		}
	}

	async function waitForLockWaiters(count: number): Promise<void> {
		const deadline = Date.now() + 10_000;
		for (;;) {
			const { rows } = await db.pool.query(
				`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and position($1 in query) > 0`,
				[`"${db.schema}"."${TABLE}"`],
			);
			if (rows[0].n >= count) return;
			if (Date.now() > deadline) throw new Error(`only ${rows[0].n} of ${count} statements reached the lock`);
			await new Promise((resolve) => setTimeout(resolve, 20));
		}
	}

	const claimers = (key: string, count: number) =>
		Array.from({ length: count }, () => async (client: PostgresKeyStore) => (await client.claimForReplay([key], CLAIM))[0]);

	it.each([2, 5, 20])('%i replays of one failed key at once: exactly one is claimed, the others see it in progress', async (count) => {
		const key = `race:${count}`;
		await seed(key, 'failed');
		const results = await atOnce(key, claimers(key, count));
		const winners = results.filter((result) => result.claimed);
		expect(winners).toHaveLength(1);
		expect(results.filter((result) => !result.claimed && result.reason === 'in_progress')).toHaveLength(count - 1);
		const stored = await row(key);
		expect(stored).toMatchObject({ status: 'processing', attempts: 3 });
		expect(stored.owner_token).toBe((winners[0] as Extract<ReplayClaim, { claimed: true }>).ownerToken);
	});

	it.each([
		['completed when reserved (Permanent)', 'completed' as const],
		['under a live lease', 'live' as const],
	])('a claim waiting on a key %s that its owner marks failed meanwhile claims it once the owner commits', async (_what, state) => {
		// The claim waits for the owner's lock, then must act on the row as committed, not on its
		// statement's older snapshot (completed, or leased). The model test found it.
		const key = `fail-then-claim:${state}`;
		await seed(key, state);
		const owner = await db.pool.connect();
		const claimer = new Pool({ connectionString: databaseUrl(), max: 1 });
		claimer.on('error', () => {});
		try {
			const store = new PostgresKeyStore(claimer, { schema: db.schema, table: TABLE, createTable: false });
			await store.ready();
			await owner.query('begin');
			await owner.query(`update ${table()} set status = 'failed', locked_until = null, last_error = 'step failed' where key = $1`, [key]);
			const claim = store.claimForReplay([key], CLAIM);
			await waitForLockWaiters(1);
			await owner.query('commit');
			expect(await claim).toMatchObject([{ claimed: true, key, record: { status: 'processing', attempts: 3 } }]);
			expect(await row(key)).toMatchObject({ status: 'processing', attempts: 3, execution_id: 'exec-replay' });
		} finally {
			owner.release();
			await claimer.end();
		}
	});

	it('20 replays of a key whose lease ran out: exactly one is claimed', async () => {
		await seed('race:stuck', 'stuck');
		const results = await atOnce('race:stuck', claimers('race:stuck', 20));
		expect(results.filter((result) => result.claimed)).toHaveLength(1);
		expect((await row('race:stuck')).attempts).toBe(3);
	});

	it('replays racing real redeliveries (Idempotency Reserve) of a failed key: exactly one of them owns it', async () => {
		const key = 'race:redelivery';
		await seed(key, 'failed');
		const redeliveries = Array.from({ length: 5 }, () => async (client: PostgresKeyStore) => {
			const [result] = await client.reserve([{ key, keySource: 'test', payloadHash: null }], {
				mode: 'lease',
				leaseSeconds: 60,
				retentionSeconds: 86_400,
			});
			return result.outcome === 'new';
		});
		const replays = claimers(key, 5).map((claim) => async (client: PostgresKeyStore) => (await claim(client)).claimed);
		const owners = await atOnce(key, [...replays, ...redeliveries]);
		expect(owners.filter(Boolean)).toHaveLength(1);
		expect((await row(key)).attempts).toBe(3);
	});
});

describe('Idempotency Key node: Claim for Replay', () => {
	const options = () => ({ schemaName: db.schema, tableName: TABLE });
	const claimNode = (items: ReturnType<typeof webhookItem>[], parameters: Record<string, unknown> = {}, continueOnFail = false) =>
		runKeyNode(
			{
				operation: 'claimForReplay',
				replayKey: (index: number) => items[index].json.key,
				leaseSeconds: 300,
				retentionDays: 30,
				options: options(),
				...parameters,
			},
			{ items, continueOnFail },
		);

	it('routes claimed keys to Claimed with the stored payload as body and a Reserve-shaped idempotency object; the others to Not Claimable with the reason', async () => {
		await seed('node:failed', 'failed', { id: 'evt_node', type: 'charge.failed' });
		await seed('node:done', 'completed');
		const items = ['node:failed', 'node:done', 'node:gone'].map((key) => ({ json: { key, status: 'failed' } }));

		const [claimed, notClaimable] = await claimNode(items);

		expect(claimed).toHaveLength(1);
		expect(claimed[0].pairedItem).toEqual({ item: 0 });
		expect(claimed[0].json).toMatchObject({
			key: 'node:failed',
			body: { id: 'evt_node', type: 'charge.failed' },
			payload: { id: 'evt_node', type: 'charge.failed' },
		});
		expect(idempotencyOf(claimed[0])).toMatchObject({
			key: 'node:failed',
			outcome: 'replay',
			isNew: true,
			claimed: true,
			mode: 'lease',
			status: 'processing',
			attempts: 3,
			reclaimed: true,
			source: 'stripe',
			correlationId: 'corr-1',
		});
		expect(idempotencyOf(claimed[0]).ownerToken).toMatch(/^[0-9a-f-]{36}$/);
		expect(notClaimable.map((item) => [item.pairedItem, idempotencyOf(item).key, idempotencyOf(item).reason])).toEqual([
			[{ item: 1 }, 'node:done', 'completed'],
			[{ item: 2 }, 'node:gone', 'not_found'],
		]);
		expect(idempotencyOf(notClaimable[0])).not.toHaveProperty('ownerToken');

		// Mark Complete with "Key From: Item" settles the claimed item unchanged.
		const [done, stale] = await runKeyNode(
			{ operation: 'complete', source: 'item', responseJson: '', options: options() },
			{ items: claimed },
		);
		expect([done.length, stale.length]).toEqual([1, 0]);
		expect((await row('node:failed')).status).toBe('completed');
	});

	it('a bad key fails the node with its item index; with Continue On Fail it goes to Not Claimable with the error and the others are claimed', async () => {
		await seed('node:ok', 'failed');
		const items = [{ json: { key: 'node:ok' } }, { json: { key: 'bad\u0000key' } }];
		await expect(claimNode(items)).rejects.toMatchObject({ context: { itemIndex: 1 }, message: expect.stringMatching(/NUL/) });
		expect((await row('node:ok')).status).toBe('failed');

		const [claimed, notClaimable] = await claimNode(items, {}, true);
		expect(claimed.map((item) => item.json.key)).toEqual(['node:ok']);
		expect(notClaimable).toHaveLength(1);
		expect(notClaimable[0].pairedItem).toEqual({ item: 1 });
		expect(String(notClaimable[0].json.error)).toMatch(/NUL/);
	});

	it('when the whole claim fails (a missing table) with Continue On Fail, every item goes to Not Claimable, never to Claimed', async () => {
		const items = [{ json: { key: 'a' } }, { json: { key: 'b' } }];
		const [claimed, notClaimable] = await claimNode(
			items,
			{ options: { schemaName: db.schema, tableName: 'no_such_table', createTable: false } },
			true,
		);
		expect(claimed).toEqual([]);
		expect(notClaimable.map((item) => item.pairedItem)).toEqual([{ item: 0 }, { item: 1 }]);
		expect(String(notClaimable[0].json.error)).toMatch(/no_such_table/);
	});

	it('a key that is not text (a List Keys item was not the input) is a clear error with its item index', async () => {
		const items = [{ json: { key: 'x' } }, { json: { nokey: true } }];
		await expect(claimNode(items)).rejects.toMatchObject({
			context: { itemIndex: 1 },
			message: expect.stringMatching(/key to replay is not text/),
		});
	});
});
