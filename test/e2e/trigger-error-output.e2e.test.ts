// The Idempotent Webhook trigger when the user's business step continues on error (its error output,
// or an error item on its regular output): n8n ends the execution as a success, but the step failed
// for the event. The trigger answers the sender 500 and marks the key failed, so the provider's
// retry runs the step again; a 200 here would lose the event.
// e2e-tags: single queue compatibility
import { harness, eventId } from '../support/e2e/harness';
import { useWorkerFolders } from '../support/e2e/embedded';
import { deliverUntilAccepted, publishTrigger, triggerKey, triggerKeyStates, TRIGGER } from '../support/e2e/trigger';
import { startSink } from '../support/e2e/sink';

/** publishTrigger's options: the API the business step calls, a change to each node. */
type TriggerOptions = Parameters<typeof publishTrigger>[2];

describe('the Idempotent Webhook trigger, a business step set to continue on error', () => {
	const h = harness();
	let api: Awaited<ReturnType<typeof startSink>>;
	const webhooks: Record<string, { url: string; workflowId: string }> = {};

	beforeAll(async () => {
		// Queue mode: Store Automatic needs no shared folder (the keys are in n8n's database).
		await useWorkerFolders(h, 'own');
		api = await startSink();
		for (const onError of ['continueErrorOutput', 'continueRegularOutput']) {
			webhooks[onError] = await publishTrigger(h, `trigger-${onError}`, {
				apiUrl: api.url,
				change: (node) => (node.name === TRIGGER.business ? { ...node, onError } : node),
			} as TriggerOptions);
			// Queue mode: the first run on a worker opens the store; warm it up like a provider retrying.
			if (h.topology === 'queue') await deliverUntilAccepted(h, webhooks[onError].url, { id: eventId('trg_warm'), type: 'e2e.warmup' });
		}
	});
	afterAll(async () => api?.close());

	for (const [onError, label] of [
		['continueErrorOutput', 'Continue (using error output)'],
		['continueRegularOutput', 'Continue (regular output)'],
	]) {
		test(`${label}: the API fails, the execution succeeds, the sender gets 500 and the key is failed; the retry calls the API once`, async () => {
			const webhook = webhooks[onError];
			const mark = await h.executionMark();
			const event = { id: eventId(`trg_${onError}`), type: 'order.created' };
			const key = triggerKey(webhook.workflowId, event.id);
			api.failNext(key, 500);
			const failed = await h.deliver(webhook.url, event);
			expect(failed.status).toBe(500);
			expect(api.calls(key)).toBe(0);
			expect(await triggerKeyStates(h, [key])).toEqual({ [key]: { status: 'failed', attempts: 1, duplicates: 0 } });
			const [first] = await h.waitForExecutions(webhook.workflowId, mark, 1);
			expect(first.status).toBe('success');

			const retried = await h.deliver(webhook.url, event);
			expect([retried.status, retried.outcome]).toEqual([200, 'new']);
			expect(api.calls(key)).toBe(1);
			expect(await triggerKeyStates(h, [key])).toEqual({ [key]: { status: 'completed', attempts: 2, duplicates: 0 } });
			const copy = await h.deliver(webhook.url, event);
			expect([copy.status, copy.outcome]).toEqual([200, 'duplicate']);
			expect(api.calls(key)).toBe(1);
		});
	}
});
