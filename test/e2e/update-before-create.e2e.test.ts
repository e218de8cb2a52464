// The shipped ordered-webhook template (Reserve → Order Guard → upsert) through a real n8n, when
// something goes wrong after or inside the guard: nothing is lost, and the key stays failed with
// its error and payload (replayable) until the provider's retry is processed. When the upsert
// happened but its completion cannot be stored, the provider is answered 200 and the error-workflow
// template completes the key: nothing is done twice. Two versions of one customer delivered at the
// same time, in rounds and in every order (also two events of one second), always leave the newest
// state: the guard's mark commits before the upsert, so the upsert itself refuses an older version.
// (An update that arrives before its create, seed 002's test, is the production checklist's test 4,
// checklist.e2e.test.ts.)
// e2e-tags: single queue
import { Client } from 'pg';
import { harness, outputTaken, outputItem, eventId } from '../support/e2e/harness';
import { expectErrorWorkflowCompletedKey } from '../support/e2e/outcome';
import { publishOrderedWebhook } from '../support/e2e/restWorkflows';
import { createTrigger, dropTrigger, settleBlocker } from '../support/e2e/appFaults';

const GUARD = 'Idempotency Order Guard';
const CONSTRAINT = 'customers_e2e_rejects_poison';
const BUSINESS = 'Business Step (upsert customer)';
const COMPLETION_FAILED = 'Completion Failed (error workflow completes)';
// Like a database that refuses writes: a trigger rejects the completion of the keys it lists and
// counts each refused attempt.
const BLOCKED = 'e2e_ordered_block_complete';
// Holds a chosen delivery's upsert after it passed the guard: a trigger on customers waits for an
// advisory lock the test holds, for rows whose email is at this domain. It holds no row lock while
// it waits (a BEFORE INSERT trigger runs before ON CONFLICT looks for the row).
const HELD = 'e2e_ordered_hold_write';
const HELD_DOMAIN = '@held.example';
const HOLD_LOCK = 720_001;
const HOLD_TRIGGER = {
	name: HELD,
	table: 'customers',
	timing: 'BEFORE INSERT',
	when: `NEW.email LIKE '%${HELD_DOMAIN}'`,
	body: `				PERFORM pg_advisory_lock_shared(${HOLD_LOCK});
				PERFORM pg_advisory_unlock_shared(${HOLD_LOCK});
				RETURN NEW;`,
};

/** A Stripe customer event, as the provider sends it. */
interface CustomerEvent {
	id: string;
	type: string;
	created: number | string;
	data: { object: { id: string; object: string; email: string } };
}

/** An execution as the harness reads it from n8n. */
type Execution = Parameters<typeof outputTaken>[0];

describe('ordered-webhook template: failures around the Order Guard', () => {
	const h = harness();
	const blocked = settleBlocker(h, BLOCKED);
	let url: string;
	let workflowId: string;
	const key = async (id: string) =>
		(await h.appQuery('SELECT status, attempts, last_error, payload, locked_until FROM processed_events WHERE key = $1', [`evt:${id}`]))
			.rows[0];

	beforeAll(async () => {
		({ url, workflowId } = await publishOrderedWebhook(h, 'ordered', { errorWorkflow: h.IDS.error }));
		await blocked.create();
		await createTrigger(h, HOLD_TRIGGER);
	});

	afterAll(async () => {
		await h.appQuery(`ALTER TABLE customers DROP CONSTRAINT IF EXISTS ${CONSTRAINT}`);
		await blocked.drop();
		await dropTrigger(h, HOLD_TRIGGER);
	});

	const customerEvent = (customer: string, type: string, created: number, email: string): CustomerEvent => ({
		id: eventId(type.replace('.', '_')),
		type,
		created,
		data: { object: { id: customer, object: 'customer', email } },
	});
	const customerRow = async (customer: string) =>
		(await h.appQuery('SELECT email, version::text AS version FROM customers WHERE id = $1', [customer])).rows;
	const markOf = async (customer: string) =>
		(await h.appQuery('SELECT version::text AS version FROM object_versions WHERE object_key = $1', [`stripe:customer:${customer}`]))
			.rows[0]?.version;
	async function until(condition: () => Promise<boolean>, what: string, timeoutMs = 60000) {
		const deadline = Date.now() + timeoutMs;
		while (!(await condition())) {
			if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
			await new Promise((resolve) => setTimeout(resolve, 25));
		}
	}

	/**
	 * The race as it happens in production, forced: `held` passes the guard first and its upsert then
	 * waits; `late` passes the guard and writes; then `held` writes. Returns both answers.
	 */
	async function heldWhileOtherWrites(held: CustomerEvent, late: CustomerEvent) {
		const customer = held.data.object.id;
		const lock = new Client({ connectionString: h.state.appUrl });
		await lock.connect();
		try {
			await lock.query('SELECT pg_advisory_lock($1)', [HOLD_LOCK]);
			const first = h.deliver(url, held);
			first.catch(() => {}); // awaited below; never an unhandled rejection meanwhile
			await until(async () => (await markOf(customer)) === String(held.created), `${held.type} to pass the guard`);
			const second = await h.deliver(url, late);
			await lock.query('SELECT pg_advisory_unlock($1)', [HOLD_LOCK]);
			return [await first, second];
		} finally {
			await lock.end();
		}
	}

	test.each([
		['created (100) held, updated (101) writes first', 0, 1, true],
		['one second: created held, updated writes first', 0, 0, true],
		['one second: updated held, created writes first', 0, 0, false],
	])(
		'the upsert refuses an older version that passed the guard earlier: %s → the row holds the update, both answered 200',
		async (_name, createdAt, updatedAt, createIsHeld) => {
			const customer = `cus_${eventId('held').slice(8)}`;
			const at = Math.floor(Date.now() / 1000);
			const held = (email: string) => email.replace('@example.com', HELD_DOMAIN);
			const create = customerEvent(
				customer,
				'customer.created',
				at + createdAt,
				createIsHeld ? held('old@example.com') : 'old@example.com',
			);
			const update = customerEvent(
				customer,
				'customer.updated',
				at + updatedAt,
				createIsHeld ? 'new@example.com' : held('new@example.com'),
			);
			const mark = await h.executionMark();

			const [heldAnswer, lateAnswer] = createIsHeld
				? await heldWhileOtherWrites(create, update)
				: await heldWhileOtherWrites(update, create);
			expect(await customerRow(customer)).toEqual([{ email: update.data.object.email, version: String(at + updatedAt) }]);
			expect([heldAnswer.status, lateAnswer.status]).toEqual([200, 200]);

			// Both passed the guard (the held one first); the held upsert ran after the other one.
			const runs = await h.waitForExecutions(workflowId, mark, 2);
			expect(runs.map((run: Execution) => outputTaken(run, GUARD))).toEqual([0, 0]);
			const applied = runs.map((run: Execution) => outputItem(run, BUSINESS)?.applied);
			// The held write ran last: a create is refused; a same-second update replaces the create.
			expect(applied).toEqual(createIsHeld ? [false, true] : [true, true]);
			const keys = await h.appQuery('SELECT status FROM processed_events WHERE key = ANY($1)', [[`evt:${create.id}`, `evt:${update.id}`]]);
			expect(keys.rows.map((row: { status: string }) => row.status)).toEqual(['completed', 'completed']);
		},
	);

	test('two updates in one second, one after the other: the later one is applied, not dropped as Stale', async () => {
		const customer = `cus_${eventId('tie').slice(8)}`;
		const at = Math.floor(Date.now() / 1000);
		for (const email of ['first@example.com', 'second@example.com']) {
			const answer = await h.deliver(url, customerEvent(customer, 'customer.updated', at, email));
			expect([answer.status, answer.outcome]).toEqual([200, 'new']);
		}
		expect(await customerRow(customer)).toEqual([{ email: 'second@example.com', version: String(at) }]);
	});

	test('rounds of two deliveries at once (older/newer and one second, both orders of sending): the row always ends at the update', async () => {
		const rounds = Number(process.env.E2E_ORDERED_ROUNDS ?? 10);
		const at = Math.floor(Date.now() / 1000) - 600;
		const pairs = [];
		for (let round = 0; round < rounds; round++) {
			for (const [kind, gap] of [
				['older/newer', 1],
				['one second', 0],
			] as const) {
				for (const updateFirst of [false, true]) pairs.push({ round, kind, gap, updateFirst });
			}
		}
		const results = [];
		// One round's four pairs at once; each pair's two deliveries at once, the second sent a few ms later.
		for (let round = 0; round < rounds; round++) {
			const batch = pairs.filter((pair) => pair.round === round);
			results.push(
				...(await Promise.all(
					batch.map(async (pair) => {
						const customer = `cus_${eventId('pair').slice(8)}`;
						const create = customerEvent(customer, 'customer.created', at + round, `created-${round}@example.com`);
						const update = customerEvent(customer, 'customer.updated', at + round + pair.gap, `updated-${round}@example.com`);
						const [first, second] = pair.updateFirst ? [update, create] : [create, update];
						const sending = h.deliver(url, first);
						await new Promise((resolve) => setTimeout(resolve, (round % 3) * 5));
						const answers = await Promise.all([sending, h.deliver(url, second)]);
						return { ...pair, customer, update, answers, row: await customerRow(customer), mark: await markOf(customer) };
					}),
				)),
			);
		}
		const wrong = results.filter(
			(r) =>
				r.answers.some((answer) => answer.status !== 200) ||
				JSON.stringify(r.row) !== JSON.stringify([{ email: r.update.data.object.email, version: String(r.update.created) }]) ||
				r.mark !== String(r.update.created),
		);
		expect(
			wrong.map(({ kind, round, updateFirst, answers, row, mark }) => ({
				kind,
				round,
				updateFirst,
				answers: answers.map((a) => `${a.status} ${a.outcome}`),
				row,
				mark,
			})),
		).toEqual([]);
		expect(results).toHaveLength(rounds * 4);
	});

	test('the event that set a version, retried after its business step failed, passes the guard again (nothing is lost)', async () => {
		const customer = `cus_${eventId('retry').slice(8)}`;
		const at = Math.floor(Date.now() / 1000);
		const update = {
			id: eventId('poisoned'),
			type: 'customer.updated',
			created: at,
			data: { object: { id: customer, object: 'customer', email: 'e2e-poison@example.com' } },
		};
		await h.appQuery(`ALTER TABLE customers ADD CONSTRAINT ${CONSTRAINT} CHECK (email IS DISTINCT FROM 'e2e-poison@example.com')`);

		const mark = await h.executionMark();
		const failed = await h.deliver(url, update);
		expect([failed.status, failed.outcome]).toEqual([500, 'failed']);
		// The guard recorded the version before the business step failed.
		const recorded = await h.appQuery('SELECT version::text AS version FROM object_versions WHERE object_key = $1', [
			`stripe:customer:${customer}`,
		]);
		expect(recorded.rows).toEqual([{ version: String(at) }]);
		// The key is kept failed, with the upsert's error and the event (what a replay needs).
		const kept = await key(update.id);
		expect(kept).toMatchObject({ status: 'failed', attempts: 1, payload: update, locked_until: null });
		expect(kept.last_error).toMatch(new RegExp(CONSTRAINT));

		await h.appQuery(`ALTER TABLE customers DROP CONSTRAINT ${CONSTRAINT}`);
		const retried = await h.deliver(url, update);
		expect([retried.status, retried.outcome]).toEqual([200, 'new']);
		expect(await key(update.id)).toMatchObject({ status: 'completed', attempts: 2 });

		const runs = await h.waitForExecutions(workflowId, mark, 2);
		expect(runs.map((run: Execution) => outputTaken(run, GUARD))).toEqual([0, 0]); // Newer both times
		const { rows } = await h.appQuery('SELECT email FROM customers WHERE id = $1', [customer]);
		expect(rows).toEqual([{ email: 'e2e-poison@example.com' }]);
	});

	test('an event whose version cannot be checked leaves through Not Checked: key marked failed with the error, 500, never the upsert; the fixed retry is New', async () => {
		const customer = `cus_${eventId('unchecked').slice(8)}`;
		const id = eventId('unchecked');
		const event = (created: number | string): CustomerEvent => ({
			id,
			type: 'customer.updated',
			created,
			data: { object: { id: customer, object: 'customer', email: 'checked@example.com' } },
		});

		const mark = await h.executionMark();
		const refused = await h.deliver(url, event('soon'));
		expect([refused.status, refused.outcome]).toEqual([500, 'failed']);
		// Mark Failed found Reserve's key through the error item's pairedItem: not held, kept failed
		// with the guard's error and the event; no version was recorded.
		const kept = await key(id);
		expect(kept).toMatchObject({ status: 'failed', attempts: 1, payload: event('soon'), locked_until: null });
		expect(kept.last_error).toMatch(/soon/);
		expect((await h.appQuery('SELECT 1 FROM object_versions WHERE object_key = $1', [`stripe:customer:${customer}`])).rowCount).toBe(0);
		expect((await h.appQuery('SELECT 1 FROM customers WHERE id = $1', [customer])).rowCount).toBe(0);

		const retried = await h.deliver(url, event(Math.floor(Date.now() / 1000)));
		expect([retried.status, retried.outcome]).toEqual([200, 'new']);
		expect(await key(id)).toMatchObject({ status: 'completed', attempts: 2 });

		const runs = await h.waitForExecutions(workflowId, mark, 2);
		expect(runs.map((run: Execution) => outputTaken(run, GUARD))).toEqual([2, 0]); // Not Checked, then Newer
		expect(runs[0].nodesRun).not.toContain(BUSINESS);
		expect((await h.appQuery('SELECT email FROM customers WHERE id = $1', [customer])).rows).toEqual([{ email: 'checked@example.com' }]);
	});

	test('the upsert happened, Settle cannot complete the key → 200 completion_pending, the execution fails in Completion Failed, the error workflow completes the key, the redelivery is a duplicate (one upsert)', async () => {
		const customer = `cus_${eventId('pending').slice(8)}`;
		const at = Math.floor(Date.now() / 1000);
		const update = {
			id: eventId('pending'),
			type: 'customer.updated',
			created: at,
			data: { object: { id: customer, object: 'customer', email: 'pending@example.com' } },
		};
		const eventKey = `evt:${update.id}`;
		await blocked.block(eventKey);
		const attemptsBefore = await blocked.refusals();
		const mark = await h.executionMark();

		const first = await h.deliver(url, update);
		await blocked.unblock(eventKey); // the database is back
		expect([first.status, first.outcome]).toEqual([200, 'completion_pending']);
		// The fault happened: Settle's completion reached the database and was refused.
		const attemptsAfter = await blocked.refusals();
		expect(attemptsAfter - attemptsBefore).toBeGreaterThanOrEqual(1);
		// The effect happened: the customer was written, and the guard recorded this event's version.
		expect((await h.appQuery('SELECT email, version::text AS version FROM customers WHERE id = $1', [customer])).rows).toEqual([
			{ email: 'pending@example.com', version: String(at) },
		]);
		expect(
			(
				await h.appQuery('SELECT version::text AS version, event_key FROM object_versions WHERE object_key = $1', [
					`stripe:customer:${customer}`,
				])
			).rows,
		).toEqual([{ version: String(at), event_key: eventKey }]);

		const [run] = await h.waitForExecutions(workflowId, mark, 1, { timeoutMs: 120000 });
		expect(run.status).toBe('error');
		expect(run.nodesRun).toEqual(expect.arrayContaining([BUSINESS, 'Settle (complete or mark failed)', COMPLETION_FAILED]));
		const settleOutputs = run.runData['Settle (complete or mark failed)'][0].data;
		if (!settleOutputs) throw new Error('Settle ran without output data');
		expect(settleOutputs.main.slice(0, 3).flat()).toEqual([]); // Not Settled only

		// The error workflow completes the key (not marked failed: a redelivery would write again).
		await expectErrorWorkflowCompletedKey(h, run.id, mark);
		expect(await key(update.id)).toMatchObject({ status: 'completed', attempts: 1, locked_until: null });

		const again = await h.deliver(url, update);
		expect([again.status, again.outcome]).toEqual([200, 'duplicate']);
		const runs = await h.waitForExecutions(workflowId, mark, 2);
		expect(runs.map((execution: Execution) => execution.nodesRun.includes(BUSINESS))).toEqual([true, false]);
		expect((await h.appQuery('SELECT email FROM customers WHERE id = $1', [customer])).rows).toEqual([{ email: 'pending@example.com' }]);
	});
});
