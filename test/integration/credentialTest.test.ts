import { checkConnection } from '../../lib/store/postgres/checkConnection';
import { testConnection } from '../../nodes/shared/credential';
import { connectionSettings } from '../support/database';
import type { ICredentialTestFunctions } from 'n8n-workflow';

const credentialTest = (data: Record<string, unknown>) =>
	testConnection.call({} as ICredentialTestFunctions, { id: '1', name: 'test', type: 'idempotencyPostgresApi', data: data as never });

describe('the credential test', () => {
	it('passes for the right settings', async () => {
		const settings = connectionSettings();
		expect(await credentialTest({ ...settings })).toEqual({
			status: 'OK',
			message: expect.stringMatching(/^Connected to database "postgres"/),
		});
	});

	it('says the password is wrong, without echoing it', async () => {
		const result = await checkConnection(connectionSettings({ password: 'not-the-password' }));
		expect(result).toEqual({ ok: false, message: expect.stringMatching(/^Wrong password for user "postgres"/) });
		expect(result.message).not.toContain('not-the-password');
	});

	it('says the host is unknown', async () => {
		const result = await checkConnection(connectionSettings({ host: 'no-such-host.invalid' }));
		expect(result).toEqual({ ok: false, message: 'Unknown host "no-such-host.invalid": the name does not resolve.' });
	});

	it('says the database does not exist', async () => {
		const result = await checkConnection(connectionSettings({ database: 'no_such_database' }));
		expect(result.message).toMatch(/^Database "no_such_database" does not exist/);
	});

	it('says when nothing listens on the port', async () => {
		const result = await checkConnection(connectionSettings({ port: 1 }));
		expect(result.message).toMatch(/Connection refused at 127\.0\.0\.1:1/);
	});

	it('rejects a port that is not a port', async () => {
		expect(await credentialTest({ ...connectionSettings(), port: 70000 })).toEqual({
			status: 'Error',
			message: expect.stringMatching(/port must be a whole number/),
		});
	});
});
