import { join } from 'node:path';

import type { INodeType, IWorkflowBase } from 'n8n-workflow';

import { connectionSettings, postgresSchemaFixture } from './database';
import {
	baseNodesInstalled,
	effects,
	effectsFor,
	loadBaseNodeFiles,
	loadBaseNodes,
	n8nInstallDirectory,
	TestEffect,
	TestEffectOnce,
} from './n8nBaseNodes';
import { addNodeTypes, engineWithUpAndDownCredentials, PACKAGE, type EngineBase } from './n8nEngine';
import { inProcessDeliveries, is2xx, keyStatesIn, settleWorkflow, type Shape } from './settleWorkflows';

/*
 * The harness of the settle shape tests (test/integration/settleShapes*.test.ts): n8n-core's
 * WorkflowExecute with n8n-nodes-base's own nodes, a real Postgres schema for the keys, the test
 * effects, and a provider that redelivers the whole delivery until it gets a 2xx.
 */

export { describeWithN8n } from './n8nBaseNodes';

/** n8n-nodes-base nodes the shape tests use beyond test/support/n8nBaseNodes.ts, by type: their files. */
const SHAPE_NODES = {
	'n8n-nodes-base.switch': 'Switch/Switch.node.js',
	'n8n-nodes-base.aggregate': 'Transform/Aggregate/Aggregate.node.js',
	'n8n-nodes-base.splitOut': 'Transform/SplitOut/SplitOut.node.js',
	'n8n-nodes-base.stopAndError': 'StopAndError/StopAndError.node.js',
	'n8n-nodes-base.removeDuplicates': 'Transform/RemoveDuplicates/RemoveDuplicates.node.js',
	'n8n-nodes-base.set': 'Set/Set.node.js',
	'n8n-nodes-base.postgres': 'Postgres/Postgres.node.js',
} as const;

export interface ShapeHarnessOptions {
	/** n8n-nodes-base nodes beyond the base ones. */
	baseNodes?: Array<keyof typeof SHAPE_NODES>;
	/** The test file's own node types, by name under the package (`${PACKAGE}.<name>`). */
	testNodes?: Record<string, INodeType>;
	/** Execute Workflow's sub-workflows (Source: Parameter) run in-process. */
	subWorkflows?: boolean;
	/** n8n's own Postgres credential (for n8n-nodes-base's Postgres node), on the test server. */
	n8nPostgres?: boolean;
}

type Body = { id: string } & Record<string, unknown>;

/** One test file's harness: its keys in their own schema (`prefix`), its execution ids prefixed with it. */
export function shapeHarness(prefix: string, options: ShapeHarnessOptions = {}) {
	const db = postgresSchemaFixture(prefix, { keyTables: ['processed_events'] });
	let base: EngineBase;
	const deliveries = inProcessDeliveries(prefix, () => base);
	const states = keyStatesIn(db);

	beforeAll(() => {
		if (!baseNodesInstalled()) return;
		const files = Object.fromEntries((options.baseNodes ?? []).map((type) => [type, SHAPE_NODES[type]]));
		addNodeTypes({
			...loadBaseNodes(),
			...loadBaseNodeFiles(files),
			[`${PACKAGE}.testEffect`]: new TestEffect(),
			[`${PACKAGE}.testEffectOnce`]: new TestEffectOnce(),
			...Object.fromEntries(Object.entries(options.testNodes ?? {}).map(([name, type]) => [`${PACKAGE}.${name}`, type])),
		});
		const engine = engineWithUpAndDownCredentials(connectionSettings());
		base = options.n8nPostgres ? withN8nPostgresCredential(engine) : engine;
		if (options.subWorkflows) deliveries.runSubWorkflowsInProcess();
	});

	beforeEach(() => {
		effects.length = 0;
	});

	const provider = (data: IWorkflowBase, bodies: Body[], maxDeliveries = 6) =>
		deliveries.provider(data, bodies, states.statuses, maxDeliveries);

	/** A refusal before anything is reserved: 503, no effect, no key; `reason`, when given, in the run's record. */
	async function expectRefused(data: IWorkflowBase, bodies: Body[], reason?: string): Promise<void> {
		const ids = bodies.map((body) => body.id);
		const refused = await deliveries.deliver(data, bodies);
		if (reason) expect(JSON.stringify(refused.run.data.resultData.runData)).toContain(reason);
		expect({ answer: refused.answer, effects: ids.map(effectsFor), states: await states.statuses(ids) }).toEqual({
			answer: 503,
			effects: ids.map(() => 0),
			states: ids.map(() => undefined),
		});
	}

	/**
	 * What a trustworthy package does with a delivery: refuses it before anything is reserved (503, no effect, no
	 * key), or, through the provider's retries, ends with `perEvent` effects per event, every key completed and a 2xx.
	 */
	async function oneEffectEachOrRefused(data: IWorkflowBase, bodies: Body[], perEvent = 1): Promise<void> {
		const ids = bodies.map((body) => body.id);
		const first = await deliveries.deliver(data, bodies);
		if (first.answer === 503 && ids.every((id) => effectsFor(id) === 0)) {
			expect(await states.statuses(ids)).toEqual(ids.map(() => undefined));
			return;
		}
		const answers = [first.answer];
		let lost: string[] = [];
		if (is2xx(first.answer)) {
			const settled = await states.statuses(ids);
			lost = ids.filter((_, index) => settled[index] !== 'completed');
		} else {
			const retried = await provider(data, bodies);
			answers.push(...retried.answers);
			lost = retried.lost;
		}
		expect({ lost, effects: ids.map(effectsFor), last: answers[answers.length - 1] }).toEqual({
			lost: [],
			effects: ids.map(() => perEvent),
			last: 200,
		});
	}

	return {
		db,
		deliveries,
		...states,
		workflow: (id: string, shape: Shape) => settleWorkflow(db.schema, id, shape),
		provider,
		expectRefused,
		oneEffectEachOrRefused,
	};
}

/** The package's credentials, plus n8n's own Postgres credential on the test server. */
function withN8nPostgresCredential(engine: EngineBase): EngineBase {
	const own = engine.credentialsHelper;
	const { host, port, database, user, password } = connectionSettings();
	const postgres = {
		host,
		port,
		database,
		user,
		password,
		ssl: 'disable',
		allowUnauthorizedCerts: false,
		sshTunnel: false,
		maxConnections: 5,
	};
	const helper = {
		...own,
		getDecrypted: async (additionalData: unknown, details: unknown, type: string) =>
			type === 'postgres' ? postgres : await (own.getDecrypted as (...args: unknown[]) => Promise<unknown>)(additionalData, details, type),
		getCredentialsProperties: (type: string) => (type === 'postgres' ? postgresCredentialProperties() : own.getCredentialsProperties(type)),
	};
	return { ...engine, credentialsHelper: helper as unknown as typeof own };
}

/** n8n-nodes-base's Postgres credential's properties, as n8n reads them to fill its defaults. */
function postgresCredentialProperties() {
	const directory = join(n8nInstallDirectory(), 'node_modules', 'n8n-nodes-base', 'dist', 'credentials');
	const { createRequire } = (process as unknown as { getBuiltinModule(id: string): typeof import('node:module') }).getBuiltinModule(
		'node:module',
	);
	const module = createRequire(join(directory, 'package.json'))(join(directory, 'Postgres.credentials.js')) as Record<
		string,
		new () => { properties: unknown[] }
	>;
	const [Credential] = Object.values(module);
	return new Credential().properties as never;
}
