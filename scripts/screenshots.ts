#!/usr/bin/env node
// Screenshots of what a user sees in the n8n editor: every template's canvas and every node's
// parameter panel, from a real n8n with the packed package (the e2e harness) and the machine's
// Chromium. Not run by CI: for a human to LOOK at after changing templates or descriptions.
//
//   node scripts/screenshots.js                 # PNGs in /tmp/editor-shots/
//   node scripts/screenshots.js --out DIR
//   node scripts/screenshots.js --keep          # stay up; `touch /tmp/editor-shots/.again` re-imports
//                                               # the templates and shoots again (Ctrl-C stops)
//   node scripts/screenshots.js --only replay   # only the templates (and showcase panels) whose file
//                                               # or node name contains the text
//   node scripts/screenshots.js --only trigger  # the trigger's template and panels, and the executions
//                                               # lists after a burst of copies
//   node scripts/screenshots.js --only publish-refusal  # the editor after Publish on the trigger's
//                                               # template with a Wait added: the trigger refuses it
//
// Besides every template (canvas, one crop per sticky note, each package node's panel), a generated
// "showcase" workflow holds the package's nodes set to what the templates do not use (Key Source
// Field with every option set, Claim for Replay, Mark Failed by execution, …): its canvas shows their
// subtitles, and each panel is shot with some of its dropdowns open (option descriptions).
// The log says per sticky note whether its text overflows the note, and per code block whether it fits.
//
// Needs playwright-core (PLAYWRIGHT_CORE, default /work/tools/node_modules/playwright-core) and a
// Chromium (CHROMIUM, default /usr/bin/chromium). Never downloads a browser.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as stack from '../test/support/stack/n8nStack';
import { startSink } from '../test/support/e2e/sink';
import { withWaitBeforeStep } from '../test/support/e2e/trigger';

// What this script uses of playwright-core, which is not a dependency of the package (see above).
interface Box {
	x: number;
	y: number;
	width: number;
	height: number;
}
interface Locator {
	first(): Locator;
	last(): Locator;
	nth(index: number): Locator;
	count(): Promise<number>;
	fill(value: string): Promise<void>;
	click(): Promise<void>;
	isVisible(): Promise<boolean>;
	boundingBox(): Promise<Box | null>;
	screenshot(options: { path: string }): Promise<unknown>;
}
interface Page {
	setDefaultTimeout(ms: number): void;
	setViewportSize(size: { width: number; height: number }): Promise<void>;
	goto(url: string): Promise<unknown>;
	waitForURL(predicate: (url: URL) => boolean, options?: { timeout?: number }): Promise<void>;
	waitForSelector(selector: string, options?: { timeout?: number }): Promise<unknown>;
	waitForTimeout(ms: number): Promise<void>;
	locator(selector: string): Locator;
	getByRole(role: string, options: { name: RegExp | string }): Locator;
	getByText(text: string, options: { exact: boolean }): Locator;
	screenshot(options: { path: string; scale?: 'css' | 'device'; clip?: Box }): Promise<unknown>;
	keyboard: { press(key: string): Promise<void> };
	$$eval<R>(selector: string, fn: (elements: BrowserElement[]) => R): Promise<R>;
}
interface Browser {
	newContext(options: {
		viewport: { width: number; height: number };
		deviceScaleFactor: number;
		baseURL: string;
	}): Promise<{ newPage(): Promise<Page> }>;
	close(): Promise<void>;
}
// The DOM, as the measuring function sees it in the browser (this project's types have no DOM).
interface BrowserElement {
	clientHeight: number;
	clientWidth: number;
	textContent: string;
	parentElement: BrowserElement | null;
	children: Iterable<BrowserElement>;
	getBoundingClientRect(): { top: number; bottom: number; height: number };
	querySelector(selector: string): BrowserElement | null;
	querySelectorAll(selector: string): Iterable<BrowserElement>;
}
declare const document: {
	createElement(tag: 'canvas'): { getContext(kind: '2d'): { font: string; measureText(text: string): { width: number } } };
};
declare function getComputedStyle(element: BrowserElement): { font: string; paddingLeft: string; paddingRight: string };

const args = process.argv.slice(2);
const OUT = path.resolve(args.includes('--out') ? args[args.indexOf('--out') + 1] : '/tmp/editor-shots');
// Loaded from where it is installed on this machine, at run time.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { chromium } = require(process.env.PLAYWRIGHT_CORE ?? '/work/tools/node_modules/playwright-core') as {
	chromium: { launch(options: { executablePath: string; args: string[] }): Promise<Browser> };
};
const OWNER = { email: 'shots@example.com', password: 'ShotsOwner123', firstName: 'Shots', lastName: 'Owner' };
const keep = args.includes('--keep');
const log = (line: string): void => {
	process.stdout.write(`  ${line}\n`);
};

const TEMPLATE_DIR = path.join(stack.REPO_ROOT, 'templates');
const readTemplates = (): Shot[] =>
	fs
		.readdirSync(TEMPLATE_DIR)
		.filter((f) => f.endsWith('.json'))
		.map((f) => ({
			file: f.replace(/\.json$/, ''),
			json: JSON.parse(fs.readFileSync(path.join(TEMPLATE_DIR, f), 'utf8')) as ShotWorkflow,
		}));
/** A workflow to shoot: its file name, its json and, for the showcase, the dropdowns shot open per node. */
interface ShotWorkflow {
	id: string;
	name?: string;
	nodes: Array<{ id: string; name: string; type: string; parameters: Record<string, unknown>; [field: string]: unknown }>;
	[field: string]: unknown;
}
interface Shot {
	file: string;
	json: ShotWorkflow;
	open?: Record<string, string[]>;
}
const OURS = /^(CUSTOM\.|n8n-nodes-idempotency\.)/;
// The trigger's template published, its business step calling an API of this process: the executions
// list after one event and a burst of its copies, beside today's webhook template given the same burst.
const BURST = { copies: 20 };
const BURST_FLOWS = [
	{
		file: 'idempotent-webhook-trigger',
		id: 'ShotsTrigger0001',
		name: 'Stripe events (Idempotent Webhook trigger)',
		path: 'shots-trigger',
		webhookId: '5c0e0000-0000-4000-8000-00000000b001',
		triggerType: 'n8n-nodes-idempotency.idempotentWebhook',
	},
	{
		file: 'idempotent-webhook-embedded',
		id: 'ShotsTemplate001',
		name: 'Stripe events (webhook template, Reserve and Settle)',
		path: 'shots-template',
		webhookId: '5c0e0000-0000-4000-8000-00000000b002',
		triggerType: 'n8n-nodes-base.webhook',
	},
];
function burstWorkflow(flow: (typeof BURST_FLOWS)[number], apiUrl: string): ShotWorkflow {
	const template = JSON.parse(fs.readFileSync(path.join(TEMPLATE_DIR, `${flow.file}.json`), 'utf8')) as ShotWorkflow;
	const nodes = template.nodes.map((node) => {
		if (node.type === flow.triggerType) return { ...node, webhookId: flow.webhookId, parameters: { ...node.parameters, path: flow.path } };
		if (node.name === 'Business Step (call your API)') return { ...node, parameters: { ...node.parameters, url: apiUrl } };
		return node;
	});
	return { ...template, id: flow.id, name: flow.name, nodes };
}
// The trigger's template with a Wait before its business step, as a user adds one: published from the
// editor, the trigger refuses it, and the editor says so.
const REFUSED_FLOW = { id: 'ShotsRefused0001', name: 'Stripe events, a Wait added (refused at publish)', path: 'shots-refused' };
function refusedWorkflow(): ShotWorkflow {
	const template = JSON.parse(fs.readFileSync(path.join(TEMPLATE_DIR, 'idempotent-webhook-trigger.json'), 'utf8')) as ShotWorkflow;
	return {
		...(withWaitBeforeStep(template as unknown as Parameters<typeof withWaitBeforeStep>[0]) as unknown as ShotWorkflow),
		id: REFUSED_FLOW.id,
		name: REFUSED_FLOW.name,
	};
}
const only = args.includes('--only') ? args[args.indexOf('--only') + 1].toLowerCase() : undefined;
const wanted = (...names: string[]): boolean => !only || names.some((name) => name.toLowerCase().includes(only));

// Panels the templates do not show: [node name, node type, parameters, parameters whose dropdown is
// shot open, node fields that differ from a version 1 node with the Postgres credential].
const SHOWCASE_PANELS: Array<
	[name: string, type: string, parameters: Record<string, unknown>, open: string[], node?: Record<string, unknown>]
> = [
	// A node added from the panel today: version 3, Store Automatic by default, no credential.
	[
		'Reserve, new node, Store Automatic',
		'idempotencyReserve',
		{ keySource: 'auto', mode: 'permanent', options: { tableName: 'processed_events' } },
		['store'],
		{ typeVersion: 3, credentials: undefined },
	],
	[
		'Reserve, new node, Store Postgres',
		'idempotencyReserve',
		{ store: 'postgres', keySource: 'auto', mode: 'permanent', options: { schemaName: 'public', tableName: 'processed_events' } },
		[],
		{ typeVersion: 3 },
	],
	[
		'Order Guard, new node, Store Automatic',
		'idempotencyOrderGuard',
		{ objectKey: '={{ $json.body.data.object.id }}', version: '={{ $json.body.created }}', options: {} },
		[],
		{ typeVersion: 3, credentials: undefined },
	],
	[
		'Reserve, Key Source Field, every option',
		'idempotencyReserve',
		{
			keySource: 'field',
			keyField: 'body.data.object.id',
			keyPrefix: 'stripe:',
			mode: 'lease',
			leaseSeconds: 300,
			options: {
				output: 'full',
				storePayload: true,
				maxPayloadKb: 256,
				source: 'stripe',
				correlationId: 'header',
				correlationHeader: 'X-Request-ID',
				scope: 'billing',
				payloadFingerprint: 'flag',
				manualRuns: 'testScope',
				onStoreUnavailable: 'fail',
				onMissingKey: 'error',
				retentionDays: 30,
			},
		},
		['keySource', 'correlationId', 'output', 'onStoreUnavailable'],
	],
	[
		'Reserve, Provider Preset',
		'idempotencyReserve',
		{ keySource: 'preset', preset: 'github', mode: 'permanent', options: {} },
		['preset', 'mode'],
	],
	['Key, Claim for Replay', 'idempotencyKey', { operation: 'claimForReplay', replayKey: '={{ $json.key }}', options: {} }, ['operation']],
	['Key, Mark Failed, Failed Execution', 'idempotencyKey', { operation: 'fail', source: 'execution', options: {} }, ['source']],
	['Key, Mark Failed, Reserve (Paired Item)', 'idempotencyKey', { operation: 'fail', source: 'reserveNode', options: {} }, []],
	['Key, Release, Failed Execution', 'idempotencyKey', { operation: 'release', source: 'execution', options: {} }, []],
	['Key, Complete, Reserve (Paired Item)', 'idempotencyKey', { operation: 'complete', source: 'reserveNode', options: {} }, ['source']],
	[
		'Key, List Keys, Replayable',
		'idempotencyKey',
		{ operation: 'listKeys', listFilters: { status: 'replayable', stuckLeasesOnly: false, olderThanHours: 1 }, options: {} },
		['status'],
	],
	['Key, Get Key', 'idempotencyKey', { operation: 'getKey', lookupKey: 'stripe:evt_1', options: {} }, []],
	// The trigger (a new node: version 3) with what a user changes first: the caller check, the key source, the store.
	[
		'Idempotent Webhook trigger, Header Auth, Scope',
		'idempotentWebhook',
		{
			httpMethod: 'POST',
			path: 'stripe-events',
			authentication: 'headerAuth',
			scheme: 'stripe',
			toleranceSeconds: 300,
			keySource: 'auto',
			leaseSeconds: 300,
			options: { scope: 'billing' },
		},
		['authentication', 'scheme', 'keySource', 'store'],
		{
			typeVersion: 3,
			webhookId: '5c0e0000-0000-4000-8000-00000000a001',
			credentials: { webhookSignatureApi: { id: 'webhookSig01', name: 'Webhook Signature Secret' } },
		},
	],
	// Respond: At Once, with what it keeps and retries (a new trigger: the node panel's version).
	[
		'Idempotent Webhook trigger, Respond At Once',
		'idempotentWebhook',
		{
			httpMethod: 'POST',
			path: 'slack-events',
			scheme: 'slack',
			store: 'embedded',
			respond: 'atOnce',
			options: {},
		},
		['respond'],
		{
			typeVersion: 3,
			webhookId: '5c0e0000-0000-4000-8000-00000000a002',
			credentials: { webhookSignatureApi: { id: 'webhookSig01', name: 'Webhook Signature Secret' } },
		},
	],
	[
		'Execute Query, Key Source Field, options',
		'idempotencyExecuteQuery',
		{
			keySource: 'field',
			keyField: 'body.id',
			keyPrefix: 'evt:',
			query: 'insert into payments (event_key) values ($1)',
			queryParameters: '={{ [$json.idempotency.key] }}',
			options: { scope: 'billing', retentionDays: 30, onMissingKey: 'error' },
		},
		[],
	],
];
const CREDENTIAL = { idempotencyPostgresApi: { id: 'idempotencyPg01', name: 'Idempotency Postgres' } };
const SHOWCASE: Shot = {
	file: 'showcase',
	json: {
		id: 'IdemShowcase0001',
		name: 'Showcase: panels the templates do not show (screenshots.js)',
		settings: { executionOrder: 'v1' },
		connections: {},
		nodes: SHOWCASE_PANELS.map(([name, type, parameters, , node = {}], index) => ({
			id: `5c0e0000-0000-4000-8000-${String(index).padStart(12, '0')}`,
			name,
			type: `n8n-nodes-idempotency.${type}`,
			typeVersion: 1,
			position: [(index % 5) * 320, Math.floor(index / 5) * 300],
			parameters,
			credentials: CREDENTIAL,
			...node,
		})),
	},
	open: Object.fromEntries(SHOWCASE_PANELS.map(([name, , , open]) => [name, open])),
};

async function main(): Promise<void> {
	fs.mkdirSync(OUT, { recursive: true });
	const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'editor-shots-stack-'));
	const burst = wanted('executions', 'trigger');
	const refusal = wanted('publish-refusal');
	const api = burst ? await startSink() : null;
	const running = await stack.startStack({
		workDir,
		pgDir: path.join(workDir, 'pg'),
		dbNames: { n8n: 'n8n_shots', app: 'idempotency_shots' },
		encryptionKey: 'n8n-nodes-idempotency-shots-key',
		credentials: stack.templateCredentials,
		workflows: [
			...[...readTemplates(), SHOWCASE].map(({ json }) => ({ json, publish: false })),
			...(api ? BURST_FLOWS.map((flow) => ({ json: burstWorkflow(flow, api.url), publish: true })) : []),
			...(refusal ? [{ json: refusedWorkflow(), publish: false }] : []),
		],
		readyWebhooks: burst ? BURST_FLOWS.map((flow) => flow.path) : [],
		log,
	});
	const browser = await chromium.launch({
		executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
		args: [
			'--headless',
			'--no-sandbox',
			'--disable-gpu',
			'--disable-quic',
			'--no-first-run',
			'--disable-background-networking',
			'--disable-component-update',
			'--disable-sync',
		],
	});
	try {
		await stack.restClient(running.baseUrl).ownerLogin(OWNER); // creates the owner
		// Device scale 2: the sticky-note crops stay readable at the canvas' zoom-to-fit; full shots are taken at scale 'css'.
		const context = await browser.newContext({ viewport: CANVAS_VIEWPORT, deviceScaleFactor: 2, baseURL: running.baseUrl });
		const page = await context.newPage();
		// The editor loads slowly on a busy machine.
		page.setDefaultTimeout(120_000);
		// Signed in through the form: n8n binds its session cookie to the browser's own browser-id.
		await page.goto('/signin');
		await page.locator('input[type="email"], input[name="emailOrLdapLoginId"]').first().fill(OWNER.email);
		await page.locator('input[type="password"]').first().fill(OWNER.password);
		await page.getByRole('button', { name: /sign in/i }).click();
		await page.waitForURL((url) => !url.pathname.startsWith('/signin'), { timeout: 60_000 });
		try {
			await shootAll(page);
			if (burst) await shootExecutionsAfterBurst(page, running);
			if (refusal) await shootPublishRefusal(page);
		} catch (error) {
			await page.screenshot({ path: path.join(OUT, 'failure.png') });
			throw error;
		}
		while (keep) {
			const again = path.join(OUT, '.again');
			if (!fs.existsSync(again)) {
				await stack.sleep(1000);
				continue;
			}
			fs.rmSync(again);
			const importDir = path.join(workDir, 'again');
			fs.rmSync(importDir, { recursive: true, force: true });
			fs.mkdirSync(importDir);
			for (const { json } of [...readTemplates(), SHOWCASE])
				fs.writeFileSync(path.join(importDir, `${json.id}.json`), JSON.stringify(json));
			await running.cli(['import:workflow', '--separate', `--input=${importDir}`]);
			await shootAll(page);
		}
	} finally {
		await browser.close();
		await running.stop();
		await api?.close();
		fs.rmSync(workDir, { recursive: true, force: true });
	}
}

const CANVAS_VIEWPORT = { width: 1920, height: 1080 };
// Tall enough for the longest parameter list without scrolling the panel.
const PANEL_VIEWPORT = { width: 1920, height: 2000 };

async function shootAll(page: Page): Promise<void> {
	for (const { file, json, open } of [...readTemplates(), SHOWCASE]) {
		const panels = json.nodes.filter((n) => OURS.test(n.type) && wanted(file, n.name));
		if (!wanted(file) && panels.length === 0) continue;
		await page.setViewportSize(CANVAS_VIEWPORT);
		await page.goto(`/workflow/${json.id}`);
		await page.waitForSelector('[data-test-id="canvas-node"]', { timeout: 60_000 });
		await page.waitForTimeout(1500);
		// Fit the whole workflow (n8n's "zoom to fit" shortcut is "1").
		await page.keyboard.press('1');
		await page.waitForTimeout(800);
		await measureNotes(page, file);
		const shot = path.join(OUT, `template-${file}.png`);
		await page.screenshot({ path: shot, scale: 'css' });
		log(shot);
		const stickies = page.locator('[data-test-id="sticky"]');
		for (let i = 0; i < (await stickies.count()); i++) {
			const crop = path.join(OUT, `note-${file}--${i + 1}.png`);
			await stickies.nth(i).screenshot({ path: crop });
			log(crop);
		}
		await page.setViewportSize(PANEL_VIEWPORT);
		for (const node of panels) {
			await page.goto(`/workflow/${json.id}/${node.id}`);
			await page.waitForSelector('[data-test-id="ndv"]', { timeout: 60_000 }).catch(() => undefined);
			await page.waitForTimeout(1200);
			const safe = node.name.replace(/[^A-Za-z0-9]+/g, '-').replace(/^-|-$/g, '');
			const panel = path.join(OUT, `node-${file}--${safe}.png`);
			await page.screenshot({ path: panel, scale: 'css' });
			log(panel);
			for (const parameter of open?.[node.name] ?? []) {
				// A dropdown's options with their descriptions, as a user reads them before choosing.
				const select = page.locator(`[data-test-id="parameter-input-${parameter}"]`).first();
				await select.click();
				await page.waitForTimeout(600);
				const dropdown = path.join(OUT, `node-${file}--${safe}--${parameter}-open.png`);
				// Cropped to the parameter column and the open list, at device scale: readable when viewed.
				const column = await page.locator('[data-test-id="node-parameters"]').first().boundingBox();
				const list = await page
					.locator('.el-select-dropdown:visible, .el-popper:visible')
					.last()
					.boundingBox()
					.catch(() => null);
				const bottom = Math.max(column ? column.y + 200 : 0, list ? list.y + list.height + 20 : 0);
				const clip = column
					? {
							x: Math.max(0, column.x - 10),
							y: 0,
							width: Math.max(column.width, list ? list.x + list.width - column.x : 0) + 20,
							height: Math.min(PANEL_VIEWPORT.height, bottom),
						}
					: undefined;
				await page.screenshot({ path: dropdown, clip });
				log(dropdown);
				await page.keyboard.press('Escape');
				await page.waitForTimeout(300);
			}
		}
	}
	log('done');
}

/**
 * One Stripe event, then BURST.copies copies of it signed anew (a provider retrying), into each
 * published flow; then each workflow's executions list as a user opens it.
 */
async function shootExecutionsAfterBurst(page: Page, running: stack.Stack): Promise<void> {
	for (const flow of BURST_FLOWS) {
		const url = running.webhookUrl(flow.path);
		const event = {
			id: `evt_shots_${flow.path.replace(/-/g, '_')}_${Date.now()}`,
			object: 'event',
			type: 'invoice.paid',
			data: { object: { id: 'in_1QabcDEF', amount_paid: 3600 } },
		};
		const answers = [await stack.deliver(url, event)];
		for (let i = 0; i < BURST.copies; i++) answers.push(await stack.deliver(url, event));
		const tally = answers.reduce<Record<string, number>>(
			(counts, a) => ({ ...counts, [`${a.status} ${a.outcome}`]: (counts[`${a.status} ${a.outcome}`] ?? 0) + 1 }),
			{},
		);
		const executions = await stack.withClient(
			running.n8nDbUrl,
			async (client) =>
				(await client.query<{ n: number }>('SELECT count(*)::int AS n FROM execution_entity WHERE "workflowId" = $1', [flow.id])).rows[0].n,
		);
		log(`${flow.file}: ${answers.length} deliveries answered ${JSON.stringify(tally)}; ${executions} execution(s) in n8n's database`);
		await page.setViewportSize({ width: 1280, height: 800 });
		await page.goto(`/workflow/${flow.id}/executions`);
		await page.waitForTimeout(4000);
		await closeChecklist(page);
		const shot = path.join(OUT, `executions-${flow.file}.png`);
		await page.screenshot({ path: shot, scale: 'css' });
		log(shot);
	}
}

/**
 * Publishes the workflow with a Wait after the trigger from the editor, as a user does (Publish, then
 * Publish in the dialog), and shoots what the editor shows once n8n has tried to activate it.
 */
async function shootPublishRefusal(page: Page): Promise<void> {
	await page.setViewportSize({ width: 1440, height: 900 });
	await page.goto(`/workflow/${REFUSED_FLOW.id}`);
	await page.waitForSelector('[data-test-id="canvas-node"]', { timeout: 60_000 });
	await page.waitForTimeout(1500);
	await page.keyboard.press('1');
	await page.locator('[data-test-id="workflow-open-publish-modal-button"]').first().click();
	await page.waitForTimeout(1000);
	await page.screenshot({ path: path.join(OUT, 'publish-refusal-dialog.png'), scale: 'css' });
	await page.locator('[data-test-id="workflow-publish-button"]').first().click();
	// n8n 2.x publishes in the background; the editor hears of the refusal when it has tried.
	await page.waitForTimeout(20_000);
	const shot = path.join(OUT, 'publish-refusal.png');
	await page.screenshot({ path: shot, scale: 'css' });
	log(shot);
}

/**
 * n8n 2.x opens a "Production Checklist" over a published workflow's executions; a click outside it
 * closes it (on the word "Executions", which opens nothing else), as a user would.
 */
async function closeChecklist(page: Page): Promise<void> {
	const title = page.getByText('Production Checklist', { exact: true });
	if (!(await title.isVisible().catch(() => false))) return;
	await page
		.getByText('Executions', { exact: true })
		.first()
		.click()
		.catch(() => undefined);
	await page.waitForTimeout(500);
	if (await title.isVisible().catch(() => false)) log('the Production Checklist would not close: it covers part of the shot');
}

/** Per sticky note: does its text fit the note (n8n hides what overflows), and does each code line fit its block? */
async function measureNotes(page: Page, file: string): Promise<void> {
	const notes = await page.$$eval('[data-test-id="sticky"]', (stickies) =>
		stickies.map((sticky) => {
			// Layout px are canvas px: the canvas zooms with a CSS transform (scale: screen px per canvas px).
			const box = sticky.getBoundingClientRect();
			const scale = box.height / sticky.clientHeight;
			// The rendered markdown's blocks: where the last one ends, whether or not the note shows it.
			const blocks = [...(sticky.querySelector('p, h1, h2, h3, ul, pre')?.parentElement?.children ?? [])];
			const bottom = Math.max(0, ...blocks.map((block) => block.getBoundingClientRect().bottom));
			const used = Math.round((bottom - box.top) / scale);
			const heading = sticky.querySelector('h1, h2, h3')?.textContent ?? sticky.textContent.slice(0, 40);
			const code = [...sticky.querySelectorAll('pre')].map((pre) => {
				const line = pre.textContent.split('\n').reduce((a, b) => (b.length > a.length ? b : a), '');
				const style = getComputedStyle(pre);
				const context = document.createElement('canvas').getContext('2d');
				context.font = style.font;
				const inner = pre.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
				return {
					chars: line.length,
					text: context.measureText(line).width,
					inner,
					charWidth: context.measureText('x'.repeat(100)).width / 100,
				};
			});
			return { heading, box: sticky.clientHeight, used, code };
		}),
	);
	for (const note of notes) {
		const room = note.box - note.used;
		log(
			`${file}: note "${note.heading.trim()}": text ${room < 0 ? `OVERFLOWS by ${-room}` : `fits, ${room}`} px (text ${note.used} px in ${note.box} px)`,
		);
		for (const b of note.code) {
			log(
				`${file}:   code ${b.text > b.inner ? 'CLIPPED' : 'fits'}: ${b.chars} chars = ${b.text.toFixed(0)} px in ${b.inner.toFixed(0)} px (${b.charWidth.toFixed(2)} px/char)`,
			);
		}
	}
}

main().catch((error) => {
	console.error(error);
	process.exit(1);
});
