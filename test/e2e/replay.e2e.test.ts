// "Replay failed events" through a real n8n: deliveries whose business step fails are
// left failed by the webhook template as shipped (Store Payload on, Mark Failed on error), then
// the shipped replay template lists them in a dry run (nothing changes), replays them from the
// stored payload once the cause is fixed (exactly one business row each), never replays a completed
// key, and sends a key without a stored payload to its "Needs Manual Handling" branch. One run
// follows List Keys' pages, so keys that stay replayable on the first page never hide the later ones.
//
// The replay runs as a user runs it: a manual execution started from the editor (POST
// /rest/workflows/:id/run, "Execute workflow"). n8n 2.40.7 runs a manual execution in the process
// that received the request (the only one, or main in queue mode), unless, in queue mode,
// OFFLOAD_MANUAL_EXECUTIONS_TO_WORKERS=true sends it to a worker (n8n 3 always will). The stack
// passes that variable through, so `OFFLOAD_MANUAL_EXECUTIONS_TO_WORKERS=true E2E_TOPOLOGIES=queue`
// runs this file with the replay on a worker; each run checks where it ran. (`n8n execute` would
// not do: it runs the workflow in its own process, queue mode or not.)
// e2e-tags: single queue
import fs from 'node:fs';
import type { Client } from 'pg';
import * as stack from '../support/stack/n8nStack';
import { harness, eventId, type Execution } from '../support/e2e/harness';
import { eventually } from '../support/e2e/eventually';
import type { Json } from '../support/e2e/workflows';
import { readShippedTemplate, withOwnWebhook, publishWorkflow, saveWorkflow, runFromManualTrigger } from '../support/e2e/restWorkflows';

const POISON = 'business_log_e2e_replay_poison';
const STILL_BROKEN = 'business_log_e2e_replay_still_broken';
const RACE = 'business_log_e2e_replay_race';
const PAGES_BROKEN = 'business_log_e2e_replay_pages_broken';
const PAGES_FIXED = 'business_log_e2e_replay_pages_fixed';
const TWO_RUNS = 'business_log_e2e_replay_two_runs';

// Over Reserve's default Max Payload Size (64 KB): the key is kept without its payload.
const OVER_THE_CAP = 'x'.repeat(70 * 1024);

/** One field of a Set node's assignments (Replay Settings). */
interface Assignment {
	name: string;
	value: unknown;
}

/** What the items of the replay's nodes carry, as far as this file reads them. */
interface ReplayItem {
	key: string;
	action: string;
	reason: string;
	idempotency: { key: string; applied: boolean };
}

/** The n8n processes of the stack (GET /processes of its control server), as far as this file reads them. */
interface Processes {
	workers: Array<{ logFile: string }>;
}

/** An event as the provider sends it. */
interface StripeEvent {
	id: string;
	object: string;
	type: string;
	[field: string]: unknown;
}

/** The replay template with the values a user types into its Replay Settings node. */
function replayWorkflow(settings: Record<string, unknown>) {
	const template = readShippedTemplate('replay-failed-events.json');
	const nodes = template.nodes.map((node) => {
		if (node.name !== 'Replay Settings') return node;
		const assignments = (node.parameters.assignments as { assignments: Assignment[] }).assignments.map((assignment) =>
			assignment.name in settings ? { ...assignment, value: settings[assignment.name] } : assignment,
		);
		return { ...node, parameters: { ...node.parameters, assignments: { assignments } } };
	});
	return { ...template, nodes };
}

/** Every item a node emitted on one output, over all its runs (the replay loops one key per run). */
function itemsOut(execution: Execution, nodeName: string, outputIndex = 0): ReplayItem[] {
	return (execution.runData[nodeName] ?? []).flatMap((run) => run.data?.main?.[outputIndex] ?? []).map((item): Json => item.json);
}

describe('replay failed events (templates/replay-failed-events.json)', () => {
	const h = harness();
	const tag = eventId('replay').replace(/^evt_e2e_replay_/, '');
	const prefix = `evt:evt_e2e_replay_${tag}_`;
	const event = (name: string, type: string, extra: Record<string, unknown> = {}): StripeEvent => ({
		id: `evt_e2e_replay_${tag}_${name}`,
		object: 'event',
		type,
		...extra,
	});
	const keyOf = (e: StripeEvent) => `evt:${e.id}`;
	const failing = event('a_fails_then_fixed', 'e2e.replay_poison', { data: { object: { amount: 4200 } } });
	const stillBroken = event('b_still_broken', 'e2e.replay_still_broken');
	const noPayload = event('c_too_big_to_store', 'e2e.replay_poison', { padding: OVER_THE_CAP });
	const completed = event('d_completed', 'e2e.replay_ok');
	let url: string;
	let dryRunId: string;
	let replayId: string;

	const businessRows = async (e: StripeEvent) =>
		(await h.appQuery('SELECT count(*)::int AS n FROM business_log WHERE event_key = $1', [keyOf(e)])).rows[0].n;
	const stored = async (e: StripeEvent) =>
		(
			await h.appQuery(
				'SELECT status, attempts, last_error, payload, payload_bytes, owner_token::text, locked_until, execution_id FROM processed_events WHERE key = $1',
				[keyOf(e)],
			)
		).rows[0];

	const offloaded = h.topology === 'queue' && process.env.OFFLOAD_MANUAL_EXECUTIONS_TO_WORKERS === 'true';
	/** Whether a worker's log says it ran this execution (n8n logs "Worker started execution <id> (job …)"). */
	async function ranOnWorker(executionId: number) {
		const { workers } = (await h.control('GET /processes')) as Processes;
		const line = `Worker started execution ${executionId} (`;
		return workers.some((worker) => fs.existsSync(worker.logFile) && fs.readFileSync(worker.logFile, 'utf8').includes(line));
	}

	/** Runs the workflow from its Manual Trigger as the editor does; resolves with the finished execution. */
	async function run(workflowId: string): Promise<Execution> {
		const { execution, executionId } = await runFromManualTrigger(h, workflowId, 'Run Replay');
		expect([execution.id, execution.mode, execution.status]).toEqual([executionId, 'manual', 'success']);
		if (h.topology === 'queue') {
			// The worker's log line is written when it starts the execution; its file may lag a little.
			const onWorker = offloaded
				? await eventually(() => ranOnWorker(executionId), Boolean, { timeoutMs: 5000 })
				: await ranOnWorker(executionId);
			expect({ executionId, onWorker }).toEqual({ executionId, onWorker: offloaded });
		}
		return execution;
	}

	beforeAll(async () => {
		await h.appQuery(`ALTER TABLE business_log ADD CONSTRAINT ${POISON} CHECK (event_type IS DISTINCT FROM 'e2e.replay_poison')`);
		await h.appQuery(
			`ALTER TABLE business_log ADD CONSTRAINT ${STILL_BROKEN} CHECK (event_type IS DISTINCT FROM 'e2e.replay_still_broken')`,
		);
		// The shipped webhook template, unchanged but for its webhook path.
		const { workflow, webhookPath } = withOwnWebhook(readShippedTemplate('idempotent-webhook.json'), 'replay');
		await publishWorkflow(h, workflow, webhookPath);
		url = `${h.state.baseUrl}/webhook/${webhookPath}`;
		dryRunId = (await saveWorkflow(h, replayWorkflow({ keyPrefix: prefix }), `replay dry run ${tag}`)).id;
		replayId = (await saveWorkflow(h, replayWorkflow({ keyPrefix: prefix, dryRun: false }), `replay ${tag}`)).id;
	});

	afterAll(async () => {
		await h.appQuery(`ALTER TABLE business_log DROP CONSTRAINT IF EXISTS ${POISON}`);
		await h.appQuery(`ALTER TABLE business_log DROP CONSTRAINT IF EXISTS ${STILL_BROKEN}`);
		await h.appQuery(`ALTER TABLE business_log DROP CONSTRAINT IF EXISTS ${RACE}`);
		await h.appQuery(`ALTER TABLE business_log DROP CONSTRAINT IF EXISTS ${PAGES_BROKEN}`);
		await h.appQuery(`ALTER TABLE business_log DROP CONSTRAINT IF EXISTS ${PAGES_FIXED}`);
		await h.appQuery(`ALTER TABLE business_log DROP CONSTRAINT IF EXISTS ${TWO_RUNS}`);
	});

	test('deliveries whose business step fails are left failed with their payload (the one over the cap without)', async () => {
		for (const e of [failing, stillBroken, noPayload]) {
			const answer = await h.deliver(url, e);
			expect([e.id, answer.status, answer.outcome]).toEqual([e.id, 500, 'failed']);
		}
		const ok = await h.deliver(url, completed);
		expect([ok.status, ok.outcome]).toEqual([200, 'new']);

		expect(await stored(failing)).toMatchObject({ status: 'failed', attempts: 1, payload: failing });
		expect((await stored(failing)).last_error).toMatch(/e2e_replay_poison/);
		expect(await stored(stillBroken)).toMatchObject({ status: 'failed', attempts: 1, payload: stillBroken });
		const tooBig = await stored(noPayload);
		expect(tooBig).toMatchObject({ status: 'failed', payload: null });
		expect(tooBig.payload_bytes).toBeGreaterThan(64 * 1024);
		expect(await stored(completed)).toMatchObject({ status: 'completed' });
		expect([
			await businessRows(failing),
			await businessRows(stillBroken),
			await businessRows(noPayload),
			await businessRows(completed),
		]).toEqual([0, 0, 0, 1]);
	});

	test('dry run (the default): lists the replayable keys and what would happen, changes nothing', async () => {
		const before = await Promise.all([failing, stillBroken, noPayload, completed].map(stored));

		const execution = await run(dryRunId);

		const report = itemsOut(execution, 'Dry Run: Report Only');
		expect(report.map((item) => [item.key, item.action])).toEqual([
			[keyOf(failing), 'would replay from the stored payload'],
			[keyOf(stillBroken), 'would replay from the stored payload'],
			[keyOf(noPayload), 'needs manual handling: no stored payload'],
		]);
		expect(report[0]).toMatchObject({ status: 'failed', attempts: 1 });
		expect(execution.nodesRun).not.toContain('Claim for Replay');
		expect(execution.nodesRun).not.toContain('Business Step (insert business_log)');
		expect(await Promise.all([failing, stillBroken, noPayload, completed].map(stored))).toEqual(before);
		expect([
			await businessRows(failing),
			await businessRows(stillBroken),
			await businessRows(noPayload),
			await businessRows(completed),
		]).toEqual([0, 0, 0, 1]);
	});

	test('replay after the fix: exactly one business row for the fixed event, which is completed; a step that still fails is marked failed again; no payload → Needs Manual Handling; the completed key is not touched', async () => {
		await h.appQuery(`ALTER TABLE business_log DROP CONSTRAINT ${POISON}`);
		const completedBefore = await stored(completed);

		const execution = await run(replayId);

		expect(await businessRows(failing)).toBe(1);
		const replayed = await stored(failing);
		expect(replayed).toMatchObject({ status: 'completed', attempts: 2, locked_until: null });
		expect(replayed.execution_id).toBe(String(execution.id));
		// The business row came from the stored payload: event_type is the stored body's type.
		const row = await h.appQuery('SELECT event_type FROM business_log WHERE event_key = $1', [keyOf(failing)]);
		expect(row.rows).toEqual([{ event_type: 'e2e.replay_poison' }]);

		expect(await businessRows(stillBroken)).toBe(0);
		const again = await stored(stillBroken);
		expect(again).toMatchObject({ status: 'failed', attempts: 2, payload: stillBroken });
		expect(again.last_error).toMatch(/e2e_replay_still_broken/);

		const manual = itemsOut(execution, 'Needs Manual Handling');
		expect(manual.map((item) => item.key)).toEqual([keyOf(noPayload)]);
		expect(manual[0].reason).toMatch(/no stored payload/);
		expect(await stored(noPayload)).toMatchObject({ status: 'failed', attempts: 1 });
		expect(await businessRows(noPayload)).toBe(0);

		expect(itemsOut(execution, 'Claim for Replay', 0).map((item) => item.idempotency.key)).toEqual([keyOf(failing), keyOf(stillBroken)]);
		expect(itemsOut(execution, 'Settle (complete or mark failed)').map((item) => item.idempotency.applied)).toEqual([true]);
		expect(await stored(completed)).toEqual(completedBefore);
		expect(await businessRows(completed)).toBe(1);
	});

	test('a second replay run never replays a completed key (0 extra rows) and replays the one fixed since', async () => {
		await h.appQuery(`ALTER TABLE business_log DROP CONSTRAINT ${STILL_BROKEN}`);

		const execution = await run(replayId);

		expect(itemsOut(execution, 'Claim for Replay', 0).map((item) => item.idempotency.key)).toEqual([keyOf(stillBroken)]);
		expect([
			await businessRows(failing),
			await businessRows(stillBroken),
			await businessRows(noPayload),
			await businessRows(completed),
		]).toEqual([1, 1, 0, 1]);
		expect(await stored(stillBroken)).toMatchObject({ status: 'completed', attempts: 3 });

		// And a redelivery of the replayed event by the provider is now a duplicate: still one row.
		const duplicate = await h.deliver(url, failing);
		expect([duplicate.status, duplicate.outcome]).toEqual([200, 'duplicate']);
		expect(await businessRows(failing)).toBe(1);
	});

	test('the provider redelivers while a replay holds the key: 409 (in progress), then duplicate; exactly one business row', async () => {
		const raced = event('e_redelivered_during_replay', 'e2e.replay_race');
		await h.appQuery(`ALTER TABLE business_log ADD CONSTRAINT ${RACE} CHECK (event_type IS DISTINCT FROM 'e2e.replay_race')`);
		expect((await h.deliver(url, raced)).status).toBe(500);
		expect(await stored(raced)).toMatchObject({ status: 'failed', attempts: 1 });
		await h.appQuery(`ALTER TABLE business_log DROP CONSTRAINT ${RACE}`);

		// A lock on business_log holds the replay inside its business step, after its claim.
		let replay!: Promise<Execution>;
		await stack.withClient(h.state.appUrl, async (locker: Client) => {
			await locker.query('BEGIN');
			await locker.query('LOCK TABLE business_log IN SHARE ROW EXCLUSIVE MODE');
			try {
				replay = run(replayId);
				replay.catch(() => {}); // awaited below
				const deadline = Date.now() + 120000;
				let claimed = await stored(raced);
				while (!(claimed.status === 'processing' && claimed.attempts === 2)) {
					if (Date.now() > deadline) throw new Error(`the replay never claimed ${keyOf(raced)}: ${JSON.stringify(claimed)}`);
					await stack.sleep(200);
					claimed = await stored(raced);
				}
				const during = await h.deliver(url, raced);
				expect([during.status, during.outcome]).toEqual([409, 'in_progress']);
			} finally {
				await locker.query('COMMIT');
			}
		});
		const execution = await replay;

		expect(itemsOut(execution, 'Settle (complete or mark failed)').map((item) => item.idempotency.applied)).toEqual([true]);
		expect(await stored(raced)).toMatchObject({ status: 'completed', attempts: 2 });
		const after = await h.deliver(url, raced);
		expect([after.status, after.outcome]).toEqual([200, 'duplicate']);
		expect(await businessRows(raced)).toBe(1);
	});

	test('one run follows the pages: the first page stays replayable (its step fails again), the keys after it are still replayed; maxPages bounds a run', async () => {
		// Keys sort by name: the two "a" keys fill the first page of 2 and keep failing; the "b" keys come after.
		const pagesTag = `evt_e2e_replay_pages_${tag}_`;
		const pageEvent = (name: string, type: string): StripeEvent => ({ id: `${pagesTag}${name}`, object: 'event', type });
		const broken = ['a1', 'a2'].map((name) => pageEvent(name, 'e2e.replay_pages_broken'));
		const fixable = ['b1', 'b2', 'b3'].map((name) => pageEvent(name, 'e2e.replay_pages_fixed'));
		const all = [...broken, ...fixable];
		await h.appQuery(
			`ALTER TABLE business_log ADD CONSTRAINT ${PAGES_BROKEN} CHECK (event_type IS DISTINCT FROM 'e2e.replay_pages_broken')`,
		);
		await h.appQuery(`ALTER TABLE business_log ADD CONSTRAINT ${PAGES_FIXED} CHECK (event_type IS DISTINCT FROM 'e2e.replay_pages_fixed')`);
		for (const e of all) expect([e.id, (await h.deliver(url, e)).status]).toEqual([e.id, 500]);
		await h.appQuery(`ALTER TABLE business_log DROP CONSTRAINT ${PAGES_FIXED}`); // the "b" events can now succeed
		const pageSettings = { keyPrefix: `evt:${pagesTag}`, pageSize: 2 };

		// A dry run stopped by maxPages: 2 pages of 2 keys, and it says where it stopped.
		const bounded = await run((await saveWorkflow(h, replayWorkflow({ ...pageSettings, maxPages: 2 }), `replay pages bounded ${tag}`)).id);
		expect(itemsOut(bounded, 'Dry Run: Report Only').map((item) => item.key)).toEqual(all.slice(0, 4).map(keyOf));
		expect(bounded.runData['List Replayable Keys']).toHaveLength(2);
		expect(itemsOut(bounded, 'Replay Finished')).toEqual([expect.objectContaining({ moreKeysAfter: keyOf(all[3]) })]);
		expect(await Promise.all(all.map(stored))).toEqual(all.map(() => expect.objectContaining({ status: 'failed', attempts: 1 })));

		const execution = await run((await saveWorkflow(h, replayWorkflow({ ...pageSettings, dryRun: false }), `replay pages ${tag}`)).id);

		// Three pages ([a1, a2], [b1, b2], [b3]) in one run, every key claimed once, in key order.
		expect(execution.runData['List Replayable Keys']).toHaveLength(3);
		expect(itemsOut(execution, 'Claim for Replay', 0).map((item) => item.idempotency.key)).toEqual(all.map(keyOf));
		expect(itemsOut(execution, 'Replay Finished')).toEqual([
			expect.objectContaining({ moreKeysAfter: '', summary: 'every replayable key was listed' }),
		]);
		for (const e of broken) {
			expect(await stored(e)).toMatchObject({ status: 'failed', attempts: 2 });
			expect(await businessRows(e)).toBe(0);
		}
		for (const e of fixable) {
			expect(await stored(e)).toMatchObject({ status: 'completed', attempts: 2, locked_until: null });
			expect(await businessRows(e)).toBe(1);
		}
	});

	test('two replay runs at once, page after page: each key is claimed by exactly one of them and written once (and maxPages 0 reads one page; an empty page ends a run)', async () => {
		const twoRunsTag = `evt_e2e_replay_two_runs_${tag}_`;
		const keys = ['k1', 'k2', 'k3', 'k4', 'k5'].map((name) => ({
			id: `${twoRunsTag}${name}`,
			object: 'event',
			type: 'e2e.replay_two_runs',
		}));
		await h.appQuery(`ALTER TABLE business_log ADD CONSTRAINT ${TWO_RUNS} CHECK (event_type IS DISTINCT FROM 'e2e.replay_two_runs')`);
		for (const e of keys) expect([e.id, (await h.deliver(url, e)).status]).toEqual([e.id, 500]);
		await h.appQuery(`ALTER TABLE business_log DROP CONSTRAINT ${TWO_RUNS}`);
		const settings = { keyPrefix: `evt:${twoRunsTag}`, pageSize: 2, dryRun: false };

		// As docs/replay-and-visibility.md says: maxPages 0 (or less) still reads the first page, and says where it stopped.
		const none = await run(
			(await saveWorkflow(h, replayWorkflow({ ...settings, dryRun: true, maxPages: 0 }), `replay maxPages 0 ${tag}`)).id,
		);
		expect(none.runData['List Replayable Keys']).toHaveLength(1);
		expect(itemsOut(none, 'Dry Run: Report Only').map((item) => item.key)).toEqual(keys.slice(0, 2).map(keyOf));
		expect(itemsOut(none, 'Replay Finished')).toEqual([expect.objectContaining({ moreKeysAfter: keyOf(keys[1]) })]);
		// Two saved copies, so that each run's execution is told apart by its workflow.
		const first = (await saveWorkflow(h, replayWorkflow(settings), `replay two runs A ${tag}`)).id;
		const second = (await saveWorkflow(h, replayWorkflow(settings), `replay two runs B ${tag}`)).id;

		// A lock on business_log holds each run in its business step after a claim, until both have claimed a key.
		let runs!: Promise<Execution[]>;
		await stack.withClient(h.state.appUrl, async (locker: Client) => {
			await locker.query('BEGIN');
			await locker.query('LOCK TABLE business_log IN SHARE ROW EXCLUSIVE MODE');
			try {
				runs = Promise.all([run(first), run(second)]);
				runs.catch(() => {}); // awaited below
				const deadline = Date.now() + 120000;
				const claimedNow = async () =>
					(
						await h.appQuery(
							"SELECT count(*)::int AS n FROM processed_events WHERE key LIKE $1 AND status = 'processing' AND attempts = 2",
							[`evt:${twoRunsTag}%`],
						)
					).rows[0].n;
				while ((await claimedNow()) < 2) {
					if (Date.now() > deadline) throw new Error('the two replay runs never held a key each at once');
					await stack.sleep(200);
				}
			} finally {
				await locker.query('COMMIT');
			}
		});
		const executions = await runs;

		const claimedBy = executions.map((execution) => itemsOut(execution, 'Claim for Replay', 0).map((item) => item.idempotency.key));
		// Both ran at once (each held a key while the other did), and no key was claimed twice.
		expect(claimedBy.map((claimed) => claimed.length > 0)).toEqual([true, true]);
		expect([...claimedBy[0], ...claimedBy[1]].sort()).toEqual(keys.map(keyOf).sort());
		for (const e of keys) {
			expect(await businessRows(e)).toBe(1);
			expect(await stored(e)).toMatchObject({ status: 'completed', attempts: 2, locked_until: null });
		}

		// Nothing left to replay: the empty page ends the run at List Replayable Keys, without Replay Finished.
		const empty = await run((await saveWorkflow(h, replayWorkflow({ ...settings, dryRun: true }), `replay empty page ${tag}`)).id);
		expect(empty.runData['List Replayable Keys']).toHaveLength(1);
		expect(itemsOut(empty, 'List Replayable Keys')).toEqual([]);
		expect(empty.nodesRun).not.toContain('Replay Finished');
	});
});
