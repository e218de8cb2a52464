// Several events in one delivery (the trigger's Events Path), in a real n8n: a HubSpot-like sender
// posts batches of events, some events repeated across batches, and retries every batch not
// answered 2xx; one event's step fails once. Every event must end with exactly one effect, in both
// Respond modes. In queue mode the batches go to the `n8n webhook` process, their executions run on
// the workers, and the keys are in the Postgres store (separate hosts share no file).
// e2e-tags: single queue
import { harness, eventId, type DeliveryAnswer } from '../support/e2e/harness';
import { storedKeys } from '../support/e2e/embedded';
import { eventually } from '../support/e2e/eventually';
import { startSink, type Sink } from '../support/e2e/sink';
import { postgresKeys, publishTrigger, triggerBase, triggerKey, TRIGGER } from '../support/e2e/trigger';
import type { NodeChange } from '../support/e2e/workflows';

const DELIVERIES = 20;
const EVENTS_PER_DELIVERY = 5;
/** Each delivery starts 3 events after the one before: neighbours share 2 events. */
const STRIDE = 3;

/**
 * The trigger at version 3 reading the events at body.events, Respond as given; the business step
 * set to "Continue (using error output)", as the publish check asks of a step that gets a delivery's
 * events together (each event's failure is then its own).
 */
function batches(respond: 'workflowEnds' | 'atOnce'): NodeChange {
	return (node) =>
		node.type === TRIGGER.type
			? {
					...node,
					typeVersion: 3,
					parameters: {
						...node.parameters,
						respond,
						options: { eventsPath: 'body.events' },
						...(respond === 'atOnce' ? { firstRetrySeconds: 1, maxAttempts: 5 } : {}),
					},
				}
			: node.name === TRIGGER.business
				? { ...node, onError: 'continueErrorOutput' }
				: node;
}

/** A sender retrying a batch not answered 2xx, every 500 ms, for at most `budgetMs`: every answer, in order. */
async function sendUntilAccepted(h: ReturnType<typeof harness>, url: string, body: unknown, budgetMs = 40_000): Promise<DeliveryAnswer[]> {
	const answers: DeliveryAnswer[] = [];
	for (const deadline = Date.now() + budgetMs; ; await new Promise((resolve) => setTimeout(resolve, 500))) {
		const answer = await h.deliver(url, body);
		answers.push(answer);
		if (answer.status >= 200 && answer.status < 300) return answers;
		if (Date.now() > deadline)
			throw new Error(`never accepted: ${JSON.stringify(answers.slice(-3).map((a) => [a.status, a.text.slice(0, 200)]))}`);
	}
}

describe('the Idempotent Webhook trigger, several events per delivery', () => {
	const h = harness();
	let api: Sink;
	let baseUrl: string;
	const queue = h.topology === 'queue';
	/** Each key's record, from the store the topology uses. */
	const keyRecords = async (keys: string[]) => (queue ? await postgresKeys(h, keys) : await storedKeys(h, keys));

	beforeAll(async () => {
		api = await startSink();
		({ baseUrl } = await triggerBase(h));
	});
	afterAll(async () => {
		await api?.close();
	});

	test.each(['workflowEnds', 'atOnce'] as const)(
		'Respond %s: 20 deliveries of 5 events, events repeated across deliveries, one failing once, the sender retrying: one effect per event',
		async (respond) => {
			const { url, workflowId } = await publishTrigger(h, `batches-${respond}`, {
				apiUrl: api.url,
				baseUrl,
				change: batches(respond),
				...(queue ? { template: 'idempotent-webhook-trigger-postgres.json' } : {}),
			});
			const unique = DELIVERIES * STRIDE;
			const ids = Array.from({ length: unique }, (_, index) => eventId(`batch_${respond}_${index}`));
			const keys = ids.map((id) => triggerKey(workflowId, id));
			const deliveries = Array.from({ length: DELIVERIES }, (_, delivery) => ({
				events: Array.from({ length: EVENTS_PER_DELIVERY }, (_, slot) => ({
					id: ids[(delivery * STRIDE + slot) % unique],
					type: 'contact.updated',
				})),
			}));
			// An event carried by two deliveries fails its first run.
			const failing = keys[STRIDE + 1];
			api.failNext(failing, 500, 1);

			// Four senders at a time, as a provider delivers batches in parallel.
			const answers: DeliveryAnswer[][] = [];
			for (let start = 0; start < deliveries.length; start += 4) {
				answers.push(...(await Promise.all(deliveries.slice(start, start + 4).map(async (body) => await sendUntilAccepted(h, url, body)))));
			}
			const statuses = answers.flat().map((answer) => answer.status);
			if (respond === 'workflowEnds') {
				// The failing event's delivery was answered 500 (the end waits for each event's outcome), and retried.
				expect(statuses).toContain(500);
			} else {
				// Accepted once every event of it was kept: the failure is the package's to retry, not the sender's.
				expect(statuses).not.toContain(500);
			}

			const effects = await eventually(
				() => keys.map((key) => api.calls(key)),
				(calls) => calls.every((count) => count === 1),
				{ timeoutMs: 30_000 },
			);
			expect(keys.filter((_, index) => effects[index] !== 1)).toEqual([]);
			const records = await eventually(
				async () => await keyRecords(keys),
				(stored) => keys.every((key) => stored[key]?.status === 'completed'),
			);
			expect(keys.filter((key) => records[key]?.status !== 'completed')).toEqual([]);
			// The failing event ran twice (its step called twice), every other once.
			expect(api.arrivals(failing)).toBe(2);
		},
		90_000,
	);
});
