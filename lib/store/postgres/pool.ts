import { createHash } from 'node:crypto';
import { Pool } from 'pg';

import { toPoolConfig, type ConnectionSettings } from './connectionSettings';
import { sendUnnamed } from './preparedStatements';

/**
 * One pg.Pool per distinct credential, reused across executions. Pools are keyed by a hash of the
 * settings (never the raw password), close idle connections after IDLE_TIMEOUT_MS and never keep
 * the process alive. Creating a Pool is synchronous, so concurrent first callers share one pool.
 */
const pools = new Map<string, Pool>();

function fingerprint(settings: ConnectionSettings): string {
	const { password, ...rest } = settings;
	return createHash('sha256')
		.update(JSON.stringify(rest))
		.update('\0')
		.update(
			createHash('sha256')
				.update(password ?? '')
				.digest(),
		)
		.digest('hex');
}

export function poolFor(settings: ConnectionSettings): Pool {
	const key = fingerprint(settings);
	let pool = pools.get(key);
	if (!pool) {
		pool = new Pool(toPoolConfig(settings));
		// An idle client losing its connection (server restart) must not crash n8n; the next query reconnects.
		pool.on('error', () => {});
		if (settings.preparedStatements === false) sendUnnamed(pool);
		pools.set(key, pool);
	}
	return pool;
}

/** Closes every pool (tests, shutdown). */
export async function closeAllPools(): Promise<void> {
	const all = [...pools.values()];
	pools.clear();
	await Promise.all(all.map((pool) => pool.end()));
}

export function openPoolCount(): number {
	return pools.size;
}
