// The shipped templates wired to a stack's databases: their files, the credentials they reference
// (with the stack's app database and the test signing secret) and the tables they write. Shared by
// the e2e suite, the demo and the benchmarks. Node 20 compatible.
import fs from 'node:fs';
import path from 'node:path';
import type { ClientBase } from 'pg';
import { REPO_ROOT } from './n8nInstall';
import type { CredentialEntry } from './n8nCli';
import type { DatabaseSettings } from './n8nDatabase';
import type { StackContext } from './stackSteps';
import { TEST_WEBHOOK_SECRET } from './stripeDelivery';

const TEMPLATE_DIR = path.join(REPO_ROOT, 'templates');
export const TEMPLATES = {
	webhook: path.join(TEMPLATE_DIR, 'idempotent-webhook.json'),
	cleanup: path.join(TEMPLATE_DIR, 'scheduled-cleanup.json'),
	error: path.join(TEMPLATE_DIR, 'error-workflow.json'),
	replay: path.join(TEMPLATE_DIR, 'replay-failed-events.json'),
	// The zero-setup twins (Store: Embedded, no Postgres credential).
	webhookEmbedded: path.join(TEMPLATE_DIR, 'idempotent-webhook-embedded.json'),
	cleanupEmbedded: path.join(TEMPLATE_DIR, 'scheduled-cleanup-embedded.json'),
	errorEmbedded: path.join(TEMPLATE_DIR, 'error-workflow-embedded.json'),
};
/** The credential ids and names the templates reference. */
export const TEMPLATE_CREDENTIALS = {
	idempotency: { id: 'idempotencyPg01', name: 'Idempotency Postgres', type: 'idempotencyPostgresApi' },
	business: { id: 'businessPg01', name: 'Business Postgres', type: 'postgres' },
	signature: { id: 'webhookSig01', name: 'Webhook Signature Secret', type: 'webhookSignatureApi' },
};

export function idempotencyCredentialData(app: DatabaseSettings) {
	return {
		host: app.host,
		port: app.port,
		database: app.database,
		user: app.user,
		password: app.password,
		ssl: 'disable',
		maxConnections: 10,
	};
}
export function businessCredentialData(app: DatabaseSettings) {
	return { host: app.host, port: app.port, database: app.database, user: app.user, password: app.password, ssl: 'disable' };
}

/** The one credential the embedded webhook template needs: the signing secret. */
export function signatureCredentials(): CredentialEntry[] {
	return [{ ...TEMPLATE_CREDENTIALS.signature, data: { secret: TEST_WEBHOOK_SECRET } }];
}

/** The credentials the webhook template uses: both Postgres ones (the app database) and the signing secret. */
export function templateCredentials(ctx: Pick<StackContext, 'app'>): CredentialEntry[] {
	return [
		{ ...TEMPLATE_CREDENTIALS.idempotency, data: idempotencyCredentialData(ctx.app) },
		{ ...TEMPLATE_CREDENTIALS.business, data: businessCredentialData(ctx.app) },
		...signatureCredentials(),
	];
}

const BUSINESS_LOG_DDL = `CREATE TABLE IF NOT EXISTS business_log (
	id bigserial PRIMARY KEY,
	event_key text NOT NULL,
	event_type text,
	created_at timestamptz NOT NULL DEFAULT now()
)`;

/** Creates the package's table with the migrations the installed package ships (in file order), and the example business table. */
export async function prepareTemplateTables(
	client: Pick<ClientBase, 'query'>,
	ctx: Pick<StackContext, 'packageDir'>,
	{ reset = false }: { reset?: boolean } = {},
): Promise<string> {
	const shipped = ctx.packageDir && path.join(ctx.packageDir, 'dist', 'sql', 'postgres', 'migrations', 'keys');
	const ddlDir = shipped && fs.existsSync(shipped) ? shipped : path.join(REPO_ROOT, 'sql', 'postgres', 'migrations', 'keys');
	const ddlFiles = fs
		.readdirSync(ddlDir)
		.filter((name) => name.endsWith('.sql'))
		.sort();
	for (const name of ddlFiles) await client.query(fs.readFileSync(path.join(ddlDir, name), 'utf8'));
	await client.query(BUSINESS_LOG_DDL);
	if (reset) await client.query('TRUNCATE business_log, processed_events RESTART IDENTITY');
	return ddlDir;
}
