import { createHmac } from 'node:crypto';

import type { KeyConfig } from '../../../lib/keys/deriveKey';
import { sha256Hex } from '../../../lib/keys/sha256';
import { OUTCOME_HEADER } from '../../../lib/webhook/answers';
import { decideWebhook, type DecideInput, type WebhookDecision, type WebhookStart } from '../../../lib/webhook/decide';
import { MAX_EVENTS_PER_DELIVERY } from '../../../lib/webhook/events';
import { embeddedModule } from '../../support/storeTargets';
import { freshStore, type StoreFixture } from '../../support/stores';

// Several events in one delivery (Events Path): each event keyed as if it were the body, reserved in
// one store call, and started as its own item of one execution; on a real embedded store.

const SECRET = 'whsec_events_secret';
const NOW_SECONDS = 1_700_000_000;
const EVENT_ID: KeyConfig = { strategy: 'auto', onMissingKey: 'bodyHash' };
const INBOX = { owner: 'wf-1/trigger', maxAttempts: 3, firstRetryMs: 30_000, retryForMs: 3_600_000, acceptedBody: { received: true } };

let fixture: StoreFixture;
beforeAll(async () => {
	fixture = await freshStore('embedded', { prefix: 'events' });
});
afterAll(async () => {
	await fixture.close();
	embeddedModule().closeEmbeddedStores();
});
beforeEach(async () => {
	await fixture.clear();
});

/** A signed Stripe-scheme delivery of `body` (the signature over the whole request), decided with `eventsPath`. */
async function deliver(
	body: string,
	eventsPath: string,
	overrides: Partial<DecideInput> & { key?: KeyConfig } = {},
): Promise<WebhookDecision> {
	const rawBody = Buffer.from(body, 'utf8');
	const signature = createHmac('sha256', SECRET).update(`${NOW_SECONDS}.`).update(rawBody).digest('hex');
	return await decideWebhook({
		request: {
			method: 'POST',
			headers: { 'content-type': 'application/json', 'stripe-signature': `t=${NOW_SECONDS},v1=${signature}`, 'x-event-id': 'same' },
			rawBody,
			query: {},
		},
		verification: { scheme: 'stripe', secrets: () => [SECRET] },
		keySettings: { mode: 'lease', leaseSeconds: 300, retentionSeconds: 86_400, key: overrides.key ?? EVENT_ID },
		store: () => fixture.store,
		clock: () => new Date(NOW_SECONDS * 1000),
		workflowId: 'wf-1',
		eventsPath,
		...overrides,
	});
}

function startOf(decision: WebhookDecision): WebhookStart {
	if (!('start' in decision)) throw new Error(`expected a start, got ${JSON.stringify(decision.answer)}`);
	return decision.start;
}

function answerOf(decision: WebhookDecision): Extract<WebhookDecision, { answer: unknown }> {
	if ('start' in decision) throw new Error(`expected an answer, got ${decision.start.events.length} events started`);
	return decision;
}

const keysOf = (start: WebhookStart) => start.events.map((event) => event.idempotency.key);

/** Completes every key a start holds, as its execution's end would. */
async function complete(start: WebhookStart): Promise<void> {
	await fixture.store.complete(
		start.events.map(({ idempotency }) => ({ key: idempotency.key as string, ownerToken: idempotency.ownerToken as string })),
	);
}

describe('decideWebhook with an Events Path', () => {
	it('starts one item per event, each keyed from its event as if it were the body, with its own exact bytes', async () => {
		const events = ['{"id":"evt_a","n":1}', '{ "id" : 12345678901234567891 }', '{"type":"no.id"}'];
		const start = startOf(await deliver(`[${events.join(', ')}]`, 'body'));

		expect(keysOf(start)).toEqual(['evt:evt_a', 'evt:12345678901234567891', `sha256:${sha256Hex(Buffer.from(events[2]))}`]);
		expect(start.events.map((event) => event.rawBody.toString('utf8'))).toEqual(events);
		expect(start.events[0].item).toMatchObject({ body: { id: 'evt_a', n: 1 }, idempotency: { key: 'evt:evt_a', outcome: 'new' } });
		expect(start.events.every((event) => typeof event.idempotency.ownerToken === 'string')).toBe(true);
		expect(start.acceptedAnswer).toBeUndefined();
	});

	it('reads the events at body.events; a key repeated inside the delivery runs once', async () => {
		const start = startOf(await deliver('{"batch":7,"events":[{"id":"a"},{"id":"b"},{"id":"a"}]}', 'body.events'));

		expect(keysOf(start)).toEqual(['evt:a', 'evt:b']);
		expect(await fixture.count()).toBe(2);
	});

	it('runs only the events not done yet; a delivery of copies only is answered 200 duplicate without an execution', async () => {
		const first = startOf(await deliver('[{"id":"c1"},{"id":"c2"}]', 'body'));
		await complete(first);

		const mixed = startOf(await deliver('[{"id":"c2"},{"id":"c3"}]', 'body'));
		expect(keysOf(mixed)).toEqual(['evt:c3']);
		await complete(mixed);

		const copies = answerOf(await deliver('[{"id":"c1"},{"id":"c3"}]', 'body'));
		expect(copies).toMatchObject({ answer: { status: 200, body: { status: 'duplicate' } }, counted: 'duplicate' });
		expect(copies.answer.headers[OUTCOME_HEADER]).toBe('duplicate');
	});

	it('answers 409 while an event of the delivery runs elsewhere, and frees the events it reserved for the retry', async () => {
		startOf(await deliver('[{"id":"held"}]', 'body'));

		const answer = answerOf(await deliver('[{"id":"other"},{"id":"held"}]', 'body'));
		expect(answer).toMatchObject({ answer: { status: 409 }, counted: 'in_progress', key: 'evt:held' });
		// Freed: the retry of the delivery runs it (its first attempt was never run).
		expect(keysOf(startOf(await deliver('[{"id":"other"}]', 'body')))).toEqual(['evt:other']);
	});

	it('answers an empty array 200 with nothing reserved or run', async () => {
		const answer = answerOf(await deliver('{"events":[]}', 'body.events'));
		expect(answer).toMatchObject({ answer: { status: 200, body: { status: 'no_events' } }, counted: 'duplicate' });
		expect(await fixture.count()).toBe(0);
	});

	it.each([
		['an object', '{"events":{"id":"x"}}', 'body.events'],
		['nothing', '{"items":[{"id":"x"}]}', 'body.events'],
		['a string (a body that is not JSON)', 'id=x', 'body'],
	])('refuses a delivery whose Events Path leads to %s (503, nothing reserved)', async (_case, body, eventsPath) => {
		const answer = answerOf(await deliver(body, eventsPath));
		expect(answer).toMatchObject({ answer: { status: 503, body: { error: 'events_not_found' } }, counted: 'key_refused' });
		expect(JSON.stringify(answer.answer.body)).not.toContain('"x"');
		expect(await fixture.count()).toBe(0);
	});

	it(`refuses more than ${MAX_EVENTS_PER_DELIVERY} events 413, nothing reserved`, async () => {
		const events = Array.from({ length: MAX_EVENTS_PER_DELIVERY + 1 }, (_, index) => ({ id: `many_${index}` }));
		const answer = answerOf(await deliver(JSON.stringify(events), 'body'));
		expect(answer).toMatchObject({ answer: { status: 413, body: { error: 'too_many_events' } }, counted: 'key_refused' });
		expect(answer.answer.headers[OUTCOME_HEADER]).toBe('not_reserved');
		expect(await fixture.count()).toBe(0);
	});

	it('refuses the whole delivery when one event has no key and the body-hash fallback is off, naming the event', async () => {
		const answer = answerOf(await deliver('[{"id":"ok"},{"type":"no.id"}]', 'body', { key: { ...EVENT_ID, onMissingKey: 'error' } }));
		expect(answer).toMatchObject({
			answer: { status: 503, body: { error: 'key_refused', reason: expect.stringMatching(/^Event 2 of 2: /) } },
		});
		expect(await fixture.count()).toBe(0);
	});

	it.each([
		['Header', { strategy: 'header', headerName: 'x-event-id', onMissingKey: 'bodyHash' }],
		['Custom Value', { strategy: 'custom', onMissingKey: 'bodyHash' }],
		['a preset whose id is a header (GitHub)', { strategy: 'preset', preset: 'github', onMissingKey: 'bodyHash' }],
		['Field outside the body', { strategy: 'field', fieldPath: 'headers.x-event-id', onMissingKey: 'bodyHash' }],
	] as Array<[string, KeyConfig]>)('refuses a Key Source that gives every event the same key: %s', async (_case, key) => {
		const answer = answerOf(await deliver('[{"id":"k1"},{"id":"k2"}]', 'body', { key }));
		expect(answer).toMatchObject({ answer: { status: 503, body: { error: 'key_refused' } } });
		expect(await fixture.count()).toBe(0);
	});

	it('keys by a Field under body read from each event', async () => {
		const key: KeyConfig = { strategy: 'field', fieldPath: 'body.data.ref', onMissingKey: 'error' };
		expect(keysOf(startOf(await deliver('[{"data":{"ref":"r1"}},{"data":{"ref":"r2"}}]', 'body', { key })))).toEqual(['r1', 'r2']);
	});
});

describe('decideWebhook with an Events Path, Respond: At Once', () => {
	it('keeps each event with the request, its body replaced by that event, and answers 200 once every event is kept', async () => {
		const start = startOf(await deliver('{"events":[{"id":"k_a"},{"id":"k_b"}]}', 'body.events', { inbox: INBOX }));

		expect(start.acceptedAnswer).toMatchObject({ status: 200, body: { received: true } });
		expect(start.events.map((event) => event.idempotency.answeredAtOnce)).toEqual([true, true]);
		const records = await fixture.store.getKeys(['evt:k_a', 'evt:k_b'], { inboxItem: true });
		const kept = ['evt:k_a', 'evt:k_b'].map(
			(key) => JSON.parse(records.get(key)!.inboxItem!) as { json: { body: unknown; headers: Record<string, string> }; rawBody: string },
		);
		expect(kept.map(({ json }) => json.body)).toEqual([{ id: 'k_a' }, { id: 'k_b' }]);
		expect(kept.map(({ rawBody }) => Buffer.from(rawBody, 'base64').toString('utf8'))).toEqual(['{"id":"k_a"}', '{"id":"k_b"}']);
		expect(kept[0].json.headers).not.toHaveProperty('stripe-signature');
	});

	it('answers the whole delivery when the workflow ends if one event is too large to keep: no event of it is kept', async () => {
		const large = JSON.stringify({ id: 'k_large', blob: 'x'.repeat(1024 * 1024) });
		const start = startOf(await deliver(`[{"id":"k_small"},${large}]`, 'body', { inbox: INBOX }));

		expect(start.acceptedAnswer).toBeUndefined();
		expect(start.events.map((event) => event.idempotency.answeredAtOnce)).toEqual([undefined, undefined]);
		const records = await fixture.store.getKeys(['evt:k_small', 'evt:k_large']);
		expect([...records.values()].map((record) => record.inboxOwner)).toEqual([null, null]);
	});

	it('runs the kept events, and asks the sender to retry (409) when another event of the delivery is held by a run that may fail', async () => {
		startOf(await deliver('[{"id":"k_held"}]', 'body'));

		const start = startOf(await deliver('[{"id":"k_new"},{"id":"k_held"}]', 'body', { inbox: INBOX }));
		expect(keysOf(start)).toEqual(['evt:k_new']);
		expect(start.acceptedAnswer).toMatchObject({ status: 409, headers: { [OUTCOME_HEADER]: 'in_progress' } });
		// The retry: the kept event is a copy, the held one still held.
		expect(answerOf(await deliver('[{"id":"k_new"},{"id":"k_held"}]', 'body', { inbox: INBOX })).answer.status).toBe(409);
	});
});
