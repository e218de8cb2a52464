import { describeWithN8n } from '../support/n8nBaseNodes';
import { link } from '../support/settleWorkflows';
import {
	baseNode as node,
	events,
	LOOKUP_BODY,
	sortOn,
	SPLIT_OUT_EVENTS,
	subWorkflowRedTeam,
	subWorkflowTrigger,
	type Step,
} from '../support/triggerRedTeam';

/*
 * Complete after an Execute Workflow run once for all the events, whose sub-execution n8n did not save (the
 * sub-workflow's "Save successful production executions: Do not save", or EXECUTIONS_DATA_SAVE_ON_SUCCESS=none). n8n's
 * Execute Workflow node re-pairs the items it returns to its own input through the sub-execution's record; without the
 * record it keeps the sub-workflow's own indexes, so a Sort inside moves one event's answer to another event's place.
 * Complete reads the key of an item that carries none of its own (an HTTP Request's answer) through that pairing: Key From
 * Item's fallback and Key From Idempotency Reserve (Paired Item). n8n 2.41.1's engine in-process, the embedded store, a
 * local API counting committed charges per event; the provider re-delivers until it is answered 2xx.
 */

/** Whether the sub-executions' records are there for getExecutionDataById (false: not saved). */
let subRecordsSaved = true;

describeWithN8n('Complete after a sub-workflow whose run n8n did not save', () => {
	const { dump, effectsAt, failNext, fieldReserve, httpCall, keyStore, nodePath, nodeStep } = subWorkflowRedTeam({
		tag: 'swr',
		route: (route, body, id) => (route === 'lookup' ? { id, customer: `cus_${id}`, amount: body.amount } : undefined),
		engine: (engine) => {
			const reader = engine as unknown as { getRunExecutionData: (id: string) => Promise<unknown> };
			const read = reader.getRunExecutionData.bind(reader);
			reader.getRunExecutionData = async (id: string) => (subRecordsSaved ? await read(id) : undefined);
			return engine;
		},
		baseNodeFiles: { 'n8n-nodes-base.filter': 'Filter/Filter.node.js' },
	});
	const { nodeKey, nodeTemplate, provideNodePath, useNodePath } = nodePath;

	afterEach(() => {
		subRecordsSaved = true;
	});

	/** The "enrich" sub-workflow: Execute Workflow Trigger (all input data; named Webhook, where the harness starts a run) → Sort by amount → Lookup (one call per event). */
	const enrichSub = (shape: 'sort' | 'filter' = 'sort') =>
		JSON.stringify({
			nodes: [
				subWorkflowTrigger(1.1),
				shape === 'sort'
					? sortOn('body.amount')
					: node('By Amount', 'filter', 2.2, {
							conditions: {
								options: { caseSensitive: true, leftValue: '', typeValidation: 'loose', version: 2 },
								conditions: [
									{
										id: 'v',
										leftValue: '={{ $json.body.valid }}',
										rightValue: '',
										operator: { type: 'boolean', operation: 'true', singleValue: true },
									},
								],
								combinator: 'and',
							},
							looseTypeValidation: true,
							options: {},
						}),
				httpCall('Lookup', 'lookup', {}, LOOKUP_BODY),
			],
			connections: { Webhook: { main: [link('By Amount')] }, 'By Amount': { main: [link('Lookup')] } },
			settings: { saveDataSuccessExecution: 'none' },
		});

	/**
	 * Split [A 300, B 100] → Reserve → Enrich (Execute Workflow, once, waits) → Charge (the API's answer replaces the
	 * item; at Continue, a failure passes on as an item carrying its error) → Mark Complete (`parameters`, at Stop
	 * Workflow: a refused item ends the execution, answered 500) → Respond 200.
	 */
	const enrichChargeComplete = (parameters: Record<string, unknown>, shape: 'sort' | 'filter' = 'sort'): Step =>
		nodeStep(enrichSub(shape), parameters);

	const KEY_FROM = {
		'Key From Item (the answer carries no key)': { source: 'item' },
		'Key From Idempotency Reserve (Paired Item)': { source: 'reserveNode' },
	};

	for (const [label, parameters] of Object.entries(KEY_FROM)) {
		const tag = parameters.source === 'item' ? 'it' : 'pi';

		// Control: the record is there, and n8n's pairing follows each answer back to its event.
		it(`${label}, the record saved, B's charge failing once: one charge each, both completed`, async () => {
			const [a, b] = [`${tag}s_a`, `${tag}s_b`];
			useNodePath(`wf-swr-${tag}-saved`);
			failNext(`charge:${b}`);
			const { answers, runs } = await provideNodePath(
				events([
					{ id: a, amount: 300 },
					{ id: b, amount: 100 },
				]),
				() => nodeTemplate(enrichChargeComplete(parameters), { reserve: fieldReserve(), before: SPLIT_OUT_EVENTS }),
			);
			dump(`${tag}-saved`, runs);
			expect({
				answers: answers.at(-1),
				charges: [effectsAt('charge', a), effectsAt('charge', b)],
				keys: [await nodeKey(`evt:${a}`), await nodeKey(`evt:${b}`)],
			}).toEqual({ answers: 200, charges: [1, 1], keys: ['completed', 'completed'] });
		});

		// No record: A's answer (A sorted second) comes back paired to B's place. B's charge failed; completing B by A's
		// answer would lose B. Its failure, read through a pairing that is a guess, fails every event given to the
		// sub-workflow: nothing is completed, and the retry charges both (A's charge runs again: the documented limit).
		it(`${label}, the record not saved, B's charge failing once: B charged (not lost), both completed`, async () => {
			const [a, b] = [`${tag}u_a`, `${tag}u_b`];
			useNodePath(`wf-swr-${tag}-unsaved`);
			subRecordsSaved = false;
			failNext(`charge:${b}`);
			const { answers, runs } = await provideNodePath(
				events([
					{ id: a, amount: 300 },
					{ id: b, amount: 100 },
				]),
				() => nodeTemplate(enrichChargeComplete(parameters), { reserve: fieldReserve(), before: SPLIT_OUT_EVENTS }),
			);
			dump(`${tag}-unsaved`, runs);
			expect({
				answers: answers.at(-1),
				charges: [effectsAt('charge', a), effectsAt('charge', b)],
				keys: [await nodeKey(`evt:${a}`), await nodeKey(`evt:${b}`)],
			}).toEqual({ answers: 200, charges: [2, 1], keys: ['completed', 'completed'] });
		});

		// No record, both charged: each key completed once; the answer stored for one event is not another's (the pairing
		// that would say whose answer it is, is a guess: none is kept).
		it(`${label}, the record not saved, both charged with Response to Store: both completed, neither stores the other's answer`, async () => {
			const [a, b] = [`${tag}r_a`, `${tag}r_b`];
			useNodePath(`wf-swr-${tag}-stored`);
			subRecordsSaved = false;
			const { answers } = await provideNodePath(
				events([
					{ id: a, amount: 300 },
					{ id: b, amount: 100 },
				]),
				() =>
					nodeTemplate(enrichChargeComplete({ ...parameters, responseJson: '={{ JSON.stringify({ charged: $json.id }) }}' }), {
						reserve: fieldReserve(),
						before: SPLIT_OUT_EVENTS,
					}),
			);
			const stored = await keyStore().getKeys([`evt:${a}`, `evt:${b}`]);
			const answerOf = (id: string) => (stored.get(`evt:${id}`)?.response as { charged?: string } | null | undefined)?.charged ?? null;
			expect({
				answers: answers.at(-1),
				charges: [effectsAt('charge', a), effectsAt('charge', b)],
				keys: [stored.get(`evt:${a}`)?.status, stored.get(`evt:${b}`)?.status],
				// Each stored answer names its own event, or none is stored.
				crossed: [answerOf(a) === b, answerOf(b) === a],
			}).toEqual({ answers: 200, charges: [1, 1], keys: ['completed', 'completed'], crossed: [false, false] });
		});
	}
	// The documented limit: a Filter inside drops A, and B's answer comes back in A's place. Without the record nothing
	// tells whose answer it is, and a failure inside (an error output left unconnected) drops an event the same way, so
	// completing A or B by it could lose an event: every delivery is refused after the charge, and the provider's retries
	// each charge B again. The refusal names the fixes (keep the key on the items, save the sub-workflow's executions).
	it('Key From Item, the record not saved, a Filter inside dropping A: refused on every delivery, B charged by each (documented)', async () => {
		const [a, b] = ['fu_a', 'fu_b'];
		useNodePath('wf-swr-filter');
		subRecordsSaved = false;
		const { answers, runs } = await provideNodePath(
			events([
				{ id: a, amount: 300, valid: false },
				{ id: b, amount: 100, valid: true },
			]),
			() => nodeTemplate(enrichChargeComplete({ source: 'item' }, 'filter'), { reserve: fieldReserve(), before: SPLIT_OUT_EVENTS }),
			3,
		);
		expect({
			answers,
			charges: [effectsAt('charge', a), effectsAt('charge', b)],
			refusals: runs.map((run) => /did not save/.test(run.data.resultData.error?.message ?? '')),
		}).toEqual({ answers: [500, 500, 500], charges: [0, 3], refusals: [true, true, true] });
	});
});
