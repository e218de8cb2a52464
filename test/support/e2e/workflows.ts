// Test-only workflows derived from the shipped templates, so the suite exercises the templates
// themselves rather than hand-copied look-alikes.
import fs from 'node:fs';
import { TEMPLATES, TEMPLATE_CREDENTIALS } from '../stack/n8nStack';
import { QUEUE } from './topology';
import type { Topology } from './tags';

export { TEMPLATE_CREDENTIALS };

/**
 * JSON that n8n or a workflow file holds (a node's parameters, an item an execution emitted, an
 * answer's body): the tests reach into it member by member and compare it whole with expect.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- its shape is n8n's or the file's, read member by member
export type Json = any;

/** One node of a workflow's JSON (name, type, typeVersion, position, parameters, credentials, …). */
export type WorkflowNode = Json;

/** A change made to each node of a workflow, as a user edits it in the editor. */
export type NodeChange = (node: WorkflowNode) => WorkflowNode;

/** A workflow's JSON, as its file holds it (a shipped template or a copy made from one). */
export interface WorkflowJson {
	id?: string;
	name: string;
	nodes: WorkflowNode[];
	connections: Json;
	settings?: Json;
	pinData?: Json;
	meta?: Json;
	active?: boolean;
	[member: string]: Json;
}

/** A workflow the stack imports: a file, or JSON made here; published or not. */
export type StackWorkflow = { file: string; publish: boolean } | { json: WorkflowJson; publish: boolean };

export const IDS = {
	webhook: 'IdemWebhookTpl01',
	cleanup: 'IdemCleanupTpl01',
	error: 'IdemErrorTpl0001',
	replay: 'IdemReplayTpl001',
	cleanupManual: 'E2eCleanupManual',
	crash: 'E2eCrashLease0001',
	cleanupFrequent: 'E2eCleanupEvery3s',
};
export const WEBHOOK_PATH = 'idempotent-webhook';
export const CRASH_PATH = 'e2e-crash';

/** A shipped template by its name in TEMPLATES ('webhook', 'cleanup', 'error', 'replay', …). */
export function readTemplate(name: string): WorkflowJson {
	return JSON.parse(fs.readFileSync((TEMPLATES as Record<string, string>)[name], 'utf8'));
}

/** The cleanup template with its Schedule Trigger swapped for a Manual Trigger (`n8n execute --id`). */
function cleanupManual(): WorkflowJson {
	const wf = readTemplate('cleanup');
	const schedule = wf.nodes.find((node) => node.type === 'n8n-nodes-base.scheduleTrigger');
	const manual = { ...schedule, name: 'Run now', type: 'n8n-nodes-base.manualTrigger', typeVersion: 1, parameters: {} };
	wf.nodes = wf.nodes.map((node) => (node === schedule ? manual : node));
	const { [schedule.name]: fromSchedule, ...otherConnections } = wf.connections;
	wf.connections = { ...otherConnections, [manual.name]: fromSchedule };
	return { ...wf, id: IDS.cleanupManual, name: 'E2E cleanup (manual trigger copy of the template)' };
}

/** A lease-mode reservation followed by a crash, with the error-workflow template as Error Workflow. */
function crashAfterReserve(): WorkflowJson {
	const webhook = readTemplate('webhook');
	const reserve = webhook.nodes.find((node) => node.type === 'n8n-nodes-idempotency.idempotencyReserve');
	return {
		id: IDS.crash,
		name: 'E2E crash after reserve (error workflow marks failed)',
		nodes: [
			{
				id: 'e2ec0000-0000-4000-8000-000000000001',
				name: 'Webhook',
				type: 'n8n-nodes-base.webhook',
				typeVersion: 2.1,
				position: [0, 0],
				webhookId: 'e2ec0000-0000-4000-8000-00000000a001',
				parameters: { httpMethod: 'POST', path: CRASH_PATH, responseMode: 'lastNode', options: { rawBody: true } },
			},
			{ ...reserve, id: 'e2ec0000-0000-4000-8000-000000000002', position: [220, 0] },
			{
				id: 'e2ec0000-0000-4000-8000-000000000003',
				name: 'Crash',
				type: 'n8n-nodes-base.stopAndError',
				typeVersion: 1,
				position: [440, 0],
				parameters: { errorMessage: 'simulated crash after the reservation' },
			},
		],
		connections: {
			Webhook: { main: [[{ node: reserve.name, type: 'main', index: 0 }]] },
			[reserve.name]: { main: [[{ node: 'Crash', type: 'main', index: 0 }], [], []] },
		},
		settings: { executionOrder: 'v1', errorWorkflow: IDS.error },
		pinData: {},
		active: false,
	};
}

/**
 * Queue mode runs the webhook template as shipped except for two settings a user makes: a short
 * lease (tests of recovery after the lease must fit in minutes) and the error-workflow template as
 * its Error Workflow (Settings → Error Workflow).
 */
function webhookForQueueMode(): WorkflowJson {
	const wf = readTemplate('webhook');
	const reserve = wf.nodes.find((node) => node.type === 'n8n-nodes-idempotency.idempotencyReserve');
	reserve.parameters = { ...reserve.parameters, leaseSeconds: QUEUE.leaseSeconds };
	return { ...wf, settings: { ...wf.settings, errorWorkflow: IDS.error } };
}

/** The cleanup template on a schedule of every few seconds (test 7: cleanup running during a soak). */
function cleanupFrequent(): WorkflowJson {
	const wf = readTemplate('cleanup');
	const schedule = wf.nodes.find((node) => node.type === 'n8n-nodes-base.scheduleTrigger');
	schedule.parameters = { rule: { interval: [{ field: 'seconds', secondsInterval: QUEUE.cleanupEverySeconds }] } };
	return { ...wf, id: IDS.cleanupFrequent, name: `E2E cleanup every ${QUEUE.cleanupEverySeconds} s (copy of the template)` };
}

export function allWorkflows(topology: Topology = 'single'): StackWorkflow[] {
	if (topology === 'queue') {
		return [
			{ json: webhookForQueueMode(), publish: true },
			{ file: TEMPLATES.error, publish: true },
			{ json: cleanupManual(), publish: false },
			// Published by the soak for its own run: every 3 s all tier long it cost n8n about 4 CPU-seconds a minute.
			{ json: cleanupFrequent(), publish: false },
			{ json: crashAfterReserve(), publish: true },
		];
	}
	return [
		{ file: TEMPLATES.webhook, publish: true },
		{ file: TEMPLATES.cleanup, publish: true }, // proves the Schedule Trigger activates
		{ file: TEMPLATES.error, publish: true }, // n8n 2.x runs only published error workflows
		{ file: TEMPLATES.replay, publish: false }, // run by hand (dry run first), never published as shipped
		{ json: cleanupManual(), publish: false },
		{ json: crashAfterReserve(), publish: true },
	];
}
