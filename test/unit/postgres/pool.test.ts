import { DEFAULT_TIMEOUTS, IDLE_TIMEOUT_MS, toPoolConfig, type ConnectionSettings } from '../../../lib/store/postgres/connectionSettings';
import { closeAllPools, openPoolCount, poolFor } from '../../../lib/store/postgres/pool';
import { InvalidConfigurationError } from '../../../lib/errors';

const settings: ConnectionSettings = {
	host: '127.0.0.1',
	port: 5432,
	database: 'app',
	user: 'n8n',
	password: 'secret-1',
	ssl: 'disable',
	maxConnections: 7,
};

afterEach(() => closeAllPools());

describe('poolFor', () => {
	it('reuses one pool per credential across executions', () => {
		expect(poolFor({ ...settings })).toBe(poolFor({ ...settings }));
		expect(openPoolCount()).toBe(1);
	});

	it('keeps credentials apart, including ones that differ only in password', () => {
		expect(poolFor(settings)).not.toBe(poolFor({ ...settings, password: 'secret-2' }));
		expect(poolFor(settings)).not.toBe(poolFor({ ...settings, database: 'other' }));
		expect(openPoolCount()).toBe(3);
	});

	it('sizes the pool from the credential and closes idle connections without keeping the process alive', () => {
		const pool = poolFor(settings) as unknown as { options: Record<string, unknown> };
		expect(pool.options).toMatchObject({ max: 7, idleTimeoutMillis: IDLE_TIMEOUT_MS, allowExitOnIdle: true });
	});

	it('closeAllPools forgets every pool', async () => {
		poolFor(settings);
		await closeAllPools();
		expect(openPoolCount()).toBe(0);
	});
});

describe('toPoolConfig', () => {
	it.each([
		['disable', undefined, false],
		['require', undefined, { rejectUnauthorized: false }],
		['verify', undefined, { rejectUnauthorized: true }],
		['verify', true, { rejectUnauthorized: false }],
	] as const)('ssl %s (ignore issues: %p)', (ssl, allowUnauthorizedCerts, expected) => {
		expect(toPoolConfig({ ...settings, ssl, allowUnauthorizedCerts }).ssl).toEqual(expected);
	});

	it('passes a CA certificate for verify', () => {
		expect(toPoolConfig({ ...settings, ssl: 'verify', ca: 'PEM' }).ssl).toEqual({ rejectUnauthorized: true, ca: 'PEM' });
	});

	it.each([
		[{ host: '' }, /no host/],
		[{ database: '' }, /no database/],
		[{ user: '' }, /no user/],
		[{ port: 0 }, /port/],
		[{ port: 70000 }, /port/],
		[{ maxConnections: 0 }, /max connections/],
		[{ ssl: 'sometimes' }, /Unknown SSL mode/],
	])('rejects %p', (override, message) => {
		expect(() => toPoolConfig({ ...settings, ...(override as Partial<ConnectionSettings>) })).toThrow(InvalidConfigurationError);
		expect(() => toPoolConfig({ ...settings, ...(override as Partial<ConnectionSettings>) })).toThrow(message);
	});
});

describe('timeouts and keepalive (nothing hangs)', () => {
	it('a credential saved before these fields existed gets statement, lock and query timeouts and keepalive', () => {
		expect(toPoolConfig(settings)).toMatchObject({
			statement_timeout: DEFAULT_TIMEOUTS.statementTimeoutSeconds * 1000,
			lock_timeout: DEFAULT_TIMEOUTS.lockTimeoutSeconds * 1000,
			query_timeout: DEFAULT_TIMEOUTS.queryTimeoutSeconds * 1000,
			keepAlive: true,
		});
		// The server reports a slow statement (certainly rolled back) before the client gives up waiting.
		expect(DEFAULT_TIMEOUTS.lockTimeoutSeconds).toBeLessThan(DEFAULT_TIMEOUTS.statementTimeoutSeconds);
		expect(DEFAULT_TIMEOUTS.statementTimeoutSeconds).toBeLessThan(DEFAULT_TIMEOUTS.queryTimeoutSeconds);
	});

	it('takes the credential values, and refuses 0, negatives and more than an hour', () => {
		expect(
			toPoolConfig({ ...settings, statementTimeoutSeconds: 2.5, lockTimeoutSeconds: 1, queryTimeoutSeconds: 60, keepAlive: false }),
		).toMatchObject({
			statement_timeout: 2500,
			lock_timeout: 1000,
			query_timeout: 60_000,
			keepAlive: false,
		});
		for (const bad of [0, -1, 3601, Number.NaN]) {
			expect(() => toPoolConfig({ ...settings, queryTimeoutSeconds: bad })).toThrow(InvalidConfigurationError);
		}
		expect(() => toPoolConfig({ ...settings, statementTimeoutSeconds: -1 })).toThrow(InvalidConfigurationError);
	});

	it('0 leaves the server-side timeouts unsent (PgBouncer refuses them); the client-side one stays', () => {
		const config = toPoolConfig({ ...settings, statementTimeoutSeconds: 0, lockTimeoutSeconds: 0 });
		expect(config).not.toHaveProperty('statement_timeout');
		expect(config).not.toHaveProperty('lock_timeout');
		expect(config.query_timeout).toBe(DEFAULT_TIMEOUTS.queryTimeoutSeconds * 1000);
	});
});
