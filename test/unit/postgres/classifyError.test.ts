import {
	DatabaseAuthenticationError,
	DatabaseError,
	DatabaseUnavailableError,
	InvalidConfigurationError,
	SchemaOutdatedError,
	TableMissingError,
} from '../../../lib/errors';
import { classifyPostgresError } from '../../../lib/postgres/classifyError';

const pgError = (code: string, message = 'server said no') => Object.assign(new Error(message), { code });

describe('classifyPostgresError', () => {
	it.each([
		['42P01', TableMissingError, /sql\/migrations\/keys\//],
		['3F000', TableMissingError, /Create or Upgrade Table/],
		['42703', SchemaOutdatedError, /sql\/migrations\/keys\/002_migrate_from_seed\.sql/],
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

	it('keeps raw socket codes out of the message (n8n would replace it with a generic one)', () => {
		expect(classifyPostgresError(pgError('ECONNREFUSED')).message).not.toMatch(/ECONNREFUSED/);
	});

	it('treats a dropped connection as unavailable', () => {
		expect(classifyPostgresError(new Error('Connection terminated unexpectedly'))).toBeInstanceOf(DatabaseUnavailableError);
	});
});
