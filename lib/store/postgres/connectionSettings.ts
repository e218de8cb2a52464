import type { PoolConfig } from 'pg';

import { InvalidConfigurationError } from '../../errors';

/** SSL: off, encrypted without verifying the server, or encrypted and verified against a CA. */
export type SslMode = 'disable' | 'require' | 'verify';

/** The package credential's fields, as plain data (the node reads them from n8n). */
export interface ConnectionSettings {
	host: string;
	port: number;
	database: string;
	user: string;
	password: string;
	ssl: SslMode;
	/** PEM certificate authority, for `verify`. */
	ca?: string;
	/** PEM client certificate and its key, for `verify` (a server that asks for one). */
	cert?: string;
	key?: string;
	/** With `verify`: accept a self-signed or otherwise unverifiable server certificate. */
	allowUnauthorizedCerts?: boolean;
	/** Pool size per credential. */
	maxConnections: number;
	/** How long to wait for a connection (opening one, or one of the pool's). Default CONNECT_TIMEOUT_MS. */
	connectTimeoutMs?: number;
	/** Postgres cancels a statement that runs longer (server side, 57014). Default 15. */
	statementTimeoutSeconds?: number;
	/** Postgres gives up waiting for a row lock after this long (server side, 55P03). Default 5. */
	lockTimeoutSeconds?: number;
	/** The client stops waiting for an answer after this long (a dead network path). Default 20. */
	queryTimeoutSeconds?: number;
	/** TCP keepalive probes on idle connections, so a dead peer is noticed. Default on. */
	keepAlive?: boolean;
	/** Named prepared statements (parsed and planned once per connection). Default on; see preparedStatements.ts. */
	preparedStatements?: boolean;
}

export const CONNECT_TIMEOUT_MS = 10_000;
export const IDLE_TIMEOUT_MS = 30_000;
export const KEEPALIVE_INITIAL_DELAY_MS = 10_000;

/**
 * Safe defaults: a lock wait gives up before the statement timeout, and the server's statement
 * timeout fires before the client stops waiting, so a slow statement is reported by Postgres
 * (certainly rolled back) and only a silent network reaches the client-side timeout.
 */
export const DEFAULT_TIMEOUTS = { statementTimeoutSeconds: 15, lockTimeoutSeconds: 5, queryTimeoutSeconds: 20 } as const;
const MAX_TIMEOUT_SECONDS = 3600;

/** Validates the settings and turns them into a `pg` pool configuration. */
export function toPoolConfig(settings: ConnectionSettings): PoolConfig {
	if (!settings.host) throw new InvalidConfigurationError('The credential has no host.');
	if (!settings.database) throw new InvalidConfigurationError('The credential has no database.');
	if (!settings.user) throw new InvalidConfigurationError('The credential has no user.');
	const port = Number(settings.port);
	if (!Number.isInteger(port) || port < 1 || port > 65535) {
		throw new InvalidConfigurationError(`The credential's port must be a whole number from 1 to 65535.`);
	}
	const max = Number(settings.maxConnections);
	if (!Number.isInteger(max) || max < 1 || max > 1000) {
		throw new InvalidConfigurationError(`The credential's max connections must be a whole number from 1 to 1000.`);
	}
	// 0 leaves the server-side timeouts unsent: PgBouncer refuses unknown startup parameters, and
	// there they belong on the database role instead. The client-side query timeout always applies.
	const statementTimeout = timeoutSeconds(
		settings.statementTimeoutSeconds,
		DEFAULT_TIMEOUTS.statementTimeoutSeconds,
		'Statement Timeout',
		true,
	);
	const lockTimeout = timeoutSeconds(settings.lockTimeoutSeconds, DEFAULT_TIMEOUTS.lockTimeoutSeconds, 'Lock Timeout', true);
	const queryTimeout = timeoutSeconds(settings.queryTimeoutSeconds, DEFAULT_TIMEOUTS.queryTimeoutSeconds, 'Query Timeout', false);
	return {
		host: settings.host,
		port,
		database: settings.database,
		user: settings.user,
		password: settings.password,
		ssl: sslConfig(settings),
		max,
		connectionTimeoutMillis: connectTimeoutMs(settings.connectTimeoutMs),
		idleTimeoutMillis: IDLE_TIMEOUT_MS,
		...(statementTimeout > 0 ? { statement_timeout: Math.round(statementTimeout * 1000) } : {}),
		...(lockTimeout > 0 ? { lock_timeout: Math.round(lockTimeout * 1000) } : {}),
		query_timeout: Math.round(queryTimeout * 1000),
		keepAlive: settings.keepAlive ?? true,
		keepAliveInitialDelayMillis: KEEPALIVE_INITIAL_DELAY_MS,
		// Idle pools must not keep n8n (or a test run) alive.
		allowExitOnIdle: true,
		application_name: 'n8n-nodes-idempotency',
	};
}

function sslConfig(settings: ConnectionSettings): PoolConfig['ssl'] {
	switch (settings.ssl) {
		case 'disable':
		case undefined:
			return false;
		case 'require':
			return { rejectUnauthorized: false };
		case 'verify':
			return {
				rejectUnauthorized: !settings.allowUnauthorizedCerts,
				...(settings.ca ? { ca: settings.ca } : {}),
				...(settings.cert ? { cert: settings.cert } : {}),
				...(settings.key ? { key: settings.key } : {}),
			};
		default:
			throw new InvalidConfigurationError(`Unknown SSL mode ${JSON.stringify(settings.ssl)}: use disable, require or verify.`);
	}
}

function connectTimeoutMs(value: number | undefined): number {
	if (value === undefined) return CONNECT_TIMEOUT_MS;
	if (!(Number.isFinite(value) && value > 0 && value <= MAX_TIMEOUT_SECONDS * 1000)) {
		throw new InvalidConfigurationError(`The connection timeout must be more than 0 and at most ${MAX_TIMEOUT_SECONDS} seconds.`);
	}
	return Math.round(value);
}

// Missing (credentials saved before these fields existed) means the default. A client-side timeout
// of 0 is refused: a wait that never ends is the hang these settings exist to prevent.
function timeoutSeconds(value: number | undefined, fallback: number, field: string, zeroMeansUnsent: boolean): number {
	if (value === undefined || value === null || (value as unknown) === '') return fallback;
	const seconds = Number(value);
	if (zeroMeansUnsent && seconds === 0) return 0;
	if (!Number.isFinite(seconds) || seconds <= 0 || seconds > MAX_TIMEOUT_SECONDS) {
		const range = zeroMeansUnsent
			? `0 (not sent) or more than 0 and at most ${MAX_TIMEOUT_SECONDS}`
			: `more than 0 and at most ${MAX_TIMEOUT_SECONDS}`;
		throw new InvalidConfigurationError(`The credential's ${field} must be ${range} seconds.`);
	}
	return seconds;
}
