// The embedded-store webhook template (templates/idempotent-webhook-embedded.json) in the running
// n8n: published per test file with the one change a user makes — the business step's URL pointed
// at their API (here the test's sink) — and its keys read back from the store file n8n wrote in its
// user folder, through the installed package's own store (test/support/stack/embeddedStore.js).
import fs from 'node:fs';
import path from 'node:path';
import { readShippedTemplate, withOwnWebhook, publishWorkflow } from './restWorkflows';
import { NODE, eventId, type Harness } from './harness';
import { sleep } from '../stack/childProcesses';
import type { Delivery } from '../stack/n8nStack';
import { embeddedStoreFile, readEmbeddedStore, insertCompletedKeys } from '../stack/embeddedStore';
import { startSink, type Sink } from './sink';
import type { Json, NodeChange, WorkflowJson, WorkflowNode } from './workflows';

export const EMBEDDED_TEMPLATE = 'idempotent-webhook-embedded.json';
/** The embedded template's node names (the same as the Postgres template's but for the business step). */
export const EMB = { ...NODE, business: 'Business Step (call your API)', respond503: 'Respond 503 (not reserved)' };
export const PACKAGE_NODE = (name: string): string => `n8n-nodes-idempotency.${name}`;

/** The answers a warm-up delivery got, in order, and the event's key. */
export interface WarmUp {
	key: string;
	answers: Array<{ status: number; outcome: string | null; error: unknown }>;
}

/** A copy of the embedded template published by publishEmbedded. */
export interface PublishedEmbedded {
	url: string;
	workflowId: string;
	webhookPath: string;
	warmUp: WarmUp | null;
}

/** A key's record in an embedded store file (what the store's getKeys answers). */
export interface EmbeddedKeyRecord {
	key: string;
	status: string;
	attempts: number;
	duplicateCount: number;
	[member: string]: Json;
}

/** The counts of an embedded store file (Get Stats). */
export interface EmbeddedStoreStats {
	total: number;
	processing: number;
	completed: number;
	failed: number;
	[member: string]: Json;
}

/**
 * The Store parameter as the nodes define it, and the node versions whose default store is
 * Embedded (older versions keep Postgres: saved workflows do not change on an upgrade).
 */
export const STORE = { parameter: 'store', embedded: 'embedded', postgres: 'postgres' };
export const EMBEDDED_VERSIONS: Record<string, number> = { idempotencyReserve: 2, idempotencyKey: 2, idempotencyOrderGuard: 2 };

/** A package node switched to Store: Embedded, as a user does in the editor (no Postgres credential left). */
export function toEmbeddedStore(node: WorkflowNode): WorkflowNode {
	const short = node.type.replace(/^n8n-nodes-idempotency\./, '');
	if (!(short in EMBEDDED_VERSIONS) || short === node.type) return node;
	const { idempotencyPostgresApi, ...credentials } = node.credentials ?? {};
	const out = { ...node, typeVersion: EMBEDDED_VERSIONS[short], parameters: { ...node.parameters, [STORE.parameter]: STORE.embedded } };
	if (Object.keys(credentials).length) out.credentials = credentials;
	else delete out.credentials;
	return out;
}

/** A package node switched to Store: Postgres with the given Idempotency Postgres credential ({ id, name }). */
export function toPostgresStore(credential: { id: string; name: string }): NodeChange {
	return (node) => {
		const short = node.type.replace(/^n8n-nodes-idempotency\./, '');
		if (!(short in EMBEDDED_VERSIONS) || short === node.type) return node;
		return {
			...node,
			parameters: { ...node.parameters, [STORE.parameter]: STORE.postgres },
			credentials: { ...(node.credentials ?? {}), idempotencyPostgresApi: credential },
		};
	};
}

/** The shipped embedded template with its business step calling `apiUrl`; `change(node)` edits nodes. */
export function embeddedTemplate({ apiUrl, change = (node) => node }: { apiUrl?: string; change?: NodeChange } = {}): WorkflowJson {
	const template = readShippedTemplate(EMBEDDED_TEMPLATE);
	template.nodes = template.nodes
		.map((node) => (node.name === EMB.business && apiUrl ? { ...node, parameters: { ...node.parameters, url: apiUrl } } : node))
		.map(change);
	return template;
}

/**
 * Publishes a copy of the embedded template with a webhook of its own: { url, workflowId,
 * webhookPath, warmUp }. In queue mode one warm-up event is delivered first, retried like a provider
 * until it is processed (workers refuse the embedded store unless their key file is the one the stack
 * names), before the test's own deliveries (`warmUp` = its answers).
 */
export async function publishEmbedded(
	h: Harness,
	label: string,
	{
		apiUrl,
		change,
		settings,
		warmUp = h.topology === 'queue',
		warmUpBody,
	}: {
		apiUrl?: string;
		change?: NodeChange;
		settings?: Record<string, unknown>;
		warmUp?: boolean;
		warmUpBody?: (id: string) => unknown;
	} = {},
): Promise<PublishedEmbedded> {
	const template = embeddedTemplate({ apiUrl, change });
	if (settings) template.settings = { ...template.settings, ...settings };
	const { workflow, webhookPath } = withOwnWebhook(template, label);
	const workflowId = await publishWorkflow(h, workflow, webhookPath);
	const url = `${h.state.baseUrl}/webhook/${webhookPath}`;
	return { url, workflowId, webhookPath, warmUp: warmUp ? await warmUpDelivery(h, url, label, warmUpBody) : null };
}

/** One event (`body(id)`, else a plain one) delivered until a 2xx (at most a minute): the answers, in order, and the event's key. */
export async function warmUpDelivery(h: Harness, url: string, label: string, body?: (id: string) => unknown): Promise<WarmUp> {
	const id = eventId(`warmup_${label.replace(/\W+/g, '_')}`);
	const event = body ? body(id) : { id, type: 'e2e.warmup' };
	const answers: WarmUp['answers'] = [];
	const deadline = Date.now() + 60000;
	for (;;) {
		const answer: Delivery<Json> = await h.deliver(url, event);
		answers.push({ status: answer.status, outcome: answer.outcome, error: answer.json?.error });
		if (answer.status >= 200 && answer.status < 300) break;
		if (Date.now() > deadline) throw new Error(`the warm-up delivery was never processed: ${JSON.stringify(answers.slice(-3))}`);
		await sleep(1000);
	}
	return { key: `evt:${id}`, answers };
}

/**
 * Queue mode: makes the workers run in `folders` ('shared': main's user folder, one host; 'own':
 * a folder each, what separate hosts look like), restarting them if they run otherwise. Single
 * process: nothing to do.
 */
export async function useWorkerFolders(h: Harness, folders: 'own' | 'shared'): Promise<Json> {
	if (h.topology !== 'queue') return null;
	const result = await h.control('POST /restart-workers', { folders });
	const { workers } = await h.control('GET /processes');
	const expected = folders === 'shared' ? h.state.userFolder : null;
	for (const worker of workers) {
		if (!worker.alive) throw new Error(`worker ${worker.index + 1} is not running after the switch to ${folders} folders`);
		if (expected && worker.userFolder !== expected)
			throw new Error(`worker ${worker.index + 1} runs in ${worker.userFolder}, not main's folder`);
		if (!expected && worker.userFolder === h.state.userFolder) throw new Error(`worker ${worker.index + 1} still runs in main's folder`);
	}
	return { ...result, workers };
}

/**
 * The start of a test file on the embedded template: the workers in main's folder (queue mode: one
 * host), the test's sink as the user's API, and the template published calling it. Returns { api, webhook }.
 */
export async function startEmbeddedWebhook(h: Harness, label: string): Promise<{ api: Sink; webhook: PublishedEmbedded }> {
	await useWorkerFolders(h, 'shared');
	const api = await startSink();
	const webhook = await publishEmbedded(h, label, { apiUrl: api.url });
	return { api, webhook };
}

/** startEmbeddedWebhook before the file's tests, the sink closed after them: { api, webhook } once they run. */
export function useEmbeddedWebhook(h: Harness, label: string): { api: Sink; webhook: PublishedEmbedded } {
	const site: { api: Sink | null; webhook: PublishedEmbedded | null } = { api: null, webhook: null };
	beforeAll(async () => Object.assign(site, await startEmbeddedWebhook(h, label)));
	afterAll(async () => site.api?.close());
	return site as { api: Sink; webhook: PublishedEmbedded };
}

/** The embedded store files under an n8n user folder (the database file, not its -wal / -shm). */
export function storeFilesIn(userFolder: string): string[] {
	const storage = path.join(userFolder, '.n8n', 'storage');
	const found: string[] = [];
	const walk = (dir: string) => {
		if (!fs.existsSync(dir)) return;
		for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
			const full = path.join(dir, entry.name);
			if (entry.isDirectory()) walk(full);
			else if (/\.(sqlite|sqlite3|db)$/.test(entry.name)) found.push(full);
		}
	};
	walk(storage);
	return found;
}

/** The key file of an n8n user folder (main's by default); the nodes write nowhere else under storage/. */
export function storeFile(h: Harness, userFolder: string = h.state.userFolder): string {
	const others = storeFilesIn(userFolder).filter((file) => file !== embeddedStoreFile(userFolder));
	if (others.length > 0) throw new Error(`database files in n8n's storage folder other than the package's key file: ${others.join(', ')}`);
	return embeddedStoreFile(userFolder);
}

function readStore(h: Harness, file: string, op: 'getKeys' | 'stats' | 'listKeys', arg: unknown, table?: string): Promise<unknown> {
	return readEmbeddedStore({ nodeBin: h.state.nodeBin, packageDir: h.state.packageDir, file, op, arg, table });
}

/** The stored records of these keys in one store file (in `table`, else the default one): { key: { status, attempts, duplicateCount, … } }. */
export async function storedKeys(
	h: Harness,
	keys: string[],
	{ file = storeFile(h), table }: { file?: string; table?: string } = {},
): Promise<Record<string, EmbeddedKeyRecord>> {
	const records = ((await readStore(h, file, 'getKeys', keys, table)) as EmbeddedKeyRecord[] | null) ?? [];
	return Object.fromEntries(records.map((record) => [record.key, record]));
}

/** { status, attempts, duplicates } of each key (absent keys: null): what the checklist compares. */
export async function keyStates(
	h: Harness,
	keys: string[],
	options?: { file?: string },
): Promise<Record<string, { status: string; attempts: number; duplicates: number } | null>> {
	const records = await storedKeys(h, keys, options);
	return Object.fromEntries(
		keys.map((key) => [
			key,
			records[key] ? { status: records[key].status, attempts: records[key].attempts, duplicates: records[key].duplicateCount } : null,
		]),
	);
}

/** Completed keys written straight into one store file (main's by default): `rows` are [key, firstSeenMs, expiresAtMs]. */
export function insertKeys(h: Harness, rows: Array<Array<string | number>>, { file = storeFile(h) }: { file?: string } = {}): void {
	const keyRows = rows.map(([key, firstSeenMs, expiresAtMs]): [string, number, number] => {
		if (typeof key !== 'string' || typeof firstSeenMs !== 'number' || typeof expiresAtMs !== 'number') {
			throw new Error(`a key row is [key, firstSeenMs, expiresAtMs], not ${JSON.stringify([key, firstSeenMs, expiresAtMs])}`);
		}
		return [key, firstSeenMs, expiresAtMs];
	});
	insertCompletedKeys({ nodeBin: h.state.nodeBin, packageDir: h.state.packageDir, file, rows: keyRows });
}

/** The store's counts (Get Stats) of one file; zeros when the file does not exist yet. */
export async function storeStats(
	h: Harness,
	{ file = storeFile(h), windowHours = 24 }: { file?: string; windowHours?: number } = {},
): Promise<EmbeddedStoreStats> {
	return (
		((await readStore(h, file, 'stats', String(windowHours))) as EmbeddedStoreStats | null) ?? {
			total: 0,
			processing: 0,
			completed: 0,
			failed: 0,
		}
	);
}
