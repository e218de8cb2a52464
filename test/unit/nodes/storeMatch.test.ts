import type { IExecuteFunctions, INodeParameters, NodeTypeAndVersion } from 'n8n-workflow';

import { InvalidConfigurationError } from '../../../lib/errors';
import { assertSameStoreDownstream, storeOfNode } from '../../../nodes/shared/storeMatch';

// Reserve refuses, before it reserves, an Idempotency Key node after it that would settle its keys
// in the other store. Which downstream nodes count, and each node's store from its saved form.

const KEY = 'n8n-nodes-idempotency.idempotencyKey';

function contextWith(children: Array<Partial<NodeTypeAndVersion> & { parameters?: INodeParameters }>): IExecuteFunctions {
	const nodes = children.map((child, index) => ({ name: `Key ${index}`, type: KEY, typeVersion: 2, disabled: false, ...child }));
	return {
		getNode: () => ({ name: 'Idempotency Reserve' }),
		getChildNodes: (_name: string, options?: { includeNodeParameters?: boolean }) =>
			options?.includeNodeParameters ? nodes : nodes.map(({ parameters: _parameters, ...node }) => node),
	} as unknown as IExecuteFunctions;
}

describe('storeOfNode', () => {
	it.each([
		[1, {}, 'postgres'],
		[2, {}, 'embedded'],
		[1, { store: 'embedded' }, 'embedded'],
		[2, { store: 'postgres' }, 'postgres'],
		[2, {}, 'embedded'],
		[3, {}, 'automatic'],
		[3, { store: 'embedded' }, 'embedded'],
		[2, { store: 'automatic' }, 'automatic'],
	] as const)('typeVersion %p with %j: %s', (typeVersion, parameters, expected) => {
		expect(storeOfNode({ typeVersion, parameters: parameters as INodeParameters })).toBe(expected);
	});
});

describe('assertSameStoreDownstream', () => {
	it.each([
		['Settle After Business Step', { operation: 'settle' }],
		['Complete, Key From Item', { operation: 'complete', source: 'item' }],
		['Release, Key From Idempotency Reserve', { operation: 'release', source: 'reserveNode' }],
		['Mark Failed, Key From Item (the default)', { operation: 'fail' }],
	])('refuses a Key node on the other store that settles the reserved keys: %s', (_name, parameters) => {
		const context = contextWith([{ typeVersion: 2, parameters }]);
		expect(() => assertSameStoreDownstream(context, 'postgres')).toThrow(InvalidConfigurationError);
		expect(() => assertSameStoreDownstream(context, 'postgres')).toThrow(/"Key 0" \(Embedded \(This n8n Host\)\).*Nothing was reserved/);
	});

	it.each([
		['on the same store', { typeVersion: 1, parameters: { operation: 'complete', source: 'item' } }],
		['disabled', { disabled: true, parameters: { operation: 'complete', source: 'item' } }],
		['with Key From Custom (names its own keys)', { parameters: { operation: 'release', source: 'custom' } }],
		['with Key From Failed Execution', { parameters: { operation: 'fail', source: 'execution' } }],
		['reading (Get Key)', { parameters: { operation: 'getKey' } }],
		['cleaning up', { parameters: { operation: 'cleanup' } }],
		['not a Key node', { type: 'n8n-nodes-idempotency.idempotencyOrderGuard', parameters: {} }],
	])('lets a Key node through when it is %s', (_name, child) => {
		expect(() => assertSameStoreDownstream(contextWith([child as never]), 'postgres')).not.toThrow();
	});
});

describe('assertSameStoreDownstream with Store: Automatic', () => {
	const settling = { operation: 'complete', source: 'item' };
	const previousMode = process.env.EXECUTIONS_MODE;
	afterEach(() => {
		if (previousMode === undefined) delete process.env.EXECUTIONS_MODE;
		else process.env.EXECUTIONS_MODE = previousMode;
	});

	it('on one process: Automatic is the embedded file, so Embedded and Automatic nodes match and Postgres does not', () => {
		delete process.env.EXECUTIONS_MODE;
		expect(() => assertSameStoreDownstream(contextWith([{ typeVersion: 2, parameters: settling }]), 'automatic')).not.toThrow();
		expect(() => assertSameStoreDownstream(contextWith([{ typeVersion: 3, parameters: settling }]), 'embedded')).not.toThrow();
		expect(() => assertSameStoreDownstream(contextWith([{ typeVersion: 1, parameters: settling }]), 'automatic')).toThrow(
			/"Key 0" \(Postgres\).*Set Store to Automatic on that node/,
		);
	});

	it("in queue mode: Automatic is n8n's own Postgres, so only Automatic nodes match", () => {
		process.env.EXECUTIONS_MODE = 'queue';
		expect(() => assertSameStoreDownstream(contextWith([{ typeVersion: 3, parameters: settling }]), 'automatic')).not.toThrow();
		expect(() => assertSameStoreDownstream(contextWith([{ typeVersion: 2, parameters: settling }]), 'automatic')).toThrow(
			/keeps its keys in Automatic: n8n's own Postgres in queue mode, but "Key 0" \(Embedded \(This n8n Host\)\)/,
		);
		expect(() => assertSameStoreDownstream(contextWith([{ typeVersion: 1, parameters: settling }]), 'automatic')).toThrow(
			InvalidConfigurationError,
		);
	});
});
