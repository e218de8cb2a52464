// A fresh store for one test file, on either backend: a KeyStore (or OrderStore) on its own
// Postgres schema of the test server (globalSetup starts it), or on its own file in a temporary
// folder for the embedded store. With it, the backend-neutral ways a test sets up and inspects
// stored rows: seed rows in a given state, move a row's clock fields, read a row back.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import type { Pool } from 'pg';

import type { KeyStore, OrderStore } from '../../lib/store/contract';
import type { RecordStatus } from '../../lib/types';
import { adminPool, databaseUrl, freshSchema } from './database';
import { embeddedRows } from './embeddedRows';
import { postgresRows } from './postgresRows';
import { type Backend, type StoreTarget, embeddedModule, openKeyStore, openOrderStore } from './storeTargets';

export { BACKENDS, type Backend, type StoreTarget } from './storeTargets';

/** A stored key as a row, whatever the backend: column names, times as Dates, JSON parsed. */
export interface StoredRow {
	key: string;
	status: RecordStatus;
	attempts: number;
	duplicate_count: number;
	first_seen: Date;
	last_seen: Date;
	locked_until: Date | null;
	expires_at: Date | null;
	owner_token: string | null;
	execution_id: string | null;
	workflow_id: string | null;
	n8n_instance: string | null;
	key_source: string | null;
	payload_hash: string | null;
	response: unknown;
	completed_at: Date | null;
	effect_completed_at: Date | null;
	last_error: string | null;
	payload: unknown;
	payload_bytes: number | null;
	source: string | null;
	correlation_id: string | null;
	inbox_owner: string | null;
	inbox_item: string | null;
	first_retry_ms: number | null;
	max_attempts: number | null;
	retry_until: Date | null;
	next_attempt_at: Date | null;
	dead_lettered_at: Date | null;
}

/** Seconds from the store's clock now; negative is in the past. */
export type Offset = number;

/**
 * A row to store as it is, or the changes to make to one. Times are offsets from the store's now;
 * `ownerToken: 'random'` stores a fresh token. `payload` and `response` are the stored JSON value
 * (null is JSON null; absent on a new row: none stored).
 */
export interface RowValues {
	status?: RecordStatus;
	attempts?: number;
	duplicateCount?: number;
	firstSeen?: Offset;
	lastSeen?: Offset;
	lockedUntil?: Offset | null;
	expiresAt?: Offset | null;
	ownerToken?: 'random' | string | null;
	executionId?: string | null;
	workflowId?: string | null;
	n8nInstance?: string | null;
	lastError?: string | null;
	response?: unknown;
	payload?: unknown;
	payloadBytes?: number | null;
	source?: string | null;
	correlationId?: string | null;
	inboxOwner?: string | null;
	inboxItem?: string | null;
	firstRetryMs?: number | null;
	maxAttempts?: number | null;
	retryUntil?: Offset | null;
	nextAttemptAt?: Offset | null;
	deadLetteredAt?: Offset | null;
}

/** Each value's key-table column, and how a backend writes it: a time offset from the store's now, JSON, a UUID, or the value as it is. */
export const ROW_COLUMNS: Record<keyof RowValues, { column: string; kind: 'time' | 'json' | 'uuid' | 'plain' }> = {
	status: { column: 'status', kind: 'plain' },
	attempts: { column: 'attempts', kind: 'plain' },
	duplicateCount: { column: 'duplicate_count', kind: 'plain' },
	firstSeen: { column: 'first_seen', kind: 'time' },
	lastSeen: { column: 'last_seen', kind: 'time' },
	lockedUntil: { column: 'locked_until', kind: 'time' },
	expiresAt: { column: 'expires_at', kind: 'time' },
	ownerToken: { column: 'owner_token', kind: 'uuid' },
	executionId: { column: 'execution_id', kind: 'plain' },
	workflowId: { column: 'workflow_id', kind: 'plain' },
	n8nInstance: { column: 'n8n_instance', kind: 'plain' },
	lastError: { column: 'last_error', kind: 'plain' },
	response: { column: 'response', kind: 'json' },
	payload: { column: 'payload', kind: 'json' },
	payloadBytes: { column: 'payload_bytes', kind: 'plain' },
	source: { column: 'source', kind: 'plain' },
	correlationId: { column: 'correlation_id', kind: 'plain' },
	inboxOwner: { column: 'inbox_owner', kind: 'plain' },
	inboxItem: { column: 'inbox_item', kind: 'plain' },
	firstRetryMs: { column: 'first_retry_ms', kind: 'plain' },
	maxAttempts: { column: 'max_attempts', kind: 'plain' },
	retryUntil: { column: 'retry_until', kind: 'time' },
	nextAttemptAt: { column: 'next_attempt_at', kind: 'time' },
	deadLetteredAt: { column: 'dead_lettered_at', kind: 'time' },
};

export type SeedRow = RowValues & { key: string };

/** What each backend does to a table's rows directly, under the store's feet. */
export interface RowAccess {
	row(key: string): Promise<StoredRow | undefined>;
	/** Every stored key (or those starting with `prefix`), in byte order. */
	keys(prefix?: string): Promise<string[]>;
	count(prefix?: string): Promise<number>;
	seed(rows: SeedRow[]): Promise<void>;
	/** `count` rows `${prefix}${i}` (i from 1) with the same values, in one statement. */
	seedMany(prefix: string, count: number, values: RowValues): Promise<void>;
	update(keys: string | string[], values: RowValues): Promise<void>;
	/** Deletes every row. */
	clear(): Promise<void>;
	/** The store's clock. */
	now(): Promise<Date>;
	/** Adds `count` to the answer counts of the hour that started `hoursAgo` whole hours before the current one. */
	seedAnswerCount(answer: string, count: number, hoursAgo: number): Promise<void>;
	/** From now on an insert of `key` stores nothing (a trigger); the returned function undoes it. */
	skipInsertOf(key: string): Promise<() => Promise<void>>;
	close(): Promise<void>;
}

export interface StoreFixture extends RowAccess {
	backend: Backend;
	target: StoreTarget;
	store: KeyStore;
	/** Another store on the same table, on a connection of its own (closed with the fixture). */
	openStore(connections?: number): KeyStore;
	/** A store on another, fresh table of the same schema or file (closed with the fixture). */
	otherTable(table: string): Promise<StoreFixture>;
}

export interface FreshStoreOptions {
	/** Default processed_events. */
	table?: string;
	/** What the store is told (default true); the table is created either way. */
	createTable?: boolean;
	/** Postgres pool size of the main store (default 12). */
	connections?: number;
	/** Names the schema or file, for reading logs (default 't'). */
	prefix?: string;
}

/** One temporary folder per test process for embedded files, removed at exit. */
let embeddedFolder: string | undefined;
function embeddedFile(prefix: string): string {
	if (!embeddedFolder) {
		embeddedFolder = mkdtempSync(path.join(os.tmpdir(), 'idempotency-conformance-'));
		const folder = embeddedFolder;
		process.once('exit', () => rmSync(folder, { recursive: true, force: true }));
	}
	return path.join(embeddedFolder, `${prefix}-${Math.random().toString(16).slice(2, 10)}.sqlite`);
}

interface Where {
	/** Postgres: the admin pool and schema. */
	pool?: Pool;
	schema?: string;
	/** Embedded: the file. */
	file?: string;
}

/** A KeyStore on a fresh schema (Postgres) or a fresh file (embedded), its table created. */
export async function freshStore(backend: Backend, options: FreshStoreOptions = {}): Promise<StoreFixture> {
	const prefix = options.prefix ?? 't';
	if (backend === 'postgres') {
		const pool = adminPool(options.connections ?? 12);
		const schema = await freshSchema(pool, prefix);
		return await keyFixture(backend, { pool, schema }, options, [() => pool.end()]);
	}
	embeddedModule();
	return await keyFixture(backend, { file: embeddedFile(prefix) }, options, []);
}

async function keyFixture(
	backend: Backend,
	where: Where,
	options: FreshStoreOptions,
	closers: Array<() => Promise<void>>,
): Promise<StoreFixture> {
	const table = options.table ?? 'processed_events';
	const target: StoreTarget =
		backend === 'postgres' ? { backend, url: databaseUrl(), schema: where.schema!, table } : { backend, file: where.file!, table };
	let store: KeyStore;
	if (backend === 'postgres') {
		// eslint-disable-next-line @typescript-eslint/no-require-imports
		const { PostgresKeyStore } = require('../../lib/store/postgres/stores') as typeof import('../../lib/store/postgres/stores');
		store = new PostgresKeyStore(where.pool!, { schema: where.schema!, table, createTable: options.createTable ?? true });
	} else {
		store = embeddedModule().openEmbeddedKeyStore({ file: where.file!, table, createTable: options.createTable ?? true });
	}
	await store.createTable();
	const rows = backend === 'postgres' ? postgresRows(where.pool!, where.schema!, table) : embeddedRows(where.file!, table);
	const opened: Array<() => Promise<void>> = [];
	const fixture: StoreFixture = {
		...rows,
		backend,
		target,
		store,
		openStore: (connections = 1) => {
			const own = openKeyStore(target, connections);
			opened.push(own.close);
			return own.store;
		},
		otherTable: async (other) => {
			const fixtureOf = await keyFixture(backend, where, { ...options, table: other }, []);
			opened.push(fixtureOf.close);
			return fixtureOf;
		},
		close: async () => {
			for (const close of opened) await close();
			await rows.close();
			for (const close of closers) await close();
		},
	};
	return fixture;
}

export interface OrderFixture {
	backend: Backend;
	target: StoreTarget;
	store: OrderStore;
	/** The object's mark: its highest version (exact decimal text) and its stale count. */
	mark(objectKey: string): Promise<{ version: string; stale_count: number } | undefined>;
	close(): Promise<void>;
}

/** An OrderStore on a fresh schema (Postgres) or a fresh file (embedded), its table created. */
export async function freshOrderStore(backend: Backend, options: { table?: string; prefix?: string } = {}): Promise<OrderFixture> {
	const table = options.table ?? 'object_versions';
	const prefix = options.prefix ?? 'order';
	if (backend === 'postgres') {
		const pool = adminPool(4);
		const schema = await freshSchema(pool, prefix);
		const target: StoreTarget = { backend, url: databaseUrl(), schema, table };
		const opened = openOrderStore(target, 4);
		await opened.store.createTable();
		return {
			backend,
			target,
			store: opened.store,
			mark: async (objectKey) =>
				(await pool.query(`select version::text as version, stale_count from ${schema}.${table} where object_key = $1`, [objectKey]))
					.rows[0],
			close: async () => {
				await opened.close();
				await pool.end();
			},
		};
	}
	const file = embeddedFile(prefix);
	const target: StoreTarget = { backend, file, table };
	const opened = openOrderStore(target);
	await opened.store.createTable();
	const rows = embeddedRows(file, table);
	return {
		backend,
		target,
		store: opened.store,
		mark: (objectKey) => rows.orderMark(objectKey),
		close: async () => {
			await opened.close();
			await rows.close();
		},
	};
}

/** `describe` once per backend, with the backend's name in the title. */
export function describeEachBackend(title: string, body: (backend: Backend) => void): void {
	describe.each(['postgres', 'embedded'] as const)(`${title} [%s]`, (backend) => body(backend));
}
