import type { Pool } from 'pg';

const ready = new WeakMap<Pool, Map<string, Promise<void>>>();

/**
 * Runs `create` (a CREATE TABLE IF NOT EXISTS) once per pool and table: concurrent first callers
 * share it, and a failure is forgotten so the next call tries again.
 */
export async function onceReady(pool: Pool, qualifiedTable: string, create: () => Promise<void>): Promise<void> {
	let perPool = ready.get(pool);
	if (!perPool) {
		perPool = new Map();
		ready.set(pool, perPool);
	}
	let creation = perPool.get(qualifiedTable);
	if (!creation) {
		creation = create();
		perPool.set(qualifiedTable, creation);
		creation.catch(() => perPool.delete(qualifiedTable));
	}
	await creation;
}
