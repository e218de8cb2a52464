// The Store choice in a real n8n, with the package installed as a community package: a workflow
// saved with the package before the Store parameter existed (typeVersion 1, no `store` parameter,
// a Postgres credential) still keeps its keys in Postgres; a node saved at typeVersion 2 (no store
// parameter, no credential at all) keeps them in the embedded file in n8n's folder, and so does a new
// node (typeVersion 3: Store Automatic, which is the embedded file on one process). All catch the retry.
// e2e-tags: single compatibility
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { TEMPLATE_CREDENTIALS, type Delivery } from '../support/stack/n8nStack';
import type { Json } from '../support/e2e/workflows';
import { harness, eventId } from '../support/e2e/harness';
import { freshWebhookPath, publishWorkflow, webhookNode } from '../support/e2e/restWorkflows';

const RESERVE = 'n8n-nodes-idempotency.idempotencyReserve';

/** A workflow node as the editor saves it. */
interface WorkflowNode {
	name: string;
	type: string;
	parameters: Record<string, unknown>;
	credentials?: Record<string, { id: string; name: string }>;
	[field: string]: unknown;
}

/** What the test chooses of the Reserve node: its version, parameters and credentials. */
interface ReserveFields {
	typeVersion: number;
	parameters: Record<string, unknown>;
	credentials?: WorkflowNode['credentials'];
}

/** Webhook → Reserve → Respond (new / duplicate / not reserved), with the Reserve node as given. */
function reserveWorkflow(label: string, reserve: ReserveFields) {
	const webhookPath = freshWebhookPath(label);
	const respond = (name: string, outcome: string, status: number, y: number): WorkflowNode => ({
		id: randomUUID(),
		name,
		type: 'n8n-nodes-base.respondToWebhook',
		typeVersion: 1.5,
		position: [500, y],
		parameters: {
			respondWith: 'json',
			responseBody:
				'={{ { outcome: "' + outcome + '", key: $json.idempotency ? $json.idempotency.key : null, error: $json.error ?? null } }}',
			options: { responseCode: status, responseHeaders: { entries: [{ name: 'x-idempotency-outcome', value: outcome }] } },
		},
	});
	const nodes: WorkflowNode[] = [
		webhookNode(webhookPath, { responseMode: 'responseNode' }),
		{ id: randomUUID(), name: 'Idempotency Reserve', type: RESERVE, position: [250, 0], onError: 'continueRegularOutput', ...reserve },
		respond('Respond New', 'new', 200, -150),
		respond('Respond Duplicate', 'duplicate', 200, 0),
		respond('Respond Not Reserved', 'not_reserved', 503, 150),
	];
	const connections = {
		Webhook: { main: [[{ node: 'Idempotency Reserve', type: 'main', index: 0 }]] },
		'Idempotency Reserve': {
			main: [
				[{ node: 'Respond New', type: 'main', index: 0 }],
				[{ node: 'Respond Duplicate', type: 'main', index: 0 }],
				[{ node: 'Respond Not Reserved', type: 'main', index: 0 }],
			],
		},
	};
	return { workflow: { name: `Store choice: ${label}`, nodes, connections, settings: { executionOrder: 'v1' } }, webhookPath };
}

describe('the Store parameter in a real n8n', () => {
	const h = harness();
	const userFolder = h.state.cliSpec.env.N8N_USER_FOLDER;
	const keyFile = path.join(userFolder, '.n8n', 'storage', 'n8n-nodes-idempotency', 'keys.sqlite');
	// n8n's own Node (24, with node:sqlite) reads the embedded file; the test runner's Node may have none.
	const node24 = path.join(h.state.cliSpec.env.PATH.split(path.delimiter)[0], 'node');

	/** Whether the embedded file holds the key (false when the file or its keys table does not exist yet). */
	function inEmbeddedFile(key: string) {
		const script = `
			const fs = require('node:fs');
			const [file, key] = process.argv.slice(1);
			if (!fs.existsSync(file)) { console.log('false'); process.exit(0); }
			const { DatabaseSync } = require('node:sqlite');
			const db = new DatabaseSync(file, { readOnly: true });
			// Another workflow on this n8n (an Order Guard, the inbox) may have made the file first.
			const table = db.prepare("select 1 from sqlite_master where type = 'table' and name = 'processed_events'").get();
			console.log(String(table !== undefined && db.prepare('select count(*) as n from processed_events where key = ?').get(key).n > 0));`;
		const run = spawnSync(node24, ['-e', script, keyFile, key], { encoding: 'utf8' });
		if (run.status !== 0) throw new Error(`reading ${keyFile} failed: ${run.stderr}`);
		return run.stdout.trim() === 'true';
	}
	const inPostgres = async (key: string) => (await h.appQuery('SELECT 1 FROM processed_events WHERE key = $1', [key])).rowCount === 1;

	it('a workflow saved before the Store parameter (typeVersion 1, no store, a Postgres credential) keeps its keys in Postgres', async () => {
		const { workflow, webhookPath } = reserveWorkflow('saved-v1', {
			typeVersion: 1,
			parameters: { keySource: 'auto', mode: 'permanent', options: {} },
			credentials: { idempotencyPostgresApi: { id: TEMPLATE_CREDENTIALS.idempotency.id, name: TEMPLATE_CREDENTIALS.idempotency.name } },
		});
		expect(workflow.nodes[1].parameters).not.toHaveProperty('store');
		await publishWorkflow(h, workflow, webhookPath);
		const url = `${h.state.baseUrl}/webhook/${webhookPath}`;
		const id = eventId('store_v1');

		const first: Delivery<Json> = await h.deliver(url, { id, type: 'test.event' }, {}, { sign: false });
		const retry = await h.deliver(url, { id, type: 'test.event' }, {}, { sign: false });
		expect([first.status, first.outcome]).toEqual([200, 'new']);
		expect([retry.status, retry.outcome]).toEqual([200, 'duplicate']);
		expect(first.json.key).toBe(`evt:${id}`);
		expect(await inPostgres(`evt:${id}`)).toBe(true);
		expect(inEmbeddedFile(`evt:${id}`)).toBe(false);
	});

	it.each([
		[2, 'a Reserve node saved at version 2: Embedded'],
		[3, 'a new Reserve node: Automatic, on one process'],
	])("typeVersion %p (no store parameter, no credential) keeps its keys in the embedded file in n8n's folder: %s", async (typeVersion) => {
		const { workflow, webhookPath } = reserveWorkflow(`new-v${typeVersion}`, {
			typeVersion,
			parameters: { keySource: 'auto', mode: 'permanent', options: {} },
		});
		expect(workflow.nodes[1].credentials).toBeUndefined();
		// Saved and published through n8n's REST API, as the editor does: n8n asks for no credential.
		await publishWorkflow(h, workflow, webhookPath);
		const url = `${h.state.baseUrl}/webhook/${webhookPath}`;
		const id = eventId(`store_v${typeVersion}`);

		const first: Delivery<Json> = await h.deliver(url, { id, type: 'test.event' }, {}, { sign: false });
		const retry = await h.deliver(url, { id, type: 'test.event' }, {}, { sign: false });
		expect([first.status, first.outcome, first.json.error]).toEqual([200, 'new', null]);
		expect([retry.status, retry.outcome]).toEqual([200, 'duplicate']);
		expect(inEmbeddedFile(`evt:${id}`)).toBe(true);
		expect(await inPostgres(`evt:${id}`)).toBe(false);
	});
});
