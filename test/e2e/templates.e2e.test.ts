// The templates as users get them: the package installed from its npm tarball as a community
// package, every template imported with `n8n import:workflow`, the published ones activated.
// e2e-tags: single compatibility
import fs from 'node:fs';
import path from 'node:path';
import type { Client } from 'pg';
import * as stack from '../support/stack/n8nStack';
import { harness, OWNER } from '../support/e2e/harness';
import { readTemplate, type WorkflowJson } from '../support/e2e/workflows';
import { activatesThroughPublication, activateWorkflowArgs } from '../support/stack/n8nVersion';

/** A node of a workflow, as far as this file reads it. */
type WorkflowNode = { type: string };

/** What makes a shipped template live on this n8n line (activateWorkflowArgs); every shipped template has its id. */
function activationArgs(version: string, template: WorkflowJson): string[] | null {
	const { id } = template;
	if (!id) throw new Error(`the template "${template.name}" has no id`);
	return activateWorkflowArgs(version, { ...template, id });
}

describe('templates and the installed community package', () => {
	const h = harness();
	const n8nQuery = (sql: string, params?: unknown[]) => stack.withClient(h.state.n8nDbUrl, (client: Client) => client.query(sql, params));

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
		expect(
			fs.existsSync(path.join(h.state.packageDir, 'node_modules', 'pg')) || fs.existsSync(path.join(nodesDir, 'node_modules', 'pg')),
		).toBe(true);
	});

	test('every template uses the package node type names and imports cleanly', async () => {
		const packageTypes = new Set();
		for (const name of ['webhook', 'cleanup', 'error', 'replay']) {
			const template = readTemplate(name);
			for (const node of template.nodes) if (node.type.startsWith(`${stack.PACKAGE_NAME}.`)) packageTypes.add(node.type);
			const { rows } = await n8nQuery('SELECT name, nodes FROM workflow_entity WHERE id = $1', [template.id]);
			expect(rows).toHaveLength(1);
			expect(rows[0].name).toBe(template.name);
			expect(rows[0].nodes.map((n: WorkflowNode) => n.type).sort()).toEqual(template.nodes.map((n: WorkflowNode) => n.type).sort());
		}
		expect([...packageTypes].sort()).toEqual([
			`${stack.PACKAGE_NAME}.idempotencyKey`,
			`${stack.PACKAGE_NAME}.idempotencyReserve`,
			`${stack.PACKAGE_NAME}.webhookSignatureVerify`,
		]);
	});

	test('every template imports the way the editor does it (POST /rest/workflows), with every node type known to the editor', async () => {
		const rest = h.rest();
		await rest.ownerLogin(OWNER);
		// The editor draws nodes from this list; an unknown type would show as "Install this node".
		const types = await rest.request<Array<{ name: string }>>('GET', '/types/nodes.json');
		expect(types.status).toBe(200);
		const known = new Set(types.json.map((type) => type.name));
		for (const name of ['webhook', 'cleanup', 'error', 'replay']) {
			const template = readTemplate(name);
			for (const node of template.nodes) expect({ type: node.type, known: known.has(node.type) }).toEqual({ type: node.type, known: true });
			// What the editor saves after "Import from File": the file's workflow as a new, inactive one.
			const { name: templateName, nodes, connections, settings, pinData, meta } = template;
			const saved = await rest.call('POST', '/workflows', {
				name: `${templateName} (UI import)`,
				nodes,
				connections,
				settings,
				pinData,
				meta,
				active: false,
			});
			expect(saved.status).toBe(200);
			expect(saved.json.data.nodes.map((node: WorkflowNode) => node.type).sort()).toEqual(
				nodes.map((node: WorkflowNode) => node.type).sort(),
			);
			expect(Object.keys(saved.json.data.connections).sort()).toEqual(Object.keys(connections).sort());
		}
	});

	test('published templates are activated by n8n (webhook, error workflow, daily schedule)', async () => {
		const ids = ['webhook', 'cleanup', 'error'].map((name) => readTemplate(name).id);
		if (!activatesThroughPublication(h.state.n8nVersion)) {
			// n8n 1.x: active in its row and "Activated workflow … (ID: …)" in its log at start; the error
			// workflow stays inactive (1.x runs error workflows without, mark-failed-on-error proves it runs).
			const activated = ['webhook', 'cleanup', 'error'].map(readTemplate).filter((t) => activationArgs(h.state.n8nVersion, t));
			expect(activated.map((t) => t.id).sort()).toEqual([readTemplate('webhook').id, readTemplate('cleanup').id].sort());
			const log = fs.readFileSync(h.state.logFile, 'utf8');
			for (const t of activated) expect(log).toContain(`Activated workflow "${t.name}" (ID: ${t.id})`);
			const { rows } = await n8nQuery('SELECT id FROM workflow_entity WHERE id = ANY($1) AND active', [ids]);
			expect(rows.map((r: { id: string }) => r.id).sort()).toEqual(activated.map((t) => t.id).sort());
			return;
		}
		let statuses: Array<{ workflowId: string }> = [];
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
