import type { PoolConfig } from 'pg';

import { InvalidConfigurationError } from '../errors';

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
	/** With `verify`: accept a self-signed or otherwise unverifiable server certificate. */
	allowUnauthorizedCerts?: boolean;
	/** Pool size per credential. */
	maxConnections: number;
}

export const CONNECT_TIMEOUT_MS = 10_000;
export const IDLE_TIMEOUT_MS = 30_000;

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
	return {
		host: settings.host,
		port,
		database: settings.database,
		user: settings.user,
		password: settings.password,
		ssl: sslConfig(settings),
		max,
		connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
		idleTimeoutMillis: IDLE_TIMEOUT_MS,
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
			return { rejectUnauthorized: !settings.allowUnauthorizedCerts, ...(settings.ca ? { ca: settings.ca } : {}) };
		default:
			throw new InvalidConfigurationError(`Unknown SSL mode ${JSON.stringify(settings.ssl)}: use disable, require or verify.`);
	}
}
