// Screenshots of n8n's Settings → Community Nodes page, for the docs: taken by
// community-installer.e2e.test.js only when E2E_SCREENSHOTS_DIR is set (CI does not; a human looks
// at them before committing). Uses the machine's Chromium through playwright-core; never downloads
// a browser.
const fs = require('node:fs');
const path = require('node:path');

const SCREENSHOTS_DIR = process.env.E2E_SCREENSHOTS_DIR ? path.resolve(process.env.E2E_SCREENSHOTS_DIR) : null;

/** Signs in through the form (n8n binds its session to the browser's id) and shoots the page. */
async function shootCommunityNodesPage({ baseUrl, owner, packageName, expectText, file }) {
	if (!SCREENSHOTS_DIR) return null;
	const { chromium } = require('playwright-core');
	fs.mkdirSync(SCREENSHOTS_DIR, { recursive: true });
	const browser = await chromium.launch({
		executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
		args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
	});
	try {
		const context = await browser.newContext({ viewport: { width: 1280, height: 640 }, baseURL: baseUrl });
		const page = await context.newPage();
		page.setDefaultTimeout(120_000);
		await page.goto('/signin');
		await page.locator('input[type="email"], input[name="emailOrLdapLoginId"]').first().fill(owner.email);
		await page.locator('input[type="password"]').first().fill(owner.password);
		await page.getByRole('button', { name: /sign in/i }).click();
		await page.waitForURL((url) => !url.pathname.startsWith('/signin'), { timeout: 60_000 });
		await page.goto('/settings/community-nodes');
		await page.getByText(packageName).first().waitFor();
		if (expectText) await page.getByText(expectText).first().waitFor();
		await page.waitForTimeout(1000); // fonts and icons settle
		const target = path.join(SCREENSHOTS_DIR, file);
		await page.screenshot({ path: target });
		return target;
	} finally {
		await browser.close();
	}
}

module.exports = { shootCommunityNodesPage, SCREENSHOTS_DIR };
