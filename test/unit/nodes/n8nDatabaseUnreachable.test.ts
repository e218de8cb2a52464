import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { Credentials } from 'n8n-core';
import {
	ApplicationError,
	DbConnectionTimeoutError,
	ExpressionError,
	NodeOperationError,
	OperationalError,
	UnexpectedError,
	UserError,
	type IExecuteFunctions,
	type INode,
} from 'n8n-workflow';

import { closeAllPools } from '../../../lib/store/postgres/pool';
import { CREDENTIAL_TYPE } from '../../../nodes/shared/credential';
import { isN8nDatabaseUnreachable } from '../../../nodes/shared/n8nDatabaseUnreachable';
import { credentialPool } from '../../../nodes/shared/store';
import { connectionRefused, connectionTerminated, serverRefusesConnection } from '../../support/pgConnectionErrors';

/*
 * When n8n cannot read a node's credential, the node may use the settings it last read only when
 * n8n's own database could not be reached; a read n8n refused stands. The errors are n8n's and pg's
 * own, raised as n8n 2.41 raises them (packages/cli CredentialsHelper.getDecrypted, the credentials
 * permission check, n8n-core's Credentials and secrets proxy).
 */

/** TypeORM's QueryFailedError as n8n's repositories throw it: the driver error, its fields copied on. */
function queryFailed(driverError: Error): Error {
	const { name: _name, message: _message, stack: _stack, ...fields } = driverError as Error & Record<string, unknown>;
	return Object.assign(
		new Error(driverError.message),
		{ name: 'QueryFailedError', query: 'SELECT … FROM "credentials_entity"', parameters: [], driverError },
		fields,
	);
}

/** The subclass n8n's CredentialsHelper throws for a credential that is gone (packages/cli errors/credential-not-found.error.ts). */
class CredentialNotFoundError extends UserError {
	constructor(id: string, type: string) {
		super(`Credential with ID "${id}" does not exist for type "${type}".`);
	}
}

/** n8n's policy refusal (packages/cli policy/policy-violation.error.ts): a UserError carrying HTTP 403. */
class PolicyViolationError extends UserError {
	readonly httpStatusCode = 403;
	constructor(message: string) {
		super(message, { level: 'warning' });
	}
}

/**
 * n8n-core's own CredentialDataError, from Credentials.getData on stored data that does not
 * decrypt (what n8n meets after the data or its encryption key changed).
 */
async function undecryptable(): Promise<Error> {
	const userFolder = process.env.N8N_USER_FOLDER;
	process.env.N8N_USER_FOLDER = mkdtempSync(path.join(tmpdir(), 'n8n-user-'));
	try {
		await new Credentials({ id: 'cred-up', name: 'Idempotency' }, CREDENTIAL_TYPE, 'U2FsdGVkX1+not+what+was+encrypted+here==').getData();
	} catch (error) {
		return error as Error;
	} finally {
		if (userFolder === undefined) delete process.env.N8N_USER_FOLDER;
		else process.env.N8N_USER_FOLDER = userFolder;
	}
	throw new Error('the data was expected not to decrypt');
}

describe('isN8nDatabaseUnreachable', () => {
	describe("n8n's database could not be reached: the last read settings may be used", () => {
		it.each<[string, () => Promise<Error>]>([
			['pg: connection refused (ECONNREFUSED)', connectionRefused],
			['pg: connection terminated unexpectedly (no code)', connectionTerminated],
			['pg: the database system is shutting down (57P03)', () => serverRefusesConnection('57P03', 'the database system is shutting down')],
			['pg: the database system is starting up (57P03)', () => serverRefusesConnection('57P03', 'the database system is starting up')],
			[
				'pg: terminating connection due to administrator command (57P01)',
				() => serverRefusesConnection('57P01', 'terminating connection due to administrator command'),
			],
			['pg: connection failure (08006)', () => serverRefusesConnection('08006', 'connection failure')],
			[
				'TypeORM QueryFailedError around pg: 57P01',
				async () => queryFailed(await serverRefusesConnection('57P01', 'terminating connection due to administrator command')),
			],
			[
				'TypeORM QueryFailedError around pg: statement timeout (57014)',
				async () => queryFailed(await serverRefusesConnection('57014', 'canceling statement due to statement timeout')),
			],
			['TypeORM QueryFailedError around pg: connection terminated', async () => queryFailed(await connectionTerminated())],
			[
				"n8n's DbConnectionTimeoutError",
				async () => new DbConnectionTimeoutError({ configuredTimeoutInMs: 20_000, cause: await connectionRefused() }),
			],
		])('%s', async (_label, makeError) => {
			expect(isN8nDatabaseUnreachable(await makeError())).toBe(true);
		});
	});

	describe('n8n refused the read, or its database answered: the refusal stands', () => {
		it.each<[string, () => Promise<unknown> | unknown]>([
			['the credential deleted during the run (CredentialNotFoundError)', () => new CredentialNotFoundError('cred-up', CREDENTIAL_TYPE)],
			['a credential that cannot be used in workflows (UserError)', () => new UserError('This credential cannot be used in workflows')],
			[
				"a credential not shared with the workflow's project (UserError)",
				() => new UserError('Node "Settle" uses inaccessible credential'),
			],
			['a policy violation (UserError, 403)', () => new PolicyViolationError('Blocked by policy: credential type not allowed')],
			[
				"an end user's credential the trigger cannot use (UserError)",
				() => new UserError("End-user credentials aren't supported by this workflow's trigger."),
			],
			[
				'external secrets access denied (ExpressionError)',
				() =>
					new ExpressionError('Could not load secrets', {
						description: 'The credential in use pulls secrets from an external store that is not reachable',
					}),
			],
			['stored data that does not decrypt (n8n-core CredentialDataError)', undecryptable],
			['an unexpected error in n8n (UnexpectedError)', () => new UnexpectedError('Unknown credential type')],
			['an ApplicationError', () => new ApplicationError('Connection terminated unexpectedly while resolving')],
			['an OperationalError whose message names a lost connection', () => new OperationalError('Connection terminated unexpectedly')],
			['a UserError whose cause is a lost connection', async () => new UserError('refused', { cause: await connectionRefused() })],
			[
				'the node has no credential set (NodeOperationError)',
				() => new NodeOperationError({ name: 'Settle' } as INode, 'Node does not have any credentials set'),
			],
			[
				'TypeORM QueryFailedError: permission denied (42501)',
				async () => queryFailed(await serverRefusesConnection('42501', 'permission denied for table credentials_entity')),
			],
			[
				'pg: password authentication failed (28P01)',
				() => serverRefusesConnection('28P01', 'password authentication failed for user "n8n"'),
			],
			['a plain Error naming no connection failure', () => new Error('No credential cred-up of type idempotencyPostgresApi')],
			['something that is not an error', () => 'the database system is shutting down'],
		])('%s', async (_label, makeError) => {
			expect(isN8nDatabaseUnreachable(await makeError())).toBe(false);
		});
	});
});

describe('credentialPool when n8n cannot read the credential', () => {
	afterAll(closeAllPools);

	/** A node with the credential `id`, whose reads answer in turn what `reads` gives. */
	function contextReading(id: string, reads: Array<() => unknown>): IExecuteFunctions {
		const node = { name: 'Settle', credentials: { [CREDENTIAL_TYPE]: { id, name: 'Idempotency' } } } as unknown as INode;
		return {
			getNode: () => node,
			getCredentials: async () => {
				const read = reads.shift();
				if (!read) throw new Error('unexpected credential read');
				return read();
			},
		} as unknown as IExecuteFunctions;
	}
	const stored = { host: '127.0.0.1', port: 5, database: 'keys', user: 'keys', password: 'secret' };

	it("uses the settings last read while n8n's database is down; a refusal stands and is not revived by a later outage", async () => {
		const down = await serverRefusesConnection('57P03', 'the database system is shutting down');
		const context = contextReading('cred-refused', [
			() => stored,
			() => {
				throw down;
			},
			() => {
				throw new CredentialNotFoundError('cred-refused', CREDENTIAL_TYPE);
			},
			() => {
				throw down;
			},
		]);
		const pool = await credentialPool(context);
		expect(await credentialPool(context)).toBe(pool);
		await expect(credentialPool(context)).rejects.toThrow(/does not exist for type/);
		await expect(credentialPool(context)).rejects.toThrow(/the database system is shutting down/);
	});

	it.each<[string, () => Promise<Error> | Error]>([
		['a policy violation', () => new PolicyViolationError('Blocked by policy: credential type not allowed')],
		['stored data that does not decrypt', undecryptable],
		['external secrets access denied', () => new ExpressionError('Could not load secrets')],
	])('%s after a successful read: fails as n8n said, with NodeOperationError', async (label, makeRefusal) => {
		const refusal = await makeRefusal();
		const context = contextReading(`cred-${label}`, [
			() => stored,
			() => {
				throw refusal;
			},
		]);
		await credentialPool(context);
		const failure = credentialPool(context);
		await expect(failure).rejects.toBeInstanceOf(NodeOperationError);
		await expect(failure).rejects.toThrow(refusal.message);
	});
});
