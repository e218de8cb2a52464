import type {
	ICredentialDataDecryptedObject,
	ICredentialsDecrypted,
	ICredentialTestFunctions,
	INodeCredentialTestResult,
} from 'n8n-workflow';

import { checkConnection } from '../../lib/store/postgres/checkConnection';
import type { ConnectionSettings, SslMode } from '../../lib/store/postgres/connectionSettings';

// The nodes spell these out in their descriptions too: n8n's lint reads them as literals there.
export const CREDENTIAL_TYPE = 'idempotencyPostgresApi';
export const CONNECTION_TEST = 'idempotencyPostgresConnectionTest';

/** The credential's stored fields as core connection settings. */
export function connectionSettings(data: ICredentialDataDecryptedObject): ConnectionSettings {
	return {
		host: String(data.host ?? ''),
		port: Number(data.port ?? 5432),
		database: String(data.database ?? ''),
		user: String(data.user ?? ''),
		password: String(data.password ?? ''),
		ssl: (data.ssl as SslMode | undefined) ?? 'disable',
		ca: data.ca ? String(data.ca) : undefined,
		allowUnauthorizedCerts: Boolean(data.ignoreSslIssues),
		maxConnections: Number(data.maxConnections ?? 10),
		// Credentials saved before these fields existed get the defaults (toPoolConfig).
		statementTimeoutSeconds: optionalNumber(data.statementTimeoutSeconds),
		lockTimeoutSeconds: optionalNumber(data.lockTimeoutSeconds),
		queryTimeoutSeconds: optionalNumber(data.queryTimeoutSeconds),
		keepAlive: data.keepAlive === undefined ? undefined : Boolean(data.keepAlive),
		preparedStatements: data.preparedStatements === undefined ? undefined : Boolean(data.preparedStatements),
	};
}

function optionalNumber(value: unknown): number | undefined {
	return value === undefined || value === null || value === '' ? undefined : Number(value);
}

/** The credential's "Test" button: one real connection, and a message that says what is wrong. */
export async function testConnection(
	this: ICredentialTestFunctions,
	credential: ICredentialsDecrypted,
): Promise<INodeCredentialTestResult> {
	let settings: ConnectionSettings;
	try {
		settings = connectionSettings(credential.data ?? {});
	} catch (error) {
		return { status: 'Error', message: (error as Error).message };
	}
	const result = await checkConnection(settings);
	return { status: result.ok ? 'OK' : 'Error', message: result.message };
}
