import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { INodeType, INodeTypeDescription } from 'n8n-workflow';

import { IdempotencyKey } from '../../nodes/IdempotencyKey/IdempotencyKey.node';
import { IdempotencyReserve } from '../../nodes/IdempotencyReserve/IdempotencyReserve.node';

// The zero-setup templates (Store: Embedded) against the Postgres templates they mirror: the same
// graph, the same answers and the same Settle wiring, with only the store, the credentials and the
// example business step changed. The end-to-end suite runs them in a real n8n
// (test/e2e/embedded-*.e2e.test.ts); these checks catch a drift between the two in a second.
const TEMPLATE_DIR = path.join(__dirname, '..', '..', 'templates');
const PACKAGE = 'n8n-nodes-idempotency';

interface TemplateNode {
	id: string;
	name: string;
	type: string;
	typeVersion: number;
	position: [number, number];
	onError?: string;
	webhookId?: string;
	parameters: Record<string, unknown>;
	credentials?: Record<string, { id: string; name: string }>;
}
interface Template {
	id: string;
	name: string;
	nodes: TemplateNode[];
	connections: Record<string, { main: Array<Array<{ node: string; type: string; index: number }>> }>;
	settings: Record<string, unknown>;
}

const read = (file: string): Template => JSON.parse(readFileSync(path.join(TEMPLATE_DIR, file), 'utf8')) as Template;
const isSticky = (node: TemplateNode) => node.type === 'n8n-nodes-base.stickyNote';

/** The version n8n gives a node added today (the versioned node's default). */
function defaultVersion(node: INodeType): number {
	const description = node.description as INodeTypeDescription & { defaultVersion?: number };
	const versions = Array.isArray(description.version) ? description.version : [description.version];
	return description.defaultVersion ?? Math.max(...versions);
}
const STORE_NODES = new Map<string, INodeType>(
	[new IdempotencyReserve(), new IdempotencyKey()].map((node) => [`${PACKAGE}.${node.description.name}`, node]),
);

/** Pairs of (Postgres template, embedded template), and the example business step each one has. */
const PAIRS = [
	{
		postgres: 'idempotent-webhook.json',
		embedded: 'idempotent-webhook-embedded.json',
		business: ['Business Step (insert business_log)', 'Business Step (call your API)'],
	},
	{ postgres: 'error-workflow.json', embedded: 'error-workflow-embedded.json', business: null },
	{ postgres: 'scheduled-cleanup.json', embedded: 'scheduled-cleanup-embedded.json', business: null },
] as const;

describe.each(PAIRS)('$embedded (the zero-setup twin of $postgres)', ({ postgres, embedded, business }) => {
	const pg = read(postgres);
	const emb = read(embedded);
	const rename = (name: string) => (business && name === business[0] ? business[1] : name);

	it('has an id and a name of its own (both can be imported into one n8n)', () => {
		expect(emb.id).not.toBe(pg.id);
		expect(emb.name).not.toBe(pg.name);
		expect(emb.name).toMatch(/embedded/i);
		// n8n refuses a workflow name over 128 characters; leave room for " (copy)" and the like.
		expect(emb.name.length).toBeLessThanOrEqual(100);
	});

	it('keeps every node of the Postgres template (the business step aside), with the same settings and positions', () => {
		const strip = (node: TemplateNode) => {
			const { id: _id, credentials: _credentials, typeVersion: _typeVersion, webhookId: _webhookId, ...rest } = node;
			const { store: _store, path: _path, content: _content, height: _height, ...parameters } = rest.parameters;
			return { ...rest, name: rename(rest.name), parameters };
		};
		const others = (template: Template, skip: string | undefined) => template.nodes.filter((node) => node.name !== skip).map(strip);
		expect(others(emb, business?.[1])).toEqual(others(pg, business?.[0]));
	});

	it('connects its nodes exactly as the Postgres template does', () => {
		const renamed = Object.fromEntries(
			Object.entries(pg.connections).map(([from, connection]) => [
				rename(from),
				{ main: connection.main.map((targets) => targets.map((target) => ({ ...target, node: rename(target.node) }))) },
			]),
		);
		expect(emb.connections).toEqual(renamed);
		expect(emb.settings).toEqual(pg.settings);
	});

	it('keeps its keys in the embedded store on every node, at the version new nodes get, without a Postgres credential', () => {
		const storeNodes = emb.nodes.filter((node) => STORE_NODES.has(node.type));
		expect(storeNodes.length).toBeGreaterThan(0);
		for (const node of storeNodes) {
			expect({ node: node.name, store: node.parameters.store, typeVersion: node.typeVersion }).toEqual({
				node: node.name,
				store: 'embedded',
				typeVersion: defaultVersion(STORE_NODES.get(node.type)!),
			});
		}
		const credentialTypes = emb.nodes.flatMap((node) => Object.keys(node.credentials ?? {}));
		expect(credentialTypes.filter((type) => type !== 'webhookSignatureApi')).toEqual([]);
		expect(
			emb.nodes.filter((node) => node.type === 'n8n-nodes-base.postgres' || node.type === `${PACKAGE}.idempotencyExecuteQuery`),
		).toEqual([]);
	});

	it('says in its notes that it needs no database, and names no Postgres credential to pick', () => {
		const notes = emb.nodes
			.filter(isSticky)
			.map((note) => String(note.parameters.content))
			.join('\n');
		expect(notes).not.toMatch(/Idempotency Postgres\* credential/);
		expect(notes).toMatch(/Store: Embedded/);
	});
});

describe('the embedded webhook template', () => {
	const emb = read('idempotent-webhook-embedded.json');
	const pg = read('idempotent-webhook.json');
	const byName = (name: string) => emb.nodes.find((node) => node.name === name)!;

	it('has a webhook path and id of its own (it can run beside the Postgres one)', () => {
		const webhook = emb.nodes.find((node) => node.type === 'n8n-nodes-base.webhook')!;
		const pgWebhook = pg.nodes.find((node) => node.type === 'n8n-nodes-base.webhook')!;
		expect(webhook.parameters.path).toBe('idempotent-webhook-embedded');
		expect(webhook.parameters.path).not.toBe(pgWebhook.parameters.path);
		expect(webhook.webhookId).not.toBe(pgWebhook.webhookId);
		expect(webhook.parameters).toMatchObject({ httpMethod: 'POST', responseMode: 'responseNode', options: { rawBody: true } });
	});

	it("its example business step calls the user's API, needs no database, and sits above Settle with its error output on", () => {
		const step = byName('Business Step (call your API)');
		const settle = byName('Settle (complete or mark failed)');
		expect(step.type).toBe('n8n-nodes-base.httpRequest');
		expect(step.credentials).toBeUndefined();
		expect(step.onError).toBe('continueErrorOutput');
		expect(step.position[1]).toBeLessThan(settle.position[1]);
		expect(step.parameters).toMatchObject({ method: 'POST', sendBody: true, specifyBody: 'json' });
		// The event's key travels to the API, as its idempotency key and in the body.
		expect(JSON.stringify(step.parameters.headerParameters)).toContain('Idempotency-Key');
		expect(String(step.parameters.jsonBody)).toContain('$json.idempotency.key');
		// A placeholder that can never reach someone else's server.
		expect(new URL(String(step.parameters.url)).hostname).toMatch(/\.invalid$/);
	});
});
