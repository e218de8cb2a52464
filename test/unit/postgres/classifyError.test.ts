import {
	DatabaseAuthenticationError,
	DatabaseError,
	DatabaseUnavailableError,
	DatabaseUnreachableError,
	InvalidConfigurationError,
	LockTimeoutError,
	OutcomeUnknownError,
	SchemaOutdatedError,
	StatementTimeoutError,
	TableMissingError,
} from '../../../lib/errors';
import { classifyPostgresError, connectionFailureReason } from '../../../lib/store/postgres/errors';

const pgError = (code: string, message = 'server said no') => Object.assign(new Error(message), { code });

describe('classifyPostgresError', () => {
	it.each([
		['42P01', TableMissingError, /sql\/postgres\/migrations\/keys\//],
		['3F000', TableMissingError, /Create or Upgrade Table/],
		['42703', SchemaOutdatedError, /sql\/postgres\/migrations\/keys\/002_migrate_from_seed\.sql/],
		['28P01', DatabaseAuthenticationError, /rejected the credential/],
		['42501', DatabaseAuthenticationError, /lacks a privilege/],
		['3D000', InvalidConfigurationError, /database in the credential does not exist/],
		['57P01', DatabaseUnavailableError, /not accepting connections/],
		['ECONNREFUSED', DatabaseUnavailableError, /could not be reached \(connection refused\)/],
		['ENOTFOUND', DatabaseUnavailableError, /unknown host/],
		['22P02', DatabaseError, /Postgres error 22P02/],
	])('%s becomes %p', (code, type, message) => {
		const classified = classifyPostgresError(pgError(code), { table: '"public"."processed_events"' });
		expect(classified).toBeInstanceOf(type);
		expect(classified.message).toMatch(message);
		expect((classified as Error & { cause?: unknown }).cause).toBeInstanceOf(Error);
	});

	// On Store Unavailable: Let Through lets through DatabaseUnreachableError only (nothing was sent).
	it.each([
		['connection refused', pgError('ECONNREFUSED'), {}, true],
		['unknown host', pgError('ENOTFOUND'), {}, true],
		['connect timeout', new Error('timeout exceeded when trying to connect'), {}, true],
		['too many connections', pgError('53300'), {}, true],
		['shutting down', pgError('57P01'), {}, true],
		["statement timeout (e.g. waiting behind another delivery's row lock)", pgError('57014'), {}, false],
		['lock timeout', pgError('55P03'), {}, false],
		[
			'a lost answer (the reservation may have committed)',
			new Error('Connection terminated unexpectedly'),
			{ outcomeUnknown: true },
			false,
		],
		['a query read timeout after sending', new Error('Query read timeout'), { outcomeUnknown: true }, false],
	] as const)('%s: unreachable (nothing sent) is %p', (_what, error, context, unreachable) => {
		const classified = classifyPostgresError(error, { operation: 'reserve', ...context });
		expect(classified).toBeInstanceOf(DatabaseUnavailableError);
		expect(classified instanceof DatabaseUnreachableError).toBe(unreachable);
	});

	it('keeps raw socket codes out of the message (n8n would replace it with a generic one)', () => {
		expect(classifyPostgresError(pgError('ECONNREFUSED')).message).not.toMatch(/ECONNREFUSED/);
	});

	it('treats a dropped connection as unavailable', () => {
		expect(classifyPostgresError(new Error('Connection terminated unexpectedly'))).toBeInstanceOf(DatabaseUnavailableError);
	});

	it('a statement timeout and a lock timeout have their own messages, not "could not be reached"', () => {
		const statement = classifyPostgresError(pgError('57014', 'canceling statement due to statement timeout'), { operation: 'reserve' });
		expect(statement).toBeInstanceOf(StatementTimeoutError);
		expect(statement.message).toMatch(/cancelled the statement.*Statement Timeout.*Nothing was reserved\./);
		const lock = classifyPostgresError(pgError('55P03', 'canceling statement due to lock timeout'), { operation: 'complete' });
		expect(lock).toBeInstanceOf(LockTimeoutError);
		expect(lock.message).toMatch(/row lock.*Lock Timeout.*The key was not completed/);
		for (const error of [statement, lock]) expect(error.message).not.toMatch(/could not be reached/);
	});

	it('says what each operation left unchanged when nothing was sent', () => {
		expect(classifyPostgresError(pgError('ECONNREFUSED'), { operation: 'reserve' }).message).toMatch(/Nothing was reserved\.$/);
		expect(classifyPostgresError(pgError('ECONNREFUSED'), { operation: 'release' }).message).toMatch(/Nothing was released/);
		expect(classifyPostgresError(pgError('ECONNREFUSED'), { operation: 'fail' }).message).toMatch(/Nothing was marked failed/);
	});

	it('after a lost answer never claims that nothing changed, whatever the last error was', () => {
		for (const last of [
			new Error('Query read timeout'),
			pgError('57P01', 'terminating connection'),
			pgError('55P03'),
			pgError('ECONNREFUSED'),
		]) {
			const error = classifyPostgresError(last, { operation: 'reserve', outcomeUnknown: true });
			expect(error).toBeInstanceOf(OutcomeUnknownError);
			expect(error).toBeInstanceOf(DatabaseUnavailableError); // routed like "store unavailable" by the nodes
			expect(error.message).toMatch(/may have been reserved/);
			expect(error.message).not.toMatch(/Nothing was/);
		}
		expect(classifyPostgresError(pgError('08006'), { operation: 'complete', outcomeUnknown: true }).message).toMatch(
			/may or may not have been completed/,
		);
	});

	it('tells connection-class failures (worth retrying) from errors Postgres answered (never retried)', () => {
		for (const code of ['ECONNREFUSED', 'ECONNRESET', '57P01', '57P03', '53300', '08006'])
			expect(connectionFailureReason(pgError(code))).toBeDefined();
		expect(connectionFailureReason(new Error('Query read timeout'))).toMatch(/Query Timeout/);
		expect(connectionFailureReason(new Error('Connection terminated unexpectedly'))).toBeDefined();
		expect(connectionFailureReason(new Error('timeout exceeded when trying to connect'))).toBeDefined();
		for (const code of ['22P05', '23505', '42P01', '57014', '55P03', '28P01'])
			expect(connectionFailureReason(pgError(code))).toBeUndefined();
	});

	it('a pooler refusing the timeout startup parameters is a configuration error naming the fix, not "unreachable"', () => {
		const error = classifyPostgresError(pgError('08P01', 'unsupported startup parameter: statement_timeout'), { operation: 'reserve' });
		expect(error).toBeInstanceOf(InvalidConfigurationError);
		expect(error.message).toMatch(/"statement_timeout".*Statement Timeout and Lock Timeout to 0.*Nothing was reserved/);
		expect(connectionFailureReason(pgError('08P01', 'unsupported startup parameter: lock_timeout'))).toBeUndefined();
	});
});
