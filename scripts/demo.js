#!/usr/bin/env node
// `npm run demo`: a real n8n with this package installed as a community package, the templates
// imported, and the seed recipe's experiment replayed against the webhook template: by default the
// zero-setup one (templates/idempotent-webhook-embedded.json: Store Embedded, its business step a
// call to "your API", a small HTTP server the demo runs on 127.0.0.1 and counts), or with
// `--store postgres` templates/idempotent-webhook.json (keys and business rows in Postgres).
// The demo acts as Stripe: it signs every delivery with the demo credential's test secret
// (stack.TEST_WEBHOOK_SECRET), and sends one forged delivery that the template answers 401.
// Prints what happened, then leaves n8n running until Ctrl-C (`--once` exits after the table).
//
//   npm run demo                         # Store: Embedded; keep n8n running (http://127.0.0.1:5678)
//   npm run demo -- --store postgres     # the same with the keys in Postgres
//   npm run demo -- --once               # exit after the table
//   npm run demo -- --port 5679          # another port
//
// State lives in .demo/ (gitignored): an embedded Postgres data dir (n8n's own database, and the
// demo's idempotency database for --store postgres), n8n's user folder with the installed package
// and the embedded key file. Each run starts from empty keys. Delete .demo/ to start from scratch.
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const http = require('node:http');
const stack = require('../test/support/stack/n8nStack');
const { freePort } = require('../test/support/stack/postgresServer');
const { embeddedStoreFile, readEmbeddedStore } = require('../test/support/stack/embeddedStore');

const args = process.argv.slice(2);
const once = args.includes('--once');
const portArg = args.includes('--port') ? Number(args[args.indexOf('--port') + 1]) : undefined;
const STORE = args.includes('--store') ? args[args.indexOf('--store') + 1] : 'embedded';
if (!['embedded', 'postgres'].includes(STORE)) {
	console.error(`--store must be embedded or postgres, not ${STORE}`);
	process.exit(2);
}
const EMBEDDED = STORE === 'embedded';
const DEMO_DIR = path.join(stack.REPO_ROOT, '.demo');
const OWNER = { email: 'demo@example.com', password: 'DemoOwner123', firstName: 'Demo', lastName: 'Owner' };
const TEMPLATE_FILES = EMBEDDED
	? { webhook: stack.TEMPLATES.webhookEmbedded, error: stack.TEMPLATES.errorEmbedded, cleanup: stack.TEMPLATES.cleanupEmbedded }
	: { webhook: stack.TEMPLATES.webhook, error: stack.TEMPLATES.error, cleanup: stack.TEMPLATES.cleanup };
const readJson = (file) => JSON.parse(fs.readFileSync(file, 'utf8'));
const IDS = Object.fromEntries(Object.entries(TEMPLATE_FILES).map(([name, file]) => [name, readJson(file).id]));
const WEBHOOK_PATH = readJson(TEMPLATE_FILES.webhook).nodes.find((node) => node.type === 'n8n-nodes-base.webhook').parameters.path;
const API_STEP = 'Business Step (call your API)';

const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)}s`;
const log = (line) => process.stdout.write(`  [${elapsed()}] ${line}\n`);

function portIsFree(port) {
	return new Promise((resolve) => {
		const server = net.createServer();
		server.once('error', () => resolve(false));
		server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
	});
}

function pad(text, width) {
	const s = String(text);
	return s.length > width ? `${s.slice(0, width - 1)}…` : s.padEnd(width);
}

function printTable(headers, rows) {
	const widths = headers.map((h, i) => Math.min(60, Math.max(h.length, ...rows.map((r) => String(r[i]).length))));
	const line = (cells) => `  ${cells.map((c, i) => pad(c, widths[i])).join('  │  ')}`;
	console.log(line(headers));
	console.log(`  ${widths.map((w) => '─'.repeat(w)).join('──┼──')}`);
	for (const row of rows) console.log(line(row));
}

/**
 * The webhook template, with the error-workflow template set as its Error Workflow; the embedded
 * one with its business step pointed at the demo's API (the one change its notes ask for).
 */
function webhookWorkflow(apiUrl) {
	const wf = readJson(TEMPLATE_FILES.webhook);
	if (apiUrl) wf.nodes = wf.nodes.map((node) => (node.name === API_STEP ? { ...node, parameters: { ...node.parameters, url: apiUrl } } : node));
	return { ...wf, settings: { ...wf.settings, errorWorkflow: IDS.error } };
}

/** "Your API" for the embedded template's business step: answers 200 and counts the calls per event key. */
async function startDemoApi() {
	const calls = [];
	const server = http.createServer((req, res) => {
		let body = '';
		req.on('data', (chunk) => (body += chunk));
		req.on('end', () => {
			let eventKey = null;
			try {
				eventKey = JSON.parse(body).eventKey ?? null;
			} catch {}
			calls.push({ eventKey, idempotencyKey: req.headers['idempotency-key'] ?? null, at: new Date() });
			res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true }));
		});
	});
	await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
	return { url: `http://127.0.0.1:${server.address().port}/events`, calls, close: () => new Promise((resolve) => server.close(resolve)) };
}

const BRANCH = ['New → business step, then Settle → 200', 'Duplicate → replay stored answer', 'In Progress → 409'];
const INVALID_BRANCH = 'Invalid signature → 401, nothing reserved';

async function main() {
	console.log(
		EMBEDDED
			? "\nn8n-nodes-idempotency demo, Store: Embedded: a real n8n 2.x, this package installed as a community package, the keys in a file on n8n's host (no database of yours; `--store postgres` for Postgres)."
			: '\nn8n-nodes-idempotency demo, Store: Postgres: a real n8n 2.x, this package installed as a community package, real Postgres.',
	);
	console.log(fs.existsSync(path.join(DEMO_DIR, 'pg', 'PG_VERSION')) ? '  (reusing .demo/)' : '  First run: installs n8n (cached, ~5 min and 2.8 GB the first time on this machine) and sets up .demo/.');
	fs.mkdirSync(DEMO_DIR, { recursive: true });
	const port = portArg ?? ((await portIsFree(5678)) ? 5678 : await freePort());

	let running = null;
	let stopping = false;
	const api = EMBEDDED ? await startDemoApi() : null;
	const shutdown = async (code) => {
		if (stopping) return;
		stopping = true;
		console.log('\n  stopping n8n and Postgres…');
		await api?.close();
		if (running) await running.stop();
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
		handleSignals: false, // Ctrl-C is handled below: a graceful stop of n8n, then Postgres
		setupSql: async (client, ctx) => {
			if (EMBEDDED) {
				// The key file of the demo's n8n folder, emptied for a clean replay (n8n is not running yet).
				const keyFolder = path.dirname(embeddedStoreFile(path.join(DEMO_DIR, 'n8n-user')));
				fs.rmSync(keyFolder, { recursive: true, force: true });
				log(`embedded key file emptied for a clean replay (${path.relative(stack.REPO_ROOT, keyFolder)}); no table to create`);
				return;
			}
			const ddl = await stack.prepareTemplateTables(client, ctx, { reset: true });
			log(`tables ready (${path.relative(stack.REPO_ROOT, ddl)} + business_log), emptied for a clean replay`);
		},
		credentials: EMBEDDED ? stack.signatureCredentials : stack.templateCredentials,
		workflows: [
			{ json: webhookWorkflow(api?.url), publish: true },
			{ file: TEMPLATE_FILES.error, publish: true },
			{ file: TEMPLATE_FILES.cleanup, publish: true },
		],
		readyWebhooks: [WEBHOOK_PATH],
		log,
	});

	try {
		const url = running.webhookUrl(WEBHOOK_PATH);
		const mark = await stack.maxExecutionId(running.n8nDbUrl);
		// Signed like Stripe (Stripe-Signature: t=…,v1=HMAC-SHA256) with the demo credential's secret;
		// the retry of A gets a new timestamp, hence a different but valid signature.
		const now = Math.floor(Date.now() / 1000);
		const deliveries = [
			{ label: 'event A', body: { id: 'evt_demo_A', type: 'payment_intent.succeeded' }, sign: { timestamp: now - 60 }, expect: '200 new' },
			{ label: 'event A again, new stripe-signature', body: { id: 'evt_demo_A', type: 'payment_intent.succeeded' }, sign: { timestamp: now }, expect: '200 duplicate' },
			{ label: 'event B', body: { id: 'evt_demo_B', type: 'invoice.paid' }, expect: '200 new' },
			{ label: 'event C, forged (wrong secret)', body: { id: 'evt_demo_C', type: 'charge.refunded' }, sign: { secret: 'whsec_not_the_endpoint_secret' }, expect: '401 invalid_signature' },
			{ label: 'event C, genuine', body: { id: 'evt_demo_C', type: 'charge.refunded' }, expect: '200 new' },
			{ label: 'body without id', body: '{"type":"ping","note":"no id here"}', expect: '200 new' },
			{ label: 'same body without id again', body: '{"type":"ping","note":"no id here"}', expect: '200 duplicate' },
		];
		console.log(`\n  Replaying the seed experiment, signed like Stripe, plus one forgery: POST ${url}\n`);
		const answers = [];
		for (const delivery of deliveries) answers.push(await stack.deliver(url, delivery.body, {}, delivery.sign ?? {}));
		const executions = await stack.waitForExecutions(
			{ n8nDbUrl: running.n8nDbUrl, n8nDir: running.n8nDir, workflowId: IDS.webhook, sinceId: mark },
			deliveries.length,
		);
		const rows = deliveries.map((delivery, i) => {
			const execution = executions[i];
			const verify = execution?.runData['Webhook Signature Verify']?.[0]?.data?.main ?? [];
			const invalid = (verify[1]?.length ?? 0) > 0;
			const reserve = execution?.runData['Idempotency Reserve']?.[0]?.data?.main ?? [];
			const output = reserve.findIndex((items) => items?.length);
			const key = reserve[output]?.[0]?.json?.idempotency?.key ?? '';
			const answer = answers[i];
			const reason = answer.status === 401 && answer.json?.reason ? ` (${answer.json.reason})` : '';
			const signature = answer.signature?.match(/^t=(\d+),v1=([0-9a-f]{8})/);
			return [
				`${i + 1}. ${delivery.label}`,
				signature ? `t=${signature[1]} v1=${signature[2]}…` : '-',
				`${answer.status} ${answer.outcome ?? ''}${reason}`.trim(),
				invalid ? INVALID_BRANCH : (BRANCH[output] ?? execution?.status ?? '?'),
				execution ? `#${execution.id}` : '-',
				key.length > 24 ? `${key.slice(0, 23)}…` : key,
			];
		});
		printTable(['delivery', 'stripe-signature', 'HTTP answer', 'branch taken', 'execution', 'key'], rows);
		const unexpected = deliveries.filter((delivery, i) => `${answers[i].status} ${answers[i].outcome}` !== delivery.expect);
		if (unexpected.length) {
			throw new Error(`unexpected answers for: ${unexpected.map((d) => `${d.label} (expected ${d.expect})`).join('; ')}`);
		}
		console.log('\n  Every answer as expected: the forged delivery was refused before the reservation, so the genuine event C still counted as new.');

		const short = (text) => (text && text.length > 40 ? `${text.slice(0, 39)}…` : (text ?? ''));
		if (EMBEDDED) {
			console.log(`\n  your API (${api.url}): ${api.calls.length} call(s) from ${deliveries.length} deliveries\n`);
			printTable(
				['#', 'eventKey', 'Idempotency-Key header', 'at'],
				api.calls.map((call, i) => [i + 1, short(call.eventKey), short(call.idempotencyKey), call.at.toISOString()]),
			);
			const file = embeddedStoreFile(running.userFolder);
			const page = await readEmbeddedStore({ nodeBin: running.nodeBin, packageDir: running.packageDir, file, op: 'listKeys', arg: '100' });
			console.log(`\n  the embedded store (${path.relative(stack.REPO_ROOT, file)}):\n`);
			printTable(
				['key', 'status', 'attempts', 'duplicates'],
				(page?.keys ?? []).map((r) => [short(r.key), r.status, r.attempts, r.duplicateCount]),
			);
		} else {
			const business = await stack.withClient(running.appUrl, (client) =>
				client.query('SELECT id, event_key, event_type, created_at FROM business_log ORDER BY id'),
			);
			console.log(`\n  business_log: ${business.rowCount} row(s) from ${deliveries.length} deliveries\n`);
			printTable(
				['id', 'event_key', 'event_type', 'created_at'],
				business.rows.map((r) => [r.id, short(r.event_key), r.event_type ?? '', r.created_at.toISOString()]),
			);
			const keys = await stack.withClient(running.appUrl, (client) =>
				client.query('SELECT key, status, attempts, duplicate_count FROM processed_events ORDER BY first_seen'),
			);
			console.log('\n  processed_events:\n');
			printTable(
				['key', 'status', 'attempts', 'duplicates'],
				keys.rows.map((r) => [short(r.key), r.status, r.attempts, r.duplicate_count]),
			);
		}

		if (once) {
			await shutdown(0);
			return;
		}
		const rest = stack.restClient(running.baseUrl);
		await rest.ownerLogin(OWNER);
		console.log(`
  n8n is running with the templates loaded (Idempotent webhook, error workflow, daily cleanup; Store: ${EMBEDDED ? 'Embedded' : 'Postgres'}):

    URL       ${running.baseUrl}
    login     ${OWNER.email}
    password  ${OWNER.password}      (a local demo account)

  Send your own delivery, signed like Stripe with the demo credential's test secret (unsigned → 401):
    secret=$(node -p "require('./test/support/stack/n8nStack').TEST_WEBHOOK_SECRET")
    body='{"id":"evt_mine","type":"test"}'; t=$(date +%s)
    v1=$(printf '%s' "$t.$body" | openssl dgst -sha256 -hmac "$secret" | sed 's/^.* //')
    curl -i -X POST ${url} -H 'content-type: application/json' -H "stripe-signature: t=$t,v1=$v1" -d "$body"

  n8n log: ${path.relative(process.cwd(), running.logFile)}   ·   Ctrl-C stops n8n and Postgres.
`);
	} catch (error) {
		console.error(`\n  demo failed: ${error.message}`);
		await shutdown(1);
	}
}

main().catch((error) => {
	console.error(`\n  demo failed: ${error.stack ?? error.message}`);
	stack.killEverythingNow();
	process.exit(1);
});
