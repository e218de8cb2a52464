import { NodeConnectionTypes, type INodeProperties } from 'n8n-workflow';

import { postgresOnly, storeProperties } from '../../shared/storeChoice';
import { schemaNameOption, tableNameOption } from '../../shared/tableOptions';
import type { KeyOperation } from './keyOperation';
import { OPERATIONS } from './operations';

/*
 * The parts of the node's description made from the list of operations: the Operation parameter,
 * every operation's parameters, the outputs expression and the subtitle.
 */

const operationProperty: INodeProperties = {
	displayName: 'Operation',
	name: 'operation',
	type: 'options',
	noDataExpression: true,
	options: OPERATIONS.map(({ value, option }) => ({
		name: option.name,
		value,
		action: option.action,
		description: option.description,
	})).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
	// The operation of a node whose workflow saved none (n8n does not save a default): never change it.
	default: 'release',
};

/** The default operation's module (the unit test checks the default is one of the list). */
export const DEFAULT_OPERATION: KeyOperation =
	OPERATIONS.find((operation) => operation.value === operationProperty.default) ?? OPERATIONS[0];

const tableOptionsProperty: INodeProperties = {
	displayName: 'Options',
	name: 'options',
	type: 'collection',
	placeholder: 'Add Option',
	default: {},
	options: [postgresOnly(schemaNameOption), tableNameOption],
};

/** Each operation's parameters in list order, a parameter shared by several operations once. */
const operationProperties = [...new Set(OPERATIONS.flatMap((operation) => operation.description))];

export const keyProperties: INodeProperties[] = [...storeProperties, operationProperty, ...operationProperties, tableOptionsProperty];

const outputsOf = (names: readonly string[]) =>
	JSON.stringify(names.map((displayName) => ({ type: NodeConnectionTypes.Main, displayName })));

/** The outputs of the chosen operation; an unknown one gets the default operation's. */
export const OUTPUTS_BY_OPERATION: `={{${string}}}` = `={{ ${OPERATIONS.filter((operation) => operation !== DEFAULT_OPERATION)
	.map((operation) => `$parameter.operation === ${JSON.stringify(operation.value)} ? ${outputsOf(operation.outputs)} : `)
	.join('')}${outputsOf(DEFAULT_OPERATION.outputs)} }}`;

/** The operation's label, as the Operation list shows it (never its internal value). */
export const SUBTITLE_BY_OPERATION = `={{ {${OPERATIONS.map(
	(operation) => `${JSON.stringify(operation.value)}: ${operation.subtitle}`,
).join(', ')}}[$parameter.operation] || $parameter.operation }}`;
