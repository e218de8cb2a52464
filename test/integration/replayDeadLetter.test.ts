import { PostgresKeyStore } from '../../lib/store/postgres/stores';
import { keptInboxItem } from '../../lib/webhook/inbox';
import { postgresSchemaFixture } from '../support/database';
import { idempotencyOf, runKeyNode } from '../support/nodes';

/*
 * An event the Idempotent Webhook accepted At Once that ran out of attempts (dead-lettered), replayed
 * by hand with Claim for Replay once its cause is fixed, on real Postgres: the claim hands back the
 * request the trigger kept (body, query, the headers it kept), never a header it left out.
 */

const db = postgresSchemaFixture('dead_letter');
const TABLE = 'dead_letter_events';

describe('Claim for Replay of a dead-lettered inbox event', () => {
	it('takes the key over and gives the kept request to the replay, so the replayed step runs on the event the sender sent', async () => {
		const store = new PostgresKeyStore(db.pool, { schema: db.schema, table: TABLE, createTable: true });
		const body = { id: 'evt_dead', amount: 10 };
		const item = keptInboxItem(
			{
				headers: { 'content-type': 'application/json', authorization: 'Bearer never-kept', 'x-trace': 't-1' },
				query: { source: 'hook' },
				body,
			},
			Buffer.from(JSON.stringify(body)),
			'application/json',
		)!;
		const [reserved] = await store.reserve(
			[
				{
					key: 'wf:1:evt:evt_dead',
					keySource: 'event_id',
					payloadHash: null,
					inbox: { owner: '1/trigger', item, maxAttempts: 1, firstRetryMs: 1000, retryForMs: 3_600_000 },
				},
			],
			{ mode: 'lease', leaseSeconds: 60, retentionSeconds: 86_400, workflowId: '1' },
		);
		await store.fail([{ key: reserved.key, ownerToken: reserved.ownerToken!, error: 'Business Step: the API answered 500' }]);
		expect((await store.getKeys([reserved.key])).get(reserved.key)!.deadLetteredAt).not.toBeNull();

		const [claimed] = await runKeyNode(
			{
				operation: 'claimForReplay',
				replayKey: () => reserved.key,
				leaseSeconds: 300,
				retentionDays: 30,
				options: { schemaName: db.schema, tableName: TABLE, createTable: false },
			},
			{ items: [{ json: { key: reserved.key } }] },
		);
		expect(claimed).toHaveLength(1);
		expect(claimed[0].json).toMatchObject({ body, payload: body, query: { source: 'hook' }, headers: { 'x-trace': 't-1' } });
		expect(claimed[0].json.headers).not.toHaveProperty('authorization');
		expect(idempotencyOf(claimed[0])).toMatchObject({ key: reserved.key, outcome: 'replay', claimed: true });
		expect((await store.getKeys([reserved.key])).get(reserved.key)).toMatchObject({ status: 'processing', deadLetteredAt: null });
	});
});
