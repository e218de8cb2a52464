import { createHmac } from 'node:crypto';

import { poolFor } from '../../lib/store/postgres/pool';
import { PostgresKeyStore } from '../../lib/store/postgres/stores';
import { FIRST_EXECUTION_HEADER, OUTCOME_HEADER } from '../../lib/webhook/answers';
import { decideWebhook, type WebhookDecision } from '../../lib/webhook/decide';
import { connectionSettings } from '../support/database';
import { BACKENDS, freshStore, type StoreFixture } from '../support/stores';

// The trigger's request half on both real stores: a new event starts an execution, a copy while
// it runs is 409, a copy once it completed replays its stored answer. Two deliveries at once
// reserve the key once.

const SECRET = 'whsec_integration';
const NOW_SECONDS = Math.floor(Date.now() / 1000);

/** A delivery signed with the secret, or sent to an unsigned trigger (Signature Scheme None, no authentication). */
async function deliver(
	fixture: Pick<StoreFixture, 'store'>,
	body: string,
	{ unsigned = false, mode = 'lease' }: { unsigned?: boolean; mode?: 'lease' | 'permanent' } = {},
): Promise<WebhookDecision> {
	const rawBody = Buffer.from(body);
	const signature = createHmac('sha256', SECRET).update(`${NOW_SECONDS}.`).update(rawBody).digest('hex');
	return await decideWebhook({
		request: {
			method: 'POST',
			headers: { 'content-type': 'application/json', ...(unsigned ? {} : { 'stripe-signature': `t=${NOW_SECONDS},v1=${signature}` }) },
			rawBody,
			query: {},
		},
		verification: unsigned ? { scheme: 'none' } : { scheme: 'stripe', secrets: () => [SECRET] },
		keySettings: {
			key: { strategy: 'preset', preset: 'stripe', onMissingKey: 'error' },
			mode,
			leaseSeconds: 300,
			retentionSeconds: 86_400,
		},
		store: () => fixture.store,
		clock: () => new Date(NOW_SECONDS * 1000),
		workflowId: 'wf-webhook',
		instanceId: 'instance-1',
	});
}

describe.each(BACKENDS)('decideWebhook on the %s store', (backend) => {
	let fixture: StoreFixture;
	beforeAll(async () => {
		fixture = await freshStore(backend, { prefix: 'webhook' });
	});
	afterAll(async () => {
		await fixture.close();
	});

	it('starts a new event, answers a copy while it runs 409, and replays the stored answer once it completed', async () => {
		const body = '{"id":"evt_1","type":"invoice.paid"}';

		const first = await deliver(fixture, body);
		if (!('start' in first)) throw new Error(`expected a start, got ${JSON.stringify(first.answer)}`);
		expect(first.start.events[0].idempotency).toMatchObject({ key: 'evt:evt_1', outcome: 'new' });
		expect(await fixture.row('evt:evt_1')).toMatchObject({ status: 'processing', workflow_id: 'wf-webhook', n8n_instance: 'instance-1' });

		const whileRunning = await deliver(fixture, body);
		expect(whileRunning).toMatchObject({ answer: { status: 409, headers: { [OUTCOME_HEADER]: 'in_progress' } } });

		await fixture.store.complete([
			{ key: 'evt:evt_1', ownerToken: first.start.events[0].idempotency.ownerToken as string, response: { received: true } },
		]);
		await fixture.update('evt:evt_1', { executionId: '901' });
		const afterwards = await deliver(fixture, body);
		expect(afterwards).toMatchObject({
			answer: { status: 200, body: { received: true }, headers: { [OUTCOME_HEADER]: 'duplicate', [FIRST_EXECUTION_HEADER]: '901' } },
		});
	});

	it('replays an answer stored with request headers and the idempotency object without them, and none to an unsigned caller', async () => {
		const body = '{"id":"evt_stored_headers"}';
		const first = await deliver(fixture, body);
		if (!('start' in first)) throw new Error(`expected a start, got ${JSON.stringify(first.answer)}`);
		const ownerToken = first.start.events[0].idempotency.ownerToken as string;
		await fixture.store.complete([
			{
				key: 'evt:evt_stored_headers',
				ownerToken,
				response: { received: true, headers: { authorization: 'Bearer sk_live_stored' }, idempotency: { ownerToken } },
			},
		]);
		await fixture.update('evt:evt_stored_headers', { executionId: '902' });

		const signed = await deliver(fixture, body);
		expect(signed).toMatchObject({ answer: { status: 200, headers: { [FIRST_EXECUTION_HEADER]: '902' } } });
		expect((signed as Extract<WebhookDecision, { answer: unknown }>).answer.body).toEqual({ received: true });
		const unsigned = await deliver(fixture, body, { unsigned: true });
		expect(unsigned).toMatchObject({ answer: { status: 200, body: { status: 'duplicate' }, headers: { [OUTCOME_HEADER]: 'duplicate' } } });
		expect(unsigned).not.toHaveProperty(['answer', 'headers', FIRST_EXECUTION_HEADER]);
	});

	it('Permanent (version 1): answers a copy 409 until the run completed the key, then 200 duplicate', async () => {
		const body = '{"id":"evt_permanent"}';

		const first = await deliver(fixture, body, { mode: 'permanent' });
		if (!('start' in first)) throw new Error(`expected a start, got ${JSON.stringify(first.answer)}`);
		expect(await deliver(fixture, body, { mode: 'permanent' })).toMatchObject({
			answer: { status: 409, headers: { [OUTCOME_HEADER]: 'in_progress' } },
		});

		await fixture.store.complete([{ key: 'evt:evt_permanent', ownerToken: first.start.events[0].idempotency.ownerToken as string }]);
		expect(await deliver(fixture, body, { mode: 'permanent' })).toMatchObject({
			answer: { status: 200, body: { status: 'duplicate' }, headers: { [OUTCOME_HEADER]: 'duplicate' } },
		});
	});

	it('starts one execution for two deliveries of one event at once', async () => {
		const body = '{"id":"evt_race"}';

		const decisions = await Promise.all([deliver(fixture, body), deliver(fixture, body)]);

		expect(decisions.filter((decision) => 'start' in decision)).toHaveLength(1);
		expect(decisions.filter((decision) => 'answer' in decision && decision.answer.status === 409)).toHaveLength(1);
	});
});

describe('decideWebhook with Postgres out of reach', () => {
	it('answers 503 not_reserved, naming neither host nor port', async () => {
		const settings = connectionSettings({ port: 1, maxConnections: 1 });
		const unreachable = new PostgresKeyStore(poolFor(settings), { schema: 'public', table: 'processed_events', createTable: false });

		const decision = await deliver({ store: unreachable }, '{"id":"evt_unreachable"}');

		expect(decision).toMatchObject({
			answer: { status: 503, body: { error: 'key_store_unavailable' }, headers: { [OUTCOME_HEADER]: 'not_reserved' } },
		});
		expect(JSON.stringify(decision)).not.toContain(settings.host);
	});
});
