import type { INodeProperties, INodePropertyOptions } from 'n8n-workflow';

/*
 * The Store parameter of every node that keeps keys, and the node versions behind its default.
 * n8n does not save a parameter equal to its default, so a workflow saved before the Store
 * parameter existed has none: on version 1 the default is Postgres (what those workflows use);
 * from version 2, the version a new node gets, it is Embedded.
 */

/**
 * The versions of Reserve, Key and Order Guard; new nodes get the last. Whole numbers only: n8n 1.x
 * records a community node's latest version in an integer column, and its installer fails on 1.1.
 */
export const STORE_NODE_VERSIONS = [1, 2];
export const STORE_NODE_DEFAULT_VERSION = 2;

const STORE_OPTIONS: INodePropertyOptions[] = [
	{
		// n8n is written as n8n writes it, not title-cased.
		// eslint-disable-next-line n8n-nodes-base/node-param-display-name-miscased
		name: 'Embedded (This n8n Host)',
		value: 'embedded',
		description: 'A file in the n8n folder on this host: nothing to set up. One host only (see the notice).',
	},
	{
		name: 'Postgres',
		value: 'postgres',
		description: 'Your Postgres (with a credential): for several hosts or your own retention rules',
	},
];

const STORE_DESCRIPTION = 'Where the keys are kept. Every node that works on the same keys must use the same store.';

/** The Store parameter (one definition per default) and the Embedded notice; put first in a node's properties. */
export const storeProperties: INodeProperties[] = [
	{
		displayName: 'Store',
		name: 'store',
		type: 'options',
		noDataExpression: true,
		options: STORE_OPTIONS,
		default: 'postgres',
		displayOptions: { show: { '@version': [1] } },
		description: STORE_DESCRIPTION,
	},
	{
		displayName: 'Store',
		name: 'store',
		type: 'options',
		noDataExpression: true,
		options: STORE_OPTIONS,
		default: 'embedded',
		displayOptions: { hide: { '@version': [1] } },
		description: STORE_DESCRIPTION,
	},
	{
		displayName:
			'Keys live in a file on this n8n host (n8n folder/storage/n8n-nodes-idempotency/keys.sqlite). In a container, mount a persistent volume for the n8n folder, or every key is forgotten on restart. Several hosts, or queue mode with workers on other hosts: choose Postgres.',
		name: 'embeddedNotice',
		type: 'notice',
		default: '',
		displayOptions: { show: { store: ['embedded'] } },
	},
];

/** The Store parameter of a node with no workflows saved before it had one: Embedded by default, whatever the version. */
export const embeddedFirstStoreProperties: INodeProperties[] = storeProperties
	.filter((property) => property.displayOptions?.show?.['@version'] === undefined)
	.map((property) => (property.name === 'store' ? { ...property, displayOptions: undefined } : property));

/** An option of a node's Options collection that applies to the Postgres store only (hidden for Embedded). */
export function postgresOnly(option: INodeProperties): INodeProperties {
	return { ...option, displayOptions: { show: { '/store': ['postgres'] } } };
}

/** The same option as it is in a node without a Store parameter (Execute Query: Postgres only). */
export function withoutStoreCondition(option: INodeProperties): INodeProperties {
	if (!option.displayOptions?.show?.['/store']) return option;
	const shown = { ...option };
	delete shown.displayOptions;
	return shown;
}
