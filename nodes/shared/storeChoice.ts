import type { INodeProperties, INodePropertyOptions } from 'n8n-workflow';

import type { StoreBackend } from '../../lib/store/contract';

/*
 * The Store parameter of every node that keeps keys, and the node versions behind its default.
 * n8n does not save a parameter equal to its default, so a workflow saved with a default has no
 * store parameter, and each default stays with the version it was saved at:
 *
 *   Reserve, Key, Order Guard  version 1: Postgres (saved before the Store parameter existed)
 *                              version 2: Embedded
 *                              version 3: Automatic (the version a new node gets)
 *   Idempotent Webhook         versions 1 and 2: Embedded; version 3: Automatic
 */

/**
 * The versions of Reserve, Key and Order Guard; new nodes get the last. Whole numbers only: n8n 1.x
 * records a community node's latest version in an integer column, and its installer fails on 1.1.
 */
export const STORE_NODE_VERSIONS = [1, 2, 3];
export const STORE_NODE_DEFAULT_VERSION = 3;

/** A value of the Store parameter: a store, or Automatic (lib/store/automatic). */
export type StoreSetting = StoreBackend | 'automatic';

/** The Store parameter's value as a setting; `fallback` when it is none of them. */
export function storeSettingOf(value: unknown, fallback: StoreSetting): StoreSetting {
	return value === 'embedded' || value === 'postgres' || value === 'automatic' ? value : fallback;
}

/** The first version whose Store defaults to Automatic, on every node that has a Store parameter. */
export const AUTOMATIC_STORE_VERSION = 3;

/** The Store default of a Reserve, Key or Order Guard node of this version. */
export function defaultStoreOfVersion(typeVersion: number): StoreSetting {
	if (typeVersion >= AUTOMATIC_STORE_VERSION) return 'automatic';
	return typeVersion === 1 ? 'postgres' : 'embedded';
}

const STORE_OPTIONS: INodePropertyOptions[] = [
	{
		name: 'Automatic',
		value: 'automatic',
		description: "Nothing to set up: a file on this host when n8n runs as one process, n8n's own Postgres in queue mode (see the notice)",
	},
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

/** The label the editor shows for a Store value. */
export function storeOptionName(setting: StoreSetting): string {
	return STORE_OPTIONS.find((option) => option.value === setting)!.name;
}

const STORE_DESCRIPTION = 'Where the keys are kept. Every node that works on the same keys must use the same store.';

function storeParameter(defaultStore: StoreSetting, displayOptions: INodeProperties['displayOptions']): INodeProperties {
	return {
		displayName: 'Store',
		name: 'store',
		type: 'options',
		noDataExpression: true,
		options: STORE_OPTIONS,
		default: defaultStore,
		displayOptions,
		description: STORE_DESCRIPTION,
	};
}

const storeNotices: INodeProperties[] = [
	{
		displayName:
			"Automatic keeps the keys where every n8n process reaches them, with nothing to set up. n8n as one process: a file on this host, as Embedded (in a container, mount a persistent volume for the n8n folder). Queue mode: n8n's own Postgres database, in the package's own table (processed_events, created on first use). n8n in queue mode on another database: refused, nothing reserved.",
		name: 'automaticNotice',
		type: 'notice',
		default: '',
		displayOptions: { show: { store: ['automatic'] } },
	},
	{
		displayName:
			'Keys live in a file on this n8n host (n8n folder/storage/n8n-nodes-idempotency/keys.sqlite). In a container, mount a persistent volume for the n8n folder, or every key is forgotten on restart. Several hosts, or queue mode with workers on other hosts: choose Automatic or Postgres.',
		name: 'embeddedNotice',
		type: 'notice',
		default: '',
		displayOptions: { show: { store: ['embedded'] } },
	},
];

/** The Store parameter of Reserve, Key and Order Guard (one definition per default) and its notices; put first in a node's properties. */
export const storeProperties: INodeProperties[] = [
	storeParameter('postgres', { show: { '@version': [1] } }),
	storeParameter('embedded', { show: { '@version': [2] } }),
	storeParameter('automatic', { hide: { '@version': [1, 2] } }),
	...storeNotices,
];

/** The Store parameter of the Idempotent Webhook trigger: Embedded on versions 1 and 2 (no workflow saved before the trigger had one), Automatic from 3. */
export const triggerStoreProperties: INodeProperties[] = [
	storeParameter('embedded', { show: { '@version': [1, 2] } }),
	storeParameter('automatic', { hide: { '@version': [1, 2] } }),
	...storeNotices,
];

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
