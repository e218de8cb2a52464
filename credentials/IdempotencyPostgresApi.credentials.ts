import type { ICredentialType, INodeProperties, Icon } from 'n8n-workflow';

/**
 * The package's own Postgres credential, so the idempotency table can live in a different
 * database (or with a different user) than the workflow's business data.
 */
export class IdempotencyPostgresApi implements ICredentialType {
	name = 'idempotencyPostgresApi';

	displayName = 'Idempotency Postgres';

	icon: Icon = { light: 'file:idempotencyPostgres.svg', dark: 'file:idempotencyPostgres.dark.svg' };

	documentationUrl = 'https://www.npmjs.com/package/n8n-nodes-idempotency';

	properties: INodeProperties[] = [
		{ displayName: 'Host', name: 'host', type: 'string', default: 'localhost', required: true },
		{ displayName: 'Port', name: 'port', type: 'number', default: 5432, required: true },
		{ displayName: 'Database', name: 'database', type: 'string', default: 'postgres', required: true },
		{ displayName: 'User', name: 'user', type: 'string', default: 'postgres', required: true },
		{
			displayName: 'Password',
			name: 'password',
			type: 'string',
			typeOptions: { password: true },
			default: '',
		},
		{
			displayName: 'SSL',
			name: 'ssl',
			type: 'options',
			options: [
				{ name: 'Disable', value: 'disable', description: 'Plain connection (local or private network)' },
				{ name: 'Require', value: 'require', description: 'Encrypted, server certificate not checked' },
				{ name: 'Verify', value: 'verify', description: 'Encrypted, server certificate checked against the CA' },
			],
			default: 'disable',
		},
		{
			displayName: 'CA Certificate',
			name: 'ca',
			type: 'string',
			typeOptions: { rows: 4 },
			default: '',
			description: 'PEM certificate of the authority that signed the server certificate (leave empty for the system CAs)',
			displayOptions: { show: { ssl: ['verify'] } },
		},
		{
			displayName: 'Ignore SSL Issues (Insecure)',
			name: 'ignoreSslIssues',
			type: 'boolean',
			default: false,
			description: 'Whether to connect even if the server certificate cannot be verified (self-signed)',
			displayOptions: { show: { ssl: ['verify'] } },
		},
		{
			displayName: 'Max Connections',
			name: 'maxConnections',
			type: 'number',
			typeOptions: { minValue: 1, maxValue: 1000 },
			default: 10,
			description: 'Size of the connection pool this credential shares across executions',
		},
		{
			displayName: 'Statement Timeout (Seconds)',
			name: 'statementTimeoutSeconds',
			type: 'number',
			typeOptions: { minValue: 0, maxValue: 3600 },
			default: 15,
			description:
				'Postgres cancels a statement that runs longer; nothing it was doing is kept. 0: not sent (behind PgBouncer, set it on the database role instead).',
		},
		{
			displayName: 'Lock Timeout (Seconds)',
			name: 'lockTimeoutSeconds',
			type: 'number',
			typeOptions: { minValue: 0, maxValue: 3600 },
			default: 5,
			description:
				'Postgres stops waiting for a key another session holds locked (e.g. a long transaction). 0: not sent (behind PgBouncer, set it on the database role instead).',
		},
		{
			displayName: 'Query Timeout (Seconds)',
			name: 'queryTimeoutSeconds',
			type: 'number',
			typeOptions: { minValue: 1, maxValue: 3600 },
			default: 20,
			description: 'The node stops waiting for an answer after this long (a dead network path); keep it above the statement timeout',
		},
		{
			displayName: 'TCP Keepalive',
			name: 'keepAlive',
			type: 'boolean',
			default: true,
			description: 'Whether to send keepalive probes on idle connections, so a dead network path is noticed',
		},
		{
			displayName: 'Prepared Statements',
			name: 'preparedStatements',
			type: 'boolean',
			default: true,
			description:
				"Whether Postgres keeps the nodes' statements parsed and planned on each connection (faster). Turn off behind a pooler that cannot keep them, such as PgBouncer in transaction mode before 1.21; the nodes also switch off by themselves on its first refusal.",
		},
	];
}
