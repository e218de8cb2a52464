import { DatabaseAuthenticationError, DatabaseUnavailableError, IdempotencyError, InvalidConfigurationError } from '../../errors';
import { catalogStatement } from './statements';
import { classifyPostgresError } from './errors';
import type { ConnectionSettings } from './connectionSettings';
import { postgresCause, withOwnConnection } from './runner';

export type ConnectionCheck = { ok: true; message: string } | { ok: false; message: string };

/**
 * Opens one connection with the credential's settings and says in plain words what went wrong:
 * wrong password, unknown host, refused connection, missing database. Never echoes the password.
 */
export async function checkConnection(settings: ConnectionSettings): Promise<ConnectionCheck> {
	try {
		return await withOwnConnection(settings, async (runner) => {
			const { rows } = await runner.run(catalogStatement('checkConnection'), ['server_version']);
			return { ok: true, message: `Connected to database "${rows[0].database}" (Postgres ${rows[0].version}).` };
		});
	} catch (error) {
		return { ok: false, message: describeConnectionError(error, settings) };
	}
}

function describeConnectionError(error: unknown, settings: ConnectionSettings): string {
	const code = (postgresCause(error) as { code?: string } | null)?.code;
	if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `Unknown host "${settings.host}": the name does not resolve.`;
	if (code === 'ECONNREFUSED') return `Connection refused at ${settings.host}:${settings.port}: is Postgres running and listening there?`;
	if (code === '28P01') return `Wrong password for user "${settings.user}" (Postgres: password authentication failed).`;
	if (code === '3D000') return `Database "${settings.database}" does not exist on ${settings.host}:${settings.port}.`;
	const classified: IdempotencyError = error instanceof IdempotencyError ? error : classifyPostgresError(error);
	if (
		classified instanceof DatabaseAuthenticationError ||
		classified instanceof DatabaseUnavailableError ||
		classified instanceof InvalidConfigurationError
	) {
		return classified.message;
	}
	return `Could not connect: ${classified.message}`;
}
