import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import {
	NodeHelpers,
	Workflow,
	type INode,
	type INodeProperties,
	type INodePropertyOptions,
	type INodeTypeDescription,
	type INodeTypes,
} from 'n8n-workflow';

import { IdempotencyKey } from '../../../nodes/IdempotencyKey/IdempotencyKey.node';
import type { KeyOperation } from '../../../nodes/IdempotencyKey/actions/keyOperation';
import { OPERATIONS } from '../../../nodes/IdempotencyKey/actions/operations';

// Idempotency Key is made of one module per operation (nodes/IdempotencyKey/actions/*.operation.ts)
// and one list of them: an operation defined by half, or a description that moved, fails here.

const ACTIONS = path.join(__dirname, '..', '..', '..', 'nodes', 'IdempotencyKey', 'actions');
const operationFiles = () => readdirSync(ACTIONS).filter((file) => file.endsWith('.operation.ts'));

const operationsShowing = (property: INodeProperties, kind: 'show' | 'hide'): unknown[] =>
	(property.displayOptions?.[kind]?.operation as unknown[] | undefined) ?? [];

/** What is missing or dangling in a list of operation modules and the node properties made from it. */
function problemsOf(operations: readonly KeyOperation[], properties: readonly INodeProperties[], files: string[]): string[] {
	const problems: string[] = [];
	const values = operations.map((operation) => operation.value);
	for (const operation of operations) {
		const name = String(operation.value);
		if (typeof operation.value !== 'string' || operation.value === '') problems.push(`an operation without a value`);
		for (const field of ['name', 'action', 'description'] as const) {
			if (typeof operation.option?.[field] !== 'string' || operation.option[field] === '') problems.push(`${name}: no option ${field}`);
		}
		if (!Array.isArray(operation.description)) problems.push(`${name}: no description`);
		if (
			!Array.isArray(operation.outputs) ||
			operation.outputs.length === 0 ||
			operation.outputs.some((output) => typeof output !== 'string' || output === '')
		) {
			problems.push(`${name}: no outputs`);
		}
		if (typeof operation.subtitle !== 'string' || operation.subtitle === '') problems.push(`${name}: no subtitle`);
		if (typeof operation.execute !== 'function') problems.push(`${name}: no execute`);
		const { failedOutput } = operation;
		if (
			failedOutput !== undefined &&
			!(Number.isInteger(failedOutput) && failedOutput >= 0 && failedOutput < (operation.outputs?.length ?? 0))
		) {
			problems.push(`${name}: failedOutput ${failedOutput} is not one of its outputs`);
		}
		for (const property of operation.description ?? []) {
			const shapes = (operation.description ?? []).filter((candidate) => candidate.name === property.name);
			if (!shapes.some((shape) => operationsShowing(shape, 'show').includes(operation.value))) {
				problems.push(`${name}: lists the parameter ${property.name}, which is not shown for it`);
			}
			if (!properties.includes(property)) problems.push(`${name}: its parameter ${property.name} is not in the node's description`);
		}
	}
	if (new Set(values).size !== values.length) problems.push(`an operation value is used twice: ${values.join(', ')}`);
	for (const property of properties) {
		for (const kind of ['show', 'hide'] as const) {
			for (const value of operationsShowing(property, kind)) {
				const operation = operations.find((candidate) => candidate.value === value);
				if (!operation)
					problems.push(
						`the parameter ${property.name} is ${kind === 'show' ? 'shown' : 'hidden'} for ${String(value)}, which is not an operation`,
					);
				else if (kind === 'show' && !operation.description?.includes(property))
					problems.push(`${operation.value}: the parameter ${property.name} is shown for it but not in its description`);
			}
		}
	}
	const operationProperty = properties.find((property) => property.name === 'operation');
	const offered = ((operationProperty?.options ?? []) as INodePropertyOptions[]).map((option) => option.value);
	if ([...offered].sort().join() !== [...values].sort().join())
		problems.push(`the Operation list offers ${offered.join(', ')}, the modules are ${values.join(', ')}`);
	if (!values.includes(operationProperty?.default as string))
		problems.push(`the default operation ${String(operationProperty?.default)} is not an operation`);
	for (const file of files) {
		if (!values.includes(file.replace(/\.operation\.ts$/, ''))) problems.push(`${file} is not in the list of operations`);
	}
	for (const value of values) if (!files.includes(`${value}.operation.ts`)) problems.push(`${value} has no file ${value}.operation.ts`);
	return problems;
}

describe('the list of Idempotency Key operations', () => {
	const properties = new IdempotencyKey().description.properties;

	it('defines every operation whole: option, parameters, outputs, subtitle, execute, a file each, in the Operation list', () => {
		expect(problemsOf(OPERATIONS, properties, operationFiles())).toEqual([]);
	});

	it('shows the Operation list sorted by name, from the modules', () => {
		const operation = properties.find((property) => property.name === 'operation')!;
		const names = (operation.options as INodePropertyOptions[]).map((option) => option.name);
		expect(names).toEqual([...names].sort());
		expect(operation.options).toEqual(
			expect.arrayContaining(
				OPERATIONS.map(({ value, option }) => ({ name: option.name, value, action: option.action, description: option.description })),
			),
		);
	});

	describe('finds an operation defined by half', () => {
		const [first, ...rest] = OPERATIONS;
		const withFirst = (changed: Partial<KeyOperation>) => [{ ...first, ...changed } as KeyOperation, ...rest];

		it.each([
			['no execute', { execute: undefined }, /no execute/],
			['no outputs', { outputs: undefined }, /no outputs/],
			['empty outputs', { outputs: [] }, /no outputs/],
			['no subtitle', { subtitle: undefined }, /no subtitle/],
			['no option', { option: undefined }, /no option name/],
			['a failed output it does not have', { failedOutput: 7 }, /failedOutput 7/],
		])('a module with %s', (_what, changed, problem) => {
			expect(problemsOf(withFirst(changed as Partial<KeyOperation>), properties, operationFiles()).join('\n')).toMatch(problem);
		});

		it('an operation value not in the list (its file is there, the list entry is not)', () => {
			expect(problemsOf(rest, properties, operationFiles()).join('\n')).toMatch(
				new RegExp(`${first.value}.operation.ts is not in the list`),
			);
		});

		it('a parameter shown for an operation that does not exist', () => {
			const orphan: INodeProperties = {
				displayName: 'Orphan',
				name: 'orphan',
				type: 'string',
				default: '',
				displayOptions: { show: { operation: ['nope'] } },
			};
			expect(problemsOf(OPERATIONS, [...properties, orphan], operationFiles()).join('\n')).toMatch(
				/orphan is shown for nope, which is not an operation/,
			);
		});

		it("a parameter shown for an operation but missing from that operation's description", () => {
			expect(problemsOf(withFirst({ description: [] }), properties, operationFiles()).join('\n')).toMatch(
				new RegExp(`${first.value}: the parameter \\w+ is shown for it`),
			);
		});

		it('a parameter a module lists but does not show', () => {
			const [stray] = OPERATIONS.find((operation) => operation.value !== first.value && operation.description.length > 0)!.description;
			expect(problemsOf(withFirst({ description: [...first.description, stray] }), properties, operationFiles()).join('\n')).toMatch(
				new RegExp(`${first.value}: lists the parameter ${stray.name}, which is not shown for it`),
			);
		});
	});
});

describe("Idempotency Key's description, as saved workflows and the editor read it", () => {
	// The description before the operations were split into modules (test/unit/nodes/fixtures):
	// the parameters, defaults, versions and credentials must not change; the outputs and subtitle
	// expressions are made from the list now, so they are compared by what they give.
	const before = JSON.parse(
		readFileSync(path.join(__dirname, 'fixtures', 'idempotency-key-description.json'), 'utf8'),
	) as INodeTypeDescription;
	const now = JSON.parse(JSON.stringify(new IdempotencyKey().description)) as INodeTypeDescription;
	const operations = [...OPERATIONS.map((operation) => operation.value), 'unknownOperation'];
	const sources = ['item', 'reserveNode', 'custom', 'execution'];

	it('is byte-identical apart from the outputs and subtitle expressions', () => {
		const withoutExpressions = ({ outputs: _outputs, subtitle: _subtitle, ...rest }: INodeTypeDescription) => rest;
		// The objects first, for a readable difference; then the text, which also holds the order of keys and parameters.
		expect(withoutExpressions(now)).toEqual(withoutExpressions(before));
		expect(JSON.stringify(withoutExpressions(now))).toBe(JSON.stringify(withoutExpressions(before)));
	});

	it.each(operations)('gives %s the same outputs, evaluated by n8n-workflow', (operation) => {
		const outputsBy = (description: INodeTypeDescription) => {
			const node: INode = {
				id: 'key',
				name: 'Key',
				type: 'n8n-nodes-idempotency.idempotencyKey',
				typeVersion: 2,
				position: [0, 0],
				parameters: { operation },
			};
			const nodeTypes = {
				getByName: () => undefined,
				getByNameAndVersion: () => undefined,
				getKnownTypes: () => ({}),
			} as unknown as INodeTypes;
			const workflow = new Workflow({ id: 'wf', nodes: [node], connections: {}, active: false, nodeTypes });
			return NodeHelpers.getNodeOutputs(workflow, node, description);
		};
		const outputs = outputsBy(now);
		expect(outputs.length).toBeGreaterThan(0);
		expect(outputs).toEqual(outputsBy(before));
	});

	it.each(operations)('gives %s the same subtitle for every Key From', (operation) => {
		const subtitle = (description: INodeTypeDescription, source: string) =>
			String(
				new Function('$parameter', `return (${String(description.subtitle).replace(/^=\{\{([\s\S]*)\}\}$/, '$1')});`)({
					operation,
					source,
				}),
			);
		for (const source of sources) expect(subtitle(now, source)).toBe(subtitle(before, source));
	});
});
