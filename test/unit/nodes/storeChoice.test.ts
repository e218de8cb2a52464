import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
	NodeHelpers,
	Workflow,
	type INode,
	type INodeParameters,
	type INodeProperties,
	type INodePropertyOptions,
	type INodeType,
	type INodeTypes,
} from 'n8n-workflow';

import { IdempotencyExecuteQuery } from '../../../nodes/IdempotencyExecuteQuery/IdempotencyExecuteQuery.node';
import { IdempotencyKey } from '../../../nodes/IdempotencyKey/IdempotencyKey.node';
import { IdempotencyOrderGuard } from '../../../nodes/IdempotencyOrderGuard/IdempotencyOrderGuard.node';
import { IdempotencyReserve } from '../../../nodes/IdempotencyReserve/IdempotencyReserve.node';
import { storeChoice } from '../../../nodes/shared/store';
import { fakeExecuteFunctions } from '../../support/fakeExecuteFunctions';

// The Store parameter and its node versions, resolved by n8n-workflow's own code (the code n8n
// runs when it loads a saved workflow, shows a node, and saves one).

const PACKAGE = 'n8n-nodes-idempotency';
const keepingNodes: INodeType[] = [new IdempotencyReserve(), new IdempotencyKey(), new IdempotencyOrderGuard()];
const byType: Record<string, INodeType> = Object.fromEntries(
	[...keepingNodes, new IdempotencyExecuteQuery()].map((nodeType) => [`${PACKAGE}.${nodeType.description.name}`, nodeType]),
);
// Unknown types (n8n-nodes-base's) are skipped by Workflow, as n8n skips a type it cannot load.
const nodeTypes = {
	getByName: (type: string) => byType[type],
	getByNameAndVersion: (type: string) => byType[type],
	getKnownTypes: () => ({}),
} as unknown as INodeTypes;

/** The parameters n8n gives a node when it loads the workflow: the saved ones, with the defaults of the node's version filled in. */
function loaded(nodes: INode[]): Workflow {
	return new Workflow({ id: 'wf', nodes, connections: {}, active: false, nodeTypes });
}

function savedBeforeStore(): INode[] {
	// The ordered-webhook template as today's package saved it: every node typeVersion 1, no store parameter.
	const file = path.join(__dirname, 'fixtures', 'ordered-webhook-saved-before-store.json');
	return (JSON.parse(readFileSync(file, 'utf8')) as { nodes: INode[] }).nodes;
}

function newNode(nodeType: INodeType, parameters: INodeParameters = {}): INode {
	const { name, defaultVersion } = nodeType.description;
	return { id: name, name, type: `${PACKAGE}.${name}`, typeVersion: defaultVersion as number, position: [0, 0], parameters };
}

function credentialShown(node: INode): boolean {
	const description = byType[node.type].description;
	const [credential] = description.credentials ?? [];
	return NodeHelpers.displayParameter(node.parameters, credential, node, description);
}

const option = (nodeType: INodeType, name: string): INodeProperties =>
	(nodeType.description.properties.find((property) => property.name === 'options')!.options as INodeProperties[]).find(
		(candidate) => candidate.name === name,
	)!;

/** Whether the editor shows an option of the Options collection, given the node's parameters. */
function optionShown(nodeType: INodeType, node: INode, name: string): boolean {
	return NodeHelpers.displayParameter({}, option(nodeType, name), node, nodeType.description, node.parameters);
}

describe('a workflow saved before the Store parameter existed', () => {
	const nodes = savedBeforeStore();
	const keeping = nodes.filter((node) => node.type.startsWith(`${PACKAGE}.`) && node.type !== `${PACKAGE}.webhookSignatureVerify`);

	it('has the nodes that keep keys at version 1, with a Postgres credential and no store parameter', () => {
		expect(keeping.map((node) => node.type).sort()).toEqual(
			expect.arrayContaining([`${PACKAGE}.idempotencyReserve`, `${PACKAGE}.idempotencyKey`, `${PACKAGE}.idempotencyOrderGuard`]),
		);
		for (const node of keeping) {
			expect(node.typeVersion).toBe(1);
			expect(node.parameters).not.toHaveProperty('store');
			expect(node.credentials).toHaveProperty('idempotencyPostgresApi');
		}
	});

	it('keeps every node on Postgres, with its credential shown and required', () => {
		const workflow = loaded(nodes);
		for (const { name } of keeping) {
			const node = workflow.getNode(name)!;
			expect([name, node.parameters.store]).toEqual([name, 'postgres']);
			expect([name, credentialShown(node)]).toEqual([name, true]);
			expect(byType[node.type].description.credentials![0].required).toBe(true);
		}
	});

	it('reaches the node as Postgres at execution', () => {
		const workflow = loaded(nodes);
		const reserve = workflow.getNode('Idempotency Reserve')!;
		const context = fakeExecuteFunctions({ parameters: reserve.parameters, items: [], credential: {} });
		expect(storeChoice(context)).toBe('postgres');
	});
});

describe.each(keepingNodes.map((nodeType) => [nodeType.description.displayName, nodeType] as const))('%s', (_name, nodeType) => {
	it('offers versions 1 and 2 for saved workflows, and version 3 to new nodes', () => {
		expect(nodeType.description.version).toEqual([1, 2, 3]);
		expect(nodeType.description.defaultVersion).toBe(3);
	});

	it('a new node (the default version, no store parameter) uses Automatic, with no credential shown', () => {
		const node = loaded([newNode(nodeType)]).getNode(nodeType.description.name)!;
		expect(node.parameters.store).toBe('automatic');
		expect(credentialShown(node)).toBe(false);
	});

	it('a node saved at version 2 without a store parameter keeps Embedded', () => {
		const node = loaded([{ ...newNode(nodeType), typeVersion: 2 }]).getNode(nodeType.description.name)!;
		expect(node.parameters.store).toBe('embedded');
		expect(credentialShown(node)).toBe(false);
	});

	it('a new node switched to Postgres shows the credential', () => {
		const node = loaded([newNode(nodeType, { store: 'postgres' })]).getNode(nodeType.description.name)!;
		expect(node.parameters.store).toBe('postgres');
		expect(credentialShown(node)).toBe(true);
	});

	it('is saved without the store parameter when it is the default of the version, with it otherwise', () => {
		const saved = (typeVersion: number, store: string) => {
			const node = { ...newNode(nodeType, { store }), typeVersion };
			return NodeHelpers.getNodeParameters(nodeType.description.properties, node.parameters, false, false, node, nodeType.description)!;
		};
		expect(saved(1, 'postgres')).not.toHaveProperty('store');
		expect(saved(2, 'embedded')).not.toHaveProperty('store');
		expect(saved(3, 'automatic')).not.toHaveProperty('store');
		expect(saved(1, 'embedded').store).toBe('embedded');
		expect(saved(2, 'postgres').store).toBe('postgres');
		expect(saved(2, 'automatic').store).toBe('automatic');
		expect(saved(3, 'embedded').store).toBe('embedded');
		expect(saved(3, 'postgres').store).toBe('postgres');
	});

	it('offers Automatic on every version', () => {
		for (const typeVersion of [1, 2, 3]) {
			const node = { ...newNode(nodeType), typeVersion };
			const [store] = nodeType.description.properties.filter(
				(property) => property.name === 'store' && NodeHelpers.displayParameter({}, property, node, nodeType.description),
			);
			expect([typeVersion, (store.options as INodePropertyOptions[]).map((option) => option.value)]).toEqual([
				typeVersion,
				['automatic', 'embedded', 'postgres'],
			]);
		}
	});

	it('shows the Embedded notice for Embedded only, and the Automatic notice, saying what it picks, for Automatic only', () => {
		const notice = (name: string) => nodeType.description.properties.find((property) => property.name === name)!;
		const shown = (name: string, store: string) =>
			NodeHelpers.displayParameter({ store }, notice(name), newNode(nodeType), nodeType.description);
		expect(notice('embeddedNotice').type).toBe('notice');
		expect(notice('embeddedNotice').displayName).toMatch(/persistent volume/);
		expect(notice('embeddedNotice').displayName).toMatch(/Postgres/);
		expect([shown('embeddedNotice', 'embedded'), shown('embeddedNotice', 'postgres'), shown('embeddedNotice', 'automatic')]).toEqual([
			true,
			false,
			false,
		]);
		expect(notice('automaticNotice').type).toBe('notice');
		expect(notice('automaticNotice').displayName).toMatch(/one process: a file on this host/);
		expect(notice('automaticNotice').displayName).toMatch(/Queue mode: n8n's own Postgres database/);
		expect(notice('automaticNotice').displayName).toMatch(/refused/);
		expect([shown('automaticNotice', 'automatic'), shown('automaticNotice', 'embedded'), shown('automaticNotice', 'postgres')]).toEqual([
			true,
			false,
			false,
		]);
	});

	it('offers only the table name for Embedded and Automatic; schema (and table creation) for Postgres', () => {
		const postgres = newNode(nodeType, { store: 'postgres' });
		for (const store of ['embedded', 'automatic']) {
			const keeping = newNode(nodeType, { store });
			expect([store, optionShown(nodeType, keeping, 'tableName')]).toEqual([store, true]);
			expect([store, optionShown(nodeType, keeping, 'schemaName')]).toEqual([store, false]);
			if (nodeType.description.name !== 'idempotencyKey')
				expect([store, optionShown(nodeType, keeping, 'createTable')]).toEqual([store, false]);
		}
		expect(optionShown(nodeType, postgres, 'schemaName')).toBe(true);
		if (nodeType.description.name !== 'idempotencyKey') expect(optionShown(nodeType, postgres, 'createTable')).toBe(true);
	});
});

describe('Idempotency Reserve', () => {
	it('offers On Store Unavailable (Let Through) for Postgres only', () => {
		const reserve = new IdempotencyReserve();
		expect(optionShown(reserve, newNode(reserve, { store: 'postgres' }), 'onStoreUnavailable')).toBe(true);
		expect(optionShown(reserve, newNode(reserve, { store: 'embedded' }), 'onStoreUnavailable')).toBe(false);
	});
});

describe('Idempotency Execute Query (Postgres only)', () => {
	const executeQuery = new IdempotencyExecuteQuery();
	const node: INode = { ...newNode(executeQuery), typeVersion: 1 };

	it('has no Store parameter, and says in the editor that it works with Postgres only', () => {
		const properties = executeQuery.description.properties;
		expect(properties.some((property) => property.name === 'store')).toBe(false);
		const notice = properties.find((property) => property.name === 'postgresOnlyNotice')!;
		expect(notice.type).toBe('notice');
		expect(notice.displayName).toMatch(/Postgres only/);
		expect(executeQuery.description.credentials).toEqual([expect.objectContaining({ name: 'idempotencyPostgresApi', required: true })]);
		expect(executeQuery.description.credentials![0].displayOptions).toBeUndefined();
	});

	it('still shows the schema, table creation and On Store Unavailable options', () => {
		for (const name of ['schemaName', 'createTable', 'onStoreUnavailable', 'tableName']) {
			expect([name, optionShown(executeQuery, node, name)]).toEqual([name, true]);
		}
	});
});
