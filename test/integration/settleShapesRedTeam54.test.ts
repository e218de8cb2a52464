import { join } from 'node:path';

import type { ICredentialsHelper, IConnections, INode, INodeParameters } from 'n8n-workflow';

import { connectionSettings, postgresSchemaFixture } from '../support/database';
import { describeWithN8n, n8nInstallDirectory } from '../support/n8nBaseNodes';
import { postgresCharges } from '../support/postgresCharges';
import { link } from '../support/settleWorkflows';
import {
	at,
	chain,
	baseNode as node,
	CHARGE_ID,
	events,
	ifTrue,
	SPLIT_OUT_EVENTS,
	sortOn,
	subWorkflowRedTeam,
	subWorkflowTrigger,
	tagNode,
	threeEvents,
	type Step,
} from '../support/triggerRedTeam';

/*
 * Red team 54: shapes not tried by passes 1-53, behind the Idempotent Webhook trigger with several events in one delivery
 * (Events Path) and a provider that retries until 2xx, in n8n 2.41.1's engine with n8n-nodes-base's own nodes:
 *  A. items without their `idempotency` field (Edit Fields keeping only the fields the API needs) passed on untouched
 *     by a node after one that re-ordered or dropped events: No Operation, a disabled node, a second Filter, If, Switch,
 *     Limit (last items), Merge (Append), Loop Over Items after a Sort; the node path with Settle beside;
 *  B. one call for all the events (a batch endpoint: Sheets append, Airtable's bulk create, a bulk API): Aggregate (All
 *     Item Data) → Charge Batch, and Execute Once with a body from $input.all(); a node after the batch;
 *  C. node settings after the effect: Retry On Fail on a notification, a disabled Stop and Error, Always Output Data on
 *     the effect with every event failing;
 *  D. a wait inside a sub-workflow defined in Execute Workflow (Email Send and Wait, Wait On Webhook Call with Run Once
 *     for Each Item, a Form two levels down) and an in-run Wait inside one;
 *  E. n8n's SQL nodes built on the Postgres node's version-1 helpers (TimescaleDB 1.1, QuestDB 1.1, and the Postgres node
 *     1 older workflows still hold) writing each event's row at Continue, against the tests' Postgres; Postgres 2.5 beside.
 * Each row asserts what a demanding user expects: one effect (charge, batch charge, row) per event after the retries,
 * every key completed, or the shape refused at publish. RT54_DUMP=1 prints every run's node outputs and pairing.
 *
 * What the pass found, each now answered (the rows assert the answer; seen failing before it: E1-E4, E8-E10 lost, B2 doubled).
 *  F1 (E1, E3, E8, E9, E10) LOST: TimescaleDB 1.1, QuestDB 1.1 (CrateDB 1.1 too, read) and the Postgres node 1 share
 *     n8n-nodes-base's Postgres/v1/genericFunctions.js (pgQueryV2, pgInsert, pgInsertV2). At Continue (either output) in
 *     Mode Independently (QuestDB's default for Execute Query; its Insert always works so), a failed statement comes back
 *     as an item holding the input item's fields (or the row's columns) with `code` and `message` beside `json`, and no
 *     `error`: n8n-core's handleNodeErrorOutput (it reads `item.error` or `json.error`) sends it on the success output,
 *     and the package sees no failure either (trace.ts judgeExecution reads the error output, or `error` in the json at
 *     Continue (regular output): carriesError / ERROR_ITEM_KEYS). E1: B's insert refused, answers [200], rows [1, 0, 1],
 *     every key completed; E9: one event (no Events Path), QuestDB at its defaults but On Error: [200], rows [0],
 *     completed. Nothing refuses the shape: nodeKinds.ts failsAllOrNothing / writesAllOrNone know the Postgres type and
 *     MySQL only, and wiring.ts checkStepTakesEventsApart's Continue branch accepted any other node. Now refused at
 *     publish, and by Reserve, for one event or several (nodeKinds.ts hidesStatementFailures, refusal
 *     statementFailureHidden): these nodes at Continue unless in Multiple Queries mode (QuestDB has none; CrateDB updates
 *     one by one in either mode). E7 (nothing failing) is refused as well: a failure there would not be seen.
 *  F2 (E2, E4) LOST, every event: the same nodes in Mode Transaction at Continue: the failed statement's item is
 *     returned as above, the db.tx callback resolves, pg-promise sends COMMIT to an aborted transaction and Postgres
 *     rolls every statement back; the events after the failing one never ran and gave no item. Rows [0, 0, 0], 200,
 *     every key completed. (For the Postgres node 1 in Transaction nodeKinds.ts writesAllOrNone already says "all or
 *     none", but trace.ts applies it only once it has seen a failure.)
 *  F3 (B2) DOUBLED: Aggregate (All Item Data) → Charge Batch (one call charging every event) → Notify (error output)
 *     failing once: Notify's item is paired through the batch's one item to the Aggregate's item, paired to every
 *     event, so every key fails (500) and the retry charges the whole batch again: batch [2, 2, 2]. The shape of rt53
 *     F3 (a node given one item for all the events after their effect), with the join before the effect: wiring.ts
 *     checkJoinedAfterEffect asked only for an effect not after the join (effectNotAfter(join)); it now also counts the
 *     effect made of the joined item on the way from the join to the node (refused at publish). B5 (an Edit Fields
 *     node reading the events back after the batch, then Split Out) is refused the same way: it could fail for all.
 *
 * Read in n8n 2.41.1's code, not run (no server here):
 *  - Airtable 2.x create, update, upsert at Continue (using error output): the error item `{ json: { message, error } }`
 *    has no pairedItem (create.operation.js); n8n-core's error-output split keeps it unpaired and assignPairedItems then
 *    pairs nothing (two outputs). trace.ts: no link, no key → untracedFailure → every key fails, and the retry creates
 *    the other events' records again (doubled). At Continue (regular output) n8n pairs it by position (right).
 *  - Airtable 1 (Append/Update, Bulk Size 10): each successful chunk's records are paired to the chunk's last item, so
 *    a later per-record failure fails the last event of the chunk and completes the one it was for; a failing second
 *    chunk's error item is unpaired (every key fails, the first chunk is written again).
 *  - QuestDB Insert: the failures pgInsert returns are dropped (the node outputs `SELECT … FROM table`): lost at Continue.
 *  - A sub-workflow from the database that waits: the trigger holds the key (executionEnd.ts waitsThroughSubWorkflow,
 *    In Progress until its retention); the harness cannot park a parent on a waiting sub-execution as n8n does.
 *
 * Controls that held: A1-A12 (n8n 2.41.1's WorkflowExecute.addPairedItemLineage gives every input item a new
 * `pairedItem` to its place before a node runs, so items passed on untouched are paired right without their key), B1,
 * B3, B4 (refused: Execute Once with an effect after it), B5 (B, whose own step failed after the batch, is charged again:
 * the documented limit; A and C once), C1 (refused: Retry On Fail together), C2, C3, D1-D3 (refused at publish, inner
 * node named), D4, E5 (Mode Multiple Queries: the node fails as a whole, read as every event's failure), E6 (Postgres
 * 2.5 pairs its error item), E7.
 */

/** n8n-nodes-base's credential type's properties (`Postgres`, `TimescaleDb`), as n8n reads them to fill its defaults. */
function credentialProperties(file: string): never {
	const directory = join(n8nInstallDirectory(), 'node_modules', 'n8n-nodes-base', 'dist', 'credentials');
	const { createRequire } = (process as unknown as { getBuiltinModule(id: string): typeof import('node:module') }).getBuiltinModule(
		'node:module',
	);
	const module = createRequire(join(directory, 'package.json'))(join(directory, `${file}.credentials.js`)) as Record<
		string,
		new () => { properties: unknown[] }
	>;
	const [Credential] = Object.values(module);
	return new Credential().properties as never;
}

/** The engine with n8n's Postgres, TimescaleDB and QuestDB credentials on the test server, beside the trigger's own. */
function withDatabaseCredentials<T extends object>(engine: T): T {
	const own = (engine as unknown as { credentialsHelper: ICredentialsHelper }).credentialsHelper;
	const files: Record<string, string> = { postgres: 'Postgres', timescaleDb: 'TimescaleDb', questDb: 'QuestDb' };
	const stored = () => {
		const { host, port, database, user, password } = connectionSettings();
		return { host, port, database, user, password, ssl: 'disable', allowUnauthorizedCerts: false, sshTunnel: false, maxConnections: 5 };
	};
	const helper = {
		...own,
		getDecrypted: async (additionalData: unknown, details: unknown, type: string) =>
			files[type] ? stored() : await (own.getDecrypted as (...args: unknown[]) => Promise<unknown>)(additionalData, details, type),
		getCredentialsProperties: (type: string) => (files[type] ? credentialProperties(files[type]) : own.getCredentialsProperties(type)),
	};
	return { ...engine, credentialsHelper: helper };
}

describeWithN8n(
	'red team 54: items passed on untouched, one call for all events, node settings, waits in sub-workflows, SQL nodes at Continue',
	() => {
		/** What the test API's batch route charged, per event id (one call charges every event it names). */
		const batchCharges = new Map<string, number>();
		const rt = subWorkflowRedTeam({
			tag: 'rt54',
			route: (route, body) => {
				if (route !== 'batch') return undefined;
				const ids = Array.isArray(body.events) ? (body.events as unknown[]).map(String) : [];
				for (const id of ids) batchCharges.set(id, (batchCharges.get(id) ?? 0) + 1);
				return { ok: true, id: body.id, charged: ids.length };
			},
			engine: (engine) => withDatabaseCredentials(engine),
			baseNodeFiles: {
				'n8n-nodes-base.postgres': 'Postgres/Postgres.node.js',
				'n8n-nodes-base.timescaleDb': 'TimescaleDb/TimescaleDb.node.js',
				'n8n-nodes-base.questDb': 'QuestDb/QuestDb.node.js',
				'n8n-nodes-base.set': 'Set/Set.node.js',
				'n8n-nodes-base.filter': 'Filter/Filter.node.js',
				'n8n-nodes-base.aggregate': 'Transform/Aggregate/Aggregate.node.js',
				'n8n-nodes-base.limit': 'Transform/Limit/Limit.node.js',
				'n8n-nodes-base.stopAndError': 'StopAndError/StopAndError.node.js',
				'n8n-nodes-base.emailSend': 'EmailSend/EmailSend.node.js',
				'n8n-nodes-base.form': 'Form/Form.node.js',
				'n8n-nodes-base.switch': 'Switch/Switch.node.js',
			},
		});
		const { charges, dump, effectsAt, failNext, httpCall, record, runTrigger, nodeStatuses } = rt;
		const { nodeTemplate, useNodePath, provideNodePath } = rt.nodePath;

		/* Builders -------------------------------------------------------------------------------------------------------- */
		const EVENT_ID = '={{ JSON.stringify({ id: $json.body.id }) }}';
		/** The charge at Continue (using error output), that output left unconnected (the step's failures its keys'). */
		const charge = (body = EVENT_ID, extra: Partial<INode> = {}, options: INodeParameters = {}, name = 'Charge', route = 'charge') =>
			httpCall(name, route, { onError: 'continueErrorOutput', ...extra }, body, options);
		const ALL_COMPLETED = ['completed', 'completed', 'completed'];
		const ONE_EACH = { refusal: false, charges: [1, 1, 1], keys: ALL_COMPLETED };

		/**
		 * Edit Fields (3.4) keeping only the fields the charge needs (Include Other Input Fields off, as users set it for a
		 * clean payload): the events' `idempotency` field is dropped; `keep` keeps every other field (the key too).
		 */
		const fields = (keep = false, name = 'Fields') =>
			node(name, 'set', 3.4, {
				mode: 'manual',
				assignments: {
					assignments: [
						{ id: 'i', name: 'id', value: '={{ $json.body.id }}', type: 'string' },
						{ id: 'a', name: 'amount', value: '={{ $json.body.amount }}', type: 'number' },
						{ id: 'v', name: 'vip', value: '={{ $json.body.vip === true }}', type: 'boolean' },
						{ id: 's', name: 'skip', value: '={{ $json.body.skip === true }}', type: 'boolean' },
					],
				},
				includeOtherFields: keep,
				options: {},
			});
		/** Filter 2.2 keeping the items whose `expression` (on the Edit Fields item) is true. */
		const filterOn = (name: string, expression: string) =>
			node(name, 'filter', 2.2, {
				conditions: {
					options: { caseSensitive: true, leftValue: '', typeValidation: 'loose', version: 2 },
					conditions: [
						{
							id: 'f',
							leftValue: `={{ ${expression} }}`,
							rightValue: '',
							operator: { type: 'boolean', operation: 'true', singleValue: true },
						},
					],
					combinator: 'and',
				},
				looseTypeValidation: true,
				options: {},
			});
		const noOp = (name = 'Go On') => node(name, 'noOp', 1, {});
		/** The events in the order Sort (amount, ascending) gives them: B (100), C (200), A (300). */
		const byAmount = () => sortOn('amount');

		/* A. Nodes that pass their input items on as they got them ------------------------------------------------------- */
		describe('A. a node that passes its items on untouched (No Operation, a disabled node, Filter, If) after one that re-ordered or dropped them', () => {
			it("Edit Fields (only id, amount) → Sort (amount) → No Operation → Charge, B's charge failing once: one charge each", async () => {
				const p = 'a1';
				const r = await runTrigger(p, chain([fields(), byAmount(), noOp(), charge(CHARGE_ID)]), `charge:${p}_b`);
				record('A1 fields-only sort noop', { ...r, lastErrors: rt.keyRows().map((row) => row.last_error?.slice(0, 60) ?? null) });
				expect(r).toMatchObject({ ...ONE_EACH, answers: [500, 200] });
			});
			it("Edit Fields (only id, amount) → Sort (amount) → a disabled Edit Fields (Debug) → Charge, B's charge failing once: one charge each", async () => {
				const p = 'a2';
				const debug = { ...fields(true, 'Debug'), disabled: true };
				const r = await runTrigger(p, chain([fields(), byAmount(), debug, charge(CHARGE_ID)]), `charge:${p}_b`);
				record('A2 fields-only sort disabled', r);
				expect(r).toMatchObject({ ...ONE_EACH, answers: [500, 200] });
			});
			it("Edit Fields (only id, amount, vip) → Sort (amount) → If (vip) → Charge (true) / Ship (false), B's ship failing once: A charged, B and C shipped once", async () => {
				const p = 'a3';
				const step: Step = {
					nodes: [
						at(fields(), 0, 400),
						at(byAmount(), 0, 620),
						at(ifTrue('$json.vip'), 0, 840),
						at(charge(CHARGE_ID), -200, 1060),
						at(charge(CHARGE_ID, {}, {}, 'Ship', 'ship'), 200, 1060),
					],
					connections: {
						Fields: { main: [link('By Amount')] },
						'By Amount': { main: [link('VIP?')] },
						'VIP?': { main: [link('Charge'), link('Ship')] },
						Charge: { main: [[], []] },
						Ship: { main: [[], []] },
					} as IConnections,
					heads: ['Fields'],
				};
				const r = await runTrigger(p, step, `ship:${p}_b`);
				const ships = threeEvents(p).map((event) => effectsAt('ship', event.id));
				record('A3 fields-only sort if', { ...r, ships });
				expect({ refusal: r.refusal, answers: r.answers, charges: r.charges, ships, keys: r.keys }).toEqual({
					refusal: false,
					answers: [500, 200],
					charges: [1, 0, 0],
					ships: [0, 1, 1],
					keys: ALL_COMPLETED,
				});
			});
			it("Edit Fields (only fields) → Filter (not skipped: A skipped) → Filter (amount > 0) → Charge, B's charge failing once: B and C charged once, A completed uncharged", async () => {
				const p = 'a4';
				const list = threeEvents(p, [{ skip: true }, {}, {}]);
				const step = chain([fields(), filterOn('Not Skipped', '!$json.skip'), filterOn('Positive', '$json.amount > 0'), charge(CHARGE_ID)]);
				const r = await runTrigger(p, step, `charge:${p}_b`, list);
				record('A4 fields-only two filters', { ...r, lastErrors: rt.keyRows().map((row) => row.last_error?.slice(0, 60) ?? null) });
				expect(r).toMatchObject({ refusal: false, answers: [500, 200], charges: [0, 1, 1], keys: ALL_COMPLETED });
			});
			it("Edit Fields (only fields) → Filter (A skipped) → No Operation → Charge, C's charge failing once: B and C charged once", async () => {
				const p = 'a5';
				const list = threeEvents(p, [{ skip: true }, {}, {}]);
				const r = await runTrigger(
					p,
					chain([fields(), filterOn('Not Skipped', '!$json.skip'), noOp(), charge(CHARGE_ID)]),
					`charge:${p}_c`,
					list,
				);
				record('A5 fields-only filter noop c fails', { ...r, lastErrors: rt.keyRows().map((row) => row.last_error?.slice(0, 60) ?? null) });
				expect(r).toMatchObject({ refusal: false, answers: [500, 200], charges: [0, 1, 1], keys: ALL_COMPLETED });
			});
			it("Edit Fields (only id, amount) → Limit (2, Last Items) → No Operation → Charge, B's charge failing once: B and C charged once", async () => {
				const p = 'a6';
				const limit = node('Last Two', 'limit', 1, { maxItems: 2, keep: 'lastItems' });
				const r = await runTrigger(p, chain([fields(), limit, noOp(), charge(CHARGE_ID)]), `charge:${p}_b`);
				record('A6 fields-only limit last noop', r);
				expect(r).toMatchObject({ refusal: false, answers: [500, 200], charges: [0, 1, 1], keys: ALL_COMPLETED });
			});
			it("Edit Fields (only fields) → If (vip): true → Tag → Join (Merge, Append) / false → Join → Charge, B's charge failing once: one charge each", async () => {
				const p = 'a10';
				const step: Step = {
					nodes: [
						at(fields(), 0, 400),
						at(ifTrue('$json.vip'), 0, 620),
						at(tagNode(), -200, 840),
						at(node('Join', 'merge', 3.2, { mode: 'append' }), 0, 1060),
						at(charge(CHARGE_ID), 0, 1280),
					],
					connections: {
						Fields: { main: [link('VIP?')] },
						'VIP?': { main: [link('Tag'), [{ node: 'Join', type: 'main', index: 1 }]] },
						Tag: { main: [link('Join')] },
						Join: { main: [link('Charge')] },
						Charge: { main: [[], []] },
					} as IConnections,
					heads: ['Fields'],
				};
				const r = await runTrigger(p, step, `charge:${p}_b`);
				record('A10 fields-only if merge append', { ...r, lastErrors: rt.keyRows().map((row) => row.last_error?.slice(0, 60) ?? null) });
				expect(r).toMatchObject({ ...ONE_EACH, answers: [500, 200] });
			});
			it("Edit Fields (only fields) → Sort (amount) → Switch (vip → 0, else → 1) → Charge / Ship, B's ship failing once: A charged, B and C shipped once", async () => {
				const p = 'a11';
				const condition = (id: string, left: string, operator: Record<string, string | boolean>, right: string | number = '') => ({
					options: { caseSensitive: true, leftValue: '', typeValidation: 'loose', version: 2 },
					conditions: [{ id, leftValue: left, rightValue: right, operator }],
					combinator: 'and',
				});
				const route = node('Route', 'switch', 3.2, {
					rules: {
						values: [
							{ conditions: condition('v', '={{ $json.vip === true }}', { type: 'boolean', operation: 'true', singleValue: true }) },
							{ conditions: condition('n', '={{ $json.amount }}', { type: 'number', operation: 'gte' }, 0) },
						],
					},
					looseTypeValidation: true,
					options: {},
				});
				const step: Step = {
					nodes: [
						at(fields(), 0, 400),
						at(byAmount(), 0, 620),
						at(route, 0, 840),
						at(charge(CHARGE_ID), -200, 1060),
						at(charge(CHARGE_ID, {}, {}, 'Ship', 'ship'), 200, 1060),
					],
					connections: {
						Fields: { main: [link('By Amount')] },
						'By Amount': { main: [link('Route')] },
						Route: { main: [link('Charge'), link('Ship')] },
						Charge: { main: [[], []] },
						Ship: { main: [[], []] },
					} as IConnections,
					heads: ['Fields'],
				};
				const r = await runTrigger(p, step, `ship:${p}_b`);
				const ships = threeEvents(p).map((event) => effectsAt('ship', event.id));
				record('A11 fields-only sort switch', { ...r, ships });
				expect({ refusal: r.refusal, answers: r.answers, charges: r.charges, ships, keys: r.keys }).toEqual({
					refusal: false,
					answers: [500, 200],
					charges: [1, 0, 0],
					ships: [0, 1, 1],
					keys: ALL_COMPLETED,
				});
			});
			it("Edit Fields (only fields) → Sort (amount) → Loop Over Items (batch 1) → Charge (both outputs back to the loop), B's charge failing once: one charge each", async () => {
				const p = 'a12';
				const loop = node('Loop', 'splitInBatches', 3, { batchSize: 1, options: {} });
				const step: Step = {
					nodes: [at(fields(), 0, 400), at(byAmount(), 0, 620), at(loop, 0, 840), at(charge(CHARGE_ID), 0, 1060)],
					connections: {
						Fields: { main: [link('By Amount')] },
						'By Amount': { main: [link('Loop')] },
						Loop: { main: [[], link('Charge')] },
						Charge: { main: [link('Loop'), link('Loop')] },
					} as IConnections,
					heads: ['Fields'],
				};
				const r = await runTrigger(p, step, `charge:${p}_b`);
				record('A12 fields-only sort loop', { ...r, lastErrors: rt.keyRows().map((row) => row.last_error?.slice(0, 60) ?? null) });
				expect(r).toMatchObject({ ...ONE_EACH, answers: [500, 200] });
			});
			it("control: Edit Fields keeping the other fields (the key) → Sort → No Operation → Charge, B's charge failing once: one charge each", async () => {
				const p = 'a7';
				const r = record(
					'A7 keep key sort noop',
					await runTrigger(p, chain([fields(true), byAmount(), noOp(), charge(CHARGE_ID)]), `charge:${p}_b`),
				);
				expect(r).toMatchObject({ ...ONE_EACH, answers: [500, 200] });
			});
			it("control: Edit Fields (only id, amount) → Sort → Charge (nothing after the Sort), B's charge failing once: one charge each", async () => {
				const p = 'a8';
				const r = record('A8 fields-only sort', await runTrigger(p, chain([fields(), byAmount(), charge(CHARGE_ID)]), `charge:${p}_b`));
				expect(r).toMatchObject({ ...ONE_EACH, answers: [500, 200] });
			});
			it("node path, Settle beside: Split Out → Reserve (Field) → Edit Fields (only fields) → Sort → No Operation → Charge, B's charge failing once: one charge each", async () => {
				const p = 'a9';
				const list = threeEvents(p);
				useNodePath(`wf-rt54-${p}`);
				failNext(`charge:${p}_b`);
				const step = chain([fields(), byAmount(), noOp(), charge(CHARGE_ID)]);
				const { answers, runs } = await provideNodePath(events(list), () =>
					nodeTemplate(step, { reserve: rt.fieldReserve(), before: SPLIT_OUT_EVENTS, settle: true }),
				);
				dump(p, runs);
				const r = record('A9 node path settle fields-only sort noop', {
					answers,
					charges: charges(list.map((event) => event.id)),
					keys: await nodeStatuses(list.map((event) => event.id)),
				});
				expect({ charges: r.charges, keys: r.keys, last: answers[answers.length - 1] }).toEqual({
					charges: [1, 1, 1],
					keys: ALL_COMPLETED,
					last: 200,
				});
			});
		});

		/* B. One call for all the events ---------------------------------------------------------------------------------- */
		describe('B. one call that charges every event of the delivery (a batch endpoint: Sheets append, Airtable create, a bulk API)', () => {
			const batched = (p: string) => threeEvents(p).map((event) => batchCharges.get(event.id) ?? 0);
			/** Aggregate (All Item Data, into `data`) → Charge Batch (one POST naming every event, error output). */
			const collect = () => node('Collect', 'aggregate', 1, { aggregate: 'aggregateAllItemData', options: {} });
			const batch = (
				p: string,
				body = `={{ JSON.stringify({ id: '${p}_batch', events: $json.data.map((e) => e.body.id) }) }}`,
				extra: Partial<INode> = {},
			) => charge(body, extra, {}, 'Charge Batch', 'batch');
			const notice = (p: string) =>
				httpCall(
					'Notify',
					'notify',
					{ onError: 'continueErrorOutput' },
					`={{ JSON.stringify({ id: '${p}_notice', charged: $json.charged }) }}`,
				);

			it('Aggregate (All Item Data) → Charge Batch (one call), the batch call failing once: every event charged once', async () => {
				const p = 'b1';
				const r = await runTrigger(p, chain([collect(), batch(p)]), 'batch');
				const out = record('B1 aggregate batch fails', { ...r, batch: batched(p) });
				expect({ refusal: out.refusal, answers: out.answers, batch: out.batch, keys: out.keys }).toEqual({
					refusal: false,
					answers: [500, 200],
					batch: [1, 1, 1],
					keys: ALL_COMPLETED,
				});
			});
			it('Aggregate (All Item Data) → Charge Batch (one call) → Notify (error output) failing once: refused at publish naming Notify, nothing charged', async () => {
				const p = 'b2';
				const r = await runTrigger(p, chain([collect(), batch(p), notice(p)]), `notify:${p}_notice`);
				const out = record('B2 aggregate batch notify fails', { ...r, batch: batched(p), notices: effectsAt('notify', `${p}_notice`) });
				// One notice for the whole batch: its failure would be every event's, after the batch charged each.
				expect({ refusal: out.refusal, batch: out.batch }).toEqual({
					refusal: expect.stringContaining('"Notify" gets the one item "Collect" makes of the events of one delivery after "Charge Batch"'),
					batch: [0, 0, 0],
				});
			});
			it('Charge Batch at Execute Once (its body from $input.all()), nothing after it, the call failing once: every event charged once', async () => {
				const p = 'b3';
				const body = `={{ JSON.stringify({ id: '${p}_batch', events: $input.all().map((i) => i.json.body.id) }) }}`;
				const r = await runTrigger(p, chain([batch(p, body, { executeOnce: true })]), 'batch');
				const out = record('B3 execute once batch fails', { ...r, batch: batched(p) });
				expect({ refusal: out.refusal, answers: out.answers, batch: out.batch, keys: out.keys }).toEqual({
					refusal: false,
					answers: [500, 200],
					batch: [1, 1, 1],
					keys: ALL_COMPLETED,
				});
			});
			it('Charge Batch at Execute Once ($input.all()) → Notify: refused at publish (Execute Once with a node that acts after it)', async () => {
				const p = 'b4';
				const body = `={{ JSON.stringify({ id: '${p}_batch', events: $input.all().map((i) => i.json.body.id) }) }}`;
				const r = await runTrigger(p, chain([batch(p, body, { executeOnce: true }), notice(p)]), undefined);
				const out = record('B4 execute once batch notify', { ...r, batch: batched(p) });
				expect({ refusal: out.refusal, batch: out.batch }).toEqual({ refusal: expect.stringContaining('Execute Once'), batch: [0, 0, 0] });
			});
			it('Aggregate (All Item Data) → Charge Batch → Edit Fields (the events again) → Split Out → Ship each: refused at publish naming the Edit Fields node, nothing charged', async () => {
				const p = 'b5';
				// At Continue (using error output): at Stop Workflow a node that may fail after the batch is refused.
				const splitAgain = node(
					'Each Event',
					'splitOut',
					1,
					{ fieldToSplitOut: 'data', include: 'noOtherFields', options: {} },
					{ onError: 'continueErrorOutput' },
				);
				// The batch's answer replaced the item: the events are read back from the Aggregate's item.
				const rejoin = node(
					'Events Again',
					'set',
					3.4,
					{ mode: 'raw', jsonOutput: "={{ JSON.stringify({ data: $('Collect').item.json.data }) }}", options: {} },
					{ onError: 'continueErrorOutput' },
				);
				const ship = charge(EVENT_ID, {}, {}, 'Ship', 'ship');
				const r = await runTrigger(p, chain([collect(), batch(p), rejoin, splitAgain, ship]), `ship:${p}_b`);
				const ships = threeEvents(p).map((event) => effectsAt('ship', event.id));
				const out = record('B5 aggregate batch split ship', { ...r, batch: batched(p), ships });
				// "Events Again" gets the batch's one item after the batch charged every event: its failure would be all of theirs.
				expect({ refusal: out.refusal, batch: out.batch, ships: out.ships }).toEqual({
					refusal: expect.stringContaining(
						'"Events Again" gets the one item "Collect" makes of the events of one delivery after "Charge Batch"',
					),
					batch: [0, 0, 0],
					ships: [0, 0, 0],
				});
			});
		});

		/* C. Node settings after the effect ------------------------------------------------------------------------------- */
		describe('C. node settings after the effect', () => {
			it('Charge → Notify (Retry On Fail, error output), three events: refused at publish naming Notify', async () => {
				const p = 'c1';
				const notify = httpCall('Notify', 'notify', { onError: 'continueErrorOutput', retryOnFail: true, maxTries: 2 }, CHARGE_ID);
				const r = record('C1 notify retry on fail', await runTrigger(p, chain([charge(EVENT_ID), notify]), undefined));
				expect({ refusal: r.refusal, charges: r.charges }).toEqual({ refusal: expect.stringContaining('"Notify"'), charges: [0, 0, 0] });
			});
			it("Charge (error output) → a disabled Stop and Error → Ship (error output), B's ship failing once: one charge each, one shipment each", async () => {
				const p = 'c2';
				const stop = { ...node('Halt', 'stopAndError', 1, { errorMessage: 'stop' }), disabled: true };
				const ship = charge(CHARGE_ID, {}, {}, 'Ship', 'ship');
				const r = await runTrigger(p, chain([charge(EVENT_ID), stop, ship]), `ship:${p}_b`);
				const ships = threeEvents(p).map((event) => effectsAt('ship', event.id));
				record('C2 disabled stop and error', { ...r, ships });
				// B's own step failed after its charge: B is charged again (documented "not guaranteed"), A and C once.
				expect({ refusal: r.refusal, answers: r.answers, charges: r.charges, ships, keys: r.keys }).toEqual({
					refusal: false,
					answers: [500, 200],
					charges: [1, 2, 1],
					ships: [1, 1, 1],
					keys: ALL_COMPLETED,
				});
			});
			it("Charge (error output, Always Output Data) as the last node, every event's charge failing once: one charge each", async () => {
				const p = 'c3';
				for (const event of threeEvents(p)) failNext(`charge:${event.id}`);
				const r = record(
					'C3 always output data all fail',
					await runTrigger(p, chain([charge(EVENT_ID, { alwaysOutputData: true })]), undefined),
				);
				expect(r).toMatchObject({ ...ONE_EACH, answers: [500, 200] });
			});
		});

		/* D. Waits inside a sub-workflow ---------------------------------------------------------------------------------- */
		describe('D. a wait inside a sub-workflow defined in Execute Workflow', () => {
			const subOf = (nodes: INode[], connections: IConnections) => JSON.stringify({ nodes: [subWorkflowTrigger(), ...nodes], connections });
			const askByEmail = () =>
				node('Ask', 'emailSend', 2.1, {
					operation: 'sendAndWait',
					fromEmail: 'ops@example.com',
					sendTo: 'boss@example.com',
					subject: 'Approve?',
					message: 'Approve the charge?',
					options: {},
				});
			it("sub (once for all): Charge → Email Send and Wait (approval): refused at publish naming the sub-workflow's node", async () => {
				const p = 'd1';
				const sub = subOf([at(charge(EVENT_ID), 0, 300), at(askByEmail(), 0, 500)], {
					Webhook: { main: [link('Charge')] },
					Charge: { main: [link('Ask'), []] },
				} as IConnections);
				const r = record('D1 sub email send and wait', await runTrigger(p, { nodes: [rt.enrich(sub)], heads: ['Enrich'] }, undefined));
				expect({ refusal: r.refusal, charges: r.charges }).toEqual({ refusal: expect.stringContaining('Ask'), charges: [0, 0, 0] });
			});
			it('sub (each item): Wait (On Webhook Call) → Charge: refused at publish', async () => {
				const p = 'd2';
				const wait = node('Hold', 'wait', 1.1, { resume: 'webhook', options: {} });
				const sub = subOf([at(wait, 0, 300), at(charge(EVENT_ID), 0, 500)], {
					Webhook: { main: [link('Hold')] },
					Hold: { main: [link('Charge')] },
					Charge: { main: [[], []] },
				} as IConnections);
				const r = record(
					'D2 sub wait webhook each',
					await runTrigger(p, { nodes: [rt.enrich(sub, 'each')], heads: ['Enrich'] }, undefined),
				);
				expect({ refusal: r.refusal, charges: r.charges }).toEqual({ refusal: expect.stringContaining('Hold'), charges: [0, 0, 0] });
			});
			it('sub two deep: Enrich → (sub) Inner → (sub) Form (wait for a form): refused at publish', async () => {
				const p = 'd3';
				const form = node('Approve Form', 'form', 1, { operation: 'page', formFields: { values: [{ fieldLabel: 'OK' }] }, options: {} });
				const inner = subOf([at(form, 0, 300)], { Webhook: { main: [link('Approve Form')] } } as IConnections);
				const outer = subOf([at(rt.enrich(inner, 'once', 'Inner'), 0, 300), at(charge(CHARGE_ID), 0, 500)], {
					Webhook: { main: [link('Inner')] },
					Inner: { main: [link('Charge')] },
					Charge: { main: [[], []] },
				} as IConnections);
				const r = record('D3 nested form', await runTrigger(p, { nodes: [rt.enrich(outer)], heads: ['Enrich'] }, undefined));
				expect({ refusal: r.refusal, charges: r.charges }).toEqual({
					refusal: expect.stringContaining('Approve Form'),
					charges: [0, 0, 0],
				});
			});
			it("sub (once for all): Charge → Wait 2 s (in the run) → Ship; B's ship failing once: published, A and C charged once", async () => {
				const p = 'd4';
				const pause = node('Pause', 'wait', 1.1, { resume: 'timeInterval', amount: 2, unit: 'seconds' });
				const sub = subOf([at(charge(EVENT_ID), 0, 300), at(pause, 0, 500), at(charge(CHARGE_ID, {}, {}, 'Ship', 'ship'), 0, 700)], {
					Webhook: { main: [link('Charge')] },
					Charge: { main: [link('Pause'), []] },
					Pause: { main: [link('Ship')] },
					Ship: { main: [[], []] },
				} as IConnections);
				const r = await runTrigger(p, { nodes: [rt.enrich(sub)], heads: ['Enrich'] }, `ship:${p}_b`);
				const ships = threeEvents(p).map((event) => effectsAt('ship', event.id));
				record('D4 sub short wait', { ...r, ships });
				// B's own step failed after its charge: B charged again (documented "not guaranteed").
				expect({ refusal: r.refusal, answers: r.answers, charges: r.charges, ships, keys: r.keys }).toEqual({
					refusal: false,
					answers: [500, 200],
					charges: [1, 2, 1],
					ships: [1, 1, 1],
					keys: ALL_COMPLETED,
				});
			});
		});

		/* E. SQL nodes writing each event's row at Continue ------------------------------------------------------------- */
		describe("E. n8n's TimescaleDB node (1.1) and the Postgres node 1: each event's statement at Continue, Mode Independently / Transaction", () => {
			const db = postgresSchemaFixture('rt54pg');
			const { charges: rows, failOnce } = postgresCharges(db);
			const credentials = {
				postgres: { id: 'pg', name: 'Postgres' },
				timescaleDb: { id: 'ts', name: 'TimescaleDB' },
				questDb: { id: 'qdb', name: 'QuestDB' },
			};
			/** An Execute Query inserting the event's row; `mode` its Additional Fields → Mode. */
			const insertRow = (
				type: 'postgres' | 'timescaleDb' | 'questDb',
				version: number,
				mode: string | undefined,
				onError: INode['onError'],
			) =>
				node(
					'Insert Charge',
					type,
					version,
					{
						operation: 'executeQuery',
						query: `=insert into ${db.schema}.charges (event) values ('{{ $json.body.id }}')`,
						additionalFields: mode ? { mode } : {},
					},
					{ onError, credentials },
				);
			const runRows = async (p: string, insert: INode, failing: string | undefined) => {
				const list = threeEvents(p);
				const ids = list.map((event) => event.id);
				if (failing) await failOnce(failing);
				const r = await runTrigger(p, chain([insert]), undefined, list);
				return { refusal: r.refusal, answers: r.answers, rows: await rows(ids), keys: r.keys };
			};
			const ROW_EACH = { refusal: false, rows: [1, 1, 1], keys: ALL_COMPLETED };
			// Such a node at Continue reports a failed statement as done: refused at publish, nothing written.
			const REFUSED_STATEMENTS = {
				refusal: expect.stringContaining(
					'"Insert Charge" continues on error and, when one of its statements fails, tells n8n of no failure',
				),
				rows: [0, 0, 0],
			};

			it("TimescaleDB 1.1, Mode Independently, Continue (using error output), B's insert failing once: refused at publish, nothing written", async () => {
				const p = 'e1';
				const r = record(
					'E1 timescale independently error output',
					await runRows(p, insertRow('timescaleDb', 1.1, 'independently', 'continueErrorOutput'), `${p}_b`),
				);
				expect(r).toMatchObject(REFUSED_STATEMENTS);
			});
			it("TimescaleDB 1.1, Mode Transaction, Continue (using error output), B's insert failing once: refused at publish, nothing written", async () => {
				const p = 'e2';
				const r = record(
					'E2 timescale transaction error output',
					await runRows(p, insertRow('timescaleDb', 1.1, 'transaction', 'continueErrorOutput'), `${p}_b`),
				);
				expect(r).toMatchObject(REFUSED_STATEMENTS);
			});
			it("Postgres 1, Mode Independently, Continue (regular output), B's insert failing once: refused at publish, nothing written", async () => {
				const p = 'e3';
				const r = record(
					'E3 postgres 1 independently regular output',
					await runRows(p, insertRow('postgres', 1, 'independently', 'continueRegularOutput'), `${p}_b`),
				);
				expect(r).toMatchObject(REFUSED_STATEMENTS);
			});
			it("Postgres 1, Mode Transaction, Continue (using error output), B's insert failing once: refused at publish, nothing written", async () => {
				const p = 'e4';
				const r = record(
					'E4 postgres 1 transaction error output',
					await runRows(p, insertRow('postgres', 1, 'transaction', 'continueErrorOutput'), `${p}_b`),
				);
				expect(r).toMatchObject(REFUSED_STATEMENTS);
			});
			it("control: TimescaleDB 1.1, Mode Multiple Queries (its default), Continue (using error output), B's insert failing once: one row each", async () => {
				const p = 'e5';
				const r = record(
					'E5 timescale multiple error output',
					await runRows(p, insertRow('timescaleDb', 1.1, undefined, 'continueErrorOutput'), `${p}_b`),
				);
				expect(r).toMatchObject({ ...ROW_EACH, answers: [500, 200] });
			});
			it("control: Postgres 2.5, Query Batching Independently, Continue (using error output), B's insert failing once: one row each", async () => {
				const p = 'e6';
				const insert = node(
					'Insert Charge',
					'postgres',
					2.5,
					{
						operation: 'executeQuery',
						query: `=insert into ${db.schema}.charges (event) values ('{{ $json.body.id }}')`,
						options: { queryBatching: 'independently' },
					},
					{ onError: 'continueErrorOutput', credentials },
				);
				const r = record('E6 postgres 2.5 independently error output', await runRows(p, insert, `${p}_b`));
				expect(r).toMatchObject({ ...ROW_EACH, answers: [500, 200] });
			});
			it("QuestDB 1.1 Execute Query at its default Mode (Independently), Continue (using error output), B's insert failing once: refused at publish, nothing written", async () => {
				const p = 'e8';
				const r = record(
					'E8 questdb default error output',
					await runRows(p, insertRow('questDb', 1.1, undefined, 'continueErrorOutput'), `${p}_b`),
				);
				expect(r).toMatchObject(REFUSED_STATEMENTS);
			});
			it('one event (no Events Path): QuestDB 1.1 Execute Query at its defaults, Continue (using error output): refused at publish, nothing written', async () => {
				const p = 'e9';
				const id = `${p}_a`;
				rt.useTrigger(`wf-rt54-${p}`);
				const step = chain([insertRow('questDb', 1.1, undefined, 'continueErrorOutput')]);
				const refusal = await rt.refusedAtPublish(step);
				await failOnce(id);
				const { answers } = await rt.provide({ id, amount: 300 }, step);
				const r = record('E9 one event questdb default error output', {
					refusal,
					answers,
					rows: await rows([id]),
					keys: await rt.statuses([id]),
				});
				expect({ refusal: r.refusal, rows: r.rows }).toEqual({ refusal: REFUSED_STATEMENTS.refusal, rows: [0] });
			});
			it("Edit Fields (event) → TimescaleDB 1.1 Insert (table charges, column event), Mode Independently, Continue (using error output), B's insert failing once: refused at publish, nothing written", async () => {
				const p = 'e10';
				const event = node('Row', 'set', 3.4, {
					mode: 'manual',
					assignments: { assignments: [{ id: 'e', name: 'event', value: '={{ $json.body.id }}', type: 'string' }] },
					includeOtherFields: true,
					options: {},
				});
				const insert = node(
					'Insert Charge',
					'timescaleDb',
					1.1,
					{
						operation: 'insert',
						schema: db.schema,
						table: 'charges',
						columns: 'event',
						returnFields: '*',
						additionalFields: { mode: 'independently' },
					},
					{ onError: 'continueErrorOutput', credentials },
				);
				const list = threeEvents(p);
				await failOnce(`${p}_b`);
				const r = await runTrigger(p, chain([event, insert]), undefined, list);
				const out = record('E10 timescale insert independently error output', {
					refusal: r.refusal,
					answers: r.answers,
					rows: await rows(list.map((each) => each.id)),
					keys: r.keys,
				});
				expect(out).toMatchObject(REFUSED_STATEMENTS);
			});
			it('TimescaleDB 1.1, Mode Independently, Continue, nothing failing: refused all the same (a failure would not be seen)', async () => {
				const p = 'e7';
				const r = record(
					'E7 timescale independently nothing fails',
					await runRows(p, insertRow('timescaleDb', 1.1, 'independently', 'continueErrorOutput'), undefined),
				);
				expect(r).toMatchObject(REFUSED_STATEMENTS);
			});
		});
	},
);
