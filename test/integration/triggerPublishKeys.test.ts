import { HookContext } from 'n8n-core';
import { Workflow, type INode, type IWorkflowExecuteAdditionalData } from 'n8n-workflow';

import { IdempotentWebhook } from '../../nodes/IdempotentWebhook/IdempotentWebhook.node';
import { credentialsHelper, engineBase, nodeTypes, packageNode } from '../support/n8nEngine';

/*
 * A trigger listening to GET gets requests without a body: a Key Source that reads the body (or its hash)
 * has nothing to key on, and every delivery would be refused (503 key_refused). Refused when the workflow is
 * published, through n8n-core's own HookContext (the context n8n gives webhookMethods), with the fix named.
 */

const triggerWith = (parameters: INode['parameters']): INode =>
	packageNode(
		'Idempotent Webhook',
		'idempotentWebhook',
		{ path: 'events', scheme: 'none', store: 'embedded', ...parameters },
		{ typeVersion: 3 },
	);

async function publish(trigger: INode): Promise<string | undefined> {
	const workflow = new Workflow({ id: 'wf-keys', name: 'keys', nodes: [trigger], connections: {}, active: true, nodeTypes });
	const additionalData = engineBase(credentialsHelper({})) as unknown as IWorkflowExecuteAdditionalData;
	const context = new HookContext(workflow, workflow.getNode(trigger.name)!, additionalData, 'trigger', 'activate');
	const methods = new IdempotentWebhook().webhookMethods.default;
	try {
		if (!(await methods.checkExists.call(context))) await methods.create.call(context);
		return undefined;
	} catch (error) {
		return (error as Error).message;
	}
}

describe('the Idempotent Webhook refuses at publish a key read from a body its requests do not carry', () => {
	it.each([
		['GET at the default Key Source (Event ID, Else Body Hash)', { httpMethod: 'GET' }],
		['GET, Body Hash', { httpMethod: 'GET', keySource: 'bodyHash' }],
		['GET, Provider Stripe (the id in the body)', { httpMethod: 'GET', keySource: 'preset', preset: 'stripe' }],
		['GET, Field body.id', { httpMethod: 'GET', keySource: 'field', keyField: 'body.id' }],
	])('%s: refused, the fix named', async (_label, parameters) => {
		expect(await publish(triggerWith(parameters))).toMatch(/listens to GET requests, which carry no body.*query\.<name>/);
	});

	it.each([
		['GET, Field query.event', { httpMethod: 'GET', keySource: 'field', keyField: 'query.event' }],
		['GET, Header', { httpMethod: 'GET', keySource: 'header', headerName: 'X-Event-Id' }],
		['GET, Provider GitHub (its delivery header)', { httpMethod: 'GET', keySource: 'preset', preset: 'github' }],
		['POST (the default) at the default Key Source', {}],
		// A DELETE may carry a body (a provider's JSON): one without is refused delivery by delivery.
		['DELETE at the default Key Source', { httpMethod: 'DELETE' }],
	])('%s: published', async (_label, parameters) => {
		expect(await publish(triggerWith(parameters))).toBeUndefined();
	});
});
