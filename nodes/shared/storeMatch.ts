import type { IExecuteFunctions, INodeParameters } from 'n8n-workflow';

import { InvalidConfigurationError } from '../../lib/errors';
import type { StoreBackend } from '../../lib/store/contract';

const KEY_TYPE_SUFFIX = '.idempotencyKey';
// The operations that settle a key an upstream Reserve node reserved (Custom and Failed Execution name their keys themselves).
const SETTLING = new Set(['settle', 'complete', 'release', 'fail']);
const OWN_KEY_SOURCES = new Set(['item', 'reserveNode']);

/** A node's store from its saved parameters: its Store, else the default of its version (1: Postgres; later: Embedded). */
export function storeOfNode(node: { typeVersion: number; parameters?: INodeParameters }): StoreBackend {
	const store = node.parameters?.store;
	if (store === 'embedded' || store === 'postgres') return store;
	return node.typeVersion === 1 ? 'postgres' : 'embedded';
}

/**
 * Refuses, before anything is reserved, a Reserve node whose keys a downstream Idempotency Key node
 * would settle in the other store: a node added to a workflow saved with Postgres gets Embedded by
 * default, and its Release or Mark Failed would find no key there, leaving the real one reserved
 * (every retry a Duplicate: the event lost).
 */
export function assertSameStoreDownstream(context: IExecuteFunctions, store: StoreBackend): void {
	const self = context.getNode().name;
	const mismatched = context
		.getChildNodes(self, { includeNodeParameters: true })
		.filter(
			(node) =>
				!node.disabled && node.type.endsWith(KEY_TYPE_SUFFIX) && settlesReservedKeys(node.parameters) && storeOfNode(node) !== store,
		);
	if (mismatched.length === 0) return;
	const names = mismatched.map((node) => `"${node.name}" (${label(storeOfNode(node))})`).join(', ');
	throw new InvalidConfigurationError(
		`"${self}" keeps its keys in ${label(store)}, but ${names} after it would settle them in the other store and find none. Nothing was reserved. Set Store to ${label(store)} on ${mismatched.length === 1 ? 'that node' : 'those nodes'} (or on this one).`,
	);
}

function settlesReservedKeys(parameters: INodeParameters | undefined): boolean {
	const operation = String(parameters?.operation ?? '');
	if (!SETTLING.has(operation)) return false;
	return operation === 'settle' || OWN_KEY_SOURCES.has(String(parameters?.source ?? 'item'));
}

function label(store: StoreBackend): string {
	return store === 'embedded' ? 'Embedded (This n8n Host)' : 'Postgres';
}
