import { join } from 'node:path';

import type { Pool } from 'pg';

import { baseNodesInstalled, n8nInstallDirectory } from './n8nBaseNodes';

/**
 * A `charges` table in the test schema for n8n-nodes-base's Postgres node to write into (a row per
 * charge): its insert trigger refuses an event's first insert when a sequence `failonce_<event>`
 * exists (nextval is not rolled back with a transaction: it fails once). Call inside a describe: it
 * registers its own beforeAll and afterAll. The Postgres node's pool manager starts a cleanup interval
 * that is never unref'd and keeps its pools open: it is made here with an unref'd timer (Node's own
 * global, not jest's), and its pools are closed after the describe.
 */
export function postgresCharges(db: { readonly pool: Pool; readonly schema: string }): {
	charges: (ids: string[]) => Promise<number[]>;
	failOnce: (id: string) => Promise<unknown>;
} {
	let poolManager: { purgeConnections(): Promise<void> | void } | undefined;
	beforeAll(async () => {
		if (!baseNodesInstalled()) return;
		const directory = join(n8nInstallDirectory(), 'node_modules', 'n8n-nodes-base', 'dist', 'utils');
		const { createRequire } = (process as unknown as { getBuiltinModule(id: string): typeof import('node:module') }).getBuiltinModule(
			'node:module',
		);
		const nativeRequire = createRequire(join(directory, 'package.json'));
		const realGlobal = (nativeRequire('node:vm') as typeof import('node:vm')).runInThisContext('globalThis') as typeof globalThis;
		const original = realGlobal.setInterval;
		realGlobal.setInterval = ((...args: Parameters<typeof setInterval>) => original(...args).unref()) as typeof setInterval;
		try {
			const { ConnectionPoolManager } = nativeRequire(join(directory, 'connection-pool-manager.js')) as {
				ConnectionPoolManager: { getInstance(logger: unknown): { purgeConnections(): Promise<void> | void } };
			};
			const quiet = () => undefined;
			poolManager = ConnectionPoolManager.getInstance({ debug: quiet, info: quiet, warn: quiet, error: quiet });
		} finally {
			realGlobal.setInterval = original;
		}
		const s = db.schema;
		await db.pool.query(`create table ${s}.charges (event text not null)`);
		await db.pool.query(`create function ${s}.fail_once() returns trigger language plpgsql as $f$ begin
			if exists (select 1 from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = '${s}' and c.relname = 'failonce_' || new.event)
				and nextval(format('%I.%I', '${s}', 'failonce_' || new.event)::regclass) = 1 then raise exception 'charge refused for %', new.event; end if;
			return new; end $f$`);
		await db.pool.query(`create trigger fail_once before insert on ${s}.charges for each row execute function ${s}.fail_once()`);
	});
	afterAll(async () => {
		await poolManager?.purgeConnections();
	});
	return {
		charges: async (ids) =>
			await Promise.all(
				ids.map(async (id) =>
					Number((await db.pool.query(`select count(*) from ${db.schema}.charges where event = $1`, [id])).rows[0].count),
				),
			),
		failOnce: async (id) => await db.pool.query(`create sequence ${db.schema}.failonce_${id}`),
	};
}
