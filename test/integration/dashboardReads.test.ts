import { PostgresKeyStore } from '../../lib/store/postgres/stores';
import { keptInboxItem } from '../../lib/webhook/inbox';
import { REDACTED } from '../../lib/evidence/redactedText';
import { postgresSchemaFixture } from '../support/database';
import { idempotencyOf, runKeyNode } from '../support/nodes';

/*
 * What the dashboard template reads and does through Idempotency Key, on real Postgres: dead
 * letters of the Idempotent Webhook's inbox listed with a redacted preview of their kept event
 * (never headers or credentials), answers per hour, and Claim for Replay handing the kept event
 * back as the trigger's item so the replay runs the same business step.
 */

const TABLE = 'dashboard_keys';
const db = postgresSchemaFixture('dashboard', { keyTables: [TABLE] });
const LEASE = { mode: 'lease' as const, leaseSeconds: 60, retentionSeconds: 86_400, executionId: 'exec-1', workflowId: 'wf-trigger' };

let store: PostgresKeyStore;
beforeAll(() => {
	store = new PostgresKeyStore(db.pool, { schema: db.schema, table: TABLE, createTable: false });
});
const options = () => ({ schemaName: db.schema, tableName: TABLE });

/** An event the trigger accepted at once and whose only run failed: dead-lettered, its item kept. */
async function deadLetter(key: string, body: Record<string, unknown>) {
	const item = keptInboxItem(
		{ body, headers: { 'x-trace': 'trace-7', 'stripe-signature': 't=1,v1=abc' }, query: { page: '1' } },
		Buffer.from(JSON.stringify(body)),
		'application/json',
	)!;
	const [reserved] = await store.reserve(
		[
			{
				key,
				keySource: 'custom',
				payloadHash: null,
				inbox: { owner: 'wf-trigger/node', item, maxAttempts: 1, firstRetryMs: 1000, retryForMs: 3_600_000 },
			},
		],
		LEASE,
	);
	await store.fail([{ key, ownerToken: reserved.ownerToken!, error: 'API answered 500' }]);
}

describe('dead letters on a page', () => {
	beforeAll(async () => {
		await deadLetter('evt:dead', { id: 'evt_dead', type: 'invoice.paid', customer: { api_key: 'sk_live_zz' } });
		// A failed key that is no dead letter (the trigger answered When the Workflow Ends).
		const [plain] = await store.reserve([{ key: 'evt:plain', keySource: 'custom', payloadHash: null }], LEASE);
		await store.fail([{ key: 'evt:plain', ownerToken: plain.ownerToken!, error: 'boom' }]);
	});

	it('List Keys, Dead-Lettered Only, lists only the dead letters; with Redacted Payload Preview, their kept body redacted, no payload, answer or header', async () => {
		const [listed] = await runKeyNode(
			{ operation: 'listKeys', limit: 50, afterKey: '', listFilters: { deadLetteredOnly: true }, payloadPreview: true, options: options() },
			{ items: [{ json: {} }] },
		);
		expect(listed.map((item) => item.json.key)).toEqual(['evt:dead']);
		const json = listed[0].json;
		expect(json).toMatchObject({ status: 'failed', lastError: 'API answered 500', inbox: { deadLettered: true, eventKept: true } });
		expect(JSON.parse(json.payloadPreview as string)).toEqual({ id: 'evt_dead', type: 'invoice.paid', customer: { api_key: REDACTED } });
		expect(json).not.toHaveProperty('payload');
		expect(json).not.toHaveProperty('response');
		expect(JSON.stringify(json)).not.toMatch(/sk_live_zz|trace-7|stripe-signature|v1=abc/);

		// Without the option: every failed key, payloads as stored, no preview.
		const [all] = await runKeyNode(
			{ operation: 'listKeys', limit: 50, afterKey: '', listFilters: { status: 'failed' }, options: options() },
			{ items: [{ json: {} }] },
		);
		expect(all.map((item) => item.json.key)).toEqual(['evt:dead', 'evt:plain']);
		expect(all[0].json).not.toHaveProperty('payloadPreview');
		expect(all[0].json).toHaveProperty('payload', null);
	});

	it('Get Key with Redacted Payload Preview reads the kept event; a key with nothing kept previews null', async () => {
		const [found] = await runKeyNode(
			{
				operation: 'getKey',
				lookupKey: (index: number) => ['evt:dead', 'evt:plain', 'evt:none'][index],
				payloadPreview: true,
				options: options(),
			},
			{ items: [{ json: {} }, { json: {} }, { json: {} }] },
		);
		expect(found.map((item) => [item.json.key, 'payloadPreview' in item.json ? item.json.payloadPreview : 'absent'])).toEqual([
			['evt:dead', expect.stringContaining('"id":"evt_dead"')],
			['evt:plain', null],
			['evt:none', 'absent'],
		]);
	});

	it('Claim for Replay hands back the kept request (body, kept headers, query); Complete then ends it, the dead letter gone and its kept item dropped', async () => {
		const [claimed, notClaimable] = await runKeyNode(
			{ operation: 'claimForReplay', replayKey: 'evt:dead', leaseSeconds: 300, retentionDays: 30, options: options() },
			{ items: [{ json: { key: 'evt:dead' } }] },
		);
		expect(notClaimable).toEqual([]);
		expect(claimed[0].json).toMatchObject({
			key: 'evt:dead',
			body: { id: 'evt_dead', type: 'invoice.paid' },
			headers: { 'x-trace': 'trace-7' },
			query: { page: '1' },
		});
		expect(claimed[0].json.headers).not.toHaveProperty('stripe-signature');
		expect(idempotencyOf(claimed[0])).toMatchObject({ key: 'evt:dead', outcome: 'replay', attempts: 2 });

		const [done] = await runKeyNode({ operation: 'complete', source: 'item', responseJson: '', options: options() }, { items: claimed });
		expect(done).toHaveLength(1);
		const stored = (await store.getKeys(['evt:dead'], { inboxItem: true })).get('evt:dead')!;
		expect(stored).toMatchObject({ status: 'completed', deadLetteredAt: null, inboxItem: null });
	});
});

describe('Get Stats, Answers Per Hour', () => {
	it('adds each hour with deliveries and its counts per answer; off, the item has no answersPerHour', async () => {
		await store.countAnswer('duplicate');
		await store.countAnswer('duplicate');
		await store.countAnswer('invalid_signature');
		const [[withHours]] = await runKeyNode(
			{ operation: 'stats', windowHours: 24, answersPerHour: true, options: options() },
			{ items: [{ json: {} }] },
		);
		const hours = withHours.json.answersPerHour as Array<Record<string, unknown>>;
		expect(hours).toHaveLength(1);
		expect(hours[0]).toMatchObject({ duplicate: 2, invalid_signature: 1, new: 0 });
		expect(new Date(hours[0].hour as string).getTime() % 3_600_000).toBe(0);
		const [[without]] = await runKeyNode({ operation: 'stats', windowHours: 24, options: options() }, { items: [{ json: {} }] });
		expect(without.json).not.toHaveProperty('answersPerHour');
		expect(without.json.answersInWindow).toMatchObject({ duplicate: 2, invalid_signature: 1 });
	});
});
