#!/usr/bin/env node
// `npm run demo`: a real n8n with this package installed as a community package, the README's
// quick start published, and the demo acting as Stripe against it. By default the Idempotent
// Webhook trigger (templates/idempotent-webhook-trigger.json, Store: Automatic: on one n8n process
// the embedded file), its business step a
// call to "your API", a small HTTP server the demo runs on 127.0.0.1 and counts; `--store postgres`
// publishes its Postgres twin (idempotent-webhook-trigger-postgres.json). `--template nodes`
// publishes the node-based templates instead (idempotent-webhook-embedded.json, or with
// `--store postgres` idempotent-webhook.json, each with its error and cleanup workflows).
// Every delivery is signed with the demo credential's test secret (stack.TEST_WEBHOOK_SECRET) but
// one forgery. Prints each delivery's answer and the execution it started, then per event the
// deliveries, n8n's executions (from n8n's database), the business step's effects and the stored
// key; then leaves n8n running until Ctrl-C (`--once` exits after the tables, 1 when an answer or
// a count is not what the template promises).
//
//   npm run demo                         # trigger, Store: Automatic (the embedded file); keep n8n running (http://127.0.0.1:5678)
//   npm run demo -- --store postgres     # the trigger with its keys in Postgres
//   npm run demo -- --template nodes     # the node-based webhook template (batches, replay, Execute Query)
//   npm run demo -- --once               # exit after the tables
//   npm run demo -- --port 5679          # another port
//   npm run demo -- --dir /tmp/demo      # keep the state in another folder than .demo/
//
// State lives in .demo/ (gitignored): an embedded Postgres data dir (n8n's own database, and the
// demo's idempotency database for --store postgres), n8n's user folder with the installed package
// and the embedded key file. Each run starts from empty keys. Delete .demo/ to start from scratch.
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { ClientBase } from 'pg';
import * as stack from '../test/support/stack/n8nStack';
import { freePort } from '../test/support/stack/postgresServer';
import { embeddedStoreFile, readEmbeddedStore } from '../test/support/stack/embeddedStore';
import { startSink } from '../test/support/e2e/sink';
import { triggerKey } from '../test/support/e2e/trigger';

/** A node of a template, as the demo reads it. */
interface TemplateNode {
	name: string;
	type: string;
	parameters: Record<string, unknown> & { path?: string };
	[field: string]: unknown;
}

/** A template's workflow, as the demo reads and publishes it. */
interface TemplateWorkflow {
	id: string;
	nodes: TemplateNode[];
	settings?: Record<string, unknown>;
	[field: string]: unknown;
}

/** The answer of one delivery, as the tables count it. */
type Answer = stack.Delivery<{ reason?: string } | undefined>;

const args = process.argv.slice(2);
const option = (name: string, fallback?: string): string | undefined => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const once = args.includes('--once');
const portArg = args.includes('--port') ? Number(option('--port')) : undefined;
const STORE = option('--store', 'embedded') as 'embedded' | 'postgres';
const TEMPLATE = option('--template', 'trigger') as 'trigger' | 'nodes';
if (!['embedded', 'postgres'].includes(STORE) || !['trigger', 'nodes'].includes(TEMPLATE)) {
	console.error(`--store must be embedded or postgres (not ${STORE}), --template trigger or nodes (not ${TEMPLATE})`);
	process.exit(2);
}
const EMBEDDED = STORE === 'embedded';
const TRIGGER = TEMPLATE === 'trigger';
const DEMO_DIR = path.resolve(option('--dir', path.join(stack.REPO_ROOT, '.demo')) as string);
const OWNER = { email: 'demo@example.com', password: 'DemoOwner123', firstName: 'Demo', lastName: 'Owner' };
const BURST = 20;

const TEMPLATE_DIR = path.join(stack.REPO_ROOT, 'templates');
const TRIGGER_FILES = {
	embedded: path.join(TEMPLATE_DIR, 'idempotent-webhook-trigger.json'),
	postgres: path.join(TEMPLATE_DIR, 'idempotent-webhook-trigger-postgres.json'),
};
const NODE_FILES = {
	embedded: { webhook: stack.TEMPLATES.webhookEmbedded, error: stack.TEMPLATES.errorEmbedded, cleanup: stack.TEMPLATES.cleanupEmbedded },
	postgres: { webhook: stack.TEMPLATES.webhook, error: stack.TEMPLATES.error, cleanup: stack.TEMPLATES.cleanup },
};
const WEBHOOK_FILE = TRIGGER ? TRIGGER_FILES[STORE] : NODE_FILES[STORE].webhook;
const readJson = (file: string): TemplateWorkflow => JSON.parse(fs.readFileSync(file, 'utf8')) as TemplateWorkflow;
const WEBHOOK = readJson(WEBHOOK_FILE);
const RECEIVER = WEBHOOK.nodes.find((node) =>
	['n8n-nodes-base.webhook', 'n8n-nodes-idempotency.idempotentWebhook'].includes(node.type),
) as TemplateNode;
const WEBHOOK_PATH = RECEIVER.parameters.path as string;
const API_STEP = 'Business Step (call your API)';
// The node-based Postgres template inserts into business_log; every other one calls "your API".
const CALLS_API = WEBHOOK.nodes.some((node) => node.name === API_STEP);

const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)}s`;
const log = (line: string): void => {
	process.stdout.write(`  [${elapsed()}] ${line}\n`);
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function portIsFree(port: number): Promise<boolean> {
	return new Promise((resolve) => {
		const server = net.createServer();
		server.once('error', () => resolve(false));
		server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
	});
}

function pad(text: unknown, width: number): string {
	const s = String(text);
	return s.length > width ? `${s.slice(0, width - 1)}…` : s.padEnd(width);
}

function printTable(headers: string[], rows: unknown[][]): void {
	const widths = headers.map((h, i) => Math.min(60, Math.max(h.length, ...rows.map((r) => String(r[i]).length))));
	const line = (cells: unknown[]) => `  ${cells.map((c, i) => pad(c, widths[i])).join('  │  ')}`;
	console.log(line(headers));
	console.log(`  ${widths.map((w) => '─'.repeat(w)).join('──┼──')}`);
	for (const row of rows) console.log(line(row));
}

const short = (text: string | null | undefined, width = 40): string =>
	text && text.length > width ? `${text.slice(0, width - 1)}…` : (text ?? '');

/** The webhook workflow as published: its business step pointed at the demo's API (the one change the template asks for). */
function webhookWorkflow(apiUrl: string, errorWorkflowId?: string): TemplateWorkflow {
	const wf = readJson(WEBHOOK_FILE);
	wf.nodes = wf.nodes.map((node) => (node.name === API_STEP ? { ...node, parameters: { ...node.parameters, url: apiUrl } } : node));
	return errorWorkflowId ? { ...wf, settings: { ...wf.settings, errorWorkflow: errorWorkflowId } } : wf;
}

/** What the demo publishes: the trigger template alone (the quick start), or the node-based webhook template with its error and cleanup workflows. */
function workflowsToPublish(apiUrl: string): stack.WorkflowEntry[] {
	if (TRIGGER) return [{ json: webhookWorkflow(apiUrl), publish: true }];
	const files = NODE_FILES[STORE];
	return [
		{ json: webhookWorkflow(apiUrl, readJson(files.error).id), publish: true },
		{ file: files.error, publish: true },
		{ file: files.cleanup, publish: true },
	];
}

/** The credentials the published templates reference: the signing secret, and with Postgres the keys' database. */
function credentials(ctx: stack.StackContext): stack.CredentialEntry[] {
	if (!TRIGGER && !EMBEDDED) return stack.templateCredentials(ctx);
	const keys = { ...stack.TEMPLATE_CREDENTIALS.idempotency, data: stack.idempotencyCredentialData(ctx.app) };
	return [...(EMBEDDED ? [] : [keys]), ...stack.signatureCredentials()];
}

/** Empties the keys before n8n starts, so that every run replays the same experiment. */
async function resetKeys(client: ClientBase, ctx: stack.StackContext): Promise<void> {
	if (EMBEDDED) {
		const keyFolder = path.dirname(embeddedStoreFile(path.join(DEMO_DIR, 'n8n-user')));
		fs.rmSync(keyFolder, { recursive: true, force: true });
		log(`embedded key file emptied for a clean replay (${path.relative(process.cwd(), keyFolder) || keyFolder}); no table to create`);
		return;
	}
	if (!TRIGGER) {
		const ddl = await stack.prepareTemplateTables(client, ctx, { reset: true });
		log(`tables ready (${path.relative(stack.REPO_ROOT, ddl)} + business_log), emptied for a clean replay`);
		return;
	}
	// The trigger creates its table on its first delivery (Create or Upgrade Table, on by default).
	const { rows } = await client.query<{ present: boolean }>("SELECT to_regclass('processed_events') IS NOT NULL AS present");
	if (rows[0].present) await client.query('TRUNCATE processed_events');
	log(
		rows[0].present
			? 'processed_events emptied for a clean replay'
			: 'no processed_events table yet: the trigger creates it on its first delivery',
	);
}

/** The key of a delivered body: the trigger's is of its workflow (triggerKey), Reserve's the event's alone. */
function eventKey(body: string | { id: string }): string {
	if (typeof body !== 'string') return TRIGGER ? triggerKey(WEBHOOK.id, body.id) : `evt:${body.id}`;
	const bodyHash = `sha256:${crypto.createHash('sha256').update(body).digest('hex')}`;
	return TRIGGER ? triggerKey(WEBHOOK.id, { key: bodyHash }) : bodyHash;
}

/** The key an execution's run data reserved, or 'forged' when the signature check refused it (the node-based templates run an execution for every delivery). */
function executionKey(execution: stack.Execution): string | null {
	const runData = execution.runData ?? {};
	if (TRIGGER) return keyOf(runData[RECEIVER.name]?.[0]?.data?.main?.[0]?.[0]?.json);
	if ((runData['Webhook Signature Verify']?.[0]?.data?.main?.[1]?.length ?? 0) > 0) return 'forged';
	const reserve = runData['Idempotency Reserve']?.[0]?.data?.main ?? [];
	return keyOf(reserve.find((items) => items?.length)?.[0]?.json);
}

/** The key an execution's item carries (json.idempotency.key), or null. */
function keyOf(json: unknown): string | null {
	const idempotency = (json as { idempotency?: { key?: unknown } } | undefined)?.idempotency;
	return typeof idempotency?.key === 'string' ? idempotency.key : null;
}

/** A key's stored state, as the per-event table shows it. */
interface StoredKey {
	status: string;
	attempts: number;
	duplicates: number;
}

/** The store in words: the trigger template's is Automatic, which is the embedded file on the demo's one n8n process. */
const STORE_WORDS = EMBEDDED
	? `${TRIGGER ? 'Automatic' : 'Embedded'} (the keys in a file on n8n's host, no database of yours)`
	: 'Postgres';

/** The stored state of each key: { key → { status, attempts, duplicates } }. */
async function storedKeys(running: stack.Stack): Promise<Record<string, StoredKey>> {
	if (EMBEDDED) {
		const file = embeddedStoreFile(running.userFolder);
		const page = await readEmbeddedStore<{ keys: Array<{ key: string; status: string; attempts: number; duplicateCount: number }> }>({
			nodeBin: running.nodeBin,
			packageDir: running.packageDir as string,
			file,
			op: 'listKeys',
			arg: '100',
		});
		return Object.fromEntries(
			(page?.keys ?? []).map((r) => [r.key, { status: r.status, attempts: r.attempts, duplicates: r.duplicateCount }]),
		);
	}
	const { rows } = await stack.withClient(running.appUrl, (client) =>
		client.query<{ key: string; status: string; attempts: number; duplicate_count: string }>(
			'SELECT key, status, attempts, duplicate_count FROM processed_events',
		),
	);
	return Object.fromEntries(rows.map((r) => [r.key, { status: r.status, attempts: r.attempts, duplicates: Number(r.duplicate_count) }]));
}

/** The business step's effects per key: the API's answered calls, or business_log rows for the node-based Postgres template. */
async function effectsPerKey(running: stack.Stack, api: { keys: () => Record<string, number> }): Promise<Record<string, number>> {
	if (CALLS_API) return api.keys();
	const { rows } = await stack.withClient(running.appUrl, (client) =>
		client.query<{ event_key: string; n: number }>('SELECT event_key, count(*)::int AS n FROM business_log GROUP BY event_key'),
	);
	return Object.fromEntries(rows.map((r) => [r.event_key, r.n]));
}

/** Retries a delivery answered 409 the way Stripe does (later, with a new signature) until a 2xx: the answers. */
async function retryUntilAccepted(url: string, body: unknown): Promise<Answer[]> {
	const answers: Answer[] = [];
	for (const deadline = Date.now() + 60000; Date.now() < deadline; ) {
		await sleep(500);
		const answer = await stack.deliver<{ reason?: string } | undefined>(url, body);
		answers.push(answer);
		if (answer.status >= 200 && answer.status < 300) return answers;
	}
	throw new Error('a copy of the burst was never accepted within 60 s');
}

/** Answers counted, in a fixed order: "1× 200 new, 7× 409 in_progress, 12× 200 duplicate". */
const countBy = (answers: Answer[]): string => {
	const order = ['200 new', '409 in_progress', '200 duplicate'];
	const counts = new Map(order.map((answer) => [answer, 0]));
	for (const a of answers) {
		const answer = `${a.status} ${a.outcome ?? ''}`.trim();
		counts.set(answer, (counts.get(answer) ?? 0) + 1);
	}
	return [...counts]
		.filter(([, n]) => n > 0)
		.map(([answer, n]) => `${n}× ${answer}`)
		.join(', ');
};

async function main(): Promise<void> {
	const what = TRIGGER
		? `the Idempotent Webhook trigger (templates/${path.basename(WEBHOOK_FILE)})`
		: `the node-based webhook template (templates/${path.basename(WEBHOOK_FILE)}, with its error and cleanup workflows)`;
	console.log(
		`\nn8n-nodes-idempotency demo: ${what}, Store: ${STORE_WORDS}, in a real n8n with this package installed as a community package.`,
	);
	console.log(
		fs.existsSync(path.join(DEMO_DIR, 'pg', 'PG_VERSION'))
			? `  (reusing ${DEMO_DIR})`
			: `  First run: installs n8n (cached, ~5 min and 2.8 GB the first time on this machine) and sets up ${DEMO_DIR}.`,
	);
	fs.mkdirSync(DEMO_DIR, { recursive: true });
	const port = portArg ?? ((await portIsFree(5678)) ? 5678 : await freePort());

	let running: stack.Stack | null = null;
	let stopping = false;
	const api = await startSink();
	const shutdown = async (code: number) => {
		if (stopping) return;
		stopping = true;
		console.log(`\n  stopping n8n and Postgres… (${elapsed()} since the start)`);
		await api.close();
		if (running) await (running as stack.Stack).stop();
		else stack.killEverythingNow(); // interrupted while starting
		process.exit(code);
	};
	process.on('SIGINT', () => void shutdown(0));
	process.on('SIGTERM', () => void shutdown(0));

	running = await stack.startStack({
		workDir: DEMO_DIR,
		pgDir: path.join(DEMO_DIR, 'pg'),
		persistentPg: true,
		dbNames: { n8n: 'n8n_demo', app: 'idempotency_demo' },
		encryptionKey: 'n8n-nodes-idempotency-demo-key',
		port,
		handleSignals: false, // Ctrl-C is handled above: a graceful stop of n8n, then Postgres
		setupSql: resetKeys,
		credentials,
		workflows: workflowsToPublish(api.url),
		readyWebhooks: [WEBHOOK_PATH],
		log,
	});

	try {
		const url = running.webhookUrl(WEBHOOK_PATH);
		const listed = (sinceId: number) =>
			stack.listExecutions({ n8nDbUrl: running.n8nDbUrl, n8nDir: running.n8nDir, workflowId: WEBHOOK.id, sinceId });
		const mark = await stack.maxExecutionId(running.n8nDbUrl);
		let seen = mark;
		/** The executions n8n recorded since the last call (each started before its delivery was answered). */
		const newExecutions = async () => {
			const executions = await listed(seen);
			if (executions.length) seen = executions[executions.length - 1].id;
			return executions;
		};

		// Signed like Stripe (Stripe-Signature: t=…,v1=HMAC-SHA256) with the demo credential's secret;
		// the retry of A gets a new timestamp, hence a different but valid signature.
		const now = Math.floor(Date.now() / 1000);
		const A = { id: 'evt_demo_A', type: 'payment_intent.succeeded' };
		const B = { id: 'evt_demo_B', type: 'invoice.paid' };
		const C = { id: 'evt_demo_C', type: 'charge.refunded' };
		const D = { id: 'evt_demo_D', type: 'order.created' };
		const IDLESS = '{"type":"ping","note":"no id here"}';
		const deliveries = [
			{ label: 'event A', event: 'A', body: A, sign: { timestamp: now - 60 }, expect: '200 new' },
			{ label: "A again, new stripe-signature (Stripe's retry)", event: 'A', body: A, sign: { timestamp: now }, expect: '200 duplicate' },
			{ label: 'event B', event: 'B', body: B, expect: '200 new' },
			{
				label: 'event C, forged (wrong secret)',
				event: 'C forged',
				body: C,
				sign: { secret: 'whsec_not_the_endpoint_secret' },
				expect: '401 invalid_signature',
			},
			{ label: 'event C, genuine', event: 'C', body: C, expect: '200 new' },
			{ label: 'a body without id', event: 'no id', body: IDLESS, expect: '200 new' },
			{ label: 'the same body without id again', event: 'no id', body: IDLESS, expect: '200 duplicate' },
		];
		console.log(`\n  Acting as Stripe: POST ${url}\n`);
		const rows: unknown[][] = [];
		const unexpected: string[] = [];
		const requests = new Map<string, number>(); // event → number of HTTP requests
		const executionsOf = new Map<string, number>(); // event → number of executions it started
		const count = (map: Map<string, number>, event: string, n = 1) => map.set(event, (map.get(event) ?? 0) + n);
		for (const [i, delivery] of deliveries.entries()) {
			const answer: Answer = await stack.deliver(url, delivery.body, {}, delivery.sign ?? {});
			const started = await newExecutions();
			count(requests, delivery.event);
			count(executionsOf, delivery.event, started.length);
			const got = `${answer.status} ${answer.outcome ?? ''}`.trim();
			if (got !== delivery.expect) unexpected.push(`${delivery.label}: ${got}, expected ${delivery.expect}`);
			const signature = answer.signature?.match(/^t=(\d+),v1=([0-9a-f]{8})/);
			const first = answer.firstExecution ? ` (first: #${answer.firstExecution})` : '';
			rows.push([
				`${i + 1}. ${delivery.label}`,
				signature ? `t=${signature[1]} v1=${signature[2]}…` : '-',
				got + (answer.status === 401 && answer.json?.reason ? ` (${answer.json.reason})` : ''),
				started.length ? started.map((e) => `#${e.id}`).join(', ') : `none${first}`,
			]);
		}

		// A burst: the same event delivered BURST times at once, as a provider's retries and n8n's
		// own redeliveries can overlap; the copies answered 409 are retried like Stripe until a 2xx.
		const burst: Answer[] = await Promise.all(Array.from({ length: BURST }, () => stack.deliver<{ reason?: string } | undefined>(url, D)));
		const burstStarted = await newExecutions();
		const conflicts = burst.filter((a) => a.status === 409);
		const retries = (await Promise.all(conflicts.map(() => retryUntilAccepted(url, D)))).flat();
		const retryStarted = await newExecutions();
		count(requests, 'D', burst.length + retries.length);
		count(executionsOf, 'D', burstStarted.length + retryStarted.length);
		const startedText = (list: stack.Execution[]) =>
			list.length === 0 ? 'none' : list.length <= 3 ? list.map((e) => `#${e.id}`).join(', ') : `${list.length} executions`;
		rows.push([
			`${deliveries.length + 1}. event D, ${BURST} copies at once`,
			`${BURST} signatures`,
			countBy(burst),
			startedText(burstStarted),
		]);
		if (retries.length)
			rows.push([
				`${deliveries.length + 2}. the ${conflicts.length} answered 409, retried`,
				`${retries.length} signatures`,
				countBy(retries),
				startedText(retryStarted),
			]);
		const burstNew = [...burst, ...retries].filter((a) => a.outcome === 'new').length;
		if (burstNew !== 1) unexpected.push(`event D: ${burstNew} deliveries answered new, expected 1`);
		const refused = [...burst, ...retries].filter(
			(a) => ![200, 409].includes(a.status) || (a.status === 409 && a.outcome !== 'in_progress'),
		);
		if (refused.length) unexpected.push(`event D: unexpected answers ${countBy(refused)}`);
		printTable(['delivery', 'stripe-signature', 'HTTP answer', 'execution started'], rows);

		// n8n's record of the whole run: wait until every execution finished, then count again.
		const totalRequests = [...requests.values()].reduce((sum, n) => sum + n, 0);
		const expectedExecutions = [...executionsOf.values()].reduce((sum, n) => sum + n, 0);
		await stack.waitForExecutions(
			{ n8nDbUrl: running.n8nDbUrl, n8nDir: running.n8nDir, workflowId: WEBHOOK.id, sinceId: mark },
			expectedExecutions,
		);
		await sleep(1000);
		const executions = await listed(mark);
		const failed = executions.filter((e) => e.status !== 'success');
		if (failed.length) unexpected.push(`executions that did not succeed: ${failed.map((e) => `#${e.id} ${e.status}`).join(', ')}`);
		const perKey = new Map<string, number>();
		for (const execution of executions) count(perKey, executionKey(execution) ?? '?');

		const events: Array<{ name: string; key: string | null }> = [
			{ name: 'A', key: eventKey(A) },
			{ name: 'B', key: eventKey(B) },
			{ name: 'C forged', key: null },
			{ name: 'C', key: eventKey(C) },
			{ name: 'no id', key: eventKey(IDLESS) },
			{ name: 'D', key: eventKey(D) },
		];
		const effects = await effectsPerKey(running, api);
		const keys = await storedKeys(running);
		const effectName = CALLS_API ? 'calls to your API' : 'business_log rows';
		console.log(`\n  Per event: n8n's executions (from n8n's database), ${effectName} and the stored key\n`);
		printTable(
			['event', 'key', 'requests', 'n8n executions', effectName, 'key status (attempts, duplicates)'],
			events.map((event) => {
				const stored = event.key ? keys[event.key] : null;
				const ran = event.key ? (perKey.get(event.key) ?? 0) : TRIGGER ? 0 : (perKey.get('forged') ?? 0);
				const effect = event.key ? (effects[event.key] ?? 0) : 0;
				if (event.key && effect !== 1) unexpected.push(`event ${event.name}: ${effect} ${effectName}, expected 1`);
				if (event.key && stored?.status !== 'completed')
					unexpected.push(`event ${event.name}: key ${stored?.status ?? 'missing'}, expected completed`);
				if (TRIGGER && ran !== (event.key ? 1 : 0))
					unexpected.push(`event ${event.name}: ${ran} executions, expected ${event.key ? 1 : 0}`);
				return [
					event.name,
					event.key ? short(event.key, 44) : '(none: refused before the key)',
					requests.get(event.name) ?? 0,
					ran,
					effect,
					stored ? `${stored.status} (${stored.attempts}, ${stored.duplicates})` : event.key ? 'missing' : 'nothing stored',
				];
			}),
		);
		const totalEffects = Object.values(effects).reduce((sum, n) => sum + n, 0);
		if (TRIGGER && executions.length !== events.filter((e) => e.key).length)
			unexpected.push(`${executions.length} executions in all, expected ${events.filter((e) => e.key).length}`);
		console.log(
			`\n  ${totalRequests} requests → ${executions.length} n8n executions, ${totalEffects} ${effectName}, ${Object.keys(keys).length} keys: ${
				TRIGGER
					? 'one execution per event; the trigger answered every copy and the forgery itself, without starting one.'
					: 'every request ran the workflow (its nodes answered the copies and the forgery); one effect per event. The trigger template answers those without an execution (npm run demo).'
			}`,
		);
		if (unexpected.length) throw new Error(`not what the template promises:\n    ${unexpected.join('\n    ')}`);

		if (once) {
			await shutdown(0);
			return;
		}
		const rest = stack.restClient(running.baseUrl);
		await rest.ownerLogin(OWNER);
		console.log(`
  n8n is running with ${TRIGGER ? `the quick start's workflow (templates/${path.basename(WEBHOOK_FILE)})` : 'the templates loaded (webhook, error workflow, daily cleanup)'}; Store: ${STORE_WORDS}:

    URL       ${running.baseUrl}
    login     ${OWNER.email}
    password  ${OWNER.password}      (a local demo account)

  Send your own delivery, signed like Stripe with the demo credential's test secret (unsigned → 401):
    secret=$(node -r ./test/support/register-ts.js -p "require('./test/support/stack/n8nStack').TEST_WEBHOOK_SECRET")
    body='{"id":"evt_mine","type":"test"}'; t=$(date +%s)
    v1=$(printf '%s' "$t.$body" | openssl dgst -sha256 -hmac "$secret" | sed 's/^.* //')
    curl -i -X POST ${url} -H 'content-type: application/json' -H "stripe-signature: t=$t,v1=$v1" -d "$body"

  n8n log: ${path.relative(process.cwd(), running.logFile)}   ·   Ctrl-C stops n8n and Postgres.
`);
	} catch (error) {
		console.error(`\n  demo failed: ${error instanceof Error ? error.message : String(error)}`);
		await shutdown(1);
	}
}

main().catch((error: unknown) => {
	console.error(`\n  demo failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
	stack.killEverythingNow();
	process.exit(1);
});
