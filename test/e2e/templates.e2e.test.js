// The templates as users get them: the package installed from its npm tarball as a community
// package, every template imported with `n8n import:workflow`, the published ones activated.
const fs = require('node:fs');
const path = require('node:path');
const stack = require('../../scripts/lib/n8n-stack');
const { harness } = require('./support/harness');
const { readTemplate } = require('./support/workflows');

describe('templates and the installed community package', () => {
	const h = harness();
	const n8nQuery = (sql, params) => stack.withClient(h.state.n8nDbUrl, (client) => client.query(sql, params));

	test('the package is installed from its packed tarball in <N8N_USER_FOLDER>/.n8n/nodes', () => {
		const nodesDir = path.dirname(path.dirname(h.state.packageDir));
		const manifest = JSON.parse(fs.readFileSync(path.join(nodesDir, 'package.json'), 'utf8'));
		expect(manifest.dependencies[stack.PACKAGE_NAME]).toMatch(/\.tgz$/);
		const installed = JSON.parse(fs.readFileSync(path.join(h.state.packageDir, 'package.json'), 'utf8'));
		const repo = JSON.parse(fs.readFileSync(path.join(stack.REPO_ROOT, 'package.json'), 'utf8'));
		expect(installed.version).toBe(repo.version);
		for (const file of [...installed.n8n.nodes, ...installed.n8n.credentials]) {
			expect(fs.existsSync(path.join(h.state.packageDir, file))).toBe(true);
		}
		expect(fs.existsSync(path.join(h.state.packageDir, 'node_modules', 'pg')) || fs.existsSync(path.join(nodesDir, 'node_modules', 'pg'))).toBe(true);
	});

	test('every template uses the package node type names and imports cleanly', async () => {
		const packageTypes = new Set();
		for (const name of ['webhook', 'cleanup', 'error']) {
			const template = readTemplate(name);
			for (const node of template.nodes) if (node.type.startsWith(`${stack.PACKAGE_NAME}.`)) packageTypes.add(node.type);
			const { rows } = await n8nQuery('SELECT name, nodes FROM workflow_entity WHERE id = $1', [template.id]);
			expect(rows).toHaveLength(1);
			expect(rows[0].name).toBe(template.name);
			expect(rows[0].nodes.map((n) => n.type).sort()).toEqual(template.nodes.map((n) => n.type).sort());
		}
		expect([...packageTypes].sort()).toEqual([
			`${stack.PACKAGE_NAME}.idempotencyKey`,
			`${stack.PACKAGE_NAME}.idempotencyReserve`,
			`${stack.PACKAGE_NAME}.webhookSignatureVerify`,
		]);
	});

	test('published templates are activated by n8n (webhook, error workflow, daily schedule)', async () => {
		const ids = ['webhook', 'cleanup', 'error'].map((name) => readTemplate(name).id);
		let statuses = [];
		const deadline = Date.now() + 30000;
		while (Date.now() < deadline) {
			({ rows: statuses } = await n8nQuery(
				`SELECT "workflowId", "nodeId", status, "errorMessage" FROM workflow_publication_trigger_status WHERE "workflowId" = ANY($1)`,
				[ids],
			));
			if (new Set(statuses.map((s) => s.workflowId)).size === ids.length) break;
			await stack.sleep(500);
		}
		expect(new Set(statuses.map((s) => s.workflowId))).toEqual(new Set(ids));
		for (const s of statuses) expect(s).toMatchObject({ status: 'activated', errorMessage: null });
		const { rows } = await n8nQuery('SELECT id FROM workflow_entity WHERE id = ANY($1) AND "activeVersionId" IS NOT NULL', [ids]);
		expect(rows).toHaveLength(ids.length);
	});
});
