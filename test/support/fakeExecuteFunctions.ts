import type { IDataObject, IExecuteFunctions, INode, INodeExecutionData, IRunExecutionData, IWorkflowSettings } from 'n8n-workflow';

import type { ConnectionSettings } from '../../lib/store/postgres/connectionSettings';

/** A node parameter: a fixed value, or a function of the item index (what an expression would give). */
export type FakeParameter = unknown | ((itemIndex: number) => unknown);

export interface FakeContextOptions {
	parameters: Record<string, FakeParameter>;
	items: INodeExecutionData[];
	credential: ConnectionSettings | Record<string, unknown>;
	continueOnFail?: boolean;
	executionId?: string;
	workflowId?: string;
	/** What `getInstanceId()` returns: the n8n instance (installation) the run belongs to. */
	instanceId?: string;
	/** What `getWorkflowSettings()` returns (n8n gives {} when nothing is set). */
	workflowSettings?: IWorkflowSettings;
	/** The executions n8n keeps, by id, as `getExecutionDataById` gives them. */
	executionRecords?: Record<string, IRunExecutionData>;
}

/**
 * The small part of n8n's IExecuteFunctions the package's nodes use — n8n has no published node
 * test harness, and its own node tests fake this the same way. The database behind it is real.
 */
export function fakeExecuteFunctions(options: FakeContextOptions): IExecuteFunctions {
	const node: INode = {
		id: 'node-under-test',
		name: 'Node Under Test',
		type: 'n8n-nodes-idempotency.test',
		typeVersion: 1,
		position: [0, 0],
		parameters: {},
	};
	const credential =
		'host' in options.credential && 'maxConnections' in options.credential
			? { ...options.credential, ignoreSslIssues: (options.credential as ConnectionSettings).allowUnauthorizedCerts }
			: options.credential;
	const context = {
		getInputData: () => options.items,
		getNode: () => node,
		getNodeParameter: (name: string, itemIndex: number, fallback?: unknown) => {
			if (!(name in options.parameters)) {
				if (fallback !== undefined) return fallback;
				throw new Error(`Test did not set parameter "${name}"`);
			}
			const value = options.parameters[name];
			return typeof value === 'function' ? (value as (index: number) => unknown)(itemIndex) : value;
		},
		getCredentials: async () => credential,
		continueOnFail: () => options.continueOnFail ?? false,
		getExecutionId: () => options.executionId ?? 'exec-1',
		getInstanceId: () => options.instanceId ?? 'instance-1',
		getWorkflow: () => ({ id: options.workflowId ?? 'wf-1', name: 'Test workflow', active: true }),
		getWorkflowSettings: () => options.workflowSettings ?? {},
		getExecutionDataById: async (executionId: string) => options.executionRecords?.[executionId],
		// A lone node: nothing downstream (the settle wiring check finds no Settle node).
		getChildNodes: () => [],
		// n8n's execution lifecycle hooks and workflow, as Reserve looks for them: this execution never
		// ends, so nothing is settled at its end.
		additionalData: { hooks: { addHandler: () => {}, runHook: async () => {} } },
		workflow: { nodes: {}, connectionsBySourceNode: {} },
		helpers: {
			getBinaryDataBuffer: async (itemIndex: number, property: string) => {
				const binary = options.items[itemIndex].binary?.[property];
				if (!binary) throw new Error(`No binary property ${property}`);
				return Buffer.from(binary.data, 'base64');
			},
		},
	};
	return context as unknown as IExecuteFunctions;
}

/** An item as n8n's Webhook node emits it (Raw Body on: the bytes in binary property `data`). */
export function webhookItem(body: unknown, headers: IDataObject = {}, rawBody?: string | Buffer): INodeExecutionData {
	const raw = rawBody ?? (typeof body === 'string' ? body : JSON.stringify(body));
	return {
		json: { headers: { 'content-type': 'application/json', ...headers }, params: {}, query: {}, body: body as never },
		binary: {
			data: { data: Buffer.from(raw).toString('base64'), mimeType: 'application/json', fileName: 'body' },
		},
	};
}
