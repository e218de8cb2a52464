#!/usr/bin/env node
// Screenshots of what a user sees in the n8n editor: every template's canvas and every node's
// parameter panel, from a real n8n with the packed package (the e2e harness) and the machine's
// Chromium. Not run by CI: for a human to LOOK at after changing templates or descriptions.
//
//   node scripts/screenshots.js                 # PNGs in /tmp/editor-shots/
//   node scripts/screenshots.js --out DIR
//   node scripts/screenshots.js --keep          # stay up; `touch /tmp/editor-shots/.again` re-imports
//                                               # the templates and shoots again (Ctrl-C stops)
//
// Needs playwright-core (PLAYWRIGHT_CORE, default /work/tools/node_modules/playwright-core) and a
// Chromium (CHROMIUM, default /usr/bin/chromium). Never downloads a browser.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const stack = require('./lib/n8n-stack');

const args = process.argv.slice(2);
const OUT = path.resolve(args.includes('--out') ? args[args.indexOf('--out') + 1] : '/tmp/editor-shots');
const { chromium } = require(process.env.PLAYWRIGHT_CORE ?? '/work/tools/node_modules/playwright-core');
const OWNER = { email: 'shots@example.com', password: 'ShotsOwner123', firstName: 'Shots', lastName: 'Owner' };
const keep = args.includes('--keep');
const log = (line) => process.stdout.write(`  ${line}\n`);

const TEMPLATE_DIR = path.join(stack.REPO_ROOT, 'templates');
const readTemplates = () => fs
	.readdirSync(TEMPLATE_DIR)
	.filter((f) => f.endsWith('.json'))
	.map((f) => ({ file: f.replace(/\.json$/, ''), json: JSON.parse(fs.readFileSync(path.join(TEMPLATE_DIR, f), 'utf8')) }));
const OURS = /^(CUSTOM\.|n8n-nodes-idempotency\.)/;

async function main() {
	fs.mkdirSync(OUT, { recursive: true });
	const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'editor-shots-stack-'));
	const running = await stack.startStack({
		workDir,
		pgDir: path.join(workDir, 'pg'),
		dbNames: { n8n: 'n8n_shots', app: 'idempotency_shots' },
		encryptionKey: 'n8n-nodes-idempotency-shots-key',
		credentials: stack.templateCredentials,
		workflows: readTemplates().map(({ json }) => ({ json, publish: false })),
		log,
	});
	const browser = await chromium.launch({
		executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
		args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
	});
	try {
		await stack.restClient(running.baseUrl).ownerLogin(OWNER); // creates the owner
		const context = await browser.newContext({ viewport: { width: 1920, height: 1080 }, baseURL: running.baseUrl });
		const page = await context.newPage();
		// Signed in through the form: n8n binds its session cookie to the browser's own browser-id.
		await page.goto('/signin');
		await page.locator('input[type="email"], input[name="emailOrLdapLoginId"]').first().fill(OWNER.email);
		await page.locator('input[type="password"]').first().fill(OWNER.password);
		await page.getByRole('button', { name: /sign in/i }).click();
		await page.waitForURL((url) => !url.pathname.startsWith('/signin'), { timeout: 60_000 });
		try {
			await shootAll(page);
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
			for (const { json } of readTemplates()) fs.writeFileSync(path.join(importDir, `${json.id}.json`), JSON.stringify(json));
			await running.cli(['import:workflow', '--separate', `--input=${importDir}`]);
			await shootAll(page);
		}
	} finally {
		await browser.close();
		await running.stop();
		fs.rmSync(workDir, { recursive: true, force: true });
	}
}

async function shootAll(page) {
	{
		for (const { file, json } of readTemplates()) {
			await page.goto(`/workflow/${json.id}`);
			await page.waitForSelector('[data-test-id="canvas-node"]', { timeout: 60_000 });
			await page.waitForTimeout(1500);
			// Fit the whole workflow (n8n's "zoom to fit" shortcut is "1").
			await page.keyboard.press('1');
			await page.waitForTimeout(800);
			// Code in sticky notes, measured by the browser itself (layout px = canvas px): the text's
			// width in the code font against the width the code block gives it.
			const codeBlocks = await page.$$eval('pre', (pres) =>
				pres.map((pre) => {
					const line = pre.textContent.split('\n').reduce((a, b) => (b.length > a.length ? b : a), '');
					const style = getComputedStyle(pre);
					const context = document.createElement('canvas').getContext('2d');
					context.font = style.font;
					const inner = pre.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
					return { chars: line.length, text: context.measureText(line).width, inner, charWidth: context.measureText('x'.repeat(100)).width / 100 };
				}),
			);
			for (const b of codeBlocks) {
				log(`${file}: code ${b.text > b.inner ? 'CLIPPED' : 'fits'}: ${b.chars} chars = ${b.text.toFixed(0)} px in ${b.inner.toFixed(0)} px (${b.charWidth.toFixed(2)} px/char)`);
			}
			const shot = path.join(OUT, `template-${file}.png`);
			await page.screenshot({ path: shot });
			log(shot);
			for (const node of json.nodes.filter((n) => OURS.test(n.type))) {
				await page.goto(`/workflow/${json.id}/${node.id}`);
				await page.waitForSelector('[data-test-id="ndv"]', { timeout: 60_000 }).catch(() => undefined);
				await page.waitForTimeout(1200);
				const safe = node.name.replace(/[^A-Za-z0-9]+/g, '-').replace(/^-|-$/g, '');
				const panel = path.join(OUT, `node-${file}--${safe}.png`);
				await page.screenshot({ path: panel, fullPage: true });
				log(panel);
			}
		}
	}
	log('done');
}

main().catch((error) => {
	console.error(error);
	process.exit(1);
});
