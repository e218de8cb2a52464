import type { IExecuteFunctions, INodeParameters } from 'n8n-workflow';

import { InvalidConfigurationError } from '../../lib/errors';
import { storePlaceOf, type StorePlace } from './store';
import { defaultStoreOfVersion, storeOptionName, storeSettingOf, type StoreSetting } from './storeChoice';

const KEY_TYPE_SUFFIX = '.idempotencyKey';
// The operations that settle a key an upstream Reserve node reserved (Custom and Failed Execution name their keys themselves).
const SETTLING = new Set(['settle', 'complete', 'release', 'fail']);
const OWN_KEY_SOURCES = new Set(['item', 'reserveNode']);

/** A node's Store from its saved parameters: its Store, else the default of its version (nodes/shared/storeChoice.ts). */
export function storeOfNode(node: { typeVersion: number; parameters?: INodeParameters }): StoreSetting {
	return storeSettingOf(node.parameters?.store, defaultStoreOfVersion(node.typeVersion));
}

/**
 * Refuses, before anything is reserved, a Reserve node whose keys a downstream Idempotency Key node
 * would settle in the other store: a node added to a workflow saved with Postgres gets Embedded by
 * default, and its Release or Mark Failed would find no key there, leaving the real one reserved
 * (every retry a Duplicate: the event lost).
 */
export function assertSameStoreDownstream(context: IExecuteFunctions, store: StoreSetting): void {
	const self = context.getNode().name;
	// Compared by where the keys go in this process: Automatic is the embedded file on one process.
	const place = storePlaceOf(store);
	const mismatched = context
		.getChildNodes(self, { includeNodeParameters: true })
		.filter(
			(node) =>
				!node.disabled &&
				node.type.endsWith(KEY_TYPE_SUFFIX) &&
				settlesReservedKeys(node.parameters) &&
				storePlaceOf(storeOfNode(node)) !== place,
		);
	if (mismatched.length === 0) return;
	const names = mismatched.map((node) => `"${node.name}" (${label(storePlaceOf(storeOfNode(node)))})`).join(', ');
	throw new InvalidConfigurationError(
		`"${self}" keeps its keys in ${label(place)}, but ${names} after it would settle them in another store and find none. Nothing was reserved. Set Store to ${storeOptionName(store)} on ${mismatched.length === 1 ? 'that node' : 'those nodes'} (or change it on this one).`,
	);
}

function settlesReservedKeys(parameters: INodeParameters | undefined): boolean {
	const operation = String(parameters?.operation ?? '');
	if (!SETTLING.has(operation)) return false;
	return operation === 'settle' || OWN_KEY_SOURCES.has(String(parameters?.source ?? 'item'));
}

const PLACE_LABELS: Record<StorePlace, string> = {
	embedded: 'Embedded (This n8n Host)',
	postgres: 'Postgres',
	n8nDatabase: "Automatic: n8n's own Postgres in queue mode",
};

function label(place: StorePlace): string {
	return PLACE_LABELS[place];
}
