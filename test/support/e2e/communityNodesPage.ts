// Screenshots of the n8n editor for the docs, taken by community-installer.e2e.test.js only when
// E2E_SCREENSHOTS_DIR is set (CI does not; a human looks at them before committing): the
// Settings → Community Nodes page, and a saved workflow after the package was uninstalled. Uses the
// machine's Chromium through playwright-core; never downloads a browser.
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';

export const SCREENSHOTS_DIR: string | null = process.env.E2E_SCREENSHOTS_DIR ? path.resolve(process.env.E2E_SCREENSHOTS_DIR) : null;

/** The n8n account the browser signs in with. */
interface Owner {
	email: string;
	password: string;
}

/** Runs `use(page)` in a browser signed in through the form (n8n binds its session to the browser's id). */
async function withSignedInPage<T>(
	{
		baseUrl,
		owner,
		viewport = { width: 1280, height: 640 },
		deviceScaleFactor = 1,
	}: { baseUrl: string; owner: Owner; viewport?: { width: number; height: number }; deviceScaleFactor?: number },
	dir: string,
	use: (page: Page) => Promise<T>,
): Promise<T> {
	const { chromium } = await import('playwright-core');
	fs.mkdirSync(dir, { recursive: true });
	const browser = await chromium.launch({
		executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
		args: [
			'--headless',
			'--no-sandbox',
			'--disable-gpu',
			'--disable-background-networking',
			'--disable-component-update',
			'--disable-sync',
			'--no-first-run',
		],
	});
	try {
		const context = await browser.newContext({ viewport, deviceScaleFactor, baseURL: baseUrl });
		const page = await context.newPage();
		page.setDefaultTimeout(120_000);
		await page.goto('/signin');
		await page.locator('input[type="email"], input[name="emailOrLdapLoginId"]').first().fill(owner.email);
		await page.locator('input[type="password"]').first().fill(owner.password);
		await page.getByRole('button', { name: /sign in/i }).click();
		await page.waitForURL((url) => !url.pathname.startsWith('/signin'), { timeout: 60_000 });
		return await use(page);
	} finally {
		await browser.close();
	}
}

/** Shoots Settings → Community Nodes once it shows the package (and `expectText`). */
export async function shootCommunityNodesPage({
	baseUrl,
	owner,
	packageName,
	expectText,
	file,
}: {
	baseUrl: string;
	owner: Owner;
	packageName: string;
	expectText?: string;
	file: string;
}): Promise<string | null> {
	const dir = SCREENSHOTS_DIR;
	if (!dir) return null;
	return withSignedInPage({ baseUrl, owner }, dir, async (page) => {
		await page.goto('/settings/community-nodes');
		await page.getByText(packageName).first().waitFor();
		if (expectText) await page.getByText(expectText).first().waitFor();
		await page.waitForTimeout(1000); // fonts and icons settle
		const target = path.join(dir, file);
		await page.screenshot({ path: target });
		return target;
	});
}

/**
 * Opens a saved workflow whose package is uninstalled, as a user would: the canvas (zoomed to fit,
 * shot cropped to its nodes, sticky notes left out, at twice the pixels so the labels read), then
 * the panel of one of the package's nodes, which n8n fills with its "not installed" state. Returns what the page showed, for the test to assert: the canvas's node
 * names, the panel's text, and the errors the page threw (an editor crash is one).
 */
export async function shootUninstalledWorkflow({
	baseUrl,
	owner,
	workflowId,
	node,
	canvasFile,
	panelFile,
}: {
	baseUrl: string;
	owner: Owner;
	workflowId: string;
	node: { id: string };
	canvasFile: string;
	panelFile: string;
}): Promise<{ canvasNodes: string[]; panelText: string; pageErrors: string[] } | null> {
	const dir = SCREENSHOTS_DIR;
	if (!dir) return null;
	return withSignedInPage({ baseUrl, owner, viewport: { width: 1600, height: 900 }, deviceScaleFactor: 2 }, dir, async (page) => {
		const pageErrors: string[] = [];
		page.on('pageerror', (error) => pageErrors.push(error.message));
		await page.goto(`/workflow/${workflowId}`);
		await page.waitForSelector('[data-test-id="canvas-node"]', { timeout: 60_000 });
		await page.waitForTimeout(1500);
		await page.keyboard.press('1'); // n8n's "zoom to fit"
		await page.waitForTimeout(800);
		const canvasNodes = await page.$$eval('[data-test-id="canvas-node"]', (nodes) =>
			nodes.map((element) => element.getAttribute('data-node-name') ?? element.textContent!.trim()),
		);
		const boxes = (await Promise.all((await page.locator('[data-test-id="canvas-node"]').all()).map((node) => node.boundingBox()))).filter(
			(box) => box !== null,
		);
		const margin = 40;
		const left = Math.max(0, Math.min(...boxes.map((box) => box.x)) - margin);
		const top = Math.max(0, Math.min(...boxes.map((box) => box.y)) - margin);
		const right = Math.min(1600, Math.max(...boxes.map((box) => box.x + box.width)) + margin);
		const bottom = Math.min(900, Math.max(...boxes.map((box) => box.y + box.height)) + margin);
		await page.screenshot({ path: path.join(dir, canvasFile), clip: { x: left, y: top, width: right - left, height: bottom - top } });
		await page.goto(`/workflow/${workflowId}/${node.id}`);
		await page.waitForSelector('[data-test-id="ndv"]', { timeout: 60_000 });
		await page.waitForTimeout(1200);
		const panelText = await page.locator('[data-test-id="ndv"]').first().innerText();
		await page.screenshot({ path: path.join(dir, panelFile) });
		return { canvasNodes, panelText, pageErrors };
	});
}
