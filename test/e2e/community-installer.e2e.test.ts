// The package installed the way users install it: through n8n's own community-package installer
// (Settings → Community Nodes calls POST /rest/community-packages), from an npm registry the package
// was published to. n8n's installer runs `npm pack <name>@<version>` against its registry, extracts
// the tarball into ~/.n8n/nodes/node_modules/<name>, strips dev/peer/optional dependencies, runs
// `npm install --ignore-scripts` inside it (that is where `pg` comes from), loads the nodes and records
// the package in its database; updates and uninstalls go through the same service, and in queue mode
// main broadcasts each change and every worker repeats it in its own nodes folder.
//
// The registry is a local verdaccio (test/support/stack/localRegistry.js) holding the packed package;
// everything else (pg) is proxied from the registry npm uses. n8n installs from a registry other than
// the public one only when licensed for it: n8n's own end-to-end mode (E2E_TESTS=true, PATCH
// /rest/e2e/feature) switches that licence on in main; in queue mode the workers get the same switch
// from test/support/e2e/customRegistryLicence.ts. This file starts an n8n of its own (the suite's
// stack has the package installed by hand), in the suite's topology: one process, or queue mode with
// two workers whose nodes folders start empty; its databases live on the suite's Postgres server.
// e2e-tags: single queue compatibility:single
import fs from 'node:fs';
import path from 'node:path';
import type { Client } from 'pg';
import packageJson from '../../package.json';
import * as stack from '../support/stack/n8nStack';
import { startLocalRegistry, repackWithVersion } from '../support/stack/localRegistry';
import { TOPOLOGY, QUEUE } from '../support/e2e/topology';
import { E2E_ROOT } from '../support/e2e/paths';
import { selectedTier } from '../support/e2e/tags';
import { OWNER, harness } from '../support/e2e/harness';
import { readShippedTemplate, withOwnWebhook } from '../support/e2e/restWorkflows';
import type { WorkflowNode } from '../support/e2e/workflows';
import { shootCommunityNodesPage, shootUninstalledWorkflow } from '../support/e2e/communityNodesPage';
import { selectedN8nVersion } from '../support/stack/n8nVersion';

const PACKAGE = stack.PACKAGE_NAME;
const NEXT_VERSION = '0.1.1-e2e';
const queue = TOPOLOGY === 'queue';
const ROUTE = '/community-packages';
// n8n's processes load the licence switch from its TypeScript source, through the register hook.
const REGISTRY_LICENCE_PRELOAD = [
	path.join(__dirname, '..', 'support', 'register-ts.js'),
	path.join(__dirname, '..', 'support', 'e2e', 'customRegistryLicence.ts'),
]
	.map((file) => `--require ${file}`)
	.join(' ');

type Registry = Awaited<ReturnType<typeof startLocalRegistry>>;
type Running = Awaited<ReturnType<typeof stack.startStack>>;
type Rest = ReturnType<typeof stack.restClient>;
// The options of these JavaScript helpers, typed from their parameters (which name only the options with a default).
type PackOptions = Parameters<typeof stack.buildAndPack>[0];
type RegistryOptions = Parameters<typeof startLocalRegistry>[0];
/** package.json of an installed package, with the fields this file reads. */
interface Manifest {
	name: string;
	version: string;
	peerDependencies?: Record<string, string>;
	devDependencies?: Record<string, string>;
}
/** A package as GET /rest/community-packages lists it. */
interface InstalledPackage {
	packageName: string;
	installedVersion: string;
}

/** The node type names the package declares (package.json → n8n.nodes), read from the built files. */
function declaredNodeTypes(): string[] {
	const manifest = packageJson.n8n;
	return manifest.nodes
		.map((file) => {
			// The built node files, found from package.json at run time.
			// eslint-disable-next-line @typescript-eslint/no-require-imports
			const built: Record<string, unknown> = require(path.join(stack.REPO_ROOT, file));
			const NodeClass = Object.values(built).find((value) => typeof value === 'function') as
				| (new () => { description: { name: string } })
				| undefined;
			return `${PACKAGE}.${new NodeClass!().description.name}`;
		})
		.sort();
}

/**
 * The package's node types n8n's editor is served (its Tool variants left out). n8n rewrites that
 * file after an install, update or uninstall; read while 1.x rewrites it, the body is not yet a
 * JSON list: read again until it is.
 */
async function servedPackageTypes(rest: Rest): Promise<string[]> {
	const deadline = Date.now() + 60000;
	for (;;) {
		const types = await rest.request('GET', '/types/nodes.json');
		if (types.status !== 200) throw new Error(`/types/nodes.json answered ${types.status}`);
		if (Array.isArray(types.json)) {
			return [
				...new Set<string>(
					types.json
						.map((type: { name: string }) => type.name)
						.filter((name: string) => name.startsWith(`${PACKAGE}.`) && !name.endsWith('Tool')),
				),
			].sort();
		}
		if (Date.now() > deadline) throw new Error(`/types/nodes.json answered 200 without a JSON list for 60 s: ${types.text.slice(0, 200)}`);
		await new Promise((resolve) => setTimeout(resolve, 500));
	}
}

/** package.json of the package in an n8n process's nodes folder, or null when it is not there. */
function installedManifest(userFolder: string): Manifest | null {
	const file = path.join(userFolder, '.n8n', 'nodes', 'node_modules', PACKAGE, 'package.json');
	return fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : null;
}

async function eventually<T>(what: string, check: () => T | Promise<T>, { timeoutMs = 120000 }: { timeoutMs?: number } = {}): Promise<T> {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const result = await check();
		if (result) return result;
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
		await stack.sleep(500);
	}
}

const eventId = (label: string) => `evt_installer_${label}_${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;

// Install, update and uninstall go through the same service in main whatever the topology; queue
// mode adds the workers repeating each step. On the full tier, where queue mode runs this file too,
// one process adds nothing but a third n8n stack's boots and npm installs: it runs these where the
// tier has no queue-mode run of the file (the compatibility tier).
const describeInstallerFlows = queue || selectedTier() === 'compatibility' ? describe : describe.skip;
describeInstallerFlows(`the package installed through n8n's community-package installer from a registry (${TOPOLOGY})`, () => {
	let registry: Registry;
	let running: Running;
	let rest: Rest;
	let tarball: string;
	let packedVersion: string;
	let workflowId: string;
	let webhookUrl: string;
	const nodeTypes = declaredNodeTypes();
	const firstEvent = eventId('first');

	beforeAll(async () => {
		const log = (line: string) => process.stderr.write(`[installer ${TOPOLOGY}] ${line}\n`);
		const workDir = path.join(E2E_ROOT, `installer-${TOPOLOGY}-${Date.now().toString(36)}`);
		fs.mkdirSync(workDir, { recursive: true });
		const { nodeBin } = stack.ensureN8n({ log });
		tarball = stack.buildAndPack({ outDir: path.join(workDir, 'pack'), log } as PackOptions);
		packedVersion = packageJson.version;
		registry = await startLocalRegistry({ dir: path.join(workDir, 'registry'), nodeBin, packageName: PACKAGE, log } as RegistryOptions);
		registry.publish(tarball);
		log(`published ${path.basename(tarball)} to ${registry.url}`);

		running = await stack.startStack({
			workDir,
			topology: TOPOLOGY,
			...(queue
				? {
						workers: QUEUE.workers,
						workerConcurrency: QUEUE.workerConcurrency,
						workerEnv: { NODE_OPTIONS: REGISTRY_LICENCE_PRELOAD },
					}
				: {}),
			installPackage: false,
			// Databases of its own on the suite's Postgres server.
			postgresUrl: stack.withDatabase(harness().state.appUrl, 'postgres'),
			recreateDbs: true,
			dbNames: { n8n: `n8n_installer_${TOPOLOGY}`, app: `idempotency_installer_${TOPOLOGY}` },
			credentials: stack.templateCredentials,
			env: {
				E2E_TESTS: 'true',
				N8N_COMMUNITY_PACKAGES_REGISTRY: registry.url,
			},
			log,
		});
		rest = stack.restClient(running.baseUrl);
		await rest.ownerLogin(OWNER);
		const licensed = await rest.call('PATCH', '/e2e/feature', { feature: 'feat:communityNodes:customRegistry', enabled: true });
		if (licensed.status !== 200) throw new Error(`PATCH /rest/e2e/feature answered ${licensed.status}: ${licensed.text.slice(0, 300)}`);
	});

	afterAll(async () => {
		await running?.stop();
		await registry?.stop();
	});

	test('install (POST /rest/community-packages, as the Community Nodes page does): listed with its version, its nodes served, installed by n8n with pg', async () => {
		expect(await servedPackageTypes(rest)).toEqual([]);
		expect(installedManifest(running.userFolder)).toBeNull();

		const installed = await rest.call('POST', ROUTE, { name: PACKAGE });
		expect({ status: installed.status, body: installed.status === 200 ? '' : installed.text }).toEqual({ status: 200, body: '' });
		expect(installed.json.data).toMatchObject({ packageName: PACKAGE, installedVersion: packedVersion });
		expect(installed.json.data.installedNodes.map((node: WorkflowNode) => node.type).sort()).toEqual(nodeTypes);

		const listed = await rest.call('GET', ROUTE);
		expect(listed.status).toBe(200);
		expect(listed.json.data.map(({ packageName, installedVersion }: InstalledPackage) => ({ packageName, installedVersion }))).toEqual([
			{ packageName: PACKAGE, installedVersion: packedVersion },
		]);
		expect(await servedPackageTypes(rest)).toEqual(nodeTypes);
		await shootCommunityNodesPage({
			baseUrl: running.baseUrl,
			owner: OWNER,
			packageName: PACKAGE,
			expectText: packedVersion,
			file: `community-nodes-installed-${TOPOLOGY}.png`,
		});

		// n8n's installer, not a plain npm install: it drops the peer dependency from the package.json it
		// extracted, and `pg` came from the registry into the package's own node_modules.
		const manifest = installedManifest(running.userFolder);
		expect(manifest).toMatchObject({ name: PACKAGE, version: packedVersion });
		expect(manifest!.peerDependencies).toBeUndefined();
		expect(manifest!.devDependencies).toBeUndefined();
		const packageDir = path.join(running.userFolder, '.n8n', 'nodes', 'node_modules', PACKAGE);
		expect(fs.existsSync(path.join(packageDir, 'node_modules', 'pg', 'package.json'))).toBe(true);
		expect(fs.existsSync(path.join(packageDir, 'node_modules', 'n8n-workflow'))).toBe(false);

		if (queue) {
			// Each worker installs it into its own nodes folder on main's broadcast.
			for (const folder of running.workers.map((_, i) => path.join(running.workDir, `n8n-worker-${i + 1}`))) {
				await eventually(`the package in ${folder}`, () => installedManifest(folder)?.version === packedVersion);
			}
		}
	});

	test('the webhook template, imported and published with the installed nodes, answers a signed delivery: 200 new, then 200 duplicate', async () => {
		// The tables, from the SQL the installed package ships (and nowhere else).
		const packageDir = path.join(running.userFolder, '.n8n', 'nodes', 'node_modules', PACKAGE);
		expect(fs.readdirSync(path.join(packageDir, 'dist', 'sql', 'postgres', 'migrations', 'keys')).length).toBeGreaterThan(0);
		await stack.withClient(running.appUrl, (client: Client) => stack.prepareTemplateTables(client, { packageDir }));
		const { workflow, webhookPath } = withOwnWebhook(readShippedTemplate('idempotent-webhook.json'), `installer-${TOPOLOGY}`);
		const { name, nodes, connections, settings, pinData, meta } = workflow;
		const saved = await rest.call('POST', '/workflows', { name, nodes, connections, settings, pinData, meta, active: false });
		expect(saved.status).toBe(200);
		workflowId = saved.json.data.id;
		const published = await rest.call('POST', `/workflows/${workflowId}/activate`, { versionId: saved.json.data.versionId });
		expect({ status: published.status, body: published.status === 200 ? '' : published.text }).toEqual({ status: 200, body: '' });
		await eventually(`webhook ${webhookPath}`, () => stack.webhookRegistered(running.n8nDbUrl, webhookPath));
		webhookUrl = running.webhookUrl(webhookPath);

		const event = { id: firstEvent, type: 'invoice.paid' };
		const first = await stack.deliver(webhookUrl, event);
		const again = await stack.deliver(webhookUrl, event);
		expect([first.status, first.outcome]).toEqual([200, 'new']);
		expect([again.status, again.outcome]).toEqual([200, 'duplicate']);

		if (queue) {
			// Production executions run on the workers only: send bursts until each worker has run one.
			const ranOn = new Set<number>();
			for (let burst = 0; burst < 5 && ranOn.size < running.workers.length; burst += 1) {
				const mark = await stack.maxExecutionId(running.n8nDbUrl);
				const answers = await Promise.all(
					Array.from({ length: 8 }, (_, i) => stack.deliver(webhookUrl, { id: eventId(`burst${burst}_${i}`), type: 'invoice.paid' })),
				);
				expect(answers.map((answer) => [answer.status, answer.outcome])).toEqual(answers.map(() => [200, 'new']));
				const executions = await stack.waitForExecutions(
					{ n8nDbUrl: running.n8nDbUrl, n8nDir: running.n8nDir, workflowId, sinceId: mark },
					8,
				);
				for (const worker of running.workers) {
					const { index } = worker;
					if (index === undefined) throw new Error(`${worker.name} has no index among the workers`);
					const workerLog = fs.readFileSync(worker.logFile, 'utf8');
					if (executions.some((execution) => workerLog.includes(`Worker started execution ${execution.id} `))) ranOn.add(index);
				}
			}
			expect([...ranOn].sort()).toEqual(running.workers.map((worker) => worker.index));
		}
	});

	test(`update (PATCH /rest/community-packages) to a newer published version: ${NEXT_VERSION} listed, the workflow keeps working and keeps its keys`, async () => {
		registry.publish(repackWithVersion({ tarball, version: NEXT_VERSION, dir: path.join(running.workDir, 'next-version') }));

		const updated = await rest.call('PATCH', ROUTE, { name: PACKAGE });
		expect({ status: updated.status, body: updated.status === 200 ? '' : updated.text }).toEqual({ status: 200, body: '' });
		expect(updated.json.data).toMatchObject({ packageName: PACKAGE, installedVersion: NEXT_VERSION });

		const listed = await rest.call('GET', ROUTE);
		expect(listed.json.data.map(({ packageName, installedVersion }: InstalledPackage) => ({ packageName, installedVersion }))).toEqual([
			{ packageName: PACKAGE, installedVersion: NEXT_VERSION },
		]);
		expect(installedManifest(running.userFolder)!.version).toBe(NEXT_VERSION);
		expect(await servedPackageTypes(rest)).toEqual(nodeTypes);
		await shootCommunityNodesPage({
			baseUrl: running.baseUrl,
			owner: OWNER,
			packageName: PACKAGE,
			expectText: NEXT_VERSION,
			file: `community-nodes-updated-${TOPOLOGY}.png`,
		});
		if (queue) {
			for (const folder of running.workers.map((_, i) => path.join(running.workDir, `n8n-worker-${i + 1}`))) {
				await eventually(`${NEXT_VERSION} in ${folder}`, () => installedManifest(folder)?.version === NEXT_VERSION);
			}
		}

		const fresh = await stack.deliver(webhookUrl, { id: eventId('after_update'), type: 'invoice.paid' });
		const before = await stack.deliver(webhookUrl, { id: firstEvent, type: 'invoice.paid' });
		expect([fresh.status, fresh.outcome]).toEqual([200, 'new']);
		expect([before.status, before.outcome]).toEqual([200, 'duplicate']);
	});

	test('uninstall (DELETE /rest/community-packages?name=): not listed, its nodes gone, the saved workflow still opens, n8n still serves', async () => {
		const removed = await rest.call('DELETE', `${ROUTE}?name=${encodeURIComponent(PACKAGE)}`);
		expect({ status: removed.status, body: removed.status === 200 ? '' : removed.text }).toEqual({ status: 200, body: '' });

		const listed = await rest.call('GET', ROUTE);
		expect(listed.json.data).toEqual([]);
		expect(await servedPackageTypes(rest)).toEqual([]);
		expect(installedManifest(running.userFolder)).toBeNull();
		if (queue) {
			for (const folder of running.workers.map((_, i) => path.join(running.workDir, `n8n-worker-${i + 1}`))) {
				await eventually(`the package gone from ${folder}`, () => installedManifest(folder) === null);
			}
		}

		// The editor opens the saved workflow (its package nodes shown as missing); nothing crashed.
		const opened = await rest.call('GET', `/workflows/${workflowId}`);
		expect(opened.status).toBe(200);
		const packageNodes = opened.json.data.nodes.filter((node: WorkflowNode) => node.type.startsWith(`${PACKAGE}.`));
		expect(packageNodes.length).toBeGreaterThan(0);
		// In the browser (with E2E_SCREENSHOTS_DIR): the canvas draws every node (sticky notes are
		// drawn apart), the package's node opens on n8n's "not installed" panel naming the package,
		// and the page throws nothing.
		const shown = await shootUninstalledWorkflow({
			baseUrl: running.baseUrl,
			owner: OWNER,
			workflowId,
			node: packageNodes.find((node: WorkflowNode) => node.type === `${PACKAGE}.idempotencyReserve`),
			canvasFile: `uninstalled-workflow-${TOPOLOGY}.png`,
			panelFile: `uninstalled-node-${TOPOLOGY}.png`,
		});
		if (shown) {
			expect(shown.pageErrors).toEqual([]);
			const drawn = opened.json.data.nodes
				.filter((node: WorkflowNode) => node.type !== 'n8n-nodes-base.stickyNote')
				.map((node: WorkflowNode) => node.name);
			expect([...shown.canvasNodes].sort()).toEqual(drawn.sort());
			expect(shown.panelText).toContain('This node is not currently installed');
			expect(shown.panelText).toContain(PACKAGE);
		}
		const delivery = await stack.deliver(webhookUrl, { id: eventId('after_uninstall'), type: 'invoice.paid' });
		expect(delivery.outcome).not.toBe('new');
		const health = await fetch(`${running.baseUrl}/healthz/readiness`);
		expect(health.status).toBe(200);
		expect(running.processes().main.alive).toBe(true);
		for (const worker of running.processes().workers) expect(worker.alive).toBe(true);
	});
});

// n8n 2.x's environment-variable install (1.x has none): N8N_COMMUNITY_PACKAGES_MANAGED_BY_ENV=true
// and N8N_COMMUNITY_PACKAGES name the package; n8n installs it at start, before it serves requests,
// with the same download as the page. The registry licence has to be on at start here, so main gets
// the preload the workers get above. One process is enough: the start-up install is per process.
const envInstallRuns = !queue && Number(selectedN8nVersion().split('.')[0]) >= 2;
(envInstallRuns ? describe : describe.skip)('the package installed by n8n 2.x from N8N_COMMUNITY_PACKAGES at start', () => {
	let registry: Registry;
	let running: Running;
	let rest: Rest;
	let packedVersion: string;

	beforeAll(async () => {
		const log = (line: string) => process.stderr.write(`[env install] ${line}\n`);
		const workDir = path.join(E2E_ROOT, `env-install-${Date.now().toString(36)}`);
		fs.mkdirSync(workDir, { recursive: true });
		const { nodeBin } = stack.ensureN8n({ log });
		const tarball = stack.buildAndPack({ outDir: path.join(workDir, 'pack'), log } as PackOptions);
		packedVersion = packageJson.version;
		registry = await startLocalRegistry({ dir: path.join(workDir, 'registry'), nodeBin, packageName: PACKAGE, log } as RegistryOptions);
		registry.publish(tarball);
		running = await stack.startStack({
			workDir,
			installPackage: false,
			postgresUrl: stack.withDatabase(harness().state.appUrl, 'postgres'),
			recreateDbs: true,
			dbNames: { n8n: 'n8n_env_install', app: 'idempotency_env_install' },
			env: {
				N8N_COMMUNITY_PACKAGES_REGISTRY: registry.url,
				N8N_COMMUNITY_PACKAGES_MANAGED_BY_ENV: 'true',
				N8N_COMMUNITY_PACKAGES: JSON.stringify([{ name: PACKAGE, version: packedVersion }]),
			},
			mainEnv: { NODE_OPTIONS: REGISTRY_LICENCE_PRELOAD },
			log,
		});
		rest = stack.restClient(running.baseUrl);
		await rest.ownerLogin(OWNER);
	});

	afterAll(async () => {
		await running?.stop();
		await registry?.stop();
	});

	test('installed and listed at start with the pinned version, nodes served; the page cannot install, update or uninstall (400)', async () => {
		const listed = await rest.call('GET', ROUTE);
		expect(listed.json.data.map(({ packageName, installedVersion }: InstalledPackage) => ({ packageName, installedVersion }))).toEqual([
			{ packageName: PACKAGE, installedVersion: packedVersion },
		]);
		expect(await servedPackageTypes(rest)).toEqual(declaredNodeTypes());
		const manifest = installedManifest(running.userFolder);
		expect(manifest).toMatchObject({ name: PACKAGE, version: packedVersion });
		expect(manifest!.peerDependencies).toBeUndefined();

		const managed = 'Community packages are managed via environment variables on this instance and cannot be modified through the API.';
		const install = await rest.call('POST', ROUTE, { name: PACKAGE });
		const update = await rest.call('PATCH', ROUTE, { name: PACKAGE });
		const uninstall = await rest.call('DELETE', `${ROUTE}?name=${encodeURIComponent(PACKAGE)}`);
		for (const answer of [install, update, uninstall]) expect([answer.status, answer.json?.message]).toEqual([400, managed]);
		expect(installedManifest(running.userFolder)).toMatchObject({ version: packedVersion });
	});
});
