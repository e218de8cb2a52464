// The dashboard template (templates/idempotency-dashboard.json) in a real n8n, read in a real
// browser (the machine's Chromium, driven by playwright-core; never a downloaded browser). The test
// sends a known number of deliveries of each kind to two copies of the trigger template (one
// answering When the Workflow Ends, one At Once whose failed event is dead-lettered), opens the
// page, checks each figure moved by exactly what it sent, clicks Replay on the dead letter, and sees
// it completed with one effect at its API. Unauthenticated requests are refused. Screenshots of the
// page at desktop and phone width go to docs/images/.
// e2e-tags: single
import { ensureChromium } from '../support/stack/browser';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { harness, eventId, type DeliveryAnswer } from '../support/e2e/harness';
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
	setViewportSize(size: { width: number; height: number }): Promise<void>;
	screenshot(options: { path: string; fullPage?: boolean }): Promise<unknown>;
	content(): Promise<string>;
	waitForURL(predicate: (url: URL) => boolean): Promise<void>;
	$$eval<R>(
		selector: string,
		fn: (elements: Array<{ getAttribute(name: string): string | null; textContent: string | null }>) => R,
	): Promise<R>;
	locator(selector: string): { click(): Promise<void>; count(): Promise<number>; textContent(): Promise<string | null> };
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

/** The trigger at version 2 answering At Once, one run only: a failed event is dead-lettered at once. */
const atOnceOneRun: NodeChange = (node) =>
	node.type === TRIGGER.type
		? {
				...node,
				typeVersion: 2,
				parameters: { ...node.parameters, mode: undefined, respond: 'atOnce', maxAttempts: 1, firstRetrySeconds: 1 },
			}
		: node;

describe('the dashboard template', () => {
	const h = harness();
	let api: Sink;
	let browser: Browser;
	let pageUrl: string;
	let waitsForEnd: Awaited<ReturnType<typeof publishTrigger>>;
	let atOnce: Awaited<ReturnType<typeof publishTrigger>>;

	beforeAll(async () => {
		api = await startSink();
		const { baseUrl } = await triggerBase(h);
		waitsForEnd = await publishTrigger(h, 'dash-ends', { apiUrl: api.url, baseUrl });
		atOnce = await publishTrigger(h, 'dash-once', { apiUrl: api.url, baseUrl, change: atOnceOneRun });
		const basic = await createCredential(h, 'httpBasicAuth', { user: USER, password: PASSWORD });
		const pagePath = freshWebhookPath('dashboard');
		const template = readShippedTemplate('idempotency-dashboard.json');
		template.nodes = template.nodes.map((node) => {
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
		await publishWorkflow(h, template, pagePath);
		pageUrl = `${h.state.baseUrl}/webhook/${pagePath}`;
		browser = await chromium.launch({ executablePath: ensureChromium({ log: (line) => console.log(line) }), args: ['--no-sandbox'] });
		// The first delivery opens the store: its answer counts like any other, before the baseline.
		await h.deliver(waitsForEnd.url, { id: eventId('dash_warm'), type: 'e2e.warmup' });
		await h.deliver(atOnce.url, { id: eventId('dash_warm_once'), type: 'e2e.warmup' });
		// A clean machine installs Debian's Chromium first (apt: minutes of download).
	}, 900_000);
	afterAll(async () => {
		await browser?.close();
		await api?.close();
	});

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
		const dead = { id: eventId('dash_dead'), type: 'invoice.paid', customer: { email: 'a@example.com', api_key: 'sk_live_dashboard' } };
		const deadKey = triggerKey(atOnce.workflowId, dead.id);
		api.failNext(deadKey, 500, 1);
		count(await h.deliver(atOnce.url, dead, { 'x-trace-id': 'trace-dashboard' }), 'new', 200);
		await eventually(
			async () => (await storedKeys(h, [deadKey]))[deadKey],
			(stored) => Boolean(stored?.deadLetteredAt),
			{ timeoutMs: 60_000 },
		);

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
		expect(html).toContain(dead.id);
		expect(html).toContain('[redacted]');
		expect(html).not.toMatch(/sk_live_dashboard|trace-dashboard|stripe-signature|whsec_|authorization/i);
		expect(html).not.toContain(PASSWORD);
		expect(await page.locator(`article[data-key="${deadKey}"] button`).count()).toBe(1);
		// The event answered When the Workflow Ends has nothing kept: no button.
		expect(await page.locator(`article[data-key="${triggerKey(waitsForEnd.workflowId, failing.id)}"] button`).count()).toBe(0);

		fs.mkdirSync(SCREENSHOTS, { recursive: true });
		await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-desktop.png'), fullPage: true });
		const phone = await openPage(390);
		await phone.page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-phone.png'), fullPage: true });
		await phone.context.close();

		expect(api.calls(deadKey)).toBe(0);
		await page.locator(`article[data-key="${deadKey}"] button`).click();
		await page.waitForURL((url) => url.searchParams.has('replayed'));
		expect(await page.locator('[data-replay-outcome]').count()).toBe(1);
		expect(await page.locator('[data-replay-outcome="completed"]').count()).toBe(1);
		expect(await page.locator(`article[data-key="${deadKey}"]`).count()).toBe(0);
		const replayed = await figuresOf(page);
		expect(replayed.dead_lettered - baseline.dead_lettered).toBe(0);
		expect(api.calls(deadKey)).toBe(1);
		expect((await storedKeys(h, [deadKey]))[deadKey]).toMatchObject({ status: 'completed', attempts: 2 });
		// Once: the trigger's inbox does not run it again.
		await stack.sleep(4000);
		expect(api.calls(deadKey)).toBe(1);
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
});
