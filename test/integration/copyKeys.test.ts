import { randomUUID } from 'node:crypto';

import { InvalidConfigurationError } from '../../lib/errors';
import { tableRef, type TableRef } from '../../lib/identifiers';
import { PostgresKeyStore } from '../../lib/store/postgres/stores';
import { copyKeysToPostgres, preparePostgresTable, type KeyRow } from '../../lib/store/postgres/copyKeys';
import type { ReserveOptions } from '../../lib/types';
import { postgresSchemaFixture } from '../support/database';

// Copying key rows into the Postgres keys table (the half of Moving up that writes): what the
// Postgres store then answers for the copied keys, and which copy wins when both hold a key.
const db = postgresSchemaFixture('copy', { max: 6 });
let table: TableRef;
let store: PostgresKeyStore;

const lease: ReserveOptions = {
	mode: 'lease',
	leaseSeconds: 60,
	retentionSeconds: 86_400,
	executionId: 'exec-9',
	workflowId: 'wf-9',
	instanceId: 'inst-9',
};
const request = (key: string) => ({ key, keySource: 'custom', payloadHash: null });
const stored = async (key: string) => (await db.pool.query(`select * from ${table.qualified} where key = $1`, [key])).rows[0];
const everyRow = async () => (await db.pool.query(`select * from ${table.qualified} order by key`)).rows;

const now = Date.now();
function keyRow(key: string, overrides: Partial<KeyRow> = {}): KeyRow {
	return {
		key,
		status: 'completed',
		attempts: 1,
		duplicateCount: 0,
		firstSeen: new Date(now - 60_000),
		lastSeen: new Date(now - 60_000),
		lockedUntil: null,
		expiresAt: new Date(now + 86_400_000),
		ownerToken: randomUUID(),
		executionId: 'exec-1',
		workflowId: 'wf-1',
		n8nInstance: 'inst-1',
		keySource: 'header',
		payloadHash: null,
		responseJson: null,
		completedAt: new Date(now - 59_000),
		effectCompletedAt: new Date(now - 59_000),
		lastError: null,
		payloadJson: null,
		payloadBytes: null,
		source: null,
		correlationId: null,
		inboxOwner: null,
		inboxItem: null,
		firstRetryMs: null,
		maxAttempts: null,
		retryUntil: null,
		nextAttemptAt: null,
		deadLetteredAt: null,
		...overrides,
	};
}

beforeAll(async () => {
	table = tableRef(db.schema, 'processed_events');
	await preparePostgresTable(db.pool, table, true);
	store = new PostgresKeyStore(db.pool, { schema: db.schema, table: 'processed_events', createTable: false });
});

describe('copyKeysToPostgres', () => {
	it('copies every column as it was; a completed key is then a duplicate carrying its stored response', async () => {
		const row = keyRow('c-done', {
			responseJson: '{"status":200,"big":12345678901234567890}',
			payloadJson: '{"id":"evt_1","amount":1200}',
			payloadBytes: 29,
			payloadHash: 'sha256:abc',
			source: 'stripe',
			correlationId: 'trace-1',
			duplicateCount: 3,
			attempts: 2,
		});
		const result = await copyKeysToPostgres(db.pool, table, [row]);
		expect(result).toEqual({ counts: { inserted: 1, updated: 0, unchanged: 0, replaced: 0, kept: 0 }, conflicts: [], warnings: [] });
		const copied = await stored('c-done');
		expect(copied).toMatchObject({
			status: 'completed',
			attempts: 2,
			duplicate_count: 3,
			owner_token: row.ownerToken,
			execution_id: 'exec-1',
			workflow_id: 'wf-1',
			n8n_instance: 'inst-1',
			key_source: 'header',
			payload_hash: 'sha256:abc',
			payload_bytes: 29,
			source: 'stripe',
			correlation_id: 'trace-1',
			first_seen: row.firstSeen,
			last_seen: row.lastSeen,
			expires_at: row.expiresAt,
			completed_at: row.completedAt,
			effect_completed_at: row.effectCompletedAt,
		});
		// The digits beyond JavaScript's precision survive: the JSON text goes to jsonb as it is.
		expect(
			(await db.pool.query(`select response::text as r, payload->>'id' as id from ${table.qualified} where key = 'c-done'`)).rows[0],
		).toEqual({
			r: '{"big": 12345678901234567890, "status": 200}',
			id: 'evt_1',
		});
		const [again] = await store.reserve([request('c-done')], lease);
		expect(again).toMatchObject({ outcome: 'duplicate', ownerToken: null });
		expect(again.record.status).toBe('completed');
		expect((again.record.response as { status: number }).status).toBe(200);
	});

	it('a processing key keeps its lease and owner token: a redelivery is In Progress and its run can still Complete', async () => {
		const row = keyRow('c-busy', { status: 'processing', lockedUntil: new Date(now + 60_000), completedAt: null, effectCompletedAt: null });
		await copyKeysToPostgres(db.pool, table, [row]);
		expect((await store.reserve([request('c-busy')], lease))[0]).toMatchObject({ outcome: 'in_progress' });
		expect(await store.complete([{ key: 'c-busy', ownerToken: row.ownerToken!, response: { ok: 1 } }])).toEqual([
			{ key: 'c-busy', applied: true },
		]);
		expect((await store.reserve([request('c-busy')], lease))[0]).toMatchObject({ outcome: 'duplicate', record: { response: { ok: 1 } } });
	});

	it('copying the same rows again changes nothing', async () => {
		const rows = [
			keyRow('c-twice-1'),
			keyRow('c-twice-2', { status: 'failed', lastError: 'boom', completedAt: null, effectCompletedAt: null }),
		];
		expect((await copyKeysToPostgres(db.pool, table, rows)).counts.inserted).toBe(2);
		const before = await everyRow();
		const { rows: xmin1 } = await db.pool.query(`select key, xmin::text from ${table.qualified} where key like 'c-twice-%' order by key`);
		const second = await copyKeysToPostgres(db.pool, table, rows);
		expect(second).toEqual({ counts: { inserted: 0, updated: 0, unchanged: 2, replaced: 0, kept: 0 }, conflicts: [], warnings: [] });
		expect(await everyRow()).toEqual(before);
		// Not even rewritten as they were: no new row versions.
		expect((await db.pool.query(`select key, xmin::text from ${table.qualified} where key like 'c-twice-%' order by key`)).rows).toEqual(
			xmin1,
		);
	});

	it('the same reservation seen again in the source since (more duplicates) is brought up to date, not a conflict', async () => {
		const row = keyRow('c-later');
		await copyKeysToPostgres(db.pool, table, [row]);
		const later = { ...row, duplicateCount: 5, lastSeen: new Date(now - 1000) };
		expect(await copyKeysToPostgres(db.pool, table, [later])).toMatchObject({ counts: { updated: 1 }, conflicts: [] });
		expect(await stored('c-later')).toMatchObject({ duplicate_count: 5, last_seen: later.lastSeen });
	});

	it('a key both stores hold as different reservations: completed beats processing, either way round, and both are reported', async () => {
		// Postgres processing, the copy completed → the copy replaces it.
		const [reserved] = await store.reserve([request('c-conflict-a')], lease);
		const completedCopy = keyRow('c-conflict-a', { responseJson: '{"from":"file"}' });
		// Postgres completed, the copy processing → Postgres keeps its row.
		const [done] = await store.reserve([request('c-conflict-b')], lease);
		await store.complete([{ key: 'c-conflict-b', ownerToken: done.ownerToken!, response: { from: 'postgres' } }]);
		const processingCopy = keyRow('c-conflict-b', {
			status: 'processing',
			attempts: 3,
			lockedUntil: new Date(now + 60_000),
			completedAt: null,
			effectCompletedAt: null,
		});

		const result = await copyKeysToPostgres(db.pool, table, [completedCopy, processingCopy]);
		expect(result.counts).toEqual({ inserted: 0, updated: 0, unchanged: 0, replaced: 1, kept: 1 });
		expect(result.conflicts).toEqual([
			{
				key: 'c-conflict-a',
				kept: 'copied',
				copied: { status: 'completed', attempts: 1, lastSeen: completedCopy.lastSeen },
				postgres: { status: 'processing', attempts: 1, lastSeen: expect.any(Date) },
			},
			{
				key: 'c-conflict-b',
				kept: 'postgres',
				copied: { status: 'processing', attempts: 3, lastSeen: processingCopy.lastSeen },
				postgres: { status: 'completed', attempts: 1, lastSeen: expect.any(Date) },
			},
		]);
		expect(await stored('c-conflict-a')).toMatchObject({
			status: 'completed',
			owner_token: completedCopy.ownerToken,
			response: { from: 'file' },
		});
		expect(await stored('c-conflict-b')).toMatchObject({
			status: 'completed',
			owner_token: done.ownerToken,
			response: { from: 'postgres' },
		});
		// The run that held c-conflict-a on Postgres lost it to the completed copy: fenced off.
		expect(await store.complete([{ key: 'c-conflict-a', ownerToken: reserved.ownerToken!, response: {} }])).toEqual([
			{ key: 'c-conflict-a', applied: false, reason: 'not_owner' },
		]);
	});

	it('between two unfinished reservations the later attempt wins', async () => {
		await copyKeysToPostgres(db.pool, table, [
			keyRow('c-attempts', { status: 'failed', attempts: 2, completedAt: null, effectCompletedAt: null, lastError: 'first' }),
		]);
		const later = keyRow('c-attempts', {
			status: 'processing',
			attempts: 3,
			lockedUntil: new Date(now + 60_000),
			completedAt: null,
			effectCompletedAt: null,
		});
		expect((await copyKeysToPostgres(db.pool, table, [later])).counts.replaced).toBe(1);
		const earlier = keyRow('c-attempts', { status: 'failed', attempts: 1, completedAt: null, effectCompletedAt: null });
		expect((await copyKeysToPostgres(db.pool, table, [earlier])).counts.kept).toBe(1);
		expect(await stored('c-attempts')).toMatchObject({ status: 'processing', attempts: 3, owner_token: later.ownerToken });
	});

	it('JSON or text Postgres refuses (NUL, a lone surrogate) is repaired with a warning, never a lost key', async () => {
		const row = keyRow('c-nul', {
			responseJson: '{"text":"a\\u0000b","half":"\\ud800"}',
			lastError: 'bad\u0000byte',
			status: 'failed',
			completedAt: null,
			effectCompletedAt: null,
		});
		const result = await copyKeysToPostgres(db.pool, table, [row]);
		expect(result.counts.inserted).toBe(1);
		expect(result.warnings).toHaveLength(2);
		expect(await stored('c-nul')).toMatchObject({ response: { text: 'a\uFFFDb', half: '\uFFFD' }, last_error: 'bad\uFFFDbyte' });
	});

	it('a row no store could hold (a key with NUL) stops the batch before anything is written', async () => {
		await expect(copyKeysToPostgres(db.pool, table, [keyRow('c-ok-before-bad'), keyRow('c-\u0000bad')])).rejects.toThrow(
			InvalidConfigurationError,
		);
		expect(await stored('c-ok-before-bad')).toBeUndefined();
	});

	it('copies a batch of 5,000 keys in one call', async () => {
		const rows = Array.from({ length: 5000 }, (_, i) => keyRow(`c-bulk-${i}`));
		expect((await copyKeysToPostgres(db.pool, table, rows)).counts.inserted).toBe(5000);
		expect(Number((await db.pool.query(`select count(*) from ${table.qualified} where key like 'c-bulk-%'`)).rows[0].count)).toBe(5000);
	});
});
