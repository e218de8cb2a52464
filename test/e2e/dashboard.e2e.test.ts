// The dashboard template in a real n8n, read in a real browser (the machine's Chromium, driven by
// playwright-core; never a downloaded browser), on both stores: the embedded file
// (templates/idempotency-dashboard.json beside idempotent-webhook-trigger.json) and Postgres with a
// credential (the -postgres templates). For each, the test sends a known number of deliveries of
// each kind to two copies of the trigger template (one answering When the Workflow Ends, one At Once
// whose failed events are dead-lettered), opens the page, checks each figure moved by exactly what it
// sent, clicks Replay on a dead letter and sees it completed with one effect at its API, then clicks
// Replay all on a page of three dead letters, one of which a replay completed meanwhile: the two
// others run once each, the completed one not again. Unauthenticated requests are refused.
// Every package node of a store's workflows uses a table of this run's own, as a user whose webhook
// workflow sets Options → Table Name does: the page lists this test's keys only. Screenshots of the
// embedded store's page at desktop and phone width go to DASHBOARD_SCREENSHOTS (docs/images).
// e2e-tags: single
import { ensureChromium } from '../support/stack/browser';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { harness, eventId, type DeliveryAnswer, type Harness } from '../support/e2e/harness';
import { publishTrigger, triggerBase, triggerKey, TRIGGER } from '../support/e2e/trigger';
import { startSink, type Sink } from '../support/e2e/sink';
import { eventually } from '../support/e2e/eventually';
import { storedKeys } from '../support/e2e/embedded';
import { createCredential, freshWebhookPath, publishWorkflow, readShippedTemplate } from '../support/e2e/restWorkflows';
import type { NodeChange } from '../support/e2e/workflows';
import * as stack from '../support/stack/n8nStack';

const USER = 'ops';
const PASSWORD = `dashboard-${randomUUID()}`;
// The README's screenshots are refreshed with DASHBOARD_SCREENSHOTS=docs/images; a plain run leaves the repository as it is.
const SCREENSHOTS = process.env.DASHBOARD_SCREENSHOTS ?? fs.mkdtempSync(path.join(os.tmpdir(), 'dashboard-shots-'));

// The figures the page shows, by their data-figure names (docs/dashboard.md).
const ANSWER_FIGURES = ['new', 'duplicate', 'in_progress', 'forged', 'refused', 'store_unavailable'] as const;
type Figures = Record<string, number>;

// What this file uses of playwright-core (a dev dependency: it never downloads a browser).
interface Page {
	goto(url: string): Promise<{ status(): number } | null>;
	screenshot(options: { path: string; fullPage?: boolean }): Promise<unknown>;
	content(): Promise<string>;
	waitForURL(predicate: (url: URL) => boolean): Promise<void>;
	$$eval<R>(
		selector: string,
		fn: (elements: Array<{ getAttribute(name: string): string | null; textContent: string | null }>) => R,
	): Promise<R>;
	locator(selector: string): {
		click(): Promise<void>;
		count(): Promise<number>;
		textContent(): Promise<string | null>;
		getAttribute(name: string): Promise<string | null>;
	};
}
interface Browser {
	newContext(options: { viewport: { width: number; height: number }; httpCredentials?: { username: string; password: string } }): Promise<{
		newPage(): Promise<Page>;
		close(): Promise<void>;
	}>;
	close(): Promise<void>;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { chromium } = require(process.env.PLAYWRIGHT_CORE ?? 'playwright-core') as {
	chromium: { launch(options: { executablePath: string; args: string[] }): Promise<Browser> };
};

/** A key as the test reads it from the store, whichever store it is. */
interface StoredKey {
	status: string;
	attempts: number;
	deadLettered: boolean;
}
type KeyReader = (h: Harness, table: string, keys: string[]) => Promise<Record<string, StoredKey | undefined>>;

const readEmbeddedKeys: KeyReader = async (h, table, keys) => {
	const records = await storedKeys(h, keys, { table });
	return Object.fromEntries(
		Object.values(records).map((record) => [
			record.key,
			{ status: record.status, attempts: record.attempts, deadLettered: Boolean(record.deadLetteredAt) },
		]),
	);
};

const readPostgresKeys: KeyReader = async (h, table, keys) => {
	const { rows } = await h.appQuery(`SELECT key, status, attempts, dead_lettered_at FROM public."${table}" WHERE key = ANY($1)`, [keys]);
	return Object.fromEntries(
		rows.map((row) => [row.key, { status: row.status, attempts: Number(row.attempts), deadLettered: row.dead_lettered_at !== null }]),
	);
};

const STORES = [
	{
		store: 'embedded',
		triggerTemplate: 'idempotent-webhook-trigger.json',
		dashboardTemplate: 'idempotency-dashboard.json',
		readKeys: readEmbeddedKeys,
		screenshots: true,
	},
	{
		store: 'Postgres',
		triggerTemplate: 'idempotent-webhook-trigger-postgres.json',
		dashboardTemplate: 'idempotency-dashboard-postgres.json',
		readKeys: readPostgresKeys,
		screenshots: false,
	},
];

/** The trigger at version 2 answering At Once, one run only: a failed event is dead-lettered at once. */
const atOnceOneRun: NodeChange = (node) =>
	node.type === TRIGGER.type
		? {
				...node,
				typeVersion: 2,
				parameters: { ...node.parameters, respond: 'atOnce', maxAttempts: 1, firstRetrySeconds: 1 },
			}
		: node;

/** Every package node keeping its keys in `table` (Options → Table Name). */
const inTable =
	(table: string): NodeChange =>
	(node) =>
		node.type.startsWith('n8n-nodes-idempotency.')
			? { ...node, parameters: { ...node.parameters, options: { ...((node.parameters.options as object) ?? {}), tableName: table } } }
			: node;

const both =
	(...changes: NodeChange[]): NodeChange =>
	(node) =>
		changes.reduce((changed, change) => change(changed), node);

let browser: Browser;
beforeAll(async () => {
	// A clean machine installs Debian's Chromium first (apt: minutes of download).
	browser = await chromium.launch({ executablePath: ensureChromium({ log: (line) => console.log(line) }), args: ['--no-sandbox'] });
}, 900_000);
afterAll(async () => browser?.close());

describe.each(STORES)(
	'the dashboard template on the $store store',
	({ store, triggerTemplate, dashboardTemplate, readKeys, screenshots }) => {
		const h = harness();
		const table = `dashboard_${store.toLowerCase()}_${Date.now().toString(36)}`;
		let api: Sink;
		let pageUrl: string;
		let waitsForEnd: Awaited<ReturnType<typeof publishTrigger>>;
		let atOnce: Awaited<ReturnType<typeof publishTrigger>>;
		const keysOf = (keys: string[]) => readKeys(h, table, keys);

		beforeAll(async () => {
			api = await startSink();
			const { baseUrl } = await triggerBase(h);
			const template = triggerTemplate;
			waitsForEnd = await publishTrigger(h, 'dash-ends', { apiUrl: api.url, baseUrl, template, change: inTable(table) });
			atOnce = await publishTrigger(h, 'dash-once', { apiUrl: api.url, baseUrl, template, change: both(atOnceOneRun, inTable(table)) });
			const basic = await createCredential(h, 'httpBasicAuth', { user: USER, password: PASSWORD });
			const pagePath = freshWebhookPath('dashboard');
			const dashboard = readShippedTemplate(dashboardTemplate);
			dashboard.nodes = dashboard.nodes.map(inTable(table)).map((node) => {
				if (node.type === 'n8n-nodes-base.webhook') {
					const replay = node.name === 'Replay';
					return {
						...node,
						webhookId: randomUUID(),
						parameters: { ...node.parameters, path: replay ? `${pagePath}/replay` : pagePath },
						credentials: { httpBasicAuth: basic },
					};
				}
				if (node.name === 'Business Step (call your API)') return { ...node, parameters: { ...node.parameters, url: api.url } };
				return node;
			});
			await publishWorkflow(h, dashboard, pagePath);
			pageUrl = `${h.state.baseUrl}/webhook/${pagePath}`;
			// The first delivery opens the store: its answer counts like any other, before the baseline.
			await h.deliver(waitsForEnd.url, { id: eventId('dash_warm'), type: 'e2e.warmup' });
			await h.deliver(atOnce.url, { id: eventId('dash_warm_once'), type: 'e2e.warmup' });
		}, 300_000);
		afterAll(async () => api?.close());

		async function openPage(width: number, credentials = true) {
			const context = await browser.newContext({
				viewport: { width, height: 900 },
				...(credentials ? { httpCredentials: { username: USER, password: PASSWORD } } : {}),
			});
			const page = await context.newPage();
			try {
				const response = await page.goto(pageUrl);
				return { context, page, status: response?.status() };
			} catch (error) {
				await context.close();
				throw error;
			}
		}

		const figuresOf = (page: Page): Promise<Figures> =>
			page.$$eval('[data-figure]', (elements) =>
				Object.fromEntries(elements.map((element) => [element.getAttribute('data-figure')!, Number(element.textContent)])),
			);

		/** An event delivered At Once whose one run fails at the API: dead-lettered with its item kept. Its key. */
		async function deadLetter(label: string, body: Record<string, unknown> = {}): Promise<string> {
			const event = { id: eventId(label), type: 'invoice.paid', ...body };
			const key = triggerKey(atOnce.workflowId, event.id);
			api.failNext(key, 500, 1);
			const answer = await h.deliver(atOnce.url, event, { 'x-trace-id': 'trace-dashboard' });
			expect(answer.status).toBe(200);
			return key;
		}

		const allDeadLettered = (keys: string[]) =>
			eventually(
				() => keysOf(keys),
				(stored) => keys.every((key) => stored[key]?.deadLettered),
				{ timeoutMs: 60_000 },
			);

		test('its figures move by exactly the deliveries sent; Replay runs a dead-lettered event once and the page shows it completed', async () => {
			const before = await openPage(1280);
			expect(before.status).toBe(200);
			const baseline = await figuresOf(before.page);
			await before.context.close();
			expect(Object.keys(baseline)).toEqual(expect.arrayContaining([...ANSWER_FIGURES, 'duplicates_24h', 'duplicates_7d']));

			const sent: Figures = Object.fromEntries(ANSWER_FIGURES.map((figure) => [figure, 0]));
			const count = (answer: DeliveryAnswer, figure: (typeof ANSWER_FIGURES)[number], status: number) => {
				expect(answer.status).toBe(status);
				sent[figure] += 1;
			};
			// New events (When the Workflow Ends), each answered by its run.
			const events = Array.from({ length: 3 }, (_, index) => ({ id: eventId(`dash_new_${index}`), type: 'order.created' }));
			for (const event of events) count(await h.deliver(waitsForEnd.url, event), 'new', 200);
			// Copies of a completed event: duplicates.
			for (let copy = 0; copy < 4; copy++) count(await h.deliver(waitsForEnd.url, events[0]), 'duplicate', 200);
			// A copy while the first delivery's step still runs: in progress.
			const slow = { id: eventId('dash_slow'), type: 'order.created' };
			api.slow(triggerKey(waitsForEnd.workflowId, slow.id), 4000);
			const first = h.deliver(waitsForEnd.url, slow);
			await stack.sleep(1500);
			count(await h.deliver(waitsForEnd.url, slow), 'in_progress', 409);
			count(await first, 'new', 200);
			count(await h.deliver(waitsForEnd.url, slow), 'duplicate', 200);
			// Forgeries: a signature made with another secret.
			for (let forged = 0; forged < 2; forged++)
				count(
					await h.deliver(waitsForEnd.url, { id: eventId(`dash_forged_${forged}`), type: 'x' }, {}, { secret: 'whsec_not_the_secret' }),
					'forged',
					401,
				);
			// Refused: a signed event whose id holds a NUL, which no key may hold.
			count(await h.deliver(waitsForEnd.url, { id: 'evt_\u0000nul', type: 'x' }), 'refused', 503);
			// A step that fails, answered When the Workflow Ends: failed, nothing kept to replay.
			const failing = { id: eventId('dash_failing'), type: 'order.created' };
			api.failNext(triggerKey(waitsForEnd.workflowId, failing.id), 500, 1);
			count(await h.deliver(waitsForEnd.url, failing), 'new', 500);
			// At Once, one run: its step fails once, so the event is dead-lettered with its item kept.
			const deadKey = await deadLetter('dash_dead', { customer: { email: 'a@example.com', api_key: 'sk_live_dashboard' } });
			sent.new += 1;
			await allDeadLettered([deadKey]);

			const { context, page } = await openPage(1280);
			const after = await figuresOf(page);
			const moved = (figure: string) => after[figure] - baseline[figure];
			expect(Object.fromEntries(ANSWER_FIGURES.map((figure) => [figure, moved(figure)]))).toEqual(sent);
			expect(moved('duplicates_24h')).toBe(sent.duplicate + sent.in_progress);
			expect(moved('duplicates_7d')).toBe(sent.duplicate + sent.in_progress);
			expect(moved('dead_lettered')).toBe(1);
			expect(moved('failed')).toBe(1);

			// The dead letter, with its preview: the body, a credential-named member redacted, no header.
			const html = await page.content();
			expect(html).toContain(deadKey.split(':evt:')[1]);
			expect(html).toContain('[redacted]');
			expect(html).not.toMatch(/sk_live_dashboard|trace-dashboard|stripe-signature|whsec_|authorization/i);
			expect(html).not.toContain(PASSWORD);
			expect(await page.locator(`article[data-key="${deadKey}"] button`).count()).toBe(1);
			// The event answered When the Workflow Ends has nothing kept: no button, and not in Replay all.
			expect(await page.locator(`article[data-key="${triggerKey(waitsForEnd.workflowId, failing.id)}"] button`).count()).toBe(0);
			expect(await page.locator('form[data-replay-all]').getAttribute('data-replay-all')).toBe('1');

			expect(api.calls(deadKey)).toBe(0);
			await page.locator(`article[data-key="${deadKey}"] button`).click();
			await page.waitForURL((url) => url.searchParams.has('replayed'));
			expect(await page.locator('[data-replay-outcome]').count()).toBe(1);
			expect(await page.locator('[data-replay-outcome="completed"]').count()).toBe(1);
			expect(await page.locator(`article[data-key="${deadKey}"]`).count()).toBe(0);
			const replayed = await figuresOf(page);
			expect(replayed.dead_lettered - baseline.dead_lettered).toBe(0);
			expect(api.calls(deadKey)).toBe(1);
			expect((await keysOf([deadKey]))[deadKey]).toMatchObject({ status: 'completed', attempts: 2 });
			// Once: the trigger's inbox does not run it again.
			await stack.sleep(4000);
			expect(api.calls(deadKey)).toBe(1);
			await context.close();
		});

		test('Replay all on this page runs each failed event shown once; one a replay completed since the page loaded is not run again', async () => {
			const keys = [
				await deadLetter('dash_all_a', { customer: { email: 'b@example.com', api_key: 'sk_live_dashboard' } }),
				await deadLetter('dash_all_b'),
				await deadLetter('dash_all_c'),
			];
			const [first, second, completedMeanwhile] = keys;
			await allDeadLettered(keys);

			const { context, page } = await openPage(1280);
			expect(await page.locator('form[data-replay-all]').getAttribute('data-replay-all')).toBe('3');
			for (const key of keys) expect(await page.locator(`article[data-key="${key}"]`).count()).toBe(1);

			// The README's screenshots: three dead letters and Replay all, a failed event with nothing kept.
			if (screenshots) {
				fs.mkdirSync(SCREENSHOTS, { recursive: true });
				await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-desktop.png'), fullPage: true });
				const phone = await openPage(390);
				await phone.page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-phone.png'), fullPage: true });
				await phone.context.close();
			}

			// While the page is open, another replay completes one of its events.
			const single = await fetch(`${pageUrl}/replay`, {
				method: 'POST',
				redirect: 'manual',
				headers: {
					authorization: `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`,
					'content-type': 'application/x-www-form-urlencoded',
				},
				body: new URLSearchParams({ key: completedMeanwhile }).toString(),
			});
			expect(single.status).toBe(303);
			expect(new URL(single.headers.get('location')!, pageUrl).searchParams.get('outcome')).toBe('completed');
			expect(api.calls(completedMeanwhile)).toBe(1);

			await page.locator('form[data-replay-all] button').click();
			await page.waitForURL((url) => url.searchParams.has('replayed_all'));
			expect(await page.locator('[data-replay-all-outcome="3"]').count()).toBe(1);
			const counts = await page.$$eval('[data-replay-count]', (elements) =>
				Object.fromEntries(elements.map((element) => [element.getAttribute('data-replay-count')!, Number(element.textContent)])),
			);
			expect(counts).toEqual({ completed: 2, not_claimable: 1 });
			for (const key of keys) expect(await page.locator(`article[data-key="${key}"]`).count()).toBe(0);
			expect(await page.locator('form[data-replay-all]').count()).toBe(0);
			// Each ran exactly once, the one completed meanwhile too (its own replay, not this one).
			expect(Object.fromEntries(keys.map((key) => [key, api.calls(key)]))).toEqual({ [first]: 1, [second]: 1, [completedMeanwhile]: 1 });
			const stored = await keysOf(keys);
			for (const key of keys) expect(stored[key]).toMatchObject({ status: 'completed', attempts: 2, deadLettered: false });
			await context.close();
		});

		test('without the password, or with a wrong one: 401, for the page and for Replay', async () => {
			// The browser, answered 401 and given no password, shows no page.
			const inBrowser = await openPage(1280, false).then(
				async ({ context, status }) => {
					await context.close();
					return `shown (${status})`;
				},
				(error: Error) => error.message,
			);
			expect(inBrowser).toMatch(/ERR_INVALID_AUTH_CREDENTIALS/);
			const page = await fetch(pageUrl);
			expect(page.status).toBe(401);
			expect(await page.text()).not.toContain('data-figure');
			const replay = await fetch(`${pageUrl}/replay`, {
				method: 'POST',
				headers: { 'content-type': 'application/x-www-form-urlencoded' },
				body: 'key=evt%3Aanything',
			});
			expect(replay.status).toBe(401);
			const wrong = await fetch(pageUrl, { headers: { authorization: `Basic ${Buffer.from(`${USER}:wrong`).toString('base64')}` } });
			expect(wrong.status).toBe(401);
		});
	},
);
