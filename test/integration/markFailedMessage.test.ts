import { NodeConnectionTypes, type INodeParameters, type IWorkflowBase } from 'n8n-workflow';

import { connectionSettings, postgresSchemaFixture } from '../support/database';
import { webhookItem } from '../support/fakeExecuteFunctions';
import {
	CREDENTIAL_UP,
	engineWithUpAndDownCredentials,
	inProcessWorkflow,
	itemsAt,
	packageNode,
	runWorkflowExecution,
	type EngineBase,
	type OnErrorSetting,
} from '../support/n8nEngine';

/*
 * Mark Failed's default Error Message, resolved by n8n-core's own engine on the items n8n's error
 * output really carries: a Postgres node's (the text in `message`, an `error` object without one),
 * a Code node's (`error` is the text) and an Error Trigger's (`execution.error.message`). The
 * webhook and error-workflow templates mark failed keys with it; an empty lastError would leave the
 * dead-letter view without its reason.
 */

const db = postgresSchemaFixture('markfailed');

const TABLE = 'mark_failed_events';
const FIRST_DEFAULT = '={{ typeof $json.error === "object" ? $json.error.message : $json.error }}';

let base: EngineBase;

beforeAll(() => {
	base = engineWithUpAndDownCredentials(connectionSettings());
});

const credentials = { idempotencyPostgresApi: { id: CREDENTIAL_UP, name: 'Idempotency Postgres' } };
const node = packageNode;
const workflowOf = inProcessWorkflow;
const to = (name: string) => [{ node: name, type: NodeConnectionTypes.Main, index: 0 }];

/** The webhook template's failure path: Reserve → business step (error output) → Mark Failed with its default Key and Error Message. */
function failingWebhook(shape: 'postgres' | 'code', onError: OnErrorSetting, markFailed: INodeParameters = {}): IWorkflowBase {
	return workflowOf(
		'wf-mark-failed',
		[
			node('Webhook', 'testWebhook', {}),
			node(
				'Idempotency Reserve',
				'idempotencyReserve',
				{
					keySource: 'custom',
					customKey: "={{ 'evt:' + $json.body.id }}",
					mode: 'lease',
					leaseSeconds: 120,
					options: { schemaName: db.schema, tableName: TABLE, createTable: true, storePayload: true },
				},
				{ credentials },
			),
			node(
				'Business Step',
				'testFailingStep',
				{ shape, message: `duplicate key value violates unique constraint (${shape})` },
				{ onError },
			),
			node('Succeeded', 'testStep', {}),
			node(
				'Mark Failed',
				'idempotencyKey',
				{ operation: 'fail', source: 'custom', ...markFailed, options: { schemaName: db.schema, tableName: TABLE } },
				{ credentials },
			),
		],
		{
			Webhook: { main: [to('Idempotency Reserve')] },
			'Idempotency Reserve': { main: [to('Business Step'), [], [], []] },
			'Business Step': { main: [to('Succeeded'), to('Mark Failed')] },
		},
	);
}

const stored = async (key: string) =>
	(await db.pool.query(`select status, last_error, payload from ${db.schema}.${TABLE} where key = $1`, [key])).rows[0] as
		| Record<string, unknown>
		| undefined;

describe("Mark Failed's default Error Message, on the error output items n8n really sends", () => {
	it.each(['postgres', 'code'] as const)('a failing %s node: the key is kept failed with the error text and the payload', async (shape) => {
		const id = `evt_mf_${shape}`;
		const run = await runWorkflowExecution(
			failingWebhook(shape, 'continueErrorOutput'),
			`exec-mf-${shape}`,
			[webhookItem({ id, amount: 3 })],
			base,
		);

		expect(run.data.resultData.error).toBeUndefined();
		expect(itemsAt(run, 'Succeeded')).toHaveLength(0);
		expect(itemsAt(run, 'Mark Failed')).toHaveLength(1);
		if (shape === 'postgres') expect(itemsAt(run, 'Mark Failed')[0].json.error).not.toHaveProperty('message');
		expect(await stored(`evt:${id}`)).toEqual({
			status: 'failed',
			last_error: `duplicate key value violates unique constraint (${shape})`,
			payload: { id, amount: 3 },
		});
	});

	it('the first default (`error` only) stored an empty message for the Postgres node: why the default changed', async () => {
		const id = 'evt_mf_first_default';
		await runWorkflowExecution(
			failingWebhook('postgres', 'continueErrorOutput', { errorMessage: FIRST_DEFAULT }),
			'exec-mf-first',
			[webhookItem({ id })],
			base,
		);
		expect(await stored(`evt:${id}`)).toMatchObject({ status: 'failed', last_error: '' });
	});

	it("an Error Trigger item (the error-workflow template, Key From: Failed Execution): the failed execution's message", async () => {
		const id = 'evt_mf_crashed';
		const crashed = await runWorkflowExecution(failingWebhook('code', 'stopWorkflow'), 'exec-mf-crashed', [webhookItem({ id })], base);
		// n8n keeps the failed execution (Save failed production executions, its default): Mark Failed reads its request there.
		base.getRunExecutionData = async (executionId) => (executionId === 'exec-mf-crashed' ? crashed.data : undefined);
		const error = crashed.data.resultData.error;
		expect(error?.message).toBe('duplicate key value violates unique constraint (code)');
		expect(await stored(`evt:${id}`)).toMatchObject({ status: 'processing' });

		const errorTriggerItem = {
			json: {
				execution: { id: 'exec-mf-crashed', error: { message: error!.message }, lastNodeExecuted: 'Business Step' },
				workflow: { id: 'wf-mark-failed' },
			},
		};
		const errorWorkflow = workflowOf(
			'wf-error',
			[
				node('Webhook', 'testWebhook', {}),
				node(
					'Mark Failed',
					'idempotencyKey',
					{ operation: 'fail', source: 'execution', options: { schemaName: db.schema, tableName: TABLE } },
					{ credentials },
				),
			],
			{ Webhook: { main: [to('Mark Failed')] } },
		);
		const handled = await runWorkflowExecution(errorWorkflow, 'exec-mf-error', [errorTriggerItem], base, 'error');

		expect(handled.data.resultData.error).toBeUndefined();
		// Saved without Execution ID and Workflow ID (as a package version without Workflow ID saved it): n8n applies their
		// defaults, which read the Error Trigger's execution and workflow ids.
		expect(itemsAt(handled, 'Mark Failed')[0].json.idempotency).toEqual({
			operation: 'fail',
			executionId: 'exec-mf-crashed',
			workflowId: 'wf-mark-failed',
			failedKeys: [`evt:${id}`],
		});
		expect(await stored(`evt:${id}`)).toEqual({
			status: 'failed',
			last_error: 'duplicate key value violates unique constraint (code)',
			payload: { id },
		});
	});
});
