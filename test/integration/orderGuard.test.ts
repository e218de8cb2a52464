import { readFileSync } from 'node:fs';
import path from 'node:path';

import type { INodeExecutionData } from 'n8n-workflow';
import type { PoolClient } from 'pg';

import { postgresSchemaFixture } from '../support/database';
import { webhookItem } from '../support/fakeExecuteFunctions';
import { runOrderGuard } from '../support/nodes';

const db = postgresSchemaFixture('order');

const options = () => ({ schemaName: db.schema, createTable: true });
const guardOf = (item: INodeExecutionData) => item.json.orderGuard as Record<string, unknown>;
const markOf = async (objectKey: string) =>
	(await db.pool.query(`select version::text as version, stale_count from ${db.schema}.object_versions where object_key = $1`, [objectKey]))
		.rows[0];

// Stripe-like customer events: the key and version come from the body, as the template's expressions do.
const customerEvent = (id: string, type: string, created: number, email: string) =>
	webhookItem({ id, type, created, data: { object: { id: 'cus_1', email } } });
const byCustomerAndCreated = {
	objectKey: (index: number, items: INodeExecutionData[]) =>
		`stripe:customer:${(items[index].json.body as { data: { object: { id: string } } }).data.object.id}`,
	version: (index: number, items: INodeExecutionData[]) => (items[index].json.body as { created: number }).created,
};
function parametersFor(items: INodeExecutionData[], extra: Record<string, unknown> = {}) {
	return {
		objectKey: (index: number) => byCustomerAndCreated.objectKey(index, items),
		version: (index: number) => byCustomerAndCreated.version(index, items),
		eventKey: '',
		options: options(),
		...extra,
	};
}

beforeAll(async () => {
	await db.pool.query(`create table ${db.schema}.customers (id text primary key, email text not null, version bigint not null)`);
});

/** The business step the template runs on Newer: upsert the customer's state from the event. */
async function applyCustomer(item: INodeExecutionData): Promise<void> {
	const body = item.json.body as { created: number; data: { object: { id: string; email: string } } };
	await db.pool.query(
		`insert into ${db.schema}.customers (id, email, version) values ($1, $2, $3) on conflict (id) do update set email = excluded.email, version = excluded.version`,
		[body.data.object.id, body.data.object.email, body.created],
	);
}

describe('Idempotency Order Guard: update before create', () => {
	it("an update that arrives before its create converges to the update's state", async () => {
		const update = customerEvent('evt_2', 'customer.updated', 1_796_033_760, 'new@example.com');
		const create = customerEvent('evt_1', 'customer.created', 1_796_033_700, 'old@example.com');

		for (const delivery of [update, create]) {
			const [newer, stale] = await runOrderGuard(parametersFor([delivery]), { items: [delivery] });
			for (const item of newer) await applyCustomer(item);
			if (delivery === create) {
				expect(newer).toHaveLength(0);
				expect(stale).toHaveLength(1);
				expect(guardOf(stale[0])).toMatchObject({ outcome: 'stale', version: '1796033700', currentVersion: '1796033760' });
			} else {
				expect(newer).toHaveLength(1);
			}
		}

		const { rows } = await db.pool.query(`select email, version from ${db.schema}.customers where id = 'cus_1'`);
		expect(rows).toEqual([{ email: 'new@example.com', version: '1796033760' }]);
		expect(await markOf('stripe:customer:cus_1')).toEqual({ version: '1796033760', stale_count: 1 });
	});
});

describe('Idempotency Order Guard: batches', () => {
	it('several versions of one object in one batch: only the highest passes, once; other objects are independent', async () => {
		const items = [
			{ key: 'obj:a', version: 1 },
			{ key: 'obj:a', version: 3 },
			{ key: 'obj:b', version: 7 },
			{ key: 'obj:a', version: 2 },
			{ key: 'obj:a', version: 3 },
		].map((entry) => ({ json: entry }));
		const [newer, stale] = await runOrderGuard(
			{ objectKey: (i: number) => items[i].json.key, version: (i: number) => items[i].json.version, eventKey: '', options: options() },
			{ items },
		);
		expect(newer.map((item) => item.pairedItem)).toEqual([{ item: 1 }, { item: 2 }]);
		expect(stale.map((item) => item.pairedItem)).toEqual([{ item: 0 }, { item: 3 }, { item: 4 }]);
		expect(stale.map((item) => guardOf(item).supersededInBatch)).toEqual([true, true, false]);
		expect(newer.map((item) => guardOf(item).currentVersion)).toEqual(['3', '7']);
		expect(await markOf('obj:a')).toEqual({ version: '3', stale_count: 0 });

		const next = [{ json: { key: 'obj:a', version: 2 } }, { json: { key: 'obj:a', version: 4 } }, { json: { key: 'obj:b', version: 7 } }];
		const [newer2, stale2] = await runOrderGuard(
			{ objectKey: (i: number) => next[i].json.key, version: (i: number) => next[i].json.version, eventKey: '', options: options() },
			{ items: next },
		);
		expect(newer2.map((item) => item.pairedItem)).toEqual([{ item: 1 }]);
		expect(stale2.map((item) => item.pairedItem)).toEqual([{ item: 0 }, { item: 2 }]);
		expect(await markOf('obj:a')).toEqual({ version: '4', stale_count: 0 });
		expect(await markOf('obj:b')).toEqual({ version: '7', stale_count: 1 });
	});

	it("keeps json and binary and routes in the user's words", async () => {
		const item = webhookItem({ id: 'evt_keep', created: 5 });
		const [newer] = await runOrderGuard({ objectKey: 'keep:1', version: 5, eventKey: '', options: options() }, { items: [item] });
		expect(newer[0].json.body).toEqual({ id: 'evt_keep', created: 5 });
		expect(newer[0].binary).toBe(item.binary);
		expect(guardOf(newer[0])).toMatchObject({ objectKey: 'keep:1', version: '5', isNewer: true, supersededInBatch: false });
	});
});

describe('Idempotency Order Guard: equal versions', () => {
	const deliver = (version: unknown, eventKey: string, extra: Record<string, unknown> = {}) =>
		runOrderGuard({ objectKey: 'tie:1', version, eventKey, options: options(), ...extra }, { items: [{ json: {} }] });

	it('equal is Stale by default; the event that set the version passes again when retried; "newer" lets equal pass', async () => {
		expect((await deliver(10, 'evt:first'))[0]).toHaveLength(1);
		expect((await deliver(10, 'evt:other'))[1]).toHaveLength(1);
		expect((await deliver(10, ''))[1]).toHaveLength(1);
		// The run that set version 10 failed after the guard; the provider retries the same event.
		expect((await deliver(10, 'evt:first'))[0]).toHaveLength(1);
		expect((await deliver(10, 'evt:other', { equalVersion: 'newer' }))[0]).toHaveLength(1);
		expect((await deliver(9, 'evt:first', { equalVersion: 'newer' }))[1]).toHaveLength(1);
		expect(await markOf('tie:1')).toEqual({ version: '10', stale_count: 3 });
	});
});

describe('Idempotency Order Guard: exact versions', () => {
	it('integers beyond 2^53 given as text are never rounded', async () => {
		const deliver = (version: string) =>
			runOrderGuard({ objectKey: 'big:1', version, eventKey: '', options: options() }, { items: [{ json: {} }] });
		expect((await deliver('9007199254740993'))[0]).toHaveLength(1);
		// As a double, 9007199254740992 and ...993 are the same number; as numeric they are not.
		expect((await deliver('9007199254740992'))[1]).toHaveLength(1);
		expect((await deliver('9007199254740994'))[0]).toHaveLength(1);
		expect(await markOf('big:1')).toEqual({ version: '9007199254740994', stale_count: 1 });
	});

	it('ISO date-times compare with Unix seconds on one scale', async () => {
		const deliver = (version: unknown) =>
			runOrderGuard({ objectKey: 'time:1', version, eventKey: '', options: options() }, { items: [{ json: {} }] });
		expect((await deliver(1_796_033_700))[0]).toHaveLength(1);
		expect((await deliver('2026-11-30T10:14:59.999Z'))[1]).toHaveLength(1);
		expect((await deliver('2026-11-30T11:15:00.000001+01:00'))[0]).toHaveLength(1);
		expect(await markOf('time:1')).toEqual({ version: '1796033700.000001', stale_count: 1 });
	});
});

describe('Idempotency Order Guard: bad input', () => {
	it('a bad version fails its item with its index, and nothing of the batch is written', async () => {
		const items = [{ json: { v: 1 } }, { json: { v: Number.NaN } }];
		const attempt = runOrderGuard(
			{ objectKey: 'bad:1', version: (i: number) => items[i].json.v, eventKey: '', options: options() },
			{ items },
		);
		await expect(attempt).rejects.toMatchObject({ message: expect.stringMatching(/NaN/), context: { itemIndex: 1 } });
		expect(await markOf('bad:1')).toBeUndefined();
	});

	it('with continue on fail, bad items become error items and the others are decided', async () => {
		const versions: unknown[] = [undefined, 'soon', 4, true];
		const keys: unknown[] = ['bad:2', 'bad:2', 'bad:2', 'bad:\u0000'];
		const items = versions.map(() => ({ json: {} }));
		const [newer, stale, notChecked] = await runOrderGuard(
			{ objectKey: (i: number) => keys[i], version: (i: number) => versions[i], eventKey: '', options: options() },
			{ items, continueOnFail: true },
		);
		expect(stale).toHaveLength(0);
		// Bad items never leave through Newer (the business step): they go out of Not Checked.
		expect(notChecked.map((item) => item.pairedItem)).toEqual([{ item: 0 }, { item: 1 }, { item: 3 }]);
		expect(notChecked.map((item) => item.json.error)).toEqual([
			expect.stringMatching(/missing/),
			expect.stringMatching(/neither a number nor an ISO 8601/),
			expect.stringMatching(/NUL/),
		]);
		expect(newer.map((item) => item.pairedItem)).toEqual([{ item: 2 }]);
		expect(guardOf(newer[0])).toMatchObject({ outcome: 'newer', version: '4' });
	});

	it('a missing table names the SQL file to run', async () => {
		const attempt = runOrderGuard(
			{ objectKey: 'x', version: 1, eventKey: '', options: { schemaName: db.schema, tableName: 'no_such_versions', createTable: false } },
			{ items: [{ json: {} }] },
		);
		await expect(attempt).rejects.toThrow(/sql\/postgres\/migrations\/order\/001_create_table\.sql/);
	});
});

// The shipped ordered template's guard setting and business step, run as the template runs them:
// the guard's mark commits in its own statement, the upsert later in another. Two Newer events can
// therefore write in either order, and the write itself must refuse an older version.
describe('the ordered template: the write refuses what the guard let through earlier', () => {
	type Node = { name: string; parameters: Record<string, unknown> & { options?: Record<string, unknown> } };
	const template = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'templates', 'ordered-webhook.json'), 'utf8')) as {
		nodes: Node[];
	};
	const guardNode = template.nodes.find((node) => node.name === 'Idempotency Order Guard')!;
	const upsertNode = template.nodes.find((node) => node.name === 'Business Step (upsert customer)')!;
	/** The template's Query Parameters expression, evaluated as n8n evaluates it for this `$json`. */
	const upsertValues = (json: unknown) =>
		new Function('$json', `return (${String(upsertNode.parameters.options!.queryReplacement).replace(/^=\{\{\s*|\s*\}\}$/g, '')});`)(
			json,
		) as unknown[];

	let customer = 0;
	const freshCustomer = () => `cus_tpl_${++customer}`;
	const event = (customerId: string, id: string, type: string, created: number, email: string) =>
		webhookItem({ id, type, created, data: { object: { id: customerId, object: 'customer', email } } });

	/** The guard with the template's Object Key, Version and Equal Version Is; Event Key = the event id (Reserve's key). */
	async function guard(item: INodeExecutionData): Promise<'newer' | 'stale'> {
		const body = item.json.body as { id: string };
		const [newer, stale] = await runOrderGuard(
			{ ...parametersFor([item]), equalVersion: guardNode.parameters.equalVersion as string, eventKey: body.id },
			{ items: [item] },
		);
		expect(newer.length + stale.length).toBe(1);
		return newer.length === 1 ? 'newer' : 'stale';
	}

	/** The template's business query with its parameters, on a client whose search_path is the test schema. */
	async function write(item: INodeExecutionData, client?: PoolClient): Promise<{ id: string; applied: boolean }> {
		const own = client ?? (await db.pool.connect());
		try {
			if (!client) await own.query(`set search_path to ${db.schema}`);
			const { rows } = await own.query(String(upsertNode.parameters.query), upsertValues(item.json));
			expect(rows).toHaveLength(1); // Business Step Succeeded? reads its id: every run that wrote or refused answers 200
			return rows[0];
		} finally {
			if (!client) own.release();
		}
	}

	const stateOf = async (customerId: string) =>
		(await db.pool.query(`select email, version::text as version from ${db.schema}.customers where id = $1`, [customerId])).rows;

	it("passes the event type as the upsert's fourth parameter (a create never replaces a same-second state)", () => {
		expect(String(upsertNode.parameters.query)).toMatch(/\$4/);
		expect(upsertValues(event('cus_x', 'evt_x', 'customer.updated', 1, 'a@example.com').json)).toEqual([
			'cus_x',
			'a@example.com',
			1,
			'customer.updated',
		]);
	});

	it('the race of two Newer events: the guard passes 100 then 101, the 101 write commits first; the row keeps 101 and the late write reports applied: false', async () => {
		const id = freshCustomer();
		const create = event(id, 'evt_c1', 'customer.created', 1_796_033_700, 'old@example.com');
		const update = event(id, 'evt_u1', 'customer.updated', 1_796_033_701, 'new@example.com');
		expect([await guard(create), await guard(update)]).toEqual(['newer', 'newer']);
		const written = [await write(update), await write(create)];
		expect(await stateOf(id)).toEqual([{ email: 'new@example.com', version: '1796033701' }]);
		expect(written).toEqual([
			{ id, applied: true },
			{ id, applied: false },
		]);
	});

	it("an older write blocked on the newer one's uncommitted row lock refuses once that commits", async () => {
		const id = freshCustomer();
		const older = event(id, 'evt_o2', 'customer.updated', 1_796_033_700, 'older@example.com');
		const newer = event(id, 'evt_n2', 'customer.updated', 1_796_033_760, 'newer@example.com');
		expect(await write(older)).toEqual({ id, applied: true }); // a row exists: both writes conflict on it
		const [first, second] = [await db.pool.connect(), await db.pool.connect()];
		try {
			for (const client of [first, second]) await client.query(`set search_path to ${db.schema}`);
			await first.query('begin');
			expect(await write(newer, first)).toEqual({ id, applied: true });
			const blocked = write(older, second); // waits for first's row lock
			await new Promise((resolve) => setTimeout(resolve, 200));
			await first.query('commit');
			const late = await blocked;
			expect(await stateOf(id)).toEqual([{ email: 'newer@example.com', version: '1796033760' }]);
			expect(late).toEqual({ id, applied: false });
		} finally {
			first.release();
			second.release();
		}
	});

	// Stripe's `created` has whole seconds: a create and an update of one customer often share it.
	describe('equal versions (one second)', () => {
		const at = 1_796_040_000;
		const pair = (id: string) => ({
			create: event(id, `evt_c_${id}`, 'customer.created', at, 'created@example.com'),
			update: event(id, `evt_u_${id}`, 'customer.updated', at, 'updated@example.com'),
		});

		it.each([
			['create then update, one after the other', ['guard create', 'write create', 'guard update', 'write update']],
			['update then create, one after the other', ['guard update', 'write update', 'guard create', 'write create']],
			['both pass the guard, the update writes first', ['guard create', 'guard update', 'write update', 'write create']],
			['both pass the guard, the create writes first', ['guard update', 'guard create', 'write create', 'write update']],
		])('%s: the row holds the update', async (_name, steps) => {
			const id = freshCustomer();
			const events = pair(id);
			const passed = new Set<string>();
			for (const step of steps) {
				const [action, which] = step.split(' ') as ['guard' | 'write', 'create' | 'update'];
				if (action === 'guard') {
					if ((await guard(events[which])) === 'newer') passed.add(which);
				} else if (passed.has(which)) {
					await write(events[which]);
				}
			}
			expect(await stateOf(id)).toEqual([{ email: 'updated@example.com', version: String(at) }]);
		});

		it('two updates in one second, one after the other: the later one stays (no lost update)', async () => {
			const id = freshCustomer();
			const first = event(id, 'evt_u_a', 'customer.updated', at, 'first@example.com');
			const second = event(id, 'evt_u_b', 'customer.updated', at, 'second@example.com');
			for (const delivery of [first, second]) if ((await guard(delivery)) === 'newer') await write(delivery);
			expect(await stateOf(id)).toEqual([{ email: 'second@example.com', version: String(at) }]);
		});

		it('the same event retried writes the same state again; an older second is still Stale at the guard', async () => {
			const id = freshCustomer();
			const update = event(id, 'evt_u_r', 'customer.updated', at, 'same@example.com');
			for (let attempt = 0; attempt < 2; attempt++) {
				expect(await guard(update)).toBe('newer');
				expect((await write(update)).id).toBe(id);
			}
			expect(await guard(event(id, 'evt_old', 'customer.updated', at - 1, 'older@example.com'))).toBe('stale');
			expect(await stateOf(id)).toEqual([{ email: 'same@example.com', version: String(at) }]);
		});
	});
});
