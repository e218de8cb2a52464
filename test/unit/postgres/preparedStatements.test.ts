import { Pool } from 'pg';

import { closeAllPools, poolFor } from '../../../lib/store/postgres/pool';
import { connectionSettings } from '../../../nodes/shared/credential';
import { namesStatements, preparedStatementFailure, sendUnnamed, statementName } from '../../../lib/store/postgres/preparedStatements';

afterEach(() => closeAllPools());

describe('statementName', () => {
	it('is the same for the same text and differs for another text (another table, another variant)', () => {
		const a = statementName('select 1 from "public"."processed_events"');
		expect(statementName('select 1 from "public"."processed_events"')).toBe(a);
		expect(statementName('select 1 from "public"."other_events"')).not.toBe(a);
		// A valid unquoted identifier, well within Postgres's 63 bytes.
		expect(a).toMatch(/^idem_[0-9a-f]{32}$/);
	});
});

describe('preparedStatementFailure', () => {
	it.each([
		['26000', 'pooler'],
		['42P05', 'pooler'],
		['0A000', 'stale'],
		['23505', undefined],
		['57014', undefined],
		[undefined, undefined],
	])('code %p is %p', (code, expected) => {
		expect(preparedStatementFailure(Object.assign(new Error('x'), { code }))).toBe(expected);
	});

	it('is undefined for a connection failure without a code and for a non-error', () => {
		expect(preparedStatementFailure(new Error('Connection terminated unexpectedly'))).toBeUndefined();
		expect(preparedStatementFailure(null)).toBeUndefined();
	});
});

describe('which pools name their statements', () => {
	const settings = {
		host: '127.0.0.1',
		port: 5432,
		database: 'app',
		user: 'n8n',
		password: 'p',
		ssl: 'disable' as const,
		maxConnections: 2,
	};

	it('a credential names them by default and not with Prepared Statements off (a pool of its own)', () => {
		expect(namesStatements(poolFor(settings))).toBe(true);
		expect(namesStatements(poolFor({ ...settings, preparedStatements: true }))).toBe(true);
		const off = poolFor({ ...settings, preparedStatements: false });
		expect(off).not.toBe(poolFor(settings));
		expect(namesStatements(off)).toBe(false);
	});

	it("reads the credential's field: absent (saved before it existed) is the default, on", () => {
		const stored = { host: 'h', database: 'd', user: 'u' };
		expect(connectionSettings(stored).preparedStatements).toBeUndefined();
		expect(connectionSettings({ ...stored, preparedStatements: false }).preparedStatements).toBe(false);
		expect(namesStatements(poolFor({ ...settings, ...connectionSettings(stored) }))).toBe(true);
	});

	it('sendUnnamed switches one pool only', async () => {
		const one = new Pool();
		const other = new Pool();
		sendUnnamed(one);
		expect(namesStatements(one)).toBe(false);
		expect(namesStatements(other)).toBe(true);
		await Promise.all([one.end(), other.end()]);
	});
});
