import { NodeOperationError, type INodeExecutionData } from 'n8n-workflow';

import { connectionSettings, postgresSchemaFixture } from '../support/database';
import { webhookItem } from '../support/fakeExecuteFunctions';
import { idempotencyOf, runReserve } from '../support/nodes';
import { TcpProxy } from '../support/tcpProxy';

const db = postgresSchemaFixture('reserve');

const options = () => ({ schemaName: db.schema, tableName: 'processed_events', createTable: true });
const rowCount = async (table = 'processed_events') =>
	Number((await db.pool.query(`select count(*) from ${db.schema}.${table}`)).rows[0].count);

describe('Idempotency Reserve: the seed experiment', () => {
	it('A → New, A again with another stripe-signature → Duplicate, B → New; a body without id twice → sha256:, then Duplicate', async () => {
		const deliver = (body: unknown, signature: string) =>
			runReserve({ options: { ...options(), output: 'full' } }, { items: [webhookItem(body, { 'stripe-signature': signature })] });

		const [newA, dupA] = await deliver({ id: 'evt_A', type: 'checkout.session.completed' }, 't=1,v1=aaa');
		expect(newA).toHaveLength(1);
		expect(dupA).toHaveLength(0);
		// keySource in the Key Source options' words; the stored key_source keeps its identifier.
		expect(idempotencyOf(newA[0])).toMatchObject({ key: 'evt:evt_A', keySource: 'Event ID', isNew: true, outcome: 'new' });

		const [newA2, dupA2] = await deliver({ id: 'evt_A', type: 'checkout.session.completed' }, 't=2,v1=bbb');
		expect(newA2).toHaveLength(0);
		expect(dupA2).toHaveLength(1);
		expect(idempotencyOf(dupA2[0])).toMatchObject({ key: 'evt:evt_A', isNew: false, outcome: 'duplicate', ownerToken: null });

		const [newB] = await deliver({ id: 'evt_B', type: 'invoice.paid' }, 't=3,v1=ccc');
		expect(idempotencyOf(newB[0])).toMatchObject({ key: 'evt:evt_B', isNew: true });

		const noId = { type: 'ping', at: '2026-11-30T00:00:00Z' };
		const [newHash, dupHash0] = await deliver(noId, 't=4,v1=ddd');
		expect(dupHash0).toHaveLength(0);
		expect(idempotencyOf(newHash[0]).key).toMatch(/^sha256:[0-9a-f]{64}$/);
		expect(idempotencyOf(newHash[0]).keySource).toBe('Body Hash');
		const [newHash2, dupHash] = await deliver(noId, 't=5,v1=eee');
		expect(newHash2).toHaveLength(0);
		expect(idempotencyOf(dupHash[0]).key).toBe(idempotencyOf(newHash[0]).key);

		expect(await rowCount()).toBe(3);
		const stored = await db.pool.query(`select key, key_source from ${db.schema}.processed_events where key in ($1, $2)`, [
			'evt:evt_A',
			idempotencyOf(newHash[0]).key,
		]);
		expect(Object.fromEntries(stored.rows.map((row) => [row.key, row.key_source]))).toEqual({
			'evt:evt_A': 'event-id',
			[String(idempotencyOf(newHash[0]).key)]: 'raw-body-hash',
		});
	});
});

describe('Idempotency Reserve: outputs', () => {
	it('keeps json and binary, sets pairedItem and reports first seen', async () => {
		const items = [webhookItem({ id: 'keep-1', n: 1 }), webhookItem({ id: 'keep-2', n: 2 })];
		const [fresh] = await runReserve({ options: { ...options(), output: 'full' } }, { items, executionId: 'exec-77', workflowId: 'wf-9' });
		expect(fresh.map((item) => item.pairedItem)).toEqual([{ item: 0 }, { item: 1 }]);
		expect(fresh[0].json.body).toEqual({ id: 'keep-1', n: 1 });
		expect(fresh[0].binary?.data.data).toBe(items[0].binary?.data.data);
		expect(idempotencyOf(fresh[0])).toMatchObject({ executionId: 'exec-77', workflowId: 'wf-9', attempts: 1, status: 'completed' });
		expect(Date.parse(String(idempotencyOf(fresh[0]).firstSeen))).not.toBeNaN();
	});

	it('gives duplicates inside one batch exactly one New, and the repeat no owner token', async () => {
		const items = [webhookItem({ id: 'batch-1' }), webhookItem({ id: 'batch-2' }), webhookItem({ id: 'batch-1' })];
		const [fresh, duplicate] = await runReserve({ options: { ...options(), output: 'full' }, mode: 'lease', leaseSeconds: 60 }, { items });
		expect(fresh.map((item) => idempotencyOf(item).key)).toEqual(['evt:batch-1', 'evt:batch-2']);
		expect(duplicate).toHaveLength(1);
		expect(duplicate[0].pairedItem).toEqual({ item: 2 });
		expect(idempotencyOf(duplicate[0])).toMatchObject({ repeatInBatch: true, ownerToken: null });
	});

	it('treats non-webhook items as their own body (batch use)', async () => {
		const [fresh] = await runReserve({ options: options() }, { items: [{ json: { id: 'row-1', total: 5 } }] });
		expect(idempotencyOf(fresh[0]).key).toBe('evt:row-1');
	});

	it('uses a custom business key per item', async () => {
		const items = [
			webhookItem({ subscription_id: 'sub_1', billing_period: '2026-11' }),
			webhookItem({ subscription_id: 'sub_1', billing_period: '2026-11', id: 'evt_other' }),
		];
		const [fresh, duplicate] = await runReserve(
			{
				keySource: 'custom',
				customKey: (i: number) => {
					const body = items[i].json.body as Record<string, string>;
					return `${body.subscription_id}:${body.billing_period}`;
				},
				options: options(),
			},
			{ items },
		);
		expect(fresh).toHaveLength(1);
		expect(duplicate).toHaveLength(1);
		expect(idempotencyOf(fresh[0]).key).toBe('sub_1:2026-11');
	});

	it('uses a table in another schema and name', async () => {
		const [fresh] = await runReserve(
			{ options: { schemaName: db.schema, tableName: 'stripe_keys', createTable: true, scope: 'stripe' } },
			{ items: [webhookItem({ id: 'evt_scoped' })] },
		);
		expect(idempotencyOf(fresh[0]).key).toBe('stripe:evt:evt_scoped');
		expect(await rowCount('stripe_keys')).toBe(1);
	});
});

describe('Idempotency Reserve: bad input', () => {
	it.each(['events; drop table users', 'x"; drop table y; --', '1abc', ''])(
		'refuses table name %p and writes nothing',
		async (tableName) => {
			const before = await rowCount();
			await expect(
				runReserve({ options: { ...options(), tableName: tableName || ' ' } }, { items: [webhookItem({ id: 'inj' })] }),
			).rejects.toThrow(/Invalid table name/);
			expect(await rowCount()).toBe(before);
		},
	);

	it('refuses a schema name with an injection attempt', async () => {
		await expect(
			runReserve({ options: { ...options(), schemaName: 'public; drop schema x' } }, { items: [webhookItem({ id: 'inj' })] }),
		).rejects.toThrow(/Invalid schema name/);
	});

	it('refuses a signature header as the key source, explaining why', async () => {
		await expect(
			runReserve({ keySource: 'header', headerName: 'Stripe-Signature', options: options() }, { items: [webhookItem({ id: 'x' })] }),
		).rejects.toThrow(/change on every retry/);
	});

	it('fails clearly when the id is missing and fallback is off, reserving nothing', async () => {
		const before = await rowCount();
		await expect(
			runReserve({ options: { ...options(), onMissingKey: 'error' } }, { items: [webhookItem({ type: 'no id' })] }),
		).rejects.toThrow(/No idempotency key/);
		expect(await rowCount()).toBe(before);
	});

	it('routes a missing key to Not Reserved with Continue On Fail (never New), and still reserves the other items', async () => {
		const [fresh, duplicate, notReserved] = await runReserve(
			{ options: { ...options(), onMissingKey: 'error' } },
			{ items: [webhookItem({ type: 'no id' }), webhookItem({ id: 'cof-ok' })], continueOnFail: true },
		);
		expect(notReserved).toEqual([{ json: { error: expect.stringMatching(/No idempotency key/) }, pairedItem: { item: 0 } }]);
		expect(fresh).toHaveLength(1);
		expect(idempotencyOf(fresh[0]).key).toBe('evt:cof-ok');
		expect(duplicate).toHaveLength(0);
	});

	it('a key header sent twice with different values fails that item with a clear error (itemIndex), and reserves nothing of the run', async () => {
		const before = await rowCount();
		const parameters = { keySource: 'header', headerName: 'X-Delivery-Id', options: options() };
		const items = [webhookItem({ a: 1 }, { 'x-delivery-id': 'hdr-ok' }), webhookItem({ a: 2 }, { 'x-delivery-id': 'hdr-1, hdr-2' })];
		const error = await runReserve(parameters, { items }).then(
			() => undefined,
			(thrown: unknown) => thrown,
		);
		expect(error).toBeInstanceOf(NodeOperationError);
		expect((error as NodeOperationError).message).toMatch(/^The header "x-delivery-id" was sent more than once with different values/);
		expect((error as NodeOperationError).context.itemIndex).toBe(1);
		expect(await rowCount()).toBe(before);

		// With Continue On Fail the item goes to Not Reserved (never New), the other item is reserved.
		const [fresh, duplicate, notReserved] = await runReserve(parameters, { items, continueOnFail: true });
		expect(fresh.map((item) => idempotencyOf(item).key)).toEqual(['x-delivery-id:hdr-ok']);
		expect(duplicate).toHaveLength(0);
		expect(notReserved).toEqual([
			{ json: { error: expect.stringMatching(/sent more than once with different values/) }, pairedItem: { item: 1 } },
		]);
		expect(await rowCount()).toBe(before + 1);
	});

	it('an error no step expected, after the statement, releases the keys the run reserved and sends its items to Not Reserved under Continue (never New, never a throw n8n would pass on through New)', async () => {
		// An item whose data throws when read whole: the error escapes after its key was reserved.
		const trapped = (id: string): INodeExecutionData => {
			const item = webhookItem({ id });
			Object.defineProperty(item.json, 'unreadable', {
				enumerable: true,
				get: () => {
					throw new Error('This item cannot be read.');
				},
			});
			return item;
		};
		const [fresh, duplicate, notReserved] = await runReserve(
			{ options: options() },
			{ items: [webhookItem({ id: 'escape-ok' }), trapped('escape-trap')], continueOnFail: true },
		);
		expect(fresh).toHaveLength(0);
		expect(duplicate).toHaveLength(0);
		expect(notReserved).toEqual([
			{
				json: { error: expect.stringMatching(/This item cannot be read\. The 2 key\(s\) this run had reserved were released\./) },
				pairedItem: { item: 0 },
			},
			{ json: { error: expect.stringMatching(/This item cannot be read/) }, pairedItem: { item: 1 } },
		]);
		// Released: the provider's retry of either event is processed, not answered as a duplicate.
		const [retried] = await runReserve(
			{ options: options() },
			{ items: [webhookItem({ id: 'escape-ok' }), webhookItem({ id: 'escape-trap' })] },
		);
		expect(retried.map((item) => idempotencyOf(item).key)).toEqual(['evt:escape-ok', 'evt:escape-trap']);

		// Under Stop Workflow the node throws, after releasing the keys just the same.
		await expect(runReserve({ options: options() }, { items: [trapped('escape-stop')] })).rejects.toThrow(
			/This item cannot be read\. The 1 key\(s\) this run had reserved were released\./,
		);
		const [again] = await runReserve({ options: options() }, { items: [webhookItem({ id: 'escape-stop' })] });
		expect(again).toHaveLength(1);
	});

	it('a Standard Webhooks delivery re-sent with its signed id under svix-id instead of webhook-id is a Duplicate, not New', async () => {
		// Both forms verify (the id's value is signed, not its header's name: test/unit/keys/standardWebhooksAliases.test.ts).
		const parameters = { keySource: 'preset', preset: 'standardWebhooks', options: options() };
		const body = { type: 'user.created', data: { id: 'u-1' } };
		const [fresh] = await runReserve(parameters, { items: [webhookItem(body, { 'webhook-id': 'msg_alias_1' })] });
		expect(idempotencyOf(fresh[0]).key).toBe('webhook-id:msg_alias_1');
		const [again, duplicate] = await runReserve(parameters, { items: [webhookItem(body, { 'svix-id': 'msg_alias_1' })] });
		expect(again).toHaveLength(0);
		expect(idempotencyOf(duplicate[0])).toMatchObject({ key: 'webhook-id:msg_alias_1', outcome: 'duplicate' });
		const stored = await db.pool.query(`select count(*) from ${db.schema}.processed_events where key like '%msg_alias_1'`);
		expect(Number(stored.rows[0].count)).toBe(1);
	});

	it('hashes a 10 MB raw body and reserves it once', async () => {
		const big = JSON.stringify({ blob: 'x'.repeat(10 * 1024 * 1024) });
		const item = () => webhookItem(JSON.parse(big), {}, big);
		const [fresh] = await runReserve({ options: options() }, { items: [item()] });
		expect(idempotencyOf(fresh[0]).key).toMatch(/^sha256:[0-9a-f]{64}$/);
		const [, duplicate] = await runReserve({ options: options() }, { items: [item()] });
		expect(duplicate).toHaveLength(1);
	});

	it('stores a 5 KB key as its hash', async () => {
		const [fresh] = await runReserve({ options: { ...options(), output: 'full' } }, { items: [webhookItem({ id: 'k'.repeat(5 * 1024) })] });
		expect(idempotencyOf(fresh[0])).toMatchObject({ keyHashed: true, key: expect.stringMatching(/^long-key-sha256:[0-9a-f]{64}$/) });
	});

	it('hashes a non-JSON body', async () => {
		const [fresh] = await runReserve({ options: options() }, { items: [webhookItem('plain text body', { 'content-type': 'text/plain' })] });
		// printf '%s' 'plain text body' | sha256sum
		expect(idempotencyOf(fresh[0]).key).toBe('sha256:9fc5d90c995fdacb82e2cb454025e169a5b94d0cd31051d23e82d51338311da8');
	});

	it('with Create or Upgrade Table off, says the table is missing and names the SQL files to run', async () => {
		await expect(
			runReserve(
				{ options: { schemaName: db.schema, tableName: 'never_created', createTable: false } },
				{ items: [webhookItem({ id: 'x' })] },
			),
		).rejects.toThrow(
			/sql\/postgres\/migrations\/keys\/001_create_table\.sql, sql\/postgres\/migrations\/keys\/002_migrate_from_seed\.sql/,
		);
	});

	it('fails with a clear error when the database is down, and routes nothing', async () => {
		const down = { ...connectionSettings(), port: 1 };
		await expect(runReserve({ options: options() }, { items: [webhookItem({ id: 'x' })], credential: down })).rejects.toThrow(
			/could not be reached/,
		);
		const [fresh, duplicate, notReserved] = await runReserve(
			{ options: options() },
			{ items: [webhookItem({ id: 'x' })], credential: down, continueOnFail: true },
		);
		// "Nothing reserved" must never leave through New (the business step) or Duplicate (answered 200).
		expect(fresh).toHaveLength(0);
		expect(duplicate).toHaveLength(0);
		expect(notReserved).toEqual([{ json: { error: expect.stringMatching(/could not be reached/) }, pairedItem: { item: 0 } }]);
	});

	it('fails with a clear error for a wrong password', async () => {
		const wrong = { ...connectionSettings(), password: 'definitely-wrong' };
		const attempt = runReserve({ options: options() }, { items: [webhookItem({ id: 'x' })], credential: wrong });
		await expect(attempt).rejects.toThrow(/rejected the credential/);
		await expect(attempt).rejects.not.toThrow(/definitely-wrong/);
	});
});

describe('Idempotency Reserve: a lease shorter than the workflow timeout', () => {
	const leaseRun = (id: string, executionTimeout?: number) =>
		runReserve(
			{ options: options(), mode: 'lease', leaseSeconds: 60 },
			{
				items: [webhookItem({ id }), webhookItem({ id: `${id}-dup` })],
				workflowSettings: executionTimeout === undefined ? {} : { executionTimeout },
			},
		);

	it("warns on the New items, in the user's words, and still reserves them", async () => {
		await runReserve({ options: options(), mode: 'lease', leaseSeconds: 60 }, { items: [webhookItem({ id: 'lw-seen-dup' })] });
		const [fresh, duplicate, inProgress] = await leaseRun('lw-seen', 300);
		expect(fresh).toHaveLength(1);
		expect(idempotencyOf(fresh[0])).toMatchObject({ outcome: 'new', ownerToken: expect.any(String) });
		expect(idempotencyOf(fresh[0]).warnings).toEqual([
			expect.stringMatching(
				/^The lease \(60 s\) is shorter than this workflow's timeout \(300 s\).*run the business step again.*Timeout Workflow/,
			),
		]);
		// Items that do not go on to the business step carry no warning.
		expect([...duplicate, ...inProgress]).toHaveLength(1);
		expect(idempotencyOf([...duplicate, ...inProgress][0]).warnings).toBeUndefined();
	});

	it('no warning when the lease covers the timeout, when there is no timeout (-1 or unset), or in permanent mode', async () => {
		for (const [id, timeout] of [
			['lw-equal', 60],
			['lw-none', -1],
			['lw-unset', undefined],
		] as const) {
			const [fresh] = await leaseRun(id, timeout);
			expect(fresh.length).toBeGreaterThan(0);
			for (const item of fresh) expect(idempotencyOf(item).warnings).toBeUndefined();
		}
		const [fresh] = await runReserve(
			{ options: options() },
			{ items: [webhookItem({ id: 'lw-permanent' })], workflowSettings: { executionTimeout: 3600 } },
		);
		expect(idempotencyOf(fresh[0]).warnings).toBeUndefined();
	});
});

describe('Idempotency Reserve: keys are exact text or refused', () => {
	it('refuses a NUL and lone surrogates per item before the statement; the other items of the batch are reserved', async () => {
		const items = [
			webhookItem({ id: 'exact-nul\u0000' }, {}, '{"id":"exact-nul\\u0000"}'),
			webhookItem({ id: 'exact-a\uD800' }, {}, '{"id":"exact-a\\ud800"}'),
			webhookItem({ id: 'exact-a\uDBFF' }, {}, '{"id":"exact-a\\udbff"}'),
			webhookItem({ id: 'exact-ok' }),
		];
		const [fresh, duplicate, notReserved] = await runReserve({ options: options() }, { items, continueOnFail: true });
		expect(fresh.map((item) => idempotencyOf(item).key)).toEqual(['evt:exact-ok']);
		expect(duplicate).toHaveLength(0);
		expect(notReserved.map((item) => item.pairedItem)).toEqual([{ item: 0 }, { item: 1 }, { item: 2 }]);
		expect(notReserved[0].json.error).toMatch(/NUL character/);
		expect(notReserved[1].json.error).toMatch(/lone UTF-16 surrogate/);
		const rows = await db.pool.query(`select key from ${db.schema}.processed_events where key like 'evt:exact-%' order by key`);
		// Not one row for the two surrogate ids (which node-postgres would both have sent as U+FFFD).
		expect(rows.rows).toEqual([{ key: 'evt:exact-ok' }]);
	});

	it('fails the node on such an item without Continue, before anything is reserved', async () => {
		const before = await rowCount();
		await expect(
			runReserve({ options: options() }, { items: [webhookItem({ id: 'stop-ok' }), webhookItem({ id: 'stop\u0000' })] }),
		).rejects.toThrow(/NUL character/);
		expect(await rowCount()).toBe(before);
	});

	it('reserves two ids beyond 2^53 that JSON.parse rounds alike as two events, with the exact digits', async () => {
		const raw = (id: string) => `{"id": ${id}, "type": "invoice.paid"}`;
		const item = (id: string) => webhookItem(JSON.parse(raw(id)), {}, raw(id));
		const [fresh] = await runReserve({ options: options() }, { items: [item('12345678901234567890'), item('12345678901234567891')] });
		expect(fresh.map((entry) => idempotencyOf(entry).key)).toEqual(['evt:12345678901234567890', 'evt:12345678901234567891']);
	});

	it('refuses a rounded id when there is no raw body, naming the fix', async () => {
		const item = { json: { headers: {}, body: JSON.parse('{"id": 12345678901234567890}') } };
		const [fresh, , notReserved] = await runReserve({ options: options() }, { items: [item], continueOnFail: true });
		expect(fresh).toHaveLength(0);
		expect(notReserved[0].json.error).toMatch(/Raw Body/);
	});
});

describe('Idempotency Reserve: items that were not reserved never take the business path', () => {
	it('turns a configuration error into Not Reserved items under Continue, rather than throwing (n8n would pass the input out of New)', async () => {
		const [fresh, duplicate, notReserved] = await runReserve(
			{ keySource: 'header', headerName: 'PayPal-Transmission-Sig', options: options() },
			{ items: [webhookItem({ id: 'cfg-1' }), webhookItem({ id: 'cfg-2' })], continueOnFail: true },
		);
		expect([fresh.length, duplicate.length]).toEqual([0, 0]);
		expect(notReserved.map((item) => item.pairedItem)).toEqual([{ item: 0 }, { item: 1 }]);
		expect(notReserved[0].json.error).toMatch(/change on every retry/);
	});

	it('releases what it reserved before failing on a payload mismatch without Continue, so the retry is processed', async () => {
		await runReserve({ options: { ...options(), payloadFingerprint: 'error' } }, { items: [webhookItem({ id: 'pm-seen', v: 1 })] });
		const attempt = runReserve(
			{ options: { ...options(), payloadFingerprint: 'error' } },
			{ items: [webhookItem({ id: 'pm-fresh' }), webhookItem({ id: 'pm-seen', v: 2 })] },
		);
		await expect(attempt).rejects.toThrow(/different payload.*1 key\(s\) this run had reserved were released/);
		const rows = await db.pool.query(`select key from ${db.schema}.processed_events where key like 'evt:pm-%' order by key`);
		expect(rows.rows).toEqual([{ key: 'evt:pm-seen' }]);
		const [retry] = await runReserve({ options: options() }, { items: [webhookItem({ id: 'pm-fresh' })] });
		expect(idempotencyOf(retry[0]).outcome).toBe('new');
	});

	it('lets items through New flagged unverified when Postgres is down and the option says Let Through', async () => {
		const down = { ...connectionSettings(), port: 1 };
		const [fresh, duplicate, notReserved] = await runReserve(
			{ options: { ...options(), onStoreUnavailable: 'letThrough', onMissingKey: 'error' } },
			{ items: [webhookItem({ id: 'lt-1' }), webhookItem({ type: 'no id' })], credential: down, continueOnFail: true },
		);
		expect(fresh).toHaveLength(1);
		expect(fresh[0].pairedItem).toEqual({ item: 0 });
		expect(idempotencyOf(fresh[0])).toMatchObject({
			key: 'evt:lt-1',
			unverified: true,
			outcome: 'unverified',
			ownerToken: null,
			unverifiedReason: expect.stringMatching(/could not be reached/),
		});
		expect(duplicate).toHaveLength(0);
		// A bad key is not an outage: it is never let through.
		expect(notReserved.map((item) => item.pairedItem)).toEqual([{ item: 1 }]);
	});

	it('never lets through a delivery that timed out on a row lock (another delivery of the event holds it)', async () => {
		await runReserve({ options: options(), mode: 'lease', leaseSeconds: 60 }, { items: [webhookItem({ id: 'lt-locked' })] });
		const holder = await db.pool.connect();
		holder.on('error', () => {});
		try {
			await holder.query('begin');
			const held = await holder.query(`select 1 from ${db.schema}.processed_events where key = 'evt:lt-locked' for update`);
			expect(held.rowCount).toBe(1); // the fault: the row is locked by another session
			const shortLock = { ...connectionSettings(), lockTimeoutSeconds: 1 };
			const outcome = await runReserve(
				{ options: { ...options(), onStoreUnavailable: 'letThrough' }, mode: 'lease', leaseSeconds: 60 },
				{ items: [webhookItem({ id: 'lt-locked' })], credential: shortLock, continueOnFail: true },
			).catch((error: unknown) => error);
			// Not New, not flagged unverified: the item leaves through Not Reserved (the last output).
			expect(Array.isArray(outcome)).toBe(true);
			const outputs = outcome as INodeExecutionData[][];
			expect(outputs[0]).toHaveLength(0);
			const failed = outputs.flat();
			expect(failed).toHaveLength(1);
			expect(outputs[outputs.length - 1]).toEqual(failed);
			expect(failed[0].pairedItem).toEqual({ item: 0 });
			expect(String(failed[0].json.error)).toMatch(/row lock/);
		} finally {
			await holder.query('rollback');
			holder.release();
		}
	});

	/** The item left through Not Reserved (the last output) with this error, and through nothing else. */
	const expectNotReserved = (outcome: unknown, message: RegExp) => {
		expect(Array.isArray(outcome)).toBe(true);
		const outputs = outcome as INodeExecutionData[][];
		expect(outputs[0]).toHaveLength(0);
		const failed = outputs.flat();
		expect(failed).toHaveLength(1);
		expect(outputs[outputs.length - 1]).toEqual(failed);
		expect(failed[0].pairedItem).toEqual({ item: 0 });
		expect(String(failed[0].json.error)).toMatch(message);
		expect(idempotencyOf(failed[0])).toBeUndefined();
	};

	it("never lets through a delivery whose statement timed out waiting behind another delivery's row lock (Lock Timeout 0)", async () => {
		await runReserve({ options: options(), mode: 'lease', leaseSeconds: 60 }, { items: [webhookItem({ id: 'lt-stmt' })] });
		const holder = await db.pool.connect();
		holder.on('error', () => {});
		try {
			await holder.query('begin');
			const held = await holder.query(`select 1 from ${db.schema}.processed_events where key = 'evt:lt-stmt' for update`);
			expect(held.rowCount).toBe(1); // the fault: another session holds the row
			const waitsOnLocks = { ...connectionSettings(), lockTimeoutSeconds: 0, statementTimeoutSeconds: 1 };
			const outcome = await runReserve(
				{ options: { ...options(), onStoreUnavailable: 'letThrough' }, mode: 'lease', leaseSeconds: 60 },
				{ items: [webhookItem({ id: 'lt-stmt' })], credential: waitsOnLocks, continueOnFail: true },
			).catch((error: unknown) => error);
			expectNotReserved(outcome, /cancelled the statement.*Statement Timeout/);
		} finally {
			await holder.query('rollback');
			holder.release();
		}
	});

	it('never lets through a delivery whose answer was lost after the commit (it may be reserved: its redelivery is In Progress)', async () => {
		const settings = connectionSettings();
		const proxy = await TcpProxy.start(settings.host, settings.port);
		let dropOnceCut: NodeJS.Timeout | undefined;
		try {
			const credential = connectionSettings({ port: proxy.port });
			// The table check passes first, so the reply that is lost is the reservation's.
			await runReserve({ options: options(), mode: 'lease', leaseSeconds: 60 }, { items: [webhookItem({ id: 'lt-warmup' })], credential });
			proxy.cutReplyAfter('with batch as');
			// Once the reply is withheld, the re-sends cannot connect either (a fixed delay could cut before the statement on a loaded machine).
			dropOnceCut = setInterval(() => {
				if (proxy.cuts.length === 0) return;
				proxy.dropConnections(true);
				clearInterval(dropOnceCut);
			}, 2);
			const outcome = await runReserve(
				{ options: { ...options(), onStoreUnavailable: 'letThrough' }, mode: 'lease', leaseSeconds: 60 },
				{ items: [webhookItem({ id: 'lt-lost' })], credential, continueOnFail: true },
			).catch((error: unknown) => error);
			expect(proxy.cuts).toHaveLength(1); // the fault happened: the reply was withheld after the commit
			expectNotReserved(outcome, /answer from Postgres was lost .* may have been reserved/);
			// It had committed: letting it through as New would have run the business step beside the
			// run that owns the key.
			expect((await db.pool.query(`select status from ${db.schema}.processed_events where key = 'evt:lt-lost'`)).rows).toEqual([
				{ status: 'processing' },
			]);
		} finally {
			clearInterval(dropOnceCut);
			await proxy.close();
		}
	}, 30_000);

	it('never lets through a refused password or a missing table', async () => {
		const wrong = { ...connectionSettings(), password: 'definitely-wrong' };
		await expect(
			runReserve(
				{ options: { ...options(), onStoreUnavailable: 'letThrough' } },
				{ items: [webhookItem({ id: 'lt-auth' })], credential: wrong },
			),
		).rejects.toThrow(/rejected the credential/);
		await expect(
			runReserve(
				{ options: { schemaName: db.schema, tableName: 'never_created', createTable: false, onStoreUnavailable: 'letThrough' } },
				{ items: [webhookItem({ id: 'lt-table' })] },
			),
		).rejects.toThrow(/does not exist/);
	});

	it('fails when Postgres is down and the option is the default (Fail)', async () => {
		const down = { ...connectionSettings(), port: 1 };
		await expect(runReserve({ options: options() }, { items: [webhookItem({ id: 'lt-default' })], credential: down })).rejects.toThrow(
			/could not be reached/,
		);
	});
});

describe('Idempotency Reserve: Key Source "Field"', () => {
	const field = (keyField: string, extra: Record<string, unknown> = {}) => ({
		keySource: 'field',
		keyField,
		keyPrefix: 'stripe:',
		options: options(),
		...extra,
	});

	it('reserves two nested ids beyond 2^53 from the raw body as two events; a missing field and a NUL are refused per item', async () => {
		const raw = (id: string) => `{"type":"payment_intent.succeeded","data":{"object":{"id":${id}}}}`;
		const item = (id: string) => webhookItem(JSON.parse(raw(id)), {}, raw(id));
		const items = [
			item('12345678901234567890'),
			item('12345678901234567891'),
			webhookItem({ data: {} }),
			webhookItem({ data: { object: { id: 'pi\u0000' } } }),
		];
		const [fresh, , notReserved] = await runReserve(field('body.data.object.id', { options: { ...options(), onMissingKey: 'error' } }), {
			items,
			continueOnFail: true,
		});
		expect(fresh.map((entry) => idempotencyOf(entry).key)).toEqual(['stripe:12345678901234567890', 'stripe:12345678901234567891']);
		expect(notReserved.map((entry) => entry.pairedItem)).toEqual([{ item: 2 }, { item: 3 }]);
		expect(notReserved[0].json.error).toMatch(/the field "body.data.object.id" is missing or empty/);
		expect(notReserved[1].json.error).toMatch(/NUL character/);
		const rows = await db.pool.query(
			`select key, key_source from ${db.schema}.processed_events where key like 'stripe:1234%' order by key`,
		);
		expect(rows.rows).toEqual([
			{ key: 'stripe:12345678901234567890', key_source: 'field' },
			{ key: 'stripe:12345678901234567891', key_source: 'field' },
		]);
	});

	it('reads a batch item that is its own body (Split Out), with the repeat a Duplicate', async () => {
		const items = [{ json: { id: 'fb_1' } }, { json: { id: 'fb_2' } }, { json: { id: 'fb_1' } }];
		const [fresh, duplicate] = await runReserve(field('id', { keyPrefix: '' }), { items });
		expect(fresh.map((entry) => idempotencyOf(entry).key)).toEqual(['fb_1', 'fb_2']);
		expect(duplicate.map((entry) => idempotencyOf(entry).key)).toEqual(['fb_1']);
	});

	it('refuses a path through __proto__ as configuration, reserving nothing', async () => {
		const before = await rowCount();
		await expect(runReserve(field('__proto__.id'), { items: [webhookItem({ id: 'x' })] })).rejects.toThrow(
			/"__proto__", which is not data/,
		);
		expect(await rowCount()).toBe(before);
	});
});
